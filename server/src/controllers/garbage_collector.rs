//! The garbage collector (kube-controller-manager's, in process): objects whose owners
//! (`metadata.ownerReferences`) are all gone are deleted; an owner deleted with
//! `propagationPolicy=Orphan` keeps its finalizer until no dependent names it any more,
//! one deleted with `Foreground` until its blocking dependents (`blockOwnerDeletion`)
//! are gone.
//!
//! It follows the watch cache of every stored kind, built-in, compiled-in or custom, as
//! the catalog gains and loses them, reading only the metadata of stored objects. The
//! graph holds only objects that name owners or wait for their dependents; an owner not
//! in it is read from storage (a consistent read, so an owner whose cache lags behind its
//! dependent's is never taken for gone). An owner whose kind this server does not serve
//! is taken to exist: nothing is deleted on a reference the collector cannot check.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::Deserialize;
use serde_json::{json, Value};

use crate::api::meta::metadata_mut;
use crate::api::options::{DeleteOptions, Preconditions, PropagationPolicy, ReadAt};
use crate::api::selectors::{FieldSelector, LabelSelector};
use crate::api::ApiError;
use crate::catalog::{ApiResource, Catalog, CatalogChange};
use crate::registry::propagation::{FOREGROUND_FINALIZER, ORPHAN_FINALIZER};
use crate::registry::store::{Store, Target, WatchStart, WriteContext};
use crate::registry::watcher::StoredChange;

use super::queue::WorkQueue;
use super::scope::Scope;

/// The field manager of the collector's writes, as upstream's.
const MANAGER: &str = "generic-garbage-collector";

/// Objects examined at once.
const WORKERS: usize = 4;

/// How long a failed examination waits before it is tried again.
const RETRY: Duration = Duration::from_secs(1);

/// Runs the collector until `scope` stops.
pub fn spawn(catalog: Arc<Catalog>, store: Store, scope: &Scope) {
    let gc = Arc::new(Collector {
        catalog: catalog.clone(),
        store,
        scope: scope.clone(),
        graph: Mutex::default(),
        queue: WorkQueue::default(),
        followed: Mutex::default(),
    });
    for res in catalog.all() {
        gc.follow(res);
    }
    // Weak: once the scope's tasks have ended (leadership lost) the collector goes, and
    // this observer, which the catalog keeps, does nothing.
    let this = Arc::downgrade(&gc);
    let runtime = tokio::runtime::Handle::current();
    catalog.subscribe(Box::new(move |change| {
        let Some(this) = this.upgrade().filter(|c| !c.scope.is_stopped()) else {
            return;
        };
        let change = change.clone();
        runtime.spawn(async move {
            match change {
                CatalogChange::Registered(res) => this.follow(res),
                CatalogChange::Unregistered(res) => this.unfollow(&res),
            }
        });
    }));
    for _ in 0..WORKERS {
        let gc = gc.clone();
        let retries = scope.clone();
        scope.spawn("garbage collector worker", async move {
            loop {
                let uid = gc.queue.take().await;
                if let Err(e) = gc.process(&uid).await {
                    tracing::debug!(uid, error = %e, "garbage collector: will retry");
                    let gc = gc.clone();
                    let again = uid.clone();
                    retries.spawn("garbage collector retry", async move {
                        tokio::time::sleep(RETRY).await;
                        gc.queue.add(again);
                    });
                }
                gc.queue.done(&uid);
            }
        });
    }
}

/// An owner reference as stored (read leniently: the API checked it on write).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
struct OwnerReference {
    #[serde(default)]
    api_version: String,
    #[serde(default)]
    kind: String,
    #[serde(default)]
    name: String,
    #[serde(default)]
    uid: String,
    #[serde(default)]
    block_owner_deletion: Option<bool>,
}

/// The metadata the collector reads from a stored object.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct StoredMeta {
    #[serde(default)]
    uid: String,
    #[serde(default)]
    name: String,
    #[serde(default)]
    namespace: Option<String>,
    #[serde(default)]
    owner_references: Vec<OwnerReference>,
    #[serde(default)]
    finalizers: Vec<String>,
    #[serde(default)]
    deletion_timestamp: Option<String>,
}

