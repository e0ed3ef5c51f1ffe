//! Kubernetes protobuf wire format (`application/vnd.kubernetes.protobuf`).
//!
//! Typed clients such as kubectl send request bodies as the 4-byte [`MAGIC`] prefix
//! followed by a `runtime.Unknown` envelope whose `raw` field holds the object's own
//! protobuf message. This module turns such bodies into the JSON form Kubernetes uses
//! on the wire ([`decode_object`]) and back ([`encode_object`]).
//!
//! Objects are not described by generated Rust types but by the kind's OpenAPI v3
//! schema: every property that has a protobuf form carries `x-protobuf-field: N`.
//! `metadata` (`ObjectMeta`) is always field 1 of the top-level message and is built in,
//! so the schema does not need to describe it.
//!
//! Schema to wire mapping:
//!
//! | schema                                   | wire form                                  |
//! |------------------------------------------|--------------------------------------------|
//! | `string`                                 | length-delimited UTF-8                     |
//! | `string`, `format: byte`                 | bytes, base64 (standard) in JSON           |
//! | `string`, `format: date-time`            | `Time {1 seconds, 2 nanos}`, RFC 3339      |
//! | `string`, `format: quantity`             | `Quantity {1 string}`                      |
//! | `integer` (`format: int32` or int64)     | varint                                     |
//! | `number` (`format: float` or double)     | fixed32 / fixed64                          |
//! | `boolean`                                | varint                                     |
//! | `object` with `properties`               | nested message                             |
//! | `object` with `additionalProperties`     | map: repeated entries `{1 key, 2 value}`   |
//! | `array`                                  | repeated field (scalars packed or not)     |
//! | `x-kubernetes-int-or-string`             | `IntOrString {1 type, 2 intVal, 3 strVal}` |
//!
//! An array or map nested directly in an array item or map value is carried in a
//! wrapper message whose field 1 holds it (as Kubernetes does for `ExtraValue`).
//! Schemas that can hold arbitrary JSON (`x-kubernetes-preserve-unknown-fields`
//! without a type, `additionalProperties: true`) have no protobuf form and fail with
//! "cannot decode" / "cannot encode" when such a field is actually present.
//!
//! Zero values: Go's protobuf encoder writes every non-pointer field, even when it
//! holds its zero value, so kubectl sends `generateName: ""`, an empty
//! `creationTimestamp`, `status.phase: ""` and so on. Go's JSON encoder drops those
//! again (`omitempty`). To produce the JSON a JSON client would have sent, decoding
//! drops empty strings (and empty bytes) unless the property is listed in the parent's
//! `required` or is `nullable`, drops empty `Time` messages, and drops repeated fields
//! and maps without elements. Numbers and booleans are kept as sent, since for pointer
//! fields (`replicas: 0`, `immutable: false`) the zero value is meaningful.
//!
//! Two schema extensions are understood besides `x-protobuf-field` (the built-in
//! `ObjectMeta` schema uses them): `x-protobuf-raw-json: true` marks a message
//! `{1 bytes}` whose bytes are JSON text (`FieldsV1`), rendered as the parsed JSON, and
//! `x-protobuf-omit-zero: true` drops a numeric `0` or `false` when decoding.

use std::fmt::Write as _;
use std::sync::OnceLock;

use base64::Engine as _;
use chrono::{DateTime, Datelike as _, SecondsFormat, Utc};
use serde_json::{json, Map, Number, Value};

/// The prefix of every Kubernetes protobuf body: `k8s` followed by a zero byte.
pub const MAGIC: [u8; 4] = *b"k8s\0";

/// The deepest nesting of messages accepted when decoding or encoding.
pub const MAX_DEPTH: usize = 64;

/// Schema extension giving a property's protobuf field number.
pub const FIELD_EXT: &str = "x-protobuf-field";

/// Schema extension marking a message `{1 bytes}` whose bytes are JSON text.
pub const RAW_JSON_EXT: &str = "x-protobuf-raw-json";

/// Schema extension dropping a decoded numeric `0` / `false` from the JSON.
pub const OMIT_ZERO_EXT: &str = "x-protobuf-omit-zero";

/// Largest field number protobuf allows.
const MAX_FIELD_NUMBER: u64 = (1 << 29) - 1;

const WT_VARINT: u8 = 0;
const WT_FIXED64: u8 = 1;
const WT_LEN: u8 = 2;
const WT_FIXED32: u8 = 5;

/// Why a protobuf body could not be decoded or a JSON object could not be encoded.
#[derive(Debug, thiserror::Error)]
pub enum ProtobufError {
    /// The body does not start with [`MAGIC`].
    #[error("missing k8s protobuf magic prefix")]
    MissingMagic,
    /// The input ended inside a varint.
    #[error("truncated varint at byte {offset}")]
    TruncatedVarint {
        /// Byte offset where the varint starts.
        offset: usize,
    },
    /// A varint does not fit in 64 bits.
    #[error("varint at byte {offset} overflows 64 bits")]
    VarintOverflow {
        /// Byte offset where the varint starts.
        offset: usize,
    },
    /// A fixed-size value or length-delimited field runs past the end of its buffer.
    #[error("{what} at byte {offset} needs {needed} bytes but only {available} remain")]
    Truncated {
        /// What was being read.
        what: &'static str,
        /// Byte offset where the value starts.
        offset: usize,
        /// Bytes the value needs.
        needed: u64,
        /// Bytes left in the enclosing buffer.
        available: usize,
    },
    /// A field tag has field number 0 or one above the protobuf maximum.
    #[error("invalid field number {field} at byte {offset}")]
    InvalidFieldNumber {
        /// The field number read from the tag.
        field: u64,
        /// Byte offset of the tag.
        offset: usize,
    },
    /// A field uses a group (3, 4) or reserved (6, 7) wire type.
    #[error("field {field} at byte {offset} has unsupported wire type {wire_type}")]
    UnsupportedWireType {
        /// The field number.
        field: u32,
        /// The wire type from the tag.
        wire_type: u8,
        /// Byte offset of the tag.
        offset: usize,
    },
    /// A known field was encoded with a wire type its schema does not allow.
    #[error("field {field} ({name}) has wire type {actual}, expected {expected}")]
    WrongWireType {
        /// The field number.
        field: u32,
        /// The field's JSON path.
        name: String,
        /// The wire type found.
        actual: u8,
        /// The wire type(s) the schema allows.
        expected: &'static str,
    },
    /// A string field holds bytes that are not UTF-8.
    #[error("field {field} ({name}) is not valid UTF-8")]
    InvalidUtf8 {
        /// The field number.
        field: u32,
        /// The field's JSON path.
        name: String,
    },
    /// A field decoded but its value cannot be represented (bad timestamp, NaN, ...).
    #[error("invalid value for {name}: {reason}")]
    InvalidValue {
        /// The field's JSON path.
        name: String,
        /// What is wrong with it.
        reason: String,
    },
    /// Messages are nested deeper than [`MAX_DEPTH`].
    #[error("messages nested deeper than {max} levels")]
    TooDeep {
        /// The limit, [`MAX_DEPTH`].
        max: usize,
    },
    /// The schema gives the field no protobuf form, or the schema itself is invalid.
    #[error("cannot decode {name}: {reason}")]
    CannotDecode {
        /// The field's JSON path.
        name: String,
        /// Why.
        reason: String,
    },
    /// A JSON value does not fit its schema, or the schema gives it no protobuf form.
    #[error("cannot encode {name}: {reason}")]
    CannotEncode {
        /// The field's JSON path.
        name: String,
        /// Why.
        reason: String,
    },
    /// The envelope names a content encoding (such as gzip) that is not supported.
    #[error("unsupported protobuf content encoding {0:?}")]
    UnsupportedContentEncoding(String),
}

