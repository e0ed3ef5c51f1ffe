//! The `Available` condition of every APIService, as upstream's availability controller
//! sets it: local APIServices are always available; another server's is available when
//! its Service resolves and its discovery document for the group-version answers 2xx
//! within 5 seconds. A successful check also keeps that server's discovery and OpenAPI
//! documents, which this server's discovery and OpenAPI merge in.
//!
//! Checks run every 10 seconds (every 2 while some APIService is unavailable, so a
//! backend that comes back is noticed quickly), and at once when an APIService changes
//! or a proxied request could not reach its backend. A backend's OpenAPI documents are
//! asked for again when its `APIResourceList` changes and, as upstream's OpenAPI
//! aggregation controller does, every `--aggregated-openapi-refresh-interval` (a
//! minute) with the ETags they came with, so a schema-only change is seen too.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::backend::ReachError;
use super::{Aggregator, ApiService, RemoteDocuments};
use crate::api::meta::now_rfc3339;
use crate::registry::store::{Target, WriteContext};

/// Between rounds of checks when every APIService is available.
const INTERVAL: Duration = Duration::from_secs(10);
/// Between rounds while one is not.
const INTERVAL_UNAVAILABLE: Duration = Duration::from_secs(2);
/// How long a backend has to answer its discovery check (upstream's).
const CHECK_TIMEOUT: Duration = Duration::from_secs(5);
/// The largest document read from a backend.
const MAX_DOCUMENT_BYTES: usize = 32 * 1024 * 1024;

/// The `Available` condition a check concluded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Availability {
    pub available: bool,
    pub reason: &'static str,
    pub message: String,
}

impl Availability {
    /// Whether `service`'s stored condition already says this.
    fn is_recorded_in(&self, service: &ApiService) -> bool {
        service
            .condition
            .as_ref()
            .is_some_and(|(available, reason, message)| {
                *available == self.available && reason == self.reason && *message == self.message
            })
    }
}

/// Runs the checks until the process ends.
pub fn spawn(aggregator: Arc<Aggregator>) {
    crate::panics::spawn("APIService availability", async move {
        loop {
            let all = aggregator.all();
            let checks = all.iter().map(|s| check(&aggregator, s));
            let results = futures_util::future::join_all(checks).await;
            let mut any_down = false;
            for (service, result) in all.iter().zip(results) {
                any_down |= !result.available;
                if result.is_recorded_in(service) {
                    continue;
                }
                if let Err(e) = record(&aggregator, service, &result).await {
                    tracing::warn!("APIService {}: writing its status: {e}", service.name);
                }
            }
            let wait = if any_down {
                INTERVAL_UNAVAILABLE
            } else {
                INTERVAL
            }
            .min(aggregator.openapi_refresh);
            tokio::select! {
                _ = tokio::time::sleep(wait) => {}
                _ = aggregator.recheck.notified() => {}
            }
        }
    });
}

/// Checks one APIService (and keeps its backend's documents when they answer).
async fn check(aggregator: &Aggregator, service: &ApiService) -> Availability {
    let Some(backend) = &service.backend else {
        return Availability {
            available: true,
            reason: "Local",
            message: "Local APIServices are always available".into(),
        };
    };
    let addr = match backend
        .location(
            &aggregator.catalog,
            &aggregator.store,
            aggregator.endpoint_routing,
        )
        .await
    {
        Ok(addr) => addr,
        Err(ReachError::Resolve { reason, message }) => {
            return Availability {
                available: false,
                reason,
                message,
            }
        }
        Err(e) => return failed_discovery(e.to_string()),
    };
    let path = discovery_path(&service.group, &service.version);
    let url = format!("https://{}:{}{path}", addr.0, addr.1);
    let answer = tokio::time::timeout(
        CHECK_TIMEOUT,
        backend.get_as_aggregator(&addr, &path, None, MAX_DOCUMENT_BYTES),
    )
    .await;
    let body = match answer {
        Err(_) => {
            return failed_discovery(format!(
                "failing or missing response from {url}: timed out after {}s",
                CHECK_TIMEOUT.as_secs()
            ))
        }
        Ok(Err(e)) => {
            return failed_discovery(format!("failing or missing response from {url}: {e}"))
        }
        Ok(Ok(answer)) if !(200..300).contains(&answer.status) => {
            return failed_discovery(format!(
                "failing or missing response from {url}: bad status from {url}: {}",
                answer.status
            ))
        }
        Ok(Ok(answer)) => answer.body,
    };
    let resources: Option<Value> = serde_json::from_slice(&body).ok();
    let known = aggregator.documents(&service.name);
    let due = known
        .openapi_fetched
        .is_none_or(|at| at.elapsed() >= aggregator.openapi_refresh);
    if known.resources != resources || known.openapi_v3.is_none() || due {
        let (v3, v3_etag) = fetch_openapi_v3(
            backend,
            &addr,
            service,
            (known.openapi_v3, known.openapi_etags.0),
        )
        .await;
        let (v2, v2_etag) = fetch_document(
            backend,
            &addr,
            "/openapi/v2",
            (known.openapi_v2, known.openapi_etags.1),
        )
        .await;
        let docs = RemoteDocuments {
            openapi_v3: v3,
            openapi_v2: v2,
            openapi_etags: (v3_etag, v2_etag),
            openapi_fetched: Some(Instant::now()),
            resources,
        };
        aggregator.set_documents(&service.name, Some(docs));
    }
    Availability {
        available: true,
        reason: "Passed",
        message: "all checks passed".into(),
    }
}

