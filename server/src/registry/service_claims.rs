//! Service addresses claimed in storage, so that API server instances sharing one
//! storage never hand out the same cluster IP or node port.
//!
//! A cluster IP is claimed by creating its `networking.k8s.io/v1` `IPAddress` object
//! (named by the address, `spec.parentRef` the Service, upstream's labels), a node port
//! by creating the key `/registry/servicenodeports/<port>` (its value names the
//! Service). Both are creates that fail when the key exists, which is what makes a
//! claim exclusive across instances: a chosen address whose claim already exists is
//! taken, and the choice is made again. Claims are released when the Service is
//! deleted, when an update stops holding them (a type change), and when the write that
//! made them fails. A repair pass (at start-up, then every [`REPAIR_INTERVAL`]) creates
//! the claims stored Services lack (Services stored before claims existed, a crash
//! between the claim and the write of a delete) and removes the allocator's claims no
//! Service holds once two passes in a row found them unchanged.

use std::collections::BTreeMap;
use std::net::Ipv4Addr;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};

use super::codec::{decode, stored_bytes};
use super::managed_fields;
use super::services::{self, Claimed, Parent, Reservation, Taken};
use super::store::Store;
use crate::api::meta::{meta_str, metadata_mut, now_rfc3339};
use crate::api::options::ListOptions;
use crate::api::ApiError;
use crate::catalog::{ApiResource, Catalog};
use crate::storage::StorageError;

/// Where node port claims are kept, one key per port (not a resource: nothing lists
/// or serves them but the allocator).
pub const NODE_PORT_PREFIX: &str = "/registry/servicenodeports/";

/// How often the repair pass runs after the one at start-up. An orphan claim is removed
/// when two passes in a row find it unchanged, so at least this long after it was seen:
/// far longer than a Service write takes between its claim and its storage write.
pub const REPAIR_INTERVAL: Duration = Duration::from_secs(180);

/// How many times a choice is made again after finding its address claimed by another
/// writer (each retry knows one more taken address).
const MAX_CLAIM_ATTEMPTS: usize = 32;

/// The field manager of the allocator's `IPAddress` writes.
const MANAGER: &str = "kube-apiserver";

/// The kinds the claims are made with.
#[derive(Clone)]
pub struct ServiceKinds {
    pub services: Arc<ApiResource>,
    pub ip_addresses: Arc<ApiResource>,
}

impl ServiceKinds {
    /// Both kinds from the catalog, if it serves them.
    pub fn from_catalog(catalog: &Catalog) -> Option<ServiceKinds> {
        Some(ServiceKinds {
            services: catalog.get("", "v1", "services")?,
            ip_addresses: catalog.get("networking.k8s.io", "v1", "ipaddresses")?,
        })
    }
}

/// Why a claim was not made.
enum ClaimError {
    /// Another Service (or writer) holds this cluster IP.
    IpTaken(Ipv4Addr),
    /// Another Service holds this node port.
    PortTaken(u16),
    Failed(ApiError),
}

/// What a Service write holds while it is in flight: the in-process reservation, the
/// claims it made in storage (removed if the write does not happen) and the claims of
/// addresses the stored object held and the new one drops (removed once it happened).
pub struct AddressClaims {
    _reservation: Reservation,
    store: Option<Store>,
    parent: Parent,
    claimed: Taken,
    freed: Taken,
    done: bool,
}

impl AddressClaims {
    /// The write was stored: the claims it made stay, the ones it dropped go.
    pub async fn commit(mut self) {
        self.done = true;
        if let Some(store) = &self.store {
            if !self.freed.is_empty() {
                store.release(&self.parent, &self.freed).await;
            }
        }
    }
}

impl AddressClaims {
    /// The write failed: the claims it made are removed (those of addresses the stored
    /// Service holds excepted, see [`Store::release`]).
    pub async fn roll_back(mut self) {
        self.done = true;
        if let Some(store) = &self.store {
            if !self.claimed.is_empty() {
                store.release(&self.parent, &self.claimed).await;
            }
        }
    }
}

