//! Server behaviour that differs from kube-apiserver, one test per bug. Each test states
//! the request, what kube-apiserver answers, and fails until the server does the same.

use apiserver_tests::objects::{widgets_resource, CONFIGMAPS, GADGETS, JSON, WIDGETS};
use apiserver_tests::{raw_request, TestServer};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DynamicObject, PostParams};
use serde_json::{json, Value};

/// POST without `apiVersion`/`kind` (allowed: the URL names the type) must still store
/// and serve a typed object. The server stores the body as given, so GET answers
/// `{"metadata":...}` with no `kind`, and `kubectl get cm <name> -o yaml` fails with
/// `error: Object 'Kind' is missing in '{"metadata":...}'`.
#[tokio::test(flavor = "multi_thread")]
async fn objects_posted_without_type_meta_are_served_with_it() {
    let s = TestServer::start();
    let c = s.client().await;
    let resp = raw_request(
        &c,
        "POST",
        CONFIGMAPS,
        JSON,
        r#"{"metadata":{"name":"untyped"},"data":{"a":"b"}}"#,
    )
    .await;
    assert_eq!(resp.status, 201, "{}", resp.text);
    assert_eq!(
        resp.json["kind"], "ConfigMap",
        "create response: {}",
        resp.text
    );
    assert_eq!(
        resp.json["apiVersion"], "v1",
        "create response: {}",
        resp.text
    );

    let resp = raw_request(&c, "GET", &format!("{CONFIGMAPS}/untyped"), None, "").await;
    assert_eq!(
        resp.json["kind"], "ConfigMap",
        "get response: {}",
        resp.text
    );
    assert_eq!(resp.json["apiVersion"], "v1", "get response: {}", resp.text);
    let out = s.kubectl(&["get", "cm", "untyped", "-o", "yaml"]);
    assert!(
        out.status.success(),
        "kubectl get -o yaml: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `kind`, `apiVersion`, `metadata` and `metadata.name` have fixed JSON types;
/// kube-apiserver rejects a body where they have another type with 400 BadRequest
/// (a decode error). The server stores `{"kind":5,...}` and `{"apiVersion":1,...}` as
/// given (201), stores ill-typed metadata fields (`labels: "x"`, `annotations: {"k": 1}`,
/// `finalizers: "x"`) as given (201), and answers `{"metadata":"x"}` /
/// `{"metadata":{"name":5}}` with 422 "name or generateName is required". Once such an
/// object is stored, `Api<ConfigMap>::list` (and any typed client) fails to decode the
/// list.
#[tokio::test(flavor = "multi_thread")]
async fn wrongly_typed_type_and_object_meta_are_bad_requests() {
    let s = TestServer::start();
    let c = s.client().await;
    let mut failures = Vec::new();
    for body in [
        r#"{"kind":5,"metadata":{"name":"k"}}"#,
        r#"{"apiVersion":1,"metadata":{"name":"v"}}"#,
        r#"{"metadata":"x"}"#,
        r#"{"metadata":{"name":5}}"#,
        r#"{"metadata":{"name":"l","labels":"x"}}"#,
        r#"{"metadata":{"name":"a","annotations":{"k":1}}}"#,
        r#"{"metadata":{"name":"f","finalizers":"x"}}"#,
    ] {
        let resp = raw_request(&c, "POST", CONFIGMAPS, JSON, body).await;
        if resp.status != 400 || resp.json["reason"] != "BadRequest" {
            failures.push(format!("POST {body} -> {}: {}", resp.status, resp.text));
        }
    }
    // What got stored breaks typed clients: every list of the kind fails to decode.
    let typed: Api<ConfigMap> = Api::default_namespaced(c);
    if let Err(e) = typed.list(&Default::default()).await {
        failures.push(format!("and Api<ConfigMap>::list now fails: {e}"));
    }
    assert!(
        failures.is_empty(),
        "expected 400 BadRequest:\n{}",
        failures.join("\n")
    );
}

/// Label keys and values are validated by kube-apiserver: `{"a b": "c"}` is answered
/// 422 `metadata.labels: Invalid value: "a b": name part must consist of alphanumeric
/// characters, ...`. The server stores it (201).
#[tokio::test(flavor = "multi_thread")]
async fn invalid_label_keys_are_rejected() {
    let s = TestServer::start();
    let c = s.client().await;
    let resp = raw_request(
        &c,
        "POST",
        CONFIGMAPS,
        JSON,
        r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"l","labels":{"a b":"c"}}}"#,
    )
    .await;
    assert_eq!(resp.status, 422, "{}", resp.text);
    assert_eq!(resp.json["reason"], "Invalid", "{}", resp.text);
    assert!(
        resp.json["message"]
            .as_str()
            .unwrap_or_default()
            .contains("metadata.labels"),
        "{}",
        resp.text
    );
}

