//! The `audit.k8s.io/v1` `Event`: what one stage of one request leaves in the log, with
//! its fields in upstream's order and names.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use serde::{Serialize, Serializer};
use serde_json::Value;

use crate::api::ApiError;
use crate::auth::UserInfo;

/// How much of a request is recorded, in increasing order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub enum Level {
    /// Nothing.
    None,
    /// User, verb, object reference, response status, timestamps; no bodies.
    Metadata,
    /// Metadata and the request body.
    Request,
    /// Request and the response body.
    RequestResponse,
}

impl Level {
    /// The policy file's spellings.
    pub const NAMES: &'static [&'static str] = &["None", "Metadata", "Request", "RequestResponse"];

    /// The level a policy names, if it is one.
    pub fn parse(s: &str) -> Option<Level> {
        Some(match s {
            "None" => Level::None,
            "Metadata" => Level::Metadata,
            "Request" => Level::Request,
            "RequestResponse" => Level::RequestResponse,
            _ => return None,
        })
    }
}

/// Where in its life a request is when an event is written.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Stage {
    /// Received, before anything below the audit filter ran.
    RequestReceived,
    /// Headers sent, body still streaming (long-running requests: watches).
    ResponseStarted,
    /// Answered.
    ResponseComplete,
    /// A panic below the audit filter.
    Panic,
}

impl Stage {
    /// The policy file's spellings.
    pub const NAMES: &'static [&'static str] = &[
        "RequestReceived",
        "ResponseStarted",
        "ResponseComplete",
        "Panic",
    ];

    /// The stage a policy names, if it is one.
    pub fn parse(s: &str) -> Option<Stage> {
        Some(match s {
            "RequestReceived" => Stage::RequestReceived,
            "ResponseStarted" => Stage::ResponseStarted,
            "ResponseComplete" => Stage::ResponseComplete,
            "Panic" => Stage::Panic,
            _ => return None,
        })
    }
}

/// What a resource request addresses (`objectRef`).
#[derive(Clone, Debug, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ObjectReference {
    #[serde(skip_serializing_if = "String::is_empty")]
    pub resource: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub namespace: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub name: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub uid: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub api_group: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub api_version: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub resource_version: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub subresource: String,
}

/// The answer's status (a metav1 `Status` cut down to its bounded fields).
#[derive(Clone, Debug, Default, Serialize)]
pub struct ResponseStatus {
    /// Always `{}`, as upstream writes it.
    pub metadata: BTreeMap<String, String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<&'static str>,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub message: String,
    #[serde(skip_serializing_if = "str::is_empty")]
    pub reason: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub details: Option<Value>,
    pub code: u16,
}

impl ResponseStatus {
    /// A status of only a code (successes).
    pub fn code(code: u16) -> Self {
        ResponseStatus {
            code,
            ..ResponseStatus::default()
        }
    }

    /// The status of a refusal.
    pub fn failure(e: &ApiError) -> Self {
        ResponseStatus {
            status: Some("Failure"),
            message: e.message.clone(),
            reason: e.reason.as_str(),
            details: e.details.clone(),
            code: e.code,
            ..ResponseStatus::default()
        }
    }
}

/// A timestamp written as upstream's `MicroTime`: RFC 3339, UTC, microseconds.
#[derive(Clone, Copy, Debug)]
pub struct MicroTime(pub DateTime<Utc>);

impl MicroTime {
    /// The current time.
    pub fn now() -> Self {
        MicroTime(Utc::now())
    }
}

impl Serialize for MicroTime {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        // Not `format`: it parses its pattern on every call (~2% of an audited request).
        s.serialize_str(&self.0.to_rfc3339_opts(chrono::SecondsFormat::Micros, true))
    }
}

/// The user as an event names it (`authentication.k8s.io/v1` `UserInfo`).
#[derive(Clone, Debug, Default, Serialize)]
pub struct EventUser {
    #[serde(skip_serializing_if = "String::is_empty")]
    pub username: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub uid: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub groups: Vec<String>,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub extra: BTreeMap<String, Vec<String>>,
}

impl From<&UserInfo> for EventUser {
    fn from(u: &UserInfo) -> Self {
        EventUser {
            username: u.name.clone(),
            uid: u.uid.clone(),
            groups: u.groups.clone(),
            extra: u.extra.clone(),
        }
    }
}

/// One audit event, serialized as one JSON line of the log.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Event {
    pub kind: &'static str,
    pub api_version: &'static str,
    pub level: Level,
    #[serde(rename = "auditID")]
    pub audit_id: String,
    pub stage: Stage,
    #[serde(rename = "requestURI")]
    pub request_uri: String,
    pub verb: String,
    pub user: EventUser,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub impersonated_user: Option<EventUser>,
    #[serde(rename = "sourceIPs", skip_serializing_if = "Vec::is_empty")]
    pub source_ips: Vec<String>,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub user_agent: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub object_ref: Option<ObjectReference>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub response_status: Option<ResponseStatus>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub request_object: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub response_object: Option<Value>,
    pub request_received_timestamp: MicroTime,
    pub stage_timestamp: MicroTime,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
}

impl Event {
    /// An event at `level` for a request received at `received`, stage RequestReceived.
    pub fn new(level: Level, audit_id: String, received: MicroTime) -> Self {
        Event {
            kind: "Event",
            api_version: "audit.k8s.io/v1",
            level,
            audit_id,
            stage: Stage::RequestReceived,
            request_uri: String::new(),
            verb: String::new(),
            user: EventUser::default(),
            impersonated_user: None,
            source_ips: Vec::new(),
            user_agent: String::new(),
            object_ref: None,
            response_status: None,
            request_object: None,
            response_object: None,
            request_received_timestamp: received,
            stage_timestamp: received,
            annotations: BTreeMap::new(),
        }
    }

    /// The event as one log line (JSON and a newline).
    pub fn to_line(&self) -> Result<Vec<u8>, serde_json::Error> {
        let mut line = serde_json::to_vec(self)?;
        line.push(b'\n');
        Ok(line)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_event_is_upstreams_json() {
        let at = MicroTime(
            DateTime::parse_from_rfc3339("2026-12-02T10:11:12.123456789Z")
                .unwrap()
                .with_timezone(&Utc),
        );
        let mut ev = Event::new(Level::Metadata, "id-1".into(), at);
        ev.verb = "get".into();
        ev.response_status = Some(ResponseStatus::code(200));
        let v: Value = serde_json::from_slice(&ev.to_line().unwrap()).unwrap();
        assert_eq!(v["kind"], "Event");
        assert_eq!(v["apiVersion"], "audit.k8s.io/v1");
        assert_eq!(v["auditID"], "id-1");
        assert_eq!(v["stage"], "RequestReceived");
        assert_eq!(v["requestReceivedTimestamp"], "2026-12-02T10:11:12.123456Z");
        assert_eq!(
            v["responseStatus"],
            serde_json::json!({"metadata": {}, "code": 200})
        );
        assert!(v.get("objectRef").is_none() && v.get("annotations").is_none());
        let keys: Vec<&String> = v.as_object().unwrap().keys().collect();
        assert_eq!(keys[..4], ["kind", "apiVersion", "level", "auditID"]);
    }
}
