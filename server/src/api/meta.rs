//! ObjectMeta on untyped objects: the generic handlers keep objects as JSON and read or
//! set metadata through these helpers.

use serde_json::{Map, Value};

use super::StatusCause;

/// The JSON type an ObjectMeta field must have (`null` is always accepted).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MetaType {
    String,
    Integer,
    /// An RFC 3339 time, as a string.
    Time,
    StringMap,
    StringList,
    ObjectList,
}

impl MetaType {
    fn admits(self, v: &Value) -> bool {
        v.is_null()
            || match self {
                MetaType::String | MetaType::Time => v.is_string(),
                MetaType::Integer => v.is_i64() || v.is_u64(),
                MetaType::StringMap => v
                    .as_object()
                    .is_some_and(|m| m.values().all(Value::is_string)),
                MetaType::StringList => {
                    v.as_array().is_some_and(|a| a.iter().all(Value::is_string))
                }
                MetaType::ObjectList => {
                    v.as_array().is_some_and(|a| a.iter().all(Value::is_object))
                }
            }
    }

    fn describe(self) -> &'static str {
        match self {
            MetaType::String | MetaType::Time => "a string",
            MetaType::Integer => "an integer",
            MetaType::StringMap => "a map of strings",
            MetaType::StringList => "a list of strings",
            MetaType::ObjectList => "a list of objects",
        }
    }
}

/// Who writes an ObjectMeta field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MetaOwner {
    /// The client (name, labels, finalizers, ...).
    Client,
    /// The server; a client's value is dropped, and an update keeps the stored one.
    ServerKept,
    /// The server, anew on every write (resourceVersion, managedFields, selfLink).
    Server,
}

/// One ObjectMeta field: its JSON name, type and owner.
#[derive(Debug, Clone, Copy)]
pub struct MetaField {
    pub name: &'static str,
    pub type_: MetaType,
    pub owner: MetaOwner,
}

const fn field(name: &'static str, type_: MetaType, owner: MetaOwner) -> MetaField {
    MetaField { name, type_, owner }
}

/// ObjectMeta's fields, written once: what decoding checks, pruning keeps, writes clear
/// and updates carry over all read this table.
pub const OBJECT_META: &[MetaField] = &[
    field("name", MetaType::String, MetaOwner::Client),
    field("generateName", MetaType::String, MetaOwner::Client),
    field("namespace", MetaType::String, MetaOwner::Client),
    field("selfLink", MetaType::String, MetaOwner::Server),
    field("uid", MetaType::String, MetaOwner::ServerKept),
    field("resourceVersion", MetaType::String, MetaOwner::Server),
    field("generation", MetaType::Integer, MetaOwner::ServerKept),
    field("creationTimestamp", MetaType::Time, MetaOwner::ServerKept),
    field("deletionTimestamp", MetaType::Time, MetaOwner::ServerKept),
    field(
        "deletionGracePeriodSeconds",
        MetaType::Integer,
        MetaOwner::ServerKept,
    ),
    field("labels", MetaType::StringMap, MetaOwner::Client),
    field("annotations", MetaType::StringMap, MetaOwner::Client),
    field("ownerReferences", MetaType::ObjectList, MetaOwner::Client),
    field("finalizers", MetaType::StringList, MetaOwner::Client),
    field("managedFields", MetaType::ObjectList, MetaOwner::Server),
];

/// Whether `name` is an ObjectMeta field.
pub fn is_meta_field(name: &str) -> bool {
    OBJECT_META.iter().any(|f| f.name == name)
}

/// The fields only the server sets; clients' values are dropped or ignored.
pub fn server_set_fields() -> impl Iterator<Item = &'static str> {
    OBJECT_META
        .iter()
        .filter(|f| f.owner != MetaOwner::Client)
        .map(|f| f.name)
}

/// The fields an update keeps from the stored object whatever the client sent.
pub fn kept_on_update() -> impl Iterator<Item = &'static str> {
    OBJECT_META
        .iter()
        .filter(|f| f.owner == MetaOwner::ServerKept)
        .map(|f| f.name)
}

