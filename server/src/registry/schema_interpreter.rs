//! The interpreting validator: walks the schema as JSON for every object. The server
//! validates with [`Validator`](super::validator::Validator), compiled from the same
//! schema once; this walker is kept as its reference, for the differential test and the
//! hot-path bench (feature `interpreted-validation`), never for serving.

use serde_json::Value;

use super::schema::{is_embedded_resource, join, list_map_keys, type_name};
use crate::api::StatusCause;

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

/// The compiled validator against this walker: the same causes (field, reason, message,
/// order) for every compiled-in kind's schema, the fuzz corpus' CRDs, and generated
/// schemas, over the fuzz corpus' bodies, objects shaped from each schema and those
/// objects broken field by field.
#[cfg(test)]
mod differential {
    use std::path::PathBuf;

    use proptest::prelude::*;
    use serde::Deserialize;
    use serde_json::{json, Value};

    use crate::registry::validator::Validator;

    fn corpus(dir: &str) -> Vec<(String, String)> {
        let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../tests/fuzz/corpus")
            .join(dir);
        let mut found: Vec<(String, String)> = std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
            .map(|e| e.expect("a corpus entry").path())
            .filter_map(|p| {
                let text = std::fs::read_to_string(&p).ok()?; // protobuf bodies are not text
                Some((p.file_name()?.to_string_lossy().into_owned(), text))
            })
            .collect();
        found.sort();
        found
    }

    /// The fuzz corpus' request bodies (first line: resource and content type).
    fn bodies() -> Vec<Value> {
        let found: Vec<Value> = corpus("bodies")
            .into_iter()
            .filter_map(|(_, text)| {
                let (_, body) = text.split_once('\n')?;
                serde_yaml::from_str::<Value>(body).ok()
            })
            .collect();
        assert!(
            found.len() >= 15,
            "the corpus' bodies are read: {}",
            found.len()
        );
        found
    }

    /// An object of the schema's shape: each property present, each list of two equal
    /// items (so set and map lists hold duplicates), each enum at its first value.
    fn shaped(schema: &Value, depth: usize) -> Value {
        if depth > 16 {
            return json!({});
        }
        if let Some(first) = schema.get("enum").and_then(|e| e.get(0)) {
            return first.clone();
        }
        if schema.get("x-kubernetes-int-or-string") == Some(&json!(true)) {
            return json!("25%");
        }
        match schema.get("type").and_then(Value::as_str) {
            Some("string") => match schema.get("format").and_then(Value::as_str) {
                Some("date-time") => json!("2026-12-04T00:00:00Z"),
                Some("byte") => json!("aGVsbG8="),
                _ => json!("x"),
            },
            Some("integer") => json!(1),
            Some("number") => json!(1.5),
            Some("boolean") => json!(true),
            Some("array") => {
                let item = schema
                    .get("items")
                    .map(|i| shaped(i, depth + 1))
                    .unwrap_or(json!("x"));
                json!([item.clone(), item])
            }
            _ => {
                let mut obj = serde_json::Map::new();
                if let Some(props) = schema.get("properties").and_then(Value::as_object) {
                    for (k, s) in props {
                        obj.insert(k.clone(), shaped(s, depth + 1));
                    }
                } else if let Some(ap) =
                    schema.get("additionalProperties").filter(|a| a.is_object())
                {
                    obj.insert("key".into(), shaped(ap, depth + 1));
                }
                Value::Object(obj)
            }
        }
    }

    /// JSON pointers of every value in `v` (the root's own fields first).
    fn pointers(v: &Value, at: String, out: &mut Vec<String>) {
        match v {
            Value::Object(map) => {
                for (k, c) in map {
                    let p = format!("{at}/{}", k.replace('~', "~0").replace('/', "~1"));
                    out.push(p.clone());
                    pointers(c, p, out);
                }
            }
            Value::Array(items) => {
                for (i, c) in items.iter().enumerate() {
                    let p = format!("{at}/{i}");
                    out.push(p.clone());
                    pointers(c, p, out);
                }
            }
            _ => {}
        }
    }

    /// Values of every JSON type, and strings no pattern, format or length admits.
    fn bad_values() -> Vec<Value> {
        vec![
            Value::Null,
            json!(-1),
            json!(0.25),
            json!(true),
            json!("not valid!"),
            json!("a".repeat(300)),
            json!([]),
            json!([{"name": "x"}, {"name": "x"}]),
            json!({}),
        ]
    }

