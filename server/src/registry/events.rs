//! Events: one stored kind served as core/v1 Event and as events.k8s.io/v1 Event (its
//! fields renamed by the definitions' conversion), each checked as upstream checks a
//! write in that group: core/v1 by the lax legacy rules, events.k8s.io/v1 by those
//! and, at creation, the rules of new Events (a time, a reporting controller and
//! instance, an action, a reason, no deprecated fields), at update, that only
//! `series` and metadata change.
//!
//! Upstream validates its internal form and names fields as that form does
//! (`involvedObject.namespace`, `message`), except the reporting controller, named as
//! the request's group does; the causes here use the same paths.

use serde_json::Value;

use super::strategy::Strategy;
use crate::api::meta::qualified_name_errors;
use crate::api::StatusCause;

/// Upstream's limits on an Event's strings.
const REPORTING_INSTANCE_MAX: usize = 128;
const ACTION_MAX: usize = 128;
const REASON_MAX: usize = 128;
const NOTE_MAX: usize = 1024;

/// Where a version keeps the fields the legacy checks read.
struct Fields {
    involved_object: &'static str,
    reporting_controller: &'static str,
    message: &'static str,
}

const CORE: Fields = Fields {
    involved_object: "involvedObject",
    reporting_controller: "reportingComponent",
    message: "message",
};

const EVENTS_V1: Fields = Fields {
    involved_object: "regarding",
    reporting_controller: "reportingController",
    message: "note",
};

fn text<'a>(obj: &'a Value, field: &str) -> &'a str {
    obj[field].as_str().unwrap_or("")
}

/// Whether a timestamp field is set (Go's zero time is absent or null in JSON).
fn set(obj: &Value, field: &str) -> bool {
    obj[field].as_str().is_some_and(|s| !s.is_empty())
}

/// Upstream's `legacyValidateEvent`: every Event write, in either group.
fn legacy_causes(obj: &Value, f: &Fields) -> Vec<StatusCause> {
    let mut causes = Vec::new();
    let namespace = obj["metadata"]["namespace"].as_str().unwrap_or("");
    let involved_ns = obj[f.involved_object]["namespace"].as_str().unwrap_or("");
    let mismatch = || {
        StatusCause::invalid(
            "involvedObject.namespace",
            involved_ns,
            "does not match event.namespace",
        )
    };
    if !set(obj, "eventTime") {
        // An old-style Event: its namespace is its object's (or `default`, for old
        // clients, when the object has none).
        let fits = if involved_ns.is_empty() {
            namespace.is_empty() || namespace == "default"
        } else {
            namespace == involved_ns
        };
        if !fits {
            causes.push(mismatch());
        }
        return causes;
    }
    if involved_ns.is_empty() && namespace != "default" && namespace != "kube-system" {
        causes.push(mismatch());
    }
    let controller = text(obj, f.reporting_controller);
    if controller.is_empty() {
        causes.push(StatusCause::required(f.reporting_controller, ""));
    }
    for msg in qualified_name_errors(controller) {
        causes.push(StatusCause::invalid(
            f.reporting_controller,
            controller,
            &msg,
        ));
    }
    let checks = [
        ("reportingInstance", REPORTING_INSTANCE_MAX),
        ("action", ACTION_MAX),
        ("reason", REASON_MAX),
    ];
    for (field, max) in checks {
        let value = text(obj, field);
        if value.is_empty() {
            causes.push(StatusCause::required(field, ""));
        }
        if value.chars().count() > max {
            causes.push(StatusCause::invalid(
                field,
                "",
                &format!("can have at most {max} characters"),
            ));
        }
    }
    if text(obj, f.message).chars().count() > NOTE_MAX {
        causes.push(StatusCause::invalid(
            "message",
            "",
            &format!("can have at most {NOTE_MAX} characters"),
        ));
    }
    causes
}

/// Upstream's checks of an events.k8s.io/v1 Event's `series`, when it has one.
fn series_causes(obj: &Value) -> Vec<StatusCause> {
    let mut causes = Vec::new();
    let series = &obj["series"];
    if series.is_object() {
        if series["count"].as_i64().unwrap_or(0) < 2 {
            causes.push(StatusCause::invalid(
                "series.count",
                "",
                "should be at least 2",
            ));
        }
        if !set(series, "lastObservedTime") {
            causes.push(StatusCause::required("series.lastObservedTime", ""));
        }
    }
    causes
}