/// Checks the JSON types of the ObjectMeta fields `metadata` carries.
pub fn check_meta_types(meta: &Map<String, Value>) -> Result<(), String> {
    for (k, v) in meta {
        if let Some(f) = OBJECT_META.iter().find(|f| f.name == k) {
            if !f.type_.admits(v) {
                return Err(format!("metadata.{k} must be {}", f.type_.describe()));
            }
        }
    }
    Ok(())
}

/// The object's `metadata` map, created when absent.
pub fn metadata_mut(obj: &mut Value) -> &mut Map<String, Value> {
    if !obj.get("metadata").is_some_and(Value::is_object) {
        obj["metadata"] = Value::Object(Map::new());
    }
    obj["metadata"]
        .as_object_mut()
        .expect("metadata was just made an object")
}

/// A string field of `metadata`.
pub fn meta_str<'a>(obj: &'a Value, field: &str) -> Option<&'a str> {
    obj.get("metadata")?.get(field)?.as_str()
}

/// The current time in Kubernetes' RFC 3339 form (seconds precision, UTC).
pub fn now_rfc3339() -> String {
    chrono::Utc::now().format("%Y-%m-%dT%H:%M:%SZ").to_string()
}

/// Age as kubectl prints it: `5s`, `3m`, `2d4h`.
pub fn human_age(created: &str) -> String {
    let Ok(t) = chrono::DateTime::parse_from_rfc3339(created) else {
        return "<unknown>".into();
    };
    let secs = (chrono::Utc::now() - t.with_timezone(&chrono::Utc))
        .num_seconds()
        .max(0);
    human_duration(secs)
}

/// A duration as kubectl prints one (upstream's `duration.HumanDuration`): `5s`, `3m`,
/// `2d4h`.
pub fn human_duration(secs: i64) -> String {
    let (m, h, d) = (secs / 60, secs / 3600, secs / 86400);
    if secs < 120 {
        format!("{secs}s")
    } else if m < 10 {
        let s = secs % 60;
        if s == 0 {
            format!("{m}m")
        } else {
            format!("{m}m{s}s")
        }
    } else if h < 3 {
        format!("{m}m")
    } else if h < 8 {
        let mm = m % 60;
        if mm == 0 {
            format!("{h}h")
        } else {
            format!("{h}h{mm}m")
        }
    } else if h < 48 {
        format!("{h}h")
    } else if d < 8 {
        let hh = h % 24;
        if hh == 0 {
            format!("{d}d")
        } else {
            format!("{d}d{hh}h")
        }
    } else if d < 365 * 2 {
        format!("{d}d")
    } else {
        format!("{}y", d / 365)
    }
}

const DNS1123_SUBDOMAIN_MSG: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
const DNS1123_LABEL_MSG: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";

fn is_label(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b.iter()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
        && b[0] != b'-'
        && b[b.len() - 1] != b'-'
}

/// Validates a name as a DNS-1123 subdomain (most kinds) or label (namespaces).
/// Which rule an object name follows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NameRule {
    /// A DNS-1123 label (namespaces).
    Label,
    /// A DNS-1123 subdomain (most kinds).
    Subdomain,
    /// Anything usable as one URL path segment (RBAC kinds: `system:basic-user`).
    PathSegment,
}

/// The name's problems under `rule`, as kube-apiserver words them.
pub fn validate_name(field: &str, name: &str, rule: NameRule) -> Vec<StatusCause> {
    let mut causes = Vec::new();
    if rule == NameRule::PathSegment {
        if name == "." || name == ".." {
            causes.push(StatusCause::invalid(
                field,
                name,
                &format!("may not be '{name}'"),
            ));
        }
        for bad in ["/", "%"] {
            if name.contains(bad) {
                causes.push(StatusCause::invalid(
                    field,
                    name,
                    &format!("may not contain '{bad}'"),
                ));
            }
        }
        return causes;
    }
    let errors = if rule == NameRule::Label {
        dns1123_label_errors(name)
    } else {
        dns1123_subdomain_errors(name)
    };
    causes.extend(errors.iter().map(|e| StatusCause::invalid(field, name, e)));
    causes
}

/// A DNS-1123 label's problems (`my-name`), as kube-apiserver words them.
pub fn dns1123_label_errors(s: &str) -> Vec<String> {
    let mut errors = Vec::new();
    if s.len() > 63 {
        errors.push("must be no more than 63 characters".to_string());
    }
    if !is_label(s) {
        errors.push(DNS1123_LABEL_MSG.to_string());
    }
    errors
}

