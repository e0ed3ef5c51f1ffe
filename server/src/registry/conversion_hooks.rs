//! Hand-written conversions, by the names codegen's `CONVERSION_HOOKS` lists (a
//! definition's `conversion: {hook: ..}`): what declarative rules cannot say. A hook
//! runs after a version's rules on the way to the storage version and before them on
//! the way back, so it always sees the storage version's field names.

use serde_json::{json, Map, Value};

use crate::api::ApiError;

/// A named conversion hook.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Hook {
    /// autoscaling/v1 HorizontalPodAutoscaler ⇄ autoscaling/v2 (stored).
    HorizontalPodAutoscalerV1,
}

/// The hook named `name`.
pub fn named(name: &str) -> Result<Hook, String> {
    match name {
        "HorizontalPodAutoscalerV1" => Ok(Hook::HorizontalPodAutoscalerV1),
        other => Err(format!("the server has no conversion hook named {other:?}")),
    }
}

impl Hook {
    /// Completes `obj`'s conversion to the storage version.
    pub fn to_storage(self, obj: &mut Value) -> Result<(), ApiError> {
        match self {
            Hook::HorizontalPodAutoscalerV1 => hpa::v1_to_v2(obj),
        }
    }

    /// Starts `obj`'s conversion from the storage version.
    pub fn from_storage(self, obj: &mut Value) -> Result<(), ApiError> {
        match self {
            Hook::HorizontalPodAutoscalerV1 => hpa::v2_to_v1(obj),
        }
    }
}

/// autoscaling/v1 holds one metric (`targetCPUUtilizationPercentage`, and
/// `currentCPUUtilizationPercentage` in status); the rest of v2 rides in the
/// annotations upstream uses, in autoscaling/v1's own metric format.
mod hpa {
    use super::*;

    const METRICS: &str = "autoscaling.alpha.kubernetes.io/metrics";
    const CURRENT_METRICS: &str = "autoscaling.alpha.kubernetes.io/current-metrics";
    const CONDITIONS: &str = "autoscaling.alpha.kubernetes.io/conditions";
    const BEHAVIOR: &str = "autoscaling.alpha.kubernetes.io/behavior";

    fn object(v: &mut Value, key: &str) -> Option<Map<String, Value>> {
        v.as_object_mut()?.remove(key).and_then(|v| match v {
            Value::Object(m) => Some(m),
            _ => None,
        })
    }

    /// Sets `key` in `m` when `v` is not null.
    fn set(m: &mut Map<String, Value>, key: &str, v: &Value) {
        if !v.is_null() {
            m.insert(key.into(), v.clone());
        }
    }

    fn annotations(obj: &mut Value) -> Option<&mut Map<String, Value>> {
        obj.pointer_mut("/metadata/annotations")
            .and_then(Value::as_object_mut)
    }

    /// Takes annotation `key` as JSON; text that does not parse is a 400 (a v1 client
    /// wrote it), as upstream's conversion refuses it.
    fn take_annotation(obj: &mut Value, key: &str) -> Result<Option<Value>, ApiError> {
        let Some(text) = annotations(obj).and_then(|a| a.remove(key)) else {
            return Ok(None);
        };
        let text = text.as_str().unwrap_or_default();
        serde_json::from_str(text)
            .map(Some)
            .map_err(|e| ApiError::bad_request(format!("annotation {key} is not valid JSON: {e}")))
    }

