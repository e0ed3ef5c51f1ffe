//! The storage conformance suite: etcd3's semantics, written once, run against every
//! backend. Each `pub async fn` is one check that takes a [`Factory`] (a fresh, empty key
//! space per call) and panics with a message naming what broke.
//!
//! `cargo test -p apiserver storage::` runs it against the embedded store; with
//! `--features etcd` it also runs against a real `etcd` (Debian's `etcd-server`) that
//! [`EtcdServer`] starts with the `etcd-launcher` crate on free loopback ports. Without an
//! `etcd` binary those tests fail: they never skip.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;

use super::embedded::EmbeddedStorage;
use super::{EventReceiver, Storage, StorageError, StoredEvent, WatchItem};

/// Makes stores for the suite.
#[async_trait]
pub trait Factory: Send + Sync {
    /// A store whose key space is empty (every call gives an independent one).
    async fn open(&self) -> Arc<dyn Storage>;
}

/// Embedded stores, each in its own file under one temporary directory.
pub struct EmbeddedFactory {
    dir: tempfile::TempDir,
    next: AtomicUsize,
}

impl EmbeddedFactory {
    /// A factory over a new temporary directory.
    pub fn new() -> Self {
        EmbeddedFactory {
            dir: tempfile::tempdir().expect("creating a temporary directory"),
            next: AtomicUsize::new(0),
        }
    }
}

impl Default for EmbeddedFactory {
    fn default() -> Self {
        Self::new()
    }
}

#[async_trait]
impl Factory for EmbeddedFactory {
    async fn open(&self) -> Arc<dyn Storage> {
        let n = self.next.fetch_add(1, Ordering::SeqCst);
        let path = self.dir.path().join(format!("store-{n}.redb"));
        Arc::new(EmbeddedStorage::open(&path).expect("opening the embedded store"))
    }
}

/// How long a watch may take to deliver an expected event.
const EVENT_WAIT: Duration = Duration::from_secs(10);
/// How long to listen for an event that must not come.
const QUIET_WAIT: Duration = Duration::from_millis(300);

fn b(s: &str) -> Bytes {
    Bytes::copy_from_slice(s.as_bytes())
}

async fn next_event(w: &mut EventReceiver, what: &str) -> Arc<StoredEvent> {
    match tokio::time::timeout(EVENT_WAIT, w.recv()).await {
        Ok(Some(Ok(e))) => e,
        Ok(Some(Err(e))) => panic!("{what}: the watch failed: {e}"),
        Ok(None) => panic!("{what}: the watch ended"),
        Err(_) => panic!("{what}: no event within {EVENT_WAIT:?}"),
    }
}

async fn assert_quiet(w: &mut EventReceiver, what: &str) {
    if let Ok(Some(e)) = tokio::time::timeout(QUIET_WAIT, w.recv()).await {
        panic!("{what}: unexpected watch item {e:?}");
    }
}

fn assert_event(
    e: &StoredEvent,
    revision: u64,
    key: &str,
    value: Option<&str>,
    prev: Option<&str>,
) {
    assert_eq!(
        (
            e.revision,
            e.key.as_str(),
            e.value.as_ref().map(|v| &v[..]),
            e.prev.as_ref().map(|v| &v[..]),
        ),
        (
            revision,
            key,
            value.map(str::as_bytes),
            prev.map(str::as_bytes)
        ),
        "watch event"
    );
}

