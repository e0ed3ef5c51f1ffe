//! Upstream's checks of a pod spec where a user meets them (containers' names and
//! images, ports, resource quantities, policies; environment, probes and security
//! contexts in `pod_fields.rs`, volumes and mounts in `pod_volumes.rs`), for pods and
//! pod templates alike, and the rule
//! of a pod update: only images, `activeDeadlineSeconds` (shortened), added
//! tolerations, removed scheduling gates and a negative grace period set to 1 change.
//! Messages and field paths are kube-apiserver's.

use std::collections::BTreeSet;

use serde_json::{Map, Value};

use super::pod_fields::{self, ProbeKind};
use super::pod_volumes;
use crate::api::meta::dns1123_label_errors;
use crate::api::quantity::Quantity;
use crate::api::StatusCause;
use crate::registry::cel::format::port_name_errors;

/// What upstream lists as changeable in a pod update's refusal.
const UPDATABLE_FIELDS: &str = "`spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)";

const PORT_RANGE: &str = "must be between 1 and 65535, inclusive";
const PROTOCOLS: &[&str] = &["SCTP", "TCP", "UDP"];
/// A pod's restart policies, in upstream's order.
const RESTART_POLICIES: &[&str] = &["Always", "OnFailure", "Never"];
/// A pod's DNS policies, sorted as upstream lists them.
const DNS_POLICIES: &[&str] = &["ClusterFirst", "ClusterFirstWithHostNet", "Default", "None"];

fn list<'a>(spec: &'a Value, key: &str) -> &'a [Value] {
    spec[key].as_array().map_or(&[], Vec::as_slice)
}

/// The checks of a pod spec at `path` (`spec`, `spec.template.spec`), in upstream's
/// order: volumes; containers (names unique across regular and init containers,
/// images, ports, environment, mounts, pull policy, resources, security context,
/// hooks and probes); init containers; restart and DNS policies; the pod's security
/// context. `is_pod`: images must not carry surrounding spaces (pods only, as upstream
/// keeps templates lenient).
pub fn validate_pod_spec(spec: &Value, path: &str, is_pod: bool) -> Vec<StatusCause> {
    validate_pod_spec_with_claims(spec, path, is_pod, &[])
}

/// [`validate_pod_spec`] of a template whose owner adds volumes by name (a
/// StatefulSet's `volumeClaimTemplates`, which its pods get as volumes): mounts may
/// name them too.
pub fn validate_pod_spec_with_claims(
    spec: &Value,
    path: &str,
    is_pod: bool,
    claims: &[&str],
) -> Vec<StatusCause> {
    let mut causes = Vec::new();
    if !spec.is_object() {
        return causes;
    }
    let (mut volumes, volume_causes) =
        pod_volumes::validate_volumes(list(spec, "volumes"), &format!("{path}.volumes"));
    volumes.extend(claims.iter().map(|c| c.to_string()));
    causes.extend(volume_causes);
    let ctx = Context {
        volumes: &volumes,
        is_pod,
        host_users: spec["hostUsers"] != Value::Bool(false),
    };
    let containers = list(spec, "containers");
    if containers.is_empty() {
        causes.push(StatusCause::required(&format!("{path}.containers"), ""));
    }
    let mut names: BTreeSet<&str> = BTreeSet::new();
    for (i, c) in containers.iter().enumerate() {
        let at = format!("{path}.containers[{i}]");
        causes.extend(validate_container(c, &at, &ctx));
        let name = c["name"].as_str().unwrap_or_default();
        if !names.insert(name) {
            causes.push(StatusCause::duplicate(
                &format!("{at}.name"),
                &format!("{name:?}"),
            ));
        }
        causes.extend(validate_hooks_and_probes(c, &at));
    }
    for (i, c) in list(spec, "initContainers").iter().enumerate() {
        let at = format!("{path}.initContainers[{i}]");
        causes.extend(validate_container(c, &at, &ctx));
        let name = c["name"].as_str().unwrap_or_default();
        if names.contains(name) {
            causes.push(StatusCause::duplicate(
                &format!("{at}.name"),
                &format!("{name:?}"),
            ));
        } else if !name.is_empty() {
            names.insert(name);
        }
        if c["restartPolicy"] == "Always" {
            // A sidecar: hooks and probes as a regular container's.
            causes.extend(validate_hooks_and_probes(c, &at));
        } else {
            for key in [
                "lifecycle",
                "livenessProbe",
                "readinessProbe",
                "startupProbe",
            ] {
                if !c[key].is_null() {
                    causes.push(StatusCause::forbidden(
                        &format!("{at}.{key}"),
                        "may not be set for init containers without restartPolicy=Always",
                    ));
                }
            }
        }
    }
    pod_fields::check_enum(
        &spec["restartPolicy"],
        &format!("{path}.restartPolicy"),
        RESTART_POLICIES,
        &mut causes,
    );
    pod_fields::check_enum(
        &spec["dnsPolicy"],
        &format!("{path}.dnsPolicy"),
        DNS_POLICIES,
        &mut causes,
    );
    causes.extend(pod_fields::validate_pod_security_context(
        &spec["securityContext"],
        &format!("{path}.securityContext"),
    ));
    causes
}

