//! One generic handler per verb, each in a file of its own. Each takes the catalog entry
//! from its [`RequestScope`], parses its typed options (`crate::api::options`), calls the
//! store, and renders the result; errors leave as `Status` through [`ApiError`].

mod apply;
mod component_status;
mod create;
mod delete;
mod get;
mod list;
mod patch;
mod update;
mod virtual_create;

use std::sync::Arc;

use actix_web::{web, HttpMessage, HttpRequest, HttpResponse};
use bytes::Bytes;
use codegen::endpoints::Verb;
use serde_json::{json, Value};

use super::negotiation::{decode_body, representation, Representation};
use super::{ApiState, RequestScope};
use crate::admission::{Chain, RequestAdmission};
use crate::api::options::{FieldValidation, WriteOptions};
use crate::api::ApiError;
use crate::catalog::ApiResource;
use crate::registry::managed_fields::manager_name;
use crate::registry::schema::prune;
use crate::registry::store::{ObjectList, WriteContext};

type Reply = Result<HttpResponse, ApiError>;

/// Runs a resolved resource request through the handler of its verb.
pub async fn serve(
    req: HttpRequest,
    body: Bytes,
    state: web::Data<ApiState>,
    scope: RequestScope,
) -> Reply {
    let crd = scope.resource.crd.as_ref();
    if scope.verb == Verb::Create && crd.is_some_and(|c| c.terminating) {
        return Err(ApiError {
            message: "create not allowed while custom resource definition is terminating".into(),
            ..ApiError::method_not_allowed()
        });
    }
    let reports = scope.resource.strategy.reports_health();
    let reply = match scope.verb {
        Verb::Get if reports => component_status::get(&req, &state, &scope).await,
        Verb::List if reports => component_status::list(&req, &state, &scope).await,
        Verb::Get => get::get(&req, &state, &scope).await,
        Verb::List | Verb::Watch => list::list(&req, &state, &scope).await,
        Verb::Create if virtual_create::serves(&scope) => {
            virtual_create::create(&req, &body, &state, &scope).await
        }
        Verb::Create => create::create(&req, &body, &state, &scope).await,
        Verb::Update => update::update(&req, &body, &state, &scope).await,
        Verb::Patch => patch::patch(&req, &body, &state, &scope).await,
        Verb::Delete => delete::delete(&req, &body, &state, &scope).await,
        Verb::DeleteCollection => delete::delete_collection(&req, &body, &state, &scope).await,
    };
    let mut warnings: Vec<String> = crd
        .and_then(|c| c.deprecation_warning.clone())
        .into_iter()
        .chain(
            scope
                .resource
                .strategy
                .deprecation_warning()
                .map(str::to_string),
        )
        .collect();
    if let Some(admission) = req.extensions().get::<Arc<RequestAdmission>>() {
        warnings.extend(admission.outcome().warnings());
    }
    reply.map(|r| with_warnings(r, &warnings))
}

/// The write context of a request: dryRun, the field manager (fieldManager, else the
/// User-Agent's product token, as kube-apiserver derives it) and its admission.
fn write_context(req: &HttpRequest, scope: &RequestScope, opts: &WriteOptions) -> WriteContext {
    let manager = field_manager(req, opts);
    WriteContext {
        dry_run: opts.dry_run,
        admission: admission(req, scope, opts.dry_run, &manager),
        manager,
        apply: false,
    }
}

/// The field manager of a write: fieldManager, else the User-Agent's product token.
fn field_manager(req: &HttpRequest, opts: &WriteOptions) -> String {
    let ua = req
        .headers()
        .get(actix_web::http::header::USER_AGENT)
        .and_then(|v| v.to_str().ok());
    manager_name(opts.field_manager.as_deref(), ua)
}

/// The admission of the request's writes, kept in the request too, so that what the
/// plugins said (warnings) reaches the response whatever the handler does.
fn admission(
    req: &HttpRequest,
    scope: &RequestScope,
    dry_run: bool,
    manager: &str,
) -> Option<Arc<RequestAdmission>> {
    let chain = req.app_data::<web::Data<Chain>>()?.clone().into_inner();
    let user = match crate::auth::user(req) {
        Some(user) => Arc::new((*user).clone()),
        None => Arc::new(crate::auth::UserInfo::anonymous()),
    };
    let subresource = scope
        .subresource
        .map(|s| s.name(&scope.resource.def).to_string())
        .unwrap_or_default();
    let admission = Arc::new(RequestAdmission::new(
        chain,
        user,
        &subresource,
        dry_run,
        manager,
    ));
    req.extensions_mut().insert(admission.clone());
    Some(admission)
}

