//! Escalation prevention: a user may only write a role or binding granting what they
//! already hold, unless they are allowed `escalate` (roles) or `bind` (bindings).
//!
//! The `escalate` / `bind` questions go to the caller's whole authorizer chain (a
//! callback), which is also where `system:masters` is allowed everything.

use std::collections::HashMap;

use serde_json::Value;

use super::format::{aggregate_errors, compact_rule, go_quote, go_quote_list};
use super::index::{RbacIndex, RoleRefError};
use super::rules::url_covers;
use super::types::{
    ClusterRole, ClusterRoleBinding, Kind, PolicyRule, Role, RoleBinding, RoleRef, RBAC_GROUP,
    WILDCARD,
};
use crate::auth::attributes::{Attributes, Decision};
use crate::auth::UserInfo;

/// How many single-verb rules a check may break requested rules into. Past it, a rule
/// no single owner rule covers is refused whole: a hostile role with thousands of
/// verbs, groups, resources and names cannot make a write spin (upstream has no bound).
const ATOM_BUDGET: usize = 200_000;

/// Whether `owner` rules allow everything `requested` rules do (upstream's
/// `validation.Covers`). On failure, the requested permissions not held, broken into
/// rules of one verb, group, resource and name (or one verb and URL).
pub fn covers(owner: &[PolicyRule], requested: &[PolicyRule]) -> Result<(), Vec<PolicyRule>> {
    let mut missing = Vec::new();
    let mut budget = ATOM_BUDGET;
    for rule in requested {
        for part in split(rule).into_iter().flatten() {
            if owner.iter().any(|o| rule_covers(o, &part)) {
                continue;
            }
            let atoms = atom_count(&part);
            if atoms > budget {
                missing.push(part);
                continue;
            }
            budget -= atoms;
            for atom in breakdown(&part) {
                if !owner.iter().any(|o| rule_covers(o, &atom)) {
                    missing.push(atom);
                }
            }
        }
    }
    if missing.is_empty() {
        Ok(())
    } else {
        Err(missing)
    }
}

/// A rule's resource part and non-resource part, each only when it grants something.
fn split(rule: &PolicyRule) -> [Option<PolicyRule>; 2] {
    let has_verbs = !rule.verbs.is_empty();
    let resources =
        (has_verbs && !rule.api_groups.is_empty() && !rule.resources.is_empty()).then(|| {
            PolicyRule {
                non_resource_urls: Vec::new(),
                ..rule.clone()
            }
        });
    let urls = (has_verbs && !rule.non_resource_urls.is_empty()).then(|| PolicyRule {
        verbs: rule.verbs.clone(),
        non_resource_urls: rule.non_resource_urls.clone(),
        ..Default::default()
    });
    [resources, urls]
}

fn atom_count(part: &PolicyRule) -> usize {
    let per_verb = if part.non_resource_urls.is_empty() {
        part.api_groups
            .len()
            .saturating_mul(part.resources.len())
            .saturating_mul(part.resource_names.len().max(1))
    } else {
        part.non_resource_urls.len()
    };
    per_verb.saturating_mul(part.verbs.len())
}

/// One rule per verb × group × resource × name, or per verb × URL (upstream's order).
fn breakdown(part: &PolicyRule) -> Vec<PolicyRule> {
    let mut out = Vec::new();
    let one = |s: &String| vec![s.clone()];
    for group in &part.api_groups {
        for resource in &part.resources {
            for verb in &part.verbs {
                let base = PolicyRule {
                    verbs: one(verb),
                    api_groups: one(group),
                    resources: one(resource),
                    ..Default::default()
                };
                if part.resource_names.is_empty() {
                    out.push(base);
                } else {
                    for name in &part.resource_names {
                        out.push(PolicyRule {
                            resource_names: one(name),
                            ..base.clone()
                        });
                    }
                }
            }
        }
    }
    for url in &part.non_resource_urls {
        for verb in &part.verbs {
            out.push(PolicyRule {
                verbs: one(verb),
                non_resource_urls: one(url),
                ..Default::default()
            });
        }
    }
    out
}

