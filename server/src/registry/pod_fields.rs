//! Upstream's checks of a container's environment, probes, lifecycle hooks and security
//! contexts, and of the pod spec's policy enums, in kube-apiserver's words and field
//! paths (`pkg/apis/core/validation`). `pod_spec.rs` calls them in upstream's order.

use serde_json::Value;

use crate::api::meta::dns1123_subdomain_errors;
use crate::api::StatusCause;
use crate::registry::cel::format::port_name_errors;

const PORT_RANGE: &str = "must be between 1 and 65535, inclusive";
const ID_RANGE: &str = "must be between 0 and 2147483647, inclusive";
const NOT_NEGATIVE: &str = "must be greater than or equal to 0";
const RELAXED_ENV_NAME: &str =
    "a valid environment variable name must consist only of printable ASCII characters other than '='";
const CONFIG_KEY: &str = "a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')";

/// Whether `v` is set (present and not null), as a Go pointer would be non-nil.
fn set(v: &Value) -> bool {
    !v.is_null()
}

fn list<'a>(v: &'a Value, key: &str) -> &'a [Value] {
    v[key].as_array().map_or(&[], Vec::as_slice)
}

/// A string value as Go's `%q` shows it in `Unsupported value` causes.
fn quoted(s: &str) -> String {
    Value::String(s.to_string()).to_string()
}

/// `value` of an enum field: absent or empty is `Required`, otherwise one of `allowed`.
pub fn check_enum(value: &Value, at: &str, allowed: &[&str], causes: &mut Vec<StatusCause>) {
    match value.as_str().unwrap_or_default() {
        "" => causes.push(StatusCause::required(at, "")),
        v if !allowed.contains(&v) => {
            causes.push(StatusCause::unsupported(at, &quoted(v), allowed))
        }
        _ => {}
    }
}

/// Upstream's relaxed environment variable names (GA since 1.34): printable ASCII
/// other than `=`.
fn env_name_errors(name: &str) -> Vec<&'static str> {
    if name.is_empty() {
        return vec!["environment variable name must be non-empty"];
    }
    if name
        .bytes()
        .any(|b| !(0x20..=0x7e).contains(&b) || b == b'=')
    {
        return vec![RELAXED_ENV_NAME];
    }
    Vec::new()
}

/// Upstream's `ValidateEnv`: names, and `valueFrom` with exactly one source and no
/// `value` beside it. Duplicate names are allowed (upstream only warns).
pub fn validate_env(env: &[Value], at: &str) -> Vec<StatusCause> {
    let mut causes = Vec::new();
    for (i, ev) in env.iter().enumerate() {
        let at = format!("{at}[{i}]");
        let name = ev["name"].as_str().unwrap_or_default();
        if name.is_empty() {
            causes.push(StatusCause::required(&format!("{at}.name"), ""));
        } else {
            for e in env_name_errors(name) {
                causes.push(StatusCause::invalid(&format!("{at}.name"), name, e));
            }
        }
        causes.extend(validate_value_from(ev, &format!("{at}.valueFrom")));
    }
    causes
}

/// Upstream's `validateEnvVarValueFrom`.
fn validate_value_from(ev: &Value, at: &str) -> Vec<StatusCause> {
    let mut causes = Vec::new();
    let from = &ev["valueFrom"];
    if !set(from) {
        return causes;
    }
    let mut sources = 0;
    let field_ref = &from["fieldRef"];
    if set(field_ref) {
        sources += 1;
        if field_ref["fieldPath"].as_str().is_none_or(str::is_empty) {
            causes.push(StatusCause::required(
                &format!("{at}.fieldRef.fieldPath"),
                "",
            ));
        }
    }
    let resource_ref = &from["resourceFieldRef"];
    if set(resource_ref) {
        sources += 1;
        if resource_ref["resource"].as_str().is_none_or(str::is_empty) {
            causes.push(StatusCause::required(
                &format!("{at}.resourceFieldRef.resource"),
                "",
            ));
        }
    }
    for key in ["configMapKeyRef", "secretKeyRef"] {
        let selector = &from[key];
        if set(selector) {
            sources += 1;
            causes.extend(validate_key_selector(selector, &format!("{at}.{key}")));
        }
    }
    if set(&from["fileKeyRef"]) {
        sources += 1;
    }
    let has_value = ev["value"].as_str().is_some_and(|v| !v.is_empty());
    if sources == 0 {
        causes.push(StatusCause::invalid(
            at,
            "",
            "must specify one of: `fieldRef`, `resourceFieldRef`, `configMapKeyRef` or `secretKeyRef`",
        ));
    } else if has_value {
        causes.push(StatusCause::invalid(
            at,
            "",
            "may not be specified when `value` is not empty",
        ));
    } else if sources > 1 {
        causes.push(StatusCause::invalid(
            at,
            "",
            "may not have more than one field specified at a time",
        ));
    }
    causes
}

