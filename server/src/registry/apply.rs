//! Server-side apply (`application/apply-patch+yaml`): merge a manager's intent into the
//! live object by the schema's structure, track what each manager applied in
//! managedFields (operation Apply), report conflicts with other managers, and remove
//! fields a manager stopped applying when nobody else owns them.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{json, Map, Value};

use super::schema::{child_schema, list_map_keys};

use super::managed_fields::{field_set, from_tree, seen_in_step, to_tree, view, Path};
use crate::api::{ApiError, StatusCause};
use crate::catalog::ApiResource;
use crate::endpoints::negotiation::{check_type_meta, MAX_BODY_BYTES};

/// One manager's entry, as read from managedFields.
#[derive(Default)]
struct Owner {
    /// The entry as stored.
    entry: Value,
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

    let version = res.api_version();
    let owners = read_owners(live);
    let mut merged = live.clone();
    merge(
        &mut merged,
        &scoped_intent,
        &json!({ "type": "object", "properties": res.schema().get("properties").cloned().unwrap_or(Value::Null) }),
    );

    // Fields this manager applied before (in the version it applied in) but not now, that
    // nobody else owns, go away.
    let previous = owners.iter().find(|o| is_me(o));
    if let Some(prev) = previous {
        let unchanged = prev.api_version == version && prev.fields.is_subset(&applied_paths);
        if !unchanged {
            let others: Vec<&Owner> = owners.iter().filter(|o| !is_me(o)).collect();
            let mine = Owner {
                api_version: version.to_string(),
                fields: applied_paths.clone(),
                ..Owner::default()
            };
            merged = prune(res, merged, prev, &mine, &others, include_status)?;
        }
    }

    // Every other manager sees the change in the version its entry was recorded in:
    // fields it owns that the apply changes are conflicts; fields the apply removed are
    // no longer its own.
    let mut changes: BTreeMap<String, Changes> = BTreeMap::new();
    let mut conflicts: BTreeMap<(String, String, String), Vec<Path>> = BTreeMap::new();
    let mut kept: Vec<(usize, BTreeSet<Path>)> = Vec::new();
    for (i, o) in owners.iter().enumerate().filter(|(_, o)| !is_me(o)) {
        let seen = changes.entry(o.api_version.clone()).or_insert_with(|| {
            Changes::between(res, live, &merged, &o.api_version, include_status)
        });
        let conflicting: Vec<Path> = o
            .fields
            .iter()
            .filter(|p| p.last().is_none_or(|e| e != ".") && seen.changed.contains(*p))
            .cloned()
            .collect();
        let mut fields: BTreeSet<Path> = o.fields.difference(&seen.removed).cloned().collect();
        if !conflicting.is_empty() {
            for p in &conflicting {
                fields.remove(p);
            }
            conflicts
                .entry((
                    o.manager.clone(),
                    o.operation.clone(),
                    o.api_version.clone(),
                ))
                .or_default()
                .extend(conflicting);
        }
        kept.push((i, fields));
    }
    if !conflicts.is_empty() && !force {
        return Err(conflict_error(&conflicts));
    }

