//! The `k8s\0` prefix and `runtime.Unknown` envelope, and whole bodies built on it.

use serde_json::{Map, Value};

use super::decode::object_to_json_at;
use super::encode::encode_raw;
use super::error::{schema_error, Op, ProtobufError};
use super::path::{Path, Seg};
use super::wire::{put_len, Reader};
use super::MAGIC;

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

/// `k8s\0` and a `runtime.Unknown` holding `raw`.
pub(super) fn envelope(api_version: &str, kind: &str, raw: &[u8]) -> Vec<u8> {
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
