//! PersistentVolume: upstream's defaults (reclaim policy `Retain`, volume mode
//! `Filesystem`, phase `Pending`) and the spec rules a user meets: access modes and a
//! storage capacity are required, exactly one volume source, known policies and modes;
//! the source and volume mode never change after creation.

use serde_json::{json, Map, Value};

use super::pod_spec::{describe_diff, semantic};
use super::strategy::Strategy;
use crate::api::meta::dns1123_subdomain_errors;
use crate::api::quantity::Quantity;
use crate::api::StatusCause;

/// The volume sources of a PersistentVolume, in the order upstream checks them.
const SOURCES: &[&str] = &[
    "hostPath",
    "gcePersistentDisk",
    "awsElasticBlockStore",
    "glusterfs",
    "flocker",
    "nfs",
    "rbd",
    "quobyte",
    "cephfs",
    "iscsi",
    "cinder",
    "fc",
    "flexVolume",
    "azureFile",
    "vsphereVolume",
    "photonPersistentDisk",
    "portworxVolume",
    "azureDisk",
    "scaleIO",
    "local",
    "storageos",
    "csi",
];

/// Sorted, as upstream lists them.
const ACCESS_MODES: &[&str] = &[
    "ReadOnlyMany",
    "ReadWriteMany",
    "ReadWriteOnce",
    "ReadWriteOncePod",
];
const RECLAIM_POLICIES: &[&str] = &["Delete", "Recycle", "Retain"];
const VOLUME_MODES: &[&str] = &["Block", "Filesystem"];

fn quoted(s: &str) -> String {
    Value::String(s.to_string()).to_string()
}

/// The required string fields of the common sources.
fn required_fields(source: &str) -> &'static [&'static str] {
    match source {
        "hostPath" | "local" => &["path"],
        "nfs" => &["server", "path"],
        "csi" => &["driver", "volumeHandle"],
        _ => &[],
    }
}

