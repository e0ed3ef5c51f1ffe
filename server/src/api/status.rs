//! metav1 `Status`: every failure leaves the server as one, with kube-apiserver's codes,
//! reasons and message texts.

use actix_web::http::StatusCode;
use actix_web::{HttpResponse, ResponseError};
use serde::Serialize;
use serde_json::json;

use crate::catalog::ApiResource;

/// One entry of `details.causes` (a field-level validation failure).
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct StatusCause {
    pub reason: String,
    pub message: String,
    pub field: String,
}

impl StatusCause {
    /// `FieldValueInvalid` at `field`, message `Invalid value: "<value>": <detail>`.
    pub fn invalid(field: &str, value: &str, detail: &str) -> Self {
        StatusCause {
            reason: "FieldValueInvalid".into(),
            message: format!(
                "Invalid value: {}: {detail}",
                serde_json::Value::String(value.into())
            ),
            field: field.into(),
        }
    }

    /// `FieldValueInvalid` for a JSON value: numbers and booleans shown bare, strings
    /// quoted, lists and objects by their type, as kube-apiserver shows them.
    pub fn invalid_value(field: &str, value: &serde_json::Value, detail: &str) -> Self {
        use serde_json::Value;
        let shown = match value {
            Value::Number(_) | Value::Bool(_) | Value::String(_) => value.to_string(),
            Value::Array(_) => "\"array\"".into(),
            Value::Object(_) => "\"object\"".into(),
            Value::Null => "null".into(),
        };
        StatusCause {
            reason: "FieldValueInvalid".into(),
            message: format!("Invalid value: {shown}: {detail}"),
            field: field.into(),
        }
    }

    /// `FieldValueRequired` at `field`; `detail` may be empty.
    pub fn required(field: &str, detail: &str) -> Self {
        let message = if detail.is_empty() {
            "Required value".to_string()
        } else {
            format!("Required value: {detail}")
        };
        StatusCause {
            reason: "FieldValueRequired".into(),
            message,
            field: field.into(),
        }
    }

    /// `FieldValueNotSupported`: `value` (already rendered) is not one of `supported`.
    pub fn unsupported(field: &str, value: &str, supported: &[&str]) -> Self {
        let list: Vec<String> = supported.iter().map(|s| format!("{s:?}")).collect();
        StatusCause {
            reason: "FieldValueNotSupported".into(),
            message: format!(
                "Unsupported value: {value}: supported values: {}",
                list.join(", ")
            ),
            field: field.into(),
        }
    }

    /// `FieldValueForbidden` at `field`.
    pub fn forbidden(field: &str, detail: &str) -> Self {
        StatusCause {
            reason: "FieldValueForbidden".into(),
            message: format!("Forbidden: {detail}"),
            field: field.into(),
        }
    }

    /// `FieldValueTooLong` at `field`.
    pub fn too_long(field: &str, detail: &str) -> Self {
        StatusCause {
            reason: "FieldValueTooLong".into(),
            message: format!("Too long: {detail}"),
            field: field.into(),
        }
    }

    /// `FieldValueTooMany` at `field`: a list or map with more than `max` entries.
    pub fn too_many(field: &str, actual: usize, max: u64) -> Self {
        StatusCause {
            reason: "FieldValueTooMany".into(),
            message: format!("Too many: {actual}: must have at most {max} items"),
            field: field.into(),
        }
    }

    /// `FieldValueNotFound` at `field`: `value` (already rendered) names nothing there.
    pub fn not_found(field: &str, value: &str) -> Self {
        StatusCause {
            reason: "FieldValueNotFound".into(),
            message: format!("Not found: {value}"),
            field: field.into(),
        }
    }

    /// `FieldValueDuplicate` at `field`.
    pub fn duplicate(field: &str, value: &str) -> Self {
        StatusCause {
            reason: "FieldValueDuplicate".into(),
            message: format!("Duplicate value: {value}"),
            field: field.into(),
        }
    }
}

