//! The etcd3 backend, through the `etcd-client` crate (cargo feature `etcd`).
//!
//! Keys: the registry builds keys under `/registry`; here that root is replaced by
//! `--etcd-prefix` (default `/registry`, so keys are laid out exactly as kube-apiserver's).
//! Values are stored as given. Every write is one etcd transaction:
//!
//! - create: `create_revision(key) == 0` → put;
//! - update: `mod_revision(key) == expected` and the key exists → put, else read the key
//!   to tell `Conflict` (with the current revision) from `NotFound`;
//! - delete: the same comparison → delete (with the previous value), else read.
//!
//! Lists are one range read (one revision) from a start key with a limit; `remaining`
//! comes from the range's count. Watches are etcd watches with previous values from
//! `after + 1`; compacted history becomes `Expired`. Every call has a deadline, so an
//! unreachable etcd fails fast instead of hanging. Requests for the current revision
//! are coalesced ([`RevisionCoalescer`]) unless the configuration says otherwise.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use etcd_client::{
    Certificate, Client, Compare, CompareOp, ConnectOptions, DeleteOptions, EventType, GetOptions,
    Identity, TlsOptions, Txn, TxnOp, TxnOpResponse, WatchOptions, WatchStream,
};
use tokio::sync::mpsc;

use super::coalescer::{FetchRevision, RevisionCoalescer, RevisionFuture};
use super::etcd_clients::EtcdClients;
use super::{
    EtcdConfig, EventReceiver, KeyValue, ListPage, RevisionRequests, Storage, StorageError,
    StoredEvent, WatchItem, WatchProgress, WatchSender, HEALTH_TIMEOUT,
};

/// The root of the keys the registry builds; replaced by the etcd prefix.
const REGISTRY_ROOT: &str = "/registry";
/// Deadline of one request (reads, writes, compaction).
const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);
/// Deadline for establishing a TCP/TLS connection to one endpoint.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);
/// Largest response accepted (a full list of a big collection).
const MAX_MESSAGE: usize = 1 << 30;
/// How long a watch waits to learn the compaction revision that refused it.
const COMPACTED_WAIT: Duration = Duration::from_secs(2);
/// Re-establishing a broken watch stream: attempts and the pause between them.
const WATCH_RETRIES: u32 = 5;
const WATCH_RETRY_PAUSE: Duration = Duration::from_millis(500);
/// Buffer between the etcd watch stream and one watcher.
const WATCHER_BUFFER: usize = 1024;

/// etcd-backed [`Storage`].
#[derive(Clone)]
pub struct EtcdStorage {
    /// The start-up client and the per-thread clients of KV calls.
    clients: Arc<EtcdClients>,
    /// What replaces `/registry` in every key, without a trailing slash (`""` = the root).
    root: Arc<str>,
    /// Whether etcd sends requested progress notifications in order with watch events
    /// (0 = not known yet, 1 = yes, 2 = no); learnt from its version on the first watch
    /// unless the configuration decides.
    ordered_progress: Arc<std::sync::atomic::AtomicU8>,
    /// Shares current-revision requests between callers; `None`: one request each.
    revisions: Option<Arc<RevisionCoalescer<RevisionProbe>>>,
}

/// One request for etcd's current revision: a count-only read of a key, for its header.
#[derive(Clone)]
struct RevisionProbe {
    clients: Arc<EtcdClients>,
    key: Vec<u8>,
}

impl FetchRevision for RevisionProbe {
    fn fetch(&self) -> RevisionFuture {
        let (clients, key) = (self.clients.clone(), self.key.clone());
        Box::pin(async move {
            let mut kv = clients.kv_for_this_thread().await;
            crate::metrics::metrics().etcd_revision_request();
            let options = GetOptions::new().with_count_only();
            let resp = timed("a read", REQUEST_TIMEOUT, 0, kv.get(key, Some(options))).await?;
            header_revision(resp.header())
        })
    }
}

