//! A buffer kept per thread for encoders whose output size is not known up front: a
//! fresh `Vec` grown to a ~1 KB response reallocates several times, and under load the
//! allocator often cannot grow it in place.

use std::cell::RefCell;

/// Capacity a thread keeps between uses; a larger buffer (one large body) is given back.
const KEPT: usize = 64 * 1024;

/// Runs `encode` on the thread's empty buffer and copies what it wrote out at its size.
pub fn encode<E>(encode: impl FnOnce(&mut Vec<u8>) -> Result<(), E>) -> Result<Vec<u8>, E> {
    thread_local! {
        static BUFFER: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
    }
    BUFFER.with(|cell| {
        // Taken, not borrowed: an encoder that encodes again (nested) gets a fresh one.
        let mut buf = cell.take();
        buf.clear();
        let out = encode(&mut buf).map(|()| buf.to_vec());
        if buf.capacity() <= KEPT {
            *cell.borrow_mut() = buf;
        }
        out
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn output_is_exact_and_nested_use_is_safe() {
        let out = encode::<()>(|buf| {
            buf.extend_from_slice(b"outer ");
            let inner = encode::<()>(|b| {
                b.extend_from_slice(b"inner");
                Ok(())
            })
            .unwrap();
            buf.extend_from_slice(&inner);
            Ok(())
        })
        .unwrap();
        assert_eq!(out, b"outer inner");
        assert_eq!(out.capacity(), out.len());
        let big = encode::<()>(|buf| {
            buf.resize(2 * KEPT, b'x');
            Ok(())
        })
        .unwrap();
        assert_eq!(big.len(), 2 * KEPT);
        assert_eq!(encode::<()>(|_| Ok(())).unwrap(), b"");
        // What a use grew stays for the next one.
        encode::<()>(|buf| {
            buf.resize(4096, b'x');
            Ok(())
        })
        .unwrap();
        encode::<()>(|buf| {
            assert!(
                buf.is_empty() && buf.capacity() >= 4096,
                "{}",
                buf.capacity()
            );
            Ok(())
        })
        .unwrap();
    }
}
