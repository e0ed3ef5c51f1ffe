//! Upstream's checks of a pod's volumes and of the containers' volume mounts
//! (`ValidateVolumes`, `validateVolumeSource`, `ValidateVolumeMounts`), in
//! kube-apiserver's words and field paths.

use std::collections::BTreeSet;

use serde_json::Value;

use super::pod_fields::{local_descending_path, no_backsteps};
use crate::api::meta::dns1123_label_errors;
use crate::api::StatusCause;

/// The volume sources in the order upstream checks them, with the field name its
/// "more than 1 volume type" cause names (upstream misspells two of them).
const VOLUME_SOURCES: &[(&str, &str)] = &[
    ("emptyDir", "emptyDir"),
    ("hostPath", "hostPath"),
    ("gitRepo", "gitRepo"),
    ("gcePersistentDisk", "gcePersistentDisk"),
    ("awsElasticBlockStore", "awsElasticBlockStore"),
    ("secret", "secret"),
    ("nfs", "nfs"),
    ("iscsi", "iscsi"),
    ("glusterfs", "glusterfs"),
    ("flocker", "flocker"),
    ("persistentVolumeClaim", "persistentVolumeClaim"),
    ("rbd", "rbd"),
    ("cinder", "cinder"),
    ("cephfs", "cephFS"),
    ("quobyte", "quobyte"),
    ("downwardAPI", "downwarAPI"),
    ("fc", "fc"),
    ("flexVolume", "flexVolume"),
    ("configMap", "configMap"),
    ("azureFile", "azureFile"),
    ("vsphereVolume", "vsphereVolume"),
    ("photonPersistentDisk", "photonPersistentDisk"),
    ("portworxVolume", "portworxVolume"),
    ("azureDisk", "azureDisk"),
    ("storageos", "storageos"),
    ("projected", "projected"),
    ("scaleIO", "scaleIO"),
    ("csi", "csi"),
    ("ephemeral", "ephemeral"),
    ("image", "image"),
];

const FILE_MODE: &str = "must be a number between 0 and 0777 (octal), both inclusive";

/// Upstream's `ValidateVolumes` of `spec.volumes` at `at`: the names of the volumes
/// without faults (what mounts may name), and the causes.
pub fn validate_volumes(volumes: &[Value], at: &str) -> (BTreeSet<String>, Vec<StatusCause>) {
    let mut names = BTreeSet::new();
    let mut causes = Vec::new();
    for (i, vol) in volumes.iter().enumerate() {
        let item = format!("{at}[{i}]");
        let name_at = format!("{item}.name");
        let name = vol["name"].as_str().unwrap_or_default();
        let mut faults = validate_source(vol, &item);
        if name.is_empty() {
            faults.push(StatusCause::required(&name_at, ""));
        } else {
            faults.extend(
                dns1123_label_errors(name)
                    .iter()
                    .map(|e| StatusCause::invalid(&name_at, name, e)),
            );
        }
        if names.contains(name) {
            faults.push(StatusCause::duplicate(&name_at, &format!("{name:?}")));
        }
        if faults.is_empty() {
            names.insert(name.to_string());
        }
        causes.extend(faults);
    }
    (names, causes)
}

/// Upstream's `validateVolumeSource`: exactly one source, and the common sources'
/// required fields.
fn validate_source(vol: &Value, at: &str) -> Vec<StatusCause> {
    let mut causes = Vec::new();
    let mut found = 0;
    for (key, shown) in VOLUME_SOURCES {
        let source = &vol[*key];
        if source.is_null() {
            continue;
        }
        if found > 0 {
            causes.push(StatusCause::forbidden(
                &format!("{at}.{shown}"),
                "may not specify more than 1 volume type",
            ));
            continue;
        }
        found += 1;
        let at = format!("{at}.{key}");
        let required = match *key {
            "secret" => Some("secretName"),
            "configMap" => Some("name"),
            "persistentVolumeClaim" => Some("claimName"),
            "hostPath" => Some("path"),
            _ => None,
        };
        if let Some(field) = required {
            match source[field].as_str().unwrap_or_default() {
                "" => causes.push(StatusCause::required(&format!("{at}.{field}"), "")),
                path if *key == "hostPath" => {
                    causes.extend(no_backsteps(path, &format!("{at}.path")))
                }
                _ => {}
            }
        }
        let mode = &source["defaultMode"];
        if mode.as_i64().is_some_and(|m| !(0..=0o777).contains(&m)) {
            causes.push(StatusCause::invalid_value(
                &format!("{at}.defaultMode"),
                mode,
                FILE_MODE,
            ));
        }
    }
    if found == 0 {
        causes.push(StatusCause::required(at, "must specify a volume type"));
    }
    causes
}

