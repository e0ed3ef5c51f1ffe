//! Discovery documents, built from the live catalog so custom resources appear the moment
//! they are registered.
//!
//! - Legacy discovery: `/api` (`APIVersions`), `/apis` (`APIGroupList`), `/apis/<g>`
//!   (`APIGroup`), `/api/v1` and `/apis/<g>/<v>` (`APIResourceList`).
//! - Aggregated discovery (`apidiscovery.k8s.io` `v2` and `v2beta1`): `/api` and `/apis`
//!   answer one `APIGroupDiscoveryList` holding every group, version and resource when the
//!   `Accept` header asks for it, with an `ETag` so clients can revalidate with
//!   `If-None-Match` and get `304 Not Modified`.
//!
//! Every resource entry is derived from its catalog definition: verbs from what the generic
//! handlers serve, subresources from the definition's `status` and `scale`.

use std::cmp::Ordering;
use std::collections::BTreeMap;
use std::sync::Arc;

use actix_web::http::header;
use actix_web::{web, HttpRequest, HttpResponse};
use base64::Engine;
use serde_json::{json, Map, Value};
use sha2::{Digest, Sha256, Sha512};

use codegen::endpoints::{Subresource, Verb};

use crate::api::ApiError;
use crate::catalog::ApiResource;
use crate::endpoints::ApiState;
use crate::openapi::if_none_match;

/// The group of aggregated discovery documents.
const DISCOVERY_GROUP: &str = "apidiscovery.k8s.io";

/// Mounts the discovery routes.
pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.route("/api", web::get().to(api_root))
        .route("/api/", web::get().to(api_root))
        .route("/apis", web::get().to(apis_root))
        .route("/apis/", web::get().to(apis_root))
        .route("/api/{version}", web::get().to(core_resources))
        .route("/api/{version}/", web::get().to(core_resources))
        .route("/apis/{group}", web::get().to(api_group))
        .route("/apis/{group}/", web::get().to(api_group))
        .route("/apis/{group}/{version}", web::get().to(group_resources))
        .route("/apis/{group}/{version}/", web::get().to(group_resources));
}

// ---------------------------------------------------------------------------------------
// What discovery says about one resource.

/// A subresource as discovery lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SubresourceInfo {
    /// `status`, `scale` or a create-only subresource's name (`token`).
    pub name: String,
    /// Group of the kind the subresource answers with; empty when it is the resource's own.
    pub group: String,
    /// Version of that kind; empty when it is the resource's own.
    pub version: String,
    /// Kind the subresource answers with.
    pub kind: String,
    /// Verbs served on the subresource (from the endpoints table).
    pub verbs: Vec<&'static str>,
}

/// The verbs of `r` (or a subresource) as discovery writes them.
pub fn verb_names(r: &ApiResource, sub: Option<Subresource>) -> Vec<&'static str> {
    r.verbs(sub).into_iter().map(Verb::as_str).collect()
}

/// The subresources of `r`, sorted by name: `scale` (as `autoscaling/v1` `Scale`),
/// `status` and the create-only ones (as their own kind), as the endpoints table has them.
pub fn subresources(r: &ApiResource) -> Vec<SubresourceInfo> {
    r.subresources()
        .into_iter()
        .map(|sub| {
            let (group, version, kind) = match sub {
                Subresource::Scale => ("autoscaling".into(), "v1".into(), "Scale".into()),
                Subresource::Status | Subresource::Part(_) => {
                    (String::new(), String::new(), r.def.kind.clone())
                }
                Subresource::CreateOnly(i) => r
                    .def
                    .subresources
                    .create_only
                    .get(usize::from(i))
                    .map(|s| (s.group.clone(), s.version.clone(), s.kind.clone()))
                    .unwrap_or_default(),
            };
            SubresourceInfo {
                name: sub.name(&r.def).to_string(),
                group,
                version,
                kind,
                verbs: verb_names(r, Some(sub)),
            }
        })
        .collect()
}

/// The storage version hash kube-apiserver publishes: the first 8 bytes of the SHA-256 of
/// `group/version/kind` of the storage version, base64-encoded. It changes exactly when
/// the stored representation does, which tells storage migrators to act.
pub fn storage_version_hash(group: &str, version: &str, kind: &str) -> String {
    let digest = Sha256::digest(format!("{group}/{version}/{kind}"));
    base64::engine::general_purpose::STANDARD.encode(&digest[..8])
}

