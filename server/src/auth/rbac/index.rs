//! The RBAC snapshot: bindings indexed by subject with their roles resolved once, so a
//! request looks at the bindings of its user and groups only.

use std::collections::HashMap;
use std::sync::Arc;

use serde_json::Value;

use super::format::{aggregate_errors, go_quote};
use super::rules::rules_allow;
use super::types::{
    ClusterRole, ClusterRoleBinding, Kind, ObjectIssue, PolicyRule, Role, RoleBinding, RoleRef,
    Subject, RBAC_GROUP,
};
use crate::auth::attributes::{Attributes, Decision};
use crate::auth::names::SERVICE_ACCOUNT_PREFIX;
use crate::auth::UserInfo;

/// One subject of one binding: where its rules come from and what they are.
#[derive(Debug)]
struct Grant {
    /// (binding position, subject position): visiting in this order gives upstream's
    /// answer for bindings listed in the same order.
    order: (usize, usize),
    /// `ClusterRoleBinding "b" of ClusterRole "r" to User "u"`.
    source: String,
    /// The role's rules, or why they could not be found.
    rules: Result<Arc<[PolicyRule]>, String>,
}

/// The grants of one scope (cluster-wide, or one namespace) by subject.
#[derive(Debug, Default)]
struct SubjectMap {
    /// By user name; service account subjects under `system:serviceaccount:<ns>:<name>`.
    users: HashMap<String, Vec<Grant>>,
    /// By group name.
    groups: HashMap<String, Vec<Grant>>,
}

impl SubjectMap {
    /// The grants that apply to `user`, in binding order, one per binding.
    fn applicable(&self, user: &UserInfo) -> Vec<&Grant> {
        let mut out: Vec<&Grant> = Vec::new();
        if let Some(grants) = self.users.get(&user.name) {
            out.extend(grants);
        }
        for group in &user.groups {
            if let Some(grants) = self.groups.get(group) {
                out.extend(grants);
            }
        }
        out.sort_by_key(|g| g.order);
        out.dedup_by_key(|g| g.order.0);
        out
    }

    fn len(&self) -> usize {
        self.users
            .values()
            .chain(self.groups.values())
            .map(Vec::len)
            .sum()
    }
}

/// The rules that apply to a user in a namespace, split as SelfSubjectRulesReview
/// reports them (upstream's `RulesFor`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RulesFor {
    /// Rules naming resources.
    pub resource_rules: Vec<PolicyRule>,
    /// Rules naming non-resource URLs.
    pub non_resource_rules: Vec<PolicyRule>,
    /// Whether the lists may be short of what is allowed. RBAC, as upstream, always says
    /// false and reports bindings it could not resolve in `errors` instead.
    pub incomplete: bool,
    /// Why some bindings of the user grant nothing (their role is missing).
    pub errors: Vec<String>,
}

impl RulesFor {
    /// The errors as one message (SelfSubjectRulesReview's `evaluationError`).
    pub fn evaluation_error(&self) -> String {
        aggregate_errors(&self.errors)
    }
}

/// An immutable snapshot of every Role, ClusterRole, RoleBinding and ClusterRoleBinding,
/// indexed for authorization. Build a new one when any of them changes; share it behind
/// an `Arc`.
#[derive(Debug, Default)]
pub struct RbacIndex {
    cluster: SubjectMap,
    namespaces: HashMap<String, SubjectMap>,
    roles: HashMap<(String, String), Arc<[PolicyRule]>>,
    cluster_roles: HashMap<String, Arc<[PolicyRule]>>,
    issues: Vec<ObjectIssue>,
}

