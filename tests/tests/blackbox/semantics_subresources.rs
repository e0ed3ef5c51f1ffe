//! Subresources (issue 3, item 8): /status and /scale, through raw requests, the kube
//! crate and kubectl.

use apiserver_tests::objects::{api_status, widget, widgets, JSON, MERGE, WIDGETS};
use apiserver_tests::tables::row;
use apiserver_tests::{raw_request, TestServer};
use kube::api::{Patch, PatchParams, PostParams};
use serde_json::json;

// ---------------------------------------------------------------------------------------
// 8. Subresources
// ---------------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread")]
async fn status_subresource_get_put_patch_touch_only_status() {
    let s = TestServer::start();
    let c = s.client().await;
    let w = r#"{"apiVersion":"example.dev/v1","kind":"Widget","metadata":{"name":"w"},"spec":{"color":"red","replicas":2}}"#;
    assert_eq!(raw_request(&c, "POST", WIDGETS, JSON, w).await.status, 201);
    let status_path = format!("{WIDGETS}/w/status");

    let got = raw_request(&c, "GET", &status_path, None, "").await;
    assert_eq!(got.status, 200, "{}", got.text);
    assert_eq!(got.json["kind"], "Widget");
    assert_eq!(got.json["spec"]["color"], "red");

    let mut body = got.json.clone();
    body["status"] = json!({"replicas": 2, "selector": "app=w"});
    body["spec"]["color"] = json!("blue");
    let put = raw_request(&c, "PUT", &status_path, JSON, body.to_string()).await;
    assert_eq!(put.status, 200, "{}", put.text);
    assert_eq!(
        put.json["status"],
        json!({"replicas": 2, "selector": "app=w"})
    );
    assert_eq!(put.json["spec"]["color"], "red", "PUT /status ignores spec");

    let patch = raw_request(
        &c,
        "PATCH",
        &status_path,
        MERGE,
        r#"{"spec":{"color":"green"},"metadata":{"labels":{"l":"v"}},"status":{"replicas":1}}"#,
    )
    .await;
    assert_eq!(patch.status, 200, "{}", patch.text);
    assert_eq!(patch.json["status"]["replicas"], 1);
    assert_eq!(
        patch.json["spec"]["color"], "red",
        "PATCH /status ignores spec"
    );
    assert_eq!(patch.json["metadata"]["generation"], 1);

    // The main endpoint ignores status.
    let mut main = patch.json.clone();
    main["status"] = json!({"replicas": 50});
    main["spec"]["color"] = json!("blue");
    let put = raw_request(&c, "PUT", &format!("{WIDGETS}/w"), JSON, main.to_string()).await;
    assert_eq!(put.status, 200, "{}", put.text);
    assert_eq!(put.json["spec"]["color"], "blue");
    assert_eq!(
        put.json["status"]["replicas"], 1,
        "main endpoint ignores status"
    );

    // kubectl speaks to /status with --subresource.
    let out = s.kubectl_ok(&[
        "patch",
        "wd",
        "w",
        "--subresource=status",
        "--type=merge",
        "-p",
        r#"{"status":{"replicas":3}}"#,
    ]);
    assert_eq!(out.trim(), "widget.example.dev/w patched");
    let ready = s.kubectl_ok(&["get", "wd", "w", "-o", "wide"]);
    assert_eq!(
        row(&ready, "w")[..4],
        ["w", "blue", "2", "3"],
        "READY shows status.replicas:\n{ready}"
    );
    // Status of a missing object: 404.
    let resp = raw_request(&c, "GET", &format!("{WIDGETS}/nope/status"), None, "").await;
    assert_eq!(resp.status, 404, "{}", resp.text);
}

#[tokio::test(flavor = "multi_thread")]
async fn scale_subresource_with_kubectl_and_kube() {
    let s = TestServer::start();
    let c = s.client().await;
    let api = widgets(&c);
    let created = api
        .create(
            &PostParams::default(),
            &widget("w", json!({"color": "red", "replicas": 1})),
        )
        .await
        .unwrap();
    api.patch_status(
        "w",
        &PatchParams::default(),
        &Patch::Merge(json!({"status": {"replicas": 1, "selector": "app=w"}})),
    )
    .await
    .unwrap();

    let out = s.kubectl_ok(&["scale", "widget", "w", "--replicas=3"]);
    assert_eq!(out.trim(), "widget.example.dev/w scaled");
    let replicas = s.kubectl_ok(&["get", "wd", "w", "-o", "jsonpath={.spec.replicas}"]);
    assert_eq!(replicas, "3");

    let scale = raw_request(&c, "GET", &format!("{WIDGETS}/w/scale"), None, "").await;
    assert_eq!(scale.status, 200, "{}", scale.text);
    assert_eq!(scale.json["apiVersion"], "autoscaling/v1", "{}", scale.text);
    assert_eq!(scale.json["kind"], "Scale", "{}", scale.text);
    assert_eq!(scale.json["metadata"]["name"], "w");
    assert_eq!(scale.json["metadata"]["namespace"], "default");
    assert_eq!(
        scale.json["metadata"]["uid"],
        json!(created.metadata.uid.clone().unwrap())
    );
    assert_eq!(scale.json["spec"]["replicas"], 3);
    assert_eq!(scale.json["status"]["replicas"], 1);
    assert_eq!(scale.json["status"]["selector"], "app=w");

    // The kube crate's scale helpers.
    let got = api.get_scale("w").await.expect("get_scale");
    assert_eq!(got.spec.as_ref().and_then(|s| s.replicas), Some(3));
    let patched = api
        .patch_scale(
            "w",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"replicas": 5}})),
        )
        .await
        .expect("patch_scale");
    assert_eq!(patched.spec.and_then(|s| s.replicas), Some(5));
    let w = api.get("w").await.unwrap();
    assert_eq!(w.data["spec"]["replicas"], 5);
    assert_eq!(w.data["spec"]["color"], "red");

    // Scale with a stale resourceVersion: 409.
    let mut stale = got.clone();
    stale.spec.as_mut().unwrap().replicas = Some(7);
    let status = api_status(
        api.replace_scale("w", &PostParams::default(), &stale).await,
        "replace_scale with a stale resourceVersion",
    );
    assert_eq!(status.code, 409, "{status:?}");
    // Beyond the schema's maximum (100): 422 naming spec.replicas.
    let status = api_status(
        api.patch_scale(
            "w",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"replicas": 101}})),
        )
        .await,
        "scale beyond the maximum",
    );
    assert_eq!(status.code, 422, "{status:?}");
    assert!(status.message.contains("spec.replicas"), "{status:?}");
}
