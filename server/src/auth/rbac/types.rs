//! rbac.authorization.k8s.io/v1 objects as the engine reads them: parsed leniently from
//! JSON (absent and `null` lists are empty, unknown fields ignored), refused whole when a
//! field has the wrong type, so a half-read object never grants anything.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;

/// The API group of every RBAC kind.
pub const RBAC_GROUP: &str = "rbac.authorization.k8s.io";
/// The apiVersion the engine reads and writes.
pub const RBAC_API_VERSION: &str = "rbac.authorization.k8s.io/v1";
/// The wildcard of verbs, apiGroups, resources and nonResourceURLs.
pub const WILDCARD: &str = "*";

/// `null` reads as the type's default, as Go's decoder leaves a nil slice or map.
fn nullable<'de, D, T>(d: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de> + Default,
{
    Ok(Option::<T>::deserialize(d)?.unwrap_or_default())
}

/// One rule of a Role or ClusterRole.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PolicyRule {
    /// Verbs allowed (`*` for all).
    #[serde(default, deserialize_with = "nullable")]
    pub verbs: Vec<String>,
    /// API groups of the resources (`""` is the core group, `*` all).
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub api_groups: Vec<String>,
    /// Resources, `resource/subresource`, `*/subresource` or `*`.
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub resources: Vec<String>,
    /// Object names the rule is limited to (empty: all).
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub resource_names: Vec<String>,
    /// Non-resource paths: exact, a prefix ending in `*`, or `*`.
    #[serde(
        rename = "nonResourceURLs",
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub non_resource_urls: Vec<String>,
}

impl PolicyRule {
    /// A rule on resources: `verbs` on `resources` of `groups`.
    pub fn resource(verbs: &[&str], groups: &[&str], resources: &[&str]) -> Self {
        PolicyRule {
            verbs: strings(verbs),
            api_groups: strings(groups),
            resources: strings(resources),
            ..Default::default()
        }
    }

    /// A rule on non-resource paths.
    pub fn non_resource(verbs: &[&str], urls: &[&str]) -> Self {
        PolicyRule {
            verbs: strings(verbs),
            non_resource_urls: strings(urls),
            ..Default::default()
        }
    }

    /// The same rule limited to the named objects.
    pub fn with_names(mut self, names: &[&str]) -> Self {
        self.resource_names = strings(names);
        self
    }

    /// The rule as rbac/v1 JSON.
    pub fn to_json(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }
}

fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| s.to_string()).collect()
}

/// The metadata the engine reads.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
pub struct Meta {
    /// `metadata.name`.
    #[serde(default, deserialize_with = "nullable")]
    pub name: String,
    /// `metadata.namespace` (empty for cluster-scoped kinds).
    #[serde(default, deserialize_with = "nullable")]
    pub namespace: String,
    /// `metadata.labels`.
    #[serde(default, deserialize_with = "nullable")]
    pub labels: BTreeMap<String, String>,
    /// `metadata.annotations`.
    #[serde(default, deserialize_with = "nullable")]
    pub annotations: BTreeMap<String, String>,
}

/// A label selector requirement (`matchExpressions` item).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LabelSelectorRequirement {
    /// The label key.
    #[serde(default, deserialize_with = "nullable")]
    pub key: String,
    /// `In`, `NotIn`, `Exists` or `DoesNotExist`.
    #[serde(default, deserialize_with = "nullable")]
    pub operator: String,
    /// The values of `In` / `NotIn`.
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub values: Vec<String>,
}

/// A metav1 LabelSelector (see `selector.rs` for matching).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LabelSelector {
    /// Labels that must be equal.
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "BTreeMap::is_empty"
    )]
    pub match_labels: BTreeMap<String, String>,
    /// Set-based requirements.
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub match_expressions: Vec<LabelSelectorRequirement>,
}

/// A ClusterRole's `aggregationRule`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AggregationRule {
    /// The rules of every ClusterRole matching any of these are the role's rules.
    #[serde(default, deserialize_with = "nullable")]
    pub cluster_role_selectors: Vec<LabelSelector>,
}

/// A namespaced Role.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Role {
    /// Its metadata (namespace always set).
    pub meta: Meta,
    /// Its rules.
    pub rules: Vec<PolicyRule>,
}

