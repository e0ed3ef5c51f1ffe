//! The generic store: create, get, list, update, patch and delete for every resource,
//! over [`Storage`]. Objects are kept as JSON bytes; `resourceVersion` is the storage
//! modification revision, filled in on the way out.

use std::sync::Arc;

use base64::Engine;
use bytes::Bytes;
use serde_json::{json, Value};

use super::{managed_fields, schema};
use crate::admission::{Operation, RequestAdmission, Target as AdmissionTarget};
use crate::api::meta::{
    kept_on_update, meta_str, metadata_mut, now_rfc3339, server_set_fields, validate_name,
    validate_object_meta,
};
use crate::api::options::DeleteOptions;
use crate::api::options::{ListOptions, ReadAt};
use crate::api::selectors::{selects, FieldSelector, LabelSelector};
use crate::api::{ApiError, StatusCause};
use crate::catalog::ApiResource;
use crate::storage::{KeyValue, ListPage, Metered, ResourceStorages, Storage, StorageError};

use super::cacher::Cacher;
use super::codec::{
    decode, in_older_version, json_bytes, served, served_one, stored_bytes, with_rv,
};
use super::propagation::finalizers_after_delete;
use super::service_claims::{AddressClaims, ServiceKinds};
use super::services::{IpRange, PortRange, ServiceAllocator};
use super::storage_errors::map_err;
use super::watcher::Watcher;

/// How many times a read-modify-write (patch) retries after losing a race.
const MAX_PATCH_RETRIES: usize = 5;

/// Where a watch starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WatchStart {
    /// With the objects of a state (sent as `ADDED`), then the changes after it.
    State(ReadAt),
    /// With the changes after this revision.
    After(u64),
}

/// One page of a list.
pub struct ObjectList<T = Value> {
    pub items: Vec<T>,
    pub resource_version: String,
    pub continue_token: Option<String>,
    pub remaining: u64,
}

/// Who writes, and whether for real.
#[derive(Clone)]
pub struct WriteContext {
    /// `dryRun=All`: run everything, persist nothing.
    pub dry_run: bool,
    /// The field manager recorded in managedFields.
    pub manager: String,
    /// The object's managedFields were computed by server-side apply: keep them as given
    /// instead of recording an Update.
    pub apply: bool,
    /// The requester's admission (`None` for the server's own writes).
    pub admission: Option<Arc<RequestAdmission>>,
}

impl std::fmt::Debug for WriteContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WriteContext")
            .field("dry_run", &self.dry_run)
            .field("manager", &self.manager)
            .field("apply", &self.apply)
            .field("admission", &self.admission.is_some())
            .finish()
    }
}

impl WriteContext {
    /// A real write by `manager`.
    pub fn new(manager: &str) -> Self {
        WriteContext {
            dry_run: false,
            manager: manager.to_string(),
            apply: false,
            admission: None,
        }
    }
}

/// What a delete did: removed the object, or marked it for deletion (finalizers pending).
pub struct Deletion {
    pub object: Value,
    pub deleted: bool,
}

/// After mutating admission: the object is still in the request's namespace (a webhook
/// may not move it), which is filled in again when a patch dropped it.
fn check_namespace_kept(obj: &mut Value, ns: Option<&str>) -> Result<(), ApiError> {
    let meta = metadata_mut(obj);
    match (ns, meta.get("namespace").and_then(Value::as_str)) {
        (Some(ns), Some(got)) if !got.is_empty() && got != ns => Err(ApiError::bad_request(
            "the namespace of the provided object does not match the namespace sent on the request",
        )),
        (Some(ns), _) => {
            meta.insert("namespace".into(), json!(ns));
            Ok(())
        }
        (None, _) => {
            meta.remove("namespace");
            Ok(())
        }
    }
}

fn finalizers(obj: &Value) -> Vec<String> {
    obj["metadata"]["finalizers"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|f| f.as_str().map(str::to_string))
        .collect()
}

fn has_finalizers(obj: &Value) -> bool {
    obj["metadata"]["finalizers"]
        .as_array()
        .is_some_and(|f| !f.is_empty())
}

/// What a DELETE's grace period does to an object (kube-apiserver's `BeforeDelete`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Grace {
    /// The kind is not deleted gracefully, or the grace period is over: on to the
    /// finalizers, then removal.
    NotGraceful,
    /// A graceful deletion is under way and this one does not shorten it.
    Pending,
    /// `deletionTimestamp` and `deletionGracePeriodSeconds` set (or shortened) to this
    /// many seconds; 0 removes the object now (finalizers permitting).
    Started(i64),
}

/// Sets a graceful kind's deletion deadline, as kube-apiserver does: the requested grace
/// period (negative counts as 1 s) or the kind's default; a deletion under way may only
/// be shortened, never into the past unless to 0.
fn graceful_deletion(
    strategy: &dyn super::strategy::Strategy,
    obj: &mut Value,
    requested: Option<i64>,
) -> Grace {
    let requested = requested.map(|p| if p < 0 { 1 } else { p });
    let now = chrono::Utc::now();
    let stamp = |t: chrono::DateTime<chrono::Utc>| t.format("%Y-%m-%dT%H:%M:%SZ").to_string();
    // `t` moved by `seconds` (client-given, so possibly huge): the last second of year
    // 9999 at most, the latest a timestamp can say in RFC 3339.
    let shift = |t: chrono::DateTime<chrono::Utc>, seconds: i64| {
        let latest = chrono::DateTime::parse_from_rfc3339("9999-12-31T23:59:59Z")
            .map(|l| l.with_timezone(&chrono::Utc))
            .unwrap_or(t);
        chrono::Duration::try_seconds(seconds)
            .and_then(|d| t.checked_add_signed(d))
            .map_or(latest, |moved| moved.min(latest))
    };
    if let Some(since) = meta_str(obj, "deletionTimestamp") {
        if !strategy.deletes_gracefully() {
            return Grace::NotGraceful;
        }
        let current = obj["metadata"]["deletionGracePeriodSeconds"]
            .as_i64()
            .unwrap_or(0);
        if current == 0 {
            return Grace::NotGraceful;
        }
        let Some(mut period) = requested.filter(|p| *p < current) else {
            return Grace::Pending;
        };
        let deadline = chrono::DateTime::parse_from_rfc3339(since)
            .map(|t| t.with_timezone(&chrono::Utc))
            .unwrap_or(now);
        let mut at = shift(shift(deadline, -current), period);
        if at < now {
            at = now;
            if period != 0 {
                // The grace period is already spent: the shortest that is still graceful.
                period = 1;
            }
        }
        let meta = metadata_mut(obj);
        meta.insert("deletionTimestamp".into(), json!(stamp(at)));
        meta.insert("deletionGracePeriodSeconds".into(), json!(period));
        return Grace::Started(period);
    }
    let Some(period) = strategy.grace_period(obj, requested) else {
        return Grace::NotGraceful;
    };
    let meta = metadata_mut(obj);
    meta.insert("deletionTimestamp".into(), json!(stamp(shift(now, period))));
    meta.insert("deletionGracePeriodSeconds".into(), json!(period));
    Grace::Started(period)
}

/// Where a write comes from: the main resource or a subresource.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    Main,
    Status,
    /// A part subresource (`pods/ephemeralcontainers`, `namespaces/finalize`): its hook
    /// says what the write changes.
    Part(super::parts::Part),
}

