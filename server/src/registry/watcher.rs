//! One API watch as the store delivers it: the starting objects (when asked for), then
//! changes as `ADDED`/`MODIFIED`/`DELETED` events with selectors applied, served from the
//! resource's watch cache, or from a storage watch when the cache cannot serve the start
//! point. No task per watcher: the HTTP response polls [`Watcher::next`] directly.

use std::collections::VecDeque;
use std::sync::Arc;

use bytes::Bytes;
use serde_json::{json, Value};
use tokio::sync::broadcast;

use super::cacher::{CacheWatch, Cacher};
use super::codec::{decode, served_one};
use crate::api::selectors::{selects, FieldSelector, LabelSelector};
use crate::api::ApiError;
use crate::catalog::ApiResource;
use crate::storage::{KeyValue, StoredEvent};

/// A watch event as clients see it: `ADDED`, `MODIFIED` or `DELETED` and the object.
#[derive(Debug, Clone)]
pub struct ObjectEvent {
    pub type_: &'static str,
    pub object: Value,
}

/// A change as stored, for [`Watcher::next_stored`].
#[derive(Debug, Clone)]
pub enum StoredChange {
    /// An object of the starting state.
    Existing(KeyValue),
    /// A committed change.
    Event(Arc<StoredEvent>),
}

/// What a watch delivers: an event decoded for this watcher (selectors applied), or the
/// stored event itself, whose encoding is shared by every watcher without selectors.
#[derive(Debug, Clone)]
pub enum WatchEvent {
    Decoded(ObjectEvent),
    Shared(Arc<StoredEvent>),
}

impl WatchEvent {
    /// The event decoded as `ADDED`, `MODIFIED` or `DELETED` and its object.
    pub fn object_event(&self, res: &ApiResource) -> Result<ObjectEvent, ApiError> {
        match self {
            WatchEvent::Decoded(e) => Ok(e.clone()),
            WatchEvent::Shared(e) => {
                to_object_event(res, e, &LabelSelector::default(), &FieldSelector::default())
                    .unwrap_or_else(|| Err(ApiError::internal("a stored event without a value")))
            }
        }
    }

    /// The `{"type":..,"object":..}` JSON line, encoded once for a shared event.
    pub fn json_line(&self, res: &ApiResource) -> Result<Bytes, ApiError> {
        let encode = |e: &ObjectEvent| {
            let mut v = serde_json::to_vec(&json!({ "type": e.type_, "object": e.object }))
                .unwrap_or_default();
            v.push(b'\n');
            Bytes::from(v)
        };
        match self {
            WatchEvent::Decoded(e) => Ok(encode(e)),
            // Other versions of a CRD share the event: encode it for this one.
            WatchEvent::Shared(_) if res.converts() => Ok(encode(&self.object_event(res)?)),
            WatchEvent::Shared(stored) => {
                if let Some(line) = stored.encoded.get() {
                    return Ok(line.clone());
                }
                let line = encode(&self.object_event(res)?);
                Ok(stored.encoded.get_or_init(|| line).clone())
            }
        }
    }
}

/// A stored change as this watcher sees it, or `None` when it does not concern it.
/// Selector transitions follow kube-apiserver: an object that stops matching arrives as
/// DELETED, one that starts matching as ADDED.
pub(super) fn to_object_event(
    res: &ApiResource,
    e: &StoredEvent,
    labels: &LabelSelector,
    fields: &FieldSelector,
) -> Option<Result<ObjectEvent, ApiError>> {
    let parse = |bytes: &Bytes| -> Result<Value, ApiError> {
        let kv = KeyValue {
            key: e.key.clone(),
            value: bytes.clone(),
            create_revision: 0,
            mod_revision: e.revision,
            stale: false,
        };
        decode(res, &kv)
    };
    let matches = |obj: &Value| selects(labels, fields, obj);
    let new = match e.value.as_ref().map(parse).transpose() {
        Ok(v) => v,
        Err(err) => return Some(Err(err)),
    };
    let old = match e.prev.as_ref().map(parse).transpose() {
        Ok(v) => v,
        Err(err) => return Some(Err(err)),
    };
    let (type_, object) = match (old, new) {
        (None, Some(new)) if matches(&new) => ("ADDED", new),
        (Some(old), Some(new)) => match (matches(&old), matches(&new)) {
            (true, true) => ("MODIFIED", new),
            (false, true) => ("ADDED", new),
            (true, false) => ("DELETED", new),
            (false, false) => return None,
        },
        (Some(old), None) if matches(&old) => ("DELETED", old),
        _ => return None,
    };
    Some(Ok(ObjectEvent { type_, object }))
}

