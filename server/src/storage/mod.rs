//! Storage: one narrow trait with etcd3's semantics (one global increasing revision,
//! create-if-absent, compare-and-swap on the modification revision, delete with a
//! precondition, prefix listing with continuation, watch from a revision, compaction).
//! Backends: [`embedded`] (redb, the default) and `etcd` (cargo feature `etcd`). Both
//! pass the same conformance suite (`conformance`, run by `cargo test`).
//! [`encryption`] wraps a resource's storage to encrypt its values at rest
//! (`--encryption-provider-config`); [`ResourceStorages`] picks each resource's.

mod by_resource;
pub mod coalescer;
#[cfg(test)]
pub mod conformance;
pub mod embedded;
pub mod encryption;
#[cfg(feature = "etcd")]
pub mod etcd;
#[cfg(feature = "etcd")]
mod etcd_clients;
pub mod events;
mod metered;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;

pub use by_resource::ResourceStorages;
pub use metered::Metered;

/// A stored key with its value and revisions.
#[derive(Clone, Debug, PartialEq)]
pub struct KeyValue {
    /// The key, e.g. `/registry/configmaps/default/app`.
    pub key: String,
    /// The stored bytes, as written.
    pub value: Bytes,
    /// Revision of the write that created the key.
    pub create_revision: u64,
    /// Revision of the last write to the key; the object's resourceVersion.
    pub mod_revision: u64,
    /// The value was read with a transformer other than the one writes use (an older
    /// encryption key or provider), so an update must rewrite it even when the object
    /// did not change. Always false from a backend itself.
    pub stale: bool,
}

/// One page of a prefix listing.
#[derive(Clone, Debug, PartialEq)]
pub struct ListPage {
    /// The keys of this page, in key order.
    pub items: Vec<KeyValue>,
    /// The store revision the page was read at.
    pub revision: u64,
    /// How many keys under the prefix follow this page.
    pub remaining: u64,
}

/// One committed change, as watchers receive it.
#[derive(Clone, Debug, PartialEq)]
pub struct StoredEvent {
    /// Revision of the write.
    pub revision: u64,
    /// The key written.
    pub key: String,
    /// The new value; `None` when the key was deleted.
    pub value: Option<Bytes>,
    /// The value before the write; `None` when the key was created.
    pub prev: Option<Bytes>,
    /// Create and modification revisions of `prev` (0 when there is none), so a past
    /// state can be rebuilt from the history.
    pub prev_create_revision: u64,
    pub prev_mod_revision: u64,
    /// The event as a watch line, encoded once by the API layer the first time a watcher
    /// needs it and then shared by every watcher (events reach watchers as `Arc`s). The
    /// watch cache forgets it when the event leaves its window, so the event log's longer
    /// history keeps the object's bytes once, not twice.
    pub encoded: EncodedLine,
    /// The labels of the event's objects, read by the API layer for the first watcher
    /// with a label selector and shared by the others, so a change is parsed once per
    /// event, not once per watcher. `None` inside when a value does not parse (each
    /// watcher then decodes it itself and reports the error).
    pub labels: std::sync::OnceLock<Option<EventLabels>>,
}

/// A [`StoredEvent`]'s watch line: encoded once and shared while watchers need it, then
/// forgotten ([`EncodedLine::forget`]); a later reader encodes it again.
#[derive(Debug, Default)]
pub struct EncodedLine(std::sync::RwLock<Option<Bytes>>);

impl EncodedLine {
    /// The line, if encoded and not forgotten.
    pub fn get(&self) -> Option<Bytes> {
        self.0.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// The line, encoded with `encode` unless another reader has already done it.
    pub fn get_or_init(&self, encode: impl FnOnce() -> Bytes) -> Bytes {
        if let Some(line) = self.get() {
            return line;
        }
        let line = encode();
        self.0
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .get_or_insert(line)
            .clone()
    }

    /// Drops the line (no live watcher will read it again).
    pub fn forget(&self) {
        self.0.write().unwrap_or_else(|e| e.into_inner()).take();
    }
}

impl Clone for EncodedLine {
    fn clone(&self) -> Self {
        EncodedLine(std::sync::RwLock::new(self.get()))
    }
}

impl PartialEq for EncodedLine {
    fn eq(&self, other: &Self) -> bool {
        self.get() == other.get()
    }
}

/// The labels of a [`StoredEvent`]'s objects: what label selectors look at.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct EventLabels {
    /// The new object's; `None` when the key was deleted.
    pub value: Option<std::collections::BTreeMap<String, String>>,
    /// The previous object's; `None` when the key was created.
    pub prev: Option<std::collections::BTreeMap<String, String>>,
}