impl Target {
    /// The subresource managedFields entries name (`status`, `ephemeralcontainers`).
    fn subresource(self, res: &ApiResource) -> Option<&str> {
        match self {
            Target::Main => None,
            Target::Status => Some("status"),
            Target::Part(part) => res
                .parts
                .iter()
                .position(|p| *p == part)
                .and_then(|i| res.def.subresources.parts.get(i))
                .map(|p| p.name.as_str()),
        }
    }
}

/// The stored object an update starts from.
struct Base {
    /// Its revision: the write's precondition in storage.
    revision: u64,
    /// Whether it was read with an older key or storage version (rewritten even when
    /// unchanged).
    stale: bool,
    /// Read from storage (`false`: the watch cache's copy, possibly behind).
    confirmed: bool,
}

/// What one update attempt came to.
enum Attempt {
    /// Written (or, unchanged or a dry run, answered): the object to return.
    Done(Value),
    /// Unchanged against the watch cache's copy, which nothing compared with storage:
    /// read storage and try again.
    Unconfirmed,
}

/// Where a read is served from ([`Store::source`] chooses).
enum Source {
    /// The watch cache, which holds the state asked for (its current one).
    Cache(Arc<Cacher>),
    /// The state at a past revision: from the cache (if any) while that revision is in
    /// its window, else from storage's history.
    At(Option<Arc<Cacher>>, u64),
    /// Storage's current state.
    Storage,
}

impl Source {
    /// The same source, held at `revision` unless it already is at one.
    fn pin(self, revision: u64) -> Source {
        match self {
            Source::Cache(c) => Source::At(Some(c), revision),
            Source::Storage => Source::At(None, revision),
            at @ Source::At(..) => at,
        }
    }

    fn revision(&self) -> Option<u64> {
        match self {
            Source::At(_, rev) => Some(*rev),
            Source::Cache(_) | Source::Storage => None,
        }
    }
}

/// The generic registry store.
#[derive(Clone)]
pub struct Store {
    /// Each resource's storage (the backend, or the backend behind the resource's
    /// encryption at rest).
    pub(super) storages: ResourceStorages,
    /// One watch cache per resource (by key prefix), started on first use; `None` when
    /// `--watch-cache=false`.
    caches: Option<Arc<WatchCaches>>,
    /// Service cluster IPs and node ports (kinds whose strategy `allocates_addresses`).
    services: Arc<ServiceAllocator>,
    /// The kinds Service address claims are written with (none in unit tests without
    /// a catalog: then only this process's reservations keep addresses apart).
    service_kinds: Option<ServiceKinds>,
}

/// The watch caches, by resource key prefix.
type WatchCaches = std::sync::Mutex<std::collections::HashMap<String, Arc<Cacher>>>;

/// The object's "content" for change detection: everything but metadata and status.
fn spec_part(obj: &Value) -> Value {
    let mut o = obj.clone();
    if let Some(m) = o.as_object_mut() {
        m.remove("metadata");
        m.remove("status");
        m.remove("apiVersion");
        m.remove("kind");
    }
    o
}

impl Store {
    /// A store over `storages`, with watch caches when `watch_cache` is set.
    pub fn new(storages: ResourceStorages, watch_cache: bool) -> Self {
        Store {
            storages,
            caches: watch_cache.then(Default::default),
            services: Default::default(),
            service_kinds: None,
        }
    }

    /// The resource's watch cache (started on first use), unless caching is off.
    fn cacher(&self, res: &ApiResource) -> Option<Arc<Cacher>> {
        if !res.stored() {
            return None;
        }
        self.cacher_at(Self::prefix(res, None), self.raw_storage(res))
    }

    /// The watch cache of the keys under `prefix` (a resource's, on `storage`), started
    /// on first use.
    fn cacher_at(&self, prefix: String, storage: &Arc<dyn Storage>) -> Option<Arc<Cacher>> {
        let caches = self.caches.as_ref()?;
        let mut caches = caches.lock().unwrap_or_else(|e| e.into_inner());
        let cacher = caches
            .entry(prefix)
            .or_insert_with_key(|prefix| Cacher::start(storage.clone(), prefix.clone()));
        Some(cacher.clone())
    }

    /// The storage of `res`'s objects (its storage resource's: events.k8s.io Events are
    /// encrypted as core `events`, as upstream's cohabiting resources are).
    fn raw_storage(&self, res: &ApiResource) -> &Arc<dyn Storage> {
        let (group, resource) = res.storage_resource();
        self.storages.of(group, resource)
    }

    /// The storage of `res`'s objects, each call timed (`etcd_request_duration_seconds`).
    pub(super) fn storage<'a>(&'a self, res: &'a ApiResource) -> Metered<'a> {
        let (group, resource) = res.storage_resource();
        Metered {
            storage: self.raw_storage(res),
            group,
            resource,
        }
    }

    /// How many objects each stored resource has, as `(group, resource, count)`, from the
    /// watch caches that are loaded (none without watch caches).
    pub fn object_counts(&self, catalog: &crate::catalog::Catalog) -> Vec<(String, String, i64)> {
        let Some(caches) = &self.caches else {
            return Vec::new();
        };
        let mut seen = std::collections::HashSet::new();
        let mut counts = Vec::new();
        for res in catalog.all() {
            if !res.stored() || !seen.insert(Self::prefix(&res, None)) {
                continue;
            }
            let cacher = caches
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .get(&Self::prefix(&res, None))
                .cloned();
            if let Some(count) = cacher.and_then(|c| c.object_count()) {
                counts.push((res.def.group.clone(), res.def.plural.clone(), count as i64));
            }
        }
        counts
    }

    /// Waits until every watch cache started so far has loaded (kube-apiserver's
    /// `storage-readiness` post-start hook). At once without watch caches.
    pub async fn wait_caches_loaded(&self) {
        let Some(caches) = &self.caches else {
            return;
        };
        let cachers: Vec<Arc<Cacher>> = caches
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .values()
            .cloned()
            .collect();
        for cacher in cachers {
            cacher.wait_loaded().await;
        }
    }

    /// Records a write this server made, so `resourceVersion=0` reads of the resource
    /// wait until its cache has it.
    pub(super) fn wrote(&self, res: &ApiResource, revision: u64) {
        if let Some(cacher) = self.cacher(res) {
            cacher.note_write(revision);
        }
    }

    /// Starts the resource's watch cache now, so it is loaded before the first request.
    pub fn warm_up(&self, res: &ApiResource) {
        self.cacher(res);
    }

    /// Follows the catalog: a registered resource's watch cache starts at once, an
    /// unregistered one's is dropped (its storage watch ends with its last reader).
    pub fn follow(&self, catalog: &crate::catalog::Catalog) {
        use crate::catalog::CatalogChange;
        let store = self.clone();
        catalog.subscribe(Box::new(move |change| match change {
            CatalogChange::Registered(res) => store.warm_up(res),
            CatalogChange::Unregistered(res) => {
                if let Some(caches) = &store.caches {
                    let prefix = Self::prefix(res, None);
                    caches
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .remove(&prefix);
                }
            }
        }));
    }