/// Where a watch's changes come from.
enum Source {
    /// The watch cache: changes it already held, then its live stream.
    Cache {
        cacher: Arc<Cacher>,
        backlog: VecDeque<Arc<StoredEvent>>,
        live: broadcast::Receiver<Arc<StoredEvent>>,
        place: Arc<super::feed::FeedPlace>,
    },
    /// A storage watch of its own (start points older than the cache's window).
    Storage(crate::storage::EventReceiver),
    /// A watch that could not start: it delivers this error, then ends.
    Failed(Option<ApiError>),
}

/// One API watch; see the module docs.
pub struct Watcher {
    res: Arc<ApiResource>,
    /// Keys under this prefix concern the watch (the namespace, or the whole resource).
    prefix: String,
    labels: LabelSelector,
    fields: FieldSelector,
    /// Starting objects not yet delivered (unfiltered; filtered as they are sent).
    initial: std::vec::IntoIter<KeyValue>,
    source: Source,
    /// The revision of the last change delivered (or the start point).
    last: u64,
}

impl Watcher {
    /// A watch served by the watch cache.
    pub(super) fn from_cache(
        res: Arc<ApiResource>,
        prefix: String,
        labels: LabelSelector,
        fields: FieldSelector,
        cacher: Arc<Cacher>,
        w: CacheWatch,
    ) -> Watcher {
        let source = Source::Cache {
            cacher,
            backlog: w.backlog,
            live: w.live,
            place: w.place,
        };
        Watcher::new(res, prefix, (labels, fields), w.initial, source, w.revision)
    }

    /// A watch served by its own storage watch, from after `revision`, after `initial`.
    pub(super) fn from_storage(
        res: Arc<ApiResource>,
        prefix: String,
        labels: LabelSelector,
        fields: FieldSelector,
        initial: Vec<KeyValue>,
        revision: u64,
        events: crate::storage::EventReceiver,
    ) -> Watcher {
        let source = Source::Storage(events);
        Watcher::new(res, prefix, (labels, fields), initial, source, revision)
    }

    /// A watch that delivers `error` (as an ERROR event) and ends, as kube-apiserver
    /// answers a start point that is too old.
    pub fn failed(res: Arc<ApiResource>, error: ApiError) -> Watcher {
        let source = Source::Failed(Some(error));
        Watcher::new(
            res,
            String::new(),
            Default::default(),
            Vec::new(),
            source,
            0,
        )
    }

    fn new(
        res: Arc<ApiResource>,
        prefix: String,
        (labels, fields): (LabelSelector, FieldSelector),
        initial: Vec<KeyValue>,
        source: Source,
        last: u64,
    ) -> Watcher {
        Watcher {
            res,
            prefix,
            labels,
            fields,
            initial: initial.into_iter(),
            source,
            last,
        }
    }

    /// Sets what happens when the watch cache terminates this watch for falling a whole
    /// buffer behind (a client that stopped reading); see `feed.rs`. Watches not served
    /// by the cache are never terminated so.
    pub fn on_terminated(&self, f: impl Fn() + Send + Sync + 'static) {
        if let Source::Cache { place, .. } = &self.source {
            place.on_terminated(f);
        }
    }

    /// The revision the watch starts after (its starting objects are as of it).
    pub fn start_revision(&self) -> u64 {
        self.last
    }

    /// Whether starting objects remain to be delivered.
    pub fn initial_pending(&self) -> bool {
        self.initial.len() > 0
    }

    fn filtering(&self) -> bool {
        !self.labels.is_empty() || !self.fields.is_empty()
    }

