//! The webhook backend (`--audit-webhook-config-file`, `--audit-webhook-mode`): events
//! POSTed as an `audit.k8s.io/v1` `EventList` to the server a kubeconfig names, as
//! kube-apiserver's webhook backend sends them.
//!
//! - `batch` (upstream's default for the webhook): events are queued (up to
//!   `--audit-webhook-batch-buffer-size`, a full queue drops the event, logged and
//!   counted) and sent in lists of at most `--audit-webhook-batch-max-size`, collected for
//!   at most `--audit-webhook-batch-max-wait`; lists leave at most
//!   `--audit-webhook-batch-throttle-qps` a second (bursts of `-burst`), each sent on its
//!   own, so one slow answer does not hold the next list back.
//! - `blocking`: each event is sent before its request goes on; a failure is logged
//!   and counted and the request goes on.
//! - `blocking-strict`: as blocking, but a RequestReceived event that cannot be sent
//!   fails the request (500).
//!
//! Every send is retried on any error (upstream's audit webhook retries whatever the
//! error), waiting `--audit-webhook-initial-backoff` × 1.5ⁿ (±20 %) between at most five
//! tries, each within 30 s.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;

use super::log::{Mode, WriteError};
use crate::auth::parent::{backoff, Parent};

/// How long one POST may take (upstream's webhook client timeout).
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);
/// Tries of one send (upstream's backoff steps).
const TRIES: usize = 5;

/// The batching flags (`--audit-webhook-batch-*`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BatchConfig {
    pub buffer_size: usize,
    pub max_size: usize,
    pub max_wait: Duration,
    /// Lists a second and burst, when throttling is on.
    pub throttle: Option<(f64, u32)>,
}

/// The webhook backend as the flags configure it.
pub struct WebhookConfig {
    pub server: Parent,
    pub mode: Mode,
    pub batch: BatchConfig,
    pub initial_backoff: Duration,
}

/// Where event lines go to be sent.
enum Sending {
    Direct,
    /// The batch queue (`None` once closed at shutdown) and the writer's end.
    Queue(
        Mutex<Option<mpsc::Sender<Bytes>>>,
        Mutex<Option<oneshot::Receiver<()>>>,
    ),
}

/// The webhook backend.
pub struct WebhookBackend {
    client: Arc<Client>,
    mode: Mode,
    sending: Sending,
}

/// The server and how sends are retried.
struct Client {
    server: Parent,
    initial_backoff: Duration,
    lost: AtomicU64,
}

impl WebhookBackend {
    /// The backend; in batch mode its writer task starts (on the current runtime).
    pub fn start(config: WebhookConfig) -> Arc<WebhookBackend> {
        let client = Arc::new(Client {
            server: config.server,
            initial_backoff: config.initial_backoff,
            lost: AtomicU64::new(0),
        });
        let sending = match config.mode {
            Mode::Blocking | Mode::BlockingStrict => Sending::Direct,
            Mode::Batch => {
                let (tx, rx) = mpsc::channel(config.batch.buffer_size.max(1));
                let (done, finished) = oneshot::channel();
                let writer = client.clone();
                crate::panics::spawn("audit webhook batches", async move {
                    batches(writer, rx, config.batch).await;
                    let _ = done.send(());
                });
                Sending::Queue(Mutex::new(Some(tx)), Mutex::new(Some(finished)))
            }
        };
        Arc::new(WebhookBackend {
            client,
            mode: config.mode,
            sending,
        })
    }

    /// Events lost so far (not sent after every try, or dropped from a full queue).
    pub fn lost(&self) -> u64 {
        self.client.lost.load(Ordering::Relaxed)
    }

    /// Stops taking events and waits (at most `within`) until what is queued is sent.
    pub async fn shutdown(&self, within: Duration) {
        let Sending::Queue(queue, finished) = &self.sending else {
            return;
        };
        drop(queue.lock().unwrap_or_else(|e| e.into_inner()).take());
        let finished = finished.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(finished) = finished {
            if tokio::time::timeout(within, finished).await.is_err() {
                tracing::error!("audit webhook: events still unsent at shutdown");
            }
        }
    }
}

#[async_trait::async_trait]
impl super::Backend for WebhookBackend {
    async fn process(&self, line: Bytes) -> Result<(), WriteError> {
        match &self.sending {
            Sending::Direct => self.client.send(vec![line]).await,
            Sending::Queue(queue, _) => {
                let queue = queue.lock().unwrap_or_else(|e| e.into_inner()).clone();
                let result = match queue {
                    None => Err(WriteError::WriterGone),
                    Some(tx) => tx.try_send(line).map_err(|e| match e {
                        mpsc::error::TrySendError::Full(_) => WriteError::QueueFull,
                        mpsc::error::TrySendError::Closed(_) => WriteError::WriterGone,
                    }),
                };
                if let Err(e) = &result {
                    self.client.count_lost(1, e);
                }
                result
            }
        }
    }

    fn strict(&self) -> bool {
        self.mode == Mode::BlockingStrict
    }
}