/// Whether an etcd of `version` sends requested progress notifications in order with
/// watch events. Earlier releases could announce a revision before its events
/// (etcd-io/etcd#15220, #17557); kube-apiserver relies on progress from 3.4.31 and 3.5.13.
fn progress_is_ordered(version: &str) -> bool {
    let mut parts = version.split('.').map(|p| {
        p.chars()
            .take_while(char::is_ascii_digit)
            .collect::<String>()
            .parse::<u64>()
            .unwrap_or(0)
    });
    let (major, minor, patch) = (
        parts.next().unwrap_or(0),
        parts.next().unwrap_or(0),
        parts.next().unwrap_or(0),
    );
    match (major, minor) {
        (3, 4) => patch >= 31,
        (3, 5) => patch >= 13,
        (3, m) => m >= 6,
        (m, _) => m > 3,
    }
}

fn internal(e: impl std::fmt::Display) -> StorageError {
    StorageError::Internal(e.to_string())
}

/// Maps a client error; etcd's "compacted" answer becomes `Expired`.
fn etcd_err(e: etcd_client::Error, requested: u64) -> StorageError {
    let text = e.to_string();
    if text.contains("required revision has been compacted") {
        StorageError::Expired {
            requested,
            oldest: requested + 1,
        }
    } else if text.contains("request is too large") || text.contains("message larger than max") {
        // etcd's own limit, or its gRPC receive limit (a little above it).
        StorageError::TooLarge(format!("etcd: {text}"))
    } else {
        StorageError::Internal(format!("etcd: {text}"))
    }
}

/// etcd revisions are `i64`; ours are `u64`.
fn rev_u64(rev: i64) -> u64 {
    u64::try_from(rev).unwrap_or(0)
}

fn rev_i64(rev: u64) -> i64 {
    i64::try_from(rev).unwrap_or(i64::MAX)
}

fn header_revision(header: Option<&etcd_client::ResponseHeader>) -> Result<u64, StorageError> {
    header
        .map(|h| rev_u64(h.revision()))
        .ok_or_else(|| StorageError::Internal("etcd answered without a response header".into()))
}

/// The first key after every key starting with `prefix` (etcd's range end for a prefix).
fn prefix_end(prefix: &[u8]) -> Vec<u8> {
    let mut end = prefix.to_vec();
    while let Some(last) = end.pop() {
        if last < 0xff {
            end.push(last + 1);
            return end;
        }
    }
    // Every byte was 0xff: the range extends to the end of the key space.
    vec![0]
}

/// Runs one etcd call under a deadline.
async fn timed<T>(
    what: &str,
    limit: Duration,
    requested: u64,
    call: impl Future<Output = Result<T, etcd_client::Error>>,
) -> Result<T, StorageError> {
    match tokio::time::timeout(limit, call).await {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(e)) => Err(etcd_err(e, requested)),
        Err(_) => Err(StorageError::Internal(format!(
            "etcd did not answer {what} within {}s",
            limit.as_secs_f32()
        ))),
    }
}

fn read_file(flag: &str, path: &std::path::Path) -> Result<Vec<u8>, StorageError> {
    std::fs::read(path).map_err(|e| internal(format!("{flag} {}: {e}", path.display())))
}

impl EtcdStorage {
    /// A range read of `prefix`, at `revision` when given (etcd's MVCC snapshot).
    async fn list_range(
        &self,
        prefix: &str,
        start_after: Option<&str>,
        limit: usize,
        revision: Option<u64>,
    ) -> Result<ListPage, StorageError> {
        let from = self.etcd_key(prefix)?;
        let end = prefix_end(&from);
        let start = match start_after {
            Some(after) => {
                let mut k = self.etcd_key(after)?;
                k.push(0);
                k.max(from)
            }
            None => from,
        };
        if end != [0] && start >= end {
            return Ok(ListPage {
                items: Vec::new(),
                revision: self.current_revision().await?,
                remaining: 0,
            });
        }
        let mut options = GetOptions::new().with_range(end);
        if let Some(r) = revision {
            options = options.with_revision(i64::try_from(r).unwrap_or(i64::MAX));
        }
        if limit > 0 {
            options = options.with_limit(i64::try_from(limit).unwrap_or(i64::MAX));
        }
        let mut resp = timed(
            "a list",
            REQUEST_TIMEOUT,
            revision.unwrap_or(0),
            self.kv().await.get(start, Some(options)),
        )
        .await?;
        let revision = match revision {
            Some(r) => r,
            None => header_revision(resp.header())?,
        };
        let count = rev_u64(resp.count());
        let items = resp
            .take_kvs()
            .into_iter()
            .map(|kv| self.key_value(kv))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(ListPage {
            remaining: count.saturating_sub(items.len() as u64),
            items,
            revision,
        })
    }

