//! [`ProtobufError`] and the helpers that build it, shared by decoder and encoder.

use super::path::Path;
use super::MAX_DEPTH;

/// Why a protobuf body could not be decoded or a JSON object could not be encoded.
#[derive(Debug, thiserror::Error)]
pub enum ProtobufError {
    /// The body does not start with [`MAGIC`](super::MAGIC).
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

#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Op {
    Decode,
    Encode,
}

pub(super) fn schema_error(op: Op, path: &Path<'_>, reason: impl Into<String>) -> ProtobufError {
    let name = path.render();
    let reason = reason.into();
    match op {
        Op::Decode => ProtobufError::CannotDecode { name, reason },
        Op::Encode => ProtobufError::CannotEncode { name, reason },
    }
}

pub(super) fn check_depth(depth: usize) -> Result<(), ProtobufError> {
    if depth > MAX_DEPTH {
        Err(ProtobufError::TooDeep { max: MAX_DEPTH })
    } else {
        Ok(())
    }
}
