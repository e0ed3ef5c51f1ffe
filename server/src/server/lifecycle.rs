//! Graceful shutdown, in kube-apiserver's sequence (its lifecycle signals):
//!
//! 1. `ShutdownInitiated` (SIGTERM or SIGINT): `/readyz` fails its `shutdown` check at
//!    once; requests are served as usual for `--shutdown-delay-duration`.
//! 2. `NotAcceptingNewRequest`: the listener refuses new connections (with
//!    `--shutdown-send-retry-after` it stays open, answering 429, until the requests in
//!    flight are done), requests arriving on open connections are refused with an
//!    answer and `Connection: close` (`filters::shutdown`), and every open watch is told
//!    to end: its stream finishes cleanly.
//! 3. `InFlightRequestsDrained`: the requests in flight have answered (they are bounded
//!    by `--request-timeout`) and the watches have sent their end (bounded by
//!    `--shutdown-watch-termination-grace-period`, at least a second).
//! 4. Open connections close (each after its last answer; those accepted just before
//!    the listener closed get half a second to send a request first), storage is
//!    closed and the process exits 0.
//!
//! A second SIGTERM or SIGINT at any point exits at once with code 1, as upstream.

use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{watch, Notify};

/// The least time open watches get to send their end, whatever the grace period: a
/// watch told to end only has to flush, and a client should see the end, not a reset.
const MIN_WATCH_GRACE: Duration = Duration::from_secs(1);

/// Slack on `--request-timeout` when waiting for requests in flight: the timeout
/// filter answers them at the deadline, so they finish just after it.
const REQUEST_DRAIN_SLACK: Duration = Duration::from_secs(1);

/// How long the HTTP server gets, once drained, to flush the last answers and close
/// its connections before the process exits regardless.
const CONNECTIONS_CLOSE_WAIT: Duration = Duration::from_secs(1);

/// The shutdown state requests and watches consult, shared by every worker.
#[derive(Debug)]
pub struct Lifecycle {
    not_accepting: watch::Sender<bool>,
    requests: InFlight,
    watches: InFlight,
    send_retry_after: bool,
}

impl Lifecycle {
    /// A server accepting requests; `send_retry_after` is `--shutdown-send-retry-after`.
    pub fn new(send_retry_after: bool) -> Self {
        Lifecycle {
            not_accepting: watch::channel(false).0,
            requests: InFlight::default(),
            watches: InFlight::default(),
            send_retry_after,
        }
    }

    /// Whether new requests are still served.
    pub fn accepting(&self) -> bool {
        !*self.not_accepting.borrow()
    }

    /// Whether refused requests get upstream's 429 with `Connection: close`
    /// (`--shutdown-send-retry-after`) rather than its 503.
    pub fn sends_retry_after(&self) -> bool {
        self.send_retry_after
    }

    /// From now on new requests are refused and open watches end.
    pub fn stop_accepting(&self) {
        self.not_accepting.send_replace(true);
    }

    /// Resolves once the server stops accepting requests (a watch ends then).
    pub fn stopped_accepting(&self) -> impl Future<Output = ()> + 'static {
        let mut rx = self.not_accepting.subscribe();
        async move {
            let _ = rx.wait_for(|stopped| *stopped).await;
        }
    }

    /// Counts a request until the guard drops (with its response body).
    pub fn track(self: &Arc<Self>, watch: bool) -> InFlightGuard {
        let counter = if watch {
            Counter::Watches
        } else {
            Counter::Requests
        };
        self.counter(counter).count.fetch_add(1, Ordering::AcqRel);
        InFlightGuard {
            lifecycle: self.clone(),
            counter,
        }
    }

    fn counter(&self, counter: Counter) -> &InFlight {
        match counter {
            Counter::Requests => &self.requests,
            Counter::Watches => &self.watches,
        }
    }
}

#[derive(Clone, Copy, Debug)]
enum Counter {
    Requests,
    Watches,
}

/// Requests of one kind in flight, and a wake-up when they reach zero.
#[derive(Debug, Default)]
struct InFlight {
    count: AtomicUsize,
    idle: Notify,
}

impl InFlight {
    /// Waits until none is in flight or `limit` passes; returns how many are left.
    async fn drained(&self, limit: Duration) -> usize {
        let wait = async {
            loop {
                let idle = self.idle.notified();
                if self.count.load(Ordering::Acquire) == 0 {
                    return;
                }
                idle.await;
            }
        };
        let _ = tokio::time::timeout(limit, wait).await;
        self.count.load(Ordering::Acquire)
    }
}

/// One request in flight; dropping it ends the count.
#[derive(Debug)]
pub struct InFlightGuard {
    lifecycle: Arc<Lifecycle>,
    counter: Counter,
}

impl Drop for InFlightGuard {
    fn drop(&mut self) {
        let in_flight = self.lifecycle.counter(self.counter);
        if in_flight.count.fetch_sub(1, Ordering::AcqRel) == 1 {
            in_flight.idle.notify_waiters();
        }
    }
}

/// The shutdown flags.
#[derive(Clone, Copy, Debug)]
pub struct ShutdownConfig {
    /// `--shutdown-delay-duration`.
    pub delay: Duration,
    /// `--shutdown-watch-termination-grace-period`.
    pub watch_grace: Duration,
    /// `--request-timeout`: how long a request in flight may still take.
    pub request_timeout: Duration,
}

impl ShutdownConfig {
    /// How long the HTTP server must keep connections with requests in flight after it
    /// is told to stop: the whole drain, or it would cut them.
    pub fn connections_timeout(&self) -> Duration {
        self.request_timeout + REQUEST_DRAIN_SLACK + self.watch_grace.max(MIN_WATCH_GRACE)
    }
}