/// Upstream's warnings about a pod spec at `path` that passes validation: an
/// environment variable defined twice in one container (the later one wins).
pub fn pod_spec_warnings(spec: &Value, path: &str) -> Vec<String> {
    let mut warnings = Vec::new();
    for key in ["initContainers", "containers", "ephemeralContainers"] {
        for (i, c) in list(spec, key).iter().enumerate() {
            let mut seen = BTreeSet::new();
            for (j, ev) in list(c, "env").iter().enumerate() {
                let name = ev["name"].as_str().unwrap_or_default();
                if !seen.insert(name) {
                    warnings.push(format!(
                        "{path}.{key}[{i}].env[{j}]: hides previous definition of environment variable {}",
                        Value::String(name.to_string())
                    ));
                }
            }
        }
    }
    warnings
}

/// What the checks of one container need from its pod spec.
struct Context<'a> {
    /// The names of the pod's volumes without faults.
    volumes: &'a BTreeSet<String>,
    is_pod: bool,
    /// The pod shares the host's user namespace (`hostUsers` is not false).
    host_users: bool,
}

/// Upstream's `validateContainerCommon`: name, image, termination message policy,
/// ports, environment, mounts, pull policy, resources and security context.
fn validate_container(c: &Value, at: &str, ctx: &Context) -> Vec<StatusCause> {
    let mut causes = Vec::new();
    let name_at = format!("{at}.name");
    match c["name"].as_str().unwrap_or_default() {
        "" => causes.push(StatusCause::required(&name_at, "")),
        name => causes.extend(
            dns1123_label_errors(name)
                .iter()
                .map(|e| StatusCause::invalid(&name_at, name, e)),
        ),
    }
    let image = c["image"].as_str().unwrap_or_default();
    if image.is_empty() {
        causes.push(StatusCause::required(&format!("{at}.image"), ""));
    } else if ctx.is_pod && image.trim() != image {
        causes.push(StatusCause::invalid(
            &format!("{at}.image"),
            image,
            "must not have leading or trailing whitespace",
        ));
    }
    pod_fields::check_enum(
        &c["terminationMessagePolicy"],
        &format!("{at}.terminationMessagePolicy"),
        &["File", "FallbackToLogsOnError"],
        &mut causes,
    );
    causes.extend(validate_ports(list(c, "ports"), &format!("{at}.ports")));
    causes.extend(pod_fields::validate_env(
        list(c, "env"),
        &format!("{at}.env"),
    ));
    causes.extend(pod_fields::validate_env_from(
        list(c, "envFrom"),
        &format!("{at}.envFrom"),
    ));
    causes.extend(pod_volumes::validate_volume_mounts(
        list(c, "volumeMounts"),
        ctx.volumes,
        &format!("{at}.volumeMounts"),
    ));
    pod_fields::check_enum(
        &c["imagePullPolicy"],
        &format!("{at}.imagePullPolicy"),
        &["Always", "IfNotPresent", "Never"],
        &mut causes,
    );
    causes.extend(validate_resources(
        &c["resources"],
        &format!("{at}.resources"),
    ));
    causes.extend(pod_fields::validate_security_context(
        &c["securityContext"],
        &format!("{at}.securityContext"),
        ctx.host_users,
    ));
    causes
}

