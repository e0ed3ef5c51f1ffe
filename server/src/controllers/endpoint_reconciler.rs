//! The `kubernetes` Service's Endpoints and EndpointSlices list every live API server
//! instance, as upstream's lease endpoint reconciler keeps them.
//!
//! Each instance holds a `coordination.k8s.io/v1` Lease in `kube-system`, named after
//! its endpoint (`apiserver-endpoint-<ip>-<port>`), whose `holderIdentity` is the
//! endpoint (`127.0.0.1:6443`), renewed every [`RECONCILE_INTERVAL`]; a Lease whose
//! `renewTime` is more than `leaseDurationSeconds` ([`LEASE_DURATION`]) old by this
//! instance's clock is expired and ignored (upstream keeps a key with an etcd TTL; our
//! storage has no TTLs). After renewing, an instance writes the endpoints of every live
//! Lease. On graceful shutdown it deletes its Lease and writes the endpoints without
//! itself.
//!
//! Upstream assumes one port for every instance; here instances may share an address
//! with different ports (tests run several on 127.0.0.1). Endpoints get one subset per
//! port (the addresses serving on it); EndpointSlices one per port too: `kubernetes`
//! for the lowest port (the only one when all instances share a port, as upstream's),
//! `kubernetes-<port>` for each other.

use std::collections::BTreeMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};

use crate::api::options::{DeleteOptions, ListOptions};
use crate::api::ApiError;
use crate::catalog::{ApiResource, Catalog};
use crate::registry::store::{Target, WriteContext};
use crate::registry::Store;
use crate::server::health::Hooks;

/// How long a Lease lives without renewal (upstream's master lease TTL).
pub const LEASE_DURATION: Duration = Duration::from_secs(15);
/// How often each instance renews its Lease and rewrites the endpoints (upstream's
/// endpoint reconciler interval).
pub const RECONCILE_INTERVAL: Duration = Duration::from_secs(10);

/// Where the Leases are.
const LEASE_NAMESPACE: &str = "kube-system";
/// The label that marks the endpoint Leases.
const LEASE_LABEL: &str = "apiserver.kubernetes.io/endpoint-lease";
const MANAGER: &str = "kube-apiserver";

/// One instance's reconciler.
pub struct EndpointReconciler {
    store: Store,
    leases: Arc<ApiResource>,
    endpoints: Arc<ApiResource>,
    slices: Option<Arc<ApiResource>>,
    me: SocketAddr,
}

/// The name of the Lease of `endpoint`.
fn lease_name(endpoint: SocketAddr) -> String {
    let ip = endpoint.ip().to_string().replace(':', "-");
    format!("apiserver-endpoint-{ip}-{}", endpoint.port())
}

/// Now as a MicroTime, the Lease's time format.
fn micro_time(t: chrono::DateTime<chrono::Utc>) -> String {
    t.format("%Y-%m-%dT%H:%M:%S%.6fZ").to_string()
}

/// The endpoint a Lease holds and when it expires (`None` when it is not an endpoint
/// Lease, or is unreadable).
fn lease_endpoint(lease: &Value) -> Option<(SocketAddr, chrono::DateTime<chrono::Utc>)> {
    lease["metadata"]["labels"][LEASE_LABEL].as_str()?;
    let spec = &lease["spec"];
    let endpoint = spec["holderIdentity"].as_str()?.parse().ok()?;
    let renewed = chrono::DateTime::parse_from_rfc3339(spec["renewTime"].as_str()?).ok()?;
    let duration = chrono::Duration::seconds(spec["leaseDurationSeconds"].as_i64()?);
    Some((endpoint, renewed.with_timezone(&chrono::Utc) + duration))
}

/// The Endpoints `subsets` and the EndpointSlices (name → object) that list `live`.
pub fn desired(live: &[SocketAddr]) -> (Value, BTreeMap<String, Value>) {
    let mut by_port: BTreeMap<u16, Vec<IpAddr>> = BTreeMap::new();
    for endpoint in live {
        by_port
            .entry(endpoint.port())
            .or_default()
            .push(endpoint.ip());
    }
    for ips in by_port.values_mut() {
        ips.sort();
        ips.dedup();
    }
    let port = |p: u16| json!({ "name": "https", "port": p, "protocol": "TCP" });
    let subsets: Vec<Value> = by_port
        .iter()
        .map(|(p, ips)| {
            let addresses: Vec<Value> = ips
                .iter()
                .map(|ip| json!({ "ip": ip.to_string() }))
                .collect();
            json!({ "addresses": addresses, "ports": [port(*p)] })
        })
        .collect();
    let mut slices = BTreeMap::new();
    for (i, (p, ips)) in by_port.iter().enumerate() {
        let name = if i == 0 {
            "kubernetes".to_string()
        } else {
            format!("kubernetes-{p}")
        };
        let family = if ips.iter().all(IpAddr::is_ipv4) {
            "IPv4"
        } else {
            "IPv6"
        };
        let endpoints: Vec<Value> = ips
            .iter()
            .map(|ip| json!({ "addresses": [ip.to_string()], "conditions": { "ready": true } }))
            .collect();
        slices.insert(
            name.clone(),
            json!({
                "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
                "metadata": { "name": name, "namespace": "default",
                              "labels": { "kubernetes.io/service-name": "kubernetes" } },
                "addressType": family, "endpoints": endpoints, "ports": [port(*p)],
            }),
        );
    }
    (Value::Array(subsets), slices)
}

