//! Whether one rule allows one request, with upstream's wildcard semantics.
//!
//! Only `*` and `*/<subresource>` are resource wildcards: `pods/*` names a subresource
//! literally called `*`, as upstream's authorizer reads it.

use super::types::{PolicyRule, WILDCARD};
use crate::auth::attributes::Attributes;

/// Whether `rule` allows the request `attrs`.
pub fn rule_allows(attrs: &Attributes<'_>, rule: &PolicyRule) -> bool {
    if !verb_matches(rule, attrs.verb) {
        return false;
    }
    if attrs.resource_request {
        api_group_matches(rule, attrs.api_group)
            && resource_matches(rule, attrs.resource, attrs.subresource)
            && resource_name_matches(rule, attrs.name)
    } else {
        non_resource_url_matches(rule, attrs.path)
    }
}

/// Whether any of `rules` allows `attrs`.
pub fn rules_allow(attrs: &Attributes<'_>, rules: &[PolicyRule]) -> bool {
    rules.iter().any(|r| rule_allows(attrs, r))
}

/// The verb is listed, or the rule has `*`.
pub fn verb_matches(rule: &PolicyRule, verb: &str) -> bool {
    rule.verbs.iter().any(|v| v == WILDCARD || v == verb)
}

/// The group is listed, or the rule has `*`.
pub fn api_group_matches(rule: &PolicyRule, group: &str) -> bool {
    rule.api_groups.iter().any(|g| g == WILDCARD || g == group)
}

/// `*`, the exact `resource` or `resource/subresource`, or `*/subresource`.
pub fn resource_matches(rule: &PolicyRule, resource: &str, subresource: &str) -> bool {
    rule.resources.iter().any(|r| {
        if r == WILDCARD {
            return true;
        }
        if subresource.is_empty() {
            return r == resource;
        }
        is_combined(r, resource, subresource) || is_combined(r, WILDCARD, subresource)
    })
}

/// Whether `rule_resource` is exactly `resource/subresource` (without allocating it).
fn is_combined(rule_resource: &str, resource: &str, subresource: &str) -> bool {
    rule_resource
        .strip_prefix(resource)
        .and_then(|rest| rest.strip_prefix('/'))
        == Some(subresource)
}

/// No names listed (all objects), or the request's name is listed. A request without a
/// name (list, create, deletecollection) only matches a rule listing no names.
pub fn resource_name_matches(rule: &PolicyRule, name: &str) -> bool {
    rule.resource_names.is_empty() || rule.resource_names.iter().any(|n| n == name)
}

/// `*`, the exact path, or a prefix ending in `*`.
pub fn non_resource_url_matches(rule: &PolicyRule, path: &str) -> bool {
    rule.non_resource_urls.iter().any(|u| url_covers(u, path))
}