// ---------------------------------------------------------------------------------------
// Versions and groups.

/// Kubernetes version priority: GA before beta before alpha, higher numbers first, and
/// versions that do not follow the `v<N>[alpha|beta<M>]` pattern last, alphabetically.
/// This is the order in which a group lists its versions; the first is preferred.
pub fn compare_versions(a: &str, b: &str) -> Ordering {
    fn parse(v: &str) -> Option<(u8, u64, u64)> {
        let rest = v.strip_prefix('v')?;
        let digits = rest
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(rest.len());
        let major: u64 = rest[..digits].parse().ok()?;
        if major == 0 {
            return None;
        }
        let tail = &rest[digits..];
        let (stability, minor) = if tail.is_empty() {
            return Some((2, major, 0));
        } else if let Some(m) = tail.strip_prefix("beta") {
            (1, m)
        } else if let Some(m) = tail.strip_prefix("alpha") {
            (0, m)
        } else {
            return None;
        };
        if minor.is_empty() || !minor.bytes().all(|c| c.is_ascii_digit()) {
            return None;
        }
        Some((stability, major, minor.parse().ok()?))
    }
    match (parse(a), parse(b)) {
        (Some(x), Some(y)) => y.cmp(&x),
        (Some(_), None) => Ordering::Less,
        (None, Some(_)) => Ordering::Greater,
        (None, None) => a.cmp(b),
    }
}

/// What serves one group-version.
enum Served {
    /// This server: its catalog entries, sorted by plural.
    Local(Vec<Arc<ApiResource>>),
    /// Another server, through an APIService: the `APIResourceList` it last answered.
    Remote(Value),
}

/// The versions of one group, in priority order (the first is preferred).
type GroupVersions = Vec<(String, Served)>;

/// Every served group (the core group is `""`) with its versions, in the order
/// discovery lists them: by the highest `groupPriorityMinimum` of the group's
/// APIServices, then by name; versions by `versionPriority`, then as Kubernetes orders
/// versions. A group-version an available APIService gives to another server is that
/// server's; one whose server is unavailable is left out.
fn by_group(state: &ApiState) -> Vec<(String, GroupVersions)> {
    let mut map: BTreeMap<(String, String), Served> = BTreeMap::new();
    for r in state.catalog.all() {
        let key = (r.def.group.to_string(), r.def.version.to_string());
        if let Served::Local(rs) = map.entry(key).or_insert_with(|| Served::Local(Vec::new())) {
            rs.push(r);
        }
    }
    // A group-version another server claims is not this server's, available or not.
    for s in state
        .aggregator
        .all()
        .iter()
        .filter(|s| s.backend.is_some())
    {
        map.remove(&(s.group.clone(), s.version.clone()));
    }
    for (service, docs) in state.aggregator.remote_documents() {
        if let Some(list) = docs.resources {
            map.insert(
                (service.group.clone(), service.version.clone()),
                Served::Remote(list),
            );
        }
    }
    let priority = |g: &str, v: &str| {
        state
            .aggregator
            .priority(g, v)
            .unwrap_or_else(|| crate::aggregator::priorities::priority(g, v))
    };
    let mut groups: BTreeMap<String, GroupVersions> = BTreeMap::new();
    for ((group, version), mut served) in map {
        if let Served::Local(rs) = &mut served {
            rs.sort_by(|a, b| a.def.plural.cmp(&b.def.plural));
        }
        groups.entry(group).or_default().push((version, served));
    }
    let mut out: Vec<(String, GroupVersions, i64)> = groups
        .into_iter()
        .map(|(group, mut versions)| {
            versions.sort_by(|a, b| {
                let (pa, pb) = (priority(&group, &a.0).1, priority(&group, &b.0).1);
                pb.cmp(&pa).then_with(|| compare_versions(&a.0, &b.0))
            });
            let top = versions
                .iter()
                .map(|(v, _)| priority(&group, v).0)
                .max()
                .unwrap_or(0);
            (group, versions, top)
        })
        .collect();
    out.sort_by(|a, b| b.2.cmp(&a.2).then_with(|| a.0.cmp(&b.0)));
    out.into_iter().map(|(g, vs, _)| (g, vs)).collect()
}

// ---------------------------------------------------------------------------------------
// Legacy documents.

fn json_response(v: &Value) -> HttpResponse {
    HttpResponse::Ok()
        .content_type("application/json")
        .body(v.to_string())
}

