//! The delegation chain, as kube-apiserver builds it: aggregator → built-in resources →
//! custom resources (APIExtensions) → 404 NotFound. Each link serves what it owns and
//! hands everything else to the next.

use std::rc::Rc;

use actix_web::body::{BoxBody, MessageBody};
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::middleware::Next;
use actix_web::{web, HttpMessage, HttpRequest, HttpResponse};

use crate::api::ApiError;
use crate::endpoints::request_info::RequestInfo;
use crate::endpoints::{handlers, ApiState, RequestScope};

/// Link 1, the aggregator: a request for a group-version that an APIService with a
/// `spec.service` claims is proxied to that server (`/apis/<group>/<version>` and
/// everything under it); everything else is delegated.
pub async fn aggregator(
    mut req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<BoxBody>, actix_web::Error> {
    let remote = match (
        claimed_group_version(req.path()),
        req.app_data::<web::Data<ApiState>>(),
    ) {
        (Some((group, version)), Some(state)) => state
            .aggregator
            .remote(group, version)
            .map(|service| (state.clone(), service)),
        _ => None,
    };
    let Some((state, service)) = remote else {
        // A resource request goes straight to link 2: the router's non-resource
        // patterns (discovery, OpenAPI, health) cannot match it, and trying each of them
        // cost ~5% of a GET's CPU.
        if is_resource_request(&req) {
            if let Some(state) = req.app_data::<web::Data<ApiState>>().cloned() {
                let (http, payload) = req.into_parts();
                let response = match serve_resources(&http, payload, state).await {
                    Ok(r) => r,
                    Err(e) => HttpResponse::from_error(e),
                };
                return Ok(ServiceResponse::new(http, response));
            }
        }
        return next
            .call(req)
            .await
            .map(ServiceResponse::map_into_boxed_body);
    };
    let payload = req.take_payload();
    let user = crate::auth::user(req.request())
        .map(|u| (*u).clone())
        .unwrap_or_else(crate::auth::UserInfo::anonymous);
    let path_and_query = req
        .uri()
        .path_and_query()
        .map(|p| p.as_str())
        .unwrap_or("/")
        .to_string();
    let answer = match crate::aggregator::upgrade::requested_protocol(req.headers()) {
        // The payload is the connection's traffic once switched: not read here.
        Some(protocol) => {
            crate::aggregator::upgrade::forward_upgrade(
                &state.aggregator,
                &service,
                &user,
                req.method(),
                &path_and_query,
                req.headers(),
                &protocol,
                crate::aggregator::upgrade::ClientSide {
                    payload,
                    held: req
                        .request()
                        .conn_data::<crate::server::client_stream::UpgradeSlot>()
                        .cloned(),
                },
            )
            .await
        }
        None => {
            let body = crate::endpoints::body::read(req.headers(), payload).await?;
            crate::aggregator::proxy::forward(
                &state.aggregator,
                &service,
                &user,
                req.method(),
                &path_and_query,
                req.headers(),
                body,
            )
            .await
        }
    };
    let response = match answer {
        Ok(r) => r,
        Err(e) => HttpResponse::from_error(e),
    };
    Ok(req.into_response(response))
}

/// The group-version an API path addresses: `/apis/<group>/<version>/...` or
/// `/api/<version>/...` (the core group).
fn claimed_group_version(path: &str) -> Option<(&str, &str)> {
    let mut segments = path.trim_start_matches('/').split('/');
    match segments.next()? {
        "apis" => {
            let group = segments.next().filter(|g| !g.is_empty())?;
            let version = segments.next().filter(|v| !v.is_empty())?;
            Some((group, version))
        }
        "api" => Some(("", segments.next().filter(|v| !v.is_empty())?)),
        _ => None,
    }
}

/// Whether the request info the filter attached names a resource.
fn is_resource_request(req: &ServiceRequest) -> bool {
    req.extensions()
        .get::<Rc<RequestInfo>>()
        .is_some_and(|info| info.is_resource_request)
}

/// Link 2's resource half, as the router's default service (requests that
/// [`aggregator`] did not send here directly: non-resource paths no route claims).
pub async fn resources(
    req: HttpRequest,
    payload: web::Payload,
    state: web::Data<ApiState>,
) -> Result<HttpResponse, ApiError> {
    serve_resources(&req, payload, state).await
}

/// Link 2's resource half: every resource path a catalog entry serves, through the
/// generic handlers; the rest goes on to link 3.
async fn serve_resources<S>(
    req: &HttpRequest,
    payload: S,
    state: web::Data<ApiState>,
) -> Result<HttpResponse, ApiError>
where
    S: futures_util::Stream<Item = Result<bytes::Bytes, actix_web::error::PayloadError>>,
{
    let body = crate::endpoints::body::read(req.headers(), payload).await?;
    let info = request_info(req);
    match RequestScope::resolve(info, req.method().as_str(), &state.catalog)? {
        Some(scope) => handlers::serve(req.clone(), body, state, scope).await,
        None => apiextensions(req),
    }
}

/// Link 3, the APIExtensions server: will serve the CustomResourceDefinition API itself;
/// the kinds CRDs define become catalog entries, which link 2 serves like any other (an
/// entry registered at run time is routed there at once). Delegates to link 4.
fn apiextensions(req: &HttpRequest) -> Result<HttpResponse, ApiError> {
    not_found(req)
}

/// The request info the filter parsed (parsed here when the filter did not run).
fn request_info(req: &HttpRequest) -> Rc<RequestInfo> {
    if let Some(info) = req.extensions().get::<Rc<RequestInfo>>() {
        return info.clone();
    }
    Rc::new(RequestInfo::parse(
        req.method().as_str(),
        req.path(),
        req.query_string(),
    ))
}

/// Link 4: the end of the chain.
fn not_found(req: &HttpRequest) -> Result<HttpResponse, ApiError> {
    Err(ApiError::path_not_found(req.path()))
}
