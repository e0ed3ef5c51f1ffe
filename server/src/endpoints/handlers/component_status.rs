//! GET and LIST of a kind whose objects are health reports made per request
//! (`Strategy::reports_health`: ComponentStatus), never read from storage.

use actix_web::HttpRequest;
use serde_json::json;

use super::Reply;
use crate::api::options::{GetOptions, ListOptions};
use crate::api::ApiError;
use crate::endpoints::negotiation::{
    partial_metadata, partial_metadata_list, representation, respond, respond_object,
    Representation,
};
use crate::endpoints::table::{table, IncludeObject};
use crate::endpoints::{ApiState, RequestScope};
use crate::registry::component_status::{status, COMPONENTS};

/// One component's report; 404 for a name no component has (upstream answers a 500
/// for it, a client's mistake all the same).
pub(super) async fn get(req: &HttpRequest, state: &ApiState, scope: &RequestScope) -> Reply {
    let res = &scope.resource;
    GetOptions::parse(req.query_string())?;
    let repr = representation(req)?;
    let name = scope.name();
    if !COMPONENTS.contains(&name) {
        return Err(ApiError::not_found(res, name));
    }
    let obj = status(name, &state.store_health().await);
    match repr {
        Representation::PartialMetadata => Ok(respond(req, 200, &partial_metadata(&obj), repr)),
        Representation::Table => {
            let include = IncludeObject::from_query(req.query_string())?;
            Ok(respond(
                req,
                200,
                &table(res, vec![obj], json!({}), include),
                repr,
            ))
        }
        _ => Ok(respond_object(req, 200, &obj, repr, res)),
    }
}

/// Every component's report (selectors and paging do not apply, as upstream's).
pub(super) async fn list(req: &HttpRequest, state: &ApiState, scope: &RequestScope) -> Reply {
    let res = &scope.resource;
    ListOptions::parse(req.query_string(), res, false)?;
    let repr = representation(req)?;
    let health = state.store_health().await;
    let items: Vec<_> = COMPONENTS.iter().map(|n| status(n, &health)).collect();
    match repr {
        Representation::Table => {
            let include = IncludeObject::from_query(req.query_string())?;
            Ok(respond(
                req,
                200,
                &table(res, items, json!({}), include),
                repr,
            ))
        }
        Representation::PartialMetadata => Ok(respond(
            req,
            200,
            &partial_metadata_list(json!({}), &items),
            repr,
        )),
        _ => {
            let body = json!({ "kind": res.def.list_kind, "apiVersion": res.api_version(), "metadata": {}, "items": items });
            Ok(respond_object(req, 200, &body, repr, res))
        }
    }
}