    let mut entries: Vec<Value> = Vec::new();
    for (i, fields) in kept {
        if fields.is_empty() {
            continue;
        }
        let mut e = owners[i].entry.clone();
        e["fieldsV1"] = to_tree(&fields);
        entries.push(e);
    }
    if !applied_paths.is_empty() {
        entries.push(entry_json(
            manager,
            version,
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
    let previous_fields = previous.map(|o| &o.fields);
    if strip(&merged) == strip(live)
        && previous_fields.is_some_and(|f| *f == applied_paths)
        && (!force || conflicts.is_empty())
    {
        return Ok(live.clone());
    }
    crate::api::meta::metadata_mut(&mut merged)
        .insert("managedFields".into(), Value::Array(entries));
    Ok(merged)
}

/// What a write changed, as one version of the kind sees it.
struct Changes {
    /// Paths added, or whose value changed.
    changed: BTreeSet<Path>,
    /// Paths the write removed.
    removed: BTreeSet<Path>,
}

impl Changes {
    /// `live` → `new` (both in `res`'s version) seen in version `api_version`; an entry
    /// of a version that cannot be seen is read as this version's.
    fn between(
        res: &ApiResource,
        live: &Value,
        new: &Value,
        api_version: &str,
        include_status: bool,
    ) -> Changes {
        let fields = |obj: &Value| -> BTreeMap<Path, Value> {
            match view(res, obj, api_version) {
                Some((seen, schema)) => field_set(&seen, schema, include_status, false),
                None => field_set(obj, res.schema(), include_status, false),
            }
            .into_iter()
            .collect()
        };
        let (before, after) = (fields(live), fields(new));
        Changes {
            changed: after
                .iter()
                .filter(|(p, v)| before.get(*p) != Some(*v))
                .map(|(p, _)| p.clone())
                .collect(),
            removed: before
                .into_keys()
                .filter(|p| !after.contains_key(p))
                .collect(),
        }
    }
}

/// `merged` (in `res`'s version) without the fields the applying manager applied last
/// time (`prev`, in the version it applied in) and not now (`mine`), unless another
/// manager (`others`, each in its version) owns them. As upstream's structured merge:
/// everything `prev` holds is removed in its version, then what a manager owns is put
/// back as each manager's version sees it, and only removals of `prev`'s own paths are
/// kept, so nothing else is lost to the conversions.
fn prune(
    res: &ApiResource,
    merged: Value,
    prev: &Owner,
    mine: &Owner,
    others: &[&Owner],
    include_status: bool,
) -> Result<Value, ApiError> {
    let version = res.api_version();
    // A version that cannot be seen is read as this one's (as conflicts are).
    let at = |api_version: &str| -> String {
        if seen_in_step(res, api_version) {
            api_version
        } else {
            version
        }
        .to_string()
    };
    let last = at(&prev.api_version);
    let convert = |obj: Value, from: &str, to: &str| -> Result<Value, ApiError> {
        match &res.versions {
            Some(family) if from != to => family.convert_from(obj, from, to),
            _ => Ok(obj),
        }
    };
    let schema_of = |api_version: &str| -> &Value {
        res.versions
            .as_ref()
            .and_then(|f| f.schema_of(api_version))
            .unwrap_or_else(|| res.schema())
    };
    let fields = |obj: &Value, api_version: &str| -> BTreeSet<Path> {
        field_set(obj, schema_of(api_version), include_status, false)
            .into_iter()
            .map(|(p, _)| p)
            .collect()
    };
    let merged_last = convert(merged.clone(), version, &last)?;
    let mut pruned = remove_paths(merged_last.clone(), prev.fields.iter());
    let mut pruned_at = last.clone();

    // What each version's managers own, the last applied version first.
    let mut managed: BTreeMap<String, BTreeSet<Path>> = BTreeMap::new();
    for o in others.iter().copied().chain([mine]) {
        managed
            .entry(at(&o.api_version))
            .or_default()
            .extend(o.fields.iter().cloned());
    }
    let mut order: Vec<String> = managed.keys().cloned().collect();
    order.sort_by_key(|v| *v != last);
    for v in order {
        let merged_v = convert(merged.clone(), version, &v)?;
        let pruned_v = convert(pruned, &pruned_at, &v)?;
        let kept = fields(&pruned_v, &v);
        let gone: Vec<Path> = fields(&merged_v, &v)
            .into_iter()
            .filter(|p| !kept.contains(p) && !managed[&v].contains(p))
            .collect();
        pruned = remove_paths(merged_v, gone.iter());
        pruned_at = v;
    }

    // Only what the manager applied last time goes.
    let pruned_last = convert(pruned, &pruned_at, &last)?;
    let kept = fields(&pruned_last, &last);
    let gone: Vec<Path> = fields(&merged_last, &last)
        .into_iter()
        .filter(|p| !kept.contains(p) && prev.fields.contains(p))
        .collect();
    convert(remove_paths(merged_last, gone.iter()), &last, version)
}

/// `obj` without `paths`: a keyed list item (`k:{..}` / `v:..` with its `.`) goes whole,
/// before its fields (removing its key fields first would leave an item nobody can
/// find); then fields, deepest first, each with the containers it leaves empty.
fn remove_paths<'a>(mut obj: Value, paths: impl Iterator<Item = &'a Path>) -> Value {
    let mut paths: Vec<&Path> = paths.collect();
    let items: Vec<Path> = paths
        .iter()
        .filter(|p| {
            p.last().is_some_and(|e| e == ".")
                && p.len() >= 2
                && (p[p.len() - 2].starts_with("k:") || p[p.len() - 2].starts_with("v:"))
        })
        .map(|p| p[..p.len() - 1].to_vec())
        .collect();
    for item in &items {
        remove_at(&mut obj, item);
    }
    paths.retain(|p| !items.iter().any(|i| p.starts_with(i)));
    // Deepest first, so removing a parent never hides a child still to remove.
    paths.sort_by_key(|p| std::cmp::Reverse(p.len()));
    for p in paths
        .into_iter()
        .filter(|p| p.last().is_some_and(|e| e != "."))
    {
        if value_at(&obj, p).is_some() {
            remove_at(&mut obj, p);
            prune_empty_parents(&mut obj, p);
        }
    }
    obj
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
                entry: e.clone(),
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
    use std::sync::Arc;

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

    /// The example Gear's two versions: v1's `size` is v2's (stored) `diameter`.
    fn gears() -> (Arc<ApiResource>, Arc<ApiResource>) {
        let catalog = crate::catalog::Catalog::from_definitions(crate::generated::CATALOG)
            .expect("the compiled-in catalog loads");
        let v = |version| {
            catalog
                .get("example.dev", version, "gears")
                .expect("Gear is served in v1 and v2")
        };
        (v("v1"), v("v2"))
    }

    fn gear(version: &str, spec: Value) -> Value {
        json!({ "apiVersion": format!("example.dev/{version}"), "kind": "Gear", "metadata": { "name": "g", "namespace": "default" }, "spec": spec })
    }

    fn entry<'a>(obj: &'a Value, manager: &str) -> &'a Value {
        obj["metadata"]["managedFields"]
            .as_array()
            .and_then(|es| es.iter().find(|e| e["manager"] == manager))
            .unwrap_or_else(|| panic!("no entry of {manager}: {obj}"))
    }