    /// Where a read of `res` at `at` (or at the `pinned` revision of a continue token or
    /// `Exact` list) is served from: the one place the watch cache or storage is chosen.
    async fn source(
        &self,
        res: &ApiResource,
        at: ReadAt,
        pinned: Option<u64>,
    ) -> Result<Source, ApiError> {
        if let Some(rev) = pinned {
            return Ok(Source::At(self.cacher(res), rev));
        }
        Ok(match self.cache_for(res, at).await? {
            Some(cacher) => Source::Cache(cacher),
            None => Source::Storage,
        })
    }

    /// The watch cache, once it can serve a read at `at`; `None` sends the read to storage.
    async fn cache_for(
        &self,
        res: &ApiResource,
        at: ReadAt,
    ) -> Result<Option<Arc<Cacher>>, ApiError> {
        let Some(cacher) = self.cacher(res) else {
            return Ok(None);
        };
        let ready = match at {
            // Without progress notifications the cache cannot show it is current.
            ReadAt::Latest if !self.storages.base().reports_progress() => false,
            ReadAt::Latest => cacher
                .wait_for_current()
                .await
                .map_err(|e| map_err(res, "", e))?,
            // Any state, but not one older than this server's own acknowledged writes.
            ReadAt::Any => cacher.wait_for(cacher.written()).await,
            ReadAt::NotOlderThan(n) => cacher.wait_for(n).await,
            ReadAt::Exact(_) => false,
        };
        Ok(ready.then_some(cacher))
    }

    /// The storage key, laid out as kube-apiserver's: `/registry/[<group>/]<plural>/[<ns>/]<name>`.
    pub fn key(res: &ApiResource, namespace: Option<&str>, name: &str) -> String {
        format!("{}{name}", Self::prefix(res, namespace))
    }

    /// The storage key prefix of `res`'s objects (in `namespace`, when given).
    pub fn prefix(res: &ApiResource, namespace: Option<&str>) -> String {
        // Versions stored in another group (events.k8s.io Events) share its keys.
        let base = match res.storage_resource() {
            ("", plural) => format!("/registry/{plural}/"),
            (group, plural) => format!("/registry/{group}/{plural}/"),
        };
        match namespace {
            Some(ns) => format!("{base}{ns}/"),
            None => base,
        }
    }

    /// Reads one object as of `at`, from the watch cache when it can answer.
    pub async fn get_at(
        &self,
        res: &ApiResource,
        ns: Option<&str>,
        name: &str,
        at: ReadAt,
    ) -> Result<Value, ApiError> {
        let kv = self.get_stored_at(res, ns, name, at).await?;
        served_one(res, decode(res, &kv)?).await
    }

    /// Like [`Store::get_at`], but the object as JSON bytes spliced from the stored ones
    /// without decoding (serve GET from bytes).
    pub async fn get_json_at(
        &self,
        res: &ApiResource,
        ns: Option<&str>,
        name: &str,
        at: ReadAt,
    ) -> Result<Bytes, ApiError> {
        json_bytes(res, &self.get_stored_at(res, ns, name, at).await?)
    }

    /// The stored key of one object as of `at`: from the watch cache when it can answer.
    async fn get_stored_at(
        &self,
        res: &ApiResource,
        ns: Option<&str>,
        name: &str,
        at: ReadAt,
    ) -> Result<KeyValue, ApiError> {
        let key = Self::key(res, ns, name);
        let found = match self.source(res, at, None).await? {
            Source::Cache(cacher) => cacher.get(&key),
            Source::At(..) | Source::Storage => self
                .storage(res)
                .get(&key)
                .await
                .map_err(|e| map_err(res, name, e))?,
        };
        found.ok_or_else(|| ApiError::not_found(res, name))
    }

    /// Reads one object from storage.
    pub async fn get(
        &self,
        res: &ApiResource,
        ns: Option<&str>,
        name: &str,
    ) -> Result<Value, ApiError> {
        match self
            .storage(res)
            .get(&Self::key(res, ns, name))
            .await
            .map_err(|e| map_err(res, name, e))?
        {
            Some(kv) => served_one(res, decode(res, &kv)?).await,
            None => Err(ApiError::not_found(res, name)),
        }
    }

    /// Lists objects in a namespace (or all namespaces / cluster-scoped when `ns` is None)
    /// that match the selectors, at most `limit` (0 = all) per page.
    pub async fn list(
        &self,
        res: &ApiResource,
        ns: Option<&str>,
        opts: &ListOptions,
    ) -> Result<ObjectList, ApiError> {
        let mut page = self
            .list_with(res, ns, opts, |kv| {
                let obj = decode(res, kv)?;
                Ok(selects(&opts.labels, &opts.fields, &obj).then_some(obj))
            })
            .await?;
        page.items = served(res, page.items).await?;
        Ok(page)
    }

    /// Like [`Store::list`], but each item as it is stored (decoded only to apply
    /// selectors, when there are any).
    pub async fn list_stored(
        &self,
        res: &ApiResource,
        ns: Option<&str>,
        opts: &ListOptions,
    ) -> Result<ObjectList<KeyValue>, ApiError> {
        let filtering = !opts.labels.is_empty() || !opts.fields.is_empty();
        self.list_with(res, ns, opts, |kv| {
            if !filtering {
                return Ok(Some(kv.clone()));
            }
            let keep = selects(&opts.labels, &opts.fields, &decode(res, kv)?);
            Ok(keep.then(|| kv.clone()))
        })
        .await
    }

    /// Like [`Store::list`] without selectors, but each item as its JSON bytes, spliced
    /// from storage without decoding (serve lists from bytes).
    pub async fn list_json(
        &self,
        res: &ApiResource,
        ns: Option<&str>,
        opts: &ListOptions,
    ) -> Result<ObjectList<Bytes>, ApiError> {
        self.list_with(res, ns, opts, |kv| json_bytes(res, kv).map(Some))
            .await
    }

    /// Pages through storage, keeping what `convert` returns (`None` drops an item), until
    /// `limit` items are kept or the prefix ends.
    async fn list_with<T>(
        &self,
        res: &ApiResource,
        ns: Option<&str>,
        opts: &ListOptions,
        convert: impl Fn(&KeyValue) -> Result<Option<T>, ApiError>,
    ) -> Result<ObjectList<T>, ApiError> {
        let prefix = Self::prefix(res, ns);
        // A continue token pins the snapshot of the first page; Exact pins a given one.
        let (mut start, pinned) = match opts.continue_token.as_deref().filter(|t| !t.is_empty()) {
            Some(t) => {
                let (start, rev) = decode_continue(t, &prefix)?;
                // A token this server issued names a revision it has reached: a newer
                // one is forged (or another cluster's) and must not be served the
                // current state under its revision.
                let current = self.current_revision().await?;
                if rev > current {
                    return Err(ApiError::bad_request(format!(
                        "invalid continue token: continue key is not valid: its resource version {rev} is newer than the server's ({current})"
                    )));
                }
                (Some(start), Some(rev))
            }
            None => match opts.at {
                ReadAt::Exact(rev) => (None, Some(rev)),
                _ => (None, None),
            },
        };
        let mut source = self.source(res, opts.at, pinned).await?;
        let mut items = Vec::new();
        loop {
            let want = if opts.limit == 0 {
                0
            } else {
                opts.limit - items.len()
            };
            let page = self
                .read_page(res, &source, &prefix, start.as_deref(), want)
                .await;
            let page = page.map_err(|e| match e {
                StorageError::Expired { .. } if opts.continue_token.is_some() => {
                    ApiError::expired(CONTINUE_EXPIRED)
                }
                other => map_err(res, "", other),
            })?;
            // Later pages read the state the first one did.
            source = source.pin(page.revision);
            let page_rev = source.revision().unwrap_or(page.revision);
            for kv in &page.items {
                if let Some(item) = convert(kv)? {
                    items.push(item);
                }
                start = Some(kv.key.clone());
            }
            if page.remaining == 0 || page.items.is_empty() {
                return Ok(ObjectList {
                    items,
                    resource_version: page_rev.to_string(),
                    continue_token: None,
                    remaining: 0,
                });
            }
            if opts.limit > 0 && items.len() >= opts.limit {
                let last = start.as_deref().unwrap_or_default();
                let token = encode_continue(page_rev, &last[prefix.len()..]);
                // The count of what follows is only exact without selectors.
                let filtering = !opts.labels.is_empty() || !opts.fields.is_empty();
                let remaining = if filtering { 0 } else { page.remaining };
                return Ok(ObjectList {
                    items,
                    resource_version: page_rev.to_string(),
                    continue_token: Some(token),
                    remaining,
                });
            }
        }
    }

