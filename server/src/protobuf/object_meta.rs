//! The built-in `ObjectMeta` schema (field 1 of every top-level message).

use std::sync::OnceLock;

use serde_json::{json, Value};

use super::FIELD_EXT;

/// The built-in schema of `ObjectMeta`, in the same form as kind schemas.
pub(super) fn object_meta_schema() -> &'static Value {
    static SCHEMA: OnceLock<Value> = OnceLock::new();
    SCHEMA.get_or_init(|| {
        let time = json!({"type": "string", "format": "date-time"});
        let string_map = json!({"type": "object", "additionalProperties": {"type": "string"}});
        json!({
            "type": "object",
            "properties": {
                "name": {"type": "string", "x-protobuf-field": 1},
                "generateName": {"type": "string", "x-protobuf-field": 2},
                "namespace": {"type": "string", "x-protobuf-field": 3},
                "selfLink": {"type": "string", "x-protobuf-field": 4},
                "uid": {"type": "string", "x-protobuf-field": 5},
                "resourceVersion": {"type": "string", "x-protobuf-field": 6},
                "generation": {
                    "type": "integer", "format": "int64",
                    "x-protobuf-field": 7, "x-protobuf-omit-zero": true
                },
                "creationTimestamp": with_field(&time, 8),
                "deletionTimestamp": with_field(&time, 9),
                "deletionGracePeriodSeconds": {
                    "type": "integer", "format": "int64", "x-protobuf-field": 10
                },
                "labels": with_field(&string_map, 11),
                "annotations": with_field(&string_map, 12),
                "ownerReferences": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {
                            "apiVersion": {"type": "string", "x-protobuf-field": 5},
                            "kind": {"type": "string", "x-protobuf-field": 1},
                            "name": {"type": "string", "x-protobuf-field": 3},
                            "uid": {"type": "string", "x-protobuf-field": 4},
                            "controller": {"type": "boolean", "x-protobuf-field": 6},
                            "blockOwnerDeletion": {"type": "boolean", "x-protobuf-field": 7}
                        },
                        "required": ["apiVersion", "kind", "name", "uid"]
                    },
                    "x-protobuf-field": 13
                },
                "finalizers": {
                    "type": "array", "items": {"type": "string"}, "x-protobuf-field": 14
                },
                "managedFields": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {
                            "manager": {"type": "string", "x-protobuf-field": 1},
                            "operation": {"type": "string", "x-protobuf-field": 2},
                            "apiVersion": {"type": "string", "x-protobuf-field": 3},
                            "time": with_field(&time, 4),
                            "fieldsType": {"type": "string", "x-protobuf-field": 6},
                            "fieldsV1": {
                                "type": "object",
                                "x-protobuf-raw-json": true,
                                "x-protobuf-field": 7
                            },
                            "subresource": {"type": "string", "x-protobuf-field": 8}
                        }
                    },
                    "x-protobuf-field": 17
                }
            }
        })
    })
}

fn with_field(schema: &Value, num: u32) -> Value {
    let mut s = schema.clone();
    if let Value::Object(m) = &mut s {
        m.insert(FIELD_EXT.into(), num.into());
    }
    s
}
