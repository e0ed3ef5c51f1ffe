//! Request filters, and [`handler_chain`]: the one function that builds the pipeline
//! (filters, then the delegation chain) and says why its order is what it is.
//! Admission runs inside the handlers, after decoding.

pub mod audit;
pub mod auth;
pub mod limits;
pub mod shutdown;

use std::rc::Rc;

use actix_web::body::{BoxBody, MessageBody};
use actix_web::dev::ServiceFactory;
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::middleware::{from_fn, Condition, Next};
use actix_web::{web, App, HttpMessage};

use crate::api::ApiError;
use crate::endpoints::negotiation::MAX_BODY_BYTES;
use crate::endpoints::request_info::RequestInfo;
use crate::endpoints::ApiState;
use crate::openapi::{self, OpenApi};
use crate::server::{chain, health};
use crate::{discovery, docs, metrics};

/// The request pipeline every worker serves, outermost first:
///
/// 1. [`recover_panics`]: outermost, so a bug anywhere below (another filter included)
///    becomes a 500 `Status` and the worker lives on;
/// 2. [`request_info`]: parsed before anything that decides by what a request addresses
///    (logging and audit now; authentication, authorization and admission next);
/// 3. [`metrics::instrument`]: right after request info, so every answer is counted
///    (refusals by the later filters too) under the labels the request info gives, with
///    the status the client gets;
/// 4. [`log_requests`]: outside the error mapping, so it records the status the client
///    gets;
/// 5. [`shutdown::drain_on_shutdown`]: counts each request until its answer is sent and
///    refuses new ones once shutdown stops accepting, inside logging and metrics so the
///    refusals are recorded, before any work is done for them;
/// 6. [`errors_as_status`]: framework errors (oversized bodies, ...) become `Status`;
/// 7. [`auth::authenticate`]: who is asking (401 for bad credentials), before anything
///    that depends on the user;
/// 8. [`audit::audit`] (only with `--audit-policy-file`): after authentication, so the
///    user is known, and around everything after it, so impersonation, throttling and
///    authorization refusals are recorded too (upstream's place; failed authentication
///    is audited by the authentication filter itself);
/// 9. [`auth::impersonate`]: as whom, once the requester may impersonate them (the
///    audit event records both);
/// 10. [`limits::serving_limits`]: max-in-flight and the request timeout, after identity
///     (so unauthenticated floods are refused before they take a seat) and around the
///     work itself (its 429 and 504 are logged and are `Status` answers);
/// 11. [`auth::authorize`]: whether the user may, from the parsed request info, before
///     any handler reads a body or storage;
/// 12. the delegation chain: the aggregator (link 1), the non-resource routes and every
///     resource the catalog serves (link 2), custom resources (link 3), 404 (link 4).
///
/// actix applies `wrap` inside-out, so the calls below are written innermost first.
pub fn handler_chain(
    state: web::Data<ApiState>,
    openapi: web::Data<OpenApi>,
    limits: web::Data<limits::ServingLimits>,
    auth: web::Data<crate::auth::Auth>,
    admission: web::Data<crate::admission::Chain>,
    audit: Option<web::Data<crate::audit::Audit>>,
) -> App<
    impl ServiceFactory<
        ServiceRequest,
        Config = (),
        Response = ServiceResponse<impl MessageBody>,
        Error = actix_web::Error,
        InitError = (),
    >,
> {
    let auditing = audit.is_some();
    let mut app = App::new();
    if let Some(audit) = audit {
        app = app.app_data(audit);
    }
    app.app_data(state)
        .app_data(openapi)
        .app_data(limits)
        .app_data(auth)
        .app_data(admission)
        .app_data(web::PayloadConfig::new(MAX_BODY_BYTES))
        .configure(health::configure)
        .configure(metrics::configure)
        .configure(discovery::configure)
        .configure(openapi::configure)
        .configure(docs::configure)
        .default_service(web::to(chain::resources))
        .wrap(from_fn(chain::aggregator))
        .wrap(from_fn(auth::authorize))
        .wrap(from_fn(limits::serving_limits))
        .wrap(from_fn(auth::impersonate))
        // Without a policy the filter is not called at all: one branch per request.
        .wrap(Condition::new(auditing, from_fn(audit::audit)))
        .wrap(from_fn(auth::authenticate))
        .wrap(from_fn(errors_as_status))
        .wrap(from_fn(shutdown::drain_on_shutdown))
        .wrap(from_fn(log_requests))
        .wrap(from_fn(metrics::instrument))
        .wrap(from_fn(request_info))
        .wrap(from_fn(recover_panics))
}