/// Upstream's `ValidatePersistentVolumeSpec` for a stored volume, at `spec`.
fn validate_spec(spec: &Value) -> Vec<StatusCause> {
    let mut causes = Vec::new();
    let modes: Vec<&str> = spec["accessModes"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    if modes.is_empty() {
        causes.push(StatusCause::required("spec.accessModes", ""));
    }
    let capacity = spec["capacity"].as_object();
    if capacity.is_none_or(Map::is_empty) {
        causes.push(StatusCause::required("spec.capacity", ""));
    }
    let names: Vec<&String> = capacity.into_iter().flat_map(Map::keys).collect();
    if names.len() != 1 || names[0] != "storage" {
        // Upstream shows the Go map here; the names are what a user needs.
        let shown: Vec<String> = names.iter().map(|n| format!("{n:?}")).collect();
        causes.push(StatusCause {
            reason: "FieldValueNotSupported".into(),
            message: format!(
                "Unsupported value: core.ResourceList{{{}}}: supported values: \"storage\"",
                shown.join(", ")
            ),
            field: "spec.capacity".into(),
        });
    }
    for (name, v) in capacity.into_iter().flatten() {
        let text = match v {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        if Quantity::parse(&text).is_ok_and(|q| q <= Quantity::parse("0").expect("zero")) {
            causes.push(StatusCause::invalid(
                &format!("spec.capacity[{name}]"),
                &text,
                "must be greater than zero",
            ));
        }
    }
    for mode in &modes {
        if !ACCESS_MODES.contains(mode) {
            causes.push(StatusCause::unsupported(
                "spec.accessModes",
                &quoted(mode),
                ACCESS_MODES,
            ));
        }
    }
    if modes.contains(&"ReadWriteOncePod") && modes.len() > 1 {
        causes.push(StatusCause::forbidden(
            "spec.accessModes",
            "may not use ReadWriteOncePod with other access modes",
        ));
    }
    if let Some(class) = spec["storageClassName"].as_str().filter(|c| !c.is_empty()) {
        for e in dns1123_subdomain_errors(class) {
            causes.push(StatusCause::invalid("spec.storageClassName", class, &e));
        }
    }
    if let Some(policy) = spec["persistentVolumeReclaimPolicy"]
        .as_str()
        .filter(|p| !p.is_empty())
    {
        if !RECLAIM_POLICIES.contains(&policy) {
            causes.push(StatusCause::unsupported(
                "spec.persistentVolumeReclaimPolicy",
                &quoted(policy),
                RECLAIM_POLICIES,
            ));
        }
    }
    if let Some(mode) = spec["volumeMode"].as_str() {
        if !VOLUME_MODES.contains(&mode) {
            causes.push(StatusCause::unsupported(
                "spec.volumeMode",
                &quoted(mode),
                VOLUME_MODES,
            ));
        }
    }
    let mut found = 0;
    for key in SOURCES {
        let source = &spec[*key];
        if source.is_null() {
            continue;
        }
        if found > 0 {
            causes.push(StatusCause::forbidden(
                &format!("spec.{key}"),
                "may not specify more than 1 volume type",
            ));
            continue;
        }
        found += 1;
        for field in required_fields(key) {
            if source[*field].as_str().is_none_or(str::is_empty) {
                causes.push(StatusCause::required(&format!("spec.{key}.{field}"), ""));
            }
        }
        if *key == "local" && spec["nodeAffinity"].is_null() {
            causes.push(StatusCause::required(
                "spec.nodeAffinity",
                "Local volume requires node affinity",
            ));
        }
    }
    if found == 0 {
        causes.push(StatusCause::required("spec", "must specify a volume type"));
    }
    causes
}

/// The volume source of a spec: its source fields alone.
fn source_of(spec: &Value) -> Value {
    let fields: Map<String, Value> = SOURCES
        .iter()
        .filter_map(|k| spec.get(*k).map(|v| (k.to_string(), v.clone())))
        .collect();
    semantic(&Value::Object(fields))
}

/// Upstream's PersistentVolume strategy.
pub struct PersistentVolumeStrategy;
impl Strategy for PersistentVolumeStrategy {
    fn prepare_for_create(&self, obj: &mut Value) {
        let Some(o) = obj.as_object_mut() else {
            return;
        };
        if let Some(spec) = o.get_mut("spec").and_then(Value::as_object_mut) {
            for (key, value) in [
                ("persistentVolumeReclaimPolicy", "Retain"),
                ("volumeMode", "Filesystem"),
            ] {
                if spec.get(key).is_none_or(|v| v.is_null() || v == "") {
                    spec.insert(key.into(), json!(value));
                }
            }
        }
        let status = o.entry("status").or_insert_with(|| json!({}));
        if let Some(status) = status.as_object_mut() {
            if status.get("phase").is_none_or(|v| v.is_null() || v == "") {
                status.insert("phase".into(), json!("Pending"));
            }
        }
    }

    fn prepare_for_update(&self, new: &mut Value, _old: &Value) {
        if let Some(spec) = new.get_mut("spec").and_then(Value::as_object_mut) {
            for (key, value) in [
                ("persistentVolumeReclaimPolicy", "Retain"),
                ("volumeMode", "Filesystem"),
            ] {
                if spec.get(key).is_none_or(|v| v.is_null() || v == "") {
                    spec.insert(key.into(), json!(value));
                }
            }
        }
    }

    fn validate(&self, obj: &Value) -> Vec<StatusCause> {
        validate_spec(&obj["spec"])
    }

    fn validate_update(&self, new: &Value, old: &Value) -> Vec<StatusCause> {
        let mut causes = Vec::new();
        let (now, before) = (source_of(&new["spec"]), source_of(&old["spec"]));
        if now != before {
            let mut diff = Vec::new();
            describe_diff("spec", &before, &now, &mut diff);
            causes.push(StatusCause::forbidden(
                "spec.persistentvolumesource",
                &format!(
                    "spec.persistentvolumesource is immutable after creation\n{}",
                    diff.join("\n")
                ),
            ));
        }
        let mode = &new["spec"]["volumeMode"];
        if *mode != old["spec"]["volumeMode"] {
            // Upstream names the field without its `spec.` parent.
            causes.push(StatusCause::invalid_value(
                "volumeMode",
                mode,
                "field is immutable",
            ));
        }
        causes
    }

    fn tracks_generation(&self) -> bool {
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_volume_needs_modes_capacity_and_one_source() {
        let causes = validate_spec(&json!({"accessModes": ["ReadWriteSometimes"],
            "hostPath": {"path": "/d"}, "nfs": {"server": "s", "path": "/p"}}));
        let got: Vec<(String, String)> = causes.into_iter().map(|c| (c.field, c.message)).collect();
        assert_eq!(
            got,
            vec![
                ("spec.capacity".into(), "Required value".into()),
                ("spec.capacity".into(), "Unsupported value: core.ResourceList{}: supported values: \"storage\"".into()),
                ("spec.accessModes".into(), "Unsupported value: \"ReadWriteSometimes\": supported values: \"ReadOnlyMany\", \"ReadWriteMany\", \"ReadWriteOnce\", \"ReadWriteOncePod\"".into()),
                ("spec.nfs".into(), "Forbidden: may not specify more than 1 volume type".into()),
            ]
        );
        let none = validate_spec(
            &json!({"accessModes": ["ReadWriteOnce"], "capacity": {"storage": "1Gi"}}),
        );
        assert_eq!(none[0].field, "spec");
        assert_eq!(
            none[0].message,
            "Required value: must specify a volume type"
        );
    }

    #[test]
    fn the_source_is_fixed() {
        let old = json!({"spec": {"hostPath": {"path": "/a"}, "volumeMode": "Filesystem"}});
        let new = json!({"spec": {"hostPath": {"path": "/b"}, "volumeMode": "Filesystem"}});
        let causes = PersistentVolumeStrategy.validate_update(&new, &old);
        assert_eq!(causes[0].field, "spec.persistentvolumesource");
        assert!(causes[0].message.contains("+ spec.hostPath.path: \"/b\""));
    }
}