    /// A client for `config.servers` (connections are made lazily; see [`Storage::health`]).
    pub async fn connect(config: &EtcdConfig) -> Result<Self, StorageError> {
        if config.servers.is_empty() {
            return Err(internal("no etcd servers given"));
        }
        let mut options = ConnectOptions::new()
            .with_connect_timeout(CONNECT_TIMEOUT)
            .with_keep_alive(Duration::from_secs(10), Duration::from_secs(5))
            .with_keep_alive_while_idle(true);
        if config.ca_file.is_some() || config.cert_file.is_some() || config.key_file.is_some() {
            let mut tls = TlsOptions::new();
            if let Some(ca) = &config.ca_file {
                tls = tls.ca_certificate(Certificate::from_pem(read_file("--etcd-cafile", ca)?));
            }
            match (&config.cert_file, &config.key_file) {
                (Some(cert), Some(key)) => {
                    tls = tls.identity(Identity::from_pem(
                        read_file("--etcd-certfile", cert)?,
                        read_file("--etcd-keyfile", key)?,
                    ));
                }
                (None, None) => {}
                _ => {
                    return Err(internal(
                        "--etcd-certfile and --etcd-keyfile must be given together",
                    ))
                }
            }
            options = options.with_tls(tls);
        }
        let client = Client::connect(&config.servers, Some(options.clone()))
            .await
            .map_err(|e| internal(format!("etcd client: {e}")))?;
        let clients = EtcdClients::new(client, config.servers.clone(), options, |kv| {
            kv.max_decoding_message_size(MAX_MESSAGE)
        });
        let ordered_progress: u8 = match config.watch_progress {
            WatchProgress::FromVersion => 0,
            WatchProgress::Ordered => 1,
            WatchProgress::Unordered => 2,
        };
        let root: Arc<str> = normalize_prefix(&config.prefix).into();
        let probe = RevisionProbe {
            clients: clients.clone(),
            key: format!("{root}/").into_bytes(),
        };
        Ok(EtcdStorage {
            clients,
            root,
            ordered_progress: Arc::new(ordered_progress.into()),
            revisions: match config.revision_requests {
                RevisionRequests::Coalesced => Some(Arc::new(RevisionCoalescer::new(probe))),
                RevisionRequests::Separate => None,
            },
        })
    }

    /// How many requests for the current revision this client's coalescer made (0 when
    /// requests are not coalesced), for tests and benchmarks.
    pub fn revision_requests(&self) -> u64 {
        self.revisions.as_ref().map_or(0, |r| r.requests())
    }

    /// How many etcd clients worker threads made for their KV calls (for tests).
    pub fn thread_clients(&self) -> usize {
        self.clients.thread_clients()
    }

    /// Whether progress notifications can be trusted, asking etcd its version once.
    async fn learn_progress_order(&self) -> bool {
        use std::sync::atomic::Ordering;
        match self.ordered_progress.load(Ordering::Relaxed) {
            1 => return true,
            2 => return false,
            _ => {}
        }
        let mut maintenance = self.clients.shared().maintenance_client();
        let Ok(status) = timed("a status", REQUEST_TIMEOUT, 0, maintenance.status()).await else {
            return false;
        };
        let ordered = progress_is_ordered(status.version());
        if !ordered {
            tracing::info!(
                version = status.version(),
                "this etcd may report watch progress ahead of events (fixed in 3.4.31 and \
                 3.5.13): consistent reads go to etcd instead of the watch cache"
            );
        }
        self.ordered_progress
            .store(if ordered { 1 } else { 2 }, Ordering::Relaxed);
        ordered
    }

