//! Label selectors as metav1 defines them, for ClusterRole aggregation: checked first (a
//! selector upstream would refuse selects nothing here), then matched against labels.

use std::collections::BTreeMap;

use super::types::LabelSelector;
use crate::api::selectors;

impl LabelSelector {
    /// The selector as the API's own label selectors hold one, checked on the way.
    fn to_selector(&self) -> Result<selectors::LabelSelector, String> {
        selectors::LabelSelector::from_object(
            self.match_labels
                .iter()
                .map(|(k, v)| (k.as_str(), v.as_str())),
            self.match_expressions
                .iter()
                .map(|r| (r.key.as_str(), r.operator.as_str(), r.values.as_slice())),
        )
    }

    /// Whether the selector is well formed: operators known, values present exactly
    /// where the operator needs them, keys and values valid label syntax.
    pub fn validate(&self) -> Result<(), String> {
        self.to_selector().map(|_| ())
    }

    /// Whether `labels` satisfy the selector. The empty selector matches everything (as
    /// upstream's); an invalid one matches nothing.
    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        self.to_selector().is_ok_and(|s| s.matches(labels))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn selector(v: serde_json::Value) -> LabelSelector {
        serde_json::from_value(v).unwrap()
    }

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn empty_selector_matches_everything() {
        assert!(selector(json!({})).matches(&labels(&[])));
        assert!(selector(json!({})).matches(&labels(&[("a", "b")])));
    }

    #[test]
    fn match_labels_and_expressions() {
        let s = selector(json!({
            "matchLabels": {"rbac.authorization.k8s.io/aggregate-to-view": "true"},
            "matchExpressions": [
                {"key": "tier", "operator": "In", "values": ["a", "b"]},
                {"key": "env", "operator": "NotIn", "values": ["prod"]},
                {"key": "owner", "operator": "Exists"},
                {"key": "legacy", "operator": "DoesNotExist"}
            ]
        }));
        let base = [
            ("rbac.authorization.k8s.io/aggregate-to-view", "true"),
            ("tier", "a"),
            ("owner", "me"),
        ];
        assert!(s.matches(&labels(&base)));
        let mut with_env = base.to_vec();
        with_env.push(("env", "dev"));
        assert!(s.matches(&labels(&with_env)));
        with_env.pop();
        with_env.push(("env", "prod"));
        assert!(!s.matches(&labels(&with_env)));
        let mut legacy = base.to_vec();
        legacy.push(("legacy", ""));
        assert!(!s.matches(&labels(&legacy)));
        assert!(!s.matches(&labels(&base[..2])));
        assert!(!s.matches(&labels(&[
            ("rbac.authorization.k8s.io/aggregate-to-view", "false"),
            ("tier", "a"),
            ("owner", "me")
        ])));
        assert!(!s.matches(&labels(&[("tier", "c"), ("owner", "me")])));
    }

    #[test]
    fn invalid_selectors_match_nothing() {
        for bad in [
            json!({"matchExpressions": [{"key": "a", "operator": "Equals", "values": ["x"]}]}),
            json!({"matchExpressions": [{"key": "a", "operator": "In"}]}),
            json!({"matchExpressions": [{"key": "a", "operator": "NotIn", "values": []}]}),
            json!({"matchExpressions": [{"key": "a", "operator": "DoesNotExist", "values": ["x"]}]}),
            json!({"matchExpressions": [{"key": "", "operator": "DoesNotExist"}]}),
            json!({"matchExpressions": [{"key": "bad key", "operator": "DoesNotExist"}]}),
            json!({"matchLabels": {"a": "not valid!"}}),
            json!({"matchLabels": {"Bad_Prefix/a": "x"}}),
            json!({"matchLabels": {"/a": "x"}}),
        ] {
            let s = selector(bad.clone());
            assert!(s.validate().is_err(), "{bad}");
            assert!(!s.matches(&labels(&[("a", "x")])), "{bad}");
            assert!(!s.matches(&labels(&[])), "{bad}");
        }
        assert!(selector(json!({"matchLabels": {"a": ""}}))
            .validate()
            .is_ok());
    }
}