/// Every successful write gets the next revision of one store-wide counter; failed writes
/// take none; reads report the revisions of a key's creation and last change.
pub async fn revisions_are_global_and_increasing(f: &dyn Factory) {
    let s = f.open().await;
    let r0 = s.current_revision().await.unwrap();
    let r1 = s.create("/registry/rev/a", b("1")).await.unwrap();
    let r2 = s.create("/registry/rev/b", b("2")).await.unwrap();
    let r3 = s.update("/registry/rev/a", r1, b("3")).await.unwrap();
    let (_, r4) = s.delete("/registry/rev/b", None).await.unwrap();
    assert!(
        r0 < r1 && r1 < r2 && r2 < r3 && r3 < r4,
        "revisions must increase: {r0} {r1} {r2} {r3} {r4}"
    );
    assert_eq!(s.current_revision().await.unwrap(), r4);

    assert!(s.create("/registry/rev/a", b("x")).await.is_err());
    assert!(s.update("/registry/rev/a", r1, b("x")).await.is_err());
    assert!(s.delete("/registry/rev/b", None).await.is_err());
    assert_eq!(
        s.current_revision().await.unwrap(),
        r4,
        "a refused write must not take a revision"
    );

    let a = s.get("/registry/rev/a").await.unwrap().expect("key a");
    assert_eq!(
        (
            a.key.as_str(),
            &a.value[..],
            a.create_revision,
            a.mod_revision
        ),
        ("/registry/rev/a", &b"3"[..], r1, r3)
    );
    assert_eq!(s.get("/registry/rev/b").await.unwrap(), None);
    let page = s.list("/registry/rev/", None, 0).await.unwrap();
    assert_eq!(page.revision, r4, "a list reports the revision it read at");
    assert_eq!(page.items, vec![a]);
}

/// `create` writes only when the key is absent; a deleted key can be created again.
pub async fn create_if_absent(f: &dyn Factory) {
    let s = f.open().await;
    let r1 = s.create("/registry/c/k", b("first")).await.unwrap();
    assert_eq!(
        s.create("/registry/c/k", b("second")).await,
        Err(StorageError::AlreadyExists("/registry/c/k".into()))
    );
    let kv = s.get("/registry/c/k").await.unwrap().unwrap();
    assert_eq!((&kv.value[..], kv.mod_revision), (&b"first"[..], r1));
    s.delete("/registry/c/k", Some(r1)).await.unwrap();
    let r2 = s.create("/registry/c/k", b("again")).await.unwrap();
    let kv = s.get("/registry/c/k").await.unwrap().unwrap();
    assert_eq!(
        (&kv.value[..], kv.create_revision, kv.mod_revision),
        (&b"again"[..], r2, r2)
    );
}

/// `update` is a compare-and-swap on the modification revision; a mismatch reports the
/// current revision, a missing key `NotFound` (an update never creates).
pub async fn update_compares_mod_revision(f: &dyn Factory) {
    let s = f.open().await;
    let r1 = s.create("/registry/u/k", b("v1")).await.unwrap();
    let r2 = s.update("/registry/u/k", r1, b("v2")).await.unwrap();
    assert_eq!(
        s.update("/registry/u/k", r1, b("stale")).await,
        Err(StorageError::Conflict {
            key: "/registry/u/k".into(),
            current: r2,
            expected: r1
        })
    );
    let kv = s.get("/registry/u/k").await.unwrap().unwrap();
    assert_eq!(
        (&kv.value[..], kv.create_revision, kv.mod_revision),
        (&b"v2"[..], r1, r2)
    );
    for expected in [0, r1, r2] {
        assert_eq!(
            s.update("/registry/u/missing", expected, b("x")).await,
            Err(StorageError::NotFound("/registry/u/missing".into())),
            "update of a missing key with expected revision {expected}"
        );
    }
    assert_eq!(s.get("/registry/u/missing").await.unwrap(), None);
}

/// `delete` honours a modification-revision precondition and returns what it removed.
pub async fn delete_with_precondition(f: &dyn Factory) {
    let s = f.open().await;
    let r1 = s.create("/registry/d/k", b("v1")).await.unwrap();
    let r2 = s.update("/registry/d/k", r1, b("v2")).await.unwrap();
    assert_eq!(
        s.delete("/registry/d/k", Some(r1)).await,
        Err(StorageError::Conflict {
            key: "/registry/d/k".into(),
            current: r2,
            expected: r1
        })
    );
    assert!(s.get("/registry/d/k").await.unwrap().is_some());
    let (gone, r3) = s.delete("/registry/d/k", Some(r2)).await.unwrap();
    assert!(r3 > r2);
    assert_eq!(
        (
            gone.key.as_str(),
            &gone.value[..],
            gone.create_revision,
            gone.mod_revision
        ),
        ("/registry/d/k", &b"v2"[..], r1, r2)
    );
    assert_eq!(s.get("/registry/d/k").await.unwrap(), None);
    for expected in [None, Some(r2), Some(0)] {
        assert_eq!(
            s.delete("/registry/d/k", expected).await,
            Err(StorageError::NotFound("/registry/d/k".into())),
            "delete of a missing key with precondition {expected:?}"
        );
    }
    let r4 = s.create("/registry/d/other", b("o")).await.unwrap();
    let (gone, r5) = s.delete("/registry/d/other", None).await.unwrap();
    assert_eq!((&gone.value[..], gone.mod_revision), (&b"o"[..], r4));
    assert_eq!(s.current_revision().await.unwrap(), r5);
}

