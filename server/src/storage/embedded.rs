//! The default backend: redb, an embedded, crash-safe B-tree store.
//!
//! Writes go through one committer thread that does group commit: it takes every write
//! queued while the previous transaction was committing, applies them in arrival order in
//! one redb transaction (each gets its own revision; a write whose precondition fails
//! takes none), commits once with fsync, publishes the events in revision order and only
//! then answers each writer. Concurrent writers so share one fsync, and nothing
//! acknowledged is lost.

use std::path::Path;
use std::sync::mpsc as std_mpsc;
use std::sync::{Arc, Mutex, RwLock};
use std::thread::JoinHandle;
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use redb::{Database, ReadableTable, Table, TableDefinition};
use tokio::sync::oneshot;

use super::events::{EventLog, DEFAULT_HISTORY};
use super::{EventReceiver, KeyValue, ListPage, Storage, StorageError, StoredEvent};

/// key → [create_revision u64 LE][mod_revision u64 LE][value bytes]
const KV: TableDefinition<&str, &[u8]> = TableDefinition::new("kv");
/// "revision" → the store's current revision.
const META: TableDefinition<&str, u64> = TableDefinition::new("meta");
/// At most this many writes share one transaction.
const MAX_BATCH: usize = 512;
/// redb's page cache by default (`--storage-cache-size`). redb's own default is 1 GiB,
/// which keeps every page of a store that size resident although the watch caches hold
/// every object already. Not smaller: a paginated list read at a past revision reads
/// the whole prefix from the store for each page (`list_at`), and with 16 MiB a
/// 30,000-object store halved that walk's rate.
pub const DEFAULT_CACHE_SIZE: usize = 64 << 20;

/// How much memory the embedded store may use beyond its data.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EmbeddedOptions {
    /// redb's page cache, bytes (a tenth of it buffers a transaction's writes).
    pub cache_size: usize,
    /// Changes kept for watches and paginated lists (older start points: 410).
    pub history: usize,
}

impl Default for EmbeddedOptions {
    fn default() -> Self {
        EmbeddedOptions {
            cache_size: DEFAULT_CACHE_SIZE,
            history: DEFAULT_HISTORY,
        }
    }
}

/// redb-backed [`Storage`].
#[derive(Clone)]
pub struct EmbeddedStorage {
    inner: Arc<Inner>,
}

struct Inner {
    /// The database; `None` once closed.
    db: RwLock<Option<Arc<Database>>>,
    events: Arc<EventLog>,
    /// Queue of the committer thread; `None` once closed.
    writes: Mutex<Option<std_mpsc::Sender<Request>>>,
    committer: Mutex<Option<JoinHandle<()>>>,
}

impl Inner {
    /// Stops the committer once the writes queued so far are committed, and waits
    /// for it.
    fn stop_committer(&self) {
        // Closing the queue stops the committer after the writes already in it.
        self.writes.lock().unwrap_or_else(|e| e.into_inner()).take();
        let handle = self
            .committer
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        if let Some(handle) = handle {
            let _ = handle.join();
        }
    }
}

impl Drop for Inner {
    fn drop(&mut self) {
        // Joining the committer releases the database file before the store is
        // reported dropped.
        self.stop_committer();
    }
}

/// One queued write and where to send its outcome.
struct Request {
    op: WriteOp,
    reply: oneshot::Sender<Result<Written, StorageError>>,
}

enum WriteOp {
    Create {
        key: String,
        value: Bytes,
    },
    Update {
        key: String,
        expected: u64,
        value: Bytes,
    },
    Delete {
        key: String,
        expected: Option<u64>,
    },
}

impl WriteOp {
    fn key(&self) -> &str {
        match self {
            WriteOp::Create { key, .. }
            | WriteOp::Update { key, .. }
            | WriteOp::Delete { key, .. } => key,
        }
    }