impl Drop for AddressClaims {
    fn drop(&mut self) {
        if self.done || self.claimed.is_empty() {
            return;
        }
        let (Some(store), Ok(runtime)) = (self.store.take(), tokio::runtime::Handle::try_current())
        else {
            return;
        };
        // Dropped unsettled (the request was cancelled mid-write): give the addresses
        // back (a write that was stored after all keeps those its Service holds).
        let (parent, claimed) = (self.parent.clone(), std::mem::take(&mut self.claimed));
        runtime.spawn(async move { store.release(&parent, &claimed).await });
    }
}

/// The storage key of node port `port`'s claim.
fn port_key(port: u16) -> String {
    format!("{NODE_PORT_PREFIX}{port}")
}

impl Store {
    /// Fills in (and checks) the addresses `obj` takes (a Service's cluster IP and node
    /// ports) and claims the new ones in storage, unless `dry_run`. The caller keeps the
    /// returned claims until its write is answered and commits them once it is stored.
    pub(super) async fn allocate(
        &self,
        res: &ApiResource,
        obj: &mut Value,
        old: Option<&Value>,
        dry_run: bool,
    ) -> Result<Option<AddressClaims>, ApiError> {
        if !res.strategy.allocates_addresses() {
            return Ok(None);
        }
        let allocator = self.service_allocator();
        let _choosing = allocator.choosing.lock().await;
        let name = meta_str(obj, "name").unwrap_or_default().to_string();
        let parent = Parent::of(obj);
        // What the client asked for by value: a collision on one of these is its error.
        let requested = Taken::of_service(obj);
        let kinds = if dry_run { None } else { self.service_kinds() };
        let mut collided = Taken::default();
        for _ in 0..MAX_CLAIM_ATTEMPTS {
            // Reservations first, then the stored state (see `registry::services`).
            let mut taken = allocator.in_flight();
            for svc in &self.list(res, None, &ListOptions::default()).await?.items {
                taken.add_service(svc);
            }
            // A claim naming this very Service is its own (left by a write of it that
            // failed before releasing, or made by a concurrent create of the same name,
            // which then fails on the name): adopted, not taken.
            let claims = self.claims(needs_claims_read(obj)).await?;
            let others = |p: Option<Parent>| p.as_ref() != Some(&parent);
            taken.ips.extend(
                claims
                    .ips
                    .iter()
                    .filter(|(_, obj)| others(Parent::of_ip_address(obj)))
                    .map(|(ip, _)| *ip),
            );
            taken.ports.extend(
                claims
                    .ports
                    .iter()
                    .filter(|(_, (value, _))| others(Parent::of_port_claim(value)))
                    .map(|(port, _)| *port),
            );
            taken.ips.extend(collided.ips.iter().copied());
            taken.ports.extend(collided.ports.iter().copied());
            let mut chosen = obj.clone();
            let reservation = allocator
                .assign(&mut chosen, old, taken)
                .map_err(|causes| ApiError::invalid(res, &name, causes))?;
            let freed = old
                .map(Taken::of_service)
                .unwrap_or_default()
                .minus(&Taken::of_service(&chosen));
            let Some(kinds) = &kinds else {
                *obj = chosen;
                return Ok(Some(AddressClaims {
                    _reservation: reservation,
                    store: (!dry_run).then(|| self.clone()),
                    parent,
                    claimed: Taken::default(),
                    freed,
                    done: false,
                }));
            };
            let wanted = reservation.taken().clone();
            match self.claim(kinds, &parent, &wanted).await {
                Ok(()) => {
                    *obj = chosen;
                    return Ok(Some(AddressClaims {
                        _reservation: reservation,
                        store: Some(self.clone()),
                        parent,
                        claimed: wanted,
                        freed,
                        done: false,
                    }));
                }
                Err(ClaimError::IpTaken(ip)) if requested.ips.contains(&ip) => {
                    return Err(ApiError::invalid(res, &name, vec![services::ip_taken(ip)]))
                }
                Err(ClaimError::PortTaken(port)) if requested.ports.contains(&port) => {
                    let index = services::port_index(obj, port);
                    return Err(ApiError::invalid(
                        res,
                        &name,
                        vec![services::port_taken(index, port)],
                    ));
                }
                Err(ClaimError::IpTaken(ip)) => {
                    tracing::debug!(
                        "cluster IP {ip} was claimed by another writer: choosing again"
                    );
                    collided.ips.insert(ip);
                }
                Err(ClaimError::PortTaken(port)) => {
                    tracing::debug!(
                        "node port {port} was claimed by another writer: choosing again"
                    );
                    collided.ports.insert(port);
                }
                Err(ClaimError::Failed(e)) => return Err(e),
            }
        }
        Err(ApiError::internal(format!(
            "failed to allocate addresses for service {name}: other writers claimed the chosen ones {MAX_CLAIM_ATTEMPTS} times; try again"
        )))
    }