    /// One page of keys from `source`: a past revision from the watch cache while it is
    /// in its window, else from storage's history.
    async fn read_page(
        &self,
        res: &ApiResource,
        source: &Source,
        prefix: &str,
        start: Option<&str>,
        limit: usize,
    ) -> Result<ListPage, StorageError> {
        let storage = self.storage(res);
        match source {
            Source::Cache(c) => Ok(c.list(prefix, start, limit)),
            Source::At(Some(c), rev) => match c.list_at(prefix, start, limit, *rev) {
                Some(page) => Ok(page),
                None => storage.list_at(prefix, start, limit, *rev).await,
            },
            Source::At(None, rev) => storage.list_at(prefix, start, limit, *rev).await,
            Source::Storage => storage.list(prefix, start, limit).await,
        }
    }

    /// Watches objects under `ns` (all when None) from `start`, with selectors applied.
    /// Served by the watch cache when it can; otherwise by a storage watch of its own
    /// (a start point older than the cache's window, or caching off).
    pub async fn watch(
        &self,
        res: Arc<ApiResource>,
        ns: Option<&str>,
        start: WatchStart,
        labels: LabelSelector,
        fields: FieldSelector,
    ) -> Result<Watcher, ApiError> {
        let prefix = Self::prefix(&res, ns);
        // The starting objects from the cache when it is current enough.
        if let WatchStart::State(at) = start {
            if let Source::Cache(cacher) = self.source(&res, at, None).await? {
                if let Some(w) = cacher.watch(&prefix, None) {
                    return Ok(Watcher::from_cache(res, prefix, labels, fields, cacher, w));
                }
            }
        }
        // Otherwise they come from storage, and the changes after them (or after the
        // revision asked for) from a loaded cache: it may serve them even before it
        // reaches that revision (the watcher skips what it has seen), if the revision is
        // in its window.
        let (initial, after) = match start {
            WatchStart::After(rev) => (Vec::new(), rev),
            WatchStart::State(_) => {
                let page = self
                    .storage(&res)
                    .list(&prefix, None, 0)
                    .await
                    .map_err(|e| map_err(&res, "", e))?;
                (page.items, page.revision)
            }
        };
        if let Some(cacher) = self.cacher(&res) {
            if cacher.wait_for(0).await {
                if let Some(mut w) = cacher.watch(&prefix, Some(after)) {
                    w.initial = initial;
                    return Ok(Watcher::from_cache(res, prefix, labels, fields, cacher, w));
                }
            }
        }
        let events = self
            .storage(&res)
            .watch(&prefix, after)
            .await
            .map_err(|e| map_err(&res, "", e))?;
        Ok(Watcher::from_storage(
            res, prefix, labels, fields, initial, after, events,
        ))
    }

    /// The same store, allocating Service addresses from these ranges.
    pub fn with_service_ranges(mut self, allocator: ServiceAllocator) -> Self {
        self.services = Arc::new(allocator);
        self
    }

    /// The Service address ranges.
    pub fn service_ranges(&self) -> (IpRange, PortRange) {
        (self.services.cluster_ips, self.services.node_ports)
    }

    /// The same store, claiming Service addresses in storage with the catalog's
    /// `Service` and `IPAddress` kinds (see `registry::service_claims`).
    pub fn with_service_kinds(mut self, catalog: &crate::catalog::Catalog) -> Self {
        self.service_kinds = ServiceKinds::from_catalog(catalog);
        self
    }

    pub(super) fn service_allocator(&self) -> &ServiceAllocator {
        &self.services
    }

    pub(super) fn service_kinds(&self) -> Option<&ServiceKinds> {
        self.service_kinds.as_ref()
    }

    /// The store's current revision.
    pub async fn current_revision(&self) -> Result<u64, ApiError> {
        self.storages
            .base()
            .current_revision()
            .await
            .map_err(|e| ApiError::internal(e.to_string()))
    }

    /// Checks a read's resourceVersion against the store: a revision it has not reached
    /// is 504 (too large), and `Exact` on one object needs the current revision (else 410).
    pub async fn check_read_version(&self, at: ReadAt, is_list: bool) -> Result<(), ApiError> {
        let Some(n) = at.revision() else {
            return Ok(());
        };
        let current = self.current_revision().await?;
        if n > current {
            return Err(ApiError::too_large_resource_version(n, current));
        }
        if matches!(at, ReadAt::Exact(_)) && !is_list && n != current {
            return Err(ApiError::expired(format!(
                "too old resource version: {n} ({current})"
            )));
        }
        Ok(())
    }

    /// Creates an object from client input (already decoded and checked against the URL).
    pub async fn create(
        &self,
        res: &ApiResource,
        ns: Option<&str>,
        mut obj: Value,
        ctx: &WriteContext,
    ) -> Result<Value, ApiError> {
        let strategy = res.strategy;
        let applied_fields = if ctx.apply {
            obj["metadata"].get("managedFields").cloned()
        } else {
            None
        };
        {
            let meta = metadata_mut(&mut obj);
            for f in server_set_fields() {
                meta.remove(f);
            }
            if let Some(mf) = applied_fields {
                meta.insert("managedFields".into(), mf);
            }
            match ns {
                Some(ns) => {
                    meta.insert("namespace".into(), json!(ns));
                }
                None => {
                    meta.remove("namespace");
                }
            }
        }
        if let Some(admission) = &ctx.admission {
            let name = meta_str(&obj, "name").unwrap_or_default().to_string();
            let target = AdmissionTarget::new(res, ns, &name);
            admission
                .admit(Operation::Create, target, Some(&mut obj), None)
                .await?;
            check_namespace_kept(&mut obj, ns)?;
        }
        let generated = meta_str(&obj, "name").is_none_or(str::is_empty);
        let generate_name = meta_str(&obj, "generateName")
            .unwrap_or_default()
            .to_string();
        if generated && generate_name.is_empty() {
            return Err(ApiError::invalid(
                res,
                "",
                vec![StatusCause::required(
                    "metadata.name",
                    "name or generateName is required",
                )],
            ));
        }
        if res.def.subresources.status {
            // Status is written only through /status.
            if let Some(m) = obj.as_object_mut() {
                m.remove("status");
            }
        }
        {
            // The system fields come before the kind's preparation, which may read them
            // (a Job's selector names its uid), as upstream fills them in first; so does
            // a generated name (a Job's `job-name` label).
            let meta = metadata_mut(&mut obj);
            meta.insert("uid".into(), json!(uuid::Uuid::new_v4().to_string()));
            meta.insert("creationTimestamp".into(), json!(now_rfc3339()));
            if generated {
                let name = format!("{generate_name}{}", random_suffix());
                meta.insert("name".into(), json!(name));
            }
        }
        strategy.prepare_for_create(&mut obj);
        strategy.record_requester(&mut obj, ctx.admission.as_deref().map(|a| a.user()));
        schema::apply_defaults(&mut obj, res.schema());
        // A kind that claims addresses names the object in its claims, so its generated
        // name (chosen above) is not chosen again: a taken one is 409.
        let renames = generated && !strategy.allocates_addresses();
        // Held until this create is answered; committed once it is stored.
        let claims = self.allocate(res, &mut obj, None, ctx.dry_run).await?;
        let outcome = self
            .create_allocated(res, ns, obj, ctx, renames, &generate_name)
            .await;
        Self::settle(claims, outcome).await
    }

