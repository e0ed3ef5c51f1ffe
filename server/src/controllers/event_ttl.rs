//! Events TTL (`--event-ttl`): core/v1 and events.k8s.io/v1 Events are deleted once that
//! long has passed since their last write, as kube-apiserver's etcd leases expire them.
//!
//! Both kinds are one stored resource (events.k8s.io/v1 is stored as core/v1), so one
//! task follows its watch cache once (stored bytes, nothing decoded but the timestamps
//! of objects found at start-up) and keeps a deadline per write in a heap; a
//! tick deletes at most [`PER_TICK`] expired Events, each on the condition that it was
//! not written again since (its resourceVersion), so a rewritten Event lives on.

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

/// Expired Events deleted per tick at most (the rest wait for the next tick).
const PER_TICK: usize = 500;
/// The longest wait between ticks; ticks come sooner when a deadline is sooner.
const TICK: Duration = Duration::from_secs(1);

/// The Event kinds that expire: group, version, plural.
const EVENT_KINDS: [(&str, &str, &str); 2] =
    [("", "v1", "events"), ("events.k8s.io", "v1", "events")];

/// An Event: its kind (index into the followed kinds), namespace and name.
type EventKey = (usize, String, String);

/// What is known of the Events' writes.
#[derive(Default)]
struct Deadlines {
    /// When each write expires: (deadline, revision of the write, Event).
    heap: BinaryHeap<Reverse<(Instant, u64, EventKey)>>,
    /// The revision of each Event's last write.
    latest: HashMap<EventKey, u64>,
}

impl Deadlines {
    fn written(&mut self, key: EventKey, revision: u64, deadline: Instant) {
        if self.latest.insert(key.clone(), revision) != Some(revision) {
            self.heap.push(Reverse((deadline, revision, key)));
        }
    }

    /// Up to `max` Events whose last write expired by `now`, with that write's revision.
    fn expired(&mut self, now: Instant, max: usize) -> Vec<(EventKey, u64)> {
        let mut due = Vec::new();
        while due.len() < max {
            match self.heap.peek() {
                Some(Reverse((deadline, _, _))) if *deadline <= now => {}
                _ => break,
            }
            let Some(Reverse((_, revision, key))) = self.heap.pop() else {
                break;
            };
            // An older write's deadline: the Event was written again since.
            if self.latest.get(&key) == Some(&revision) {
                self.latest.remove(&key);
                due.push((key, revision));
            }
        }
        due
    }

    fn next_deadline(&self) -> Option<Instant> {
        self.heap.peek().map(|Reverse((d, _, _))| *d)
    }
}