/// What a storage watch delivers: a change, or word that every change under the prefix
/// up to a revision has been delivered (etcd's progress notification), which lets a
/// cache fed by the watch answer consistent reads.
#[derive(Clone, Debug)]
pub enum WatchItem {
    /// A committed change under the watched prefix.
    Event(Arc<StoredEvent>),
    /// Every change up to this revision has been delivered.
    Progress(u64),
}

/// Sender side of an [`EventReceiver`], held by the backend's forwarding task.
pub type WatchSender = tokio::sync::mpsc::Sender<Result<WatchItem, StorageError>>;

/// A stream of changes for one watch, in revision order. It ends with an
/// `Err(StorageError::Expired)` when the watcher fell too far behind.
pub struct EventReceiver {
    items: tokio::sync::mpsc::Receiver<Result<WatchItem, StorageError>>,
    progress: Option<Arc<tokio::sync::Notify>>,
    /// Applied to each event as it is received (decryption), so a wrapped watch needs
    /// no task or buffer of its own.
    map: Option<EventMap>,
}

/// What [`EventReceiver::map`] applies to each event.
type EventMap = Box<dyn Fn(Arc<StoredEvent>) -> Result<Arc<StoredEvent>, StorageError> + Send>;

impl std::fmt::Debug for EventReceiver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventReceiver")
            .field("items", &self.items)
            .field("mapped", &self.map.is_some())
            .finish()
    }
}

impl EventReceiver {
    /// A receiver over `items`. Backends that report progress only when asked (etcd)
    /// pass the `Notify` their forwarding task waits on.
    pub fn new(
        items: tokio::sync::mpsc::Receiver<Result<WatchItem, StorageError>>,
        progress: Option<Arc<tokio::sync::Notify>>,
    ) -> Self {
        EventReceiver {
            items,
            progress,
            map: None,
        }
    }

    /// The same stream with `f` applied to each event on receipt; an error from `f` is
    /// delivered in the event's place.
    pub fn map(
        mut self,
        f: impl Fn(Arc<StoredEvent>) -> Result<Arc<StoredEvent>, StorageError> + Send + 'static,
    ) -> Self {
        self.map = Some(match self.map.take() {
            None => Box::new(f),
            Some(g) => Box::new(move |e| f(g(e)?)),
        });
        self
    }

    /// The next change, skipping progress notifications; `None` when the watch ended.
    pub async fn recv(&mut self) -> Option<Result<Arc<StoredEvent>, StorageError>> {
        loop {
            match self.recv_item().await? {
                Ok(WatchItem::Event(e)) => return Some(Ok(e)),
                Ok(WatchItem::Progress(_)) => {}
                Err(e) => return Some(Err(e)),
            }
        }
    }

    /// The next change or progress notification; `None` when the watch ended.
    pub async fn recv_item(&mut self) -> Option<Result<WatchItem, StorageError>> {
        let item = self.items.recv().await?;
        Some(match (item, &self.map) {
            (Ok(WatchItem::Event(e)), Some(map)) => map(e).map(WatchItem::Event),
            (item, _) => item,
        })
    }

    /// Asks the backend to report its progress soon (etcd's `RequestProgress`). Backends
    /// that report progress unasked ignore it.
    pub fn request_progress(&self) {
        if let Some(p) = &self.progress {
            p.notify_one();
        }
    }
}

/// Why a storage operation failed. Mapped to API errors once, in `registry`.
#[derive(Clone, Debug, thiserror::Error, PartialEq)]
pub enum StorageError {
    /// The key does not exist.
    #[error("key {0} not found")]
    NotFound(String),
    /// `create` found the key already there.
    #[error("key {0} already exists")]
    AlreadyExists(String),
    /// A precondition on the key's modification revision failed.
    #[error("key {key} was modified (revision {current}, expected {expected})")]
    Conflict {
        /// The key written.
        key: String,
        /// Its modification revision now.
        current: u64,
        /// The revision the caller expected.
        expected: u64,
    },
    /// The history asked for was compacted (or the watcher fell behind).
    #[error("too old resource version: {requested} ({oldest})")]
    Expired {
        /// The revision asked for.
        requested: u64,
        /// The oldest revision still served.
        oldest: u64,
    },
    /// The value is larger than the backend accepts (etcd's `--max-request-bytes`).
    #[error("the value is larger than storage accepts: {0}")]
    TooLarge(String),
    /// The backend failed (I/O, unreachable, corrupt data).
    #[error("storage failure: {0}")]
    Internal(String),
}