/// A value as Go's equality of a struct field sees it: null, `""`, `0`, `false`, and
/// empty lists and objects are all the zero value (absent).
fn zeroless(v: &Value) -> Value {
    match v {
        Value::Object(m) => {
            let kept: serde_json::Map<String, Value> = m
                .iter()
                .map(|(k, v)| (k.clone(), zeroless(v)))
                .filter(|(_, v)| !v.is_null())
                .collect();
            if kept.is_empty() {
                Value::Null
            } else {
                Value::Object(kept)
            }
        }
        Value::Array(a) if a.is_empty() => Value::Null,
        Value::Array(a) => Value::Array(a.iter().map(zeroless).collect()),
        Value::String(s) if s.is_empty() => Value::Null,
        Value::Number(n) if n.as_f64() == Some(0.0) => Value::Null,
        Value::Bool(false) => Value::Null,
        other => other.clone(),
    }
}

/// The fields an events.k8s.io/v1 update may not change (this version's name, and the
/// path upstream reports, its internal one): all but metadata and `series`.
const IMMUTABLE: &[(&str, &str)] = &[
    ("regarding", "involvedObject"),
    ("reason", "reason"),
    ("note", "message"),
    ("deprecatedSource", "source"),
    ("deprecatedFirstTimestamp", "firstTimestamp"),
    ("deprecatedLastTimestamp", "lastTimestamp"),
    ("deprecatedCount", "count"),
    ("type", "type"),
    ("eventTime", "eventTime"),
    ("action", "action"),
    ("related", "related"),
    ("reportingController", "reportingController"),
    ("reportingInstance", "reportingInstance"),
];

/// Upstream's rules of an events.k8s.io/v1 update: a changed series is checked, and
/// the rest may not change (an Event that happens again is a new series entry).
fn update_causes(new: &Value, old: &Value) -> Vec<StatusCause> {
    let mut causes = Vec::new();
    if zeroless(&new["series"]) != zeroless(&old["series"]) {
        causes.extend(series_causes(new));
    }
    for (field, path) in IMMUTABLE {
        if zeroless(&new[*field]) != zeroless(&old[*field]) {
            let shown = match &new[*field] {
                Value::Null => Value::String(String::new()),
                v => v.clone(),
            };
            causes.push(StatusCause::invalid_value(
                path,
                &shown,
                "field is immutable",
            ));
        }
    }
    causes
}

/// Upstream's rules of a new events.k8s.io/v1 Event, beyond the legacy ones.
fn new_event_causes(obj: &Value) -> Vec<StatusCause> {
    let mut causes = series_causes(obj);
    if !set(obj, "eventTime") {
        causes.push(StatusCause::required("eventTime", ""));
    }
    let type_ = text(obj, "type");
    if type_ != "Normal" && type_ != "Warning" {
        causes.push(StatusCause::invalid(
            "type",
            "",
            &format!("has invalid value: {type_}"),
        ));
    }
    for field in ["deprecatedFirstTimestamp", "deprecatedLastTimestamp"] {
        if set(obj, field) {
            causes.push(StatusCause::invalid(field, "", "needs to be unset"));
        }
    }
    if obj["deprecatedCount"].as_i64().unwrap_or(0) != 0 {
        causes.push(StatusCause::invalid(
            "deprecatedCount",
            "",
            "needs to be unset",
        ));
    }
    let source = &obj["deprecatedSource"];
    if !text(source, "component").is_empty() || !text(source, "host").is_empty() {
        causes.push(StatusCause::invalid(
            "deprecatedSource",
            "",
            "needs to be unset",
        ));
    }
    causes
}

/// core/v1 Event (`strategy: Event`): the legacy checks.
pub struct EventStrategy;
impl Strategy for EventStrategy {
    fn tracks_generation(&self) -> bool {
        false
    }

    fn validate(&self, obj: &Value) -> Vec<StatusCause> {
        legacy_causes(obj, &CORE)
    }
}