/// The `runtime.Unknown` envelope that follows [`MAGIC`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Unknown {
    /// `typeMeta.apiVersion`, e.g. `v1` or `apps/v1`.
    pub api_version: String,
    /// `typeMeta.kind`, e.g. `ConfigMap`.
    pub kind: String,
    /// The object's own protobuf message.
    pub raw: Vec<u8>,
    /// Encoding applied to `raw`; empty for none.
    pub content_encoding: String,
    /// Content type of `raw`; empty means protobuf.
    pub content_type: String,
}

/// Parses the magic prefix and the `runtime.Unknown` envelope of a protobuf body.
///
/// Unknown envelope fields are skipped. The returned `raw` is not interpreted.
pub fn decode_envelope(body: &[u8]) -> Result<Unknown, ProtobufError> {
    decode_envelope_at(body).map(|(unknown, _)| unknown)
}

/// Decodes an object message (`raw` of the envelope) into its JSON fields.
///
/// Field 1 is decoded as `metadata` (`ObjectMeta`); other fields follow `schema`'s
/// `x-protobuf-field` numbers, and fields it does not describe are skipped. The result
/// holds `metadata` first, then the schema's properties in schema order. It does not
/// contain `apiVersion` or `kind`, which live in the envelope.
pub fn object_to_json(raw: &[u8], schema: &Value) -> Result<Map<String, Value>, ProtobufError> {
    object_to_json_at(raw, schema, 0)
}

/// Decodes a whole protobuf request body into a JSON object.
///
/// The result starts with `apiVersion` and `kind` from the envelope (each left out
/// when empty), followed by `metadata` and the schema-described fields. Byte offsets
/// in errors count from the start of `body`.
pub fn decode_object(body: &[u8], schema: &Value) -> Result<Value, ProtobufError> {
    let (envelope, raw_offset) = decode_envelope_at(body)?;
    if !envelope.content_encoding.is_empty() {
        return Err(ProtobufError::UnsupportedContentEncoding(
            envelope.content_encoding,
        ));
    }
    let fields = object_to_json_at(&envelope.raw, schema, raw_offset)?;
    let mut out = Map::new();
    if !envelope.api_version.is_empty() {
        out.insert("apiVersion".into(), Value::String(envelope.api_version));
    }
    if !envelope.kind.is_empty() {
        out.insert("kind".into(), Value::String(envelope.kind));
    }
    out.extend(fields);
    Ok(Value::Object(out))
}

/// Encodes a JSON object as a protobuf body: [`MAGIC`] and a `runtime.Unknown`
/// envelope with `typeMeta` from `apiVersion`/`kind` and `raw` set to the object
/// message.
///
/// `metadata` is written as field 1 and the other properties by their schema field
/// numbers, in ascending field order; map entries are sorted by key so the output is
/// deterministic. Properties the schema gives no field number, unknown metadata
/// fields and `null` values are left out.
pub fn encode_object(obj: &Value, schema: &Value) -> Result<Vec<u8>, ProtobufError> {
    let root = Path::ROOT;
    let Some(fields) = obj.as_object() else {
        return Err(schema_error(Op::Encode, &root, "expected a JSON object"));
    };
    let type_string = |key: &'static str| -> Result<&str, ProtobufError> {
        match fields.get(key) {
            None | Some(Value::Null) => Ok(""),
            Some(Value::String(s)) => Ok(s),
            Some(_) => Err(schema_error(
                Op::Encode,
                &root.child(Seg::Field(key)),
                "expected a string",
            )),
        }
    };
    let api_version = type_string("apiVersion")?;
    let kind = type_string("kind")?;
    let raw = encode_raw(obj, schema)?;
    Ok(envelope(api_version, kind, &raw))
}

/// The object's message alone (no magic, no envelope): what a List's `items` and
/// `runtime.Unknown.raw` hold.
pub fn encode_raw(obj: &Value, schema: &Value) -> Result<Vec<u8>, ProtobufError> {
    let root = Path::ROOT;
    let Some(fields) = obj.as_object() else {
        return Err(schema_error(Op::Encode, &root, "expected a JSON object"));
    };
    let props = top_level_props(schema, Op::Encode)?;
    let mut raw = Vec::new();
    encode_message(fields, &props, &root, 1, &mut raw)?;
    Ok(raw)
}

/// A List (`{kind: XList, metadata: ListMeta, items: [...]}`) of a kind described by
/// `item_schema`, in the protobuf envelope: ListMeta is field 1, the items field 2.
pub fn encode_list(list: &Value, item_schema: &Value) -> Result<Vec<u8>, ProtobufError> {
    let mut raw = Vec::new();
    let meta = &list["metadata"];
    let mut list_meta = Vec::new();
    for (num, key) in [(2, "resourceVersion"), (3, "continue")] {
        if let Some(s) = meta
            .get(key)
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
        {
            put_len(&mut list_meta, num, s.as_bytes());
        }
    }
    if let Some(n) = meta.get("remainingItemCount").and_then(Value::as_u64) {
        put_uvarint_field(&mut list_meta, 4, n);
    }
    put_len(&mut raw, 1, &list_meta);
    for item in list["items"].as_array().into_iter().flatten() {
        put_len(&mut raw, 2, &encode_raw(item, item_schema)?);
    }
    let s = |k: &str| list.get(k).and_then(Value::as_str).unwrap_or_default();
    Ok(envelope(s("apiVersion"), s("kind"), &raw))
}

/// One watch event as a protobuf stream frame: a 4-byte big-endian length, then a
/// `metav1.WatchEvent` message whose object is the enveloped object.
pub fn encode_watch_frame(
    event_type: &str,
    obj: &Value,
    schema: &Value,
) -> Result<Vec<u8>, ProtobufError> {
    Ok(watch_frame(event_type, &encode_object(obj, schema)?))
}

/// A watch frame around an already enveloped object.
pub fn watch_frame(event_type: &str, object: &[u8]) -> Vec<u8> {
    let mut raw_ext = Vec::new();
    put_len(&mut raw_ext, 1, object);
    let mut event = Vec::new();
    put_len(&mut event, 1, event_type.as_bytes());
    put_len(&mut event, 2, &raw_ext);
    let mut frame = Vec::with_capacity(event.len() + 4);
    frame.extend_from_slice(&(event.len() as u32).to_be_bytes());
    frame.extend_from_slice(&event);
    frame
}

