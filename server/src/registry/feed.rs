//! A watch cache's live feed: one broadcast channel whose bounded buffer all its watchers
//! share, and each watcher's place in it. A watcher that stops reading (a client that no
//! longer reads its connection stops the response body from being polled) is terminated
//! once it has fallen more than a whole buffer behind, as kube-apiserver's cacher
//! terminates a watcher whose channel stays full: its owner is told, so the connection
//! ends instead of being held until the watch's timeout.
//!
//! The channel (its buffer: ~33 KB for 1,024 events) is made when the first change is
//! sent, not when the first watcher subscribes: the controllers watch every kind they
//! follow from the start, and most kinds of an idle server never change.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak};

use tokio::sync::{broadcast, Notify};

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

type Receiver = broadcast::Receiver<Arc<StoredEvent>>;

/// A watcher's end of a [`Feed`]: the feed's receiver, once the feed has a channel.
pub struct Live {
    rx: Option<Receiver>,
    /// Where the feed puts the receiver when it makes its channel.
    pending: Arc<Pending>,
}

/// A receiver on its way to a watcher that subscribed before the channel was made.
#[derive(Default)]
struct Pending {
    rx: Mutex<Option<Receiver>>,
    /// The feed went before it made a channel: the watch ends.
    closed: AtomicBool,
    ready: Notify,
}

impl Live {
    /// The next change, as `broadcast::Receiver::recv` gives it (cancel-safe).
    pub async fn recv(&mut self) -> Result<Arc<StoredEvent>, broadcast::error::RecvError> {
        loop {
            if let Some(rx) = &mut self.rx {
                return rx.recv().await;
            }
            let made = self
                .pending
                .rx
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .take();
            match made {
                Some(rx) => self.rx = Some(rx),
                None if self.pending.closed.load(Ordering::Acquire) => {
                    return Err(broadcast::error::RecvError::Closed)
                }
                // `notify_one` keeps a permit: a wake between the checks and here is kept.
                None => self.pending.ready.notified().await,
            }
        }
    }

    /// Whether no change is waiting to be received.
    pub fn is_empty(&self) -> bool {
        match &self.rx {
            Some(rx) => rx.is_empty(),
            None => self
                .pending
                .rx
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .as_ref()
                .is_none_or(Receiver::is_empty),
        }
    }
}

/// A broadcast channel of changes with its watchers' places.
pub struct Feed {
    /// Made on the first send.
    tx: Option<broadcast::Sender<Arc<StoredEvent>>>,
    /// Before that, the watchers waiting for their receivers.
    waiting: Vec<Weak<Pending>>,
    capacity: u64,
    /// Events sent so far.
    sent: u64,
    places: Vec<Weak<FeedPlace>>,
    /// How many places (and waiting watchers) were left at the last sweep of gone ones.
    swept: usize,
}

/// Gone watchers are swept from the lists once these have doubled since the last sweep
/// (and hold at least this many), so subscribing costs the same with 10 or 10,000
/// watchers open.
const SWEEP_AT_LEAST: usize = 64;

impl Feed {
    /// A feed buffering `capacity` events.
    pub fn new(capacity: usize) -> Feed {
        Feed {
            tx: None,
            waiting: Vec::new(),
            capacity: capacity as u64,
            sent: 0,
            places: Vec::new(),
            swept: 0,
        }
    }

    /// A new watcher: its receiver and its place.
    pub fn subscribe(&mut self) -> (Live, Arc<FeedPlace>) {
        let sweep_at = (self.swept * 2).max(SWEEP_AT_LEAST);
        if self.places.len() >= sweep_at || self.waiting.len() >= sweep_at {
            self.places.retain(|p| p.strong_count() > 0);
            self.waiting.retain(|p| p.strong_count() > 0);
            self.swept = self.places.len().max(self.waiting.len());
        }
        let place = Arc::new(FeedPlace {
            start: self.sent,
            received: AtomicU64::new(0),
            on_terminated: OnceLock::new(),
        });
        self.places.push(Arc::downgrade(&place));
        let pending = Arc::new(Pending::default());
        let rx = match &self.tx {
            Some(tx) => Some(tx.subscribe()),
            None => {
                self.waiting.push(Arc::downgrade(&pending));
                None
            }
        };
        (Live { rx, pending }, place)
    }

