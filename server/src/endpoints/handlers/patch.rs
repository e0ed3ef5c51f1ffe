//! PATCH on one object, its status or its scale: JSON patch, merge patch, strategic merge
//! patch (built-in kinds only, as kube-apiserver) and server-side apply ([`super::apply`]).

use actix_web::HttpRequest;
use codegen::endpoints::Subresource;
use serde_json::Value;

use super::{field_validation, with_warnings, write_context, write_representation, Reply};
use crate::api::options::{WriteKind, WriteOptions};
use crate::api::{ApiError, StatusCause};
use crate::endpoints::negotiation::{
    check_object_size, check_type_meta, content_type, respond_object,
};
use crate::endpoints::scale::{apply_scale, to_scale};
use crate::endpoints::{ApiState, RequestScope};
use crate::registry::{json_patch, strategic_merge};

/// A parsed patch body.
enum PatchBody {
    Json(Vec<::json_patch::PatchOperation>),
    Merge(Value),
    Strategic(Value),
}

const JSON_PATCH: &str = "application/json-patch+json";
const MERGE_PATCH: &str = "application/merge-patch+json";
const STRATEGIC_MERGE_PATCH: &str = "application/strategic-merge-patch+json";
const APPLY_PATCH: &str = "application/apply-patch+yaml";

pub(super) async fn patch(
    req: &HttpRequest,
    body: &[u8],
    state: &ApiState,
    scope: &RequestScope,
) -> Reply {
    let res = &scope.resource;
    let opts = WriteOptions::parse(req.query_string(), WriteKind::Patch)?;
    let repr = write_representation(req);
    let content_type = content_type(req);
    if content_type == APPLY_PATCH {
        return super::apply::apply(req, body, state, scope, &opts, repr).await;
    }
    if opts.force_given {
        return Err(ApiError::invalid_options(
            "PatchOptions",
            StatusCause::forbidden("force", "may not be specified for non-apply patch"),
        ));
    }
    // Strategic merge needs Go types' patch strategies: kube-apiserver offers it for
    // built-in kinds only, and so do we.
    let strategic_ok = res.builtin();
    let patch = match content_type.as_str() {
        STRATEGIC_MERGE_PATCH if !strategic_ok => {
            return Err(ApiError::unsupported_patch_type(false))
        }
        JSON_PATCH => {
            let patch: ::json_patch::Patch = serde_json::from_slice(body).map_err(|e| {
                ApiError::bad_request(format!(
                    "the body of the request is not a valid JSON patch: {e}"
                ))
            })?;
            PatchBody::Json(patch.0)
        }
        MERGE_PATCH | STRATEGIC_MERGE_PATCH => {
            let v: Value = serde_json::from_slice(body).map_err(|e| {
                ApiError::bad_request(format!("the body of the request is not valid JSON: {e}"))
            })?;
            if !v.is_object() {
                return Err(ApiError::bad_request("a merge patch must be a JSON object"));
            }
            if content_type == STRATEGIC_MERGE_PATCH {
                PatchBody::Strategic(v)
            } else {
                PatchBody::Merge(v)
            }
        }
        _ => return Err(ApiError::unsupported_patch_type(strategic_ok)),
    };
    let scale = scope.subresource == Some(Subresource::Scale);
    let warnings = std::sync::Mutex::new(Vec::new());
    let patched = state
        .store
        .patch(
            res,
            scope.namespace(),
            scope.name(),
            scope.target(),
            &write_context(req, scope, &opts),
            |old| {
                let mut new = if scale {
                    to_scale(res, old)?
                } else {
                    old.clone()
                };
                match &patch {
                    PatchBody::Json(p) => json_patch::apply(&mut new, p)?,
                    PatchBody::Merge(p) => ::json_patch::merge(&mut new, p),
                    PatchBody::Strategic(p) => {
                        new = strategic_merge::apply(&new, p, &res.schema)
                            .map_err(ApiError::bad_request)?
                    }
                }
                if !new.is_object() {
                    return Err(ApiError::bad_request(
                        "the patch turned the object into something that is not an object",
                    ));
                }
                check_object_size(&new)?;
                if scale {
                    return apply_scale(res, old, &new);
                }
                check_type_meta(&new, res)?;
                let w = field_validation(res, &mut new, opts.field_validation, &[])?;
                *warnings.lock().unwrap_or_else(|e| e.into_inner()) = w;
                Ok(new)
            },
        )
        .await?;
    let warnings = warnings.into_inner().unwrap_or_default();
    let patched = if scale {
        to_scale(res, &patched)?
    } else {
        patched
    };
    Ok(with_warnings(
        respond_object(req, 200, &patched, repr, res),
        &warnings,
    ))
}