impl RbacIndex {
    /// Indexes typed objects. Objects named twice keep the first; bindings whose role
    /// does not exist grant nothing. Both are reported in [`issues`](Self::issues).
    pub fn build(
        roles: &[Role],
        cluster_roles: &[ClusterRole],
        role_bindings: &[RoleBinding],
        cluster_role_bindings: &[ClusterRoleBinding],
    ) -> Self {
        let mut index = RbacIndex::default();
        for role in roles {
            let key = (role.meta.namespace.clone(), role.meta.name.clone());
            if index.roles.contains_key(&key) {
                index.issue(
                    Kind::Role,
                    &key.0,
                    &key.1,
                    "listed twice; the first is used",
                );
                continue;
            }
            index.roles.insert(key, role.rules.clone().into());
        }
        for role in cluster_roles {
            let name = &role.meta.name;
            if index.cluster_roles.contains_key(name) {
                index.issue(
                    Kind::ClusterRole,
                    "",
                    name,
                    "listed twice; the first is used",
                );
                continue;
            }
            index
                .cluster_roles
                .insert(name.clone(), role.rules.clone().into());
        }
        let mut cluster = SubjectMap::default();
        for (seq, b) in cluster_role_bindings.iter().enumerate() {
            let binding_name = go_quote(&b.meta.name);
            index.add_binding(
                &mut cluster,
                seq,
                Kind::ClusterRoleBinding,
                "",
                &b.meta.name,
                &binding_name,
                &b.role_ref,
                &b.subjects,
            );
        }
        let mut namespaces: HashMap<String, SubjectMap> = HashMap::new();
        for (seq, b) in role_bindings.iter().enumerate() {
            let ns = &b.meta.namespace;
            let binding_name = go_quote(&format!("{}/{}", b.meta.name, ns));
            let mut map = namespaces.remove(ns).unwrap_or_default();
            index.add_binding(
                &mut map,
                seq,
                Kind::RoleBinding,
                ns,
                &b.meta.name,
                &binding_name,
                &b.role_ref,
                &b.subjects,
            );
            namespaces.insert(ns.clone(), map);
        }
        index.cluster = cluster;
        index.namespaces = namespaces;
        index
    }