    /// The rest of [`Store::create`], once addresses are allocated: validation, admission
    /// and the storage write (again under a fresh generated name when `renames` and the
    /// name is taken).
    async fn create_allocated(
        &self,
        res: &ApiResource,
        ns: Option<&str>,
        mut obj: Value,
        ctx: &WriteContext,
        renames: bool,
        generate_name: &str,
    ) -> Result<Value, ApiError> {
        let strategy = res.strategy;
        if strategy.tracks_generation() {
            metadata_mut(&mut obj).insert("generation".into(), json!(1));
        }
        if !ctx.apply {
            managed_fields::record_update(&mut obj, None, res, &ctx.manager, None, &now_rfc3339());
        }
        // generateName: retry with a fresh suffix when the generated name is taken.
        for attempt in 0..8 {
            if renames && attempt > 0 {
                let name = format!("{generate_name}{}", random_suffix());
                metadata_mut(&mut obj).insert("name".into(), json!(name));
            }
            let name = meta_str(&obj, "name").unwrap_or_default().to_string();
            self.validate(res, &obj, None, &name)?;
            if let Some(admission) = &ctx.admission {
                for warning in strategy.warnings(&obj, None) {
                    admission.outcome().warn(warning);
                }
                let target = AdmissionTarget::new(res, ns, &name);
                admission
                    .validate(Operation::Create, target, Some(&obj), None)
                    .await?;
            }
            if ctx.dry_run {
                return Ok(obj);
            }
            match self
                .storage(res)
                .create(&Self::key(res, ns, &name), stored_bytes(res, &obj).await?)
                .await
            {
                Ok(rev) => {
                    self.wrote(res, rev);
                    return Ok(with_rv(obj, rev));
                }
                Err(StorageError::AlreadyExists(_)) if renames => continue,
                Err(e) => return Err(map_err(res, &name, e)),
            }
        }
        Err(ApiError::internal(format!(
            "could not find a free name for generateName {generate_name:?}"
        )))
    }

    /// Ends a write's address claims: kept (and what it dropped released) when the write
    /// was stored, removed when it failed.
    async fn settle(
        claims: Option<AddressClaims>,
        outcome: Result<Value, ApiError>,
    ) -> Result<Value, ApiError> {
        if let Some(claims) = claims {
            match &outcome {
                Ok(_) => claims.commit().await,
                Err(_) => claims.roll_back().await,
            }
        }
        outcome
    }

    /// Replaces an object (PUT), honouring a resourceVersion precondition in the body.
    ///
    /// The first attempt starts from the watch cache's copy of the object, as
    /// kube-apiserver's cacher hands its cached object to `GuaranteedUpdate`: storage's
    /// compare on the write decides whether that copy is still current, so an update costs
    /// one storage round trip instead of a read and a write. When the attempt fails with
    /// a client error (the compare failed, or a check refused the copy, which may be
    /// behind) or finds the object unchanged (not written, so never compared), the update
    /// starts again from a storage read, as upstream's does.
    pub async fn update(
        &self,
        res: &ApiResource,
        ns: Option<&str>,
        name: &str,
        obj: Value,
        target: Target,
        ctx: &WriteContext,
    ) -> Result<Value, ApiError> {
        let key = Self::key(res, ns, name);
        let precondition = meta_str(&obj, "resourceVersion")
            .filter(|s| !s.is_empty())
            .map(str::to_string);
        if precondition.is_none() && !res.strategy.allow_unconditional_update() {
            // Whether the object exists is told first, as before.
            self.storage(res)
                .get(&key)
                .await
                .map_err(|e| map_err(res, name, e))?
                .ok_or_else(|| ApiError::not_found(res, name))?;
            return Err(ApiError::invalid(
                res,
                name,
                vec![StatusCause::invalid(
                    "metadata.resourceVersion",
                    "0x0",
                    "must be specified for an update",
                )],
            ));
        }
        if let Some(kv) = self.cached_copy(res, &key, precondition.as_deref()) {
            match self
                .update_from(res, ns, name, kv, false, obj.clone(), target, ctx)
                .await
            {
                Ok(Attempt::Done(v)) => return Ok(v),
                // Storage or a webhook failing would fail again.
                Err(e) if e.code >= 500 => return Err(e),
                // The copy may have been behind (a conflict, or a check against an
                // older object): start again from storage, as upstream does.
                Ok(Attempt::Unconfirmed) | Err(_) => {}
            }
        }
        let kv = self
            .storage(res)
            .get(&key)
            .await
            .map_err(|e| map_err(res, name, e))?;
        let Some(kv) = kv else {
            return Err(ApiError::not_found(res, name));
        };
        if precondition.is_some_and(|rv| rv != kv.mod_revision.to_string()) {
            return Err(ApiError::conflict(res, name));
        }
        match self
            .update_from(res, ns, name, kv, true, obj, target, ctx)
            .await?
        {
            Attempt::Done(v) => Ok(v),
            Attempt::Unconfirmed => Err(ApiError::internal(
                "an update read from storage came back unconfirmed",
            )),
        }
    }

    /// The watch cache's copy of `key` for a write to start from: `None` when there is
    /// no cache, it is (re)loading, it lacks the key, or `precondition` names another
    /// revision than the copy's (the copy may be behind: storage decides then).
    fn cached_copy(
        &self,
        res: &ApiResource,
        key: &str,
        precondition: Option<&str>,
    ) -> Option<KeyValue> {
        let cacher = self.cacher(res)?;
        cacher.revision()?;
        let kv = cacher.get(key)?;
        match precondition {
            Some(rv) if rv != kv.mod_revision.to_string() => None,
            _ => Some(kv),
        }
    }

    /// One update attempt from `kv`, the object as stored (`confirmed`: read from
    /// storage; otherwise the watch cache's copy).
    #[allow(clippy::too_many_arguments)]
    async fn update_from(
        &self,
        res: &ApiResource,
        ns: Option<&str>,
        name: &str,
        kv: KeyValue,
        confirmed: bool,
        obj: Value,
        target: Target,
        ctx: &WriteContext,
    ) -> Result<Attempt, ApiError> {
        let old = served_one(res, decode(res, &kv)?).await?;
        self.write_update(
            res,
            ns,
            name,
            old,
            Base {
                revision: kv.mod_revision,
                stale: kv.stale || in_older_version(res, &kv),
                confirmed,
            },
            obj,
            target,
            ctx,
        )
        .await
    }

