//! HorizontalPodAutoscaler (autoscaling/v1 and v2): the Table kube-apiserver prints for
//! it (REFERENCE TARGETS MINPODS MAXPODS REPLICAS), the same in both versions. Its
//! printer reads the internal object, so a v1 object's cells are read from its v2 form
//! (the conversion hook's), where its other metrics are back from their annotations.

use serde_json::{json, Value};

use super::conversion_hooks::Hook;
use super::strategy::{ComputedColumn, Strategy};

/// HorizontalPodAutoscaler: its columns; generation counts spec changes (the default).
pub struct HorizontalPodAutoscalerStrategy;
impl Strategy for HorizontalPodAutoscalerStrategy {
    fn computed_columns(&self) -> &'static [ComputedColumn] {
        COLUMNS
    }
}

/// At most this many metrics are listed in TARGETS; the rest are counted.
const LISTED_METRICS: usize = 2;

const FIELDS: &[&str] = &["apiVersion", "spec", "status"];

const COLUMNS: &[ComputedColumn] = &[
    ComputedColumn {
        name: "Reference",
        type_: "string",
        description: "The kind and name of the scaled object.",
        priority: 0,
        fields: FIELDS,
        value: reference,
    },
    ComputedColumn {
        name: "Targets",
        type_: "string",
        description: "Each metric's current value against its target.",
        priority: 0,
        fields: FIELDS,
        value: targets,
    },
    ComputedColumn {
        name: "MinPods",
        type_: "string",
        description: "The fewest replicas the autoscaler keeps.",
        priority: 0,
        fields: FIELDS,
        value: min_pods,
    },
    ComputedColumn {
        name: "MaxPods",
        type_: "integer",
        description: "The most replicas the autoscaler allows.",
        priority: 0,
        fields: FIELDS,
        value: max_pods,
    },
    ComputedColumn {
        name: "Replicas",
        type_: "integer",
        description: "The replicas the scaled object has now.",
        priority: 0,
        fields: FIELDS,
        value: replicas,
    },
];

fn reference(obj: &Value) -> Value {
    let target = &obj["spec"]["scaleTargetRef"];
    let text = |f: &str| target[f].as_str().unwrap_or_default().to_string();
    json!(format!("{}/{}", text("kind"), text("name")))
}

fn min_pods(obj: &Value) -> Value {
    match obj["spec"]["minReplicas"].as_i64() {
        Some(n) => json!(n.to_string()),
        None => json!("<unset>"),
    }
}

fn max_pods(obj: &Value) -> Value {
    json!(obj["spec"]["maxReplicas"].as_i64().unwrap_or(0))
}

fn replicas(obj: &Value) -> Value {
    json!(obj["status"]["currentReplicas"].as_i64().unwrap_or(0))
}

fn targets(obj: &Value) -> Value {
    let v2;
    let obj = if obj["apiVersion"] == "autoscaling/v1" {
        let mut converted = obj.clone();
        if Hook::HorizontalPodAutoscalerV1
            .to_storage(&mut converted)
            .is_err()
        {
            return json!("<unknown>");
        }
        v2 = converted;
        &v2
    } else {
        obj
    };
    json!(format_metrics(
        obj["spec"]["metrics"].as_array().map_or(&[], Vec::as_slice),
        obj["status"]["currentMetrics"]
            .as_array()
            .map_or(&[], Vec::as_slice),
    ))
}

/// A quantity or number as printed.
fn quantity(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// `current/target` per metric (current from the status entry at the same index, else
/// `<unknown>`), a resource's prefixed with its name, average values marked `(avg)`.
fn format_metrics(specs: &[Value], statuses: &[Value]) -> String {
    if specs.is_empty() {
        return "<none>".into();
    }
    let unknown = || "<unknown>".to_string();
    let cells: Vec<String> = specs
        .iter()
        .enumerate()
        .map(|(i, spec)| {
            let kind = spec["type"].as_str().unwrap_or_default();
            let source = |s: &Value| s.get(lower_first(kind)).cloned().filter(Value::is_object);
            let Some(wanted) = source(spec) else {
                return "<unknown type>".into();
            };
            let now = statuses.get(i).and_then(source);
            let current = |f: &str| {
                now.as_ref()
                    .and_then(|s| quantity(&s["current"][f]))
                    .unwrap_or_else(unknown)
            };
            let target = &wanted["target"];
            match kind {
                "Resource" | "ContainerResource" => {
                    let name = wanted["name"].as_str().unwrap_or_default();
                    match quantity(&target["averageValue"]) {
                        Some(t) => format!("{name}: {}/{t}", current("averageValue")),
                        None => {
                            let now = now
                                .as_ref()
                                .and_then(|s| s["current"]["averageUtilization"].as_i64())
                                .map_or_else(unknown, |p| format!("{p}%"));
                            let want = target["averageUtilization"]
                                .as_i64()
                                .map_or_else(|| "<auto>".to_string(), |p| format!("{p}%"));
                            format!("{name}: {now}/{want}")
                        }
                    }
                }
                "Pods" => format!(
                    "{}/{}",
                    current("averageValue"),
                    quantity(&target["averageValue"]).unwrap_or_default()
                ),
                "Object" | "External" => match quantity(&target["averageValue"]) {
                    Some(t) => format!("{}/{t} (avg)", current("averageValue")),
                    None => format!(
                        "{}/{}",
                        current("value"),
                        quantity(&target["value"]).unwrap_or_default()
                    ),
                },
                _ => "<unknown type>".into(),
            }
        })
        .collect();
    let listed = cells[..cells.len().min(LISTED_METRICS)].join(", ");
    match cells.len().checked_sub(LISTED_METRICS) {
        Some(more) if more > 0 => format!("{listed} + {more} more..."),
        _ => listed,
    }
}

/// A metric type's source field: `ContainerResource` → `containerResource`.
fn lower_first(kind: &str) -> String {
    let mut chars = kind.chars();
    match chars.next() {
        Some(c) => c.to_ascii_lowercase().to_string() + chars.as_str(),
        None => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_list_two_metrics_and_count_the_rest() {
        let specs = [
            json!({"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 80}}}),
            json!({"type": "Resource", "resource": {"name": "memory", "target": {"type": "AverageValue", "averageValue": "1Gi"}}}),
            json!({"type": "Pods", "pods": {"metric": {"name": "qps"}, "target": {"type": "AverageValue", "averageValue": "10"}}}),
        ];
        let statuses = [
            json!({"type": "Resource", "resource": {"name": "cpu", "current": {"averageUtilization": 50}}}),
        ];
        assert_eq!(
            format_metrics(&specs, &statuses),
            "cpu: 50%/80%, memory: <unknown>/1Gi + 1 more..."
        );
        assert_eq!(format_metrics(&[], &[]), "<none>");
        let object =
            json!({"type": "Object", "object": {"target": {"type": "Value", "value": "2"}}});
        assert_eq!(format_metrics(&[object], &[]), "<unknown>/2");
    }
}
