//! The default policy a standalone API server starts with (the subset of Kubernetes'
//! bootstrap policy that concerns it, with Kubernetes' rules), and how it is written at
//! start-up without undoing what users changed.

use serde_json::{json, Map, Value};

use super::escalation::covers;
use super::types::{
    AggregationRule, ClusterRole, ClusterRoleBinding, PolicyRule, Role, RoleBinding, RoleRef,
    Subject, RBAC_API_VERSION, RBAC_GROUP,
};
use crate::auth::names;

/// The label every bootstrap object carries.
pub const BOOTSTRAPPING_LABEL: (&str, &str) = ("kubernetes.io/bootstrapping", "rbac-defaults");
/// The annotation saying whether start-up may update the object (`"false"` opts out).
pub const AUTOUPDATE_ANNOTATION: &str = "rbac.authorization.kubernetes.io/autoupdate";

const READ: &[&str] = &["get", "list", "watch"];
const WRITE: &[&str] = &["create", "delete", "deletecollection", "patch", "update"];
const READ_WRITE: &[&str] = &[
    "create",
    "delete",
    "deletecollection",
    "get",
    "list",
    "patch",
    "update",
    "watch",
];

fn rule(verbs: &[&str], group: &str, resources: &[&str]) -> PolicyRule {
    PolicyRule::resource(verbs, &[group], resources)
}

fn aggregate_label(to: &str) -> String {
    format!("rbac.authorization.k8s.io/aggregate-to-{to}")
}

fn metadata(name: &str, extra_labels: &[(String, &str)]) -> Value {
    let mut labels = Map::new();
    labels.insert(BOOTSTRAPPING_LABEL.0.into(), BOOTSTRAPPING_LABEL.1.into());
    for (k, v) in extra_labels {
        labels.insert(k.clone(), (*v).into());
    }
    json!({
        "name": name,
        "labels": labels,
        "annotations": {AUTOUPDATE_ANNOTATION: "true"},
    })
}

fn cluster_role(name: &str, labels: &[(String, &str)], rules: &[PolicyRule]) -> Value {
    json!({
        "apiVersion": RBAC_API_VERSION,
        "kind": "ClusterRole",
        "metadata": metadata(name, labels),
        "rules": rules.iter().map(PolicyRule::to_json).collect::<Vec<_>>(),
    })
}

/// An aggregated role (`admin`, `edit`, `view`): no rules of its own, the aggregation
/// controller fills them from the roles labelled `aggregate-to-<name>`.
fn aggregated_role(name: &str, labels: &[(String, &str)]) -> Value {
    let mut role = cluster_role(name, labels, &[]);
    role["aggregationRule"] = json!({
        "clusterRoleSelectors": [{"matchLabels": {aggregate_label(name): "true"}}]
    });
    role
}

fn binding(name: &str, groups: &[&str]) -> Value {
    let subjects: Vec<Value> = groups
        .iter()
        .map(|g| json!({"apiGroup": RBAC_GROUP, "kind": "Group", "name": g}))
        .collect();
    json!({
        "apiVersion": RBAC_API_VERSION,
        "kind": "ClusterRoleBinding",
        "metadata": metadata(name, &[]),
        "roleRef": {"apiGroup": RBAC_GROUP, "kind": "ClusterRole", "name": name},
        "subjects": subjects,
    })
}

