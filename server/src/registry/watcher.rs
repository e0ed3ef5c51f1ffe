//! One API watch as the store delivers it: the starting objects (when asked for), then
//! changes as `ADDED`/`MODIFIED`/`DELETED` events with selectors applied, served from the
//! resource's watch cache, or from a storage watch when the cache cannot serve the start
//! point. No task per watcher: the HTTP response polls [`Watcher::next`] directly.

use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;

use bytes::Bytes;
use serde_json::{json, Value};
use tokio::sync::broadcast;

use super::cacher::{CacheWatch, Cacher};
use super::codec::{decode, served_one};
use crate::api::selectors::{selects, FieldSelector, LabelSelector};
use crate::api::ApiError;
use crate::catalog::ApiResource;
use crate::storage::{EventLabels, KeyValue, StoredEvent};

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
                    return Ok(line);
                }
                let line = encode(&self.object_event(res)?);
                Ok(stored.encoded.get_or_init(|| line))
            }
        }
    }
}

/// Which object of a change an event carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Side {
    New,
    Old,
}

/// The event a change is for a watcher, from whether its selectors match the object
/// before and after the change (`None`: there was no such object). Selector transitions
/// follow kube-apiserver: an object that stops matching arrives as DELETED (with its new
/// state), one that starts matching as ADDED; `None` when the change does not concern it.
fn transition(old: Option<bool>, new: Option<bool>) -> Option<(&'static str, Side)> {
    match (old, new) {
        (None, Some(true)) => Some(("ADDED", Side::New)),
        (Some(old), Some(new)) => match (old, new) {
            (true, true) => Some(("MODIFIED", Side::New)),
            (false, true) => Some(("ADDED", Side::New)),
            (true, false) => Some(("DELETED", Side::New)),
            (false, false) => None,
        },
        (Some(true), None) => Some(("DELETED", Side::Old)),
        _ => None,
    }
}

/// The labels of `e`'s objects, read once for every watcher (see [`StoredEvent::labels`]);
/// `None` when a value does not parse as an object with string labels.
fn event_labels(e: &StoredEvent) -> Option<&EventLabels> {
    /// Only `metadata.labels` of a stored object: the rest is skipped, never built.
    #[derive(serde::Deserialize)]
    struct Labeled {
        #[serde(default)]
        metadata: Meta,
    }
    #[derive(serde::Deserialize, Default)]
    struct Meta {
        #[serde(default)]
        labels: Option<BTreeMap<String, String>>,
    }
    let read = |b: &Bytes| -> Option<BTreeMap<String, String>> {
        let o: Labeled = serde_json::from_slice(b).ok()?;
        Some(o.metadata.labels.unwrap_or_default())
    };
    e.labels
        .get_or_init(|| {
            Some(EventLabels {
                value: match &e.value {
                    Some(b) => Some(read(b)?),
                    None => None,
                },
                prev: match &e.prev {
                    Some(b) => Some(read(b)?),
                    None => None,
                },
            })
        })
        .as_ref()
}

/// What a watcher with these selectors gets for `event`, or `None` when the change does
/// not concern it. A label selector is evaluated on the event's labels, read once for
/// every watcher; a watcher that gets the change as a watcher without selectors would
/// (most do: an object that matched before and after is MODIFIED) shares the event
/// itself, whose watch line is encoded once too. Only field selectors and selector
/// transitions (an object entering or leaving the selection) decode for one watcher.
pub fn event_for(
    res: &ApiResource,
    event: &Arc<StoredEvent>,
    labels: &LabelSelector,
    fields: &FieldSelector,
) -> Option<Result<WatchEvent, ApiError>> {
    let shared = || Some(Ok(WatchEvent::Shared(event.clone())));
    if labels.is_empty() && fields.is_empty() {
        return shared();
    }
    let alone = || to_object_event(res, event, labels, fields).map(|e| e.map(WatchEvent::Decoded));
    if !fields.is_empty() {
        return alone();
    }
    let Some(read) = event_labels(event) else {
        return alone();
    };
    let matched = transition(
        read.prev.as_ref().map(|l| labels.matches(l)),
        read.value.as_ref().map(|l| labels.matches(l)),
    )?;
    let natural = transition(
        read.prev.as_ref().map(|_| true),
        read.value.as_ref().map(|_| true),
    );
    if natural == Some(matched) {
        return shared();
    }
    alone()
}

/// A stored value of `e` as a key-value, for [`decode`] (which sets its resourceVersion
/// to the event's revision).
fn stored_kv(e: &StoredEvent, bytes: &Bytes) -> KeyValue {
    KeyValue {
        key: e.key.clone(),
        value: bytes.clone(),
        create_revision: 0,
        mod_revision: e.revision,
        stale: false,
    }
}

