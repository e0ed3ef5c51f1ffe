//! The OpenAPI v2 document in gnostic's protobuf form (`openapi.v2.Document`), which
//! kubectl asks for (`application/com.github.proto-openapi.spec.v2@v1.0+protobuf`) when it
//! validates objects on the client, e.g. every item of a `kind: List` file.
//!
//! Converted from the Swagger JSON with a small protobuf writer; field numbers are those of
//! gnostic's `OpenAPIv2.proto`.

use serde_json::Value;

/// A protobuf message being written.
#[derive(Default)]
struct Msg(Vec<u8>);

impl Msg {
    fn varint(&mut self, mut v: u64) {
        while v >= 0x80 {
            self.0.push((v as u8) | 0x80);
            v >>= 7;
        }
        self.0.push(v as u8);
    }

    fn key(&mut self, field: u32, wire: u8) {
        self.varint((u64::from(field) << 3) | u64::from(wire));
    }

    fn bytes(&mut self, field: u32, b: &[u8]) {
        self.key(field, 2);
        self.varint(b.len() as u64);
        self.0.extend_from_slice(b);
    }

    fn string(&mut self, field: u32, s: &str) {
        if !s.is_empty() {
            self.bytes(field, s.as_bytes());
        }
    }

    fn message(&mut self, field: u32, m: Msg) {
        self.bytes(field, &m.0);
    }

    fn boolean(&mut self, field: u32, b: bool) {
        if b {
            self.key(field, 0);
            self.varint(1);
        }
    }

    fn double(&mut self, field: u32, d: f64) {
        self.key(field, 1);
        self.0.extend_from_slice(&d.to_le_bytes());
    }
}

/// `Any { yaml }`: gnostic carries free-form values as YAML text.
fn any(v: &Value) -> Msg {
    let mut m = Msg::default();
    let yaml = serde_yaml::to_string(v).unwrap_or_default();
    m.string(2, yaml.trim_end_matches('\n'));
    m
}

fn named_any(name: &str, v: &Value) -> Msg {
    let mut m = Msg::default();
    m.string(1, name);
    m.message(2, any(v));
    m
}

fn schema(s: &Value) -> Msg {
    let mut m = Msg::default();
    let Some(o) = s.as_object() else { return m };
    let str_of = |k: &str| o.get(k).and_then(Value::as_str).unwrap_or_default();
    m.string(1, str_of("$ref"));
    m.string(2, str_of("format"));
    m.string(3, str_of("title"));
    m.string(4, str_of("description"));
    if let Some(d) = o.get("default") {
        m.message(5, any(d));
    }
    if let Some(x) = o.get("maximum").and_then(Value::as_f64) {
        m.double(7, x);
    }
    if let Some(x) = o.get("minimum").and_then(Value::as_f64) {
        m.double(9, x);
    }
    m.string(13, str_of("pattern"));
    for r in o
        .get("required")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
    {
        m.string(19, r);
    }
    for e in o
        .get("enum")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        m.message(20, any(e));
    }
    match o.get("additionalProperties") {
        Some(Value::Bool(b)) => {
            let mut item = Msg::default();
            item.key(2, 0);
            item.varint(u64::from(*b));
            m.message(21, item);
        }
        Some(ap @ Value::Object(_)) => {
            let mut item = Msg::default();
            item.message(1, schema(ap));
            m.message(21, item);
        }
        _ => {}
    }
    if let Some(t) = o.get("type") {
        let mut item = Msg::default();
        match t {
            Value::String(s) => item.string(1, s),
            Value::Array(a) => a
                .iter()
                .filter_map(Value::as_str)
                .for_each(|s| item.string(1, s)),
            _ => {}
        }
        m.message(22, item);
    }
    if let Some(items) = o.get("items") {
        let mut item = Msg::default();
        match items {
            Value::Array(a) => a.iter().for_each(|s| item.message(1, schema(s))),
            other => item.message(1, schema(other)),
        }
        m.message(23, item);
    }
    for s in o
        .get("allOf")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        m.message(24, schema(s));
    }
    if let Some(props) = o.get("properties").and_then(Value::as_object) {
        let mut p = Msg::default();
        for (name, s) in props {
            p.message(1, named_schema(name, s));
        }
        m.message(25, p);
    }
    m.boolean(27, o.get("readOnly").and_then(Value::as_bool) == Some(true));
    for (k, v) in o.iter().filter(|(k, _)| k.starts_with("x-")) {
        m.message(31, named_any(k, v));
    }
    m
}

fn named_schema(name: &str, s: &Value) -> Msg {
    let mut m = Msg::default();
    m.string(1, name);
    m.message(2, schema(s));
    m
}

/// The Swagger 2.0 JSON document as `openapi.v2.Document` bytes. Paths are left out:
/// kubectl validates objects against the definitions.
pub fn encode(doc: &Value) -> Vec<u8> {
    let mut m = Msg::default();
    m.string(1, doc["swagger"].as_str().unwrap_or("2.0"));
    let mut info = Msg::default();
    info.string(1, doc["info"]["title"].as_str().unwrap_or_default());
    info.string(2, doc["info"]["version"].as_str().unwrap_or_default());
    info.string(3, doc["info"]["description"].as_str().unwrap_or_default());
    m.message(2, info);
    let mut defs = Msg::default();
    for (name, s) in doc["definitions"].as_object().into_iter().flatten() {
        defs.message(1, named_schema(name, s));
    }
    m.message(9, defs);
    m.0
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn writes_gnostic_field_numbers() {
        let doc = json!({ "swagger": "2.0", "info": { "title": "K", "version": "v1" }, "definitions": {
            "io.k8s.api.core.v1.ConfigMap": { "type": "object", "properties": { "data": { "type": "object", "additionalProperties": { "type": "string" } } }, "x-kubernetes-group-version-kind": [{ "group": "", "kind": "ConfigMap", "version": "v1" }] }
        } });
        let b = encode(&doc);
        // Document.swagger (1, "2.0") first.
        assert_eq!(&b[..5], &[0x0a, 3, b'2', b'.', b'0']);
        // The vendor extension travels as YAML text.
        let text = String::from_utf8_lossy(&b);
        assert!(text.contains("x-kubernetes-group-version-kind"));
        assert!(text.contains("kind: ConfigMap"));
        assert!(text.contains("io.k8s.api.core.v1.ConfigMap"));
    }
}
