//! Watch as controllers use it: a kube-runtime watcher feeding a reflector store stays in
//! sync through creates, updates, deletes, selector changes and a server restart (on the
//! embedded store the watch from the old resourceVersion is refused with 410 and the
//! watcher re-lists; on etcd the history survives the restart and the watch resumes).

use std::sync::Arc;
use std::time::{Duration, Instant};

use apiserver_tests::TestServer;
use futures_util::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DeleteParams, ObjectMeta, Patch, PatchParams, PostParams};
use kube::runtime::reflector::{self, Store};
use kube::runtime::{watcher, WatchStreamExt};

fn cm(name: &str, app: &str, value: &str) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.into()),
            labels: Some([("app".to_string(), app.to_string())].into()),
            ..Default::default()
        },
        data: Some([("v".to_string(), value.to_string())].into()),
        ..Default::default()
    }
}

/// The store's view: sorted `name=value` pairs.
fn view(store: &Store<ConfigMap>) -> Vec<String> {
    let mut v: Vec<String> = store
        .state()
        .iter()
        .map(|c: &Arc<ConfigMap>| {
            format!(
                "{}={}",
                c.metadata.name.clone().unwrap_or_default(),
                c.data
                    .as_ref()
                    .and_then(|d| d.get("v"))
                    .cloned()
                    .unwrap_or_default()
            )
        })
        .collect();
    v.sort();
    v
}

/// A reflector over a backed-off watcher of `app=x` ConfigMaps, as a controller runs one,
/// and the task driving it (errors such as a restart are retried by the backoff).
fn reflect_app_x(api: &Api<ConfigMap>) -> (Store<ConfigMap>, tokio::task::JoinHandle<()>) {
    let (reader, writer) = reflector::store();
    let stream = reflector::reflector(
        writer,
        watcher(api.clone(), watcher::Config::default().labels("app=x")).default_backoff(),
    );
    let driver = tokio::spawn(async move {
        futures_util::pin_mut!(stream);
        while stream.next().await.is_some() {}
    });
    (reader, driver)
}

