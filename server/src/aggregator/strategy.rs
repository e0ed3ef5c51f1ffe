//! The APIService kind's hooks: upstream's validation (the name is
//! `<version>.<group>`, priorities in range, a Service reference or none) and the
//! columns of `kubectl get apiservices` (SERVICE, AVAILABLE).

use serde_json::{json, Value};

use crate::api::meta::NameRule;
use crate::api::StatusCause;
use crate::registry::strategy::{ComputedColumn, Strategy};

/// `apiregistration.k8s.io/v1` APIService.
pub struct ApiServiceStrategy;

impl Strategy for ApiServiceStrategy {
    fn computed_columns(&self) -> &'static [ComputedColumn] {
        &COLUMNS
    }

    fn tracks_generation(&self) -> bool {
        false
    }

    // Upstream checks names as path segments, then for the one name they must have.
    fn name_rule(&self) -> NameRule {
        NameRule::PathSegment
    }

    fn validate(&self, obj: &Value) -> Vec<StatusCause> {
        validate(obj)
    }
}

const COLUMNS: [ComputedColumn; 2] = [
    ComputedColumn {
        name: "Service",
        type_: "string",
        description: "The Service that serves the group-version, or Local.",
        priority: 0,
        fields: &["spec"],
        value: service_column,
    },
    ComputedColumn {
        name: "Available",
        type_: "string",
        description: "Whether the group-version can be served, and why not.",
        priority: 0,
        fields: &["status"],
        value: available_column,
    },
];

fn service_column(obj: &Value) -> Value {
    let service = &obj["spec"]["service"];
    match (service["namespace"].as_str(), service["name"].as_str()) {
        (Some(ns), Some(name)) => json!(format!("{ns}/{name}")),
        _ => json!("Local"),
    }
}

fn available_column(obj: &Value) -> Value {
    let condition = obj["status"]["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|c| c["type"] == "Available");
    match condition {
        None => json!("Unknown"),
        Some(c) if c["status"] == "True" => json!("True"),
        Some(c) => json!(format!(
            "{} ({})",
            c["status"].as_str().unwrap_or("Unknown"),
            c["reason"].as_str().unwrap_or_default()
        )),
    }
}

/// Upstream's checks of an APIService, every failure with its field path.
pub fn validate(obj: &Value) -> Vec<StatusCause> {
    let spec = &obj["spec"];
    let mut causes = Vec::new();
    let group = spec["group"].as_str().unwrap_or_default();
    let version = spec["version"].as_str().unwrap_or_default();
    let name = obj["metadata"]["name"].as_str().unwrap_or_default();
    let wanted = super::priorities::name(group, version);
    if name != wanted {
        causes.push(StatusCause::invalid(
            "metadata.name",
            name,
            &format!("must be `spec.version+\".\"+spec.group`: {wanted:?}"),
        ));
    }
    if version.is_empty() {
        causes.push(StatusCause::required("spec.version", ""));
    }
    let priority = |field: &str, max: i64, detail: &str, causes: &mut Vec<StatusCause>| {
        let value = &spec[field];
        if !value.as_i64().is_some_and(|p| p > 0 && p <= max) {
            causes.push(StatusCause::invalid_value(
                &format!("spec.{field}"),
                value,
                detail,
            ));
        }
    };
    priority(
        "groupPriorityMinimum",
        20000,
        "must be positive and less than 20000",
        &mut causes,
    );
    priority(
        "versionPriority",
        1000,
        "must be positive and less than 1000",
        &mut causes,
    );
    let has_ca = spec["caBundle"].as_str().is_some_and(|b| !b.is_empty());
    let insecure = spec["insecureSkipTLSVerify"].as_bool() == Some(true);
    let service = &spec["service"];
    if service.is_null() {
        if has_ca {
            causes.push(StatusCause::invalid(
                "spec.caBundle",
                "",
                "local APIServices may not have a caBundle",
            ));
        }
        if insecure {
            causes.push(StatusCause::invalid_value(
                "spec.insecureSkipTLSVerify",
                &json!(true),
                "local APIServices may not have insecureSkipTLSVerify",
            ));
        }
        return causes;
    }
    for field in ["namespace", "name"] {
        if service[field].as_str().unwrap_or_default().is_empty() {
            causes.push(StatusCause::required(&format!("spec.service.{field}"), ""));
        }
    }
    if let Some(port) = service.get("port").filter(|p| !p.is_null()) {
        if !port.as_u64().is_some_and(|p| (1..=65535).contains(&p)) {
            causes.push(StatusCause::invalid_value(
                "spec.service.port",
                port,
                "port is not valid: must be between 1 and 65535, inclusive",
            ));
        }
    }
    if insecure && has_ca {
        causes.push(StatusCause::invalid_value(
            "spec.insecureSkipTLSVerify",
            &json!(true),
            "may not be true if caBundle is present",
        ));
    }
    causes
}

#[cfg(test)]
mod tests {
    use super::*;

    fn api_service(name: &str, spec: Value) -> Value {
        json!({ "metadata": { "name": name }, "spec": spec })
    }

    #[test]
    fn local_and_remote_api_services_are_checked_as_upstream_checks_them() {
        let local = super::super::priorities::local("", "v1", true);
        assert!(validate(&local).is_empty(), "{:?}", validate(&local));
        let fields =
            |obj: &Value| -> Vec<String> { validate(obj).into_iter().map(|c| c.field).collect() };
        let misnamed = api_service(
            "v1.wrong",
            json!({ "group": "right", "version": "v1", "groupPriorityMinimum": 10, "versionPriority": 10 }),
        );
        assert_eq!(fields(&misnamed), ["metadata.name"]);
        let bad = api_service(
            "v1.x",
            json!({
                "group": "x", "version": "v1", "groupPriorityMinimum": 0, "versionPriority": 1001,
                "service": { "namespace": "", "name": "s", "port": 70000 },
                "caBundle": "Zm9v", "insecureSkipTLSVerify": true,
            }),
        );
        assert_eq!(
            fields(&bad),
            [
                "spec.groupPriorityMinimum",
                "spec.versionPriority",
                "spec.service.namespace",
                "spec.service.port",
                "spec.insecureSkipTLSVerify",
            ]
        );
    }

    #[test]
    fn the_columns_say_where_a_group_version_is_served_and_whether_it_is_available() {
        let remote = json!({
            "spec": { "service": { "namespace": "ns", "name": "api" } },
            "status": { "conditions": [{ "type": "Available", "status": "False", "reason": "MissingEndpoints" }] },
        });
        assert_eq!(service_column(&remote), "ns/api");
        assert_eq!(available_column(&remote), "False (MissingEndpoints)");
        let local = json!({ "spec": {}, "status": { "conditions": [{ "type": "Available", "status": "True" }] } });
        assert_eq!(service_column(&local), "Local");
        assert_eq!(available_column(&local), "True");
    }
}
