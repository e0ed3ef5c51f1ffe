//! GET on a collection: a List (from the stored bytes when nothing needs decoding), a
//! Table, PartialObjectMetadata, or a watch (`?watch=true` and the `/watch/` paths).

use actix_web::HttpRequest;
use codegen::endpoints::Verb;
use serde_json::json;

use super::{list_metadata, Reply};
use crate::api::options::ListOptions;
use crate::api::ApiError;
use crate::endpoints::negotiation::{
    partial_metadata_list, representation, respond, respond_bytes, respond_object, wants_pretty,
    Representation,
};
use crate::endpoints::table::{table, table_from_stored, IncludeObject};
use crate::endpoints::watch::{self, WatchRequest};
use crate::endpoints::{ApiState, RequestScope};

/// A list, or a watch.
pub(super) async fn list(req: &HttpRequest, state: &ApiState, scope: &RequestScope) -> Reply {
    let res = &scope.resource;
    let watching = scope.verb == Verb::Watch;
    let mut opts = ListOptions::parse(req.query_string(), res, watching)?;
    // TableOptions: read only where a Table (or a watch of Table rows) is made.
    let include = || IncludeObject::from_query(req.query_string());
    let repr = representation(req)?;
    let ns = scope.namespace();
    if watching {
        // A `/watch/.../{name}` path watches one object.
        if let (true, Some(name)) = (scope.info.legacy_watch, scope.info.name.as_deref()) {
            opts.fields.require_name(name);
        }
        let w = WatchRequest {
            namespace: ns.map(str::to_string),
            resource_version: opts.resource_version.clone(),
            timeout_seconds: opts.timeout_seconds,
            allow_bookmarks: opts.allow_watch_bookmarks,
            send_initial_events: opts.send_initial_events,
            list: opts,
            repr,
            include: include()?,
        };
        return watch::serve(req, res.clone(), state, w).await;
    }
    state.store.check_read_version(opts.at, true).await?;
    // Objects of a kind that converts between versions are not served as stored.
    let as_stored = !res.converts() && !wants_pretty(req);
    let plain = opts.labels.is_empty() && opts.fields.is_empty() && as_stored;
    if repr == Representation::Json && plain {
        return list_from_bytes(req, state, scope, &opts).await;
    }
    if repr == Representation::Table && as_stored {
        // Rows straight from the stored bytes (what `kubectl get` asks for).
        let page = state.store.list_stored(res, ns, &opts).await?;
        let body = table_from_stored(res, &page.items, &list_metadata(&page), include()?)
            .map_err(ApiError::internal)?;
        return Ok(respond_bytes(req, 200, "application/json", body));
    }
    let page = state.store.list(res, ns, &opts).await?;
    let list_meta = list_metadata(&page);
    match repr {
        Representation::Table => Ok(respond(
            req,
            200,
            &table(res, page.items, list_meta, include()?),
            repr,
        )),
        Representation::PartialMetadata => Ok(respond(
            req,
            200,
            &partial_metadata_list(list_meta, &page.items),
            repr,
        )),
        _ => {
            let body = json!({ "kind": res.def.list_kind, "apiVersion": res.api_version(), "metadata": list_meta, "items": page.items });
            Ok(respond_object(req, 200, &body, repr, res))
        }
    }
}

/// A plain JSON list assembled from the stored bytes of its items (no decoding).
async fn list_from_bytes(
    req: &HttpRequest,
    state: &ApiState,
    scope: &RequestScope,
    opts: &ListOptions,
) -> Reply {
    let res = &scope.resource;
    let page = state.store.list_json(res, scope.namespace(), opts).await?;
    let list_meta = list_metadata(&page);
    let head = json!({ "kind": res.def.list_kind, "apiVersion": res.api_version(), "metadata": list_meta });
    let head = serde_json::to_vec(&head).unwrap_or_default();
    let size: usize = page.items.iter().map(|i| i.len() + 1).sum();
    let mut body = Vec::with_capacity(head.len() + size + 16);
    body.extend_from_slice(&head[..head.len() - 1]);
    body.extend_from_slice(b",\"items\":[");
    for (i, item) in page.items.iter().enumerate() {
        if i > 0 {
            body.push(b',');
        }
        body.extend_from_slice(item);
    }
    body.extend_from_slice(b"]}");
    Ok(respond_bytes(req, 200, "application/json", body))
}
