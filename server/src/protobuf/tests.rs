//! Unit tests of the transcoder, mostly through the public API, on bodies captured from
//! kubectl and bodies built with a small test-only writer.

use serde_json::{json, Value};

use super::wire::{put_len, put_tag, put_uvarint_field, put_varint, WT_FIXED32, WT_FIXED64};
use super::*;

/// Test-only protobuf writer.
#[derive(Clone, Default)]
struct Pb(Vec<u8>);

impl Pb {
    fn new() -> Self {
        Pb::default()
    }
    fn varint(mut self, num: u32, v: u64) -> Self {
        put_uvarint_field(&mut self.0, num, v);
        self
    }
    fn bytes(mut self, num: u32, b: &[u8]) -> Self {
        put_len(&mut self.0, num, b);
        self
    }
    fn str(self, num: u32, s: &str) -> Self {
        self.bytes(num, s.as_bytes())
    }
    fn msg(self, num: u32, m: Pb) -> Self {
        self.bytes(num, &m.0)
    }
    fn fixed64(mut self, num: u32, v: u64) -> Self {
        put_tag(&mut self.0, num, WT_FIXED64);
        self.0.extend_from_slice(&v.to_le_bytes());
        self
    }
    fn fixed32(mut self, num: u32, v: u32) -> Self {
        put_tag(&mut self.0, num, WT_FIXED32);
        self.0.extend_from_slice(&v.to_le_bytes());
        self
    }
    fn entry(self, num: u32, k: &str, v: &[u8]) -> Self {
        self.msg(num, Pb::new().str(1, k).bytes(2, v))
    }
    /// Wraps this object message in magic + Unknown.
    fn body(self, api_version: &str, kind: &str) -> Vec<u8> {
        let unknown = Pb::new()
            .msg(1, Pb::new().str(1, api_version).str(2, kind))
            .bytes(2, &self.0)
            .str(3, "")
            .str(4, "");
        let mut out = MAGIC.to_vec();
        out.extend_from_slice(&unknown.0);
        out
    }
}

fn configmap_schema() -> Value {
    json!({"type":"object","properties":{
        "data":{"type":"object","additionalProperties":{"type":"string"},"x-protobuf-field":2},
        "binaryData":{"type":"object","additionalProperties":{"type":"string","format":"byte"},"x-protobuf-field":3},
        "immutable":{"type":"boolean","x-protobuf-field":4}}})
}

fn secret_schema() -> Value {
    json!({"type":"object","properties":{
        "data":{"type":"object","additionalProperties":{"type":"string","format":"byte"},"x-protobuf-field":2},
        "type":{"type":"string","x-protobuf-field":3},
        "stringData":{"type":"object","additionalProperties":{"type":"string"},"x-protobuf-field":4},
        "immutable":{"type":"boolean","x-protobuf-field":5}}})
}

fn namespace_schema() -> Value {
    json!({"type":"object","properties":{
        "spec":{"type":"object","properties":{
            "finalizers":{"type":"array","items":{"type":"string"},"x-protobuf-field":1}},
            "x-protobuf-field":2},
        "status":{"type":"object","properties":{
            "phase":{"type":"string","enum":["Active","Terminating"],"x-protobuf-field":1},
            "conditions":{"type":"array","items":{"type":"object","properties":{
                "type":{"type":"string","x-protobuf-field":1},
                "status":{"type":"string","x-protobuf-field":2},
                "lastTransitionTime":{"type":"string","format":"date-time","x-protobuf-field":4},
                "reason":{"type":"string","x-protobuf-field":5},
                "message":{"type":"string","x-protobuf-field":6}},
                "required":["type","status"]},"x-protobuf-field":2}},
            "x-protobuf-field":3}}})
}

// Bodies captured from `kubectl create ...` (kubectl v1.32).
const KUBECTL_CONFIGMAP: &[u8] = &[
    107, 56, 115, 0, 10, 15, 10, 2, 118, 49, 18, 9, 67, 111, 110, 102, 105, 103, 77, 97, 112, 18,
    42, 10, 24, 10, 1, 120, 18, 0, 26, 7, 100, 101, 102, 97, 117, 108, 116, 34, 0, 42, 0, 50, 0,
    56, 0, 66, 0, 18, 6, 10, 1, 97, 18, 1, 98, 18, 6, 10, 1, 99, 18, 1, 100, 26, 0, 34, 0,
];
const KUBECTL_NAMESPACE: &[u8] = &[
    107, 56, 115, 0, 10, 15, 10, 2, 118, 49, 18, 9, 78, 97, 109, 101, 115, 112, 97, 99, 101, 18,
    25, 10, 17, 10, 1, 110, 18, 0, 26, 0, 34, 0, 42, 0, 50, 0, 56, 0, 66, 0, 18, 0, 26, 2, 10, 0,
    26, 0, 34, 0,
];
const KUBECTL_SECRET: &[u8] = &[
    107, 56, 115, 0, 10, 12, 10, 2, 118, 49, 18, 6, 83, 101, 99, 114, 101, 116, 18, 36, 10, 24, 10,
    1, 115, 18, 0, 26, 7, 100, 101, 102, 97, 117, 108, 116, 34, 0, 42, 0, 50, 0, 56, 0, 66, 0, 18,
    6, 10, 1, 107, 18, 1, 118, 26, 0, 26, 0, 34, 0,
];

