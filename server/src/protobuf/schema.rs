//! Reading a kind's OpenAPI schema: how each node maps to the wire, and a message's
//! numbered properties.

use serde_json::{Map, Value};

use super::error::{schema_error, Op, ProtobufError};
use super::object_meta::object_meta_schema;
use super::path::{Path, Seg};
use super::wire::{MAX_FIELD_NUMBER, WT_FIXED32, WT_FIXED64, WT_LEN, WT_VARINT};
use super::{EMBEDDED_EXT, FIELD_EXT, OMIT_ZERO_EXT, RAW_JSON_EXT};

/// How a schema node maps to the wire.
#[derive(Clone, Copy)]
pub(super) enum Kind<'s> {
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
    pub(super) fn packable(self) -> bool {
        self.packed_wire_types().is_some()
    }

    /// The wire types a repeated field of this scalar kind accepts, for errors.
    pub(super) fn packed_wire_types(self) -> Option<&'static str> {
        match self {
            Kind::Int64 | Kind::Int32 | Kind::Bool => Some("0 or 2"),
            Kind::Double => Some("1 or 2"),
            Kind::Float => Some("5 or 2"),
            _ => None,
        }
    }

    /// The unpacked wire type of a scalar kind (length-delimited for everything else).
    pub(super) fn scalar_wire_type(self) -> u8 {
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

pub(super) fn classify(schema: &Value) -> Result<Kind<'_>, String> {
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
#[derive(Clone)]
pub(super) struct Prop<'s> {
    pub(super) name: &'s str,
    pub(super) num: u32,
    /// The Go-embedded messages that carry the property (`x-protobuf-embedded`): their
    /// field numbers, outermost first; `num` is its number in the innermost. Empty: a
    /// field of the message itself.
    pub(super) via: Vec<u32>,
    /// The property's kind, or why it has none (reported only if the field is used).
    pub(super) kind: Result<Kind<'s>, String>,
    /// Drop `""` when decoding (not required, not nullable).
    pub(super) omit_empty_string: bool,
    /// Drop `0` / `false` when decoding.
    pub(super) omit_zero: bool,
}

pub(super) fn message_props<'s>(
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
            via: Vec::new(),
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
        let via = match prop.get(EMBEDDED_EXT) {
            None => Vec::new(),
            Some(list) => list
                .as_array()
                .and_then(|l| {
                    l.iter()
                        .map(|n| {
                            n.as_u64()
                                .filter(|n| (1..=MAX_FIELD_NUMBER).contains(n))
                                .and_then(|n| u32::try_from(n).ok())
                        })
                        .collect::<Option<Vec<u32>>>()
                })
                .ok_or_else(|| schema_error(op, &ppath, format!("invalid {EMBEDDED_EXT}")))?,
        };
        if let Some(other) = props.iter().find(|p| p.num == num && p.via == via) {
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
            via,
            kind,
            omit_empty_string,
            omit_zero,
        });
    }
    Ok(props)
}

pub(super) fn top_level_props(schema: &Value, op: Op) -> Result<Vec<Prop<'_>>, ProtobufError> {
    let root = Path::ROOT;
    match classify(schema) {
        Ok(Kind::Message(s)) => message_props(s, &root, op, true),
        Ok(_) => Err(schema_error(op, &root, "top-level schema is not an object")),
        Err(reason) => Err(schema_error(op, &root, reason)),
    }
}

/// The properties carried by the embedded message that is field `num` of a message with
/// `props`, as that message's own (one level of `via` taken off). Empty when `num` is
/// not an embedded message.
pub(super) fn embedded_props<'s>(props: &[Prop<'s>], num: u32) -> Vec<Prop<'s>> {
    props
        .iter()
        .filter(|p| p.via.first() == Some(&num))
        .map(|p| Prop {
            via: p.via[1..].to_vec(),
            ..p.clone()
        })
        .collect()
}

/// The field numbers of the embedded messages directly inside a message with `props`.
pub(super) fn embedded_numbers(props: &[Prop<'_>]) -> Vec<u32> {
    let mut nums: Vec<u32> = props
        .iter()
        .filter_map(|p| p.via.first().copied())
        .collect();
    nums.sort_unstable();
    nums.dedup();
    nums
}
