//! Controllers that keep one object in every namespace (the `default` ServiceAccount, the
//! `kube-root-ca.crt` ConfigMap): a namespace that appears, or whose object is deleted or
//! changed, is queued and its object created or put back. They follow the watch caches of
//! namespaces and of the one object's name; nothing is listed periodically.

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

use crate::api::options::{DeleteOptions, ReadAt};
use crate::api::selectors::{FieldSelector, LabelSelector};
use crate::api::ApiError;
use crate::catalog::{ApiResource, Catalog};
use crate::registry::store::{Store, Target, WatchStart, WriteContext};

use super::queue::WorkQueue;
use super::scope::Scope;

/// How long a namespace whose sync failed waits before it is tried again.
const RETRY: Duration = Duration::from_secs(1);

/// The object a controller keeps in every namespace that is not terminating.
pub trait PerNamespace: Send + Sync + 'static {
    /// The controller's name, also the field manager of its writes.
    fn controller(&self) -> &'static str;
    /// Group, version and plural of the object's kind.
    fn resource(&self) -> (&'static str, &'static str, &'static str);
    /// The object's name in each namespace.
    fn name(&self) -> &'static str;
    /// The object to create in `namespace`.
    fn wanted(&self, namespace: &str) -> Value;
    /// The update that puts `current` right, or `None` when it is as wanted.
    fn repaired(&self, _current: &Value) -> Option<Value> {
        None
    }
}

/// Runs `controller` until `scope` stops (nothing when the kinds are not served).
pub fn spawn<C: PerNamespace>(catalog: &Catalog, store: Store, controller: C, scope: &Scope) {
    let (group, version, plural) = controller.resource();
    let (Some(namespaces), Some(res)) = (
        catalog.get("", "v1", "namespaces"),
        catalog.get(group, version, plural),
    ) else {
        tracing::warn!(
            controller = controller.controller(),
            "not started: its kinds are not served"
        );
        return;
    };
    let this = Arc::new(Runner {
        controller,
        store,
        namespaces: namespaces.clone(),
        res,
        queue: WorkQueue::default(),
    });
    let mut named = FieldSelector::default();
    named.require_name(this.controller.name());
    scope.spawn(
        "per-namespace controller: namespaces",
        this.clone()
            .enqueue_from(namespaces, FieldSelector::default()),
    );
    let res = this.res.clone();
    scope.spawn(
        "per-namespace controller: objects",
        this.clone().enqueue_from(res, named),
    );
    let retries = scope.clone();
    scope.spawn("per-namespace controller: worker", async move {
        loop {
            let ns = this.queue.take().await;
            if let Err(e) = this.sync(&ns).await {
                tracing::debug!(controller = this.controller.controller(), namespace = ns, error = %e, "will retry");
                let again = this.clone();
                let ns = ns.clone();
                retries.spawn("per-namespace controller retry", async move {
                    tokio::time::sleep(RETRY).await;
                    again.queue.add(ns);
                });
            }
            this.queue.done(&ns);
        }
    });
}

struct Runner<C> {
    controller: C,
    store: Store,
    namespaces: Arc<ApiResource>,
    res: Arc<ApiResource>,
    queue: WorkQueue,
}

impl<C: PerNamespace> Runner<C> {
    /// Queues the namespace of every event of `res` (a namespace's own name for
    /// namespaces), re-watching when a watch ends; the starting state counts as events,
    /// so what changed while no watch ran is seen too.
    async fn enqueue_from(self: Arc<Self>, res: Arc<ApiResource>, fields: FieldSelector) {
        let cluster_scoped = !res.namespaced();
        loop {
            let started = self
                .store
                .watch(
                    res.clone(),
                    None,
                    WatchStart::State(ReadAt::Any),
                    LabelSelector::default(),
                    fields.clone(),
                )
                .await;
            if let Ok(mut w) = started {
                while let Some(Ok(event)) = w.next().await {
                    let Ok(event) = event.object_event(&res) else {
                        continue;
                    };
                    let meta = &event.object["metadata"];
                    let ns = if cluster_scoped {
                        &meta["name"]
                    } else {
                        &meta["namespace"]
                    };
                    if let Some(ns) = ns.as_str() {
                        self.queue.add(ns.to_string());
                    }
                }
            }
            tokio::time::sleep(RETRY).await;
        }
    }

    /// Whether `ns` exists and is not terminating, read from storage (the cache may not
    /// have seen its deletion yet).
    async fn active(&self, ns: &str) -> Result<bool, ApiError> {
        match self.store.get(&self.namespaces, None, ns).await {
            Ok(namespace) => Ok(!namespace["metadata"]["deletionTimestamp"].is_string()),
            Err(e) if e.is_not_found() => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// Creates or repairs the object in `ns`, unless the namespace is gone or terminating.
    async fn sync(&self, ns: &str) -> Result<(), ApiError> {
        if !self.active(ns).await? {
            return Ok(());
        }
        let c = &self.controller;
        let ctx = WriteContext::new(c.controller());
        match self.store.get(&self.res, Some(ns), c.name()).await {
            Err(e) if e.is_not_found() => {
                match self
                    .store
                    .create(&self.res, Some(ns), c.wanted(ns), &ctx)
                    .await
                {
                    Ok(_) => {}
                    Err(e) if e.is_already_exists() => return Ok(()),
                    Err(e) => return Err(e),
                }
                // Writes skip admission here: a namespace whose deletion began meanwhile
                // may already have been emptied, so what was just made is taken back.
                if !self.active(ns).await? {
                    match self
                        .store
                        .delete(
                            &self.res,
                            Some(ns),
                            c.name(),
                            &DeleteOptions::default(),
                            None,
                        )
                        .await
                    {
                        Err(e) if !e.is_not_found() => return Err(e),
                        _ => {}
                    }
                }
                Ok(())
            }
            Err(e) => Err(e),
            Ok(current) => match c.repaired(&current) {
                None => Ok(()),
                // A conflict is retried: the newer object gets looked at again.
                Some(updated) => self
                    .store
                    .update(&self.res, Some(ns), c.name(), updated, Target::Main, &ctx)
                    .await
                    .map(|_| ()),
            },
        }
    }
}
