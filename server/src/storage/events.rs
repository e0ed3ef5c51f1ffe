//! The event log behind storage watches: a bounded in-memory history of committed changes
//! plus a broadcast to live watchers. Each event is shared (`Arc`) by every watcher.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use tokio::sync::{broadcast, mpsc};

use super::{EventReceiver, StorageError, StoredEvent, WatchItem};

/// How many events the history keeps; watches older than that get `Expired` (410).
pub const DEFAULT_HISTORY: usize = 10_000;
/// Buffer between the broadcast and one watcher.
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
    /// A log whose history starts at `revision` (nothing before it is known).
    pub fn new(revision: u64, capacity: usize) -> Self {
        let (tx, _) = broadcast::channel(WATCHER_BUFFER.max(capacity.min(65_536)));
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
    pub fn publish(&self, event: StoredEvent) {
        let event = Arc::new(event);
        let mut inner = self.lock();
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

    /// A watch of `prefix` from after revision `after`.
    pub fn watch(&self, prefix: &str, after: u64) -> Result<EventReceiver, StorageError> {
        let inner = self.lock();
        if after < inner.floor {
            return Err(StorageError::Expired {
                requested: after,
                oldest: inner.floor + 1,
            });
        }
        let backlog: Vec<Arc<StoredEvent>> = inner
            .events
            .iter()
            .filter(|e| e.revision > after && e.key.starts_with(prefix))
            .cloned()
            .collect();
        // Subscribe while holding the lock so nothing falls between backlog and live events.
        let mut live = self.tx.subscribe();
        // How far the store is now: changes elsewhere in the backlog move the watch on too,
        // or a quiet store would never tell a watch cache it is current.
        let latest = inner.latest;
        drop(inner);

        let (tx, rx) = mpsc::channel(WATCHER_BUFFER);
        let prefix = prefix.to_string();
        crate::panics::spawn("event log watch", async move {
            let mut last = after;
            for e in backlog {
                last = e.revision;
                if tx.send(Ok(WatchItem::Event(e))).await.is_err() {
                    return;
                }
            }
            if latest > last {
                last = latest;
                if tx.send(Ok(WatchItem::Progress(last))).await.is_err() {
                    return;
                }
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
                        // A watcher that falls behind is closed; the client re-watches.
                        let _ = tx
                            .send(Err(StorageError::Expired {
                                requested: last,
                                oldest: last + 1,
                            }))
                            .await;
                        return;
                    }
                    Err(broadcast::error::RecvError::Closed) => return,
                }
            }
        });
        Ok(EventReceiver::new(rx, None))
    }
}
