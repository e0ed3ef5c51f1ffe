//! Server-side apply (`application/apply-patch+yaml`): merge a manager's intent into the
//! live object by the schema's structure, track what each manager applied in
//! managedFields (operation Apply), report conflicts with other managers, and remove
//! fields a manager stopped applying when nobody else owns them.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{json, Map, Value};

use super::schema::{child_schema, list_map_keys};

use super::managed_fields::{field_set, from_tree, to_tree, Path};
use crate::api::{ApiError, StatusCause};
use crate::catalog::ApiResource;
use crate::endpoints::negotiation::{check_type_meta, MAX_BODY_BYTES};

/// One manager's entry, as read from managedFields.
struct Owner {
    manager: String,
    operation: String,
    api_version: String,
    subresource: Option<String>,
    fields: BTreeSet<Path>,
}

/// Reads an apply configuration (YAML or JSON) for the object `name` of `res`: an object
/// naming the resource's `apiVersion` and `kind` and this name, else 400 (413 past the
/// body limit).
pub fn parse_intent(body: &[u8], res: &ApiResource, name: &str) -> Result<Value, ApiError> {
    if body.len() > MAX_BODY_BYTES {
        return Err(ApiError::too_large(MAX_BODY_BYTES));
    }
    let intent: Value = crate::api::yaml::from_slice(body)
        .map_err(|e| ApiError::bad_request(format!("error decoding YAML: {e}")))?;
    if !intent.is_object() {
        return Err(ApiError::bad_request(
            "the apply configuration must be an object",
        ));
    }
    for f in ["apiVersion", "kind"] {
        if intent
            .get(f)
            .and_then(Value::as_str)
            .is_none_or(str::is_empty)
        {
            return Err(ApiError::bad_request(format!(
                "{f} must be set in an apply configuration"
            )));
        }
    }
    check_type_meta(&intent, res)?;
    match intent["metadata"]["name"].as_str() {
        Some(n) if n == name => Ok(intent),
        Some(n) => Err(ApiError::bad_request(format!(
            "the name of the object ({n}) does not match the name on the URL ({name})"
        ))),
        None => Err(ApiError::bad_request(
            "metadata.name must be set in an apply configuration",
        )),
    }
}

/// Prepares an apply configuration: drops what a client may not set.
pub fn clean_intent(mut intent: Value) -> Value {
    if let Some(meta) = intent.get_mut("metadata").and_then(Value::as_object_mut) {
        for f in crate::api::meta::server_set_fields() {
            meta.remove(f);
        }
    }
    intent
}

