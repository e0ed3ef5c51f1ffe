//! PUT on one object, its status or its scale.

use actix_web::HttpRequest;
use codegen::endpoints::Subresource;
use serde_json::Value;

use super::{decode_object, with_warnings, write_context, write_representation, Reply};
use crate::api::options::{WriteKind, WriteOptions};
use crate::api::ApiError;
use crate::endpoints::negotiation::{respond, respond_object};
use crate::endpoints::scale::{apply_scale, to_scale};
use crate::endpoints::{ApiState, RequestScope};
use crate::registry::store::Target;

pub(super) async fn update(
    req: &HttpRequest,
    body: &[u8],
    state: &ApiState,
    scope: &RequestScope,
) -> Reply {
    let res = &scope.resource;
    let opts = WriteOptions::parse(req.query_string(), WriteKind::Update)?;
    let repr = write_representation(req);
    let ctx = write_context(req, scope, &opts);
    let (ns, name) = (scope.namespace(), scope.name());
    if scope.subresource == Some(Subresource::Scale) {
        let scale: Value = serde_json::from_slice(body).map_err(|e| {
            ApiError::bad_request(format!(
                "the object provided is unrecognized (must be of type Scale): {e}"
            ))
        })?;
        let updated = state
            .store
            .patch(res, ns, name, Target::Main, &ctx, |old| {
                apply_scale(res, old, &scale)
            })
            .await?;
        return Ok(respond(req, 200, &to_scale(res, &updated)?, repr));
    }
    let (obj, warnings) = decode_object(req, body, scope, &opts)?;
    let updated = state
        .store
        .update(res, ns, name, obj, scope.target(), &ctx)
        .await?;
    Ok(with_warnings(
        respond_object(req, 200, &updated, repr, res),
        &warnings,
    ))
}