/// The storage contract every backend implements.
#[async_trait]
pub trait Storage: Send + Sync + 'static {
    /// The key's current value.
    async fn get(&self, key: &str) -> Result<Option<KeyValue>, StorageError>;
    /// Keys under `prefix` in key order, after `start_after`, at most `limit` (0 = all).
    async fn list(
        &self,
        prefix: &str,
        start_after: Option<&str>,
        limit: usize,
    ) -> Result<ListPage, StorageError>;
    /// Like [`Storage::list`], but as the keys were at `revision` (a consistent snapshot
    /// for paginated lists). Fails with `Expired` when that revision is no longer known.
    /// The default serves only the current revision.
    async fn list_at(
        &self,
        prefix: &str,
        start_after: Option<&str>,
        limit: usize,
        revision: u64,
    ) -> Result<ListPage, StorageError> {
        let page = self.list(prefix, start_after, limit).await?;
        if page.revision == revision {
            Ok(page)
        } else {
            Err(StorageError::Expired {
                requested: revision,
                oldest: page.revision,
            })
        }
    }
    /// Writes `value` if `key` is absent; returns the new revision.
    async fn create(&self, key: &str, value: Bytes) -> Result<u64, StorageError>;
    /// Replaces `value` if the key's mod revision is still `expected`; returns the new revision.
    async fn update(&self, key: &str, expected: u64, value: Bytes) -> Result<u64, StorageError>;
    /// Removes the key (if its mod revision is `expected`, when given); returns what was
    /// deleted and the revision of the delete.
    async fn delete(
        &self,
        key: &str,
        expected: Option<u64>,
    ) -> Result<(KeyValue, u64), StorageError>;
    /// The store's current revision.
    async fn current_revision(&self) -> Result<u64, StorageError>;
    /// Every change under `prefix` after revision `after`, then changes as they commit.
    /// Fails with `Expired` when `after` is older than the history kept.
    async fn watch(&self, prefix: &str, after: u64) -> Result<EventReceiver, StorageError>;
    /// Whether watches report progress ([`WatchItem::Progress`]) in order with their
    /// events, so a cache fed by a watch may answer consistent reads. etcd before 3.4.31
    /// and 3.5.13 may announce a revision before its events; then this is false and
    /// consistent reads go to storage.
    fn reports_progress(&self) -> bool {
        true
    }
    /// Discards the history before `revision` (etcd's compaction): afterwards a watch
    /// from `after < revision - 1` fails with `Expired`, while one from `revision - 1` or
    /// later still gets every change. Compacting at or below an earlier compaction does
    /// nothing; compacting beyond the current revision fails.
    async fn compact(&self, revision: u64) -> Result<(), StorageError>;
    /// Closes the backend at the end of graceful shutdown, once nothing is served:
    /// queued writes are committed (the embedded store), connections closed (etcd);
    /// later calls fail. The default does nothing.
    async fn close(&self) {}
    /// Whether the backend answers, within a short time; `/readyz` and `/healthz` report it.
    async fn health(&self) -> Result<(), StorageError> {
        self.current_revision().await.map(|_| ())
    }
}

/// How long a health check waits for the backend, as kube-apiserver's
/// `--etcd-healthcheck-timeout` (2 s).
pub const HEALTH_TIMEOUT: Duration = Duration::from_secs(2);

/// Where objects are kept: the embedded store under a directory, or etcd.
#[derive(Clone, Debug)]
pub struct StorageConfig {
    /// Directory of the embedded store (`store.redb`); unused with etcd.
    pub data_dir: PathBuf,
    /// Use etcd instead of the embedded store.
    pub etcd: Option<EtcdConfig>,
    /// How often history is compacted (0 = never); see [`spawn_compactor`].
    pub compaction_interval: Duration,
    /// The embedded store's cache and history bounds; unused with etcd.
    pub embedded: embedded::EmbeddedOptions,
}

/// How to reach etcd (`--etcd-*` flags).
#[derive(Clone, Debug, Default)]
pub struct EtcdConfig {
    /// Endpoints, e.g. `http://127.0.0.1:2379`.
    pub servers: Vec<String>,
    /// Replaces the `/registry` root of every key (`--etcd-prefix`).
    pub prefix: String,
    /// CA bundle that signed the etcd servers' certificates.
    pub ca_file: Option<PathBuf>,
    /// Client certificate presented to etcd.
    pub cert_file: Option<PathBuf>,
    /// Key of the client certificate.
    pub key_file: Option<PathBuf>,
    /// Whether etcd's watch progress notifications are taken as ordered with its events.
    pub watch_progress: WatchProgress,
    /// Whether callers of the current revision share requests.
    pub revision_requests: RevisionRequests,
}