/// A metav1 `Status` (a watch ERROR event's object) in the protobuf envelope.
pub fn encode_status(status: &Value) -> Vec<u8> {
    let mut raw = Vec::new();
    put_len(&mut raw, 1, b"");
    for (num, key) in [(2, "status"), (3, "message"), (4, "reason")] {
        if let Some(s) = status.get(key).and_then(Value::as_str) {
            put_len(&mut raw, num, s.as_bytes());
        }
    }
    if let Some(code) = status.get("code").and_then(Value::as_u64) {
        put_uvarint_field(&mut raw, 6, code);
    }
    envelope("v1", "Status", &raw)
}

/// `k8s\0` and a `runtime.Unknown` holding `raw`.
fn envelope(api_version: &str, kind: &str, raw: &[u8]) -> Vec<u8> {
    let mut type_meta = Vec::new();
    put_len(&mut type_meta, 1, api_version.as_bytes());
    put_len(&mut type_meta, 2, kind.as_bytes());

    let mut out = Vec::with_capacity(raw.len() + type_meta.len() + 16);
    out.extend_from_slice(&MAGIC);
    put_len(&mut out, 1, &type_meta);
    put_len(&mut out, 2, raw);
    put_len(&mut out, 3, b"");
    put_len(&mut out, 4, b"");
    out
}

// ---------------------------------------------------------------------------------
// Envelope

fn decode_envelope_at(body: &[u8]) -> Result<(Unknown, usize), ProtobufError> {
    let rest = body
        .strip_prefix(&MAGIC[..])
        .ok_or(ProtobufError::MissingMagic)?;
    let root = Path::ROOT;
    let mut out = Unknown::default();
    let mut raw_offset = MAGIC.len();
    let mut r = Reader::new(rest, MAGIC.len());
    while let Some(f) = r.next_field()? {
        match f.num {
            1 => {
                let path = root.child(Seg::Field("typeMeta"));
                let (data, offset) = f.len_data(&path)?;
                let mut tr = Reader::new(data, offset);
                while let Some(tf) = tr.next_field()? {
                    match tf.num {
                        1 => {
                            let p = path.child(Seg::Field("apiVersion"));
                            out.api_version = tf.string(&p)?.to_owned();
                        }
                        2 => {
                            let p = path.child(Seg::Field("kind"));
                            out.kind = tf.string(&p)?.to_owned();
                        }
                        _ => {}
                    }
                }
            }
            2 => {
                let (data, offset) = f.len_data(&root.child(Seg::Field("raw")))?;
                out.raw = data.to_vec();
                raw_offset = offset;
            }
            3 => {
                let p = root.child(Seg::Field("contentEncoding"));
                out.content_encoding = f.string(&p)?.to_owned();
            }
            4 => {
                let p = root.child(Seg::Field("contentType"));
                out.content_type = f.string(&p)?.to_owned();
            }
            _ => {}
        }
    }
    Ok((out, raw_offset))
}

fn object_to_json_at(
    raw: &[u8],
    schema: &Value,
    base: usize,
) -> Result<Map<String, Value>, ProtobufError> {
    let props = top_level_props(schema, Op::Decode)?;
    decode_message(raw, base, &props, &Path::ROOT, 1)
}

// ---------------------------------------------------------------------------------
// ObjectMeta

/// The built-in schema of `ObjectMeta`, in the same form as kind schemas.
fn object_meta_schema() -> &'static Value {
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

// ---------------------------------------------------------------------------------
// Schema interpretation

#[derive(Clone, Copy, PartialEq, Eq)]
enum Op {
    Decode,
    Encode,
}

fn schema_error(op: Op, path: &Path<'_>, reason: impl Into<String>) -> ProtobufError {
    let name = path.render();
    let reason = reason.into();
    match op {
        Op::Decode => ProtobufError::CannotDecode { name, reason },
        Op::Encode => ProtobufError::CannotEncode { name, reason },
    }
}

/// How a schema node maps to the wire.
#[derive(Clone, Copy)]
enum Kind<'s> {
    Str,
    Bytes,
    Time,
    Quantity,
    IntOrString,
    Int64,
    Int32,
    Double,
    Float,
    Bool,
    RawJson,
    /// A nested message; holds the object schema (for `properties`/`required`).
    Message(&'s Map<String, Value>),
    /// A map; holds the value schema.
    Map(&'s Value),
    /// A repeated field; holds the item schema.
    Array(&'s Value),
}

impl Kind<'_> {
    /// Whether a repeated field of this kind may use packed encoding.
    fn packable(self) -> bool {
        self.packed_wire_types().is_some()
    }

    /// The wire types a repeated field of this scalar kind accepts, for errors.
    fn packed_wire_types(self) -> Option<&'static str> {
        match self {
            Kind::Int64 | Kind::Int32 | Kind::Bool => Some("0 or 2"),
            Kind::Double => Some("1 or 2"),
            Kind::Float => Some("5 or 2"),
            _ => None,
        }
    }

    /// The unpacked wire type of a scalar kind (length-delimited for everything else).
    fn scalar_wire_type(self) -> u8 {
        match self {
            Kind::Int64 | Kind::Int32 | Kind::Bool => WT_VARINT,
            Kind::Double => WT_FIXED64,
            Kind::Float => WT_FIXED32,
            _ => WT_LEN,
        }
    }
}

fn flag(s: &Map<String, Value>, key: &str) -> bool {
    s.get(key).and_then(Value::as_bool) == Some(true)
}

const ARBITRARY_JSON: &str = "x-kubernetes-preserve-unknown-fields without a type holds arbitrary \
     JSON, which has no protobuf form";

fn classify(schema: &Value) -> Result<Kind<'_>, String> {
    let Some(s) = schema.as_object() else {
        return Err("schema is not a JSON object".into());
    };
    if flag(s, RAW_JSON_EXT) {
        return Ok(Kind::RawJson);
    }
    if flag(s, "x-kubernetes-int-or-string") {
        return Ok(Kind::IntOrString);
    }
    let format = s.get("format").and_then(Value::as_str).unwrap_or("");
    match s.get("type") {
        Some(Value::String(t)) => match t.as_str() {
            "string" => Ok(match format {
                "byte" => Kind::Bytes,
                "date-time" => Kind::Time,
                "quantity" => Kind::Quantity,
                "int-or-string" => Kind::IntOrString,
                _ => Kind::Str,
            }),
            "integer" if format == "int32" => Ok(Kind::Int32),
            "integer" => Ok(Kind::Int64),
            "number" if format == "float" => Ok(Kind::Float),
            "number" => Ok(Kind::Double),
            "boolean" => Ok(Kind::Bool),
            "array" => match s.get("items") {
                Some(items @ Value::Object(_)) => Ok(Kind::Array(items)),
                _ => Err("array schema has no items schema".into()),
            },
            "object" => object_kind(s),
            other => Err(format!("unsupported schema type {other:?}")),
        },
        Some(_) => Err("schema type is not a string".into()),
        None if s.contains_key("properties") || s.contains_key("additionalProperties") => {
            object_kind(s)
        }
        None if flag(s, "x-kubernetes-preserve-unknown-fields") => Err(ARBITRARY_JSON.into()),
        None => Err("schema has no type".into()),
    }
}

