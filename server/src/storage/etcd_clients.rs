//! Which etcd client a call uses: one per thread that serves requests.
//!
//! The client made at start-up lives on the runtime that made it (the main thread's):
//! tonic's buffer task and the HTTP/2 connection to each endpoint run there. HTTP
//! requests run on actix's workers, each a single-threaded runtime of its own, so a KV
//! call made there through the start-up client wakes the main thread to send and is
//! woken back with the answer: two cross-thread wake-ups (an eventfd write, an epoll
//! round, often a futex) per etcd round trip. A call on a worker therefore goes through
//! a client made lazily on that worker, whose buffer task and connections run on the
//! worker's own thread. The start-up client keeps watches (and every call made on the
//! main thread, e.g. the compactor's) and calls from any multi-threaded
//! runtime (tests, tools).
//!
//! The per-thread clients are registered here so [`EtcdClients::close`] takes their
//! endpoints out too, and after it every call falls back to the closed start-up client
//! (and fails, as `Storage::close` promises).

use std::cell::RefCell;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::thread::ThreadId;

use etcd_client::{Client, ConnectOptions, KvClient};
use tokio::runtime::{Handle, RuntimeFlavor};
use tokio::sync::oneshot;

/// The etcd clients of one [`super::etcd::EtcdStorage`].
pub struct EtcdClients {
    /// The client made at start-up, on the thread `home`.
    shared: Client,
    /// Its KV client, as calls use it.
    shared_kv: KvClient,
    home: ThreadId,
    servers: Vec<String>,
    options: ConnectOptions,
    /// Every per-thread client made, for [`Self::close`].
    made: Mutex<Vec<Client>>,
    closed: AtomicBool,
    /// Readies a client's KV client for calls.
    ready_kv: fn(KvClient) -> KvClient,
}

/// A client made on this thread for one [`EtcdClients`].
struct ThreadClient {
    owner: Weak<EtcdClients>,
    /// Only the KV client is kept: cloning a whole `Client` per call (eight gRPC
    /// clients and the options) showed in profiles.
    kv: KvClient,
    /// Closed once the runtime that runs the client's tasks is gone (its tasks dropped).
    runtime: oneshot::Receiver<()>,
}

impl ThreadClient {
    fn usable(&mut self) -> bool {
        self.owner.strong_count() > 0
            && matches!(
                self.runtime.try_recv(),
                Err(oneshot::error::TryRecvError::Empty)
            )
    }
}

thread_local! {
    static THREAD_CLIENTS: RefCell<Vec<ThreadClient>> = const { RefCell::new(Vec::new()) };
}

impl EtcdClients {
    /// Wraps the client made at start-up on the current thread, with what it was made
    /// from; `kv` readies a client's KV client for calls (e.g. its message size limit).
    pub fn new(
        shared: Client,
        servers: Vec<String>,
        options: ConnectOptions,
        kv: fn(KvClient) -> KvClient,
    ) -> Arc<Self> {
        Arc::new(EtcdClients {
            shared_kv: kv(shared.kv_client()),
            ready_kv: kv,
            shared,
            home: std::thread::current().id(),
            servers,
            options,
            made: Mutex::new(Vec::new()),
            closed: AtomicBool::new(false),
        })
    }

    /// The start-up client (watches, maintenance, compaction).
    pub fn shared(&self) -> &Client {
        &self.shared
    }

    /// The KV client for a call from this thread: its own when the thread runs a
    /// single-threaded runtime other than the start-up thread's (an actix worker),
    /// else the start-up client's.
    pub async fn kv_for_this_thread(self: &Arc<Self>) -> KvClient {
        if self.closed.load(Ordering::Acquire) || std::thread::current().id() == self.home {
            return self.shared_kv.clone();
        }
        let Ok(runtime) = Handle::try_current() else {
            return self.shared_kv.clone();
        };
        if runtime.runtime_flavor() != RuntimeFlavor::CurrentThread {
            return self.shared_kv.clone();
        }
        if let Some(kv) = self.made_here() {
            return kv;
        }
        match Client::connect(&self.servers, Some(self.options.clone())).await {
            Ok(client) => {
                // Another call on this thread connected first, while this one waited:
                // one client per thread (this one's connections close as it drops).
                if let Some(kv) = self.made_here() {
                    return kv;
                }
                // A task that only holds the sender: dropped with the runtime, which
                // tells later calls on this thread that this client's tasks are gone.
                let (alive, runtime) = oneshot::channel::<()>();
                runtime_guard(&self.servers, alive);
                let kv = (self.ready_kv)(client.kv_client());
                self.made
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .push(client);
                THREAD_CLIENTS.with(|clients| {
                    clients.borrow_mut().push(ThreadClient {
                        owner: Arc::downgrade(self),
                        kv: kv.clone(),
                        runtime,
                    })
                });
                kv
            }
            Err(e) => {
                tracing::warn!(error = %e, "an etcd client for this thread; using the shared one");
                self.shared_kv.clone()
            }
        }
    }

    /// This thread's client for `self`, dropping entries whose storage or runtime is gone.
    fn made_here(self: &Arc<Self>) -> Option<KvClient> {
        THREAD_CLIENTS.with(|clients| {
            let mut clients = clients.borrow_mut();
            clients.retain_mut(ThreadClient::usable);
            clients
                .iter()
                .find(|c| std::ptr::eq(c.owner.as_ptr(), Arc::as_ptr(self)))
                .map(|c| c.kv.clone())
        })
    }

    /// How many per-thread clients were made and not closed (for tests).
    pub fn thread_clients(&self) -> usize {
        self.made.lock().unwrap_or_else(|e| e.into_inner()).len()
    }

    /// Takes every endpoint out of every client: their connections close, later calls fail.
    pub async fn close(&self) {
        self.closed.store(true, Ordering::Release);
        let made = std::mem::take(&mut *self.made.lock().unwrap_or_else(|e| e.into_inner()));
        for client in std::iter::once(&self.shared).chain(made.iter()) {
            for server in &self.servers {
                if let Err(e) = client.remove_endpoint(server).await {
                    tracing::debug!(server, error = %e, "closing an etcd client");
                }
            }
        }
    }
}

/// Spawns on the current runtime a task that holds `alive` until the runtime drops it.
fn runtime_guard(servers: &[String], alive: oneshot::Sender<()>) {
    tracing::debug!(?servers, "an etcd client for this worker thread");
    tokio::spawn(async move {
        let _alive = alive;
        std::future::pending::<()>().await
    });
}
