//! AdmissionReview v1: the request a webhook is sent, and what its answer means.

use base64::Engine;
use serde_json::{json, Value};

use super::super::{Attributes, Operation};
use super::config::Webhook;
use crate::api::status::StatusReason;
use crate::api::ApiError;

/// The `request` of an AdmissionReview for one call.
pub fn request(uid: &str, a: &Attributes<'_>, object: Option<&Value>) -> Value {
    let def = &a.resource.def;
    let of_kind = &a.kind.def;
    let kind = json!({ "group": of_kind.group, "version": of_kind.version, "kind": of_kind.kind });
    let resource = json!({ "group": def.group, "version": def.version, "resource": def.plural });
    let mut options = json!({ "apiVersion": "meta.k8s.io/v1", "kind": a.operation.options_kind() });
    if a.dry_run {
        options["dryRun"] = json!(["All"]);
    }
    if a.operation != Operation::Delete && !a.field_manager.is_empty() {
        options["fieldManager"] = json!(a.field_manager);
    }
    let mut request = json!({
        "uid": uid,
        "kind": kind,
        "resource": resource,
        "requestKind": kind,
        "requestResource": resource,
        "operation": a.operation.as_str(),
        "userInfo": a.user.to_json(),
        "object": object.cloned().unwrap_or(Value::Null),
        "oldObject": a.old_object.cloned().unwrap_or(Value::Null),
        "dryRun": a.dry_run,
        "options": options,
    });
    if !a.name.is_empty() {
        request["name"] = json!(a.name);
    }
    if let Some(ns) = a.namespace {
        request["namespace"] = json!(ns);
    }
    if !a.subresource.is_empty() {
        request["subResource"] = json!(a.subresource);
        request["requestSubResource"] = json!(a.subresource);
    }
    json!({ "apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request })
}

/// A review made for an equivalent resource (matchPolicy Equivalent) names the resource
/// and kind the client asked for as `requestResource` and `requestKind`.
pub fn requested_as(review: &mut Value, asked: &Attributes<'_>) {
    let (def, of_kind) = (&asked.resource.def, &asked.kind.def);
    let request = &mut review["request"];
    request["requestKind"] =
        json!({ "group": of_kind.group, "version": of_kind.version, "kind": of_kind.kind });
    request["requestResource"] =
        json!({ "group": def.group, "version": def.version, "resource": def.plural });
}

/// What a webhook answered.
pub struct Answer {
    pub allowed: bool,
    /// The refusal's status (for `allowed: false`).
    pub status: Value,
    /// A JSON patch (mutating webhooks).
    pub patch: Option<json_patch::Patch>,
    pub warnings: Vec<String>,
    pub audit_annotations: Vec<(String, String)>,
}

/// Reads an AdmissionReview answer to the request `uid`; why it is not one, otherwise.
pub fn answer(review: &Value, uid: &str) -> Result<Answer, String> {
    if review["apiVersion"] != "admission.k8s.io/v1" || review["kind"] != "AdmissionReview" {
        return Err(format!(
            "expected webhook response of admission.k8s.io/v1, Kind=AdmissionReview, got {}, Kind={}",
            review["apiVersion"].as_str().unwrap_or_default(),
            review["kind"].as_str().unwrap_or_default()
        ));
    }
    let response = &review["response"];
    if !response.is_object() {
        return Err("webhook response was absent".into());
    }
    if response["uid"] != json!(uid) {
        return Err(format!(
            "expected response.uid={uid:?}, got {:?}",
            response["uid"].as_str().unwrap_or_default()
        ));
    }
    let allowed = response["allowed"]
        .as_bool()
        .ok_or("response.allowed is missing or not a boolean")?;
    let patch = match (response["patchType"].as_str(), response["patch"].as_str()) {
        (_, None) => None,
        (Some("JSONPatch"), Some(p)) => {
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(p)
                .map_err(|e| format!("the patch is not base64: {e}"))?;
            Some(
                serde_json::from_slice(&bytes)
                    .map_err(|e| format!("the patch is not a JSON patch: {e}"))?,
            )
        }
        (other, Some(_)) => {
            return Err(format!(
                "unsupported patch type {:?}",
                other.unwrap_or_default()
            ))
        }
    };
    Ok(Answer {
        allowed,
        status: response["status"].clone(),
        patch,
        warnings: response["warnings"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|w| w.as_str().map(String::from))
            .collect(),
        audit_annotations: response["auditAnnotations"]
            .as_object()
            .into_iter()
            .flatten()
            .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
            .collect(),
    })
}

/// A refusal as the client sees it: the webhook's status with its name in the message;
/// a code below 400 becomes 400 (a refusal is never a success).
pub fn rejection(hook: &Webhook, status: &Value) -> ApiError {
    let denied = format!("admission webhook {:?} denied the request", hook.name);
    let code = status["code"]
        .as_u64()
        .and_then(|c| u16::try_from(c).ok())
        .filter(|c| *c >= 400)
        .unwrap_or(400);
    let reason_text = status["reason"].as_str().unwrap_or_default();
    let message = match (status["message"].as_str().unwrap_or_default(), reason_text) {
        (m, _) if !m.is_empty() => format!("{denied}: {m}"),
        (_, r) if !r.is_empty() => format!("{denied}: {r}"),
        _ => format!("{denied} without explanation"),
    };
    let mut err = ApiError::new(code, StatusReason::from_wire(reason_text), message);
    if status["details"].is_object() {
        err.details = Some(status["details"].clone());
    }
    err
}

/// A webhook that could not be called (or answered nonsense), under failurePolicy Fail.
pub fn call_failure(hook: &Webhook, why: &str) -> ApiError {
    ApiError::internal(format!(
        "failed calling webhook {:?}: failed to call webhook: {why}",
        hook.name
    ))
}
