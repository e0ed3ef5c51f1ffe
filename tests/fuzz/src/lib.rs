//! The fuzz targets' bodies, one module per target (`fuzz_targets/*.rs` are one line
//! each). Each feeds libFuzzer's input to the server's own entry points, the ones its
//! handlers call, and fails (panics) on a panic of the server's code or on a server
//! error (5xx) where a client's mistake must be a 4xx `Status`.
//!
//! Inputs are text where they can be, so the corpora read as what a client sends: a
//! first line naming what to exercise (a resource, a content type), then the payload.

pub mod bodies;
pub mod crds;
pub mod definitions;
pub mod fixture;
pub mod lists;
pub mod patches;
pub mod request_info;
pub mod selectors;

use apiserver::api::ApiError;

/// Fails the run when `result` is a server error: bad input must be a 4xx. 504 is the
/// one 5xx a client can cause on purpose (a resourceVersion the store has not reached,
/// upstream's `Too large resource version`).
pub fn client_errors_only<T>(result: &Result<T, ApiError>, input: &str) {
    if let Err(e) = result {
        assert!(
            e.code < 500 || e.code == 504,
            "a server error for client input {input:?}: {e}"
        );
    }
}

/// The first line of `data` (the header) and the rest, as text; `None` when the input
/// is not UTF-8 (the HTTP layer has decoded what these entry points see).
pub fn header_and_rest(data: &[u8]) -> Option<(&str, &[u8])> {
    let split = data.iter().position(|b| *b == b'\n').unwrap_or(data.len());
    let header = std::str::from_utf8(&data[..split]).ok()?;
    Some((header.trim(), data.get(split + 1..).unwrap_or_default()))
}

/// A stable pick among `n` choices for a name the input does not resolve (so a mutated
/// header still reaches some choice rather than none).
pub fn pick(name: &str, n: usize) -> usize {
    let h = name
        .bytes()
        .fold(0usize, |h, b| h.wrapping_mul(31).wrapping_add(b as usize));
    h % n.max(1)
}