impl Client {
    /// Sends `lines` as one EventList, retrying; a failure has been logged and counted.
    async fn send(&self, lines: Vec<Bytes>) -> Result<(), WriteError> {
        let body = event_list(&lines);
        let mut waits = backoff(self.initial_backoff, TRIES - 1);
        loop {
            let error = match self
                .server
                .post_expecting_success("", body.clone(), REQUEST_TIMEOUT)
                .await
            {
                Ok(()) => return Ok(()),
                Err(e) => e,
            };
            let Some(wait) = waits.next() else {
                let e = WriteError::Webhook(error.to_string());
                self.count_lost(lines.len(), &e);
                return Err(e);
            };
            tracing::debug!(error = %error, "audit webhook: retrying");
            tokio::time::sleep(wait).await;
        }
    }

    fn count_lost(&self, events: usize, e: &dyn std::fmt::Display) {
        let lost = self.lost.fetch_add(events as u64, Ordering::Relaxed) + events as u64;
        tracing::error!(error = %e, lost_so_far = lost, "audit events not sent to the webhook");
    }
}

/// The `EventList` of these event lines (each one JSON object and a newline).
fn event_list(lines: &[Bytes]) -> String {
    let mut body = String::from(
        r#"{"kind":"EventList","apiVersion":"audit.k8s.io/v1","metadata":{},"items":["#,
    );
    for (i, line) in lines.iter().enumerate() {
        if i > 0 {
            body.push(',');
        }
        body.push_str(String::from_utf8_lossy(line).trim_end());
    }
    body.push_str("]}");
    body
}

/// Batch mode's writer: collects lists (full, or the wait is over), throttles them and
/// sends each in a task of its own; once the queue is closed, sends what is left and
/// waits for every send.
async fn batches(client: Arc<Client>, mut rx: mpsc::Receiver<Bytes>, config: BatchConfig) {
    let mut throttle = config
        .throttle
        .map(|(qps, burst)| Throttle::new(qps, burst));
    let mut sends = tokio::task::JoinSet::new();
    let mut open = true;
    while open {
        let mut batch = Vec::new();
        let deadline = tokio::time::sleep(config.max_wait);
        tokio::pin!(deadline);
        while batch.len() < config.max_size.max(1) {
            tokio::select! {
                () = &mut deadline => break,
                line = rx.recv() => match line {
                    Some(line) => batch.push(line),
                    None => {
                        open = false;
                        break;
                    }
                },
            }
        }
        while sends.try_join_next().is_some() {}
        if batch.is_empty() {
            continue;
        }
        if let Some(throttle) = &mut throttle {
            throttle.wait().await;
        }
        let client = client.clone();
        sends.spawn(async move {
            let _ = client.send(batch).await;
        });
    }
    while sends.join_next().await.is_some() {}
}

/// A token bucket: `qps` tokens a second, at most `burst` saved.
struct Throttle {
    qps: f64,
    burst: f64,
    tokens: f64,
    at: Instant,
}

impl Throttle {
    fn new(qps: f64, burst: u32) -> Throttle {
        Throttle {
            qps,
            burst: f64::from(burst.max(1)),
            tokens: f64::from(burst.max(1)),
            at: Instant::now(),
        }
    }

    /// Waits for a token and takes it.
    async fn wait(&mut self) {
        let short = self.take(Instant::now());
        if !short.is_zero() {
            tokio::time::sleep(short).await;
        }
    }

    /// Takes a token at `now`: how long to wait before using it.
    fn take(&mut self, now: Instant) -> Duration {
        // A token owed to an earlier caller is earned no sooner than `at`.
        let from = now.max(self.at);
        let earned = (from - self.at).as_secs_f64() * self.qps;
        self.tokens = (self.tokens + earned).min(self.burst) - 1.0;
        self.at = from;
        if self.tokens >= 0.0 {
            return from - now;
        }
        self.at += Duration::from_secs_f64(-self.tokens / self.qps);
        self.tokens = 0.0;
        self.at - now
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_become_one_event_list() {
        let lines = vec![Bytes::from("{\"a\":1}\n"), Bytes::from("{\"b\":2}\n")];
        let list: serde_json::Value = serde_json::from_str(&event_list(&lines)).unwrap();
        assert_eq!(
            list,
            serde_json::json!({"kind": "EventList", "apiVersion": "audit.k8s.io/v1",
                "metadata": {}, "items": [{"a": 1}, {"b": 2}]})
        );
    }

    #[test]
    fn the_throttle_lets_a_burst_through_then_paces() {
        let start = Instant::now();
        let mut t = Throttle::new(10.0, 2);
        t.at = start;
        assert_eq!(t.take(start), Duration::ZERO);
        assert_eq!(t.take(start), Duration::ZERO);
        assert_eq!(t.take(start), Duration::from_millis(100));
        // The next one is earned 100 ms after that.
        assert_eq!(t.take(start), Duration::from_millis(200));
        assert_eq!(t.take(start + Duration::from_secs(1)), Duration::ZERO);
    }
}