fn failed_discovery(message: String) -> Availability {
    Availability {
        available: false,
        reason: "FailedDiscoveryCheck",
        message,
    }
}

/// `/api/v1` for the core group, `/apis/<group>/<version>` otherwise.
pub fn discovery_path(group: &str, version: &str) -> String {
    if group.is_empty() {
        format!("/api/{version}")
    } else {
        format!("/apis/{group}/{version}")
    }
}

/// A document and the ETag it came with.
type Document = (Option<Arc<Value>>, Option<String>);

/// The JSON document at `path`, asked for with the ETag of the one `known` (kept when
/// the backend answers 304 Not Modified); none when it cannot be had.
async fn fetch_document(
    backend: &super::backend::Backend,
    addr: &(String, u16),
    path: &str,
    known: Document,
) -> Document {
    let (known_doc, known_etag) = known;
    let if_none_match = known_doc.as_ref().and(known_etag.as_deref());
    let answer = tokio::time::timeout(
        CHECK_TIMEOUT,
        backend.get_as_aggregator(addr, path, if_none_match, MAX_DOCUMENT_BYTES),
    )
    .await;
    match answer {
        Ok(Ok(a)) if a.status == 304 && known_doc.is_some() => (known_doc, known_etag),
        Ok(Ok(a)) if a.status == 200 => match serde_json::from_slice(&a.body) {
            Ok(doc) => (Some(Arc::new(doc)), a.etag),
            Err(_) => (None, None),
        },
        _ => (None, None),
    }
}

/// The backend's OpenAPI v3 document of the group-version, found through its index.
async fn fetch_openapi_v3(
    backend: &super::backend::Backend,
    addr: &(String, u16),
    service: &ApiService,
    known: Document,
) -> Document {
    let (Some(index), _) = fetch_document(backend, addr, "/openapi/v3", (None, None)).await else {
        return (None, None);
    };
    let key = discovery_path(&service.group, &service.version);
    let Some(url) = index["paths"][key.trim_start_matches('/')]["serverRelativeURL"].as_str()
    else {
        return (None, None);
    };
    fetch_document(backend, addr, url, known).await
}

/// Writes the condition when it differs from the stored one; `lastTransitionTime`
/// moves only when the status does.
async fn record(
    aggregator: &Aggregator,
    service: &ApiService,
    result: &Availability,
) -> Result<(), String> {
    let Some(kind) = aggregator.api_services() else {
        return Ok(());
    };
    let store = &aggregator.store;
    let current = match store.get(&kind, None, &service.name).await {
        Ok(obj) => obj,
        Err(e) if e.is_not_found() => return Ok(()),
        Err(e) => return Err(e.to_string()),
    };
    let status = if result.available { "True" } else { "False" };
    let before = current["status"]["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|c| c["type"] == "Available")
        .cloned();
    let transition = before
        .as_ref()
        .filter(|b| b["status"] == status)
        .map(|b| b["lastTransitionTime"].clone())
        .filter(Value::is_string)
        .unwrap_or_else(|| json!(now_rfc3339()));
    let mut updated = current.clone();
    let mut conditions: Vec<Value> = current["status"]["conditions"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .into_iter()
        .filter(|c| c["type"] != "Available")
        .collect();
    conditions.push(json!({
        "type": "Available",
        "status": status,
        "lastTransitionTime": transition,
        "reason": result.reason,
        "message": result.message,
    }));
    updated["status"] = json!({ "conditions": conditions });
    let ctx = WriteContext::new("kube-apiserver");
    match store
        .update(&kind, None, &service.name, updated, Target::Status, &ctx)
        .await
    {
        Ok(_) => Ok(()),
        // Someone wrote meanwhile: the next round looks again.
        Err(e) if e.is_conflict() || e.is_not_found() => Ok(()),
        Err(e) => Err(e.to_string()),
    }
}
