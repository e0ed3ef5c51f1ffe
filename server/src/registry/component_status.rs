//! ComponentStatus (core/v1, deprecated upstream since v1.19): not stored, but made on
//! each read from a health check of what the server depends on, as kube-apiserver's
//! `componentstatus` REST does. Here that is the storage backend, reported as `etcd-0`
//! whichever backend it is (the name clients and dashboards look for); there is no
//! scheduler, and the controllers run inside this process.

use serde_json::{json, Value};

use super::strategy::{ComputedColumn, Strategy};

/// The name of the storage's entry.
pub const STORAGE: &str = "etcd-0";

/// The components a read reports, by name.
pub const COMPONENTS: &[&str] = &[STORAGE];

/// The object of one component: a `Healthy` condition, `True` with message `ok`, or
/// `False` with the check's error.
pub fn status(name: &str, health: &Result<(), String>) -> Value {
    let condition = match health {
        Ok(()) => json!({"type": "Healthy", "status": "True", "message": "ok"}),
        Err(e) => json!({"type": "Healthy", "status": "False", "error": e}),
    };
    json!({
        "kind": "ComponentStatus",
        "apiVersion": "v1",
        "metadata": {"name": name},
        "conditions": [condition],
    })
}

fn healthy_condition(obj: &Value) -> &Value {
    obj["conditions"]
        .as_array()
        .and_then(|cs| cs.iter().find(|c| c["type"] == "Healthy"))
        .unwrap_or(&Value::Null)
}

/// `Healthy`, `Unhealthy` or `Unknown`, as kubectl's printer shows a component.
fn status_column(obj: &Value) -> Value {
    json!(match healthy_condition(obj)["status"].as_str() {
        Some("True") => "Healthy",
        Some("False") => "Unhealthy",
        _ => "Unknown",
    })
}

fn message_column(obj: &Value) -> Value {
    json!(healthy_condition(obj)["message"]
        .as_str()
        .unwrap_or_default())
}

fn error_column(obj: &Value) -> Value {
    json!(healthy_condition(obj)["error"].as_str().unwrap_or_default())
}

const FIELDS: &[&str] = &["conditions"];

const COLUMNS: &[ComputedColumn] = &[
    ComputedColumn {
        name: "Status",
        type_: "string",
        description: "Whether the component is healthy.",
        priority: 0,
        fields: FIELDS,
        value: status_column,
    },
    ComputedColumn {
        name: "Message",
        type_: "string",
        description: "What the health check said.",
        priority: 0,
        fields: FIELDS,
        value: message_column,
    },
    ComputedColumn {
        name: "Error",
        type_: "string",
        description: "Why the health check failed.",
        priority: 0,
        fields: FIELDS,
        value: error_column,
    },
];

/// ComponentStatus: read-only reports made per request; upstream's columns, no Age.
pub struct ComponentStatusStrategy;
impl Strategy for ComponentStatusStrategy {
    fn computed_columns(&self) -> &'static [ComputedColumn] {
        COLUMNS
    }

    fn reports_health(&self) -> bool {
        true
    }

    fn prints_age(&self) -> bool {
        false
    }

    fn deprecation_warning(&self) -> Option<&'static str> {
        Some("v1 ComponentStatus is deprecated in v1.19+")
    }

    fn tracks_generation(&self) -> bool {
        false
    }
}