/// Why a request failed: metav1 `StatusReason`, the machine-readable half of a `Status`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StatusReason {
    BadRequest,
    /// 401: the credentials were not recognised.
    Unauthorized,
    Forbidden,
    NotFound,
    AlreadyExists,
    Conflict,
    /// 410: the requested resourceVersion (or continue token) is no longer available.
    Expired,
    Invalid,
    MethodNotAllowed,
    NotAcceptable,
    UnsupportedMediaType,
    RequestEntityTooLarge,
    Timeout,
    TooManyRequests,
    InternalError,
    ServiceUnavailable,
    /// No reason, or one this server does not know: what a webhook's refusal may carry
    /// (the `Status` then has no `reason`).
    Unspecified,
}

impl StatusReason {
    /// The reason as a `Status` writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            StatusReason::BadRequest => "BadRequest",
            StatusReason::Unauthorized => "Unauthorized",
            StatusReason::Forbidden => "Forbidden",
            StatusReason::NotFound => "NotFound",
            StatusReason::AlreadyExists => "AlreadyExists",
            StatusReason::Conflict => "Conflict",
            StatusReason::Expired => "Expired",
            StatusReason::Invalid => "Invalid",
            StatusReason::MethodNotAllowed => "MethodNotAllowed",
            StatusReason::NotAcceptable => "NotAcceptable",
            StatusReason::UnsupportedMediaType => "UnsupportedMediaType",
            StatusReason::RequestEntityTooLarge => "RequestEntityTooLarge",
            StatusReason::Timeout => "Timeout",
            StatusReason::TooManyRequests => "TooManyRequests",
            StatusReason::InternalError => "InternalError",
            StatusReason::ServiceUnavailable => "ServiceUnavailable",
            StatusReason::Unspecified => "",
        }
    }

    /// The reason a `Status` from elsewhere (a webhook) names.
    pub fn from_wire(reason: &str) -> StatusReason {
        const KNOWN: [StatusReason; 16] = [
            StatusReason::BadRequest,
            StatusReason::Unauthorized,
            StatusReason::Forbidden,
            StatusReason::NotFound,
            StatusReason::AlreadyExists,
            StatusReason::Conflict,
            StatusReason::Expired,
            StatusReason::Invalid,
            StatusReason::MethodNotAllowed,
            StatusReason::NotAcceptable,
            StatusReason::UnsupportedMediaType,
            StatusReason::RequestEntityTooLarge,
            StatusReason::Timeout,
            StatusReason::TooManyRequests,
            StatusReason::InternalError,
            StatusReason::ServiceUnavailable,
        ];
        KNOWN
            .into_iter()
            .find(|r| r.as_str() == reason)
            .unwrap_or(StatusReason::Unspecified)
    }
}

/// An API error: rendered as a `Status` with `code`, `reason`, `message` and `details`.
/// Code decides by [`ApiError::reason`] (or the `is_*` checks), never by message text.
#[derive(Debug, Clone)]
pub struct ApiError {
    /// The HTTP status code.
    pub code: u16,
    pub reason: StatusReason,
    pub message: String,
    pub details: Option<serde_json::Value>,
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} ({}): {}",
            self.reason.as_str(),
            self.code,
            self.message
        )
    }
}

fn resource_details(res: &ApiResource, name: &str) -> serde_json::Value {
    let mut d = json!({ "name": name, "kind": res.def.plural });
    if !res.def.group.is_empty() {
        d["group"] = json!(res.def.group);
    }
    d
}

impl ApiError {
    /// Whether the object (or path) does not exist.
    pub fn is_not_found(&self) -> bool {
        self.reason == StatusReason::NotFound
    }

    /// Whether a create found the object already there.
    pub fn is_already_exists(&self) -> bool {
        self.reason == StatusReason::AlreadyExists
    }

    /// Whether the object changed since it was read (optimistic concurrency).
    pub fn is_conflict(&self) -> bool {
        self.reason == StatusReason::Conflict
    }

    /// Whether the requested resourceVersion is gone (410).
    pub fn is_expired(&self) -> bool {
        self.reason == StatusReason::Expired
    }

