//! The Aggregator server, the outermost link of the delegation chain: every
//! group-version has an `apiregistration.k8s.io/v1` APIService; those with a
//! `spec.service` are served by another API server, to which requests are proxied.
//!
//! - `mod.rs`: [`Aggregator`], the APIServices as the watch cache last had them, and
//!   what the availability checks learnt of each backend (its discovery and OpenAPI);
//! - `priorities.rs`: the local APIServices (upstream's priorities per group-version);
//! - `registration.rs`: keeps a local APIService for every group-version the catalog
//!   serves;
//! - `backend.rs`: the HTTPS client of one APIService's server (TLS from `caBundle`,
//!   the front-proxy client certificate, the Service resolved to an address);
//! - `proxy.rs`: one request proxied, the user sent as front-proxy headers;
//! - `upgrade.rs`: a connection upgrade (WebSocket) proxied, then copied both ways;
//! - `availability.rs`: the `Available` condition, from periodic discovery checks;
//! - `strategy.rs`: the APIService kind's validation and printed columns.

pub mod availability;
pub mod backend;
pub mod priorities;
pub mod proxy;
pub mod registration;
pub mod strategy;
pub mod upgrade;

use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use async_trait::async_trait;
use serde_json::Value;
use tokio::sync::Notify;

use self::backend::{Backend, ProxyClientCert};
use crate::catalog::{ApiResource, Catalog};
use crate::registry::Store;

/// The group of the APIService kind.
pub const GROUP: &str = "apiregistration.k8s.io";

/// The Service an APIService names (`spec.service`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ServiceReference {
    pub namespace: String,
    pub name: String,
    /// `spec.service.port`, 443 when not set.
    pub port: u16,
}

/// One APIService as the aggregator routes by it.
#[derive(Debug)]
pub struct ApiService {
    /// `<version>.<group>` (`v1.` for the core group).
    pub name: String,
    pub group: String,
    pub version: String,
    pub group_priority_minimum: i64,
    pub version_priority: i64,
    /// `None`: served by this server (a local APIService).
    pub backend: Option<Arc<Backend>>,
    /// The `Available` condition is `True`.
    pub available: bool,
    /// The stored `Available` condition: (status is `True`, reason, message).
    pub condition: Option<(bool, String, String)>,
}

impl ApiService {
    /// Reads an APIService object; `None` when it names no group-version.
    fn read(
        obj: &Value,
        previous: Option<&ApiService>,
        cert: &Option<ProxyClientCert>,
    ) -> Option<Self> {
        let spec = &obj["spec"];
        let name = obj["metadata"]["name"].as_str()?.to_string();
        let version = spec["version"]
            .as_str()
            .filter(|v| !v.is_empty())?
            .to_string();
        let group = spec["group"].as_str().unwrap_or_default().to_string();
        let condition = obj["status"]["conditions"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|c| c["type"] == "Available")
            .map(|c| {
                let text = |f: &str| c[f].as_str().unwrap_or_default().to_string();
                (c["status"] == "True", text("reason"), text("message"))
            });
        let backend = match Backend::spec_of(spec) {
            None => None,
            // The same spec keeps its backend, and with it its kept-alive connections.
            Some(wanted) => match previous.and_then(|p| p.backend.clone()) {
                Some(b) if b.spec() == &wanted => Some(b),
                _ => Some(Arc::new(Backend::new(wanted, cert.clone()))),
            },
        };
        Some(ApiService {
            name,
            group,
            version,
            group_priority_minimum: spec["groupPriorityMinimum"].as_i64().unwrap_or(0),
            version_priority: spec["versionPriority"].as_i64().unwrap_or(0),
            backend,
            available: condition.as_ref().is_some_and(|c| c.0),
            condition,
        })
    }
}

