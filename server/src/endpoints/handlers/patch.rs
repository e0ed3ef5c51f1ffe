//! PATCH on one object, its status or its scale: JSON patch, merge patch, strategic merge
//! patch (built-in kinds only, as kube-apiserver) and server-side apply ([`super::apply`]).

use actix_web::HttpRequest;
use codegen::endpoints::Subresource;

use super::{field_validation, with_warnings, write_context, write_representation, Reply};
use crate::api::options::{WriteKind, WriteOptions};
use crate::api::{ApiError, StatusCause};
use crate::endpoints::negotiation::{
    check_object_size, check_type_meta, content_type, respond_object,
};
use crate::endpoints::scale::{apply_scale, to_scale};
use crate::endpoints::{ApiState, RequestScope};
use crate::registry::patch::{Patch, APPLY_PATCH};

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
    let patch = Patch::parse(&content_type, body, res)?;
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
                let new = if scale {
                    to_scale(res, old)?
                } else {
                    old.clone()
                };
                let mut new = patch.apply(new, res)?;
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
