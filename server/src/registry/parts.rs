//! Subresources that answer the whole object and write one part of it
//! (`subresources.parts` in a definition): `pods/ephemeralcontainers`, `pods/resize`,
//! `namespaces/finalize` and `certificatesigningrequests/approval`.
//!
//! As kube-apiserver's per-subresource strategies: a write through one keeps the stored
//! object and takes from the body only the part the subresource owns ([`Part::merge`]),
//! then checks that change ([`Part::validate`]). Metadata, spec and status outside the
//! part stay as stored, whatever the body says.

use serde_json::{json, Map, Value};

use super::certificates::{csr_conditions_kept, stamp_conditions, validate_csr_conditions};
use super::workloads::{default_container, qos_class};
use crate::api::meta::qualified_name_errors;
use crate::api::StatusCause;

/// The hook of a part subresource (codegen's `PART_HOOKS`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Part {
    /// `pods/ephemeralcontainers`: `spec.ephemeralContainers`, added to, never changed.
    EphemeralContainers,
    /// `pods/resize`: the containers' `resources` and `resizePolicy`.
    PodResize,
    /// `namespaces/finalize`: `spec.finalizers`.
    NamespaceFinalize,
    /// `certificatesigningrequests/approval`: `status.conditions`, of which the
    /// Approved and Denied ones.
    CertificateApproval,
    /// A pod's `spec.nodeName` and annotations, as the `binding` hook writes them
    /// (upstream's binding skips pod update validation too). No definition declares
    /// it: it is the hook's, not a subresource of its own.
    PodBinding,
}

impl Part {
    /// The hook a definition names; an error naming it when the server has none.
    pub fn named(name: &str) -> Result<Part, String> {
        Ok(match name {
            "EphemeralContainers" => Part::EphemeralContainers,
            "PodResize" => Part::PodResize,
            "NamespaceFinalize" => Part::NamespaceFinalize,
            "CertificateApproval" => Part::CertificateApproval,
            other => return Err(format!("the server has no part hook named {other:?}")),
        })
    }

    /// The object a write through the subresource stores: `old` with this part taken
    /// from `new`.
    pub fn merge(self, new: &Value, old: &Value) -> Value {
        let mut merged = old.clone();
        match self {
            Part::EphemeralContainers => {
                let spec = object_at(&mut merged, "spec");
                match new["spec"].get("ephemeralContainers") {
                    Some(Value::Array(list)) => {
                        let mut list = list.clone();
                        for c in list.iter_mut().filter_map(Value::as_object_mut) {
                            default_container(c);
                        }
                        spec.insert("ephemeralContainers".into(), Value::Array(list));
                    }
                    _ => {
                        spec.remove("ephemeralContainers");
                    }
                }
            }
            Part::PodResize => {
                for list in ["containers", "initContainers"] {
                    let Some(stored) = merged["spec"].get_mut(list).and_then(Value::as_array_mut)
                    else {
                        continue;
                    };
                    // Matched by name: the stored order stays whatever the body's.
                    for c in stored.iter_mut().filter_map(Value::as_object_mut) {
                        let name = c.get("name").cloned().unwrap_or(Value::Null);
                        let Some(given) = new["spec"][list]
                            .as_array()
                            .into_iter()
                            .flatten()
                            .find(|n| n["name"] == name)
                        else {
                            continue;
                        };
                        for field in ["resources", "resizePolicy"] {
                            match given.get(field) {
                                Some(v) if !v.is_null() => {
                                    c.insert(field.into(), v.clone());
                                }
                                _ => {
                                    c.remove(field);
                                }
                            }
                        }
                    }
                }
            }
            Part::NamespaceFinalize => {
                let spec = object_at(&mut merged, "spec");
                match new["spec"].get("finalizers") {
                    Some(f @ Value::Array(_)) => spec.insert("finalizers".into(), f.clone()),
                    _ => spec.remove("finalizers"),
                };
            }
            Part::PodBinding => {
                object_at(&mut merged, "spec")
                    .insert("nodeName".into(), new["spec"]["nodeName"].clone());
                match new["metadata"].get("annotations") {
                    Some(a) => {
                        object_at(&mut merged, "metadata").insert("annotations".into(), a.clone())
                    }
                    None => object_at(&mut merged, "metadata").remove("annotations"),
                };
            }
            Part::CertificateApproval => {
                let status = object_at(&mut merged, "status");
                match new["status"].get("conditions") {
                    Some(c @ Value::Array(_)) => status.insert("conditions".into(), c.clone()),
                    _ => status.remove("conditions"),
                };
                stamp_conditions(&mut merged, old);
            }
        }
        merged
    }