/// A `configMapKeyRef` / `secretKeyRef`: a key is required and must be a config key.
fn validate_key_selector(selector: &Value, at: &str) -> Vec<StatusCause> {
    let mut causes = Vec::new();
    let key = selector["key"].as_str().unwrap_or_default();
    if key.is_empty() {
        causes.push(StatusCause::required(&format!("{at}.key"), ""));
    } else if !key
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b"-._".contains(&b))
    {
        causes.push(StatusCause::invalid(&format!("{at}.key"), key, CONFIG_KEY));
    }
    causes
}

/// Upstream's `ValidateEnvFrom`: a prefix that is an environment variable name, and
/// exactly one of `configMapRef` and `secretRef`, naming an object.
pub fn validate_env_from(sources: &[Value], at: &str) -> Vec<StatusCause> {
    let mut causes = Vec::new();
    for (i, ev) in sources.iter().enumerate() {
        let item = format!("{at}[{i}]");
        if let Some(prefix) = ev["prefix"].as_str().filter(|p| !p.is_empty()) {
            for e in env_name_errors(prefix) {
                causes.push(StatusCause::invalid(&format!("{item}.prefix"), prefix, e));
            }
        }
        let mut count = 0;
        for key in ["configMapRef", "secretRef"] {
            let source = &ev[key];
            if !set(source) {
                continue;
            }
            count += 1;
            let name_at = format!("{item}.{key}.name");
            match source["name"].as_str().unwrap_or_default() {
                "" => causes.push(StatusCause::required(&name_at, "")),
                name => causes.extend(
                    dns1123_subdomain_errors(name)
                        .iter()
                        .map(|e| StatusCause::invalid(&name_at, name, e)),
                ),
            }
        }
        // Upstream reports these at the list, not the item.
        if count == 0 {
            causes.push(StatusCause::invalid(
                at,
                "",
                "must specify one of: `configMapRef` or `secretRef`",
            ));
        } else if count > 1 {
            causes.push(StatusCause::invalid(
                at,
                "",
                "may not have more than one field specified at a time",
            ));
        }
    }
    causes
}

/// A probe's or hook's port: a number in range or an IANA service name.
fn validate_port_num_or_name(port: &Value, at: &str) -> Vec<StatusCause> {
    match port {
        Value::Number(n) => match n.as_i64() {
            Some(p) if (1..=65535).contains(&p) => Vec::new(),
            _ => vec![StatusCause::invalid_value(at, port, PORT_RANGE)],
        },
        Value::String(name) => port_name_errors(name)
            .iter()
            .map(|e| StatusCause::invalid(at, name, e))
            .collect(),
        _ => vec![StatusCause::invalid_value(at, port, PORT_RANGE)],
    }
}

