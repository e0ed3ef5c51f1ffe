//! Structural-schema work on untyped objects: find unknown fields (pruning), apply
//! defaults, and validate types, required fields, enums, bounds and patterns.

use serde_json::Value;

use crate::api::StatusCause;

/// The key fields of a `x-kubernetes-list-type: map` list.
pub fn list_map_keys(schema: &Value) -> Vec<&str> {
    schema
        .get("x-kubernetes-list-map-keys")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect()
}

/// The schema of field `key` of an object schema: a declared property, else the
/// `additionalProperties` schema, else `Null` (unknown).
pub fn child_schema<'a>(schema: &'a Value, key: &str) -> &'a Value {
    schema
        .get("properties")
        .and_then(|p| p.get(key))
        .or_else(|| schema.get("additionalProperties").filter(|a| a.is_object()))
        .unwrap_or(&Value::Null)
}

/// Removes fields the schema does not declare; returns their paths (`spec.bogus`).
pub fn prune(obj: &mut Value, schema: &Value) -> Vec<String> {
    let mut unknown = Vec::new();
    if let Some(map) = obj.as_object_mut() {
        if let Some(Value::Object(meta)) = map.get_mut("metadata") {
            meta.retain(|k, _| {
                let keep = crate::api::meta::is_meta_field(k);
                if !keep {
                    unknown.push(format!("metadata.{k}"));
                }
                keep
            });
        }
        let props = schema.get("properties").and_then(Value::as_object);
        map.retain(|k, v| {
            if ["apiVersion", "kind", "metadata"].contains(&k.as_str()) {
                return true;
            }
            match props.and_then(|p| p.get(k)) {
                Some(s) => {
                    prune_value(v, s, k, &mut unknown);
                    true
                }
                None if preserves_unknown(schema) => true,
                None => {
                    unknown.push(k.clone());
                    false
                }
            }
        });
    }
    unknown
}

fn preserves_unknown(schema: &Value) -> bool {
    schema
        .get("x-kubernetes-preserve-unknown-fields")
        .and_then(Value::as_bool)
        == Some(true)
}

fn prune_value(v: &mut Value, schema: &Value, path: &str, unknown: &mut Vec<String>) {
    match v {
        Value::Object(map) => {
            if let Some(props) = schema.get("properties").and_then(Value::as_object) {
                let keep_unknown = preserves_unknown(schema);
                map.retain(|k, child| match props.get(k) {
                    Some(s) => {
                        prune_value(child, s, &format!("{path}.{k}"), unknown);
                        true
                    }
                    None if keep_unknown => true,
                    None => {
                        unknown.push(format!("{path}.{k}"));
                        false
                    }
                });
            } else if let Some(ap) = schema.get("additionalProperties").filter(|a| a.is_object()) {
                for (k, child) in map.iter_mut() {
                    prune_value(child, ap, &format!("{path}.{k}"), unknown);
                }
            }
        }
        Value::Array(items) => {
            if let Some(is) = schema.get("items") {
                for (i, child) in items.iter_mut().enumerate() {
                    prune_value(child, is, &format!("{path}[{i}]"), unknown);
                }
            }
        }
        _ => {}
    }
}

/// Fills in `default:` values for absent properties, recursively (as CRDs default). A null
/// the schema does not allow counts as absent (defaulted, else dropped): clients such as
/// kube-rs send unset optional fields as nulls.
pub fn apply_defaults(v: &mut Value, schema: &Value) {
    match v {
        Value::Object(map) => {
            if let Some(props) = schema.get("properties").and_then(Value::as_object) {
                for (k, s) in props {
                    if map.get(k).is_some_and(|c| c.is_null())
                        && s.get("nullable") != Some(&Value::Bool(true))
                    {
                        map.remove(k);
                    }
                    if let (false, Some(d)) = (map.contains_key(k), s.get("default")) {
                        map.insert(k.clone(), d.clone());
                    }
                    if let Some(child) = map.get_mut(k) {
                        apply_defaults(child, s);
                    }
                }
            } else if let Some(ap) = schema.get("additionalProperties").filter(|a| a.is_object()) {
                for child in map.values_mut() {
                    apply_defaults(child, ap);
                }
            }
        }
        Value::Array(items) => {
            if let Some(is) = schema.get("items") {
                for child in items {
                    apply_defaults(child, is);
                }
            }
        }
        _ => {}
    }
}

