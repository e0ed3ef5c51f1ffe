//! Leader election through a `coordination.k8s.io/v1` Lease, as client-go's
//! `leaderelection` package runs it for kube-controller-manager: of several instances
//! on one etcd, the one holding the Lease runs the controllers.
//!
//! A candidate tries to take the Lease every retry period (with jitter); it may when
//! there is none, when it names no holder (released), or when the record has not
//! changed for `leaseDurationSeconds` as this instance's clock measures it (so clocks
//! of different machines need not agree). The leader renews every retry period; when
//! no renewal succeeds for the renew deadline, or another holder is seen, it stops its
//! controllers and becomes a candidate again. At shutdown the leader stops its
//! controllers and releases the Lease (client-go's `ReleaseOnCancel`), so another
//! instance takes over at its next try rather than after the lease duration.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::api::ApiError;
use crate::catalog::ApiResource;
use crate::registry::store::{Store, Target, WriteContext};
use crate::server::health::Hooks;

use super::scope::Scope;

/// The field manager of the Lease writes, as upstream's.
const MANAGER: &str = "kube-controller-manager";
/// client-go's jitter factor of a candidate's retry period.
const JITTER: f64 = 1.2;

/// The leader election flags, checked (`--leader-elect-*`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeaderElectionConfig {
    /// How long a Lease that is not renewed stays held.
    pub lease_duration: Duration,
    /// How long the leader keeps trying to renew before it stops leading.
    pub renew_deadline: Duration,
    /// The pause between tries to take or renew the Lease.
    pub retry_period: Duration,
    /// The Lease's namespace.
    pub namespace: String,
    /// The Lease's name.
    pub name: String,
}

impl LeaderElectionConfig {
    /// Every problem of the durations and names, as upstream's validation and
    /// client-go's elector refuse them.
    pub fn check(&self) -> Vec<String> {
        let mut errors = Vec::new();
        for (flag, d) in [
            ("--leader-elect-lease-duration", self.lease_duration),
            ("--leader-elect-renew-deadline", self.renew_deadline),
            ("--leader-elect-retry-period", self.retry_period),
        ] {
            if d.is_zero() {
                errors.push(format!("{flag} must be greater than zero"));
            }
        }
        if self.lease_duration <= self.renew_deadline {
            errors.push(
                "--leader-elect-lease-duration must be greater than --leader-elect-renew-deadline"
                    .into(),
            );
        }
        if self.renew_deadline <= self.retry_period.mul_f64(JITTER) {
            errors.push(format!(
                "--leader-elect-renew-deadline must be greater than {JITTER} times --leader-elect-retry-period"
            ));
        }
        for (flag, value) in [
            ("--leader-elect-resource-name", &self.name),
            ("--leader-elect-resource-namespace", &self.namespace),
        ] {
            if value.is_empty() {
                errors.push(format!("{flag} must not be empty"));
            }
        }
        errors
    }

    /// `leaseDurationSeconds`: whole seconds, rounded up.
    fn lease_seconds(&self) -> u64 {
        let d = self.lease_duration;
        (d.as_secs() + u64::from(d.subsec_nanos() > 0)).max(1)
    }
}

/// This process's holder identity, `<hostname>_<uuid>` as kube-controller-manager forms it.
pub fn identity() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .or_else(|| std::env::var("HOSTNAME").ok())
        .map(|h| h.trim().to_string())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "localhost".into());
    format!("{host}_{}", uuid::Uuid::new_v4())
}

/// One candidate for the Lease.
pub struct LeaderElector {
    config: LeaderElectionConfig,
    identity: String,
    store: Store,
    lease: Arc<ApiResource>,
    /// The Lease's spec as last read or written, and when it was first seen so.
    observed: Option<(Value, Instant)>,
}

/// What one try to take or renew the Lease found.
#[derive(Debug, PartialEq, Eq)]
enum Attempt {
    /// This instance holds the Lease now.
    Held,
    /// Another instance holds it (validly), or wrote it first.
    Other(String),
}