    /// Claims `wanted` for `parent`, all or none: on a collision or failure the claims
    /// made so far are removed again.
    async fn claim(
        &self,
        kinds: &ServiceKinds,
        parent: &Parent,
        wanted: &Taken,
    ) -> Result<(), ClaimError> {
        let mut made = Taken::default();
        let mut outcome = Ok(());
        for ip in &wanted.ips {
            match self
                .create_claim_object(&kinds.ip_addresses, parent.ip_address(*ip))
                .await
            {
                Ok(()) => {
                    made.ips.insert(*ip);
                }
                Err(e) if e.is_already_exists() => {
                    if self.ip_claimed_by(kinds, *ip).await.as_ref() == Some(parent) {
                        continue; // adopted (see `allocate`)
                    }
                    outcome = Err(ClaimError::IpTaken(*ip));
                    break;
                }
                Err(e) => {
                    outcome = Err(ClaimError::Failed(e));
                    break;
                }
            }
        }
        if outcome.is_ok() {
            for port in &wanted.ports {
                let created = self
                    .storages
                    .base()
                    .create(&port_key(*port), parent.port_claim().into())
                    .await;
                match created {
                    Ok(_) => {
                        made.ports.insert(*port);
                    }
                    Err(StorageError::AlreadyExists(_)) => {
                        if self.port_claimed_by(*port).await.as_ref() == Some(parent) {
                            continue; // adopted
                        }
                        outcome = Err(ClaimError::PortTaken(*port));
                        break;
                    }
                    Err(e) => {
                        outcome = Err(ClaimError::Failed(ApiError::internal(format!(
                            "claiming node port {port}: {e}"
                        ))));
                        break;
                    }
                }
            }
        }
        if outcome.is_err() {
            self.release(parent, &made).await;
        }
        outcome
    }

    /// The Service the claim of cluster IP `ip` names, if there is one.
    async fn ip_claimed_by(&self, kinds: &ServiceKinds, ip: Ipv4Addr) -> Option<Parent> {
        let res = &kinds.ip_addresses;
        let key = Store::key(res, None, &ip.to_string());
        let kv = self.storage(res).get(&key).await.ok()??;
        Parent::of_ip_address(&decode(res, &kv).ok()?)
    }

    /// The Service the claim of node port `port` names, if there is one.
    async fn port_claimed_by(&self, port: u16) -> Option<Parent> {
        let kv = self.storages.base().get(&port_key(port)).await.ok()??;
        Parent::of_port_claim(&kv.value)
    }

    /// Creates one of the allocator's objects (an `IPAddress`) as the server's own write:
    /// no admission, no address allocation of its own.
    async fn create_claim_object(&self, res: &ApiResource, mut obj: Value) -> Result<(), ApiError> {
        let name = meta_str(&obj, "name").unwrap_or_default().to_string();
        {
            let meta = metadata_mut(&mut obj);
            meta.insert("uid".into(), json!(uuid::Uuid::new_v4().to_string()));
            meta.insert("creationTimestamp".into(), json!(now_rfc3339()));
        }
        managed_fields::record_update(&mut obj, None, res, MANAGER, None, &now_rfc3339());
        let rev = self
            .storage(res)
            .create(
                &Store::key(res, None, &name),
                stored_bytes(res, &obj).await?,
            )
            .await
            .map_err(|e| super::storage_errors::map_err(res, &name, e))?;
        self.wrote(res, rev);
        Ok(())
    }