/// Upstream's `validateHandler`: exactly one of `kinds` (in upstream's order), each
/// checked.
fn validate_handler(handler: &Value, at: &str, kinds: &[&str]) -> Vec<StatusCause> {
    let mut causes = Vec::new();
    let mut found = 0;
    for kind in kinds {
        let h = &handler[*kind];
        if !set(h) {
            continue;
        }
        let at = format!("{at}.{kind}");
        if found > 0 {
            causes.push(StatusCause::forbidden(
                &at,
                "may not specify more than 1 handler type",
            ));
            continue;
        }
        found += 1;
        match *kind {
            "exec" if list(h, "command").is_empty() => {
                causes.push(StatusCause::required(&format!("{at}.command"), ""));
            }
            "httpGet" => {
                if h["path"].as_str().is_none_or(str::is_empty) {
                    causes.push(StatusCause::required(&format!("{at}.path"), ""));
                }
                causes.extend(validate_port_num_or_name(&h["port"], &format!("{at}.port")));
                let scheme = h["scheme"].as_str().unwrap_or_default();
                if !["HTTP", "HTTPS"].contains(&scheme) {
                    causes.push(StatusCause::unsupported(
                        &format!("{at}.scheme"),
                        &quoted(scheme),
                        &["HTTP", "HTTPS"],
                    ));
                }
            }
            "tcpSocket" => {
                causes.extend(validate_port_num_or_name(&h["port"], &format!("{at}.port")));
            }
            "grpc" => {
                let port = &h["port"];
                if !port.as_i64().is_some_and(|p| (1..=65535).contains(&p)) {
                    causes.push(StatusCause::invalid_value(
                        &format!("{at}.port"),
                        port,
                        PORT_RANGE,
                    ));
                }
            }
            _ => {}
        }
    }
    if found == 0 {
        causes.push(StatusCause::required(at, "must specify a handler type"));
    }
    causes
}

/// Which probe: liveness and startup probes must succeed once, readiness probes take
/// no grace period of their own.
#[derive(Clone, Copy, PartialEq)]
pub enum ProbeKind {
    Liveness,
    Readiness,
    Startup,
}

impl ProbeKind {
    /// The container field of the probe.
    pub fn field(self) -> &'static str {
        match self {
            ProbeKind::Liveness => "livenessProbe",
            ProbeKind::Readiness => "readinessProbe",
            ProbeKind::Startup => "startupProbe",
        }
    }
}

/// Upstream's `validateProbe` and the per-kind rules of `validateLivenessProbe`,
/// `validateReadinessProbe` and `validateStartupProbe` (for defaulted probes: a zero
/// threshold or period was filled in).
pub fn validate_probe(probe: &Value, at: &str, kind: ProbeKind) -> Vec<StatusCause> {
    let mut causes = Vec::new();
    if !set(probe) {
        return causes;
    }
    causes.extend(validate_handler(
        probe,
        at,
        &["exec", "httpGet", "tcpSocket", "grpc"],
    ));
    for key in [
        "initialDelaySeconds",
        "timeoutSeconds",
        "periodSeconds",
        "successThreshold",
        "failureThreshold",
    ] {
        let v = &probe[key];
        if v.as_i64().is_some_and(|n| n < 0) {
            causes.push(StatusCause::invalid_value(
                &format!("{at}.{key}"),
                v,
                NOT_NEGATIVE,
            ));
        }
    }
    let grace = &probe["terminationGracePeriodSeconds"];
    if grace.as_i64().is_some_and(|g| g <= 0) {
        causes.push(StatusCause::invalid_value(
            &format!("{at}.terminationGracePeriodSeconds"),
            grace,
            "must be greater than 0",
        ));
    }
    match kind {
        ProbeKind::Liveness | ProbeKind::Startup => {
            let success = &probe["successThreshold"];
            if success.as_i64().is_some_and(|s| s != 1) {
                causes.push(StatusCause::invalid_value(
                    &format!("{at}.successThreshold"),
                    success,
                    "must be 1",
                ));
            }
        }
        ProbeKind::Readiness if set(grace) => causes.push(StatusCause::invalid_value(
            &format!("{at}.terminationGracePeriodSeconds"),
            grace,
            "must not be set for readinessProbes",
        )),
        ProbeKind::Readiness => {}
    }
    causes
}

/// Upstream's `validateLifecycle`: each hook has exactly one handler.
pub fn validate_lifecycle(lifecycle: &Value, at: &str) -> Vec<StatusCause> {
    let mut causes = Vec::new();
    for hook in ["postStart", "preStop"] {
        let h = &lifecycle[hook];
        if set(h) {
            causes.extend(validate_handler(
                h,
                &format!("{at}.{hook}"),
                &["exec", "httpGet", "tcpSocket", "sleep"],
            ));
        }
    }
    causes
}

/// A user or group id: 0 to 2^31-1, as upstream's `IsValidUserID` / `IsValidGroupID`.
fn check_id(sc: &Value, key: &str, at: &str, causes: &mut Vec<StatusCause>) {
    let v = &sc[key];
    if v.as_i64()
        .is_some_and(|id| !(0..=i64::from(i32::MAX)).contains(&id))
    {
        causes.push(StatusCause::invalid_value(
            &format!("{at}.{key}"),
            v,
            ID_RANGE,
        ));
    }
}