fn object_kind(s: &Map<String, Value>) -> Result<Kind<'_>, String> {
    if let Some(Value::Object(_)) = s.get("properties") {
        return Ok(Kind::Message(s));
    }
    match s.get("additionalProperties") {
        Some(v @ Value::Object(_)) => return Ok(Kind::Map(v)),
        Some(Value::Bool(true)) => {
            return Err(
                "additionalProperties: true holds arbitrary JSON, which has no \
                 protobuf form"
                    .into(),
            )
        }
        _ => {}
    }
    if flag(s, "x-kubernetes-preserve-unknown-fields") {
        return Err(ARBITRARY_JSON.into());
    }
    Ok(Kind::Message(s))
}

/// One property of a message schema that has a field number.
struct Prop<'s> {
    name: &'s str,
    num: u32,
    /// The property's kind, or why it has none (reported only if the field is used).
    kind: Result<Kind<'s>, String>,
    /// Drop `""` when decoding (not required, not nullable).
    omit_empty_string: bool,
    /// Drop `0` / `false` when decoding.
    omit_zero: bool,
}

fn message_props<'s>(
    schema: &'s Map<String, Value>,
    path: &Path<'_>,
    op: Op,
    top_level: bool,
) -> Result<Vec<Prop<'s>>, ProtobufError> {
    let mut props: Vec<Prop<'s>> = Vec::new();
    if top_level {
        props.push(Prop {
            name: "metadata",
            num: 1,
            kind: classify(object_meta_schema()),
            omit_empty_string: false,
            omit_zero: false,
        });
    }
    let Some(properties) = schema.get("properties") else {
        return Ok(props);
    };
    let Some(properties) = properties.as_object() else {
        return Err(schema_error(op, path, "properties is not an object"));
    };
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    for (name, prop) in properties {
        if top_level && matches!(name.as_str(), "metadata" | "apiVersion" | "kind") {
            continue;
        }
        let Some(num) = prop.get(FIELD_EXT) else {
            continue;
        };
        let ppath = path.child(Seg::Field(name));
        let num = num
            .as_u64()
            .filter(|n| (1..=MAX_FIELD_NUMBER).contains(n))
            .and_then(|n| u32::try_from(n).ok())
            .ok_or_else(|| schema_error(op, &ppath, format!("invalid {FIELD_EXT} {num}")))?;
        if let Some(other) = props.iter().find(|p| p.num == num) {
            let reason = format!("field number {num} is also used by {}", other.name);
            return Err(schema_error(op, &ppath, reason));
        }
        let kind = classify(prop);
        let omit_empty_string = matches!(kind, Ok(Kind::Str | Kind::Bytes))
            && !required.contains(&name.as_str())
            && prop.get("nullable").and_then(Value::as_bool) != Some(true);
        let omit_zero = prop.as_object().is_some_and(|p| flag(p, OMIT_ZERO_EXT));
        props.push(Prop {
            name,
            num,
            kind,
            omit_empty_string,
            omit_zero,
        });
    }
    Ok(props)
}

fn top_level_props(schema: &Value, op: Op) -> Result<Vec<Prop<'_>>, ProtobufError> {
    let root = Path::ROOT;
    match classify(schema) {
        Ok(Kind::Message(s)) => message_props(s, &root, op, true),
        Ok(_) => Err(schema_error(op, &root, "top-level schema is not an object")),
        Err(reason) => Err(schema_error(op, &root, reason)),
    }
}

// ---------------------------------------------------------------------------------
// Paths for error messages

#[derive(Clone, Copy)]
enum Seg<'a> {
    Root,
    Field(&'a str),
    Index(usize),
    Key(&'a str),
    MapKey,
}

/// A JSON path built on the stack while recursing; rendered only for errors.
#[derive(Clone, Copy)]
struct Path<'a> {
    parent: Option<&'a Path<'a>>,
    seg: Seg<'a>,
}

impl<'a> Path<'a> {
    const ROOT: Path<'static> = Path {
        parent: None,
        seg: Seg::Root,
    };

    fn child(&'a self, seg: Seg<'a>) -> Path<'a> {
        Path {
            parent: Some(self),
            seg,
        }
    }

    fn render(&self) -> String {
        let mut segs = Vec::new();
        let mut cur = Some(self);
        while let Some(p) = cur {
            segs.push(p.seg);
            cur = p.parent;
        }
        let mut s = String::new();
        for seg in segs.iter().rev() {
            match seg {
                Seg::Root => {}
                Seg::Field(name) => {
                    if !s.is_empty() {
                        s.push('.');
                    }
                    s.push_str(name);
                }
                Seg::Index(i) => {
                    let _ = write!(s, "[{i}]");
                }
                Seg::Key(k) => {
                    let _ = write!(s, "[{k:?}]");
                }
                Seg::MapKey => s.push_str("[key]"),
            }
        }
        if s.is_empty() {
            s.push_str("object");
        }
        s
    }
}

// ---------------------------------------------------------------------------------
// Wire reading

#[derive(Clone, Copy)]
enum Wire<'a> {
    Varint(u64),
    Fixed64(u64),
    Fixed32(u32),
    /// Length-delimited payload and the absolute offset where it starts.
    Len(&'a [u8], usize),
}

#[derive(Clone, Copy)]
struct Field<'a> {
    num: u32,
    wire: Wire<'a>,
}

impl<'a> Field<'a> {
    fn wire_type(&self) -> u8 {
        match self.wire {
            Wire::Varint(_) => WT_VARINT,
            Wire::Fixed64(_) => WT_FIXED64,
            Wire::Len(..) => WT_LEN,
            Wire::Fixed32(_) => WT_FIXED32,
        }
    }

    fn wrong(&self, path: &Path<'_>, expected: &'static str) -> ProtobufError {
        ProtobufError::WrongWireType {
            field: self.num,
            name: path.render(),
            actual: self.wire_type(),
            expected,
        }
    }

    fn len_data(&self, path: &Path<'_>) -> Result<(&'a [u8], usize), ProtobufError> {
        match self.wire {
            Wire::Len(data, offset) => Ok((data, offset)),
            _ => Err(self.wrong(path, "2")),
        }
    }

    fn string(&self, path: &Path<'_>) -> Result<&'a str, ProtobufError> {
        let (data, _) = self.len_data(path)?;
        std::str::from_utf8(data).map_err(|_| ProtobufError::InvalidUtf8 {
            field: self.num,
            name: path.render(),
        })
    }

    fn varint(&self, path: &Path<'_>) -> Result<u64, ProtobufError> {
        match self.wire {
            Wire::Varint(v) => Ok(v),
            _ => Err(self.wrong(path, "0")),
        }
    }

    fn fixed64(&self, path: &Path<'_>) -> Result<u64, ProtobufError> {
        match self.wire {
            Wire::Fixed64(v) => Ok(v),
            _ => Err(self.wrong(path, "1")),
        }
    }

    fn fixed32(&self, path: &Path<'_>) -> Result<u32, ProtobufError> {
        match self.wire {
            Wire::Fixed32(v) => Ok(v),
            _ => Err(self.wrong(path, "5")),
        }
    }
}

/// Reads fields from one message buffer; `base` is the buffer's offset in the body.
struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
    base: usize,
}

