//! Discovery documents (`/api`, `/apis`, `/api/v1`, `/apis/<g>`, `/apis/<g>/<v>`), built
//! from the live catalog so custom resources appear the moment they are registered.

use std::collections::BTreeMap;

use actix_web::{web, HttpRequest, HttpResponse};
use base64::Engine;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use crate::api::ApiError;
use crate::catalog::ApiResource;
use crate::endpoints::ApiState;

/// Mounts the discovery routes.
pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.route("/api", web::get().to(api_versions))
        .route("/api/", web::get().to(api_versions))
        .route("/apis", web::get().to(api_groups))
        .route("/apis/", web::get().to(api_groups))
        .route("/api/{version}", web::get().to(core_resources))
        .route("/apis/{group}", web::get().to(api_group))
        .route("/apis/{group}/{version}", web::get().to(group_resources));
}

fn json_response(v: &Value) -> HttpResponse {
    HttpResponse::Ok()
        .content_type("application/json")
        .body(v.to_string())
}

/// A short stable hash of the storage version, as kube-apiserver publishes it.
fn storage_version_hash(r: &ApiResource) -> String {
    let digest = Sha256::digest(format!("{}/{}/{}", r.def.group, r.def.version, r.def.kind));
    base64::engine::general_purpose::STANDARD.encode(&digest[..8])
}

fn resource_list(group_version: &str, resources: &[std::sync::Arc<ApiResource>]) -> Value {
    let mut list = Vec::new();
    for r in resources {
        let mut entry = json!({
            "name": r.def.plural,
            "singularName": r.def.singular,
            "namespaced": r.def.namespaced,
            "kind": r.def.kind,
            "verbs": r.verbs(),
            "storageVersionHash": storage_version_hash(r),
        });
        if !r.def.short_names.is_empty() {
            entry["shortNames"] = json!(r.def.short_names);
        }
        if !r.def.categories.is_empty() {
            entry["categories"] = json!(r.def.categories);
        }
        list.push(entry);
        if r.def.status_subresource {
            list.push(json!({ "name": format!("{}/status", r.def.plural), "singularName": "", "namespaced": r.def.namespaced, "kind": r.def.kind, "verbs": ["get", "patch", "update"] }));
        }
    }
    json!({ "kind": "APIResourceList", "apiVersion": "v1", "groupVersion": group_version, "resources": list })
}

async fn api_versions(req: HttpRequest, state: web::Data<ApiState>) -> HttpResponse {
    let mut versions: Vec<&str> = state
        .catalog
        .all()
        .iter()
        .filter(|r| r.def.group.is_empty())
        .map(|r| r.def.version)
        .collect();
    versions.dedup();
    let host = req.connection_info().host().to_string();
    json_response(&json!({
        "kind": "APIVersions",
        "versions": versions,
        "serverAddressByClientCIDRs": [{ "clientCIDR": "0.0.0.0/0", "serverAddress": host }],
    }))
}

fn groups(state: &ApiState) -> BTreeMap<&'static str, Vec<&'static str>> {
    let mut groups: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for r in state
        .catalog
        .all()
        .iter()
        .filter(|r| !r.def.group.is_empty())
    {
        let versions = groups.entry(r.def.group).or_default();
        if !versions.contains(&r.def.version) {
            versions.push(r.def.version);
        }
    }
    groups
}

fn group_doc(group: &str, versions: &[&str]) -> Value {
    let vs: Vec<Value> = versions
        .iter()
        .map(|v| json!({ "groupVersion": format!("{group}/{v}"), "version": v }))
        .collect();
    json!({ "name": group, "versions": vs, "preferredVersion": vs.first().cloned().unwrap_or(Value::Null) })
}

async fn api_groups(state: web::Data<ApiState>) -> HttpResponse {
    let groups: Vec<Value> = groups(&state)
        .iter()
        .map(|(g, vs)| group_doc(g, vs))
        .collect();
    json_response(&json!({ "kind": "APIGroupList", "apiVersion": "v1", "groups": groups }))
}

async fn api_group(
    req: HttpRequest,
    path: web::Path<String>,
    state: web::Data<ApiState>,
) -> Result<HttpResponse, ApiError> {
    let group = path.into_inner();
    let groups = groups(&state);
    let versions = groups
        .get(group.as_str())
        .ok_or_else(|| ApiError::path_not_found(req.path()))?;
    let mut doc = group_doc(&group, versions);
    doc["kind"] = json!("APIGroup");
    doc["apiVersion"] = json!("v1");
    Ok(json_response(&doc))
}

async fn core_resources(
    req: HttpRequest,
    path: web::Path<String>,
    state: web::Data<ApiState>,
) -> Result<HttpResponse, ApiError> {
    let version = path.into_inner();
    let resources: Vec<_> = state
        .catalog
        .all()
        .into_iter()
        .filter(|r| r.def.group.is_empty() && r.def.version == version)
        .collect();
    if resources.is_empty() {
        return Err(ApiError::path_not_found(req.path()));
    }
    Ok(json_response(&resource_list(&version, &resources)))
}

async fn group_resources(
    req: HttpRequest,
    path: web::Path<(String, String)>,
    state: web::Data<ApiState>,
) -> Result<HttpResponse, ApiError> {
    let (group, version) = path.into_inner();
    let resources: Vec<_> = state
        .catalog
        .all()
        .into_iter()
        .filter(|r| r.def.group == group && r.def.version == version)
        .collect();
    if resources.is_empty() {
        return Err(ApiError::path_not_found(req.path()));
    }
    Ok(json_response(&resource_list(
        &format!("{group}/{version}"),
        &resources,
    )))
}