fn has_star(set: &[String]) -> bool {
    set.iter().any(|s| s == WILDCARD)
}

fn has_all(set: &[String], wanted: &[String]) -> bool {
    wanted.iter().all(|w| set.contains(w))
}

/// Whether the single owner rule covers all of `sub` (upstream's `ruleCovers`, exact for
/// the parts `split` makes).
fn rule_covers(owner: &PolicyRule, sub: &PolicyRule) -> bool {
    let verbs = has_star(&owner.verbs) || has_all(&owner.verbs, &sub.verbs);
    let groups = has_star(&owner.api_groups) || has_all(&owner.api_groups, &sub.api_groups);
    let resources = resources_cover(&owner.resources, &sub.resources);
    let urls = sub
        .non_resource_urls
        .iter()
        .all(|u| owner.non_resource_urls.iter().any(|o| url_covers(o, u)));
    let names = if sub.resource_names.is_empty() {
        owner.resource_names.is_empty()
    } else {
        owner.resource_names.is_empty() || has_all(&owner.resource_names, &sub.resource_names)
    };
    verbs && groups && resources && urls && names
}

/// `*`, each resource listed, or a subresource covered by `*/<subresource>`.
fn resources_cover(owner: &[String], wanted: &[String]) -> bool {
    if has_star(owner) {
        return true;
    }
    wanted.iter().all(|path| {
        owner.contains(path)
            || path
                .split_once('/')
                .is_some_and(|(_, sub)| owner.iter().any(|o| o.strip_prefix("*/") == Some(sub)))
    })
}

/// Merges rules of one group and one resource (nothing else) that differ only in verbs,
/// as upstream shortens the missing rules of an escalation message.
pub fn compact_rules(rules: &[PolicyRule]) -> Vec<PolicyRule> {
    let mut out: Vec<PolicyRule> = Vec::new();
    let mut simple: HashMap<(String, String), usize> = HashMap::new();
    for rule in rules {
        let is_simple = rule.api_groups.len() == 1
            && rule.resources.len() == 1
            && rule.resource_names.is_empty()
            && rule.non_resource_urls.is_empty();
        if !is_simple {
            out.push(rule.clone());
            continue;
        }
        let key = (rule.api_groups[0].clone(), rule.resources[0].clone());
        match simple.get(&key) {
            Some(&i) => out[i].verbs.extend(rule.verbs.iter().cloned()),
            None => {
                simple.insert(key, out.len());
                out.push(rule.clone());
            }
        }
    }
    out
}

/// Whether `user`'s rules in `namespace` (cluster-wide when empty) cover `rules`; if not,
/// upstream's explanation: `user "u" (groups=[...]) is attempting to grant RBAC
/// permissions not currently held:` and the missing rules, one a line, sorted.
pub fn confirm_no_escalation(
    index: &RbacIndex,
    user: &UserInfo,
    namespace: &str,
    rules: &[PolicyRule],
) -> Result<(), String> {
    let (owner, errors) = index.policy_rules_for(user, namespace);
    let Err(missing) = covers(&owner, rules) else {
        return Ok(());
    };
    let mut lines: Vec<String> = compact_rules(&missing).iter().map(compact_rule).collect();
    lines.sort();
    lines.dedup();
    let mut msg = format!(
        "user {} (groups={}) is attempting to grant RBAC permissions not currently held:\n{}",
        go_quote(&user.name),
        go_quote_list(&user.groups),
        lines.join("\n")
    );
    if !errors.is_empty() {
        msg.push_str(&format!(
            "; resolution errors: [{}]",
            aggregate_errors(&errors)
        ));
    }
    Err(msg)
}

/// Why a Role, ClusterRole or binding write is refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EscalationError {
    /// 403 Forbidden on `resource` (`roles`, `clusterroles`, `rolebindings`,
    /// `clusterrolebindings` of rbac.authorization.k8s.io) named `name`.
    Forbidden {
        /// The resource written.
        resource: &'static str,
        /// The object's name (may be empty, with generateName).
        name: String,
        /// The whole Status message, as upstream's.
        message: String,
    },
    /// A binding whose role does not exist (404 NotFound on the role) or whose roleRef
    /// RBAC does not know (422).
    RoleRef(RoleRefError),
}

