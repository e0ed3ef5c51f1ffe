//! POST of a kind that is not stored: a create-only kind's collection (the reviews) or a
//! create-only subresource (`serviceaccounts/{name}/token`). The body goes through what
//! every create does (decoding, `apiVersion`/`kind`, unknown fields, defaults, schema and
//! CEL validation), then the hook the definition names answers; nothing is stored.

use actix_web::HttpRequest;
use serde_json::{json, Value};

use super::{body_duplicates, check_body_namespace, field_validation, with_warnings};
use super::{write_representation, Reply};
use crate::admission::{Operation, Target};
use crate::api::meta::validate_object_meta;
use crate::api::options::{WriteKind, WriteOptions};
use crate::api::ApiError;
use crate::endpoints::negotiation::{decode_body, respond_object};
use crate::endpoints::{ApiState, RequestScope};
use crate::registry::schema;
use crate::registry::virtual_kinds::CreateRequest;

/// Whether the request is one [`create`] serves.
pub(super) fn serves(scope: &RequestScope) -> bool {
    scope.resource.create_hook.is_some()
        || scope
            .subresource
            .is_some_and(|s| scope.resource.subresource_kind(s).is_some())
}

pub(super) async fn create(
    req: &HttpRequest,
    body: &[u8],
    state: &ApiState,
    scope: &RequestScope,
) -> Reply {
    // The entry whose kind the body is: the subresource's, or the resource's own.
    let (res, parent) = match scope.subresource {
        Some(sub) => (scope.resource.subresource_kind(sub), Some(scope.name())),
        None => (Some(&*scope.resource), None),
    };
    let Some((res, hook)) = res.and_then(|r| r.create_hook.map(|h| (r, h))) else {
        return Err(ApiError::internal(format!(
            "no create hook serves {}",
            scope.info.path
        )));
    };
    let opts = WriteOptions::parse(req.query_string(), WriteKind::Create)?;
    let repr = write_representation(req);
    let mut obj = decode_body(req, body, res)?;
    check_body_namespace(scope.namespace(), &obj)?;
    let duplicates = body_duplicates(req, body);
    let warnings = field_validation(res, &mut obj, opts.field_validation, &duplicates)?;
    if let Some(meta) = obj["metadata"].as_object_mut() {
        match scope.namespace() {
            Some(ns) => {
                meta.insert("namespace".into(), json!(ns));
            }
            None => {
                meta.remove("namespace");
            }
        }
    }
    // A review's status is the answer: what the client sent there is not input (typed
    // clients send an empty one, which may lack the status' required fields).
    if let Some(map) = obj.as_object_mut() {
        map.remove("status");
    }
    schema::apply_defaults(&mut obj, res.schema());
    let mut causes = validate_object_meta(&obj);
    let schema_causes = res.validator().validate(&obj);
    if schema_causes.is_empty() {
        causes.extend(res.rules.validate(&obj, None));
    }
    causes.extend(schema_causes);
    if !causes.is_empty() {
        let name = obj["metadata"]["name"].as_str().unwrap_or_default();
        return Err(ApiError::invalid(res, name, causes));
    }
    // Admission sees the request as any create: the resource (and subresource) asked
    // for, the body's own kind.
    let name = parent.map(str::to_string).unwrap_or_else(|| {
        obj["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_string()
    });
    let manager = super::field_manager(req, &opts);
    if let Some(admission) = super::admission(req, scope, opts.dry_run, &manager) {
        let target = Target {
            kind: res,
            ..Target::new(&scope.resource, scope.namespace(), &name)
        };
        admission
            .admit(Operation::Create, target, Some(&mut obj), None)
            .await?;
        admission
            .validate(Operation::Create, target, Some(&obj), None)
            .await?;
    }
    let answer: Value = hook
        .create(CreateRequest {
            state,
            auth: req
                .app_data::<actix_web::web::Data<crate::auth::Auth>>()
                .map(|a| &***a),
            user: crate::auth::user(req),
            namespace: scope.namespace(),
            parent,
            object: obj,
            dry_run: opts.dry_run,
        })
        .await?;
    Ok(with_warnings(
        respond_object(req, 201, &answer, repr, res),
        &warnings,
    ))
}
