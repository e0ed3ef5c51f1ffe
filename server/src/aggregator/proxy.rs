//! One request proxied to the server of the APIService that claims its group-version.
//! The user this server authenticated travels as front-proxy headers (`X-Remote-User`,
//! `X-Remote-Group`, `X-Remote-Extra-<key>`, `X-Remote-Uid`) over the connection made
//! with the proxy client certificate; the client's own credentials do not travel. The
//! request body is read within the body limit; the answer streams back as it arrives
//! (watches included).

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use actix_web::http::header::{HeaderMap, HeaderName};
use actix_web::http::StatusCode;
use actix_web::HttpResponse;
use bytes::Bytes;
use futures_util::Stream;
use http_body_util::Full;
use hyper::body::Body;

use super::backend::{Backend, ReachError, Sender};
use super::{Aggregator, ApiService};
use crate::api::ApiError;
use crate::auth::UserInfo;

/// Headers that describe one connection, not the request (RFC 9110 §7.6.1).
const HOP_BY_HOP: &[&str] = &[
    "connection",
    "keep-alive",
    "proxy-authenticate",
    "proxy-authorization",
    "proxy-connection",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
];

/// Whether a client's header stays out of the proxied request: its credentials, its
/// impersonation (already applied: the user sent is the impersonated one), front-proxy
/// headers it may have forged, and what this server already decoded.
fn dropped_from_request(name: &str) -> bool {
    HOP_BY_HOP.contains(&name)
        || name == "authorization"
        || name == "host"
        || name == "content-length"
        || name == "content-encoding"
        || name.starts_with("impersonate-")
        || name.starts_with("x-remote-")
}

/// Proxies one request to `service`'s server and answers what it answered.
pub async fn forward(
    aggregator: &Aggregator,
    service: &ApiService,
    user: &UserInfo,
    method: &actix_web::http::Method,
    path_and_query: &str,
    headers: &HeaderMap,
    body: Bytes,
) -> Result<HttpResponse, ApiError> {
    let (backend, addr) = target(aggregator, service).await?;
    let request = build_request(&backend, user, method, path_and_query, headers, body)?;
    let (sender, response) = backend
        .send(&addr, request)
        .await
        .map_err(|e| unreachable(aggregator, ReachError::Connect(e)))?;
    Ok(answer(response, Some((backend, addr, sender))))
}

/// The backend of `service` and where it is reached now; 503 when its availability
/// checks found it down (as upstream, it is not tried) or it cannot be resolved.
pub(super) async fn target(
    aggregator: &Aggregator,
    service: &ApiService,
) -> Result<(Arc<Backend>, (String, u16)), ApiError> {
    let Some(backend) = service.backend.clone() else {
        return Err(ApiError::internal("a local APIService was proxied"));
    };
    if !service.available {
        return Err(ApiError::unavailable("service unavailable"));
    }
    let addr = backend
        .location(
            &aggregator.catalog,
            &aggregator.store,
            aggregator.endpoint_routing,
        )
        .await
        .map_err(|e| unreachable(aggregator, e))?;
    Ok((backend, addr))
}

/// A backend that could not be reached: 503, and the availability checks look again.
pub(super) fn unreachable(aggregator: &Aggregator, e: ReachError) -> ApiError {
    aggregator.recheck.notify_one();
    ApiError::unavailable(format!("error trying to reach service: {e}"))
}

/// The backend's answer as this server gives it: its status and end-to-end headers,
/// the body streamed; `done`'s connection is kept for the next request once it ends.
pub(super) fn answer(
    response: hyper::Response<hyper::body::Incoming>,
    done: Option<(Arc<Backend>, (String, u16), Sender)>,
) -> HttpResponse {
    let mut answer = HttpResponse::build(
        StatusCode::from_u16(response.status().as_u16()).unwrap_or(StatusCode::BAD_GATEWAY),
    );
    copy_response_headers(&response, &mut answer);
    answer.streaming(Streamed {
        body: response.into_body(),
        done,
    })
}

/// The backend's end-to-end headers onto `answer` (hop-by-hop ones and the length,
/// which this server's own encoding decides, stay behind).
pub(super) fn copy_response_headers<B>(
    response: &hyper::Response<B>,
    answer: &mut actix_web::HttpResponseBuilder,
) {
    for (name, value) in response.headers() {
        if HOP_BY_HOP.contains(&name.as_str()) || name == "content-length" {
            continue;
        }
        if let (Ok(n), Ok(v)) = (
            HeaderName::from_bytes(name.as_str().as_bytes()),
            actix_web::http::header::HeaderValue::from_bytes(value.as_bytes()),
        ) {
            answer.append_header((n, v));
        }
    }
}

