//! PATCH with `application/apply-patch+yaml`: server-side apply. Creates the object when
//! absent (201), otherwise merges the manager's intent (200); conflicts with other
//! managers are 409 unless `force=true`.

use actix_web::HttpRequest;
use codegen::endpoints::Subresource;
use serde_json::Value;

use super::{check_body_namespace, field_validation, with_warnings, write_context, Reply};
use crate::api::options::WriteOptions;
use crate::api::{ApiError, StatusCause};
use crate::endpoints::negotiation::{
    check_object_size, check_type_meta, respond_object, Representation, MAX_BODY_BYTES,
};
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
    let subresource = match scope.subresource {
        Some(Subresource::Status) => Some("status"),
        Some(other) => {
            return Err(ApiError::bad_request(format!(
                "server-side apply is not supported on the {} subresource",
                other.name(&scope.resource.def)
            )))
        }
        None => None,
    };
    if body.len() > MAX_BODY_BYTES {
        return Err(ApiError::too_large(MAX_BODY_BYTES));
    }
    let mut intent: Value = crate::api::yaml::from_slice(body)
        .map_err(|e| ApiError::bad_request(format!("error decoding YAML: {e}")))?;
    if !intent.is_object() {
        return Err(ApiError::bad_request(
            "the apply configuration must be an object",
        ));
    }
    for f in ["apiVersion", "kind"] {
        if intent
            .get(f)
            .and_then(Value::as_str)
            .is_none_or(str::is_empty)
        {
            return Err(ApiError::bad_request(format!(
                "{f} must be set in an apply configuration"
            )));
        }
    }
    check_type_meta(&intent, res)?;
    let name = scope.name().to_string();
    match intent["metadata"]["name"].as_str() {
        Some(n) if n == name => {}
        Some(n) => {
            return Err(ApiError::bad_request(format!(
                "the name of the object ({n}) does not match the name on the URL ({name})"
            )))
        }
        None => {
            return Err(ApiError::bad_request(
                "metadata.name must be set in an apply configuration",
            ))
        }
    }
    let ns = scope.namespace();
    check_body_namespace(ns, &intent)?;
    let warnings = field_validation(res, &mut intent, opts.field_validation, &[])?;
    let precondition = intent["metadata"]["resourceVersion"]
        .as_str()
        .filter(|s| !s.is_empty())
        .map(str::to_string);
    let intent = registry_apply::clean_intent(intent);
    let now = crate::api::meta::now_rfc3339();
    let target = if subresource.is_some() {
        Target::Status
    } else {
        Target::Main
    };

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