    /// Removes the claims of `addresses` that name `parent` (a claim another Service
    /// made since is left alone), except those the stored Service `parent` holds (a
    /// concurrent write of the same Service that adopted them and won). Failures are
    /// logged: the repair pass removes what is left.
    pub(super) async fn release(&self, parent: &Parent, addresses: &Taken) {
        let mut addresses = addresses.clone();
        if let Some(kinds) = self.service_kinds() {
            let ns = Some(parent.namespace.as_str()).filter(|n| !n.is_empty());
            if let Ok(stored) = self.get(&kinds.services, ns, &parent.name).await {
                addresses = addresses.minus(&Taken::of_service(&stored));
            }
        }
        let addresses = &addresses;
        if let Some(kinds) = self.service_kinds() {
            let res = &kinds.ip_addresses;
            for ip in &addresses.ips {
                let name = ip.to_string();
                let key = Store::key(res, None, &name);
                let found = match self.storage(res).get(&key).await {
                    Ok(found) => found,
                    Err(e) => {
                        tracing::warn!("releasing cluster IP {ip}: {e}");
                        continue;
                    }
                };
                let Some(kv) = found else { continue };
                let holder = decode(res, &kv)
                    .ok()
                    .and_then(|obj| Parent::of_ip_address(&obj));
                if holder.as_ref() != Some(parent) {
                    continue;
                }
                match self.storage(res).delete(&key, Some(kv.mod_revision)).await {
                    Ok((_, rev)) => self.wrote(res, rev),
                    Err(StorageError::NotFound(_) | StorageError::Conflict { .. }) => {}
                    Err(e) => tracing::warn!("releasing cluster IP {ip}: {e}"),
                }
            }
        }
        let storage = self.storages.base();
        for port in &addresses.ports {
            let key = port_key(*port);
            let Ok(Some(kv)) = storage.get(&key).await else {
                continue;
            };
            if Parent::of_port_claim(&kv.value).as_ref() != Some(parent) {
                continue;
            }
            match storage.delete(&key, Some(kv.mod_revision)).await {
                Ok(_) | Err(StorageError::NotFound(_) | StorageError::Conflict { .. }) => {}
                Err(e) => tracing::warn!("releasing node port {port}: {e}"),
            }
        }
    }

    /// Releases what a deleted Service held.
    pub(super) async fn released_with(&self, res: &ApiResource, svc: &Value) {
        if res.strategy.allocates_addresses() {
            self.release(&Parent::of(svc), &Taken::of_service(svc))
                .await;
        }
    }

    /// The claims in storage: cluster IPs (when `ports_too` is false, node ports are
    /// not read) with their `IPAddress` objects, node ports with their keys' values.
    async fn claims(&self, ports_too: bool) -> Result<StoredClaims, ApiError> {
        let mut claims = StoredClaims::default();
        let Some(kinds) = self.service_kinds() else {
            return Ok(claims);
        };
        let listed = self
            .list(&kinds.ip_addresses, None, &ListOptions::default())
            .await?;
        for obj in listed.items {
            if let Some(ip) = meta_str(&obj, "name").and_then(|n| n.parse().ok()) {
                claims.ips.insert(ip, obj);
            }
        }
        if ports_too {
            let page = self
                .storages
                .base()
                .list(NODE_PORT_PREFIX, None, 0)
                .await
                .map_err(|e| ApiError::internal(format!("listing node port claims: {e}")))?;
            for kv in page.items {
                if let Some(port) = kv
                    .key
                    .strip_prefix(NODE_PORT_PREFIX)
                    .and_then(|p| p.parse().ok())
                {
                    claims
                        .ports
                        .insert(port, (kv.value.to_vec(), kv.mod_revision));
                }
            }
        }
        Ok(claims)
    }