    /// Checks the precondition against the current record; returns the record to store
    /// (`None` = remove the key).
    fn apply(&self, current: Option<&KeyValue>, rev: u64) -> Result<Option<Vec<u8>>, StorageError> {
        match (self, current) {
            (WriteOp::Create { key, .. }, Some(_)) => Err(StorageError::AlreadyExists(key.clone())),
            (WriteOp::Create { value, .. }, None) => Ok(Some(encode(rev, rev, value))),
            (WriteOp::Update { key, .. } | WriteOp::Delete { key, .. }, None) => {
                Err(StorageError::NotFound(key.clone()))
            }
            (WriteOp::Update { key, expected, .. }, Some(cur))
            | (
                WriteOp::Delete {
                    key,
                    expected: Some(expected),
                },
                Some(cur),
            ) if cur.mod_revision != *expected => Err(StorageError::Conflict {
                key: key.clone(),
                current: cur.mod_revision,
                expected: *expected,
            }),
            (WriteOp::Update { value, .. }, Some(cur)) => {
                Ok(Some(encode(cur.create_revision, rev, value)))
            }
            (WriteOp::Delete { .. }, Some(_)) => Ok(None),
        }
    }
}

/// What a successful write did.
struct Written {
    revision: u64,
    prev: Option<KeyValue>,
}

fn internal(e: impl std::fmt::Display) -> StorageError {
    StorageError::Internal(e.to_string())
}

fn stopped() -> StorageError {
    StorageError::Internal("the embedded store's committer has stopped".into())
}

fn closed() -> StorageError {
    StorageError::Internal("the embedded store is closed (the server is shutting down)".into())
}

/// How long closing waits for reads in flight to let go of the database.
const CLOSE_WAIT: Duration = Duration::from_secs(5);

fn encode(create: u64, modified: u64, value: &[u8]) -> Vec<u8> {
    let mut v = Vec::with_capacity(16 + value.len());
    v.extend_from_slice(&create.to_le_bytes());
    v.extend_from_slice(&modified.to_le_bytes());
    v.extend_from_slice(value);
    v
}

fn decode(key: &str, raw: &[u8]) -> Result<KeyValue, StorageError> {
    let corrupt = || StorageError::Internal(format!("corrupt record for {key}"));
    let word = |range: std::ops::Range<usize>| -> Result<u64, StorageError> {
        let bytes: [u8; 8] = raw
            .get(range)
            .and_then(|b| b.try_into().ok())
            .ok_or_else(corrupt)?;
        Ok(u64::from_le_bytes(bytes))
    };
    Ok(KeyValue {
        key: key.to_string(),
        create_revision: word(0..8)?,
        mod_revision: word(8..16)?,
        value: Bytes::copy_from_slice(raw.get(16..).ok_or_else(corrupt)?),
        stale: false,
    })
}

fn read_revision(meta: &impl ReadableTable<&'static str, u64>) -> Result<u64, StorageError> {
    Ok(meta
        .get("revision")
        .map_err(internal)?
        .map(|v| v.value())
        .unwrap_or(0))
}

impl EmbeddedStorage {
    /// Opens (or creates) the store at `path` with the default options.
    pub fn open(path: &Path) -> Result<Self, StorageError> {
        Self::open_with(path, EmbeddedOptions::default())
    }

    /// Opens (or creates) the store at `path`. Watch history starts at the revision found
    /// on disk: watches from before a restart get 410 and re-list, as after compaction.
    pub fn open_with(path: &Path, options: EmbeddedOptions) -> Result<Self, StorageError> {
        let db = Database::builder()
            .set_cache_size(options.cache_size)
            .create(path)
            .map_err(|e| match e {
                // redb locks the file: a second process on the same data directory.
                redb::DatabaseError::DatabaseAlreadyOpen => internal(
                    "it is open in another process: the embedded store serves one instance; \
                 run several instances on one etcd (--etcd-servers) instead",
                ),
                e => internal(e),
            })?;
        let tx = db.begin_write().map_err(internal)?;
        let revision;
        {
            tx.open_table(KV).map_err(internal)?;
            let meta = tx.open_table(META).map_err(internal)?;
            revision = read_revision(&meta)?;
        }
        tx.commit().map_err(internal)?;
        let db = Arc::new(db);
        let events = Arc::new(EventLog::new(revision, options.history));
        let (writes, queue) = std_mpsc::channel();
        let committer = {
            let (db, events) = (db.clone(), events.clone());
            crate::panics::thread("redb-committer", move || committer(&db, &events, &queue))
                .map_err(|e| internal(format!("starting the committer thread: {e}")))?
        };
        Ok(EmbeddedStorage {
            inner: Arc::new(Inner {
                db: RwLock::new(Some(db)),
                events,
                writes: Mutex::new(Some(writes)),
                committer: Mutex::new(Some(committer)),
            }),
        })
    }

