//! Following changes: `kubectl get -w`, raw watches from a resourceVersion (order,
//! replay, label selectors), and `kubectl wait` for a condition, a status field or a
//! deletion (kubectl waits with a watch).

use std::io::{BufRead, BufReader};
use std::process::{Child, Command};
use std::sync::mpsc::{self, Receiver};
use std::time::{Duration, Instant};

use apiserver_tests::metrics::wait_for_watchers;
use apiserver_tests::objects::{configmap, labelled, CONFIGMAPS};
use apiserver_tests::{raw_request, TestServer};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use serde_json::{json, Value};

/// The `apiserver_registered_watchers` labels of Widget and ConfigMap watches.
const WIDGET_WATCHERS: (&str, &str, &str) = ("example.dev", "v1", "Widget");
const CONFIGMAP_WATCHERS: (&str, &str, &str) = ("", "v1", "ConfigMap");

/// A background process whose stdout lines arrive on a channel; killed when dropped.
struct Background {
    child: Child,
    lines: Receiver<String>,
    seen: Vec<String>,
}

impl Background {
    fn spawn(mut cmd: Command) -> Background {
        let mut child = cmd.spawn().expect("spawning kubectl");
        let out = child.stdout.take().expect("piped stdout");
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Background {
            child,
            lines: rx,
            seen: Vec::new(),
        }
    }

    /// Waits until a line satisfying `pred` arrives; panics with everything seen.
    fn wait_for(&mut self, what: &str, timeout: Duration, pred: impl Fn(&str) -> bool) {
        let deadline = Instant::now() + timeout;
        loop {
            if self.seen.iter().any(|l| pred(l)) {
                return;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => self.seen.push(line),
                Err(_) => {
                    let _ = self.child.kill();
                    let stderr = self
                        .child
                        .stderr
                        .take()
                        .map(|mut e| {
                            let mut s = String::new();
                            let _ = std::io::Read::read_to_string(&mut e, &mut s);
                            s
                        })
                        .unwrap_or_default();
                    panic!(
                        "{what}: not seen within {timeout:?}; stdout so far:\n{}\nstderr:\n{stderr}",
                        self.seen.join("\n")
                    );
                }
            }
        }
    }
}

impl Drop for Background {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn watch_events(text: &str) -> Vec<(String, String, u64)> {
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let ev: Value = serde_json::from_str(l)
                .unwrap_or_else(|e| panic!("watch line is not JSON ({e}): {l}"));
            let obj = &ev["object"];
            (
                ev["type"].as_str().unwrap_or_default().to_string(),
                obj["metadata"]["name"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string(),
                obj["metadata"]["resourceVersion"]
                    .as_str()
                    .and_then(|v| v.parse().ok())
                    .unwrap_or(0),
            )
        })
        .collect()
}

// ---------------------------------------------------------------------------------------
// Watch
// ---------------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread")]
async fn kubectl_get_watch_sees_changes() {
    let s = TestServer::start();
    s.kubectl_ok(&["create", "configmap", "before"]);
    let mut watch =
        Background::spawn(s.kubectl_command(&["get", "cm", "-w", "--output-watch-events"]));
    watch.wait_for("the initial list", Duration::from_secs(10), |l| {
        l.contains("ADDED") && l.contains("before")
    });
    s.kubectl_ok(&["create", "configmap", "watched", "--from-literal=a=b"]);
    watch.wait_for("ADDED watched", Duration::from_secs(10), |l| {
        l.split_whitespace().take(2).collect::<Vec<_>>() == ["ADDED", "watched"]
    });
    s.kubectl_ok(&["label", "cm", "watched", "x=y"]);
    watch.wait_for("MODIFIED watched", Duration::from_secs(10), |l| {
        l.split_whitespace().take(2).collect::<Vec<_>>() == ["MODIFIED", "watched"]
    });
    s.kubectl_ok(&["delete", "cm", "watched"]);
    watch.wait_for("DELETED watched", Duration::from_secs(10), |l| {
        l.split_whitespace().take(2).collect::<Vec<_>>() == ["DELETED", "watched"]
    });

    // Plain -w prints the new object's row.
    let mut plain = Background::spawn(s.kubectl_command(&["get", "wd", "-w"]));
    wait_for_watchers(&s.client().await, WIDGET_WATCHERS, 1).await;
    let w = s.write_file(
        "w.yaml",
        "apiVersion: example.dev/v1\nkind: Widget\nmetadata:\n  name: seen\nspec:\n  color: blue\n",
    );
    s.kubectl_ok(&["create", "-f", w.to_str().unwrap()]);
    plain.wait_for("the widget row", Duration::from_secs(10), |l| {
        l.split_whitespace().take(2).collect::<Vec<_>>() == ["seen", "blue"]
    });
}