/// The bootstrap ClusterRoles, sorted by name.
pub fn cluster_roles() -> Vec<Value> {
    let to_admin = [(aggregate_label("admin"), "true")];
    let to_edit = [(aggregate_label("edit"), "true")];
    let to_view = [(aggregate_label("view"), "true")];
    vec![
        aggregated_role("admin", &[]),
        cluster_role(
            "cluster-admin",
            &[],
            &[
                PolicyRule::resource(&["*"], &["*"], &["*"]),
                PolicyRule::non_resource(&["*"], &["*"]),
            ],
        ),
        aggregated_role("edit", &to_admin),
        cluster_role(
            "system:aggregate-to-admin",
            &to_admin,
            &[
                rule(
                    &["create"],
                    "authorization.k8s.io",
                    &["localsubjectaccessreviews"],
                ),
                rule(READ_WRITE, RBAC_GROUP, &["rolebindings", "roles"]),
            ],
        ),
        cluster_role("system:aggregate-to-edit", &to_edit, &edit_rules()),
        cluster_role("system:aggregate-to-view", &to_view, &view_rules()),
        cluster_role(
            "system:basic-user",
            &[],
            &[
                rule(
                    &["create"],
                    "authorization.k8s.io",
                    &["selfsubjectaccessreviews", "selfsubjectrulesreviews"],
                ),
                rule(
                    &["create"],
                    "authentication.k8s.io",
                    &["selfsubjectreviews"],
                ),
            ],
        ),
        cluster_role(
            "system:discovery",
            &[],
            &[PolicyRule::non_resource(
                &["get"],
                &[
                    "/api",
                    "/api/*",
                    "/apis",
                    "/apis/*",
                    "/healthz",
                    "/livez",
                    "/openapi",
                    "/openapi/*",
                    "/readyz",
                    "/version",
                    "/version/",
                ],
            )],
        ),
        cluster_role(
            "system:monitoring",
            &[],
            &[PolicyRule::non_resource(
                &["get"],
                &[
                    "/healthz",
                    "/healthz/*",
                    "/livez",
                    "/livez/*",
                    "/metrics",
                    "/metrics/slis",
                    "/readyz",
                    "/readyz/*",
                ],
            )],
        ),
        cluster_role(
            "system:public-info-viewer",
            &[],
            &[PolicyRule::non_resource(
                &["get"],
                &["/healthz", "/livez", "/readyz", "/version", "/version/"],
            )],
        ),
        aggregated_role("view", &to_edit),
    ]
}

fn edit_rules() -> Vec<PolicyRule> {
    vec![
        rule(
            READ,
            "",
            &[
                "pods/attach",
                "pods/exec",
                "pods/portforward",
                "pods/proxy",
                "secrets",
                "services/proxy",
            ],
        ),
        rule(&["impersonate"], "", &["serviceaccounts"]),
        rule(
            WRITE,
            "",
            &[
                "pods",
                "pods/attach",
                "pods/exec",
                "pods/portforward",
                "pods/proxy",
            ],
        ),
        rule(&["create"], "", &["pods/eviction"]),
        rule(
            WRITE,
            "",
            &[
                "configmaps",
                "events",
                "persistentvolumeclaims",
                "replicationcontrollers",
                "replicationcontrollers/scale",
                "secrets",
                "serviceaccounts",
                "services",
                "services/proxy",
            ],
        ),
        rule(&["create"], "", &["serviceaccounts/token"]),
        rule(
            WRITE,
            "apps",
            &[
                "daemonsets",
                "deployments",
                "deployments/rollback",
                "deployments/scale",
                "replicasets",
                "replicasets/scale",
                "statefulsets",
                "statefulsets/scale",
            ],
        ),
        rule(WRITE, "autoscaling", &["horizontalpodautoscalers"]),
        rule(WRITE, "batch", &["cronjobs", "jobs"]),
        rule(
            WRITE,
            "extensions",
            &[
                "daemonsets",
                "deployments",
                "deployments/rollback",
                "deployments/scale",
                "ingresses",
                "networkpolicies",
                "replicasets",
                "replicasets/scale",
                "replicationcontrollers/scale",
            ],
        ),
        rule(WRITE, "policy", &["poddisruptionbudgets"]),
        rule(
            WRITE,
            "networking.k8s.io",
            &["ingresses", "networkpolicies"],
        ),
        rule(READ_WRITE, "coordination.k8s.io", &["leases"]),
    ]
}