impl LeaderElector {
    /// A candidate for the Lease of `config` as `identity`.
    pub fn new(
        config: LeaderElectionConfig,
        identity: String,
        store: Store,
        lease: Arc<ApiResource>,
    ) -> Self {
        LeaderElector {
            config,
            identity,
            store,
            lease,
            observed: None,
        }
    }

    fn lease_name(&self) -> String {
        format!("{}/{}", self.config.namespace, self.config.name)
    }

    /// Campaigns until shutdown: each time the Lease is won, `lead` starts the controllers
    /// in a scope that stops when it is lost. At shutdown a held Lease is released.
    pub async fn run(mut self, hooks: Arc<Hooks>, lead: impl Fn(&Scope)) {
        let lease = self.lease_name();
        tracing::info!(
            identity = self.identity,
            "attempting to acquire leader lease {lease}..."
        );
        loop {
            tokio::select! {
                () = hooks.shutdown_initiated() => return,
                () = self.acquire() => {}
            }
            tracing::info!(
                identity = self.identity,
                "successfully acquired lease {lease}"
            );
            let (scope, stopper) = Scope::new();
            lead(&scope);
            let lost = tokio::select! {
                () = hooks.shutdown_initiated() => None,
                lost = self.keep_renewing() => Some(lost),
            };
            drop(stopper);
            match lost {
                Some(why) => tracing::warn!(
                    identity = self.identity,
                    "leader election lost: {why}; the controllers stopped"
                ),
                None => {
                    self.release().await;
                    return;
                }
            }
        }
    }

    /// Tries until the Lease is held, a jittered retry period apart.
    async fn acquire(&mut self) {
        loop {
            match self.try_acquire_or_renew().await {
                Ok(Attempt::Held) => return,
                Ok(Attempt::Other(_)) => {}
                Err(e) => tracing::debug!(error = %e, "acquiring lease {}", self.lease_name()),
            }
            let jitter = rand::random::<f64>() * JITTER;
            let retry = self.config.retry_period;
            tokio::time::sleep(retry + retry.mul_f64(jitter)).await;
        }
    }

    /// Renews every retry period; returns why leadership was lost.
    async fn keep_renewing(&mut self) -> String {
        let mut renewed = Instant::now();
        loop {
            tokio::time::sleep(self.config.retry_period).await;
            let left = self.config.renew_deadline.saturating_sub(renewed.elapsed());
            match tokio::time::timeout(left, self.try_acquire_or_renew()).await {
                Ok(Ok(Attempt::Held)) => renewed = Instant::now(),
                Ok(Ok(Attempt::Other(holder))) if !holder.is_empty() => {
                    return format!("lease {} is held by {holder}", self.lease_name())
                }
                Ok(Ok(Attempt::Other(_))) => {}
                Ok(Err(e)) => tracing::debug!(error = %e, "renewing lease {}", self.lease_name()),
                Err(_) => {}
            }
            if renewed.elapsed() >= self.config.renew_deadline {
                return format!("failed to renew lease {}: timed out", self.lease_name());
            }
        }
    }