/// Prefix listing: key order, pages of `limit` with a start key, the count of what
/// follows, and a prefix never matching a longer sibling (`/a/b/` vs `/a/bc/`).
pub async fn list_prefix_in_pages(f: &dyn Factory) {
    let s = f.open().await;
    // Written out of order; "10" sorts before "2".
    for name in ["3", "10", "1", "2", "4"] {
        s.create(&format!("/registry/l/a/b/{name}"), b(name))
            .await
            .unwrap();
    }
    for key in [
        "/registry/l/a/bc/x",
        "/registry/l/a/b",
        "/registry/l/a/a/y",
        "/registry/l/a/b0",
    ] {
        s.create(key, b("sibling")).await.unwrap();
    }
    let last = s.current_revision().await.unwrap();
    let names = |page: &super::ListPage| -> Vec<String> {
        page.items
            .iter()
            .map(|kv| kv.key.trim_start_matches("/registry/l/a/b/").to_string())
            .collect()
    };

    let all = s.list("/registry/l/a/b/", None, 0).await.unwrap();
    assert_eq!(names(&all), ["1", "10", "2", "3", "4"]);
    assert_eq!((all.remaining, all.revision), (0, last));
    assert!(all
        .items
        .iter()
        .all(|kv| kv.value == kv.key.rsplit('/').next().unwrap_or_default()));

    let p1 = s.list("/registry/l/a/b/", None, 2).await.unwrap();
    assert_eq!(
        (names(&p1), p1.remaining),
        (vec!["1".into(), "10".into()], 3)
    );
    let p2 = s
        .list("/registry/l/a/b/", Some("/registry/l/a/b/10"), 2)
        .await
        .unwrap();
    assert_eq!(
        (names(&p2), p2.remaining),
        (vec!["2".into(), "3".into()], 1)
    );
    let p3 = s
        .list("/registry/l/a/b/", Some("/registry/l/a/b/3"), 2)
        .await
        .unwrap();
    assert_eq!((names(&p3), p3.remaining), (vec!["4".into()], 0));
    let end = s
        .list("/registry/l/a/b/", Some("/registry/l/a/b/4"), 2)
        .await
        .unwrap();
    assert_eq!((end.items.len(), end.remaining), (0, 0));
    // A start key that no longer exists still continues after it.
    let gap = s
        .list("/registry/l/a/b/", Some("/registry/l/a/b/15"), 0)
        .await
        .unwrap();
    assert_eq!(names(&gap), ["2", "3", "4"]);

    let siblings = s.list("/registry/l/a/bc/", None, 0).await.unwrap();
    assert_eq!(siblings.items.len(), 1);
    assert_eq!(siblings.items[0].key, "/registry/l/a/bc/x");
    let none = s.list("/registry/l/zzz/", None, 0).await.unwrap();
    assert_eq!((none.items.len(), none.remaining), (0, 0));
    assert_eq!(none.revision, last);
}

