//! The local APIServices: one per group-version this server serves, named and ranked as
//! kube-apiserver's (`v1.`, `v1.apps`, ...), which is also the order discovery lists
//! groups and versions in.

use serde_json::{json, Value};

/// The label upstream puts on the APIServices it manages itself.
pub const AUTOMANAGED: &str = "kube-aggregator.kubernetes.io/automanaged";

/// kube-apiserver's (groupPriorityMinimum, versionPriority) of its group-versions.
const UPSTREAM: &[(&str, &str, i64, i64)] = &[
    ("", "v1", 18000, 1),
    ("apiregistration.k8s.io", "v1", 18000, 15),
    ("apps", "v1", 17800, 15),
    ("events.k8s.io", "v1", 17750, 15),
    ("authentication.k8s.io", "v1", 17700, 15),
    ("authorization.k8s.io", "v1", 17600, 15),
    ("autoscaling", "v1", 17500, 15),
    ("autoscaling", "v2", 17500, 30),
    ("batch", "v1", 17400, 15),
    ("certificates.k8s.io", "v1", 17300, 15),
    ("networking.k8s.io", "v1", 17200, 15),
    ("policy", "v1", 17100, 15),
    ("rbac.authorization.k8s.io", "v1", 17000, 15),
    ("storage.k8s.io", "v1", 16800, 15),
    ("admissionregistration.k8s.io", "v1", 16700, 15),
    ("apiextensions.k8s.io", "v1", 16700, 15),
    ("scheduling.k8s.io", "v1", 16600, 15),
    ("coordination.k8s.io", "v1", 16500, 15),
    ("node.k8s.io", "v1", 16300, 15),
    ("discovery.k8s.io", "v1", 16200, 15),
    ("resource.k8s.io", "v1", 16200, 15),
    ("flowcontrol.apiserver.k8s.io", "v1", 16100, 21),
];

/// What a group-version upstream does not rank gets: upstream gives CRDs' group-versions
/// 1000 and 100, below every built-in group; compiled-in and CRD-defined kinds alike get
/// that here, the versions of one group then ordered as Kubernetes versions.
const OTHERS: (i64, i64) = (1000, 100);

/// The APIService name of a group-version: `<version>.<group>`.
pub fn name(group: &str, version: &str) -> String {
    format!("{version}.{group}")
}

/// (groupPriorityMinimum, versionPriority) of a local group-version.
pub fn priority(group: &str, version: &str) -> (i64, i64) {
    UPSTREAM
        .iter()
        .find(|(g, v, _, _)| *g == group && *v == version)
        .map(|(_, _, gp, vp)| (*gp, *vp))
        .unwrap_or(OTHERS)
}

/// The local APIService of `group/version`. `onstart` (upstream's value for built-in
/// group-versions) when it exists from start-up, `true` for one registered while
/// serving, which goes away with it.
pub fn local(group: &str, version: &str, at_start: bool) -> Value {
    let (group_priority, version_priority) = priority(group, version);
    json!({
        "apiVersion": "apiregistration.k8s.io/v1",
        "kind": "APIService",
        "metadata": {
            "name": name(group, version),
            "labels": { AUTOMANAGED: if at_start { "onstart" } else { "true" } },
        },
        "spec": {
            "group": group,
            "version": version,
            "groupPriorityMinimum": group_priority,
            "versionPriority": version_priority,
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn local_api_services_are_named_and_ranked_as_upstream() {
        assert_eq!(name("", "v1"), "v1.");
        assert_eq!(name("apps", "v1"), "v1.apps");
        assert_eq!(priority("", "v1"), (18000, 1));
        assert_eq!(priority("autoscaling", "v2"), (17500, 30));
        assert_eq!(priority("example.com", "v1"), OTHERS);
        let svc = local("apps", "v1", true);
        assert_eq!(svc["metadata"]["labels"][AUTOMANAGED], "onstart");
        assert_eq!(svc["spec"]["groupPriorityMinimum"], 17800);
        assert!(svc["spec"].get("service").is_none());
    }
}
