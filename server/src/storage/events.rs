//! The event log behind storage watches: a bounded in-memory history of committed changes
//! plus a broadcast to live watchers. Each event is shared (`Arc`) by every watcher, and an
//! update's previous value shares the bytes of the event that wrote it while that event is
//! in the history, so an object's bytes are held once however many events name them.
//!
//! The broadcast is small ([`WATCHER_BUFFER`] events): a watcher that falls further behind
//! catches up from the history, and only one that the history has passed gets `Expired`.
//! A broadcast as large as the history would keep up to its capacity of old events alive
//! in its slots beyond the history's bound.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use tokio::sync::{broadcast, mpsc};

use super::{EventReceiver, StorageError, StoredEvent, WatchItem};

/// How many events the history keeps by default (`--storage-history-size`); watches and
/// paginated lists older than that get `Expired` (410).
pub const DEFAULT_HISTORY: usize = 10_000;
/// The fewest events a history may keep: a watch cache lists, then watches from the
/// list's revision, and writes landing in between must still be in the history.
pub const MIN_HISTORY: usize = 100;
/// Events the broadcast holds for live watchers, and the buffer between it and one
/// watcher.
const WATCHER_BUFFER: usize = 1024;

/// History and fan-out of committed events.
pub struct EventLog {
    inner: Mutex<Inner>,
    tx: broadcast::Sender<Arc<StoredEvent>>,
    capacity: usize,
}

struct Inner {
    events: VecDeque<Arc<StoredEvent>>,
    /// The newest revision not in `events` (watches after it can be served).
    floor: u64,
    /// The newest revision published (or the starting revision).
    latest: u64,
}