#[test]
fn kubectl_bodies_decode_like_json_requests() {
    let cm = decode_object(KUBECTL_CONFIGMAP, &configmap_schema()).unwrap();
    assert_eq!(
        cm.to_string(),
        r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x","namespace":"default"},"data":{"a":"b","c":"d"}}"#
    );
    let ns = decode_object(KUBECTL_NAMESPACE, &namespace_schema()).unwrap();
    assert_eq!(
        ns.to_string(),
        r#"{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"n"},"spec":{},"status":{}}"#
    );
    let secret = decode_object(KUBECTL_SECRET, &secret_schema()).unwrap();
    assert_eq!(
        secret.to_string(),
        r#"{"apiVersion":"v1","kind":"Secret","metadata":{"name":"s","namespace":"default"},"data":{"k":"dg=="}}"#
    );
}

#[test]
fn envelope_fields() {
    let env = decode_envelope(KUBECTL_SECRET).unwrap();
    assert_eq!(env.api_version, "v1");
    assert_eq!(env.kind, "Secret");
    assert_eq!(env.content_encoding, "");
    assert_eq!(env.content_type, "");
    assert_eq!(env.raw.len(), 36);
}

#[test]
fn configmap_decodes() {
    let meta = Pb::new()
        .str(1, "cfg")
        .str(3, "ns1")
        .entry(11, "app", b"web")
        .entry(11, "tier", b"front");
    let body = Pb::new()
        .msg(1, meta)
        .entry(2, "key", b"value")
        .entry(2, "other", b"")
        .entry(3, "bin", &[0, 1, 2, 255])
        .varint(4, 1)
        .body("v1", "ConfigMap");
    let got = decode_object(&body, &configmap_schema()).unwrap();
    let want = json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "cfg", "namespace": "ns1", "labels": {"app": "web", "tier": "front"}},
        "data": {"key": "value", "other": ""},
        "binaryData": {"bin": "AAEC/w=="},
        "immutable": true
    });
    assert_eq!(got.to_string(), want.to_string());
}

#[test]
fn object_to_json_has_no_type_meta() {
    let raw = Pb::new().msg(1, Pb::new().str(1, "a")).varint(4, 0);
    let got = object_to_json(&raw.0, &configmap_schema()).unwrap();
    assert_eq!(
        Value::Object(got).to_string(),
        r#"{"metadata":{"name":"a"},"immutable":false}"#
    );
}

#[test]
fn namespace_decodes() {
    let body = Pb::new()
        .msg(1, Pb::new().str(1, "team-a"))
        .msg(2, Pb::new().str(1, "kubernetes").str(1, "example.com/x"))
        .msg(
            3,
            Pb::new().str(1, "Active").msg(
                2,
                Pb::new()
                    .str(1, "NamespaceDeletionContentFailure")
                    .str(2, "False")
                    .msg(4, Pb::new().varint(1, 1_796_028_886))
                    .str(5, "")
                    .str(6, ""),
            ),
        )
        .body("v1", "Namespace");
    let got = decode_object(&body, &namespace_schema()).unwrap();
    let want = json!({
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": "team-a"},
        "spec": {"finalizers": ["kubernetes", "example.com/x"]},
        "status": {"phase": "Active", "conditions": [{
            "type": "NamespaceDeletionContentFailure",
            "status": "False",
            "lastTransitionTime": "2026-11-30T08:54:46Z"
        }]}
    });
    assert_eq!(got.to_string(), want.to_string());
}

#[test]
fn required_strings_keep_empty_values() {
    let body = Pb::new()
        .msg(
            3,
            Pb::new().msg(2, Pb::new().str(1, "").str(2, "").str(5, "")),
        )
        .body("v1", "Namespace");
    let got = decode_object(&body, &namespace_schema()).unwrap();
    assert_eq!(
        got["status"],
        json!({"conditions": [{"type": "", "status": ""}]})
    );
}

#[test]
fn secret_bytes_render_base64() {
    let body = Pb::new()
        .msg(1, Pb::new().str(1, "creds").str(3, "default"))
        .entry(2, "password", b"s3cr3t!")
        .entry(2, "token", &[0xde, 0xad, 0xbe, 0xef])
        .str(3, "Opaque")
        .entry(4, "plain", b"text")
        .body("v1", "Secret");
    let got = decode_object(&body, &secret_schema()).unwrap();
    let want = json!({
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "creds", "namespace": "default"},
        "data": {"password": "czNjcjN0IQ==", "token": "3q2+7w=="},
        "type": "Opaque",
        "stringData": {"plain": "text"}
    });
    assert_eq!(got.to_string(), want.to_string());
}

fn full_metadata() -> Value {
    json!({
        "name": "obj",
        "namespace": "default",
        "uid": "7f3e2c1a-0000-4000-8000-000000000001",
        "resourceVersion": "42",
        "generation": 3,
        "creationTimestamp": "2026-11-30T08:54:46Z",
        "deletionTimestamp": "2026-12-01T00:00:00Z",
        "deletionGracePeriodSeconds": 0,
        "labels": {"a": "1", "b": "2"},
        "annotations": {"note": "hello", "z": ""},
        "ownerReferences": [{
            "apiVersion": "apps/v1",
            "kind": "ReplicaSet",
            "name": "rs",
            "uid": "u-1",
            "controller": true,
            "blockOwnerDeletion": false
        }],
        "finalizers": ["example.com/f"],
        "managedFields": [{
            "manager": "kubectl-create",
            "operation": "Update",
            "apiVersion": "v1",
            "time": "2026-11-30T08:54:46Z",
            "fieldsType": "FieldsV1",
            "fieldsV1": {"f:data": {".": {}, "f:a": {}}, "f:metadata": {"f:labels": {}}}
        }, {
            "manager": "controller",
            "operation": "Apply",
            "apiVersion": "v1",
            "time": "2026-11-30T08:54:46.123456Z",
            "fieldsType": "FieldsV1",
            "fieldsV1": {"f:status": {}},
            "subresource": "status"
        }]
    })
}