/// What a backend said in its last successful availability check.
#[derive(Debug, Clone, Default)]
pub struct RemoteDocuments {
    /// Its `APIResourceList` for the APIService's group-version.
    pub resources: Option<Value>,
    /// Its OpenAPI v3 document for the group-version.
    pub openapi_v3: Option<Arc<Value>>,
    /// Its OpenAPI v2 document.
    pub openapi_v2: Option<Arc<Value>>,
    /// The ETags the v3 and v2 documents came with, sent back as `If-None-Match`.
    pub openapi_etags: (Option<String>, Option<String>),
    /// When the OpenAPI documents were last asked for.
    pub openapi_fetched: Option<std::time::Instant>,
}

impl RemoteDocuments {
    /// Whether discovery or OpenAPI would be built differently from `other`.
    fn same_content(&self, other: &RemoteDocuments) -> bool {
        self.resources == other.resources
            && self.openapi_v3 == other.openapi_v3
            && self.openapi_v2 == other.openapi_v2
    }
}

#[derive(Default)]
struct Registry {
    /// By name.
    all: HashMap<String, Arc<ApiService>>,
    /// By (group, version): the APIService that claims it.
    by_group_version: HashMap<(String, String), Arc<ApiService>>,
}

/// The APIServices, followed from the watch cache, and the backends' documents.
pub struct Aggregator {
    registry: RwLock<Arc<Registry>>,
    documents: RwLock<HashMap<String, RemoteDocuments>>,
    store: Store,
    catalog: Arc<Catalog>,
    proxy_client_cert: Option<ProxyClientCert>,
    /// `--enable-aggregator-routing`: a Service's endpoints rather than its cluster IP.
    pub(crate) endpoint_routing: bool,
    /// How often a backend's OpenAPI documents are asked for again.
    pub(crate) openapi_refresh: std::time::Duration,
    /// Wakes the availability controller (a change, or a backend that failed).
    pub(crate) recheck: Notify,
    /// Counts changes of what discovery and OpenAPI merge in.
    generation: std::sync::atomic::AtomicU64,
}

impl Aggregator {
    /// An aggregator with no APIService; [`Aggregator::start`] follows them.
    pub fn new(
        catalog: Arc<Catalog>,
        store: Store,
        proxy_client_cert: Option<ProxyClientCert>,
        endpoint_routing: bool,
        openapi_refresh: std::time::Duration,
    ) -> Arc<Self> {
        Arc::new(Aggregator {
            registry: Default::default(),
            documents: Default::default(),
            store,
            catalog,
            proxy_client_cert,
            endpoint_routing,
            openapi_refresh,
            recheck: Notify::new(),
            generation: Default::default(),
        })
    }

    /// Resolves webhooks' Services from now on, registers the local APIServices, then follows every APIService from the watch
    /// cache and runs the availability controller. Without the APIService kind there
    /// is nothing to aggregate.
    pub async fn start(self: &Arc<Self>) -> Result<(), String> {
        // Webhooks named by a Service reference resolve it as APIServices do.
        crate::webhook::set_service_resolver(self.clone());
        let Some(kind) = self.api_services() else {
            return Ok(());
        };
        registration::start(self.catalog.clone(), self.store.clone(), kind.clone()).await?;
        crate::controllers::follow(self.clone(), &self.store, vec![kind]).await;
        availability::spawn(self.clone());
        Ok(())
    }

    /// The APIService kind's catalog entry.
    pub fn api_services(&self) -> Option<Arc<ApiResource>> {
        self.catalog.get(GROUP, "v1", "apiservices")
    }