#[tokio::test(flavor = "multi_thread")]
async fn watch_from_a_resource_version_sees_added_modified_deleted_in_order() {
    let s = TestServer::start();
    let c = s.client().await;
    let cms: Api<ConfigMap> = Api::default_namespaced(c.clone());
    let start = cms.list(&ListParams::default()).await.unwrap();
    let from = start.metadata.resource_version.clone().unwrap();

    // A live watch, started before the changes. Whenever it gets to the server it sees
    // every change after `from`; it must only last until they are made (on a loaded
    // machine that can take a few seconds).
    let live = {
        let c = c.clone();
        let path = format!("{CONFIGMAPS}?watch=true&resourceVersion={from}&timeoutSeconds=8");
        tokio::spawn(async move { raw_request(&c, "GET", &path, None, "").await })
    };
    cms.create(&PostParams::default(), &configmap("w", &[("v", "1")]))
        .await
        .unwrap();
    cms.patch(
        "w",
        &PatchParams::default(),
        &Patch::Merge(json!({"data": {"v": "2"}})),
    )
    .await
    .unwrap();
    cms.delete("w", &DeleteParams::default()).await.unwrap();
    // Another namespace's object must not show up in a namespaced watch.
    s.kubectl_ok(&["create", "namespace", "elsewhere"]);
    s.kubectl_ok(&["create", "configmap", "w2", "-n", "elsewhere"]);

    let live = tokio::time::timeout(Duration::from_secs(30), live)
        .await
        .expect("a watch with timeoutSeconds=8 must end by itself")
        .unwrap();
    assert_eq!(live.status, 200, "{}", live.text);
    let events = watch_events(&live.text);
    let kinds: Vec<(&str, &str)> = events
        .iter()
        .map(|(t, n, _)| (t.as_str(), n.as_str()))
        .collect();
    assert_eq!(
        kinds,
        [("ADDED", "w"), ("MODIFIED", "w"), ("DELETED", "w")],
        "live watch:\n{}",
        live.text
    );
    let rvs: Vec<u64> = events.iter().map(|e| e.2).collect();
    assert!(rvs.windows(2).all(|w| w[0] < w[1]), "{rvs:?}");

    // Re-watching from the same resourceVersion replays the same events (what
    // kube-runtime does after a dropped connection).
    let replay = raw_request(
        &c,
        "GET",
        &format!("{CONFIGMAPS}?watch=true&resourceVersion={from}&timeoutSeconds=1"),
        None,
        "",
    )
    .await;
    assert_eq!(
        watch_events(&replay.text),
        events,
        "replay:\n{}",
        replay.text
    );

    // A watch from the last event's revision sees nothing more.
    let last = rvs.last().unwrap();
    let after = raw_request(
        &c,
        "GET",
        &format!("{CONFIGMAPS}?watch=true&resourceVersion={last}&timeoutSeconds=1"),
        None,
        "",
    )
    .await;
    assert!(watch_events(&after.text).is_empty(), "{}", after.text);

    // A label-selected watch sees only matching objects.
    let selected = {
        let c = c.clone();
        let path = format!(
            "{CONFIGMAPS}?watch=true&labelSelector=app%3Dyes&resourceVersion={last}&timeoutSeconds=2"
        );
        tokio::spawn(async move { raw_request(&c, "GET", &path, None, "").await })
    };
    wait_for_watchers(&c, CONFIGMAP_WATCHERS, 1).await;
    cms.create(&PostParams::default(), &labelled("yes", &[("app", "yes")]))
        .await
        .unwrap();
    cms.create(&PostParams::default(), &labelled("no", &[("app", "no")]))
        .await
        .unwrap();
    let selected = selected.await.unwrap();
    let names: Vec<String> = watch_events(&selected.text)
        .into_iter()
        .map(|e| e.1)
        .collect();
    assert_eq!(names, ["yes"], "{}", selected.text);
}