fn roundtrip(obj: &Value, schema: &Value) {
    let body = encode_object(obj, schema).unwrap();
    let back = decode_object(&body, schema).unwrap();
    assert_eq!(back.to_string(), obj.to_string());
    // Deterministic: encoding the decoded object gives the same bytes.
    assert_eq!(encode_object(&back, schema).unwrap(), body);
}

#[test]
fn roundtrip_configmap() {
    let obj = json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": full_metadata(),
        "data": {"a": "b", "c": "d"},
        "binaryData": {"bin": "AAEC/w=="},
        "immutable": false
    });
    roundtrip(&obj, &configmap_schema());
}

#[test]
fn roundtrip_secret() {
    let obj = json!({
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": full_metadata(),
        "data": {"empty": "", "k": "dg=="},
        "type": "kubernetes.io/basic-auth",
        "stringData": {"s": "plain"},
        "immutable": true
    });
    roundtrip(&obj, &secret_schema());
}

#[test]
fn roundtrip_namespace() {
    let obj = json!({
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": full_metadata(),
        "spec": {"finalizers": ["kubernetes"]},
        "status": {"phase": "Terminating", "conditions": [{
            "type": "NamespaceDeletionDiscoveryFailure",
            "status": "True",
            "lastTransitionTime": "2026-11-30T08:54:46Z",
            "reason": "DiscoveryFailed",
            "message": "boom"
        }, {
            "type": "NamespaceContentRemaining",
            "status": "False"
        }]}
    });
    roundtrip(&obj, &namespace_schema());
}

#[test]
fn encode_matches_go_layout() {
    let obj = json!({
        "kind": "ConfigMap",
        "apiVersion": "v1",
        "data": {"c": "d", "a": "b"},
        "metadata": {"namespace": "default", "name": "x", "unknownField": "dropped"},
        "notInSchema": 1
    });
    let want = Pb::new()
        .msg(1, Pb::new().str(1, "x").str(3, "default"))
        .entry(2, "a", b"b")
        .entry(2, "c", b"d")
        .body("v1", "ConfigMap");
    assert_eq!(encode_object(&obj, &configmap_schema()).unwrap(), want);
}

#[test]
fn unknown_fields_are_skipped() {
    let meta = Pb::new()
        .str(1, "x")
        .varint(15, 7)
        .fixed64(16, 1)
        .str(99, "ignored")
        .fixed32(1000, 5);
    let raw = Pb::new()
        .varint(9, 1)
        .msg(1, meta)
        .fixed64(10, u64::MAX)
        .entry(2, "a", b"b")
        .fixed32(11, 3)
        .str(536_870_911, "max field number");
    let unknown = Pb::new()
        .varint(7, 300)
        .msg(1, Pb::new().str(1, "v1").str(2, "ConfigMap").fixed32(3, 9))
        .bytes(2, &raw.0)
        .fixed64(8, 1);
    let mut body = MAGIC.to_vec();
    body.extend_from_slice(&unknown.0);
    let got = decode_object(&body, &configmap_schema()).unwrap();
    assert_eq!(
        got.to_string(),
        r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"},"data":{"a":"b"}}"#
    );
}

#[test]
fn bad_magic() {
    let err = decode_object(b"k8s", &configmap_schema()).unwrap_err();
    assert!(matches!(err, ProtobufError::MissingMagic));
    assert_eq!(err.to_string(), "missing k8s protobuf magic prefix");
    let err = decode_envelope(b"{\"kind\":\"ConfigMap\"}").unwrap_err();
    assert!(matches!(err, ProtobufError::MissingMagic));
}

#[test]
fn truncated_inputs_error_without_panicking() {
    for body in [KUBECTL_CONFIGMAP, KUBECTL_NAMESPACE, KUBECTL_SECRET] {
        for len in 0..body.len() {
            let prefix = &body[..len];
            let schema = configmap_schema();
            // Prefixes that end on a field boundary of the envelope may decode;
            // all others must fail cleanly.
            let _ = decode_object(prefix, &schema);
        }
    }
    // The envelope's raw field claims 42 bytes but the body ends early.
    let err = decode_object(&KUBECTL_CONFIGMAP[..30], &configmap_schema()).unwrap_err();
    assert_eq!(
        err.to_string(),
        "length-delimited field at byte 23 needs 42 bytes but only 7 remain"
    );
    // A varint cut off in the middle.
    let mut body = MAGIC.to_vec();
    body.extend_from_slice(&[0x0a, 0x00, 0x12, 0x80, 0x80]);
    let err = decode_object(&body, &configmap_schema()).unwrap_err();
    assert_eq!(err.to_string(), "truncated varint at byte 7");
    // A length inside the object that runs past the object (offsets count from the body).
    let raw = [0x12, 0x05, 0x0a, 0x01];
    let body = Pb(raw.to_vec()).body("v1", "ConfigMap");
    let err = decode_object(&body, &configmap_schema()).unwrap_err();
    assert!(matches!(err, ProtobufError::Truncated { .. }), "{err}");
    // Huge length.
    let raw = [
        0x12, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01,
    ];
    let err = object_to_json(&raw, &configmap_schema()).unwrap_err();
    assert!(matches!(err, ProtobufError::Truncated { .. }), "{err}");
    // Varint longer than 10 bytes.
    let raw = [
        0x20, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01,
    ];
    let err = object_to_json(&raw, &configmap_schema()).unwrap_err();
    assert!(
        matches!(err, ProtobufError::VarintOverflow { offset: 1 }),
        "{err}"
    );
    // Truncated fixed64 / fixed32.
    let err = object_to_json(&[0x09, 1, 2, 3], &configmap_schema()).unwrap_err();
    assert!(matches!(err, ProtobufError::Truncated { .. }), "{err}");
    let err = object_to_json(&[0x0d, 1, 2, 3], &configmap_schema()).unwrap_err();
    assert!(matches!(err, ProtobufError::Truncated { .. }), "{err}");
}

