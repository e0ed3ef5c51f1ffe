//! The shutdown filter, as kube-apiserver's WithWaitGroup and WithRetryAfter: every
//! request is counted until its response body ends, so graceful shutdown can wait for
//! them ([`crate::server::lifecycle`]); once the server stops accepting, new requests
//! are refused (health probes and metrics excepted, as upstream): 503 ServiceUnavailable
//! `apiserver is shutting down` with `Retry-After: 1`, or with
//! `--shutdown-send-retry-after` upstream's 429 with `Retry-After: 5`. Both close the
//! connection, so the client's retry opens a new one.

use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll};

use actix_web::body::{BodySize, BoxBody, MessageBody};
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::ConnectionType;
use actix_web::middleware::Next;
use actix_web::{web, HttpMessage, HttpResponse, ResponseError};

use crate::api::ApiError;
use crate::endpoints::request_info::RequestInfo;
use crate::endpoints::ApiState;
use crate::server::lifecycle::InFlightGuard;

/// Paths served to the end: probes must see the shutdown, scrapers the last figures.
const EXEMPT_PREFIXES: [&str; 4] = ["/readyz", "/livez", "/healthz", "/metrics"];

/// The filter (after logging, so refusals are logged and counted).
pub async fn drain_on_shutdown(
    req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<BoxBody>, actix_web::Error> {
    let Some(lifecycle) = req
        .app_data::<web::Data<ApiState>>()
        .map(|s| s.lifecycle.clone())
    else {
        return next
            .call(req)
            .await
            .map(ServiceResponse::map_into_boxed_body);
    };
    if !lifecycle.accepting() && !EXEMPT_PREFIXES.iter().any(|p| req.path().starts_with(p)) {
        let mut refusal = if lifecycle.sends_retry_after() {
            HttpResponse::TooManyRequests()
                .insert_header(("Retry-After", "5"))
                .content_type("text/plain; charset=utf-8")
                .body("The apiserver is shutting down, please try again later.\n")
        } else {
            ApiError::shutting_down().error_response()
        };
        refusal
            .head_mut()
            .set_connection_type(ConnectionType::Close);
        return Ok(req.into_response(refusal));
    }
    let watch = req
        .extensions()
        .get::<Rc<RequestInfo>>()
        .is_some_and(|info| info.verb == "watch");
    let guard = lifecycle.track(watch);
    let resp = next.call(req).await?;
    Ok(resp.map_body(move |_, body| {
        BoxBody::new(Tracked {
            body: body.boxed(),
            _guard: guard,
        })
    }))
}

/// A response body that keeps its request counted until it is done (ended or dropped).
struct Tracked {
    body: BoxBody,
    _guard: InFlightGuard,
}

impl MessageBody for Tracked {
    type Error = Box<dyn std::error::Error>;

    fn size(&self) -> BodySize {
        self.body.size()
    }

    fn poll_next(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<bytes::Bytes, Self::Error>>> {
        Pin::new(&mut self.body).poll_next(cx)
    }
}