    /// Whether the request was refused as invalid (422).
    pub fn is_invalid(&self) -> bool {
        self.reason == StatusReason::Invalid
    }

    pub fn new(code: u16, reason: StatusReason, message: impl Into<String>) -> Self {
        ApiError {
            code,
            reason,
            message: message.into(),
            details: None,
        }
    }

    /// 401 Unauthorized: credentials no authenticator accepts (kube-apiserver says no more).
    pub fn unauthorized() -> Self {
        Self::new(401, StatusReason::Unauthorized, "Unauthorized")
    }

    /// 403 Forbidden for a request authorization refused: `<group resource> "<name>" is
    /// forbidden: <why>` (the resource and name left out when empty), as upstream words it.
    pub fn forbidden_request(group: &str, resource: &str, name: &str, why: &str) -> Self {
        let qualified = match (resource, group) {
            ("", _) => String::new(),
            (r, "") => r.to_string(),
            (r, g) => format!("{r}.{g}"),
        };
        let message = match (qualified.as_str(), name) {
            ("", _) => format!("forbidden: {why}"),
            (q, "") => format!("{q} is forbidden: {why}"),
            (q, n) => format!("{q} \"{n}\" is forbidden: {why}"),
        };
        // Upstream always sends details, `{}` for a path.
        let mut details = json!({});
        if !resource.is_empty() {
            details["kind"] = json!(resource);
        }
        if !group.is_empty() {
            details["group"] = json!(group);
        }
        if !name.is_empty() {
            details["name"] = json!(name);
        }
        ApiError {
            details: Some(details),
            ..Self::new(403, StatusReason::Forbidden, message)
        }
    }