impl EventLog {
    /// A log whose history starts at `revision` (nothing before it is known) and keeps
    /// the last `capacity` events.
    pub fn new(revision: u64, capacity: usize) -> Self {
        let (tx, _) = broadcast::channel(WATCHER_BUFFER);
        EventLog {
            inner: Mutex::new(Inner {
                events: VecDeque::new(),
                floor: revision,
                latest: revision,
            }),
            tx,
            capacity,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Records a committed event. Callers publish in revision order.
    pub fn publish(&self, mut event: StoredEvent) {
        let mut inner = self.lock();
        if let Some(prev) = inner.value_written_at(&event.key, event.prev_mod_revision) {
            // The same bytes as `event.prev` (read back from storage): hold them once.
            event.prev = Some(prev);
        }
        let event = Arc::new(event);
        inner.latest = inner.latest.max(event.revision);
        inner.events.push_back(event.clone());
        while inner.events.len() > self.capacity {
            if let Some(old) = inner.events.pop_front() {
                inner.floor = old.revision;
            }
        }
        // No receivers is fine: nobody is watching.
        let _ = self.tx.send(event);
    }

    /// The newest revision published. A write is published before it is acknowledged,
    /// so this is the store's current revision.
    pub fn latest(&self) -> u64 {
        self.lock().latest
    }

    /// Drops the history before `revision` (see [`super::Storage::compact`]).
    pub fn compact(&self, revision: u64) -> Result<(), StorageError> {
        let mut inner = self.lock();
        if revision > inner.latest {
            return Err(StorageError::Internal(format!(
                "cannot compact to revision {revision}: the current revision is {}",
                inner.latest
            )));
        }
        let floor = revision.saturating_sub(1);
        while inner.events.front().is_some_and(|e| e.revision <= floor) {
            inner.events.pop_front();
        }
        inner.floor = inner.floor.max(floor);
        Ok(())
    }

    /// The events under `prefix` with revisions in `(after, upto]`; `Ok(None)` while the
    /// log has not yet published `upto` (a commit is published right after it lands).
    pub fn history(
        &self,
        prefix: &str,
        after: u64,
        upto: u64,
    ) -> Result<Option<Vec<Arc<StoredEvent>>>, StorageError> {
        let inner = self.lock();
        if after < inner.floor {
            return Err(StorageError::Expired {
                requested: after,
                oldest: inner.floor + 1,
            });
        }
        if inner.latest < upto {
            return Ok(None);
        }
        Ok(Some(
            inner
                .events
                .iter()
                .filter(|e| e.revision > after && e.revision <= upto && e.key.starts_with(prefix))
                .cloned()
                .collect(),
        ))
    }

    /// The events under `prefix` after revision `after` and the newest revision published,
    /// for a watcher that fell behind the broadcast; `Expired` when the history no longer
    /// reaches back to `after`.
    fn since(
        &self,
        prefix: &str,
        after: u64,
    ) -> Result<(Vec<Arc<StoredEvent>>, u64), StorageError> {
        let inner = self.lock();
        if after < inner.floor {
            return Err(StorageError::Expired {
                requested: after,
                oldest: inner.floor + 1,
            });
        }
        Ok((inner.after(prefix, after), inner.latest))
    }

    /// A watch of `prefix` from after revision `after`.
    pub fn watch(
        self: &Arc<Self>,
        prefix: &str,
        after: u64,
    ) -> Result<EventReceiver, StorageError> {
        let inner = self.lock();
        if after < inner.floor {
            return Err(StorageError::Expired {
                requested: after,
                oldest: inner.floor + 1,
            });
        }
        let backlog = inner.after(prefix, after);
        // Subscribe while holding the lock so nothing falls between backlog and live events.
        let mut live = self.tx.subscribe();
        // How far the store is now: changes elsewhere in the backlog move the watch on too,
        // or a quiet store would never tell a watch cache it is current.
        let latest = inner.latest;
        drop(inner);

        let (tx, rx) = mpsc::channel(WATCHER_BUFFER);
        let prefix = prefix.to_string();
        let log = Arc::downgrade(self);
        crate::panics::spawn("event log watch", async move {
            let mut last = after;
            if !send_backlog(&tx, backlog, latest, &mut last).await {
                return;
            }
            loop {
                match live.recv().await {
                    Ok(e) if e.revision <= last => {}
                    Ok(e) if !e.key.starts_with(&prefix) => {
                        // Tell the watcher how far the store got once the burst of
                        // changes elsewhere is over (what a watch cache needs to
                        // answer consistent reads).
                        last = e.revision;
                        if live.is_empty() && tx.send(Ok(WatchItem::Progress(last))).await.is_err()
                        {
                            return;
                        }
                    }
                    Ok(e) => {
                        last = e.revision;
                        if tx.send(Ok(WatchItem::Event(e))).await.is_err() {
                            return;
                        }
                    }
                    Err(broadcast::error::RecvError::Lagged(_)) => {
                        // What the broadcast dropped is in the history, unless the history
                        // moved on too: then the watcher is closed and the client re-watches.
                        let Some(log) = log.upgrade() else { return };
                        match log.since(&prefix, last) {
                            Ok((missed, latest)) => {
                                drop(log);
                                if !send_backlog(&tx, missed, latest, &mut last).await {
                                    return;
                                }
                            }
                            Err(expired) => {
                                let _ = tx.send(Err(expired)).await;
                                return;
                            }
                        }
                    }
                    Err(broadcast::error::RecvError::Closed) => return,
                }
            }
        });
        Ok(EventReceiver::new(rx, None))
    }
}

impl Inner {
    /// The history's events under `prefix` after revision `after`, found from where
    /// `after` falls (revisions rise along the history) rather than by a scan of it all:
    /// a watcher catching up holds the lock the committer publishes under.
    fn after(&self, prefix: &str, after: u64) -> Vec<Arc<StoredEvent>> {
        let start = self.events.partition_point(|e| e.revision <= after);
        self.events
            .range(start..)
            .filter(|e| e.key.starts_with(prefix))
            .cloned()
            .collect()
    }

    /// The value the history's event at `revision` wrote to `key`, if that event is still
    /// in the history (revisions rise along it, so a binary search finds it).
    fn value_written_at(&self, key: &str, revision: u64) -> Option<Bytes> {
        let at = self
            .events
            .binary_search_by_key(&revision, |e| e.revision)
            .ok()?;
        let event = &self.events[at];
        (event.key == key).then(|| event.value.clone()).flatten()
    }
}

/// Sends `events` (after `last`), then a progress notification up to `latest` when that is
/// further; moves `last` on. False when the watcher is gone.
async fn send_backlog(
    tx: &mpsc::Sender<Result<WatchItem, StorageError>>,
    events: Vec<Arc<StoredEvent>>,
    latest: u64,
    last: &mut u64,
) -> bool {
    for e in events {
        if e.revision <= *last {
            continue;
        }
        *last = e.revision;
        if tx.send(Ok(WatchItem::Event(e))).await.is_err() {
            return false;
        }
    }
    if latest > *last {
        *last = latest;
        if tx.send(Ok(WatchItem::Progress(latest))).await.is_err() {
            return false;
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(
        revision: u64,
        key: &str,
        value: &'static [u8],
        prev: Option<(u64, Bytes)>,
    ) -> StoredEvent {
        StoredEvent {
            revision,
            key: key.into(),
            value: Some(Bytes::from_static(value)),
            prev_mod_revision: prev.as_ref().map_or(0, |p| p.0),
            prev_create_revision: prev.as_ref().map_or(0, |_| 1),
            prev: prev.map(|p| p.1),
            encoded: Default::default(),
            labels: Default::default(),
        }
    }

    /// An update's previous value is the bytes its creating event holds, not a copy.
    #[test]
    fn an_update_shares_the_previous_value_with_the_event_that_wrote_it() {
        let log = Arc::new(EventLog::new(0, 10));
        log.publish(event(1, "/a/x", b"one", None));
        // Storage reads the previous value back: equal bytes at another address.
        let read_back = Bytes::copy_from_slice(b"one");
        log.publish(event(2, "/a/x", b"two", Some((1, read_back))));
        let history = log.history("/a/", 0, 2).unwrap().unwrap();
        let written = history[0].value.as_ref().unwrap();
        let prev = history[1].prev.as_ref().unwrap();
        assert_eq!(prev, written);
        assert_eq!(prev.as_ptr(), written.as_ptr(), "one copy of the bytes");
        // Another key's event at that revision is not taken for it.
        log.publish(event(
            3,
            "/a/y",
            b"y",
            Some((1, Bytes::from_static(b"old y"))),
        ));
        let history = log.history("/a/", 2, 3).unwrap().unwrap();
        assert_eq!(history[0].prev.as_deref(), Some(&b"old y"[..]));
    }

    async fn next(rx: &mut EventReceiver) -> Result<Arc<StoredEvent>, StorageError> {
        tokio::time::timeout(std::time::Duration::from_secs(10), rx.recv())
            .await
            .expect("an event within 10 s")
            .expect("the watch goes on")
    }

    /// A watcher that falls further behind than the broadcast holds catches up from the
    /// history, in order and without gaps; once the history has passed it, it expires.
    #[tokio::test]
    async fn a_watcher_behind_the_broadcast_catches_up_from_the_history() {
        let n = 3 * WATCHER_BUFFER as u64;
        let log = Arc::new(EventLog::new(0, 4 * WATCHER_BUFFER));
        let mut rx = log.watch("/a/", 0).unwrap();
        // Nothing reads while the writes land: the broadcast and the channel overflow.
        for r in 1..=n {
            log.publish(event(r, "/a/x", b"v", None));
        }
        for want in 1..=n {
            assert_eq!(next(&mut rx).await.unwrap().revision, want);
        }

        let log = Arc::new(EventLog::new(0, 2 * WATCHER_BUFFER));
        let mut rx = log.watch("/a/", 0).unwrap();
        for r in 1..=n {
            log.publish(event(r, "/a/x", b"v", None));
        }
        let mut got = 0;
        let expired = loop {
            match next(&mut rx).await {
                Ok(e) => {
                    got += 1;
                    assert_eq!(e.revision, got, "in order, without gaps");
                }
                Err(e) => break e,
            }
        };
        assert!(
            matches!(expired, StorageError::Expired { .. }),
            "{expired:?}"
        );
        assert!(got < n);
    }
}
