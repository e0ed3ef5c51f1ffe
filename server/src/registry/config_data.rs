//! What kube-apiserver checks of ConfigMap and Secret data: key names, a key in both
//! `data` and `binaryData`, the 1 MiB total, the keys each Secret type needs, and
//! `immutable` objects whose data (and `immutable` itself) may no longer change.

use base64::Engine;
use serde_json::{Map, Value};

use crate::api::StatusCause;

/// The most bytes a ConfigMap's or Secret's data may hold (upstream's `MaxSecretSize`).
pub const MAX_DATA_SIZE: usize = 1024 * 1024;

/// The longest key.
const MAX_KEY_LENGTH: usize = 253;

/// Upstream's message for a key outside `[-._a-zA-Z0-9]+`.
const KEY_FORMAT_MESSAGE: &str = "a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')";

/// Why `key` cannot name a ConfigMap or Secret entry (empty when it can).
pub fn key_errors(key: &str) -> Vec<String> {
    let mut errors = Vec::new();
    if key.len() > MAX_KEY_LENGTH {
        errors.push(format!("must be no more than {MAX_KEY_LENGTH} characters"));
    }
    let allowed = |c: char| c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_');
    if key.is_empty() || !key.chars().all(allowed) {
        errors.push(KEY_FORMAT_MESSAGE.to_string());
    }
    // Keys become file names in volumes: no way out of the directory.
    if key == "." {
        errors.push("must not be '.'".into());
    } else if key == ".." {
        errors.push("must not be '..'".into());
    } else if key.starts_with("..") {
        errors.push("must not start with '..'".into());
    }
    errors
}

fn entries<'a>(obj: &'a Value, field: &str) -> impl Iterator<Item = (&'a String, &'a Value)> {
    obj.get(field)
        .and_then(Value::as_object)
        .into_iter()
        .flat_map(Map::iter)
}

/// The bytes a base64 value stands for (invalid base64 is reported elsewhere).
fn decoded_len(v: &Value) -> usize {
    let text = v.as_str().unwrap_or_default();
    base64::engine::general_purpose::STANDARD
        .decode(text)
        .map_or(text.len(), |b| b.len())
}

fn key_causes(field: &str, key: &str, causes: &mut Vec<StatusCause>) {
    for msg in key_errors(key) {
        causes.push(StatusCause::invalid(&format!("{field}[{key}]"), key, &msg));
    }
}

/// A ConfigMap's keys, duplicates between `data` and `binaryData`, and total size.
pub fn validate_config_map(obj: &Value) -> Vec<StatusCause> {
    let mut causes = Vec::new();
    let data = obj.get("data").and_then(Value::as_object);
    let binary = obj.get("binaryData").and_then(Value::as_object);
    let mut total = 0;
    for (key, value) in entries(obj, "data") {
        key_causes("data", key, &mut causes);
        if binary.is_some_and(|b| b.contains_key(key)) {
            let msg = "duplicate of key present in binaryData";
            causes.push(StatusCause::invalid(&format!("data[{key}]"), key, msg));
        }
        total += value.as_str().map_or(0, str::len);
    }
    for (key, value) in entries(obj, "binaryData") {
        key_causes("binaryData", key, &mut causes);
        if data.is_some_and(|d| d.contains_key(key)) {
            let msg = "duplicate of key present in data";
            causes.push(StatusCause::invalid(
                &format!("binaryData[{key}]"),
                key,
                msg,
            ));
        }
        total += decoded_len(value);
    }
    if total > MAX_DATA_SIZE {
        // Upstream names no field: the whole object is too big.
        let detail = format!("may not be more than {MAX_DATA_SIZE} bytes");
        causes.push(StatusCause::too_long("", &detail));
    }
    causes
}

/// A Secret's keys, total size, and the keys its `type` needs.
pub fn validate_secret(obj: &Value) -> Vec<StatusCause> {
    let mut causes = Vec::new();
    let mut total = 0;
    for (key, value) in entries(obj, "data") {
        key_causes("data", key, &mut causes);
        total += decoded_len(value);
    }
    if total > MAX_DATA_SIZE {
        let detail = format!("may not be more than {MAX_DATA_SIZE} bytes");
        causes.push(StatusCause::too_long("data", &detail));
    }
    let data = obj.get("data").and_then(Value::as_object);
    let has = |key: &str| data.is_some_and(|d| d.contains_key(key));
    let value = |key: &str| {
        data.and_then(|d| d.get(key))
            .and_then(Value::as_str)
            .and_then(|s| base64::engine::general_purpose::STANDARD.decode(s).ok())
    };
    let required = |key: &str| StatusCause::required(&format!("data[{key}]"), "");
    match obj.get("type").and_then(Value::as_str).unwrap_or_default() {
        "kubernetes.io/service-account-token" => {
            let name = &obj["metadata"]["annotations"]["kubernetes.io/service-account.name"];
            if name.as_str().is_none_or(str::is_empty) {
                causes.push(StatusCause::required(
                    "metadata.annotations[kubernetes.io/service-account.name]",
                    "",
                ));
            }
        }
        "kubernetes.io/dockercfg" => docker_config(".dockercfg", &has, &value, &mut causes),
        "kubernetes.io/dockerconfigjson" => {
            docker_config(".dockerconfigjson", &has, &value, &mut causes)
        }
        // Either may be empty, but one of them must be there.
        "kubernetes.io/basic-auth" if !has("username") && !has("password") => {
            causes.push(required("username"));
            causes.push(required("password"));
        }
        "kubernetes.io/ssh-auth" if value("ssh-privatekey").is_none_or(|v| v.is_empty()) => {
            causes.push(required("ssh-privatekey"));
        }
        "kubernetes.io/tls" => {
            for key in ["tls.crt", "tls.key"] {
                if !has(key) {
                    causes.push(required(key));
                }
            }
        }
        _ => {}
    }
    causes
}