    /// Read-modify-write: `mutate` turns the current object into the new one (a patch).
    /// Retries when another writer got in between, unless the result pins a resourceVersion.
    /// The first attempt starts from the watch cache's copy, as [`Store::update`]'s.
    pub async fn patch(
        &self,
        res: &ApiResource,
        ns: Option<&str>,
        name: &str,
        target: Target,
        ctx: &WriteContext,
        mutate: impl Fn(&Value) -> Result<Value, ApiError>,
    ) -> Result<Value, ApiError> {
        let key = Self::key(res, ns, name);
        let mut last = ApiError::conflict(res, name);
        let mut cached = self.cached_copy(res, &key, None);
        let mut tries = 0;
        while tries < MAX_PATCH_RETRIES {
            let (kv, confirmed) = match cached.take() {
                Some(kv) => (kv, false),
                None => {
                    tries += 1;
                    let kv = self
                        .storage(res)
                        .get(&key)
                        .await
                        .map_err(|e| map_err(res, name, e))?
                        .ok_or_else(|| ApiError::not_found(res, name))?;
                    (kv, true)
                }
            };
            let old = served_one(res, decode(res, &kv)?).await?;
            let new = match mutate(&old) {
                Ok(new) => new,
                Err(e) if !confirmed && e.code < 500 => continue,
                Err(e) => return Err(e),
            };
            let pinned = meta_str(&new, "resourceVersion")
                .is_some_and(|rv| rv != kv.mod_revision.to_string());
            if pinned {
                if confirmed {
                    return Err(ApiError::conflict(res, name));
                }
                // The cache's copy may be behind the revision the patch names.
                continue;
            }
            let base = Base {
                revision: kv.mod_revision,
                stale: kv.stale || in_older_version(res, &kv),
                confirmed,
            };
            match self
                .write_update(res, ns, name, old, base, new, target, ctx)
                .await
            {
                Ok(Attempt::Done(v)) => return Ok(v),
                Err(e) if e.is_conflict() => last = e,
                // Unchanged against the cache's copy, or refused against it: that copy
                // may have been behind, so try again from storage (5xx would recur).
                Ok(Attempt::Unconfirmed) => {}
                Err(e) if !confirmed && e.code < 500 => {}
                Err(e) => return Err(e),
            }
        }
        Err(last)
    }

    #[allow(clippy::too_many_arguments)]
    async fn write_update(
        &self,
        res: &ApiResource,
        ns: Option<&str>,
        name: &str,
        old: Value,
        base: Base,
        mut obj: Value,
        target: Target,
        ctx: &WriteContext,
    ) -> Result<Attempt, ApiError> {
        let Base {
            revision: old_rev,
            stale,
            confirmed,
        } = base;
        let strategy = res.strategy;
        // A uid in the body is a precondition.
        if let Some(uid) = meta_str(&obj, "uid").filter(|u| !u.is_empty()) {
            let actual = meta_str(&old, "uid").unwrap_or_default();
            if uid != actual {
                return Err(ApiError {
                    message: format!("Operation cannot be fulfilled on {} \"{name}\": Precondition failed: UID in precondition: {uid}, UID in object meta: {actual}", res.qualified_resource()),
                    ..ApiError::conflict(res, name)
                });
            }
        }
        // An object being deleted may lose finalizers but gain none.
        if meta_str(&old, "deletionTimestamp").is_some() {
            let had: Vec<&Value> = old["metadata"]["finalizers"]
                .as_array()
                .map(|a| a.iter().collect())
                .unwrap_or_default();
            let added: Vec<String> = obj["metadata"]["finalizers"]
                .as_array()
                .into_iter()
                .flatten()
                .filter(|f| !had.contains(f))
                .filter_map(|f| f.as_str().map(|s| format!("{s:?}")))
                .collect();
            if !added.is_empty() {
                let detail = format!("no new finalizers can be added if the object is being deleted, found new finalizers []string{{{}}}", added.join(", "));
                return Err(ApiError::invalid(
                    res,
                    name,
                    vec![StatusCause::forbidden("metadata.finalizers", &detail)],
                ));
            }
        }
        if let Some(body_name) = meta_str(&obj, "name") {
            if body_name != name {
                return Err(ApiError::bad_request(format!("the name of the object ({body_name}) does not match the name on the URL ({name})")));
            }
        }
        let admission_target = AdmissionTarget::new(res, ns, name);
        if let Some(admission) = &ctx.admission {
            admission
                .admit(
                    Operation::Update,
                    admission_target,
                    Some(&mut obj),
                    Some(&old),
                )
                .await?;
            check_namespace_kept(&mut obj, ns)?;
        }
        if let Target::Part(part) = target {
            // A part subresource changes its part only (and, for an apply, who owns it).
            let mut merged = part.merge(&obj, &old);
            if ctx.apply {
                if let Some(mf) = obj["metadata"].get("managedFields") {
                    metadata_mut(&mut merged).insert("managedFields".into(), mf.clone());
                }
            }
            obj = merged;
        } else if target == Target::Status {
            // The status endpoint changes status only (and, for an apply, who owns it).
            let mut merged = old.clone();
            if ctx.apply {
                if let Some(mf) = obj["metadata"].get("managedFields") {
                    metadata_mut(&mut merged).insert("managedFields".into(), mf.clone());
                }
            }
            match obj.get("status") {
                Some(st) => merged["status"] = st.clone(),
                None => {
                    if let Some(m) = merged.as_object_mut() {
                        m.remove("status");
                    }
                }
            }
            strategy.prepare_for_status_update(&mut merged, &old);
            obj = merged;
        } else if res.def.subresources.status {
            // With a status subresource, the main endpoint ignores status changes.
            match old.get("status") {
                Some(s) => obj["status"] = s.clone(),
                None => {
                    if let Some(m) = obj.as_object_mut() {
                        m.remove("status");
                    }
                }
            }
        }
        {
            let old_meta = old["metadata"].clone();
            let meta = metadata_mut(&mut obj);
            for f in kept_on_update() {
                match old_meta.get(f) {
                    Some(v) => meta.insert(f.into(), v.clone()),
                    None => meta.remove(f),
                };
            }
            meta.insert("name".into(), json!(name));
            match ns {
                Some(ns) => meta.insert("namespace".into(), json!(ns)),
                None => meta.remove("namespace"),
            };
            meta.insert("resourceVersion".into(), json!(old_rev.to_string()));
        }
        if target == Target::Main {
            strategy.prepare_for_update(&mut obj, &old);
        }
        schema::apply_defaults(&mut obj, res.schema());
        let claims = match target {
            Target::Main => {
                // Immutability first: a changed cluster IP is refused as such, not
                // allocated.
                let causes = strategy.validate_update(&obj, &old);
                if !causes.is_empty() {
                    return Err(ApiError::invalid(res, name, causes));
                }
                self.allocate(res, &mut obj, Some(&old), ctx.dry_run)
                    .await?
            }
            Target::Status => {
                let causes = strategy.validate_status_update(&obj, &old);
                if !causes.is_empty() {
                    return Err(ApiError::invalid(res, name, causes));
                }
                None
            }
            Target::Part(part) => {
                let causes = part.validate(&obj, &old);
                if !causes.is_empty() {
                    return Err(ApiError::invalid(res, name, causes));
                }
                None
            }
        };
        // Claims made for this write are committed once it is stored, else removed.
        let outcome = async {
            if strategy.tracks_generation() && spec_part(&obj) != spec_part(&old) {
                let generation = old["metadata"]["generation"].as_i64().unwrap_or(0) + 1;
                metadata_mut(&mut obj).insert("generation".into(), json!(generation));
            }
            self.validate(res, &obj, Some(&old), name)?;
            if let Some(admission) = &ctx.admission {
                for warning in strategy.warnings(&obj, Some(&old)) {
                    admission.outcome().warn(warning);
                }
                admission
                    .validate(Operation::Update, admission_target, Some(&obj), Some(&old))
                    .await?;
            }
            if !ctx.apply {
                // managedFields are the server's: carry them over, then record this write.
                match old["metadata"].get("managedFields") {
                    Some(mf) => metadata_mut(&mut obj).insert("managedFields".into(), mf.clone()),
                    None => metadata_mut(&mut obj).remove("managedFields"),
                };
                let subresource = target.subresource(res);
                managed_fields::record_update(
                    &mut obj,
                    Some(&old),
                    res,
                    &ctx.manager,
                    subresource,
                    &now_rfc3339(),
                );
            }
            if obj == old && !stale {
                // Nothing changed: no write, same resourceVersion. A stale read (an older
                // encryption key or provider, or an object stored in a version that is no
                // longer the storage version) is rewritten anyway, so that replacing every
                // object re-encrypts it with the current key and re-encodes it in the
                // current storage version (`apiserver migrate-storage`). Without a write
                // nothing compares the watch cache's copy with storage: the caller reads
                // storage and tries again (it also tells whether the value is stale).
                if !confirmed {
                    return Ok(Attempt::Unconfirmed);
                }
                return Ok(Attempt::Done(old));
            }
            // A graceful deletion's object waits for its grace period too (upstream leaves
            // it to the kubelet; here the grace period's end, `controllers::pod_gc`).
            let finalized = meta_str(&obj, "deletionTimestamp").is_some()
                && !has_finalizers(&obj)
                && !strategy.blocks_deletion(&obj)
                && obj["metadata"]["deletionGracePeriodSeconds"]
                    .as_i64()
                    .is_none_or(|p| p == 0);
            if ctx.dry_run {
                return Ok(Attempt::Done(obj));
            }
            if finalized {
                // The last finalizer is gone: the object disappears.
                let (_, rev) = self
                    .storage(res)
                    .delete(&Self::key(res, ns, name), Some(old_rev))
                    .await
                    .map_err(|e| map_err(res, name, e))?;
                self.wrote(res, rev);
                // What the object held, before and as written, goes with it.
                self.released_with(res, &old).await;
                self.released_with(res, &obj).await;
                return Ok(Attempt::Done(with_rv(obj, rev)));
            }
            let rev = self
                .storage(res)
                .update(
                    &Self::key(res, ns, name),
                    old_rev,
                    stored_bytes(res, &obj).await?,
                )
                .await
                .map_err(|e| map_err(res, name, e))?;
            self.wrote(res, rev);
            Ok(Attempt::Done(with_rv(obj, rev)))
        }
        .await;
        match outcome {
            Ok(Attempt::Done(v)) => Self::settle(claims, Ok(v)).await.map(Attempt::Done),
            Ok(Attempt::Unconfirmed) => {
                if let Some(claims) = claims {
                    claims.roll_back().await;
                }
                Ok(Attempt::Unconfirmed)
            }
            Err(e) => Self::settle(claims, Err(e)).await.map(Attempt::Done),
        }
    }