/// events.k8s.io/v1 Event (`strategy: EventsV1`): the legacy checks, and a new
/// Event's.
pub struct EventsV1Strategy;
impl Strategy for EventsV1Strategy {
    fn tracks_generation(&self) -> bool {
        false
    }

    fn validate(&self, obj: &Value) -> Vec<StatusCause> {
        legacy_causes(obj, &EVENTS_V1)
    }

    fn validate_create(&self, obj: &Value) -> Vec<StatusCause> {
        new_event_causes(obj)
    }

    fn validate_update(&self, new: &Value, old: &Value) -> Vec<StatusCause> {
        update_causes(new, old)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn fields(causes: &[StatusCause]) -> Vec<&str> {
        causes.iter().map(|c| c.field.as_str()).collect()
    }

    #[test]
    fn an_old_style_event_lives_in_its_objects_namespace() {
        let ok = json!({"metadata": {"namespace": "a"}, "involvedObject": {"namespace": "a"}});
        assert!(EventStrategy.validate(&ok).is_empty());
        let default = json!({"metadata": {"namespace": "default"}, "involvedObject": {}});
        assert!(EventStrategy.validate(&default).is_empty());
        let elsewhere =
            json!({"metadata": {"namespace": "b"}, "involvedObject": {"namespace": "a"}});
        assert_eq!(
            fields(&EventStrategy.validate(&elsewhere)),
            ["involvedObject.namespace"]
        );
    }

    #[test]
    fn a_new_event_names_its_reporter_action_and_reason() {
        let bare = json!({"metadata": {"namespace": "a"}, "eventTime": "2026-01-01T00:00:00.000000Z", "regarding": {"namespace": "a"}});
        let mut got = EventsV1Strategy.validate(&bare);
        got.extend(EventsV1Strategy.validate_create(&bare));
        assert_eq!(
            fields(&got),
            [
                "reportingController",
                "reportingController",
                "reportingInstance",
                "action",
                "reason",
                "type"
            ]
        );
        let full = json!({"metadata": {"namespace": "a"}, "eventTime": "2026-01-01T00:00:00.000000Z", "regarding": {"namespace": "a"}, "reportingController": "example.com/ctl", "reportingInstance": "i", "action": "Act", "reason": "Why", "type": "Normal"});
        assert!(EventsV1Strategy.validate(&full).is_empty());
        assert!(EventsV1Strategy.validate_create(&full).is_empty());
        // The core group names the reporter `reportingComponent`.
        let core = json!({"metadata": {"namespace": "a"}, "eventTime": "2026-01-01T00:00:00.000000Z", "involvedObject": {"namespace": "a"}, "reportingInstance": "i", "action": "Act", "reason": "Why"});
        assert_eq!(
            fields(&EventStrategy.validate(&core)),
            ["reportingComponent", "reportingComponent"]
        );
    }

    #[test]
    fn an_update_through_events_v1_changes_only_the_series() {
        let old = json!({"metadata": {"name": "e"}, "note": "n", "regarding": {"name": "p"}, "deprecatedCount": 0});
        // Absent, empty and zero are the same value.
        let same = json!({"metadata": {"name": "e", "labels": {"a": "b"}}, "note": "n", "regarding": {"name": "p", "uid": ""}, "related": {},
                          "series": {"count": 2, "lastObservedTime": "2026-01-01T00:00:00.000000Z"}});
        assert!(update_causes(&same, &old).is_empty());
        let changed = json!({"metadata": {"name": "e"}, "note": "other", "regarding": {"name": "p"}, "series": {"count": 1}});
        let got = update_causes(&changed, &old);
        assert_eq!(
            fields(&got),
            ["series.count", "series.lastObservedTime", "message"]
        );
        assert_eq!(
            got[2].message,
            "Invalid value: \"other\": field is immutable"
        );
    }

    #[test]
    fn a_new_event_leaves_the_deprecated_fields_unset() {
        let obj = json!({"eventTime": "2026-01-01T00:00:00.000000Z", "type": "Warning", "deprecatedCount": 3, "deprecatedSource": {"component": "x"}, "series": {"count": 1}});
        assert_eq!(
            fields(&new_event_causes(&obj)),
            [
                "series.count",
                "series.lastObservedTime",
                "deprecatedCount",
                "deprecatedSource"
            ]
        );
    }
}