impl StoredMeta {
    fn parse(bytes: &[u8]) -> Option<StoredMeta> {
        #[derive(Deserialize)]
        struct Stored {
            #[serde(default)]
            metadata: StoredMeta,
        }
        serde_json::from_slice::<Stored>(bytes)
            .ok()
            .map(|s| s.metadata)
    }
}

/// One object of the graph: it names owners, or waits for its dependents.
#[derive(Debug, Clone)]
struct Node {
    res: Arc<ApiResource>,
    namespace: Option<String>,
    name: String,
    owners: Vec<OwnerReference>,
    /// `deletionTimestamp` is set.
    deleting: bool,
    /// Holds the `orphan` finalizer.
    orphaning: bool,
    /// Holds the `foregroundDeletion` finalizer.
    foreground: bool,
}

impl Node {
    /// Deleted in the foreground: its dependents go first.
    fn waits_for_dependents(&self) -> bool {
        self.deleting && self.foreground
    }
}

/// Objects by uid, and who names each uid as owner.
#[derive(Default)]
struct Graph {
    nodes: HashMap<String, Node>,
    dependents: HashMap<String, HashSet<String>>,
}

impl Graph {
    /// Records the object as now stored; returns the uids to examine.
    fn observe(&mut self, res: &Arc<ApiResource>, meta: StoredMeta) -> Vec<String> {
        let has = |f: &str| meta.finalizers.iter().any(|x| x == f);
        let node = Node {
            res: res.clone(),
            namespace: meta.namespace.filter(|ns| !ns.is_empty()),
            name: meta.name,
            deleting: meta.deletion_timestamp.is_some(),
            orphaning: has(ORPHAN_FINALIZER),
            foreground: has(FOREGROUND_FINALIZER),
            owners: meta.owner_references,
        };
        let uid = meta.uid;
        let relevant =
            !node.owners.is_empty() || (node.deleting && (node.orphaning || node.foreground));
        if !relevant {
            return match self.nodes.contains_key(&uid) {
                true => self.forget(&uid),
                false => Vec::new(),
            };
        }
        let old_owners = self.nodes.get(&uid).map(|n| n.owners.clone());
        let mut examine = Vec::new();
        if old_owners.as_ref() != Some(&node.owners) {
            // A new object, or its owners changed: check them; an owner it left may be
            // waiting for it.
            for gone in old_owners.iter().flatten() {
                if !node.owners.iter().any(|o| o.uid == gone.uid) {
                    self.unlink(&gone.uid, &uid);
                    examine.push(gone.uid.clone());
                }
            }
            for owner in &node.owners {
                self.dependents
                    .entry(owner.uid.clone())
                    .or_default()
                    .insert(uid.clone());
            }
            examine.push(uid.clone());
        } else if node.deleting && (node.orphaning || node.foreground) {
            examine.push(uid.clone());
        }
        self.nodes.insert(uid, node);
        examine
    }

    /// Drops a deleted object; returns its dependents (their owner is gone) and its
    /// owners (one may be waiting for it).
    fn forget(&mut self, uid: &str) -> Vec<String> {
        let mut examine: Vec<String> = self
            .dependents
            .get(uid)
            .into_iter()
            .flatten()
            .cloned()
            .collect();
        if let Some(node) = self.nodes.remove(uid) {
            for owner in node.owners {
                self.unlink(&owner.uid, uid);
                examine.push(owner.uid);
            }
        }
        examine
    }

    fn unlink(&mut self, owner: &str, dependent: &str) {
        if let Some(deps) = self.dependents.get_mut(owner) {
            deps.remove(dependent);
            if deps.is_empty() {
                self.dependents.remove(owner);
            }
        }
    }

    /// `(uid, node)` of each object naming `owner`.
    fn dependents_of(&self, owner: &str) -> Vec<(String, Node)> {
        self.dependents
            .get(owner)
            .into_iter()
            .flatten()
            .filter_map(|d| self.nodes.get(d).map(|n| (d.clone(), n.clone())))
            .collect()
    }
}

/// What an owner reference points at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum OwnerState {
    /// Exists and is not waiting for its dependents.
    Solid,
    /// Gone (or replaced by an object of the same name with another uid).
    Dangling,
    /// Deleted in the foreground: its dependents are to go.
    Waiting,
}