fn view_rules() -> Vec<PolicyRule> {
    vec![
        rule(
            READ,
            "",
            &[
                "configmaps",
                "endpoints",
                "persistentvolumeclaims",
                "persistentvolumeclaims/status",
                "pods",
                "replicationcontrollers",
                "replicationcontrollers/scale",
                "serviceaccounts",
                "services",
                "services/status",
            ],
        ),
        rule(
            READ,
            "",
            &[
                "bindings",
                "events",
                "limitranges",
                "namespaces/status",
                "pods/log",
                "pods/status",
                "replicationcontrollers/status",
                "resourcequotas",
                "resourcequotas/status",
            ],
        ),
        rule(READ, "", &["namespaces"]),
        rule(READ, "discovery.k8s.io", &["endpointslices"]),
        rule(
            READ,
            "apps",
            &[
                "controllerrevisions",
                "daemonsets",
                "daemonsets/status",
                "deployments",
                "deployments/scale",
                "deployments/status",
                "replicasets",
                "replicasets/scale",
                "replicasets/status",
                "statefulsets",
                "statefulsets/scale",
                "statefulsets/status",
            ],
        ),
        rule(
            READ,
            "autoscaling",
            &[
                "horizontalpodautoscalers",
                "horizontalpodautoscalers/status",
            ],
        ),
        rule(
            READ,
            "batch",
            &["cronjobs", "cronjobs/status", "jobs", "jobs/status"],
        ),
        rule(
            READ,
            "extensions",
            &[
                "daemonsets",
                "daemonsets/status",
                "deployments",
                "deployments/scale",
                "deployments/status",
                "ingresses",
                "ingresses/status",
                "networkpolicies",
                "replicasets",
                "replicasets/scale",
                "replicasets/status",
                "replicationcontrollers/scale",
            ],
        ),
        rule(
            READ,
            "policy",
            &["poddisruptionbudgets", "poddisruptionbudgets/status"],
        ),
        rule(
            READ,
            "networking.k8s.io",
            &["ingresses", "ingresses/status", "networkpolicies"],
        ),
    ]
}

/// The bootstrap Roles, each with its namespace: upstream's
/// `extension-apiserver-authentication-reader` in kube-system, which lets an aggregated
/// API server read the front-proxy settings this server publishes.
pub fn roles() -> Vec<Value> {
    let mut reader = json!({
        "apiVersion": RBAC_API_VERSION,
        "kind": "Role",
        "metadata": metadata("extension-apiserver-authentication-reader", &[]),
        "rules": [PolicyRule {
            resource_names: vec!["extension-apiserver-authentication".into()],
            ..rule(READ, "", &["configmaps"])
        }
        .to_json()],
    });
    reader["metadata"]["namespace"] = json!("kube-system");
    vec![reader]
}

/// The bootstrap RoleBindings, each with its namespace: as upstream, the controller
/// manager and the scheduler (themselves delegating authentication to this server)
/// may read the front-proxy settings, through `system::extension-apiserver-authentication-reader`.
pub fn role_bindings() -> Vec<Value> {
    let role = "extension-apiserver-authentication-reader";
    let users = ["system:kube-controller-manager", "system:kube-scheduler"];
    let mut metadata = metadata(&format!("system::{role}"), &[]);
    metadata["namespace"] = json!("kube-system");
    vec![json!({
        "apiVersion": RBAC_API_VERSION,
        "kind": "RoleBinding",
        "metadata": metadata,
        "roleRef": {"apiGroup": RBAC_GROUP, "kind": "Role", "name": role},
        "subjects": users
            .iter()
            .map(|u| json!({"apiGroup": RBAC_GROUP, "kind": "User", "name": u}))
            .collect::<Vec<_>>(),
    })]
}

/// The bootstrap ClusterRoleBindings, sorted by name.
pub fn cluster_role_bindings() -> Vec<Value> {
    vec![
        binding("cluster-admin", &[names::MASTERS]),
        binding("system:basic-user", &[names::AUTHENTICATED]),
        binding("system:discovery", &[names::AUTHENTICATED]),
        binding("system:monitoring", &["system:monitoring"]),
        binding(
            "system:public-info-viewer",
            &[names::AUTHENTICATED, names::UNAUTHENTICATED],
        ),
    ]
}

/// How to write a reconciled object.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReconcileOp {
    /// It does not exist: create it.
    Create,
    /// Update it (the object keeps the existing metadata, resourceVersion included).
    Update,
    /// A binding whose roleRef changed: roleRef is immutable, so delete it and create
    /// this one.
    Recreate,
}

/// What start-up should write for one bootstrap object.
#[derive(Clone, Debug, PartialEq)]
pub struct Reconciled {
    /// How to write it.
    pub op: ReconcileOp,
    /// The object to write.
    pub object: Value,
}

