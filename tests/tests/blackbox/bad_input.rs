//! Malformed and misdirected requests, sent raw through the kube client: each must be
//! answered with the right 4xx code and a `Status` body, never a 500.

use apiserver_tests::objects::{CONFIGMAPS, GADGETS, JSON, WIDGETS};
use apiserver_tests::{raw_request, RawResponse, TestServer};
use serde_json::Value;

/// Asserts `resp` is a failure `Status` with `code` and `reason`; returns its message.
#[track_caller]
fn expect_status(resp: &RawResponse, code: u16, reason: &str) -> String {
    assert_eq!(
        resp.status, code,
        "expected HTTP {code} {reason}, got {}: {}",
        resp.status, resp.text
    );
    let s = &resp.json;
    assert_eq!(s["kind"], "Status", "not a Status: {}", resp.text);
    assert_eq!(s["apiVersion"], "v1", "{}", resp.text);
    assert_eq!(s["status"], "Failure", "{}", resp.text);
    assert_eq!(s["code"], u64::from(code), "{}", resp.text);
    assert_eq!(s["reason"], reason, "{}", resp.text);
    let content_type = resp
        .headers
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    assert!(
        content_type.starts_with("application/json"),
        "Status served as {content_type:?}"
    );
    s["message"].as_str().unwrap_or_default().to_string()
}