    /// Reads the objects from JSON (as the watch caches hold them) and indexes them;
    /// objects that cannot be read are skipped and reported in [`issues`](Self::issues).
    pub fn from_json<'a>(
        roles: impl IntoIterator<Item = &'a Value>,
        cluster_roles: impl IntoIterator<Item = &'a Value>,
        role_bindings: impl IntoIterator<Item = &'a Value>,
        cluster_role_bindings: impl IntoIterator<Item = &'a Value>,
    ) -> Self {
        let mut skipped = Vec::new();
        let roles = read_all(roles, Role::from_json, &mut skipped);
        let cluster_roles = read_all(cluster_roles, ClusterRole::from_json, &mut skipped);
        let role_bindings = read_all(role_bindings, RoleBinding::from_json, &mut skipped);
        let cluster_role_bindings = read_all(
            cluster_role_bindings,
            ClusterRoleBinding::from_json,
            &mut skipped,
        );
        let mut index = RbacIndex::build(
            &roles,
            &cluster_roles,
            &role_bindings,
            &cluster_role_bindings,
        );
        skipped.append(&mut index.issues);
        index.issues = skipped;
        index
    }

    /// Objects skipped and bindings that grant nothing, with the reasons.
    pub fn issues(&self) -> &[ObjectIssue] {
        &self.issues
    }

    /// How many (binding, subject) grants the index holds.
    pub fn grant_count(&self) -> usize {
        self.cluster.len() + self.namespaces.values().map(SubjectMap::len).sum::<usize>()
    }

    /// The rules of the Role `namespace`/`name`, if it exists.
    pub fn role_rules(&self, namespace: &str, name: &str) -> Option<&[PolicyRule]> {
        self.roles
            .get(&(namespace.to_string(), name.to_string()))
            .map(|r| &r[..])
    }

    /// The rules of the ClusterRole `name`, if it exists.
    pub fn cluster_role_rules(&self, name: &str) -> Option<&[PolicyRule]> {
        self.cluster_roles.get(name).map(|r| &r[..])
    }

    /// The rules a roleRef grants in a binding of `binding_namespace` (empty for a
    /// ClusterRoleBinding), or why it grants nothing.
    pub fn resolve_role_ref(
        &self,
        role_ref: &RoleRef,
        binding_namespace: &str,
    ) -> Result<Arc<[PolicyRule]>, RoleRefError> {
        if role_ref.api_group != RBAC_GROUP {
            return Err(RoleRefError::Unsupported(format!(
                "unsupported role reference apiGroup: {}",
                go_quote(&role_ref.api_group)
            )));
        }
        let found = match role_ref.kind.as_str() {
            "Role" => self
                .roles
                .get(&(binding_namespace.to_string(), role_ref.name.clone())),
            "ClusterRole" => self.cluster_roles.get(&role_ref.name),
            other => {
                return Err(RoleRefError::Unsupported(format!(
                    "unsupported role reference kind: {}",
                    go_quote(other)
                )))
            }
        };
        found.cloned().ok_or_else(|| RoleRefError::NotFound {
            kind: if role_ref.kind == "Role" {
                Kind::Role
            } else {
                Kind::ClusterRole
            },
            name: role_ref.name.clone(),
        })
    }

    /// RBAC's answer to a request: Allow with the binding that allows it, else NoOpinion
    /// (never Deny), with the bindings of the user that could not be resolved as reason.
    pub fn authorize(&self, attrs: &Attributes<'_>) -> Decision {
        let mut errors = Vec::new();
        for map in self.scopes(attrs.namespace) {
            for grant in map.applicable(attrs.user) {
                match &grant.rules {
                    Ok(rules) if rules_allow(attrs, rules) => {
                        return Decision::Allow(format!("RBAC: allowed by {}", grant.source));
                    }
                    Ok(_) => {}
                    Err(e) => errors.push(e.clone()),
                }
            }
        }
        if errors.is_empty() {
            Decision::NoOpinion(String::new())
        } else {
            Decision::NoOpinion(format!("RBAC: {}", aggregate_errors(&errors)))
        }
    }

    /// Every rule that applies to `user` in `namespace` (cluster-wide only when empty),
    /// cluster role bindings first, with the errors of bindings that grant nothing:
    /// upstream's rule resolver, which escalation checks use.
    pub fn policy_rules_for(
        &self,
        user: &UserInfo,
        namespace: &str,
    ) -> (Vec<PolicyRule>, Vec<String>) {
        let mut rules = Vec::new();
        let mut errors = Vec::new();
        for map in self.scopes(namespace) {
            for grant in map.applicable(user) {
                match &grant.rules {
                    Ok(r) => rules.extend(r.iter().cloned()),
                    Err(e) => errors.push(e.clone()),
                }
            }
        }
        (rules, errors)
    }

    /// The rules for SelfSubjectRulesReview: a rule naming both resources and
    /// non-resource URLs is in both lists, as upstream.
    pub fn rules_for(&self, user: &UserInfo, namespace: &str) -> RulesFor {
        let (rules, errors) = self.policy_rules_for(user, namespace);
        let mut out = RulesFor {
            errors,
            ..Default::default()
        };
        for rule in rules {
            if !rule.non_resource_urls.is_empty() {
                out.non_resource_rules.push(PolicyRule {
                    verbs: rule.verbs.clone(),
                    non_resource_urls: rule.non_resource_urls.clone(),
                    ..Default::default()
                });
            }
            if !rule.resources.is_empty() {
                out.resource_rules.push(PolicyRule {
                    non_resource_urls: Vec::new(),
                    ..rule
                });
            }
        }
        out
    }

    /// The subject maps a request in `namespace` consults, cluster-wide first.
    fn scopes(&self, namespace: &str) -> impl Iterator<Item = &SubjectMap> {
        let local = if namespace.is_empty() {
            None
        } else {
            self.namespaces.get(namespace)
        };
        std::iter::once(&self.cluster).chain(local)
    }

    fn issue(&mut self, kind: Kind, namespace: &str, name: &str, reason: impl Into<String>) {
        self.issues
            .push(ObjectIssue::new(kind, namespace, name, reason));
    }

    #[allow(clippy::too_many_arguments)]
    fn add_binding(
        &mut self,
        map: &mut SubjectMap,
        seq: usize,
        kind: Kind,
        namespace: &str,
        name: &str,
        quoted_name: &str,
        role_ref: &RoleRef,
        subjects: &[Subject],
    ) {
        let rules = self
            .resolve_role_ref(role_ref, namespace)
            .map_err(|e| e.authorizer_message());
        if let Err(e) = &rules {
            self.issue(kind, namespace, name, format!("grants nothing: {e}"));
        }
        let role = format!("{} {}", role_ref.kind, go_quote(&role_ref.name));
        for (i, subject) in subjects.iter().enumerate() {
            let Some((key, is_group, described)) = subject_key(subject, namespace) else {
                self.issue(
                    kind,
                    namespace,
                    name,
                    format!(
                        "subject {} {} matches nobody",
                        go_quote(&subject.kind),
                        go_quote(&subject.name)
                    ),
                );
                continue;
            };
            let grant = Grant {
                order: (seq, i),
                source: format!("{kind} {quoted_name} of {role} to {described}"),
                rules: rules.clone(),
            };
            let by = if is_group {
                &mut map.groups
            } else {
                &mut map.users
            };
            by.entry(key).or_default().push(grant);
        }
    }
}