    /// 400 BadRequest.
    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(400, StatusReason::BadRequest, message)
    }

    /// 404 NotFound for an object of `res`.
    pub fn not_found(res: &ApiResource, name: &str) -> Self {
        Self::not_found_in_group(&res.def.group, &res.def.plural, name)
    }

    /// 404 NotFound for the object `name` of `resource` in `group`.
    pub fn not_found_in_group(group: &str, resource: &str, name: &str) -> Self {
        let mut details = json!({ "name": name, "kind": resource });
        let qualified = if group.is_empty() {
            resource.to_string()
        } else {
            details["group"] = json!(group);
            format!("{resource}.{group}")
        };
        ApiError {
            details: Some(details),
            ..Self::new(
                404,
                StatusReason::NotFound,
                format!("{qualified} \"{name}\" not found"),
            )
        }
    }

    /// 404 NotFound for a namespace that does not exist.
    pub fn namespace_not_found(name: &str) -> Self {
        ApiError {
            details: Some(json!({ "name": name, "kind": "namespaces" })),
            ..Self::new(
                404,
                StatusReason::NotFound,
                format!("namespaces \"{name}\" not found"),
            )
        }
    }

    /// 403 Forbidden: creating in a namespace that is being deleted.
    pub fn namespace_terminating(res: &ApiResource, name: &str, ns: &str) -> Self {
        let mut d = resource_details(res, name);
        d["causes"] = json!([{ "reason": "NamespaceTerminating", "message": format!("namespace {ns} is being terminated"), "field": "metadata.namespace" }]);
        ApiError {
            details: Some(d),
            ..Self::new(403, StatusReason::Forbidden, format!("{} \"{name}\" is forbidden: unable to create new content in namespace {ns} because it is being terminated", res.qualified_resource()))
        }
    }

    /// 404 NotFound for a path nothing serves.
    pub fn path_not_found(path: &str) -> Self {
        ApiError {
            details: Some(json!({})),
            ..Self::new(
                404,
                StatusReason::NotFound,
                format!("the server could not find the requested resource ({path})"),
            )
        }
    }

    /// 409 AlreadyExists.
    pub fn already_exists(res: &ApiResource, name: &str) -> Self {
        ApiError {
            details: Some(resource_details(res, name)),
            ..Self::new(
                409,
                StatusReason::AlreadyExists,
                format!("{} \"{name}\" already exists", res.qualified_resource()),
            )
        }
    }

    /// 409 Conflict: the object changed since the client read it.
    pub fn conflict(res: &ApiResource, name: &str) -> Self {
        ApiError {
            details: Some(resource_details(res, name)),
            ..Self::new(
                409,
                StatusReason::Conflict,
                format!(
                    "Operation cannot be fulfilled on {} \"{name}\": the object has been modified; please apply your changes to the latest version and try again",
                    res.qualified_resource()
                ),
            )
        }
    }

    /// 422 Invalid with `message` as it stands (a JSON patch that cannot be applied).
    pub fn invalid_request(message: impl Into<String>) -> Self {
        Self::new(422, StatusReason::Invalid, message)
    }

    /// 409 Conflict with `message` and `details` as given (server-side apply conflicts).
    pub fn conflict_with(message: impl Into<String>, details: serde_json::Value) -> Self {
        ApiError {
            details: Some(details),
            ..Self::new(409, StatusReason::Conflict, message)
        }
    }

    /// An error with this HTTP `code`, for failures the HTTP framework reports (4xx
    /// other than those above are bad requests).
    pub fn with_code(code: u16, message: impl Into<String>) -> Self {
        Self::new(code, StatusReason::BadRequest, message)
    }

    /// 422 Invalid with field causes; message as kube-apiserver words it.
    pub fn invalid(res: &ApiResource, name: &str, causes: Vec<StatusCause>) -> Self {
        Self::invalid_kind(&res.def.group, &res.def.kind, name, causes)
    }

    /// 422 Invalid for an object of `group`/`kind` (a subresource's own kind, such as
    /// `autoscaling` `Scale`).
    pub fn invalid_kind(group: &str, kind: &str, name: &str, causes: Vec<StatusCause>) -> Self {
        let list: Vec<String> = causes
            .iter()
            .map(|c| format!("{}: {}", c.field, c.message))
            .collect();
        let joined = if list.len() == 1 {
            list[0].clone()
        } else {
            format!("[{}]", list.join(", "))
        };
        let mut details = json!({ "name": name, "kind": kind, "causes": causes });
        // The qualified GroupKind, as kube-apiserver names it: `Widget.example.dev`.
        let kind = if group.is_empty() {
            kind.to_string()
        } else {
            details["group"] = json!(group);
            format!("{kind}.{group}")
        };
        ApiError {
            details: Some(details),
            ..Self::new(
                422,
                StatusReason::Invalid,
                format!("{kind} \"{name}\" is invalid: {joined}"),
            )
        }
    }

    /// 422 Invalid for request options (query parameters): `options` is the options kind
    /// (`CreateOptions`, `UpdateOptions`, `PatchOptions`, `DeleteOptions`, `ListOptions`).
    pub fn invalid_options(options: &str, cause: StatusCause) -> Self {
        let message = format!(
            "{options}.meta.k8s.io \"\" is invalid: {}: {}",
            cause.field, cause.message
        );
        ApiError {
            details: Some(json!({ "kind": options, "group": "meta.k8s.io", "causes": [cause] })),
            ..Self::new(422, StatusReason::Invalid, message)
        }
    }

    /// 405 MethodNotAllowed.
    pub fn method_not_allowed() -> Self {
        ApiError {
            details: Some(json!({})),
            ..Self::new(
                405,
                StatusReason::MethodNotAllowed,
                "the server does not allow this method on the requested resource",
            )
        }
    }

    /// 415 UnsupportedMediaType.
    pub fn unsupported_media_type(content_type: &str) -> Self {
        Self::new(415, StatusReason::UnsupportedMediaType, format!("the body of the request was in an unknown format - accepted media types include: application/json, application/yaml, application/vnd.kubernetes.protobuf (got {content_type:?})"))
    }

    /// 415 for a PATCH whose body type the resource does not take, listing what it does
    /// (strategic merge only for built-in kinds), as kube-apiserver words it.
    pub fn unsupported_patch_type(strategic: bool) -> Self {
        let accepted = if strategic {
            "application/json-patch+json, application/merge-patch+json, application/strategic-merge-patch+json, application/apply-patch+yaml"
        } else {
            "application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml"
        };
        Self::new(
            415,
            StatusReason::UnsupportedMediaType,
            format!("the body of the request was in an unknown format - accepted media types include: {accepted}"),
        )
    }

    /// 406 NotAcceptable.
    pub fn not_acceptable(accept: &str) -> Self {
        Self::new(406, StatusReason::NotAcceptable, format!("only the following media types are accepted: application/json, application/yaml, application/json;as=Table;v=v1;g=meta.k8s.io (got {accept:?})"))
    }

    /// 413 RequestEntityTooLarge.
    pub fn too_large(limit: usize) -> Self {
        Self::new(
            413,
            StatusReason::RequestEntityTooLarge,
            format!("the request body is larger than the server limit of {limit} bytes"),
        )
    }

    /// 410 Gone with reason Expired.
    pub fn expired(message: impl Into<String>) -> Self {
        Self::new(410, StatusReason::Expired, message)
    }

    /// 429: the server holds as many requests of this kind as it may; retry in a second.
    pub fn too_many_requests() -> Self {
        ApiError {
            details: Some(json!({ "retryAfterSeconds": 1 })),
            ..Self::new(
                429,
                StatusReason::TooManyRequests,
                "Too many requests, please try again later.",
            )
        }
    }

    /// 504 Timeout: the request did not finish within `--request-timeout`.
    pub fn request_timeout() -> Self {
        Self::new(
            504,
            StatusReason::Timeout,
            "Timeout: request did not complete within requested timeout - context deadline exceeded",
        )
    }

    /// 504 Timeout: a read asked for a revision the store has not reached.
    pub fn too_large_resource_version(requested: u64, current: u64) -> Self {
        ApiError {
            details: Some(
                json!({ "causes": [{ "reason": "ResourceVersionTooLarge", "message": "Too large resource version" }], "retryAfterSeconds": 1 }),
            ),
            ..Self::new(
                504,
                StatusReason::Timeout,
                format!("Too large resource version: {requested}, current: {current}"),
            )
        }
    }

    /// 500 InternalError: a server fault, never a client mistake.
    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(
            500,
            StatusReason::InternalError,
            format!("Internal error occurred: {}", message.into()),
        )
    }

    /// 503: the server is shutting down and takes no new requests; retry (elsewhere) in
    /// a second. Upstream's words.
    pub fn shutting_down() -> Self {
        ApiError {
            details: Some(json!({ "retryAfterSeconds": 1 })),
            ..Self::unavailable("apiserver is shutting down")
        }
    }

    /// 503 ServiceUnavailable.
    pub fn unavailable(message: impl Into<String>) -> Self {
        Self::new(503, StatusReason::ServiceUnavailable, message)
    }

    /// The `Status` object.
    pub fn to_status(&self) -> serde_json::Value {
        let mut s = json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason.as_str(),
            "code": self.code,
        });
        if self.reason == StatusReason::Unspecified {
            if let Some(m) = s.as_object_mut() {
                m.remove("reason");
            }
        }
        if let Some(d) = &self.details {
            s["details"] = d.clone();
        }
        s
    }
}

impl ResponseError for ApiError {
    fn status_code(&self) -> StatusCode {
        StatusCode::from_u16(self.code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR)
    }

    fn error_response(&self) -> HttpResponse {
        let mut resp = HttpResponse::build(self.status_code());
        // A client told when to retry waits that long (client-go honours Retry-After).
        if let Some(secs) = self
            .details
            .as_ref()
            .and_then(|d| d["retryAfterSeconds"].as_u64())
        {
            resp.insert_header(("Retry-After", secs.to_string()));
        }
        resp.content_type("application/json")
            .body(serde_json::to_vec(&self.to_status()).unwrap_or_default())
    }
}

/// A `Status` with `status: Success` (delete responses).
pub fn success(details: serde_json::Value) -> serde_json::Value {
    json!({ "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "details": details })
}