    /// What a server-side apply through the subresource applies: the intent's part
    /// alone (a resize: each container's name, resources and resize policy), under its
    /// type and name, so the manager owns no field outside the part.
    pub fn scope_intent(self, intent: &Value) -> Value {
        let mut scoped = json!({
            "apiVersion": intent["apiVersion"],
            "kind": intent["kind"],
            "metadata": {},
        });
        for key in ["name", "namespace"] {
            if let Some(v) = intent["metadata"].get(key) {
                scoped["metadata"][key] = v.clone();
            }
        }
        let mut copy = |outer: &str, inner: &str, value: Value| {
            if !value.is_null() {
                object_at(&mut scoped, outer).insert(inner.into(), value);
            }
        };
        match self {
            Part::EphemeralContainers => copy(
                "spec",
                "ephemeralContainers",
                intent["spec"]["ephemeralContainers"].clone(),
            ),
            Part::PodResize => {
                for list in ["containers", "initContainers"] {
                    let Some(items) = intent["spec"][list].as_array() else {
                        continue;
                    };
                    let items: Vec<Value> = items
                        .iter()
                        .map(|c| {
                            let mut kept = Map::new();
                            for field in ["name", "resources", "resizePolicy"] {
                                if let Some(v) = c.get(field) {
                                    kept.insert(field.into(), v.clone());
                                }
                            }
                            Value::Object(kept)
                        })
                        .collect();
                    copy("spec", list, Value::Array(items));
                }
            }
            Part::NamespaceFinalize => {
                copy("spec", "finalizers", intent["spec"]["finalizers"].clone())
            }
            Part::CertificateApproval => copy(
                "status",
                "conditions",
                intent["status"]["conditions"].clone(),
            ),
            Part::PodBinding => {}
        }
        scoped
    }

    /// Upstream's checks of a write through the subresource (`new` is [`Part::merge`]'s
    /// object).
    pub fn validate(self, new: &Value, old: &Value) -> Vec<StatusCause> {
        match self {
            Part::EphemeralContainers => validate_ephemeral_containers(new, old),
            Part::PodResize => validate_resize(new, old),
            Part::NamespaceFinalize => validate_finalizer_names(new),
            // The hook checked the node and that the pod was unassigned.
            Part::PodBinding => Vec::new(),
            Part::CertificateApproval => {
                let mut causes = validate_csr_conditions(new, old);
                causes.extend(csr_conditions_kept(
                    new,
                    old,
                    &["Approved", "Denied", "Failed"],
                ));
                causes
            }
        }
    }
}

/// The object at `key` of `obj`, made one when it is not.
fn object_at<'a>(obj: &'a mut Value, key: &str) -> &'a mut Map<String, Value> {
    if !obj[key].is_object() {
        obj[key] = json!({});
    }
    match obj[key].as_object_mut() {
        Some(m) => m,
        None => unreachable!("just made an object"),
    }
}

/// Whether a field holds something (Go's zero values, `{}` and `[]` count as unset).
fn is_set(v: Option<&Value>) -> bool {
    match v {
        None | Some(Value::Null) | Some(Value::Bool(false)) => false,
        Some(Value::Object(m)) => !m.is_empty(),
        Some(Value::Array(a)) => !a.is_empty(),
        Some(Value::String(s)) => !s.is_empty(),
        Some(_) => true,
    }
}

/// The fields an ephemeral container may set, as upstream allows them (probes, ports,
/// lifecycle and resources make no sense for a container added to a running pod).
const EPHEMERAL_CONTAINER_FIELDS: &[&str] = &[
    "name",
    "image",
    "command",
    "args",
    "workingDir",
    "env",
    "envFrom",
    "volumeMounts",
    "volumeDevices",
    "imagePullPolicy",
    "securityContext",
    "terminationMessagePath",
    "terminationMessagePolicy",
    "stdin",
    "stdinOnce",
    "tty",
    "targetContainerName",
];

fn names_of<'a>(pod: &'a Value, list: &str) -> impl Iterator<Item = &'a str> {
    pod["spec"][list]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|c| c["name"].as_str())
}