/// A watch from a revision replays the history after it (with previous values), then
/// delivers live changes, in revision order, only under its prefix.
pub async fn watch_replays_then_follows(f: &dyn Factory) {
    let s = f.open().await;
    let r0 = s.current_revision().await.unwrap();
    let r1 = s.create("/registry/w/a/k", b("v1")).await.unwrap();
    let r2 = s.update("/registry/w/a/k", r1, b("v2")).await.unwrap();
    s.create("/registry/w/ab/k", b("sibling")).await.unwrap();
    let (_, r3) = s.delete("/registry/w/a/k", Some(r2)).await.unwrap();

    let mut w = s.watch("/registry/w/a/", r0).await.unwrap();
    let e = next_event(&mut w, "backlog create").await;
    assert_event(&e, r1, "/registry/w/a/k", Some("v1"), None);
    let e = next_event(&mut w, "backlog update").await;
    assert_event(&e, r2, "/registry/w/a/k", Some("v2"), Some("v1"));
    let e = next_event(&mut w, "backlog delete").await;
    assert_event(&e, r3, "/registry/w/a/k", None, Some("v2"));

    let r4 = s.create("/registry/w/a/live", b("l1")).await.unwrap();
    s.create("/registry/w/ab/live", b("sibling")).await.unwrap();
    let r5 = s.update("/registry/w/a/live", r4, b("l2")).await.unwrap();
    let e = next_event(&mut w, "live create").await;
    assert_event(&e, r4, "/registry/w/a/live", Some("l1"), None);
    let e = next_event(&mut w, "live update").await;
    assert_event(&e, r5, "/registry/w/a/live", Some("l2"), Some("l1"));
    assert_quiet(&mut w, "after the last change").await;

    // From the middle of the history: only what came after.
    let mut mid = s.watch("/registry/w/a/", r2).await.unwrap();
    let e = next_event(&mut mid, "watch from the middle").await;
    assert_event(&e, r3, "/registry/w/a/k", None, Some("v2"));
    // From now: nothing old, then the next change.
    let now = s.current_revision().await.unwrap();
    let mut fresh = s.watch("/registry/w/a/", now).await.unwrap();
    assert_quiet(&mut fresh, "watch from the current revision").await;
    let (_, r6) = s.delete("/registry/w/a/live", None).await.unwrap();
    let e = next_event(&mut fresh, "live delete").await;
    assert_event(&e, r6, "/registry/w/a/live", None, Some("l2"));
}

/// After compaction, a watch from before the compacted revision fails with `Expired`;
/// one from the compaction point on still works.
pub async fn watch_of_compacted_history_expires(f: &dyn Factory) {
    let s = f.open().await;
    let r1 = s.create("/registry/x/k", b("v1")).await.unwrap();
    let r2 = s.update("/registry/x/k", r1, b("v2")).await.unwrap();
    let r3 = s.update("/registry/x/k", r2, b("v3")).await.unwrap();
    let r4 = s.update("/registry/x/k", r3, b("v4")).await.unwrap();
    s.compact(r3).await.unwrap();
    // Compacting again at or below the compaction point changes nothing.
    s.compact(r2).await.unwrap();
    for after in [r1 - 1, r1] {
        match s.watch("/registry/x/", after).await {
            Err(StorageError::Expired { requested, .. }) => assert_eq!(requested, after),
            Err(e) => panic!("watch from {after} after compacting at {r3}: {e}"),
            Ok(_) => panic!("watch from {after} after compacting at {r3} must fail"),
        }
    }
    let mut w = s.watch("/registry/x/", r3 - 1).await.unwrap();
    assert_eq!(next_event(&mut w, "compaction point").await.revision, r3);
    let e = next_event(&mut w, "after the compaction point").await;
    assert_event(&e, r4, "/registry/x/k", Some("v4"), Some("v3"));
    let r5 = s.update("/registry/x/k", r4, b("v5")).await.unwrap();
    assert_eq!(next_event(&mut w, "live").await.revision, r5);
    assert!(
        s.compact(r5 + 100).await.is_err(),
        "compacting beyond the current revision must fail"
    );
    // Data survives compaction.
    let kv = s.get("/registry/x/k").await.unwrap().unwrap();
    assert_eq!((&kv.value[..], kv.create_revision), (&b"v5"[..], r1));
}

