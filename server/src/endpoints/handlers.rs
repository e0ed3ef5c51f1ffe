//! One generic handler per verb. Each takes the catalog entry from its
//! [`RequestScope`], parses options, calls the store, and renders the result; errors
//! leave as `Status` through [`ApiError`].

use actix_web::{web, HttpRequest, HttpResponse};
use bytes::Bytes;
use futures_util::StreamExt;
use serde::Deserialize;
use serde_json::{json, Value};

use super::negotiation::{
    decode_body, partial_metadata, partial_metadata_list, representation, respond, respond_bytes,
    respond_object, wants_pretty, Representation,
};
use super::scale::{apply_scale, to_scale};
use super::table::{table, table_from_stored, IncludeObject};
use super::{ApiState, RequestScope};
use crate::api::selectors::{FieldSelector, LabelSelector};
use crate::api::status::success;
use crate::api::{ApiError, StatusCause};
use crate::catalog::ApiResource;
use crate::registry::apply;
use crate::registry::managed_fields::manager_name;
use crate::registry::schema::prune;
use crate::registry::store::{ListOptions, ObjectList, ReadAt, Target, WriteContext};
use crate::registry::strategic_merge;
use codegen::endpoints::Subresource;

type Reply = Result<HttpResponse, ApiError>;

/// Query parameters of reads.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct ReadOptions {
    limit: Option<usize>,
    #[serde(rename = "continue")]
    continue_token: Option<String>,
    label_selector: Option<String>,
    field_selector: Option<String>,
    include_object: Option<String>,
    resource_version: Option<String>,
    resource_version_match: Option<String>,
    timeout_seconds: Option<u64>,
    allow_watch_bookmarks: Option<String>,
    send_initial_events: Option<String>,
}

fn flag(v: &Option<String>, name: &str) -> Result<bool, ApiError> {
    match v.as_deref() {
        None | Some("") | Some("false") | Some("0") => Ok(false),
        Some("true") | Some("1") => Ok(true),
        Some(other) => Err(ApiError::bad_request(format!(
            "{name}: invalid value {other:?}: must be true or false"
        ))),
    }
}

/// Query parameters of writes.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct WriteOptions {
    dry_run: Option<String>,
    field_validation: Option<String>,
    field_manager: Option<String>,
    force: Option<String>,
}

/// A DELETE's options, from the query or a DeleteOptions body.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct DeleteQuery {
    dry_run: Option<String>,
    propagation_policy: Option<String>,
    #[allow(dead_code)]
    grace_period_seconds: Option<i64>,
}

fn query<T: for<'de> Deserialize<'de> + Default>(req: &HttpRequest) -> Result<T, ApiError> {
    // Unknown parameters (pretty, timeout, ...) are ignored, as kube-apiserver does.
    web::Query::<T>::from_query(req.query_string())
        .map(web::Query::into_inner)
        .map_err(|e| ApiError::bad_request(format!("invalid query parameters: {e}")))
}

fn dry_run(v: &Option<String>, options: &str) -> Result<bool, ApiError> {
    match v.as_deref() {
        None | Some("") => Ok(false),
        Some("All") => Ok(true),
        Some(other) => Err(ApiError::invalid_options(
            options,
            StatusCause::unsupported("dryRun", &format!("[]string{{{other:?}}}"), &["All"]),
        )),
    }
}

/// The write context of a request: dryRun and the field manager (fieldManager, else the
/// User-Agent's product token, as kube-apiserver derives it).
fn write_context(
    req: &HttpRequest,
    opts: &WriteOptions,
    options: &str,
) -> Result<WriteContext, ApiError> {
    let manager = opts.field_manager.as_deref();
    if manager.is_some_and(|m| m.len() > 128) {
        return Err(ApiError::invalid_options(
            options,
            StatusCause::too_long("fieldManager", "may not be more than 128 bytes"),
        ));
    }
    let ua = req
        .headers()
        .get(actix_web::http::header::USER_AGENT)
        .and_then(|v| v.to_str().ok());
    Ok(WriteContext {
        dry_run: dry_run(&opts.dry_run, options)?,
        manager: manager_name(manager, ua),
        apply: false,
    })
}