/// A body over the 3 MiB limit must be answered with a `Status` (413,
/// reason RequestEntityTooLarge), as every other failure is. actix-web's payload
/// limit answers first, with `text/plain` "payload reached size limit".
#[tokio::test(flavor = "multi_thread")]
async fn oversized_body_is_answered_with_a_status() {
    let s = TestServer::start();
    let c = s.client().await;
    let big = format!(
        r#"{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"big"}},"data":{{"a":"{}"}}}}"#,
        "x".repeat(4 * 1024 * 1024)
    );
    let resp = raw_request(&c, "POST", CONFIGMAPS, JSON, big).await;
    assert_eq!(resp.status, 413, "{}", resp.text);
    assert_eq!(resp.json["kind"], "Status", "body: {:?}", resp.text);
    assert_eq!(
        resp.json["reason"], "RequestEntityTooLarge",
        "{}",
        resp.text
    );
}

/// For kinds with a status subresource, kube-apiserver drops `status` on create
/// (status is written only through /status). The server keeps it.
#[tokio::test(flavor = "multi_thread")]
async fn status_given_on_create_is_dropped_when_status_is_a_subresource() {
    let s = TestServer::start();
    let c = s.client().await;
    let ar = widgets_resource();
    let widgets: Api<DynamicObject> = Api::default_namespaced_with(c.clone(), &ar);
    let created = widgets
        .create(
            &PostParams::default(),
            &DynamicObject::new("w", &ar).data(json!({
                "spec": { "color": "blue" },
                "status": { "replicas": 42 },
            })),
        )
        .await
        .expect("create");
    assert_eq!(
        created.data.get("status"),
        None,
        "Widget status kept on create"
    );
    let resp = raw_request(
        &c,
        "POST",
        GADGETS,
        JSON,
        r#"{"apiVersion":"example.dev/v1","kind":"Gadget","metadata":{"name":"g"},"spec":{"mode":"Manual"},"status":{"powered":true}}"#,
    )
    .await;
    assert_eq!(resp.status, 201, "{}", resp.text);
    assert_eq!(
        resp.json.get("status"),
        None,
        "Gadget status kept on create"
    );
}