    /// Deletes an object. With finalizers (or a kind-level deletion block, such as a
    /// namespace's `spec.finalizers`) the object only gets `deletionTimestamp` and stays
    /// until the last finalizer is removed; otherwise it is removed at once. `admission`
    /// is the requester's (`None` for the server's own deletes).
    pub async fn delete(
        &self,
        res: &ApiResource,
        ns: Option<&str>,
        name: &str,
        options: &DeleteOptions,
        admission: Option<&RequestAdmission>,
    ) -> Result<Deletion, ApiError> {
        let dry_run = options.dry_run;
        let precondition_uid = options.preconditions.uid.as_deref();
        let precondition_rv = options.preconditions.resource_version.as_deref();
        let key = Self::key(res, ns, name);
        let Some(kv) = self
            .storage(res)
            .get(&key)
            .await
            .map_err(|e| map_err(res, name, e))?
        else {
            return Err(ApiError::not_found(res, name));
        };
        let mut obj = served_one(res, decode(res, &kv)?).await?;
        if let Some(uid) = precondition_uid {
            let actual = meta_str(&obj, "uid").unwrap_or_default();
            if uid != actual {
                return Err(ApiError {
                    message: format!("Precondition failed: UID in precondition: {uid}, UID in object meta: {actual}"),
                    ..ApiError::conflict(res, name)
                });
            }
        }
        if let Some(rv) = precondition_rv {
            if rv != kv.mod_revision.to_string() {
                return Err(ApiError {
                    message: format!("Precondition failed: ResourceVersion in precondition: {rv}, ResourceVersion in object meta: {}", kv.mod_revision),
                    ..ApiError::conflict(res, name)
                });
            }
        }
        if let Some(admission) = admission {
            let target = AdmissionTarget::new(res, ns, name);
            admission.delete(target, &obj).await?;
        }
        let strategy = res.strategy;
        let first_deletion = meta_str(&obj, "deletionTimestamp").is_none();
        let grace = graceful_deletion(strategy, &mut obj, options.grace_period_seconds);
        if grace == Grace::Pending {
            // A graceful deletion under way: nothing changes (not even finalizers).
            return Ok(Deletion {
                object: obj,
                deleted: false,
            });
        }
        // Foreground and Orphan deletes leave the object to the garbage collector.
        let collector = finalizers_after_delete(&finalizers(&obj), options);
        if let Some(next) = &collector {
            let meta = metadata_mut(&mut obj);
            if next.is_empty() {
                meta.remove("finalizers");
            } else {
                meta.insert("finalizers".into(), json!(next));
            }
        }
        let started = matches!(grace, Grace::Started(_));
        let waits = matches!(grace, Grace::Started(period) if period > 0);
        if waits || has_finalizers(&obj) || strategy.blocks_deletion(&obj) {
            if !first_deletion && collector.is_none() && !started {
                return Ok(Deletion {
                    object: obj,
                    deleted: false,
                });
            }
            if meta_str(&obj, "deletionTimestamp").is_none() {
                let meta = metadata_mut(&mut obj);
                meta.insert("deletionTimestamp".into(), json!(now_rfc3339()));
                meta.insert("deletionGracePeriodSeconds".into(), json!(0));
            }
            if first_deletion {
                strategy.prepare_for_delete(&mut obj);
            }
            if dry_run {
                return Ok(Deletion {
                    object: obj,
                    deleted: false,
                });
            }
            let rev = self
                .storage(res)
                .update(&key, kv.mod_revision, stored_bytes(res, &obj).await?)
                .await
                .map_err(|e| map_err(res, name, e))?;
            self.wrote(res, rev);
            return Ok(Deletion {
                object: with_rv(obj, rev),
                deleted: false,
            });
        }
        if dry_run {
            return Ok(Deletion {
                object: obj,
                deleted: true,
            });
        }
        let (_, rev) = self
            .storage(res)
            .delete(&key, Some(kv.mod_revision))
            .await
            .map_err(|e| map_err(res, name, e))?;
        self.wrote(res, rev);
        self.released_with(res, &obj).await;
        Ok(Deletion {
            object: obj,
            deleted: true,
        })
    }

