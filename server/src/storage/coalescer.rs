//! Coalesced requests for the store's current revision: at most one in flight per
//! storage client, its answer shared by every caller waiting for it.
//!
//! The rule that keeps consistent reads linearizable: a read must see every write
//! acknowledged before it arrived, so it may only take a revision fetched by a request
//! that *started after* it arrived. A caller that finds a request in flight therefore
//! waits for the next one, which starts as soon as the one in flight ends; everyone who
//! arrived meanwhile shares it. Under load, N concurrent readers cost one or two round
//! trips instead of N, and no reader waits longer than two round trips.
//!
//! Requests run in a task of their own, so a caller that gives up (its client went
//! away) never cancels a request others wait for.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::sync::watch;

use super::StorageError;

/// A boxed revision request, as [`FetchRevision::fetch`] returns it.
pub type RevisionFuture = Pin<Box<dyn Future<Output = Result<u64, StorageError>> + Send>>;

/// How a [`RevisionCoalescer`] learns the current revision: one request to the backend.
pub trait FetchRevision: Send + Sync + 'static {
    /// Starts one request for the backend's current revision.
    fn fetch(&self) -> RevisionFuture;
}

/// One request's answer: `None` until it arrives.
type Answer = Option<Result<u64, StorageError>>;

/// Shares revision requests between concurrent callers (see the module docs).
pub struct RevisionCoalescer<F> {
    fetch: Arc<F>,
    state: Arc<Mutex<State>>,
    /// Requests started, for tests and benchmarks.
    requests: Arc<AtomicU64>,
}

#[derive(Default)]
struct State {
    /// A request is in flight.
    running: bool,
    /// The request that starts when the one in flight ends, with whoever arrived while
    /// it was in flight subscribed to it.
    next: Option<watch::Sender<Answer>>,
}

fn lock(state: &Mutex<State>) -> MutexGuard<'_, State> {
    state.lock().unwrap_or_else(|e| e.into_inner())
}

impl<F: FetchRevision> RevisionCoalescer<F> {
    /// A coalescer over `fetch`; nothing is requested until a caller asks.
    pub fn new(fetch: F) -> Self {
        RevisionCoalescer {
            fetch: Arc::new(fetch),
            state: Arc::default(),
            requests: Arc::default(),
        }
    }

    /// The current revision, from a request that started after this call.
    pub async fn current(&self) -> Result<u64, StorageError> {
        let mut answer = {
            let mut state = lock(&self.state);
            if state.running {
                state
                    .next
                    .get_or_insert_with(|| watch::channel(None).0)
                    .subscribe()
            } else {
                state.running = true;
                let (tx, rx) = watch::channel(None);
                let requests = Requests {
                    fetch: self.fetch.clone(),
                    state: self.state.clone(),
                    count: self.requests.clone(),
                    finished: false,
                };
                crate::panics::spawn("revision request", requests.run(tx));
                rx
            }
        };
        let answer = answer
            .wait_for(Option::is_some)
            .await
            .ok()
            .and_then(|a| a.clone());
        answer.unwrap_or_else(|| {
            Err(StorageError::Internal(
                "the request for the current revision was abandoned".into(),
            ))
        })
    }

    /// How many requests were started so far.
    pub fn requests(&self) -> u64 {
        self.requests.load(Ordering::Relaxed)
    }
}

/// The task that runs requests back to back while callers wait for a next one.
struct Requests<F> {
    fetch: Arc<F>,
    state: Arc<Mutex<State>>,
    count: Arc<AtomicU64>,
    /// Set when the task ended normally; otherwise (a panic) dropping it lets callers
    /// start requests again and fails those waiting.
    finished: bool,
}

impl<F: FetchRevision> Requests<F> {
    async fn run(mut self, mut round: watch::Sender<Answer>) {
        loop {
            self.count.fetch_add(1, Ordering::Relaxed);
            let answer = self.fetch.fetch().await;
            round.send_replace(Some(answer));
            let mut state = lock(&self.state);
            match state.next.take() {
                Some(next) => round = next,
                None => {
                    state.running = false;
                    drop(state);
                    self.finished = true;
                    return;
                }
            }
        }
    }
}

