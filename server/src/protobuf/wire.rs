//! Wire-level primitives: wire types, reading tagged fields, writing varints, tags and
//! length-delimited fields.

use super::error::ProtobufError;
use super::path::Path;

/// Largest field number protobuf allows.
pub(super) const MAX_FIELD_NUMBER: u64 = (1 << 29) - 1;

pub(super) const WT_VARINT: u8 = 0;
pub(super) const WT_FIXED64: u8 = 1;
pub(super) const WT_LEN: u8 = 2;
pub(super) const WT_FIXED32: u8 = 5;

#[derive(Clone, Copy)]
pub(super) enum Wire<'a> {
    Varint(u64),
    Fixed64(u64),
    Fixed32(u32),
    /// Length-delimited payload and the absolute offset where it starts.
    Len(&'a [u8], usize),
}

#[derive(Clone, Copy)]
pub(super) struct Field<'a> {
    pub(super) num: u32,
    pub(super) wire: Wire<'a>,
}

impl<'a> Field<'a> {
    pub(super) fn wire_type(&self) -> u8 {
        match self.wire {
            Wire::Varint(_) => WT_VARINT,
            Wire::Fixed64(_) => WT_FIXED64,
            Wire::Len(..) => WT_LEN,
            Wire::Fixed32(_) => WT_FIXED32,
        }
    }

    pub(super) fn wrong(&self, path: &Path<'_>, expected: &'static str) -> ProtobufError {
        ProtobufError::WrongWireType {
            field: self.num,
            name: path.render(),
            actual: self.wire_type(),
            expected,
        }
    }

    pub(super) fn len_data(&self, path: &Path<'_>) -> Result<(&'a [u8], usize), ProtobufError> {
        match self.wire {
            Wire::Len(data, offset) => Ok((data, offset)),
            _ => Err(self.wrong(path, "2")),
        }
    }

    pub(super) fn string(&self, path: &Path<'_>) -> Result<&'a str, ProtobufError> {
        let (data, _) = self.len_data(path)?;
        std::str::from_utf8(data).map_err(|_| ProtobufError::InvalidUtf8 {
            field: self.num,
            name: path.render(),
        })
    }

    pub(super) fn varint(&self, path: &Path<'_>) -> Result<u64, ProtobufError> {
        match self.wire {
            Wire::Varint(v) => Ok(v),
            _ => Err(self.wrong(path, "0")),
        }
    }

    pub(super) fn fixed64(&self, path: &Path<'_>) -> Result<u64, ProtobufError> {
        match self.wire {
            Wire::Fixed64(v) => Ok(v),
            _ => Err(self.wrong(path, "1")),
        }
    }

    pub(super) fn fixed32(&self, path: &Path<'_>) -> Result<u32, ProtobufError> {
        match self.wire {
            Wire::Fixed32(v) => Ok(v),
            _ => Err(self.wrong(path, "5")),
        }
    }
}

/// Reads fields from one message buffer; `base` is the buffer's offset in the body.
pub(super) struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
    base: usize,
}

impl<'a> Reader<'a> {
    pub(super) fn new(buf: &'a [u8], base: usize) -> Self {
        Reader { buf, pos: 0, base }
    }

    fn at(&self) -> usize {
        self.base + self.pos
    }

    pub(super) fn is_empty(&self) -> bool {
        self.pos >= self.buf.len()
    }

    pub(super) fn varint(&mut self) -> Result<u64, ProtobufError> {
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

    pub(super) fn fixed<const N: usize>(
        &mut self,
        what: &'static str,
    ) -> Result<[u8; N], ProtobufError> {
        let offset = self.at();
        let bytes = self.take(N as u64, what)?;
        bytes.try_into().map_err(|_| ProtobufError::Truncated {
            what,
            offset,
            needed: N as u64,
            available: bytes.len(),
        })
    }

    pub(super) fn next_field(&mut self) -> Result<Option<Field<'a>>, ProtobufError> {
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

pub(super) fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

pub(super) fn put_tag(out: &mut Vec<u8>, num: u32, wire_type: u8) {
    put_varint(out, (u64::from(num) << 3) | u64::from(wire_type));
}

pub(super) fn put_len(out: &mut Vec<u8>, num: u32, data: &[u8]) {
    put_tag(out, num, WT_LEN);
    put_varint(out, data.len() as u64);
    out.extend_from_slice(data);
}

pub(super) fn put_uvarint_field(out: &mut Vec<u8>, num: u32, v: u64) {
    put_tag(out, num, WT_VARINT);
    put_varint(out, v);
}
