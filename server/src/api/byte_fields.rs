//! The `[]byte` fields of built-in kinds (`format: byte`: a Secret's `data`, a
//! ConfigMap's `binaryData`, `caBundle`s) are base64 in JSON. kube-apiserver decodes them
//! with Go's JSON decoder, so bad base64 is a decoding error (400 BadRequest), not a
//! validation error; custom kinds' `format: byte` stays a 422 schema check.

use base64::engine::general_purpose::{GeneralPurpose, GeneralPurposeConfig};
use base64::{alphabet, DecodeError, Engine};
use serde_json::Value;

use crate::registry::schema::child_schema;

/// Go's `base64.StdEncoding`: padding required, unused trailing bits allowed.
const GO_STD_ENCODING: GeneralPurpose = GeneralPurpose::new(
    &alphabet::STANDARD,
    GeneralPurposeConfig::new().with_decode_allow_trailing_bits(true),
);

/// The first `format: byte` value of `obj` that is not base64, as Go's decoder reports
/// it: `illegal base64 data at input byte N`.
pub fn first_illegal_base64(obj: &Value, schema: &Value) -> Option<String> {
    if schema.is_null() {
        return None;
    }
    if schema.get("format").and_then(Value::as_str) == Some("byte") {
        let offset = obj.as_str().and_then(illegal_at)?;
        return Some(format!("illegal base64 data at input byte {offset}"));
    }
    match obj {
        Value::Object(map) => map
            .iter()
            .find_map(|(k, v)| first_illegal_base64(v, child_schema(schema, k))),
        Value::Array(items) => {
            let item = schema.get("items").unwrap_or(&Value::Null);
            items.iter().find_map(|v| first_illegal_base64(v, item))
        }
        _ => None,
    }
}

/// Where Go's decoder gives up on `text`, if it does (it skips line breaks).
fn illegal_at(text: &str) -> Option<usize> {
    let bytes: Vec<u8> = text
        .bytes()
        .filter(|b| !matches!(b, b'\r' | b'\n'))
        .collect();
    let err = GO_STD_ENCODING.decode(&bytes).err()?;
    Some(match err {
        DecodeError::InvalidByte(at, _) | DecodeError::InvalidLastSymbol(at, _) => at,
        // Go stops at the start of an incomplete last quantum, or at bad padding.
        DecodeError::InvalidLength(len) => len - len % 4,
        DecodeError::InvalidPadding => bytes
            .iter()
            .position(|b| *b == b'=')
            .unwrap_or(bytes.len() - bytes.len() % 4),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn bad_base64_in_byte_fields_is_found_with_gos_offset() {
        let schema = json!({ "type": "object", "properties": { "data": { "type": "object", "additionalProperties": { "type": "string", "format": "byte" } }, "note": { "type": "string" } } });
        let ok = json!({ "data": { "a": "aGVsbG8=", "b": "" }, "note": "not base64!" });
        assert_eq!(first_illegal_base64(&ok, &schema), None);
        let bad = json!({ "data": { "a": "aGVsbG8=", "b": "not*base64" } });
        assert_eq!(
            first_illegal_base64(&bad, &schema).as_deref(),
            Some("illegal base64 data at input byte 3")
        );
        let short = json!({ "data": { "a": "aGVsbG8" } });
        assert_eq!(
            first_illegal_base64(&short, &schema).as_deref(),
            Some("illegal base64 data at input byte 4")
        );
        // Line breaks are skipped, trailing bits allowed, as Go's decoder does.
        let lenient = json!({ "data": { "a": "aGVs\nbG8=", "b": "YR==" } });
        assert_eq!(first_illegal_base64(&lenient, &schema), None);
    }
}