/// Turns a panic anywhere below into a 500 InternalError Status.
pub async fn recover_panics(
    req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<BoxBody>, actix_web::Error> {
    let what = format!("handler of {}", req.path());
    match crate::panics::catch(&what, next.call(req)).await {
        Some(resp) => resp.map(ServiceResponse::map_into_boxed_body),
        None => Err(ApiError::internal("the server panicked while handling the request").into()),
    }
}

/// Parses what the request addresses once ([`RequestInfo`]) and attaches it, so every
/// later stage (logging and audit, authorization, the resource link) reads the same.
pub async fn request_info(
    req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<BoxBody>, actix_web::Error> {
    let info = RequestInfo::parse(req.method().as_str(), req.path(), req.query_string());
    req.extensions_mut().insert(Rc::new(info));
    next.call(req)
        .await
        .map(ServiceResponse::map_into_boxed_body)
}

/// The access log, as kube-apiserver's httplog: one `HTTP` line per request at
/// verbosity 3 (`-v=3`), with upstream's keys (verb as its metrics report it, URI,
/// latency, userAgent, audit-ID, srcIP, resp) and the user. Headers other than the
/// user agent, credentials and bodies are never logged.
pub async fn log_requests(
    req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<BoxBody>, actix_web::Error> {
    if !tracing::enabled!(target: crate::logging::ACCESS_LOG_TARGET, tracing::Level::DEBUG) {
        return next
            .call(req)
            .await
            .map(ServiceResponse::map_into_boxed_body);
    }
    let start = std::time::Instant::now();
    let verb = req
        .extensions()
        .get::<Rc<RequestInfo>>()
        .map_or("other", |info| metrics::request_verb(req.request(), info));
    // The request URI as the client wrote it (HTTP/2 requests carry scheme and host too).
    let uri = req
        .uri()
        .path_and_query()
        .map_or_else(|| req.path().to_string(), |pq| pq.to_string());
    let user_agent = header_text(req.headers(), "user-agent");
    let src_ip = req.peer_addr().map(|a| a.to_string()).unwrap_or_default();
    let resp = next.call(req).await;
    let (status, audit_id, user) = match &resp {
        Ok(r) => (
            r.status().as_u16(),
            header_text(r.headers(), "audit-id"),
            crate::auth::user(r.request()).map(|u| u.name.clone()),
        ),
        Err(e) => (
            e.as_response_error().status_code().as_u16(),
            String::new(),
            None,
        ),
    };
    tracing::debug!(
        target: crate::logging::ACCESS_LOG_TARGET,
        verb,
        URI = %uri,
        latency = %format!("{:?}", start.elapsed()),
        userAgent = %user_agent,
        "audit-ID" = %audit_id,
        srcIP = %src_ip,
        user = %user.as_deref().unwrap_or(""),
        resp = status,
        "HTTP"
    );
    resp.map(ServiceResponse::map_into_boxed_body)
}

fn header_text(headers: &actix_web::http::header::HeaderMap, name: &str) -> String {
    headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_string()
}

/// Errors raised by the HTTP framework itself (body over the size limit, malformed
/// request) leave as a `Status` too, like every other failure.
pub async fn errors_as_status(
    req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<BoxBody>, actix_web::Error> {
    let resp = next.call(req).await?;
    let is_json = resp
        .headers()
        .get(actix_web::http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json"));
    let Some(err) = resp.response().error() else {
        return Ok(resp.map_into_boxed_body());
    };
    if is_json {
        return Ok(resp.map_into_boxed_body());
    }
    let status = resp.status();
    let message = err.to_string();
    let api = match status.as_u16() {
        413 => ApiError::too_large(crate::endpoints::negotiation::MAX_BODY_BYTES),
        400 => ApiError::bad_request(message),
        404 => ApiError::path_not_found(resp.request().path()),
        405 => ApiError::method_not_allowed(),
        415 => ApiError::unsupported_media_type(&message),
        code if code >= 500 => ApiError::internal(message),
        code => ApiError::with_code(code, message),
    };
    let (req, _) = resp.into_parts();
    Ok(ServiceResponse::new(
        req,
        actix_web::ResponseError::error_response(&api),
    ))
}

#[cfg(test)]
mod tests {
    use actix_web::middleware::from_fn;
    use actix_web::{test, web, App, HttpResponse};

    /// A handler that panics answers the client 500 InternalError as a Status, and the
    /// worker that ran it goes on serving.
    #[actix_web::test]
    async fn a_panicking_handler_answers_500_internal_error_and_the_worker_serves_on() {
        let app = test::init_service(
            App::new()
                .route(
                    "/boom",
                    web::get().to(|| async {
                        if true {
                            panic!("on purpose");
                        }
                        HttpResponse::Ok().finish()
                    }),
                )
                .route("/fine", web::get().to(HttpResponse::Ok))
                .wrap(from_fn(super::recover_panics)),
        )
        .await;
        // The error is what actix-web's dispatcher turns into the response.
        let err = test::try_call_service(&app, test::TestRequest::get().uri("/boom").to_request())
            .await
            .expect_err("the panic is answered as an error");
        let resp = err.error_response();
        assert_eq!(resp.status(), 500);
        let body = actix_web::body::to_bytes(resp.into_body()).await.unwrap();
        let status: serde_json::Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(status["kind"], "Status");
        assert_eq!(status["reason"], "InternalError");
        assert_eq!(status["code"], 500);
        assert_eq!(
            status["message"],
            "Internal error occurred: the server panicked while handling the request"
        );
        let resp =
            test::call_service(&app, test::TestRequest::get().uri("/fine").to_request()).await;
        assert_eq!(resp.status(), 200);
    }
}