/// The request as the backend gets it.
pub(super) fn build_request(
    backend: &Backend,
    user: &UserInfo,
    method: &actix_web::http::Method,
    path_and_query: &str,
    headers: &HeaderMap,
    body: Bytes,
) -> Result<hyper::Request<Full<Bytes>>, ApiError> {
    let mut request = hyper::Request::builder()
        .method(method.as_str())
        .uri(path_and_query)
        .header(
            "host",
            format!("{}:{}", backend.server_name(), backend.spec().service.port),
        );
    for (name, value) in headers {
        if !dropped_from_request(name.as_str()) {
            request = request.header(name.as_str(), value.as_bytes());
        }
    }
    for (name, value) in front_proxy_headers(user) {
        request = request.header(name, value);
    }
    request
        .body(Full::new(body))
        .map_err(|e| ApiError::bad_request(format!("the request cannot be proxied: {e}")))
}

/// The front-proxy headers naming `user`: extra keys are percent-encoded, as upstream
/// writes them (header names cannot hold every character a key may).
pub fn front_proxy_headers(user: &UserInfo) -> Vec<(String, String)> {
    let mut out = vec![("X-Remote-User".to_string(), user.name.clone())];
    if !user.uid.is_empty() {
        out.push(("X-Remote-Uid".into(), user.uid.clone()));
    }
    for group in &user.groups {
        out.push(("X-Remote-Group".into(), group.clone()));
    }
    for (key, values) in &user.extra {
        let name = format!("X-Remote-Extra-{}", escape_extra_key(key));
        for v in values {
            out.push((name.clone(), v.clone()));
        }
    }
    out
}

/// Percent-encodes what is not a token character of a header name (upstream escapes
/// everything but unreserved URL characters).
fn escape_extra_key(key: &str) -> String {
    let mut out = String::with_capacity(key.len());
    for b in key.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// The backend's answer, passed on frame by frame; the connection goes back to the
/// backend's idle ones when the answer has ended.
struct Streamed {
    body: hyper::body::Incoming,
    done: Option<(Arc<Backend>, (String, u16), Sender)>,
}

impl Stream for Streamed {
    type Item = Result<Bytes, actix_web::Error>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        loop {
            match Pin::new(&mut self.body).poll_frame(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(None) => {
                    if let Some((backend, addr, sender)) = self.done.take() {
                        backend.release(addr, sender);
                    }
                    return Poll::Ready(None);
                }
                Poll::Ready(Some(Err(e))) => {
                    self.done = None;
                    return Poll::Ready(Some(Err(actix_web::error::ErrorBadGateway(e))));
                }
                Poll::Ready(Some(Ok(frame))) => {
                    // Trailers are not passed on.
                    if let Ok(data) = frame.into_data() {
                        return Poll::Ready(Some(Ok(data)));
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_user_travels_as_front_proxy_headers() {
        let user = UserInfo {
            name: "alice".into(),
            uid: "42".into(),
            groups: vec!["devs".into(), "system:authenticated".into()],
            extra: [("scopes.example.com/a b".to_string(), vec!["x".to_string()])]
                .into_iter()
                .collect(),
        };
        let headers = front_proxy_headers(&user);
        assert_eq!(
            headers,
            [
                ("X-Remote-User", "alice"),
                ("X-Remote-Uid", "42"),
                ("X-Remote-Group", "devs"),
                ("X-Remote-Group", "system:authenticated"),
                ("X-Remote-Extra-scopes.example.com%2Fa%20b", "x"),
            ]
            .map(|(n, v)| (n.to_string(), v.to_string()))
        );
    }

    #[test]
    fn client_credentials_and_forged_identities_do_not_travel() {
        for name in [
            "authorization",
            "impersonate-user",
            "x-remote-user",
            "x-remote-group",
            "connection",
        ] {
            assert!(dropped_from_request(name), "{name}");
        }
        for name in ["accept", "content-type", "user-agent", "if-none-match"] {
            assert!(!dropped_from_request(name), "{name}");
        }
    }
}
