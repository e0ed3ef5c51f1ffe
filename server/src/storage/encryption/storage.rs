//! [`TransformedStorage`]: one resource's storage with its values encrypted at rest.
//! Keys, revisions and preconditions pass through; values are sealed on the way in and
//! opened on the way out, in every answer that carries them (gets, list pages, the
//! deleted value, watch events and their previous values).

use std::sync::Arc;

use async_trait::async_trait;
use bytes::Bytes;

use super::transformers::Transformers;
use crate::storage::{EventReceiver, KeyValue, ListPage, Storage, StorageError, StoredEvent};

/// A [`Storage`] whose values go through a resource's [`Transformers`].
pub struct TransformedStorage {
    inner: Arc<dyn Storage>,
    transformers: Arc<Transformers>,
}

impl TransformedStorage {
    /// `inner`, with values transformed by `transformers`.
    pub fn new(inner: Arc<dyn Storage>, transformers: Arc<Transformers>) -> Self {
        TransformedStorage {
            inner,
            transformers,
        }
    }

    fn seal(&self, key: &str, value: Bytes) -> Result<Bytes, StorageError> {
        self.transformers
            .to_storage(key, value)
            .map_err(|e| StorageError::Internal(format!("encrypting {key}: {e}")))
    }

    fn open(&self, kv: &mut KeyValue) -> Result<(), StorageError> {
        let (value, stale) = open(&self.transformers, &kv.key, std::mem::take(&mut kv.value))?;
        kv.value = value;
        kv.stale = stale;
        Ok(())
    }

    fn open_page(&self, mut page: ListPage) -> Result<ListPage, StorageError> {
        for kv in &mut page.items {
            self.open(kv)?;
        }
        Ok(page)
    }
}

/// The plain value stored under `key`, and whether it is stale.
fn open(
    transformers: &Transformers,
    key: &str,
    value: Bytes,
) -> Result<(Bytes, bool), StorageError> {
    transformers
        .from_storage(key, value)
        .map_err(|e| StorageError::Internal(format!("reading {key}: {e}")))
}

/// A watch event with its values opened.
fn open_event(
    transformers: &Transformers,
    e: Arc<StoredEvent>,
) -> Result<Arc<StoredEvent>, StorageError> {
    let plain = |v: &Option<Bytes>| -> Result<Option<Bytes>, StorageError> {
        v.clone()
            .map(|v| open(transformers, &e.key, v).map(|(v, _)| v))
            .transpose()
    };
    Ok(Arc::new(StoredEvent {
        revision: e.revision,
        key: e.key.clone(),
        value: plain(&e.value)?,
        prev: plain(&e.prev)?,
        prev_create_revision: e.prev_create_revision,
        prev_mod_revision: e.prev_mod_revision,
        encoded: Default::default(),
        labels: Default::default(),
    }))
}

#[async_trait]
impl Storage for TransformedStorage {
    async fn get(&self, key: &str) -> Result<Option<KeyValue>, StorageError> {
        let mut found = self.inner.get(key).await?;
        if let Some(kv) = &mut found {
            self.open(kv)?;
        }
        Ok(found)
    }

    async fn list(
        &self,
        prefix: &str,
        start_after: Option<&str>,
        limit: usize,
    ) -> Result<ListPage, StorageError> {
        let page = self.inner.list(prefix, start_after, limit).await?;
        self.open_page(page)
    }

    async fn list_at(
        &self,
        prefix: &str,
        start_after: Option<&str>,
        limit: usize,
        revision: u64,
    ) -> Result<ListPage, StorageError> {
        let page = self
            .inner
            .list_at(prefix, start_after, limit, revision)
            .await?;
        self.open_page(page)
    }

    async fn create(&self, key: &str, value: Bytes) -> Result<u64, StorageError> {
        let sealed = self.seal(key, value)?;
        self.inner.create(key, sealed).await
    }

    async fn update(&self, key: &str, expected: u64, value: Bytes) -> Result<u64, StorageError> {
        let sealed = self.seal(key, value)?;
        self.inner.update(key, expected, sealed).await
    }

    async fn delete(
        &self,
        key: &str,
        expected: Option<u64>,
    ) -> Result<(KeyValue, u64), StorageError> {
        let (mut kv, rev) = self.inner.delete(key, expected).await?;
        // The key is gone whatever its value: a value that does not open (a dropped key)
        // must not fail the delete that removes it.
        if let Err(e) = self.open(&mut kv) {
            tracing::warn!("{e}");
        }
        Ok((kv, rev))
    }

    async fn current_revision(&self) -> Result<u64, StorageError> {
        self.inner.current_revision().await
    }

    async fn watch(&self, prefix: &str, after: u64) -> Result<EventReceiver, StorageError> {
        let events = self.inner.watch(prefix, after).await?;
        let transformers = self.transformers.clone();
        Ok(events.map(move |e| open_event(&transformers, e)))
    }

    fn reports_progress(&self) -> bool {
        self.inner.reports_progress()
    }

    async fn compact(&self, revision: u64) -> Result<(), StorageError> {
        self.inner.compact(revision).await
    }