impl EndpointReconciler {
    /// A reconciler for this instance at `me`, if the catalog serves the kinds.
    pub fn new(catalog: &Catalog, store: Store, me: SocketAddr) -> Option<Self> {
        Some(EndpointReconciler {
            store,
            leases: catalog.get("coordination.k8s.io", "v1", "leases")?,
            endpoints: catalog.get("", "v1", "endpoints")?,
            slices: catalog.get("discovery.k8s.io", "v1", "endpointslices"),
            me,
        })
    }

    /// Renews this instance's Lease (creates it when missing).
    async fn renew(&self) -> Result<(), ApiError> {
        let name = lease_name(self.me);
        let spec = json!({
            "holderIdentity": self.me.to_string(),
            "leaseDurationSeconds": LEASE_DURATION.as_secs(),
            "renewTime": micro_time(chrono::Utc::now()),
        });
        let ctx = WriteContext::new(MANAGER);
        let ns = Some(LEASE_NAMESPACE);
        match self.store.get(&self.leases, ns, &name).await {
            Ok(mut lease) => {
                lease["spec"] = spec;
                self.store
                    .update(&self.leases, ns, &name, lease, Target::Main, &ctx)
                    .await?;
            }
            Err(e) if e.is_not_found() => {
                let lease = json!({
                    "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                    "metadata": { "name": name, "labels": { LEASE_LABEL: "kube-apiserver" } },
                    "spec": spec,
                });
                self.store.create(&self.leases, ns, lease, &ctx).await?;
            }
            Err(e) => return Err(e),
        }
        Ok(())
    }

    /// The endpoints of the live Leases (without this instance's when `leaving`);
    /// Leases expired for a whole lease duration more are deleted on the way.
    async fn live(&self, leaving: bool) -> Result<Vec<SocketAddr>, ApiError> {
        let now = chrono::Utc::now();
        let listed = self
            .store
            .list(&self.leases, Some(LEASE_NAMESPACE), &ListOptions::default())
            .await?;
        let mut live = Vec::new();
        for lease in &listed.items {
            let Some((endpoint, expires)) = lease_endpoint(lease) else {
                continue;
            };
            if leaving && endpoint == self.me {
                continue;
            }
            if expires > now {
                live.push(endpoint);
            } else if expires + chrono::Duration::from_std(LEASE_DURATION).unwrap_or_default() < now
            {
                self.delete_lease(lease).await;
            }
        }
        if !leaving && !live.contains(&self.me) {
            live.push(self.me);
        }
        live.sort();
        Ok(live)
    }

    /// Deletes a Lease as it was read (a renewal since then wins).
    async fn delete_lease(&self, lease: &Value) {
        let name = lease["metadata"]["name"].as_str().unwrap_or_default();
        let mut options = DeleteOptions::default();
        options.preconditions.resource_version = lease["metadata"]["resourceVersion"]
            .as_str()
            .map(str::to_string);
        let deleted = self
            .store
            .delete(&self.leases, Some(LEASE_NAMESPACE), name, &options, None)
            .await;
        match deleted {
            Ok(_) => tracing::info!("deleted the expired endpoint lease {name}"),
            Err(e) if e.is_not_found() || e.is_conflict() => {}
            Err(e) => tracing::warn!("deleting the expired endpoint lease {name}: {e}"),
        }
    }

    /// Writes the Endpoints and EndpointSlices of `live` where they differ.
    async fn write(&self, live: &[SocketAddr]) -> Result<(), ApiError> {
        let (subsets, slices) = desired(live);
        let endpoints = json!({
            "apiVersion": "v1", "kind": "Endpoints",
            "metadata": { "name": "kubernetes", "namespace": "default",
                          "labels": { "endpointslice.kubernetes.io/skip-mirror": "true" } },
            "subsets": subsets,
        });
        self.put(&self.endpoints, "kubernetes", endpoints, &["subsets"])
            .await?;
        let Some(res) = &self.slices else {
            return Ok(());
        };
        for (name, slice) in &slices {
            self.put(
                res,
                name,
                slice.clone(),
                &["addressType", "endpoints", "ports"],
            )
            .await?;
        }
        // Slices of a port no instance serves on any more.
        let listed = self
            .store
            .list(res, Some("default"), &ListOptions::default())
            .await?;
        for slice in &listed.items {
            let name = slice["metadata"]["name"].as_str().unwrap_or_default();
            let ours = slice["metadata"]["labels"]["kubernetes.io/service-name"] == "kubernetes"
                && name.starts_with("kubernetes-");
            if ours && !slices.contains_key(name) {
                match self
                    .store
                    .delete(res, Some("default"), name, &DeleteOptions::default(), None)
                    .await
                {
                    Ok(_) => {}
                    Err(e) if e.is_not_found() => {}
                    Err(e) => return Err(e),
                }
            }
        }
        Ok(())
    }

