//! POST on a collection.

use actix_web::HttpRequest;

use super::{
    body_duplicates, check_body_namespace, field_validation, with_warnings, write_context,
    write_representation, Reply,
};
use crate::api::options::{WriteKind, WriteOptions};
use crate::endpoints::negotiation::{decode_body, respond_object};
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
    let mut obj = decode_body(req, body, res)?;
    let ns = scope.namespace();
    check_body_namespace(ns, &obj)?;
    let warnings = field_validation(
        res,
        &mut obj,
        opts.field_validation,
        &body_duplicates(req, body),
    )?;
    let created = state
        .store
        .create(res, ns, obj, &write_context(req, &opts))
        .await?;
    Ok(with_warnings(
        respond_object(req, 201, &created, repr, res),
        &warnings,
    ))
}