#[test]
fn mutated_inputs_never_panic() {
    let schemas = [configmap_schema(), namespace_schema(), secret_schema()];
    let mut seeds = vec![
        KUBECTL_CONFIGMAP.to_vec(),
        KUBECTL_NAMESPACE.to_vec(),
        KUBECTL_SECRET.to_vec(),
    ];
    let full = json!({"apiVersion":"v1","kind":"Namespace","metadata":full_metadata(),
        "spec":{"finalizers":["kubernetes"]},"status":{"phase":"Active"}});
    seeds.push(encode_object(&full, &namespace_schema()).unwrap());
    let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    for seed in &seeds {
        for _ in 0..2000 {
            let mut body = seed.clone();
            for _ in 0..=(next() % 3) {
                let i = (next() as usize) % body.len();
                body[i] = next() as u8;
            }
            for schema in &schemas {
                let _ = decode_object(&body, schema);
            }
        }
    }
}

#[test]
fn wrong_wire_type() {
    let body = Pb::new().varint(2, 5).body("v1", "ConfigMap");
    let err = decode_object(&body, &configmap_schema()).unwrap_err();
    assert_eq!(
        err.to_string(),
        "field 2 (data) has wire type 0, expected 2"
    );

    let body = Pb::new()
        .msg(1, Pb::new().str(7, "1"))
        .body("v1", "ConfigMap");
    let err = decode_object(&body, &configmap_schema()).unwrap_err();
    assert_eq!(
        err.to_string(),
        "field 7 (metadata.generation) has wire type 2, expected 0"
    );

    let body = Pb::new().str(4, "true").body("v1", "ConfigMap");
    let err = decode_object(&body, &configmap_schema()).unwrap_err();
    assert_eq!(
        err.to_string(),
        "field 4 (immutable) has wire type 2, expected 0"
    );

    let body = Pb::new()
        .msg(3, Pb::new().msg(2, Pb::new().varint(1, 3)))
        .body("v1", "Namespace");
    let err = decode_object(&body, &namespace_schema()).unwrap_err();
    assert_eq!(
        err.to_string(),
        "field 1 (status.conditions[0].type) has wire type 0, expected 2"
    );

    let body = Pb::new()
        .msg(1, Pb::new().bytes(1, &[0xff, 0xfe]))
        .body("v1", "ConfigMap");
    let err = decode_object(&body, &configmap_schema()).unwrap_err();
    assert_eq!(
        err.to_string(),
        "field 1 (metadata.name) is not valid UTF-8"
    );
}

#[test]
fn groups_are_rejected() {
    // Field 5, wire type 3 (start group).
    let err = object_to_json(&[0x2b, 0x2c], &configmap_schema()).unwrap_err();
    assert!(
        matches!(
            err,
            ProtobufError::UnsupportedWireType {
                field: 5,
                wire_type: 3,
                offset: 0
            }
        ),
        "{err}"
    );
    let err = object_to_json(&[0x00, 0x01], &configmap_schema()).unwrap_err();
    assert!(
        matches!(err, ProtobufError::InvalidFieldNumber { field: 0, .. }),
        "{err}"
    );
}

fn nested_schema(levels: usize) -> Value {
    let leaf = json!({"type": "string", "x-protobuf-field": 1});
    let mut schema = json!({"type": "object", "properties": {"leaf": leaf}, "x-protobuf-field": 2});
    for _ in 1..levels {
        schema = json!({"type": "object", "properties": {"leaf": leaf, "child": schema}, "x-protobuf-field": 2});
    }
    json!({"type": "object", "properties": {"child": schema}})
}

fn nested_data(levels: usize) -> Pb {
    let mut m = Pb::new().str(1, "bottom");
    for _ in 0..levels {
        m = Pb::new().msg(2, m);
    }
    m
}

#[test]
fn deep_nesting_is_rejected() {
    let ok = object_to_json(&nested_data(20).0, &nested_schema(20)).unwrap();
    let mut v = &ok["child"];
    for _ in 0..19 {
        v = &v["child"];
    }
    assert_eq!(v, &json!({"leaf": "bottom"}));

    let err = object_to_json(&nested_data(100).0, &nested_schema(100)).unwrap_err();
    assert!(
        matches!(err, ProtobufError::TooDeep { max: MAX_DEPTH }),
        "{err}"
    );

    // Nesting by map entries and wrappers counts too.
    let mut schema = json!({"type": "string"});
    for _ in 0..100 {
        schema = json!({"type": "object", "additionalProperties": schema});
    }
    let schema = json!({"type": "object", "properties": {"m": {"type": "object", "additionalProperties": schema, "x-protobuf-field": 2}}});
    let mut m = Pb::new().str(1, "k").str(2, "v");
    for _ in 0..100 {
        m = Pb::new().str(1, "k").msg(2, Pb::new().msg(1, m));
    }
    let raw = Pb::new().msg(2, m);
    let err = object_to_json(&raw.0, &schema).unwrap_err();
    assert!(matches!(err, ProtobufError::TooDeep { .. }), "{err}");

    // Encoding enforces the same limit.
    let mut obj = json!({"leaf": "bottom"});
    for _ in 0..100 {
        obj = json!({ "child": obj });
    }
    let err = encode_object(&obj, &nested_schema(100)).unwrap_err();
    assert!(matches!(err, ProtobufError::TooDeep { .. }), "{err}");
}

