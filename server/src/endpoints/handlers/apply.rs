//! PATCH with `application/apply-patch+yaml`: server-side apply. Creates the object when
//! absent (201), otherwise merges the manager's intent (200); conflicts with other
//! managers are 409 unless `force=true`.

use actix_web::HttpRequest;
use codegen::endpoints::Subresource;

use super::{check_body_namespace, field_validation, with_warnings, write_context, Reply};
use crate::api::options::WriteOptions;
use crate::api::{ApiError, StatusCause};
use crate::endpoints::negotiation::{check_object_size, respond_object, Representation};
use crate::endpoints::{ApiState, RequestScope};
use crate::registry::apply as registry_apply;
use crate::registry::store::Target;

pub(super) async fn apply(
    req: &HttpRequest,
    body: &[u8],
    state: &ApiState,
    scope: &RequestScope,
    opts: &WriteOptions,
    repr: Representation,
) -> Reply {
    let res = &scope.resource;
    let manager = opts
        .field_manager
        .as_deref()
        .filter(|m| !m.is_empty())
        .ok_or_else(|| {
            ApiError::invalid_options(
                "PatchOptions",
                StatusCause::required("fieldManager", "is required for apply patch"),
            )
        })?;
    let force = opts.force;
    let mut ctx = write_context(req, scope, opts);
    ctx.apply = true;
    // Status and the part subresources take apply; what they apply is their part.
    let target = scope.target();
    let subresource = match scope.subresource {
        Some(Subresource::Status) => Some("status"),
        Some(other @ Subresource::Part(_)) if matches!(target, Target::Part(_)) => {
            Some(other.name(&scope.resource.def))
        }
        Some(other) => {
            return Err(ApiError::bad_request(format!(
                "server-side apply is not supported on the {} subresource",
                other.name(&scope.resource.def)
            )))
        }
        None => None,
    };
    let name = scope.name().to_string();
    let mut intent = registry_apply::parse_intent(body, res, &name)?;
    let ns = scope.namespace();
    check_body_namespace(ns, &intent)?;
    let warnings = field_validation(res, &mut intent, opts.field_validation, &[])?;
    let precondition = intent["metadata"]["resourceVersion"]
        .as_str()
        .filter(|s| !s.is_empty())
        .map(str::to_string);
    let mut intent = registry_apply::clean_intent(intent);
    if let Target::Part(part) = target {
        intent = part.scope_intent(&intent);
    }
    let now = crate::api::meta::now_rfc3339();

    for _ in 0..2 {
        let existing = match state.store.get(res, ns, &name).await {
            Ok(obj) => Some(obj),
            Err(e) if e.is_not_found() => None,
            Err(e) => return Err(e),
        };
        let Some(_) = existing else {
            if subresource.is_some() {
                return Err(ApiError::not_found(res, &name));
            }
            let obj = registry_apply::apply(None, &intent, res, manager, force, None, &now)?;
            match state.store.create(res, ns, obj, &ctx).await {
                Ok(created) => {
                    return Ok(with_warnings(
                        respond_object(req, 201, &created, repr, res),
                        &warnings,
                    ))
                }
                // Created meanwhile by someone else: apply to it instead.
                Err(e) if e.is_already_exists() => continue,
                Err(e) => return Err(e),
            }
        };
        let updated = state
            .store
            .patch(res, ns, &name, target, &ctx, |old| {
                if let Some(rv) = &precondition {
                    if old["metadata"]["resourceVersion"].as_str() != Some(rv.as_str()) {
                        return Err(ApiError::conflict(res, &name));
                    }
                }
                let new = registry_apply::apply(
                    Some(old),
                    &intent,
                    res,
                    manager,
                    force,
                    subresource,
                    &now,
                )?;
                check_object_size(&new)?;
                Ok(new)
            })
            .await;
        match updated {
            Err(e) if e.is_not_found() => continue,
            other => {
                return other
                    .map(|u| with_warnings(respond_object(req, 200, &u, repr, res), &warnings))
            }
        }
    }
    Err(ApiError::conflict(res, &name))
}
