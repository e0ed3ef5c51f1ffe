//! Schema-driven decoding of an object message into JSON.

use base64::Engine as _;
use chrono::{DateTime, Datelike as _, SecondsFormat, Utc};
use serde_json::{Map, Number, Value};

use super::error::{check_depth, schema_error, Op, ProtobufError};
use super::path::{Path, Seg};
use super::schema::{classify, embedded_props, message_props, top_level_props, Kind, Prop};
use super::wire::{Field, Reader, Wire, WT_LEN};

/// Decodes an object message (`raw` of the envelope) into its JSON fields.
///
/// Field 1 is decoded as `metadata` (`ObjectMeta`); other fields follow `schema`'s
/// `x-protobuf-field` numbers, and fields it does not describe are skipped. The result
/// holds `metadata` first, then the schema's properties in schema order. It does not
/// contain `apiVersion` or `kind`, which live in the envelope.
pub fn object_to_json(raw: &[u8], schema: &Value) -> Result<Map<String, Value>, ProtobufError> {
    object_to_json_at(raw, schema, 0)
}

pub(super) fn object_to_json_at(
    raw: &[u8],
    schema: &Value,
    base: usize,
) -> Result<Map<String, Value>, ProtobufError> {
    let props = top_level_props(schema, Op::Decode)?;
    decode_message(raw, base, &props, &Path::ROOT, 1)
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
    // Fields of Go-embedded messages, flattened into this object.
    let mut embedded = Map::new();
    let mut r = Reader::new(data, base);
    while let Some(f) = r.next_field()? {
        let Some(i) = props
            .iter()
            .position(|p| p.via.is_empty() && p.num == f.num)
        else {
            let inner = embedded_props(props, f.num);
            if !inner.is_empty() {
                let (data, offset) = f.len_data(path)?;
                let fields = decode_message(data, offset, &inner, path, depth + 1)?;
                for (k, v) in fields {
                    match embedded.get_mut(&k) {
                        Some(existing) => merge(existing, v),
                        None => {
                            embedded.insert(k, v);
                        }
                    }
                }
            }
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
        if !prop.via.is_empty() {
            if let Some(v) = embedded.remove(prop.name) {
                out.insert(prop.name.to_owned(), v);
            }
            continue;
        }
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
