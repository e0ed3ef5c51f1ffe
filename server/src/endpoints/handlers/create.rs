//! POST on a collection.

use actix_web::HttpRequest;

use super::{decode_object, with_warnings, write_context, write_representation, Reply};
use crate::api::options::{WriteKind, WriteOptions};
use crate::endpoints::negotiation::respond_object;
use crate::endpoints::{ApiState, RequestScope};

pub(super) async fn create(
    req: &HttpRequest,
    body: &[u8],
    state: &ApiState,
    scope: &RequestScope,
) -> Reply {
    let res = &scope.resource;
    let opts = WriteOptions::parse(req.query_string(), WriteKind::Create)?;
    let repr = write_representation(req);
    let (obj, warnings) = decode_object(req, body, scope, &opts)?;
    let created = state
        .store
        .create(
            res,
            scope.namespace(),
            obj,
            &write_context(req, scope, &opts),
        )
        .await?;
    Ok(with_warnings(
        respond_object(req, 201, &created, repr, res),
        &warnings,
    ))
}
