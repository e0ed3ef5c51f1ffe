//! Storage: one narrow trait with etcd3's semantics (one global increasing revision,
//! create-if-absent, compare-and-swap on the modification revision, delete with a
//! precondition, prefix listing with continuation). Backends: [`embedded`] (redb).

pub mod embedded;
pub mod events;

use async_trait::async_trait;
use bytes::Bytes;

/// A stored key with its value and revisions.
#[derive(Clone, Debug, PartialEq)]
pub struct KeyValue {
    pub key: String,
    pub value: Bytes,
    /// Revision of the write that created the key.
    pub create_revision: u64,
    /// Revision of the last write to the key; the object's resourceVersion.
    pub mod_revision: u64,
}

/// One page of a prefix listing.
#[derive(Clone, Debug, PartialEq)]
pub struct ListPage {
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
    pub key: String,
    /// The new value; `None` when the key was deleted.
    pub value: Option<Bytes>,
    /// The value before the write; `None` when the key was created.
    pub prev: Option<Bytes>,
}

/// A stream of events for one watch, in revision order. It ends with an
/// `Err(StorageError::Expired)` when the watcher fell too far behind.
pub type EventReceiver =
    tokio::sync::mpsc::Receiver<Result<std::sync::Arc<StoredEvent>, StorageError>>;

/// Why a storage operation failed. Mapped to API errors once, in `registry`.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum StorageError {
    #[error("key {0} not found")]
    NotFound(String),
    #[error("key {0} already exists")]
    AlreadyExists(String),
    #[error("key {key} was modified (revision {current}, expected {expected})")]
    Conflict {
        key: String,
        current: u64,
        expected: u64,
    },
    #[error("too old resource version: {requested} ({oldest})")]
    Expired { requested: u64, oldest: u64 },
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
}
