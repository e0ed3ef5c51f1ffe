//! DELETE on one object, and on a collection.

use actix_web::HttpRequest;
use futures_util::StreamExt;
use serde_json::json;

use super::{write_representation, Reply};
use crate::api::options::{DeleteOptions, ListOptions};
use crate::api::status::success;
use crate::endpoints::negotiation::{respond, respond_object};
use crate::endpoints::{ApiState, RequestScope};

/// Deletes a deletecollection has in flight at once.
const DELETE_COLLECTION_WORKERS: usize = 32;

/// Deletes one object. Answers a Success Status for built-in kinds (but pods) and the
/// deleted object for custom ones, as kube-apiserver does.
pub(super) async fn delete(
    req: &HttpRequest,
    body: &[u8],
    state: &ApiState,
    scope: &RequestScope,
) -> Reply {
    let res = &scope.resource;
    let opts = DeleteOptions::parse(req.query_string(), body)?;
    let repr = write_representation(req);
    let name = scope.name();
    let admission = super::admission(req, scope, opts.dry_run, "");
    let deletion = state
        .store
        .delete(res, scope.namespace(), name, &opts, admission.as_deref())
        .await?;
    if deletion.deleted && res.builtin() && !res.strategy.returns_deleted_object() {
        let mut details = json!({ "name": name, "kind": res.def.plural });
        if let Some(uid) = deletion.object["metadata"]["uid"].as_str() {
            details["uid"] = json!(uid);
        }
        return Ok(respond(req, 200, &success(details), repr));
    }
    // As kube-apiserver: 202 only for a cascading delete asked for the deprecated way.
    let code = if !deletion.deleted && opts.orphan_dependents == Some(false) {
        202
    } else {
        200
    };
    Ok(respond_object(req, code, &deletion.object, repr, res))
}

/// Deletes every object the list options select; answers them as a List.
pub(super) async fn delete_collection(
    req: &HttpRequest,
    body: &[u8],
    state: &ApiState,
    scope: &RequestScope,
) -> Reply {
    let res = &scope.resource;
    let mut list = ListOptions::parse(req.query_string(), res, false)?;
    list.limit = 0;
    list.continue_token = None;
    // Its list reads like any list: a revision the store has not reached is 504.
    state.store.check_read_version(list.at, true).await?;
    // Preconditions name one object; the collection's deletes carry none.
    let opts = DeleteOptions {
        preconditions: Default::default(),
        ..DeleteOptions::parse(req.query_string(), body)?
    };
    let repr = write_representation(req);
    let ns = scope.namespace();
    let page = state.store.list(res, ns, &list).await?;
    let admission = super::admission(req, scope, opts.dry_run, "");
    // Several deletes in flight (kube-apiserver's --delete-collection-workers), so the
    // embedded store commits them together; answers keep the list's order.
    let deletes = page.items.iter().map(|obj| {
        let name = obj["metadata"]["name"].as_str().unwrap_or_default();
        state
            .store
            .delete(res, ns, name, &opts, admission.as_deref())
    });
    let results: Vec<_> = futures_util::stream::iter(deletes)
        .buffered(DELETE_COLLECTION_WORKERS)
        .collect()
        .await;
    let mut deleted = Vec::with_capacity(results.len());
    for result in results {
        match result {
            Ok(d) => deleted.push(d.object),
            Err(e) if e.is_not_found() => {}
            Err(e) => return Err(e),
        }
    }
    let body = json!({ "kind": res.def.list_kind, "apiVersion": res.api_version(), "metadata": { "resourceVersion": page.resource_version }, "items": deleted });
    Ok(respond_object(req, 200, &body, repr, res))
}