/// Concurrent compare-and-swap updates of one key: exactly one wins, the others see a
/// `Conflict` naming the winner's revision.
pub async fn concurrent_updates_one_wins(f: &dyn Factory) {
    let s = f.open().await;
    for round in 0..5 {
        let key = format!("/registry/race/cas/{round}");
        let r = s.create(&key, b("0")).await.unwrap();
        let tasks: Vec<_> = (0..8)
            .map(|i| {
                let (s, key) = (s.clone(), key.clone());
                tokio::spawn(async move { s.update(&key, r, b(&i.to_string())).await })
            })
            .collect();
        let mut wins = Vec::new();
        let mut conflicts = Vec::new();
        for t in tasks {
            match t.await.expect("task") {
                Ok(rev) => wins.push(rev),
                Err(StorageError::Conflict {
                    current, expected, ..
                }) => {
                    assert_eq!(expected, r);
                    conflicts.push(current);
                }
                Err(e) => panic!("unexpected update error: {e}"),
            }
        }
        assert_eq!(wins.len(), 1, "exactly one CAS update wins: {wins:?}");
        assert!(
            conflicts.iter().all(|c| *c == wins[0]),
            "losers see the winner's revision"
        );
        let kv = s.get(&key).await.unwrap().unwrap();
        assert_eq!(kv.mod_revision, wins[0]);
    }
}

/// Concurrent creates of one key: exactly one wins.
pub async fn concurrent_creates_one_wins(f: &dyn Factory) {
    let s = f.open().await;
    for round in 0..5 {
        let key = format!("/registry/race/create/{round}");
        let tasks: Vec<_> = (0..8)
            .map(|i| {
                let (s, key) = (s.clone(), key.clone());
                tokio::spawn(async move { (i, s.create(&key, b(&i.to_string())).await) })
            })
            .collect();
        let mut winners = Vec::new();
        for t in tasks {
            match t.await.expect("task") {
                (i, Ok(rev)) => winners.push((i, rev)),
                (_, Err(StorageError::AlreadyExists(k))) => assert_eq!(k, key),
                (_, Err(e)) => panic!("unexpected create error: {e}"),
            }
        }
        assert_eq!(winners.len(), 1, "exactly one create wins: {winners:?}");
        let kv = s.get(&key).await.unwrap().unwrap();
        assert_eq!(
            (kv.value, kv.create_revision),
            (b(&winners[0].0.to_string()), winners[0].1)
        );
    }
}

/// A guarded delete racing a guarded update of the same revision: exactly one applies,
/// and the loser's error and the final state agree with the winner.
pub async fn delete_races_update(f: &dyn Factory) {
    let s = f.open().await;
    for round in 0..8 {
        let key = format!("/registry/race/del/{round}");
        let r = s.create(&key, b("v0")).await.unwrap();
        let (d, u) = {
            let (s1, k1) = (s.clone(), key.clone());
            let (s2, k2) = (s.clone(), key.clone());
            let d = tokio::spawn(async move { s1.delete(&k1, Some(r)).await });
            let u = tokio::spawn(async move { s2.update(&k2, r, b("v1")).await });
            (d.await.expect("task"), u.await.expect("task"))
        };
        match (d, u) {
            (Ok((gone, _)), Err(StorageError::NotFound(_))) => {
                assert_eq!(gone.value, b("v0"));
                assert_eq!(s.get(&key).await.unwrap(), None);
            }
            (Err(StorageError::Conflict { current, .. }), Ok(rev)) => {
                assert_eq!(current, rev);
                let kv = s.get(&key).await.unwrap().unwrap();
                assert_eq!((kv.value, kv.mod_revision), (b("v1"), rev));
            }
            other => panic!("delete vs update: exactly one must win, got {other:?}"),
        }
    }
}

/// Concurrent writes to many keys take distinct revisions, and a watch sees every one
/// of them once, in increasing order.
pub async fn concurrent_writes_are_ordered_for_watchers(f: &dyn Factory) {
    let s = f.open().await;
    let start = s.current_revision().await.unwrap();
    let mut w = s.watch("/registry/many/", start).await.unwrap();
    let tasks: Vec<_> = (0..32)
        .map(|i| {
            let s = s.clone();
            tokio::spawn(async move {
                let key = format!("/registry/many/{i}");
                let r = s.create(&key, b("a")).await?;
                s.update(&key, r, b("b")).await
            })
        })
        .collect();
    let mut revs = BTreeSet::new();
    for t in tasks {
        revs.insert(t.await.expect("task").expect("write"));
    }
    let mut last = start;
    for n in 0..64 {
        let e = next_event(&mut w, &format!("event {n} of 64")).await;
        assert!(e.revision > last, "watch events out of order");
        last = e.revision;
        revs.remove(&e.revision);
    }
    assert!(
        revs.is_empty(),
        "every update must be seen by the watch: {revs:?} missing"
    );
}

