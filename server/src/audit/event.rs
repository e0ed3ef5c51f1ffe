//! The `audit.k8s.io/v1` `Event`: what one stage of one request leaves in the log, with
//! its fields in upstream's order and names.

use std::collections::BTreeMap;

use bytes::Bytes;

use chrono::{DateTime, Datelike, Timelike, Utc};
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

    /// `2026-12-02T10:11:12.123456Z`, written into a fixed buffer: two of these per
    /// audited request made chrono's formatting, pattern and String, show in profiles.
    fn rfc3339_micros(&self) -> [u8; 27] {
        let t = self.0;
        let mut out = *b"0000-00-00T00:00:00.000000Z";
        let mut put = |at: usize, digits: usize, mut v: u32| {
            for i in (at..at + digits).rev() {
                out[i] = b'0' + (v % 10) as u8;
                v /= 10;
            }
        };
        // Years outside 0..=9999 cannot come from the clock of a running server.
        put(0, 4, t.year().clamp(0, 9999) as u32);
        put(5, 2, t.month());
        put(8, 2, t.day());
        put(11, 2, t.hour());
        put(14, 2, t.minute());
        // A leap second shows as second 59 with nanoseconds over 1e9: keep it there.
        put(17, 2, t.second());
        put(20, 6, (t.nanosecond() / 1_000).min(999_999));
        out
    }
}

impl Serialize for MicroTime {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(as_str(&self.rfc3339_micros()))
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
    pub fn to_line(&self) -> Result<Bytes, serde_json::Error> {
        crate::scratch::encode(|buf| {
            self.write_json(buf)?;
            buf.push(b'\n');
            Ok(())
        })
        .map(Bytes::from)
    }

    /// Writes the event as the derived `Serialize` would, field for field, but with the
    /// keys as literals and strings that need no escaping copied whole: serde_json's
    /// byte-at-a-time escaping was half of an event's serialization.
    fn write_json(&self, out: &mut Vec<u8>) -> Result<(), serde_json::Error> {
        let mut o = JsonObject::open(out);
        o.str("kind", self.kind);
        o.str("apiVersion", self.api_version);
        o.str("level", Level::NAMES[self.level as usize]);
        o.str("auditID", &self.audit_id);
        o.str("stage", Stage::NAMES[self.stage as usize]);
        o.str("requestURI", &self.request_uri);
        o.str("verb", &self.verb);
        o.key("user");
        self.user.write_json(o.out)?;
        if let Some(user) = &self.impersonated_user {
            o.key("impersonatedUser");
            user.write_json(o.out)?;
        }
        if !self.source_ips.is_empty() {
            o.key("sourceIPs");
            write_str_array(o.out, &self.source_ips);
        }
        o.non_empty_str("userAgent", &self.user_agent);
        if let Some(r) = &self.object_ref {
            o.key("objectRef");
            let mut r_o = JsonObject::open(o.out);
            r_o.non_empty_str("resource", &r.resource);
            r_o.non_empty_str("namespace", &r.namespace);
            r_o.non_empty_str("name", &r.name);
            r_o.non_empty_str("uid", &r.uid);
            r_o.non_empty_str("apiGroup", &r.api_group);
            r_o.non_empty_str("apiVersion", &r.api_version);
            r_o.non_empty_str("resourceVersion", &r.resource_version);
            r_o.non_empty_str("subresource", &r.subresource);
            r_o.close();
        }
        if let Some(status) = &self.response_status {
            o.key("responseStatus");
            serde_json::to_writer(&mut *o.out, status)?;
        }
        for (key, value) in [
            ("requestObject", &self.request_object),
            ("responseObject", &self.response_object),
        ] {
            if let Some(value) = value {
                o.key(key);
                serde_json::to_writer(&mut *o.out, value)?;
            }
        }
        o.str(
            "requestReceivedTimestamp",
            as_str(&self.request_received_timestamp.rfc3339_micros()),
        );
        o.str(
            "stageTimestamp",
            as_str(&self.stage_timestamp.rfc3339_micros()),
        );
        if !self.annotations.is_empty() {
            o.key("annotations");
            serde_json::to_writer(&mut *o.out, &self.annotations)?;
        }
        o.close();
        Ok(())
    }
}

impl EventUser {
    fn write_json(&self, out: &mut Vec<u8>) -> Result<(), serde_json::Error> {
        let mut o = JsonObject::open(out);
        o.non_empty_str("username", &self.username);
        o.non_empty_str("uid", &self.uid);
        if !self.groups.is_empty() {
            o.key("groups");
            write_str_array(o.out, &self.groups);
        }
        if !self.extra.is_empty() {
            o.key("extra");
            serde_json::to_writer(&mut *o.out, &self.extra)?;
        }
        o.close();
        Ok(())
    }
}

/// A JSON object being written: keys are literals of this file (nothing to escape).
struct JsonObject<'a> {
    out: &'a mut Vec<u8>,
    empty: bool,
}

impl<'a> JsonObject<'a> {
    fn open(out: &'a mut Vec<u8>) -> Self {
        out.push(b'{');
        JsonObject { out, empty: true }
    }