/// What to write at start-up for `bootstrap` given the stored `existing` object (None:
/// leave it alone), as upstream reconciles its bootstrap policy: create what is missing;
/// on an object whose autoupdate annotation is not `"false"` (a missing one included)
/// add the missing rules, aggregation selectors, subjects, labels and annotations,
/// keeping the user's own additions. An existing object the engine cannot read is left
/// alone rather than overwritten.
pub fn reconcile(existing: Option<&Value>, bootstrap: &Value) -> Option<Reconciled> {
    let Some(existing) = existing else {
        return Some(Reconciled {
            op: ReconcileOp::Create,
            object: bootstrap.clone(),
        });
    };
    let annotation = existing
        .pointer("/metadata/annotations")
        .and_then(|a| a.get(AUTOUPDATE_ANNOTATION))
        .and_then(Value::as_str);
    if annotation == Some("false") {
        return None;
    }
    match bootstrap.get("kind").and_then(Value::as_str) {
        Some("ClusterRole") => {
            let have = ClusterRole::from_json(existing).ok()?;
            let want = ClusterRole::from_json(bootstrap).ok()?;
            reconcile_role(
                existing,
                bootstrap,
                (&have.rules, have.aggregation_rule.as_ref()),
                (&want.rules, want.aggregation_rule.as_ref()),
            )
        }
        Some("Role") => {
            let have = Role::from_json(existing).ok()?;
            let want = Role::from_json(bootstrap).ok()?;
            reconcile_role(
                existing,
                bootstrap,
                (&have.rules, None),
                (&want.rules, None),
            )
        }
        Some("ClusterRoleBinding") => {
            let have = ClusterRoleBinding::from_json(existing).ok()?;
            let want = ClusterRoleBinding::from_json(bootstrap).ok()?;
            reconcile_binding(
                existing,
                bootstrap,
                (&have.role_ref, &have.subjects),
                (&want.role_ref, &want.subjects),
            )
        }
        Some("RoleBinding") => {
            let have = RoleBinding::from_json(existing).ok()?;
            let want = RoleBinding::from_json(bootstrap).ok()?;
            reconcile_binding(
                existing,
                bootstrap,
                (&have.role_ref, &have.subjects),
                (&want.role_ref, &want.subjects),
            )
        }
        _ => None,
    }
}

type RoleParts<'a> = (&'a [PolicyRule], Option<&'a AggregationRule>);

fn reconcile_role(
    existing: &Value,
    bootstrap: &Value,
    (have_rules, have_agg): RoleParts<'_>,
    (want_rules, want_agg): RoleParts<'_>,
) -> Option<Reconciled> {
    let mut out = existing.clone();
    let mut changed = merge_metadata(&mut out, bootstrap);
    if let Err(missing) = covers(have_rules, want_rules) {
        if let Some(rules) = array_at(&mut out, "rules") {
            rules.extend(missing.iter().map(PolicyRule::to_json));
            changed = true;
        }
    }
    match (want_agg, have_agg) {
        (None, Some(_)) => {
            if let Some(map) = out.as_object_mut() {
                map.remove("aggregationRule");
            }
            changed = true;
        }
        (Some(want), have) => {
            let have_selectors = have.map(|a| &a.cluster_role_selectors[..]).unwrap_or(&[]);
            let missing: Vec<Value> = want
                .cluster_role_selectors
                .iter()
                .filter(|s| !have_selectors.contains(s))
                .map(|s| serde_json::to_value(s).unwrap_or(Value::Null))
                .collect();
            if !missing.is_empty() {
                if let Some(map) = out.as_object_mut() {
                    let rule = map.entry("aggregationRule").or_insert(Value::Null);
                    if !rule.is_object() {
                        *rule = json!({});
                    }
                    if let Some(selectors) = array_at(rule, "clusterRoleSelectors") {
                        selectors.extend(missing);
                        changed = true;
                    }
                }
            }
        }
        (None, None) => {}
    }
    changed.then_some(Reconciled {
        op: ReconcileOp::Update,
        object: out,
    })
}

type BindingParts<'a> = (&'a RoleRef, &'a [Subject]);

