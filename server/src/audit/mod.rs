//! The audit log, as kube-apiserver's: a policy ([`policy`]) decides per request how
//! much is recorded, the audit filter (`filters/audit.rs`) builds one [`event::Event`]
//! per stage of the request, and the log backend ([`log`], rotation in [`rotation`])
//! writes them as JSON lines; the webhook backend ([`webhook`]) sends them to a server.
//! No `--audit-policy-file` means no auditing at all.
//!
//! What the filter cannot see from outside (the authorization decision, admission's
//! annotations, the object answered) is recorded into the request's [`RequestAudit`]
//! by the stage that knows it, and only when the request is audited.

pub mod event;
pub mod log;
pub mod policy;
pub mod rotation;
pub mod webhook;

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;
use std::sync::Arc;

use actix_web::{HttpMessage, HttpRequest};
use bytes::Bytes;

use crate::auth::UserInfo;
use serde_json::Value;

use event::{Event, Level, MicroTime, Stage};
use log::WriteError;
use policy::{Attributes, Policy, RequestAuditConfig};

/// The audit annotation of the authorization decision (`allow` or `forbid`).
pub const DECISION_ANNOTATION: &str = "authorization.k8s.io/decision";
/// The audit annotation of the authorizer's reason.
pub const REASON_ANNOTATION: &str = "authorization.k8s.io/reason";

/// Where audit events go: one of the log or webhook backends.
#[async_trait::async_trait]
pub trait Backend: Send + Sync {
    /// Takes one event, a JSON line. A failure has been logged and counted when this
    /// returns it.
    async fn process(&self, line: Bytes) -> Result<(), WriteError>;

    /// Whether a RequestReceived event this backend cannot take fails its request
    /// (`blocking-strict`).
    fn strict(&self) -> bool;
}

/// Auditing as the flags configure it: the policy and the backends (every event goes
/// to each, as upstream's union of backends).
pub struct Audit {
    policy: Policy,
    backends: Vec<Arc<dyn Backend>>,
}

impl Audit {
    /// Auditing with `policy` into `backends`.
    pub fn new(policy: Policy, backends: Vec<Arc<dyn Backend>>) -> Self {
        Audit { policy, backends }
    }

    /// How a request with these attributes is audited.
    pub fn evaluate(&self, a: &Attributes<'_>) -> RequestAuditConfig {
        self.policy.evaluate(a)
    }

    /// Writes `ev` at `stage` (stamped now; RequestReceived keeps the time the request
    /// came in) to every backend, unless the request's config omits the stage. An error
    /// means a `blocking-strict` backend did not take it (the request fails when it is
    /// its RequestReceived event); other backends' failures are only logged and counted.
    pub async fn process(
        &self,
        ev: &mut Event,
        stage: Stage,
        config: &RequestAuditConfig,
    ) -> Result<(), WriteError> {
        match self.line(ev, stage, config) {
            Ok(Some(line)) => self.emit(line).await,
            Ok(None) => Ok(()),
            Err(e) if self.backends.iter().any(|b| b.strict()) => Err(e),
            Err(_) => Ok(()),
        }
    }

    /// `ev` at `stage` as a line, when the request's config writes the stage.
    pub fn line(
        &self,
        ev: &mut Event,
        stage: Stage,
        config: &RequestAuditConfig,
    ) -> Result<Option<Bytes>, WriteError> {
        if !config.writes(stage) {
            return Ok(None);
        }
        ev.stage = stage;
        ev.stage_timestamp = match stage {
            Stage::RequestReceived => ev.request_received_timestamp,
            _ => MicroTime::now(),
        };
        match ev.to_line() {
            Ok(line) => Ok(Some(line)),
            Err(e) => {
                tracing::error!(error = %e, "audit event not serialized");
                Err(WriteError::Io(std::io::Error::other(e)))
            }
        }
    }

    /// Gives `line` to every backend (concurrently: a blocking webhook does not hold
    /// the log back); the first failure of a strict one, if any.
    pub async fn emit(&self, line: Bytes) -> Result<(), WriteError> {
        if let [only] = self.backends.as_slice() {
            return only.process(line).await.or_else(|e| strictly(only, e));
        }
        let sends = self.backends.iter().map(|b| {
            let line = line.clone();
            async move { b.process(line).await.or_else(|e| strictly(b, e)) }
        });
        futures_util::future::join_all(sends)
            .await
            .into_iter()
            .collect()
    }
}

/// A backend's failure counts against the request only when the backend is strict.
fn strictly(backend: &Arc<dyn Backend>, e: WriteError) -> Result<(), WriteError> {
    match backend.strict() {
        true => Err(e),
        false => Ok(()),
    }
}

/// What later stages of an audited request record for its events.
#[derive(Debug)]
pub struct RequestAudit {
    /// The matched rule's level, stages and managedFields choice.
    pub config: RequestAuditConfig,
    annotations: RefCell<BTreeMap<String, String>>,
    impersonated: RefCell<Option<UserInfo>>,
    request: RefCell<Option<Value>>,
    object: RefCell<Option<ObjectSeen>>,
    response: RefCell<Option<Value>>,
}

/// The metadata of the object a request answered with.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ObjectSeen {
    pub name: String,
    pub namespace: String,
    pub uid: String,
    pub resource_version: String,
}

impl RequestAudit {
    /// A request audited as `config` says.
    pub fn new(config: RequestAuditConfig) -> Self {
        RequestAudit {
            config,
            annotations: RefCell::default(),
            impersonated: RefCell::default(),
            request: RefCell::default(),
            object: RefCell::default(),
            response: RefCell::default(),
        }
    }