    fn assert_same(schema: &Value, compiled: &Validator, obj: &Value, what: &str) {
        let want = super::validate(obj, schema);
        let got = compiled.validate(obj);
        assert_eq!(got, want, "{what}: {obj}");
    }

    /// Checks `schema` against the bodies, its shaped object, and that object broken at
    /// (at most) `breaks` of its values, each in every bad way.
    fn check_schema(schema: &Value, bodies: &[Value], breaks: usize, what: &str) -> usize {
        let compiled = Validator::compile(schema);
        let mut checked = 0;
        for body in bodies {
            assert_same(schema, &compiled, body, what);
            checked += 1;
        }
        // The object fields first, as clients write them.
        let mut obj = json!({"apiVersion": "v1", "kind": "Thing", "metadata": {"name": "a"}});
        if let (Some(map), Value::Object(fields)) = (obj.as_object_mut(), shaped(schema, 0)) {
            map.extend(fields);
        }
        assert_same(schema, &compiled, &obj, what);
        let mut all = Vec::new();
        pointers(&obj, String::new(), &mut all);
        let step = all.len().div_ceil(breaks.max(1)).max(1);
        let last = all.last().cloned().unwrap_or_default();
        for at in all.iter().step_by(step) {
            for bad in bad_values() {
                let mut broken = obj.clone();
                *broken
                    .pointer_mut(at)
                    .expect("the pointer was taken from the object") = bad.clone();
                assert_same(schema, &compiled, &broken, what);
                // Broken in two places: causes from two subtrees, in the object's order.
                if let Some(v) = broken.pointer_mut(&last) {
                    *v = bad;
                }
                assert_same(schema, &compiled, &broken, what);
                checked += 2;
            }
        }
        checked
    }

    #[test]
    fn compiled_in_kinds_agree_with_the_walker() {
        let catalog = crate::catalog::Catalog::from_definitions(crate::generated::CATALOG)
            .expect("the catalog loads");
        let bodies = bodies();
        let mut kinds = 0;
        let mut checked = 0;
        for res in catalog.all() {
            for res in std::iter::once(&*res).chain(&res.subresource_kinds) {
                let what = format!("{}/{} {}", res.def.group, res.def.version, res.def.kind);
                checked += check_schema(res.schema(), &bodies, 20, &what);
                kinds += 1;
            }
        }
        assert!(kinds >= 72, "every compiled-in kind is checked: {kinds}");
        assert!(checked > 10_000, "{checked} objects checked");
    }

    #[test]
    fn custom_resource_schemas_agree_with_the_walker() {
        let bodies = bodies();
        let mut versions = 0;
        for (name, text) in corpus("crds") {
            // The definition, then objects of its kind.
            let mut docs = serde_yaml::Deserializer::from_str(&text)
                .map(|d| Value::deserialize(d).unwrap_or_else(|e| panic!("{name} is YAML: {e}")));
            let crd = docs.next().expect("a corpus CRD has a document");
            let objects: Vec<Value> = docs.chain(bodies.iter().cloned()).collect();
            let defs =
                crate::apiextensions::definitions(&crd).unwrap_or_else(|e| panic!("{name}: {e:?}"));
            for def in defs {
                let res = crate::catalog::ApiResource::new(def)
                    .unwrap_or_else(|e| panic!("{name} is served: {e}"));
                check_schema(res.schema(), &objects, 200, &name);
                versions += 1;
            }
        }
        assert!(versions >= 7, "every corpus CRD is checked: {versions}");
    }