fn validate_ephemeral_containers(new: &Value, old: &Value) -> Vec<StatusCause> {
    let path = "spec.ephemeralContainers";
    if old["metadata"]["annotations"]
        .get("kubernetes.io/config.mirror")
        .is_some()
    {
        return vec![StatusCause::forbidden(
            "",
            "static pods do not support ephemeral containers",
        )];
    }
    let mut causes = Vec::new();
    let empty = Vec::new();
    let list = new["spec"]["ephemeralContainers"]
        .as_array()
        .unwrap_or(&empty);
    let mut seen: Vec<&str> = names_of(new, "containers")
        .chain(names_of(new, "initContainers"))
        .collect();
    let regular: Vec<&str> = names_of(new, "containers")
        .chain(names_of(new, "initContainers"))
        .collect();
    for (i, c) in list.iter().enumerate() {
        let at = |f: &str| format!("{path}[{i}].{f}");
        let Some(fields) = c.as_object() else {
            causes.push(StatusCause::invalid_value(
                &format!("{path}[{i}]"),
                c,
                "must be an object",
            ));
            continue;
        };
        match c["name"].as_str().filter(|n| !n.is_empty()) {
            None => causes.push(StatusCause::required(&at("name"), "")),
            Some(name) => {
                if !codegen::names::is_dns_label(name) {
                    causes.push(StatusCause::invalid(&at("name"), name, "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"));
                } else if seen.contains(&name) {
                    causes.push(StatusCause::duplicate(&at("name"), &format!("{name:?}")));
                }
                seen.push(name);
            }
        }
        if c["image"].as_str().is_none_or(|s| s.trim().is_empty()) {
            causes.push(StatusCause::required(&at("image"), ""));
        }
        for (field, value) in fields {
            if !EPHEMERAL_CONTAINER_FIELDS.contains(&field.as_str()) && is_set(Some(value)) {
                causes.push(StatusCause::forbidden(
                    &at(field),
                    "cannot be set for an Ephemeral Container",
                ));
            }
        }
        if let Some(target) = c["targetContainerName"].as_str().filter(|t| !t.is_empty()) {
            if !regular.contains(&target) {
                causes.push(StatusCause::not_found(
                    &at("targetContainerName"),
                    &format!("{target:?}"),
                ));
            }
        }
    }
    // Those already there stay as they are (a patch may reorder them: matched by name).
    for existing in old["spec"]["ephemeralContainers"]
        .as_array()
        .into_iter()
        .flatten()
    {
        let name = existing["name"].as_str().unwrap_or_default();
        match list.iter().find(|c| c["name"].as_str() == Some(name)) {
            None => causes.push(StatusCause::forbidden(
                path,
                &format!("existing ephemeral containers {name:?} may not be removed"),
            )),
            Some(now) if now != existing => causes.push(StatusCause::forbidden(
                &format!("{path}[{name}]"),
                &format!("existing ephemeral containers {name:?} may not be changed"),
            )),
            Some(_) => {}
        }
    }
    causes
}

/// The names of a resource list whose entries `new` dropped.
fn removed(new: &Value, old: &Value) -> bool {
    old.as_object()
        .into_iter()
        .flatten()
        .any(|(k, _)| new.get(k).is_none())
}

