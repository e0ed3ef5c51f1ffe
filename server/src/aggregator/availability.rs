//! The `Available` condition of every APIService, as upstream's availability controller
//! sets it: local APIServices are always available; another server's is available when
//! its Service resolves and its discovery document for the group-version answers 2xx
//! within 5 seconds. A successful check also keeps that server's discovery and OpenAPI
//! documents, which this server's discovery and OpenAPI merge in.
//!
//! Checks run every 10 seconds (every 2 while some APIService is unavailable, so a
//! backend that comes back is noticed quickly), and at once when an APIService changes
//! or a proxied request could not reach its backend.

use std::sync::Arc;
use std::time::Duration;

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
            };
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
        backend.get_as_aggregator(&addr, &path, MAX_DOCUMENT_BYTES),
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
        Ok(Ok((status, _))) if !(200..300).contains(&status) => {
            return failed_discovery(format!(
                "failing or missing response from {url}: bad status from {url}: {status}"
            ))
        }
        Ok(Ok((_, body))) => body,
    };
    let resources: Option<Value> = serde_json::from_slice(&body).ok();
    let known = aggregator.documents(&service.name);
    if known.resources != resources || known.openapi_v3.is_none() {
        let docs = RemoteDocuments {
            openapi_v3: fetch_openapi_v3(backend, &addr, service).await,
            openapi_v2: fetch_json(backend, &addr, "/openapi/v2")
                .await
                .map(Arc::new),
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

async fn fetch_json(
    backend: &super::backend::Backend,
    addr: &(String, u16),
    path: &str,
) -> Option<Value> {
    let answer = tokio::time::timeout(
        CHECK_TIMEOUT,
        backend.get_as_aggregator(addr, path, MAX_DOCUMENT_BYTES),
    )
    .await;
    match answer {
        Ok(Ok((200, body))) => serde_json::from_slice(&body).ok(),
        _ => None,
    }
}

/// The backend's OpenAPI v3 document of the group-version, found through its index.
async fn fetch_openapi_v3(
    backend: &super::backend::Backend,
    addr: &(String, u16),
    service: &ApiService,
) -> Option<Arc<Value>> {
    let index = fetch_json(backend, addr, "/openapi/v3").await?;
    let key = discovery_path(&service.group, &service.version);
    let url = index["paths"][key.trim_start_matches('/')]["serverRelativeURL"].as_str()?;
    fetch_json(backend, addr, url).await.map(Arc::new)
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