/// The object after `manager` applies `intent` to `live` (None: the object is created).
/// `subresource` is `status` for applies to /status, a part subresource's name for
/// applies to it (the intent already holds its part alone).
pub fn apply(
    live: Option<&Value>,
    intent: &Value,
    res: &ApiResource,
    manager: &str,
    force: bool,
    subresource: Option<&str>,
    now: &str,
) -> Result<Value, ApiError> {
    let include_status = subresource.is_some() || !res.def.subresources.status;
    let mut scoped_intent = intent.clone();
    if let Some(m) = scoped_intent.as_object_mut() {
        if subresource == Some("status") {
            // /status takes status only; the rest of the configuration is ignored.
            m.retain(|k, _| matches!(k.as_str(), "apiVersion" | "kind" | "status"));
            let meta = intent["metadata"].as_object().map(|md| {
                md.iter()
                    .filter(|(k, _)| *k == "name" || *k == "namespace")
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect()
            });
            m.insert(
                "metadata".into(),
                meta.map(Value::Object).unwrap_or_else(|| json!({})),
            );
        } else if !include_status {
            m.remove("status");
        }
    }
    let applied: Vec<(Path, Value)> = field_set(&scoped_intent, res.schema(), include_status, true);
    let applied_paths: BTreeSet<Path> = applied.iter().map(|(p, _)| p.clone()).collect();
    let is_me = |o: &Owner| {
        o.manager == manager && o.operation == "Apply" && o.subresource.as_deref() == subresource
    };

    let Some(live) = live else {
        let mut obj = scoped_intent;
        let entry = entry_json(manager, res.api_version(), subresource, now, &applied_paths);
        crate::api::meta::metadata_mut(&mut obj).insert("managedFields".into(), json!([entry]));
        return Ok(obj);
    };

    let mut owners = read_owners(live);
    // Conflicts: fields whose applied value differs from the live one and that another
    // manager owns.
    let mut conflicts: BTreeMap<(String, String, String), Vec<Path>> = BTreeMap::new();
    for (path, value) in &applied {
        if path.last().is_some_and(|e| e == ".") {
            continue;
        }
        if value_at(live, path) == Some(value) {
            continue;
        }
        for o in owners
            .iter()
            .filter(|o| !is_me(o) && o.fields.contains(path))
        {
            conflicts
                .entry((
                    o.manager.clone(),
                    o.operation.clone(),
                    o.api_version.clone(),
                ))
                .or_default()
                .push(path.clone());
        }
    }
    if !conflicts.is_empty() && !force {
        return Err(conflict_error(&conflicts));
    }

    let mut merged = live.clone();
    merge(
        &mut merged,
        &scoped_intent,
        &json!({ "type": "object", "properties": res.schema().get("properties").cloned().unwrap_or(Value::Null) }),
    );

    // Fields this manager applied before but not now, that nobody else owns, go away.
    let previous: BTreeSet<Path> = owners
        .iter()
        .find(|o| is_me(o))
        .map(|o| o.fields.clone())
        .unwrap_or_default();
    let mut dropped: Vec<&Path> = previous
        .iter()
        .filter(|p| {
            !applied_paths.contains(*p)
                && !owners.iter().any(|o| !is_me(o) && o.fields.contains(*p))
        })
        .collect();
    // A dropped keyed list item (`k:{..}` / `v:..` with its `.`) goes whole, before its
    // fields: removing its key fields first would leave an item nobody can find.
    let items: Vec<Path> = dropped
        .iter()
        .filter(|p| {
            p.last().is_some_and(|e| e == ".")
                && p.len() >= 2
                && (p[p.len() - 2].starts_with("k:") || p[p.len() - 2].starts_with("v:"))
        })
        .map(|p| p[..p.len() - 1].to_vec())
        .collect();
    for item in &items {
        remove_at(&mut merged, item);
    }
    dropped.retain(|p| !items.iter().any(|i| p.starts_with(i)));
    // Deepest first, so removing a parent never hides a child still to remove.
    dropped.sort_by_key(|p| std::cmp::Reverse(p.len()));
    for p in dropped {
        remove_at(&mut merged, p);
        prune_empty_parents(&mut merged, p);
    }

    if force {
        let taken: BTreeSet<&Path> = conflicts.values().flatten().collect();
        for o in owners.iter_mut().filter(|o| !is_me(o)) {
            o.fields.retain(|p| !taken.contains(p));
        }
    }
    owners.retain(|o| !is_me(o) && !o.fields.is_empty());
    let mut entries: Vec<Value> = Vec::new();
    let live_entries = live["metadata"]["managedFields"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    for e in live_entries {
        let Some(o) = owners.iter().find(|o| {
            e["manager"] == o.manager.as_str()
                && e["operation"] == o.operation.as_str()
                && e["subresource"].as_str() == o.subresource.as_deref()
        }) else {
            continue;
        };
        let mut e = e.clone();
        e["fieldsV1"] = to_tree(&o.fields);
        entries.push(e);
    }
    if !applied_paths.is_empty() {
        entries.push(entry_json(
            manager,
            res.api_version(),
            subresource,
            now,
            &applied_paths,
        ));
    }
    // Nothing changed (same fields, same ownership): keep the live object, entry times
    // included, so the apply writes nothing.
    let strip = |v: &Value| {
        let mut v = v.clone();
        crate::api::meta::metadata_mut(&mut v).remove("managedFields");
        v
    };
    if strip(&merged) == strip(live)
        && previous == applied_paths
        && (!force || conflicts.is_empty())
    {
        return Ok(live.clone());
    }
    crate::api::meta::metadata_mut(&mut merged)
        .insert("managedFields".into(), Value::Array(entries));
    Ok(merged)
}

fn entry_json(
    manager: &str,
    api_version: &str,
    subresource: Option<&str>,
    now: &str,
    fields: &BTreeSet<Path>,
) -> Value {
    let mut e = json!({ "manager": manager, "operation": "Apply", "apiVersion": api_version, "time": now, "fieldsType": "FieldsV1", "fieldsV1": to_tree(fields) });
    if let Some(s) = subresource {
        e["subresource"] = json!(s);
    }
    e
}

fn read_owners(obj: &Value) -> Vec<Owner> {
    obj["metadata"]["managedFields"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|e| {
            let mut fields = BTreeSet::new();
            from_tree(&e["fieldsV1"], &mut Vec::new(), &mut fields);
            Owner {
                manager: e["manager"].as_str().unwrap_or_default().to_string(),
                operation: e["operation"].as_str().unwrap_or_default().to_string(),
                api_version: e["apiVersion"].as_str().unwrap_or_default().to_string(),
                subresource: e["subresource"].as_str().map(str::to_string),
                fields,
            }
        })
        .collect()
}

/// 409 Conflict worded as kube-apiserver words it.
fn conflict_error(conflicts: &BTreeMap<(String, String, String), Vec<Path>>) -> ApiError {
    let total: usize = conflicts.values().map(Vec::len).sum();
    let mut causes = Vec::new();
    let mut parts = Vec::new();
    for ((manager, op, api_version), paths) in conflicts {
        let who = if op == "Update" {
            format!("\"{manager}\" using {api_version}")
        } else {
            format!("\"{manager}\"")
        };
        let fields: Vec<String> = paths.iter().map(display_path).collect();
        for f in &fields {
            causes.push(StatusCause {
                reason: "FieldManagerConflict".into(),
                message: format!("conflict with {who}"),
                field: f.clone(),
            });
        }
        if total == 1 {
            parts.push(format!("conflict with {who}: {}", fields[0]));
        } else {
            parts.push(format!("conflicts with {who}:\n- {}", fields.join("\n- ")));
        }
    }
    let plural = if total == 1 { "" } else { "s" };
    ApiError::conflict_with(
        format!(
            "Apply failed with {total} conflict{plural}: {}",
            parts.join("\n")
        ),
        json!({ "causes": causes }),
    )
}

/// `.spec.ports[port=80].name`, as kube-apiserver prints field paths.
fn display_path(p: &Path) -> String {
    let mut out = String::new();
    for el in p {
        if let Some(f) = el.strip_prefix("f:") {
            out.push('.');
            out.push_str(f);
        } else if let Some(k) = el.strip_prefix("k:") {
            let key: Map<String, Value> = serde_json::from_str(k).unwrap_or_default();
            let shown: Vec<String> = key.iter().map(|(n, v)| format!("{n}={v}")).collect();
            out.push_str(&format!("[{}]", shown.join(",")));
        } else if let Some(v) = el.strip_prefix("v:") {
            out.push_str(&format!("[={v}]"));
        }
    }
    out
}

fn step<'a>(v: &'a Value, el: &str) -> Option<&'a Value> {
    if let Some(f) = el.strip_prefix("f:") {
        v.get(f)
    } else if let Some(k) = el.strip_prefix("k:") {
        let key: Map<String, Value> = serde_json::from_str(k).ok()?;
        v.as_array()?
            .iter()
            .find(|i| key.iter().all(|(n, kv)| i.get(n) == Some(kv)))
    } else if let Some(val) = el.strip_prefix("v:") {
        let want: Value = serde_json::from_str(val).ok()?;
        v.as_array()?.iter().find(|i| **i == want)
    } else if el == "." {
        Some(v)
    } else {
        None
    }
}