    /// The etcd key of a registry key.
    fn etcd_key(&self, key: &str) -> Result<Vec<u8>, StorageError> {
        let rest = key
            .strip_prefix(REGISTRY_ROOT)
            .filter(|rest| rest.is_empty() || rest.starts_with('/'))
            .ok_or_else(|| {
                StorageError::Internal(format!("key {key} is outside {REGISTRY_ROOT}"))
            })?;
        Ok(format!("{}{rest}", self.root).into_bytes())
    }

    /// A key for reads that only want the response header (never empty: etcd refuses
    /// an empty key).
    fn probe_key(&self) -> Vec<u8> {
        format!("{}/", self.root).into_bytes()
    }

    /// The registry key of an etcd key.
    fn registry_key(&self, key: &[u8]) -> Result<String, StorageError> {
        let key = std::str::from_utf8(key)
            .map_err(|_| StorageError::Internal("etcd returned a key that is not UTF-8".into()))?;
        let rest = key.strip_prefix(&*self.root).ok_or_else(|| {
            StorageError::Internal(format!("etcd key {key} is outside the prefix"))
        })?;
        Ok(format!("{REGISTRY_ROOT}{rest}"))
    }

    fn key_value(&self, kv: etcd_client::KeyValue) -> Result<KeyValue, StorageError> {
        let (create_revision, mod_revision) = (kv.create_revision(), kv.mod_revision());
        let (key, value) = kv.into_key_value();
        Ok(KeyValue {
            key: self.registry_key(&key)?,
            value: Bytes::from(value),
            create_revision: rev_u64(create_revision),
            mod_revision: rev_u64(mod_revision),
            stale: false,
        })
    }

    /// A KV client for a call from this thread ([`EtcdClients::kv_for_this_thread`]).
    async fn kv(&self) -> etcd_client::KvClient {
        self.clients.kv_for_this_thread().await
    }

    /// A watch stream of `key` (a prefix) from revision `start`, with previous values.
    async fn open_watch(&self, key: &[u8], start: u64) -> Result<WatchStream, StorageError> {
        let options = WatchOptions::new()
            .with_prefix()
            .with_prev_key()
            .with_start_revision(rev_i64(start));
        let mut client = self
            .clients
            .shared()
            .watch_client()
            .max_decoding_message_size(MAX_MESSAGE);
        timed(
            "a watch",
            REQUEST_TIMEOUT,
            start.saturating_sub(1),
            client.watch(key.to_vec(), Some(options)),
        )
        .await
    }

    /// Whether history at `start` is still there (a read at that revision fails when it
    /// was compacted; one in the future is fine: the watch waits for it).
    async fn compacted_before(&self, key: &[u8], start: u64) -> Result<bool, StorageError> {
        let options = GetOptions::new()
            .with_revision(rev_i64(start))
            .with_count_only();
        match timed(
            "a read",
            REQUEST_TIMEOUT,
            0,
            self.kv().await.get(key.to_vec(), Some(options)),
        )
        .await
        {
            Ok(_) => Ok(false),
            Err(StorageError::Expired { .. }) => Ok(true),
            Err(StorageError::Internal(msg)) if msg.contains("future revision") => Ok(false),
            Err(e) => Err(e),
        }
    }

    fn event(&self, event: &etcd_client::Event) -> Result<Option<StoredEvent>, StorageError> {
        let Some(kv) = event.kv() else {
            return Ok(None);
        };
        let key = self.registry_key(kv.key())?;
        let prev = event.prev_kv().map(|p| Bytes::copy_from_slice(p.value()));
        let (prev_create_revision, prev_mod_revision) = event.prev_kv().map_or((0, 0), |p| {
            (rev_u64(p.create_revision()), rev_u64(p.mod_revision()))
        });
        Ok(Some(match event.event_type() {
            EventType::Put => StoredEvent {
                revision: rev_u64(kv.mod_revision()),
                key,
                value: Some(Bytes::copy_from_slice(kv.value())),
                // A put that created the key has no previous value.
                prev: if kv.create_revision() == kv.mod_revision() {
                    None
                } else {
                    prev
                },
                prev_create_revision,
                prev_mod_revision,
                encoded: Default::default(),
                labels: Default::default(),
            },
            EventType::Delete => StoredEvent {
                revision: rev_u64(kv.mod_revision()),
                key,
                value: None,
                prev,
                prev_create_revision,
                prev_mod_revision,
                encoded: Default::default(),
                labels: Default::default(),
            },
        }))
    }
}