fn reconcile_binding(
    existing: &Value,
    bootstrap: &Value,
    (have_ref, have_subjects): BindingParts<'_>,
    (want_ref, want_subjects): BindingParts<'_>,
) -> Option<Reconciled> {
    if have_ref != want_ref {
        return Some(Reconciled {
            op: ReconcileOp::Recreate,
            object: bootstrap.clone(),
        });
    }
    let mut out = existing.clone();
    let mut changed = merge_metadata(&mut out, bootstrap);
    let mut missing = Vec::new();
    for s in want_subjects {
        if !have_subjects.contains(s) && !missing.contains(s) {
            missing.push(s.clone());
        }
    }
    if !missing.is_empty() {
        if let Some(subjects) = array_at(&mut out, "subjects") {
            subjects.extend(
                missing
                    .iter()
                    .map(|s| serde_json::to_value(s).unwrap_or(Value::Null)),
            );
            changed = true;
        }
    }
    changed.then_some(Reconciled {
        op: ReconcileOp::Update,
        object: out,
    })
}

/// Adds the bootstrap labels and annotations `out` lacks (its own values win).
fn merge_metadata(out: &mut Value, bootstrap: &Value) -> bool {
    let mut changed = false;
    for field in ["labels", "annotations"] {
        let Some(want) = bootstrap
            .pointer(&format!("/metadata/{field}"))
            .and_then(Value::as_object)
        else {
            continue;
        };
        let Some(meta) = out.get_mut("metadata").and_then(Value::as_object_mut) else {
            continue;
        };
        if !meta.get(field).is_some_and(Value::is_object) {
            meta.insert(field.into(), json!({}));
        }
        let Some(have) = meta.get_mut(field).and_then(Value::as_object_mut) else {
            continue;
        };
        for (k, v) in want {
            if !have.contains_key(k) {
                have.insert(k.clone(), v.clone());
                changed = true;
            }
        }
    }
    changed
}