impl<'a> Reader<'a> {
    fn new(buf: &'a [u8], base: usize) -> Self {
        Reader { buf, pos: 0, base }
    }

    fn at(&self) -> usize {
        self.base + self.pos
    }

    fn is_empty(&self) -> bool {
        self.pos >= self.buf.len()
    }

    fn varint(&mut self) -> Result<u64, ProtobufError> {
        let offset = self.at();
        let mut value: u64 = 0;
        for i in 0..10 {
            let Some(&b) = self.buf.get(self.pos) else {
                return Err(ProtobufError::TruncatedVarint { offset });
            };
            self.pos += 1;
            if i == 9 && b > 1 {
                return Err(ProtobufError::VarintOverflow { offset });
            }
            value |= u64::from(b & 0x7f) << (7 * i);
            if b & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err(ProtobufError::VarintOverflow { offset })
    }

    fn take(&mut self, len: u64, what: &'static str) -> Result<&'a [u8], ProtobufError> {
        let offset = self.at();
        let available = self.buf.len().saturating_sub(self.pos);
        let slice = usize::try_from(len)
            .ok()
            .filter(|&n| n <= available)
            .and_then(|n| self.buf.get(self.pos..self.pos + n))
            .ok_or(ProtobufError::Truncated {
                what,
                offset,
                needed: len,
                available,
            })?;
        self.pos += slice.len();
        Ok(slice)
    }

    fn fixed<const N: usize>(&mut self, what: &'static str) -> Result<[u8; N], ProtobufError> {
        let offset = self.at();
        let bytes = self.take(N as u64, what)?;
        bytes.try_into().map_err(|_| ProtobufError::Truncated {
            what,
            offset,
            needed: N as u64,
            available: bytes.len(),
        })
    }

    fn next_field(&mut self) -> Result<Option<Field<'a>>, ProtobufError> {
        if self.is_empty() {
            return Ok(None);
        }
        let offset = self.at();
        let tag = self.varint()?;
        let num = tag >> 3;
        let num = u32::try_from(num)
            .ok()
            .filter(|&n| n != 0 && u64::from(n) <= MAX_FIELD_NUMBER)
            .ok_or(ProtobufError::InvalidFieldNumber { field: num, offset })?;
        let wire = match (tag & 7) as u8 {
            WT_VARINT => Wire::Varint(self.varint()?),
            WT_FIXED64 => Wire::Fixed64(u64::from_le_bytes(self.fixed("fixed64 value")?)),
            WT_LEN => {
                let len = self.varint()?;
                let start = self.at();
                Wire::Len(self.take(len, "length-delimited field")?, start)
            }
            WT_FIXED32 => Wire::Fixed32(u32::from_le_bytes(self.fixed("fixed32 value")?)),
            wire_type => {
                return Err(ProtobufError::UnsupportedWireType {
                    field: num,
                    wire_type,
                    offset,
                })
            }
        };
        Ok(Some(Field { num, wire }))
    }
}

// ---------------------------------------------------------------------------------
// Decoding

fn check_depth(depth: usize) -> Result<(), ProtobufError> {
    if depth > MAX_DEPTH {
        Err(ProtobufError::TooDeep { max: MAX_DEPTH })
    } else {
        Ok(())
    }
}

fn invalid(path: &Path<'_>, reason: impl Into<String>) -> ProtobufError {
    ProtobufError::InvalidValue {
        name: path.render(),
        reason: reason.into(),
    }
}

/// Values collected for one field while its occurrences are read.
#[derive(Default)]
struct Slot {
    single: Option<Value>,
    list: Vec<Value>,
    dict: Map<String, Value>,
}

impl Slot {
    /// The field's final JSON value, or `None` when it is absent.
    fn finish(self, kind: Kind<'_>) -> Option<Value> {
        match kind {
            Kind::Array(_) if self.list.is_empty() => None,
            Kind::Array(_) => Some(Value::Array(self.list)),
            Kind::Map(_) if self.dict.is_empty() => None,
            Kind::Map(_) => Some(Value::Object(self.dict)),
            _ => self.single,
        }
    }
}

/// Decodes a message's fields by the property table.
fn decode_message(
    data: &[u8],
    base: usize,
    props: &[Prop<'_>],
    path: &Path<'_>,
    depth: usize,
) -> Result<Map<String, Value>, ProtobufError> {
    check_depth(depth)?;
    let mut slots: Vec<Slot> = props.iter().map(|_| Slot::default()).collect();
    let mut r = Reader::new(data, base);
    while let Some(f) = r.next_field()? {
        let Some(i) = props.iter().position(|p| p.num == f.num) else {
            continue;
        };
        let (Some(prop), Some(slot)) = (props.get(i), slots.get_mut(i)) else {
            continue;
        };
        let fpath = path.child(Seg::Field(prop.name));
        let kind = prop
            .kind
            .as_ref()
            .map_err(|reason| schema_error(Op::Decode, &fpath, reason.as_str()))?;
        accumulate(slot, &f, *kind, &fpath, depth)?;
    }
    let mut out = Map::new();
    for (prop, slot) in props.iter().zip(slots) {
        let Ok(kind) = prop.kind else { continue };
        let Some(value) = slot.finish(kind) else {
            continue;
        };
        let omit = match &value {
            Value::String(s) => prop.omit_empty_string && s.is_empty(),
            Value::Number(n) => {
                prop.omit_zero && (n.as_i64() == Some(0) || n.as_f64() == Some(0.0))
            }
            Value::Bool(b) => prop.omit_zero && !b,
            _ => false,
        };
        if !omit {
            out.insert(prop.name.to_owned(), value);
        }
    }
    Ok(out)
}

/// Adds one occurrence of a field to its slot (appending for repeated fields, adding
/// an entry for maps, merging for messages, replacing for scalars).
fn accumulate(
    slot: &mut Slot,
    f: &Field<'_>,
    kind: Kind<'_>,
    path: &Path<'_>,
    depth: usize,
) -> Result<(), ProtobufError> {
    match kind {
        Kind::Array(items) => {
            let item_kind =
                classify(items).map_err(|reason| schema_error(Op::Decode, path, reason))?;
            if let (true, Wire::Len(data, offset)) = (item_kind.packable(), f.wire) {
                return decode_packed(data, offset, item_kind, f.num, path, &mut slot.list);
            }
            let ipath = path.child(Seg::Index(slot.list.len()));
            if let Some(expected) = item_kind.packed_wire_types() {
                if f.wire_type() != item_kind.scalar_wire_type() {
                    return Err(f.wrong(&ipath, expected));
                }
            }
            let value = decode_value(f, item_kind, &ipath, depth)?;
            slot.list.push(value.unwrap_or(Value::Null));
        }
        Kind::Map(values) => {
            let value_kind =
                classify(values).map_err(|reason| schema_error(Op::Decode, path, reason))?;
            let (key, value) = decode_entry(f, value_kind, path, depth + 1)?;
            slot.dict.insert(key, value);
        }
        Kind::Message(_) => {
            let value = decode_value(f, kind, path, depth)?;
            match (&mut slot.single, value) {
                (Some(existing), Some(value)) => merge(existing, value),
                (single, value) => *single = value,
            }
        }
        _ => slot.single = decode_value(f, kind, path, depth)?,
    }
    Ok(())
}

/// Merges a later occurrence of a message into an earlier one, as protobuf does.
fn merge(dst: &mut Value, src: Value) {
    match (dst, src) {
        (Value::Object(d), Value::Object(s)) => {
            for (k, v) in s {
                match d.get_mut(&k) {
                    Some(existing) => merge(existing, v),
                    None => {
                        d.insert(k, v);
                    }
                }
            }
        }
        (Value::Array(d), Value::Array(s)) => d.extend(s),
        (d, s) => *d = s,
    }
}

/// Decodes a single (non-repeated) value; `None` means "zero value, leave out".
fn decode_value(
    f: &Field<'_>,
    kind: Kind<'_>,
    path: &Path<'_>,
    depth: usize,
) -> Result<Option<Value>, ProtobufError> {
    let value = match kind {
        Kind::Str => Value::String(f.string(path)?.to_owned()),
        Kind::Bytes => {
            let (data, _) = f.len_data(path)?;
            Value::String(base64::engine::general_purpose::STANDARD.encode(data))
        }
        Kind::Time => {
            let (data, offset) = f.len_data(path)?;
            return decode_time(data, offset, path, depth + 1);
        }
        Kind::Quantity => {
            let (data, offset) = f.len_data(path)?;
            decode_quantity(data, offset, path, depth + 1)?
        }
        Kind::IntOrString => {
            let (data, offset) = f.len_data(path)?;
            decode_int_or_string(data, offset, path, depth + 1)?
        }
        Kind::Int64 => Value::from(f.varint(path)? as i64),
        Kind::Int32 => Value::from(f.varint(path)? as i32),
        Kind::Bool => Value::Bool(f.varint(path)? != 0),
        Kind::Double => double_value(f64::from_bits(f.fixed64(path)?), path)?,
        Kind::Float => float_value(f32::from_bits(f.fixed32(path)?), path)?,
        Kind::RawJson => {
            let (data, offset) = f.len_data(path)?;
            return decode_raw_json(data, offset, path, depth + 1);
        }
        Kind::Message(schema) => {
            let (data, offset) = f.len_data(path)?;
            let props = message_props(schema, path, Op::Decode, false)?;
            Value::Object(decode_message(data, offset, &props, path, depth + 1)?)
        }
        Kind::Array(_) | Kind::Map(_) => {
            // A list or map directly inside a list item or map value travels in a
            // wrapper message whose field 1 holds it.
            let (data, offset) = f.len_data(path)?;
            check_depth(depth + 1)?;
            let mut slot = Slot::default();
            let mut r = Reader::new(data, offset);
            while let Some(inner) = r.next_field()? {
                if inner.num == 1 {
                    accumulate(&mut slot, &inner, kind, path, depth + 1)?;
                }
            }
            slot.finish(kind).unwrap_or_else(|| match kind {
                Kind::Map(_) => Value::Object(Map::new()),
                _ => Value::Array(Vec::new()),
            })
        }
    };
    Ok(Some(value))
}

fn double_value(v: f64, path: &Path<'_>) -> Result<Value, ProtobufError> {
    Number::from_f64(v)
        .map(Value::Number)
        .ok_or_else(|| invalid(path, format!("{v} is not representable in JSON")))
}

fn float_value(v: f32, path: &Path<'_>) -> Result<Value, ProtobufError> {
    // Go prints float32 values with float32 precision; going through the shortest
    // float32 decimal keeps 0.1f32 as 0.1 rather than 0.10000000149011612.
    let widened = v.to_string().parse::<f64>().unwrap_or(f64::from(v));
    double_value(widened, path)
}

fn decode_packed(
    data: &[u8],
    offset: usize,
    kind: Kind<'_>,
    num: u32,
    path: &Path<'_>,
    out: &mut Vec<Value>,
) -> Result<(), ProtobufError> {
    let mut r = Reader::new(data, offset);
    while !r.is_empty() {
        let ipath = path.child(Seg::Index(out.len()));
        let value = match kind {
            Kind::Int64 => Value::from(r.varint()? as i64),
            Kind::Int32 => Value::from(r.varint()? as i32),
            Kind::Bool => Value::Bool(r.varint()? != 0),
            Kind::Double => double_value(
                f64::from_bits(u64::from_le_bytes(r.fixed("packed double")?)),
                &ipath,
            )?,
            Kind::Float => float_value(
                f32::from_bits(u32::from_le_bytes(r.fixed("packed float")?)),
                &ipath,
            )?,
            _ => {
                return Err(ProtobufError::WrongWireType {
                    field: num,
                    name: path.render(),
                    actual: WT_LEN,
                    expected: "for a scalar",
                })
            }
        };
        out.push(value);
    }
    Ok(())
}

/// Decodes one map entry `{1 key, 2 value}`; a missing key or value is its zero value.
fn decode_entry(
    f: &Field<'_>,
    value_kind: Kind<'_>,
    path: &Path<'_>,
    depth: usize,
) -> Result<(String, Value), ProtobufError> {
    check_depth(depth)?;
    let (data, offset) = f.len_data(path)?;
    let mut key = None;
    let mut value = None;
    let mut r = Reader::new(data, offset);
    while let Some(ef) = r.next_field()? {
        match ef.num {
            1 => key = Some(ef),
            2 => value = Some(ef),
            _ => {}
        }
    }
    let key = match key {
        Some(k) => k.string(&path.child(Seg::MapKey))?.to_owned(),
        None => String::new(),
    };
    let vpath = path.child(Seg::Key(&key));
    let value = match value {
        Some(v) => decode_value(&v, value_kind, &vpath, depth)?.unwrap_or(Value::Null),
        None => zero_value(value_kind),
    };
    Ok((key, value))
}

/// The JSON form of a field's zero value (for map entries without a value).
fn zero_value(kind: Kind<'_>) -> Value {
    match kind {
        Kind::Str | Kind::Bytes => Value::String(String::new()),
        Kind::Quantity => Value::String("0".into()),
        Kind::Int64 | Kind::Int32 | Kind::IntOrString => Value::from(0),
        Kind::Double | Kind::Float => Value::from(0.0),
        Kind::Bool => Value::Bool(false),
        Kind::Message(_) | Kind::Map(_) => Value::Object(Map::new()),
        Kind::Array(_) => Value::Array(Vec::new()),
        Kind::Time | Kind::RawJson => Value::Null,
    }
}

/// Decodes `Time {1 seconds, 2 nanos}`; an empty message is the zero time (absent).
fn decode_time(
    data: &[u8],
    offset: usize,
    path: &Path<'_>,
    depth: usize,
) -> Result<Option<Value>, ProtobufError> {
    check_depth(depth)?;
    if data.is_empty() {
        return Ok(None);
    }
    let mut seconds: i64 = 0;
    let mut nanos: i64 = 0;
    let mut r = Reader::new(data, offset);
    while let Some(f) = r.next_field()? {
        match f.num {
            1 => seconds = f.varint(&path.child(Seg::Field("seconds")))? as i64,
            2 => nanos = i64::from(f.varint(&path.child(Seg::Field("nanos")))? as i32),
            _ => {}
        }
    }
    format_time(seconds, nanos)
        .map(|s| Some(Value::String(s)))
        .map_err(|reason| invalid(path, reason))
}

/// Renders a timestamp as RFC 3339 in UTC: whole seconds when `nanos` is 0 (`Time`),
/// otherwise with microseconds (`MicroTime`).
fn format_time(seconds: i64, nanos: i64) -> Result<String, String> {
    let nanos = u32::try_from(nanos)
        .ok()
        .filter(|&n| n < 1_000_000_000)
        .ok_or_else(|| format!("nanos {nanos} out of range"))?;
    let t = DateTime::<Utc>::from_timestamp(seconds, nanos)
        .filter(|t| (0..=9999).contains(&t.year()))
        .ok_or_else(|| format!("timestamp {seconds}s is out of range"))?;
    let precision = if nanos == 0 {
        SecondsFormat::Secs
    } else {
        SecondsFormat::Micros
    };
    Ok(t.to_rfc3339_opts(precision, true))
}

/// Decodes `IntOrString {1 type, 2 intVal, 3 strVal}`. A length-delimited field 1 is
/// read as `Quantity {1 string}`, the other message that int-or-string schemas use.
fn decode_int_or_string(
    data: &[u8],
    offset: usize,
    path: &Path<'_>,
    depth: usize,
) -> Result<Value, ProtobufError> {
    check_depth(depth)?;
    let mut ty: u64 = 0;
    let mut int_val: i32 = 0;
    let mut str_val = String::new();
    let mut quantity = None;
    let mut r = Reader::new(data, offset);
    while let Some(f) = r.next_field()? {
        match (f.num, f.wire) {
            (1, Wire::Varint(v)) => ty = v,
            (1, Wire::Len(..)) => quantity = Some(f.string(path)?.to_owned()),
            (1, _) => return Err(f.wrong(path, "0 or 2")),
            (2, _) => int_val = f.varint(path)? as i32,
            (3, _) => str_val = f.string(path)?.to_owned(),
            _ => {}
        }
    }
    if let Some(q) = quantity {
        return Ok(Value::String(q));
    }
    match ty {
        0 => Ok(Value::from(int_val)),
        1 => Ok(Value::String(str_val)),
        other => Err(invalid(
            path,
            format!("IntOrString type {other} is neither 0 nor 1"),
        )),
    }
}

/// Decodes `Quantity {1 string}`.
fn decode_quantity(
    data: &[u8],
    offset: usize,
    path: &Path<'_>,
    depth: usize,
) -> Result<Value, ProtobufError> {
    check_depth(depth)?;
    let mut out = String::from("0");
    let mut r = Reader::new(data, offset);
    while let Some(f) = r.next_field()? {
        if f.num == 1 {
            out = f.string(path)?.to_owned();
        }
    }
    Ok(Value::String(out))
}

/// Decodes a message `{1 bytes}` whose bytes are JSON text (`FieldsV1`).
fn decode_raw_json(
    data: &[u8],
    offset: usize,
    path: &Path<'_>,
    depth: usize,
) -> Result<Option<Value>, ProtobufError> {
    check_depth(depth)?;
    let mut raw: &[u8] = &[];
    let mut r = Reader::new(data, offset);
    while let Some(f) = r.next_field()? {
        if f.num == 1 {
            raw = f.len_data(path)?.0;
        }
    }
    if raw.is_empty() {
        return Ok(None);
    }
    serde_json::from_slice(raw)
        .map(Some)
        .map_err(|e| invalid(path, format!("not JSON: {e}")))
}

// ---------------------------------------------------------------------------------
// Encoding

fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn put_tag(out: &mut Vec<u8>, num: u32, wire_type: u8) {
    put_varint(out, (u64::from(num) << 3) | u64::from(wire_type));
}

fn put_len(out: &mut Vec<u8>, num: u32, data: &[u8]) {
    put_tag(out, num, WT_LEN);
    put_varint(out, data.len() as u64);
    out.extend_from_slice(data);
}

fn put_uvarint_field(out: &mut Vec<u8>, num: u32, v: u64) {
    put_tag(out, num, WT_VARINT);
    put_varint(out, v);
}

fn mismatch(path: &Path<'_>, expected: &str, got: &Value) -> ProtobufError {
    let got = match got {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    };
    schema_error(Op::Encode, path, format!("expected {expected}, got {got}"))
}

fn encode_message(
    obj: &Map<String, Value>,
    props: &[Prop<'_>],
    path: &Path<'_>,
    depth: usize,
    out: &mut Vec<u8>,
) -> Result<(), ProtobufError> {
    check_depth(depth)?;
    let mut ordered: Vec<&Prop<'_>> = props.iter().collect();
    ordered.sort_by_key(|p| p.num);
    for prop in ordered {
        let Some(value) = obj.get(prop.name).filter(|v| !v.is_null()) else {
            continue;
        };
        let fpath = path.child(Seg::Field(prop.name));
        let kind = prop
            .kind
            .as_ref()
            .map_err(|reason| schema_error(Op::Encode, &fpath, reason.as_str()))?;
        encode_field(prop.num, value, *kind, &fpath, depth, out)?;
    }
    Ok(())
}

/// Writes a field, expanding arrays into repeated fields and maps into entries.
fn encode_field(
    num: u32,
    value: &Value,
    kind: Kind<'_>,
    path: &Path<'_>,
    depth: usize,
    out: &mut Vec<u8>,
) -> Result<(), ProtobufError> {
    match kind {
        Kind::Array(items) => {
            let item_kind =
                classify(items).map_err(|reason| schema_error(Op::Encode, path, reason))?;
            let Some(list) = value.as_array() else {
                return Err(mismatch(path, "an array", value));
            };
            for (i, item) in list.iter().enumerate() {
                let ipath = path.child(Seg::Index(i));
                if item.is_null() {
                    return Err(mismatch(&ipath, "a value", item));
                }
                encode_value(num, item, item_kind, &ipath, depth, out)?;
            }
        }
        Kind::Map(values) => {
            let value_kind =
                classify(values).map_err(|reason| schema_error(Op::Encode, path, reason))?;
            let Some(map) = value.as_object() else {
                return Err(mismatch(path, "an object", value));
            };
            check_depth(depth + 1)?;
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            let mut entry = Vec::new();
            for key in keys {
                entry.clear();
                put_len(&mut entry, 1, key.as_bytes());
                if let Some(v) = map.get(key).filter(|v| !v.is_null()) {
                    let vpath = path.child(Seg::Key(key));
                    encode_value(2, v, value_kind, &vpath, depth + 1, &mut entry)?;
                }
                put_len(out, num, &entry);
            }
        }
        _ => encode_value(num, value, kind, path, depth, out)?,
    }
    Ok(())
}

/// Writes one (non-repeated) value as field `num`.
fn encode_value(
    num: u32,
    value: &Value,
    kind: Kind<'_>,
    path: &Path<'_>,
    depth: usize,
    out: &mut Vec<u8>,
) -> Result<(), ProtobufError> {
    match kind {
        Kind::Str => {
            let s = value
                .as_str()
                .ok_or_else(|| mismatch(path, "a string", value))?;
            put_len(out, num, s.as_bytes());
        }
        Kind::Bytes => {
            let s = value
                .as_str()
                .ok_or_else(|| mismatch(path, "a string", value))?;
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(s)
                .map_err(|e| schema_error(Op::Encode, path, format!("invalid base64: {e}")))?;
            put_len(out, num, &bytes);
        }
        Kind::Time => {
            check_depth(depth + 1)?;
            let s = value
                .as_str()
                .ok_or_else(|| mismatch(path, "a string", value))?;
            let t = DateTime::parse_from_rfc3339(s).map_err(|e| {
                schema_error(Op::Encode, path, format!("invalid RFC 3339 time: {e}"))
            })?;
            let mut msg = Vec::new();
            put_uvarint_field(&mut msg, 1, t.timestamp() as u64);
            put_uvarint_field(&mut msg, 2, u64::from(t.timestamp_subsec_nanos()));
            put_len(out, num, &msg);
        }
        Kind::Quantity => {
            check_depth(depth + 1)?;
            let s = match value {
                Value::String(s) => s.clone(),
                Value::Number(n) => n.to_string(),
                other => return Err(mismatch(path, "a string or number", other)),
            };
            let mut msg = Vec::new();
            put_len(&mut msg, 1, s.as_bytes());
            put_len(out, num, &msg);
        }
        Kind::IntOrString => {
            check_depth(depth + 1)?;
            let (ty, int_val, str_val) = match value {
                Value::Number(n) => {
                    let i = n
                        .as_i64()
                        .and_then(|i| i32::try_from(i).ok())
                        .ok_or_else(|| mismatch(path, "a 32-bit integer or a string", value))?;
                    (0, i, "")
                }
                Value::String(s) => (1, 0, s.as_str()),
                other => return Err(mismatch(path, "an integer or a string", other)),
            };
            let mut msg = Vec::new();
            put_uvarint_field(&mut msg, 1, ty);
            put_uvarint_field(&mut msg, 2, i64::from(int_val) as u64);
            put_len(&mut msg, 3, str_val.as_bytes());
            put_len(out, num, &msg);
        }
        Kind::Int64 => {
            let i = value
                .as_i64()
                .ok_or_else(|| mismatch(path, "an integer", value))?;
            put_uvarint_field(out, num, i as u64);
        }
        Kind::Int32 => {
            let i = value
                .as_i64()
                .filter(|i| i32::try_from(*i).is_ok())
                .ok_or_else(|| mismatch(path, "a 32-bit integer", value))?;
            put_uvarint_field(out, num, i as u64);
        }
        Kind::Double => {
            let v = value
                .as_f64()
                .ok_or_else(|| mismatch(path, "a number", value))?;
            put_tag(out, num, WT_FIXED64);
            out.extend_from_slice(&v.to_bits().to_le_bytes());
        }
        Kind::Float => {
            let v = value
                .as_f64()
                .map(|v| v as f32)
                .filter(|v| v.is_finite())
                .ok_or_else(|| mismatch(path, "a 32-bit float", value))?;
            put_tag(out, num, WT_FIXED32);
            out.extend_from_slice(&v.to_bits().to_le_bytes());
        }
        Kind::Bool => {
            let b = value
                .as_bool()
                .ok_or_else(|| mismatch(path, "a boolean", value))?;
            put_uvarint_field(out, num, u64::from(b));
        }
        Kind::RawJson => {
            check_depth(depth + 1)?;
            let raw = serde_json::to_vec(value)
                .map_err(|e| schema_error(Op::Encode, path, e.to_string()))?;
            let mut msg = Vec::new();
            put_len(&mut msg, 1, &raw);
            put_len(out, num, &msg);
        }
        Kind::Message(schema) => {
            let obj = value
                .as_object()
                .ok_or_else(|| mismatch(path, "an object", value))?;
            let props = message_props(schema, path, Op::Encode, false)?;
            let mut msg = Vec::new();
            encode_message(obj, &props, path, depth + 1, &mut msg)?;
            put_len(out, num, &msg);
        }
        Kind::Array(_) | Kind::Map(_) => {
            // Wrapper message whose field 1 holds the nested list or map.
            check_depth(depth + 1)?;
            let mut msg = Vec::new();
            encode_field(1, value, kind, path, depth + 1, &mut msg)?;
            put_len(out, num, &msg);
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------------

#[cfg(test)]
mod tests {
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
        107, 56, 115, 0, 10, 15, 10, 2, 118, 49, 18, 9, 67, 111, 110, 102, 105, 103, 77, 97, 112,
        18, 42, 10, 24, 10, 1, 120, 18, 0, 26, 7, 100, 101, 102, 97, 117, 108, 116, 34, 0, 42, 0,
        50, 0, 56, 0, 66, 0, 18, 6, 10, 1, 97, 18, 1, 98, 18, 6, 10, 1, 99, 18, 1, 100, 26, 0, 34,
        0,
    ];
    const KUBECTL_NAMESPACE: &[u8] = &[
        107, 56, 115, 0, 10, 15, 10, 2, 118, 49, 18, 9, 78, 97, 109, 101, 115, 112, 97, 99, 101,
        18, 25, 10, 17, 10, 1, 110, 18, 0, 26, 0, 34, 0, 42, 0, 50, 0, 56, 0, 66, 0, 18, 0, 26, 2,
        10, 0, 26, 0, 34, 0,
    ];
    const KUBECTL_SECRET: &[u8] = &[
        107, 56, 115, 0, 10, 12, 10, 2, 118, 49, 18, 6, 83, 101, 99, 114, 101, 116, 18, 36, 10, 24,
        10, 1, 115, 18, 0, 26, 7, 100, 101, 102, 97, 117, 108, 116, 34, 0, 42, 0, 50, 0, 56, 0, 66,
        0, 18, 6, 10, 1, 107, 18, 1, 118, 26, 0, 26, 0, 34, 0,
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
        let mut schema =
            json!({"type": "object", "properties": {"leaf": leaf}, "x-protobuf-field": 2});
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
}