    fn put_annotation(obj: &mut Value, key: &str, v: &Value) {
        if let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
            let a = meta
                .entry("annotations")
                .or_insert_with(|| Value::Object(Map::new()));
            if let Some(a) = a.as_object_mut() {
                a.insert(key.into(), Value::String(v.to_string()));
            }
        }
    }

    fn drop_empty_annotations(obj: &mut Value) {
        if annotations(obj).is_some_and(|a| a.is_empty()) {
            if let Some(m) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
                m.remove("annotations");
            }
        }
    }

    /// Whether a v2 metric is the one v1 holds: a cpu Resource metric by utilization.
    fn is_cpu_utilization(m: &Value) -> bool {
        m["type"] == "Resource"
            && m["resource"]["name"] == "cpu"
            && m["resource"]["target"]["type"] == "Utilization"
            && !m["resource"]["target"]["averageUtilization"].is_null()
    }

    fn is_cpu_current(m: &Value) -> bool {
        m["type"] == "Resource"
            && m["resource"]["name"] == "cpu"
            && !m["resource"]["current"]["averageUtilization"].is_null()
    }

    /// The source key of each metric type, in both formats.
    fn source_key(type_: &Value) -> Option<&'static str> {
        Some(match type_.as_str()? {
            "Object" => "object",
            "Pods" => "pods",
            "Resource" => "resource",
            "ContainerResource" => "containerResource",
            "External" => "external",
            _ => return None,
        })
    }

    /// A v2 MetricSpec (`spec`) or MetricStatus (`!spec`) in autoscaling/v1's format.
    fn metric_to_v1(m: &Value, spec: bool) -> Value {
        let mut out = Map::new();
        set(&mut out, "type", &m["type"]);
        let Some(key) = source_key(&m["type"]) else {
            return Value::Object(out);
        };
        let src = &m[key];
        let values = if spec {
            &src["target"]
        } else {
            &src["current"]
        };
        let (value, average, utilization) = if spec {
            (
                "targetValue",
                "targetAverageValue",
                "targetAverageUtilization",
            )
        } else {
            (
                "currentValue",
                "currentAverageValue",
                "currentAverageUtilization",
            )
        };
        let mut s = Map::new();
        match key {
            "object" => {
                set(&mut s, "target", &src["describedObject"]);
                set(&mut s, "metricName", &src["metric"]["name"]);
                set(&mut s, "selector", &src["metric"]["selector"]);
                set(&mut s, value, &values["value"]);
                set(&mut s, "averageValue", &values["averageValue"]);
            }
            "pods" => {
                set(&mut s, "metricName", &src["metric"]["name"]);
                set(&mut s, "selector", &src["metric"]["selector"]);
                set(&mut s, average, &values["averageValue"]);
            }
            "external" => {
                set(&mut s, "metricName", &src["metric"]["name"]);
                set(&mut s, "metricSelector", &src["metric"]["selector"]);
                set(&mut s, value, &values["value"]);
                set(&mut s, average, &values["averageValue"]);
            }
            _ => {
                set(&mut s, "name", &src["name"]);
                set(&mut s, "container", &src["container"]);
                set(&mut s, utilization, &values["averageUtilization"]);
                set(&mut s, average, &values["averageValue"]);
            }
        }
        out.insert(key.into(), Value::Object(s));
        Value::Object(out)
    }

    /// An autoscaling/v1 metric (annotation format) in v2's.
    fn metric_to_v2(m: &Value, spec: bool) -> Value {
        let mut out = Map::new();
        set(&mut out, "type", &m["type"]);
        let Some(key) = source_key(&m["type"]) else {
            return Value::Object(out);
        };
        let src = &m[key];
        let (value, average, utilization) = if spec {
            (
                "targetValue",
                "targetAverageValue",
                "targetAverageUtilization",
            )
        } else {
            (
                "currentValue",
                "currentAverageValue",
                "currentAverageUtilization",
            )
        };
        let mut values = Map::new();
        let mut s = Map::new();
        let metric = |name: &Value, selector: &Value| {
            let mut metric = Map::new();
            set(&mut metric, "name", name);
            set(&mut metric, "selector", selector);
            Value::Object(metric)
        };
        match key {
            "object" => {
                set(&mut s, "describedObject", &src["target"]);
                s.insert(
                    "metric".into(),
                    metric(&src["metricName"], &src["selector"]),
                );
                set(&mut values, "value", &src[value]);
                set(&mut values, "averageValue", &src["averageValue"]);
            }
            "pods" => {
                s.insert(
                    "metric".into(),
                    metric(&src["metricName"], &src["selector"]),
                );
                set(&mut values, "averageValue", &src[average]);
            }
            "external" => {
                s.insert(
                    "metric".into(),
                    metric(&src["metricName"], &src["metricSelector"]),
                );
                set(&mut values, "value", &src[value]);
                set(&mut values, "averageValue", &src[average]);
            }
            _ => {
                set(&mut s, "name", &src["name"]);
                set(&mut s, "container", &src["container"]);
                set(&mut values, "averageUtilization", &src[utilization]);
                set(&mut values, "averageValue", &src[average]);
            }
        }
        if spec {
            // The target's type says which value it sets, as upstream's conversion does.
            let type_ = if values.contains_key("averageUtilization") {
                "Utilization"
            } else if values.contains_key("value") {
                "Value"
            } else {
                "AverageValue"
            };
            values.insert("type".into(), json!(type_));
            s.insert("target".into(), Value::Object(values));
        } else {
            s.insert("current".into(), Value::Object(values));
        }
        out.insert(key.into(), Value::Object(s));
        Value::Object(out)
    }

    /// v2 → v1: the cpu utilization metric becomes `targetCPUUtilizationPercentage`
    /// (and its current value `currentCPUUtilizationPercentage`); other metrics,
    /// `behavior` and `status.conditions` go to annotations.
    pub fn v2_to_v1(obj: &mut Value) -> Result<(), ApiError> {
        if let Some(mut spec) = object(obj, "spec") {
            let metrics = spec.remove("metrics").unwrap_or(Value::Null);
            let mut others = Vec::new();
            for m in metrics.as_array().into_iter().flatten() {
                if is_cpu_utilization(m) && !spec.contains_key("targetCPUUtilizationPercentage") {
                    spec.insert(
                        "targetCPUUtilizationPercentage".into(),
                        m["resource"]["target"]["averageUtilization"].clone(),
                    );
                } else {
                    others.push(metric_to_v1(m, true));
                }
            }
            let behavior = spec.remove("behavior");
            obj["spec"] = Value::Object(spec);
            if !others.is_empty() {
                put_annotation(obj, METRICS, &Value::Array(others));
            }
            if let Some(b) = behavior {
                put_annotation(obj, BEHAVIOR, &b);
            }
        }
        if let Some(mut status) = object(obj, "status") {
            let current = status.remove("currentMetrics").unwrap_or(Value::Null);
            let mut others = Vec::new();
            for m in current.as_array().into_iter().flatten() {
                if is_cpu_current(m) && !status.contains_key("currentCPUUtilizationPercentage") {
                    status.insert(
                        "currentCPUUtilizationPercentage".into(),
                        m["resource"]["current"]["averageUtilization"].clone(),
                    );
                } else {
                    others.push(metric_to_v1(m, false));
                }
            }
            let conditions = status.remove("conditions");
            obj["status"] = Value::Object(status);
            if !others.is_empty() {
                put_annotation(obj, CURRENT_METRICS, &Value::Array(others));
            }
            if let Some(c) = conditions {
                put_annotation(obj, CONDITIONS, &c);
            }
        }
        Ok(())
    }

    /// v1 → v2: the annotations' metrics, then the cpu target as a Resource metric
    /// (upstream's order); `behavior` and conditions back from their annotations.
    pub fn v1_to_v2(obj: &mut Value) -> Result<(), ApiError> {
        let metrics = take_annotation(obj, METRICS)?;
        let current = take_annotation(obj, CURRENT_METRICS)?;
        let conditions = take_annotation(obj, CONDITIONS)?;
        let behavior = take_annotation(obj, BEHAVIOR)?;
        drop_empty_annotations(obj);
        if let Some(mut spec) = object(obj, "spec") {
            let mut list: Vec<Value> = metrics
                .as_ref()
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .map(|m| metric_to_v2(m, true))
                .collect();
            if let Some(cpu) = spec.remove("targetCPUUtilizationPercentage") {
                list.insert(
                    0,
                    json!({"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": cpu}}}),
                );
            }
            if !list.is_empty() {
                spec.insert("metrics".into(), Value::Array(list));
            }
            if let Some(b) = behavior {
                spec.insert("behavior".into(), b);
            }
            obj["spec"] = Value::Object(spec);
        }
        let status_fields = current.is_some() || conditions.is_some();
        if obj.get("status").is_some() || status_fields {
            let mut status = object(obj, "status").unwrap_or_default();
            let mut list: Vec<Value> = current
                .as_ref()
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .map(|m| metric_to_v2(m, false))
                .collect();
            if let Some(cpu) = status.remove("currentCPUUtilizationPercentage") {
                list.insert(
                    0,
                    json!({"type": "Resource", "resource": {"name": "cpu", "current": {"averageUtilization": cpu}}}),
                );
            }
            if !list.is_empty() {
                status.insert("currentMetrics".into(), Value::Array(list));
            }
            if let Some(c) = conditions {
                status.insert("conditions".into(), c);
            }
            obj["status"] = Value::Object(status);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_hook_codegen_knows_exists() {
        for name in codegen::model::CONVERSION_HOOKS {
            assert!(named(name).is_ok(), "{name}");
        }
    }

    #[test]
    fn a_v2_autoscaler_goes_through_v1_and_back_unchanged() {
        let v2 = json!({
            "apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": "web", "annotations": {"a": "b"}},
            "spec": {
                "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                "minReplicas": 1, "maxReplicas": 5,
                "metrics": [
                    {"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 50}}},
                    {"type": "Resource", "resource": {"name": "memory", "target": {"type": "AverageValue", "averageValue": "100Mi"}}},
                    {"type": "Pods", "pods": {"metric": {"name": "qps"}, "target": {"type": "AverageValue", "averageValue": "10"}}},
                    {"type": "Object", "object": {"describedObject": {"kind": "Service", "name": "s"}, "metric": {"name": "hits"}, "target": {"type": "Value", "value": "3"}}},
                    {"type": "External", "external": {"metric": {"name": "queue", "selector": {"matchLabels": {"q": "a"}}}, "target": {"type": "AverageValue", "averageValue": "7"}}},
                ],
                "behavior": {"scaleDown": {"stabilizationWindowSeconds": 60}},
            },
            "status": {
                "currentReplicas": 2, "desiredReplicas": 3,
                "currentMetrics": [
                    {"type": "Resource", "resource": {"name": "cpu", "current": {"averageUtilization": 40}}},
                    {"type": "Pods", "pods": {"metric": {"name": "qps"}, "current": {"averageValue": "9"}}},
                ],
                "conditions": [{"type": "AbleToScale", "status": "True"}],
            },
        });
        let mut v1 = v2.clone();
        hpa::v2_to_v1(&mut v1).unwrap();
        assert_eq!(v1["spec"]["targetCPUUtilizationPercentage"], 50);
        assert_eq!(v1["status"]["currentCPUUtilizationPercentage"], 40);
        assert!(v1["spec"].get("metrics").is_none());
        let kept: Value = serde_json::from_str(
            v1["metadata"]["annotations"]["autoscaling.alpha.kubernetes.io/metrics"]
                .as_str()
                .unwrap(),
        )
        .unwrap();
        assert_eq!(
            kept[0],
            json!({"type": "Resource", "resource": {"name": "memory", "targetAverageValue": "100Mi"}})
        );
        let mut back = v1;
        hpa::v1_to_v2(&mut back).unwrap();
        assert_eq!(back, v2);
    }

    #[test]
    fn a_bad_annotation_is_a_client_error() {
        let mut v1 = json!({"metadata": {"annotations": {"autoscaling.alpha.kubernetes.io/metrics": "[{"}}, "spec": {}});
        let err = hpa::v1_to_v2(&mut v1).unwrap_err();
        assert_eq!(err.code, 400);
    }
}