    /// Creates `obj` in `default`, or updates `fields` of the stored one where they
    /// differ. Another instance's concurrent write wins (its next pass converges).
    async fn put(
        &self,
        res: &ApiResource,
        name: &str,
        obj: Value,
        fields: &[&str],
    ) -> Result<(), ApiError> {
        let ctx = WriteContext::new(MANAGER);
        let ns = Some("default");
        let written = match self.store.get(res, ns, name).await {
            Ok(current) => {
                if fields.iter().all(|f| current.get(*f) == obj.get(*f)) {
                    return Ok(());
                }
                let mut updated = current;
                for f in fields {
                    updated[*f] = obj[*f].clone();
                }
                self.store
                    .update(res, ns, name, updated, Target::Main, &ctx)
                    .await
                    .map(|_| ())
            }
            Err(e) if e.is_not_found() => self.store.create(res, ns, obj, &ctx).await.map(|_| ()),
            Err(e) => Err(e),
        };
        match written {
            Err(e) if e.is_conflict() || e.is_already_exists() => Ok(()),
            other => other,
        }
    }

    /// One pass: renew this instance's Lease, then list every live instance.
    pub async fn reconcile(&self) -> Result<(), ApiError> {
        self.renew().await?;
        let live = self.live(false).await?;
        self.write(&live).await
    }

    /// At shutdown: this instance's Lease goes, and the endpoints without it are written.
    pub async fn remove(&self) -> Result<(), ApiError> {
        let name = lease_name(self.me);
        match self
            .store
            .delete(
                &self.leases,
                Some(LEASE_NAMESPACE),
                &name,
                &DeleteOptions::default(),
                None,
            )
            .await
        {
            Ok(_) => {}
            Err(e) if e.is_not_found() => {}
            Err(e) => return Err(e),
        }
        let live = self.live(true).await?;
        self.write(&live).await
    }

    /// Runs a pass every [`RECONCILE_INTERVAL`] until shutdown begins, then removes this
    /// instance (the returned task ends once it has).
    pub fn spawn(self, hooks: Arc<Hooks>) -> tokio::task::JoinHandle<()> {
        crate::panics::spawn("endpoint reconciler", async move {
            let mut ticker = tokio::time::interval(RECONCILE_INTERVAL);
            ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            ticker.tick().await; // the first pass ran at start-up
            loop {
                tokio::select! {
                    _ = ticker.tick() => {
                        if let Err(e) = self.reconcile().await {
                            tracing::warn!("reconciling the kubernetes service's endpoints: {e}");
                        }
                    }
                    () = hooks.shutdown_initiated() => break,
                }
            }
            match self.remove().await {
                Ok(()) => tracing::info!(
                    "removed {} from the kubernetes service's endpoints",
                    self.me
                ),
                Err(e) => tracing::warn!(
                    "removing {} from the kubernetes service's endpoints: {e}",
                    self.me
                ),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn instances_on_one_address_with_two_ports_get_a_subset_and_slice_each() {
        let live: Vec<SocketAddr> = ["127.0.0.1:7443", "127.0.0.1:6443", "10.0.0.2:6443"]
            .iter()
            .map(|s| s.parse().unwrap())
            .collect();
        let (subsets, slices) = desired(&live);
        assert_eq!(
            subsets,
            json!([
                { "addresses": [{ "ip": "10.0.0.2" }, { "ip": "127.0.0.1" }],
                  "ports": [{ "name": "https", "port": 6443, "protocol": "TCP" }] },
                { "addresses": [{ "ip": "127.0.0.1" }],
                  "ports": [{ "name": "https", "port": 7443, "protocol": "TCP" }] },
            ])
        );
        assert_eq!(
            slices.keys().collect::<Vec<_>>(),
            ["kubernetes", "kubernetes-7443"]
        );
        assert_eq!(slices["kubernetes"]["ports"][0]["port"], 6443);
        assert_eq!(
            slices["kubernetes"]["endpoints"][1]["addresses"],
            json!(["127.0.0.1"])
        );
    }

    #[test]
    fn an_expired_lease_is_told_apart_by_its_renew_time() {
        let lease = |renewed: chrono::DateTime<chrono::Utc>| {
            json!({ "metadata": { "labels": { LEASE_LABEL: "kube-apiserver" } },
                    "spec": { "holderIdentity": "127.0.0.1:6443", "leaseDurationSeconds": 15,
                              "renewTime": micro_time(renewed) } })
        };
        let now = chrono::Utc::now();
        let (endpoint, expires) = lease_endpoint(&lease(now)).unwrap();
        assert_eq!(endpoint, "127.0.0.1:6443".parse().unwrap());
        assert!(expires > now);
        let (_, expires) = lease_endpoint(&lease(now - chrono::Duration::seconds(20))).unwrap();
        assert!(expires < now);
        assert_eq!(lease_endpoint(&json!({ "spec": {} })), None);
        assert_eq!(
            lease_name("[::1]:6443".parse().unwrap()),
            "apiserver-endpoint---1-6443"
        );
    }
}