    async fn blocking<T: Send + 'static>(
        &self,
        f: impl FnOnce(&Database) -> Result<T, StorageError> + Send + 'static,
    ) -> Result<T, StorageError> {
        let db = self
            .inner
            .db
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
            .ok_or_else(closed)?;
        tokio::task::spawn_blocking(move || f(&db))
            .await
            .map_err(internal)?
    }

    /// Queues a write for the committer and waits until it is durable.
    async fn write(&self, op: WriteOp) -> Result<Written, StorageError> {
        let (reply, answer) = oneshot::channel();
        self.inner
            .writes
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .as_ref()
            .ok_or_else(closed)?
            .send(Request { op, reply })
            .map_err(|_| stopped())?;
        answer.await.map_err(|_| stopped())?
    }
}

/// The committer thread: one transaction (one fsync) per batch of queued writes.
fn committer(db: &Database, events: &EventLog, queue: &std_mpsc::Receiver<Request>) {
    while let Ok(first) = queue.recv() {
        let mut batch = vec![first];
        while batch.len() < MAX_BATCH {
            match queue.try_recv() {
                Ok(req) => batch.push(req),
                Err(_) => break,
            }
        }
        match commit_batch(db, &batch) {
            Ok((outcomes, committed)) => {
                // Publish before answering: a writer that hears its revision can watch
                // from it and miss nothing.
                for event in committed {
                    events.publish(event);
                }
                for (req, outcome) in batch.into_iter().zip(outcomes) {
                    let _ = req.reply.send(outcome);
                }
            }
            Err(e) => {
                for req in batch {
                    let _ = req.reply.send(Err(e.clone()));
                }
            }
        }
    }
}

type BatchOutcome = (Vec<Result<Written, StorageError>>, Vec<StoredEvent>);

/// Applies `batch` in order in one transaction and commits it (unless nothing changed).
fn commit_batch(db: &Database, batch: &[Request]) -> Result<BatchOutcome, StorageError> {
    let tx = db.begin_write().map_err(internal)?;
    let mut outcomes = Vec::with_capacity(batch.len());
    let mut committed = Vec::new();
    {
        let mut meta = tx.open_table(META).map_err(internal)?;
        let mut kv = tx.open_table(KV).map_err(internal)?;
        let start = read_revision(&meta)?;
        let mut rev = start;
        for req in batch {
            match apply_one(&mut kv, &req.op, rev + 1)? {
                Ok((record, prev)) => {
                    rev += 1;
                    committed.push(StoredEvent {
                        revision: rev,
                        key: req.op.key().to_string(),
                        value: record.map(|r| Bytes::copy_from_slice(&r[16..])),
                        prev: prev.as_ref().map(|p| p.value.clone()),
                        prev_create_revision: prev.as_ref().map_or(0, |p| p.create_revision),
                        prev_mod_revision: prev.as_ref().map_or(0, |p| p.mod_revision),
                        encoded: Default::default(),
                        labels: Default::default(),
                    });
                    outcomes.push(Ok(Written {
                        revision: rev,
                        prev,
                    }));
                }
                Err(refused) => outcomes.push(Err(refused)),
            }
        }
        if rev != start {
            meta.insert("revision", rev).map_err(internal)?;
        }
    }
    if committed.is_empty() {
        tx.abort().map_err(internal)?;
    } else {
        tx.commit().map_err(internal)?;
    }
    Ok((outcomes, committed))
}

type Applied = Result<(Option<Vec<u8>>, Option<KeyValue>), StorageError>;