/// A watch reports progress: after a change under another prefix, asking for progress
/// brings word that every change up to that revision was delivered (what lets a watch
/// cache answer consistent reads).
pub async fn watch_reports_progress(f: &dyn Factory) {
    let s = f.open().await;
    let start = s.current_revision().await.unwrap();
    let mut w = s.watch("/registry/quiet/", start).await.unwrap();
    let elsewhere = s.create("/registry/busy/k", b("v")).await.unwrap();
    if s.reports_progress() {
        await_progress(&mut w, elsewhere).await;
    } else {
        // A backend that cannot report progress in order (an etcd before 3.4.31 or
        // 3.5.13) must then never claim any.
        w.request_progress();
        if let Ok(Some(item)) = tokio::time::timeout(QUIET_WAIT, w.recv_item()).await {
            panic!("progress was not to be reported, got {item:?}");
        }
    }
    // Changes under the prefix still arrive, after the progress.
    let mine = s.create("/registry/quiet/k", b("v")).await.unwrap();
    assert_eq!(
        next_event(&mut w, "a change after progress").await.revision,
        mine
    );
}

/// A watch that starts behind the store's revision, on a prefix where nothing changed
/// since, can tell that it is current with no further write: a watch cache made for a
/// new resource on a quiet store must be able to answer a consistent read.
pub async fn watch_started_behind_reports_progress(f: &dyn Factory) {
    let s = f.open().await;
    let start = s.current_revision().await.unwrap();
    let elsewhere = s.create("/registry/busy/k", b("v")).await.unwrap();
    let mut w = s.watch("/registry/quiet/", start).await.unwrap();
    if !s.reports_progress() {
        return;
    }
    await_progress(&mut w, elsewhere).await;
}

/// Asks `w` (a watch of a quiet prefix) for progress until it reports `revision` or later.
async fn await_progress(w: &mut EventReceiver, revision: u64) {
    let deadline = tokio::time::Instant::now() + EVENT_WAIT;
    loop {
        w.request_progress();
        let item = tokio::time::timeout(Duration::from_millis(200), w.recv_item()).await;
        match item {
            Ok(Some(Ok(WatchItem::Progress(r)))) if r >= revision => return,
            Ok(Some(Ok(WatchItem::Progress(_)))) | Err(_) => {}
            Ok(other) => panic!("the watch of a quiet prefix delivered {other:?}"),
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "no progress to revision {revision} within {EVENT_WAIT:?}"
        );
    }
}

/// A list at a past revision sees the keys as they were then (values, revisions, keys
/// deleted since, none created since), in pages; before compaction only.
pub async fn list_at_a_past_revision(f: &dyn Factory) {
    let s = f.open().await;
    let ra = s.create("/registry/p/a", b("a1")).await.unwrap();
    s.create("/registry/p/b", b("b1")).await.unwrap();
    s.create("/registry/p/c", b("c1")).await.unwrap();
    let then = s.current_revision().await.unwrap();
    s.update("/registry/p/a", ra, b("a2")).await.unwrap();
    s.delete("/registry/p/b", None).await.unwrap();
    s.create("/registry/p/d", b("d1")).await.unwrap();

    let past = s.list_at("/registry/p/", None, 0, then).await.unwrap();
    let got: Vec<(&str, &[u8], u64)> = past
        .items
        .iter()
        .map(|kv| (kv.key.as_str(), &kv.value[..], kv.mod_revision))
        .collect();
    assert_eq!(
        got,
        [
            ("/registry/p/a", &b"a1"[..], ra),
            ("/registry/p/b", &b"b1"[..], ra + 1),
            ("/registry/p/c", &b"c1"[..], ra + 2)
        ]
    );
    assert_eq!(past.revision, then);

    let p1 = s.list_at("/registry/p/", None, 2, then).await.unwrap();
    assert_eq!((p1.items.len(), p1.remaining), (2, 1));
    let p2 = s
        .list_at("/registry/p/", Some("/registry/p/b"), 2, then)
        .await
        .unwrap();
    assert_eq!(
        (p2.items[0].key.as_str(), p2.remaining),
        ("/registry/p/c", 0)
    );

    let now = s.current_revision().await.unwrap();
    s.compact(now).await.unwrap();
    assert!(matches!(
        s.list_at("/registry/p/", None, 0, then).await,
        Err(StorageError::Expired { .. })
    ));
}