fn validate_resize(new: &Value, old: &Value) -> Vec<StatusCause> {
    let mut causes = Vec::new();
    if old["spec"]["os"]["name"] == json!("windows") {
        causes.push(StatusCause::forbidden(
            "spec",
            "windows pods cannot be resized",
        ));
    }
    if qos_class(old) != qos_class(new) {
        // Shown as upstream shows it: the class the pod has (its status).
        let shown = old["status"]["qosClass"]
            .as_str()
            .unwrap_or_else(|| qos_class(old));
        causes.push(StatusCause::invalid(
            "spec",
            shown,
            "Pod QOS Class may not change as a result of resizing",
        ));
    }
    let mut other_changed = false;
    for list in ["containers", "initContainers"] {
        let olds = old["spec"][list].as_array().cloned().unwrap_or_default();
        let news = new["spec"][list].as_array().cloned().unwrap_or_default();
        for (i, (n, o)) in news.iter().zip(&olds).enumerate() {
            for kind in ["requests", "limits"] {
                let (nr, or) = (&n["resources"][kind], &o["resources"][kind]);
                if removed(nr, or) {
                    causes.push(StatusCause::forbidden(
                        &format!("spec.{list}[{i}].resources.{kind}"),
                        &format!(
                            "resource {} cannot be removed",
                            if kind == "requests" {
                                "requests"
                            } else {
                                "limits"
                            }
                        ),
                    ));
                }
                let names: std::collections::BTreeSet<&String> = nr
                    .as_object()
                    .into_iter()
                    .flatten()
                    .chain(or.as_object().into_iter().flatten())
                    .map(|(k, _)| k)
                    .collect();
                if names
                    .into_iter()
                    .filter(|k| *k != "cpu" && *k != "memory")
                    .any(|k| nr.get(k) != or.get(k))
                {
                    other_changed = true;
                }
            }
            // Init containers other than sidecars keep their resources.
            if list == "initContainers"
                && n["restartPolicy"] != json!("Always")
                && n["resources"] != o["resources"]
            {
                other_changed = true;
            }
        }
    }
    if other_changed {
        causes.push(StatusCause::forbidden(
            "spec",
            "only cpu and memory resources are mutable",
        ));
    }
    causes
}

