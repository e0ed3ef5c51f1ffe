//! The delegation chain, as kube-apiserver builds it: aggregator → built-in resources →
//! custom resources (APIExtensions) → 404 NotFound. Each link serves what it owns and
//! hands everything else to the next.

use actix_web::body::{BoxBody, MessageBody};
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::middleware::Next;
use actix_web::{web, HttpRequest, HttpResponse};

use crate::api::ApiError;
use crate::endpoints::ApiState;

/// Link 1, the aggregator: proxies groups claimed by an APIService to their backend.
/// No APIService can be registered yet, so it always delegates.
pub async fn aggregator(
    req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<BoxBody>, actix_web::Error> {
    next.call(req)
        .await
        .map(ServiceResponse::map_into_boxed_body)
}

/// Link 3, the APIExtensions server: serves custom resources registered at run time,
/// then delegates to link 4. Reached for every path the built-in routes do not match.
pub async fn apiextensions(
    req: HttpRequest,
    state: web::Data<ApiState>,
) -> Result<HttpResponse, ApiError> {
    // CustomResourceDefinitions are not served yet; nothing here claims a path.
    let _ = &state.catalog;
    not_found(&req)
}

/// Link 4: the end of the chain.
fn not_found(req: &HttpRequest) -> Result<HttpResponse, ApiError> {
    Err(ApiError::path_not_found(req.path()))
}