/// A stored change as this watcher sees it, decoded for it alone, or `None` when it does
/// not concern it (see [`transition`]).
pub fn to_object_event(
    res: &ApiResource,
    e: &StoredEvent,
    labels: &LabelSelector,
    fields: &FieldSelector,
) -> Option<Result<ObjectEvent, ApiError>> {
    let parse = |bytes: &Bytes| decode(res, &stored_kv(e, bytes));
    let new = match e.value.as_ref().map(parse).transpose() {
        Ok(v) => v,
        Err(err) => return Some(Err(err)),
    };
    let old = match e.prev.as_ref().map(parse).transpose() {
        Ok(v) => v,
        Err(err) => return Some(Err(err)),
    };
    let matches = |obj: &Value| selects(labels, fields, obj);
    let (type_, side) = transition(old.as_ref().map(matches), new.as_ref().map(matches))?;
    let object = match side {
        Side::New => new?,
        Side::Old => old?,
    };
    Some(Ok(ObjectEvent { type_, object }))
}

/// Where a watch's changes come from.
enum Source {
    /// The watch cache: changes it already held, then its live stream.
    Cache {
        cacher: Arc<Cacher>,
        backlog: VecDeque<Arc<StoredEvent>>,
        live: super::feed::Live,
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
            if self.res.conversion_webhook().is_none() {
                match event_for(&self.res, &event, &self.labels, &self.fields) {
                    Some(e) => return Some(e),
                    None => continue,
                }
            }
            match to_object_event(&self.res, &event, &self.labels, &self.fields) {
                Some(Ok(mut e)) => {
                    return Some(match served_one(&self.res, e.object).await {
                        Ok(object) => {
                            e.object = object;
                            Ok(WatchEvent::Decoded(e))
                        }
                        Err(err) => Err(err),
                    });
                }
                Some(Err(e)) => return Some(Err(e)),
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn configmaps() -> Arc<ApiResource> {
        crate::catalog::Catalog::from_definitions(crate::generated::CATALOG)
            .expect("the catalog loads")
            .get("", "v1", "configmaps")
            .expect("configmaps are served")
    }

    fn stored(name: &str, shard: &str) -> Bytes {
        let cm = json!({"kind": "ConfigMap", "apiVersion": "v1",
            "metadata": {"name": name, "namespace": "default", "labels": {"shard": shard}},
            "data": {"k": "v"}});
        Bytes::from(serde_json::to_vec(&cm).unwrap())
    }

    fn event(prev: Option<Bytes>, value: Option<Bytes>) -> Arc<StoredEvent> {
        Arc::new(StoredEvent {
            revision: 7,
            key: "/registry/configmaps/default/cm".into(),
            value,
            prev,
            prev_create_revision: 0,
            prev_mod_revision: 0,
            encoded: Default::default(),
            labels: Default::default(),
        })
    }

    fn labels(s: &str) -> LabelSelector {
        LabelSelector::parse(s).unwrap()
    }

    /// What a watcher gets, as type, name, shard and resourceVersion.
    fn seen(res: &ApiResource, e: Option<Result<WatchEvent, ApiError>>) -> Option<String> {
        let e = e?.unwrap().object_event(res).unwrap();
        let m = &e.object["metadata"];
        Some(format!(
            "{} {} {} {}",
            e.type_, m["name"], m["labels"]["shard"], m["resourceVersion"]
        ))
    }

    #[test]
    fn selector_watchers_share_one_reading_of_labels_and_get_what_each_alone_would() {
        let res = configmaps();
        let fields = FieldSelector::default();
        let cases = [
            (None, Some(stored("cm", "1"))),
            (Some(stored("cm", "1")), Some(stored("cm", "1"))),
            (Some(stored("cm", "1")), Some(stored("cm", "2"))),
            (Some(stored("cm", "2")), Some(stored("cm", "1"))),
            (Some(stored("cm", "1")), None),
        ];
        for (prev, value) in cases {
            let e = event(prev, value);
            for sel in ["", "shard=1", "shard=2", "shard in (1,2)", "shard=3"] {
                let shared = seen(&res, event_for(&res, &e, &labels(sel), &fields));
                let alone = to_object_event(&res, &e, &labels(sel), &fields)
                    .map(|r| r.map(WatchEvent::Decoded));
                assert_eq!(shared, seen(&res, alone), "selector {sel:?}");
            }
            assert!(e.labels.get().is_some(), "read once, kept for the others");
        }
    }

    #[test]
    fn a_watcher_that_gets_the_change_as_is_shares_the_event_and_its_line() {
        let res = configmaps();
        let fields = FieldSelector::default();
        let e = event(Some(stored("cm", "1")), Some(stored("cm", "1")));
        let Some(Ok(WatchEvent::Shared(got))) = event_for(&res, &e, &labels("shard=1"), &fields)
        else {
            panic!("a MODIFIED that matched before and after is the shared event");
        };
        assert!(Arc::ptr_eq(&got, &e));
        // A selector transition is this watcher's own event.
        let e = event(Some(stored("cm", "1")), Some(stored("cm", "2")));
        let got = event_for(&res, &e, &labels("shard=1"), &fields);
        assert!(matches!(
            got,
            Some(Ok(WatchEvent::Decoded(ObjectEvent {
                type_: "DELETED",
                ..
            })))
        ));
    }

    #[test]
    fn an_event_that_does_not_decode_is_an_error_for_each_watcher() {
        let res = configmaps();
        let e = event(None, Some(Bytes::from_static(b"{not json")));
        let got = event_for(&res, &e, &labels("shard=1"), &FieldSelector::default());
        assert!(matches!(got, Some(Err(_))), "{got:?}");
        assert_eq!(e.labels.get(), Some(&None));
    }
}