/// A regular (or sidecar) container's lifecycle hooks and probes.
fn validate_hooks_and_probes(c: &Value, at: &str) -> Vec<StatusCause> {
    let mut causes = Vec::new();
    if c["lifecycle"].is_object() {
        causes.extend(pod_fields::validate_lifecycle(
            &c["lifecycle"],
            &format!("{at}.lifecycle"),
        ));
    }
    for kind in [
        ProbeKind::Liveness,
        ProbeKind::Readiness,
        ProbeKind::Startup,
    ] {
        causes.extend(pod_fields::validate_probe(
            &c[kind.field()],
            &format!("{at}.{}", kind.field()),
            kind,
        ));
    }
    causes
}

/// Upstream's `validateContainerPorts`.
fn validate_ports(ports: &[Value], at: &str) -> Vec<StatusCause> {
    let mut causes = Vec::new();
    let mut names = BTreeSet::new();
    for (i, p) in ports.iter().enumerate() {
        let at = format!("{at}[{i}]");
        if let Some(name) = p["name"].as_str().filter(|n| !n.is_empty()) {
            let errors = port_name_errors(name);
            if !errors.is_empty() {
                causes.extend(
                    errors
                        .iter()
                        .map(|e| StatusCause::invalid(&format!("{at}.name"), name, e)),
                );
            } else if !names.insert(name) {
                causes.push(StatusCause::duplicate(
                    &format!("{at}.name"),
                    &format!("{name:?}"),
                ));
            }
        }
        let port = &p["containerPort"];
        match port.as_i64() {
            None | Some(0) => {
                causes.push(StatusCause::required(&format!("{at}.containerPort"), ""))
            }
            Some(n) if !(1..=65535).contains(&n) => causes.push(StatusCause::invalid_value(
                &format!("{at}.containerPort"),
                port,
                PORT_RANGE,
            )),
            Some(_) => {}
        }
        let host = &p["hostPort"];
        if host
            .as_i64()
            .is_some_and(|n| n != 0 && !(1..=65535).contains(&n))
        {
            causes.push(StatusCause::invalid_value(
                &format!("{at}.hostPort"),
                host,
                PORT_RANGE,
            ));
        }
        match p["protocol"].as_str().unwrap_or_default() {
            "" => causes.push(StatusCause::required(&format!("{at}.protocol"), "")),
            proto if !PROTOCOLS.contains(&proto) => causes.push(StatusCause::unsupported(
                &format!("{at}.protocol"),
                &format!("{proto:?}"),
                PROTOCOLS,
            )),
            _ => {}
        }
    }
    causes
}

/// The resource names a container may ask for without a domain prefix.
fn is_standard_container_resource(name: &str) -> bool {
    matches!(name, "cpu" | "memory" | "ephemeral-storage") || name.starts_with("hugepages-")
}

/// Whether requests may be below limits (upstream's `IsOvercommitAllowed`: native
/// resources other than huge pages).
fn overcommit_allowed(name: &str) -> bool {
    let native = !name.contains('/') || name.contains("kubernetes.io/");
    native && !name.starts_with("hugepages-")
}

/// A quantity map's entries, parsed; the unparsable ones reported at their key.
fn quantities<'a>(
    map: &'a Value,
    at: &str,
    causes: &mut Vec<StatusCause>,
) -> Vec<(&'a str, &'a Value, Option<Quantity>)> {
    let mut out = Vec::new();
    for (name, v) in map.as_object().into_iter().flatten() {
        let key_at = format!("{at}[{name}]");
        if name.split('/').count() == 1 && !is_standard_container_resource(name) {
            causes.push(StatusCause::invalid(
                &key_at,
                name,
                "must be a standard resource for containers",
            ));
        }
        let text = match v {
            Value::String(s) => s.clone(),
            Value::Number(n) => n.to_string(),
            _ => String::new(),
        };
        let parsed = match Quantity::parse(&text) {
            Ok(q) => {
                if q.is_negative() {
                    causes.push(StatusCause::invalid(
                        &key_at,
                        &text,
                        "must be greater than or equal to 0",
                    ));
                }
                Some(q)
            }
            Err(e) => {
                causes.push(StatusCause::invalid(&key_at, &text, e));
                None
            }
        };
        out.push((name.as_str(), v, parsed));
    }
    out
}

