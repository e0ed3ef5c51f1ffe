//! Connection upgrades proxied to an APIService's server: a WebSocket handshake (what
//! `kubectl exec`, `attach`, `cp` and `port-forward` send since kubectl 1.31) or a
//! SPDY/3.1 one (kubectl before 1.31, and its fallback) travels as any proxied request
//! does, with the front-proxy headers over the proxy client certificate, on a
//! connection of its own; once the backend answers 101, bytes flow both ways as they
//! arrive until either side closes. Any other answer is passed on as the backend gave
//! it.
//!
//! The client's bytes after the upgrade request come from actix-web (a WebSocket
//! request's payload) or, for any other protocol, from the connection's held read side
//! (`server::client_stream`), which exists only when the request was its connection's
//! first; a later one is refused with 400.

use actix_web::dev::Payload;
use actix_web::http::header::{HeaderMap, CONNECTION, UPGRADE};
use actix_web::http::StatusCode;
use actix_web::HttpResponse;
use bytes::Bytes;
use futures_util::StreamExt;
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};

use super::backend::ReachError;
use super::proxy::{answer, build_request, copy_response_headers, target, unreachable};
use super::{Aggregator, ApiService};
use crate::api::ApiError;
use crate::auth::UserInfo;
use crate::server::client_stream::UpgradeSlot;

/// The most read from the backend at once, on an upgraded connection.
const CHUNK: usize = 16 * 1024;

/// The protocol a request asks to switch to: its `Upgrade` header, when `Connection`
/// names `upgrade`.
pub fn requested_protocol(headers: &HeaderMap) -> Option<String> {
    let asks = headers
        .get_all(CONNECTION)
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|option| option.trim().eq_ignore_ascii_case("upgrade"));
    let protocol = headers.get(UPGRADE)?.to_str().ok()?.trim();
    (asks && !protocol.is_empty()).then(|| protocol.to_string())
}

/// Where the client's bytes come from once the connection switched.
pub struct ClientSide {
    /// The request's payload: a WebSocket upgrade's traffic (actix-web reads it).
    pub payload: Payload,
    /// The connection's held read side, for other protocols (HTTP/1 connections).
    pub held: Option<UpgradeSlot>,
}

/// One request for `protocol` (from [`requested_protocol`]) proxied to `service`'s
/// server, the connection switched when the backend agrees.
#[allow(clippy::too_many_arguments)]
pub async fn forward_upgrade(
    aggregator: &Aggregator,
    service: &ApiService,
    user: &UserInfo,
    method: &actix_web::http::Method,
    path_and_query: &str,
    headers: &HeaderMap,
    protocol: &str,
    client: ClientSide,
) -> Result<HttpResponse, ApiError> {
    // Anything but WebSocket needs the connection's held read side: actix-web would
    // read the bytes after the head as further requests.
    let held = match client.held {
        _ if protocol.eq_ignore_ascii_case("websocket") => None,
        Some(slot) if slot.holds() => Some(slot),
        _ => {
            return Err(ApiError::bad_request(format!(
                "upgrading the connection to {protocol:?} is supported only by the first request on an HTTP/1.1 connection, without a body"
            )))
        }
    };
    let (backend, addr) = target(aggregator, service).await?;
    let mut request = build_request(
        &backend,
        user,
        method,
        path_and_query,
        headers,
        Bytes::new(),
    )?;
    let upgrade_headers = request.headers_mut();
    upgrade_headers.insert(
        hyper::header::CONNECTION,
        hyper::header::HeaderValue::from_static("Upgrade"),
    );
    upgrade_headers.insert(
        hyper::header::UPGRADE,
        hyper::header::HeaderValue::from_str(protocol)
            .map_err(|e| ApiError::bad_request(format!("Upgrade: {e}")))?,
    );
    // A connection of its own: once switched it never serves another request.
    let mut sender = backend
        .connect_new(&addr)
        .await
        .map_err(|e| unreachable(aggregator, e))?;
    let response = sender
        .send_request(request)
        .await
        .map_err(|e| unreachable(aggregator, ReachError::Connect(e.to_string())))?;
    if response.status() != hyper::StatusCode::SWITCHING_PROTOCOLS {
        return Ok(answer(response, None));
    }
    let mut head = HttpResponse::build(StatusCode::SWITCHING_PROTOCOLS);
    copy_response_headers(&response, &mut head);
    head.upgrade(protocol.to_string());
    let upgraded = hyper::upgrade::on(response).await.map_err(|e| {
        ApiError::unavailable(format!("error trying to reach service: upgrading: {e}"))
    })?;
    let (from_backend, mut to_backend) = tokio::io::split(TokioIo::new(upgraded));
    match held {
        // The client's payload is tied to this worker's thread, so is its copy.
        None => {
            actix_web::rt::spawn(client_to_backend(client.payload, to_backend));
        }
        // Claimed now, before the 101 is written: the claim is what switches it.
        Some(slot) => {
            let mut from_client = slot.claim().ok_or_else(|| {
                ApiError::internal("the connection's read side was claimed twice")
            })?;
            actix_web::rt::spawn(async move {
                let _ = tokio::io::copy(&mut from_client, &mut to_backend).await;
                let _ = to_backend.shutdown().await;
            });
        }
    }
    let mut switched = head.streaming(backend_to_client(from_backend));
    // The connection's bytes as they are: actix-http frames a body streamed after any
    // request but a WebSocket one in chunks (a 101 announces no framing).
    switched.head_mut().no_chunking(true);
    Ok(switched)
}

/// Copies what the client sends to the backend; the backend's side is shut once the
/// client's ends.
async fn client_to_backend(mut payload: Payload, mut to: impl tokio::io::AsyncWrite + Unpin) {
    while let Some(Ok(chunk)) = payload.next().await {
        if to.write_all(&chunk).await.is_err() {
            return;
        }
    }
    let _ = to.shutdown().await;
}

/// What the backend sends, chunk by chunk as it arrives, until it closes. A read error
/// (a backend closing without TLS `close_notify`, as many do) ends it as a close does:
/// what was read is still written, then the client's connection is shut down.
fn backend_to_client(
    from: impl AsyncRead + Unpin + 'static,
) -> impl futures_util::Stream<Item = Result<Bytes, std::io::Error>> {
    futures_util::stream::unfold(from, |mut from| async move {
        let mut buf = vec![0; CHUNK];
        match from.read(&mut buf).await {
            Ok(0) => None,
            Ok(n) => {
                buf.truncate(n);
                Some((Ok(Bytes::from(buf)), from))
            }
            Err(e) => {
                tracing::debug!(error = %e, "an upgraded backend connection ended");
                None
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use actix_web::http::header::HeaderValue;

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut out = HeaderMap::new();
        for (n, v) in pairs {
            out.append(
                actix_web::http::header::HeaderName::from_static(n),
                HeaderValue::from_static(v),
            );
        }
        out
    }

    #[test]
    fn an_upgrade_is_asked_by_connection_upgrade_and_names_its_protocol() {
        let ws = headers(&[
            ("connection", "keep-alive, Upgrade"),
            ("upgrade", "websocket"),
        ]);
        assert_eq!(requested_protocol(&ws).as_deref(), Some("websocket"));
        let spdy = headers(&[("connection", "Upgrade"), ("upgrade", "SPDY/3.1")]);
        assert_eq!(requested_protocol(&spdy).as_deref(), Some("SPDY/3.1"));
        assert_eq!(
            requested_protocol(&headers(&[("upgrade", "websocket")])),
            None
        );
        assert_eq!(
            requested_protocol(&headers(&[("connection", "upgrade")])),
            None
        );
    }
}