/// `--etcd-prefix` as a key root: leading slash, no trailing slash (`/` → the root).
fn normalize_prefix(prefix: &str) -> String {
    let trimmed = prefix.trim_matches('/');
    if trimmed.is_empty() {
        String::new()
    } else {
        format!("/{trimmed}")
    }
}

/// What one watch response means for the watcher.
enum Step {
    Events(Vec<StoredEvent>),
    /// A progress notification: every change up to this revision was delivered.
    Progress(u64),
    Compacted(u64),
    Cancelled(String),
}

impl EtcdStorage {
    fn step(&self, resp: &etcd_client::WatchResponse) -> Result<Step, StorageError> {
        if resp.compact_revision() > 0 {
            return Ok(Step::Compacted(rev_u64(resp.compact_revision())));
        }
        if resp.canceled() {
            return Ok(Step::Cancelled(resp.cancel_reason().to_string()));
        }
        if resp.events().is_empty() && !resp.created() {
            return Ok(Step::Progress(header_revision(resp.header())?));
        }
        let mut events = Vec::with_capacity(resp.events().len());
        for e in resp.events() {
            if let Some(event) = self.event(e)? {
                events.push(event);
            }
        }
        Ok(Step::Events(events))
    }

    /// Forwards a watch stream to `tx` until the watcher goes away, re-establishing the
    /// stream from the last revision seen when the connection breaks.
    async fn forward(
        self,
        key: Vec<u8>,
        mut stream: WatchStream,
        mut last: u64,
        tx: WatchSender,
        progress: Arc<tokio::sync::Notify>,
        ordered_progress: bool,
    ) {
        let mut failures = 0;
        // `last` (where a re-watch starts) also follows progress, so an idle resource's
        // re-watch does not start before a compaction; repeats are told by `last_event`.
        let mut last_event = last;
        loop {
            let message = tokio::select! {
                _ = tx.closed() => return,
                _ = progress.notified(), if ordered_progress => {
                    // A failed request shows up as a broken stream below.
                    let _ = stream.request_progress().await;
                    continue;
                }
                m = stream.message() => m,
            };
            let step = match message {
                Ok(Some(resp)) => self.step(&resp),
                Ok(None) | Err(_) => {
                    failures += 1;
                    if failures > WATCH_RETRIES {
                        let _ = tx
                            .send(Err(internal(
                                "the etcd watch stream broke and could not be re-established",
                            )))
                            .await;
                        return;
                    }
                    tokio::time::sleep(WATCH_RETRY_PAUSE).await;
                    if let Ok(s) = self.open_watch(&key, last + 1).await {
                        stream = s;
                    }
                    continue;
                }
            };
            failures = 0;
            match step {
                Ok(Step::Events(events)) => {
                    for event in events {
                        // Events come in order: one at or below the last forwarded is a
                        // repeat (after a re-watch). Progress does not count: an etcd
                        // before 3.4.31 / 3.5.13 may announce a revision before its event.
                        if event.revision <= last_event {
                            continue;
                        }
                        last_event = event.revision;
                        last = last.max(event.revision);
                        if tx
                            .send(Ok(WatchItem::Event(Arc::new(event))))
                            .await
                            .is_err()
                        {
                            return;
                        }
                    }
                }
                Ok(Step::Progress(_)) if !ordered_progress => {}
                Ok(Step::Progress(revision)) => {
                    last = last.max(revision);
                    if tx.send(Ok(WatchItem::Progress(revision))).await.is_err() {
                        return;
                    }
                }
                Ok(Step::Compacted(oldest)) => {
                    let _ = tx
                        .send(Err(StorageError::Expired {
                            requested: last,
                            oldest,
                        }))
                        .await;
                    return;
                }
                Ok(Step::Cancelled(reason)) => {
                    let _ = tx
                        .send(Err(internal(format!("etcd cancelled the watch: {reason}"))))
                        .await;
                    return;
                }
                Err(e) => {
                    let _ = tx.send(Err(e)).await;
                    return;
                }
            }
        }
    }
}

