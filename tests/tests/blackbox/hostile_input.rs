//! Hostile input (issue 19, item 2): requests built to exhaust the server — patches that
//! multiply an object, YAML aliases that expand exponentially, compressed bodies that
//! inflate, JSON nested to the body limit, extreme query values, forged continue tokens.
//! Each must be answered with a 4xx `Status` (code and reason checked) while the server
//! stays up with its peak resident memory (VmHWM) bounded.
//! Malformed input of the ordinary kind is in `bad_input.rs`.

use std::io::Write;

use apiserver_tests::objects::{CONFIGMAPS, JSON, MERGE};
use apiserver_tests::{client_without_retries, raw_request, RawResponse, TestServer};
use base64::Engine;
use serde_json::{json, Value};

const JSON_PATCH: Option<&str> = Some("application/json-patch+json");
const YAML: Option<&str> = Some("application/yaml");

/// Asserts `resp` is a failure `Status` with `code` and `reason`; returns its message.
#[track_caller]
fn expect_status(resp: &RawResponse, code: u16, reason: &str) -> String {
    assert_eq!(
        resp.status,
        code,
        "expected {code} {reason}, got {}: {}",
        resp.status,
        &resp.text[..resp.text.len().min(2000)]
    );
    assert_eq!(resp.json["kind"], "Status", "{}", resp.text);
    assert_eq!(resp.json["code"], u64::from(code), "{}", resp.text);
    assert_eq!(resp.json["reason"], reason, "{}", resp.text);
    resp.json["message"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

/// The server still serves reads and writes.
async fn assert_alive(s: &mut TestServer, c: &kube::Client) {
    assert!(s.is_running(), "the server died:\n{}", s.stderr_tail());
    let resp = raw_request(c, "GET", CONFIGMAPS, None, "").await;
    assert_eq!(resp.status, 200, "{}", resp.text);
}

async fn create_configmap(c: &kube::Client, name: &str, data: Value) -> Value {
    let body =
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": data});
    let resp = raw_request(c, "POST", CONFIGMAPS, JSON, body.to_string()).await;
    assert_eq!(resp.status, 201, "{}", resp.text);
    resp.json
}

#[tokio::test(flavor = "multi_thread")]
async fn patches_cannot_multiply_an_object() {
    let mut s = TestServer::start();
    let c = s.client().await;
    create_configmap(&c, "grow", json!({"k": "x".repeat(1000)})).await;
    let path = format!("{CONFIGMAPS}/grow");
    s.reset_memory_peak();
    let before = s.memory_kib();

    // 30 doubling copies: 1 KB × 2^30 without a limit. Stopped once the copies add up
    // to 3 MiB, as kube-apiserver's JSONPatchMaxCopyBytes: 422.
    let doubling: Vec<Value> = (0..30)
        .map(|i| json!({"op": "copy", "from": "/data", "path": format!("/data/k{i}")}))
        .collect();
    let resp = raw_request(&c, "PATCH", &path, JSON_PATCH, json!(doubling).to_string()).await;
    let message = expect_status(&resp, 422, "Invalid");
    assert!(message.contains("accumulated size"), "{message}");
    s.assert_peak_within(before, 32, "30 doubling JSON-patch copies");
    assert_alive(&mut s, &c).await;

    // More than 10,000 operations: 413, kube-apiserver's words.
    let many: Vec<Value> = (0..10_001)
        .map(|_| json!({"op": "test", "path": "/metadata/name", "value": "grow"}))
        .collect();
    let resp = raw_request(&c, "PATCH", &path, JSON_PATCH, json!(many).to_string()).await;
    let message = expect_status(&resp, 413, "RequestEntityTooLarge");
    assert_eq!(
        message,
        "The allowed maximum operations in a JSON patch is 10000, got 10001"
    );

    // Nesting past what a JSON body may have (a body cannot carry it, a copy into
    // itself makes it): 422, before anything recursive sees it.
    let deep = (0..100).fold(json!("leaf"), |v, _| json!([v]));
    let inside = format!("/data/deep{}", "/0".repeat(99));
    let resp = raw_request(
        &c,
        "PATCH",
        &path,
        JSON_PATCH,
        json!([
            {"op": "add", "path": "/data/deep", "value": deep},
            {"op": "copy", "from": "/data/deep", "path": inside},
        ])
        .to_string(),
    )
    .await;
    let message = expect_status(&resp, 422, "Invalid");
    assert!(message.contains("levels deep"), "{message}");

    // A merge patch cannot take an object past what one body may carry: 413.
    create_configmap(&c, "big", json!({"a": "y".repeat(1024 * 1024)})).await;
    let more = json!({"data": {"b": "z".repeat(5 * 512 * 1024)}}).to_string();
    for patch_type in [MERGE, Some("application/strategic-merge-patch+json")] {
        let resp = raw_request(
            &c,
            "PATCH",
            &format!("{CONFIGMAPS}/big"),
            patch_type,
            more.clone(),
        )
        .await;
        let message = expect_status(&resp, 413, "RequestEntityTooLarge");
        assert!(message.contains("3145728"), "{message}");
    }
    // Data over 1 MiB is refused by validation (422, as upstream), on every backend,
    // before etcd's own request limit (1.5 MiB) could be reached.
    let two_mib = json!({"metadata": {"name": "two"}, "data": {"a": "y".repeat(2 * 1024 * 1024)}});
    let resp = raw_request(&c, "POST", CONFIGMAPS, JSON, two_mib.to_string()).await;
    let message = expect_status(&resp, 422, "Invalid");
    assert!(
        message.contains("may not be more than 1048576 bytes"),
        "{message}"
    );

    // Nothing was changed by any of it.
    let resp = raw_request(&c, "GET", &path, None, "").await;
    assert_eq!(resp.json["data"], json!({"k": "x".repeat(1000)}));
    assert_alive(&mut s, &c).await;
}

/// `a0` a list of 9 strings, each `aN` a list of 9 aliases of `aN-1`: 9^10 strings.
fn billion_laughs() -> String {
    let mut doc = String::from("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: lol\n");
    doc.push_str("a0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n");
    for i in 1..10 {
        let refs = vec![format!("*a{}", i - 1); 9].join(", ");
        doc.push_str(&format!("a{i}: &a{i} [{refs}]\n"));
    }
    doc
}

/// One 1 MB anchor aliased 20,000 times: 20 GB, quadratic rather than exponential.
fn wide_aliases() -> String {
    let anchor = vec!["x".repeat(100); 10_000].join(", ");
    let mut doc = format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: wide\nanchor: &a [{anchor}]\ncopies:\n");
    for _ in 0..20_000 {
        doc.push_str("- *a\n");
    }
    doc
}

#[tokio::test(flavor = "multi_thread")]
async fn yaml_aliases_are_not_expanded_without_bound() {
    let mut s = TestServer::start();
    let c = s.client().await;
    s.reset_memory_peak();
    let before = s.memory_kib();
    for doc in [billion_laughs(), wide_aliases()] {
        let resp = raw_request(&c, "POST", CONFIGMAPS, YAML, doc.clone()).await;
        let message = expect_status(&resp, 400, "BadRequest");
        assert!(message.contains("yaml"), "{message}");
        // Server-side apply decodes YAML too.
        let name = if doc.contains("name: lol") {
            "lol"
        } else {
            "wide"
        };
        let resp = raw_request(
            &c,
            "PATCH",
            &format!("{CONFIGMAPS}/{name}?fieldManager=laughs"),
            Some("application/apply-patch+yaml"),
            doc,
        )
        .await;
        let message = expect_status(&resp, 400, "BadRequest");
        assert!(message.contains("error decoding YAML"), "{message}");
    }
    s.assert_peak_within(before, 48, "YAML aliases");
    // Anchors within reason still work.
    let doc = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: anchored\n  labels: &l {app: a}\n  annotations: *l\n";
    let resp = raw_request(&c, "POST", CONFIGMAPS, YAML, doc).await;
    assert_eq!(resp.status, 201, "{}", resp.text);
    assert_eq!(resp.json["metadata"]["annotations"], json!({"app": "a"}));
    // YAML nested deeper than JSON may be: 400, as for JSON.
    let deep = format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: deep}}\nx: {}{}\n",
        "[".repeat(200),
        "]".repeat(200)
    );
    let resp = raw_request(&c, "POST", CONFIGMAPS, YAML, deep).await;
    expect_status(&resp, 400, "BadRequest");
    assert_alive(&mut s, &c).await;
}