/// SIGTERM and SIGINT, as one stream of signals.
pub struct Signals {
    #[cfg(unix)]
    term: tokio::signal::unix::Signal,
    #[cfg(unix)]
    int: tokio::signal::unix::Signal,
}

impl Signals {
    /// Starts listening (before serving, so no signal is missed).
    pub fn listen() -> std::io::Result<Signals> {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{signal, SignalKind};
            Ok(Signals {
                term: signal(SignalKind::terminate())?,
                int: signal(SignalKind::interrupt())?,
            })
        }
        #[cfg(not(unix))]
        Ok(Signals {})
    }

    /// The next signal's name.
    pub async fn next(&mut self) -> &'static str {
        #[cfg(unix)]
        {
            tokio::select! {
                _ = self.term.recv() => "SIGTERM",
                _ = self.int.recv() => "SIGINT",
            }
        }
        #[cfg(not(unix))]
        {
            let _ = tokio::signal::ctrl_c().await;
            "SIGINT"
        }
    }
}

/// The HTTP server's two stops.
pub trait StopServing {
    /// No new connection: new connection attempts are refused; open connections go on.
    fn stop_accepting(&self);
    /// Close the open connections once each has answered what it is serving.
    fn stop_serving(&self);
}

/// The actix server, and its listening socket to refuse connections on.
pub struct HttpServerControl {
    pub handle: actix_web::dev::ServerHandle,
    /// A second handle on the listening socket (the server owns the first).
    pub listener: socket2::Socket,
}

impl StopServing for HttpServerControl {
    fn stop_accepting(&self) {
        // The accept loop lets go of the socket first, so it sees no accept errors;
        // shutting the socket down then refuses new connections (and resets those still
        // waiting in its backlog, before any TLS), as a closed listener would.
        drop(self.handle.pause());
        if let Err(e) = self.listener.shutdown(std::net::Shutdown::Both) {
            tracing::warn!("closing the listening socket: {e}");
        }
    }

    fn stop_serving(&self) {
        // Sent at once; idle connections close, busy ones after their answer. The
        // server's future completes when they are gone.
        drop(self.handle.stop(true));
    }
}

/// How long, once drained, connections accepted just before the listener closed get
/// to send their first request (it is refused, with an answer) before connections are
/// closed; upstream's HTTP server gives new connections such a grace too.
const NEW_CONNECTION_GRACE: Duration = Duration::from_millis(500);

/// Waits for the first signal, then runs the shutdown sequence (steps 1 to 3 of the
/// module's list). Returns when the server may close storage and exit.
pub async fn shutdown(
    mut signals: Signals,
    lifecycle: Arc<Lifecycle>,
    hooks: Arc<super::health::Hooks>,
    server: impl StopServing,
    config: ShutdownConfig,
) {
    let first = signals.next().await;
    hooks.shut_down();
    event("ShutdownInitiated", first);
    tokio::spawn(async move {
        let second = signals.next().await;
        tracing::warn!("received {second} again during graceful termination: exiting at once");
        std::process::exit(1);
    });
    tokio::time::sleep(config.delay).await;
    event("AfterShutdownDelayDuration", first);
    lifecycle.stop_accepting();
    if !lifecycle.sends_retry_after() {
        server.stop_accepting();
    }
    event("NotAcceptingNewRequest", first);
    let requests = lifecycle
        .requests
        .drained(config.request_timeout + REQUEST_DRAIN_SLACK)
        .await;
    let watches = lifecycle
        .watches
        .drained(config.watch_grace.max(MIN_WATCH_GRACE))
        .await;
    if requests + watches > 0 {
        tracing::warn!(
            requests,
            watches,
            "[graceful-termination] requests still in flight at the end of the grace period"
        );
    }
    if lifecycle.sends_retry_after() {
        server.stop_accepting();
    }
    event("InFlightRequestsDrained", first);
    tokio::time::sleep(NEW_CONNECTION_GRACE).await;
    // Requests that came in meanwhile were refused; they end with their answer.
    lifecycle.requests.drained(REQUEST_DRAIN_SLACK).await;
    server.stop_serving();
}

/// Waits, briefly, for the HTTP server to flush its last answers and close.
pub async fn connections_closed(server: impl Future) {
    let _ = tokio::time::timeout(CONNECTIONS_CLOSE_WAIT, server).await;
}

fn event(name: &str, signal: &str) {
    tracing::info!(name, signal, "[graceful-termination] shutdown event");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn drained_waits_for_the_last_request_to_end() {
        let lifecycle = Arc::new(Lifecycle::new(false));
        let request = lifecycle.track(false);
        let watch = lifecycle.track(true);
        let left = lifecycle.requests.drained(Duration::from_millis(20)).await;
        assert_eq!(left, 1, "one request is in flight");
        let ending = tokio::spawn(async move {
            tokio::task::yield_now().await;
            drop(request);
        });
        let left = lifecycle.requests.drained(Duration::from_secs(5)).await;
        ending.await.unwrap();
        assert_eq!(left, 0);
        assert_eq!(lifecycle.watches.drained(Duration::ZERO).await, 1);
        drop(watch);
        assert_eq!(lifecycle.watches.drained(Duration::ZERO).await, 0);
    }

    #[tokio::test]
    async fn watches_learn_when_the_server_stops_accepting() {
        let lifecycle = Lifecycle::new(false);
        let stopped = lifecycle.stopped_accepting();
        assert!(lifecycle.accepting());
        lifecycle.stop_accepting();
        assert!(!lifecycle.accepting());
        tokio::time::timeout(Duration::from_secs(5), stopped)
            .await
            .expect("told at once");
        // One subscribing later learns it at once too.
        tokio::time::timeout(Duration::from_secs(5), lifecycle.stopped_accepting())
            .await
            .expect("told at once");
    }
}