/// Applies `fieldValidation` to unknown fields: Strict rejects, Warn (default) warns,
/// Ignore drops silently. Unknown fields are never stored.
fn field_validation(
    res: &ApiResource,
    obj: &mut Value,
    mode: FieldValidation,
    duplicates: &[String],
) -> Result<Vec<String>, ApiError> {
    let unknown = prune(obj, res.schema());
    let problems: Vec<String> = duplicates
        .iter()
        .map(|f| format!("duplicate field \"{f}\""))
        .chain(unknown.iter().map(|f| format!("unknown field \"{f}\"")))
        .collect();
    match mode {
        FieldValidation::Ignore => Ok(vec![]),
        FieldValidation::Warn => Ok(problems),
        FieldValidation::Strict if problems.is_empty() => Ok(vec![]),
        FieldValidation::Strict => Err(ApiError::bad_request(format!(
            "{} in version \"{}\" cannot be handled as a {}: strict decoding error: {}",
            res.def.kind,
            res.def.version,
            res.def.kind,
            problems.join(", ")
        ))),
    }
}

/// The body of a create or update: decoded, its namespace checked against the URL's,
/// and unknown or duplicate fields handled as `fieldValidation` says (the warnings).
fn decode_object(
    req: &HttpRequest,
    body: &[u8],
    scope: &RequestScope,
    opts: &WriteOptions,
) -> Result<(Value, Vec<String>), ApiError> {
    let res = &scope.resource;
    let mut obj = decode_body(req, body, res)?;
    crate::audit::record_request_object(req, &obj);
    check_body_namespace(scope.namespace(), &obj)?;
    let duplicates = body_duplicates(req, body);
    let warnings = field_validation(res, &mut obj, opts.field_validation, &duplicates)?;
    Ok((obj, warnings))
}

/// A namespace in the body must be the one in the URL.
fn check_body_namespace(url_ns: Option<&str>, obj: &Value) -> Result<(), ApiError> {
    match (url_ns, obj["metadata"]["namespace"].as_str()) {
        (Some(url), Some(body)) if !body.is_empty() && body != url => Err(ApiError::bad_request(
            "the namespace of the provided object does not match the namespace sent on the request",
        )),
        _ => Ok(()),
    }
}

/// Duplicate keys of a JSON body (other encodings cannot carry them through our decoders).
fn body_duplicates(req: &HttpRequest, body: &[u8]) -> Vec<String> {
    match super::negotiation::content_type(req).as_str() {
        "" | "application/json" => super::duplicates::duplicate_fields(body),
        _ => Vec::new(),
    }
}

/// Adds one `Warning: 299 - "<text>"` header per warning.
fn with_warnings(mut resp: HttpResponse, warnings: &[String]) -> HttpResponse {
    for w in warnings {
        if let Ok(v) = actix_web::http::header::HeaderValue::from_str(&format!(
            "299 - {}",
            Value::String(w.clone())
        )) {
            resp.headers_mut().append(
                actix_web::http::header::HeaderName::from_static("warning"),
                v,
            );
        }
    }
    resp
}

/// A list's metadata: its resourceVersion, and where to continue.
fn list_metadata<T>(page: &ObjectList<T>) -> Value {
    let mut list_meta = json!({ "resourceVersion": page.resource_version });
    if let Some(c) = &page.continue_token {
        list_meta["continue"] = json!(c);
        list_meta["remainingItemCount"] = json!(page.remaining);
    }
    list_meta
}

/// Writes answer JSON or YAML; a Table request falls back to JSON.
fn write_representation(req: &HttpRequest) -> Representation {
    write_repr(representation(req).unwrap_or(Representation::Json))
}

fn write_repr(r: Representation) -> Representation {
    match r {
        Representation::Table | Representation::PartialMetadata => Representation::Json,
        other => other,
    }
}