    /// Sends `event` to every watcher; false when none is left (the feed can go).
    /// Watchers that have now lost an unread event are terminated.
    pub fn send(&mut self, event: Arc<StoredEvent>) -> bool {
        let tx = match &mut self.tx {
            Some(tx) => tx,
            None => {
                let waiting: Vec<Arc<Pending>> =
                    self.waiting.drain(..).filter_map(|p| p.upgrade()).collect();
                if waiting.is_empty() {
                    return false;
                }
                let tx = broadcast::channel(self.capacity as usize).0;
                for p in waiting {
                    *p.rx.lock().unwrap_or_else(|e| e.into_inner()) = Some(tx.subscribe());
                    p.ready.notify_one();
                }
                self.tx.insert(tx)
            }
        };
        if tx.send(event).is_err() {
            return false;
        }
        self.sent += 1;
        // The buffer holds an event some receiver has not seen only up to its capacity:
        // below that no watcher can have fallen behind, and nothing is looked at.
        if tx.len() as u64 >= self.capacity {
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
        self.swept = self.places.len();
    }
}

impl Drop for Feed {
    /// Ends the watches still waiting for a channel (a made channel's receivers see it
    /// closed).
    fn drop(&mut self) {
        for p in self.waiting.drain(..).filter_map(|p| p.upgrade()) {
            p.closed.store(true, Ordering::Release);
            p.ready.notify_one();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;
    use std::time::Duration;

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
    fn gone_watchers_are_swept_while_others_subscribe() {
        let mut feed = Feed::new(4);
        let kept: Vec<_> = (0..100).map(|_| feed.subscribe()).collect();
        for _ in 0..10_000 {
            drop(feed.subscribe());
        }
        assert!(feed.places.len() <= 2 * kept.len() + SWEEP_AT_LEAST);
        assert!(feed.waiting.len() <= 2 * kept.len() + SWEEP_AT_LEAST);
        assert!(feed.send(event(1)));
        drop(kept);
        assert!(!feed.send(event(2)), "every watcher gone");
    }

    #[test]
    fn a_feed_without_receivers_says_so() {
        let mut feed = Feed::new(4);
        let (rx, _place) = feed.subscribe();
        drop(rx);
        assert!(!feed.send(event(1)));
        // And once its channel is made.
        let mut feed = Feed::new(4);
        let (rx, _place) = feed.subscribe();
        assert!(feed.send(event(1)));
        drop(rx);
        assert!(!feed.send(event(2)));
    }

    #[tokio::test]
    async fn the_channel_is_made_by_the_first_send_and_reaches_earlier_watchers() {
        let mut feed = Feed::new(4);
        let (mut early, _) = feed.subscribe();
        assert!(feed.tx.is_none(), "no buffer before a change");
        assert!(early.is_empty());
        // A watcher already waiting is woken by the first change.
        let waiting = tokio::spawn(async move { early.recv().await.map(|e| e.revision) });
        tokio::task::yield_now().await;
        assert!(feed.send(event(1)));
        let (mut late, _) = feed.subscribe();
        assert!(feed.send(event(2)));
        let got = tokio::time::timeout(Duration::from_secs(10), waiting).await;
        assert_eq!(got.unwrap().unwrap().unwrap(), 1);
        assert!(!late.is_empty());
        assert_eq!(late.recv().await.unwrap().revision, 2);
    }

    #[tokio::test]
    async fn a_feed_dropped_before_any_change_ends_its_watches() {
        let mut feed = Feed::new(4);
        let (mut live, _) = feed.subscribe();
        drop(feed);
        let got = tokio::time::timeout(Duration::from_secs(10), live.recv()).await;
        assert!(matches!(got, Ok(Err(broadcast::error::RecvError::Closed))));
    }
}
