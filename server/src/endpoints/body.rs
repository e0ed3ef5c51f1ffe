//! Reading a request body: at most [`MAX_BODY_BYTES`], inflated as it arrives when it is
//! compressed (`Content-Encoding: gzip` or `deflate`).
//!
//! actix's `Bytes` extractor inflates each received chunk whole before it checks the
//! limit, so one small chunk of a gzip bomb (deflate reaches about 1000:1) became tens
//! of megabytes at once. Here the inflater writes into a buffer that refuses to grow
//! past the limit, so a body never holds more than the limit, compressed or not.

use std::io::Write;

use actix_web::error::PayloadError;
use actix_web::http::header::{HeaderMap, CONTENT_ENCODING, CONTENT_LENGTH};
use bytes::Bytes;
use futures_util::{Stream, StreamExt};

use super::negotiation::MAX_BODY_BYTES;
use crate::api::status::StatusReason;
use crate::api::ApiError;

/// A buffer that fails writes taking it past `limit`.
struct Bounded {
    buf: Vec<u8>,
    limit: usize,
}

const OVER_LIMIT: &str = "over the body limit";

impl Write for Bounded {
    fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
        if self.buf.len() + data.len() > self.limit {
            return Err(std::io::Error::other(OVER_LIMIT));
        }
        self.buf.extend_from_slice(data);
        Ok(data.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

enum Sink {
    Plain(Bounded),
    Gzip(flate2::write::GzDecoder<Bounded>),
    Deflate(flate2::write::ZlibDecoder<Bounded>),
}

impl Sink {
    fn write(&mut self, data: &[u8]) -> std::io::Result<()> {
        match self {
            Sink::Plain(b) => b.write_all(data),
            Sink::Gzip(d) => d.write_all(data),
            Sink::Deflate(d) => d.write_all(data),
        }
    }

    fn finish(self) -> std::io::Result<Vec<u8>> {
        Ok(match self {
            Sink::Plain(b) => b.buf,
            Sink::Gzip(d) => d.finish()?.buf,
            Sink::Deflate(d) => d.finish()?.buf,
        })
    }
}

/// Reads the body `payload` carries, as `headers` describe it, within `limit` bytes both
/// as sent and as inflated: 413 beyond, 415 for an encoding other than gzip or deflate,
/// 400 for a body that does not inflate.
pub async fn read_limited<S>(
    headers: &HeaderMap,
    payload: S,
    limit: usize,
) -> Result<Bytes, ApiError>
where
    S: Stream<Item = Result<Bytes, PayloadError>>,
{
    let too_large = || ApiError::too_large(limit);
    let declared = headers
        .get(CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok());
    if declared.is_some_and(|n| n > limit as u64) {
        return Err(too_large());
    }
    let encoding = headers
        .get(CONTENT_ENCODING)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .trim()
        .to_ascii_lowercase();
    let out = Bounded {
        buf: Vec::new(),
        limit,
    };
    let mut sink = match encoding.as_str() {
        "" | "identity" => Sink::Plain(out),
        "gzip" | "x-gzip" => Sink::Gzip(flate2::write::GzDecoder::new(out)),
        "deflate" => Sink::Deflate(flate2::write::ZlibDecoder::new(out)),
        other => {
            return Err(ApiError::new(
                415,
                StatusReason::UnsupportedMediaType,
                format!("unsupported Content-Encoding {other:?}: only gzip and deflate request bodies are accepted"),
            ))
        }
    };
    let failed = |e: std::io::Error| {
        if e.to_string() == OVER_LIMIT {
            too_large()
        } else {
            ApiError::bad_request(format!("the {encoding} request body does not inflate: {e}"))
        }
    };
    let mut received = 0usize;
    let mut payload = std::pin::pin!(payload);
    while let Some(chunk) = payload.next().await {
        let chunk = chunk.map_err(|e| match e {
            PayloadError::Overflow => too_large(),
            other => ApiError::bad_request(format!("reading the request body: {other}")),
        })?;
        received += chunk.len();
        if received > limit {
            return Err(too_large());
        }
        sink.write(&chunk).map_err(failed)?;
    }
    sink.finish().map(Bytes::from).map_err(failed)
}

/// [`read_limited`] at the server's body limit.
pub async fn read<S>(headers: &HeaderMap, payload: S) -> Result<Bytes, ApiError>
where
    S: Stream<Item = Result<Bytes, PayloadError>>,
{
    read_limited(headers, payload, MAX_BODY_BYTES).await
}

#[cfg(test)]
mod tests {
    use super::*;
    use actix_web::http::header::HeaderValue;

    fn headers(encoding: Option<&str>) -> HeaderMap {
        let mut h = HeaderMap::new();
        if let Some(e) = encoding {
            h.insert(CONTENT_ENCODING, HeaderValue::from_str(e).unwrap());
        }
        h
    }

    fn chunks(data: &[u8]) -> impl Stream<Item = Result<Bytes, PayloadError>> {
        let parts: Vec<Result<Bytes, PayloadError>> = data
            .chunks(64 * 1024)
            .map(|c| Ok(Bytes::copy_from_slice(c)))
            .collect();
        futures_util::stream::iter(parts)
    }

    fn gzip(data: &[u8]) -> Vec<u8> {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
        e.write_all(data).unwrap();
        e.finish().unwrap()
    }

    #[tokio::test]
    async fn plain_and_compressed_bodies_within_the_limit() {
        let body = b"{\"a\":1}".repeat(100);
        let got = read_limited(&headers(None), chunks(&body), 1000)
            .await
            .unwrap();
        assert_eq!(&got[..], &body[..]);
        let got = read_limited(&headers(Some("gzip")), chunks(&gzip(&body)), 1000)
            .await
            .unwrap();
        assert_eq!(&got[..], &body[..]);
        let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::fast());
        z.write_all(&body).unwrap();
        let got = read_limited(
            &headers(Some("deflate")),
            chunks(&z.finish().unwrap()),
            1000,
        )
        .await
        .unwrap();
        assert_eq!(&got[..], &body[..]);
    }

    #[tokio::test]
    async fn a_bomb_stops_at_the_limit() {
        // 64 MiB of zeros in about 64 KB: one chunk would inflate to all of it.
        let bomb = gzip(&vec![0u8; 64 * 1024 * 1024]);
        assert!(bomb.len() < 128 * 1024);
        let e = read_limited(&headers(Some("gzip")), chunks(&bomb), 1024 * 1024)
            .await
            .unwrap_err();
        assert_eq!(e.code, 413);
        let e = read_limited(&headers(None), chunks(&[0u8; 2000]), 1000)
            .await
            .unwrap_err();
        assert_eq!(e.code, 413);
    }

    #[tokio::test]
    async fn bad_encodings_are_client_errors() {
        let e = read_limited(&headers(Some("br")), chunks(b"x"), 1000)
            .await
            .unwrap_err();
        assert_eq!(e.code, 415);
        let e = read_limited(&headers(Some("gzip")), chunks(b"not gzip at all"), 1000)
            .await
            .unwrap_err();
        assert_eq!(e.code, 400, "{e:?}");
    }
}
