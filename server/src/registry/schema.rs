//! Structural-schema work on untyped objects: find unknown fields (pruning), apply
//! defaults, and validate types, required fields, enums, bounds, formats, patterns and
//! compositions (`allOf`, `anyOf`, `oneOf`, `not`).

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
    let int_or_string = schema
        .get("x-kubernetes-int-or-string")
        .and_then(Value::as_bool)
        == Some(true);
    if int_or_string {
        if !matches!(type_name(v), "integer" | "string") {
            causes.push(StatusCause::invalid(
                path,
                &v.to_string(),
                &format!(
                    "{path} in body must be of type integer or string: \"{}\"",
                    type_name(v)
                ),
            ));
            return;
        }
    } else if let Some(expected) = schema.get("type").and_then(Value::as_str) {
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
    check_bounds(v, schema, path, causes);
    check_format(v, schema, path, causes);
    check_compositions(v, schema, path, causes);
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
            if is_embedded_resource(schema) {
                for k in ["apiVersion", "kind"] {
                    let name = map.get(k).and_then(Value::as_str);
                    if name.is_none_or(str::is_empty) {
                        causes.push(StatusCause::required(&join(path, k), "must not be empty"));
                    }
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

fn is_embedded_resource(schema: &Value) -> bool {
    schema
        .get("x-kubernetes-embedded-resource")
        .and_then(Value::as_bool)
        == Some(true)
}

/// `minimum`/`maximum` (and their exclusive forms), `multipleOf`, `pattern`, and the
/// length and count bounds, worded as kube-apiserver words them.
fn check_bounds(v: &Value, schema: &Value, path: &str, causes: &mut Vec<StatusCause>) {
    let shown = display_path(path);
    let bound = |k: &str| schema.get(k).and_then(Value::as_f64);
    let count = |k: &str| schema.get(k).and_then(Value::as_u64);
    let flag = |k: &str| schema.get(k).and_then(Value::as_bool) == Some(true);
    let invalid =
        |detail: String| StatusCause::invalid_value(path, v, &format!("{shown} in body {detail}"));
    if let Some(n) = v.as_f64() {
        match bound("minimum") {
            Some(min) if flag("exclusiveMinimum") && n <= min => {
                causes.push(invalid(format!("should be greater than {min}")))
            }
            Some(min) if n < min => {
                causes.push(invalid(format!("should be greater than or equal to {min}")))
            }
            _ => {}
        }
        match bound("maximum") {
            Some(max) if flag("exclusiveMaximum") && n >= max => {
                causes.push(invalid(format!("should be less than {max}")))
            }
            Some(max) if n > max => {
                causes.push(invalid(format!("should be less than or equal to {max}")))
            }
            _ => {}
        }
        if let Some(m) = bound("multipleOf").filter(|m| *m > 0.0) {
            let q = n / m;
            if (q - q.round()).abs() > 1e-9 {
                causes.push(invalid(format!("should be a multiple of {m}")));
            }
        }
    }
    match v {
        Value::String(s) => {
            let chars = s.chars().count() as u64;
            if let Some(min) = count("minLength").filter(|min| chars < *min) {
                causes.push(invalid(format!("should be at least {min} chars long")));
            }
            if let Some(p) = schema.get("pattern").and_then(Value::as_str) {
                if regex::Regex::new(p).is_ok_and(|re| !re.is_match(s)) {
                    causes.push(invalid(format!("should match '{p}'")));
                }
            }
            if let Some(max) = count("maxLength").filter(|max| chars > *max) {
                causes.push(StatusCause::too_long(
                    path,
                    &format!("may not be more than {max} bytes"),
                ));
            }
        }
        Value::Array(items) => {
            if let Some(min) = count("minItems").filter(|min| (items.len() as u64) < *min) {
                causes.push(invalid(format!("should have at least {min} items")));
            }
            if let Some(max) = count("maxItems").filter(|max| items.len() as u64 > *max) {
                causes.push(StatusCause::too_many(path, items.len(), max));
            }
        }
        Value::Object(map) => {
            if let Some(min) = count("minProperties").filter(|min| (map.len() as u64) < *min) {
                causes.push(invalid(format!("should have at least {min} properties")));
            }
            if let Some(max) = count("maxProperties").filter(|max| map.len() as u64 > *max) {
                causes.push(StatusCause::too_many(path, map.len(), max));
            }
        }
        _ => {}
    }
}

/// The string formats kube-apiserver checks in custom objects; other formats (and the
/// numeric ones, whose type is checked) are documentation.
fn check_format(v: &Value, schema: &Value, path: &str, causes: &mut Vec<StatusCause>) {
    let (Some(s), Some(format)) = (v.as_str(), schema.get("format").and_then(Value::as_str)) else {
        return;
    };
    let ok = match format {
        "date-time" => chrono::DateTime::parse_from_rfc3339(s).is_ok(),
        "date" => chrono::NaiveDate::parse_from_str(s, "%Y-%m-%d").is_ok(),
        "uuid" => uuid::Uuid::parse_str(s).is_ok() && s.len() == 36,
        "ipv4" => s.parse::<std::net::Ipv4Addr>().is_ok(),
        "ipv6" => s.parse::<std::net::Ipv6Addr>().is_ok(),
        "cidr" => s.split_once('/').is_some_and(|(ip, bits)| {
            let max = match ip.parse::<std::net::IpAddr>() {
                Ok(std::net::IpAddr::V4(_)) => 32,
                Ok(std::net::IpAddr::V6(_)) => 128,
                Err(_) => return false,
            };
            bits.parse::<u8>().is_ok_and(|b| b <= max)
        }),
        "byte" => {
            use base64::Engine;
            base64::engine::general_purpose::STANDARD.decode(s).is_ok()
        }
        "hostname" => codegen::names::is_dns_subdomain(s),
        _ => true,
    };
    if !ok {
        causes.push(StatusCause::invalid(
            path,
            s,
            &format!(
                "{} in body must be of type {format}: {s:?}",
                display_path(path)
            ),
        ));
    }
}

/// `allOf`, `anyOf`, `oneOf` and `not`: value validations that hold (or fail) as a whole.
fn check_compositions(v: &Value, schema: &Value, path: &str, causes: &mut Vec<StatusCause>) {
    let shown = display_path(path);
    let failures = |s: &Value| {
        let mut found = Vec::new();
        validate_value(v, s, path, &mut found);
        found
    };
    let schemas = |k: &str| schema.get(k).and_then(Value::as_array).map(Vec::as_slice);
    let invalid = |detail: &str| StatusCause::invalid_value(path, v, &format!("{shown} {detail}"));
    if let Some(all) = schemas("allOf") {
        let found: Vec<StatusCause> = all.iter().flat_map(failures).collect();
        if !found.is_empty() {
            causes.extend(found);
            causes.push(invalid("must validate all the schemas (allOf)"));
        }
    }
    if let Some(any) = schemas("anyOf") {
        if !any.iter().any(|s| failures(s).is_empty()) {
            causes.push(invalid("in body must validate at least one schema (anyOf)"));
        }
    }
    if let Some(one) = schemas("oneOf") {
        if one.iter().filter(|s| failures(s).is_empty()).count() != 1 {
            causes.push(invalid(
                "in body must validate one and only one schema (oneOf)",
            ));
        }
    }
    if let Some(not) = schema.get("not") {
        if failures(not).is_empty() {
            causes.push(invalid("in body must not validate the schema (not)"));
        }
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

    /// Causes as `field: message`, sorted.
    fn causes(obj: Value, schema: Value) -> Vec<String> {
        let mut found: Vec<String> = validate(&obj, &schema)
            .into_iter()
            .map(|c| format!("{}: {}", c.field, c.message))
            .collect();
        found.sort();
        found
    }

    #[test]
    fn bounds_are_checked_and_worded_as_upstream() {
        let schema = json!({"type": "object", "properties": {
            "name": {"type": "string", "minLength": 2, "maxLength": 4},
            "n": {"type": "number", "minimum": 0, "exclusiveMinimum": true, "maximum": 10, "multipleOf": 0.5},
            "tags": {"type": "array", "maxItems": 1, "minItems": 1, "items": {"type": "string"}},
            "labels": {"type": "object", "maxProperties": 1, "additionalProperties": {"type": "string"}},
            "at": {"type": "string", "format": "date-time"}
        }});
        assert_eq!(
            causes(
                json!({"name": "toolong", "n": 0, "tags": ["a", "b"], "labels": {"a": "1", "b": "2"}, "at": "noon"}),
                schema.clone()
            ),
            [
                "at: Invalid value: \"noon\": at in body must be of type date-time: \"noon\"",
                "labels: Too many: 2: must have at most 1 items",
                "n: Invalid value: 0: n in body should be greater than 0",
                "name: Too long: may not be more than 4 bytes",
                "tags: Too many: 2: must have at most 1 items",
            ]
        );
        assert_eq!(
            causes(json!({"name": "a", "n": 10.25, "tags": []}), schema.clone()),
            [
                "n: Invalid value: 10.25: n in body should be a multiple of 0.5",
                "n: Invalid value: 10.25: n in body should be less than or equal to 10",
                "name: Invalid value: \"a\": name in body should be at least 2 chars long",
                "tags: Invalid value: \"array\": tags in body should have at least 1 items",
            ]
        );
        assert!(causes(
            json!({"name": "ab", "n": 9.5, "tags": ["x"], "at": "2026-12-02T01:00:00Z"}),
            schema
        )
        .is_empty());
    }

    #[test]
    fn compositions_hold_as_a_whole() {
        let schema = json!({"type": "object", "properties": {"spec": {"type": "object",
            "properties": {"a": {"type": "string"}, "b": {"type": "string"}, "port": {"x-kubernetes-int-or-string": true, "anyOf": [{"type": "integer"}, {"type": "string"}], "pattern": "^[0-9]+$"}},
            "oneOf": [{"required": ["a"]}, {"required": ["b"]}],
            "not": {"properties": {"a": {"enum": ["forbidden"]}}}}}});
        assert!(causes(json!({"spec": {"a": "x", "port": 80}}), schema.clone()).is_empty());
        assert_eq!(
            causes(json!({"spec": {"a": "x", "b": "y"}}), schema.clone()),
            ["spec: Invalid value: \"object\": spec in body must validate one and only one schema (oneOf)"]
        );
        assert_eq!(
            causes(json!({"spec": {"a": "forbidden", "port": "http"}}), schema),
            [
                "spec.port: Invalid value: \"http\": spec.port in body should match '^[0-9]+$'",
                "spec: Invalid value: \"object\": spec in body must not validate the schema (not)",
            ]
        );
    }

    #[test]
    fn embedded_resources_keep_their_object_fields_and_need_a_kind() {
        let schema = json!({"type": "object", "properties": {"template": {"type": "object", "x-kubernetes-embedded-resource": true,
            "properties": {"spec": {"type": "object"}}}}});
        let mut obj = json!({"template": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {}, "bogus": 1}});
        assert_eq!(prune(&mut obj, &schema), ["template.bogus"]);
        assert_eq!(obj["template"]["kind"], "Pod");
        assert!(causes(obj, schema.clone()).is_empty());
        assert_eq!(
            causes(json!({"template": {"spec": {}}}), schema),
            [
                "template.apiVersion: Required value: must not be empty",
                "template.kind: Required value: must not be empty"
            ]
        );
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