impl<F> Drop for Requests<F> {
    fn drop(&mut self) {
        if !self.finished {
            let mut state = lock(&self.state);
            state.running = false;
            // Dropping the sender tells its subscribers the request was abandoned.
            state.next = None;
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use futures_util::FutureExt;
    use tokio::sync::{mpsc, oneshot};

    use super::*;

    /// A backend whose revision requests the test answers by hand, one by one.
    struct Held(mpsc::UnboundedSender<oneshot::Sender<Result<u64, StorageError>>>);

    impl FetchRevision for Held {
        fn fetch(&self) -> RevisionFuture {
            let (tx, rx) = oneshot::channel();
            let _ = self.0.send(tx);
            Box::pin(async move {
                rx.await
                    .unwrap_or_else(|_| Err(StorageError::Internal("dropped".into())))
            })
        }
    }

    type Pending = mpsc::UnboundedReceiver<oneshot::Sender<Result<u64, StorageError>>>;

    fn held() -> (Arc<RevisionCoalescer<Held>>, Pending) {
        let (tx, rx) = mpsc::unbounded_channel();
        (Arc::new(RevisionCoalescer::new(Held(tx))), rx)
    }

    /// The next request the coalescer started (10 s at most).
    async fn started(pending: &mut Pending) -> oneshot::Sender<Result<u64, StorageError>> {
        tokio::time::timeout(Duration::from_secs(10), pending.recv())
            .await
            .expect("a revision request started")
            .expect("the coalescer is alive")
    }

    /// A read that has arrived (polled once, so it is registered) but not finished.
    fn arrive(c: &Arc<RevisionCoalescer<Held>>) -> Read {
        let c = c.clone();
        let mut read: Read = Box::pin(async move { c.current().await });
        assert!((&mut read).now_or_never().is_none(), "no answer yet");
        read
    }

    type Read = Pin<Box<dyn Future<Output = Result<u64, StorageError>> + Send>>;

    /// What a read got (10 s at most).
    async fn outcome(read: Read) -> Result<u64, StorageError> {
        tokio::time::timeout(Duration::from_secs(10), read)
            .await
            .expect("the read was answered")
    }

    async fn answer(read: Read) -> u64 {
        outcome(read).await.expect("the revision")
    }

    #[tokio::test]
    async fn a_read_arriving_during_a_request_takes_the_next_requests_revision() {
        let (c, mut pending) = held();
        let first = arrive(&c);
        let request_1 = started(&mut pending).await;
        // Request 1 is in flight: a write acknowledged now may be newer than what it
        // will answer, so this read must not take it.
        let late = arrive(&c);
        request_1.send(Ok(10)).unwrap();
        assert_eq!(answer(first).await, 10);
        let request_2 = started(&mut pending).await;
        let mut late = late;
        assert!(
            (&mut late).now_or_never().is_none(),
            "the late read waits for request 2, not request 1's revision"
        );
        request_2.send(Ok(11)).unwrap();
        assert_eq!(answer(late).await, 11);
        assert_eq!(c.requests(), 2);
    }

    #[tokio::test]
    async fn concurrent_reads_share_one_request() {
        let (c, mut pending) = held();
        let first = arrive(&c);
        let request_1 = started(&mut pending).await;
        let waiting: Vec<_> = (0..32).map(|_| arrive(&c)).collect();
        request_1.send(Ok(7)).unwrap();
        assert_eq!(answer(first).await, 7);
        started(&mut pending).await.send(Ok(8)).unwrap();
        for read in waiting {
            assert_eq!(answer(read).await, 8);
        }
        assert_eq!(c.requests(), 2, "32 waiting reads made one request");
        assert!(
            pending.try_recv().is_err(),
            "no request after the last read"
        );
        // Idle again: the next read starts a request at once.
        let next = arrive(&c);
        started(&mut pending).await.send(Ok(9)).unwrap();
        assert_eq!(answer(next).await, 9);
    }

    #[tokio::test]
    async fn a_failed_request_fails_only_its_readers() {
        let (c, mut pending) = held();
        let first = arrive(&c);
        let request_1 = started(&mut pending).await;
        let second = arrive(&c);
        request_1
            .send(Err(StorageError::Internal("etcd is down".into())))
            .unwrap();
        let err = outcome(first).await.unwrap_err();
        assert_eq!(err, StorageError::Internal("etcd is down".into()));
        // A request whose future is dropped unanswered fails its readers too.
        drop(started(&mut pending).await);
        assert!(outcome(second).await.is_err());
        let third = arrive(&c);
        started(&mut pending).await.send(Ok(5)).unwrap();
        assert_eq!(answer(third).await, 5);
    }

    /// A backend whose requests panic.
    struct Panicking;

    fn explode() -> Result<u64, StorageError> {
        panic!("revision request panicked")
    }

    impl FetchRevision for Panicking {
        fn fetch(&self) -> RevisionFuture {
            Box::pin(async { explode() })
        }
    }

    #[tokio::test]
    async fn a_panicking_request_fails_its_readers_and_the_next_read_tries_again() {
        let c = RevisionCoalescer::new(Panicking);
        for _ in 0..2 {
            let got = tokio::time::timeout(Duration::from_secs(10), c.current()).await;
            assert!(got.expect("answered, not hung").is_err());
        }
        assert_eq!(c.requests(), 2);
    }
}