/// Upstream's `validateResourceRequirements` for a container: names, quantities, and
/// requests within limits (equal to them for resources that cannot be overcommitted).
fn validate_resources(resources: &Value, at: &str) -> Vec<StatusCause> {
    let mut causes = Vec::new();
    let limits_at = format!("{at}.limits");
    let requests_at = format!("{at}.requests");
    let limits = quantities(&resources["limits"], &limits_at, &mut causes);
    let requests = quantities(&resources["requests"], &requests_at, &mut causes);
    for (name, value, request) in requests {
        let shown = value
            .as_str()
            .map_or_else(|| value.to_string(), str::to_string);
        match limits.iter().find(|(n, _, _)| *n == name) {
            Some((_, limit_value, limit)) => {
                let (Some(request), Some(limit)) = (request, limit) else {
                    continue;
                };
                let limit_shown = limit_value
                    .as_str()
                    .map_or_else(|| limit_value.to_string(), str::to_string);
                if request != *limit && !overcommit_allowed(name) {
                    causes.push(StatusCause::invalid(
                        &requests_at,
                        &shown,
                        &format!("must be equal to {name} limit of {limit_shown}"),
                    ));
                } else if request > *limit {
                    causes.push(StatusCause::invalid(
                        &requests_at,
                        &shown,
                        &format!("must be less than or equal to {name} limit of {limit_shown}"),
                    ));
                }
            }
            None if !overcommit_allowed(name) => causes.push(StatusCause::required(
                &limits_at,
                "Limit must be set for non overcommitable resources",
            )),
            None => {}
        }
    }
    causes
}

/// Upstream's `ValidatePodUpdate` for the spec: `new` and `old` are whole pods, both
/// defaulted.
pub fn validate_pod_update(new: &Value, old: &Value) -> Vec<StatusCause> {
    let (new_spec, old_spec) = (&new["spec"], &old["spec"]);
    let mut causes = Vec::new();
    for key in ["containers", "initContainers"] {
        let (news, olds) = (list(new_spec, key), list(old_spec, key));
        if news.len() != olds.len() {
            causes.push(StatusCause::forbidden(
                &format!("spec.{key}"),
                "pod updates may not add or remove containers",
            ));
            return causes;
        }
        for (i, c) in news.iter().enumerate() {
            let image = c["image"].as_str().unwrap_or_default();
            let at = format!("spec.{key}[{i}].image");
            if image.is_empty() {
                causes.push(StatusCause::required(&at, ""));
            }
            if image.trim() != image {
                causes.push(StatusCause::invalid(
                    &at,
                    image,
                    "must not have leading or trailing whitespace",
                ));
            }
        }
    }
    let deadline = &new_spec["activeDeadlineSeconds"];
    let old_deadline = old_spec["activeDeadlineSeconds"].as_i64();
    if let Some(d) = deadline.as_i64() {
        if !(0..=i64::from(i32::MAX)).contains(&d) {
            causes.push(StatusCause::invalid_value(
                "spec.activeDeadlineSeconds",
                deadline,
                "must be between 0 and 2147483647, inclusive",
            ));
            return causes;
        }
        if old_deadline.is_some_and(|o| o < d) {
            causes.push(StatusCause::invalid_value(
                "spec.activeDeadlineSeconds",
                deadline,
                "must be less than or equal to previous value",
            ));
            return causes;
        }
    } else if old_deadline.is_some() {
        // Go shows the nil pointer as the string "null".
        causes.push(StatusCause::invalid(
            "spec.activeDeadlineSeconds",
            "null",
            "must not update from a positive integer to nil value",
        ));
    }
    causes.extend(only_added_tolerations(new_spec, old_spec));
    causes.extend(only_removed_gates(new_spec, old_spec));
    // What remains once the changeable fields are taken from the stored spec must be
    // the stored spec.
    let mut munged = new_spec.clone();
    if let Some(m) = munged.as_object_mut() {
        for key in ["containers", "initContainers"] {
            if let Some(cs) = m.get_mut(key).and_then(Value::as_array_mut) {
                for (c, o) in cs.iter_mut().zip(list(old_spec, key)) {
                    c["image"] = o["image"].clone();
                }
            }
        }
        for key in ["activeDeadlineSeconds", "schedulingGates", "tolerations"] {
            keep_stored(m, old_spec, key);
        }
        let old_grace = old_spec["terminationGracePeriodSeconds"].as_i64();
        if old_grace.is_some_and(|g| g < 0)
            && m.get("terminationGracePeriodSeconds")
                .and_then(Value::as_i64)
                == Some(1)
        {
            keep_stored(m, old_spec, "terminationGracePeriodSeconds");
        }
    }
    let (munged, stored) = (semantic(&munged), semantic(old_spec));
    if munged != stored {
        let mut diff = Vec::new();
        describe_diff("spec", &stored, &munged, &mut diff);
        causes.push(StatusCause::forbidden(
            "spec",
            &format!(
                "pod updates may not change fields other than {UPDATABLE_FIELDS}\n{}",
                diff.join("\n")
            ),
        ));
    }
    causes
}

