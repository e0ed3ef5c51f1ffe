//! `metadata.managedFields` for Update operations (PUT, and PATCH of the JSON, merge and
//! strategic kinds): which manager last set which fields, in the `FieldsV1` format.
//!
//! A manager owns the fields it created or changed; a change by another manager moves
//! ownership of the changed fields to that manager. Server-set metadata (uid,
//! resourceVersion, timestamps, generation, managedFields) and identity (name, namespace,
//! apiVersion, kind) are never owned.

use std::borrow::Cow;
use std::collections::BTreeSet;

use serde_json::{json, Map, Value};

use super::schema::{child_schema, list_map_keys};

use crate::catalog::ApiResource;

/// A field path in FieldsV1 element form: `f:data`, `f:a`, `k:{"port":80}`, `v:"x"`, `.`.
pub(crate) type Path = Vec<String>;

/// Identity, never owned by a manager.
const IDENTITY_META: &[&str] = &["name", "namespace", "generateName"];

/// The manager name for a request: `fieldManager`, else the User-Agent's product token.
pub fn manager_name(field_manager: Option<&str>, user_agent: Option<&str>) -> String {
    match field_manager.filter(|m| !m.is_empty()) {
        Some(m) => m.chars().take(128).collect(),
        None => user_agent
            .and_then(|ua| ua.split('/').next())
            .filter(|s| !s.is_empty())
            .unwrap_or("unknown")
            .chars()
            .take(128)
            .collect(),
    }
}

