//! ObjectMeta on untyped objects: the generic handlers keep objects as JSON and read or
//! set metadata through these helpers.

use serde_json::{Map, Value};

use super::StatusCause;

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
pub fn validate_name(field: &str, name: &str, label_only: bool) -> Vec<StatusCause> {
    let mut causes = Vec::new();
    if label_only {
        if name.len() > 63 {
            causes.push(StatusCause::invalid(
                field,
                name,
                "must be no more than 63 characters",
            ));
        }
        if !is_label(name) {
            causes.push(StatusCause::invalid(field, name, DNS1123_LABEL_MSG));
        }
    } else {
        if name.len() > 253 {
            causes.push(StatusCause::invalid(
                field,
                name,
                "must be no more than 253 characters",
            ));
        }
        if !name.split('.').all(is_label) {
            causes.push(StatusCause::invalid(field, name, DNS1123_SUBDOMAIN_MSG));
        }
    }
    causes
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        assert!(validate_name("metadata.name", "a.b-c", false).is_empty());
        assert_eq!(validate_name("metadata.name", "Bad_Name", false).len(), 1);
        assert_eq!(validate_name("metadata.name", "a.b", true).len(), 1);
    }
}
