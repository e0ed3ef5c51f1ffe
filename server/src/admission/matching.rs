//! What webhooks and policies match requests by: rules (operations × groups × versions ×
//! resources × scope), and the labels a namespace selector is asked about.

use std::collections::BTreeMap;

use serde_json::Value;

use super::Attributes;
use crate::api::selectors::{labels_of, LabelSelector};
use crate::api::ApiError;
use crate::registry::Store;

/// What happens when a webhook cannot be called, or a policy cannot be evaluated.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FailurePolicy {
    Fail,
    Ignore,
}

impl FailurePolicy {
    /// `failurePolicy` as written (default Fail).
    pub fn from_json(v: &Value) -> Self {
        match v.as_str() {
            Some("Ignore") => FailurePolicy::Ignore,
            _ => FailurePolicy::Fail,
        }
    }
}

/// One rule: operations × groups × versions × resources × scope.
#[derive(Debug)]
pub struct Rule {
    operations: Vec<String>,
    /// Policies' rules may name objects (`resourceNames`); empty: every object.
    resource_names: Vec<String>,
    api_groups: Vec<String>,
    api_versions: Vec<String>,
    resources: Vec<String>,
    scope: String,
}

pub fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .into_iter()
        .flatten()
        .filter_map(|s| s.as_str().map(String::from))
        .collect()
}

fn listed(list: &[String], value: &str) -> bool {
    list.iter().any(|v| v == "*" || v == value)
}

impl Rule {
    /// A `RuleWithOperations` (or a policy's `NamedRuleWithOperations`).
    pub fn from_json(v: &Value) -> Rule {
        Rule {
            operations: strings(&v["operations"]),
            resource_names: strings(&v["resourceNames"]),
            api_groups: strings(&v["apiGroups"]),
            api_versions: strings(&v["apiVersions"]),
            resources: strings(&v["resources"]),
            scope: v["scope"].as_str().unwrap_or("*").to_string(),
        }
    }

    /// Whether the rule covers the request, as upstream matches one: `*` is every
    /// resource but no subresource, `*/*` both, `pods/*` every subresource of pods.
    pub fn matches(&self, a: &Attributes<'_>) -> bool {
        let def = &a.resource.def;
        let resource_matches = self.resources.iter().any(|r| {
            let (res, sub) = r.split_once('/').unwrap_or((r, ""));
            (res == "*" || res == def.plural) && (sub == "*" || sub == a.subresource)
        });
        let is_namespace = def.group.is_empty() && def.plural == "namespaces";
        let scope_matches = match self.scope.as_str() {
            "Namespaced" => !is_namespace && a.namespace.is_some(),
            "Cluster" => is_namespace || a.namespace.is_none(),
            _ => true,
        };
        let name_matches =
            self.resource_names.is_empty() || self.resource_names.iter().any(|n| n == a.name);
        listed(&self.operations, a.operation.as_str())
            && name_matches
            && listed(&self.api_groups, &def.group)
            && listed(&self.api_versions, &def.version)
            && resource_matches
            && scope_matches
    }
}

/// A policy's `matchConstraints` or a binding's `matchResources`.
pub struct MatchResources {
    /// `matchPolicy: Equivalent` (the default): rules naming another version of the
    /// requested resource match too.
    pub equivalent: bool,
    rules: Vec<Rule>,
    excluded: Vec<Rule>,
    namespace_selector: Result<LabelSelector, String>,
    object_selector: Result<LabelSelector, String>,
}

impl MatchResources {
    /// Reads one (`resourceRules`, `excludeResourceRules`, the two selectors).
    pub fn from_json(v: &Value) -> Self {
        let rules = |k: &str| {
            v[k].as_array()
                .into_iter()
                .flatten()
                .map(Rule::from_json)
                .collect()
        };
        MatchResources {
            equivalent: v["matchPolicy"] != "Exact",
            rules: rules("resourceRules"),
            excluded: rules("excludeResourceRules"),
            namespace_selector: LabelSelector::from_json(&v["namespaceSelector"]),
            object_selector: LabelSelector::from_json(&v["objectSelector"]),
        }
    }

    /// Whether the namespace selector selects anything less than every namespace (then
    /// the namespace's labels are needed).
    pub fn selects_namespaces(&self) -> bool {
        !self
            .namespace_selector
            .as_ref()
            .is_ok_and(LabelSelector::is_empty)
    }

    /// Whether the rules select the request and the selectors its object (new or old)
    /// and namespace (`labels`, from [`namespace_labels`]). No rules select nothing for a
    /// policy's constraints and everything for a binding's narrowing (`narrowing`).
    pub fn matches(
        &self,
        a: &Attributes<'_>,
        object: Option<&Value>,
        labels: Option<&BTreeMap<String, String>>,
        narrowing: bool,
    ) -> bool {
        let (Ok(ns), Ok(obj)) = (&self.namespace_selector, &self.object_selector) else {
            return false;
        };
        ((narrowing && self.rules.is_empty()) || self.rules.iter().any(|r| r.matches(a)))
            && !self.excluded.iter().any(|r| r.matches(a))
            && labels.is_none_or(|l| ns.matches(l))
            && (obj.is_empty()
                || [object, a.old_object]
                    .into_iter()
                    .flatten()
                    .any(|o| obj.matches(&labels_of(o))))
    }
}

/// The labels a namespace selector is matched against: a Namespace object's own, the
/// namespace's for a namespaced object, none (never exempt) for other cluster-scoped
/// objects.
pub async fn namespace_labels(
    store: &Store,
    a: &Attributes<'_>,
    object: Option<&Value>,
) -> Result<Option<BTreeMap<String, String>>, ApiError> {
    let def = &a.resource.def;
    if def.group.is_empty() && def.plural == "namespaces" {
        return Ok(object.or(a.old_object).map(labels_of));
    }
    let Some(ns) = a.namespace else {
        return Ok(None);
    };
    Ok(Some(
        store
            .namespace(ns)
            .await?
            .map(|n| labels_of(&n))
            .unwrap_or_default(),
    ))
}