/// Every owned path of `obj`, with the value at each leaf, driven by `schema` for list
/// semantics (atomic by default; `set` and `map` lists are granular).
/// Every owned path of `obj` with its value. `apply` gives Apply's shape (no `.` on maps
/// and structs, only on keyed list items); otherwise Update's (`.` on every container).
pub(crate) fn field_set(
    obj: &Value,
    schema: &Value,
    include_status: bool,
    apply: bool,
) -> Vec<(Path, Value)> {
    let mut out = Vec::new();
    let Some(map) = obj.as_object() else {
        return out;
    };
    for (k, v) in map {
        match k.as_str() {
            "apiVersion" | "kind" => {}
            "status" if !include_status => {}
            "metadata" => {
                if let Some(meta) = v.as_object() {
                    for (mk, mv) in meta.iter().filter(|(mk, _)| {
                        !crate::api::meta::server_set_fields().any(|f| f == mk.as_str())
                            && !IDENTITY_META.contains(&mk.as_str())
                    }) {
                        let list_schema = match mk.as_str() {
                            "finalizers" => {
                                json!({ "type": "array", "x-kubernetes-list-type": "set" })
                            }
                            "ownerReferences" => {
                                json!({ "type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["uid"] })
                            }
                            _ => {
                                json!({ "type": "object", "additionalProperties": { "type": "string" } })
                            }
                        };
                        walk(
                            mv,
                            &list_schema,
                            vec!["f:metadata".into(), format!("f:{mk}")],
                            &mut out,
                            apply,
                        );
                    }
                }
            }
            _ => {
                let child = schema
                    .get("properties")
                    .and_then(|p| p.get(k))
                    .cloned()
                    .unwrap_or(Value::Null);
                walk(v, &child, vec![format!("f:{k}")], &mut out, apply);
            }
        }
    }
    out
}

fn walk(v: &Value, schema: &Value, path: Path, out: &mut Vec<(Path, Value)>, apply: bool) {
    match v {
        Value::Object(map)
            if !map.is_empty()
                || schema.get("type").and_then(Value::as_str) == Some("object")
                || schema.is_null() =>
        {
            let keyed_item = path.last().is_some_and(|e| e.starts_with("k:"));
            if !apply || keyed_item {
                let mut dot = path.clone();
                dot.push(".".into());
                out.push((dot, Value::Null));
            }
            for (k, child) in map {
                let cs = child_schema(schema, k);
                let mut p = path.clone();
                p.push(format!("f:{k}"));
                walk(child, cs, p, out, apply);
            }
        }
        Value::Array(items) => match schema.get("x-kubernetes-list-type").and_then(Value::as_str) {
            Some("set") => {
                if !apply {
                    let mut dot = path.clone();
                    dot.push(".".into());
                    out.push((dot, Value::Null));
                }
                for item in items {
                    let mut p = path.clone();
                    p.push(format!("v:{item}"));
                    out.push((p, item.clone()));
                }
            }
            Some("map") => {
                let keys = list_map_keys(schema);
                let item_schema = schema.get("items").cloned().unwrap_or(Value::Null);
                if !apply {
                    let mut dot = path.clone();
                    dot.push(".".into());
                    out.push((dot, Value::Null));
                }
                for item in items {
                    let key: Map<String, Value> = keys
                        .iter()
                        .filter_map(|k| Some((k.to_string(), item.get(*k)?.clone())))
                        .collect();
                    let mut p = path.clone();
                    p.push(format!("k:{}", Value::Object(key)));
                    walk(item, &item_schema, p, out, apply);
                }
            }
            _ => out.push((path, v.clone())),
        },
        _ => out.push((path, v.clone())),
    }
}

pub(crate) fn to_tree(paths: &BTreeSet<Path>) -> Value {
    let mut root = Map::new();
    for p in paths {
        let mut cur = &mut root;
        for el in p {
            cur = cur
                .entry(el.clone())
                .or_insert_with(|| json!({}))
                .as_object_mut()
                .expect("nodes are objects");
        }
    }
    Value::Object(root)
}

pub(crate) fn from_tree(v: &Value, prefix: &mut Path, out: &mut BTreeSet<Path>) {
    if let Some(m) = v.as_object() {
        if m.is_empty() && !prefix.is_empty() {
            out.insert(prefix.clone());
        }
        for (k, child) in m {
            prefix.push(k.clone());
            from_tree(child, prefix, out);
            prefix.pop();
        }
    }
}

/// `obj`, an object of `res`'s version, as version `api_version` of its kind sees it,
/// with that version's schema: what a managedFields entry recorded in that version is
/// read against. `None` when the server cannot convert to it in step (not a version of
/// the kind, or a CRD whose webhook converts): callers then read the entry's paths as
/// this version's.
pub(crate) fn view<'a>(
    res: &'a ApiResource,
    obj: &'a Value,
    api_version: &str,
) -> Option<(Cow<'a, Value>, &'a Value)> {
    if !seen_in_step(res, api_version) {
        return None;
    }
    match &res.versions {
        Some(family) if api_version != res.api_version() => {
            let schema = family.schema_of(api_version)?;
            let converted = family
                .convert_from(obj.clone(), res.api_version(), api_version)
                .ok()?;
            Some((Cow::Owned(converted), schema))
        }
        // The same version, or a CRD converted `None`: every version holds the same
        // fields at the same paths.
        _ => Some((Cow::Borrowed(obj), res.schema())),
    }
}

/// Whether [`view`] can show an object of `res` in version `api_version`.
pub(crate) fn seen_in_step(res: &ApiResource, api_version: &str) -> bool {
    if api_version == res.api_version() {
        return true;
    }
    if let Some(family) = &res.versions {
        return family.schema_of(api_version).is_some();
    }
    res.rewrites_api_version()
        && api_version
            .rsplit_once('/')
            .is_some_and(|(g, _)| g == res.def.group)
}

/// The paths of `new` and those the write from `old` changed, as version `api_version`
/// of `res`'s kind sees them (`None` when it cannot be seen in it, see [`view`]).
fn seen_in(
    res: &ApiResource,
    api_version: &str,
    new: &Value,
    old: Option<&Value>,
    include_status: bool,
) -> Option<(BTreeSet<Path>, BTreeSet<Path>)> {
    let fields = |obj: &Value| {
        let (seen, schema) = view(res, obj, api_version)?;
        Some(field_set(&seen, schema, include_status, false))
    };
    let new_fields = fields(new)?;
    let old_fields = match old {
        Some(o) => fields(o)?,
        None => Vec::new(),
    };
    let changed = new_fields
        .iter()
        .filter(|(p, v)| !old_fields.iter().any(|(op, ov)| op == p && ov == v))
        .map(|(p, _)| p.clone())
        .collect();
    Some((new_fields.into_iter().map(|(p, _)| p).collect(), changed))
}

/// Records an Update by `manager` that turned `old` (None on create) into `new`, in
/// `new.metadata.managedFields`. `subresource` is `status` for status writes; with a
/// status subresource, status fields are only tracked for those.
pub fn record_update(
    new: &mut Value,
    old: Option<&Value>,
    res: &ApiResource,
    manager: &str,
    subresource: Option<&str>,
    now: &str,
) {
    let (schema, api_version) = (res.schema(), res.api_version());
    let include_status = subresource == Some("status") || !res.def.subresources.status;
    let new_fields = field_set(new, schema, include_status, false);
    let new_paths: BTreeSet<Path> = new_fields.iter().map(|(p, _)| p.clone()).collect();
    let old_fields: Vec<(Path, Value)> = old
        .map(|o| field_set(o, schema, include_status, false))
        .unwrap_or_default();
    let changed: BTreeSet<Path> = new_fields
        .iter()
        .filter(|(p, v)| !old_fields.iter().any(|(op, ov)| op == p && ov == v))
        .map(|(p, _)| p.clone())
        .collect();

    let mut entries: Vec<Value> = old
        .and_then(|o| o["metadata"]["managedFields"].as_array().cloned())
        .unwrap_or_default()
        .into_iter()
        .filter(|e| e.is_object())
        .collect();
    // An Update entry is a manager's in one version (upstream's manager identifier
    // includes it): the same manager's entry of another version is looked at as any
    // other manager's, in its version.
    let is_mine = |e: &Value| {
        e["manager"] == manager
            && e["operation"] == "Update"
            && e["apiVersion"] == api_version
            && e["subresource"].as_str() == subresource
    };
    let mut mine = BTreeSet::new();
    let mut found = false;
    for e in entries.iter_mut() {
        let mut set = BTreeSet::new();
        from_tree(&e["fieldsV1"], &mut Vec::new(), &mut set);
        // Paths this write cannot see (status, on the main endpoint of a kind with a status
        // subresource) keep their owners.
        let out_of_scope = |p: &Path| !include_status && p.first().is_some_and(|f| f == "f:status");
        if is_mine(e) {
            found = true;
            mine = set
                .into_iter()
                .filter(|p| out_of_scope(p) || new_paths.contains(p))
                .collect();
        } else {
            // An entry recorded in another version of the kind is kept in that version:
            // the write is looked at as that version sees it, as upstream's field manager
            // does.
            let other = e["apiVersion"]
                .as_str()
                .filter(|v| *v != api_version)
                .and_then(|v| seen_in(res, v, new, old, include_status));
            let (new_paths, changed) = match &other {
                Some((n, c)) => (n, c),
                None => (&new_paths, &changed),
            };
            let kept: BTreeSet<Path> = set
                .into_iter()
                .filter(|p| out_of_scope(p) || (new_paths.contains(p) && !changed.contains(p)))
                .collect();
            e["fieldsV1"] = to_tree(&kept);
        }
    }
    let before = mine.clone();
    mine.extend(changed.iter().cloned());
    entries.retain(|e| is_mine(e) || e["fieldsV1"].as_object().is_some_and(|m| !m.is_empty()));
    if !mine.is_empty() {
        if let Some(e) = entries.iter_mut().find(|e| is_mine(e)) {
            if mine != before {
                e["time"] = json!(now);
            }
            e["fieldsV1"] = to_tree(&mine);
            e["apiVersion"] = json!(api_version);
        } else {
            let mut e = json!({ "manager": manager, "operation": "Update", "apiVersion": api_version, "time": now, "fieldsType": "FieldsV1", "fieldsV1": to_tree(&mine) });
            if let Some(s) = subresource {
                e["subresource"] = json!(s);
            }
            entries.push(e);
        }
    } else if found {
        entries.retain(|e| !is_mine(e));
    }
    let meta = crate::api::meta::metadata_mut(new);
    if entries.is_empty() {
        meta.remove("managedFields");
    } else {
        meta.insert("managedFields".into(), Value::Array(entries));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::test_resource;

    fn res(schema: Value) -> ApiResource {
        test_resource(schema)
    }

    #[test]
    fn create_then_another_manager_takes_changed_fields() {
        let schema = json!({ "type": "object", "properties": { "data": { "type": "object", "additionalProperties": { "type": "string" } } } });
        let mut cm = json!({ "apiVersion": "v1", "kind": "ConfigMap", "metadata": { "name": "c", "labels": { "app": "x" } }, "data": { "a": "1" } });
        let r = res(schema);
        record_update(&mut cm, None, &r, "kubectl-create", None, "t0");
        assert_eq!(
            cm["metadata"]["managedFields"][0]["fieldsV1"],
            json!({ "f:data": { ".": {}, "f:a": {} }, "f:metadata": { "f:labels": { ".": {}, "f:app": {} } } })
        );
        let old = cm.clone();
        cm["data"]["a"] = json!("2");
        record_update(&mut cm, Some(&old), &r, "tests", None, "t1");
        let mf = cm["metadata"]["managedFields"].as_array().unwrap();
        assert_eq!(mf.len(), 2);
        assert_eq!(
            mf[0]["fieldsV1"],
            json!({ "f:data": { ".": {} }, "f:metadata": { "f:labels": { ".": {}, "f:app": {} } } })
        );
        assert_eq!(mf[1]["manager"], "tests");
        assert_eq!(mf[1]["fieldsV1"], json!({ "f:data": { "f:a": {} } }));
    }

    #[test]
    fn set_and_map_lists_are_granular() {
        let schema = json!({ "type": "object", "properties": { "spec": { "type": "object", "properties": {
            "ports": { "type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["port"], "items": { "type": "object", "properties": { "port": { "type": "integer" }, "name": { "type": "string" } } } },
            "tags": { "type": "array", "x-kubernetes-list-type": "set", "items": { "type": "string" } }
        } } } });
        let mut w = json!({ "metadata": {}, "spec": { "ports": [{ "port": 80, "name": "http" }], "tags": ["a"] } });
        record_update(&mut w, None, &res(schema), "m", None, "t");
        let f = &w["metadata"]["managedFields"][0]["fieldsV1"]["f:spec"];
        assert_eq!(
            f["f:ports"]["k:{\"port\":80}"],
            json!({ ".": {}, "f:name": {}, "f:port": {} })
        );
        assert_eq!(f["f:tags"]["v:\"a\""], json!({}));
    }

    #[test]
    fn manager_from_user_agent() {
        assert_eq!(
            manager_name(None, Some("kubectl/v1.32.4 (linux/amd64) kubernetes/abc")),
            "kubectl"
        );
        assert_eq!(manager_name(Some("mine"), Some("kubectl/v1")), "mine");
        assert_eq!(manager_name(None, None), "unknown");
    }

    #[test]
    fn a_managers_update_entries_are_one_per_version() {
        let catalog = crate::catalog::Catalog::from_definitions(crate::generated::CATALOG)
            .expect("the compiled-in catalog loads");
        let v1 = catalog.get("example.dev", "v1", "gears").unwrap();
        let v2 = catalog.get("example.dev", "v2", "gears").unwrap();
        let family = v2.versions.clone().unwrap();
        let mut g = json!({ "apiVersion": "example.dev/v1", "kind": "Gear", "metadata": { "name": "g" }, "spec": { "teeth": 12, "size": 40 } });
        record_update(&mut g, None, &v1, "m", None, "t0");
        let old = family.convert(g, "example.dev/v2").unwrap();
        let mut g = old.clone();
        g["spec"]["material"] = json!("brass");
        record_update(&mut g, Some(&old), &v2, "m", None, "t1");
        let entries = g["metadata"]["managedFields"].as_array().unwrap();
        assert_eq!(entries.len(), 2, "{g}");
        // The v1 entry keeps what v1 names (the size), the v2 one what v2 changed.
        assert_eq!(entries[0]["apiVersion"], "example.dev/v1");
        assert_eq!(
            entries[0]["fieldsV1"],
            json!({ "f:spec": { ".": {}, "f:teeth": {}, "f:size": {} } })
        );
        assert_eq!(entries[1]["apiVersion"], "example.dev/v2");
        assert_eq!(
            entries[1]["fieldsV1"],
            json!({ "f:spec": { "f:material": {} } })
        );
    }
}
