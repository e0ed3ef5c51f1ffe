//! APIService manifests: what a parent cluster needs to send the group-versions of this
//! toolchain's custom definitions to a server built from them (running as an aggregated
//! API server behind a kube-apiserver or another instance of this server).

use std::collections::BTreeSet;

use serde_json::{json, Value};

use crate::model::ResourceDef;

/// Where the parent reaches the aggregated server, and how it trusts it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    pub namespace: String,
    pub name: String,
    pub port: u16,
    /// Base64 of the PEM CA that signed the server's certificate for
    /// `<name>.<namespace>.svc`; `None`: `insecureSkipTLSVerify`.
    pub ca_bundle: Option<String>,
}

/// One `apiregistration.k8s.io/v1` APIService per group-version of the custom
/// definitions (built-in kinds are the parent's own), sorted by name, with the
/// priorities sample-apiserver's manifests use.
pub fn manifests(defs: &[ResourceDef], target: &Target) -> Vec<Value> {
    let group_versions: BTreeSet<(&str, &str)> = defs
        .iter()
        .filter(|d| !d.builtin)
        .map(|d| (d.group.as_str(), d.version.as_str()))
        .collect();
    let mut out: Vec<Value> = group_versions
        .into_iter()
        .map(|(group, version)| {
            let mut spec = json!({
                "group": group,
                "version": version,
                "service": { "namespace": target.namespace, "name": target.name, "port": target.port },
                "groupPriorityMinimum": 1000,
                "versionPriority": 15,
            });
            match &target.ca_bundle {
                Some(ca) => spec["caBundle"] = json!(ca),
                None => spec["insecureSkipTLSVerify"] = json!(true),
            }
            json!({
                "apiVersion": "apiregistration.k8s.io/v1",
                "kind": "APIService",
                "metadata": { "name": format!("{version}.{group}") },
                "spec": spec,
            })
        })
        .collect();
    out.sort_by(|a, b| {
        a["metadata"]["name"]
            .as_str()
            .cmp(&b["metadata"]["name"].as_str())
    });
    out
}