/// A DNS-1123 subdomain's problems (`example.com`), as kube-apiserver words them.
pub fn dns1123_subdomain_errors(s: &str) -> Vec<String> {
    let mut errors = Vec::new();
    if s.len() > 253 {
        errors.push("must be no more than 253 characters".to_string());
    }
    if !s.split('.').all(is_label) {
        errors.push(DNS1123_SUBDOMAIN_MSG.to_string());
    }
    errors
}

const DNS1035_LABEL_MSG: &str = "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')";

/// A DNS-1035 label's problems (a label that starts with a letter), as kube-apiserver
/// words them.
pub fn dns1035_label_errors(s: &str) -> Vec<String> {
    let mut errors = Vec::new();
    if s.len() > 63 {
        errors.push("must be no more than 63 characters".to_string());
    }
    if !is_label(s) || !s.starts_with(|c: char| c.is_ascii_lowercase()) {
        errors.push(DNS1035_LABEL_MSG.to_string());
    }
    errors
}

/// A label value's problems (empty, or a name part), as kube-apiserver words them.
pub fn label_value_errors(s: &str) -> Vec<String> {
    let mut errors = Vec::new();
    if s.len() > 63 {
        errors.push("must be no more than 63 characters".to_string());
    }
    if !s.is_empty() && !is_name_part(s) {
        errors.push(LABEL_VALUE_MSG.to_string());
    }
    errors
}

const QUALIFIED_NAME_MSG: &str = "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
const LABEL_VALUE_MSG: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";
/// kube-apiserver's limit on the total size of annotations.
const TOTAL_ANNOTATION_SIZE: usize = 256 * 1024;

fn is_name_part(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b.iter()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
        && b[0].is_ascii_alphanumeric()
        && b[b.len() - 1].is_ascii_alphanumeric()
}

/// Problems with a qualified name (`[prefix/]name`), as kube-apiserver words them.
pub fn qualified_name_errors(key: &str) -> Vec<String> {
    let mut errs = Vec::new();
    let (prefix, name) = match key.split_once('/') {
        Some((p, n)) => (Some(p), n),
        None => (None, key),
    };
    if let Some(p) = prefix {
        if p.is_empty() {
            errs.push("prefix part must be non-empty".to_string());
        } else if !p.split('.').all(is_label) || p.len() > 253 {
            errs.push(format!("prefix part {}", DNS1123_SUBDOMAIN_MSG));
        }
    }
    if name.is_empty() {
        errs.push("name part must be non-empty".into());
    } else {
        if name.len() > 63 {
            errs.push("name part must be no more than 63 characters".into());
        }
        if !is_name_part(name) {
            errs.push(QUALIFIED_NAME_MSG.into());
        }
    }
    errs
}

