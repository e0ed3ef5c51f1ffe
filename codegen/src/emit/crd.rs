//! CustomResourceDefinition manifests: a custom definition as the CRD that serves the
//! same kind at run time (here, or on any cluster), so a kind can move between "compiled
//! in" and "installed" without being rewritten.

use serde_json::{json, Map, Value};

use crate::model::{ResourceDef, Scope};

/// The `apiextensions.k8s.io/v1` CustomResourceDefinition serving `d`, or why there is
/// none (built-in kinds are not custom resources; a CRD's group needs a dot).
pub fn manifest(d: &ResourceDef) -> Result<Value, String> {
    if d.builtin {
        return Err(format!(
            "{} is a built-in kind, not a custom resource",
            d.kind
        ));
    }
    if d.storage || d.conversion.is_some() {
        // Its versions convert by rules the server runs; a CRD could only name a
        // conversion webhook.
        return Err(format!(
            "{} is defined in several versions, whose conversion a CRD cannot carry",
            d.kind
        ));
    }
    if !d.group.contains('.') {
        return Err(format!(
            "{}: a CRD's group needs a dot (got `{}`)",
            d.kind, d.group
        ));
    }
    let mut names = Map::new();
    names.insert("plural".into(), json!(d.plural));
    names.insert("singular".into(), json!(d.singular));
    names.insert("kind".into(), json!(d.kind));
    names.insert("listKind".into(), json!(d.list_kind));
    if !d.short_names.is_empty() {
        names.insert("shortNames".into(), json!(d.short_names));
    }
    if !d.categories.is_empty() {
        names.insert("categories".into(), json!(d.categories));
    }
    let mut version = json!({
        "name": d.version,
        "served": true,
        "storage": true,
        "schema": { "openAPIV3Schema": d.schema.to_json(false) },
    });
    let mut subresources = Map::new();
    if d.subresources.status {
        subresources.insert("status".into(), json!({}));
    }
    if let Some(s) = &d.subresources.scale {
        let mut scale = json!({
            "specReplicasPath": s.spec_replicas_path,
            "statusReplicasPath": s.status_replicas_path,
        });
        if let Some(sel) = &s.label_selector_path {
            scale["labelSelectorPath"] = json!(sel);
        }
        subresources.insert("scale".into(), scale);
    }
    if !subresources.is_empty() {
        version["subresources"] = Value::Object(subresources);
    }
    if !d.printer_columns.is_empty() {
        let columns: Vec<Value> = d
            .printer_columns
            .iter()
            .map(|c| {
                let mut col = json!({ "name": c.name, "type": c.type_, "jsonPath": c.json_path });
                if let Some(f) = &c.format {
                    col["format"] = json!(f);
                }
                if let Some(desc) = &c.description {
                    col["description"] = json!(desc);
                }
                if c.priority != 0 {
                    col["priority"] = json!(c.priority);
                }
                col
            })
            .collect();
        version["additionalPrinterColumns"] = json!(columns);
    }
    if !d.selectable_fields.is_empty() {
        let fields: Vec<Value> = d
            .selectable_fields
            .iter()
            .map(|f| json!({ "jsonPath": f }))
            .collect();
        version["selectableFields"] = json!(fields);
    }
    Ok(json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": { "name": format!("{}.{}", d.plural, d.group) },
        "spec": {
            "group": d.group,
            "names": names,
            "scope": match d.scope { Scope::Namespaced => "Namespaced", Scope::Cluster => "Cluster" },
            "versions": [version],
        },
    }))
}