/// Whether the rule path `pattern` covers `path` (also used for escalation checks).
pub(crate) fn url_covers(pattern: &str, path: &str) -> bool {
    if pattern == path {
        return true;
    }
    match pattern.strip_suffix('*') {
        Some(_) => path.starts_with(pattern.trim_end_matches('*')),
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::UserInfo;

    fn user() -> UserInfo {
        UserInfo {
            name: "alice".into(),
            ..Default::default()
        }
    }

    fn rule(verbs: &[&str], groups: &[&str], resources: &[&str]) -> PolicyRule {
        PolicyRule::resource(verbs, groups, resources)
    }

    #[test]
    fn verbs_and_groups() {
        let u = user();
        let get_pods = Attributes::resource(&u, "get", "", "pods");
        assert!(rule_allows(&get_pods, &rule(&["get"], &[""], &["pods"])));
        assert!(rule_allows(&get_pods, &rule(&["*"], &[""], &["pods"])));
        assert!(rule_allows(&get_pods, &rule(&["get"], &["*"], &["pods"])));
        assert!(!rule_allows(&get_pods, &rule(&["list"], &[""], &["pods"])));
        assert!(!rule_allows(&get_pods, &rule(&["GET"], &[""], &["pods"])));
        assert!(!rule_allows(
            &get_pods,
            &rule(&["get"], &["apps"], &["pods"])
        ));
        assert!(!rule_allows(&get_pods, &rule(&["get"], &[], &["pods"])));
        assert!(!rule_allows(&get_pods, &rule(&[], &[""], &["pods"])));
        assert!(!rule_allows(&get_pods, &PolicyRule::default()));
    }

    #[test]
    fn resources_and_subresources() {
        let u = user();
        let pods = Attributes::resource(&u, "get", "", "pods");
        let log = pods.with_subresource("log");
        assert!(rule_allows(&pods, &rule(&["get"], &[""], &["*"])));
        assert!(rule_allows(&log, &rule(&["get"], &[""], &["*"])));
        assert!(rule_allows(&log, &rule(&["get"], &[""], &["pods/log"])));
        assert!(rule_allows(&log, &rule(&["get"], &[""], &["*/log"])));
        assert!(!rule_allows(&log, &rule(&["get"], &[""], &["pods"])));
        assert!(!rule_allows(&log, &rule(&["get"], &[""], &["*/status"])));
        assert!(!rule_allows(&log, &rule(&["get"], &[""], &["nodes/log"])));
        assert!(!rule_allows(&pods, &rule(&["get"], &[""], &["pods/log"])));
        assert!(!rule_allows(&pods, &rule(&["get"], &[""], &["*/log"])));
        assert!(!rule_allows(&pods, &rule(&["get"], &[""], &["pod"])));
        // `resource/*` is not a wildcard upstream: only a subresource literally "*".
        assert!(!rule_allows(&log, &rule(&["get"], &[""], &["pods/*"])));
        assert!(!rule_allows(&pods, &rule(&["get"], &[""], &["pods/*"])));
        assert!(rule_allows(
            &pods.with_subresource("*"),
            &rule(&["get"], &[""], &["pods/*"])
        ));
        // `*/log` does not match a resource named like it.
        let weird = Attributes::resource(&u, "get", "", "*");
        assert!(!rule_allows(&weird, &rule(&["get"], &[""], &["*/log"])));
    }

    #[test]
    fn resource_names() {
        let u = user();
        let named = rule(&["get", "list", "create"], &[""], &["configmaps"]).with_names(&["a"]);
        let get = Attributes::resource(&u, "get", "", "configmaps");
        assert!(rule_allows(&get.named("a"), &named));
        assert!(!rule_allows(&get.named("b"), &named));
        assert!(!rule_allows(&get, &named));
        let list = Attributes::resource(&u, "list", "", "configmaps");
        assert!(!rule_allows(&list, &named));
        // A list with a metadata.name field selector carries the name.
        assert!(rule_allows(&list.named("a"), &named));
        let create = Attributes::resource(&u, "create", "", "configmaps");
        assert!(!rule_allows(&create, &named));
        let unnamed = rule(&["get"], &[""], &["configmaps"]);
        assert!(rule_allows(&get.named("anything"), &unnamed));
        assert!(rule_allows(&get, &unnamed));
    }

    #[test]
    fn non_resource_urls() {
        let u = user();
        let healthz = Attributes::non_resource(&u, "get", "/healthz");
        let nr = |urls: &[&str]| PolicyRule::non_resource(&["get"], urls);
        assert!(rule_allows(&healthz, &nr(&["/healthz"])));
        assert!(rule_allows(&healthz, &nr(&["*"])));
        assert!(rule_allows(&healthz, &nr(&["/health*"])));
        assert!(rule_allows(&healthz, &nr(&["/healthz*"])));
        assert!(!rule_allows(&healthz, &nr(&["/healthz/*"])));
        assert!(!rule_allows(&healthz, &nr(&["/health"])));
        assert!(!rule_allows(&healthz, &nr(&["/healthz/"])));
        assert!(!rule_allows(&healthz, &nr(&[])));
        let sub = Attributes::non_resource(&u, "get", "/healthz/etcd");
        assert!(rule_allows(&sub, &nr(&["/healthz/*"])));
        assert!(!rule_allows(&sub, &nr(&["/healthz"])));
        assert!(!rule_allows(
            &Attributes::non_resource(&u, "post", "/healthz"),
            &nr(&["*"])
        ));
        // Resource rules never allow non-resource requests and vice versa.
        assert!(!rule_allows(&healthz, &rule(&["*"], &["*"], &["*"])));
        let pods = Attributes::resource(&u, "get", "", "pods");
        assert!(!rule_allows(&pods, &nr(&["*"])));
    }
}
