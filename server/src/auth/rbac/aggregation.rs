//! ClusterRole aggregation: an aggregated role's rules are the rules of every other
//! ClusterRole its selectors match, which the aggregation controller writes into it.

use serde_json::Value;

use super::types::{ClusterRole, PolicyRule};

/// The rules `cluster_role` should hold given `all_cluster_roles` (which may include
/// it), or None when it has no aggregation rule or already holds them, so the
/// controller writes only on change. The order is upstream's: selector by selector,
/// matching roles by name, their rules in order, each distinct rule once.
///
/// Roles that cannot be read contribute nothing. A role whose own object or selectors
/// are malformed is an error (upstream's controller leaves such a role as it is).
///
/// One pass: when aggregated roles select each other (`admin` selects `edit`), run
/// again after each write until nothing changes, as upstream's controller does by
/// re-queueing every aggregated role on any ClusterRole change.
pub fn aggregate(
    cluster_role: &Value,
    all_cluster_roles: &[Value],
) -> Result<Option<Vec<PolicyRule>>, String> {
    let target = ClusterRole::from_json(cluster_role).map_err(|e| e.to_string())?;
    let Some(rule) = &target.aggregation_rule else {
        return Ok(None);
    };
    for selector in &rule.cluster_role_selectors {
        selector
            .validate()
            .map_err(|e| format!("ClusterRole {}: aggregationRule: {e}", target.meta.name))?;
    }
    let mut others: Vec<ClusterRole> = all_cluster_roles
        .iter()
        .filter_map(|v| ClusterRole::from_json(v).ok())
        .filter(|r| r.meta.name != target.meta.name)
        .collect();
    others.sort_by(|a, b| a.meta.name.cmp(&b.meta.name));
    let mut rules: Vec<PolicyRule> = Vec::new();
    for selector in &rule.cluster_role_selectors {
        for role in others.iter().filter(|r| selector.matches(&r.meta.labels)) {
            for r in &role.rules {
                if !rules.contains(r) {
                    rules.push(r.clone());
                }
            }
        }
    }
    Ok((rules != target.rules).then_some(rules))
}

/// `object` with its `rules` replaced by `rules` (what the controller writes back).
pub fn with_rules(object: &Value, rules: &[PolicyRule]) -> Value {
    let mut out = object.clone();
    if let Some(map) = out.as_object_mut() {
        map.insert(
            "rules".into(),
            Value::Array(rules.iter().map(PolicyRule::to_json).collect()),
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn role(name: &str, labels: Value, rules: Value) -> Value {
        json!({"kind": "ClusterRole", "metadata": {"name": name, "labels": labels}, "rules": rules})
    }

    fn aggregated(name: &str, selectors: Value, rules: Value) -> Value {
        json!({"kind": "ClusterRole", "metadata": {"name": name},
               "aggregationRule": {"clusterRoleSelectors": selectors}, "rules": rules})
    }

    fn rule(verb: &str, resource: &str) -> PolicyRule {
        PolicyRule::resource(&[verb], &[""], &[resource])
    }

    #[test]
    fn unions_matching_roles_in_order() {
        let all = vec![
            role(
                "z-pods",
                json!({"agg": "true"}),
                json!([{"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]}]),
            ),
            role(
                "a-cm",
                json!({"agg": "true"}),
                json!([
                    {"verbs": ["get"], "apiGroups": [""], "resources": ["configmaps"]},
                    {"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]}
                ]),
            ),
            role(
                "other",
                json!({"agg": "false"}),
                json!([{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}]),
            ),
            role(
                "second",
                json!({"extra": "yes"}),
                json!([{"verbs": ["list"], "apiGroups": [""], "resources": ["pods"]}]),
            ),
            json!({"kind": "ClusterRole", "metadata": {"name": "broken", "labels": {"agg": "true"}}, "rules": "all"}),
        ];
        let target = aggregated(
            "target",
            json!([{"matchLabels": {"agg": "true"}}, {"matchExpressions": [{"key": "extra", "operator": "Exists"}]}]),
            json!(null),
        );
        let mut everything = all.clone();
        everything.push(target.clone());
        let rules = aggregate(&target, &everything).unwrap().unwrap();
        assert_eq!(
            rules,
            vec![
                rule("get", "configmaps"),
                rule("get", "pods"),
                rule("list", "pods")
            ]
        );
        // Stored rules already equal: nothing to write.
        let done = with_rules(&target, &rules);
        assert_eq!(aggregate(&done, &everything), Ok(None));
        // Different order stored: rewritten in the canonical order.
        let shuffled = with_rules(
            &target,
            &[
                rule("list", "pods"),
                rule("get", "configmaps"),
                rule("get", "pods"),
            ],
        );
        assert_eq!(aggregate(&shuffled, &everything).unwrap(), Some(rules));
    }

    #[test]
    fn excludes_itself_and_handles_edge_cases() {
        let selfish = json!({"kind": "ClusterRole", "metadata": {"name": "me", "labels": {"agg": "true"}},
            "aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {"agg": "true"}}]},
            "rules": [{"verbs": ["get"], "apiGroups": [""], "resources": ["secrets"]}]});
        // Its own (stale) rules are not gathered back: they are dropped.
        assert_eq!(
            aggregate(&selfish, std::slice::from_ref(&selfish)),
            Ok(Some(vec![]))
        );
        // No aggregation rule: not ours to touch.
        let plain = role("p", json!({}), json!([]));
        assert_eq!(aggregate(&plain, &[]), Ok(None));
        // No selectors: aggregates nothing; empty and null rules are the same.
        assert_eq!(
            aggregate(
                &aggregated("e", json!([]), json!(null)),
                std::slice::from_ref(&plain)
            ),
            Ok(None)
        );
        assert_eq!(
            aggregate(
                &aggregated("e", json!([]), json!([{"verbs": ["get"]}])),
                &[]
            ),
            Ok(Some(vec![]))
        );
        // The empty selector selects every ClusterRole, as upstream's.
        let all = [role(
            "p",
            json!({}),
            json!([{"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]}]),
        )];
        assert_eq!(
            aggregate(&aggregated("e", json!([{}]), json!(null)), &all),
            Ok(Some(vec![rule("get", "pods")]))
        );
        // Malformed selectors and objects are errors, not guesses.
        let bad = aggregated(
            "b",
            json!([{"matchExpressions": [{"key": "k", "operator": "Near"}]}]),
            json!(null),
        );
        assert!(aggregate(&bad, &all).unwrap_err().contains("Near"));
        assert!(aggregate(&json!({"kind": "ClusterRole"}), &all).is_err());
        assert!(aggregate(&json!(42), &all).is_err());
    }

    #[test]
    fn with_rules_keeps_the_rest() {
        let obj =
            json!({"kind": "ClusterRole", "metadata": {"name": "x", "uid": "u"}, "rules": null});
        let out = with_rules(&obj, &[rule("get", "pods")]);
        assert_eq!(out["metadata"]["uid"], "u");
        assert_eq!(
            out["rules"],
            json!([{"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]}])
        );
        assert_eq!(with_rules(&json!(1), &[]), json!(1));
    }
}