    /// A schema of the keywords the validators read, some with values of the wrong type.
    fn arb_schema() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(json!({"type": "string", "pattern": "^[a-z]+$", "maxLength": 3})),
            Just(json!({"type": "string", "minLength": 2, "format": "ipv4"})),
            Just(json!({"type": "string", "format": "date-time", "pattern": "(unclosed"})),
            Just(json!({"type": "integer", "minimum": 0, "exclusiveMaximum": true, "maximum": 5})),
            Just(
                json!({"type": "number", "multipleOf": 0.5, "minimum": 1, "exclusiveMinimum": true})
            ),
            Just(json!({"enum": ["a", 1, null, {"x": 1}]})),
            Just(
                json!({"x-kubernetes-int-or-string": true, "anyOf": [{"type": "integer"}, {"type": "string"}]})
            ),
            Just(json!({"type": "boolean", "nullable": true})),
            Just(json!({"type": ["string"], "minLength": "2"})),
            Just(json!({"type": "null"})),
            Just(json!({})),
            Just(json!(true)),
        ];
        leaf.prop_recursive(4, 32, 4, |inner| {
            prop_oneof![
                (
                    prop::collection::btree_map(prop_oneof![Just("a"), Just("b"), Just("kind"), Just("metadata"), Just("apiVersion")], inner.clone(), 0..4),
                    prop::collection::vec(prop_oneof![Just("a"), Just("b"), Just("c"), Just("kind")], 0..3),
                    any::<(bool, bool, bool)>(),
                    prop::option::of(inner.clone()),
                )
                    .prop_map(|(props, required, (embedded, nullable, counted), ap)| {
                        let mut s = json!({"type": "object", "properties": props, "required": required,
                            "x-kubernetes-embedded-resource": embedded, "nullable": nullable});
                        if counted {
                            s["minProperties"] = json!(1);
                            s["maxProperties"] = json!(2);
                        }
                        if let Some(ap) = ap {
                            s.as_object_mut().expect("an object").remove("properties");
                            s["additionalProperties"] = ap;
                        }
                        s
                    }),
                (inner.clone(), 0..3usize, any::<bool>()).prop_map(|(items, kind, bounded)| {
                    let mut s = json!({"type": "array", "items": items});
                    match kind {
                        1 => s["x-kubernetes-list-type"] = json!("set"),
                        2 => {
                            s["x-kubernetes-list-type"] = json!("map");
                            s["x-kubernetes-list-map-keys"] = json!(["a", "b"]);
                        }
                        _ => {}
                    }
                    if bounded {
                        s["minItems"] = json!(1);
                        s["maxItems"] = json!(2);
                    }
                    s
                }),
                prop::collection::vec(inner.clone(), 1..3).prop_map(|all| json!({"allOf": all})),
                prop::collection::vec(inner.clone(), 1..3).prop_map(|any| json!({"anyOf": any})),
                prop::collection::vec(inner.clone(), 1..3).prop_map(|one| json!({"oneOf": one})),
                inner.prop_map(|not| json!({"not": not})),
            ]
        })
    }

    /// Any JSON value, with the keys the generated schemas declare.
    fn arb_value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::from),
            (-3i64..8).prop_map(Value::from),
            prop_oneof![Just(0.5), Just(1.25), Just(2.0)].prop_map(Value::from),
            prop_oneof![
                Just("a"),
                Just("abcd"),
                Just("1.2.3.4"),
                Just("2026-12-04T00:00:00Z"),
                Just(""),
                Just("X!")
            ]
            .prop_map(Value::from),
        ];
        leaf.prop_recursive(4, 32, 4, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(Value::from),
                prop::collection::btree_map(
                    prop_oneof![
                        Just("a"),
                        Just("b"),
                        Just("c"),
                        Just("kind"),
                        Just("apiVersion"),
                        Just("metadata")
                    ],
                    inner,
                    0..5
                )
                .prop_map(|m| Value::Object(
                    m.into_iter().map(|(k, v)| (k.to_string(), v)).collect()
                )),
            ]
        })
    }

    /// An object schema whose fields `a`, `b`, `c` are generated schemas.
    fn arb_root_schema() -> impl Strategy<Value = Value> {
        (arb_schema(), arb_schema(), arb_schema(), any::<bool>()).prop_map(|(a, b, c, closed)| {
            let mut s = json!({"type": "object", "properties": {"a": a, "b": b, "c": c}});
            if closed {
                s["required"] = json!(["a", "kind"]);
            }
            s
        })
    }

    /// An object of generated fields, the object fields among them in any order.
    fn arb_object() -> impl Strategy<Value = Value> {
        const KEYS: [&str; 7] = ["a", "b", "c", "apiVersion", "kind", "metadata", "d"];
        prop::collection::vec((0..KEYS.len(), arb_value()), 0..7).prop_map(|members| {
            let mut map = serde_json::Map::new();
            for (k, v) in members {
                map.insert(KEYS[k].to_string(), v);
            }
            Value::Object(map)
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]
        #[test]
        fn generated_schemas_agree_with_the_walker(schema in arb_schema(), obj in arb_value()) {
            let compiled = Validator::compile(&schema);
            prop_assert_eq!(compiled.validate(&obj), super::validate(&obj, &schema));
        }

        #[test]
        fn generated_objects_agree_with_the_walker(schema in arb_root_schema(), obj in arb_object()) {
            let compiled = Validator::compile(&schema);
            prop_assert_eq!(compiled.validate(&obj), super::validate(&obj, &schema));
        }
    }
}