/// Applies `fieldValidation` to unknown fields: Strict rejects, Warn (default) warns,
/// Ignore drops silently. Unknown fields are never stored.
fn field_validation(
    res: &ApiResource,
    obj: &mut Value,
    mode: Option<&str>,
    duplicates: &[String],
    options: &str,
) -> Result<Vec<String>, ApiError> {
    let unknown = prune(obj, &res.schema);
    let problems: Vec<String> = duplicates
        .iter()
        .map(|f| format!("duplicate field \"{f}\""))
        .chain(unknown.iter().map(|f| format!("unknown field \"{f}\"")))
        .collect();
    match mode.unwrap_or("Warn") {
        "Ignore" => Ok(vec![]),
        "Warn" => Ok(problems),
        "Strict" if problems.is_empty() => Ok(vec![]),
        "Strict" => {
            let list = problems;
            Err(ApiError::bad_request(format!(
                "{} in version \"{}\" cannot be handled as a {}: strict decoding error: {}",
                res.def.kind,
                res.def.version,
                res.def.kind,
                list.join(", ")
            )))
        }
        other => Err(ApiError::invalid_options(
            options,
            StatusCause::unsupported(
                "fieldValidation",
                &format!("{other:?}"),
                &["", "Ignore", "Strict", "Warn"],
            ),
        )),
    }
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

/// Checks `resourceVersion` / `resourceVersionMatch` of a get or list against the store.
/// Reads are served at the current revision, which satisfies unset, "0" and
/// NotOlderThan (when not in the future); Exact needs that revision to be current.
async fn check_read_version(
    state: &ApiState,
    opts: &ReadOptions,
    is_list: bool,
) -> Result<(), ApiError> {
    let rv = opts.resource_version.as_deref().filter(|s| !s.is_empty());
    let rv_match = opts
        .resource_version_match
        .as_deref()
        .filter(|s| !s.is_empty());
    if is_list && rv_match.is_some() && rv.is_none() {
        return Err(ApiError::invalid_options(
            "ListOptions",
            StatusCause::forbidden(
                "resourceVersionMatch",
                "resourceVersionMatch is forbidden unless resourceVersion is provided",
            ),
        ));
    }
    if is_list
        && rv.is_some()
        && opts
            .continue_token
            .as_deref()
            .is_some_and(|c| !c.is_empty())
    {
        return Err(ApiError::invalid_options(
            "ListOptions",
            StatusCause::forbidden(
                "resourceVersion",
                "specifying resource version is not allowed when using continue",
            ),
        ));
    }
    if let Some(m) = rv_match.filter(|m| !["Exact", "NotOlderThan"].contains(m)) {
        return Err(ApiError::invalid_options(
            "ListOptions",
            StatusCause::unsupported(
                "resourceVersionMatch",
                &format!("{m:?}"),
                &["Exact", "NotOlderThan", ""],
            ),
        ));
    }
    let Some(rv) = rv else { return Ok(()) };
    let n: u64 = rv
        .parse()
        .map_err(|_| ApiError::bad_request(format!("invalid resource version: {rv:?}")))?;
    if n == 0 {
        if rv_match == Some("Exact") {
            return Err(ApiError::invalid_options(
                "ListOptions",
                StatusCause::forbidden(
                    "resourceVersionMatch",
                    "resourceVersionMatch \"exact\" is forbidden for resourceVersion \"0\"",
                ),
            ));
        }
        return Ok(());
    }
    let current = state.store.current_revision().await?;
    if n > current {
        return Err(ApiError::too_large_resource_version(n, current));
    }
    if rv_match == Some("Exact") && !is_list && n != current {
        return Err(ApiError::expired(format!(
            "too old resource version: {n} ({current})"
        )));
    }
    Ok(())
}

/// Parses the list options of a read (limit, continue, selectors).
fn list_options(res: &ApiResource, opts: &ReadOptions) -> Result<ListOptions, ApiError> {
    let labels = LabelSelector::parse(opts.label_selector.as_deref().unwrap_or_default())
        .map_err(ApiError::bad_request)?;
    let fields = FieldSelector::parse(
        opts.field_selector.as_deref().unwrap_or_default(),
        &res.selectable_fields,
        res.builtin(),
    )
    .map_err(ApiError::bad_request)?;
    Ok(ListOptions {
        limit: opts.limit.unwrap_or(0),
        continue_token: opts.continue_token.clone(),
        at: read_at(opts),
        labels,
        fields,
    })
}

/// The state a get or list reads, from `resourceVersion` and `resourceVersionMatch`
/// (as [`check_read_version`] accepted them).
fn read_at(opts: &ReadOptions) -> ReadAt {
    let rv = opts
        .resource_version
        .as_deref()
        .and_then(|s| s.parse::<u64>().ok());
    match (opts.resource_version_match.as_deref(), rv) {
        (_, None) => ReadAt::Latest,
        (_, Some(0)) => ReadAt::Any,
        (Some("Exact"), Some(n)) => ReadAt::Exact(n),
        (_, Some(n)) => ReadAt::NotOlderThan(n),
    }
}

/// GET on a collection: a List, or a Table.
pub async fn list(req: HttpRequest, state: web::Data<ApiState>, scope: RequestScope) -> Reply {
    let opts: ReadOptions = query(&req)?;
    serve_list(req, state, &scope, opts).await
}

async fn serve_list(
    req: HttpRequest,
    state: web::Data<ApiState>,
    scope: &RequestScope,
    opts: ReadOptions,
) -> Reply {
    let res = scope.resource.clone();
    // `?watch=true` on a list path, or a `/watch/` path.
    let watching = scope.verb == codegen::endpoints::Verb::Watch;
    if !watching {
        check_read_version(&state, &opts, true).await?;
    }
    let list_opts = list_options(&res, &opts)?;
    let repr = representation(&req)?;
    if repr == Representation::Json
        && !watching
        && list_opts.labels.is_empty()
        && list_opts.fields.is_empty()
        && !wants_pretty(&req)
    {
        return list_from_bytes(&req, &state, scope, &list_opts).await;
    }
    if watching {
        let send_initial_events = flag(&opts.send_initial_events, "sendInitialEvents")?;
        if send_initial_events && opts.resource_version_match.as_deref() != Some("NotOlderThan") {
            return Err(ApiError::invalid_options(
                "ListOptions",
                StatusCause::forbidden(
                    "resourceVersionMatch",
                    "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan",
                ),
            ));
        }
        let w = super::watch::WatchRequest {
            namespace: scope.namespace().map(str::to_string),
            list: list_opts,
            resource_version: opts.resource_version.clone(),
            timeout_seconds: opts.timeout_seconds,
            allow_bookmarks: flag(&opts.allow_watch_bookmarks, "allowWatchBookmarks")?,
            send_initial_events,
            repr,
            include: IncludeObject::parse(opts.include_object.as_deref())
                .map_err(ApiError::bad_request)?,
        };
        return super::watch::serve(&req, res, &state, w).await;
    }
    if repr == Representation::Table && !wants_pretty(&req) {
        // Rows straight from the stored bytes (what `kubectl get` asks for).
        let include =
            IncludeObject::parse(opts.include_object.as_deref()).map_err(ApiError::bad_request)?;
        let page = state
            .store
            .list_stored(&res, scope.namespace(), &list_opts)
            .await?;
        let body = table_from_stored(&res, &page.items, &list_metadata(&page), include)
            .map_err(ApiError::internal)?;
        return Ok(respond_bytes(&req, 200, "application/json", body));
    }
    let page = state
        .store
        .list(&res, scope.namespace(), &list_opts)
        .await?;
    let list_meta = list_metadata(&page);
    if repr == Representation::Table {
        let include =
            IncludeObject::parse(opts.include_object.as_deref()).map_err(ApiError::bad_request)?;
        return Ok(respond(
            &req,
            200,
            &table(&res, page.items, list_meta, include),
            repr,
        ));
    }
    if repr == Representation::PartialMetadata {
        return Ok(respond(
            &req,
            200,
            &partial_metadata_list(list_meta, &page.items),
            repr,
        ));
    }
    let body = json!({ "kind": res.def.list_kind, "apiVersion": res.api_version(), "metadata": list_meta, "items": page.items });
    Ok(respond_object(&req, 200, &body, repr, &res))
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

/// GET on one object (or its status).
pub async fn get(req: HttpRequest, state: web::Data<ApiState>, scope: RequestScope) -> Reply {
    let res = scope.resource.clone();
    let opts: ReadOptions = query(&req)?;
    let repr = representation(&req)?;
    check_read_version(&state, &opts, false).await?;
    if repr == Representation::Json
        && scope.subresource != Some(Subresource::Scale)
        && !wants_pretty(&req)
    {
        // Plain JSON: the stored bytes with resourceVersion spliced in, no decoding.
        let at = read_at(&opts);
        let ns = scope.namespace();
        let body = state.store.get_json_at(&res, ns, scope.name(), at).await?;
        return Ok(respond_bytes(&req, 200, "application/json", body.to_vec()));
    }
    let obj = state
        .store
        .get_at(&res, scope.namespace(), scope.name(), read_at(&opts))
        .await?;
    if scope.subresource == Some(Subresource::Scale) {
        return Ok(respond(&req, 200, &to_scale(&res, &obj)?, write_repr(repr)));
    }
    if repr == Representation::PartialMetadata {
        return Ok(respond(&req, 200, &partial_metadata(&obj), repr));
    }
    if repr == Representation::Table {
        let include =
            IncludeObject::parse(opts.include_object.as_deref()).map_err(ApiError::bad_request)?;
        let rv = obj["metadata"]["resourceVersion"].clone();
        return Ok(respond(
            &req,
            200,
            &table(&res, vec![obj], json!({ "resourceVersion": rv }), include),
            repr,
        ));
    }
    Ok(respond_object(&req, 200, &obj, repr, &res))
}

/// POST on a collection.
pub async fn create(
    req: HttpRequest,
    body: Bytes,
    state: web::Data<ApiState>,
    scope: RequestScope,
) -> Reply {
    let res = scope.resource.clone();
    let opts: WriteOptions = query(&req)?;
    let repr = write_representation(&req)?;
    let mut obj = decode_body(&req, &body, &res)?;
    let ns = scope.namespace();
    check_body_namespace(ns, &obj)?;
    let warnings = field_validation(
        &res,
        &mut obj,
        opts.field_validation.as_deref(),
        &body_duplicates(&req, &body),
        "CreateOptions",
    )?;
    let created = state
        .store
        .create(&res, ns, obj, &write_context(&req, &opts, "CreateOptions")?)
        .await?;
    Ok(with_warnings(
        respond_object(&req, 201, &created, repr, &res),
        &warnings,
    ))
}

/// PUT on one object (or its status).
pub async fn update(
    req: HttpRequest,
    body: Bytes,
    state: web::Data<ApiState>,
    scope: RequestScope,
) -> Reply {
    let res = scope.resource.clone();
    let opts: WriteOptions = query(&req)?;
    let repr = write_representation(&req)?;
    let ns = scope.namespace();
    if scope.subresource == Some(Subresource::Scale) {
        let scale: Value = serde_json::from_slice(&body).map_err(|e| {
            ApiError::bad_request(format!(
                "the object provided is unrecognized (must be of type Scale): {e}"
            ))
        })?;
        let updated = state
            .store
            .patch(
                &res,
                ns,
                scope.name(),
                Target::Main,
                &write_context(&req, &opts, "UpdateOptions")?,
                |old| apply_scale(&res, old, &scale),
            )
            .await?;
        return Ok(respond(&req, 200, &to_scale(&res, &updated)?, repr));
    }
    let mut obj = decode_body(&req, &body, &res)?;
    check_body_namespace(ns, &obj)?;
    let warnings = field_validation(
        &res,
        &mut obj,
        opts.field_validation.as_deref(),
        &body_duplicates(&req, &body),
        "UpdateOptions",
    )?;
    let updated = state
        .store
        .update(
            &res,
            ns,
            scope.name(),
            obj,
            scope.target(),
            &write_context(&req, &opts, "UpdateOptions")?,
        )
        .await?;
    Ok(with_warnings(
        respond_object(&req, 200, &updated, repr, &res),
        &warnings,
    ))
}

/// PATCH on one object: JSON patch, merge patch, strategic merge patch (treated as a
/// merge patch until list merge strategies land).
pub async fn patch(
    req: HttpRequest,
    body: Bytes,
    state: web::Data<ApiState>,
    scope: RequestScope,
) -> Reply {
    let res = scope.resource.clone();
    let opts: WriteOptions = query(&req)?;
    let repr = write_representation(&req)?;
    let content_type = super::negotiation::content_type(&req);
    if content_type == "application/apply-patch+yaml" {
        return apply_patch(req, body, state, &scope, opts, repr).await;
    }
    if opts.force.is_some() {
        return Err(ApiError::invalid_options(
            "PatchOptions",
            StatusCause::forbidden("force", "may not be specified for non-apply patch"),
        ));
    }
    enum Kind {
        Json(json_patch::Patch),
        Merge(Value),
        Strategic(Value),
    }
    // Strategic merge needs Go types' patch strategies: kube-apiserver offers it for
    // built-in kinds only, and so do we.
    let strategic_ok = res.builtin();
    let patch = match content_type.as_str() {
        "application/strategic-merge-patch+json" if !strategic_ok => {
            return Err(ApiError::unsupported_patch_type(false))
        }
        "application/json-patch+json" => {
            Kind::Json(serde_json::from_slice(&body).map_err(|e| {
                ApiError::bad_request(format!(
                    "the body of the request is not a valid JSON patch: {e}"
                ))
            })?)
        }
        "application/merge-patch+json" | "application/strategic-merge-patch+json" => {
            let strategic = content_type == "application/strategic-merge-patch+json";
            let v: Value = serde_json::from_slice(&body).map_err(|e| {
                ApiError::bad_request(format!("the body of the request is not valid JSON: {e}"))
            })?;
            if !v.is_object() {
                return Err(ApiError::bad_request("a merge patch must be a JSON object"));
            }
            if strategic {
                Kind::Strategic(v)
            } else {
                Kind::Merge(v)
            }
        }
        _ => return Err(ApiError::unsupported_patch_type(strategic_ok)),
    };
    let ns = scope.namespace();
    let warnings = std::sync::Mutex::new(Vec::new());
    let mode = opts.field_validation.clone();
    let patched = state
        .store
        .patch(
            &res,
            ns,
            scope.name(),
            scope.target(),
            &write_context(&req, &opts, "PatchOptions")?,
            |old| {
                let scale = scope.subresource == Some(Subresource::Scale);
                let mut new = if scale {
                    to_scale(&res, old)?
                } else {
                    old.clone()
                };
                match &patch {
                    Kind::Json(p) => json_patch::patch(&mut new, p).map_err(|e| ApiError {
                        code: 422,
                        reason: "Invalid",
                        message: format!(
                            "the server rejected our request due to an error in our request: {e}"
                        ),
                        details: None,
                    })?,
                    Kind::Merge(p) => json_patch::merge(&mut new, p),
                    Kind::Strategic(p) => {
                        new = strategic_merge::apply(&new, p, &res.schema)
                            .map_err(ApiError::bad_request)?
                    }
                }
                if !new.is_object() {
                    return Err(ApiError::bad_request(
                        "the patch turned the object into something that is not an object",
                    ));
                }
                if scale {
                    return apply_scale(&res, old, &new);
                }
                super::negotiation::check_type_meta(&new, &res)?;
                let w = field_validation(&res, &mut new, mode.as_deref(), &[], "PatchOptions")?;
                *warnings.lock().unwrap_or_else(|e| e.into_inner()) = w;
                Ok(new)
            },
        )
        .await?;
    let warnings = warnings.into_inner().unwrap_or_default();
    let patched = if scope.subresource == Some(Subresource::Scale) {
        to_scale(&res, &patched)?
    } else {
        patched
    };
    Ok(with_warnings(
        respond_object(&req, 200, &patched, repr, &res),
        &warnings,
    ))
}

/// PATCH with `application/apply-patch+yaml`: server-side apply. Creates the object when
/// absent (201), otherwise merges the manager's intent (200); conflicts with other
/// managers are 409 unless `force=true`.
async fn apply_patch(
    req: HttpRequest,
    body: Bytes,
    state: web::Data<ApiState>,
    scope: &RequestScope,
    opts: WriteOptions,
    repr: Representation,
) -> Reply {
    let res = scope.resource.clone();
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
    let force = flag(&opts.force, "force")?;
    let mut ctx = write_context(&req, &opts, "PatchOptions")?;
    ctx.apply = true;
    let subresource = match scope.subresource {
        Some(Subresource::Status) => Some("status"),
        Some(other) => {
            return Err(ApiError::bad_request(format!(
                "server-side apply is not supported on the {} subresource",
                other.as_str()
            )))
        }
        None => None,
    };
    if body.len() > super::negotiation::MAX_BODY_BYTES {
        return Err(ApiError::too_large(super::negotiation::MAX_BODY_BYTES));
    }
    let mut intent: Value = serde_yaml::from_slice(&body)
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
    super::negotiation::check_type_meta(&intent, &res)?;
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
    let warnings = field_validation(
        &res,
        &mut intent,
        opts.field_validation.as_deref(),
        &[],
        "PatchOptions",
    )?;
    let precondition = intent["metadata"]["resourceVersion"]
        .as_str()
        .filter(|s| !s.is_empty())
        .map(str::to_string);
    let intent = apply::clean_intent(intent);
    let now = crate::api::meta::now_rfc3339();
    let target = if subresource.is_some() {
        Target::Status
    } else {
        Target::Main
    };

    for _ in 0..2 {
        let existing = match state.store.get(&res, ns, &name).await {
            Ok(obj) => Some(obj),
            Err(e) if e.code == 404 => None,
            Err(e) => return Err(e),
        };
        let Some(_) = existing else {
            if subresource.is_some() {
                return Err(ApiError::not_found(&res, &name));
            }
            let obj = apply::apply(None, &intent, &res, manager, force, None, &now)?;
            match state.store.create(&res, ns, obj, &ctx).await {
                Ok(created) => {
                    return Ok(with_warnings(
                        respond_object(&req, 201, &created, repr, &res),
                        &warnings,
                    ))
                }
                // Created meanwhile by someone else: apply to it instead.
                Err(e) if e.reason == "AlreadyExists" => continue,
                Err(e) => return Err(e),
            }
        };
        let updated = state
            .store
            .patch(&res, ns, &name, target, &ctx, |old| {
                if let Some(rv) = &precondition {
                    if old["metadata"]["resourceVersion"].as_str() != Some(rv.as_str()) {
                        return Err(ApiError::conflict(&res, &name));
                    }
                }
                apply::apply(Some(old), &intent, &res, manager, force, subresource, &now)
            })
            .await;
        match updated {
            Err(e) if e.code == 404 => continue,
            other => {
                return other
                    .map(|u| with_warnings(respond_object(&req, 200, &u, repr, &res), &warnings))
            }
        }
    }
    Err(ApiError::conflict(&res, &name))
}

/// DELETE on one object. Returns a Success Status for core kinds and the deleted object
/// for the others, as kube-apiserver does.
pub async fn delete(
    req: HttpRequest,
    body: Bytes,
    state: web::Data<ApiState>,
    scope: RequestScope,
) -> Reply {
    let res = scope.resource.clone();
    let opts: DeleteQuery = query(&req)?;
    let repr = write_representation(&req)?;
    let options: Value = if body.is_empty() {
        json!({})
    } else {
        serde_json::from_slice(&body).map_err(|e| {
            ApiError::bad_request(format!(
                "the body of the request is not valid DeleteOptions: {e}"
            ))
        })?
    };
    let body_dry_run = options["dryRun"]
        .as_array()
        .is_some_and(|a| a.iter().any(|v| v == "All"));
    let dry = dry_run(&opts.dry_run, "DeleteOptions")? || body_dry_run;
    let policy = opts
        .propagation_policy
        .as_deref()
        .or(options["propagationPolicy"].as_str());
    if let Some(p) = policy.filter(|p| !["Orphan", "Background", "Foreground"].contains(p)) {
        return Err(ApiError::invalid_options(
            "DeleteOptions",
            StatusCause::unsupported(
                "propagationPolicy",
                &format!("{p:?}"),
                &["Foreground", "Background", "Orphan", "nil"],
            ),
        ));
    }
    let uid = options["preconditions"]["uid"].as_str();
    let rv = options["preconditions"]["resourceVersion"].as_str();
    let ns = scope.namespace();
    let name = scope.name().to_string();
    let deletion = state.store.delete(&res, ns, &name, dry, uid, rv).await?;
    if deletion.deleted && res.builtin() {
        // kube-apiserver answers built-in kinds with a Success Status, custom ones with
        // the object.
        let mut details = json!({ "name": name, "kind": res.def.plural });
        if let Some(uid) = deletion.object["metadata"]["uid"].as_str() {
            details["uid"] = json!(uid);
        }
        return Ok(respond(&req, 200, &success(details), repr));
    }
    Ok(respond_object(&req, 200, &deletion.object, repr, &res))
}

/// Deletes a deletecollection has in flight at once.
const DELETE_COLLECTION_WORKERS: usize = 32;

/// DELETE on a collection: deletes every listed object; returns them as a List.
pub async fn delete_collection(
    req: HttpRequest,
    state: web::Data<ApiState>,
    scope: RequestScope,
) -> Reply {
    let res = scope.resource.clone();
    let opts: ReadOptions = query(&req)?;
    let mut list_opts = list_options(&res, &opts)?;
    list_opts.limit = 0;
    list_opts.continue_token = None;
    let dq: DeleteQuery = query(&req)?;
    let dry = dry_run(&dq.dry_run, "DeleteOptions")?;
    let repr = write_representation(&req)?;
    let ns = scope.namespace();
    let page = state.store.list(&res, ns, &list_opts).await?;
    // Several deletes in flight (kube-apiserver's --delete-collection-workers), so the
    // embedded store commits them together; answers keep the list's order.
    let deletes = page.items.iter().map(|obj| {
        let name = obj["metadata"]["name"].as_str().unwrap_or_default();
        state.store.delete(&res, ns, name, dry, None, None)
    });
    let results: Vec<_> = futures_util::stream::iter(deletes)
        .buffered(DELETE_COLLECTION_WORKERS)
        .collect()
        .await;
    let mut deleted = Vec::with_capacity(results.len());
    for result in results {
        match result {
            Ok(d) => deleted.push(d.object),
            Err(e) if e.code == 404 => {}
            Err(e) => return Err(e),
        }
    }
    let body = json!({ "kind": res.def.list_kind, "apiVersion": res.api_version(), "metadata": { "resourceVersion": page.resource_version }, "items": deleted });
    Ok(respond_object(&req, 200, &body, repr, &res))
}

/// Writes answer JSON or YAML; a Table request falls back to JSON.
fn write_representation(req: &HttpRequest) -> Result<Representation, ApiError> {
    Ok(write_repr(
        representation(req).unwrap_or(Representation::Json),
    ))
}

fn write_repr(r: Representation) -> Representation {
    match r {
        Representation::Table | Representation::PartialMetadata => Representation::Json,
        other => other,
    }
}

/// GET on a `/watch/` path (deprecated form of `?watch=true`); a trailing name watches
/// one object.
pub async fn watch(req: HttpRequest, state: web::Data<ApiState>, scope: RequestScope) -> Reply {
    let mut opts: ReadOptions = query(&req)?;
    if let Some(name) = scope.info.name.as_deref() {
        let by_name = format!("metadata.name={name}");
        opts.field_selector = Some(match opts.field_selector.take().filter(|f| !f.is_empty()) {
            Some(f) => format!("{f},{by_name}"),
            None => by_name,
        });
    }
    serve_list(req, state, &scope, opts).await
}

/// Runs a resolved resource request through the handler of its verb.
pub async fn serve(
    req: HttpRequest,
    body: Bytes,
    state: web::Data<ApiState>,
    scope: RequestScope,
) -> Reply {
    use codegen::endpoints::Verb;
    match scope.verb {
        Verb::Get => get(req, state, scope).await,
        Verb::List => list(req, state, scope).await,
        Verb::Watch if scope.info.legacy_watch => watch(req, state, scope).await,
        Verb::Watch => list(req, state, scope).await,
        Verb::Create => create(req, body, state, scope).await,
        Verb::Update => update(req, body, state, scope).await,
        Verb::Patch => patch(req, body, state, scope).await,
        Verb::Delete => delete(req, body, state, scope).await,
        Verb::DeleteCollection => delete_collection(req, state, scope).await,
    }
}