/// A docker config Secret: the key is there and holds a JSON object.
fn docker_config(
    key: &str,
    has: &dyn Fn(&str) -> bool,
    value: &dyn Fn(&str) -> Option<Vec<u8>>,
    causes: &mut Vec<StatusCause>,
) {
    if !has(key) {
        causes.push(StatusCause::required(&format!("data[{key}]"), ""));
        return;
    }
    let bytes = value(key).unwrap_or_default();
    if let Some(e) = super::go_json::object_error(&bytes) {
        causes.push(StatusCause::invalid(
            &format!("data[{key}]"),
            "<secret contents redacted>",
            &e,
        ));
    }
}

/// What an update of an object with `immutable: true` may not change: `immutable`
/// itself and the `fields` holding its data.
pub fn validate_immutable(new: &Value, old: &Value, fields: &[&str]) -> Vec<StatusCause> {
    const DETAIL: &str = "field is immutable when `immutable` is set";
    if old.get("immutable") != Some(&Value::Bool(true)) {
        return Vec::new();
    }
    let mut causes = Vec::new();
    if new.get("immutable") != Some(&Value::Bool(true)) {
        causes.push(StatusCause::forbidden("immutable", DETAIL));
    }
    // An absent map and an empty one are the same data.
    let map = |obj: &Value, f: &str| obj.get(f).filter(|v| !v.is_null()).cloned();
    let empty = |v: &Option<Value>| {
        v.as_ref()
            .is_none_or(|v| v.as_object().is_some_and(Map::is_empty))
    };
    for field in fields {
        let (n, o) = (map(new, field), map(old, field));
        if n != o && !(empty(&n) && empty(&o)) {
            causes.push(StatusCause::forbidden(field, DETAIL));
        }
    }
    causes
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn fields(causes: &[StatusCause]) -> Vec<String> {
        causes
            .iter()
            .map(|c| format!("{}: {}", c.field, c.message))
            .collect()
    }

    #[test]
    fn config_keys_are_checked_as_upstream_checks_them() {
        assert!(key_errors("ok.key_-1").is_empty());
        assert_eq!(key_errors("a b"), [KEY_FORMAT_MESSAGE]);
        assert_eq!(key_errors(".."), ["must not be '..'"]);
        assert_eq!(key_errors("..x"), ["must not start with '..'"]);
        assert_eq!(
            key_errors(&"k".repeat(254)),
            ["must be no more than 253 characters"]
        );
    }

    #[test]
    fn a_config_map_key_in_data_and_binary_data_is_reported_on_both_sides() {
        let cm = json!({ "data": { "k": "v" }, "binaryData": { "k": "dg==" } });
        assert_eq!(
            fields(&validate_config_map(&cm)),
            [
                "data[k]: Invalid value: \"k\": duplicate of key present in binaryData",
                "binaryData[k]: Invalid value: \"k\": duplicate of key present in data",
            ]
        );
    }

    #[test]
    fn data_over_one_mebibyte_is_too_long() {
        let cm = json!({ "data": { "a": "x".repeat(MAX_DATA_SIZE), "b": "y" } });
        assert_eq!(
            fields(&validate_config_map(&cm)),
            [": Too long: may not be more than 1048576 bytes"]
        );
    }

    #[test]
    fn secret_types_need_their_keys() {
        let tls = json!({ "type": "kubernetes.io/tls", "data": { "tls.crt": "" } });
        assert_eq!(
            fields(&validate_secret(&tls)),
            ["data[tls.key]: Required value"]
        );
        let docker = json!({ "type": "kubernetes.io/dockerconfigjson", "data": { ".dockerconfigjson": "bm90IGpzb24=" } });
        let causes = validate_secret(&docker);
        assert_eq!(causes.len(), 1);
        assert_eq!(causes[0].field, "data[.dockerconfigjson]");
        assert!(causes[0]
            .message
            .ends_with(": invalid character 'o' in literal null (expecting 'u')"));
        let basic = json!({ "type": "kubernetes.io/basic-auth", "data": { "password": "" } });
        assert!(validate_secret(&basic).is_empty());
        let ssh = json!({ "type": "kubernetes.io/ssh-auth" });
        assert_eq!(
            fields(&validate_secret(&ssh)),
            ["data[ssh-privatekey]: Required value"]
        );
    }

    #[test]
    fn an_immutable_object_keeps_its_data_and_its_immutability() {
        let old = json!({ "immutable": true, "data": { "a": "1" } });
        let changed = json!({ "immutable": false, "data": { "a": "2" } });
        assert_eq!(
            fields(&validate_immutable(&changed, &old, &["data", "binaryData"])),
            [
                "immutable: Forbidden: field is immutable when `immutable` is set",
                "data: Forbidden: field is immutable when `immutable` is set",
            ]
        );
        let relabelled = json!({ "immutable": true, "data": { "a": "1" }, "metadata": { "labels": { "x": "y" } } });
        assert!(validate_immutable(&relabelled, &old, &["data", "binaryData"]).is_empty());
    }
}