/// A ClusterRole.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ClusterRole {
    /// Its metadata.
    pub meta: Meta,
    /// Its rules (for an aggregated role, what the aggregation controller wrote).
    pub rules: Vec<PolicyRule>,
    /// Its aggregation rule, if any.
    pub aggregation_rule: Option<AggregationRule>,
}

/// Who a binding grants to.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Subject {
    /// `User`, `Group` or `ServiceAccount` (anything else matches nobody).
    #[serde(default, deserialize_with = "nullable")]
    pub kind: String,
    /// `rbac.authorization.k8s.io` for users and groups, `""` for service accounts.
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub api_group: String,
    /// The user, group or service account name.
    #[serde(default, deserialize_with = "nullable")]
    pub name: String,
    /// A service account's namespace (defaults to a RoleBinding's own).
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub namespace: String,
}

/// Which role a binding grants.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RoleRef {
    /// Must be `rbac.authorization.k8s.io`.
    #[serde(default, deserialize_with = "nullable")]
    pub api_group: String,
    /// `Role` or `ClusterRole`.
    #[serde(default, deserialize_with = "nullable")]
    pub kind: String,
    /// The role's name.
    #[serde(default, deserialize_with = "nullable")]
    pub name: String,
}

/// A namespaced RoleBinding.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RoleBinding {
    /// Its metadata (namespace always set).
    pub meta: Meta,
    /// Who it grants to.
    pub subjects: Vec<Subject>,
    /// What it grants.
    pub role_ref: RoleRef,
}

/// A ClusterRoleBinding.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ClusterRoleBinding {
    /// Its metadata.
    pub meta: Meta,
    /// Who it grants to.
    pub subjects: Vec<Subject>,
    /// What it grants.
    pub role_ref: RoleRef,
}

/// The four RBAC kinds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kind {
    /// `Role`.
    Role,
    /// `ClusterRole`.
    ClusterRole,
    /// `RoleBinding`.
    RoleBinding,
    /// `ClusterRoleBinding`.
    ClusterRoleBinding,
}

impl Kind {
    /// The kind's name.
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Role => "Role",
            Kind::ClusterRole => "ClusterRole",
            Kind::RoleBinding => "RoleBinding",
            Kind::ClusterRoleBinding => "ClusterRoleBinding",
        }
    }

    /// The kind's resource (plural).
    pub fn resource(self) -> &'static str {
        match self {
            Kind::Role => "roles",
            Kind::ClusterRole => "clusterroles",
            Kind::RoleBinding => "rolebindings",
            Kind::ClusterRoleBinding => "clusterrolebindings",
        }
    }

    fn namespaced(self) -> bool {
        matches!(self, Kind::Role | Kind::RoleBinding)
    }
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An object the engine could not use, and why: one it could not read (skipped), or a
/// binding that grants nothing. The caller logs it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ObjectIssue {
    /// The kind that was expected.
    pub kind: Kind,
    /// `metadata.namespace`, when it could be read.
    pub namespace: String,
    /// `metadata.name`, when it could be read.
    pub name: String,
    /// What is wrong with it.
    pub reason: String,
}

impl ObjectIssue {
    /// An issue with the object `kind` `namespace`/`name`.
    pub fn new(kind: Kind, namespace: &str, name: &str, reason: impl Into<String>) -> Self {
        ObjectIssue {
            kind,
            namespace: namespace.to_string(),
            name: name.to_string(),
            reason: reason.into(),
        }
    }
}

impl fmt::Display for ObjectIssue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let who = match (self.namespace.is_empty(), self.name.is_empty()) {
            (_, true) => "(unnamed)".to_string(),
            (true, false) => self.name.clone(),
            (false, false) => format!("{}/{}", self.namespace, self.name),
        };
        write!(f, "{} {}: {}", self.kind, who, self.reason)
    }
}