/// Upstream's `ValidateVolumeMounts` of one container: each names a volume of the pod,
/// mount paths are unique, and sub-paths stay inside the volume.
pub fn validate_volume_mounts(
    mounts: &[Value],
    volumes: &BTreeSet<String>,
    at: &str,
) -> Vec<StatusCause> {
    let mut causes = Vec::new();
    let mut paths = BTreeSet::new();
    for (i, m) in mounts.iter().enumerate() {
        let item = format!("{at}[{i}]");
        let name = m["name"].as_str().unwrap_or_default();
        if name.is_empty() {
            causes.push(StatusCause::required(&format!("{item}.name"), ""));
        }
        if !volumes.contains(name) {
            causes.push(StatusCause::not_found(
                &format!("{item}.name"),
                &format!("{name:?}"),
            ));
        }
        let path = m["mountPath"].as_str().unwrap_or_default();
        if path.is_empty() {
            causes.push(StatusCause::required(&format!("{item}.mountPath"), ""));
        }
        if !paths.insert(path) {
            causes.push(StatusCause::invalid(
                &format!("{item}.mountPath"),
                path,
                "must be unique",
            ));
        }
        // Upstream names the list, not the item, for the sub-path faults.
        let sub = m["subPath"].as_str().unwrap_or_default();
        if !sub.is_empty() {
            causes.extend(local_descending_path(sub, &format!("{at}.subPath")));
        }
        if let Some(expr) = m["subPathExpr"].as_str().filter(|e| !e.is_empty()) {
            if !sub.is_empty() {
                causes.push(StatusCause::invalid(
                    &format!("{item}.subPathExpr"),
                    expr,
                    "subPathExpr and subPath are mutually exclusive",
                ));
            }
            causes.extend(local_descending_path(expr, &format!("{at}.subPathExpr")));
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
    fn volumes_have_one_source_and_unique_names() {
        let vols = json!([
            {"name": "data", "emptyDir": {}},
            {"name": "data", "emptyDir": {}},
            {"name": "Two", "emptyDir": {}, "configMap": {"name": "c"}},
            {"name": "cm", "configMap": {}}
        ]);
        let (names, causes) = validate_volumes(vols.as_array().unwrap(), "v");
        assert_eq!(names, BTreeSet::from(["data".to_string()]));
        let got = pairs(causes);
        assert_eq!(
            got[0],
            ("v[1].name".into(), "Duplicate value: \"data\"".into())
        );
        assert_eq!(
            got[1],
            (
                "v[2].configMap".into(),
                "Forbidden: may not specify more than 1 volume type".into()
            )
        );
        assert!(got[2].1.contains("a lowercase RFC 1123 label"), "{got:?}");
        assert_eq!(
            got[3],
            ("v[3].configMap.name".into(), "Required value".into())
        );
    }

    #[test]
    fn mounts_name_volumes_and_stay_inside_them() {
        let names = BTreeSet::from(["data".to_string()]);
        let mounts = json!([
            {"name": "data", "mountPath": "/d", "subPath": "../x"},
            {"name": "nope", "mountPath": "/d", "subPath": "/abs"}
        ]);
        let got = pairs(validate_volume_mounts(
            mounts.as_array().unwrap(),
            &names,
            "m",
        ));
        assert_eq!(
            got,
            vec![
                (
                    "m.subPath".into(),
                    "Invalid value: \"../x\": must not contain '..'".into()
                ),
                ("m[1].name".into(), "Not found: \"nope\"".into()),
                (
                    "m[1].mountPath".into(),
                    "Invalid value: \"/d\": must be unique".into()
                ),
                (
                    "m.subPath".into(),
                    "Invalid value: \"/abs\": must be a relative path".into()
                ),
            ]
        );
    }
}