#[test]
fn preserve_unknown_fields_cannot_decode() {
    let schema = json!({"type": "object", "properties": {
        "spec": {"x-kubernetes-preserve-unknown-fields": true, "x-protobuf-field": 2},
        "name": {"type": "string", "x-protobuf-field": 3}}});
    // Absent: fine.
    let got = object_to_json(&Pb::new().str(3, "n").0, &schema).unwrap();
    assert_eq!(Value::Object(got), json!({"name": "n"}));
    // Present: error.
    let err = object_to_json(&Pb::new().bytes(2, b"").0, &schema).unwrap_err();
    assert!(err.to_string().starts_with("cannot decode spec: "), "{err}");
    let err = encode_object(&json!({"spec": {"a": 1}}), &schema).unwrap_err();
    assert!(err.to_string().starts_with("cannot encode spec: "), "{err}");
}

fn scalar_schema() -> Value {
    json!({"type": "object", "properties": {
        "ints": {"type": "array", "items": {"type": "integer", "format": "int32"}, "x-protobuf-field": 2},
        "longs": {"type": "array", "items": {"type": "integer"}, "x-protobuf-field": 3},
        "flags": {"type": "array", "items": {"type": "boolean"}, "x-protobuf-field": 4},
        "ratio": {"type": "number", "x-protobuf-field": 5},
        "weight": {"type": "number", "format": "float", "x-protobuf-field": 6},
        "port": {"x-kubernetes-int-or-string": true, "x-protobuf-field": 7},
        "target": {"x-kubernetes-int-or-string": true, "x-protobuf-field": 8},
        "offset": {"type": "integer", "format": "int32", "x-protobuf-field": 9},
        "doubles": {"type": "array", "items": {"type": "number"}, "x-protobuf-field": 10},
        "extra": {"type": "object", "additionalProperties": {"type": "array", "items": {"type": "string"}}, "x-protobuf-field": 11},
        "memory": {"type": "string", "format": "quantity", "x-protobuf-field": 12},
        "empty": {"type": "array", "items": {"type": "integer"}, "x-protobuf-field": 13},
        "nullableName": {"type": "string", "nullable": true, "x-protobuf-field": 14}
    }})
}

#[test]
fn scalars_packed_and_unpacked() {
    let mut packed_ints = Vec::new();
    put_varint(&mut packed_ints, 1);
    put_varint(&mut packed_ints, (-2i64) as u64);
    let mut packed_doubles = Vec::new();
    packed_doubles.extend_from_slice(&0.5f64.to_bits().to_le_bytes());
    let raw = Pb::new()
        .bytes(2, &packed_ints)
        .varint(2, 3)
        .varint(3, u64::MAX)
        .varint(3, 1 << 40)
        .varint(4, 1)
        .bytes(4, &[0, 1])
        .fixed64(5, 2.25f64.to_bits())
        .fixed32(6, 0.1f32.to_bits())
        .msg(7, Pb::new().varint(1, 0).varint(2, 8080).str(3, ""))
        .msg(8, Pb::new().varint(1, 1).varint(2, 0).str(3, "http"))
        .varint(9, (-5i64) as u64)
        .bytes(10, &packed_doubles)
        .fixed64(10, 1.5f64.to_bits())
        .msg(
            11,
            Pb::new()
                .str(1, "groups")
                .msg(2, Pb::new().str(1, "a").str(1, "b")),
        )
        .msg(12, Pb::new().str(1, "128Mi"))
        .bytes(13, &[])
        .str(14, "");
    let got = Value::Object(object_to_json(&raw.0, &scalar_schema()).unwrap());
    let want = json!({
        "ints": [1, -2, 3],
        "longs": [-1, 1_099_511_627_776i64],
        "flags": [true, false, true],
        "ratio": 2.25,
        "weight": 0.1,
        "port": 8080,
        "target": "http",
        "offset": -5,
        "doubles": [0.5, 1.5],
        "extra": {"groups": ["a", "b"]},
        "memory": "128Mi",
        "nullableName": ""
    });
    assert_eq!(got.to_string(), want.to_string());

    // Negative int32 is written as a 10-byte varint, like Go.
    let obj = json!({"offset": -5});
    let body = encode_object(&obj, &scalar_schema()).unwrap();
    let env = decode_envelope(&body).unwrap();
    assert_eq!(
        env.raw,
        [0x48, 0xfb, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01]
    );

    // Round trip of everything (packed input re-encodes unpacked, same JSON).
    let mut with_type = want.as_object().cloned().unwrap();
    with_type.insert("apiVersion".into(), json!("x/v1"));
    with_type.insert("kind".into(), json!("Thing"));
    let body = encode_object(&Value::Object(with_type), &scalar_schema()).unwrap();
    let back = decode_object(&body, &scalar_schema()).unwrap();
    let mut expected = json!({"apiVersion": "x/v1", "kind": "Thing"});
    if let (Value::Object(e), Value::Object(w)) = (&mut expected, want) {
        e.extend(w);
    }
    assert_eq!(back.to_string(), expected.to_string());
}