    fn key(&mut self, key: &str) {
        if !self.empty {
            self.out.push(b',');
        }
        self.empty = false;
        self.out.push(b'"');
        self.out.extend_from_slice(key.as_bytes());
        self.out.extend_from_slice(b"\":");
    }

    fn str(&mut self, key: &str, value: &str) {
        self.key(key);
        write_str(self.out, value);
    }

    fn non_empty_str(&mut self, key: &str, value: &str) {
        if !value.is_empty() {
            self.str(key, value);
        }
    }

    fn close(self) {
        self.out.push(b'}');
    }
}

/// `s` as a JSON string, byte for byte as serde_json writes it.
fn write_str(out: &mut Vec<u8>, s: &str) {
    // No early exit: the whole-string scan vectorizes; audit strings are short.
    let needs_escape = s.bytes().fold(false, |any, b| {
        any | (b < 0x20) | (b == b'"') | (b == b'\\')
    });
    if needs_escape {
        serde_json::to_writer(&mut *out, s).expect("a str serializes into a Vec");
    } else {
        out.push(b'"');
        out.extend_from_slice(s.as_bytes());
        out.push(b'"');
    }
}

fn write_str_array(out: &mut Vec<u8>, items: &[String]) {
    out.push(b'[');
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        write_str(out, item);
    }
    out.push(b']');
}

fn as_str(ascii: &[u8]) -> &str {
    std::str::from_utf8(ascii).expect("ASCII")
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
        for (at, want) in [
            ("0999-01-02T03:04:05Z", "0999-01-02T03:04:05.000000Z"),
            (
                "2026-12-31T23:59:59.999999999Z",
                "2026-12-31T23:59:59.999999Z",
            ),
            (
                "2026-12-02T10:11:12.000001+01:00",
                "2026-12-02T09:11:12.000001Z",
            ),
        ] {
            let t = DateTime::parse_from_rfc3339(at)
                .unwrap()
                .with_timezone(&Utc);
            let chrono = t.to_rfc3339_opts(chrono::SecondsFormat::Micros, true);
            assert_eq!(serde_json::to_value(MicroTime(t)).unwrap(), want);
            assert_eq!(chrono, want, "as chrono writes it");
        }
        assert_eq!(
            v["responseStatus"],
            serde_json::json!({"metadata": {}, "code": 200})
        );
        assert!(v.get("objectRef").is_none() && v.get("annotations").is_none());
        let keys: Vec<&String> = v.as_object().unwrap().keys().collect();
        assert_eq!(keys[..4], ["kind", "apiVersion", "level", "auditID"]);
    }

    /// The hand-written line is byte for byte what the derived `Serialize` writes, for
    /// events with every field set, escapes included, and with every optional one unset.
    #[test]
    fn the_written_line_is_the_derived_json() {
        let at = MicroTime(Utc::now());
        let user = EventUser {
            username: "jane \"the\" admin\\".into(),
            uid: "u-1".into(),
            groups: vec!["system:masters".into(), "tab\there".into()],
            extra: BTreeMap::from([("scopes.é".into(), vec!["a\nb".into()])]),
        };
        let mut full = Event::new(Level::RequestResponse, "id-\u{1}".into(), at);
        full.stage = Stage::ResponseComplete;
        full.request_uri = "/api/v1/namespaces/a/configmaps?labelSelector=x%3D\"y\"".into();
        full.verb = "create".into();
        full.user = user.clone();
        full.impersonated_user = Some(EventUser {
            groups: Vec::new(),
            ..user
        });
        full.source_ips = vec!["10.0.0.1".into(), "::1".into()];
        full.user_agent = "kubectl/v1.36 (linux/amd64) \u{7f}ünï".into();
        full.object_ref = Some(ObjectReference {
            resource: "configmaps".into(),
            namespace: "a".into(),
            name: "b".into(),
            uid: "c".into(),
            api_group: "apps".into(),
            api_version: "v1".into(),
            resource_version: "7".into(),
            subresource: "status".into(),
        });
        full.response_status = Some(ResponseStatus {
            status: Some("Failure"),
            message: "no \"b\"".into(),
            reason: "NotFound",
            details: Some(serde_json::json!({"name": "b"})),
            ..ResponseStatus::code(404)
        });
        full.request_object = Some(serde_json::json!({"data": {"k": "v\n"}}));
        full.response_object = Some(serde_json::json!({"kind": "Status"}));
        full.annotations =
            BTreeMap::from([("authorization.k8s.io/decision".into(), "allow".into())]);
        let mut partial = Event::new(Level::Metadata, "id-2".into(), at);
        partial.object_ref = Some(ObjectReference::default());
        for ev in [full, partial, Event::new(Level::None, String::new(), at)] {
            let mut derived = serde_json::to_vec(&ev).unwrap();
            derived.push(b'\n');
            assert_eq!(
                String::from_utf8(ev.to_line().unwrap().to_vec()).unwrap(),
                String::from_utf8(derived).unwrap()
            );
        }
    }
}