/// Reads each object with `read`, setting aside those it refuses.
fn read_all<'a, T>(
    values: impl IntoIterator<Item = &'a Value>,
    read: impl Fn(&Value) -> Result<T, ObjectIssue>,
    skipped: &mut Vec<ObjectIssue>,
) -> Vec<T> {
    let mut out = Vec::new();
    for value in values {
        match read(value) {
            Ok(object) => out.push(object),
            Err(issue) => skipped.push(issue),
        }
    }
    out
}

/// Where a subject is indexed (user or group name, whether a group) and how reasons
/// describe it; None for subjects that match nobody.
fn subject_key(subject: &Subject, binding_namespace: &str) -> Option<(String, bool, String)> {
    if subject.name.is_empty() {
        return None;
    }
    match subject.kind.as_str() {
        "User" => Some((
            subject.name.clone(),
            false,
            format!("User {}", go_quote(&subject.name)),
        )),
        "Group" => Some((
            subject.name.clone(),
            true,
            format!("Group {}", go_quote(&subject.name)),
        )),
        "ServiceAccount" => {
            // A RoleBinding's service accounts default to its own namespace.
            let ns = if subject.namespace.is_empty() {
                binding_namespace
            } else {
                &subject.namespace
            };
            if ns.is_empty() {
                return None;
            }
            Some((
                format!("{SERVICE_ACCOUNT_PREFIX}{ns}:{}", subject.name),
                false,
                format!(
                    "ServiceAccount {}",
                    go_quote(&format!("{}/{ns}", subject.name))
                ),
            ))
        }
        _ => None,
    }
}

/// Why a roleRef grants nothing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RoleRefError {
    /// The role does not exist.
    NotFound {
        /// `Role` or `ClusterRole`.
        kind: Kind,
        /// The role's name.
        name: String,
    },
    /// The roleRef names a kind or group RBAC does not know.
    Unsupported(String),
}

impl RoleRefError {
    /// The message the authorizer reports (upstream's lister error:
    /// `clusterrole.rbac.authorization.k8s.io "x" not found`).
    pub fn authorizer_message(&self) -> String {
        match self {
            RoleRefError::NotFound { kind, name } => {
                let singular = kind.as_str().to_ascii_lowercase();
                format!("{singular}.{RBAC_GROUP} {} not found", go_quote(name))
            }
            RoleRefError::Unsupported(m) => m.clone(),
        }
    }

    /// The message a write answers with (upstream's registry error, 404:
    /// `clusterroles.rbac.authorization.k8s.io "x" not found`).
    pub fn api_message(&self) -> String {
        match self {
            RoleRefError::NotFound { kind, name } => {
                format!(
                    "{}.{RBAC_GROUP} {} not found",
                    kind.resource(),
                    go_quote(name)
                )
            }
            RoleRefError::Unsupported(m) => m.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn user(name: &str, groups: &[&str]) -> UserInfo {
        UserInfo {
            name: name.into(),
            groups: groups.iter().map(|g| g.to_string()).collect(),
            ..Default::default()
        }
    }

    fn cluster_role(name: &str, rules: Value) -> Value {
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
               "metadata": {"name": name}, "rules": rules})
    }