#[async_trait]
impl Storage for EtcdStorage {
    async fn get(&self, key: &str) -> Result<Option<KeyValue>, StorageError> {
        let k = self.etcd_key(key)?;
        let mut resp = timed("a read", REQUEST_TIMEOUT, 0, self.kv().await.get(k, None)).await?;
        resp.take_kvs()
            .into_iter()
            .next()
            .map(|kv| self.key_value(kv))
            .transpose()
    }

    async fn list(
        &self,
        prefix: &str,
        start_after: Option<&str>,
        limit: usize,
    ) -> Result<ListPage, StorageError> {
        self.list_range(prefix, start_after, limit, None).await
    }

    async fn list_at(
        &self,
        prefix: &str,
        start_after: Option<&str>,
        limit: usize,
        revision: u64,
    ) -> Result<ListPage, StorageError> {
        self.list_range(prefix, start_after, limit, Some(revision))
            .await
    }

    async fn create(&self, key: &str, value: Bytes) -> Result<u64, StorageError> {
        let k = self.etcd_key(key)?;
        let txn = Txn::new()
            .when([Compare::create_revision(k.clone(), CompareOp::Equal, 0)])
            .and_then([TxnOp::put(k, value.to_vec(), None)]);
        let resp = timed("a create", REQUEST_TIMEOUT, 0, self.kv().await.txn(txn)).await?;
        if !resp.succeeded() {
            return Err(StorageError::AlreadyExists(key.to_string()));
        }
        header_revision(resp.header())
    }

    async fn update(&self, key: &str, expected: u64, value: Bytes) -> Result<u64, StorageError> {
        let k = self.etcd_key(key)?;
        let txn = Txn::new()
            .when([
                Compare::mod_revision(k.clone(), CompareOp::Equal, rev_i64(expected)),
                Compare::create_revision(k.clone(), CompareOp::Greater, 0),
            ])
            .and_then([TxnOp::put(k.clone(), value.to_vec(), None)])
            .or_else([TxnOp::get(k, None)]);
        let resp = timed("an update", REQUEST_TIMEOUT, 0, self.kv().await.txn(txn)).await?;
        if resp.succeeded() {
            return header_revision(resp.header());
        }
        Err(refusal(key, expected, &resp))
    }

    async fn delete(
        &self,
        key: &str,
        expected: Option<u64>,
    ) -> Result<(KeyValue, u64), StorageError> {
        let k = self.etcd_key(key)?;
        let delete = DeleteOptions::new().with_prev_key();
        let Some(expected) = expected else {
            let mut resp = timed(
                "a delete",
                REQUEST_TIMEOUT,
                0,
                self.kv().await.delete(k, Some(delete)),
            )
            .await?;
            let revision = header_revision(resp.header())?;
            let prev = resp.take_prev_kvs().into_iter().next();
            return match prev {
                Some(kv) => Ok((self.key_value(kv)?, revision)),
                None => Err(StorageError::NotFound(key.to_string())),
            };
        };
        let txn = Txn::new()
            .when([
                Compare::mod_revision(k.clone(), CompareOp::Equal, rev_i64(expected)),
                Compare::create_revision(k.clone(), CompareOp::Greater, 0),
            ])
            .and_then([TxnOp::delete(k.clone(), Some(delete))])
            .or_else([TxnOp::get(k, None)]);
        let resp = timed("a delete", REQUEST_TIMEOUT, 0, self.kv().await.txn(txn)).await?;
        if !resp.succeeded() {
            return Err(refusal(key, expected, &resp));
        }
        let revision = header_revision(resp.header())?;
        let prev = resp.op_responses().into_iter().find_map(|r| match r {
            TxnOpResponse::Delete(mut d) => d.take_prev_kvs().into_iter().next(),
            _ => None,
        });
        match prev {
            Some(kv) => Ok((self.key_value(kv)?, revision)),
            None => Err(StorageError::NotFound(key.to_string())),
        }
    }

