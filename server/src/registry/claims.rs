//! PersistentVolumeClaim: what an update may change, as upstream's claim validation
//! rules it. A claim's spec is fixed at creation (quota and limit ranges were checked
//! against it) except what binding and expansion need: `volumeName` once, a
//! `storageClassName` where there was none, and for a bound claim its storage request
//! and `volumeAttributesClassName`.

use serde_json::Value;

use super::pod_spec::{describe_diff, semantic};
use super::strategy::Strategy;
use crate::api::quantity::Quantity;
use crate::api::StatusCause;

/// The storage request or capacity at `key` (`requests`, `capacity`) of `map`.
fn storage(map: &Value) -> Option<Quantity> {
    match &map["storage"] {
        Value::String(s) => Quantity::parse(s).ok(),
        Value::Number(n) => Quantity::parse(&n.to_string()).ok(),
        _ => None,
    }
}

/// Upstream's `ValidatePersistentVolumeClaimUpdate`, for the spec.
pub fn validate_claim_update(new: &Value, old: &Value) -> Vec<StatusCause> {
    let mut causes = Vec::new();
    let (mut new_spec, mut old_spec) = (new["spec"].clone(), old["spec"].clone());
    // Binding sets the volume's name once.
    if old_spec["volumeName"].as_str().is_none_or(str::is_empty) {
        old_spec["volumeName"] = new_spec["volumeName"].clone();
    }
    // A class may be given to a claim that had none (and whose beta annotation, if
    // any, names it).
    let annotation =
        old["metadata"]["annotations"]["volume.beta.kubernetes.io/storage-class"].as_str();
    if old_spec["storageClassName"].is_null()
        && new_spec["storageClassName"]
            .as_str()
            .is_some_and(|c| annotation.is_none_or(|a| a == c))
    {
        old_spec["storageClassName"] = new_spec["storageClassName"].clone();
    }
    // A bound claim may be expanded and change its attributes class.
    if new["status"]["phase"] == "Bound" {
        if new_spec["resources"]["requests"].is_object() {
            new_spec["resources"]["requests"]["storage"] =
                old_spec["resources"]["requests"]["storage"].clone();
        }
        if !new_spec["volumeAttributesClassName"].is_null() {
            new_spec["volumeAttributesClassName"] = old_spec["volumeAttributesClassName"].clone();
        }
    }
    let (now, before) = (semantic(&new_spec), semantic(&old_spec));
    if now != before {
        let mut diff = Vec::new();
        describe_diff("spec", &before, &now, &mut diff);
        causes.push(StatusCause::forbidden(
            "spec",
            &format!(
                "spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims\n{}",
                diff.join("\n")
            ),
        ));
    }
    // Shrinking is allowed back towards what the volume has (recovery from a failed
    // expansion), never to or below it.
    let new_size = storage(&new["spec"]["resources"]["requests"]);
    let old_size = storage(&old["spec"]["resources"]["requests"]);
    if let (Some(n), Some(o)) = (new_size, old_size) {
        let capacity = storage(&old["status"]["capacity"]).unwrap_or(Quantity::ZERO);
        if n < o && n <= capacity {
            causes.push(StatusCause::forbidden(
                "spec.resources.requests.storage",
                "field can not be less than status.capacity",
            ));
        }
    }
    if new["spec"]["volumeMode"] != old["spec"]["volumeMode"] {
        causes.push(StatusCause::invalid_value(
            "volumeMode",
            &new["spec"]["volumeMode"],
            "field is immutable",
        ));
    }
    let (class, old_class) = (
        &new["spec"]["volumeAttributesClassName"],
        &old["spec"]["volumeAttributesClassName"],
    );
    if class != old_class && !old_class.is_null() {
        if class.is_null() {
            causes.push(StatusCause::forbidden(
                "spec.volumeAttributesClassName",
                "update from non-nil value to nil is forbidden",
            ));
        } else if class == "" {
            causes.push(StatusCause::forbidden(
                "spec.volumeAttributesClassName",
                "update from non-nil value to an empty string is forbidden",
            ));
        }
    }
    causes
}

/// PersistentVolumeClaim: upstream's update rules.
pub struct PersistentVolumeClaimStrategy;
impl Strategy for PersistentVolumeClaimStrategy {
    fn validate_update(&self, new: &Value, old: &Value) -> Vec<StatusCause> {
        validate_claim_update(new, old)
    }

    fn tracks_generation(&self) -> bool {
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn claim(size: &str, phase: &str) -> Value {
        json!({"metadata": {}, "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": size}}},
               "status": {"phase": phase, "capacity": {"storage": "1Gi"}}})
    }

    #[test]
    fn bound_claims_expand_unbound_ones_do_not() {
        assert_eq!(
            validate_claim_update(&claim("2Gi", "Bound"), &claim("1Gi", "Bound")),
            vec![]
        );
        let causes = validate_claim_update(&claim("2Gi", "Pending"), &claim("1Gi", "Pending"));
        assert_eq!(causes[0].field, "spec");
        let causes = validate_claim_update(&claim("1Gi", "Bound"), &claim("2Gi", "Bound"));
        assert_eq!(causes[0].field, "spec.resources.requests.storage");
    }
}