/// One `APIResourceList` entry for a resource, then one per subresource; the whole list is
/// sorted by name as kube-apiserver sorts it.
fn legacy_entries(r: &ApiResource) -> Vec<Value> {
    let mut main = json!({
        "name": r.def.plural,
        "singularName": r.def.singular,
        "namespaced": r.namespaced(),
        "kind": r.def.kind,
        "verbs": verb_names(r, None),
    });
    if !r.def.short_names.is_empty() {
        main["shortNames"] = json!(r.def.short_names);
    }
    if !r.def.categories.is_empty() {
        main["categories"] = json!(r.def.categories);
    }
    // Only what is stored has a storage version (the reviews have none, as upstream).
    if r.stored() {
        // The storage version's group too: events.k8s.io Events hash core/v1 Event,
        // as upstream's do.
        main["storageVersionHash"] = json!(storage_version_hash(
            r.storage_resource().0,
            r.storage_version(),
            &r.def.kind
        ));
    }
    let mut out = vec![main];
    for s in subresources(r) {
        let mut e = Map::new();
        e.insert("name".into(), json!(format!("{}/{}", r.def.plural, s.name)));
        e.insert("singularName".into(), json!(""));
        e.insert("namespaced".into(), json!(r.namespaced()));
        if !s.group.is_empty() {
            e.insert("group".into(), json!(s.group));
        }
        if !s.version.is_empty() {
            e.insert("version".into(), json!(s.version));
        }
        e.insert("kind".into(), json!(s.kind));
        e.insert("verbs".into(), json!(s.verbs));
        out.push(Value::Object(e));
    }
    out
}

/// The `APIResourceList` of one group-version. The core group's carries no `apiVersion`,
/// as kube-apiserver's does not.
pub fn resource_list(group: &str, version: &str, resources: &[Arc<ApiResource>]) -> Value {
    let mut entries: Vec<Value> = resources.iter().flat_map(|r| legacy_entries(r)).collect();
    entries.sort_by(|a, b| a["name"].as_str().cmp(&b["name"].as_str()));
    if group.is_empty() {
        json!({ "kind": "APIResourceList", "groupVersion": version, "resources": entries })
    } else {
        json!({
            "kind": "APIResourceList",
            "apiVersion": "v1",
            "groupVersion": format!("{group}/{version}"),
            "resources": entries,
        })
    }
}

/// The body of an `APIGroup` (name, versions in priority order, preferred version).
fn group_doc(group: &str, versions: &GroupVersions) -> Value {
    let vs: Vec<Value> = versions
        .iter()
        .map(|(v, _)| json!({ "groupVersion": format!("{group}/{v}"), "version": v }))
        .collect();
    json!({
        "name": group,
        "versions": vs,
        "preferredVersion": vs.first().cloned().unwrap_or(Value::Null),
    })
}

fn api_versions_doc(req: &HttpRequest, groups: &[(String, GroupVersions)]) -> Value {
    let versions: Vec<&str> = groups
        .iter()
        .find(|(g, _)| g.is_empty())
        .map(|(_, vs)| vs.iter().map(|(v, _)| v.as_str()).collect())
        .unwrap_or_default();
    let host = req.connection_info().host().to_string();
    json!({
        "kind": "APIVersions",
        "versions": versions,
        "serverAddressByClientCIDRs": [{ "clientCIDR": "0.0.0.0/0", "serverAddress": host }],
    })
}

fn api_group_list_doc(groups: &[(String, GroupVersions)]) -> Value {
    let groups: Vec<Value> = groups
        .iter()
        .filter(|(g, _)| !g.is_empty())
        .map(|(g, vs)| group_doc(g, vs))
        .collect();
    json!({ "kind": "APIGroupList", "apiVersion": "v1", "groups": groups })
}

// ---------------------------------------------------------------------------------------
// Aggregated documents.

/// Which discovery document the client asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DiscoveryFormat {
    /// `APIVersions` / `APIGroupList`, plain JSON.
    Legacy,
    /// `APIGroupDiscoveryList` of `apidiscovery.k8s.io/v2`.
    AggregatedV2,
    /// `APIGroupDiscoveryList` of `apidiscovery.k8s.io/v2beta1`.
    AggregatedV2Beta1,
}

impl DiscoveryFormat {
    /// The `apidiscovery.k8s.io` version of an aggregated format.
    fn version(self) -> Option<&'static str> {
        match self {
            DiscoveryFormat::Legacy => None,
            DiscoveryFormat::AggregatedV2 => Some("v2"),
            DiscoveryFormat::AggregatedV2Beta1 => Some("v2beta1"),
        }
    }
}

