//! A ValidatingAdmissionPolicy's status, as upstream's type-checking controller writes
//! it: the validations' expressions checked against the schemas of the kinds the
//! policy's `matchConstraints` name, each problem a warning in
//! `status.typeChecking.expressionWarnings`, and `status.observedGeneration` saying
//! which spec was checked. Warnings never change what the policy does.

use serde_json::{json, Value};

use crate::api::ApiError;
use crate::catalog::{ApiResource, Catalog};
use crate::registry::cel::type_check::undefined_fields;
use crate::registry::store::{Target, WriteContext};
use crate::registry::Store;

/// The field manager of the status written here.
const MANAGER: &str = "validatingadmissionpolicy-status-controller";
/// Upstream checks at most this many kinds per policy.
const MAX_KINDS: usize = 10;
/// The variables typed by the matched kind's schema.
const TYPED: &[&str] = &["object", "oldObject"];

/// Writes the status of `policy` when it was not written for its generation yet.
pub async fn reconcile(
    store: &Store,
    policies: &ApiResource,
    catalog: &Catalog,
    policy: &Value,
) -> Result<(), ApiError> {
    let generation = &policy["metadata"]["generation"];
    if policy["status"]["observedGeneration"] == *generation {
        return Ok(());
    }
    let mut typing = json!({});
    let warnings = expression_warnings(policy, catalog);
    if !warnings.is_empty() {
        typing["expressionWarnings"] = json!(warnings);
    }
    let mut updated = policy.clone();
    updated["status"]["observedGeneration"] = generation.clone();
    updated["status"]["typeChecking"] = typing;
    let name = policy["metadata"]["name"].as_str().unwrap_or_default();
    let ctx = WriteContext::new(MANAGER);
    match store
        .update(policies, None, name, updated, Target::Status, &ctx)
        .await
    {
        // Someone wrote meanwhile: that write brings the policy back here.
        Err(e) if e.is_conflict() || e.is_not_found() => Ok(()),
        other => other.map(|_| ()),
    }
}

/// The policy's validations (`expression`, `messageExpression`) checked against each
/// kind it matches: `{fieldRef, warning}` for each with problems.
pub fn expression_warnings(policy: &Value, catalog: &Catalog) -> Vec<Value> {
    let kinds = kinds_to_check(&policy["spec"]["matchConstraints"], catalog);
    if kinds.is_empty() {
        return Vec::new();
    }
    let mut warnings = Vec::new();
    let validations = policy["spec"]["validations"].as_array();
    for (i, v) in validations.into_iter().flatten().enumerate() {
        for key in ["expression", "messageExpression"] {
            let Some(expr) = v[key].as_str().filter(|e| !e.is_empty()) else {
                continue;
            };
            let per_kind: Vec<String> = kinds
                .iter()
                .filter_map(|res| {
                    let issues = undefined_fields(expr, TYPED, res.schema())?;
                    Some(format!("{}: {issues}\n", group_version_kind(res)))
                })
                .collect();
            if !per_kind.is_empty() {
                warnings.push(json!({
                    "fieldRef": format!("spec.validations[{i}].{key}"),
                    "warning": per_kind.join("\n"),
                }));
            }
        }
    }
    warnings
}

/// The kinds the constraints' resource rules name without wildcards (groups and
/// versions with one are skipped whole, resources with one or a subresource alone), in
/// group, version, kind order; at most [`MAX_KINDS`].
fn kinds_to_check(constraints: &Value, catalog: &Catalog) -> Vec<std::sync::Arc<ApiResource>> {
    let strings = |v: &Value| -> Vec<String> {
        let mut list = super::matching::strings(v);
        list.sort();
        list
    };
    let mut kinds = Vec::new();
    for rule in constraints["resourceRules"]
        .as_array()
        .into_iter()
        .flatten()
    {
        let (groups, versions) = (strings(&rule["apiGroups"]), strings(&rule["apiVersions"]));
        if groups.iter().chain(&versions).any(|s| s.contains('*')) {
            continue;
        }
        let resources: Vec<String> = strings(&rule["resources"])
            .into_iter()
            .filter(|r| !r.contains(['*', '/']))
            .collect();
        for group in &groups {
            for version in &versions {
                for resource in &resources {
                    let Some(res) = catalog.get(group, version, resource) else {
                        continue;
                    };
                    if !kinds
                        .iter()
                        .any(|k: &std::sync::Arc<ApiResource>| std::sync::Arc::ptr_eq(k, &res))
                    {
                        kinds.push(res);
                    }
                    if kinds.len() == MAX_KINDS {
                        return sorted(kinds);
                    }
                }
            }
        }
    }
    sorted(kinds)
}

fn sorted(mut kinds: Vec<std::sync::Arc<ApiResource>>) -> Vec<std::sync::Arc<ApiResource>> {
    kinds.sort_by(|a, b| {
        (&a.def.group, &a.def.version, &a.def.kind).cmp(&(
            &b.def.group,
            &b.def.version,
            &b.def.kind,
        ))
    });
    kinds
}

/// As Go prints a GroupVersionKind: `apps/v1, Kind=Deployment`, `/v1, Kind=ConfigMap`.
fn group_version_kind(res: &ApiResource) -> String {
    format!(
        "{}/{}, Kind={}",
        res.def.group, res.def.version, res.def.kind
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_matched_kind_reports_the_fields_it_lacks() {
        let catalog = Catalog::from_definitions(crate::generated::CATALOG).unwrap();
        let policy = json!({"spec": {
            "matchConstraints": {"resourceRules": [
                {"apiGroups": ["apps"], "apiVersions": ["v1"], "resources": ["deployments", "*", "deployments/scale"]},
                {"apiGroups": [""], "apiVersions": ["v1"], "resources": ["configmaps"]},
                {"apiGroups": ["*"], "apiVersions": ["v1"], "resources": ["secrets"]},
            ]},
            "validations": [
                {"expression": "object.spec.replicas > 1"},
                // A macro's expansion is placed at its call, as cel-go's parser places it.
                {"expression": "has(object.data)", "messageExpression": "object.metadata.name"},
            ],
        }});
        let warnings = expression_warnings(&policy, &catalog);
        assert_eq!(
            warnings,
            vec![
                json!({"fieldRef": "spec.validations[0].expression", "warning":
                    "/v1, Kind=ConfigMap: ERROR: <input>:1:7: undefined field 'spec'\n | object.spec.replicas > 1\n | ......^\n"}),
                json!({"fieldRef": "spec.validations[1].expression", "warning":
                    "apps/v1, Kind=Deployment: ERROR: <input>:1:4: undefined field 'data'\n | has(object.data)\n | ...^\n"}),
            ]
        );
    }
}