    fn role(ns: &str, name: &str, rules: Value) -> Value {
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
               "metadata": {"name": name, "namespace": ns}, "rules": rules})
    }

    fn crb(name: &str, role: &str, subjects: Value) -> Value {
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
               "metadata": {"name": name},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
               "subjects": subjects})
    }

    fn rb(ns: &str, name: &str, kind: &str, role: &str, subjects: Value) -> Value {
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
               "metadata": {"name": name, "namespace": ns},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": kind, "name": role},
               "subjects": subjects})
    }

    fn get_pods() -> Value {
        json!([{"verbs": ["get", "list"], "apiGroups": [""], "resources": ["pods"]}])
    }

    fn allowed(index: &RbacIndex, u: &UserInfo, verb: &str, ns: &str, resource: &str) -> bool {
        index
            .authorize(&Attributes::resource(u, verb, "", resource).in_namespace(ns))
            .is_allowed()
    }

    #[test]
    fn cluster_role_bindings_apply_everywhere() {
        let index = RbacIndex::from_json(
            &[],
            &[cluster_role("pod-reader", get_pods())],
            &[],
            &[crb(
                "read-pods",
                "pod-reader",
                json!([{"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": "alice"}]),
            )],
        );
        assert!(index.issues().is_empty(), "{:?}", index.issues());
        let alice = user("alice", &[]);
        assert!(allowed(&index, &alice, "get", "", "pods"));
        assert!(allowed(&index, &alice, "list", "ns1", "pods"));
        assert!(!allowed(&index, &alice, "delete", "ns1", "pods"));
        assert!(!allowed(&index, &alice, "get", "ns1", "secrets"));
        assert!(!allowed(&index, &user("bob", &[]), "get", "", "pods"));
        assert_eq!(
            index.authorize(&Attributes::resource(&alice, "get", "", "pods")),
            Decision::Allow(
                r#"RBAC: allowed by ClusterRoleBinding "read-pods" of ClusterRole "pod-reader" to User "alice""#
                    .into()
            )
        );
        assert_eq!(
            index.authorize(&Attributes::resource(&alice, "delete", "", "pods")),
            Decision::NoOpinion(String::new())
        );
    }

    #[test]
    fn role_bindings_apply_only_in_their_namespace() {
        let index = RbacIndex::from_json(
            &[role("ns1", "r", get_pods())],
            &[cluster_role(
                "cm",
                json!([{"verbs": ["get"], "apiGroups": [""], "resources": ["configmaps"]}]),
            )],
            &[
                rb(
                    "ns1",
                    "b1",
                    "Role",
                    "r",
                    json!([{"kind": "Group", "name": "devs"}]),
                ),
                // A RoleBinding to a ClusterRole grants its rules in that namespace only.
                rb(
                    "ns2",
                    "b2",
                    "ClusterRole",
                    "cm",
                    json!([{"kind": "User", "name": "carol"}]),
                ),
                // A RoleBinding cannot reach a Role of another namespace.
                rb(
                    "ns3",
                    "b3",
                    "Role",
                    "r",
                    json!([{"kind": "User", "name": "carol"}]),
                ),
            ],
            &[],
        );
        let dev = user("dave", &["devs"]);
        assert!(allowed(&index, &dev, "get", "ns1", "pods"));
        assert!(!allowed(&index, &dev, "get", "ns2", "pods"));
        assert!(!allowed(&index, &dev, "get", "", "pods"));
        let carol = user("carol", &[]);
        assert!(allowed(&index, &carol, "get", "ns2", "configmaps"));
        assert!(!allowed(&index, &carol, "get", "ns1", "configmaps"));
        assert!(!allowed(&index, &carol, "get", "", "configmaps"));
        assert!(!allowed(&index, &carol, "get", "ns3", "pods"));
        assert_eq!(
            index
                .authorize(&Attributes::resource(&dev, "get", "", "pods").in_namespace("ns1"))
                .reason(),
            r#"RBAC: allowed by RoleBinding "b1/ns1" of Role "r" to Group "devs""#
        );
        assert_eq!(
            index.issues().len(),
            1,
            "b3's role is missing: {:?}",
            index.issues()
        );
        assert_eq!(
            index.authorize(&Attributes::resource(&carol, "get", "", "pods").in_namespace("ns3")),
            Decision::NoOpinion(r#"RBAC: role.rbac.authorization.k8s.io "r" not found"#.into())
        );
    }

    #[test]
    fn service_accounts() {
        let index = RbacIndex::from_json(
            &[],
            &[cluster_role("pod-reader", get_pods())],
            &[
                rb(
                    "ns1",
                    "local",
                    "ClusterRole",
                    "pod-reader",
                    json!([{"kind": "ServiceAccount", "name": "builder"}]),
                ),
                rb(
                    "ns1",
                    "other",
                    "ClusterRole",
                    "pod-reader",
                    json!([{"kind": "ServiceAccount", "name": "deployer", "namespace": "ci"}]),
                ),
                rb(
                    "ns2",
                    "all-sa",
                    "ClusterRole",
                    "pod-reader",
                    json!([{"kind": "Group", "name": "system:serviceaccounts:ci"}]),
                ),
            ],
            &[
                crb(
                    "sa",
                    "pod-reader",
                    json!([{"kind": "ServiceAccount", "name": "x", "namespace": "kube-system"}]),
                ),
                // A ServiceAccount without a namespace in a ClusterRoleBinding matches nobody.
                crb(
                    "no-ns",
                    "pod-reader",
                    json!([{"kind": "ServiceAccount", "name": "y"}]),
                ),
            ],
        );
        let builder = user("system:serviceaccount:ns1:builder", &[]);
        assert!(allowed(&index, &builder, "get", "ns1", "pods"));
        assert!(!allowed(&index, &builder, "get", "ns2", "pods"));
        assert_eq!(
            index
                .authorize(&Attributes::resource(&builder, "get", "", "pods").in_namespace("ns1"))
                .reason(),
            r#"RBAC: allowed by RoleBinding "local/ns1" of ClusterRole "pod-reader" to ServiceAccount "builder/ns1""#
        );
        let deployer = user(
            "system:serviceaccount:ci:deployer",
            &["system:serviceaccounts", "system:serviceaccounts:ci"],
        );
        assert!(allowed(&index, &deployer, "get", "ns1", "pods"));
        assert!(allowed(&index, &deployer, "get", "ns2", "pods"));
        // Groups come from authentication, never from the user name.
        let bare = user("system:serviceaccount:ci:deployer", &[]);
        assert!(!allowed(&index, &bare, "get", "ns2", "pods"));
        assert!(allowed(
            &index,
            &user("system:serviceaccount:kube-system:x", &[]),
            "get",
            "",
            "pods"
        ));
        assert!(!allowed(
            &index,
            &user("system:serviceaccount:kube-system:xx", &[]),
            "get",
            "",
            "pods"
        ));
        assert!(!allowed(
            &index,
            &user("system:serviceaccount::y", &[]),
            "get",
            "",
            "pods"
        ));
        assert!(!allowed(&index, &user("y", &[]), "get", "", "pods"));
        assert!(index.issues().iter().any(|i| i.name == "no-ns"));
    }

    #[test]
    fn missing_roles_grant_nothing_and_are_reported() {
        let index = RbacIndex::from_json(
            &[],
            &[cluster_role("real", get_pods())],
            &[rb(
                "ns1",
                "to-missing-role",
                "Role",
                "ghost",
                json!([{"kind": "User", "name": "u"}]),
            )],
            &[
                crb(
                    "to-missing",
                    "ghost",
                    json!([{"kind": "User", "name": "u"}]),
                ),
                json!({"kind": "ClusterRoleBinding", "metadata": {"name": "role-kind"},
                       "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "real"},
                       "subjects": [{"kind": "User", "name": "u"}]}),
                json!({"kind": "ClusterRoleBinding", "metadata": {"name": "bad-kind"},
                       "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Secret", "name": "real"},
                       "subjects": [{"kind": "User", "name": "u"}]}),
                json!({"kind": "ClusterRoleBinding", "metadata": {"name": "bad-group"},
                       "roleRef": {"apiGroup": "example.com", "kind": "ClusterRole", "name": "real"},
                       "subjects": [{"kind": "User", "name": "u"}]}),
            ],
        );
        let u = user("u", &[]);
        assert!(!allowed(&index, &u, "get", "ns1", "pods"));
        assert_eq!(index.issues().len(), 5, "{:?}", index.issues());
        assert_eq!(
            index
                .authorize(&Attributes::resource(&u, "get", "", "pods").in_namespace("ns1"))
                .reason(),
            "RBAC: [clusterrole.rbac.authorization.k8s.io \"ghost\" not found, \
             role.rbac.authorization.k8s.io \"real\" not found, \
             unsupported role reference kind: \"Secret\", \
             unsupported role reference apiGroup: \"example.com\", \
             role.rbac.authorization.k8s.io \"ghost\" not found]"
        );
        let rules = index.rules_for(&u, "ns1");
        assert!(rules.resource_rules.is_empty() && rules.non_resource_rules.is_empty());
        assert_eq!(rules.errors.len(), 5);
        assert!(!rules.incomplete);
        // Errors of bindings that do not apply to the user are not reported to them.
        assert_eq!(
            index.authorize(&Attributes::resource(&user("v", &[]), "get", "", "pods")),
            Decision::NoOpinion(String::new())
        );
    }

    #[test]
    fn hostile_objects_never_grant() {
        let index = RbacIndex::from_json(
            &[
                json!({"kind": "Role", "metadata": {"name": "r"}, "rules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}]}),
            ],
            &[
                json!({"kind": "ClusterRole", "metadata": {"name": "star"}, "rules": [{"verbs": "*", "apiGroups": ["*"], "resources": ["*"]}]}),
                json!({"kind": "ClusterRole", "metadata": {"name": "ok"}, "rules": get_pods()}),
                json!({"kind": "ClusterRole", "metadata": {"name": "ok"}, "rules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}]}),
                json!(null),
                json!([1, 2]),
                json!({"kind": "ClusterRole", "metadata": {"name": "weird"}, "rules": [{}, {"verbs": [], "resources": ["*"]}]}),
            ],
            &[
                rb("ns", "no-subjects", "ClusterRole", "ok", json!(null)),
                json!({"kind": "RoleBinding", "metadata": {"name": "x", "namespace": "ns"}, "subjects": [{"kind": "User", "name": "u"}]}),
            ],
            &[
                crb("to-star", "star", json!([{"kind": "User", "name": "u"}])),
                crb(
                    "to-weird",
                    "weird",
                    json!([{"kind": "User", "name": "u"}, {"kind": "User", "name": ""}, {"kind": "Robot", "name": "u"}, {"kind": "Group"}]),
                ),
                crb(
                    "to-ok",
                    "ok",
                    json!([{"kind": "user", "name": "u"}, {"kind": "User", "name": "U"}]),
                ),
                json!({"kind": "ClusterRoleBinding", "metadata": {"name": "str-subjects"}, "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "ok"}, "subjects": "u"}),
                json!({"kind": "ClusterRoleBinding", "metadata": {"name": "nums"}, "roleRef": 7, "subjects": [{"kind": "User", "name": "u"}]}),
            ],
        );
        let u = user("u", &[]);
        for (verb, resource) in [("get", "pods"), ("delete", "secrets"), ("get", "nodes")] {
            assert!(
                !allowed(&index, &u, verb, "ns", resource),
                "{verb} {resource}"
            );
            assert!(
                !allowed(&index, &u, verb, "", resource),
                "{verb} {resource}"
            );
        }
        assert!(!index
            .authorize(&Attributes::non_resource(&u, "get", "/healthz"))
            .is_allowed());
        assert!(!allowed(&index, &user("", &[]), "get", "", "pods"));
        // The first "ok" wins; the duplicate granting everything is ignored.
        assert_eq!(index.cluster_role_rules("ok").map(<[_]>::len), Some(1));
        assert!(index.issues().len() >= 8, "{:#?}", index.issues());
    }

    #[test]
    fn first_binding_in_order_is_the_reason() {
        let index = RbacIndex::from_json(
            &[],
            &[cluster_role("a", get_pods()), cluster_role("b", get_pods())],
            &[],
            &[
                crb(
                    "first",
                    "a",
                    json!([{"kind": "Group", "name": "g"}, {"kind": "User", "name": "u"}]),
                ),
                crb("second", "b", json!([{"kind": "User", "name": "u"}])),
            ],
        );
        let u = user("u", &["g", "g"]);
        assert_eq!(
            index
                .authorize(&Attributes::resource(&u, "get", "", "pods"))
                .reason(),
            r#"RBAC: allowed by ClusterRoleBinding "first" of ClusterRole "a" to Group "g""#
        );
        assert_eq!(index.grant_count(), 3);
        // Each binding's rules counted once even when the user matches two subjects.
        assert_eq!(index.rules_for(&u, "").resource_rules.len(), 2);
    }

    #[test]
    fn rules_for_splits_rules() {
        let index = RbacIndex::from_json(
            &[role(
                "ns",
                "local",
                json!([{"verbs": ["create"], "apiGroups": [""], "resources": ["configmaps"]}]),
            )],
            &[cluster_role(
                "mixed",
                json!([
                    {"verbs": ["get"], "apiGroups": [""], "resources": ["pods"], "nonResourceURLs": ["/x"]},
                    {"verbs": ["get"], "nonResourceURLs": ["/healthz"]},
                    {"verbs": ["get"]}
                ]),
            )],
            &[rb(
                "ns",
                "b",
                "Role",
                "local",
                json!([{"kind": "User", "name": "u"}]),
            )],
            &[crb("c", "mixed", json!([{"kind": "User", "name": "u"}]))],
        );
        let u = user("u", &[]);
        let r = index.rules_for(&u, "ns");
        assert_eq!(
            r.resource_rules,
            vec![
                PolicyRule::resource(&["get"], &[""], &["pods"]),
                PolicyRule::resource(&["create"], &[""], &["configmaps"]),
            ]
        );
        assert_eq!(
            r.non_resource_rules,
            vec![
                PolicyRule::non_resource(&["get"], &["/x"]),
                PolicyRule::non_resource(&["get"], &["/healthz"]),
            ]
        );
        assert_eq!(r.evaluation_error(), "");
        assert_eq!(index.rules_for(&u, "").resource_rules.len(), 1);
        assert_eq!(index.rules_for(&u, "other").resource_rules.len(), 1);
        assert!(index
            .rules_for(&user("x", &[]), "ns")
            .resource_rules
            .is_empty());
    }

    #[test]
    fn non_resource_requests() {
        let index = RbacIndex::from_json(
            &[],
            &[cluster_role(
                "health",
                json!([{"verbs": ["get"], "nonResourceURLs": ["/healthz", "/healthz/*"]}]),
            )],
            &[rb(
                "ns",
                "b",
                "ClusterRole",
                "health",
                json!([{"kind": "User", "name": "ns-user"}]),
            )],
            &[crb(
                "h",
                "health",
                json!([{"kind": "Group", "name": "system:authenticated"}]),
            )],
        );
        let u = user("u", &["system:authenticated"]);
        assert!(index
            .authorize(&Attributes::non_resource(&u, "get", "/healthz/etcd"))
            .is_allowed());
        assert!(!index
            .authorize(&Attributes::non_resource(&u, "get", "/metrics"))
            .is_allowed());
        // Non-resource rules from RoleBindings never apply (non-resource requests have no namespace).
        let ns_user = user("ns-user", &[]);
        assert!(!index
            .authorize(&Attributes::non_resource(&ns_user, "get", "/healthz"))
            .is_allowed());
    }

    #[test]
    fn index_is_shareable() {
        fn assert_send_sync<T: Send + Sync>() {}
        assert_send_sync::<RbacIndex>();
    }
}