/// Upstream's `validateSeccompProfileField`.
fn validate_seccomp(profile: &Value, at: &str) -> Vec<StatusCause> {
    let mut causes = Vec::new();
    if !set(profile) {
        return causes;
    }
    let kind = profile["type"].as_str().unwrap_or_default();
    match kind {
        "Localhost" | "RuntimeDefault" | "Unconfined" => {}
        "" => causes.push(StatusCause::required(
            &format!("{at}.type"),
            "type is required when seccompProfile is set",
        )),
        other => causes.push(StatusCause::unsupported(
            &format!("{at}.type"),
            &quoted(other),
            &["Localhost", "RuntimeDefault", "Unconfined"],
        )),
    }
    let local = &profile["localhostProfile"];
    if kind == "Localhost" {
        match local.as_str() {
            None => causes.push(StatusCause::required(
                &format!("{at}.localhostProfile"),
                "must be set when seccomp type is Localhost",
            )),
            Some(path) => causes.extend(local_descending_path(
                path,
                &format!("{at}.localhostProfile"),
            )),
        }
    } else if set(local) {
        causes.push(StatusCause::invalid_value(
            &format!("{at}.localhostProfile"),
            profile,
            "can only be set when seccomp type is Localhost",
        ));
    }
    causes
}

/// Upstream's `validateLocalDescendingPath`: relative, and no `..` element.
pub fn local_descending_path(path: &str, at: &str) -> Vec<StatusCause> {
    let mut causes = Vec::new();
    if path.starts_with('/') {
        causes.push(StatusCause::invalid(at, path, "must be a relative path"));
    }
    causes.extend(no_backsteps(path, at));
    causes
}

/// Upstream's `validatePathNoBacksteps`.
pub fn no_backsteps(path: &str, at: &str) -> Vec<StatusCause> {
    if path.split('/').any(|p| p == "..") {
        vec![StatusCause::invalid(at, path, "must not contain '..'")]
    } else {
        Vec::new()
    }
}

/// Upstream's `ValidatePodSecurityContext` (ids, supplemental groups, seccomp), at
/// `at` (`spec.securityContext`).
pub fn validate_pod_security_context(sc: &Value, at: &str) -> Vec<StatusCause> {
    let mut causes = Vec::new();
    if !sc.is_object() {
        return causes;
    }
    check_id(sc, "fsGroup", at, &mut causes);
    check_id(sc, "runAsUser", at, &mut causes);
    check_id(sc, "runAsGroup", at, &mut causes);
    for (i, gid) in list(sc, "supplementalGroups").iter().enumerate() {
        if gid
            .as_i64()
            .is_some_and(|g| !(0..=i64::from(i32::MAX)).contains(&g))
        {
            causes.push(StatusCause::invalid_value(
                &format!("{at}.supplementalGroups[{i}]"),
                gid,
                ID_RANGE,
            ));
        }
    }
    let policy = &sc["fsGroupChangePolicy"];
    if let Some(p) = policy.as_str() {
        if !["OnRootMismatch", "Always"].contains(&p) {
            causes.push(StatusCause::unsupported(
                &format!("{at}.fsGroupChangePolicy"),
                &quoted(p),
                &["OnRootMismatch", "Always"],
            ));
        }
    }
    causes.extend(validate_seccomp(
        &sc["seccompProfile"],
        &format!("{at}.seccompProfile"),
    ));
    causes
}