impl std::error::Error for ObjectIssue {}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RoleWire {
    #[serde(default, deserialize_with = "nullable")]
    rules: Vec<PolicyRule>,
    #[serde(default)]
    aggregation_rule: Option<AggregationRule>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct BindingWire {
    #[serde(default, deserialize_with = "nullable")]
    subjects: Vec<Subject>,
    role_ref: Option<RoleRef>,
}

/// Reads the envelope every kind shares: an object of the right kind with a name (and a
/// namespace for namespaced kinds).
fn read_meta(value: &Value, kind: Kind) -> Result<Meta, ObjectIssue> {
    let loose = |field: &str| {
        value
            .get("metadata")
            .and_then(|m| m.get(field))
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string()
    };
    let fail = |reason: String| ObjectIssue {
        kind,
        namespace: loose("namespace"),
        name: loose("name"),
        reason,
    };
    let Some(object) = value.as_object() else {
        return Err(fail("not a JSON object".into()));
    };
    if let Some(found) = object.get("kind") {
        if found.as_str() != Some(kind.as_str()) {
            return Err(fail(format!("kind is {found}, not {kind}")));
        }
    }
    let meta = match object.get("metadata") {
        Some(m) => Meta::deserialize(m).map_err(|e| fail(format!("metadata: {e}")))?,
        None => return Err(fail("metadata is missing".into())),
    };
    if meta.name.is_empty() {
        return Err(fail("metadata.name is missing".into()));
    }
    if kind.namespaced() && meta.namespace.is_empty() {
        return Err(fail("metadata.namespace is missing".into()));
    }
    Ok(meta)
}

fn parse_error(kind: Kind, meta: &Meta, reason: String) -> ObjectIssue {
    ObjectIssue {
        kind,
        namespace: meta.namespace.clone(),
        name: meta.name.clone(),
        reason,
    }
}

impl Role {
    /// Reads a Role from its JSON form.
    pub fn from_json(value: &Value) -> Result<Self, ObjectIssue> {
        let meta = read_meta(value, Kind::Role)?;
        let wire = RoleWire::deserialize(value)
            .map_err(|e| parse_error(Kind::Role, &meta, e.to_string()))?;
        Ok(Role {
            meta,
            rules: wire.rules,
        })
    }
}

impl ClusterRole {
    /// Reads a ClusterRole from its JSON form.
    pub fn from_json(value: &Value) -> Result<Self, ObjectIssue> {
        let mut meta = read_meta(value, Kind::ClusterRole)?;
        meta.namespace.clear();
        let wire = RoleWire::deserialize(value)
            .map_err(|e| parse_error(Kind::ClusterRole, &meta, e.to_string()))?;
        Ok(ClusterRole {
            meta,
            rules: wire.rules,
            aggregation_rule: wire.aggregation_rule,
        })
    }