/// `key` of `spec` set as the stored spec has it.
fn keep_stored(spec: &mut Map<String, Value>, old_spec: &Value, key: &str) {
    match old_spec.get(key) {
        Some(v) => spec.insert(key.into(), v.clone()),
        None => spec.remove(key),
    };
}

/// Upstream's `validateOnlyAddedTolerations`: every stored toleration is still there,
/// `tolerationSeconds` aside.
fn only_added_tolerations(new_spec: &Value, old_spec: &Value) -> Vec<StatusCause> {
    let without_seconds = |t: &Value| {
        let mut t = semantic(t);
        if let Some(m) = t.as_object_mut() {
            m.remove("tolerationSeconds");
        }
        t
    };
    let news: Vec<Value> = list(new_spec, "tolerations")
        .iter()
        .map(without_seconds)
        .collect();
    let kept = list(old_spec, "tolerations")
        .iter()
        .all(|o| news.contains(&without_seconds(o)));
    if kept {
        Vec::new()
    } else {
        vec![StatusCause::forbidden(
            "spec.tolerations",
            "existing toleration can not be modified except its tolerationSeconds",
        )]
    }
}

/// Upstream's `validateOnlyDeletedSchedulingGates`.
fn only_removed_gates(new_spec: &Value, old_spec: &Value) -> Vec<StatusCause> {
    let stored: BTreeSet<&str> = list(old_spec, "schedulingGates")
        .iter()
        .filter_map(|g| g["name"].as_str())
        .collect();
    list(new_spec, "schedulingGates")
        .iter()
        .enumerate()
        .filter_map(|(i, g)| {
            let name = g["name"].as_str().unwrap_or_default();
            (!stored.contains(name)).then(|| {
                StatusCause::forbidden(
                    &format!("spec.schedulingGates[{i}].name"),
                    &format!("only deletion is allowed, but found new scheduling gate '{name}'"),
                )
            })
        })
        .collect()
}

/// A value as Go's semantic equality sees it: nulls, empty lists and empty objects are
/// the same as absent.
pub(crate) fn semantic(v: &Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.iter()
                .map(|(k, v)| (k.clone(), semantic(v)))
                .filter(|(_, v)| !is_empty(v))
                .collect(),
        ),
        Value::Array(a) => Value::Array(a.iter().map(semantic).collect()),
        other => other.clone(),
    }
}

fn is_empty(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::Array(a) => a.is_empty(),
        Value::Object(m) => m.is_empty(),
        _ => false,
    }
}

