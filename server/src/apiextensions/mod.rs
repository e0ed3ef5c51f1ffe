//! The APIExtensions server's own logic: what a CustomResourceDefinition serves. Each
//! served version becomes codegen's model ([`ResourceDef`]), checked by codegen's own
//! validator, so a CRD is held to the rules a definition file is; the CRD strategy
//! refuses (422) what cannot be served, and `controllers::crd` registers the rest.

pub mod conversion;

use codegen::model::{
    Origin, PrinterColumn, ResourceDef, ScaleSubresource, Schema, Scope, Subresources,
};
use serde_json::{json, Value};

use crate::api::StatusCause;
use crate::catalog::CrdVersion;
use crate::registry::cel::Rules;

/// `spec.names` with the defaults filled in, as `status.acceptedNames` shows them.
pub fn accepted_names(names: &Value) -> Value {
    let kind = names["kind"].as_str().unwrap_or_default();
    let mut n = names.clone();
    if n["singular"].as_str().is_none_or(str::is_empty) {
        n["singular"] = json!(kind.to_lowercase());
    }
    if n["listKind"].as_str().is_none_or(str::is_empty) {
        n["listKind"] = json!(format!("{kind}List"));
    }
    n
}

/// The version objects are stored in.
pub fn storage_version(crd: &Value) -> Option<String> {
    crd["spec"]["versions"]
        .as_array()?
        .iter()
        .find(|v| v["storage"] == json!(true))
        .and_then(|v| v["name"].as_str())
        .map(str::to_string)
}

/// `status.storedVersions`: every version objects may have been stored in, the ones
/// already recorded first, then the current storage version.
pub fn stored_versions(crd: &Value) -> Vec<String> {
    let mut versions: Vec<String> = crd["status"]["storedVersions"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|v| v.as_str().map(str::to_string))
        .collect();
    if let Some(storage) = storage_version(crd) {
        if !versions.contains(&storage) {
            versions.push(storage);
        }
    }
    versions
}