    /// One try: creates the Lease, takes it over, or renews it.
    async fn try_acquire_or_renew(&mut self) -> Result<Attempt, ApiError> {
        let ns = Some(self.config.namespace.as_str());
        let name = self.config.name.clone();
        let ctx = WriteContext::new(MANAGER);
        let now = micro_time();
        let current = match self.store.get(&self.lease, ns, &name).await {
            Ok(current) => current,
            Err(e) if e.is_not_found() => {
                let spec = self.spec(&now, &now, 0);
                let lease = json!({
                    "apiVersion": "coordination.k8s.io/v1",
                    "kind": "Lease",
                    "metadata": { "name": name, "namespace": self.config.namespace },
                    "spec": spec,
                });
                return match self.store.create(&self.lease, ns, lease, &ctx).await {
                    Ok(_) => {
                        self.observed = Some((spec, Instant::now()));
                        Ok(Attempt::Held)
                    }
                    Err(e) if e.is_already_exists() => Ok(Attempt::Other(String::new())),
                    Err(e) => Err(e),
                };
            }
            Err(e) => return Err(e),
        };
        let spec = current["spec"].clone();
        if self.observed.as_ref().is_none_or(|(seen, _)| *seen != spec) {
            self.observed = Some((spec.clone(), Instant::now()));
        }
        let holder = spec["holderIdentity"].as_str().unwrap_or_default();
        let seconds = spec["leaseDurationSeconds"].as_u64().unwrap_or(0);
        let valid = self
            .observed
            .as_ref()
            .is_some_and(|(_, at)| at.elapsed() < Duration::from_secs(seconds));
        if !holder.is_empty() && holder != self.identity && valid {
            return Ok(Attempt::Other(holder.to_string()));
        }
        let transitions = spec["leaseTransitions"].as_u64().unwrap_or(0);
        let spec = if holder == self.identity {
            let acquired = spec["acquireTime"].as_str().unwrap_or(&now).to_string();
            self.spec(&acquired, &now, transitions)
        } else {
            self.spec(&now, &now, transitions + 1)
        };
        let mut updated = current;
        updated["spec"] = spec.clone();
        match self
            .store
            .update(&self.lease, ns, &name, updated, Target::Main, &ctx)
            .await
        {
            Ok(_) => {
                self.observed = Some((spec, Instant::now()));
                Ok(Attempt::Held)
            }
            Err(e) if e.is_conflict() || e.is_not_found() => Ok(Attempt::Other(String::new())),
            Err(e) => Err(e),
        }
    }

    /// The spec of a Lease this instance holds.
    fn spec(&self, acquired: &str, renewed: &str, transitions: u64) -> Value {
        json!({
            "holderIdentity": self.identity,
            "leaseDurationSeconds": self.config.lease_seconds(),
            "acquireTime": acquired,
            "renewTime": renewed,
            "leaseTransitions": transitions,
        })
    }

    /// Gives the Lease up, if this instance still holds it: no holder, a one-second
    /// duration, the transitions kept (as client-go releases).
    async fn release(&mut self) {
        let ns = Some(self.config.namespace.as_str());
        let name = self.config.name.clone();
        let current = match self.store.get(&self.lease, ns, &name).await {
            Ok(current) => current,
            Err(e) => {
                tracing::warn!(error = %e, "releasing lease {}", self.lease_name());
                return;
            }
        };
        if current["spec"]["holderIdentity"].as_str() != Some(self.identity.as_str()) {
            return;
        }
        let now = micro_time();
        let mut released = current.clone();
        released["spec"] = json!({
            "holderIdentity": "",
            "leaseDurationSeconds": 1,
            "acquireTime": now,
            "renewTime": now,
            "leaseTransitions": current["spec"]["leaseTransitions"].as_u64().unwrap_or(0),
        });
        let ctx = WriteContext::new(MANAGER);
        match self
            .store
            .update(&self.lease, ns, &name, released, Target::Main, &ctx)
            .await
        {
            Ok(_) => tracing::info!(
                identity = self.identity,
                "released lease {}",
                self.lease_name()
            ),
            Err(e) => tracing::warn!(error = %e, "releasing lease {}", self.lease_name()),
        }
    }
}