/// Picks the discovery format from an `Accept` header: the acceptable media range with the
/// highest `q` (the client's order breaks ties). No header means plain JSON; a header that
/// names nothing the server can produce yields `None` (406).
pub fn negotiate(accept: Option<&str>) -> Option<DiscoveryFormat> {
    let accept = match accept.map(str::trim) {
        None | Some("") => return Some(DiscoveryFormat::Legacy),
        Some(a) => a,
    };
    let mut candidates: Vec<(f32, usize, DiscoveryFormat)> = Vec::new();
    for (i, range) in accept.split(',').enumerate() {
        let mut parts = range.split(';').map(str::trim);
        let media = parts.next().unwrap_or_default().to_ascii_lowercase();
        let mut params: BTreeMap<String, String> = BTreeMap::new();
        for p in parts {
            if let Some((k, v)) = p.split_once('=') {
                params.insert(
                    k.trim().to_ascii_lowercase(),
                    v.trim().trim_matches('"').to_string(),
                );
            }
        }
        let q = match params.remove("q") {
            Some(q) => match q.parse::<f32>() {
                Ok(q) if (0.0..=1.0).contains(&q) => q,
                _ => continue,
            },
            None => 1.0,
        };
        if q <= 0.0 {
            continue;
        }
        let format = match media.as_str() {
            "application/json" => match (
                params.get("g").map(String::as_str),
                params.get("v").map(String::as_str),
                params.get("as").map(String::as_str),
            ) {
                (None, None, None) => Some(DiscoveryFormat::Legacy),
                (Some(DISCOVERY_GROUP), Some("v2"), Some("APIGroupDiscoveryList")) => {
                    Some(DiscoveryFormat::AggregatedV2)
                }
                (Some(DISCOVERY_GROUP), Some("v2beta1"), Some("APIGroupDiscoveryList")) => {
                    Some(DiscoveryFormat::AggregatedV2Beta1)
                }
                _ => None,
            },
            "*/*" | "application/*" => Some(DiscoveryFormat::Legacy),
            _ => None,
        };
        if let Some(f) = format {
            candidates.push((q, i, f));
        }
    }
    candidates.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    candidates.first().map(|c| c.2)
}

/// One `APIResourceDiscovery`.
fn aggregated_resource(r: &ApiResource) -> Value {
    let mut e = json!({
        "resource": r.def.plural,
        "responseKind": { "group": "", "version": "", "kind": r.def.kind },
        "scope": if r.namespaced() { "Namespaced" } else { "Cluster" },
        "singularResource": r.def.singular,
        "verbs": verb_names(r, None),
    });
    if !r.def.short_names.is_empty() {
        e["shortNames"] = json!(r.def.short_names);
    }
    if !r.def.categories.is_empty() {
        e["categories"] = json!(r.def.categories);
    }
    let subs: Vec<Value> = subresources(r)
        .into_iter()
        .map(|s| {
            json!({
                "subresource": s.name,
                "responseKind": { "group": s.group, "version": s.version, "kind": s.kind },
                "verbs": s.verbs,
            })
        })
        .collect();
    if !subs.is_empty() {
        e["subresources"] = Value::Array(subs);
    }
    e
}

/// The `APIResourceDiscovery` entries of another server's `APIResourceList`: each
/// resource with its subresources (the `<resource>/<subresource>` entries) under it.
fn aggregated_from_legacy(list: &Value) -> Vec<Value> {
    let entries: Vec<&Value> = list["resources"].as_array().into_iter().flatten().collect();
    let text = |e: &Value, f: &str| e[f].as_str().unwrap_or_default().to_string();
    entries
        .iter()
        .filter(|e| !text(e, "name").contains('/'))
        .map(|e| {
            let name = text(e, "name");
            let mut out = json!({
                "resource": name,
                "responseKind": { "group": text(e, "group"), "version": text(e, "version"), "kind": text(e, "kind") },
                "scope": if e["namespaced"].as_bool() == Some(true) { "Namespaced" } else { "Cluster" },
                "singularResource": text(e, "singularName"),
                "verbs": e["verbs"].clone(),
            });
            for field in ["shortNames", "categories"] {
                if e[field].is_array() {
                    out[field] = e[field].clone();
                }
            }
            let prefix = format!("{name}/");
            let subs: Vec<Value> = entries
                .iter()
                .filter_map(|s| Some((text(s, "name").strip_prefix(&prefix)?.to_string(), s)))
                .map(|(sub, s)| {
                    json!({
                        "subresource": sub,
                        "responseKind": { "group": text(s, "group"), "version": text(s, "version"), "kind": text(s, "kind") },
                        "verbs": s["verbs"].clone(),
                    })
                })
                .collect();
            if !subs.is_empty() {
                out["subresources"] = Value::Array(subs);
            }
            out
        })
        .collect()
}

