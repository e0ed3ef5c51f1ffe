//! Structural-schema work on untyped objects: find unknown fields (pruning) and apply
//! defaults, walking the schema as JSON; helpers the other schema walkers share.
//! Validation is compiled from the schema once: [`super::validator`].

use serde_json::Value;

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
                // An embedded object carries its own type and object metadata.
                let embedded = is_embedded_resource(schema);
                map.retain(|k, child| match props.get(k) {
                    Some(s) => {
                        prune_value(child, s, &format!("{path}.{k}"), unknown);
                        true
                    }
                    None if keep_unknown => true,
                    None if embedded
                        && ["apiVersion", "kind", "metadata"].contains(&k.as_str()) =>
                    {
                        true
                    }
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

/// The OpenAPI type of a JSON value, as validation messages name it.
pub(crate) fn type_name(v: &Value) -> &'static str {
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

/// `path.key`, or `key` at the top.
pub(crate) fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

/// Whether the schema marks an embedded object (its own `apiVersion`, `kind`, `metadata`).
pub(crate) fn is_embedded_resource(schema: &Value) -> bool {
    schema
        .get("x-kubernetes-embedded-resource")
        .and_then(Value::as_bool)
        == Some(true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::StatusCause;
    use serde_json::json;

    fn validate(obj: &Value, schema: &Value) -> Vec<StatusCause> {
        crate::registry::validator::Validator::compile(schema).validate(obj)
    }

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
