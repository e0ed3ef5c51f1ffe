//! Request options (issue 3, item 4): dryRun, fieldValidation, fieldManager and pretty,
//! and the 422 answers for invalid ones.

use apiserver_tests::objects::{api_status, configmap, widget, widgets, CONFIGMAPS, JSON, WIDGETS};
use apiserver_tests::{raw_request, TestServer};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use kube::ResourceExt;
use serde_json::{json, Value};

// ---------------------------------------------------------------------------------------
// 4. Request options: dryRun, fieldValidation, fieldManager, pretty
// ---------------------------------------------------------------------------------------

#[test]
fn kubectl_dry_run_server_persists_nothing() {
    let s = TestServer::start();
    let out = s.kubectl_ok(&[
        "create",
        "configmap",
        "d",
        "--from-literal=a=b",
        "--dry-run=server",
    ]);
    assert_eq!(out.trim(), "configmap/d created (server dry run)");
    let err = s.kubectl_err(&["get", "cm", "d"]);
    assert!(err.contains(r#"configmaps "d" not found"#), "{err}");
    // The dry-run answer is what would be stored: uid and timestamp filled in.
    let yaml = s.kubectl_ok(&[
        "create",
        "configmap",
        "d",
        "--from-literal=a=b",
        "--dry-run=server",
        "-o",
        "yaml",
    ]);
    let obj: serde_yaml::Value = serde_yaml::from_str(&yaml).unwrap();
    assert!(obj["metadata"]["uid"].as_str().is_some(), "{yaml}");
    assert!(
        obj["metadata"]["creationTimestamp"].as_str().is_some(),
        "{yaml}"
    );

    // Validation still runs.
    let err = s.kubectl_err(&["create", "configmap", "Bad_Name", "--dry-run=server"]);
    assert!(err.contains(r#"ConfigMap "Bad_Name" is invalid"#), "{err}");

    s.kubectl_ok(&["create", "configmap", "real", "--from-literal=a=b"]);
    s.kubectl_ok(&[
        "patch",
        "cm",
        "real",
        "--type=merge",
        "-p",
        r#"{"data":{"a":"patched"}}"#,
        "--dry-run=server",
    ]);
    s.kubectl_ok(&["label", "cm", "real", "x=y", "--dry-run=server"]);
    let f = s.write_file(
        "real.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: real\ndata:\n  a: replaced\n",
    );
    s.kubectl_ok(&["replace", "-f", f.to_str().unwrap(), "--dry-run=server"]);
    let out = s.kubectl_ok(&["delete", "cm", "real", "--dry-run=server"]);
    assert_eq!(
        out.trim(),
        r#"configmap "real" deleted from default namespace (server dry run)"#
    );
    let obj = s.kubectl_ok(&["get", "cm", "real", "-o", "json"]);
    let obj: Value = serde_json::from_str(&obj).unwrap();
    assert_eq!(obj["data"]["a"], "b", "dry-run patch persisted");
    assert!(
        obj["metadata"]["labels"].is_null(),
        "dry-run label persisted"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn kube_dry_run_on_create_replace_patch_delete() {
    let s = TestServer::start();
    let c = s.client().await;
    let api = widgets(&c);
    let dry_post = PostParams {
        dry_run: true,
        ..Default::default()
    };
    let answered = api
        .create(&dry_post, &widget("w", json!({"color": "red"})))
        .await
        .expect("dry-run create");
    assert_eq!(answered.data["spec"]["replicas"], 1, "defaults applied");
    assert!(api.get_opt("w").await.unwrap().is_none());
    let status = api_status(
        api.create(&dry_post, &widget("w", json!({"color": "pink"})))
            .await,
        "dry-run create of an invalid Widget",
    );
    assert_eq!(status.code, 422, "validation runs on dry-run: {status:?}");

    let created = api
        .create(
            &PostParams::default(),
            &widget("w", json!({"color": "red"})),
        )
        .await
        .unwrap();
    let rv = created.resource_version();

    let mut changed = created.clone();
    changed.data["spec"]["color"] = json!("blue");
    let answered = api.replace("w", &dry_post, &changed).await.unwrap();
    assert_eq!(answered.data["spec"]["color"], "blue");

    let answered = api
        .patch(
            "w",
            &PatchParams::default().dry_run(),
            &Patch::Merge(json!({"spec": {"color": "green"}})),
        )
        .await
        .unwrap();
    assert_eq!(answered.data["spec"]["color"], "green");

    api.delete("w", &DeleteParams::default().dry_run())
        .await
        .expect("dry-run delete");

    let now = api
        .get("w")
        .await
        .expect("still there after dry-run delete");
    assert_eq!(now.data["spec"]["color"], "red", "nothing persisted");
    assert_eq!(now.resource_version(), rv, "nothing written");
}

#[tokio::test(flavor = "multi_thread")]
async fn field_validation_strict_warn_ignore() {
    let s = TestServer::start();
    let c = s.client().await;
    let body = |name: &str| {
        json!({"apiVersion":"example.dev/v1","kind":"Widget","metadata":{"name":name},"spec":{"color":"red","bogus":1}})
            .to_string()
    };
    let resp = raw_request(
        &c,
        "POST",
        &format!("{WIDGETS}?fieldValidation=Strict"),
        JSON,
        body("strict"),
    )
    .await;
    assert_eq!(resp.status, 400, "{}", resp.text);
    assert!(
        resp.text
            .contains(r#"strict decoding error: unknown field \"spec.bogus\""#),
        "{}",
        resp.text
    );

    let resp = raw_request(
        &c,
        "POST",
        &format!("{WIDGETS}?fieldValidation=Warn"),
        JSON,
        body("warn"),
    )
    .await;
    assert_eq!(resp.status, 201, "{}", resp.text);
    let warnings: Vec<&str> = resp
        .headers
        .get_all("warning")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .collect();
    assert_eq!(
        warnings,
        [r#"299 - "unknown field \"spec.bogus\"""#],
        "Warn answers with a Warning header"
    );
    assert!(resp.json["spec"].get("bogus").is_none(), "{}", resp.text);

    let resp = raw_request(
        &c,
        "POST",
        &format!("{WIDGETS}?fieldValidation=Ignore"),
        JSON,
        body("ignore"),
    )
    .await;
    assert_eq!(resp.status, 201, "{}", resp.text);
    assert!(resp.headers.get("warning").is_none(), "{:?}", resp.headers);

    // Duplicate JSON fields.
    let dup = r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"dup"},"data":{"a":"1","a":"2"}}"#;
    let resp = raw_request(
        &c,
        "POST",
        &format!("{CONFIGMAPS}?fieldValidation=Strict"),
        JSON,
        dup,
    )
    .await;
    assert_eq!(resp.status, 400, "{}", resp.text);
    assert!(
        resp.text.contains(r#"duplicate field \"data.a\""#),
        "{}",
        resp.text
    );
    let resp = raw_request(
        &c,
        "POST",
        &format!("{CONFIGMAPS}?fieldValidation=Warn"),
        JSON,
        dup,
    )
    .await;
    assert_eq!(resp.status, 201, "{}", resp.text);
    let warning = resp
        .headers
        .get("warning")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    assert_eq!(warning, r#"299 - "duplicate field \"data.a\"""#);
    assert_eq!(resp.json["data"]["a"], "2", "the last duplicate wins");

    // kubectl --validate=warn prints the server's warning.
    let file = s.write_file(
        "w.yaml",
        "apiVersion: example.dev/v1\nkind: Widget\nmetadata:\n  name: kw\nspec:\n  color: red\n  bogus: 1\n",
    );
    let out = s.kubectl(&["create", "-f", file.to_str().unwrap(), "--validate=warn"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains(r#"Warning: unknown field "spec.bogus""#),
        "stderr: {stderr}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn field_manager_and_pretty() {
    let s = TestServer::start();
    let c = s.client().await;
    let cms: Api<ConfigMap> = Api::default_namespaced(c.clone());
    let pp = PostParams {
        field_manager: Some("my-controller".into()),
        ..Default::default()
    };
    let created = cms
        .create(&pp, &configmap("m", &[("a", "b")]))
        .await
        .unwrap();
    let entries = created.metadata.managed_fields.unwrap_or_default();
    assert_eq!(entries.len(), 1, "{entries:?}");
    assert_eq!(entries[0].manager.as_deref(), Some("my-controller"));
    assert_eq!(entries[0].operation.as_deref(), Some("Update"));

    let pretty = raw_request(&c, "GET", &format!("{CONFIGMAPS}/m?pretty=true"), None, "").await;
    assert!(
        pretty.text.contains("\n  \"kind\": \"ConfigMap\""),
        "pretty=true indents the JSON: {}",
        pretty.text
    );
    let compact = raw_request(&c, "GET", &format!("{CONFIGMAPS}/m"), None, "").await;
    assert!(!compact.text.contains("\n  "), "{}", compact.text);
}

/// Invalid request options are validated as kube-apiserver's `*Options` kinds: 422
/// Invalid whose message names `CreateOptions.meta.k8s.io ""` (or DeleteOptions,
/// ListOptions), not 400 BadRequest. kubectl shows these as `The request is invalid`.
#[tokio::test(flavor = "multi_thread")]
async fn invalid_request_options_are_422_naming_the_options_kind() {
    let s = TestServer::start();
    let c = s.client().await;
    raw_request(
        &c,
        "POST",
        CONFIGMAPS,
        JSON,
        r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"}}"#,
    )
    .await;
    let cm = r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"y"}}"#;
    let long = "m".repeat(129);
    let cases: Vec<(&str, String, &str, &str)> = vec![
        (
            "POST",
            format!("{CONFIGMAPS}?fieldManager={long}"),
            cm,
            r#"CreateOptions.meta.k8s.io "" is invalid: fieldManager: Too long: may not be more than 128 bytes"#,
        ),
        (
            "POST",
            format!("{CONFIGMAPS}?fieldValidation=Loud"),
            cm,
            r#"CreateOptions.meta.k8s.io "" is invalid: fieldValidation: Unsupported value: "Loud": supported values: "", "Ignore", "Strict", "Warn""#,
        ),
        (
            "POST",
            format!("{CONFIGMAPS}?dryRun=Some"),
            cm,
            r#"CreateOptions.meta.k8s.io "" is invalid: dryRun: Unsupported value: []string{"Some"}: supported values: "All""#,
        ),
        (
            "DELETE",
            format!("{CONFIGMAPS}/x?dryRun=Some"),
            "",
            r#"DeleteOptions.meta.k8s.io "" is invalid: dryRun: Unsupported value: []string{"Some"}: supported values: "All""#,
        ),
        (
            "DELETE",
            format!("{CONFIGMAPS}/x?propagationPolicy=Sideways"),
            "",
            r#"DeleteOptions.meta.k8s.io "" is invalid: propagationPolicy: Unsupported value: "Sideways": supported values: "Foreground", "Background", "Orphan", "nil""#,
        ),
        (
            "DELETE",
            format!("{CONFIGMAPS}/x"),
            r#"{"kind":"DeleteOptions","apiVersion":"v1","propagationPolicy":"Sideways"}"#,
            r#"DeleteOptions.meta.k8s.io "" is invalid: propagationPolicy: Unsupported value: "Sideways": supported values: "Foreground", "Background", "Orphan", "nil""#,
        ),
        (
            "GET",
            format!("{CONFIGMAPS}?resourceVersionMatch=NotOlderThan"),
            "",
            r#"ListOptions.meta.k8s.io "" is invalid: resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided"#,
        ),
    ];
    let mut failures = Vec::new();
    for (method, path, body, want) in cases {
        let ct = if body.is_empty() { None } else { JSON };
        let resp = raw_request(&c, method, &path, ct, body).await;
        if resp.status != 422 || resp.json["reason"] != "Invalid" || resp.json["message"] != want {
            let shown: String = path.chars().take(90).collect();
            failures.push(format!(
                "{method} {shown} {body}\n  expected: 422 Invalid `{want}`\n  actual:   {} {}",
                resp.status, resp.json["message"]
            ));
        }
    }
    let cms: Api<ConfigMap> = Api::default_namespaced(c);
    assert!(cms.get_opt("x").await.unwrap().is_some(), "x was deleted");
    assert!(cms.get_opt("y").await.unwrap().is_none(), "y was created");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