    async fn current_revision(&self) -> Result<u64, StorageError> {
        crate::metrics::metrics().etcd_revision_caller();
        match &self.revisions {
            Some(coalescer) => coalescer.current().await,
            None => {
                let probe = RevisionProbe {
                    clients: self.clients.clone(),
                    key: self.probe_key(),
                };
                probe.fetch().await
            }
        }
    }

    async fn watch(&self, prefix: &str, after: u64) -> Result<EventReceiver, StorageError> {
        let key = self.etcd_key(prefix)?;
        let start = after + 1;
        let mut stream = self.open_watch(&key, start).await?;
        if self.compacted_before(&key, start).await? {
            // etcd tells a compacted watch its compaction revision shortly after creating
            // it; use that for the error when it comes in time.
            let deadline = tokio::time::Instant::now() + COMPACTED_WAIT;
            let mut oldest = start;
            while let Ok(Ok(Some(resp))) = tokio::time::timeout_at(deadline, stream.message()).await
            {
                if resp.compact_revision() > 0 {
                    oldest = rev_u64(resp.compact_revision());
                    break;
                }
            }
            return Err(StorageError::Expired {
                requested: after,
                oldest,
            });
        }
        let (tx, rx) = mpsc::channel(WATCHER_BUFFER);
        let progress = Arc::new(tokio::sync::Notify::new());
        let ordered = self.learn_progress_order().await;
        crate::panics::spawn(
            "etcd watch",
            self.clone()
                .forward(key, stream, after, tx, progress.clone(), ordered),
        );
        Ok(EventReceiver::new(rx, Some(progress)))
    }

    fn reports_progress(&self) -> bool {
        self.ordered_progress
            .load(std::sync::atomic::Ordering::Relaxed)
            == 1
    }

