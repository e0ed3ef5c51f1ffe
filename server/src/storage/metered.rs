//! One resource's storage as the store calls it, timed: each call is recorded in
//! `etcd_request_duration_seconds` and `etcd_requests_total` (errors also in
//! `etcd_request_errors_total`) under the resource's group and name, whichever backend
//! serves it (kube-apiserver names them after etcd; so do we, so dashboards match).
//!
//! A borrowed handle made per call site, with the methods of [`Storage`] the store uses:
//! no allocation, and the wrapped storage stays the one the store chose.

use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;

use super::{EventReceiver, KeyValue, ListPage, Storage, StorageError};
use crate::metrics::metrics;

/// `storage`, timed under `group` and `resource`.
#[derive(Clone, Copy)]
pub struct Metered<'a> {
    pub storage: &'a Arc<dyn Storage>,
    pub group: &'a str,
    pub resource: &'a str,
}

impl Metered<'_> {
    fn record<T>(&self, operation: &str, start: Instant, r: &Result<T, StorageError>) {
        // A failed precondition or a missing key is an answer, not an etcd failure.
        let ok = !matches!(
            r,
            Err(StorageError::Internal(_)) | Err(StorageError::Expired { .. })
        );
        metrics().storage_call(operation, self.group, self.resource, start, ok);
    }

    pub async fn get(&self, key: &str) -> Result<Option<KeyValue>, StorageError> {
        let start = Instant::now();
        let r = self.storage.get(key).await;
        self.record("get", start, &r);
        r
    }

    pub async fn list(
        &self,
        prefix: &str,
        start_after: Option<&str>,
        limit: usize,
    ) -> Result<ListPage, StorageError> {
        let start = Instant::now();
        let r = self.storage.list(prefix, start_after, limit).await;
        self.record("list", start, &r);
        r
    }

    pub async fn list_at(
        &self,
        prefix: &str,
        start_after: Option<&str>,
        limit: usize,
        revision: u64,
    ) -> Result<ListPage, StorageError> {
        let start = Instant::now();
        let r = self
            .storage
            .list_at(prefix, start_after, limit, revision)
            .await;
        self.record("list", start, &r);
        r
    }

    pub async fn create(&self, key: &str, value: Bytes) -> Result<u64, StorageError> {
        let start = Instant::now();
        let r = self.storage.create(key, value).await;
        self.record("create", start, &r);
        r
    }

    pub async fn update(
        &self,
        key: &str,
        expected: u64,
        value: Bytes,
    ) -> Result<u64, StorageError> {
        let start = Instant::now();
        let r = self.storage.update(key, expected, value).await;
        self.record("update", start, &r);
        r
    }

    pub async fn delete(
        &self,
        key: &str,
        expected: Option<u64>,
    ) -> Result<(KeyValue, u64), StorageError> {
        let start = Instant::now();
        let r = self.storage.delete(key, expected).await;
        self.record("delete", start, &r);
        r
    }

    /// A storage watch (long-lived: not timed).
    pub async fn watch(&self, prefix: &str, after: u64) -> Result<EventReceiver, StorageError> {
        self.storage.watch(prefix, after).await
    }
}