/// PUT on /status with a body that has no `status` clears the status (kube-apiserver's
/// status strategy copies the old object and sets or deletes `status`). The server sets
/// `status: null` and then fails its own validation: 422 `status: Invalid value:
/// "null": status in body must be of type object`.
#[tokio::test(flavor = "multi_thread")]
async fn status_put_without_status_clears_it() {
    let s = TestServer::start();
    let c = s.client().await;
    let w = r#"{"apiVersion":"example.dev/v1","kind":"Widget","metadata":{"name":"w"},"spec":{"color":"red"}}"#;
    let resp = raw_request(&c, "POST", WIDGETS, JSON, w).await;
    assert_eq!(resp.status, 201, "{}", resp.text);
    let resp = raw_request(
        &c,
        "PATCH",
        &format!("{WIDGETS}/w/status"),
        Some("application/merge-patch+json"),
        r#"{"status":{"replicas":1}}"#,
    )
    .await;
    assert_eq!(resp.status, 200, "{}", resp.text);
    // Custom resources take no unconditional update (status included): name the version.
    let rv = resp.json["metadata"]["resourceVersion"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let w = w.replace(
        r#""name":"w"}"#,
        &format!(r#""name":"w","resourceVersion":"{rv}"}}"#),
    );
    let resp = raw_request(&c, "PUT", &format!("{WIDGETS}/w/status"), JSON, w.as_str()).await;
    assert_eq!(
        resp.status, 200,
        "PUT /status without status: {}",
        resp.text
    );
    assert_eq!(resp.json.get("status"), None, "{}", resp.text);
}

/// `x-kubernetes-list-type: map` with keys `[port]` (Widget spec.ports) forbids two
/// items with the same key: kube-apiserver answers 422 `spec.ports[1]: Duplicate value:
/// map[string]interface {}{"port":80}`. The server stores both (201).
#[tokio::test(flavor = "multi_thread")]
async fn duplicate_keys_in_a_map_list_are_rejected() {
    let s = TestServer::start();
    let c = s.client().await;
    let resp = raw_request(
        &c,
        "POST",
        WIDGETS,
        JSON,
        r#"{"apiVersion":"example.dev/v1","kind":"Widget","metadata":{"name":"dup"},"spec":{"color":"red","ports":[{"port":80},{"port":80,"name":"again"}]}}"#,
    )
    .await;
    assert_eq!(resp.status, 422, "{}", resp.text);
    assert!(
        resp.text.contains("spec.ports[1]") && resp.text.contains("Duplicate value"),
        "{}",
        resp.text
    );
}

/// A missing required field reads `spec.color: Required value` in kube-apiserver
/// (cause message "Required value"). The server writes `Required value: ` with a
/// dangling separator.
#[tokio::test(flavor = "multi_thread")]
async fn required_value_message_has_no_dangling_separator() {
    let s = TestServer::start();
    let c = s.client().await;
    let resp = raw_request(
        &c,
        "POST",
        WIDGETS,
        JSON,
        r#"{"apiVersion":"example.dev/v1","kind":"Widget","metadata":{"name":"nocolor"},"spec":{}}"#,
    )
    .await;
    assert_eq!(resp.status, 422, "{}", resp.text);
    let message = resp.json["message"].as_str().unwrap_or_default();
    assert!(
        message.ends_with(r#""nocolor" is invalid: spec.color: Required value"#),
        "{}",
        resp.text
    );
    let causes = resp.json["details"]["causes"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert_eq!(
        causes.first().map(|c| c["message"].clone()),
        Some(Value::from("Required value")),
        "{}",
        resp.text
    );
}

/// widget.yaml declares a scale subresource (specReplicasPath .spec.replicas), so
/// `kubectl scale wd w --replicas=2` should work, through GET/PUT/PATCH
/// .../widgets/w/scale serving an autoscaling/v1 Scale. The path is not routed (404),
/// and discovery does not list widgets/scale.
#[tokio::test(flavor = "multi_thread")]
async fn widget_scale_subresource_is_served() {
    let s = TestServer::start();
    let c = s.client().await;
    let w = r#"{"apiVersion":"example.dev/v1","kind":"Widget","metadata":{"name":"w"},"spec":{"color":"red","replicas":3}}"#;
    let resp = raw_request(&c, "POST", WIDGETS, JSON, w).await;
    assert_eq!(resp.status, 201, "{}", resp.text);
    let resp = raw_request(&c, "GET", &format!("{WIDGETS}/w/scale"), None, "").await;
    assert_eq!(resp.status, 200, "GET scale: {}", resp.text);
    assert_eq!(resp.json["kind"], "Scale", "{}", resp.text);
    assert_eq!(resp.json["spec"]["replicas"], 3, "{}", resp.text);
    let out = s.kubectl(&["scale", "wd", "w", "--replicas=2"]);
    assert!(
        out.status.success(),
        "kubectl scale: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let replicas = s.kubectl_ok(&["get", "wd", "w", "-o", "jsonpath={.spec.replicas}"]);
    assert_eq!(replicas, "2");
}

/// gadget.rs marks `level` (and `features`) `#[serde(default)]`, so the Rust type reads
/// a missing level as 0; kube-derive/schemars publish that as `default: 0` and
/// kube-apiserver then fills it in. The generated schema has no default, so a Gadget
/// created without `level` is served without it and `kubectl get gadgets` shows an
/// empty LEVEL column.
#[tokio::test(flavor = "multi_thread")]
async fn gadget_serde_defaults_are_applied() {
    let s = TestServer::start();
    let c = s.client().await;
    let resp = raw_request(
        &c,
        "POST",
        GADGETS,
        JSON,
        r#"{"apiVersion":"example.dev/v1","kind":"Gadget","metadata":{"name":"g"},"spec":{"mode":"Manual"}}"#,
    )
    .await;
    assert_eq!(resp.status, 201, "{}", resp.text);
    assert_eq!(resp.json["spec"]["level"], 0, "{}", resp.text);
    assert_eq!(resp.json["spec"]["features"], json!([]), "{}", resp.text);
}

/// kube-apiserver names a custom resource's kind with its group in Invalid messages:
/// `Widget.example.dev "pink" is invalid: spec.color: Unsupported value: "pink": ...`
/// (the qualified GroupKind). The server writes `Widget "pink" is invalid: ...`.
#[tokio::test(flavor = "multi_thread")]
async fn invalid_message_qualifies_the_kind_with_its_group() {
    let s = TestServer::start();
    let c = s.client().await;
    let resp = raw_request(
        &c,
        "POST",
        WIDGETS,
        JSON,
        r#"{"apiVersion":"example.dev/v1","kind":"Widget","metadata":{"name":"pink"},"spec":{"color":"pink"}}"#,
    )
    .await;
    assert_eq!(resp.status, 422, "{}", resp.text);
    let message = resp.json["message"].as_str().unwrap_or_default();
    assert!(
        message.starts_with(
            r#"Widget.example.dev "pink" is invalid: spec.color: Unsupported value: "pink""#
        ),
        "{}",
        resp.text
    );
}

/// The `managedFields` entry a /status write records (`subresource: "status"`) belongs
/// to the status manager; kube-apiserver keeps it through main-endpoint writes, and a
/// main-endpoint patch that only touches (ignored) status is a no-op with the same
/// resourceVersion. The server drops the status entry on the next main-endpoint write,
/// so that "no-op" patch is a real write with a new resourceVersion.
#[tokio::test(flavor = "multi_thread")]
async fn main_endpoint_writes_keep_the_status_managers_fields() {
    let s = TestServer::start();
    let c = s.client().await;
    let w = r#"{"apiVersion":"example.dev/v1","kind":"Widget","metadata":{"name":"w"},"spec":{"color":"red","replicas":2}}"#;
    let resp = raw_request(&c, "POST", WIDGETS, JSON, w).await;
    assert_eq!(resp.status, 201, "{}", resp.text);
    let merge = Some("application/merge-patch+json");
    let after_status = raw_request(
        &c,
        "PATCH",
        &format!("{WIDGETS}/w/status"),
        merge,
        r#"{"status":{"replicas":3}}"#,
    )
    .await;
    assert_eq!(after_status.status, 200, "{}", after_status.text);
    let has_status_entry = |obj: &Value| {
        obj["metadata"]["managedFields"]
            .as_array()
            .is_some_and(|entries| entries.iter().any(|e| e["subresource"] == "status"))
    };
    assert!(
        has_status_entry(&after_status.json),
        "the /status write recorded no managedFields entry: {}",
        after_status.text
    );

    let ignored = raw_request(
        &c,
        "PATCH",
        &format!("{WIDGETS}/w"),
        merge,
        r#"{"status":{"replicas":99}}"#,
    )
    .await;
    assert_eq!(ignored.status, 200, "{}", ignored.text);
    assert_eq!(ignored.json["status"]["replicas"], 3, "{}", ignored.text);
    assert!(
        has_status_entry(&ignored.json),
        "the status manager's entry was dropped: {}",
        ignored.text
    );
    assert_eq!(
        ignored.json["metadata"]["resourceVersion"],
        after_status.json["metadata"]["resourceVersion"],
        "a patch that changes nothing was written"
    );

    let spec_change = raw_request(
        &c,
        "PATCH",
        &format!("{WIDGETS}/w"),
        merge,
        r#"{"spec":{"replicas":4}}"#,
    )
    .await;
    assert_eq!(spec_change.status, 200, "{}", spec_change.text);
    assert!(
        has_status_entry(&spec_change.json),
        "the status manager's entry was dropped by a spec write: {}",
        spec_change.text
    );
}

/// kube-apiserver's selectable fields include `status.phase` for namespaces and `type`
/// for secrets (besides metadata.name/namespace), so `kubectl get ns --field-selector
/// status.phase=Active` and `kubectl get secrets --field-selector type=Opaque` list
/// objects. The server answers 400 `field label not supported: status.phase` / `type`.
#[test]
fn kind_specific_field_selectors_are_supported() {
    let s = TestServer::start();
    s.kubectl_ok(&["create", "secret", "generic", "s", "--from-literal=a=b"]);
    let mut failures = Vec::new();
    for (args, want) in [
        (
            [
                "get",
                "ns",
                "--field-selector",
                "status.phase=Active",
                "-o",
                "name",
            ],
            "namespace/default",
        ),
        (
            [
                "get",
                "secrets",
                "--field-selector",
                "type=Opaque",
                "-o",
                "name",
            ],
            "secret/s",
        ),
    ] {
        let out = s.kubectl(&args);
        let stdout = String::from_utf8_lossy(&out.stdout);
        if !out.status.success() || !stdout.lines().any(|l| l == want) {
            failures.push(format!(
                "kubectl {}: {}{}",
                args.join(" "),
                stdout,
                String::from_utf8_lossy(&out.stderr)
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
