//! Watch stream framing: length-prefixed `metav1.WatchEvent` frames and the `Status`
//! an ERROR event carries.

use serde_json::Value;

use super::envelope::encode_object;
use super::envelope::envelope;
use super::error::ProtobufError;
use super::wire::{put_len, put_uvarint_field};

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