    async fn health(&self) -> Result<(), StorageError> {
        self.inner.health().await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::embedded::EmbeddedStorage;
    use crate::storage::encryption::providers::AesGcm;

    fn chain(key_fill: u8, name: &str, identity: bool) -> Arc<Transformers> {
        let mut t = Transformers::new();
        t.key(
            "aesgcm",
            name,
            Box::new(AesGcm::new(&[key_fill; 32]).unwrap()),
        );
        if identity {
            t.identity();
        }
        Arc::new(t)
    }

    #[tokio::test]
    async fn values_are_sealed_at_rest_and_opened_in_every_answer() {
        let dir = tempfile::tempdir().unwrap();
        let raw: Arc<dyn Storage> =
            Arc::new(EmbeddedStorage::open(&dir.path().join("store.redb")).unwrap());
        let s = TransformedStorage::new(raw.clone(), chain(1, "k1", false));
        let key = "/registry/secrets/ns/a";
        let mut w = s.watch("/registry/secrets/", 0).await.unwrap();

        let r1 = s.create(key, Bytes::from_static(b"one")).await.unwrap();
        let stored = raw.get(key).await.unwrap().unwrap().value;
        assert!(stored.starts_with(b"k8s:enc:aesgcm:v1:k1:"));
        assert!(!stored.windows(3).any(|w| w == b"one"));

        let kv = s.get(key).await.unwrap().unwrap();
        assert_eq!((kv.value.as_ref(), kv.stale), (&b"one"[..], false));
        let r2 = s.update(key, r1, Bytes::from_static(b"two")).await.unwrap();
        let page = s.list("/registry/secrets/", None, 0).await.unwrap();
        assert_eq!(page.items[0].value.as_ref(), b"two");
        let past = s.list_at("/registry/secrets/", None, 0, r1).await.unwrap();
        assert_eq!(past.items[0].value.as_ref(), b"one");
        let (deleted, _) = s.delete(key, Some(r2)).await.unwrap();
        assert_eq!(deleted.value.as_ref(), b"two");

        let created = w.recv().await.unwrap().unwrap();
        assert_eq!(created.value.as_deref(), Some(&b"one"[..]));
        let updated = w.recv().await.unwrap().unwrap();
        assert_eq!(updated.value.as_deref(), Some(&b"two"[..]));
        assert_eq!(updated.prev.as_deref(), Some(&b"one"[..]));
        let gone = w.recv().await.unwrap().unwrap();
        assert_eq!(
            (gone.value.as_deref(), gone.prev.as_deref()),
            (None, Some(&b"two"[..]))
        );
    }

    #[tokio::test]
    async fn old_keys_read_as_stale_and_unknown_keys_are_clear_errors() {
        let dir = tempfile::tempdir().unwrap();
        let raw: Arc<dyn Storage> =
            Arc::new(EmbeddedStorage::open(&dir.path().join("store.redb")).unwrap());
        let key = "/registry/secrets/ns/a";
        let before = TransformedStorage::new(raw.clone(), chain(1, "k1", false));
        before.create(key, Bytes::from_static(b"v")).await.unwrap();
        raw.create("/registry/secrets/ns/plain", Bytes::from_static(b"p"))
            .await
            .unwrap();

        // Rotated: k2 first, k1 still read, and what k1 wrote is stale.
        let mut rotated = Transformers::new();
        rotated.key("aesgcm", "k2", Box::new(AesGcm::new(&[2; 32]).unwrap()));
        rotated.key("aesgcm", "k1", Box::new(AesGcm::new(&[1; 32]).unwrap()));
        rotated.identity();
        let after = TransformedStorage::new(raw.clone(), Arc::new(rotated));
        let kv = after.get(key).await.unwrap().unwrap();
        assert_eq!((kv.value.as_ref(), kv.stale), (&b"v"[..], true));
        let plain = after
            .get("/registry/secrets/ns/plain")
            .await
            .unwrap()
            .unwrap();
        assert_eq!((plain.value.as_ref(), plain.stale), (&b"p"[..], true));

        // k1 dropped: a clear error naming the key, for the object and for a list.
        let dropped = TransformedStorage::new(raw.clone(), chain(2, "k2", false));
        let err = dropped.get(key).await.unwrap_err();
        assert_eq!(
            err,
            StorageError::Internal(format!(
                "reading {key}: the value is encrypted with aesgcm (v1) key \"k1\", which --encryption-provider-config does not list for this resource"
            ))
        );
        assert!(dropped.list("/registry/secrets/", None, 0).await.is_err());
        // It can still be deleted.
        let (_, _) = dropped.delete(key, None).await.unwrap();
    }

    #[tokio::test]
    async fn a_value_moved_to_another_key_does_not_open() {
        let dir = tempfile::tempdir().unwrap();
        let raw: Arc<dyn Storage> =
            Arc::new(EmbeddedStorage::open(&dir.path().join("store.redb")).unwrap());
        let s = TransformedStorage::new(raw.clone(), chain(1, "k1", false));
        s.create("/registry/secrets/ns/a", Bytes::from_static(b"v"))
            .await
            .unwrap();
        let sealed = raw
            .get("/registry/secrets/ns/a")
            .await
            .unwrap()
            .unwrap()
            .value;
        raw.create("/registry/secrets/ns/b", sealed).await.unwrap();
        let err = s.get("/registry/secrets/ns/b").await.unwrap_err();
        assert!(
            err.to_string().contains("message authentication failed"),
            "{err}"
        );
    }
}
