//! Pods whose graceful deletion has run its course are removed
//! (`pod-garbage-collector-controller`).
//!
//! A DELETE of a pod that a node runs only sets `deletionTimestamp` (the deadline) and
//! `deletionGracePeriodSeconds`; upstream the kubelet stops the containers and then
//! deletes the pod with a grace period of 0. No kubelet runs here, so this controller
//! stands in for that last step: once a pod's deadline passes, it deletes the pod with
//! a grace period of 0 (on the condition that it is still the same pod, by uid), and
//! `kubectl delete pod` returns instead of waiting forever. A later DELETE that shortens
//! the grace period moves the deadline; the newest one counts.
//!
//! One task follows the pods' watch cache (stored bytes; only objects that mention a
//! deletion are decoded) and keeps each terminating pod's deadline in a heap.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;
use tokio::time::Instant;

use crate::api::options::{DeleteOptions, Preconditions, ReadAt};
use crate::api::selectors::{FieldSelector, LabelSelector};
use crate::catalog::{ApiResource, Catalog};
use crate::registry::store::{Store, WatchStart};
use crate::registry::watcher::StoredChange;

use super::scope::Scope;

/// Pods deleted per tick at most (the rest wait for the next tick).
const PER_TICK: usize = 500;
/// The longest wait between ticks; ticks come sooner when a deadline is sooner.
const TICK: Duration = Duration::from_secs(1);

/// A pod: namespace and name.
type PodKey = (String, String);

/// The terminating pods' deadlines.
#[derive(Default)]
struct Deadlines {
    /// (deadline, revision of the write that set it, pod).
    heap: BinaryHeap<Reverse<(Instant, u64, PodKey)>>,
    /// Each terminating pod's latest write: its revision and uid.
    latest: HashMap<PodKey, (u64, String)>,
}

impl Deadlines {
    fn terminating(&mut self, key: PodKey, revision: u64, uid: String, deadline: Instant) {
        let newer = self
            .latest
            .insert(key.clone(), (revision, uid))
            .is_none_or(|(r, _)| r != revision);
        if newer {
            self.heap.push(Reverse((deadline, revision, key)));
        }
    }

    fn gone(&mut self, key: &PodKey) {
        self.latest.remove(key);
    }

    /// Up to `max` pods whose latest deadline passed by `now`, with their uids.
    fn due(&mut self, now: Instant, max: usize) -> Vec<(PodKey, String)> {
        let mut due = Vec::new();
        while due.len() < max {
            match self.heap.peek() {
                Some(Reverse((deadline, _, _))) if *deadline <= now => {}
                _ => break,
            }
            let Some(Reverse((_, revision, key))) = self.heap.pop() else {
                break;
            };
            // An older write's deadline: a later one replaced it.
            if let Some((latest, uid)) = self.latest.get(&key) {
                if *latest == revision {
                    due.push((key.clone(), uid.clone()));
                    self.latest.remove(&key);
                }
            }
        }
        due
    }

    fn next_deadline(&self) -> Option<Instant> {
        self.heap.peek().map(|Reverse((d, _, _))| *d)
    }
}

fn lock(d: &Mutex<Deadlines>) -> std::sync::MutexGuard<'_, Deadlines> {
    d.lock().unwrap_or_else(|e| e.into_inner())
}

/// Runs the controller until `scope` stops (nothing when pods are not served).
pub fn spawn(catalog: &Catalog, store: Store, scope: &Scope) {
    let Some(pods) = catalog.get("", "v1", "pods") else {
        return;
    };
    let deadlines = Arc::new(Mutex::new(Deadlines::default()));
    scope.spawn(
        "pod grace period watch",
        follow(store.clone(), pods.clone(), deadlines.clone()),
    );
    scope.spawn("pod garbage collector", async move {
        loop {
            let now = Instant::now();
            let due = lock(&deadlines).due(now, PER_TICK);
            for ((ns, name), uid) in &due {
                let options = DeleteOptions {
                    grace_period_seconds: Some(0),
                    preconditions: Preconditions {
                        uid: Some(uid.clone()),
                        resource_version: None,
                    },
                    ..DeleteOptions::default()
                };
                match store.delete(&pods, Some(ns), name, &options, None).await {
                    // Gone already, or another pod of that name since.
                    Err(e) if e.is_not_found() || e.is_conflict() => {}
                    Err(e) => {
                        tracing::warn!(namespace = ns, name, error = %e, "removing a terminated pod")
                    }
                    Ok(_) => {}
                }
            }
            if due.len() == PER_TICK {
                tokio::task::yield_now().await;
                continue;
            }
            let next = lock(&deadlines).next_deadline();
            let wake = next.map_or(now + TICK, |d| d.min(now + TICK));
            tokio::time::sleep_until(wake).await;
        }
    });
}