    /// The audit of `req`, when it is audited at Metadata or above.
    pub fn of(req: &HttpRequest) -> Option<Rc<RequestAudit>> {
        req.extensions().get::<Rc<RequestAudit>>().cloned()
    }

    /// Adds an annotation to the request's later events.
    pub fn annotate(&self, key: &str, value: &str) {
        self.annotations
            .borrow_mut()
            .insert(key.to_string(), value.to_string());
    }

    /// Records the user the request acts as (impersonation).
    pub fn impersonate(&self, user: &UserInfo) {
        *self.impersonated.borrow_mut() = Some(user.clone());
    }

    /// The impersonated user, when there is one.
    pub fn impersonated(&self) -> Option<UserInfo> {
        self.impersonated.borrow().clone()
    }

    /// The annotations recorded so far.
    pub fn annotations(&self) -> BTreeMap<String, String> {
        self.annotations.borrow().clone()
    }

    /// The object answered, when a handler recorded one.
    pub fn object(&self) -> Option<ObjectSeen> {
        self.object.borrow().clone()
    }

    /// The request body a handler decoded, at Request and above.
    pub fn take_request(&self) -> Option<Value> {
        self.request.borrow_mut().take()
    }

    /// The response body recorded at RequestResponse.
    pub fn take_response(&self) -> Option<Value> {
        self.response.borrow_mut().take()
    }

    fn wants_bodies(&self) -> bool {
        self.config.level >= Level::RequestResponse && self.response.borrow().is_none()
    }

    fn keep_response(&self, mut value: Value) {
        if self.config.omit_managed_fields {
            omit_managed_fields(&mut value);
        }
        *self.response.borrow_mut() = Some(value);
    }
}

/// A handler decoded the request's body into `obj` (whatever its encoding, protobuf
/// included): at Request and above it is the event's requestObject.
pub fn record_request_object(req: &HttpRequest, obj: &Value) {
    let Some(audit) = RequestAudit::of(req) else {
        return;
    };
    if audit.config.level >= Level::Request {
        let mut obj = obj.clone();
        if audit.config.omit_managed_fields {
            omit_managed_fields(&mut obj);
        }
        *audit.request.borrow_mut() = Some(obj);
    }
}

/// A handler answers with `obj` (an object of the request's resource): its metadata
/// completes the event's objectRef; at RequestResponse the object is the response body.
pub fn record_response_object(req: &HttpRequest, obj: &Value) {
    let Some(audit) = RequestAudit::of(req) else {
        return;
    };
    let meta = &obj["metadata"];
    let text = |k: &str| meta[k].as_str().unwrap_or_default().to_string();
    if !obj["items"].is_array() {
        *audit.object.borrow_mut() = Some(ObjectSeen {
            name: text("name"),
            namespace: text("namespace"),
            uid: text("uid"),
            resource_version: text("resourceVersion"),
        });
    }
    record_response_value(req, obj);
}

/// A handler answers with `value` (any JSON-shaped answer): kept at RequestResponse.
pub fn record_response_value(req: &HttpRequest, value: &Value) {
    if let Some(audit) = RequestAudit::of(req).filter(|a| a.wants_bodies()) {
        audit.keep_response(value.clone());
    }
}

/// A handler answers with encoded bytes: decoded and kept at RequestResponse, when
/// nothing was kept before and the encoding is JSON or YAML.
pub fn record_response_bytes(req: &HttpRequest, content_type: &str, body: &[u8]) {
    if let Some(audit) = RequestAudit::of(req).filter(|a| a.wants_bodies()) {
        if let Some(value) = decode_body(content_type, body) {
            audit.keep_response(value);
        }
    }
}

/// A JSON or YAML body as a value (`None` for other encodings, or what does not parse).
pub fn decode_body(content_type: &str, body: &[u8]) -> Option<Value> {
    let media = content_type.split(';').next().unwrap_or_default().trim();
    if body.is_empty() {
        None
    } else if media == "application/json" || media.ends_with("+json") || media.is_empty() {
        serde_json::from_slice(body).ok()
    } else if media.ends_with("yaml") {
        crate::api::yaml::from_slice(body).ok()
    } else {
        None
    }
}

/// Drops `metadata.managedFields` from an object, or from each item of a list.
pub fn omit_managed_fields(value: &mut Value) {
    if let Some(meta) = value.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.remove("managedFields");
    }
    if let Some(items) = value.get_mut("items").and_then(Value::as_array_mut) {
        for item in items {
            if let Some(meta) = item.get_mut("metadata").and_then(Value::as_object_mut) {
                meta.remove("managedFields");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn managed_fields_are_left_out_of_objects_and_lists() {
        let mut obj = json!({"metadata": {"name": "a", "managedFields": [{}]}});
        omit_managed_fields(&mut obj);
        assert_eq!(obj, json!({"metadata": {"name": "a"}}));
        let mut list = json!({"items": [{"metadata": {"managedFields": [], "uid": "u"}}]});
        omit_managed_fields(&mut list);
        assert_eq!(list, json!({"items": [{"metadata": {"uid": "u"}}]}));
    }

    #[test]
    fn bodies_decode_by_content_type() {
        assert_eq!(
            decode_body("application/json", b"{\"a\":1}"),
            Some(json!({"a": 1}))
        );
        assert_eq!(
            decode_body("application/merge-patch+json", b"{\"a\":1}"),
            Some(json!({"a": 1}))
        );
        assert_eq!(
            decode_body("application/apply-patch+yaml", b"a: 1"),
            Some(json!({"a": 1}))
        );
        assert_eq!(
            decode_body("application/vnd.kubernetes.protobuf", b"k8s\0"),
            None
        );
        assert_eq!(decode_body("application/json", b""), None);
    }
}