/// One `APIGroupDiscovery`: versions in priority order (the first is preferred).
fn aggregated_group(group: &str, versions: &GroupVersions) -> Value {
    let metadata = if group.is_empty() {
        json!({})
    } else {
        json!({ "name": group })
    };
    let versions: Vec<Value> = versions
        .iter()
        .map(|(v, served)| {
            let resources: Vec<Value> = match served {
                Served::Local(rs) => rs.iter().map(|r| aggregated_resource(r)).collect(),
                Served::Remote(list) => aggregated_from_legacy(list),
            };
            json!({ "version": v, "resources": resources, "freshness": "Current" })
        })
        .collect();
    json!({ "metadata": metadata, "versions": versions })
}

/// The `APIGroupDiscoveryList` for `/api` (`core`) or `/apis` (every named group).
fn aggregated_doc(
    groups: &[(String, GroupVersions)],
    core: bool,
    discovery_version: &str,
) -> Value {
    let items: Vec<Value> = groups
        .iter()
        .filter(|(g, _)| g.is_empty() == core)
        .map(|(g, vs)| aggregated_group(g, vs))
        .collect();
    json!({
        "kind": "APIGroupDiscoveryList",
        "apiVersion": format!("{DISCOVERY_GROUP}/{discovery_version}"),
        "metadata": {},
        "items": items,
    })
}

/// Serves an aggregated document with its content type, `ETag` (upper-case hex SHA-512
/// of the body, as kube-apiserver's) and `Vary: Accept`; `304` when `If-None-Match`
/// already names that ETag.
fn aggregated_response(req: &HttpRequest, doc: &Value, discovery_version: &str) -> HttpResponse {
    let body = doc.to_string();
    let etag = format!("\"{}\"", hex::encode_upper(Sha512::digest(body.as_bytes())));
    let content_type = format!(
        "application/json;g={DISCOVERY_GROUP};v={discovery_version};as=APIGroupDiscoveryList"
    );
    if if_none_match(req, &etag) {
        return HttpResponse::NotModified()
            .insert_header((header::ETAG, etag))
            .insert_header((header::VARY, "Accept"))
            .finish();
    }
    HttpResponse::Ok()
        .insert_header((header::CONTENT_TYPE, content_type))
        .insert_header((header::ETAG, etag))
        .insert_header((header::VARY, "Accept"))
        .body(body)
}

fn accept_header(req: &HttpRequest) -> Result<Option<&str>, ApiError> {
    match req.headers().get(header::ACCEPT) {
        None => Ok(None),
        Some(v) => v
            .to_str()
            .map(Some)
            .map_err(|_| ApiError::not_acceptable("<non-ASCII Accept header>")),
    }
}

fn format_of(req: &HttpRequest) -> Result<DiscoveryFormat, ApiError> {
    let accept = accept_header(req)?;
    negotiate(accept).ok_or_else(|| ApiError::not_acceptable(accept.unwrap_or_default()))
}

// ---------------------------------------------------------------------------------------
// Handlers.

async fn api_root(req: HttpRequest, state: web::Data<ApiState>) -> Result<HttpResponse, ApiError> {
    let format = format_of(&req)?;
    let groups = by_group(&state);
    Ok(match format.version() {
        Some(v) => aggregated_response(&req, &aggregated_doc(&groups, true, v), v),
        None => json_response(&api_versions_doc(&req, &groups)),
    })
}

async fn apis_root(req: HttpRequest, state: web::Data<ApiState>) -> Result<HttpResponse, ApiError> {
    let format = format_of(&req)?;
    let groups = by_group(&state);
    Ok(match format.version() {
        Some(v) => aggregated_response(&req, &aggregated_doc(&groups, false, v), v),
        None => json_response(&api_group_list_doc(&groups)),
    })
}