/// How `crd` serves the version `def` was made from, beyond its schema.
pub fn version_settings(crd: &Value, def: &ResourceDef, terminating: bool) -> CrdVersion {
    let versions = crd["spec"]["versions"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let this = versions
        .iter()
        .find(|v| v["name"] == json!(def.version))
        .cloned()
        .unwrap_or_default();
    let storage = storage_version(crd).unwrap_or_else(|| def.version.clone());
    let deprecation_warning =
        (this["deprecated"] == json!(true)).then(|| match this["deprecationWarning"].as_str() {
            Some(w) => w.to_string(),
            None => format!("{}/{} {} is deprecated", def.group, def.version, def.kind),
        });
    CrdVersion {
        storage_api_version: format!("{}/{storage}", def.group),
        converts: versions.len() > 1,
        webhook: conversion::Webhook::of(crd),
        deprecation_warning,
        terminating,
    }
}

/// A `FieldValueInvalid` cause with `message` as it stands.
fn invalid(field: &str, message: String) -> StatusCause {
    StatusCause {
        reason: "FieldValueInvalid".into(),
        message,
        field: field.into(),
    }
}

/// The catalog definitions of `crd`'s served versions, checked by codegen's validator;
/// every problem as a cause naming its field.
pub fn definitions(crd: &Value) -> Result<Vec<ResourceDef>, Vec<StatusCause>> {
    let spec = &crd["spec"];
    let names = accepted_names(&spec["names"]);
    let text = |v: &Value| v.as_str().unwrap_or_default().to_string();
    let strings = |v: &Value| -> Vec<String> {
        v.as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|s| s.as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default()
    };
    let scope = match spec["scope"].as_str() {
        Some("Cluster") => Scope::Cluster,
        _ => Scope::Namespaced,
    };
    let location = codegen::Location {
        file: format!(
            "customresourcedefinitions/{}",
            text(&crd["metadata"]["name"])
        ),
        line: 1,
        column: 1,
    };
    let mut defs = Vec::new();
    for (i, v) in spec["versions"]
        .as_array()
        .into_iter()
        .flatten()
        .enumerate()
    {
        if v["served"] != json!(true) {
            continue;
        }
        let schema = match v["schema"]["openAPIV3Schema"].as_object() {
            Some(_) => {
                let mut raw = v["schema"]["openAPIV3Schema"].clone();
                // apiVersion, kind and metadata are implied (CRDs may declare them).
                if let Some(props) = raw.get_mut("properties").and_then(Value::as_object_mut) {
                    for implied in ["apiVersion", "kind", "metadata"] {
                        props.remove(implied);
                    }
                }
                let at = format!("spec.versions[{i}].schema.openAPIV3Schema");
                let schema = Schema::from_json_at(&raw, &at).map_err(|e| {
                    let (field, message) = e.split_once(": ").unwrap_or((&at, &e));
                    vec![invalid(field, message.to_string())]
                })?;
                // CEL rules must compile and fit the cost budget.
                Rules::compile(&schema.to_json(false), &at)?;
                schema
            }
            None => Schema {
                type_: Some("object".into()),
                preserve_unknown_fields: true,
                ..Schema::default()
            },
        };
        let sub = &v["subresources"];
        let scale = sub["scale"].as_object().map(|_| ScaleSubresource {
            spec_replicas_path: text(&sub["scale"]["specReplicasPath"]),
            status_replicas_path: text(&sub["scale"]["statusReplicasPath"]),
            label_selector_path: sub["scale"]["labelSelectorPath"]
                .as_str()
                .map(str::to_string),
        });
        let printer_columns = v["additionalPrinterColumns"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|c| PrinterColumn {
                name: text(&c["name"]),
                type_: text(&c["type"]),
                format: c["format"].as_str().map(str::to_string),
                description: c["description"].as_str().map(str::to_string),
                priority: c["priority"]
                    .as_i64()
                    .and_then(|p| i32::try_from(p).ok())
                    .unwrap_or(0),
                json_path: text(&c["jsonPath"]),
            })
            .collect();
        defs.push(ResourceDef {
            location: location.clone(),
            origin: Origin::Yaml,
            group: text(&spec["group"]),
            version: text(&v["name"]),
            kind: text(&names["kind"]),
            list_kind: text(&names["listKind"]),
            plural: text(&names["plural"]),
            singular: text(&names["singular"]),
            scope,
            short_names: strings(&names["shortNames"]),
            categories: strings(&names["categories"]),
            schema,
            subresources: Subresources {
                status: sub["status"].is_object(),
                scale,
                create_only: vec![],
                parts: vec![],
            },
            printer_columns,
            selectable_fields: v["selectableFields"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|f| text(&f["jsonPath"]))
                .collect(),
            builtin: false,
            strategy: None,
            create_only: false,
            open_api_prefix: None,
            verbs: vec![],
            storage: false,
            conversion: None,
        });
    }
    let mut diags = codegen::Diagnostics::default();
    // Every version shares the short names: check them once.
    let mut checked = defs.clone();
    for d in checked.iter_mut().skip(1) {
        d.short_names.clear();
    }
    // One at a time: a CRD's versions convert by its own strategy (None or a webhook),
    // not by the rules codegen checks for a compiled-in kind's versions.
    for d in &checked {
        codegen::validate::validate(std::slice::from_ref(d), &mut diags);
    }
    if diags.is_empty() {
        return Ok(defs);
    }
    Err(diags
        .0
        .into_iter()
        .map(|d| {
            let message = match d.help {
                Some(help) => format!("{} ({help})", d.message),
                None => d.message,
            };
            // Schema nodes are located by their field path (line 0); the rest by the CRD.
            let field = match d.location.line {
                0 => d.location.file.as_str(),
                _ => "spec.versions",
            };
            invalid(field, message)
        })
        .collect())
}