/// Runs the expiry until `scope` stops (nothing for kinds that are not served).
pub fn spawn(catalog: &Catalog, store: Store, ttl: Duration, scope: &Scope) {
    // Each stored resource once: kinds that share storage expire an Event once.
    let mut prefixes = std::collections::HashSet::new();
    let kinds: Vec<Arc<ApiResource>> = EVENT_KINDS
        .iter()
        .filter_map(|(g, v, p)| catalog.get(g, v, p))
        .filter(|res| prefixes.insert(Store::prefix(res, None)))
        .collect();
    let deadlines = Arc::new(Mutex::new(Deadlines::default()));
    for (index, res) in kinds.iter().enumerate() {
        scope.spawn(
            "event TTL watch",
            follow(store.clone(), res.clone(), index, ttl, deadlines.clone()),
        );
    }
    scope.spawn("event TTL", async move {
        loop {
            let now = Instant::now();
            let due = lock(&deadlines).expired(now, PER_TICK);
            for ((index, ns, name), revision) in &due {
                let options = DeleteOptions {
                    preconditions: Preconditions {
                        uid: None,
                        resource_version: Some(revision.to_string()),
                    },
                    ..DeleteOptions::default()
                };
                match store
                    .delete(&kinds[*index], Some(ns), name, &options, None)
                    .await
                {
                    // Gone already, or written again (its new deadline is queued).
                    Err(e) if e.is_not_found() || e.is_conflict() => {}
                    Err(e) => tracing::warn!(namespace = ns, name, error = %e, "expiring an Event"),
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

fn lock(d: &Mutex<Deadlines>) -> std::sync::MutexGuard<'_, Deadlines> {
    d.lock().unwrap_or_else(|e| e.into_inner())
}

/// Records every write of `res`'s Events, re-watching when a watch ends.
async fn follow(
    store: Store,
    res: Arc<ApiResource>,
    index: usize,
    ttl: Duration,
    deadlines: Arc<Mutex<Deadlines>>,
) {
    let prefix = Store::prefix(&res, None);
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
        if let Ok(mut w) = started {
            while let Some(Ok(change)) = w.next_stored().await {
                let (key, revision, deadline) = match &change {
                    // Found at start-up: its last write's time is read from the object.
                    StoredChange::Existing(kv) => {
                        let age = last_write_age(&kv.value).unwrap_or_default();
                        let deadline = Instant::now() + ttl.saturating_sub(age);
                        (&kv.key, kv.mod_revision, deadline)
                    }
                    StoredChange::Event(e) if e.value.is_some() => {
                        (&e.key, e.revision, Instant::now() + ttl)
                    }
                    StoredChange::Event(e) => {
                        if let Some(k) = event_key(&prefix, index, &e.key) {
                            lock(&deadlines).latest.remove(&k);
                        }
                        continue;
                    }
                };
                if let Some(k) = event_key(&prefix, index, key) {
                    lock(&deadlines).written(k, revision, deadline);
                }
            }
        }
        tokio::time::sleep(TICK).await;
    }
}

/// The Event a storage key names (`<prefix><namespace>/<name>`).
fn event_key(prefix: &str, index: usize, key: &str) -> Option<EventKey> {
    let (ns, name) = key.strip_prefix(prefix)?.split_once('/')?;
    Some((index, ns.to_string(), name.to_string()))
}

/// How long ago a stored Event was last written, from the newest of its timestamps
/// (managed fields, `lastTimestamp`, `eventTime`, the series' last observation, creation).
fn last_write_age(bytes: &[u8]) -> Option<Duration> {
    let obj: Value = serde_json::from_slice(bytes).ok()?;
    let managed = obj["metadata"]["managedFields"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|m| &m["time"]);
    let newest = managed
        .chain([
            &obj["metadata"]["creationTimestamp"],
            &obj["lastTimestamp"],
            &obj["eventTime"],
            &obj["deprecatedLastTimestamp"],
            &obj["series"]["lastObservedTime"],
        ])
        .filter_map(Value::as_str)
        .filter_map(|s| chrono::DateTime::parse_from_rfc3339(s).ok())
        .max()?;
    let age = chrono::Utc::now().signed_duration_since(newest);
    Some(age.to_std().unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(name: &str) -> EventKey {
        (0, "ns".into(), name.into())
    }

    #[test]
    fn only_an_events_last_write_expires_it() {
        let mut d = Deadlines::default();
        let t0 = Instant::now();
        d.written(key("a"), 1, t0);
        d.written(key("b"), 2, t0);
        // `b` written again later: its first deadline no longer counts.
        d.written(key("b"), 3, t0 + Duration::from_secs(60));
        assert_eq!(d.expired(t0, 10), vec![(key("a"), 1)]);
        assert!(d.expired(t0 + Duration::from_secs(59), 10).is_empty());
        assert_eq!(
            d.expired(t0 + Duration::from_secs(60), 10),
            vec![(key("b"), 3)]
        );
    }

    #[test]
    fn a_tick_expires_at_most_its_share() {
        let mut d = Deadlines::default();
        let t0 = Instant::now();
        for i in 0..5 {
            d.written(key(&i.to_string()), i, t0);
        }
        assert_eq!(d.expired(t0, 3).len(), 3);
        assert_eq!(d.expired(t0, 3).len(), 2);
    }

    #[test]
    fn the_age_of_a_stored_event_is_that_of_its_newest_timestamp() {
        let recent = chrono::Utc::now() - chrono::Duration::seconds(30);
        let stored = serde_json::json!({
            "metadata": { "creationTimestamp": "2020-01-01T00:00:00Z" },
            "lastTimestamp": recent.to_rfc3339(),
        });
        let age = last_write_age(&serde_json::to_vec(&stored).unwrap()).unwrap();
        assert!(
            age >= Duration::from_secs(29) && age < Duration::from_secs(120),
            "{age:?}"
        );
        assert_eq!(
            event_key("/registry/events/", 1, "/registry/events/ns/e1"),
            Some((1, "ns".into(), "e1".into()))
        );
    }
}