    /// The next event; `None` when the watch ended (the cache re-loaded, or this watcher
    /// fell too far behind: clients re-watch from their last resourceVersion).
    pub async fn next(&mut self) -> Option<Result<WatchEvent, ApiError>> {
        if let Some(initial) = self.next_initial().await {
            return Some(initial);
        }
        loop {
            let event = match self.recv().await? {
                Ok(event) => event,
                Err(e) => return Some(Err(e)),
            };
            // A webhook converts each event for this watcher alone.
            let webhook = self.res.conversion_webhook().is_some();
            if !self.filtering() && !webhook {
                return Some(Ok(WatchEvent::Shared(event)));
            }
            match to_object_event(&self.res, &event, &self.labels, &self.fields) {
                Some(Ok(mut e)) if webhook => {
                    return Some(match served_one(&self.res, e.object).await {
                        Ok(object) => {
                            e.object = object;
                            Ok(WatchEvent::Decoded(e))
                        }
                        Err(err) => Err(err),
                    });
                }
                Some(e) => return Some(e.map(WatchEvent::Decoded)),
                None => {}
            }
        }
    }

    /// The next starting object the selectors match, as an ADDED event; `None` once no
    /// starting object is left (what the `k8s.io/initial-events-end` bookmark waits for:
    /// starting objects the selectors drop must not hold it back).
    pub async fn next_initial(&mut self) -> Option<Result<WatchEvent, ApiError>> {
        for kv in self.initial.by_ref() {
            let obj = match decode(&self.res, &kv) {
                Ok(obj) => obj,
                Err(e) => return Some(Err(e)),
            };
            let obj = match served_one(&self.res, obj).await {
                Ok(obj) => obj,
                Err(e) => return Some(Err(e)),
            };
            if selects(&self.labels, &self.fields, &obj) {
                let added = ObjectEvent {
                    type_: "ADDED",
                    object: obj,
                };
                return Some(Ok(WatchEvent::Decoded(added)));
            }
        }
        None
    }

    /// The next change as stored (the storage version's bytes), for controllers that read
    /// only metadata: nothing decoded or converted, selectors not applied.
    pub async fn next_stored(&mut self) -> Option<Result<StoredChange, ApiError>> {
        if let Some(kv) = self.initial.next() {
            return Some(Ok(StoredChange::Existing(kv)));
        }
        Some(self.recv().await?.map(StoredChange::Event))
    }

    /// The next change under the watch's prefix after the last one delivered.
    async fn recv(&mut self) -> Option<Result<Arc<StoredEvent>, ApiError>> {
        loop {
            let event = match &mut self.source {
                Source::Cache {
                    backlog,
                    live,
                    place,
                    ..
                } => match backlog.pop_front() {
                    Some(e) => e,
                    None => match live.recv().await {
                        Ok(e) => {
                            place.received_one();
                            e
                        }
                        Err(broadcast::error::RecvError::Lagged(_)) => {
                            tracing::debug!(
                                resource = self.res.def.plural,
                                "closing a watch that fell behind"
                            );
                            return None;
                        }
                        Err(broadcast::error::RecvError::Closed) => return None,
                    },
                },
                Source::Storage(events) => match events.recv().await? {
                    Ok(e) => e,
                    Err(e) => return Some(Err(super::storage_errors::map_err(&self.res, "", e))),
                },
                Source::Failed(error) => return error.take().map(Err),
            };
            if event.revision <= self.last || !event.key.starts_with(&self.prefix) {
                continue;
            }
            self.last = event.revision;
            return Some(Ok(event));
        }
    }

    /// The revision a bookmark may carry now: every change up to it has been delivered.
    /// Served from the cache, that is the cache's revision once this watcher has read
    /// everything the cache sent.
    pub fn bookmark_revision(&self) -> u64 {
        match &self.source {
            Source::Cache {
                cacher,
                backlog,
                live,
                ..
            } => {
                // Read the cache's revision before checking the queue: a change at or
                // below it was queued before the revision was published.
                let held = cacher.revision().unwrap_or(0);
                if backlog.is_empty() && live.is_empty() {
                    self.last.max(held)
                } else {
                    self.last
                }
            }
            Source::Storage(_) | Source::Failed(_) => self.last,
        }
    }
}
