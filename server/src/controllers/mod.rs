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