#[test]
fn int_or_string_accepts_quantity_form() {
    let raw = Pb::new().msg(7, Pb::new().str(1, "500m"));
    let got = object_to_json(&raw.0, &scalar_schema()).unwrap();
    assert_eq!(got["port"], json!("500m"));
    let raw = Pb::new().msg(7, Pb::new().varint(1, 2));
    assert!(object_to_json(&raw.0, &scalar_schema()).is_err());
}

#[test]
fn bad_values_are_errors() {
    let nan = Pb::new().fixed64(5, f64::NAN.to_bits());
    let err = object_to_json(&nan.0, &scalar_schema()).unwrap_err();
    assert!(matches!(err, ProtobufError::InvalidValue { .. }), "{err}");
    let bad_time = Pb::new().msg(1, Pb::new().msg(8, Pb::new().varint(1, i64::MAX as u64)));
    let err = object_to_json(&bad_time.0, &configmap_schema()).unwrap_err();
    assert!(
        err.to_string()
            .starts_with("invalid value for metadata.creationTimestamp"),
        "{err}"
    );
    let bad_json = Pb::new().msg(
        1,
        Pb::new().msg(17, Pb::new().msg(7, Pb::new().str(1, "{"))),
    );
    let err = object_to_json(&bad_json.0, &configmap_schema()).unwrap_err();
    assert!(
        err.to_string()
            .starts_with("invalid value for metadata.managedFields[0].fieldsV1"),
        "{err}"
    );
    let err = object_to_json(&Pb::new().fixed32(2, 1).0, &scalar_schema()).unwrap_err();
    assert_eq!(
        err.to_string(),
        "field 2 (ints[0]) has wire type 5, expected 0 or 2"
    );
    let packed_bad = Pb::new().bytes(10, &[1, 2, 3]);
    assert!(object_to_json(&packed_bad.0, &scalar_schema()).is_err());

    let schema = configmap_schema();
    for obj in [
        json!("not an object"),
        json!({"data": ["a"]}),
        json!({"data": {"a": 1}}),
        json!({"binaryData": {"a": "not base64!"}}),
        json!({"immutable": "yes"}),
        json!({"kind": 5}),
        json!({"metadata": {"creationTimestamp": "yesterday"}}),
        json!({"metadata": {"generation": 1.5}}),
        json!({"metadata": {"finalizers": [null]}}),
    ] {
        let err = encode_object(&obj, &schema).unwrap_err();
        assert!(
            matches!(err, ProtobufError::CannotEncode { .. }),
            "{obj}: {err}"
        );
    }
    let err = encode_object(&json!({"offset": 1i64 << 40}), &scalar_schema()).unwrap_err();
    assert!(err.to_string().contains("offset"), "{err}");
}

#[test]
fn invalid_schemas_are_errors() {
    let dup = json!({"type": "object", "properties": {
        "a": {"type": "string", "x-protobuf-field": 2},
        "b": {"type": "string", "x-protobuf-field": 2}}});
    assert!(object_to_json(&[], &dup).is_err());
    let meta_clash = json!({"type": "object", "properties": {
        "a": {"type": "string", "x-protobuf-field": 1}}});
    assert!(object_to_json(&[], &meta_clash).is_err());
    let bad_num = json!({"type": "object", "properties": {
        "a": {"type": "string", "x-protobuf-field": "two"}}});
    assert!(encode_object(&json!({}), &bad_num).is_err());
    assert!(object_to_json(&[], &json!({"type": "string"})).is_err());
    assert!(object_to_json(&[], &json!(null)).is_err());
}

#[test]
fn content_encoding_is_rejected() {
    let unknown = Pb::new()
        .msg(1, Pb::new().str(1, "v1").str(2, "ConfigMap"))
        .bytes(2, &[])
        .str(3, "gzip");
    let mut body = MAGIC.to_vec();
    body.extend_from_slice(&unknown.0);
    let err = decode_object(&body, &configmap_schema()).unwrap_err();
    assert!(
        matches!(err, ProtobufError::UnsupportedContentEncoding(_)),
        "{err}"
    );
    assert_eq!(decode_envelope(&body).unwrap().content_encoding, "gzip");
}

#[test]
fn repeated_message_occurrences_merge() {
    let raw = Pb::new()
        .msg(1, Pb::new().str(1, "a").entry(11, "x", b"1"))
        .msg(1, Pb::new().str(3, "ns").entry(11, "y", b"2"));
    let got = object_to_json(&raw.0, &configmap_schema()).unwrap();
    assert_eq!(
        got["metadata"],
        json!({"name": "a", "namespace": "ns", "labels": {"x": "1", "y": "2"}})
    );
}

#[test]
fn map_entries_without_key_or_value() {
    let raw = Pb::new()
        .msg(2, Pb::new().str(2, "no key"))
        .msg(2, Pb::new().str(1, "nov"));
    let got = object_to_json(&raw.0, &configmap_schema()).unwrap();
    assert_eq!(got["data"], json!({"": "no key", "nov": ""}));
}

