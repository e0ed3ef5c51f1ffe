//! A watch cache's live feed: one broadcast channel whose bounded buffer all its watchers
//! share, and each watcher's place in it. A watcher that stops reading (a client that no
//! longer reads its connection stops the response body from being polled) is terminated
//! once it has fallen more than a whole buffer behind, as kube-apiserver's cacher
//! terminates a watcher whose channel stays full: its owner is told, so the connection
//! ends instead of being held until the watch's timeout.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock, Weak};

use tokio::sync::broadcast;

use crate::storage::StoredEvent;

/// What a terminated watcher's owner does (close the connection, count it).
type OnTerminated = Box<dyn Fn() + Send + Sync>;

/// One watcher's place in a [`Feed`].
pub struct FeedPlace {
    /// The feed's sent count when the watcher subscribed.
    start: u64,
    /// Events the watcher has taken from its receiver.
    received: AtomicU64,
    on_terminated: OnceLock<OnTerminated>,
}

impl FeedPlace {
    /// Records one event taken from the receiver.
    pub fn received_one(&self) {
        self.received.fetch_add(1, Ordering::Relaxed);
    }

    /// Sets what happens when the feed terminates this watcher (once; later calls are
    /// ignored). Runs on the feed's sender, under the cache's lock: it must not block.
    pub fn on_terminated(&self, f: impl Fn() + Send + Sync + 'static) {
        let _ = self.on_terminated.set(Box::new(f));
    }
}

/// A broadcast channel of changes with its watchers' places.
pub struct Feed {
    tx: broadcast::Sender<Arc<StoredEvent>>,
    capacity: u64,
    /// Events sent so far.
    sent: u64,
    places: Vec<Weak<FeedPlace>>,
}

impl Feed {
    /// A feed buffering `capacity` events.
    pub fn new(capacity: usize) -> Feed {
        Feed {
            tx: broadcast::channel(capacity).0,
            capacity: capacity as u64,
            sent: 0,
            places: Vec::new(),
        }
    }

    /// A new watcher: its receiver and its place.
    pub fn subscribe(&mut self) -> (broadcast::Receiver<Arc<StoredEvent>>, Arc<FeedPlace>) {
        self.places.retain(|p| p.strong_count() > 0);
        let place = Arc::new(FeedPlace {
            start: self.sent,
            received: AtomicU64::new(0),
            on_terminated: OnceLock::new(),
        });
        self.places.push(Arc::downgrade(&place));
        (self.tx.subscribe(), place)
    }

    /// Sends `event` to every watcher; false when none is left (the feed can go).
    /// Watchers that have now lost an unread event are terminated.
    pub fn send(&mut self, event: Arc<StoredEvent>) -> bool {
        if self.tx.send(event).is_err() {
            return false;
        }
        self.sent += 1;
        // The buffer holds an event some receiver has not seen only up to its capacity:
        // below that no watcher can have fallen behind, and nothing is looked at.
        if self.tx.len() as u64 >= self.capacity {
            self.terminate_stalled();
        }
        true
    }

    /// Terminates (once each) the watchers more than a buffer behind.
    fn terminate_stalled(&mut self) {
        let (sent, capacity) = (self.sent, self.capacity);
        self.places.retain(|place| {
            let Some(place) = place.upgrade() else {
                return false;
            };
            let read = place.start + place.received.load(Ordering::Relaxed);
            if sent.saturating_sub(read) <= capacity {
                return true;
            }
            if let Some(f) = place.on_terminated.get() {
                f();
            }
            false
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;

    fn event(revision: u64) -> Arc<StoredEvent> {
        Arc::new(StoredEvent {
            key: format!("/registry/configmaps/default/{revision}"),
            revision,
            value: None,
            prev: None,
            prev_create_revision: 0,
            prev_mod_revision: 0,
            encoded: Default::default(),
            labels: Default::default(),
        })
    }

    #[tokio::test]
    async fn a_watcher_that_stops_reading_is_terminated_once_and_a_reader_is_not() {
        let mut feed = Feed::new(4);
        let (mut reader, reader_place) = feed.subscribe();
        let (_stalled, stalled_place) = feed.subscribe();
        let terminated = Arc::new(AtomicUsize::new(0));
        for (place, who) in [(&reader_place, 100), (&stalled_place, 1)] {
            let terminated = terminated.clone();
            place.on_terminated(move || {
                terminated.fetch_add(who, Ordering::Relaxed);
            });
        }
        // A full buffer is not yet a loss.
        for rv in 1..=4 {
            assert!(feed.send(event(rv)));
            reader.recv().await.unwrap();
            reader_place.received_one();
        }
        assert_eq!(terminated.load(Ordering::Relaxed), 0);
        for rv in 5..=12 {
            assert!(feed.send(event(rv)));
            reader.recv().await.unwrap();
            reader_place.received_one();
        }
        assert_eq!(
            terminated.load(Ordering::Relaxed),
            1,
            "the stalled one, once"
        );
    }

    #[test]
    fn a_feed_without_receivers_says_so() {
        let mut feed = Feed::new(4);
        let (rx, _place) = feed.subscribe();
        drop(rx);
        assert!(!feed.send(event(1)));
    }
}
