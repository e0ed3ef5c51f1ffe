//! Strategic merge patch (`application/strategic-merge-patch+json`), driven by the kind's
//! schema: maps merge key by key (`null` deletes), lists with `x-kubernetes-list-type: map`
//! merge items by their keys, `set` lists take the union, other lists are replaced.
//! Directives: `$patch: replace|delete|merge`, `$deleteFromPrimitiveList/<field>`;
//! `$setElementOrder/<field>` and `$retainKeys` are accepted and their order hints ignored.

use serde_json::{json, Map, Value};

use super::schema::{child_schema, list_map_keys};

/// Applies `patch` to `original` under `schema` (the kind's schema; metadata is implied).
pub fn apply(original: &Value, patch: &Value, schema: &Value) -> Result<Value, String> {
    let mut out = original.clone();
    let Some(p) = patch.as_object() else {
        return Err("a strategic merge patch must be a JSON object".into());
    };
    let props = schema.get("properties").cloned().unwrap_or(Value::Null);
    let root_schema = json!({ "type": "object", "properties": merge_props(&props) });
    merge_object(&mut out, p, &root_schema)?;
    Ok(out)
}

/// The kind's properties plus ObjectMeta's list semantics.
fn merge_props(props: &Value) -> Value {
    let mut m = props.as_object().cloned().unwrap_or_default();
    m.insert(
        "metadata".into(),
        json!({ "type": "object", "properties": {
            "finalizers": { "type": "array", "x-kubernetes-list-type": "set", "items": { "type": "string" } },
            "ownerReferences": { "type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["uid"], "items": { "type": "object" } },
            "labels": { "type": "object", "additionalProperties": { "type": "string" } },
            "annotations": { "type": "object", "additionalProperties": { "type": "string" } },
        } }),
    );
    Value::Object(m)
}

fn merge_object(
    target: &mut Value,
    patch: &Map<String, Value>,
    schema: &Value,
) -> Result<(), String> {
    match patch.get("$patch").and_then(Value::as_str) {
        Some("replace") => {
            let mut p = patch.clone();
            p.remove("$patch");
            *target = Value::Object(p);
            return Ok(());
        }
        Some("delete") => {
            *target = Value::Null;
            return Ok(());
        }
        Some("merge") | None => {}
        Some(other) => return Err(format!("unknown patch type: {other}")),
    }
    if !target.is_object() {
        *target = json!({});
    }
    for (k, v) in patch {
        if k == "$patch" || k == "$retainKeys" || k.starts_with("$setElementOrder/") {
            continue;
        }
        if let Some(field) = k.strip_prefix("$deleteFromPrimitiveList/") {
            let remove = v.as_array().cloned().unwrap_or_default();
            if let Some(Value::Array(items)) = target.get_mut(field) {
                items.retain(|i| !remove.contains(i));
            }
            continue;
        }
        if k.starts_with('$') {
            return Err(format!("unknown directive {k:?}"));
        }
        let obj = target.as_object_mut().expect("made an object above");
        let cs = child_schema(schema, k);
        match v {
            Value::Null => {
                obj.remove(k);
            }
            Value::Object(pm) => {
                let entry = obj.entry(k.clone()).or_insert(Value::Null);
                merge_object(entry, pm, cs)?;
                if entry.is_null() {
                    obj.remove(k);
                }
            }
            Value::Array(items) => {
                let current = obj.remove(k).unwrap_or(Value::Null);
                obj.insert(k.clone(), merge_list(current, items, cs)?);
            }
            other => {
                obj.insert(k.clone(), other.clone());
            }
        }
    }
    Ok(())
}

fn merge_list(current: Value, patch: &[Value], schema: &Value) -> Result<Value, String> {
    let list_type = schema.get("x-kubernetes-list-type").and_then(Value::as_str);
    let strategy = schema
        .get("x-kubernetes-patch-strategy")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let mut keys: Vec<String> = list_map_keys(schema)
        .into_iter()
        .map(String::from)
        .collect();
    if keys.is_empty() {
        if let Some(k) = schema
            .get("x-kubernetes-patch-merge-key")
            .and_then(Value::as_str)
        {
            keys.push(k.to_string());
        }
    }
    let mut items = current.as_array().cloned().unwrap_or_default();
    if patch
        .iter()
        .any(|p| p.get("$patch").and_then(Value::as_str) == Some("replace"))
    {
        return Ok(Value::Array(
            patch
                .iter()
                .filter(|p| p.get("$patch").is_none())
                .cloned()
                .collect(),
        ));
    }
    if list_type == Some("map") || (!keys.is_empty() && strategy.contains("merge")) {
        let item_schema = schema.get("items").cloned().unwrap_or(Value::Null);
        let same = |a: &Value, b: &Value| keys.iter().all(|k| a.get(k) == b.get(k));
        for p in patch {
            let Some(pm) = p.as_object() else {
                return Err("items of a map list must be objects".into());
            };
            let deleting = pm.get("$patch").and_then(Value::as_str) == Some("delete");
            match items.iter().position(|i| same(i, p)) {
                Some(pos) if deleting => {
                    items.remove(pos);
                }
                Some(pos) => merge_object(&mut items[pos], pm, &item_schema)?,
                None if deleting => {}
                None => {
                    let mut fresh = Value::Null;
                    merge_object(&mut fresh, pm, &item_schema)?;
                    items.push(fresh);
                }
            }
        }
        return Ok(Value::Array(items));
    }
    if list_type == Some("set") || strategy.contains("merge") {
        for p in patch {
            if !items.contains(p) {
                items.push(p.clone());
            }
        }
        return Ok(Value::Array(items));
    }
    Ok(Value::Array(patch.to_vec()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn schema() -> Value {
        json!({ "type": "object", "properties": { "spec": { "type": "object", "properties": {
            "ports": { "type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["port"], "items": { "type": "object" } },
            "tags": { "type": "array", "x-kubernetes-list-type": "set" },
            "args": { "type": "array" }
        } } } })
    }

    #[test]
    fn map_lists_merge_by_key_and_atomic_lists_replace() {
        let orig = json!({ "spec": { "ports": [{ "port": 80, "name": "http" }, { "port": 443 }], "args": ["a"], "tags": ["x"] } });
        let patch = json!({ "spec": { "ports": [{ "port": 80, "name": "web" }, { "port": 443, "$patch": "delete" }, { "port": 8080 }], "args": ["b"], "tags": ["y"] } });
        let out = apply(&orig, &patch, &schema()).unwrap();
        assert_eq!(
            out["spec"]["ports"],
            json!([{ "port": 80, "name": "web" }, { "port": 8080 }])
        );
        assert_eq!(out["spec"]["args"], json!(["b"]));
        assert_eq!(out["spec"]["tags"], json!(["x", "y"]));
    }

    #[test]
    fn directives() {
        let orig = json!({ "metadata": { "finalizers": ["a", "b"], "labels": { "x": "1", "y": "2" } }, "spec": { "tags": ["x"] } });
        let patch = json!({ "metadata": { "$deleteFromPrimitiveList/finalizers": ["a"], "labels": { "x": null } }, "spec": { "$patch": "replace", "tags": [] } });
        let out = apply(&orig, &patch, &schema()).unwrap();
        assert_eq!(out["metadata"]["finalizers"], json!(["b"]));
        assert_eq!(out["metadata"]["labels"], json!({ "y": "2" }));
        assert_eq!(out["spec"], json!({ "tags": [] }));
        assert!(apply(&orig, &json!({ "$bogus": 1 }), &schema()).is_err());
    }
}