/// Validates the object's own fields (not metadata) against the schema.
pub fn validate(obj: &Value, schema: &Value) -> Vec<StatusCause> {
    let mut causes = Vec::new();
    let mut top = obj.as_object().cloned().unwrap_or_default();
    for k in ["apiVersion", "kind", "metadata"] {
        top.remove(k);
    }
    validate_value(&Value::Object(top), schema, "", &mut causes);
    causes
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

fn validate_value(v: &Value, schema: &Value, path: &str, causes: &mut Vec<StatusCause>) {
    if v.is_null() {
        if schema.get("nullable").and_then(Value::as_bool) != Some(true) && !path.is_empty() {
            causes.push(StatusCause::invalid(
                path,
                "null",
                &format!(
                    "{path} in body must be of type {}: \"null\"",
                    schema
                        .get("type")
                        .and_then(Value::as_str)
                        .unwrap_or("object")
                ),
            ));
        }
        return;
    }
    if schema
        .get("x-kubernetes-int-or-string")
        .and_then(Value::as_bool)
        == Some(true)
    {
        if !matches!(type_name(v), "integer" | "string") {
            causes.push(StatusCause::invalid(
                path,
                &v.to_string(),
                &format!(
                    "{path} in body must be of type integer or string: \"{}\"",
                    type_name(v)
                ),
            ));
        }
        return;
    }
    let Some(expected) = schema.get("type").and_then(Value::as_str) else {
        return;
    };
    let actual = type_name(v);
    let ok = actual == expected || (expected == "number" && actual == "integer");
    if !ok {
        causes.push(StatusCause::invalid(
            path,
            &short(v),
            &format!(
                "{} in body must be of type {expected}: \"{actual}\"",
                display_path(path)
            ),
        ));
        return;
    }
    if let Some(values) = schema.get("enum").and_then(Value::as_array) {
        if !values.contains(v) {
            let list: Vec<String> = values.iter().map(|x| x.to_string()).collect();
            causes.push(StatusCause {
                reason: "FieldValueNotSupported".into(),
                message: format!(
                    "Unsupported value: {}: supported values: {}",
                    short_json(v),
                    list.join(", ")
                ),
                field: path.into(),
            });
        }
    }
    if let Some(n) = v.as_f64() {
        if let Some(min) = schema.get("minimum").and_then(Value::as_f64) {
            if n < min {
                causes.push(StatusCause::invalid(
                    path,
                    &v.to_string(),
                    &format!(
                        "{} in body should be greater than or equal to {min}",
                        display_path(path)
                    ),
                ));
            }
        }
        if let Some(max) = schema.get("maximum").and_then(Value::as_f64) {
            if n > max {
                causes.push(StatusCause::invalid(
                    path,
                    &v.to_string(),
                    &format!(
                        "{} in body should be less than or equal to {max}",
                        display_path(path)
                    ),
                ));
            }
        }
    }
    if let (Some(s), Some(p)) = (v.as_str(), schema.get("pattern").and_then(Value::as_str)) {
        match regex::Regex::new(p) {
            Ok(re) if !re.is_match(s) => causes.push(StatusCause::invalid(
                path,
                s,
                &format!("{} in body should match '{p}'", display_path(path)),
            )),
            _ => {}
        }
    }
    match v {
        Value::Object(map) => {
            for r in schema
                .get("required")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
            {
                if !map.contains_key(r) {
                    causes.push(StatusCause::required(&join(path, r), ""));
                }
            }
            let props = schema.get("properties").and_then(Value::as_object);
            let ap = schema.get("additionalProperties").filter(|a| a.is_object());
            for (k, child) in map {
                if let Some(s) = props.and_then(|p| p.get(k)).or(ap) {
                    validate_value(child, s, &join(path, k), causes);
                }
            }
        }
        Value::Array(items) => {
            if let Some(is) = schema.get("items") {
                for (i, child) in items.iter().enumerate() {
                    validate_value(child, is, &format!("{path}[{i}]"), causes);
                }
            }
            check_list_uniqueness(items, schema, path, causes);
        }
        _ => {}
    }
}

/// `set` lists hold distinct values and `map` lists distinct keys.
fn check_list_uniqueness(
    items: &[Value],
    schema: &Value,
    path: &str,
    causes: &mut Vec<StatusCause>,
) {
    match schema.get("x-kubernetes-list-type").and_then(Value::as_str) {
        Some("set") => {
            for (i, v) in items.iter().enumerate() {
                if items[..i].contains(v) {
                    causes.push(StatusCause::duplicate(
                        &format!("{path}[{i}]"),
                        &v.to_string(),
                    ));
                }
            }
        }
        Some("map") => {
            let keys = list_map_keys(schema);
            let key_of = |v: &Value| -> Vec<Value> {
                keys.iter()
                    .map(|k| v.get(*k).cloned().unwrap_or(Value::Null))
                    .collect()
            };
            for (i, v) in items.iter().enumerate() {
                let k = key_of(v);
                if items[..i].iter().any(|o| key_of(o) == k) {
                    let shown: Vec<String> = keys
                        .iter()
                        .zip(&k)
                        .map(|(n, v)| format!("{n:?}:{v}"))
                        .collect();
                    causes.push(StatusCause::duplicate(
                        &format!("{path}[{i}]"),
                        &format!("map[string]interface {{}}{{{}}}", shown.join(", ")),
                    ));
                }
            }
        }
        _ => {}
    }
}

fn display_path(path: &str) -> &str {
    if path.is_empty() {
        "body"
    } else {
        path
    }
}

fn short(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => type_name(other).to_string(),
    }
}