    #[test]
    fn a_renamed_field_owned_in_another_version_conflicts() {
        let (v1, v2) = gears();
        let family = v2.versions.clone().unwrap();
        let a = gear("v1", json!({ "teeth": 12, "size": 40 }));
        let live_v1 = apply(None, &a, &v1, "mgr-a", false, None, "t0").unwrap();
        let live = family.convert(live_v1, "example.dev/v2").unwrap();
        assert_eq!(live["spec"]["diameter"], 40);

        // A v2 applier changing the diameter meets the v1 owner of its size.
        let b = gear("v2", json!({ "diameter": 50 }));
        let err = apply(Some(&live), &b, &v2, "mgr-b", false, None, "t1").unwrap_err();
        assert_eq!(err.code, 409);
        assert_eq!(
            err.message,
            "Apply failed with 1 conflict: conflict with \"mgr-a\": .spec.size"
        );

        // The same value is shared ownership.
        let same = gear("v2", json!({ "diameter": 40 }));
        let shared = apply(Some(&live), &same, &v2, "mgr-b", false, None, "t1").unwrap();
        assert_eq!(
            entry(&shared, "mgr-a")["fieldsV1"]["f:spec"],
            json!({ "f:teeth": {}, "f:size": {} })
        );

        // Forced, the size is no longer the v1 applier's; its entry stays in v1.
        let forced = apply(Some(&live), &b, &v2, "mgr-b", true, None, "t2").unwrap();
        assert_eq!(forced["spec"]["diameter"], 50);
        let a_entry = entry(&forced, "mgr-a");
        assert_eq!(a_entry["apiVersion"], "example.dev/v1");
        assert_eq!(a_entry["fieldsV1"], json!({ "f:spec": { "f:teeth": {} } }));
        let b_entry = entry(&forced, "mgr-b");
        assert_eq!(b_entry["apiVersion"], "example.dev/v2");
        assert_eq!(
            b_entry["fieldsV1"],
            json!({ "f:spec": { "f:diameter": {} } })
        );

        // Unrelated fields do not conflict.
        let other = gear("v2", json!({ "material": "brass" }));
        let fine = apply(Some(&live), &other, &v2, "mgr-c", false, None, "t3").unwrap();
        assert_eq!(fine["spec"]["material"], "brass");
    }