/// Runs every conformance check as its own `#[tokio::test]`; `$factory` is an expression
/// (it may `.await`) giving something that implements [`Factory`].
macro_rules! conformance_tests {
    ($factory:expr) => {
        conformance_tests!(@each $factory;
            revisions_are_global_and_increasing,
            create_if_absent,
            update_compares_mod_revision,
            delete_with_precondition,
            list_prefix_in_pages,
            list_at_a_past_revision,
            watch_replays_then_follows,
            watch_of_compacted_history_expires,
            concurrent_updates_one_wins,
            concurrent_creates_one_wins,
            delete_races_update,
            concurrent_writes_are_ordered_for_watchers,
            watch_reports_progress,
            watch_started_behind_reports_progress
        );
    };
    (@each $factory:expr; $($name:ident),*) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $name() {
                let factory = $factory;
                $crate::storage::conformance::$name(&factory).await;
            }
        )*
    };
}

mod embedded {
    use super::EmbeddedFactory;

    conformance_tests!(EmbeddedFactory::new());
}

#[cfg(feature = "etcd")]
pub use etcd_harness::{EtcdFactory, EtcdServer};

#[cfg(feature = "etcd")]
mod etcd_harness {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    use async_trait::async_trait;
    use etcd_launcher::{Builder, Etcd};

    use super::Factory;
    use crate::storage::etcd::EtcdStorage;
    use crate::storage::{EtcdConfig, Storage};

    /// A real etcd (started by the `etcd-launcher` crate) and the storage clients that
    /// reach it; killed on drop.
    pub struct EtcdServer {
        etcd: Etcd,
    }

    impl EtcdServer {
        /// Starts etcd and waits until it answers; panics (with etcd's log) otherwise.
        pub async fn start() -> EtcdServer {
            Self::launch(Etcd::builder()).await
        }

        /// Starts etcd serving clients over TLS and requiring client certificates.
        pub async fn start_tls() -> EtcdServer {
            Self::launch(Etcd::builder().tls()).await
        }

        /// The launcher waits with blocking sleeps: off the runtime's threads.
        async fn launch(builder: Builder) -> EtcdServer {
            match tokio::task::spawn_blocking(move || builder.start()).await {
                Ok(etcd) => EtcdServer { etcd },
                Err(e) => std::panic::resume_unwind(e.into_panic()),
            }
        }

        /// The client URL, e.g. `http://127.0.0.1:40123`.
        pub fn endpoint(&self) -> String {
            self.etcd.endpoint()
        }

        /// A storage client whose keys live under `prefix`.
        pub async fn client(&self, prefix: &str) -> EtcdStorage {
            EtcdStorage::connect(&self.config(prefix))
                .await
                .expect("creating an etcd client")
        }

        /// The `--etcd-*` settings that reach this etcd (with its certificates, if any).
        pub fn config(&self, prefix: &str) -> EtcdConfig {
            let tls = self.etcd.tls();
            EtcdConfig {
                servers: vec![self.etcd.endpoint()],
                prefix: prefix.to_string(),
                ca_file: tls.map(|t| t.ca.clone()),
                cert_file: tls.map(|t| t.client_cert.clone()),
                key_file: tls.map(|t| t.client_key.clone()),
                ..EtcdConfig::default()
            }
        }

        /// Stops etcd now (the data directory stays until drop).
        pub fn kill(&mut self) {
            self.etcd.kill();
        }
    }

    /// Stores on one etcd, each under its own `--etcd-prefix`.
    pub struct EtcdFactory {
        /// The etcd the stores talk to.
        pub server: EtcdServer,
        next: AtomicUsize,
    }

    impl EtcdFactory {
        /// Starts a fresh etcd for one test.
        pub async fn start() -> Self {
            EtcdFactory {
                server: EtcdServer::start().await,
                next: AtomicUsize::new(0),
            }
        }
    }

