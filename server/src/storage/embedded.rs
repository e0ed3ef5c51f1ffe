//! The default backend: redb, an embedded, crash-safe B-tree store. Each write is one
//! redb transaction committed with fsync before the caller hears success, so nothing
//! acknowledged is lost.

use std::path::Path;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use bytes::Bytes;
use redb::{Database, ReadableTable, TableDefinition};

use super::events::{EventLog, DEFAULT_HISTORY};
use super::{EventReceiver, KeyValue, ListPage, Storage, StorageError, StoredEvent};

/// key → [create_revision u64 LE][mod_revision u64 LE][value bytes]
const KV: TableDefinition<&str, &[u8]> = TableDefinition::new("kv");
/// "revision" → the store's current revision.
const META: TableDefinition<&str, u64> = TableDefinition::new("meta");

/// redb-backed [`Storage`].
#[derive(Clone)]
pub struct EmbeddedStorage {
    inner: Arc<Inner>,
}

struct Inner {
    db: Database,
    events: EventLog,
    /// Serialises commit + publish so watchers see revisions in order.
    write_order: Mutex<()>,
}

fn internal(e: impl std::fmt::Display) -> StorageError {
    StorageError::Internal(e.to_string())
}

fn encode(create: u64, modified: u64, value: &[u8]) -> Vec<u8> {
    let mut v = Vec::with_capacity(16 + value.len());
    v.extend_from_slice(&create.to_le_bytes());
    v.extend_from_slice(&modified.to_le_bytes());
    v.extend_from_slice(value);
    v
}

fn decode(key: &str, raw: &[u8]) -> Result<KeyValue, StorageError> {
    if raw.len() < 16 {
        return Err(StorageError::Internal(format!("corrupt record for {key}")));
    }
    let create = u64::from_le_bytes(raw[0..8].try_into().expect("8 bytes"));
    let modified = u64::from_le_bytes(raw[8..16].try_into().expect("8 bytes"));
    Ok(KeyValue {
        key: key.to_string(),
        value: Bytes::copy_from_slice(&raw[16..]),
        create_revision: create,
        mod_revision: modified,
    })
}

impl EmbeddedStorage {
    /// Opens (or creates) the store at `path`. Watch history starts at the revision found
    /// on disk: watches from before a restart get 410 and re-list, as after compaction.
    pub fn open(path: &Path) -> Result<Self, StorageError> {
        let db = Database::create(path).map_err(internal)?;
        let tx = db.begin_write().map_err(internal)?;
        let revision;
        {
            tx.open_table(KV).map_err(internal)?;
            let meta = tx.open_table(META).map_err(internal)?;
            revision = meta
                .get("revision")
                .map_err(internal)?
                .map(|v| v.value())
                .unwrap_or(0);
        }
        tx.commit().map_err(internal)?;
        Ok(EmbeddedStorage {
            inner: Arc::new(Inner {
                db,
                events: EventLog::new(revision, DEFAULT_HISTORY),
                write_order: Mutex::new(()),
            }),
        })
    }

    async fn blocking<T: Send + 'static>(
        &self,
        f: impl FnOnce(&Inner) -> Result<T, StorageError> + Send + 'static,
    ) -> Result<T, StorageError> {
        let inner = self.inner.clone();
        tokio::task::spawn_blocking(move || f(&inner))
            .await
            .map_err(internal)?
    }

    /// One write transaction: `f` gets the current record (if any) and the next revision
    /// and returns the value to store (`Some`) or delete (`None`). The committed change is
    /// published to watchers before the next write can commit, so events stay in order.
    async fn write<T: Send + 'static>(
        &self,
        key: &str,
        f: impl FnOnce(Option<&KeyValue>, u64) -> Result<(Option<Vec<u8>>, T), StorageError>
            + Send
            + 'static,
    ) -> Result<T, StorageError> {
        let key = key.to_string();
        self.blocking(move |inner| {
            let _order = inner.write_order.lock().unwrap_or_else(|e| e.into_inner());
            let tx = inner.db.begin_write().map_err(internal)?;
            let (rev, current, record, out);
            {
                let mut meta = tx.open_table(META).map_err(internal)?;
                let mut kv = tx.open_table(KV).map_err(internal)?;
                rev = meta
                    .get("revision")
                    .map_err(internal)?
                    .map(|v| v.value())
                    .unwrap_or(0)
                    + 1;
                current = match kv.get(key.as_str()).map_err(internal)? {
                    Some(v) => Some(decode(&key, v.value())?),
                    None => None,
                };
                (record, out) = f(current.as_ref(), rev)?;
                match &record {
                    Some(bytes) => {
                        kv.insert(key.as_str(), bytes.as_slice())
                            .map_err(internal)?;
                    }
                    None => {
                        kv.remove(key.as_str()).map_err(internal)?;
                    }
                }
                meta.insert("revision", rev).map_err(internal)?;
            }
            tx.commit().map_err(internal)?;
            inner.events.publish(StoredEvent {
                revision: rev,
                key,
                value: record.map(|r| Bytes::copy_from_slice(&r[16..])),
                prev: current.map(|c| c.value),
            });
            Ok(out)
        })
        .await
    }
}