#[test]
fn lists_and_watch_frames() {
    let schema = configmap_schema();
    let item = json!({ "apiVersion": "v1", "kind": "ConfigMap", "metadata": { "name": "a", "namespace": "d" }, "data": { "k": "v" } });
    let list = json!({ "apiVersion": "v1", "kind": "ConfigMapList", "metadata": { "resourceVersion": "7", "continue": "c" }, "items": [item.clone(), item.clone()] });
    let body = encode_list(&list, &schema).unwrap();
    let env = decode_envelope(&body).unwrap();
    assert_eq!(
        (env.api_version.as_str(), env.kind.as_str()),
        ("v1", "ConfigMapList")
    );
    // raw = ListMeta (field 1) then two items (field 2), each the item's own message.
    let item_raw = encode_raw(&item, &schema).unwrap();
    assert!(
        env.raw
            .windows(item_raw.len())
            .filter(|w| *w == item_raw.as_slice())
            .count()
            == 2
    );

    let frame = encode_watch_frame("ADDED", &item, &schema).unwrap();
    let len = u32::from_be_bytes(frame[..4].try_into().unwrap()) as usize;
    assert_eq!(len, frame.len() - 4);
    // WatchEvent.type (field 1) comes first.
    assert_eq!(&frame[4..11], &[0x0a, 5, b'A', b'D', b'D', b'E', b'D']);
    let embedded = encode_object(&item, &schema).unwrap();
    assert!(frame
        .windows(embedded.len())
        .any(|w| w == embedded.as_slice()));
}

// ---------------------------------------------------------------------------------------
// The imported built-in kinds, with the schemas of the compiled-in catalog.

/// The catalog schema of `group/version` `kind` (a served kind, or the body kind of a
/// create-only subresource).
fn catalog_schema(api_version: &str, kind: &str) -> Value {
    let catalog = crate::catalog::Catalog::from_definitions(crate::generated::CATALOG)
        .expect("the compiled-in catalog loads");
    for r in catalog.all() {
        if r.api_version() == api_version && r.def.kind == kind {
            return r.schema().clone();
        }
        for body in &r.subresource_kinds {
            if body.api_version() == api_version && body.def.kind == kind {
                return body.schema().clone();
            }
        }
    }
    panic!("no {api_version} {kind} in the catalog")
}

/// JSON → protobuf → JSON gives the object back (compared as values), and encoding again
/// gives the same bytes.
fn roundtrip_builtin(obj: Value) {
    let schema = catalog_schema(
        obj["apiVersion"].as_str().unwrap(),
        obj["kind"].as_str().unwrap(),
    );
    let body = encode_object(&obj, &schema).unwrap();
    let back = decode_object(&body, &schema).unwrap();
    assert_eq!(back, obj);
    assert_eq!(encode_object(&back, &schema).unwrap(), body);
}

fn named(name: &str, ns: Option<&str>) -> Value {
    let mut m = json!({"name": name, "uid": "6f1c2f0e-5f0a-4c59-9d0e-1b8e8c6a2d11",
        "resourceVersion": "42", "creationTimestamp": "2026-12-01T10:00:00Z",
        "labels": {"team": "platform"}});
    if let Some(ns) = ns {
        m["namespace"] = json!(ns);
    }
    m
}

#[test]
fn roundtrip_rbac_kinds() {
    let rule = json!({"verbs": ["get", "list", "watch"], "apiGroups": [""],
        "resources": ["pods", "pods/log"], "resourceNames": ["web"]});
    roundtrip_builtin(
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
        "metadata": named("reader", Some("team-a")), "rules": [rule]}),
    );
    roundtrip_builtin(
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
        "metadata": named("monitoring", None),
        "aggregationRule": {"clusterRoleSelectors": [
            {"matchLabels": {"rbac.example.dev/aggregate-to-monitoring": "true"}},
            {"matchExpressions": [{"key": "tier", "operator": "In", "values": ["a", "b"]},
                                  {"key": "legacy", "operator": "DoesNotExist"}]}]},
        "rules": [{"verbs": ["get"], "nonResourceURLs": ["/metrics", "/healthz/*"]}, rule]}),
    );
    let subjects = json!([
        {"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": "alice"},
        {"kind": "Group", "apiGroup": "rbac.authorization.k8s.io", "name": "devs"},
        {"kind": "ServiceAccount", "name": "builder", "namespace": "ci"}]);
    roundtrip_builtin(
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
        "metadata": named("read-pods", Some("team-a")), "subjects": subjects,
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "reader"}}),
    );
    roundtrip_builtin(
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
        "metadata": named("monitoring", None), "subjects": subjects,
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "monitoring"}}),
    );
}

#[test]
fn roundtrip_service_account_and_token_request() {
    roundtrip_builtin(json!({"apiVersion": "v1", "kind": "ServiceAccount",
        "metadata": named("builder", Some("ci")),
        "secrets": [{"name": "builder-token"}], "imagePullSecrets": [{"name": "registry"}],
        "automountServiceAccountToken": false}));
    let request = json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
        "metadata": {"name": "builder", "namespace": "ci", "creationTimestamp": "2026-12-01T10:00:00Z"},
        "spec": {"audiences": ["https://kubernetes.default.svc"], "expirationSeconds": 3600,
                 "boundObjectRef": {"kind": "Pod", "apiVersion": "v1", "name": "web-0",
                                    "uid": "0d4c1f5e-2b7a-4e8e-9c1d-3f6a5b2e7c90"}},
        "status": {"token": "eyJhbGciOiJSUzI1NiJ9.e30.c2ln", "expirationTimestamp": "2026-12-01T11:00:00Z"}});
    roundtrip_builtin(request.clone());
    // expirationTimestamp is a Time message {1 seconds} in protobuf, RFC 3339 in JSON.
    let schema = catalog_schema("authentication.k8s.io/v1", "TokenRequest");
    let raw = encode::encode_raw(&request, &schema).unwrap();
    let status = Pb::new()
        .str(1, "eyJhbGciOiJSUzI1NiJ9.e30.c2ln")
        .msg(2, Pb::new().varint(1, 1_796_122_800).varint(2, 0));
    assert!(
        raw.windows(status.0.len())
            .any(|w| w == status.0.as_slice()),
        "the status message is laid out as Go's"
    );
}

