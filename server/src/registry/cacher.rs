//! The watch cache: one per resource, fed by one storage watch (kube-apiserver's
//! `cacher`). It keeps the resource's current objects and a bounded window of recent
//! changes in memory, serves watches from them (every watcher shares each event), and
//! answers LIST and GET without reading storage: `resourceVersion=0` at whatever it holds,
//! consistent reads once it has caught up to the store's current revision.
//!
//! When it cannot answer (still loading, re-loading after the storage watch broke, or a
//! watch start point older than its window) the caller goes to storage instead, so the
//! cache changes speed, never answers.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::ops::Bound;
use std::sync::{Arc, RwLock, RwLockReadGuard, RwLockWriteGuard, Weak};
use std::time::Duration;

use bytes::Bytes;
use tokio::sync::{watch, Notify};

use super::feed::{Feed, FeedPlace, Live};
use crate::storage::{
    EventReceiver, KeyValue, ListPage, Storage, StorageError, StoredEvent, WatchItem,
};

/// How many recent changes a cache keeps for watches that start in the past. Older start
/// points are served by storage (or get 410 there).
pub const HISTORY: usize = 1_000;
/// Events buffered for watchers of a whole resource; one that falls this far behind is
/// terminated (it re-watches; see `feed.rs`).
const WATCHER_BUFFER: usize = 1_024;
/// The same for watchers of one namespace (one buffer per watched namespace).
const NAMESPACE_WATCHER_BUFFER: usize = 256;
/// How long a read waits for the cache to catch up before going to storage.
const CATCH_UP_WAIT: Duration = Duration::from_secs(3);
/// Pause before re-loading after the storage watch broke.
const RELOAD_PAUSE: Duration = Duration::from_millis(500);
/// Longest pause between loads while storage keeps failing.
const MAX_RELOAD_PAUSE: Duration = Duration::from_secs(8);

/// One resource's watch cache.
pub struct Cacher {
    storage: Arc<dyn Storage>,
    /// The resource's key prefix, e.g. `/registry/configmaps/`.
    prefix: String,
    state: RwLock<State>,
    /// The revision the cache holds; `None` while it is (re)loading.
    progress: watch::Sender<Option<u64>>,
    /// Asks the feeding storage watch for a progress notification.
    want_progress: Arc<Notify>,
    /// The newest revision this server wrote under the prefix.
    written: std::sync::atomic::AtomicU64,
    /// The revision of the last change applied (or of the load): progress may run ahead
    /// of it. Written under the state's write lock, read without it.
    applied: std::sync::atomic::AtomicU64,
}

struct State {
    /// The current objects, by key.
    objects: BTreeMap<String, Cached>,
    /// Recent changes, oldest first; they cover every change after `floor`.
    history: VecDeque<Arc<StoredEvent>>,
    floor: u64,
    /// The revision `objects` reflect.
    revision: u64,
    /// Live changes for watchers of the whole resource. Created on first watch (its
    /// buffer, made on the first change after that, is most of what a watched resource
    /// costs), dropped when no one listens; dropped on re-load, which ends every watch.
    events: Option<Feed>,
    /// Live changes per namespace, for watchers of one namespace: a change wakes only the
    /// watchers it concerns. Created on first watch, dropped when no one listens.
    by_namespace: HashMap<String, Feed>,
}

#[derive(Clone)]
struct Cached {
    value: Bytes,
    create_revision: u64,
    mod_revision: u64,
}

/// A watch served by the cache: the starting state or the changes since the start point,
/// then live changes.
pub struct CacheWatch {
    /// The objects at `revision` (only when the watch asked for the current state).
    pub initial: Vec<KeyValue>,
    /// Changes after the start point that the cache already holds.
    pub backlog: VecDeque<Arc<StoredEvent>>,
    /// Changes as they come (all of the resource; the watcher filters by key).
    pub live: Live,
    /// The watch's place in the feed `live` receives (which terminates it when it falls
    /// behind).
    pub place: Arc<FeedPlace>,
    /// The revision the watch starts after.
    pub revision: u64,
}