impl EscalationError {
    fn forbidden(kind: Kind, name: &str, cause: &str) -> Self {
        let resource = kind.resource();
        let message = if name.is_empty() {
            format!("{resource}.{RBAC_GROUP} is forbidden: {cause}")
        } else {
            format!(
                "{resource}.{RBAC_GROUP} {} is forbidden: {cause}",
                go_quote(name)
            )
        };
        EscalationError::Forbidden {
            resource,
            name: name.to_string(),
            message,
        }
    }

    /// The message of the Status to answer with.
    pub fn message(&self) -> String {
        match self {
            EscalationError::Forbidden { message, .. } => message.clone(),
            EscalationError::RoleRef(e) => e.api_message(),
        }
    }
}

/// The question whose Allow lets a user write a role they do not hold: `escalate` on
/// `roles` or `clusterroles`, in the request's namespace, named as the request path
/// names it (empty on create, so only rules without resourceNames allow creating).
pub fn escalate_attributes<'a>(
    user: &'a UserInfo,
    kind: Kind,
    namespace: &'a str,
    request_name: &'a str,
) -> Attributes<'a> {
    Attributes::resource(user, "escalate", RBAC_GROUP, kind.resource())
        .in_namespace(namespace)
        .named(request_name)
        .with_version(WILDCARD)
}

/// The question whose Allow lets a user bind a role they do not hold: `bind` on the
/// roleRef's role, in the binding's namespace (empty for a ClusterRoleBinding). None for
/// a roleRef kind that cannot be bound.
pub fn bind_attributes<'a>(
    user: &'a UserInfo,
    role_ref: &'a RoleRef,
    binding_namespace: &'a str,
) -> Option<Attributes<'a>> {
    let resource = match role_ref.kind.as_str() {
        "Role" => Kind::Role.resource(),
        "ClusterRole" => Kind::ClusterRole.resource(),
        _ => return None,
    };
    Some(
        Attributes::resource(user, "bind", &role_ref.api_group, resource)
            .in_namespace(binding_namespace)
            .named(&role_ref.name),
    )
}