    #[async_trait]
    impl Factory for EtcdFactory {
        async fn open(&self) -> Arc<dyn Storage> {
            let n = self.next.fetch_add(1, Ordering::SeqCst);
            Arc::new(self.server.client(&format!("/conformance-{n}")).await)
        }
    }
}

#[cfg(feature = "etcd")]
mod etcd {
    use super::EtcdFactory;

    conformance_tests!(EtcdFactory::start().await);

    use std::time::{Duration, Instant};

    use bytes::Bytes;
    use etcd_client::Client;

    use crate::storage::etcd::EtcdStorage;
    use crate::storage::{EtcdConfig, Storage};

    /// `--etcd-prefix` replaces the `/registry` root; values are stored as given.
    #[tokio::test]
    async fn keys_live_under_the_etcd_prefix() {
        let f = EtcdFactory::start().await;
        let tenant = f.server.client("/tenant-a/").await;
        let default = f.server.client("/registry").await;
        tenant
            .create(
                "/registry/configmaps/ns/x",
                Bytes::from_static(b"{\"a\":1}"),
            )
            .await
            .unwrap();
        let mut raw = Client::connect([f.server.endpoint()], None).await.unwrap();
        let got = raw.get("/tenant-a/configmaps/ns/x", None).await.unwrap();
        assert_eq!(got.kvs().len(), 1);
        assert_eq!(got.kvs()[0].value(), b"{\"a\":1}");
        assert_eq!(
            default.get("/registry/configmaps/ns/x").await.unwrap(),
            None
        );
        default
            .create("/registry/configmaps/ns/y", Bytes::new())
            .await
            .unwrap();
        let got = raw.get("/registry/configmaps/ns/y", None).await.unwrap();
        assert_eq!(got.kvs().len(), 1);
        assert_eq!(
            tenant
                .list("/registry/", None, 0)
                .await
                .unwrap()
                .items
                .len(),
            1
        );
        assert!(matches!(
            tenant.get("/elsewhere/k").await,
            Err(crate::storage::StorageError::Internal(_))
        ));
    }

    /// `--etcd-cafile`, `--etcd-certfile` and `--etcd-keyfile`: TLS with a client
    /// certificate works; without the client certificate etcd refuses the client.
    #[tokio::test]
    async fn tls_with_client_certificates() {
        let server = crate::storage::conformance::EtcdServer::start_tls().await;
        let s = server.client("/registry").await;
        let r = s
            .create("/registry/tls/k", Bytes::from_static(b"v"))
            .await
            .unwrap();
        let mut w = s.watch("/registry/tls/", r - 1).await.unwrap();
        let e = tokio::time::timeout(Duration::from_secs(10), w.recv()).await;
        assert!(matches!(e, Ok(Some(Ok(ref e))) if e.revision == r), "{e:?}");
        let anonymous = EtcdStorage::connect(&EtcdConfig {
            cert_file: None,
            key_file: None,
            ..server.config("/registry")
        })
        .await
        .unwrap();
        assert!(anonymous.health().await.is_err());
    }

    /// An unreachable etcd fails health checks and requests quickly instead of hanging.
    #[tokio::test]
    async fn unreachable_etcd_fails_fast() {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map(|a| a.port())
            .unwrap();
        let s = EtcdStorage::connect(&EtcdConfig {
            servers: vec![format!("http://127.0.0.1:{port}")],
            prefix: "/registry".into(),
            ..EtcdConfig::default()
        })
        .await
        .unwrap();
        let started = Instant::now();
        assert!(s.health().await.is_err());
        assert!(
            started.elapsed() < Duration::from_secs(4),
            "health took {:?}",
            started.elapsed()
        );
    }

    /// A watch whose etcd stops (and stays away) ends with an error rather than silence.
    #[tokio::test]
    async fn stopped_etcd_ends_watches_with_an_error() {
        let mut f = EtcdFactory::start().await;
        let s = f.server.client("/registry").await;
        let mut w = s.watch("/registry/w/", 0).await.unwrap();
        f.server.kill();
        let got = tokio::time::timeout(Duration::from_secs(20), w.recv()).await;
        assert!(
            matches!(got, Ok(Some(Err(_)))),
            "watch after etcd stopped: {got:?}"
        );
    }
}