#[async_trait]
impl Storage for EmbeddedStorage {
    async fn get(&self, key: &str) -> Result<Option<KeyValue>, StorageError> {
        let key = key.to_string();
        self.blocking(move |inner| {
            let db = &inner.db;
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
        self.blocking(move |inner| {
            let db = &inner.db;
            let tx = db.begin_read().map_err(internal)?;
            let kv = tx.open_table(KV).map_err(internal)?;
            let meta = tx.open_table(META).map_err(internal)?;
            let revision = meta
                .get("revision")
                .map_err(internal)?
                .map(|v| v.value())
                .unwrap_or(0);
            let mut items = Vec::new();
            let mut remaining = 0u64;
            let start = start_after.clone().unwrap_or_else(|| prefix.clone());
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

    async fn create(&self, key: &str, value: Bytes) -> Result<u64, StorageError> {
        let k = key.to_string();
        self.write(key, move |current, rev| match current {
            Some(_) => Err(StorageError::AlreadyExists(k)),
            None => Ok((Some(encode(rev, rev, &value)), rev)),
        })
        .await
    }

    async fn update(&self, key: &str, expected: u64, value: Bytes) -> Result<u64, StorageError> {
        let k = key.to_string();
        self.write(key, move |current, rev| match current {
            None => Err(StorageError::NotFound(k)),
            Some(cur) if cur.mod_revision != expected => Err(StorageError::Conflict {
                key: k,
                current: cur.mod_revision,
                expected,
            }),
            Some(cur) => Ok((Some(encode(cur.create_revision, rev, &value)), rev)),
        })
        .await
    }

    async fn delete(
        &self,
        key: &str,
        expected: Option<u64>,
    ) -> Result<(KeyValue, u64), StorageError> {
        let k = key.to_string();
        self.write(key, move |current, rev| match current {
            None => Err(StorageError::NotFound(k)),
            Some(cur) if expected.is_some_and(|e| e != cur.mod_revision) => {
                Err(StorageError::Conflict {
                    key: k,
                    current: cur.mod_revision,
                    expected: expected.unwrap_or_default(),
                })
            }
            Some(cur) => Ok((None, (cur.clone(), rev))),
        })
        .await
    }

    async fn watch(&self, prefix: &str, after: u64) -> Result<EventReceiver, StorageError> {
        self.inner.events.watch(prefix, after)
    }

    async fn current_revision(&self) -> Result<u64, StorageError> {
        self.blocking(|inner| {
            let db = &inner.db;
            let tx = db.begin_read().map_err(internal)?;
            let meta = tx.open_table(META).map_err(internal)?;
            Ok(meta
                .get("revision")
                .map_err(internal)?
                .map(|v| v.value())
                .unwrap_or(0))
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn revisions_cas_and_listing() {
        let dir = tempfile::tempdir().unwrap();
        let s = EmbeddedStorage::open(&dir.path().join("db")).unwrap();
        let r1 = s.create("/a/1", Bytes::from_static(b"x")).await.unwrap();
        let r2 = s.create("/a/2", Bytes::from_static(b"y")).await.unwrap();
        assert!(r2 > r1);
        assert_eq!(
            s.create("/a/1", Bytes::new()).await,
            Err(StorageError::AlreadyExists("/a/1".into()))
        );
        assert!(matches!(
            s.update("/a/1", r2, Bytes::new()).await,
            Err(StorageError::Conflict { .. })
        ));
        let r3 = s
            .update("/a/1", r1, Bytes::from_static(b"z"))
            .await
            .unwrap();
        let got = s.get("/a/1").await.unwrap().unwrap();
        assert_eq!(
            (got.create_revision, got.mod_revision, &got.value[..]),
            (r1, r3, &b"z"[..])
        );
        s.create("/b/1", Bytes::new()).await.unwrap();
        let page = s.list("/a/", None, 1).await.unwrap();
        assert_eq!((page.items.len(), page.remaining), (1, 1));
        let next = s.list("/a/", Some(&page.items[0].key), 1).await.unwrap();
        assert_eq!((next.items[0].key.as_str(), next.remaining), ("/a/2", 0));
        let (deleted, rev) = s.delete("/a/2", None).await.unwrap();
        assert_eq!(deleted.value, Bytes::from_static(b"y"));
        assert_eq!(s.current_revision().await.unwrap(), rev);
        assert_eq!(s.get("/a/2").await.unwrap(), None);
    }
}