#[tokio::test(flavor = "multi_thread")]
async fn malformed_json_body_is_bad_request() {
    let s = TestServer::start();
    let c = s.client().await;
    let resp = raw_request(&c, "POST", CONFIGMAPS, JSON, "{\"metadata\": {\"name\": ").await;
    expect_status(&resp, 400, "BadRequest");
    let resp = raw_request(&c, "POST", WIDGETS, JSON, "{bad json").await;
    expect_status(&resp, 400, "BadRequest");
    // Well-formed JSON that is not an object.
    for body in ["[]", "null", "\"text\"", "42"] {
        let resp = raw_request(&c, "POST", CONFIGMAPS, JSON, body).await;
        expect_status(&resp, 400, "BadRequest");
    }
    // Bad YAML too.
    let resp = raw_request(
        &c,
        "POST",
        CONFIGMAPS,
        Some("application/yaml"),
        "metadata: [unclosed",
    )
    .await;
    expect_status(&resp, 400, "BadRequest");
    let resp = raw_request(&c, "GET", CONFIGMAPS, None, "").await;
    // The root CA published in every namespace is not this test's.
    let created: Vec<&Value> = resp.json["items"]
        .as_array()
        .expect("a list")
        .iter()
        .filter(|o| o["metadata"]["name"] != "kube-root-ca.crt")
        .collect();
    assert!(created.is_empty(), "nothing was created: {created:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn body_of_another_kind_is_bad_request() {
    let s = TestServer::start();
    let c = s.client().await;
    let secret =
        r#"{"apiVersion":"v1","kind":"Secret","metadata":{"name":"s"},"stringData":{"a":"b"}}"#;
    let resp = raw_request(&c, "POST", CONFIGMAPS, JSON, secret).await;
    let msg = expect_status(&resp, 400, "BadRequest");
    assert!(msg.contains("Secret"), "{msg}");

    let widget = r#"{"apiVersion":"example.dev/v1","kind":"Widget","metadata":{"name":"w"},"spec":{"color":"red"}}"#;
    let resp = raw_request(&c, "POST", GADGETS, JSON, widget).await;
    expect_status(&resp, 400, "BadRequest");
    // The right kind in the wrong version.
    let resp = raw_request(
        &c,
        "POST",
        WIDGETS,
        JSON,
        widget.replace("example.dev/v1", "example.dev/v2"),
    )
    .await;
    expect_status(&resp, 400, "BadRequest");
    // A namespace in the body that contradicts the URL.
    let resp = raw_request(
        &c,
        "POST",
        CONFIGMAPS,
        JSON,
        r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x","namespace":"kube-system"}}"#,
    )
    .await;
    expect_status(&resp, 400, "BadRequest");
}

#[tokio::test(flavor = "multi_thread")]
async fn unknown_paths_are_not_found() {
    let s = TestServer::start();
    let c = s.client().await;
    for path in [
        "/apis/nope.example.com/v1/things",
        "/apis/example.dev/v1/namespaces/default/things",
        "/apis/example.dev/v2/gadgets",
        "/api/v1/namespaces/default/bananas",
        // A subresource only a kubelet serves.
        "/api/v1/namespaces/default/pods/x/exec",
        "/api/v1/namespaces/default/configmaps/x/status",
        "/nonsense",
    ] {
        let resp = raw_request(&c, "GET", path, None, "").await;
        let msg = expect_status(&resp, 404, "NotFound");
        assert!(
            msg.contains("could not find the requested resource"),
            "{path}: {msg}"
        );
    }
    let resp = raw_request(&c, "POST", "/apis/nope.example.com/v1/things", JSON, "{}").await;
    expect_status(&resp, 404, "NotFound");
}

#[tokio::test(flavor = "multi_thread")]
async fn unsupported_methods_are_method_not_allowed() {
    let s = TestServer::start();
    let c = s.client().await;
    let cases = [
        ("PUT", CONFIGMAPS),
        ("PATCH", CONFIGMAPS),
        ("PUT", WIDGETS),
        ("PUT", GADGETS),
        // The all-namespaces list is read-only.
        ("POST", "/api/v1/configmaps"),
        ("DELETE", "/apis/example.dev/v1/widgets"),
        // A subresource cannot be posted to or deleted.
        ("POST", "/apis/example.dev/v1/gadgets/g/status"),
        ("DELETE", "/apis/example.dev/v1/gadgets/g/status"),
        // Objects are created on the collection.
        ("POST", "/api/v1/namespaces/default/configmaps/x"),
    ];
    for (method, path) in cases {
        let resp = raw_request(&c, method, path, JSON, "{}").await;
        assert_eq!(resp.status, 405, "{method} {path}: {}", resp.text);
        expect_status(&resp, 405, "MethodNotAllowed");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn unsupported_content_type_is_415() {
    let s = TestServer::start();
    let c = s.client().await;
    let cm = r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"}}"#;
    let resp = raw_request(&c, "POST", CONFIGMAPS, Some("text/plain"), cm).await;
    let msg = expect_status(&resp, 415, "UnsupportedMediaType");
    assert!(msg.contains("text/plain"), "{msg}");
    // Example kinds, like custom resources, have no protobuf encoding.
    let resp = raw_request(
        &c,
        "POST",
        WIDGETS,
        Some("application/vnd.kubernetes.protobuf"),
        vec![0x6b, 0x38, 0x73, 0x00],
    )
    .await;
    expect_status(&resp, 415, "UnsupportedMediaType");
    // A patch must say which kind of patch it is.
    s.kubectl_ok(&["create", "configmap", "x"]);
    let resp = raw_request(
        &c,
        "PATCH",
        &format!("{CONFIGMAPS}/x"),
        Some("application/json"),
        "{}",
    )
    .await;
    expect_status(&resp, 415, "UnsupportedMediaType");
    let resp = raw_request(
        &c,
        "PATCH",
        &format!("{CONFIGMAPS}/x"),
        Some("text/plain"),
        "{}",
    )
    .await;
    expect_status(&resp, 415, "UnsupportedMediaType");
}

#[tokio::test(flavor = "multi_thread")]
async fn create_in_a_missing_namespace_is_not_found() {
    let s = TestServer::start();
    let c = s.client().await;
    let cm = r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"}}"#;
    let resp = raw_request(
        &c,
        "POST",
        "/api/v1/namespaces/missing/configmaps",
        JSON,
        cm,
    )
    .await;
    let msg = expect_status(&resp, 404, "NotFound");
    assert_eq!(msg, r#"namespaces "missing" not found"#);
    assert_eq!(resp.json["details"]["name"], "missing");
    assert_eq!(resp.json["details"]["kind"], "namespaces");

    let widget = r#"{"apiVersion":"example.dev/v1","kind":"Widget","metadata":{"name":"w"},"spec":{"color":"red"}}"#;
    let resp = raw_request(
        &c,
        "POST",
        "/apis/example.dev/v1/namespaces/missing/widgets",
        JSON,
        widget,
    )
    .await;
    let msg = expect_status(&resp, 404, "NotFound");
    assert_eq!(msg, r#"namespaces "missing" not found"#);

    // The same through kubectl.
    let err = s.kubectl_err(&["create", "configmap", "x", "-n", "missing"]);
    assert!(err.contains(r#"namespaces "missing" not found"#), "{err}");
}

#[tokio::test(flavor = "multi_thread")]
async fn odd_requests_are_client_errors_not_500() {
    let s = TestServer::start();
    let c = s.client().await;
    s.kubectl_ok(&["create", "configmap", "x"]);
    let x = format!("{CONFIGMAPS}/x");
    let deep = format!("{}{}", "[".repeat(10_000), "]".repeat(10_000));
    let long_name = "a".repeat(300);
    let long_body = format!(r#"{{"metadata":{{"name":"{long_name}"}}}}"#);
    // (method, path, content type, body, expected code)
    type Case<'a> = (&'a str, String, Option<&'a str>, Vec<u8>, u16);
    let cases: Vec<Case> = vec![
        ("POST", CONFIGMAPS.into(), JSON, b"".to_vec(), 400),
        ("POST", CONFIGMAPS.into(), JSON, deep.into_bytes(), 400),
        (
            "POST",
            CONFIGMAPS.into(),
            JSON,
            vec![0xff, 0xfe, 0x00, 0x7b],
            400,
        ),
        // Protobuf that is not a Kubernetes envelope.
        (
            "POST",
            CONFIGMAPS.into(),
            Some("application/vnd.kubernetes.protobuf"),
            b"not protobuf at all".to_vec(),
            400,
        ),
        ("POST", CONFIGMAPS.into(), JSON, long_body.into_bytes(), 422),
        (
            "POST",
            CONFIGMAPS.into(),
            JSON,
            br#"{"metadata":{"name":"d"},"data":{"a":1}}"#.to_vec(),
            422,
        ),
        (
            "POST",
            "/api/v1/namespaces/default/secrets".into(),
            JSON,
            br#"{"metadata":{"name":"s"},"data":{"k":"not base64!"}}"#.to_vec(),
            400,
        ),
        (
            "POST",
            format!("{CONFIGMAPS}?fieldValidation=Bogus"),
            JSON,
            br#"{"metadata":{"name":"fv"}}"#.to_vec(),
            // kube-apiserver validates CreateOptions: 422 Invalid.
            422,
        ),
        (
            "POST",
            format!("{CONFIGMAPS}?dryRun=Bogus"),
            JSON,
            br#"{"metadata":{"name":"dr"}}"#.to_vec(),
            422,
        ),
        ("GET", format!("{CONFIGMAPS}?limit=abc"), None, vec![], 400),
        (
            "GET",
            format!("{CONFIGMAPS}?limit=1&continue=garbage"),
            None,
            vec![],
            400,
        ),
        (
            "PATCH",
            x.clone(),
            Some("application/merge-patch+json"),
            b"[1,2]".to_vec(),
            400,
        ),
        (
            "PATCH",
            x.clone(),
            Some("application/merge-patch+json"),
            b"{bad".to_vec(),
            400,
        ),
        (
            "PATCH",
            x.clone(),
            Some("application/json-patch+json"),
            br#"{"op":"add"}"#.to_vec(),
            400,
        ),
        (
            "PATCH",
            x.clone(),
            Some("application/json-patch+json"),
            br#"[{"op":"remove","path":"/nope"}]"#.to_vec(),
            422,
        ),
        (
            "PATCH",
            format!("{CONFIGMAPS}/absent"),
            Some("application/merge-patch+json"),
            b"{}".to_vec(),
            404,
        ),
        (
            "PUT",
            x.clone(),
            JSON,
            br#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"other"}}"#.to_vec(),
            400,
        ),
        (
            "PUT",
            format!("{CONFIGMAPS}/absent"),
            JSON,
            br#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"absent"}}"#.to_vec(),
            404,
        ),
        ("DELETE", x.clone(), JSON, b"{bad".to_vec(), 400),
        ("DELETE", format!("{CONFIGMAPS}/absent"), None, vec![], 404),
    ];
    for (method, path, ct, body, want) in cases {
        let resp = raw_request(&c, method, &path, ct, body).await;
        assert!(
            resp.status < 500,
            "{method} {path} answered {}: {}",
            resp.status,
            resp.text
        );
        assert_eq!(
            resp.status, want,
            "{method} {path} (content type {ct:?}): {}",
            resp.text
        );
        assert_eq!(
            resp.json["kind"], "Status",
            "{method} {path}: {}",
            resp.text
        );
        assert_eq!(resp.json["code"], u64::from(want), "{}", resp.text);
    }
    // An Accept the server cannot produce.
    let request = http::Request::builder()
        .uri(CONFIGMAPS)
        .header("accept", "application/x-unknown")
        .body(kube::client::Body::from(Vec::new()))
        .unwrap();
    let resp = c.send(request).await.expect("send");
    assert_eq!(resp.status().as_u16(), 406);
    // The ConfigMap is untouched by all of this.
    let resp = raw_request(&c, "GET", &x, None, "").await;
    assert_eq!(resp.status, 200, "{}", resp.text);
    assert_eq!(resp.json["metadata"]["name"], "x");
}