fn value_at<'a>(obj: &'a Value, path: &Path) -> Option<&'a Value> {
    path.iter().try_fold(obj, |v, el| step(v, el))
}

/// After a removal, containers left empty by it go too (a manager that stops applying its
/// last label leaves no `labels: {}` behind).
fn prune_empty_parents(obj: &mut Value, path: &Path) {
    let mut parent = path.clone();
    while parent.len() > 1 {
        parent.pop();
        if parent.last().is_some_and(|e| !e.starts_with("f:")) {
            return;
        }
        match value_at(obj, &parent) {
            Some(Value::Object(m)) if m.is_empty() => remove_at(obj, &parent),
            Some(Value::Array(a)) if a.is_empty() => remove_at(obj, &parent),
            _ => return,
        }
    }
}

fn remove_at(obj: &mut Value, path: &Path) {
    let Some((last, parent_path)) = path.split_last() else {
        return;
    };
    if last == "." {
        return;
    }
    let mut cur = obj;
    for el in parent_path {
        let next = if let Some(f) = el.strip_prefix("f:") {
            cur.get_mut(f)
        } else if let Some(k) = el.strip_prefix("k:") {
            let key: Map<String, Value> = serde_json::from_str(k).unwrap_or_default();
            cur.as_array_mut().and_then(|a| {
                a.iter_mut()
                    .find(|i| key.iter().all(|(n, kv)| i.get(n) == Some(kv)))
            })
        } else {
            None
        };
        match next {
            Some(n) => cur = n,
            None => return,
        }
    }
    if let Some(f) = last.strip_prefix("f:") {
        if let Some(m) = cur.as_object_mut() {
            m.remove(f);
        }
    } else if let Some(k) = last.strip_prefix("k:") {
        let key: Map<String, Value> = serde_json::from_str(k).unwrap_or_default();
        if let Some(a) = cur.as_array_mut() {
            a.retain(|i| !key.iter().all(|(n, kv)| i.get(n) == Some(kv)));
        }
    } else if let Some(val) = last.strip_prefix("v:") {
        if let (Ok(want), Some(a)) = (serde_json::from_str::<Value>(val), cur.as_array_mut()) {
            a.retain(|i| *i != want);
        }
    }
}