/// `timeoutSeconds=0` is no timeout of the client's own, as kube-apiserver reads it: the
/// watch stays open under the server's timeout and delivers later changes.
#[tokio::test(flavor = "multi_thread")]
async fn a_watch_with_timeout_seconds_zero_stays_open_and_delivers_later_changes() {
    let s = TestServer::start();
    let c = s.client().await;
    let mut watch = Background::spawn(s.kubectl_command(&[
        "get",
        "--raw",
        &format!("{CONFIGMAPS}?watch=true&timeoutSeconds=0"),
    ]));
    wait_for_watchers(&c, CONFIGMAP_WATCHERS, 1).await;
    s.kubectl_ok(&["create", "configmap", "later"]);
    watch.wait_for("ADDED later", Duration::from_secs(10), |l| {
        l.contains(r#""type":"ADDED""#) && l.contains(r#""name":"later""#)
    });
}

/// With `allowWatchBookmarks`, a watch-list watch (`sendInitialEvents`) marks the end of
/// its initial events with the `k8s.io/initial-events-end` bookmark, and every watch gets
/// a last bookmark shortly before its timeout, carrying the latest resourceVersion, so
/// the client re-watches from there (kube-apiserver's watch cache does both).
#[tokio::test(flavor = "multi_thread")]
async fn bookmarks_end_the_initial_events_and_come_again_just_before_the_timeout() {
    let s = TestServer::start_with_flags(&[apiserver_tests::WITHOUT_ROOT_CA_PUBLISHER]);
    let c = s.client().await;
    s.kubectl_ok(&["create", "configmap", "one"]);
    s.kubectl_ok(&["create", "configmap", "two"]);
    let watch = {
        let c = c.clone();
        let path = format!(
            "{CONFIGMAPS}?watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan\
             &allowWatchBookmarks=true&timeoutSeconds=4"
        );
        tokio::spawn(async move { raw_request(&c, "GET", &path, None, "").await })
    };
    wait_for_watchers(&c, CONFIGMAP_WATCHERS, 1).await;
    s.kubectl_ok(&["create", "configmap", "three"]);
    let three: u64 = s
        .kubectl_ok(&[
            "get",
            "cm",
            "three",
            "-o",
            "jsonpath={.metadata.resourceVersion}",
        ])
        .trim()
        .parse()
        .unwrap();
    let watch = tokio::time::timeout(Duration::from_secs(20), watch)
        .await
        .expect("a watch with timeoutSeconds=4 ends by itself")
        .unwrap();
    assert_eq!(watch.status, 200, "{}", watch.text);
    let lines: Vec<Value> = watch
        .text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(
        described(&lines),
        [
            "ADDED one",
            "ADDED two",
            "BOOKMARK initial-events-end=true",
            "ADDED three",
            "BOOKMARK",
        ],
        "{}",
        watch.text
    );
    let last: u64 = lines[4]["object"]["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!(
        last >= three,
        "the last bookmark's resourceVersion {last} < {three}"
    );

    // Starting objects a selector drops do not hold the end-of-initial-events bookmark
    // back (kubectl wait watches one object this way and waits for that bookmark).
    let selected = raw_request(
        &c,
        "GET",
        &format!(
            "{CONFIGMAPS}?watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan\
             &allowWatchBookmarks=true&fieldSelector=metadata.name%3Done&timeoutSeconds=3"
        ),
        None,
        "",
    )
    .await;
    let lines: Vec<Value> = selected
        .text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(
        described(&lines),
        ["ADDED one", "BOOKMARK initial-events-end=true", "BOOKMARK",],
        "{}",
        selected.text
    );
}

/// Watch events as `TYPE name`; a bookmark reads `BOOKMARK initial-events-end=true` when it
/// carries that annotation and `BOOKMARK` otherwise.
fn described(events: &[Value]) -> Vec<String> {
    events
        .iter()
        .map(|e| {
            let meta = &e["object"]["metadata"];
            let what = match meta["annotations"]["k8s.io/initial-events-end"].as_str() {
                Some(end) => format!("initial-events-end={end}"),
                None => meta["name"].as_str().unwrap_or_default().to_string(),
            };
            format!("{} {what}", e["type"].as_str().unwrap())
                .trim_end()
                .to_string()
        })
        .collect()
}

/// A watch from a resourceVersion older than the server can replay is answered 200 with
/// one in-stream ERROR event (410 Expired), as kube-apiserver answers it, and ends.
#[tokio::test(flavor = "multi_thread")]
async fn a_watch_from_a_compacted_revision_gets_an_in_stream_410_expired_error() {
    let mut s = TestServer::start_with_flags(&["--etcd-compaction-interval=1s"]);
    s.kubectl_ok(&["create", "configmap", "before-restart"]);
    // After a restart the embedded store's cache starts at its current revision; etcd
    // keeps its history until the compaction (every second here) drops it.
    s.restart();
    let c = s.client().await;
    let deadline = Instant::now() + Duration::from_secs(20);
    let watch = loop {
        let watch = raw_request(
            &c,
            "GET",
            &format!("{CONFIGMAPS}?watch=true&resourceVersion=1&timeoutSeconds=1"),
            None,
            "",
        )
        .await;
        if watch.text.contains(r#""type":"ERROR""#) || Instant::now() > deadline {
            break watch;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    assert_eq!(watch.status, 200, "{}", watch.text);
    let events: Vec<Value> = watch
        .text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(events.len(), 1, "{}", watch.text);
    assert_eq!(events[0]["type"], "ERROR");
    let status = &events[0]["object"];
    assert_eq!(
        (&status["kind"], &status["code"], &status["reason"]),
        (&json!("Status"), &json!(410), &json!("Expired")),
        "{status}"
    );
    assert!(
        status["message"]
            .as_str()
            .unwrap()
            .starts_with("too old resource version: 1 ("),
        "{status}"
    );
}

// ---------------------------------------------------------------------------------------
// kubectl wait (issue 3, item 9)
// ---------------------------------------------------------------------------------------

/// `kubectl wait --for=condition=...` and a rollout-style `--for=jsonpath=...` wait watch
/// the object and return once a status write (by a controller, here the test) meets them.
#[tokio::test(flavor = "multi_thread")]
async fn kubectl_wait_for_a_condition_and_a_status_field() {
    let s = TestServer::start();
    let w = s.write_file(
        "w.yaml",
        "apiVersion: example.dev/v1\nkind: Widget\nmetadata:\n  name: slow\nspec:\n  color: red\n  replicas: 3\n",
    );
    s.kubectl_ok(&["create", "-f", w.to_str().unwrap()]);
    let wait = |args: &[&str]| {
        s.kubectl_command(args)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("spawning kubectl wait")
    };
    let ready = wait(&["wait", "--for=condition=Ready", "wd/slow", "--timeout=30s"]);
    let rolled = wait(&[
        "wait",
        "--for=jsonpath={.status.replicas}=3",
        "wd/slow",
        "--timeout=30s",
    ]);
    wait_for_watchers(&s.client().await, WIDGET_WATCHERS, 2).await;
    // Not yet: a False condition and too few replicas.
    s.kubectl_ok(&[
        "patch", "wd", "slow", "--subresource=status", "--type=merge", "-p",
        r#"{"status":{"replicas":1,"conditions":[{"type":"Ready","status":"False","reason":"Starting"}]}}"#,
    ]);
    s.kubectl_ok(&[
        "patch", "wd", "slow", "--subresource=status", "--type=merge", "-p",
        r#"{"status":{"replicas":3,"observedGeneration":1,"conditions":[{"type":"Ready","status":"True","reason":"AllUp"}]}}"#,
    ]);
    for (what, child) in [("condition=Ready", ready), ("jsonpath", rolled)] {
        let out = tokio::task::spawn_blocking(move || child.wait_with_output())
            .await
            .unwrap()
            .unwrap();
        assert!(
            out.status.success(),
            "kubectl wait --for={what}: {}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(
            String::from_utf8_lossy(&out.stdout).trim(),
            "widget.example.dev/slow condition met",
            "kubectl wait --for={what}"
        );
    }
    // A condition that is already met returns at once; one never met times out.
    s.kubectl_ok(&["wait", "--for=condition=Ready", "wd/slow", "--timeout=10s"]);
    let err = s.kubectl_err(&["wait", "--for=condition=Broken", "wd/slow", "--timeout=2s"]);
    assert!(err.contains("timed out"), "{err}");
}

#[tokio::test(flavor = "multi_thread")]
async fn kubectl_wait_for_delete_returns_when_the_object_goes() {
    let s = TestServer::start();
    let c = s.client().await;
    let cms: Api<ConfigMap> = Api::default_namespaced(c.clone());
    let mut held = configmap("going", &[]);
    held.metadata.finalizers = Some(vec!["example.dev/hold".into()]);
    cms.create(&PostParams::default(), &held).await.unwrap();
    s.kubectl_ok(&["delete", "cm", "going", "--wait=false"]);

    let waiter = s
        .kubectl_command(&["wait", "--for=delete", "cm/going", "--timeout=20s"])
        .spawn()
        .expect("spawning kubectl wait");
    // Only once kubectl watches may the object go: a wait that starts after it has gone
    // succeeds without watching anything.
    wait_for_watchers(&c, CONFIGMAP_WATCHERS, 1).await;
    cms.patch(
        "going",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"finalizers": null}})),
    )
    .await
    .unwrap();
    let started = Instant::now();
    let out = tokio::task::spawn_blocking(move || waiter.wait_with_output())
        .await
        .unwrap()
        .unwrap();
    assert!(
        out.status.success(),
        "kubectl wait --for=delete: {}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "kubectl wait should return soon after the object goes"
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        "configmap/going condition met"
    );

    // Deleting in the background while kubectl waits.
    s.kubectl_ok(&["create", "configmap", "later"]);
    let waiter = s
        .kubectl_command(&["wait", "--for=delete", "cm/later", "--timeout=20s"])
        .spawn()
        .unwrap();
    wait_for_watchers(&c, CONFIGMAP_WATCHERS, 1).await;
    s.kubectl_ok(&["delete", "cm", "later"]);
    let out = tokio::task::spawn_blocking(move || waiter.wait_with_output())
        .await
        .unwrap()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