    /// Creates an object unless it exists (bootstrap of default namespaces).
    pub async fn ensure(&self, res: &ApiResource, obj: Value) -> Result<(), ApiError> {
        match self
            .create(res, None, obj, &WriteContext::new("apiserver"))
            .await
        {
            Ok(_) => Ok(()),
            Err(e) if e.is_already_exists() => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// A namespace as stored: from the watch cache, or from storage while the cache does
    /// not have it (yet), as kube-apiserver's NamespaceLifecycle admission reads it.
    pub async fn namespace(&self, ns: &str) -> Result<Option<Value>, ApiError> {
        let key = format!("/registry/namespaces/{ns}");
        let storage = self.storages.of("", "namespaces");
        let cached = self
            .cacher_at("/registry/namespaces/".to_string(), storage)
            .filter(|c| c.revision().is_some())
            .and_then(|c| c.get(&key));
        let found = match cached {
            Some(kv) => Some(kv),
            None => Metered {
                storage,
                group: "",
                resource: "namespaces",
            }
            .get(&key)
            .await
            .map_err(|e| ApiError::internal(e.to_string()))?,
        };
        Ok(found.and_then(|kv| serde_json::from_slice(&kv.value).ok()))
    }

    /// Every check a write passes: name, metadata, schema, CEL rules (with `old`, the
    /// stored object, on update) and the kind's own.
    fn validate(
        &self,
        res: &ApiResource,
        obj: &Value,
        old: Option<&Value>,
        name: &str,
    ) -> Result<(), ApiError> {
        let strategy = res.strategy;
        let mut causes = validate_name("metadata.name", name, strategy.name_rule());
        causes.extend(validate_object_meta(obj));
        let mut schema_causes = res.validator().validate(obj);
        if res.builtin() {
            // Upstream checks built-in kinds' lists by hand (a pod's second container of
            // a name is a duplicate `.name`, two ports may share a number), not by their
            // OpenAPI list types.
            schema_causes.retain(|c| c.reason != "FieldValueDuplicate");
        }
        // Rules assume a value of the declared shape, as kube-apiserver runs them only
        // on objects that pass the schema.
        if schema_causes.is_empty() {
            causes.extend(res.rules.validate(obj, old));
        }
        causes.extend(schema_causes);
        causes.extend(strategy.validate(obj));
        if old.is_none() {
            causes.extend(strategy.validate_create(obj));
        }
        if let Some(family) = &res.versions {
            causes.extend(family.preserved_causes(obj, res.api_version()));
        }
        if causes.is_empty() {
            Ok(())
        } else {
            Err(ApiError::invalid(res, name, causes))
        }
    }
}

fn random_suffix() -> String {
    use rand::Rng;
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    let mut rng = rand::rng();
    (0..5)
        .map(|_| ALPHABET[rng.random_range(0..ALPHABET.len())] as char)
        .collect()
}

fn encode_continue(revision: u64, start: &str) -> String {
    let token = json!({ "v": "meta.k8s.io/v1", "rv": revision, "start": start });
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(token.to_string())
}

/// kube-apiserver's words for a continue token whose snapshot is gone.
const CONTINUE_EXPIRED: &str = "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list.";

/// The start key and snapshot revision a continue token carries.
fn decode_continue(token: &str, prefix: &str) -> Result<(String, u64), ApiError> {
    let bad = |why: &str| {
        ApiError::bad_request(format!(
            "invalid continue token: continue key is not valid: {why}"
        ))
    };
    let raw = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(token)
        .map_err(|_| bad("not base64"))?;
    let v: Value = serde_json::from_slice(&raw).map_err(|_| bad("not a continue token"))?;
    let start = v
        .get("start")
        .and_then(Value::as_str)
        .ok_or_else(|| bad("missing start key"))?;
    if start.contains("..") || start.starts_with('/') {
        return Err(bad("start key is outside the listed collection"));
    }
    if v.get("v").and_then(Value::as_str) != Some("meta.k8s.io/v1") {
        return Err(bad("server does not recognize this encoded version"));
    }
    let rev = v
        .get("rv")
        .and_then(Value::as_u64)
        .filter(|rv| *rv > 0)
        .ok_or_else(|| bad("incorrect encoded start resourceVersion (version meta.k8s.io/v1)"))?;
    Ok((format!("{prefix}{start}"), rev))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::workloads::PodStrategy;

    fn bound_pod() -> Value {
        json!({"metadata": {"name": "p"}, "spec": {"nodeName": "n", "terminationGracePeriodSeconds": 30}})
    }

    #[test]
    fn a_bound_pods_grace_period_starts_and_may_only_shrink() {
        let mut pod = bound_pod();
        assert_eq!(
            graceful_deletion(&PodStrategy, &mut pod, None),
            Grace::Started(30)
        );
        assert_eq!(pod["metadata"]["deletionGracePeriodSeconds"], 30);
        assert_eq!(
            graceful_deletion(&PodStrategy, &mut pod, Some(60)),
            Grace::Pending
        );
        assert_eq!(
            graceful_deletion(&PodStrategy, &mut pod, None),
            Grace::Pending
        );
        assert_eq!(
            graceful_deletion(&PodStrategy, &mut pod, Some(5)),
            Grace::Started(5)
        );
        assert_eq!(
            graceful_deletion(&PodStrategy, &mut pod, Some(0)),
            Grace::Started(0)
        );
        // Deleted at once: unbound, finished, or a kind without a grace period.
        let mut unbound = json!({"spec": {"terminationGracePeriodSeconds": 30}});
        assert_eq!(
            graceful_deletion(&PodStrategy, &mut unbound, None),
            Grace::Started(0)
        );
        let mut done = bound_pod();
        done["status"]["phase"] = json!("Succeeded");
        assert_eq!(
            graceful_deletion(&PodStrategy, &mut done, Some(10)),
            Grace::Started(0)
        );
        let mut cm = json!({"metadata": {"name": "c"}});
        assert_eq!(
            graceful_deletion(
                &super::super::strategy::PlainCoreStrategy,
                &mut cm,
                Some(10)
            ),
            Grace::NotGraceful
        );
    }

    #[test]
    fn a_huge_grace_period_ends_in_year_9999_not_in_a_panic() {
        let mut pod = bound_pod();
        assert_eq!(
            graceful_deletion(&PodStrategy, &mut pod, Some(i64::MAX)),
            Grace::Started(i64::MAX)
        );
        assert_eq!(pod["metadata"]["deletionTimestamp"], "9999-12-31T23:59:59Z");
        assert_eq!(
            graceful_deletion(&PodStrategy, &mut pod, Some(i64::MAX - 1)),
            Grace::Started(i64::MAX - 1)
        );
    }
}
