//! The scale subresource: an autoscaling/v1 `Scale` view of an object, mapped onto the
//! definition's replica and selector paths.

use serde_json::{json, Value};

use super::table::json_path;
use crate::api::{ApiError, StatusCause};
use crate::catalog::ApiResource;

/// The object's Scale.
pub fn to_scale(res: &ApiResource, obj: &Value) -> Result<Value, ApiError> {
    let Some(scale) = &res.def.subresources.scale else {
        return Err(ApiError::internal("resource has no scale subresource"));
    };
    let meta = &obj["metadata"];
    let mut m = json!({});
    for f in [
        "name",
        "namespace",
        "uid",
        "resourceVersion",
        "creationTimestamp",
    ] {
        if let Some(v) = meta.get(f) {
            m[f] = v.clone();
        }
    }
    let replicas = json_path(obj, &scale.spec_replicas_path)
        .and_then(Value::as_i64)
        .unwrap_or(0);
    let mut status = json!({ "replicas": json_path(obj, &scale.status_replicas_path).and_then(Value::as_i64).unwrap_or(0) });
    if let Some(sel) = scale
        .label_selector_path
        .as_deref()
        .and_then(|p| json_path(obj, p))
        .and_then(Value::as_str)
    {
        status["selector"] = json!(sel);
    }
    Ok(
        json!({ "kind": "Scale", "apiVersion": "autoscaling/v1", "metadata": m, "spec": { "replicas": replicas }, "status": status }),
    )
}

/// Writes `scale.spec.replicas` into a copy of `obj` at the definition's replicas path.
pub fn apply_scale(res: &ApiResource, obj: &Value, scale: &Value) -> Result<Value, ApiError> {
    let Some(def) = &res.def.subresources.scale else {
        return Err(ApiError::internal("resource has no scale subresource"));
    };
    let name = obj["metadata"]["name"].as_str().unwrap_or_default();
    let kind = scale.get("kind").and_then(Value::as_str).unwrap_or("Scale");
    if kind != "Scale" {
        return Err(ApiError::bad_request(format!(
            "{kind} cannot be handled as a Scale"
        )));
    }
    let replicas = match &scale["spec"]["replicas"] {
        Value::Null => 0,
        v => v
            .as_i64()
            .filter(|n| *n >= 0 && *n <= i64::from(i32::MAX))
            .ok_or_else(|| {
                // As upstream words it: the object is the Scale, not the resource.
                ApiError::invalid_kind(
                    "autoscaling",
                    "Scale",
                    name,
                    vec![StatusCause::invalid(
                        "spec.replicas",
                        &v.to_string(),
                        "must be greater than or equal to 0",
                    )],
                )
            })?,
    };
    let mut out = obj.clone();
    let path: Vec<&str> = def
        .spec_replicas_path
        .trim_start_matches('.')
        .split('.')
        .collect();
    let mut cur = &mut out;
    for (i, p) in path.iter().enumerate() {
        if i + 1 == path.len() {
            cur[*p] = json!(replicas);
        } else {
            if !cur.get(*p).is_some_and(Value::is_object) {
                cur[*p] = json!({});
            }
            cur = &mut cur[*p];
        }
    }
    if let Some(rv) = scale["metadata"]["resourceVersion"]
        .as_str()
        .filter(|s| !s.is_empty())
    {
        out["metadata"]["resourceVersion"] = json!(rv);
    }
    Ok(out)
}
