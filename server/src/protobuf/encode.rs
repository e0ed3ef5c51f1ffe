//! Schema-driven encoding of a JSON object (or a List of them) into its message.

use base64::Engine as _;
use chrono::DateTime;
use serde_json::{Map, Value};

use super::envelope::envelope;
use super::error::{check_depth, schema_error, Op, ProtobufError};
use super::path::{Path, Seg};
use super::schema::{
    classify, embedded_numbers, embedded_props, message_props, top_level_props, Kind, Prop,
};
use super::wire::{put_len, put_tag, put_uvarint_field, WT_FIXED32, WT_FIXED64};

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
    let mut ordered: Vec<&Prop<'_>> = props.iter().filter(|p| p.via.is_empty()).collect();
    ordered.sort_by_key(|p| p.num);
    // Go-embedded messages (always written, as Go writes a non-pointer struct), in field
    // order with the message's own fields.
    let mut embedded = embedded_numbers(props).into_iter().peekable();
    for prop in ordered {
        while let Some(num) = embedded.next_if(|&n| n < prop.num) {
            encode_embedded(obj, props, num, path, depth, out)?;
        }
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
    for num in embedded {
        encode_embedded(obj, props, num, path, depth, out)?;
    }
    Ok(())
}

/// Writes field `num`, a Go-embedded message, from the flattened fields of `obj`.
fn encode_embedded(
    obj: &Map<String, Value>,
    props: &[Prop<'_>],
    num: u32,
    path: &Path<'_>,
    depth: usize,
    out: &mut Vec<u8>,
) -> Result<(), ProtobufError> {
    let inner = embedded_props(props, num);
    let mut buf = Vec::new();
    encode_message(obj, &inner, path, depth + 1, &mut buf)?;
    put_len(out, num, &buf);
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
