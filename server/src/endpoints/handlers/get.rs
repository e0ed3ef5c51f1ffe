//! GET on one object, its status or its scale.

use actix_web::HttpRequest;
use codegen::endpoints::Subresource;
use serde_json::json;

use super::{write_repr, Reply};
use crate::api::options::GetOptions;
use crate::endpoints::negotiation::{
    partial_metadata, representation, respond, respond_bytes, respond_object, wants_pretty,
    Representation,
};
use crate::endpoints::scale::to_scale;
use crate::endpoints::table::{table, IncludeObject};
use crate::endpoints::{ApiState, RequestScope};

pub(super) async fn get(req: &HttpRequest, state: &ApiState, scope: &RequestScope) -> Reply {
    let res = &scope.resource;
    let opts = GetOptions::parse(req.query_string())?;
    let repr = representation(req)?;
    state.store.check_read_version(opts.at, false).await?;
    let (ns, name) = (scope.namespace(), scope.name());
    let scale = scope.subresource == Some(Subresource::Scale);
    // Objects of a kind that converts between versions are not served as stored.
    if repr == Representation::Json && !scale && !wants_pretty(req) && !res.converts() {
        // Plain JSON: the stored bytes with resourceVersion spliced in, no decoding.
        let body = state.store.get_json_at(res, ns, name, opts.at).await?;
        return Ok(respond_bytes(req, 200, "application/json", body.to_vec()));
    }
    let obj = state.store.get_at(res, ns, name, opts.at).await?;
    if scale {
        return Ok(respond(req, 200, &to_scale(res, &obj)?, write_repr(repr)));
    }
    match repr {
        Representation::PartialMetadata => Ok(respond(req, 200, &partial_metadata(&obj), repr)),
        Representation::Table => {
            let include = IncludeObject::from_query(req.query_string())?;
            let rv = obj["metadata"]["resourceVersion"].clone();
            Ok(respond(
                req,
                200,
                &table(res, vec![obj], json!({ "resourceVersion": rv }), include),
                repr,
            ))
        }
        _ => Ok(respond_object(req, 200, &obj, repr, res)),
    }
}