/// One write inside the batch transaction. The outer error fails the whole batch (I/O);
/// the inner one refuses only this write (a precondition).
fn apply_one(
    kv: &mut Table<&'static str, &'static [u8]>,
    op: &WriteOp,
    rev: u64,
) -> Result<Applied, StorageError> {
    let key = op.key();
    let current = match kv.get(key).map_err(internal)? {
        Some(v) => Some(decode(key, v.value())?),
        None => None,
    };
    let record = match op.apply(current.as_ref(), rev) {
        Ok(record) => record,
        Err(refused) => return Ok(Err(refused)),
    };
    match &record {
        Some(bytes) => {
            kv.insert(key, bytes.as_slice()).map_err(internal)?;
        }
        None => {
            kv.remove(key).map_err(internal)?;
        }
    }
    Ok(Ok((record, current)))
}

#[async_trait]
impl Storage for EmbeddedStorage {
    async fn get(&self, key: &str) -> Result<Option<KeyValue>, StorageError> {
        let key = key.to_string();
        self.blocking(move |db| {
            let tx = db.begin_read().map_err(internal)?;
            let kv = tx.open_table(KV).map_err(internal)?;
            match kv.get(key.as_str()).map_err(internal)? {
                Some(v) => Ok(Some(decode(&key, v.value())?)),
                None => Ok(None),
            }
        })
        .await
    }

    async fn list(
        &self,
        prefix: &str,
        start_after: Option<&str>,
        limit: usize,
    ) -> Result<ListPage, StorageError> {
        let prefix = prefix.to_string();
        let start_after = start_after.map(str::to_string);
        self.blocking(move |db| {
            let tx = db.begin_read().map_err(internal)?;
            let kv = tx.open_table(KV).map_err(internal)?;
            let meta = tx.open_table(META).map_err(internal)?;
            let revision = read_revision(&meta)?;
            let mut items = Vec::new();
            let mut remaining = 0u64;
            let start = match &start_after {
                Some(s) if s.as_str() > prefix.as_str() => s.clone(),
                _ => prefix.clone(),
            };
            for entry in kv.range(start.as_str()..).map_err(internal)? {
                let (k, v) = entry.map_err(internal)?;
                let key = k.value();
                if !key.starts_with(prefix.as_str()) {
                    break;
                }
                if start_after.as_deref() == Some(key) {
                    continue;
                }
                if limit > 0 && items.len() >= limit {
                    remaining += 1;
                    continue;
                }
                items.push(decode(key, v.value())?);
            }
            Ok(ListPage {
                items,
                revision,
                remaining,
            })
        })
        .await
    }

    /// A past revision is rebuilt from the current keys by undoing, newest first, the
    /// changes the event history holds after it; older than the history → `Expired`.
    async fn list_at(
        &self,
        prefix: &str,
        start_after: Option<&str>,
        limit: usize,
        revision: u64,
    ) -> Result<ListPage, StorageError> {
        let now = self.list(prefix, None, 0).await?;
        if revision >= now.revision {
            return self.list(prefix, start_after, limit).await;
        }
        // The commit that produced `now` is published right after it lands; wait for it.
        let mut history = None;
        for _ in 0..200 {
            history = self.inner.events.history(prefix, revision, now.revision)?;
            if history.is_some() {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(1)).await;
        }
        let history = history.ok_or_else(|| {
            StorageError::Internal("the event history lags behind the store".into())
        })?;
        let mut state: std::collections::BTreeMap<String, KeyValue> = now
            .items
            .into_iter()
            .map(|kv| (kv.key.clone(), kv))
            .collect();
        for e in history.iter().rev() {
            match &e.prev {
                Some(prev) => {
                    let kv = KeyValue {
                        key: e.key.clone(),
                        value: prev.clone(),
                        create_revision: e.prev_create_revision,
                        mod_revision: e.prev_mod_revision,
                        stale: false,
                    };
                    state.insert(e.key.clone(), kv);
                }
                None => {
                    state.remove(&e.key);
                }
            }
        }
        let mut items = Vec::new();
        let mut remaining = 0;
        for (k, kv) in state {
            if start_after.is_some_and(|s| k.as_str() <= s) {
                continue;
            }
            if limit > 0 && items.len() >= limit {
                remaining += 1;
            } else {
                items.push(kv);
            }
        }
        Ok(ListPage {
            items,
            revision,
            remaining,
        })
    }

