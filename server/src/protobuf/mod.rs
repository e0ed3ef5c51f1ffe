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
//! Three schema extensions are understood besides `x-protobuf-field`:
//! `x-protobuf-raw-json: true` marks a message `{1 bytes}` whose bytes are JSON text
//! (`FieldsV1`, `RawExtension`), rendered as the parsed JSON;
//! `x-protobuf-omit-zero: true` drops a numeric `0` or `false` when decoding; and
//! `x-protobuf-embedded: [n, ...]` puts a property in a Go-embedded message (field `n`
//! of the parent, and so on inward), whose JSON fields are flattened into the parent's
//! object, as a Volume's VolumeSource fields sit beside its `name`.
//!
//! Layout: `wire` (primitives), `path` (error paths), `error`, `envelope`, `object_meta`,
//! `schema` (schema to wire kinds), `decode`, `encode`, `watch` (stream frames).

mod decode;
mod encode;
mod envelope;
mod error;
mod object_meta;
mod path;
#[cfg(test)]
mod properties;
mod schema;
#[cfg(test)]
mod tests;
mod watch;
mod wire;

pub use decode::object_to_json;
pub use encode::{encode_list, encode_raw};
pub use envelope::{decode_envelope, decode_object, encode_object, Unknown};
pub use error::ProtobufError;
pub use watch::{encode_status, encode_watch_frame, watch_frame};

/// The prefix of every Kubernetes protobuf body: `k8s` followed by a zero byte.
pub const MAGIC: [u8; 4] = *b"k8s\0";

/// The deepest nesting of messages accepted when decoding or encoding.
pub const MAX_DEPTH: usize = 64;

/// Schema extension giving a property's protobuf field number.
pub const FIELD_EXT: &str = "x-protobuf-field";

/// Schema extension marking a message `{1 bytes}` whose bytes are JSON text.
pub const RAW_JSON_EXT: &str = "x-protobuf-raw-json";

/// Schema extension on a property of a Go-embedded message, whose JSON fields are
/// flattened into the parent: the field numbers of the messages that carry it.
pub const EMBEDDED_EXT: &str = "x-protobuf-embedded";

/// Schema extension dropping a decoded numeric `0` / `false` from the JSON.
pub const OMIT_ZERO_EXT: &str = "x-protobuf-omit-zero";