impl Cacher {
    /// A cache of the keys under `prefix`, loading in the background.
    pub fn start(storage: Arc<dyn Storage>, prefix: String) -> Arc<Cacher> {
        let cacher = Arc::new(Cacher {
            storage,
            prefix,
            state: RwLock::new(State {
                objects: BTreeMap::new(),
                history: VecDeque::new(),
                floor: 0,
                revision: 0,
                events: None,
                by_namespace: HashMap::new(),
            }),
            progress: watch::channel(None).0,
            want_progress: Arc::new(Notify::new()),
            written: Default::default(),
            applied: Default::default(),
        });
        crate::panics::spawn("watch cache feed", feed(Arc::downgrade(&cacher)));
        cacher
    }

    fn read(&self) -> RwLockReadGuard<'_, State> {
        self.state.read().unwrap_or_else(|e| e.into_inner())
    }

    fn write(&self) -> RwLockWriteGuard<'_, State> {
        self.state.write().unwrap_or_else(|e| e.into_inner())
    }

    /// The revision the cache holds, if it is loaded.
    pub fn revision(&self) -> Option<u64> {
        *self.progress.borrow()
    }

    /// How many objects the cache holds; `None` while it is (re)loading.
    pub fn object_count(&self) -> Option<usize> {
        self.revision()?;
        Some(self.read().objects.len())
    }

    /// Waits until the cache has loaded (at once when it has; never when it keeps failing).
    pub async fn wait_loaded(&self) {
        let mut rx = self.progress.subscribe();
        let _ = rx.wait_for(Option::is_some).await;
    }

    /// Records that this server wrote `revision` under the prefix.
    pub fn note_write(&self, revision: u64) {
        self.written
            .fetch_max(revision, std::sync::atomic::Ordering::Relaxed);
    }

    /// The newest revision this server wrote under the prefix (0 if none).
    pub fn written(&self) -> u64 {
        self.written.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Waits until the cache holds `revision` or later, and the changes of this server's
    /// own writes up to it; false when it does not within [`CATCH_UP_WAIT`] (the caller
    /// then reads storage). The second half guards reads of one's own writes against a
    /// progress notification that overtakes its events (etcd before 3.4.31 / 3.5.13 when
    /// `--etcd-watch-progress=ordered` is forced).
    pub async fn wait_for(&self, revision: u64) -> bool {
        let own = self.written().min(revision);
        let caught_up = |p: &Option<u64>| {
            p.is_some_and(|r| r >= revision)
                && self.applied.load(std::sync::atomic::Ordering::Acquire) >= own
        };
        let mut rx = self.progress.subscribe();
        if caught_up(&rx.borrow()) {
            return true;
        }
        if rx.borrow().is_some() && !self.storage.reports_progress() {
            // Without progress notifications nothing tells when the cache is there.
            return false;
        }
        self.want_progress.notify_one();
        let caught_up = tokio::time::timeout(CATCH_UP_WAIT, rx.wait_for(caught_up))
            .await
            .is_ok_and(|r| r.is_ok());
        caught_up
    }

    /// Waits until the cache holds the store's current revision (a consistent read).
    pub async fn wait_for_current(&self) -> Result<bool, StorageError> {
        let current = self.storage.current_revision().await?;
        Ok(self.wait_for(current).await)
    }

    /// A page of the keys under `prefix` (within the cache's prefix) after `start_after`,
    /// at most `limit` (0 = all), as the cache holds them now.
    pub fn list(&self, prefix: &str, start_after: Option<&str>, limit: usize) -> ListPage {
        let state = self.read();
        let start = match start_after {
            Some(s) if s >= prefix => Bound::Excluded(s),
            _ => Bound::Included(prefix),
        };
        let mut range = under(&state.objects, start, prefix);
        let take = if limit == 0 { usize::MAX } else { limit };
        let items: Vec<KeyValue> = range.by_ref().take(take).map(key_value).collect();
        let remaining = range.count() as u64;
        ListPage {
            items,
            revision: state.revision,
            remaining,
        }
    }

    /// Like [`Cacher::list`], but only when the cache holds exactly `revision` (later
    /// pages of a list whose first page it served).
    pub fn list_at(
        &self,
        prefix: &str,
        start_after: Option<&str>,
        limit: usize,
        revision: u64,
    ) -> Option<ListPage> {
        (self.revision() == Some(revision))
            .then(|| self.list(prefix, start_after, limit))
            .filter(|page| page.revision == revision)
    }

    /// The key as the cache holds it.
    pub fn get(&self, key: &str) -> Option<KeyValue> {
        self.read().objects.get_key_value(key).map(key_value)
    }

    /// A watch of the keys under `prefix` after revision `after`, or of the current state
    /// (as initial objects) when `after` is `None`. `None` when the cache is not loaded or
    /// `after` is older than its window; the caller watches storage instead.
    pub fn watch(&self, prefix: &str, after: Option<u64>) -> Option<CacheWatch> {
        self.revision()?;
        let mut state = self.write();
        let (initial, backlog, revision) = match after {
            None => {
                let initial = under(&state.objects, Bound::Included(prefix), prefix)
                    .map(key_value)
                    .collect();
                (initial, VecDeque::new(), state.revision)
            }
            Some(after) if after < state.floor => return None,
            Some(after) => {
                let backlog = state
                    .history
                    .iter()
                    .filter(|e| e.revision > after && e.key.starts_with(prefix))
                    .cloned()
                    .collect();
                (Vec::new(), backlog, after)
            }
        };
        // Subscribing under the lock: no change falls between the state and the stream.
        let (live, place) = match self.namespace_of(prefix) {
            Some(ns) => state
                .by_namespace
                .entry(ns.to_string())
                .or_insert_with(|| Feed::new(NAMESPACE_WATCHER_BUFFER))
                .subscribe(),
            None => state
                .events
                .get_or_insert_with(|| Feed::new(WATCHER_BUFFER))
                .subscribe(),
        };
        Some(CacheWatch {
            initial,
            backlog,
            live,
            place,
            revision,
        })
    }

    /// Loads the current objects and returns the watch that keeps them current.
    async fn load(&self) -> Result<EventReceiver, StorageError> {
        let page = self.storage.list(&self.prefix, None, 0).await?;
        let events = self.storage.watch(&self.prefix, page.revision).await?;
        let mut state = self.write();
        state.objects = page
            .items
            .into_iter()
            .map(|kv| {
                let cached = Cached {
                    value: kv.value,
                    create_revision: kv.create_revision,
                    mod_revision: kv.mod_revision,
                };
                (kv.key, cached)
            })
            .collect();
        state.history.clear();
        state.floor = page.revision;
        state.revision = page.revision;
        self.applied
            .store(page.revision, std::sync::atomic::Ordering::Release);
        drop(state);
        self.progress.send_replace(Some(page.revision));
        Ok(events)
    }

    /// Applies one change from storage and hands it to the watchers.
    fn apply(&self, event: Arc<StoredEvent>) {
        let mut state = self.write();
        // Changes come in order, so only one already applied is old; one at or below a
        // progress notification's revision is not (the notification overtook it).
        if event.revision <= self.applied.load(std::sync::atomic::Ordering::Acquire) {
            return;
        }
        match &event.value {
            Some(value) => {
                let create_revision = match &event.prev {
                    Some(_) => event.prev_create_revision,
                    None => event.revision,
                };
                let cached = Cached {
                    value: value.clone(),
                    create_revision,
                    mod_revision: event.revision,
                };
                state.objects.insert(event.key.clone(), cached);
            }
            None => {
                state.objects.remove(&event.key);
            }
        }
        state.revision = state.revision.max(event.revision);
        self.applied
            .store(event.revision, std::sync::atomic::Ordering::Release);
        state.history.push_back(event.clone());
        while state.history.len() > HISTORY {
            if let Some(old) = state.history.pop_front() {
                state.floor = old.revision;
                // Live watchers are past it (one a buffer behind is terminated); the
                // event log may hold the event longer, with its bytes but not its line.
                old.encoded.forget();
            }
        }
        // Sent under the lock, so a watch set up under it sees each change exactly once.
        if let Some(ns) = self.namespace_of(&event.key) {
            if let Some(feed) = state.by_namespace.get_mut(ns) {
                if !feed.send(event.clone()) {
                    state.by_namespace.remove(ns);
                }
            }
        }
        if let Some(feed) = &mut state.events {
            if !feed.send(event) {
                state.events = None;
            }
        }
        let revision = state.revision;
        drop(state);
        self.progress.send_replace(Some(revision));
    }

    /// Records that storage has delivered every change up to `revision`.
    fn advance(&self, revision: u64) {
        let mut state = self.write();
        if revision > state.revision {
            state.revision = revision;
            drop(state);
            self.progress.send_replace(Some(revision));
        }
    }

    /// Forgets the contents (the storage watch broke): reads go to storage and every
    /// watch served from the cache ends (clients re-watch from their last revision).
    fn reset(&self) {
        self.progress.send_replace(None);
        let mut state = self.write();
        state.objects.clear();
        for event in state.history.drain(..) {
            event.encoded.forget();
        }
        state.events = None;
        state.by_namespace.clear();
    }

    /// The namespace part of a key or namespace prefix under the cache's prefix
    /// (`<prefix><namespace>/...`); `None` for the whole resource and cluster-scoped keys.
    fn namespace_of<'k>(&self, key: &'k str) -> Option<&'k str> {
        let rest = key.strip_prefix(self.prefix.as_str())?;
        rest.split_once('/').map(|(ns, _)| ns)
    }
}