/// The differences of two specs, one `- path: old` / `+ path: new` pair per changed
/// leaf (at most 20 lines; upstream prints a Go structure diff instead).
pub(crate) fn describe_diff(path: &str, old: &Value, new: &Value, out: &mut Vec<String>) {
    const MAX_LINES: usize = 20;
    if out.len() >= MAX_LINES || old == new {
        return;
    }
    match (old, new) {
        (Value::Object(a), Value::Object(b)) => {
            let keys: BTreeSet<&String> = a.keys().chain(b.keys()).collect();
            for k in keys {
                let (x, y) = (
                    a.get(k).unwrap_or(&Value::Null),
                    b.get(k).unwrap_or(&Value::Null),
                );
                describe_diff(&format!("{path}.{k}"), x, y, out);
            }
        }
        (Value::Array(a), Value::Array(b)) if a.len() == b.len() => {
            for (i, (x, y)) in a.iter().zip(b).enumerate() {
                describe_diff(&format!("{path}[{i}]"), x, y, out);
            }
        }
        _ => {
            if !old.is_null() {
                out.push(format!("- {path}: {old}"));
            }
            if !new.is_null() {
                out.push(format!("+ {path}: {new}"));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod() -> Value {
        json!({"spec": {"containers": [{"name": "app", "image": "nginx", "ports": [{"containerPort": 80, "protocol": "TCP"}]}], "terminationGracePeriodSeconds": 30}})
    }

    #[test]
    fn images_and_deadlines_change_other_fields_do_not() {
        let old = pod();
        let mut new = pod();
        new["spec"]["containers"][0]["image"] = json!("nginx:1.27");
        new["spec"]["activeDeadlineSeconds"] = json!(60);
        assert_eq!(validate_pod_update(&new, &old), vec![]);
        new["spec"]["containers"][0]["env"] = json!([{"name": "A", "value": "1"}]);
        let causes = validate_pod_update(&new, &old);
        assert_eq!(causes.len(), 1);
        assert_eq!(causes[0].field, "spec");
        assert!(causes[0].message.starts_with(
            "Forbidden: pod updates may not change fields other than `spec.containers[*].image`"
        ));
        assert!(causes[0]
            .message
            .contains("+ spec.containers[0].env: [{\"name\":\"A\",\"value\":\"1\"}]"));
    }

    #[test]
    fn containers_are_neither_added_nor_removed() {
        let old = pod();
        let mut new = pod();
        new["spec"]["containers"]
            .as_array_mut()
            .unwrap()
            .push(json!({"name": "b", "image": "b"}));
        let causes = validate_pod_update(&new, &old);
        assert_eq!(causes[0].field, "spec.containers");
        assert_eq!(
            causes[0].message,
            "Forbidden: pod updates may not add or remove containers"
        );
    }

    #[test]
    fn tolerations_are_only_added() {
        let mut old = pod();
        old["spec"]["tolerations"] = json!([{"key": "a", "operator": "Exists"}]);
        let mut new = old.clone();
        new["spec"]["tolerations"] =
            json!([{"key": "a", "operator": "Exists"}, {"key": "b", "operator": "Exists"}]);
        assert_eq!(validate_pod_update(&new, &old), vec![]);
        new["spec"]["tolerations"] = json!([{"key": "b", "operator": "Exists"}]);
        assert_eq!(validate_pod_update(&new, &old)[0].field, "spec.tolerations");
    }

    #[test]
    fn spec_checks_word_as_upstream() {
        let spec = json!({"containers": [
            {"name": "Bad_Name", "image": "", "ports": [{"containerPort": 70000, "protocol": "HTTP", "name": "web"}, {"containerPort": 81, "protocol": "TCP", "name": "web"}],
             "resources": {"requests": {"cpu": "2"}, "limits": {"cpu": "1", "memory": "lots"}}},
            {"name": "ok", "image": "x"},
            {"name": "ok", "image": "x"}
        ]});
        let got: Vec<(String, String)> = validate_pod_spec(&spec, "spec", true)
            .into_iter()
            .map(|c| (c.field, c.message))
            .collect();
        let has = |f: &str, m: &str| got.iter().any(|(gf, gm)| gf == f && gm.contains(m));
        assert!(has("spec.containers[0].name", "a lowercase RFC 1123 label"));
        assert!(has("spec.containers[0].image", "Required value"));
        assert!(has(
            "spec.containers[0].ports[0].containerPort",
            "Invalid value: 70000: must be between 1 and 65535, inclusive"
        ));
        assert!(has(
            "spec.containers[0].ports[0].protocol",
            "Unsupported value: \"HTTP\": supported values: \"SCTP\", \"TCP\", \"UDP\""
        ));
        assert!(has(
            "spec.containers[0].ports[1].name",
            "Duplicate value: \"web\""
        ));
        assert!(has(
            "spec.containers[0].resources.requests",
            "Invalid value: \"2\": must be less than or equal to cpu limit of 1"
        ));
        assert!(has(
            "spec.containers[0].resources.limits[memory]",
            "quantities must match the regular expression"
        ));
        assert!(has("spec.containers[2].name", "Duplicate value: \"ok\""));
    }
}
