//! meta.k8s.io/v1 Table output: Name, the definition's printer columns, Age.

use serde_json::value::RawValue;
use serde_json::{json, Value};

use crate::api::meta::human_age;
use crate::api::ApiError;
use crate::catalog::ApiResource;
use crate::registry::printers::{self, AgeAt, Printer};
use crate::registry::strategy::ComputedColumn;
use crate::storage::KeyValue;

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

    /// The `includeObject` parameter of a query string.
    pub fn from_query(query: &str) -> Result<Self, ApiError> {
        #[derive(serde::Deserialize)]
        #[serde(rename_all = "camelCase")]
        struct TableOptions {
            include_object: Option<String>,
        }
        let q = actix_web::web::Query::<TableOptions>::from_query(query)
            .map_err(|e| ApiError::bad_request(format!("invalid query parameters: {e}")))?;
        Self::parse(q.include_object.as_deref()).map_err(ApiError::bad_request)
    }
}

/// One column of the Table.
enum Column<'a> {
    /// `metadata.name`, first unless a printer places it (Event's wide NAME).
    Name,
    Printer(&'a codegen::model::PrinterColumn),
    Computed(&'a ComputedColumn),
    Age,
}

/// The built-in printer of `res` (`registry::printers`), when its strategy prints no
/// columns of its own.
fn printer(res: &ApiResource) -> Option<&'static Printer> {
    if !res.builtin() || !res.strategy.computed_columns().is_empty() {
        return None;
    }
    printers::for_kind(&res.def.group, &res.def.kind)
}

/// The computed columns of `res`: its strategy's, or its built-in printer's.
fn computed(res: &ApiResource) -> &'static [ComputedColumn] {
    printer(res).map_or_else(|| res.strategy.computed_columns(), |p| p.columns)
}

/// The columns, in order: Name (unless the printer places a Name column of its own),
/// then the others. Custom kinds: printer columns, computed ones, Age
/// (CRDs' order). Built-in kinds: those of priority 0, Age, then the `-o wide` ones, as
/// kube-apiserver's printers place Age (`kubectl get pods -o wide`: ... AGE IP NODE);
/// a built-in printer (`registry::printers`) keeps its own order with Age in its place
/// (Node: ... AGE VERSION) or none, and may place Name itself (Event, StorageClass).
fn columns(res: &ApiResource) -> Vec<Column<'_>> {
    let printer_columns = res.def.printer_columns.iter().map(Column::Printer);
    let all = printer_columns.chain(computed(res).iter().map(Column::Computed));
    let age_at = printer(res).map_or(AgeAt::AfterNarrow, |p| p.age);
    let age = (res.strategy.prints_age() && age_at != AgeAt::Never).then_some(Column::Age);
    let name = (!computed(res).iter().any(|c| c.name == "Name")).then_some(Column::Name);
    if res.strategy.prints_age_first() {
        return name.into_iter().chain(age).chain(all).collect();
    }
    if !res.builtin() {
        return name.into_iter().chain(all).chain(age).collect();
    }
    if let Some(p) = printer(res) {
        // Upstream's order as the printer lists it (Event's wide columns sit among the
        // others), with Age put in its place.
        let mut cols: Vec<Column<'_>> = all.collect();
        if let Some(age) = age {
            let at = match p.age {
                AgeAt::After(n) => n,
                AgeAt::AfterNarrow | AgeAt::Never => {
                    p.columns.iter().filter(|c| c.priority == 0).count()
                }
            };
            cols.insert(at.min(cols.len()), age);
        }
        return name.into_iter().chain(cols).collect();
    }
    let (narrow, wide): (Vec<Column<'_>>, Vec<Column<'_>>) = all.partition(|c| match c {
        Column::Printer(p) => p.priority == 0,
        Column::Computed(c) => c.priority == 0,
        Column::Name | Column::Age => true,
    });
    name.into_iter()
        .chain(narrow)
        .chain(age)
        .chain(wide)
        .collect()
}