    /// Whether the role has an aggregation rule with at least one selector (what
    /// upstream treats as aggregated).
    pub fn is_aggregated(&self) -> bool {
        self.aggregation_rule
            .as_ref()
            .is_some_and(|a| !a.cluster_role_selectors.is_empty())
    }
}

fn read_binding(value: &Value, kind: Kind) -> Result<(Meta, Vec<Subject>, RoleRef), ObjectIssue> {
    let mut meta = read_meta(value, kind)?;
    if !kind.namespaced() {
        meta.namespace.clear();
    }
    let wire =
        BindingWire::deserialize(value).map_err(|e| parse_error(kind, &meta, e.to_string()))?;
    let Some(role_ref) = wire.role_ref else {
        return Err(parse_error(kind, &meta, "roleRef is missing".into()));
    };
    Ok((meta, wire.subjects, role_ref))
}

impl RoleBinding {
    /// Reads a RoleBinding from its JSON form.
    pub fn from_json(value: &Value) -> Result<Self, ObjectIssue> {
        let (meta, subjects, role_ref) = read_binding(value, Kind::RoleBinding)?;
        Ok(RoleBinding {
            meta,
            subjects,
            role_ref,
        })
    }
}

impl ClusterRoleBinding {
    /// Reads a ClusterRoleBinding from its JSON form.
    pub fn from_json(value: &Value) -> Result<Self, ObjectIssue> {
        let (meta, subjects, role_ref) = read_binding(value, Kind::ClusterRoleBinding)?;
        Ok(ClusterRoleBinding {
            meta,
            subjects,
            role_ref,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn reads_a_full_cluster_role() {
        let role = ClusterRole::from_json(&json!({
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": {"name": "admin", "labels": {"a": "b"}, "uid": "x"},
            "aggregationRule": {"clusterRoleSelectors": [
                {"matchLabels": {"k": "v"}},
                {"matchExpressions": [{"key": "k", "operator": "In", "values": ["v"]}]}
            ]},
            "rules": [{"verbs": ["get"], "apiGroups": [""], "resources": ["pods"],
                       "resourceNames": ["p"], "nonResourceURLs": ["/x"], "extra": 1}]
        }))
        .unwrap();
        assert_eq!(role.meta.name, "admin");
        assert_eq!(role.meta.labels["a"], "b");
        assert!(role.is_aggregated());
        assert_eq!(
            role.rules,
            vec![PolicyRule {
                verbs: vec!["get".into()],
                api_groups: vec!["".into()],
                resources: vec!["pods".into()],
                resource_names: vec!["p".into()],
                non_resource_urls: vec!["/x".into()],
            }]
        );
    }

    #[test]
    fn nulls_and_missing_lists_are_empty() {
        let role = ClusterRole::from_json(&json!({
            "metadata": {"name": "r", "labels": null},
            "rules": null,
            "aggregationRule": null
        }))
        .unwrap();
        assert!(role.rules.is_empty() && role.aggregation_rule.is_none());
        let role = Role::from_json(&json!({
            "metadata": {"name": "r", "namespace": "ns"},
            "rules": [{"verbs": null, "apiGroups": null}]
        }))
        .unwrap();
        assert_eq!(role.rules, vec![PolicyRule::default()]);
        let b = RoleBinding::from_json(&json!({
            "metadata": {"name": "b", "namespace": "ns"},
            "roleRef": {"kind": "Role", "name": "r"}
        }))
        .unwrap();
        assert!(b.subjects.is_empty());
        assert_eq!(b.role_ref.api_group, "");
    }

    #[test]
    fn malformed_objects_are_refused_with_a_reason() {
        let cases = [
            (json!("a string"), "not a JSON object"),
            (json!({"kind": "Role", "metadata": {"name": "x"}}), "kind"),
            (json!({"rules": []}), "metadata is missing"),
            (json!({"metadata": {"namespace": "ns"}}), "metadata.name"),
            (json!({"metadata": {"name": 5}}), "metadata"),
            (
                json!({"metadata": {"name": "x", "labels": {"a": 1}}}),
                "metadata",
            ),
            (
                json!({"metadata": {"name": "x"}, "rules": [{"verbs": "get"}]}),
                "invalid type",
            ),
            (
                json!({"metadata": {"name": "x"}, "rules": {"verbs": []}}),
                "invalid type",
            ),
            (
                json!({"metadata": {"name": "x"}, "aggregationRule": {"clusterRoleSelectors": [{"matchLabels": []}]}}),
                "invalid type",
            ),
        ];
        for (value, reason) in cases {
            let err = ClusterRole::from_json(&value).unwrap_err();
            assert!(err.reason.contains(reason), "{value}: {err}");
        }
        let err = Role::from_json(&json!({"metadata": {"name": "x"}})).unwrap_err();
        assert!(err.reason.contains("namespace"), "{err}");
        let err = ClusterRoleBinding::from_json(&json!({"metadata": {"name": "x"}})).unwrap_err();
        assert_eq!(err.to_string(), "ClusterRoleBinding x: roleRef is missing");
        let err = RoleBinding::from_json(&json!({
            "metadata": {"name": "x", "namespace": "ns"},
            "roleRef": {"kind": "Role", "name": "r"},
            "subjects": [{"kind": "User", "name": ["a"]}]
        }))
        .unwrap_err();
        assert!(err.to_string().starts_with("RoleBinding ns/x: "), "{err}");
    }

    #[test]
    fn rules_serialize_as_rbac_v1() {
        let rule = PolicyRule::resource(&["get"], &[""], &["pods"]);
        assert_eq!(
            rule.to_json(),
            json!({"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]})
        );
        let rule = PolicyRule::non_resource(&["get"], &["/healthz"]);
        assert_eq!(
            rule.to_json(),
            json!({"verbs": ["get"], "nonResourceURLs": ["/healthz"]})
        );
    }
}
