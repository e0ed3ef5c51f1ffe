//! The live catalog: a kind registered while the server runs (a definition file dropped
//! into `--definitions-dir`; no codegen, no restart) is served like a compiled-in one,
//! through every verb, watch, discovery, OpenAPI and kubectl; removing the file
//! unregisters it, and its paths answer 404 at once.

use std::time::{Duration, Instant};

use apiserver_tests::{raw_request, RawResponse, TestServer};
use futures_util::{StreamExt, TryStreamExt};
use kube::api::{
    Api, ApiResource, DeleteParams, DynamicObject, ListParams, Patch, PatchParams, PostParams,
    WatchEvent, WatchParams,
};
use serde_json::{json, Value};

const GIZMO: &str = "\
group: live.example.dev
version: v1
kind: Gizmo
scope: Namespaced
shortNames: [gz]
subresources:
  status: {}
additionalPrinterColumns:
  - {name: Size, type: integer, jsonPath: .spec.size}
schema:
  type: object
  properties:
    spec:
      type: object
      required: [size]
      properties:
        size: {type: integer, minimum: 1}
    status:
      type: object
      properties:
        ready: {type: boolean}
";

const GROUP_VERSION: &str = "/apis/live.example.dev/v1";
const GIZMOS: &str = "/apis/live.example.dev/v1/namespaces/default/gizmos";

/// How long registering or unregistering may take to show (the directory is read every
/// 300 ms).
const SETTLE: Duration = Duration::from_secs(10);

async fn get(c: &kube::Client, path: &str) -> RawResponse {
    raw_request(c, "GET", path, None, "").await
}

