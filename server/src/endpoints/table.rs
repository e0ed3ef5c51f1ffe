//! meta.k8s.io/v1 Table output: Name, the definition's printer columns, Age.

use serde_json::{json, Value};

use crate::api::meta::human_age;
use crate::catalog::ApiResource;
use crate::registry::strategy::strategy_for;

/// What each row carries besides its cells (`includeObject`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IncludeObject {
    None,
    Metadata,
    Object,
}

impl IncludeObject {
    /// Parses the `includeObject` query parameter (default Metadata).
    pub fn parse(v: Option<&str>) -> Result<Self, String> {
        match v {
            None | Some("") | Some("Metadata") => Ok(IncludeObject::Metadata),
            Some("None") => Ok(IncludeObject::None),
            Some("Object") => Ok(IncludeObject::Object),
            Some(other) => Err(format!("includeObject: Unsupported value: {other:?}: supported values: \"None\", \"Metadata\", \"Object\"")),
        }
    }
}

/// Builds a Table of `items`, which it consumes: rows take each object's metadata (or
/// the object) without copying it.
pub fn table(
    res: &ApiResource,
    items: Vec<Value>,
    list_meta: Value,
    include: IncludeObject,
) -> Value {
    let mut columns = vec![
        json!({ "name": "Name", "type": "string", "format": "name", "description": "Name must be unique within a namespace.", "priority": 0 }),
    ];
    for c in res.def.printer_columns {
        columns.push(json!({
            "name": c.name,
            "type": c.type_,
            "format": c.format.unwrap_or(""),
            "description": c.description.unwrap_or(""),
            "priority": c.priority,
        }));
    }
    let computed = strategy_for(res).computed_columns();
    for c in computed {
        columns.push(json!({ "name": c.name, "type": c.type_, "format": "", "description": c.description, "priority": 0 }));
    }
    columns.push(json!({ "name": "Age", "type": "string", "format": "", "description": "CreationTimestamp is a timestamp representing the server time when this object was created.", "priority": 0 }));

    let rows: Vec<Value> = items
        .into_iter()
        .map(|mut obj| {
            let mut cells = vec![obj["metadata"]["name"].clone()];
            for c in res.def.printer_columns {
                cells.push(json_path(&obj, c.json_path).cloned().unwrap_or(Value::Null));
            }
            for c in computed {
                cells.push((c.value)(&obj));
            }
            cells.push(json!(obj["metadata"]["creationTimestamp"].as_str().map(human_age).unwrap_or_else(|| "<unknown>".into())));
            let mut row = json!({ "cells": cells });
            match include {
                IncludeObject::None => {}
                IncludeObject::Metadata => {
                    let metadata = obj["metadata"].take();
                    row["object"] = json!({ "kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": metadata })
                }
                IncludeObject::Object => row["object"] = obj,
            }
            row
        })
        .collect();
    json!({ "kind": "Table", "apiVersion": "meta.k8s.io/v1", "metadata": list_meta, "columnDefinitions": columns, "rows": rows })
}

/// Evaluates a simple JSONPath (`.spec.replicas`, `.status.conditions[0].type`).
pub fn json_path<'a>(obj: &'a Value, path: &str) -> Option<&'a Value> {
    let mut cur = obj;
    for part in path
        .trim_start_matches('.')
        .split('.')
        .filter(|p| !p.is_empty())
    {
        let (field, index) = match part.split_once('[') {
            Some((f, rest)) => (f, rest.trim_end_matches(']').parse::<usize>().ok()),
            None => (part, None),
        };
        if !field.is_empty() {
            cur = cur.get(field)?;
        }
        if let Some(i) = index {
            cur = cur.get(i)?;
        }
    }
    Some(cur)
}