/// Merges `intent` into `target` by structure: objects field by field, `map` lists by
/// key, `set` lists by value, everything else replaced.
fn merge(target: &mut Value, intent: &Value, schema: &Value) {
    match intent {
        Value::Object(im) => {
            if !target.is_object() {
                *target = json!({});
            }
            let tm = target.as_object_mut().expect("made an object above");
            for (k, v) in im {
                let cs = match child_schema(schema, k) {
                    Value::Null => meta_schema(k),
                    found => found.clone(),
                };
                let atomic_map =
                    cs.get("x-kubernetes-map-type").and_then(Value::as_str) == Some("atomic");
                match (tm.get_mut(k), v) {
                    (Some(t), Value::Object(_)) if !atomic_map => merge(t, v, &cs),
                    (Some(t), Value::Array(items)) => merge_list(t, items, &cs),
                    _ => {
                        tm.insert(k.clone(), v.clone());
                    }
                }
            }
        }
        other => *target = other.clone(),
    }
}

/// ObjectMeta's list semantics when walking `metadata`.
fn meta_schema(key: &str) -> Value {
    match key {
        "finalizers" => json!({ "type": "array", "x-kubernetes-list-type": "set" }),
        "ownerReferences" => {
            json!({ "type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["uid"] })
        }
        _ => Value::Null,
    }
}

fn merge_list(target: &mut Value, items: &[Value], schema: &Value) {
    let Some(current) = target.as_array_mut() else {
        *target = Value::Array(items.to_vec());
        return;
    };
    match schema.get("x-kubernetes-list-type").and_then(Value::as_str) {
        Some("set") => {
            for i in items {
                if !current.contains(i) {
                    current.push(i.clone());
                }
            }
        }
        Some("map") => {
            let keys = list_map_keys(schema);
            let item_schema = schema.get("items").cloned().unwrap_or(Value::Null);
            for i in items {
                match current
                    .iter_mut()
                    .find(|c| keys.iter().all(|k| c.get(*k) == i.get(*k)))
                {
                    Some(c) => merge(c, i, &item_schema),
                    None => current.push(i.clone()),
                }
            }
        }
        _ => *target = Value::Array(items.to_vec()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::test_resource;

    fn res() -> ApiResource {
        test_resource(
            json!({ "type": "object", "properties": { "data": { "type": "object", "additionalProperties": { "type": "string" } } } }),
        )
    }

    #[test]
    fn create_conflict_force_and_removal() {
        let r = res();
        let a = json!({ "apiVersion": "v1", "kind": "ConfigMap", "metadata": { "name": "c" }, "data": { "k": "a", "x": "1" } });
        let live = apply(None, &a, &r, "mgr-a", false, None, "t0").unwrap();
        assert_eq!(
            live["metadata"]["managedFields"][0]["fieldsV1"],
            json!({ "f:data": { "f:k": {}, "f:x": {} } })
        );

        let b = json!({ "apiVersion": "v1", "kind": "ConfigMap", "metadata": { "name": "c" }, "data": { "k": "b" } });
        let err = apply(Some(&live), &b, &r, "mgr-b", false, None, "t1").unwrap_err();
        assert_eq!(err.code, 409);
        assert_eq!(
            err.message,
            "Apply failed with 1 conflict: conflict with \"mgr-a\": .data.k"
        );

        // Same value: shared ownership, no conflict.
        let same = json!({ "metadata": { "name": "c" }, "data": { "k": "a" } });
        let shared = apply(Some(&live), &same, &r, "mgr-b", false, None, "t1").unwrap();
        assert_eq!(
            shared["metadata"]["managedFields"]
                .as_array()
                .unwrap()
                .len(),
            2
        );

        let forced = apply(Some(&live), &b, &r, "mgr-b", true, None, "t2").unwrap();
        assert_eq!(forced["data"]["k"], "b");
        assert_eq!(
            forced["metadata"]["managedFields"][0]["fieldsV1"],
            json!({ "f:data": { "f:x": {} } })
        );

        // mgr-a stops applying x: it is removed (nobody else owns it).
        let a2 = json!({ "metadata": { "name": "c" }, "data": {} });
        let after = apply(Some(&forced), &a2, &r, "mgr-a", false, None, "t3").unwrap();
        assert_eq!(after["data"], json!({ "k": "b" }));
    }
}