struct Collector {
    catalog: Arc<Catalog>,
    store: Store,
    graph: Mutex<Graph>,
    queue: WorkQueue,
    /// Where its tasks run.
    scope: Scope,
    /// The storage prefix of each followed kind, and its watch task.
    followed: Mutex<HashMap<String, tokio::task::JoinHandle<()>>>,
}

impl Collector {
    fn graph(&self) -> std::sync::MutexGuard<'_, Graph> {
        self.graph.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Starts following `res`'s objects, once per storage prefix (a kind served at
    /// several versions is stored once).
    fn follow(self: &Arc<Self>, res: Arc<ApiResource>) {
        if !res.stored() {
            return;
        }
        let prefix = Store::prefix(&res, None);
        let mut followed = self.followed.lock().unwrap_or_else(|e| e.into_inner());
        if followed.contains_key(&prefix) {
            return;
        }
        let this = self.clone();
        followed.insert(
            prefix,
            self.scope.spawn(
                "garbage collector watch",
                async move { this.watch(res).await },
            ),
        );
    }

    /// Stops following a kind no version of which is served any more.
    fn unfollow(&self, res: &ApiResource) {
        let prefix = Store::prefix(res, None);
        let still_served = self
            .catalog
            .all()
            .iter()
            .any(|r| r.stored() && Store::prefix(r, None) == prefix);
        if still_served {
            return;
        }
        let task = self
            .followed
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&prefix);
        if let Some(task) = task {
            task.abort();
        }
        let mut graph = self.graph();
        let gone: Vec<String> = graph
            .nodes
            .iter()
            .filter(|(_, n)| Store::prefix(&n.res, None) == prefix)
            .map(|(uid, _)| uid.clone())
            .collect();
        for uid in gone {
            graph.forget(&uid);
        }
    }

    /// Feeds the graph from `res`'s watch cache, re-watching when a watch ends.
    async fn watch(self: Arc<Self>, res: Arc<ApiResource>) {
        let prefix = Store::prefix(&res, None);
        let mut first = true;
        loop {
            let started = self
                .store
                .watch(
                    res.clone(),
                    None,
                    WatchStart::State(ReadAt::Any),
                    LabelSelector::default(),
                    FieldSelector::default(),
                )
                .await;
            match started {
                Ok(mut w) => {
                    let mut present = HashSet::new();
                    let mut loaded = !w.initial_pending();
                    if loaded {
                        self.loaded(&prefix, &present, first);
                    }
                    while let Some(change) = w.next_stored().await {
                        let examine = match change {
                            Ok(StoredChange::Existing(kv)) => {
                                let examine = self.changed(&res, &kv.value, Some(&mut present));
                                if !loaded && !w.initial_pending() {
                                    loaded = true;
                                    self.loaded(&prefix, &present, first);
                                }
                                examine
                            }
                            Ok(StoredChange::Event(e)) => match (&e.value, &e.prev) {
                                (Some(value), _) => self.changed(&res, value, None),
                                (None, Some(prev)) => match StoredMeta::parse(prev) {
                                    Some(meta) => self.graph().forget(&meta.uid),
                                    None => Vec::new(),
                                },
                                (None, None) => Vec::new(),
                            },
                            Err(e) => {
                                tracing::debug!(resource = res.def.plural, error = %e, "garbage collector watch");
                                break;
                            }
                        };
                        examine.into_iter().for_each(|uid| self.queue.add(uid));
                    }
                    first = false;
                }
                Err(e) => {
                    tracing::debug!(resource = res.def.plural, error = %e, "garbage collector watch")
                }
            }
            tokio::time::sleep(RETRY).await;
        }
    }

    fn changed(
        &self,
        res: &Arc<ApiResource>,
        value: &[u8],
        present: Option<&mut HashSet<String>>,
    ) -> Vec<String> {
        let Some(meta) = StoredMeta::parse(value) else {
            return Vec::new();
        };
        if let Some(present) = present {
            present.insert(meta.uid.clone());
        }
        self.graph().observe(res, meta)
    }

    /// A watch of `prefix` has delivered its starting objects. After a re-watch, what
    /// went while no watch ran is found: objects of the prefix not there any more are
    /// forgotten, and every object of the graph is looked at again (an owner without
    /// owners of its own may have gone unseen).
    fn loaded(&self, prefix: &str, present: &HashSet<String>, first: bool) {
        if first {
            return;
        }
        let mut graph = self.graph();
        let gone: Vec<String> = graph
            .nodes
            .iter()
            .filter(|(uid, n)| !present.contains(*uid) && Store::prefix(&n.res, None) == prefix)
            .map(|(uid, _)| uid.clone())
            .collect();
        for uid in gone {
            graph.forget(&uid);
        }
        let all: Vec<String> = graph.nodes.keys().cloned().collect();
        drop(graph);
        all.into_iter().for_each(|uid| self.queue.add(uid));
    }

    /// Examines one object of the graph.
    async fn process(&self, uid: &str) -> Result<(), ApiError> {
        let Some(node) = self.graph().nodes.get(uid).cloned() else {
            return Ok(());
        };
        if node.deleting {
            if node.orphaning {
                return self.orphan_dependents(uid, &node).await;
            }
            if node.foreground {
                return self.delete_dependents(uid, &node).await;
            }
            // Already going; its own finalizers decide when.
            return Ok(());
        }
        if node.owners.is_empty() {
            return Ok(());
        }
        self.collect_if_unowned(uid, &node).await
    }

    /// Deletes the object when none of its owners exists; drops references to gone
    /// owners when some do.
    async fn collect_if_unowned(&self, uid: &str, node: &Node) -> Result<(), ApiError> {
        let mut solid = false;
        let mut stale = Vec::new();
        let mut waiting = false;
        for owner in &node.owners {
            match self.owner_state(owner, node).await? {
                OwnerState::Solid => solid = true,
                OwnerState::Dangling => stale.push(owner.uid.clone()),
                OwnerState::Waiting => {
                    waiting = true;
                    stale.push(owner.uid.clone());
                }
            }
        }
        if solid {
            if stale.is_empty() {
                return Ok(());
            }
            return self.drop_owner_references(uid, node, &stale).await;
        }
        let policy = if waiting && self.graph().dependents.contains_key(uid) {
            // Its owner waits for it, and it has dependents of its own: they go first.
            PropagationPolicy::Foreground
        } else if node.orphaning {
            PropagationPolicy::Orphan
        } else if node.foreground {
            PropagationPolicy::Foreground
        } else {
            PropagationPolicy::Background
        };
        tracing::debug!(
            uid,
            name = node.name,
            ?policy,
            "garbage collector: deleting an object whose owners are gone"
        );
        let options = DeleteOptions {
            propagation_policy: Some(policy),
            preconditions: Preconditions {
                uid: Some(uid.to_string()),
                resource_version: None,
            },
            ..DeleteOptions::default()
        };
        match self
            .store
            .delete(
                &node.res,
                node.namespace.as_deref(),
                &node.name,
                &options,
                None,
            )
            .await
        {
            Ok(_) => Ok(()),
            // Gone already, or replaced by another object of that name.
            Err(e) if e.is_not_found() || e.is_conflict() => Ok(()),
            Err(e) => Err(e),
        }
    }

    async fn owner_state(
        &self,
        owner: &OwnerReference,
        dependent: &Node,
    ) -> Result<OwnerState, ApiError> {
        if let Some(known) = self.graph().nodes.get(&owner.uid) {
            return Ok(if known.waits_for_dependents() {
                OwnerState::Waiting
            } else {
                OwnerState::Solid
            });
        }
        let (group, version) = match owner.api_version.split_once('/') {
            Some((g, v)) => (g, v),
            None => ("", owner.api_version.as_str()),
        };
        let Some(res) = self.catalog.by_kind(group, version, &owner.kind) else {
            return Ok(OwnerState::Solid);
        };
        let namespace = match (res.namespaced(), &dependent.namespace) {
            (false, _) => None,
            (true, Some(ns)) => Some(ns.as_str()),
            // A cluster-scoped object cannot be owned by a namespaced one: the reference
            // is left alone rather than taken for gone.
            (true, None) => return Ok(OwnerState::Solid),
        };
        match self
            .store
            .get_at(&res, namespace, &owner.name, ReadAt::Latest)
            .await
        {
            Ok(found) if found["metadata"]["uid"] != owner.uid.as_str() => Ok(OwnerState::Dangling),
            Ok(found) => {
                let foreground = found["metadata"]["finalizers"]
                    .as_array()
                    .is_some_and(|f| f.iter().any(|f| f == FOREGROUND_FINALIZER));
                let deleting = found["metadata"]["deletionTimestamp"].is_string();
                Ok(if deleting && foreground {
                    OwnerState::Waiting
                } else {
                    OwnerState::Solid
                })
            }
            Err(e) if e.is_not_found() => Ok(OwnerState::Dangling),
            Err(e) => Err(e),
        }
    }

    /// Removes the references to `owners` from the object `uid`.
    async fn drop_owner_references(
        &self,
        uid: &str,
        node: &Node,
        owners: &[String],
    ) -> Result<(), ApiError> {
        self.retain(uid, node, "ownerReferences", |r| {
            !owners.iter().any(|o| r["uid"] == o.as_str())
        })
        .await
    }

    /// Removes `finalizer` from the object `uid` (the store deletes it once none remain).
    async fn remove_finalizer(
        &self,
        uid: &str,
        node: &Node,
        finalizer: &str,
    ) -> Result<(), ApiError> {
        self.retain(uid, node, "finalizers", |f| *f != finalizer)
            .await
    }

    /// Keeps only the entries of the metadata list `field` that `keep` accepts, on the
    /// object `uid` (not on another object that took its name); drops an emptied list.
    async fn retain(
        &self,
        uid: &str,
        node: &Node,
        field: &str,
        keep: impl Fn(&Value) -> bool,
    ) -> Result<(), ApiError> {
        let result = self
            .store
            .patch(
                &node.res,
                node.namespace.as_deref(),
                &node.name,
                Target::Main,
                &WriteContext::new(MANAGER),
                |old: &Value| {
                    let mut new = old.clone();
                    if old["metadata"]["uid"] != uid {
                        return Ok(new);
                    }
                    let kept: Vec<Value> = old["metadata"][field]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .filter(|v| keep(v))
                        .cloned()
                        .collect();
                    let meta = metadata_mut(&mut new);
                    if kept.is_empty() {
                        meta.remove(field);
                    } else {
                        meta.insert(field.into(), json!(kept));
                    }
                    Ok(new)
                },
            )
            .await;
        match result {
            Ok(_) => Ok(()),
            Err(e) if e.is_not_found() => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// Orphan: every dependent stops naming the owner, then the owner may go.
    async fn orphan_dependents(&self, uid: &str, node: &Node) -> Result<(), ApiError> {
        let dependents = self.graph().dependents_of(uid);
        for (dep_uid, dep) in &dependents {
            self.drop_owner_references(dep_uid, dep, &[uid.to_string()])
                .await?;
        }
        self.remove_finalizer(uid, node, ORPHAN_FINALIZER).await
    }

    /// Foreground: every dependent is deleted; the owner goes once no dependent that
    /// blocks its deletion remains.
    async fn delete_dependents(&self, uid: &str, node: &Node) -> Result<(), ApiError> {
        let dependents = self.graph().dependents_of(uid);
        let blocking = dependents.iter().any(|(_, dep)| {
            dep.owners
                .iter()
                .any(|o| o.uid == uid && o.block_owner_deletion == Some(true))
        });
        for (dep_uid, dep) in dependents {
            if !dep.deleting || dep.foreground {
                self.queue.add(dep_uid);
            }
        }
        if blocking {
            // Looked at again as each dependent goes.
            return Ok(());
        }
        self.remove_finalizer(uid, node, FOREGROUND_FINALIZER).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stored_metadata_is_read_without_the_rest() {
        let meta = StoredMeta::parse(br#"{"kind":"ConfigMap","data":{"a":"b"},"metadata":{"name":"n","namespace":"ns","uid":"u1","finalizers":["orphan"],"deletionTimestamp":"2026-01-01T00:00:00Z","ownerReferences":[{"apiVersion":"v1","kind":"ConfigMap","name":"o","uid":"u0","blockOwnerDeletion":true}]}}"#).unwrap();
        assert_eq!(meta.uid, "u1");
        assert_eq!(meta.owner_references[0].block_owner_deletion, Some(true));
        assert!(meta.deletion_timestamp.is_some());
    }
}
