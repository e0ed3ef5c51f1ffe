//! Events (issue 16): core/v1 Event and events.k8s.io/v1 Event are one stored resource,
//! as upstream's: an Event written through one group is read, listed, watched, updated
//! and deleted through the other (same name, uid and resourceVersion), its fields under
//! each group's names; each group checks writes as upstream does.

use std::time::Duration;

use apiserver_tests::{raw_request, TestServer};
use futures_util::StreamExt;
use k8s_openapi::api::core::v1::Event as CoreEvent;
use k8s_openapi::api::events::v1::Event;
use kube::api::{Api, PostParams, WatchEvent, WatchParams};
use serde_json::{json, Value};

/// How long a watch may take to deliver a change.
const WITHIN: Duration = Duration::from_secs(30);

fn get_json(s: &TestServer, args: &[&str]) -> Value {
    let mut all = args.to_vec();
    all.extend(["-o", "json"]);
    let out = s.kubectl_ok(&all);
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("not JSON ({e}): {out}"))
}

/// The next change a watch stream delivers, within [`WITHIN`].
async fn next_change<K, S>(stream: &mut S) -> WatchEvent<K>
where
    S: futures_util::Stream<Item = kube::Result<WatchEvent<K>>> + Unpin,
{
    loop {
        let event = tokio::time::timeout(WITHIN, stream.next())
            .await
            .expect("a change within the deadline")
            .expect("the watch goes on")
            .expect("a watch event");
        if !matches!(event, WatchEvent::Bookmark(_)) {
            return event;
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn an_event_written_in_either_group_is_one_object_in_both() {
    let s = TestServer::start();
    // An Event as client-go's old recorder writes it, through core/v1 with kubectl.
    let core = r#"{"apiVersion":"v1","kind":"Event","metadata":{"name":"web.1","namespace":"default"},
        "involvedObject":{"kind":"Pod","namespace":"default","name":"web","apiVersion":"v1"},
        "reason":"Pulled","message":"Image pulled","type":"Normal","count":3,
        "source":{"component":"kubelet","host":"node-1"},
        "firstTimestamp":"2026-01-01T00:00:00Z","lastTimestamp":"2026-01-01T00:05:00Z"}"#;
    let c = s.client().await;
    let modern: Api<Event> = Api::namespaced(c.clone(), "default");
    let legacy: Api<CoreEvent> = Api::namespaced(c.clone(), "default");
    let from = legacy
        .list_metadata(&Default::default())
        .await
        .unwrap()
        .metadata
        .resource_version
        .unwrap();
    let mut modern_watch = modern
        .watch(&WatchParams::default().timeout(60), &from)
        .await
        .unwrap()
        .boxed();
    let out = s.kubectl_with_stdin(&["create", "-f", "-"], Some(core));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    // Read through events.k8s.io/v1: the same object, under that group's field names.
    let read = modern.get("web.1").await.unwrap();
    let written = get_json(&s, &["get", "events", "web.1"]);
    assert_eq!(
        read.metadata.uid.as_deref(),
        written["metadata"]["uid"].as_str()
    );
    assert_eq!(
        read.metadata.resource_version.as_deref(),
        written["metadata"]["resourceVersion"].as_str()
    );
    assert_eq!(read.note.as_deref(), Some("Image pulled"));
    assert_eq!(read.deprecated_count, Some(3));
    let regarding = read.regarding.clone().expect("regarding is involvedObject");
    assert_eq!(regarding.name.as_deref(), Some("web"));
    assert_eq!(regarding.kind.as_deref(), Some("Pod"));
    let source = read.deprecated_source.clone().expect("deprecatedSource");
    assert_eq!(source.component.as_deref(), Some("kubelet"));
    assert!(read.deprecated_last_timestamp.is_some());

    // The watch in events.k8s.io saw kubectl's write in core.
    match next_change(&mut modern_watch).await {
        WatchEvent::Added(e) => {
            assert_eq!(e.metadata.name.as_deref(), Some("web.1"));
            assert_eq!(e.note.as_deref(), Some("Image pulled"));
        }
        other => panic!("expected ADDED, got {other:?}"),
    }

    // Both groups list it, and select it by their own field names.
    let by_core = s.kubectl_ok(&[
        "get",
        "events",
        "--field-selector",
        "involvedObject.name=web",
        "-o",
        "name",
    ]);
    assert_eq!(by_core.trim(), "event/web.1");
    let by_modern = s.kubectl_ok(&[
        "get",
        "events.events.k8s.io",
        "--field-selector",
        "regarding.name=web,reason=Pulled",
        "-o",
        "name",
    ]);
    assert_eq!(by_modern.trim(), "event.events.k8s.io/web.1");
    let none = s.kubectl_ok(&[
        "get",
        "events.events.k8s.io",
        "--field-selector",
        "regarding.name=other",
        "-o",
        "name",
    ]);
    assert_eq!(none.trim(), "");
    // `kubectl events --for` selects by the involved object, through core.
    let listed = s.kubectl_ok(&["events", "--for", "pod/web"]);
    assert!(listed.contains("Image pulled"), "{listed}");

    // A new Event through events.k8s.io/v1, and an update of the old one there: a core
    // watch sees both, in core's shape.
    let mut core_watch = legacy
        .watch(
            &WatchParams::default().timeout(60),
            read.metadata.resource_version.as_deref().unwrap(),
        )
        .await
        .unwrap()
        .boxed();
    let new: Event = serde_json::from_value(json!({
        "apiVersion": "events.k8s.io/v1", "kind": "Event",
        "metadata": {"name": "web.2", "namespace": "default"},
        "eventTime": "2026-01-01T00:10:00.000000Z",
        "reportingController": "example.com/scaler", "reportingInstance": "scaler-1",
        "action": "Scale", "reason": "Scaled", "type": "Normal", "note": "Scaled to 3",
        "regarding": {"kind": "Deployment", "namespace": "default", "name": "web", "apiVersion": "apps/v1"}
    }))
    .unwrap();
    modern.create(&PostParams::default(), &new).await.unwrap();
    match next_change(&mut core_watch).await {
        WatchEvent::Added(e) => {
            assert_eq!(e.metadata.name.as_deref(), Some("web.2"));
            assert_eq!(e.message.as_deref(), Some("Scaled to 3"));
            assert_eq!(e.reporting_component.as_deref(), Some("example.com/scaler"));
            assert_eq!(e.involved_object.kind.as_deref(), Some("Deployment"));
        }
        other => panic!("expected ADDED, got {other:?}"),
    }
    // events.k8s.io/v1 keeps what happened fixed, as upstream: a changed note is
    // refused (named as upstream names it), a new series entry is taken.
    let mut edited = read.clone();
    edited.note = Some("Image pulled again".into());
    let refused = modern
        .replace("web.1", &PostParams::default(), &edited)
        .await
        .expect_err("the note may not change");
    match refused {
        kube::Error::Api(status) => {
            assert_eq!(status.code, 422, "{status:?}");
            assert!(
                status
                    .message
                    .contains("message: Invalid value: \"Image pulled again\": field is immutable"),
                "{status:?}"
            );
        }
        other => panic!("expected a 422, got {other:?}"),
    }
    let mut edited = read.clone();
    edited.series = Some(
        serde_json::from_value(
            json!({"count": 2, "lastObservedTime": "2026-01-01T00:06:00.000000Z"}),
        )
        .unwrap(),
    );
    let replaced = modern
        .replace("web.1", &PostParams::default(), &edited)
        .await
        .unwrap();
    match next_change(&mut core_watch).await {
        WatchEvent::Modified(e) => {
            assert_eq!(e.metadata.name.as_deref(), Some("web.1"));
            assert_eq!(e.series.as_ref().and_then(|s| s.count), Some(2));
            assert_eq!(e.message.as_deref(), Some("Image pulled"));
        }
        other => panic!("expected MODIFIED, got {other:?}"),
    }
    let after = get_json(&s, &["get", "events", "web.1"]);
    assert_eq!(after["series"]["count"], 2, "{after}");
    assert_eq!(after["count"], 3, "{after}");
    assert_eq!(after["source"]["host"], "node-1", "{after}");
    assert_eq!(
        after["metadata"]["resourceVersion"].as_str(),
        replaced.metadata.resource_version.as_deref()
    );
    // core/v1 stays lax: kubectl may change the message there.
    s.kubectl_ok(&[
        "patch",
        "event",
        "web.1",
        "--type=merge",
        "-p",
        r#"{"message":"Image pulled twice"}"#,
    ]);
    let reread = modern.get("web.1").await.unwrap();
    assert_eq!(reread.note.as_deref(), Some("Image pulled twice"));

    // Deleted through events.k8s.io/v1, gone from core.
    modern.delete("web.1", &Default::default()).await.unwrap();
    let gone = s.kubectl_err(&["get", "events", "web.1"]);
    assert!(gone.contains("NotFound"), "{gone}");
    let left: Vec<String> = legacy
        .list(&Default::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter_map(|e| e.metadata.name)
        .collect();
    assert_eq!(left, ["web.2"]);

    // One storage version in discovery, core/v1 Event's, as upstream's.
    let hash = |path: &str| {
        let list: Value = serde_json::from_str(&s.kubectl_ok(&["get", "--raw", path])).unwrap();
        list["resources"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["name"] == "events")
            .map(|r| r["storageVersionHash"].clone())
            .unwrap_or_else(|| panic!("no events in {path}: {list}"))
    };
    assert_eq!(hash("/api/v1"), "r2yiGXH7wu8=");
    assert_eq!(hash("/apis/events.k8s.io/v1"), "r2yiGXH7wu8=");
}

#[tokio::test(flavor = "multi_thread")]
async fn each_group_checks_a_new_event_as_upstream_does() {
    let s = TestServer::start();
    let c = s.client().await;
    let post = |path: &'static str, body: Value| {
        let c = c.clone();
        async move { raw_request(&c, "POST", path, Some("application/json"), body.to_string()).await }
    };
    let causes = |answer: &apiserver_tests::RawResponse| -> Vec<(String, String)> {
        answer.json["details"]["causes"]
            .as_array()
            .unwrap_or_else(|| panic!("no causes: {}", answer.text))
            .iter()
            .map(|c| {
                (
                    c["field"].as_str().unwrap_or("").to_string(),
                    c["message"].as_str().unwrap_or("").to_string(),
                )
            })
            .collect()
    };

    // events.k8s.io/v1 wants a new Event to say who reports what, when.
    let bare = post(
        "/apis/events.k8s.io/v1/namespaces/default/events",
        json!({"apiVersion": "events.k8s.io/v1", "kind": "Event",
               "metadata": {"name": "bare"}, "eventTime": "2026-01-01T00:00:00.000000Z",
               "regarding": {"kind": "Pod", "namespace": "default", "name": "web"},
               "deprecatedCount": 2}),
    )
    .await;
    assert_eq!(bare.status, 422, "{}", bare.text);
    let got = causes(&bare);
    for (field, message) in [
        ("reportingController", "Required value"),
        ("reportingInstance", "Required value"),
        ("action", "Required value"),
        ("reason", "Required value"),
        ("type", "Invalid value: \"\": has invalid value: "),
        ("deprecatedCount", "Invalid value: \"\": needs to be unset"),
    ] {
        assert!(
            got.contains(&(field.to_string(), message.to_string())),
            "no {field}: {message} in {got:?}"
        );
    }
    // Without eventTime the schema refuses it first.
    let timeless = post(
        "/apis/events.k8s.io/v1/namespaces/default/events",
        json!({"apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": {"name": "t"}}),
    )
    .await;
    assert_eq!(timeless.status, 422, "{}", timeless.text);
    assert!(timeless.text.contains("eventTime"), "{}", timeless.text);

    // core/v1 takes an old-style Event with none of those; it must live in its object's
    // namespace.
    let old = post(
        "/api/v1/namespaces/default/events",
        json!({"apiVersion": "v1", "kind": "Event", "metadata": {"name": "old"},
               "involvedObject": {"kind": "Pod", "namespace": "default", "name": "web"},
               "reason": "Seen", "message": "m"}),
    )
    .await;
    assert_eq!(old.status, 201, "{}", old.text);
    let elsewhere = post(
        "/api/v1/namespaces/default/events",
        json!({"apiVersion": "v1", "kind": "Event", "metadata": {"name": "elsewhere"},
               "involvedObject": {"kind": "Pod", "namespace": "other", "name": "web"}}),
    )
    .await;
    assert_eq!(elsewhere.status, 422, "{}", elsewhere.text);
    assert_eq!(
        causes(&elsewhere),
        [(
            "involvedObject.namespace".to_string(),
            "Invalid value: \"other\": does not match event.namespace".to_string()
        )]
    );
    // A core Event with a time is a new one: its reporter is named as core names it.
    let timed = post(
        "/api/v1/namespaces/default/events",
        json!({"apiVersion": "v1", "kind": "Event", "metadata": {"name": "timed"},
               "eventTime": "2026-01-01T00:00:00.000000Z", "reportingInstance": "i",
               "action": "A", "reason": "R",
               "involvedObject": {"kind": "Pod", "namespace": "default", "name": "web"}}),
    )
    .await;
    assert_eq!(timed.status, 422, "{}", timed.text);
    assert!(
        causes(&timed).contains(&(
            "reportingComponent".to_string(),
            "Required value".to_string()
        )),
        "{}",
        timed.text
    );
}