/// Whether etcd's watch progress notifications come in order with its events, which lets
/// the watch caches answer consistent reads (`--etcd-watch-progress`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum WatchProgress {
    /// Decided from etcd's version: ordered from 3.4.31 and 3.5.13 on.
    #[default]
    FromVersion,
    /// Ordered whatever the version says (a build with the fix backported).
    Ordered,
    /// Never trusted: consistent reads always read etcd.
    Unordered,
}

/// How requests for etcd's current revision are made (`--etcd-coalesce-revision-requests`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum RevisionRequests {
    /// At most one in flight; callers share the first that started after they arrived.
    #[default]
    Coalesced,
    /// One request per caller.
    Separate,
}

/// Opens the configured backend and starts its compactor. Must run inside a Tokio runtime.
pub async fn open(config: &StorageConfig) -> Result<Arc<dyn Storage>, String> {
    let storage: Arc<dyn Storage> = match &config.etcd {
        Some(etcd) => open_etcd(etcd).await?,
        None => {
            let path = config.data_dir.join("store.redb");
            Arc::new(
                embedded::EmbeddedStorage::open_with(&path, config.embedded).map_err(|e| {
                    format!(
                        "opening the embedded store in {}: {e}",
                        config.data_dir.display()
                    )
                })?,
            )
        }
    };
    spawn_compactor(storage.clone(), config.compaction_interval);
    Ok(storage)
}

/// Health checks start-up makes of etcd before it gives up.
#[cfg(feature = "etcd")]
const STARTUP_HEALTH_TRIES: usize = 5;

#[cfg(feature = "etcd")]
async fn open_etcd(config: &EtcdConfig) -> Result<Arc<dyn Storage>, String> {
    let servers = config.servers.join(",");
    let storage = etcd::EtcdStorage::connect(config)
        .await
        .map_err(|e| format!("--etcd-servers {servers}: {e}"))?;
    // An etcd that is busy (just started, or on a loaded disk) may miss one health
    // check's deadline: start-up tries a few times before giving up.
    let mut last = None;
    for _ in 0..STARTUP_HEALTH_TRIES {
        match storage.health().await {
            Ok(()) => return Ok(Arc::new(storage)),
            Err(e) => last = Some(e),
        }
    }
    let why = last.map(|e| e.to_string()).unwrap_or_default();
    Err(format!(
        "--etcd-servers {servers}: etcd is not reachable: {why}"
    ))
}

#[cfg(not(feature = "etcd"))]
async fn open_etcd(_config: &EtcdConfig) -> Result<Arc<dyn Storage>, String> {
    Err(ETCD_NOT_BUILT.to_string())
}

/// Why `--etcd-servers` cannot be used by a binary built without the `etcd` feature.
pub const ETCD_NOT_BUILT: &str = "--etcd-servers: this binary was built without etcd support; \
     rebuild it with `cargo build -p apiserver --features etcd` (needs protoc), or drop \
     --etcd-servers to use the embedded store";

/// Compacts history every `interval` (0 = never), as kube-apiserver's compactor: each
/// tick compacts to the revision seen at the previous tick, so at least one interval of
/// history stays watchable. Failures are logged and retried at the next tick.
pub fn spawn_compactor(storage: Arc<dyn Storage>, interval: Duration) {
    if interval.is_zero() {
        return;
    }
    crate::panics::spawn("compactor", async move {
        let mut ticker = tokio::time::interval(interval);
        ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        ticker.tick().await;
        let mut previous = None;
        loop {
            ticker.tick().await;
            if let Some(rev) = previous {
                match storage.compact(rev).await {
                    Ok(()) => tracing::debug!(revision = rev, "compacted storage history"),
                    Err(e) => tracing::warn!(revision = rev, "compacting storage history: {e}"),
                }
            }
            match storage.current_revision().await {
                Ok(rev) => previous = Some(rev),
                Err(e) => tracing::warn!("reading the storage revision for compaction: {e}"),
            }
        }
    });
}

/// The largest `--storage-cache-size`: 64 GiB.
const MAX_CACHE_SIZE: u64 = 64 << 30;