/// The array at `object[field]`, made one if it is missing or not an array.
fn array_at<'a>(object: &'a mut Value, field: &str) -> Option<&'a mut Vec<Value>> {
    let slot = object.as_object_mut()?.entry(field).or_insert(Value::Null);
    if !slot.is_array() {
        *slot = Value::Array(Vec::new());
    }
    slot.as_array_mut()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::rbac::aggregation::{aggregate, with_rules};
    use crate::auth::rbac::{Attributes, RbacIndex};
    use crate::auth::UserInfo;

    fn named<'a>(objects: &'a [Value], name: &str) -> &'a Value {
        objects
            .iter()
            .find(|o| o["metadata"]["name"] == name)
            .unwrap()
    }

    /// The bootstrap roles with aggregation run to a fixpoint, as the controller would.
    fn aggregated_roles() -> Vec<Value> {
        let mut roles = cluster_roles();
        for _ in 0..10 {
            let mut changed = false;
            for i in 0..roles.len() {
                if let Some(rules) = aggregate(&roles[i], &roles).unwrap() {
                    roles[i] = with_rules(&roles[i], &rules);
                    changed = true;
                }
            }
            if !changed {
                return roles;
            }
        }
        panic!("aggregation did not settle");
    }

    #[test]
    fn the_scheduler_reads_only_the_extension_authentication_configmap() {
        let reader = named(&roles(), "extension-apiserver-authentication-reader").clone();
        assert_eq!(reader["metadata"]["namespace"], "kube-system");
        let index = RbacIndex::from_json(&[reader], &[], &role_bindings(), &[]);
        assert!(index.issues().is_empty(), "{:?}", index.issues());
        let u = user("system:kube-scheduler", &[]);
        let get = |ns: &'static str, name: &'static str| {
            index
                .authorize(
                    &Attributes::resource(&u, "get", "", "configmaps")
                        .in_namespace(ns)
                        .named(name),
                )
                .is_allowed()
        };
        assert!(get("kube-system", "extension-apiserver-authentication"));
        assert!(!get("kube-system", "other"));
        assert!(!get("default", "extension-apiserver-authentication"));
    }

    #[test]
    fn every_object_is_marked_and_readable() {
        for object in cluster_roles()
            .iter()
            .chain(&cluster_role_bindings())
            .chain(&roles())
            .chain(&role_bindings())
        {
            let meta = &object["metadata"];
            assert_eq!(
                meta["labels"]["kubernetes.io/bootstrapping"],
                "rbac-defaults"
            );
            assert_eq!(meta["annotations"][AUTOUPDATE_ANNOTATION], "true");
            assert_eq!(object["apiVersion"], RBAC_API_VERSION);
        }
        let roles = cluster_roles();
        let bindings = cluster_role_bindings();
        let index = RbacIndex::from_json(&[], &roles, &[], &bindings);
        assert!(index.issues().is_empty(), "{:?}", index.issues());
        let names: Vec<&str> = roles
            .iter()
            .map(|r| r["metadata"]["name"].as_str().unwrap())
            .collect();
        let mut sorted = names.clone();
        sorted.sort();
        assert_eq!(names, sorted);
        assert_eq!(
            named(&roles, "edit")["metadata"]["labels"][aggregate_label("admin")],
            "true"
        );
        assert_eq!(
            named(&roles, "view")["aggregationRule"],
            json!({"clusterRoleSelectors": [{"matchLabels": {"rbac.authorization.k8s.io/aggregate-to-view": "true"}}]})
        );
    }

    fn user(name: &str, groups: &[&str]) -> UserInfo {
        UserInfo {
            name: name.into(),
            groups: groups.iter().map(|g| g.to_string()).collect(),
            ..Default::default()
        }
    }

    #[test]
    fn default_policy_grants_what_kubernetes_grants() {
        let roles = aggregated_roles();
        let index = RbacIndex::from_json(&[], &roles, &[], &cluster_role_bindings());
        let admin = user("admin", &[names::MASTERS, names::AUTHENTICATED]);
        let alice = user("alice", &[names::AUTHENTICATED]);
        let anon = user(names::ANONYMOUS, &[names::UNAUTHENTICATED]);
        let nr = |u: &UserInfo, path: &str| {
            index
                .authorize(&Attributes::non_resource(u, "get", path))
                .is_allowed()
        };
        assert!(index
            .authorize(
                &Attributes::resource(&admin, "delete", "apps", "deployments").in_namespace("x")
            )
            .is_allowed());
        assert!(nr(&admin, "/anything"));
        assert!(nr(&alice, "/api/v1") && nr(&alice, "/apis") && nr(&alice, "/openapi/v3"));
        assert!(nr(&alice, "/version") && nr(&alice, "/healthz"));
        assert!(!nr(&alice, "/metrics"));
        assert!(nr(&anon, "/healthz") && nr(&anon, "/version") && nr(&anon, "/readyz"));
        assert!(!nr(&anon, "/api") && !nr(&anon, "/healthz/etcd"));
        assert!(index
            .authorize(&Attributes::resource(
                &alice,
                "create",
                "authorization.k8s.io",
                "selfsubjectaccessreviews"
            ))
            .is_allowed());
        assert!(!index
            .authorize(&Attributes::resource(
                &anon,
                "create",
                "authorization.k8s.io",
                "selfsubjectaccessreviews"
            ))
            .is_allowed());
        assert!(!index
            .authorize(&Attributes::resource(&alice, "get", "", "pods").in_namespace("x"))
            .is_allowed());
        let monitor = user("prometheus", &["system:monitoring"]);
        assert!(nr(&monitor, "/metrics") && nr(&monitor, "/livez/ping"));
        assert_eq!(
            index
                .authorize(&Attributes::non_resource(&anon, "get", "/healthz"))
                .reason(),
            r#"RBAC: allowed by ClusterRoleBinding "system:public-info-viewer" of ClusterRole "system:public-info-viewer" to Group "system:unauthenticated""#
        );
    }

    #[test]
    fn aggregated_roles_nest() {
        let roles = aggregated_roles();
        let rules = |name: &str| ClusterRole::from_json(named(&roles, name)).unwrap().rules;
        let (admin, edit, view) = (rules("admin"), rules("edit"), rules("view"));
        assert_eq!(view, view_rules());
        assert!(covers(&edit, &view).is_ok() && covers(&edit, &edit_rules()).is_ok());
        assert!(covers(&admin, &edit).is_ok());
        assert!(covers(&view, &edit).is_err() && covers(&edit, &admin).is_err());
        // Bound in a namespace, `edit` lets a user write deployments there only.
        let index = RbacIndex::from_json(
            &[],
            &roles,
            &[
                json!({"kind": "RoleBinding", "metadata": {"name": "e", "namespace": "team"},
                     "roleRef": {"apiGroup": RBAC_GROUP, "kind": "ClusterRole", "name": "edit"},
                     "subjects": [{"kind": "User", "name": "dev"}]}),
            ],
            &[],
        );
        let dev = user("dev", &[]);
        let patch = Attributes::resource(&dev, "patch", "apps", "deployments");
        assert!(index.authorize(&patch.in_namespace("team")).is_allowed());
        assert!(!index.authorize(&patch.in_namespace("other")).is_allowed());
        assert!(!index
            .authorize(
                &Attributes::resource(&dev, "create", RBAC_GROUP, "roles").in_namespace("team")
            )
            .is_allowed());
    }

    #[test]
    fn reconcile_creates_missing_objects() {
        let role = named(&cluster_roles(), "system:discovery").clone();
        assert_eq!(
            reconcile(None, &role),
            Some(Reconciled {
                op: ReconcileOp::Create,
                object: role.clone()
            })
        );
        // Stored as written (plus server fields): nothing to do.
        let mut stored = role.clone();
        stored["metadata"]["uid"] = "u1".into();
        stored["metadata"]["resourceVersion"] = "7".into();
        assert_eq!(reconcile(Some(&stored), &role), None);
        for b in cluster_role_bindings() {
            assert_eq!(reconcile(Some(&b), &b), None);
        }
        for r in aggregated_roles() {
            let boot = named(&cluster_roles(), r["metadata"]["name"].as_str().unwrap()).clone();
            assert_eq!(
                reconcile(Some(&r), &boot),
                None,
                "{}",
                r["metadata"]["name"]
            );
        }
    }

    #[test]
    fn reconcile_adds_without_removing() {
        let boot = named(&cluster_roles(), "system:basic-user").clone();
        let stored = json!({
            "apiVersion": RBAC_API_VERSION, "kind": "ClusterRole",
            "metadata": {"name": "system:basic-user", "uid": "u1", "resourceVersion": "3",
                         "labels": {"kubernetes.io/bootstrapping": "mine", "team": "a"}},
            "rules": [
                {"verbs": ["create"], "apiGroups": ["authorization.k8s.io"], "resources": ["selfsubjectaccessreviews"]},
                {"verbs": ["get"], "apiGroups": [""], "resources": ["configmaps"]}
            ]
        });
        let out = reconcile(Some(&stored), &boot).unwrap();
        assert_eq!(out.op, ReconcileOp::Update);
        let o = &out.object;
        assert_eq!(o["metadata"]["uid"], "u1");
        assert_eq!(o["metadata"]["resourceVersion"], "3");
        // The user's label value wins; missing ones (and the annotation) are added.
        assert_eq!(
            o["metadata"]["labels"]["kubernetes.io/bootstrapping"],
            "mine"
        );
        assert_eq!(o["metadata"]["labels"]["team"], "a");
        assert_eq!(o["metadata"]["annotations"][AUTOUPDATE_ANNOTATION], "true");
        assert_eq!(
            o["rules"],
            json!([
                {"verbs": ["create"], "apiGroups": ["authorization.k8s.io"], "resources": ["selfsubjectaccessreviews"]},
                {"verbs": ["get"], "apiGroups": [""], "resources": ["configmaps"]},
                {"verbs": ["create"], "apiGroups": ["authorization.k8s.io"], "resources": ["selfsubjectrulesreviews"]},
                {"verbs": ["create"], "apiGroups": ["authentication.k8s.io"], "resources": ["selfsubjectreviews"]}
            ])
        );
        assert_eq!(
            reconcile(Some(o), &boot),
            None,
            "reconciling twice changes nothing"
        );
    }

    #[test]
    fn reconcile_respects_autoupdate_false() {
        let boot = named(&cluster_roles(), "cluster-admin").clone();
        let stored = json!({"kind": "ClusterRole",
            "metadata": {"name": "cluster-admin", "annotations": {AUTOUPDATE_ANNOTATION: "false"}},
            "rules": []});
        assert_eq!(reconcile(Some(&stored), &boot), None);
        let binding = named(&cluster_role_bindings(), "cluster-admin").clone();
        let mut stored = binding.clone();
        stored["metadata"]["annotations"][AUTOUPDATE_ANNOTATION] = "false".into();
        stored["subjects"] = json!([]);
        assert_eq!(reconcile(Some(&stored), &binding), None);
        // Anything but "false" is reconciled.
        stored["metadata"]["annotations"][AUTOUPDATE_ANNOTATION] = "no".into();
        assert!(reconcile(Some(&stored), &binding).is_some());
    }

    #[test]
    fn reconcile_bindings() {
        let boot = named(&cluster_role_bindings(), "system:public-info-viewer").clone();
        let stored = json!({"kind": "ClusterRoleBinding",
            "metadata": {"name": "system:public-info-viewer", "labels": {"kubernetes.io/bootstrapping": "rbac-defaults"},
                         "annotations": {AUTOUPDATE_ANNOTATION: "true"}},
            "roleRef": {"apiGroup": RBAC_GROUP, "kind": "ClusterRole", "name": "system:public-info-viewer"},
            "subjects": [{"apiGroup": RBAC_GROUP, "kind": "Group", "name": "system:unauthenticated"},
                         {"apiGroup": RBAC_GROUP, "kind": "User", "name": "extra"}]});
        let out = reconcile(Some(&stored), &boot).unwrap();
        assert_eq!(out.op, ReconcileOp::Update);
        assert_eq!(
            out.object["subjects"],
            json!([{"apiGroup": RBAC_GROUP, "kind": "Group", "name": "system:unauthenticated"},
                   {"apiGroup": RBAC_GROUP, "kind": "User", "name": "extra"},
                   {"apiGroup": RBAC_GROUP, "kind": "Group", "name": "system:authenticated"}])
        );
        let mut moved = stored.clone();
        moved["roleRef"]["name"] = "cluster-admin".into();
        assert_eq!(
            reconcile(Some(&moved), &boot),
            Some(Reconciled {
                op: ReconcileOp::Recreate,
                object: boot.clone()
            })
        );
        let mut no_subjects = boot.clone();
        no_subjects["subjects"] = Value::Null;
        assert_eq!(
            reconcile(Some(&no_subjects), &boot).unwrap().object["subjects"],
            boot["subjects"]
        );
    }

    #[test]
    fn reconcile_aggregation_rules() {
        let boot = named(&cluster_roles(), "view").clone();
        let mut stored = boot.clone();
        stored["aggregationRule"] =
            json!({"clusterRoleSelectors": [{"matchLabels": {"mine": "true"}}]});
        stored["rules"] = json!([{"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]}]);
        let out = reconcile(Some(&stored), &boot).unwrap().object;
        assert_eq!(
            out["aggregationRule"]["clusterRoleSelectors"],
            json!([{"matchLabels": {"mine": "true"}},
                   {"matchLabels": {"rbac.authorization.k8s.io/aggregate-to-view": "true"}}])
        );
        assert_eq!(
            out["rules"], stored["rules"],
            "aggregated rules are the controller's"
        );
        stored["aggregationRule"] = Value::Null;
        let out = reconcile(Some(&stored), &boot).unwrap().object;
        assert_eq!(out["aggregationRule"], boot["aggregationRule"]);
        // A bootstrap role without one drops a user's aggregation rule, as upstream.
        let admin = named(&cluster_roles(), "cluster-admin").clone();
        let mut stored = admin.clone();
        stored["aggregationRule"] = json!({"clusterRoleSelectors": [{}]});
        let out = reconcile(Some(&stored), &admin).unwrap().object;
        assert!(out.get("aggregationRule").is_none());
    }

    #[test]
    fn reconcile_leaves_unreadable_objects_alone() {
        let boot = named(&cluster_roles(), "cluster-admin").clone();
        for bad in [
            json!(7),
            json!({"kind": "ClusterRole", "metadata": {"name": "cluster-admin"}, "rules": "x"}),
            json!({"kind": "ClusterRoleBinding", "metadata": {"name": "cluster-admin"}}),
        ] {
            assert_eq!(reconcile(Some(&bad), &boot), None, "{bad}");
        }
        assert_eq!(reconcile(Some(&boot), &json!({"kind": "Secret"})), None);
        assert_eq!(reconcile(Some(&boot), &json!(null)), None);
    }
}
