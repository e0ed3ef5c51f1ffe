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

    let (reader, writer) = reflector::store();
    let stream = reflector::reflector(
        writer,
        watcher(api.clone(), watcher::Config::default().labels("app=x")).default_backoff(),
    )
    .applied_objects();
    let driver = tokio::spawn(async move {
        futures_util::pin_mut!(stream);
        // Errors (the restart) are retried by the backoff; keep consuming.
        while stream.next().await.is_some() {}
    });
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
/// order.
#[tokio::test(flavor = "multi_thread")]
async fn a_thousand_watchers_each_see_every_event_once_in_order() {
    const WATCHERS: usize = 1000;
    const EVENTS: usize = 20;
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
            while seen.len() < EVENTS {
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
    let want: Vec<String> = (0..EVENTS).map(|i| format!("e{i:02}")).collect();
    for (n, w) in watchers.into_iter().enumerate() {
        let seen = tokio::time::timeout(Duration::from_secs(60), w)
            .await
            .expect("watchers finish")
            .expect("watcher task");
        assert_eq!(seen, want, "watcher {n} saw {seen:?}");
    }
}