async fn eventually(store: &Store<ConfigMap>, want: &[&str], what: &str) {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let got = view(store);
        if got == want {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{what}: the reflector shows {got:?}, want {want:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn reflector_stays_in_sync_through_changes_selectors_and_a_restart() {
    let mut server = TestServer::start();
    let client = server.client().await;
    let api: Api<ConfigMap> = Api::default_namespaced(client.clone());
    let pp = PostParams::default();
    api.create(&pp, &cm("a", "x", "1")).await.unwrap();

    let (reader, driver) = reflect_app_x(&api);
    eventually(&reader, &["a=1"], "initial list").await;

    api.create(&pp, &cm("b", "x", "2")).await.unwrap();
    api.create(&pp, &cm("c", "y", "3")).await.unwrap();
    eventually(
        &reader,
        &["a=1", "b=2"],
        "create (c does not match the selector)",
    )
    .await;

    api.patch(
        "a",
        &PatchParams::default(),
        &Patch::Merge(serde_json::json!({ "data": { "v": "10" } })),
    )
    .await
    .unwrap();
    eventually(&reader, &["a=10", "b=2"], "update").await;

    api.delete("b", &DeleteParams::default()).await.unwrap();
    eventually(&reader, &["a=10"], "delete").await;

    // Selector transitions: c starts matching (ADDED), a stops matching (DELETED).
    api.patch(
        "c",
        &PatchParams::default(),
        &Patch::Merge(serde_json::json!({ "metadata": { "labels": { "app": "x" } } })),
    )
    .await
    .unwrap();
    eventually(&reader, &["a=10", "c=3"], "an object that starts matching").await;
    api.patch(
        "a",
        &PatchParams::default(),
        &Patch::Merge(serde_json::json!({ "metadata": { "labels": { "app": "y" } } })),
    )
    .await
    .unwrap();
    eventually(&reader, &["c=3"], "an object that stops matching").await;

    // A restart of the server: on the embedded store the watch history is lost, so the
    // watcher's resourceVersion is now too old, it gets 410, re-lists and carries on.
    server.restart();
    let api: Api<ConfigMap> = Api::default_namespaced(server.client().await);
    api.create(&pp, &cm("d", "x", "4")).await.unwrap();
    api.patch(
        "c",
        &PatchParams::default(),
        &Patch::Merge(serde_json::json!({ "data": { "v": "30" } })),
    )
    .await
    .unwrap();
    eventually(&reader, &["c=30", "d=4"], "after a server restart").await;

    driver.abort();
}

/// 1,000 concurrent watchers on one collection each see every event exactly once, in
/// order: each reads until a final marker object, so a duplicate or stray event before
/// it would show.
#[tokio::test(flavor = "multi_thread")]
async fn a_thousand_watchers_each_see_every_event_once_in_order() {
    const WATCHERS: usize = 1000;
    const EVENTS: usize = 20;
    const END_MARKER: &str = "end";
    let server = TestServer::start();
    let client = server.client().await;
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let start_rv = api
        .list_metadata(&Default::default())
        .await
        .unwrap()
        .metadata
        .resource_version
        .unwrap();

    let mut watchers = Vec::with_capacity(WATCHERS);
    let (ready_tx, mut ready_rx) = tokio::sync::mpsc::channel::<()>(WATCHERS);
    for _ in 0..WATCHERS {
        let api = api.clone();
        let rv = start_rv.clone();
        let ready = ready_tx.clone();
        watchers.push(tokio::spawn(async move {
            let params = kube::api::WatchParams::default().timeout(60);
            let stream = api.watch(&params, &rv).await.expect("opening a watch");
            let _ = ready.send(()).await;
            futures_util::pin_mut!(stream);
            let mut seen = Vec::new();
            while seen.last().map(String::as_str) != Some(END_MARKER) {
                match stream.next().await {
                    Some(Ok(kube::api::WatchEvent::Added(cm))) => {
                        seen.push(cm.metadata.name.unwrap_or_default())
                    }
                    Some(Ok(other)) => panic!("unexpected event {other:?}"),
                    Some(Err(e)) => panic!("watch failed: {e}"),
                    None => break,
                }
            }
            seen
        }));
    }
    for _ in 0..WATCHERS {
        ready_rx.recv().await.expect("every watcher opens");
    }
    let pp = PostParams::default();
    for i in 0..EVENTS {
        api.create(&pp, &cm(&format!("e{i:02}"), "x", "v"))
            .await
            .unwrap();
    }
    api.create(&pp, &cm(END_MARKER, "x", "v")).await.unwrap();
    let want: Vec<String> = (0..EVENTS)
        .map(|i| format!("e{i:02}"))
        .chain([END_MARKER.to_string()])
        .collect();
    for (n, w) in watchers.into_iter().enumerate() {
        let seen = tokio::time::timeout(Duration::from_secs(60), w)
            .await
            .expect("watchers finish")
            .expect("watcher task");
        assert_eq!(seen, want, "watcher {n} saw {seen:?}");
    }
}

/// A consistent read (no resourceVersion) reflects every write acknowledged before it,
/// including writes to other resources: the list's resourceVersion is at least theirs
/// (what a client needs to watch on from it without missing anything).
#[tokio::test(flavor = "multi_thread")]
async fn consistent_reads_see_every_acknowledged_write() {
    use k8s_openapi::api::core::v1::Secret;
    // Counts every ConfigMap of the namespace.
    let server = TestServer::start_with_flags(&[apiserver_tests::WITHOUT_ROOT_CA_PUBLISHER]);
    let client = server.client().await;
    let cms: Api<ConfigMap> = Api::default_namespaced(client.clone());
    let secrets: Api<Secret> = Api::default_namespaced(client.clone());
    let pp = PostParams::default();
    for i in 0..20 {
        let created = cms
            .create(&pp, &cm(&format!("c{i}"), "x", "1"))
            .await
            .unwrap();
        let got = cms.get(&format!("c{i}")).await.unwrap();
        assert_eq!(
            got.metadata.resource_version, created.metadata.resource_version,
            "a GET right after the create"
        );
        let secret = Secret {
            metadata: ObjectMeta {
                name: Some(format!("s{i}")),
                ..Default::default()
            },
            ..Default::default()
        };
        let s = secrets.create(&pp, &secret).await.unwrap();
        let secret_rv: u64 = s.metadata.resource_version.unwrap().parse().unwrap();
        let list = cms.list(&Default::default()).await.unwrap();
        let list_rv: u64 = list.metadata.resource_version.unwrap().parse().unwrap();
        assert!(
            list_rv >= secret_rv,
            "a ConfigMap list after a Secret write at {secret_rv} is at {list_rv}"
        );
        assert_eq!(list.items.len(), i + 1);
    }
    // resourceVersion=0 may be served from any recent state; once caught up it has all.
    let any = cms
        .list(&kube::api::ListParams::default().match_any())
        .await
        .unwrap();
    assert_eq!(any.items.len(), 20);
}

/// A watch from a resourceVersion more than a thousand writes back (beyond what the watch
/// cache keeps) still gets every change after it, once and in order; a recent one gets
/// exactly the changes after it.
#[tokio::test(flavor = "multi_thread")]
async fn watches_from_far_back_and_from_recent_revisions_get_every_change() {
    const WRITES: usize = 1_100;
    let server = TestServer::start();
    let api: Api<ConfigMap> = Api::default_namespaced(server.client().await);
    let start_rv = api
        .list_metadata(&Default::default())
        .await
        .unwrap()
        .metadata
        .resource_version
        .unwrap();
    let mut revisions = Vec::with_capacity(WRITES);
    let pp = PostParams::default();
    for i in 0..WRITES {
        let created = api
            .create(&pp, &cm(&format!("w{i:04}"), "x", "v"))
            .await
            .unwrap();
        revisions.push(created.metadata.resource_version.unwrap());
    }

    async fn names_after(api: &Api<ConfigMap>, rv: &str, count: usize) -> Vec<String> {
        let params = kube::api::WatchParams::default().timeout(60);
        let stream = api.watch(&params, rv).await.expect("opening a watch");
        futures_util::pin_mut!(stream);
        let mut seen = Vec::new();
        while seen.len() < count {
            match tokio::time::timeout(Duration::from_secs(30), stream.next()).await {
                Ok(Some(Ok(kube::api::WatchEvent::Added(cm)))) => {
                    seen.push(cm.metadata.name.unwrap_or_default())
                }
                other => panic!("watch from {rv}: after {} events got {other:?}", seen.len()),
            }
        }
        seen
    }
    let all: Vec<String> = (0..WRITES).map(|i| format!("w{i:04}")).collect();
    assert_eq!(names_after(&api, &start_rv, WRITES).await, all);
    let recent = &revisions[WRITES - 51];
    assert_eq!(names_after(&api, recent, 50).await, all[WRITES - 50..]);
}

/// With `--watch-cache=false` every read and watch is served from storage (on etcd: from
/// etcd itself), and a controller's view is the same: a reflector follows creates,
/// updates, label changes and deletes; selected, paged and consistent lists answer as
/// with the cache.
#[tokio::test(flavor = "multi_thread")]
async fn without_the_watch_cache_reads_and_watches_come_from_storage_and_agree() {
    let server = TestServer::start_with_flags(&[
        "--watch-cache=false",
        apiserver_tests::WITHOUT_ROOT_CA_PUBLISHER,
    ]);
    let client = server.client().await;
    let api: Api<ConfigMap> = Api::default_namespaced(client.clone());
    let pp = PostParams::default();
    api.create(&pp, &cm("a", "x", "1")).await.unwrap();

    let (reader, driver) = reflect_app_x(&api);
    eventually(&reader, &["a=1"], "the initial list").await;
    api.create(&pp, &cm("b", "x", "2")).await.unwrap();
    api.create(&pp, &cm("other", "y", "0")).await.unwrap();
    api.patch(
        "a",
        &PatchParams::default(),
        &Patch::Merge(serde_json::json!({ "data": { "v": "10" } })),
    )
    .await
    .unwrap();
    eventually(&reader, &["a=10", "b=2"], "after a create and an update").await;
    api.patch(
        "other",
        &PatchParams::default(),
        &Patch::Merge(serde_json::json!({ "metadata": { "labels": { "app": "x" } } })),
    )
    .await
    .unwrap();
    api.delete("b", &DeleteParams::default()).await.unwrap();
    eventually(
        &reader,
        &["a=10", "other=0"],
        "after a relabel and a delete",
    )
    .await;
    driver.abort();

    // Reads answer as with the cache: a consistent GET sees the last write, a selected
    // list only matches, pages chain to the whole list.
    let a = api.get("a").await.unwrap();
    assert_eq!(a.data.unwrap()["v"], "10");
    let selected = api
        .list(&kube::api::ListParams::default().labels("app=x"))
        .await
        .unwrap();
    let mut names: Vec<String> = selected
        .items
        .iter()
        .map(|c| c.metadata.name.clone().unwrap())
        .collect();
    names.sort();
    assert_eq!(names, ["a", "other"]);
    let first = api
        .list(&kube::api::ListParams::default().limit(1))
        .await
        .unwrap();
    assert_eq!(first.items.len(), 1);
    let token = first.metadata.continue_.clone().expect("a continue token");
    let rest = api
        .list(
            &kube::api::ListParams::default()
                .limit(10)
                .continue_token(&token),
        )
        .await
        .unwrap();
    assert_eq!(first.items.len() + rest.items.len(), 2);
    assert_eq!(rest.metadata.continue_.as_deref().unwrap_or(""), "");
}