    fn registry(&self) -> Arc<Registry> {
        self.registry
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// The APIService that claims `group/version`, when another server serves it.
    pub fn remote(&self, group: &str, version: &str) -> Option<Arc<ApiService>> {
        self.registry()
            .by_group_version
            .get(&(group.to_string(), version.to_string()))
            .filter(|s| s.backend.is_some())
            .cloned()
    }

    /// Every APIService, in no particular order.
    pub fn all(&self) -> Vec<Arc<ApiService>> {
        self.registry().all.values().cloned().collect()
    }

    /// The priorities of `group/version`'s APIService, when it has one:
    /// (groupPriorityMinimum, versionPriority).
    pub fn priority(&self, group: &str, version: &str) -> Option<(i64, i64)> {
        self.registry()
            .by_group_version
            .get(&(group.to_string(), version.to_string()))
            .map(|s| (s.group_priority_minimum, s.version_priority))
    }

    /// The available APIServices another server serves, each with what its server last
    /// told the availability checks (discovery and OpenAPI merge these in).
    pub fn remote_documents(&self) -> Vec<(Arc<ApiService>, RemoteDocuments)> {
        let mut out: Vec<_> = self
            .registry()
            .by_group_version
            .values()
            .filter(|s| s.backend.is_some() && s.available)
            .map(|s| (s.clone(), self.documents(&s.name)))
            .collect();
        out.sort_by(|a, b| a.0.name.cmp(&b.0.name));
        out
    }

    /// What `name`'s backend last told the availability checks.
    pub fn documents(&self, name: &str) -> RemoteDocuments {
        self.documents
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .get(name)
            .cloned()
            .unwrap_or_default()
    }

    /// Keeps what `name`'s backend said; discovery and OpenAPI are rebuilt only when
    /// that differs from before (a refresh answered 304 changes nothing).
    fn set_documents(&self, name: &str, docs: Option<RemoteDocuments>) {
        let mut all = self.documents.write().unwrap_or_else(|e| e.into_inner());
        let changed = match docs {
            Some(d) => {
                let same = all.get(name).is_some_and(|old| old.same_content(&d));
                all.insert(name.to_string(), d);
                !same
            }
            None => all.remove(name).is_some(),
        };
        drop(all);
        if changed {
            self.changed();
        }
    }

    /// Counts changes to what discovery and OpenAPI take from here.
    pub fn generation(&self) -> u64 {
        self.generation.load(std::sync::atomic::Ordering::Acquire)
    }

    fn changed(&self) {
        self.generation
            .fetch_add(1, std::sync::atomic::Ordering::AcqRel);
    }
}

#[async_trait]
impl crate::webhook::ResolveService for Aggregator {
    async fn resolve(&self, service: &ServiceReference) -> Result<(String, u16), String> {
        backend::resolve_service(&self.catalog, &self.store, self.endpoint_routing, service)
            .await
            .map_err(|e| e.to_string())
    }
}

#[async_trait]
impl crate::controllers::Reload for Aggregator {
    /// Rebuilds the registry from the watch cache; a group-version claimed twice goes
    /// to the APIService whose name sorts first (names are `<version>.<group>`, so
    /// that only happens through a misnamed object).
    async fn reload(&self, kinds: &[Arc<ApiResource>]) {
        let Some(kind) = kinds.first() else { return };
        // As stored, decoded one at a time: this runs on every APIService change, and a
        // decoded list of a thousand CRDs' APIServices was megabytes per change. Keys
        // end in the name, so they sort as names do.
        let listed = match self
            .store
            .list_stored(kind, None, &crate::controllers::from_cache())
            .await
        {
            Ok(page) => page.items,
            Err(e) => {
                tracing::warn!("aggregator: listing APIServices: {e}");
                return;
            }
        };
        let previous = self.registry();
        let mut next = Registry::default();
        for kv in &listed {
            let obj = match crate::registry::codec::decode(kind, kv) {
                Ok(obj) => obj,
                Err(e) => {
                    tracing::warn!("aggregator: reading APIService {}: {e}", kv.key);
                    continue;
                }
            };
            let obj = &obj;
            let old = obj["metadata"]["name"]
                .as_str()
                .and_then(|n| previous.all.get(n));
            let Some(service) = ApiService::read(obj, old.map(|s| &**s), &self.proxy_client_cert)
            else {
                continue;
            };
            let service = Arc::new(service);
            next.by_group_version
                .entry((service.group.clone(), service.version.clone()))
                .or_insert_with(|| service.clone());
            next.all.insert(service.name.clone(), service);
        }
        let gone: Vec<String> = previous
            .all
            .keys()
            .filter(|n| !next.all.contains_key(*n))
            .cloned()
            .collect();
        *self.registry.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(next);
        for name in gone {
            self.set_documents(&name, None);
        }
        self.changed();
        self.recheck.notify_one();
    }
}
