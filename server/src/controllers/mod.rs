//! In-process controllers that a control plane needs to keep its API promises.

pub mod crd;
pub mod definitions;
pub mod namespace;
pub mod rbac;

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Notify;

use crate::api::options::{ListOptions, ReadAt};
use crate::api::selectors::{FieldSelector, LabelSelector};
use crate::catalog::ApiResource;
use crate::registry::store::WatchStart;
use crate::registry::Store;

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
        tokio::spawn(notify_on_changes(
            store.clone(),
            res.clone(),
            changed.clone(),
        ));
    }
    tokio::spawn(async move {
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