#[test]
fn roundtrip_reviews() {
    let user = json!({"username": "alice", "uid": "42", "groups": ["devs", "system:authenticated"],
        "extra": {"scopes.example.dev": ["read", "write"], "empty-ok": ["x"]}});
    roundtrip_builtin(
        json!({"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview",
        "metadata": {"creationTimestamp": "2026-12-01T10:00:00Z"}, "status": {"userInfo": user}}),
    );
    roundtrip_builtin(
        json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview",
        "metadata": {"name": "check"}, "spec": {"token": "abc", "audiences": ["api"]},
        "status": {"authenticated": true, "user": user, "audiences": ["api"]}}),
    );
    let attrs = json!({"namespace": "team-a", "verb": "list", "group": "apps", "version": "v1",
        "resource": "deployments", "subresource": "scale", "name": "web",
        "labelSelector": {"requirements": [{"key": "tier", "operator": "In", "values": ["a"]}]},
        "fieldSelector": {"rawSelector": "metadata.name=web"}});
    let status = json!({"allowed": true, "reason": "RBAC: allowed by RoleBinding \"x\""});
    roundtrip_builtin(
        json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
        "metadata": {"name": "sar"},
        "spec": {"resourceAttributes": attrs, "user": "alice", "groups": ["devs"], "uid": "42",
                 "extra": {"scopes.example.dev": ["read", "write"]}},
        "status": status}),
    );
    roundtrip_builtin(
        json!({"apiVersion": "authorization.k8s.io/v1", "kind": "LocalSubjectAccessReview",
        "metadata": {"namespace": "team-a"},
        "spec": {"resourceAttributes": {"namespace": "team-a", "verb": "get", "resource": "pods"}, "user": "bob"},
        "status": {"allowed": false, "denied": true, "evaluationError": "none"}}),
    );
    roundtrip_builtin(
        json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
        "metadata": {"name": "ssar"},
        "spec": {"nonResourceAttributes": {"path": "/healthz", "verb": "get"}},
        "status": {"allowed": true}}),
    );
    roundtrip_builtin(
        json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectRulesReview",
        "metadata": {"name": "ssrr"}, "spec": {"namespace": "team-a"},
        "status": {"resourceRules": [{"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]}],
                   "nonResourceRules": [{"verbs": ["get"], "nonResourceURLs": ["/api"]}],
                   "incomplete": false}}),
    );
}

#[test]
fn extra_values_are_wrapped_string_lists() {
    // map<string, ExtraValue>: each entry's value is a message whose field 1 repeats.
    let schema = catalog_schema("authorization.k8s.io/v1", "SubjectAccessReview");
    let obj = json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
        "metadata": {"name": "x"}, "spec": {"extra": {"k": ["a", "b"]}}});
    let raw = encode::encode_raw(&obj, &schema).unwrap();
    let entry = Pb::new()
        .str(1, "k")
        .msg(2, Pb::new().str(1, "a").str(1, "b"));
    let spec = Pb::new().msg(5, entry);
    let expected = Pb::new().msg(1, Pb::new().str(1, "x")).msg(2, spec);
    assert_eq!(raw, expected.0);
}

/// A Volume-like item: `name` is its own field 1, `hostPath` sits in the Go-embedded
/// message at field 2 (VolumeSource), `apiGroups` two embeddings deep (field 3, then 2),
/// as NamedRuleWithOperations → RuleWithOperations → Rule.
fn embedded_schema() -> Value {
    json!({"type": "object", "properties": {
        "items": {"type": "array", "x-protobuf-field": 2, "items": {"type": "object", "properties": {
            "name": {"type": "string", "x-protobuf-field": 1},
            "hostPath": {"type": "object", "x-protobuf-field": 1, "x-protobuf-embedded": [2],
                "properties": {"path": {"type": "string", "x-protobuf-field": 1}}},
            "emptyDir": {"type": "object", "x-protobuf-field": 2, "x-protobuf-embedded": [2],
                "properties": {"medium": {"type": "string", "x-protobuf-field": 1}}},
            "apiGroups": {"type": "array", "items": {"type": "string"},
                "x-protobuf-field": 1, "x-protobuf-embedded": [3, 2]}
        }}}
    }})
}

#[test]
fn go_embedded_messages_carry_flattened_fields() {
    let obj = json!({"items": [{"name": "v", "hostPath": {"path": "/d"}, "apiGroups": ["g"]}]});
    // The item as Go writes it: name, then VolumeSource {hostPath {path}}, then
    // RuleWithOperations {rule: Rule {apiGroups}}.
    let mut path = Vec::new();
    put_len(&mut path, 1, b"/d");
    let mut source = Vec::new();
    put_len(&mut source, 1, &path);
    let mut rule = Vec::new();
    put_len(&mut rule, 1, b"g");
    let mut with_ops = Vec::new();
    put_len(&mut with_ops, 2, &rule);
    let mut item = Vec::new();
    put_len(&mut item, 1, b"v");
    put_len(&mut item, 2, &source);
    put_len(&mut item, 3, &with_ops);
    let mut expected = Vec::new();
    put_len(&mut expected, 2, &item);

    let schema = embedded_schema();
    assert_eq!(encode_raw(&obj, &schema).unwrap(), expected);
    let back = object_to_json(&expected, &schema).unwrap();
    assert_eq!(Value::Object(back), obj);
}