/// Validates labels, annotations, finalizers, ownerReferences and generateName.
pub fn validate_object_meta(obj: &Value) -> Vec<StatusCause> {
    let mut causes = Vec::new();
    let meta = &obj["metadata"];
    for (field, map) in [
        ("labels", &meta["labels"]),
        ("annotations", &meta["annotations"]),
    ] {
        let path = format!("metadata.{field}");
        match map {
            Value::Null => {}
            Value::Object(m) => {
                let mut total = 0;
                for (k, v) in m {
                    for e in qualified_name_errors(k) {
                        causes.push(StatusCause::invalid(&path, k, &e));
                    }
                    let Some(v) = v.as_str() else {
                        causes.push(StatusCause::invalid(
                            &format!("{path}[{k}]"),
                            &v.to_string(),
                            "must be a string",
                        ));
                        continue;
                    };
                    total += k.len() + v.len();
                    if field == "labels" {
                        if v.len() > 63 {
                            causes.push(StatusCause::invalid(
                                &path,
                                v,
                                "must be no more than 63 characters",
                            ));
                        }
                        if !v.is_empty() && !is_name_part(v) {
                            causes.push(StatusCause::invalid(&path, v, LABEL_VALUE_MSG));
                        }
                    }
                }
                if field == "annotations" && total > TOTAL_ANNOTATION_SIZE {
                    causes.push(StatusCause {
                        reason: "FieldValueTooLong".into(),
                        message: format!(
                            "Too long: may not be more than {TOTAL_ANNOTATION_SIZE} bytes"
                        ),
                        field: path,
                    });
                }
            }
            other => causes.push(StatusCause::invalid(
                &path,
                &other.to_string(),
                "must be a map of strings",
            )),
        }
    }
    match &meta["finalizers"] {
        Value::Null => {}
        Value::Array(items) => {
            for (i, f) in items.iter().enumerate() {
                let path = format!("metadata.finalizers[{i}]");
                match f.as_str() {
                    Some(s) => {
                        for e in qualified_name_errors(s) {
                            causes.push(StatusCause::invalid(&path, s, &e));
                        }
                    }
                    None => causes.push(StatusCause::invalid(
                        &path,
                        &f.to_string(),
                        "must be a string",
                    )),
                }
            }
        }
        other => causes.push(StatusCause::invalid(
            "metadata.finalizers",
            &other.to_string(),
            "must be a list of strings",
        )),
    }
    match &meta["ownerReferences"] {
        Value::Null => {}
        Value::Array(refs) => {
            let mut controllers = 0;
            for r in refs {
                for (f, what) in [
                    ("apiVersion", "version"),
                    ("kind", "kind"),
                    ("name", "name"),
                    ("uid", "uid"),
                ] {
                    if r.get(f).and_then(Value::as_str).is_none_or(str::is_empty) {
                        causes.push(StatusCause::invalid(
                            &format!("metadata.ownerReferences.{f}"),
                            "",
                            &format!("{what} must not be empty"),
                        ));
                    }
                }
                if r.get("controller").and_then(Value::as_bool) == Some(true) {
                    controllers += 1;
                }
            }
            if controllers > 1 {
                causes.push(StatusCause::invalid(
                    "metadata.ownerReferences",
                    "",
                    "Only one reference can have Controller set to true",
                ));
            }
        }
        other => causes.push(StatusCause::invalid(
            "metadata.ownerReferences",
            &other.to_string(),
            "must be a list",
        )),
    }
    if let Some(g) = meta["generateName"].as_str().filter(|g| !g.is_empty()) {
        // A prefix only needs to be valid once a suffix is added.
        let probe = format!("{}a", g);
        if !probe.split('.').all(is_label) {
            causes.push(StatusCause::invalid(
                "metadata.generateName",
                g,
                DNS1123_SUBDOMAIN_MSG,
            ));
        }
    }
    causes
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn object_meta() {
        let ok = serde_json::json!({"metadata": {"labels": {"app.kubernetes.io/name": "x", "e": ""}, "annotations": {"a": "anything goes"}, "finalizers": ["example.com/f"], "ownerReferences": [{"apiVersion": "v1", "kind": "X", "name": "n", "uid": "u"}]}});
        assert!(validate_object_meta(&ok).is_empty());
        let bad = serde_json::json!({"metadata": {"labels": {"bad key": "x", "k": "bad value!"}, "finalizers": ["/x"], "ownerReferences": [{"kind": "X"}]}});
        let fields: Vec<String> = validate_object_meta(&bad)
            .into_iter()
            .map(|c| c.field)
            .collect();
        assert!(fields.contains(&"metadata.labels".to_string()));
        assert!(fields.contains(&"metadata.finalizers[0]".to_string()));
        assert!(fields.contains(&"metadata.ownerReferences.uid".to_string()));
    }

    #[test]
    fn names() {
        assert!(validate_name("metadata.name", "a.b-c", NameRule::Subdomain).is_empty());
        assert_eq!(
            validate_name("metadata.name", "Bad_Name", NameRule::Subdomain).len(),
            1
        );
        assert_eq!(
            validate_name("metadata.name", "a.b", NameRule::Label).len(),
            1
        );
        assert!(
            validate_name("metadata.name", "system:basic-user", NameRule::PathSegment).is_empty()
        );
        assert_eq!(
            validate_name("metadata.name", "a/b%", NameRule::PathSegment).len(),
            2
        );
        assert_eq!(
            validate_name("metadata.name", "..", NameRule::PathSegment).len(),
            1
        );
    }
}