/// Parses `--storage-cache-size`: bytes, or a number with a binary suffix (`Ki`, `Mi`,
/// `Gi`, as Kubernetes quantities write them), from 1Mi to 64Gi.
pub fn parse_cache_size(text: &str) -> Result<usize, String> {
    let bad = |why: &str| format!("invalid size {text:?}: {why} (examples: 16Mi, 1Gi, 8388608)");
    let s = text.trim();
    let (digits, unit) = match s.find(|c: char| !c.is_ascii_digit()) {
        Some(at) => s.split_at(at),
        None => (s, ""),
    };
    if digits.is_empty() {
        return Err(bad("expected a number"));
    }
    let shift = match unit {
        "" => 0,
        "Ki" => 10,
        "Mi" => 20,
        "Gi" => 30,
        other => return Err(bad(&format!("unknown suffix {other:?}; use Ki, Mi or Gi"))),
    };
    let bytes = digits
        .parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(1 << shift))
        .filter(|&n| n <= MAX_CACHE_SIZE)
        .ok_or_else(|| bad("more than 64Gi"))?;
    if bytes < 1 << 20 {
        return Err(bad("less than 1Mi"));
    }
    usize::try_from(bytes).map_err(|_| bad("more than this machine can address"))
}

/// The largest `--storage-history-size`.
const MAX_HISTORY: usize = 10_000_000;

/// Parses `--storage-history-size`: a count of changes from 100 to 10,000,000.
pub fn parse_history_size(text: &str) -> Result<usize, String> {
    let n: usize = text
        .trim()
        .parse()
        .map_err(|_| format!("invalid count {text:?}: expected a whole number"))?;
    if !(events::MIN_HISTORY..=MAX_HISTORY).contains(&n) {
        return Err(format!(
            "{n} is out of range: the history keeps from {} to {MAX_HISTORY} changes",
            events::MIN_HISTORY
        ));
    }
    Ok(n)
}

/// Parses a Go-style duration as kube-apiserver's flags take them: `5m`, `1h30m`, `90s`,
/// `1.5h`, `250ms`, or `0`.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let bad = |why: &str| format!("invalid duration {text:?}: {why} (examples: 5m0s, 90s, 1h)");
    let s = text.trim();
    if s == "0" {
        return Ok(Duration::ZERO);
    }
    if s.is_empty() {
        return Err(bad("empty"));
    }
    let mut total = 0f64;
    let mut rest = s;
    while !rest.is_empty() {
        let num_len = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .ok_or_else(|| bad("missing unit"))?;
        if num_len == 0 {
            return Err(bad("expected a number"));
        }
        let value: f64 = rest[..num_len].parse().map_err(|_| bad("not a number"))?;
        rest = &rest[num_len..];
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let seconds = match &rest[..unit_len] {
            "ns" => 1e-9,
            "us" | "µs" => 1e-6,
            "ms" => 1e-3,
            "s" => 1.0,
            "m" => 60.0,
            "h" => 3600.0,
            other => return Err(bad(&format!("unknown unit {other:?}"))),
        };
        total += value * seconds;
        rest = &rest[unit_len..];
    }
    Duration::try_from_secs_f64(total).map_err(|_| bad("out of range"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_durations() {
        assert_eq!(parse_duration("5m0s"), Ok(Duration::from_secs(300)));
        assert_eq!(parse_duration("1h30m"), Ok(Duration::from_secs(5400)));
        assert_eq!(parse_duration("1.5s"), Ok(Duration::from_millis(1500)));
        assert_eq!(parse_duration("250ms"), Ok(Duration::from_millis(250)));
        assert_eq!(parse_duration("0"), Ok(Duration::ZERO));
        for bad in ["", "5", "m", "5x", "-1s", "1..5s"] {
            assert!(parse_duration(bad).is_err(), "{bad:?} must be refused");
        }
    }

    #[tokio::test]
    async fn the_compactor_trims_history_one_interval_behind() {
        let dir = tempfile::tempdir().unwrap();
        let config = StorageConfig {
            data_dir: dir.path().to_path_buf(),
            etcd: None,
            compaction_interval: Duration::from_millis(50),
            embedded: Default::default(),
        };
        let s = open(&config).await.unwrap();
        let r1 = s.create("/registry/c/a", Bytes::new()).await.unwrap();
        s.update("/registry/c/a", r1, Bytes::from_static(b"x"))
            .await
            .unwrap();
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        while s.watch("/registry/c/", 0).await.is_ok() {
            assert!(
                tokio::time::Instant::now() < deadline,
                "history was never compacted"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let now = s.current_revision().await.unwrap();
        assert!(s.watch("/registry/c/", now).await.is_ok());
    }
}