/// Finalizer names: qualified names, and a name without a prefix must be a standard one
/// (`kubernetes`), as upstream checks them through `finalize`.
fn validate_finalizer_names(ns: &Value) -> Vec<StatusCause> {
    let mut causes = Vec::new();
    for (i, f) in ns["spec"]["finalizers"]
        .as_array()
        .into_iter()
        .flatten()
        .enumerate()
    {
        let field = format!("spec.finalizers[{i}]");
        let Some(name) = f.as_str() else {
            causes.push(StatusCause::invalid_value(&field, f, "must be a string"));
            continue;
        };
        let errors = qualified_name_errors(name);
        if !errors.is_empty() {
            causes.extend(errors.iter().map(|e| StatusCause::invalid(&field, name, e)));
        } else if !name.contains('/')
            && !["kubernetes", "orphan", "foregroundDeletion"].contains(&name)
        {
            causes.push(StatusCause::invalid(
                &field,
                name,
                "name is neither a standard finalizer name nor is it fully qualified",
            ));
        }
    }
    causes
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_part_hook_codegen_accepts_exists() {
        for name in codegen::model::PART_HOOKS {
            assert!(Part::named(name).is_ok(), "{name}");
        }
        assert!(Part::named("Nope").is_err());
    }

    fn pod(ephemeral: Value) -> Value {
        json!({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "app", "image": "nginx"}], "ephemeralContainers": ephemeral}})
    }

    #[test]
    fn ephemeral_containers_are_added_never_changed_or_removed() {
        let old = pod(json!([{"name": "debugger", "image": "busybox"}]));
        let body = pod(json!([
            {"name": "debugger", "image": "busybox"},
            {"name": "second", "image": "busybox", "targetContainerName": "app"}
        ]));
        let merged =
            Part::EphemeralContainers.merge(&body, &Part::EphemeralContainers.merge(&old, &old));
        let stored = Part::EphemeralContainers.merge(&old, &old);
        assert!(Part::EphemeralContainers
            .validate(&merged, &stored)
            .is_empty());
        assert_eq!(
            merged["spec"]["ephemeralContainers"][1]["terminationMessagePolicy"],
            "File"
        );

        let gone = Part::EphemeralContainers.merge(&pod(json!([])), &stored);
        let causes = Part::EphemeralContainers.validate(&gone, &stored);
        assert_eq!(
            causes[0].message,
            "Forbidden: existing ephemeral containers \"debugger\" may not be removed"
        );

        let changed = Part::EphemeralContainers.merge(
            &pod(json!([{"name": "debugger", "image": "alpine"}])),
            &stored,
        );
        let causes = Part::EphemeralContainers.validate(&changed, &stored);
        assert_eq!(causes[0].field, "spec.ephemeralContainers[debugger]");

        let bad = Part::EphemeralContainers.merge(
            &pod(json!([{"name": "app", "image": "busybox", "ports": [{"containerPort": 80}], "targetContainerName": "nope"}])),
            &pod(json!(null)),
        );
        let fields: Vec<String> = Part::EphemeralContainers
            .validate(&bad, &pod(json!(null)))
            .into_iter()
            .map(|c| c.field)
            .collect();
        assert_eq!(
            fields,
            [
                "spec.ephemeralContainers[0].name",
                "spec.ephemeralContainers[0].ports",
                "spec.ephemeralContainers[0].targetContainerName"
            ]
        );
    }

    #[test]
    fn a_resize_changes_resources_alone_and_keeps_the_qos_class() {
        let old = json!({"spec": {"containers": [{"name": "app", "image": "nginx", "resources": {"requests": {"cpu": "100m"}}}]}});
        let body = json!({"spec": {"containers": [{"name": "app", "image": "other", "resources": {"requests": {"cpu": "200m"}}}]}});
        let merged = Part::PodResize.merge(&body, &old);
        assert_eq!(merged["spec"]["containers"][0]["image"], "nginx");
        assert_eq!(
            merged["spec"]["containers"][0]["resources"]["requests"]["cpu"],
            "200m"
        );
        assert!(Part::PodResize.validate(&merged, &old).is_empty());

        let guaranteed = json!({"spec": {"containers": [{"name": "app", "resources": {"requests": {"cpu": "200m"}, "limits": {"cpu": "200m", "memory": "1Gi"}}}]}});
        let causes = Part::PodResize.validate(&guaranteed, &old);
        assert_eq!(
            causes[0].message,
            "Invalid value: \"Burstable\": Pod QOS Class may not change as a result of resizing"
        );

        let dropped = json!({"spec": {"containers": [{"name": "app", "resources": {"requests": {"cpu": "100m", "nvidia.com/gpu": "1"}}}]}});
        let causes = Part::PodResize.validate(&dropped, &old);
        assert_eq!(
            causes[0].message,
            "Forbidden: only cpu and memory resources are mutable"
        );
        assert_eq!(
            qos_class(&json!({"spec": {"containers": [{"name": "a"}]}})),
            "BestEffort"
        );
    }

    #[test]
    fn finalize_takes_spec_finalizers_alone() {
        let old = json!({"metadata": {"labels": {"a": "b"}}, "spec": {"finalizers": ["kubernetes"]}, "status": {"phase": "Terminating"}});
        let body = json!({"metadata": {"labels": {"a": "c"}}, "spec": {"finalizers": []}, "status": {"phase": "Active"}});
        let merged = Part::NamespaceFinalize.merge(&body, &old);
        assert_eq!(
            merged,
            json!({"metadata": {"labels": {"a": "b"}}, "spec": {"finalizers": []}, "status": {"phase": "Terminating"}})
        );
        let bad = json!({"spec": {"finalizers": ["example.com/", "plain"]}});
        assert_eq!(Part::NamespaceFinalize.validate(&bad, &old).len(), 2);
    }

    #[test]
    fn approval_changes_conditions_alone_never_both_and_never_removes() {
        let old = json!({"spec": {"request": "x"}, "status": {}});
        let approve = json!({"spec": {"request": "y"}, "status": {"certificate": "Zm9v", "conditions": [{"type": "Approved", "status": "True", "reason": "KubectlApprove"}]}});
        let merged = Part::CertificateApproval.merge(&approve, &old);
        assert_eq!(merged["spec"]["request"], "x");
        assert!(merged["status"].get("certificate").is_none());
        assert!(merged["status"]["conditions"][0]["lastUpdateTime"].is_string());
        assert!(Part::CertificateApproval.validate(&merged, &old).is_empty());

        let both = json!({"status": {"conditions": [{"type": "Approved", "status": "True"}, {"type": "Denied", "status": "True"}]}});
        let merged_both = Part::CertificateApproval.merge(&both, &old);
        let causes = Part::CertificateApproval.validate(&merged_both, &old);
        assert_eq!(
            causes[0].message,
            "Invalid value: \"Denied\": Approved and Denied conditions are mutually exclusive"
        );

        let removed =
            Part::CertificateApproval.merge(&json!({"status": {"conditions": []}}), &merged);
        let causes = Part::CertificateApproval.validate(&removed, &merged);
        assert_eq!(
            causes[0].message,
            "Forbidden: updates may not remove a condition of type \"Approved\""
        );
        assert_eq!(
            super::super::certificates::csr_approval_frozen(&merged, &old)[0].message,
            "Forbidden: updates may not add a condition of type \"Approved\""
        );
    }
}
