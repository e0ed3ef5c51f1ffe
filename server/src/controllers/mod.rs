//! In-process controllers that a control plane needs to keep its API promises.

pub mod crd;
pub mod definitions;
pub mod endpoint_reconciler;
pub mod event_ttl;
pub mod garbage_collector;
pub mod leader_election;
pub mod namespace;
pub mod per_namespace;
pub mod pod_gc;
pub mod queue;
pub mod rbac;
pub mod root_ca;
pub mod scope;
pub mod serviceaccount;

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Notify;

use crate::api::options::{ListOptions, ReadAt};
use crate::api::selectors::{FieldSelector, LabelSelector};
use crate::catalog::{ApiResource, Catalog};
use crate::registry::store::WatchStart;
use crate::registry::Store;
use scope::Scope;

/// The controllers `--controllers` names, with the older names kube-controller-manager
/// still accepts for them.
pub const CONTROLLERS: &[(&str, &str)] = &[
    ("garbage-collector-controller", "garbagecollector"),
    ("namespace-controller", "namespace"),
    ("pod-garbage-collector-controller", "podgc"),
    ("serviceaccount-controller", "serviceaccount"),
    (
        "root-ca-certificate-publisher-controller",
        "root-ca-cert-publisher",
    ),
];

/// Which built-in controllers run (`--controllers`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Selection {
    enabled: Vec<&'static str>,
}

impl Selection {
    /// Reads `*`, `name` and `-name` entries, later entries winning over `*`.
    pub fn parse(entries: &[String]) -> Result<Selection, String> {
        let canonical = |name: &str| {
            CONTROLLERS
                .iter()
                .find(|(n, old)| *n == name || *old == name)
                .map(|(n, _)| *n)
                .ok_or_else(|| {
                    let known: Vec<&str> = CONTROLLERS.iter().map(|(n, _)| *n).collect();
                    format!(
                        "--controllers: {name:?} is not a known controller (known: {})",
                        known.join(", ")
                    )
                })
        };
        let all = entries.iter().any(|e| e == "*");
        let mut enabled: Vec<&'static str> = if all {
            CONTROLLERS.iter().map(|(n, _)| *n).collect()
        } else {
            Vec::new()
        };
        for entry in entries.iter().map(|e| e.trim()).filter(|e| *e != "*") {
            match entry.strip_prefix('-') {
                Some(name) => {
                    let name = canonical(name)?;
                    enabled.retain(|n| *n != name);
                }
                None => {
                    let name = canonical(entry)?;
                    if !enabled.contains(&name) {
                        enabled.push(name);
                    }
                }
            }
        }
        Ok(Selection { enabled })
    }

    /// Whether the controller named `name` (its current name) runs.
    pub fn runs(&self, name: &str) -> bool {
        self.enabled.contains(&name)
    }
}

/// The controllers kube-controller-manager runs upstream, which run on one instance at a
/// time (the leader, when several share one etcd): the garbage collector, namespace
/// deletion, the removal of pods whose grace period ended, the `default`
/// ServiceAccount, the root CA publisher and the Events TTL.
pub struct ControllerManager {
    pub catalog: Arc<Catalog>,
    pub store: Store,
    /// Which of them `--controllers` selects (the Events TTL always runs).
    pub selection: Selection,
    /// The CA the root CA publisher publishes.
    pub root_ca_pem: String,
    /// `--event-ttl`.
    pub event_ttl: Duration,
}

impl ControllerManager {
    /// Starts the selected controllers; they run until `scope` stops.
    pub fn start(&self, scope: &Scope) {
        let (catalog, store) = (&self.catalog, &self.store);
        if self.selection.runs("namespace-controller") {
            namespace::spawn(catalog.clone(), store.clone(), scope);
        }
        if self.selection.runs("garbage-collector-controller") {
            garbage_collector::spawn(catalog.clone(), store.clone(), scope);
        }
        if self.selection.runs("pod-garbage-collector-controller") {
            pod_gc::spawn(catalog, store.clone(), scope);
        }
        // Not a selectable controller: upstream's storage expires Events whatever runs.
        event_ttl::spawn(catalog, store.clone(), self.event_ttl, scope);
        if self.selection.runs("serviceaccount-controller") {
            let accounts = serviceaccount::ServiceAccounts;
            per_namespace::spawn(catalog, store.clone(), accounts, scope);
        }
        if self
            .selection
            .runs("root-ca-certificate-publisher-controller")
        {
            let publisher = root_ca::RootCaPublisher {
                ca_pem: self.root_ca_pem.clone(),
            };
            per_namespace::spawn(catalog, store.clone(), publisher, scope);
        }
    }
}

/// As informers read: from the watch cache.
pub fn from_cache() -> ListOptions {
    ListOptions {
        at: ReadAt::Any,
        ..ListOptions::default()
    }
}

/// A snapshot rebuilt from the watch caches of some kinds.
#[async_trait::async_trait]
pub trait Reload: Send + Sync + 'static {
    /// Rebuilds it from what the caches of `kinds` hold now.
    async fn reload(&self, kinds: &[Arc<ApiResource>]);
}

/// Loads `this` now (so the first request sees it), then reloads it after every change
/// of `kinds` (changes arriving together make one reload), in a task of its own.
pub async fn follow<T: Reload>(this: Arc<T>, store: &Store, kinds: Vec<Arc<ApiResource>>) {
    this.reload(&kinds).await;
    let changed = Arc::new(Notify::new());
    for res in &kinds {
        crate::panics::spawn(
            "change notifier",
            notify_on_changes(store.clone(), res.clone(), changed.clone()),
        );
    }
    crate::panics::spawn("controller reload", async move {
        loop {
            changed.notified().await;
            this.reload(&kinds).await;
        }
    });
}

/// Tells `changed` of every event of `res`, re-watching when a watch ends.
pub async fn notify_on_changes(store: Store, res: Arc<ApiResource>, changed: Arc<Notify>) {
    loop {
        let started = store
            .watch(
                res.clone(),
                None,
                WatchStart::State(ReadAt::Any),
                LabelSelector::default(),
                FieldSelector::default(),
            )
            .await;
        // The current objects come first (as ADDED), so what changed while no watch ran
        // is seen too.
        if let Ok(mut w) = started {
            while let Some(Ok(_)) = w.next().await {
                changed.notify_one();
            }
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(entries: &[&str]) -> Result<Selection, String> {
        Selection::parse(&entries.iter().map(|e| e.to_string()).collect::<Vec<_>>())
    }

    #[test]
    fn controllers_are_selected_as_kube_controller_manager_selects_them() {
        let all = parse(&["*"]).unwrap();
        assert!(all.runs("garbage-collector-controller") && all.runs("namespace-controller"));
        let no_gc = parse(&["*", "-garbagecollector"]).unwrap();
        assert!(!no_gc.runs("garbage-collector-controller") && no_gc.runs("namespace-controller"));
        let only_ns = parse(&["namespace"]).unwrap();
        assert!(
            !only_ns.runs("garbage-collector-controller") && only_ns.runs("namespace-controller")
        );
        let no_sa = parse(&["*", "-serviceaccount"]).unwrap();
        assert!(!no_sa.runs("serviceaccount-controller"));
        assert!(no_sa.runs("root-ca-certificate-publisher-controller"));
        let no_ca = parse(&["*", "-root-ca-certificate-publisher-controller"]).unwrap();
        assert!(!no_ca.runs("root-ca-certificate-publisher-controller"));
        let e = parse(&["*", "-bogus"]).unwrap_err();
        assert!(e.contains("\"bogus\" is not a known controller"), "{e}");
    }
}