    #[test]
    fn a_field_dropped_by_its_applier_in_another_version_goes_unless_owned() {
        let (v1, v2) = gears();
        let family = v2.versions.clone().unwrap();
        let a = gear("v1", json!({ "teeth": 12, "size": 40 }));
        let live_v1 = apply(None, &a, &v1, "mgr-a", false, None, "t0").unwrap();
        let live = family.convert(live_v1, "example.dev/v2").unwrap();

        // The v1 applier now applies v2 without the size: the diameter goes, the entry
        // moves to v2.
        let again = gear("v2", json!({ "teeth": 12 }));
        let after = apply(Some(&live), &again, &v2, "mgr-a", false, None, "t1").unwrap();
        assert!(after["spec"].get("diameter").is_none(), "{after}");
        assert_eq!(after["spec"]["teeth"], 12);
        let a_entry = entry(&after, "mgr-a");
        assert_eq!(a_entry["apiVersion"], "example.dev/v2");
        assert_eq!(a_entry["fieldsV1"], json!({ "f:spec": { "f:teeth": {} } }));

        // Another manager owning the diameter keeps it.
        let b = gear("v2", json!({ "diameter": 40 }));
        let shared = apply(Some(&live), &b, &v2, "mgr-b", false, None, "t1").unwrap();
        let after = apply(Some(&shared), &again, &v2, "mgr-a", false, None, "t2").unwrap();
        assert_eq!(after["spec"]["diameter"], 40, "{after}");
        assert_eq!(
            entry(&after, "mgr-b")["fieldsV1"],
            json!({ "f:spec": { "f:diameter": {} } })
        );
    }

    #[test]
    fn a_field_a_conversion_hook_maps_conflicts_across_versions() {
        let catalog = crate::catalog::Catalog::from_definitions(crate::generated::CATALOG)
            .expect("the compiled-in catalog loads");
        let hpa = |v| {
            catalog
                .get("autoscaling", v, "horizontalpodautoscalers")
                .expect("HPA is served in v1 and v2")
        };
        let (v1, v2) = (hpa("v1"), hpa("v2"));
        let family = v2.versions.clone().unwrap();
        let meta = json!({ "name": "h", "namespace": "default" });
        let target = json!({ "apiVersion": "apps/v1", "kind": "Deployment", "name": "d" });
        let a = json!({ "apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler", "metadata": meta,
            "spec": { "scaleTargetRef": target, "maxReplicas": 5, "targetCPUUtilizationPercentage": 50 } });
        let live_v1 = apply(None, &a, &v1, "mgr-a", false, None, "t0").unwrap();
        let live = family.convert(live_v1, "autoscaling/v2").unwrap();

        // v2's cpu metric is v1's targetCPUUtilizationPercentage (a hook maps them).
        let b = json!({ "apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler", "metadata": meta,
            "spec": { "metrics": [{ "type": "Resource", "resource": { "name": "cpu", "target": { "type": "Utilization", "averageUtilization": 70 } } }] } });
        let err = apply(Some(&live), &b, &v2, "mgr-b", false, None, "t1").unwrap_err();
        assert_eq!(
            err.message,
            "Apply failed with 1 conflict: conflict with \"mgr-a\": .spec.targetCPUUtilizationPercentage"
        );
        // A field of its own is not.
        let c = json!({ "apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler", "metadata": meta,
            "spec": { "minReplicas": 2 } });
        apply(Some(&live), &c, &v2, "mgr-c", false, None, "t1").unwrap();
    }
}