/// Now as a MicroTime (RFC 3339 with microseconds), the Lease's time format.
fn micro_time() -> String {
    chrono::Utc::now()
        .format("%Y-%m-%dT%H:%M:%S%.6fZ")
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(lease: u64, renew: u64, retry: u64) -> LeaderElectionConfig {
        LeaderElectionConfig {
            lease_duration: Duration::from_millis(lease),
            renew_deadline: Duration::from_millis(renew),
            retry_period: Duration::from_millis(retry),
            namespace: "kube-system".into(),
            name: "kube-controller-manager".into(),
        }
    }

    /// Two candidates for one Lease in one store (the embedded one, in a temp dir).
    fn candidates(config: &LeaderElectionConfig) -> (tempfile::TempDir, [LeaderElector; 2]) {
        let dir = tempfile::tempdir().unwrap();
        let storage = crate::storage::embedded::EmbeddedStorage::open(&dir.path().join("db"))
            .map(|s| Arc::new(s) as Arc<dyn crate::storage::Storage>)
            .unwrap();
        let store = Store::new(crate::storage::ResourceStorages::new(storage, None), false);
        let catalog = crate::catalog::Catalog::from_definitions(crate::generated::CATALOG).unwrap();
        let lease = catalog.get("coordination.k8s.io", "v1", "leases").unwrap();
        let elector =
            |id: &str| LeaderElector::new(config.clone(), id.into(), store.clone(), lease.clone());
        (dir, [elector("a"), elector("b")])
    }

    #[tokio::test]
    async fn one_candidate_holds_the_lease_until_it_releases_it_or_it_expires() {
        let config = config(1_000, 800, 100);
        let (_dir, [mut a, mut b]) = candidates(&config);
        assert_eq!(a.try_acquire_or_renew().await.unwrap(), Attempt::Held);
        assert_eq!(
            b.try_acquire_or_renew().await.unwrap(),
            Attempt::Other("a".into())
        );
        // Renewed, so still held; the renewal keeps the acquire time and transitions.
        assert_eq!(a.try_acquire_or_renew().await.unwrap(), Attempt::Held);
        assert_eq!(
            b.try_acquire_or_renew().await.unwrap(),
            Attempt::Other("a".into())
        );
        // Released: taken at once, one more transition.
        a.release().await;
        assert_eq!(b.try_acquire_or_renew().await.unwrap(), Attempt::Held);
        let lease = b
            .store
            .get(&b.lease, Some("kube-system"), "kube-controller-manager");
        let spec = lease.await.unwrap()["spec"].clone();
        assert_eq!(
            (
                spec["holderIdentity"].as_str(),
                spec["leaseTransitions"].as_u64()
            ),
            (Some("b"), Some(1))
        );
        // Not renewed for its duration (1 s, by a's own clock since it saw the change): taken.
        assert_eq!(
            a.try_acquire_or_renew().await.unwrap(),
            Attempt::Other("b".into())
        );
        tokio::time::sleep(Duration::from_millis(1_100)).await;
        assert_eq!(a.try_acquire_or_renew().await.unwrap(), Attempt::Held);
        // b's next renewal sees a: it stops leading at once.
        let lost = tokio::time::timeout(Duration::from_secs(5), b.keep_renewing()).await;
        assert_eq!(
            lost.unwrap(),
            "lease kube-system/kube-controller-manager is held by a"
        );
    }

    #[test]
    fn upstream_defaults_pass_the_checks() {
        assert_eq!(config(15_000, 10_000, 2_000).check(), Vec::<String>::new());
    }

    #[test]
    fn every_bad_duration_is_reported_together() {
        let errors = config(0, 10_000, 9_000).check();
        assert!(
            errors
                .iter()
                .any(|e| e.contains("--leader-elect-lease-duration must be greater than zero")),
            "{errors:?}"
        );
        assert!(
            errors
                .iter()
                .any(|e| e.contains("must be greater than --leader-elect-renew-deadline")),
            "{errors:?}"
        );
        assert!(
            errors
                .iter()
                .any(|e| e.contains("1.2 times --leader-elect-retry-period")),
            "{errors:?}"
        );
        let mut unnamed = config(15_000, 10_000, 2_000);
        unnamed.name.clear();
        assert_eq!(
            unnamed.check(),
            vec!["--leader-elect-resource-name must not be empty".to_string()]
        );
    }

    #[test]
    fn the_lease_duration_is_whole_seconds_rounded_up() {
        assert_eq!(config(15_000, 1, 0).lease_seconds(), 15);
        assert_eq!(config(2_500, 1, 0).lease_seconds(), 3);
        assert_eq!(config(200, 1, 0).lease_seconds(), 1);
    }

    #[test]
    fn the_identity_is_the_hostname_and_a_uuid() {
        let id = identity();
        let (host, uuid) = id.rsplit_once('_').unwrap();
        assert!(!host.is_empty());
        assert!(uuid::Uuid::parse_str(uuid).is_ok(), "{id}");
        assert_ne!(identity(), id);
    }
}