/// The Table's column definitions, of `columns` (of [`columns`]).
fn column_definitions(columns: &[Column<'_>]) -> Vec<Value> {
    let mut out = Vec::with_capacity(columns.len());
    for c in columns {
        out.push(match c {
            Column::Name => json!({ "name": "Name", "type": "string", "format": "name", "description": "Name must be unique within a namespace.", "priority": 0 }),
            Column::Printer(c) => json!({
                "name": c.name,
                "type": c.type_,
                "format": c.format.as_deref().unwrap_or(""),
                "description": c.description.as_deref().unwrap_or(""),
                "priority": c.priority,
            }),
            Column::Computed(c) => {
                // A printer's own Name column (Event, StorageClass) is still the name.
                let format = if c.name == "Name" { "name" } else { "" };
                json!({ "name": c.name, "type": c.type_, "format": format, "description": c.description, "priority": c.priority })
            }
            Column::Age => json!({ "name": "Age", "type": "string", "format": "", "description": "Time since the object was created.", "priority": 0 }),
        });
    }
    out
}

/// One row's cells, in [`column_definitions`] order.
fn cells(columns: &[Column<'_>], obj: &Value) -> Vec<Value> {
    let mut cells = Vec::with_capacity(columns.len());
    for c in columns {
        cells.push(match c {
            Column::Name => obj["metadata"]["name"].clone(),
            Column::Printer(c) => json_path(obj, &c.json_path).cloned().unwrap_or(Value::Null),
            Column::Computed(c) => (c.value)(obj),
            Column::Age => Value::String(
                obj["metadata"]["creationTimestamp"]
                    .as_str()
                    .map(human_age)
                    .unwrap_or_else(|| "<unknown>".into()),
            ),
        });
    }
    cells
}

/// Builds a Table of `items`, which it consumes: rows take each object's metadata (or
/// the object) without copying it.
pub fn table(
    res: &ApiResource,
    items: Vec<Value>,
    list_meta: Value,
    include: IncludeObject,
) -> Value {
    let order = columns(res);
    let columns = column_definitions(&order);
    let rows: Vec<Value> = items
        .into_iter()
        .map(|mut obj| {
            let mut row = json!({ "cells": cells(&order, &obj) });
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

/// A Table of stored objects, encoded as JSON straight from their bytes: each row's
/// metadata (or object) is copied from the stored bytes with resourceVersion spliced
/// in, and only what the cells read is decoded (never managedFields). The same
/// document as [`table`] gives, for a fraction of the work.
pub fn table_from_stored(
    res: &ApiResource,
    items: &[KeyValue],
    list_meta: &Value,
    include: IncludeObject,
) -> Result<Vec<u8>, String> {
    let order = columns(res);
    let head = json!({ "kind": "Table", "apiVersion": "meta.k8s.io/v1", "metadata": list_meta, "columnDefinitions": column_definitions(&order) });
    let mut out = serde_json::to_vec(&head).map_err(|e| e.to_string())?;
    out.pop(); // the closing brace: rows follow
    out.extend_from_slice(b",\"rows\":[");
    let needed = top_level_fields(res);
    for (i, kv) in items.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        let fields: std::collections::BTreeMap<std::borrow::Cow<'_, str>, &RawValue> =
            serde_json::from_slice(&kv.value)
                .map_err(|e| format!("stored object {} is not a JSON object: {e}", kv.key))?;
        let meta_raw = fields.get("metadata").map_or("{}", |m| m.get());
        // What the cells read: metadata without managedFields, and the fields named.
        let mut view = serde_json::Map::new();
        let meta: std::collections::BTreeMap<std::borrow::Cow<'_, str>, &RawValue> =
            serde_json::from_str(meta_raw).map_err(|e| e.to_string())?;
        let mut meta_view = serde_json::Map::new();
        for (k, v) in meta {
            if k != "managedFields" {
                meta_view.insert(
                    k.into_owned(),
                    serde_json::from_str(v.get()).map_err(|e| e.to_string())?,
                );
            }
        }
        view.insert("metadata".into(), Value::Object(meta_view));
        for name in &needed {
            if let Some(raw) = fields.get(*name) {
                view.insert(
                    (*name).to_string(),
                    serde_json::from_str(raw.get()).map_err(|e| e.to_string())?,
                );
            }
        }
        out.extend_from_slice(b"{\"cells\":");
        serde_json::to_writer(&mut out, &cells(&order, &Value::Object(view)))
            .map_err(|e| e.to_string())?;
        let rv = kv.mod_revision;
        match include {
            IncludeObject::None => {}
            IncludeObject::Metadata => {
                out.extend_from_slice(
                    b",\"object\":{\"kind\":\"PartialObjectMetadata\",\"apiVersion\":\"meta.k8s.io/v1\",\"metadata\":",
                );
                push_with_resource_version(&mut out, meta_raw, rv);
                out.push(b'}');
            }
            IncludeObject::Object => {
                out.extend_from_slice(b",\"object\":{");
                let mut first = true;
                for (k, v) in &fields {
                    if !first {
                        out.push(b',');
                    }
                    first = false;
                    serde_json::to_writer(&mut out, k).map_err(|e| e.to_string())?;
                    out.push(b':');
                    if k == "metadata" {
                        push_with_resource_version(&mut out, v.get(), rv);
                    } else {
                        out.extend_from_slice(v.get().as_bytes());
                    }
                }
                out.push(b'}');
            }
        }
        out.push(b'}');
    }
    out.extend_from_slice(b"]}");
    Ok(out)
}

/// The top-level fields a Table's cells read besides metadata: the first step of each
/// printer column's path, and what computed columns declare.
fn top_level_fields(res: &ApiResource) -> Vec<&str> {
    let mut fields: Vec<&str> = res
        .def
        .printer_columns
        .iter()
        .filter_map(|c| {
            let path = c.json_path.trim_start_matches('.');
            let end = path.find(['.', '[']).unwrap_or(path.len());
            Some(&path[..end]).filter(|f| !f.is_empty() && *f != "metadata")
        })
        .collect();
    for c in computed(res) {
        fields.extend_from_slice(c.fields);
    }
    fields.sort_unstable();
    fields.dedup();
    fields
}

/// Appends a stored metadata object with `"resourceVersion":"<rv>"` added first (stored
/// metadata never has one).
fn push_with_resource_version(out: &mut Vec<u8>, metadata: &str, rv: u64) {
    let inner = metadata.trim().trim_start_matches('{');
    out.extend_from_slice(format!("{{\"resourceVersion\":\"{rv}\"").as_bytes());
    if !inner.trim_start().starts_with('}') {
        out.push(b',');
    }
    out.extend_from_slice(inner.as_bytes());
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::Catalog;

    /// The bytes path gives the same Table as the decoded one, for every `includeObject`,
    /// for kinds with computed columns (a strategy's, built-in printers') and one with
    /// printer columns.
    #[test]
    fn tables_from_stored_bytes_equal_tables_from_objects() {
        let catalog =
            Catalog::from_definitions(crate::generated::CATALOG).expect("the catalog loads");
        let managed = json!([{ "manager": "kubectl", "operation": "Update", "fieldsType": "FieldsV1", "fieldsV1": { "f:data": { "f:a": {} } } }]);
        let cases = [
            (
                "",
                "configmaps",
                json!({ "kind": "ConfigMap", "apiVersion": "v1", "metadata": { "name": "c", "namespace": "default", "creationTimestamp": "2020-01-01T00:00:00Z", "managedFields": managed, "labels": { "a": "b" } }, "data": { "a": "1", "b": "2" }, "binaryData": { "c": "AA==" } }),
            ),
            (
                "batch",
                "jobs",
                json!({ "kind": "Job", "apiVersion": "batch/v1", "metadata": { "name": "j", "namespace": "default", "creationTimestamp": "2020-01-01T00:00:00Z", "managedFields": managed }, "spec": { "completions": 2, "template": { "spec": { "containers": [{ "name": "c", "image": "busybox" }] } } }, "status": { "succeeded": 1, "startTime": "2020-01-01T00:00:00Z", "completionTime": "2020-01-01T00:05:00Z", "conditions": [{ "type": "Complete", "status": "True" }] } }),
            ),
            (
                "",
                "events",
                json!({ "kind": "Event", "apiVersion": "v1", "metadata": { "name": "e", "namespace": "default", "creationTimestamp": "2020-01-01T00:00:00Z", "managedFields": managed }, "involvedObject": { "kind": "Pod", "name": "p", "fieldPath": "spec" }, "reason": "Pulled", "message": "done", "type": "Normal", "source": { "component": "kubelet", "host": "n" }, "count": 3, "firstTimestamp": "2020-01-01T00:00:00Z", "lastTimestamp": "2020-01-01T00:00:00Z" }),
            ),
            (
                "example.dev",
                "widgets",
                json!({ "kind": "Widget", "apiVersion": "example.dev/v1", "metadata": { "name": "w", "namespace": "default", "creationTimestamp": "2020-01-01T00:00:00Z", "managedFields": managed }, "spec": { "color": "red", "replicas": 2 }, "status": { "replicas": 1 } }),
            ),
        ];
        for (group, plural, stored) in cases {
            let res = catalog.get(group, "v1", plural).expect("served");
            let kv = KeyValue {
                key: format!("/registry/{plural}/default/x"),
                value: serde_json::to_vec(&stored).unwrap().into(),
                create_revision: 5,
                mod_revision: 7,
                stale: false,
            };
            let mut decoded = stored.clone();
            decoded["metadata"]["resourceVersion"] = json!("7");
            let list_meta = json!({ "resourceVersion": "9" });
            for include in [
                IncludeObject::None,
                IncludeObject::Metadata,
                IncludeObject::Object,
            ] {
                let want = table(&res, vec![decoded.clone()], list_meta.clone(), include);
                let bytes = table_from_stored(&res, std::slice::from_ref(&kv), &list_meta, include)
                    .expect("builds");
                let got: Value = serde_json::from_slice(&bytes).expect("valid JSON");
                assert_eq!(got, want, "{plural} {include:?}");
            }
        }
    }
}