async fn api_group(
    req: HttpRequest,
    path: web::Path<String>,
    state: web::Data<ApiState>,
) -> Result<HttpResponse, ApiError> {
    let group = path.into_inner();
    let groups = by_group(&state);
    let versions = groups
        .iter()
        .find(|(g, _)| *g == group && !group.is_empty())
        .map(|(_, vs)| vs)
        .ok_or_else(|| ApiError::path_not_found(req.path()))?;
    let mut doc = json!({ "kind": "APIGroup", "apiVersion": "v1" });
    if let (Some(d), Value::Object(body)) = (doc.as_object_mut(), group_doc(&group, versions)) {
        d.extend(body);
    }
    Ok(json_response(&doc))
}

async fn core_resources(
    req: HttpRequest,
    path: web::Path<String>,
    state: web::Data<ApiState>,
) -> Result<HttpResponse, ApiError> {
    let version = path.into_inner();
    group_version(&req, &state, "", &version)
}

async fn group_resources(
    req: HttpRequest,
    path: web::Path<(String, String)>,
    state: web::Data<ApiState>,
) -> Result<HttpResponse, ApiError> {
    let (group, version) = path.into_inner();
    if group.is_empty() {
        return Err(ApiError::path_not_found(req.path()));
    }
    group_version(&req, &state, &group, &version)
}

fn group_version(
    req: &HttpRequest,
    state: &ApiState,
    group: &str,
    version: &str,
) -> Result<HttpResponse, ApiError> {
    let resources: Vec<_> = state
        .catalog
        .all()
        .into_iter()
        .filter(|r| r.def.group == group && r.def.version == version)
        .collect();
    if resources.is_empty() {
        return Err(ApiError::path_not_found(req.path()));
    }
    Ok(json_response(&resource_list(group, version, &resources)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_sort_by_kubernetes_priority() {
        let mut vs = vec![
            "v1alpha1",
            "v1",
            "foo",
            "v2beta1",
            "v1beta2",
            "v2",
            "v10",
            "v1beta1",
            "bar",
            "v11alpha2",
        ];
        vs.sort_by(|a, b| compare_versions(a, b));
        assert_eq!(
            vs,
            [
                "v10",
                "v2",
                "v1",
                "v2beta1",
                "v1beta2",
                "v1beta1",
                "v11alpha2",
                "v1alpha1",
                "bar",
                "foo"
            ]
        );
    }

    #[test]
    fn accept_picks_aggregated_then_legacy() {
        let kubectl = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json";
        assert_eq!(
            negotiate(Some(kubectl)),
            Some(DiscoveryFormat::AggregatedV2)
        );
        let beta = "application/json;as=APIGroupDiscoveryList;v=v2beta1;g=apidiscovery.k8s.io";
        assert_eq!(
            negotiate(Some(beta)),
            Some(DiscoveryFormat::AggregatedV2Beta1)
        );
        assert_eq!(negotiate(None), Some(DiscoveryFormat::Legacy));
        assert_eq!(negotiate(Some("")), Some(DiscoveryFormat::Legacy));
        assert_eq!(negotiate(Some("*/*")), Some(DiscoveryFormat::Legacy));
        assert_eq!(
            negotiate(Some("application/json, application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList")),
            Some(DiscoveryFormat::Legacy)
        );
        assert_eq!(
            negotiate(Some("application/json;q=0.5, application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList")),
            Some(DiscoveryFormat::AggregatedV2)
        );
        assert_eq!(negotiate(Some("application/yaml")), None);
        assert_eq!(
            negotiate(Some("application/json;as=Table;v=v1;g=meta.k8s.io")),
            None
        );
        assert_eq!(negotiate(Some("application/json;q=zz")), None);
        assert_eq!(negotiate(Some(";;,,=;q")), None);
    }

    #[test]
    fn storage_version_hash_matches_kube_apiserver() {
        // Recorded from kube-apiserver's /api/v1 (kube-apiserver-responses/06).
        assert_eq!(storage_version_hash("", "v1", "ConfigMap"), "qFsyl6wFWjQ=");
        assert_eq!(storage_version_hash("", "v1", "Secret"), "S6u1pOWzb84=");
        assert_eq!(storage_version_hash("", "v1", "Namespace"), "Q3oi5N2YM8M=");
        // Both Event kinds (events.k8s.io/v1 is stored as core/v1).
        assert_eq!(storage_version_hash("", "v1", "Event"), "r2yiGXH7wu8=");
    }
}
