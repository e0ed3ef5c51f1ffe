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

    /// Strategic merge against a model of its rules on one shape of object: a string map
    /// (keys merge, `null` deletes), a map list keyed by `port` (items merge by key,
    /// `$patch: delete` removes, new keys append), a set list (union) and an atomic list
    /// (replaced).
    mod properties {
        use std::collections::BTreeMap;

        use proptest::prelude::*;
        use serde_json::{json, Map, Value};

        use super::schema;

        /// The object's spec, as the model sees it.
        #[derive(Clone, Debug, Default)]
        struct Spec {
            labels: Option<BTreeMap<String, String>>,
            /// (port, name), ports unique.
            ports: Option<Vec<(u16, Option<String>)>>,
            tags: Option<Vec<String>>,
            args: Option<Vec<String>>,
        }

        /// One patch item of the port list.
        #[derive(Clone, Debug)]
        enum PortPatch {
            /// `name`: `None` leaves it, `Some(None)` deletes it (`null`).
            Merge(u16, Option<Option<String>>),
            Delete(u16),
        }

        #[derive(Clone, Debug, Default)]
        struct SpecPatch {
            labels: Option<BTreeMap<String, Option<String>>>,
            ports: Option<Vec<PortPatch>>,
            tags: Option<Vec<String>>,
            args: Option<Vec<String>>,
        }

        fn word() -> impl Strategy<Value = String> {
            "[a-c]{1,2}"
        }

        fn spec() -> impl Strategy<Value = Spec> {
            (
                prop::option::of(prop::collection::btree_map(word(), word(), 0..4)),
                prop::option::of(prop::collection::btree_map(
                    0u16..6,
                    prop::option::of(word()),
                    0..4,
                )),
                prop::option::of(prop::collection::btree_set(word(), 0..4)),
                prop::option::of(prop::collection::vec(word(), 0..3)),
            )
                .prop_map(|(labels, ports, tags, args)| Spec {
                    labels,
                    ports: ports.map(|p| p.into_iter().collect()),
                    tags: tags.map(|t| t.into_iter().collect()),
                    args,
                })
        }

        fn port_patch() -> impl Strategy<Value = PortPatch> {
            prop_oneof![
                (0u16..6, prop::option::of(prop::option::of(word())))
                    .prop_map(|(p, n)| PortPatch::Merge(p, n)),
                (0u16..6).prop_map(PortPatch::Delete),
            ]
        }

        fn spec_patch() -> impl Strategy<Value = SpecPatch> {
            (
                prop::option::of(prop::collection::btree_map(
                    word(),
                    prop::option::of(word()),
                    0..4,
                )),
                prop::option::of(prop::collection::vec(port_patch(), 0..4)),
                prop::option::of(prop::collection::vec(word(), 0..3)),
                prop::option::of(prop::collection::vec(word(), 0..3)),
            )
                .prop_map(|(labels, ports, tags, args)| SpecPatch {
                    labels,
                    ports,
                    tags,
                    args,
                })
        }

        fn spec_json(s: &Spec) -> Value {
            let mut m = Map::new();
            if let Some(l) = &s.labels {
                m.insert("labels".into(), json!(l));
            }
            if let Some(ports) = &s.ports {
                let items: Vec<Value> = ports
                    .iter()
                    .map(|(port, name)| match name {
                        Some(n) => json!({ "port": port, "name": n }),
                        None => json!({ "port": port }),
                    })
                    .collect();
                m.insert("ports".into(), Value::Array(items));
            }
            if let Some(t) = &s.tags {
                m.insert("tags".into(), json!(t));
            }
            if let Some(a) = &s.args {
                m.insert("args".into(), json!(a));
            }
            json!({ "spec": m })
        }

        fn patch_json(p: &SpecPatch) -> Value {
            let mut m = Map::new();
            if let Some(l) = &p.labels {
                m.insert("labels".into(), json!(l));
            }
            if let Some(ports) = &p.ports {
                let items: Vec<Value> = ports
                    .iter()
                    .map(|pp| match pp {
                        PortPatch::Merge(port, None) => json!({ "port": port }),
                        PortPatch::Merge(port, Some(name)) => json!({ "port": port, "name": name }),
                        PortPatch::Delete(port) => json!({ "port": port, "$patch": "delete" }),
                    })
                    .collect();
                m.insert("ports".into(), Value::Array(items));
            }
            if let Some(t) = &p.tags {
                m.insert("tags".into(), json!(t));
            }
            if let Some(a) = &p.args {
                m.insert("args".into(), json!(a));
            }
            json!({ "spec": m })
        }

        /// The model: what the patch should do, rule by rule.
        fn reference(mut s: Spec, p: &SpecPatch) -> Spec {
            if let Some(lp) = &p.labels {
                let labels = s.labels.get_or_insert_with(BTreeMap::new);
                for (k, v) in lp {
                    match v {
                        Some(v) => labels.insert(k.clone(), v.clone()),
                        None => labels.remove(k),
                    };
                }
            }
            if let Some(pp) = &p.ports {
                let ports = s.ports.get_or_insert_with(Vec::new);
                for item in pp {
                    match item {
                        PortPatch::Delete(port) => ports.retain(|(p, _)| p != port),
                        PortPatch::Merge(port, name) => {
                            match ports.iter_mut().find(|(p, _)| p == port) {
                                Some(existing) => {
                                    if let Some(n) = name {
                                        existing.1 = n.clone();
                                    }
                                }
                                None => ports.push((*port, name.clone().flatten())),
                            }
                        }
                    }
                }
            }
            if let Some(tp) = &p.tags {
                let tags = s.tags.get_or_insert_with(Vec::new);
                for t in tp {
                    if !tags.contains(t) {
                        tags.push(t.clone());
                    }
                }
            }
            if let Some(a) = &p.args {
                s.args = Some(a.clone());
            }
            s
        }

        proptest! {
            #[test]
            fn strategic_merge_agrees_with_a_model_of_its_list_and_map_rules(
                original in spec(),
                patch in spec_patch(),
            ) {
                let got = super::apply(&spec_json(&original), &patch_json(&patch), &schema())
                    .expect("the patch applies");
                let want = spec_json(&reference(original, &patch));
                prop_assert_eq!(got, want);
            }
        }
    }
}