fn gzip(data: &[u8]) -> Vec<u8> {
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    enc.write_all(data).expect("compressing");
    enc.finish().expect("compressing")
}

async fn post_gzip(c: &kube::Client, body: Vec<u8>) -> RawResponse {
    let request = http::Request::builder()
        .method("POST")
        .uri(CONFIGMAPS)
        .header("content-type", "application/json")
        .header("content-encoding", "gzip")
        .header("accept", "application/json")
        .body(kube::client::Body::from(body))
        .expect("request");
    let resp = c.send(request).await.expect("sending");
    let status = resp.status().as_u16();
    let headers = resp.headers().clone();
    let bytes = resp.into_body().collect_bytes().await.expect("body");
    let text = String::from_utf8_lossy(&bytes).into_owned();
    let json = serde_json::from_str(&text).unwrap_or(Value::Null);
    RawResponse {
        status,
        headers,
        text,
        json,
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn compressed_bodies_inflate_only_to_the_body_limit() {
    let mut s = TestServer::start();
    let c = s.client().await;
    // Compressed bodies are accepted...
    let small = gzip(br#"{"metadata":{"name":"zipped"},"data":{"a":"b"}}"#);
    let resp = post_gzip(&c, small).await;
    assert_eq!(resp.status, 201, "{}", resp.text);
    // ...and inflated only up to the 3 MiB body limit: 32 KB that inflate to 32 MiB.
    let mut bomb = br#"{"metadata":{"name":"bomb"},"data":{"a":""#.to_vec();
    bomb.resize(32 * 1024 * 1024, b'a');
    bomb.extend_from_slice(br#""}}"#);
    let compressed = gzip(&bomb);
    assert!(compressed.len() < 256 * 1024, "{}", compressed.len());
    s.reset_memory_peak();
    let before = s.memory_kib();
    let resp = post_gzip(&c, compressed).await;
    expect_status(&resp, 413, "RequestEntityTooLarge");
    s.assert_peak_within(before, 16, "a gzip bomb");
    assert_alive(&mut s, &c).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn compressed_bodies_are_bounded_when_the_audit_log_reads_them_too() {
    // At Request level the audit filter reads the body before the handler does.
    let dir = tempfile::tempdir().expect("temp dir");
    let policy = dir.path().join("policy.yaml");
    std::fs::write(
        &policy,
        "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n  - level: RequestResponse\n",
    )
    .expect("writing the policy");
    let flags = [
        format!("--audit-policy-file={}", policy.display()),
        format!(
            "--audit-log-path={}",
            dir.path().join("audit.log").display()
        ),
    ];
    let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
    let mut s = TestServer::start_with_flags(&flags);
    let c = s.client().await;
    let small = gzip(br#"{"metadata":{"name":"zipped"},"data":{"a":"b"}}"#);
    let resp = post_gzip(&c, small).await;
    assert_eq!(resp.status, 201, "{}", resp.text);
    let mut bomb = br#"{"metadata":{"name":"bomb"},"data":{"a":""#.to_vec();
    bomb.resize(32 * 1024 * 1024, b'a');
    bomb.extend_from_slice(br#""}}"#);
    let compressed = gzip(&bomb);
    s.reset_memory_peak();
    let before = s.memory_kib();
    let resp = post_gzip(&c, compressed).await;
    expect_status(&resp, 413, "RequestEntityTooLarge");
    s.assert_peak_within(before, 16, "a gzip bomb read by the audit log");
    assert_alive(&mut s, &c).await;
}

/// JSON nested as deep as the body limit allows (1.5 million arrays, 3 MB) is refused
/// before it is built: 400, and the server's peak memory bounded.
#[tokio::test(flavor = "multi_thread")]
async fn deeply_nested_json_is_refused_with_bounded_memory() {
    let mut s = TestServer::start();
    let c = s.client().await;
    let depth = 1_500_000;
    let deep = format!("{}{}", "[".repeat(depth), "]".repeat(depth));
    s.reset_memory_peak();
    let before = s.memory_kib();
    let resp = raw_request(&c, "POST", CONFIGMAPS, JSON, deep).await;
    expect_status(&resp, 400, "BadRequest");
    s.assert_peak_within(before, 16, "JSON nested 1.5 million deep");
    assert_alive(&mut s, &c).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn extreme_query_values_are_client_errors() {
    // Counts the namespace's ConfigMaps.
    let mut s = TestServer::start_with_flags(&[apiserver_tests::WITHOUT_ROOT_CA_PUBLISHER]);
    let c = client_without_retries(s.kubeconfig()).await;
    let cm = create_configmap(&c, "rv", json!({"a": "b"})).await;
    create_configmap(&c, "rv2", json!({})).await;
    let path = format!("{CONFIGMAPS}/rv");
    let u64_max = u64::MAX.to_string();
    s.reset_memory_peak();
    let before = s.memory_kib();

    // limit is an int64: beyond it 400, negative means no limit (as upstream).
    let resp = raw_request(
        &c,
        "GET",
        &format!("{CONFIGMAPS}?limit={u64_max}"),
        None,
        "",
    )
    .await;
    expect_status(&resp, 400, "BadRequest");
    let resp = raw_request(&c, "GET", &format!("{CONFIGMAPS}?limit=-1"), None, "").await;
    assert_eq!(resp.status, 200, "{}", resp.text);
    assert_eq!(resp.json["items"].as_array().map(Vec::len), Some(2));
    let resp = raw_request(
        &c,
        "GET",
        &format!("{CONFIGMAPS}?limit={}", i64::MAX),
        None,
        "",
    )
    .await;
    assert_eq!(resp.status, 200, "{}", resp.text);
    assert_eq!(resp.json["metadata"].get("continue"), None, "{}", resp.text);

    // resourceVersion beyond the store's: 504 Timeout with the ResourceVersionTooLarge
    // cause (clients retry it), for gets, lists (both matches) and watches.
    for query in [
        format!("{path}?resourceVersion={u64_max}"),
        format!("{CONFIGMAPS}?resourceVersion={u64_max}"),
        format!("{CONFIGMAPS}?resourceVersion={u64_max}&resourceVersionMatch=Exact"),
        format!("{CONFIGMAPS}?resourceVersion={u64_max}&resourceVersionMatch=NotOlderThan"),
        format!("{CONFIGMAPS}?watch=true&resourceVersion={u64_max}"),
        format!("{CONFIGMAPS}?watch=true&resourceVersion={}", i64::MAX),
    ] {
        let resp = raw_request(&c, "GET", &query, None, "").await;
        let message = expect_status(&resp, 504, "Timeout");
        assert!(
            message.starts_with("Too large resource version"),
            "{query}: {message}"
        );
        assert_eq!(
            resp.json["details"]["causes"][0]["reason"], "ResourceVersionTooLarge",
            "{query}: {}",
            resp.text
        );
    }
    // A deletecollection lists first, and refuses the same way (deleting nothing).
    let resp = raw_request(
        &c,
        "DELETE",
        &format!("{CONFIGMAPS}?resourceVersion={u64_max}&resourceVersionMatch=Exact"),
        None,
        "",
    )
    .await;
    expect_status(&resp, 504, "Timeout");
    // Not a uint64 at all: 400.
    for rv in ["18446744073709551616", "-1", "1e3", "0x10"] {
        for query in [
            format!("{path}?resourceVersion={rv}"),
            format!("{CONFIGMAPS}?resourceVersion={rv}"),
            format!("{CONFIGMAPS}?watch=true&resourceVersion={rv}"),
        ] {
            let resp = raw_request(&c, "GET", &query, None, "").await;
            expect_status(&resp, 400, "BadRequest");
        }
    }
    // As a precondition or an update's resourceVersion, an extreme value is just not
    // the object's: 409 Conflict.
    for rv in [u64_max.as_str(), "18446744073709551616", "-1"] {
        let delete = json!({"kind": "DeleteOptions", "apiVersion": "v1", "preconditions": {"resourceVersion": rv}});
        let resp = raw_request(&c, "DELETE", &path, JSON, delete.to_string()).await;
        expect_status(&resp, 409, "Conflict");
        let mut update = cm.clone();
        update["metadata"]["resourceVersion"] = json!(rv);
        let resp = raw_request(&c, "PUT", &path, JSON, update.to_string()).await;
        expect_status(&resp, 409, "Conflict");
        let patch = json!({"metadata": {"resourceVersion": rv}, "data": {"a": "c"}});
        let resp = raw_request(&c, "PATCH", &path, MERGE, patch.to_string()).await;
        expect_status(&resp, 409, "Conflict");
    }

    // Selectors as long as a URL may be (the client's limit is 64 KiB): 400 with a
    // short answer.
    let long = "x".repeat(60_000);
    let resp = raw_request(
        &c,
        "GET",
        &format!("{CONFIGMAPS}?labelSelector=app%3D{long}"),
        None,
        "",
    )
    .await;
    let message = expect_status(&resp, 400, "BadRequest");
    assert!(
        message.contains("must be no more than 63 characters"),
        "{message}"
    );
    assert!(
        message.len() < 1000,
        "the answer repeats the selector: {}",
        message.len()
    );
    let resp = raw_request(
        &c,
        "GET",
        &format!("{CONFIGMAPS}?labelSelector={long}%3Dx"),
        None,
        "",
    )
    .await;
    let message = expect_status(&resp, 400, "BadRequest");
    assert!(
        message.len() < 1000,
        "the answer repeats the selector: {}",
        message.len()
    );
    let resp = raw_request(
        &c,
        "GET",
        &format!("{CONFIGMAPS}?fieldSelector={long}"),
        None,
        "",
    )
    .await;
    let message = expect_status(&resp, 400, "BadRequest");
    assert!(
        message.len() < 1000,
        "the answer repeats the selector: {}",
        message.len()
    );
    // A long field selector value is legal, and matches nothing here.
    let resp = raw_request(
        &c,
        "GET",
        &format!("{CONFIGMAPS}?fieldSelector=metadata.name%3D{long}"),
        None,
        "",
    )
    .await;
    assert_eq!(
        resp.status,
        200,
        "{}",
        &resp.text[..resp.text.len().min(500)]
    );
    assert_eq!(resp.json["items"], json!([]));
    // A label value over 63 characters on an object: 422.
    let body = json!({"metadata": {"name": "labelled", "labels": {"a": "v".repeat(64)}}});
    let resp = raw_request(&c, "POST", CONFIGMAPS, JSON, body.to_string()).await;
    expect_status(&resp, 422, "Invalid");
    s.assert_peak_within(
        before,
        16,
        "extreme limits, resourceVersions, labels and selectors",
    );
    assert_alive(&mut s, &c).await;
}

fn b64(v: &Value) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(v.to_string())
}

#[tokio::test(flavor = "multi_thread")]
async fn forged_continue_tokens_never_serve_another_revision() {
    // Counts the namespace's ConfigMaps.
    let mut s = TestServer::start_with_flags(&[apiserver_tests::WITHOUT_ROOT_CA_PUBLISHER]);
    let c = s.client().await;
    for name in ["c1", "c2", "c3"] {
        create_configmap(&c, name, json!({})).await;
    }
    let first = raw_request(&c, "GET", &format!("{CONFIGMAPS}?limit=1"), None, "").await;
    assert_eq!(first.status, 200, "{}", first.text);
    let token = first.json["metadata"]["continue"]
        .as_str()
        .expect("a continue token")
        .to_string();
    let raw = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(&token)
        .expect("base64");
    let decoded: Value = serde_json::from_slice(&raw).expect("JSON token");
    let rv = decoded["rv"].as_u64().expect("rv");
    s.reset_memory_peak();
    let before = s.memory_kib();
    let forged = |change: &dyn Fn(&mut Value)| {
        let mut t = decoded.clone();
        change(&mut t);
        b64(&t)
    };
    for bad in [
        // A revision the server has not reached: it must not list today's state under it.
        forged(&|t| t["rv"] = json!(rv + 1000)),
        forged(&|t| t["rv"] = json!(u64::MAX)),
        forged(&|t| t["rv"] = json!(0)),
        forged(&|t| t["rv"] = json!(-1)),
        forged(&|t| t["rv"] = json!("12")),
        forged(&|t| t["v"] = json!("meta.k8s.io/v2")),
        forged(&|t| t["start"] = json!("../secrets/")),
        forged(&|t| t["start"] = json!("/registry/secrets/")),
        "x".repeat(10_000),
    ] {
        let resp = raw_request(
            &c,
            "GET",
            &format!("{CONFIGMAPS}?limit=1&continue={bad}"),
            None,
            "",
        )
        .await;
        let message = expect_status(&resp, 400, "BadRequest");
        assert!(message.contains("continue"), "{message}");
    }
    // The genuine token still reads the first page's revision, whatever changed since.
    let resp = raw_request(
        &c,
        "PATCH",
        &format!("{CONFIGMAPS}/c2"),
        MERGE,
        json!({"data": {"changed": "yes"}}).to_string(),
    )
    .await;
    assert_eq!(resp.status, 200, "{}", resp.text);
    let resp = raw_request(
        &c,
        "GET",
        &format!("{CONFIGMAPS}?limit=5&continue={token}"),
        None,
        "",
    )
    .await;
    assert_eq!(resp.status, 200, "{}", resp.text);
    assert_eq!(resp.json["metadata"]["resourceVersion"], rv.to_string());
    let items = resp.json["items"].as_array().expect("items");
    assert_eq!(items.len(), 2, "{}", resp.text);
    for item in items {
        let item_rv: u64 = item["metadata"]["resourceVersion"]
            .as_str()
            .and_then(|v| v.parse().ok())
            .expect("an item resourceVersion");
        assert!(item_rv <= rv, "{item}");
        assert_eq!(item["data"].get("changed"), None, "{item}");
    }
    s.assert_peak_within(before, 16, "forged continue tokens");
    assert_alive(&mut s, &c).await;
}

/// The core group's paths schemathesis runs against (it has 30 kinds): ConfigMaps,
/// Secrets and Namespaces.
fn core_kept(path: &str) -> bool {
    path.split('/').any(|s| s == "configmaps" || s == "secrets")
        || path == "/api/v1/namespaces"
        || path.starts_with("/api/v1/namespaces/{name}")
}

/// Which of a document's paths schemathesis runs against.
type KeepPath = fn(&str) -> bool;

/// The served OpenAPI v3 documents schemathesis is driven by, each with the paths kept.
const SCHEMATHESIS_DOCUMENTS: &[(&str, KeepPath)] = &[
    ("api/v1", core_kept),
    ("apis/apps/v1", |_| true),
    ("apis/example.dev/v1", |_| true),
];

/// One document's paths that can be answered at once: no `/watch/` paths and no `watch`
/// query parameter (a watch streams until its timeout, which would stall the run).
fn without_watches(mut doc: Value, keep: KeepPath) -> Value {
    let paths = doc["paths"]
        .as_object_mut()
        .expect("the document has paths");
    paths.retain(|path, _| keep(path) && !path.contains("/watch/"));
    for item in paths.values_mut() {
        for operation in item
            .as_object_mut()
            .into_iter()
            .flat_map(|o| o.values_mut())
        {
            let parameters = operation
                .get_mut("parameters")
                .and_then(Value::as_array_mut);
            if let Some(parameters) = parameters {
                parameters.retain(|p| p["name"] != "watch");
            }
        }
    }
    doc
}

/// Schemathesis (property-based requests from the server's own `/openapi/v3` documents,
/// valid and invalid, in a fixed seed's order) against the running binary as the admin:
/// every answer must be below 500. Bounded: 40 s of generated requests.
#[tokio::test(flavor = "multi_thread")]
async fn schemathesis_gets_no_server_error_from_the_served_openapi_documents() {
    let mut s = TestServer::start();
    let c = s.client().await;
    let mut merged = json!({"openapi": "3.0.0", "info": {"title": "apiserver", "version": "v1"},
                            "paths": {}, "components": {"schemas": {}}});
    for (document, keep) in SCHEMATHESIS_DOCUMENTS {
        let resp = raw_request(&c, "GET", &format!("/openapi/v3/{document}"), None, "").await;
        assert_eq!(resp.status, 200, "{document}: {}", resp.text);
        let doc = without_watches(resp.json, *keep);
        for part in ["paths", "components/schemas", "components/securitySchemes"] {
            let pointer = format!("/{part}");
            let (Some(from), Some(into)) = (doc.pointer(&pointer), merged.pointer_mut(&pointer))
            else {
                continue;
            };
            let into = into.as_object_mut().unwrap();
            into.extend(from.as_object().unwrap().clone());
        }
    }
    let schema = s.write_file("openapi.json", &merged.to_string());
    let token = std::fs::read_to_string(s.data_dir().join("admin.token")).unwrap();
    let run = std::process::Command::new(apiserver_tests::python_binary())
        .args(["-m", "schemathesis.cli", "run"])
        .arg(&schema)
        .args(["--url", s.url()])
        .arg("--tls-verify")
        .arg(s.data_dir().join("certs/ca.crt"))
        .args([
            "--header",
            &format!("Authorization: Bearer {}", token.trim()),
        ])
        .args(["--checks", "not_a_server_error"])
        // The fuzzing phase for a fixed time (the coverage phase takes minutes here).
        .args(["--phases", "fuzzing", "--max-time", "40"])
        .args(["--seed", "19", "--workers", "2"])
        .args(["--generation-database", "none", "--no-color"])
        .args(["--request-timeout", "20", "--suppress-health-check", "all"])
        .current_dir(schema.parent().unwrap())
        .stdin(std::process::Stdio::null())
        .output()
        .expect("running schemathesis (tests/requirements.txt)");
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert!(
        run.status.success(),
        "schemathesis found failures ({}):\n{stdout}\n{}",
        run.status,
        String::from_utf8_lossy(&run.stderr)
    );
    assert_alive(&mut s, &c).await;
}