/// Records every terminating pod's deadline, re-watching when a watch ends.
async fn follow(store: Store, pods: Arc<ApiResource>, deadlines: Arc<Mutex<Deadlines>>) {
    let prefix = Store::prefix(&pods, None);
    loop {
        let started = store
            .watch(
                pods.clone(),
                None,
                WatchStart::State(ReadAt::Any),
                LabelSelector::default(),
                FieldSelector::default(),
            )
            .await;
        if let Ok(mut w) = started {
            while let Some(Ok(change)) = w.next_stored().await {
                let (key, revision, value) = match &change {
                    StoredChange::Existing(kv) => (&kv.key, kv.mod_revision, Some(&kv.value)),
                    StoredChange::Event(e) => (&e.key, e.revision, e.value.as_ref()),
                };
                let Some(pod) = pod_key(&prefix, key) else {
                    continue;
                };
                match value.and_then(|v| terminating(v)) {
                    Some((uid, deadline)) => {
                        lock(&deadlines).terminating(pod, revision, uid, deadline)
                    }
                    None => lock(&deadlines).gone(&pod),
                }
            }
        }
        tokio::time::sleep(TICK).await;
    }
}

/// The pod a storage key names (`<prefix><namespace>/<name>`).
fn pod_key(prefix: &str, key: &str) -> Option<PodKey> {
    let (ns, name) = key.strip_prefix(prefix)?.split_once('/')?;
    Some((ns.to_string(), name.to_string()))
}

/// For a pod in a graceful deletion: its uid and when its grace period ends.
fn terminating(bytes: &[u8]) -> Option<(String, Instant)> {
    // Most writes are of pods not being deleted: skip those undecoded.
    if !bytes
        .windows(b"deletionGracePeriodSeconds".len())
        .any(|w| w == b"deletionGracePeriodSeconds")
    {
        return None;
    }
    let pod: Value = serde_json::from_slice(bytes).ok()?;
    let meta = &pod["metadata"];
    if meta["deletionGracePeriodSeconds"].as_i64().unwrap_or(0) <= 0 {
        // Grace 0 with finalizers: the last finalizer's removal deletes it.
        return None;
    }
    let at = chrono::DateTime::parse_from_rfc3339(meta["deletionTimestamp"].as_str()?).ok()?;
    let left = at
        .with_timezone(&chrono::Utc)
        .signed_duration_since(chrono::Utc::now())
        .to_std()
        .unwrap_or_default();
    // A deadline past what the clock can hold (a huge grace period) never comes.
    let deadline = Instant::now().checked_add(left)?;
    Some((meta["uid"].as_str()?.to_string(), deadline))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(name: &str) -> PodKey {
        ("ns".into(), name.into())
    }

    #[test]
    fn the_latest_deadline_of_a_pod_counts_and_removed_pods_are_forgotten() {
        let mut d = Deadlines::default();
        let t0 = Instant::now();
        d.terminating(key("a"), 1, "u1".into(), t0 + Duration::from_secs(30));
        // Shortened by a second DELETE.
        d.terminating(key("a"), 2, "u1".into(), t0 + Duration::from_secs(5));
        d.terminating(key("b"), 3, "u2".into(), t0);
        d.gone(&key("b"));
        assert!(d.due(t0, 10).is_empty());
        assert_eq!(
            d.due(t0 + Duration::from_secs(5), 10),
            vec![(key("a"), "u1".to_string())]
        );
        assert!(d.due(t0 + Duration::from_secs(60), 10).is_empty());
    }

    #[test]
    fn only_pods_with_a_grace_period_running_have_a_deadline() {
        let soon = (chrono::Utc::now() + chrono::Duration::seconds(30)).to_rfc3339();
        let pod = serde_json::json!({"metadata": {"uid": "u", "deletionTimestamp": soon, "deletionGracePeriodSeconds": 30}});
        let (uid, at) = terminating(&serde_json::to_vec(&pod).unwrap()).unwrap();
        assert_eq!(uid, "u");
        assert!(at > Instant::now() + Duration::from_secs(20));
        let finalizing = serde_json::json!({"metadata": {"uid": "u", "deletionTimestamp": soon, "deletionGracePeriodSeconds": 0}});
        assert!(terminating(&serde_json::to_vec(&finalizing).unwrap()).is_none());
        assert!(terminating(b"{\"metadata\":{}}").is_none());
        assert_eq!(
            pod_key("/registry/pods/", "/registry/pods/ns/p"),
            Some(key("p"))
        );
    }
}