/// Waits until `GET path` answers `status`.
async fn wait_for_status(c: &kube::Client, path: &str, status: u16) {
    let deadline = Instant::now() + SETTLE;
    loop {
        let resp = get(c, path).await;
        if resp.status == status {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "GET {path} still answers {} after {SETTLE:?}: {}",
            resp.status,
            resp.text
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn gizmo(name: &str, size: i64) -> DynamicObject {
    serde_json::from_value(json!({
        "apiVersion": "live.example.dev/v1",
        "kind": "Gizmo",
        "metadata": { "name": name },
        "spec": { "size": size },
    }))
    .unwrap()
}

fn size(obj: &DynamicObject) -> i64 {
    obj.data["spec"]["size"].as_i64().unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_kind_registered_while_serving_is_served_until_unregistered() {
    let defs = tempfile::TempDir::new().unwrap();
    let dir = defs.path().to_str().unwrap().to_string();
    let s = TestServer::start_with_flags(&["--definitions-dir", &dir]);
    let c = s.client().await;
    assert_eq!(get(&c, GIZMOS).await.status, 404, "not served before");

    // Register.
    std::fs::write(defs.path().join("gizmo.yaml"), GIZMO).unwrap();
    wait_for_status(&c, GROUP_VERSION, 200).await;

    // Discovery, legacy and aggregated.
    let list = get(&c, GROUP_VERSION).await.json;
    let names: Vec<&str> = list["resources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["gizmos", "gizmos/status"]);
    assert_eq!(list["resources"][0]["shortNames"], json!(["gz"]));
    assert_eq!(
        list["resources"][0]["verbs"],
        json!([
            "create",
            "delete",
            "deletecollection",
            "get",
            "list",
            "patch",
            "update",
            "watch"
        ])
    );
    let groups = get(&c, "/apis").await.json;
    assert!(
        groups["groups"]
            .as_array()
            .unwrap()
            .iter()
            .any(|g| g["name"] == "live.example.dev"),
        "{groups}"
    );

    // Every verb, through the kube crate.
    let ar = ApiResource {
        group: "live.example.dev".into(),
        version: "v1".into(),
        api_version: "live.example.dev/v1".into(),
        kind: "Gizmo".into(),
        plural: "gizmos".into(),
    };
    let api: Api<DynamicObject> = Api::namespaced_with(c.clone(), "default", &ar);
    let created = api
        .create(&PostParams::default(), &gizmo("g1", 3))
        .await
        .expect("create");
    assert_eq!(size(&created), 3);
    let invalid = api
        .create(&PostParams::default(), &gizmo("g0", 0))
        .await
        .expect_err("size 0 is below the schema's minimum");
    assert!(
        matches!(invalid, kube::Error::Api(ref e) if e.code == 422),
        "{invalid}"
    );

    let mut got = api.get("g1").await.expect("get");
    got.data["spec"]["size"] = json!(4);
    let updated = api
        .replace("g1", &PostParams::default(), &got)
        .await
        .expect("update");
    assert_eq!(size(&updated), 4);
    let patched = api
        .patch(
            "g1",
            &PatchParams::default(),
            &Patch::Merge(json!({ "spec": { "size": 5 } })),
        )
        .await
        .expect("merge patch");
    assert_eq!(size(&patched), 5);
    let applied = api
        .patch(
            "g1",
            // The earlier writes' manager owns spec.size: take it over.
            &PatchParams::apply("live-test").force(),
            &Patch::Apply(json!({
                "apiVersion": "live.example.dev/v1",
                "kind": "Gizmo",
                "metadata": { "name": "g1" },
                "spec": { "size": 6 },
            })),
        )
        .await
        .expect("server-side apply");
    assert_eq!(size(&applied), 6);
    // A custom kind takes no strategic merge patch, as on kube-apiserver.
    let smp = raw_request(
        &c,
        "PATCH",
        &format!("{GIZMOS}/g1"),
        Some("application/strategic-merge-patch+json"),
        r#"{"spec":{"size":7}}"#,
    )
    .await;
    assert_eq!(smp.status, 415, "{}", smp.text);
    assert_eq!(smp.json["reason"], "UnsupportedMediaType");

    // The status subresource.
    let status = api
        .patch_status(
            "g1",
            &PatchParams::default(),
            &Patch::Merge(json!({ "status": { "ready": true } })),
        )
        .await
        .expect("status patch");
    assert_eq!(status.data["status"]["ready"], true);
    assert_eq!(size(&status), 6, "a status write leaves spec alone");

    // Watch: from the current resourceVersion, a create arrives.
    let rv = api
        .list(&ListParams::default())
        .await
        .expect("list")
        .metadata
        .resource_version
        .unwrap();
    let mut events = api
        .watch(&WatchParams::default().timeout(10), &rv)
        .await
        .expect("watch")
        .boxed();
    api.create(&PostParams::default(), &gizmo("g2", 2))
        .await
        .expect("create g2");
    match events.try_next().await.expect("a watch event") {
        Some(WatchEvent::Added(obj)) => assert_eq!(obj.metadata.name.as_deref(), Some("g2")),
        other => panic!("expected ADDED g2, got {other:?}"),
    }
    // The deprecated watch path, which starts with the current objects.
    let legacy = get(
        &c,
        "/apis/live.example.dev/v1/watch/namespaces/default/gizmos/g1?timeoutSeconds=1",
    )
    .await;
    assert_eq!(legacy.status, 200, "{}", legacy.text);
    let first: Value = serde_json::from_str(legacy.text.lines().next().unwrap()).unwrap();
    assert_eq!(
        (
            first["type"].as_str(),
            first["object"]["metadata"]["name"].as_str()
        ),
        (Some("ADDED"), Some("g1"))
    );

    // OpenAPI v3 and v2 describe it, so kubectl explain works.
    let index = get(&c, "/openapi/v3").await.json;
    assert!(
        index["paths"]["apis/live.example.dev/v1"].is_object(),
        "{index}"
    );
    let doc = get(&c, "/openapi/v3/apis/live.example.dev/v1").await.json;
    assert_eq!(
        doc["components"]["schemas"]["dev.example.live.v1.Gizmo"]["properties"]["spec"]
            ["properties"]["size"]["minimum"],
        1
    );
    assert!(doc["paths"]
        [format!("{GIZMOS}/{{name}}/status").replace("/default/", "/{namespace}/")]
    .is_object());
    let v2 = get(&c, "/openapi/v2").await.json;
    assert!(v2["definitions"]["dev.example.live.v1.Gizmo"].is_object());
    let explained = s.kubectl_ok(&["explain", "gizmos.spec"]);
    assert!(explained.contains("size"), "{explained}");

    // kubectl get prints the printer column; the short name resolves.
    let table = s.kubectl_ok(&["get", "gz"]);
    let rows: Vec<Vec<&str>> = table
        .lines()
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(rows[0], ["NAME", "SIZE", "AGE"], "{table}");
    let g1 = rows.iter().find(|r| r[0] == "g1").expect("a g1 row");
    assert_eq!(g1[1], "6", "{table}");

    // Delete one (a custom kind answers with the object), then the collection.
    api.delete("g2", &DeleteParams::default())
        .await
        .expect("delete");
    api.delete_collection(&DeleteParams::default(), &ListParams::default())
        .await
        .expect("deletecollection");
    assert!(api
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .is_empty());

    // Unregister: 404 at once, gone from discovery and OpenAPI.
    std::fs::remove_file(defs.path().join("gizmo.yaml")).unwrap();
    wait_for_status(&c, GROUP_VERSION, 404).await;
    let gone = get(&c, GIZMOS).await;
    assert_eq!(gone.status, 404, "{}", gone.text);
    assert_eq!(gone.json["reason"], "NotFound");
    let groups = get(&c, "/apis").await.json;
    assert!(
        !groups["groups"]
            .as_array()
            .unwrap()
            .iter()
            .any(|g| g["name"] == "live.example.dev"),
        "{groups}"
    );
    let index = get(&c, "/openapi/v3").await.json;
    assert!(
        index["paths"]["apis/live.example.dev/v1"].is_null(),
        "{index}"
    );
    assert_eq!(
        get(&c, "/openapi/v3/apis/live.example.dev/v1").await.status,
        404
    );
    let v2 = get(&c, "/openapi/v2").await.json;
    assert!(v2["definitions"]["dev.example.live.v1.Gizmo"].is_null());
    // The compiled-in kinds are untouched.
    assert_eq!(
        get(&c, "/apis/example.dev/v1/namespaces/default/widgets")
            .await
            .status,
        200
    );
}

/// Waits until the server's log contains `text`.
fn wait_for_log(s: &TestServer, text: &str) {
    let deadline = Instant::now() + SETTLE;
    while !s.stderr().contains(text) {
        assert!(
            Instant::now() < deadline,
            "the log never said {text:?}:\n{}",
            s.stderr()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn definitions_that_cannot_be_served_are_skipped_with_the_reason() {
    let defs = tempfile::TempDir::new().unwrap();
    let dir = defs.path().to_str().unwrap().to_string();
    // A typo (codegen's own diagnostic, with file:line:col) and a kind that is already
    // compiled in; the good definition beside them is served all the same.
    std::fs::write(
        defs.path().join("broken.yaml"),
        GIZMO
            .replace("kind: Gizmo", "kind: Broken")
            .replace("type: integer", "type: intger"),
    )
    .unwrap();
    std::fs::write(
        defs.path().join("clash.yaml"),
        "group: example.dev\nversion: v1\nkind: Widget\nscope: Namespaced\nschema:\n  type: object\n",
    )
    .unwrap();
    std::fs::write(defs.path().join("gizmo.yaml"), GIZMO).unwrap();
    let s = TestServer::start_with_flags(&["--definitions-dir", &dir]);
    let c = s.client().await;
    wait_for_status(&c, GIZMOS, 200).await;
    let broken = defs.path().join("broken.yaml");
    wait_for_log(&s, &format!("{}:17:", broken.display()));
    wait_for_log(&s, "unknown type `intger`");
    wait_for_log(
        &s,
        "resource \"widgets\" is already served in example.dev/v1",
    );
    // The compiled-in Widget is the one served (its schema requires spec.color).
    let widget = raw_request(
        &c,
        "POST",
        "/apis/example.dev/v1/namespaces/default/widgets",
        Some("application/json"),
        r#"{"apiVersion":"example.dev/v1","kind":"Widget","metadata":{"name":"w"},"spec":{}}"#,
    )
    .await;
    assert_eq!(widget.status, 422, "{}", widget.text);
    // Fixing the file serves it.
    std::fs::write(
        &broken,
        GIZMO.replace("Gizmo", "Broken").replace("[gz]", "[br]"),
    )
    .unwrap();
    wait_for_status(
        &c,
        "/apis/live.example.dev/v1/namespaces/default/brokens",
        200,
    )
    .await;
}
