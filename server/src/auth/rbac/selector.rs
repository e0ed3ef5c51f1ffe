//! Label selectors as metav1 defines them, for ClusterRole aggregation: checked first (a
//! selector upstream would refuse selects nothing here), then matched against labels.

use std::collections::BTreeMap;

use super::types::{LabelSelector, LabelSelectorRequirement};

impl LabelSelector {
    /// Whether the selector is well formed: operators known, values present exactly
    /// where the operator needs them, keys and values valid label syntax.
    pub fn validate(&self) -> Result<(), String> {
        for (key, value) in &self.match_labels {
            check_key(key)?;
            check_value(value)?;
        }
        for req in &self.match_expressions {
            check_key(&req.key)?;
            match req.operator.as_str() {
                "In" | "NotIn" => {
                    if req.values.is_empty() {
                        return Err(format!(
                            "{:?}: values must be non-empty for operator {}",
                            req.key, req.operator
                        ));
                    }
                    for v in &req.values {
                        check_value(v)?;
                    }
                }
                "Exists" | "DoesNotExist" => {
                    if !req.values.is_empty() {
                        return Err(format!(
                            "{:?}: values must be empty for operator {}",
                            req.key, req.operator
                        ));
                    }
                }
                other => return Err(format!("{other:?} is not a valid label selector operator")),
            }
        }
        Ok(())
    }

    /// Whether `labels` satisfy the selector. The empty selector matches everything (as
    /// upstream's); an invalid one matches nothing.
    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        if self.validate().is_err() {
            return false;
        }
        self.match_labels
            .iter()
            .all(|(k, v)| labels.get(k) == Some(v))
            && self.match_expressions.iter().all(|r| r.matches(labels))
    }
}

impl LabelSelectorRequirement {
    fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        let value = labels.get(&self.key);
        match self.operator.as_str() {
            "In" => value.is_some_and(|v| self.values.contains(v)),
            "NotIn" => value.is_none_or(|v| !self.values.contains(v)),
            "Exists" => value.is_some(),
            "DoesNotExist" => value.is_none(),
            _ => false,
        }
    }
}

/// A label key: an optional DNS-subdomain prefix and `/`, then a name of at most 63
/// alphanumerics, `-`, `_` and `.`, starting and ending alphanumeric.
fn check_key(key: &str) -> Result<(), String> {
    let (prefix, name) = match key.split_once('/') {
        Some((p, n)) => (Some(p), n),
        None => (None, key),
    };
    if let Some(prefix) = prefix {
        let ok = !prefix.is_empty()
            && prefix.len() <= 253
            && prefix.split('.').all(|part| {
                !part.is_empty()
                    && part
                        .bytes()
                        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
                    && !part.starts_with('-')
                    && !part.ends_with('-')
            });
        if !ok {
            return Err(format!("{key:?}: invalid label key prefix"));
        }
    }
    if name.is_empty() || !is_label_token(name) {
        return Err(format!("{key:?}: invalid label key"));
    }
    Ok(())
}

fn check_value(value: &str) -> Result<(), String> {
    if value.is_empty() || is_label_token(value) {
        Ok(())
    } else {
        Err(format!("{value:?}: invalid label value"))
    }
}

fn is_label_token(s: &str) -> bool {
    let bytes = s.as_bytes();
    s.len() <= 63
        && bytes.first().is_some_and(u8::is_ascii_alphanumeric)
        && bytes.last().is_some_and(u8::is_ascii_alphanumeric)
        && bytes
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
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