    /// One repair pass (see the module's comment). `suspects` carries the orphan claims
    /// the previous pass found (by key, with their revision) to the next one.
    pub async fn repair_service_addresses(&self, suspects: &mut Suspects) -> Result<(), ApiError> {
        let Some(kinds) = self.service_kinds() else {
            return Ok(());
        };
        let allocator = self.service_allocator();
        let services = self
            .list(&kinds.services, None, &ListOptions::default())
            .await?
            .items;
        let claims = self.claims(true).await?;
        let ips: Vec<Claimed<Ipv4Addr>> = claims
            .ips
            .iter()
            .map(|(ip, obj)| Claimed {
                address: *ip,
                parent: Parent::of_ip_address(obj),
                managed: obj["metadata"]["labels"][services::MANAGED_BY_LABEL]
                    == services::IP_ALLOCATOR,
            })
            .collect();
        let ports: Vec<Claimed<u16>> = claims
            .ports
            .iter()
            .map(|(port, (value, _))| Claimed {
                address: *port,
                parent: Parent::of_port_claim(value),
                managed: true,
            })
            .collect();
        let plan = allocator.repair_plan(&services, &ips, &ports);
        for (ip, parent) in &plan.missing_ips {
            match self
                .create_claim_object(&kinds.ip_addresses, parent.ip_address(*ip))
                .await
            {
                Ok(()) => tracing::info!(
                    "repaired the claim of cluster IP {ip} for service {}/{}",
                    parent.namespace,
                    parent.name
                ),
                Err(e) if e.is_already_exists() => {}
                Err(e) => tracing::warn!("repairing the claim of cluster IP {ip}: {e}"),
            }
        }
        for (port, parent) in &plan.missing_ports {
            let created = self
                .storages
                .base()
                .create(&port_key(*port), parent.port_claim().into())
                .await;
            match created {
                Ok(_) => tracing::info!(
                    "repaired the claim of node port {port} for service {}/{}",
                    parent.namespace,
                    parent.name
                ),
                Err(StorageError::AlreadyExists(_)) => {}
                Err(e) => tracing::warn!("repairing the claim of node port {port}: {e}"),
            }
        }
        let mut next = Suspects::default();
        let res = &kinds.ip_addresses;
        for ip in &plan.orphan_ips {
            let key = Store::key(res, None, &ip.to_string());
            let Some(rev) = claims.ips.get(ip).and_then(resource_version) else {
                continue;
            };
            if suspects.0.get(&key) != Some(&rev) {
                next.0.insert(key, rev);
                continue;
            }
            match self.storage(res).delete(&key, Some(rev)).await {
                Ok((_, written)) => {
                    self.wrote(res, written);
                    tracing::info!("released cluster IP {ip}: no service holds it");
                }
                Err(StorageError::NotFound(_) | StorageError::Conflict { .. }) => {}
                Err(e) => tracing::warn!("releasing the orphan cluster IP {ip}: {e}"),
            }
        }
        for port in &plan.orphan_ports {
            let key = port_key(*port);
            let Some((_, rev)) = claims.ports.get(port) else {
                continue;
            };
            if suspects.0.get(&key) != Some(rev) {
                next.0.insert(key, *rev);
                continue;
            }
            match self.storages.base().delete(&key, Some(*rev)).await {
                Ok(_) => tracing::info!("released node port {port}: no service holds it"),
                Err(StorageError::NotFound(_) | StorageError::Conflict { .. }) => {}
                Err(e) => tracing::warn!("releasing the orphan node port {port}: {e}"),
            }
        }
        *suspects = next;
        Ok(())
    }
}

/// Whether an allocation must read the node port claims (a Service that has them).
fn needs_claims_read(svc: &Value) -> bool {
    matches!(
        svc["spec"]["type"].as_str(),
        Some("NodePort" | "LoadBalancer")
    )
}

/// An object's resourceVersion as a revision.
fn resource_version(obj: &Value) -> Option<u64> {
    meta_str(obj, "resourceVersion")?.parse().ok()
}

/// The claims read from storage.
#[derive(Default)]
struct StoredClaims {
    ips: BTreeMap<Ipv4Addr, Value>,
    /// Each port's claim value and modification revision.
    ports: BTreeMap<u16, (Vec<u8>, u64)>,
}

/// Orphan claims a repair pass found, by storage key, with the revision they had.
#[derive(Debug, Default)]
pub struct Suspects(BTreeMap<String, u64>);

/// Runs the repair pass at once and then every [`REPAIR_INTERVAL`], on every instance
/// (as each kube-apiserver runs its repair controllers); `repaired` is set after the
/// first pass (the `start-service-ip-repair-controllers` post-start hook).
pub fn spawn_repair(store: Store, repaired: Arc<std::sync::atomic::AtomicBool>) {
    crate::panics::spawn("service address repair", async move {
        let mut suspects = Suspects::default();
        let mut ticker = tokio::time::interval(REPAIR_INTERVAL);
        ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            ticker.tick().await;
            if let Err(e) = store.repair_service_addresses(&mut suspects).await {
                tracing::warn!("repairing service address claims: {e}");
            }
            repaired.store(true, std::sync::atomic::Ordering::Release);
        }
    });
}