fn short_json(v: &Value) -> String {
    v.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema() -> Value {
        json!({"type": "object", "required": ["spec"], "properties": {"spec": {"type": "object", "required": ["color"], "properties": {
            "color": {"type": "string", "enum": ["red", "blue"]},
            "replicas": {"type": "integer", "minimum": 0, "default": 1},
            "any": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}
        }}}})
    }

    #[test]
    fn prunes_unknown_fields_but_keeps_preserved_ones() {
        let mut obj = json!({"apiVersion": "v1", "kind": "X", "metadata": {"name": "a", "bogus": 1}, "spec": {"color": "red", "extra": 1, "any": {"free": 2}}, "top": 1});
        let mut unknown = prune(&mut obj, &schema());
        unknown.sort();
        assert_eq!(unknown, vec!["metadata.bogus", "spec.extra", "top"]);
        assert_eq!(obj["spec"]["any"]["free"], 2);
    }

    #[test]
    fn validates_and_defaults() {
        let mut obj = json!({"spec": {"color": "pink", "replicas": -1}});
        let causes = validate(&obj, &schema());
        let fields: Vec<&str> = causes.iter().map(|c| c.field.as_str()).collect();
        assert_eq!(fields, vec!["spec.color", "spec.replicas"]);
        let mut ok = json!({"spec": {"color": "red"}});
        apply_defaults(&mut ok, &schema());
        assert_eq!(ok["spec"]["replicas"], 1);
        assert!(validate(&ok, &schema()).is_empty());
        obj["spec"] = json!("x");
        assert_eq!(validate(&obj, &schema())[0].field, "spec");
    }
}