/// Upstream's `ValidateSecurityContext` of a container (`host_users`: the pod does not
/// set `hostUsers: false`).
pub fn validate_security_context(sc: &Value, at: &str, host_users: bool) -> Vec<StatusCause> {
    let mut causes = Vec::new();
    if !sc.is_object() {
        return causes;
    }
    check_id(sc, "runAsUser", at, &mut causes);
    check_id(sc, "runAsGroup", at, &mut causes);
    if let Some(mount) = sc["procMount"].as_str() {
        let mount_at = format!("{at}.procMount");
        if !["Default", "Unmasked"].contains(&mount) {
            causes.push(StatusCause::unsupported(
                &mount_at,
                &quoted(mount),
                &["Default", "Unmasked"],
            ));
        }
        if host_users && mount == "Unmasked" {
            causes.push(StatusCause::invalid(
                &mount_at,
                mount,
                "`hostUsers` must be false to use `Unmasked`",
            ));
        }
    }
    causes.extend(validate_seccomp(
        &sc["seccompProfile"],
        &format!("{at}.seccompProfile"),
    ));
    if sc["allowPrivilegeEscalation"] == Value::Bool(false) {
        if sc["privileged"] == Value::Bool(true) {
            causes.push(StatusCause::invalid_value(
                at,
                sc,
                "cannot set `allowPrivilegeEscalation` to false and `privileged` to true",
            ));
        }
        if list(&sc["capabilities"], "add")
            .iter()
            .any(|c| c == "CAP_SYS_ADMIN")
        {
            causes.push(StatusCause::invalid_value(
                at,
                sc,
                "cannot set `allowPrivilegeEscalation` to false and `capabilities.Add` CAP_SYS_ADMIN",
            ));
        }
    }
    causes
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pairs(causes: Vec<StatusCause>) -> Vec<(String, String)> {
        causes.into_iter().map(|c| (c.field, c.message)).collect()
    }

    #[test]
    fn env_sources_are_one_and_alone() {
        let env = json!([
            {"name": "A", "value": "x", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
            {"name": "B", "valueFrom": {}},
            {"name": "C=D", "valueFrom": {"configMapKeyRef": {"name": "c", "key": "k"}, "secretKeyRef": {"name": "s", "key": "k"}}},
            {"name": "my.var-1 ok", "value": ""}
        ]);
        let got = pairs(validate_env(env.as_array().unwrap(), "env"));
        assert_eq!(
            got,
            vec![
                (
                    "env[0].valueFrom".into(),
                    "Invalid value: \"\": may not be specified when `value` is not empty".into()
                ),
                ("env[1].valueFrom".into(), "Invalid value: \"\": must specify one of: `fieldRef`, `resourceFieldRef`, `configMapKeyRef` or `secretKeyRef`".into()),
                ("env[2].name".into(), format!("Invalid value: \"C=D\": {RELAXED_ENV_NAME}")),
                (
                    "env[2].valueFrom".into(),
                    "Invalid value: \"\": may not have more than one field specified at a time"
                        .into()
                ),
            ]
        );
    }

    #[test]
    fn probes_have_one_handler_and_liveness_succeeds_once() {
        let probe = json!({"exec": {"command": ["true"]}, "httpGet": {"path": "/", "port": 80, "scheme": "HTTP"},
                           "periodSeconds": -1, "successThreshold": 2});
        let got = pairs(validate_probe(&probe, "p", ProbeKind::Liveness));
        assert_eq!(
            got,
            vec![
                (
                    "p.httpGet".into(),
                    "Forbidden: may not specify more than 1 handler type".into()
                ),
                (
                    "p.periodSeconds".into(),
                    "Invalid value: -1: must be greater than or equal to 0".into()
                ),
                (
                    "p.successThreshold".into(),
                    "Invalid value: 2: must be 1".into()
                ),
            ]
        );
        let got = pairs(validate_probe(
            &json!({"successThreshold": 2}),
            "p",
            ProbeKind::Readiness,
        ));
        assert_eq!(
            got,
            vec![(
                "p".into(),
                "Required value: must specify a handler type".into()
            )]
        );
    }

    #[test]
    fn security_contexts_keep_ids_in_range() {
        let got = pairs(validate_security_context(
            &json!({"runAsUser": -1, "procMount": "Masked", "seccompProfile": {"type": "Other"}}),
            "sc",
            true,
        ));
        assert_eq!(
            got,
            vec![
                (
                    "sc.runAsUser".into(),
                    "Invalid value: -1: must be between 0 and 2147483647, inclusive".into()
                ),
                (
                    "sc.procMount".into(),
                    "Unsupported value: \"Masked\": supported values: \"Default\", \"Unmasked\""
                        .into()
                ),
                ("sc.seccompProfile.type".into(), "Unsupported value: \"Other\": supported values: \"Localhost\", \"RuntimeDefault\", \"Unconfined\"".into()),
            ]
        );
    }
}