/// The cached objects from `start` on whose keys are under `prefix`, in key order.
fn under<'a>(
    objects: &'a BTreeMap<String, Cached>,
    start: Bound<&'a str>,
    prefix: &'a str,
) -> impl Iterator<Item = (&'a String, &'a Cached)> {
    objects
        .range::<str, _>((start, Bound::Unbounded))
        .take_while(move |(k, _)| k.starts_with(prefix))
}

fn key_value((key, c): (&String, &Cached)) -> KeyValue {
    KeyValue {
        key: key.clone(),
        value: c.value.clone(),
        create_revision: c.create_revision,
        mod_revision: c.mod_revision,
        stale: false,
    }
}

/// The cache's feeding loop: load, follow the storage watch, and load again when it
/// breaks. Ends when the cache is dropped.
async fn feed(cacher: Weak<Cacher>) {
    // Consecutive failed loads: the pause between tries doubles up to MAX_RELOAD_PAUSE,
    // and only the first failure of a series is logged (storage may be down for long).
    let mut failures = 0u32;
    loop {
        let Some(this) = cacher.upgrade() else { return };
        let want_progress = this.want_progress.clone();
        let loaded = this.load().await;
        match &loaded {
            Ok(_) if failures > 0 => {
                tracing::info!(prefix = %this.prefix, "watch cache: loaded again");
                failures = 0;
            }
            Ok(_) => {}
            Err(e) => {
                if failures == 0 {
                    tracing::warn!(prefix = %this.prefix, "watch cache: loading failed: {e}; retrying");
                }
                failures = failures.saturating_add(1);
            }
        }
        drop(this);
        if let Ok(mut events) = loaded {
            loop {
                let item = tokio::select! {
                    item = events.recv_item() => item,
                    _ = want_progress.notified() => {
                        events.request_progress();
                        continue;
                    }
                };
                let Some(this) = cacher.upgrade() else { return };
                match item {
                    Some(Ok(WatchItem::Event(e))) => this.apply(e),
                    Some(Ok(WatchItem::Progress(revision))) => this.advance(revision),
                    Some(Err(e)) => {
                        tracing::warn!(prefix = %this.prefix, "watch cache: the storage watch ended: {e}; re-loading");
                        this.reset();
                        break;
                    }
                    None => {
                        this.reset();
                        break;
                    }
                }
            }
        }
        let pause = RELOAD_PAUSE.saturating_mul(1 << failures.min(5));
        tokio::time::sleep(pause.min(MAX_RELOAD_PAUSE)).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::embedded::EmbeddedStorage;

    /// Waits until the cache has applied `revision` (10 s at most).
    async fn applied(c: &Cacher, revision: u64) {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        while c.revision() < Some(revision) {
            assert!(
                tokio::time::Instant::now() < deadline,
                "the cache never saw {revision}"
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    /// The cache over a backend: consistent reads and watches. Run against every backend.
    async fn serves_consistent_reads_and_watches(s: Arc<dyn Storage>) {
        s.create("/registry/a/ns/x", Bytes::from_static(b"1"))
            .await
            .unwrap();
        let c = Cacher::start(s.clone(), "/registry/a/".into());
        assert!(c.wait_for_current().await.unwrap());
        let start = c.revision().unwrap();
        let r = s
            .create("/registry/a/ns/y", Bytes::from_static(b"2"))
            .await
            .unwrap();
        // A write to another resource moves the store's revision past the cache's last
        // event; progress notifications let the cache catch up without an event. A
        // backend that cannot report progress sends such reads to storage.
        let other = s
            .create("/registry/b/z", Bytes::from_static(b"3"))
            .await
            .unwrap();
        let caught_up = c.wait_for_current().await.unwrap();
        assert_eq!(caught_up, s.reports_progress(), "caught up to {other}");
        applied(&c, r).await;
        let page = c.list("/registry/a/ns/", None, 0);
        assert_eq!(page.revision, if caught_up { other } else { r });
        let keys: Vec<_> = page.items.iter().map(|kv| kv.key.as_str()).collect();
        assert_eq!(keys, ["/registry/a/ns/x", "/registry/a/ns/y"]);
        assert_eq!(page.items[1].mod_revision, r);
        let first = c.list("/registry/a/", None, 1);
        assert_eq!((first.items.len(), first.remaining), (1, 1));
        let next = c.list("/registry/a/", Some("/registry/a/ns/x"), 1);
        assert_eq!(next.items[0].key, "/registry/a/ns/y");

        // Watches replay the window, then follow.
        let mut w = c.watch("/registry/a/", Some(start)).unwrap();
        assert_eq!(w.backlog.pop_front().unwrap().revision, r);
        assert!(w.backlog.is_empty());
        let r2 = s
            .update("/registry/a/ns/x", start, Bytes::from_static(b"4"))
            .await
            .unwrap();
        let e = tokio::time::timeout(Duration::from_secs(10), w.live.recv())
            .await
            .unwrap()
            .unwrap();
        assert_eq!((e.revision, e.prev.as_deref()), (r2, Some(&b"1"[..])));
        applied(&c, r2).await;
        let kv = c.get("/registry/a/ns/x").unwrap();
        assert_eq!((kv.create_revision, kv.mod_revision), (start, r2));
        // Before the window: the caller must go to storage.
        assert!(c.watch("/registry/a/", Some(start - 1)).is_none());

        // A namespace's watchers hear only of their namespace; the resource's of all.
        let mut ns = c.watch("/registry/a/ns/", None).unwrap();
        assert_eq!(ns.initial.len(), 2);
        let mut all = c.watch("/registry/a/", None).unwrap();
        let other = s.create("/registry/a/other/o", Bytes::new()).await.unwrap();
        let mine = s.create("/registry/a/ns/z", Bytes::new()).await.unwrap();
        let wait = Duration::from_secs(10);
        let got = tokio::time::timeout(wait, ns.live.recv())
            .await
            .unwrap()
            .unwrap();
        assert_eq!(
            got.revision, mine,
            "the namespace watcher skips other namespaces"
        );
        let got = tokio::time::timeout(wait, all.live.recv())
            .await
            .unwrap()
            .unwrap();
        assert_eq!(got.revision, other);
    }

    /// A progress notification that overtakes a change (etcd before 3.4.31 / 3.5.13) does
    /// not make the cache drop that change when it comes, and a read of this server's own
    /// write waits for it rather than answering without it.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_change_overtaken_by_progress_is_applied_and_own_writes_wait_for_it() {
        use futures_util::FutureExt;
        let dir = tempfile::tempdir().unwrap();
        let s: Arc<dyn Storage> = Arc::new(EmbeddedStorage::open(&dir.path().join("db")).unwrap());
        let c = Cacher::start(s, "/registry/a/".into());
        c.wait_loaded().await;
        let loaded = c.revision().unwrap();
        let (mine, progress) = (loaded + 3, loaded + 5);
        c.note_write(mine);
        c.advance(progress);
        assert_eq!(c.revision(), Some(progress));
        assert_eq!(
            c.wait_for(progress).now_or_never(),
            None,
            "ready before its own write's change came"
        );
        assert_eq!(
            c.wait_for(loaded).now_or_never(),
            Some(true),
            "older reads are"
        );
        c.apply(Arc::new(StoredEvent {
            revision: mine,
            key: "/registry/a/ns/late".into(),
            value: Some(Bytes::from_static(b"v")),
            prev: None,
            prev_create_revision: 0,
            prev_mod_revision: 0,
            encoded: Default::default(),
            labels: Default::default(),
        }));
        assert_eq!(c.wait_for(progress).now_or_never(), Some(true));
        let kv = c
            .get("/registry/a/ns/late")
            .expect("the late change is applied");
        assert_eq!(kv.mod_revision, mine);
        assert_eq!(c.revision(), Some(progress), "progress does not go back");
    }

    /// An event's shared watch line lives while the event is in the window, not as long
    /// as the storage's history keeps the event.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn an_event_leaving_the_window_forgets_its_watch_line() {
        let dir = tempfile::tempdir().unwrap();
        let s: Arc<dyn Storage> = Arc::new(EmbeddedStorage::open(&dir.path().join("db")).unwrap());
        let c = Cacher::start(s.clone(), "/registry/a/".into());
        c.wait_loaded().await;
        let start = c.revision().unwrap();
        let first = s
            .create("/registry/a/ns/first", Bytes::new())
            .await
            .unwrap();
        applied(&c, first).await;
        let mut w = c.watch("/registry/a/", Some(start)).unwrap();
        let event = w.backlog.pop_front().unwrap();
        event.encoded.get_or_init(|| Bytes::from_static(b"line"));
        let writes = (0..HISTORY).map(|i| {
            let s = s.clone();
            async move { s.create(&format!("/registry/a/ns/{i}"), Bytes::new()).await }
        });
        let last = futures_util::future::try_join_all(writes).await.unwrap();
        applied(&c, last.into_iter().max().unwrap()).await;
        assert!(
            c.watch("/registry/a/", Some(start)).is_none(),
            "out of the window"
        );
        assert_eq!(event.encoded.get(), None);
    }

    #[tokio::test]
    async fn embedded_backend() {
        let dir = tempfile::tempdir().unwrap();
        let s = EmbeddedStorage::open(&dir.path().join("db")).unwrap();
        serves_consistent_reads_and_watches(Arc::new(s)).await;
    }

    #[cfg(feature = "etcd")]
    #[tokio::test]
    async fn etcd_backend() {
        let server = crate::storage::conformance::EtcdServer::start().await;
        let s = server.client("/registry").await;
        serves_consistent_reads_and_watches(Arc::new(s)).await;
    }
}