/// Checks a Role create or update: allowed when the user may `escalate` (asked through
/// `authorize`) or already holds every rule in the role's namespace.
pub fn check_role_write(
    index: &RbacIndex,
    user: &UserInfo,
    role: &Role,
    request_name: &str,
    authorize: impl FnOnce(&Attributes<'_>) -> Decision,
) -> Result<(), EscalationError> {
    let ns = role.meta.namespace.as_str();
    if authorize(&escalate_attributes(user, Kind::Role, ns, request_name)).is_allowed() {
        return Ok(());
    }
    confirm_no_escalation(index, user, ns, &role.rules)
        .map_err(|cause| EscalationError::forbidden(Kind::Role, &role.meta.name, &cause))
}

/// The rules an aggregation rule needs its writer to hold: everything.
fn full_authority() -> [PolicyRule; 2] {
    [
        PolicyRule::resource(&[WILDCARD], &[WILDCARD], &[WILDCARD]),
        PolicyRule::non_resource(&[WILDCARD], &[WILDCARD]),
    ]
}

/// Checks a ClusterRole create (`old` None) or update: as a Role, cluster-wide; setting,
/// changing or dropping an aggregation rule (which can gather anything) further needs
/// the user to hold everything, unless they may `escalate`.
pub fn check_cluster_role_write(
    index: &RbacIndex,
    user: &UserInfo,
    role: &ClusterRole,
    old: Option<&ClusterRole>,
    request_name: &str,
    authorize: impl FnOnce(&Attributes<'_>) -> Decision,
) -> Result<(), EscalationError> {
    if authorize(&escalate_attributes(
        user,
        Kind::ClusterRole,
        "",
        request_name,
    ))
    .is_allowed()
    {
        return Ok(());
    }
    let name = &role.meta.name;
    confirm_no_escalation(index, user, "", &role.rules)
        .map_err(|cause| EscalationError::forbidden(Kind::ClusterRole, name, &cause))?;
    if role.is_aggregated() || old.is_some_and(ClusterRole::is_aggregated) {
        confirm_no_escalation(index, user, "", &full_authority()).map_err(|_| {
            EscalationError::forbidden(
                Kind::ClusterRole,
                name,
                "must have cluster-admin privileges to use the aggregationRule",
            )
        })?;
    }
    Ok(())
}

/// Checks a RoleBinding create or update: allowed when the user may `bind` the role
/// (asked through `authorize`), else the role must exist and the user hold its rules in
/// the binding's namespace.
pub fn check_role_binding_write(
    index: &RbacIndex,
    user: &UserInfo,
    binding: &RoleBinding,
    authorize: impl FnOnce(&Attributes<'_>) -> Decision,
) -> Result<(), EscalationError> {
    check_binding(
        index,
        user,
        Kind::RoleBinding,
        &binding.meta.name,
        &binding.meta.namespace,
        &binding.role_ref,
        authorize,
    )
}

/// Checks a ClusterRoleBinding create or update, as a RoleBinding, cluster-wide.
pub fn check_cluster_role_binding_write(
    index: &RbacIndex,
    user: &UserInfo,
    binding: &ClusterRoleBinding,
    authorize: impl FnOnce(&Attributes<'_>) -> Decision,
) -> Result<(), EscalationError> {
    check_binding(
        index,
        user,
        Kind::ClusterRoleBinding,
        &binding.meta.name,
        "",
        &binding.role_ref,
        authorize,
    )
}

fn check_binding(
    index: &RbacIndex,
    user: &UserInfo,
    kind: Kind,
    name: &str,
    namespace: &str,
    role_ref: &RoleRef,
    authorize: impl FnOnce(&Attributes<'_>) -> Decision,
) -> Result<(), EscalationError> {
    if let Some(attrs) = bind_attributes(user, role_ref, namespace) {
        if authorize(&attrs).is_allowed() {
            return Ok(());
        }
    }
    let rules = index
        .resolve_role_ref(role_ref, namespace)
        .map_err(EscalationError::RoleRef)?;
    confirm_no_escalation(index, user, namespace, &rules)
        .map_err(|cause| EscalationError::forbidden(kind, name, &cause))
}

/// Whether an update changes only what garbage collection changes (`ownerReferences`,
/// `finalizers`), which upstream lets through without escalation checks so an owner's
/// deletion is never blocked. `resourceVersion` and `managedFields` are ignored too:
/// they grant nothing.
pub fn only_gc_fields_changed(old: &Value, new: &Value) -> bool {
    fn strip(v: &Value) -> Value {
        let mut v = v.clone();
        if let Some(meta) = v.get_mut("metadata").and_then(Value::as_object_mut) {
            for field in [
                "ownerReferences",
                "finalizers",
                "resourceVersion",
                "managedFields",
            ] {
                meta.remove(field);
            }
        }
        v
    }
    strip(old) == strip(new)
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

    fn r(verbs: &[&str], groups: &[&str], resources: &[&str]) -> PolicyRule {
        PolicyRule::resource(verbs, groups, resources)
    }

    fn no(_: &Attributes<'_>) -> Decision {
        Decision::NoOpinion(String::new())
    }

    #[test]
    fn wildcard_owner_covers_anything() {
        let admin = [
            r(&["*"], &["*"], &["*"]),
            PolicyRule::non_resource(&["*"], &["*"]),
        ];
        let requested = [
            r(
                &["get", "escalate", "bind"],
                &["", "apps", "x.io"],
                &["pods", "pods/log", "*"],
            )
            .with_names(&["a", "b"]),
            PolicyRule::non_resource(&["get", "post"], &["/healthz", "/x/*", "*"]),
        ];
        assert_eq!(covers(&admin, &requested), Ok(()));
        // Resource wildcards do not cover non-resource URLs.
        assert_eq!(covers(&admin[..1], &requested[1..]).unwrap_err().len(), 6);
    }

    #[test]
    fn covers_breaks_rules_into_atoms() {
        let owner = [
            r(&["get", "list"], &[""], &["pods"]),
            r(&["get"], &[""], &["pods"]).with_names(&["x"]),
            r(&["get"], &["*"], &["*/status"]),
            r(&["watch"], &[""], &["configmaps"]).with_names(&["a", "b"]),
            PolicyRule::non_resource(&["get"], &["/api/*", "/healthz"]),
        ];
        assert_eq!(
            covers(&owner, &[r(&["get", "list"], &[""], &["pods"])]),
            Ok(())
        );
        // Split across two owner rules, still covered atom by atom.
        assert_eq!(
            covers(
                &owner,
                &[r(&["get"], &[""], &["pods", "deployments/status"])]
            ),
            Ok(())
        );
        assert_eq!(
            covers(
                &owner,
                &[r(&["get"], &[""], &["pods"]).with_names(&["x", "y"])]
            ),
            Ok(())
        );
        assert_eq!(
            covers(
                &owner,
                &[r(&["watch"], &[""], &["configmaps"]).with_names(&["a"])]
            ),
            Ok(())
        );
        assert_eq!(
            covers(
                &owner,
                &[PolicyRule::non_resource(&["get"], &["/api/v1", "/healthz"])]
            ),
            Ok(())
        );
        // An owner limited to names never covers all names.
        assert_eq!(
            covers(&owner, &[r(&["watch"], &[""], &["configmaps"])]),
            Err(vec![r(&["watch"], &[""], &["configmaps"])])
        );
        assert_eq!(
            covers(&owner, &[r(&["get", "delete"], &["", "apps"], &["pods"])]),
            Err(vec![
                r(&["delete"], &[""], &["pods"]),
                r(&["get"], &["apps"], &["pods"]),
                r(&["delete"], &["apps"], &["pods"]),
            ])
        );
        // `*` requested is not covered by a list of resources, nor `*/status` by pods.
        assert!(covers(&owner, &[r(&["get"], &[""], &["*"])]).is_err());
        assert!(covers(&owner, &[r(&["get"], &[""], &["pods/log"])]).is_err());
        assert!(covers(&owner, &[r(&["get"], &["*"], &["pods"])]).is_err());
        assert!(covers(&owner, &[r(&["*"], &[""], &["pods"])]).is_err());
        assert_eq!(
            covers(
                &owner,
                &[PolicyRule::non_resource(&["get"], &["/apis", "/api"])]
            ),
            Err(vec![
                PolicyRule::non_resource(&["get"], &["/apis"]),
                PolicyRule::non_resource(&["get"], &["/api"]),
            ])
        );
        // Rules granting nothing are covered by anything.
        assert_eq!(
            covers(&[], &[PolicyRule::default(), r(&[], &[""], &["pods"])]),
            Ok(())
        );
        assert_eq!(covers(&[], &[r(&["get"], &[], &["pods"])]), Ok(()));
    }

    #[test]
    fn non_resource_owner_rules_with_names_do_not_cover_urls() {
        let owner = [PolicyRule::non_resource(&["get"], &["*"]).with_names(&["x"])];
        assert!(covers(&owner, &[PolicyRule::non_resource(&["get"], &["/healthz"])]).is_err());
    }

    #[test]
    fn huge_rules_are_refused_whole_not_expanded() {
        let many: Vec<String> = (0..200).map(|i| format!("x{i}")).collect();
        let many: Vec<&str> = many.iter().map(String::as_str).collect();
        let hostile = r(&many, &many, &many).with_names(&many);
        let owner = [r(&["get"], &["x1"], &["x1"])];
        let missing = covers(&owner, std::slice::from_ref(&hostile)).unwrap_err();
        assert_eq!(missing, vec![hostile.clone()]);
        // Still covered when one owner rule covers it whole.
        assert_eq!(covers(&[r(&["*"], &["*"], &["*"])], &[hostile]), Ok(()));
    }

    #[test]
    fn compacts_like_upstream() {
        let rules = [
            r(&["get"], &[""], &["pods"]),
            r(&["get"], &[""], &["pods"]).with_names(&["a"]),
            r(&["list"], &[""], &["pods"]),
            PolicyRule::non_resource(&["get"], &["/x"]),
            r(&["get"], &["apps"], &["pods"]),
        ];
        assert_eq!(
            compact_rules(&rules),
            vec![
                r(&["get", "list"], &[""], &["pods"]),
                r(&["get"], &[""], &["pods"]).with_names(&["a"]),
                PolicyRule::non_resource(&["get"], &["/x"]),
                r(&["get"], &["apps"], &["pods"]),
            ]
        );
    }

    fn index() -> RbacIndex {
        RbacIndex::from_json(
            &[
                json!({"kind": "Role", "metadata": {"name": "pods", "namespace": "ns"},
                     "rules": [{"verbs": ["get", "list"], "apiGroups": [""], "resources": ["pods"]}]}),
            ],
            &[
                json!({"kind": "ClusterRole", "metadata": {"name": "cluster-admin"},
                       "rules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]},
                                 {"verbs": ["*"], "nonResourceURLs": ["*"]}]}),
                json!({"kind": "ClusterRole", "metadata": {"name": "secrets"},
                       "rules": [{"verbs": ["get"], "apiGroups": [""], "resources": ["secrets"]}]}),
            ],
            &[
                json!({"kind": "RoleBinding", "metadata": {"name": "b", "namespace": "ns"},
                     "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "pods"},
                     "subjects": [{"kind": "User", "name": "bob"}]}),
            ],
            &[
                json!({"kind": "ClusterRoleBinding", "metadata": {"name": "admins"},
                       "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"},
                       "subjects": [{"kind": "User", "name": "root"}]}),
                json!({"kind": "ClusterRoleBinding", "metadata": {"name": "broken"},
                       "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "gone"},
                       "subjects": [{"kind": "User", "name": "eve"}]}),
            ],
        )
    }

    fn role(ns: &str, name: &str, rules: Vec<PolicyRule>) -> Role {
        let mut role = Role::default();
        role.meta.namespace = ns.into();
        role.meta.name = name.into();
        role.rules = rules;
        role
    }

    #[test]
    fn role_writes() {
        let index = index();
        let bob = user("bob", &["system:authenticated"]);
        let ok = role("ns", "r", vec![r(&["get"], &[""], &["pods"])]);
        assert_eq!(check_role_write(&index, &bob, &ok, "", no), Ok(()));
        let too_much = role(
            "ns",
            "r",
            vec![r(
                &["get", "list", "delete", "create"],
                &[""],
                &["pods", "secrets"],
            )],
        );
        let err = check_role_write(&index, &bob, &too_much, "", no).unwrap_err();
        assert_eq!(
            err.message(),
            "roles.rbac.authorization.k8s.io \"r\" is forbidden: user \"bob\" \
             (groups=[\"system:authenticated\"]) is attempting to grant RBAC permissions \
             not currently held:\n\
             {APIGroups:[\"\"], Resources:[\"pods\"], Verbs:[\"delete\" \"create\"]}\n\
             {APIGroups:[\"\"], Resources:[\"secrets\"], Verbs:[\"get\" \"list\" \"delete\" \"create\"]}"
        );
        assert!(matches!(
            err,
            EscalationError::Forbidden {
                resource: "roles",
                ..
            }
        ));
        // Bob holds the pods rules only in "ns".
        let elsewhere = role("other", "r", vec![r(&["get"], &[""], &["pods"])]);
        assert!(check_role_write(&index, &bob, &elsewhere, "", no).is_err());
        // With `escalate` allowed, anything goes; the question asked is upstream's.
        let mut asked = None;
        let result = check_role_write(&index, &bob, &too_much, "r", |a| {
            asked = Some((
                a.verb.to_string(),
                a.api_group.to_string(),
                a.resource.to_string(),
                a.namespace.to_string(),
                a.name.to_string(),
                a.user.name.clone(),
            ));
            Decision::Allow(String::new())
        });
        assert_eq!(result, Ok(()));
        assert_eq!(
            asked.unwrap(),
            (
                "escalate".into(),
                RBAC_GROUP.into(),
                "roles".into(),
                "ns".into(),
                "r".into(),
                "bob".into()
            )
        );
        // A Deny or NoOpinion on escalate falls back to the covers check.
        let deny = |_: &Attributes<'_>| Decision::Deny("no".into());
        assert!(check_role_write(&index, &bob, &too_much, "r", deny).is_err());
        // A user whose rules include everything covers anything.
        let root = user("root", &[]);
        assert_eq!(check_role_write(&index, &root, &too_much, "", no), Ok(()));
        // Unnamed (generateName) objects have no name in the message.
        let unnamed = role("ns", "", too_much.rules.clone());
        assert!(check_role_write(&index, &bob, &unnamed, "", no)
            .unwrap_err()
            .message()
            .starts_with("roles.rbac.authorization.k8s.io is forbidden: user \"bob\""));
    }

    #[test]
    fn resolution_errors_are_appended() {
        let index = index();
        let eve = user("eve", &[]);
        let rules = role("ns", "r", vec![r(&["get"], &[""], &["pods"])]);
        assert_eq!(
            check_role_write(&index, &eve, &rules, "", no)
                .unwrap_err()
                .message(),
            "roles.rbac.authorization.k8s.io \"r\" is forbidden: user \"eve\" (groups=[]) is \
             attempting to grant RBAC permissions not currently held:\n\
             {APIGroups:[\"\"], Resources:[\"pods\"], Verbs:[\"get\"]}; resolution errors: \
             [clusterrole.rbac.authorization.k8s.io \"gone\" not found]"
        );
    }

    fn cluster_role(value: Value) -> ClusterRole {
        ClusterRole::from_json(&value).unwrap()
    }

    #[test]
    fn cluster_role_writes_and_aggregation() {
        let index = index();
        let bob = user("bob", &[]);
        let root = user("root", &[]);
        let plain = cluster_role(json!({"metadata": {"name": "c"}, "rules": []}));
        let aggregated = cluster_role(json!({"metadata": {"name": "c"},
            "aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {"a": "b"}}]}}));
        let empty_rule = cluster_role(json!({"metadata": {"name": "c"},
            "aggregationRule": {"clusterRoleSelectors": []}}));
        assert_eq!(
            check_cluster_role_write(&index, &bob, &plain, None, "", no),
            Ok(())
        );
        assert_eq!(
            check_cluster_role_write(&index, &bob, &empty_rule, None, "", no),
            Ok(())
        );
        let err = check_cluster_role_write(&index, &bob, &aggregated, None, "", no).unwrap_err();
        assert_eq!(
            err.message(),
            "clusterroles.rbac.authorization.k8s.io \"c\" is forbidden: must have \
             cluster-admin privileges to use the aggregationRule"
        );
        // Dropping an aggregation rule is as guarded as setting one.
        assert!(
            check_cluster_role_write(&index, &bob, &plain, Some(&aggregated), "c", no).is_err()
        );
        assert_eq!(
            check_cluster_role_write(&index, &root, &aggregated, None, "", no),
            Ok(())
        );
        let allow = |a: &Attributes<'_>| {
            assert_eq!(
                (a.verb, a.resource, a.namespace),
                ("escalate", "clusterroles", "")
            );
            Decision::Allow(String::new())
        };
        assert_eq!(
            check_cluster_role_write(&index, &bob, &aggregated, None, "", allow),
            Ok(())
        );
        // Namespaced grants never count for cluster roles.
        let pods = cluster_role(json!({"metadata": {"name": "c"},
            "rules": [{"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]}]}));
        assert!(check_cluster_role_write(&index, &bob, &pods, None, "", no).is_err());
    }

    fn binding(value: Value) -> RoleBinding {
        RoleBinding::from_json(&value).unwrap()
    }

    #[test]
    fn binding_writes() {
        let index = index();
        let bob = user("bob", &[]);
        let to = |kind: &str, name: &str| {
            binding(json!({"metadata": {"name": "rb", "namespace": "ns"},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": kind, "name": name},
                "subjects": [{"kind": "User", "name": "someone"}]}))
        };
        assert_eq!(
            check_role_binding_write(&index, &bob, &to("Role", "pods"), no),
            Ok(())
        );
        let err =
            check_role_binding_write(&index, &bob, &to("ClusterRole", "secrets"), no).unwrap_err();
        assert_eq!(
            err.message(),
            "rolebindings.rbac.authorization.k8s.io \"rb\" is forbidden: user \"bob\" (groups=[]) \
             is attempting to grant RBAC permissions not currently held:\n\
             {APIGroups:[\"\"], Resources:[\"secrets\"], Verbs:[\"get\"]}"
        );
        let err = check_role_binding_write(&index, &bob, &to("Role", "ghost"), no).unwrap_err();
        assert_eq!(
            err,
            EscalationError::RoleRef(RoleRefError::NotFound {
                kind: Kind::Role,
                name: "ghost".into()
            })
        );
        assert_eq!(
            err.message(),
            "roles.rbac.authorization.k8s.io \"ghost\" not found"
        );
        assert!(matches!(
            check_role_binding_write(&index, &bob, &to("Secret", "x"), no),
            Err(EscalationError::RoleRef(RoleRefError::Unsupported(_)))
        ));
        // `bind` allowed: the role need not exist nor be held.
        let mut asked = Vec::new();
        let allow = |a: &Attributes<'_>| {
            asked.push((
                a.verb.to_string(),
                a.resource.to_string(),
                a.name.to_string(),
                a.namespace.to_string(),
            ));
            Decision::Allow(String::new())
        };
        assert_eq!(
            check_role_binding_write(&index, &bob, &to("ClusterRole", "ghost"), allow),
            Ok(())
        );
        assert_eq!(
            asked,
            vec![(
                "bind".into(),
                "clusterroles".into(),
                "ghost".into(),
                "ns".into()
            )]
        );
        // A roleRef kind that cannot be bound is never asked about.
        let mut called = false;
        let _ = check_role_binding_write(&index, &bob, &to("Secret", "x"), |_| {
            called = true;
            Decision::Allow(String::new())
        });
        assert!(!called);
        // The root user holds everything.
        assert_eq!(
            check_role_binding_write(
                &index,
                &user("root", &[]),
                &to("ClusterRole", "secrets"),
                no
            ),
            Ok(())
        );

        let crb = ClusterRoleBinding::from_json(&json!({"metadata": {"name": "crb"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "secrets"}}))
        .unwrap();
        let err = check_cluster_role_binding_write(&index, &bob, &crb, no).unwrap_err();
        assert!(err
            .message()
            .starts_with("clusterrolebindings.rbac.authorization.k8s.io \"crb\" is forbidden"));
        assert_eq!(
            check_cluster_role_binding_write(&index, &user("root", &[]), &crb, no),
            Ok(())
        );
    }

    #[test]
    fn gc_only_updates() {
        let old = json!({"metadata": {"name": "r", "resourceVersion": "1"}, "rules": []});
        let gc = json!({"metadata": {"name": "r", "resourceVersion": "2",
            "finalizers": ["x"], "ownerReferences": [{"uid": "u"}]}, "rules": []});
        assert!(only_gc_fields_changed(&old, &gc));
        let more = json!({"metadata": {"name": "r"}, "rules": [{"verbs": ["*"]}]});
        assert!(!only_gc_fields_changed(&old, &more));
        let labels = json!({"metadata": {"name": "r", "labels": {"a": "b"}}, "rules": []});
        assert!(!only_gc_fields_changed(&old, &labels));
    }
}