    async fn compact(&self, revision: u64) -> Result<(), StorageError> {
        let mut kv = self.kv().await;
        let call = kv.compact(rev_i64(revision), None);
        match timed("a compaction", REQUEST_TIMEOUT, revision, call).await {
            // Compacting at or below an earlier compaction changes nothing.
            Ok(_) | Err(StorageError::Expired { .. }) => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// Takes every endpoint out of every client's balanced channel (the start-up
    /// client's and each worker thread's): their connections to etcd close now (etcd
    /// cancels this server's watches at once) rather than with the process; later calls
    /// fail.
    async fn close(&self) {
        self.clients.close().await;
        tracing::info!("closed the etcd clients");
    }

    async fn health(&self) -> Result<(), StorageError> {
        let options = GetOptions::new().with_count_only();
        let probe = self.probe_key();
        timed(
            "a health check",
            HEALTH_TIMEOUT,
            0,
            self.kv().await.get(probe, Some(options)),
        )
        .await
        .map(|_| ())
    }
}

/// Why a guarded write was refused: the key is gone, or it moved on.
fn refusal(key: &str, expected: u64, resp: &etcd_client::TxnResponse) -> StorageError {
    let current = resp.op_responses().into_iter().find_map(|r| match r {
        TxnOpResponse::Get(g) => g.kvs().first().map(|kv| rev_u64(kv.mod_revision())),
        _ => None,
    });
    match current {
        Some(current) => StorageError::Conflict {
            key: key.to_string(),
            current,
            expected,
        },
        None => StorageError::NotFound(key.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn progress_is_trusted_from_fixed_releases() {
        for (version, ordered) in [
            ("3.4.23", false),
            ("3.4.31", true),
            ("3.5.12", false),
            ("3.5.13", true),
            ("3.6.0", true),
            ("3.6.0-rc.1", true),
            ("4.0.0", true),
            ("garbage", false),
        ] {
            assert_eq!(progress_is_ordered(version), ordered, "{version}");
        }
    }

    /// Through the `Storage` trait: readers of the current revision that overlap share
    /// etcd requests, and each gets a revision no older than the last write acknowledged
    /// before it asked (the linearizability rule), while writes go on.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn concurrent_revision_readers_share_requests_and_see_acknowledged_writes() {
        use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

        let server = crate::storage::conformance::EtcdServer::start().await;
        let s = Arc::new(server.client("/registry").await);
        let acknowledged = Arc::new(AtomicU64::new(0));
        let writing = Arc::new(AtomicBool::new(true));
        let writer = {
            let (s, acknowledged, writing) = (s.clone(), acknowledged.clone(), writing.clone());
            tokio::spawn(async move {
                let mut i = 0;
                while writing.load(Ordering::SeqCst) {
                    let key = format!("/registry/coalesce/{i}");
                    let r = s.create(&key, Bytes::new()).await.unwrap();
                    acknowledged.fetch_max(r, Ordering::SeqCst);
                    i += 1;
                }
            })
        };
        const READERS: u64 = 64;
        const READS: u64 = 20;
        let mut readers = tokio::task::JoinSet::new();
        for _ in 0..READERS {
            let (s, acknowledged) = (s.clone(), acknowledged.clone());
            readers.spawn(async move {
                for _ in 0..READS {
                    let before = acknowledged.load(Ordering::SeqCst);
                    let current = s.current_revision().await.unwrap();
                    assert!(
                        current >= before,
                        "read {current} after {before} was acknowledged"
                    );
                }
            });
        }
        while let Some(done) = readers.join_next().await {
            done.unwrap();
        }
        writing.store(false, Ordering::SeqCst);
        writer.await.unwrap();
        let requests = s.revision_requests();
        assert!(
            requests > 0 && requests * 4 < READERS * READS,
            "{requests} etcd requests for {} reads",
            READERS * READS
        );
    }

    /// KV calls from a single-threaded runtime on another thread (as on an actix worker)
    /// go through a client of that thread made with the same TLS options; a later runtime
    /// on the thread gets a fresh one (the first one's tasks died with its runtime); after
    /// close, calls fail.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn worker_threads_use_their_own_clients_until_close() {
        let server = crate::storage::conformance::EtcdServer::start_tls().await;
        let s = Arc::new(server.client("/registry").await);
        let worker = {
            let s = s.clone();
            std::thread::spawn(move || {
                let mut revisions = Vec::new();
                for round in 0..2 {
                    let runtime = tokio::runtime::Builder::new_current_thread()
                        .enable_all()
                        .build()
                        .unwrap();
                    let key = format!("/registry/workers/{round}");
                    revisions.push(runtime.block_on(async {
                        let created = s.create(&key, Bytes::from_static(b"v")).await.unwrap();
                        let read = s.get(&key).await.unwrap().expect("the key just created");
                        assert_eq!(read.mod_revision, created);
                        assert_eq!(s.thread_clients(), round + 1);
                        created
                    }));
                }
                revisions
            })
        };
        let revisions = tokio::task::spawn_blocking(move || worker.join().unwrap())
            .await
            .unwrap();
        // Both writes are visible through the start-up client too.
        let page = s.list("/registry/workers/", None, 0).await.unwrap();
        assert_eq!(
            page.items
                .iter()
                .map(|kv| kv.mod_revision)
                .collect::<Vec<_>>(),
            revisions
        );
        s.close().await;
        let s2 = s.clone();
        let after_close = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            runtime.block_on(s2.health())
        });
        let after_close = tokio::task::spawn_blocking(move || after_close.join().unwrap())
            .await
            .unwrap();
        assert!(after_close.is_err(), "a call after close answered");
        assert_eq!(s.thread_clients(), 0, "close forgets the thread clients");
    }

    #[test]
    fn prefix_ends_and_prefixes() {
        assert_eq!(prefix_end(b"/a/b/"), b"/a/b0".to_vec());
        assert_eq!(prefix_end(b"a\xff"), b"b".to_vec());
        assert_eq!(prefix_end(b"\xff\xff"), vec![0]);
        assert_eq!(normalize_prefix("/registry"), "/registry");
        assert_eq!(normalize_prefix("tenant/"), "/tenant");
        assert_eq!(normalize_prefix("/"), "");
    }
}