    async fn create(&self, key: &str, value: Bytes) -> Result<u64, StorageError> {
        let key = key.to_string();
        Ok(self.write(WriteOp::Create { key, value }).await?.revision)
    }

    async fn update(&self, key: &str, expected: u64, value: Bytes) -> Result<u64, StorageError> {
        let key = key.to_string();
        let op = WriteOp::Update {
            key,
            expected,
            value,
        };
        Ok(self.write(op).await?.revision)
    }

    async fn delete(
        &self,
        key: &str,
        expected: Option<u64>,
    ) -> Result<(KeyValue, u64), StorageError> {
        let op = WriteOp::Delete {
            key: key.to_string(),
            expected,
        };
        let written = self.write(op).await?;
        let prev = written
            .prev
            .ok_or_else(|| StorageError::Internal(format!("delete of {key} removed nothing")))?;
        Ok((prev, written.revision))
    }

    async fn watch(&self, prefix: &str, after: u64) -> Result<EventReceiver, StorageError> {
        self.inner.events.watch(prefix, after)
    }

    async fn current_revision(&self) -> Result<u64, StorageError> {
        // Every commit is published to the event log before it is acknowledged.
        Ok(self.inner.events.latest())
    }

    async fn compact(&self, revision: u64) -> Result<(), StorageError> {
        self.inner.events.compact(revision)
    }

    async fn close(&self) {
        let inner = self.inner.clone();
        let _ = tokio::task::spawn_blocking(move || {
            inner.stop_committer();
            let Some(mut db) = inner.db.write().unwrap_or_else(|e| e.into_inner()).take() else {
                return;
            };
            // Reads in flight hold the database a moment longer. Dropping the last
            // reference writes redb's allocator state, so the next start needs no repair.
            let deadline = std::time::Instant::now() + CLOSE_WAIT;
            loop {
                match Arc::try_unwrap(db) {
                    Ok(db) => return drop(db),
                    Err(shared) if std::time::Instant::now() < deadline => {
                        db = shared;
                        std::thread::sleep(Duration::from_millis(10));
                    }
                    Err(_) => {
                        return tracing::warn!(
                            "closing the embedded store: reads still hold it; the next start may repair it"
                        )
                    }
                }
            }
        })
        .await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn survives_reopen_and_starts_history_at_the_stored_revision() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("db");
        let s = EmbeddedStorage::open(&path).unwrap();
        let r1 = s.create("/a/1", Bytes::from_static(b"x")).await.unwrap();
        let r2 = s
            .update("/a/1", r1, Bytes::from_static(b"y"))
            .await
            .unwrap();
        drop(s);
        let s = EmbeddedStorage::open(&path).unwrap();
        let got = s.get("/a/1").await.unwrap().unwrap();
        assert_eq!(
            (got.create_revision, got.mod_revision, &got.value[..]),
            (r1, r2, &b"y"[..])
        );
        assert_eq!(s.current_revision().await.unwrap(), r2);
        assert!(matches!(
            s.watch("/a/", r1 - 1).await,
            Err(StorageError::Expired { .. })
        ));
        let mut w = s.watch("/a/", r2).await.unwrap();
        let r3 = s.create("/a/2", Bytes::new()).await.unwrap();
        assert_eq!(w.recv().await.unwrap().unwrap().revision, r3);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn concurrent_writes_share_commits_and_keep_revisions_gap_free() {
        let dir = tempfile::tempdir().unwrap();
        let s = EmbeddedStorage::open(&dir.path().join("db")).unwrap();
        let mut watch = s.watch("/", 0).await.unwrap();
        let tasks: Vec<_> = (0..64)
            .map(|i| {
                let s = s.clone();
                tokio::spawn(async move { s.create(&format!("/k/{i}"), Bytes::new()).await })
            })
            .collect();
        let mut revs = Vec::new();
        for t in tasks {
            revs.push(t.await.unwrap().unwrap());
        }
        revs.sort_unstable();
        assert_eq!(revs, (1..=64).collect::<Vec<u64>>());
        for want in 1..=64 {
            assert_eq!(watch.recv().await.unwrap().unwrap().revision, want);
        }
    }
}
