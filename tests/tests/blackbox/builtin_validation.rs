//! Upstream's validation of built-in kinds where a user meets it (issue 16): what a pod
//! update may change (`kubectl set image` yes, `kubectl set env` no), and the pod spec
//! checks of pods and pod templates (container names, images, ports, resources), in
//! kube-apiserver's words and field paths.

use apiserver_tests::{raw_request, RawResponse, TestServer};
use serde_json::{json, Value};

const JSON: &str = "application/json";
const MERGE: &str = "application/merge-patch+json";
const JSON_PATCH: &str = "application/json-patch+json";

/// Upstream's list of what a pod update may change, as its refusal names it.
const UPDATABLE: &str = "pod updates may not change fields other than `spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)";

async fn send(
    s: &TestServer,
    method: &str,
    path: &str,
    content_type: &str,
    body: &Value,
) -> RawResponse {
    let client = s.client().await;
    raw_request(&client, method, path, Some(content_type), body.to_string()).await
}

/// A 422 answer's causes as (field, message) pairs.
fn causes(r: &RawResponse) -> Vec<(String, String)> {
    assert_eq!(r.status, 422, "{}", r.text);
    assert_eq!(r.json["reason"], "Invalid", "{}", r.text);
    r.json["details"]["causes"]
        .as_array()
        .expect("causes")
        .iter()
        .map(|c| {
            (
                c["field"].as_str().unwrap_or_default().to_string(),
                c["message"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect()
}

fn pod_json(s: &TestServer, name: &str) -> Value {
    serde_json::from_str(&s.kubectl_ok(&["get", "pod", name, "-o", "json"])).expect("JSON")
}

const POD: &str = "/api/v1/namespaces/default/pods/web";

#[tokio::test(flavor = "multi_thread")]
async fn a_pod_update_changes_images_deadlines_and_tolerations_only() {
    let s = TestServer::start();
    s.kubectl_ok(&["run", "web", "--image=nginx"]);

    // What upstream lets change: images, a deadline set then shortened, tolerations
    // added, metadata.
    s.kubectl_ok(&["set", "image", "pod/web", "web=nginx:1.27"]);
    assert_eq!(
        pod_json(&s, "web")["spec"]["containers"][0]["image"],
        "nginx:1.27"
    );
    s.kubectl_ok(&[
        "patch",
        "pod",
        "web",
        "-p",
        r#"{"spec":{"activeDeadlineSeconds":600}}"#,
    ]);
    s.kubectl_ok(&[
        "patch",
        "pod",
        "web",
        "-p",
        r#"{"spec":{"activeDeadlineSeconds":300}}"#,
    ]);
    s.kubectl_ok(&[
        "patch",
        "pod",
        "web",
        "--type=json",
        "-p",
        r#"[{"op":"add","path":"/spec/tolerations","value":[{"key":"a","operator":"Exists"}]}]"#,
    ]);
    s.kubectl_ok(&["label", "pod", "web", "tier=front"]);
    let pod = pod_json(&s, "web");
    assert_eq!(pod["spec"]["activeDeadlineSeconds"], 300);
    assert_eq!(pod["spec"]["tolerations"][0]["key"], "a", "{pod}");

    // Anything else is refused whole, at `spec`, naming what may change.
    let out = s.kubectl(&["set", "env", "pod/web", "COLOR=blue"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!("spec: Forbidden: {UPDATABLE}")),
        "{err}"
    );
    assert!(pod_json(&s, "web")["spec"]["containers"][0]
        .get("env")
        .is_none());

    let r = send(
        &s,
        "PATCH",
        POD,
        MERGE,
        &json!({"spec": {"restartPolicy": "Never"}}),
    )
    .await;
    let c = causes(&r);
    assert_eq!(c.len(), 1, "{c:?}");
    assert_eq!(c[0].0, "spec");
    assert!(
        c[0].1.starts_with(&format!("Forbidden: {UPDATABLE}\n")),
        "{}",
        c[0].1
    );
    assert!(
        c[0].1.contains("restartPolicy"),
        "the change is shown: {}",
        c[0].1
    );

    // The rules of each changeable field.
    let r = send(
        &s,
        "PATCH",
        POD,
        MERGE,
        &json!({"spec": {"activeDeadlineSeconds": 900}}),
    )
    .await;
    assert_eq!(
        causes(&r),
        vec![(
            "spec.activeDeadlineSeconds".to_string(),
            "Invalid value: 900: must be less than or equal to previous value".to_string()
        )]
    );
    let r = send(
        &s,
        "PATCH",
        POD,
        MERGE,
        &json!({"spec": {"activeDeadlineSeconds": null}}),
    )
    .await;
    assert_eq!(
        causes(&r),
        vec![(
            "spec.activeDeadlineSeconds".to_string(),
            "Invalid value: \"null\": must not update from a positive integer to nil value"
                .to_string()
        )]
    );
    let r = send(
        &s,
        "PATCH",
        POD,
        JSON_PATCH,
        &json!([{"op": "replace", "path": "/spec/tolerations/0/key", "value": "b"}]),
    )
    .await;
    assert_eq!(
        causes(&r),
        vec![(
            "spec.tolerations".to_string(),
            "Forbidden: existing toleration can not be modified except its tolerationSeconds"
                .to_string()
        )]
    );
    let r = send(
        &s,
        "PATCH",
        POD,
        JSON_PATCH,
        &json!([{"op": "add", "path": "/spec/containers/-", "value": {"name": "side", "image": "busybox"}}]),
    )
    .await;
    assert_eq!(
        causes(&r),
        vec![(
            "spec.containers".to_string(),
            "Forbidden: pod updates may not add or remove containers".to_string()
        )]
    );
    let r = send(
        &s,
        "PATCH",
        POD,
        JSON_PATCH,
        &json!([{"op": "replace", "path": "/spec/containers/0/image", "value": ""}]),
    )
    .await;
    assert_eq!(
        causes(&r),
        vec![(
            "spec.containers[0].image".to_string(),
            "Required value".to_string()
        )]
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn pod_specs_are_checked_as_upstream_checks_them() {
    let s = TestServer::start();
    let pod = json!({
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "bad"},
        "spec": {"containers": [
            {"name": "Web_1", "image": "nginx",
             "ports": [{"containerPort": 70000, "name": "http"}, {"containerPort": 81, "protocol": "HTTP", "name": "http"}],
             "resources": {"requests": {"cpu": "2"}, "limits": {"cpu": "500m"}}},
            {"name": "side", "image": ""},
            {"name": "side", "image": "busybox"}
        ]}
    });
    let r = send(&s, "POST", "/api/v1/namespaces/default/pods", JSON, &pod).await;
    let want: Vec<(String, String)> = [
        ("spec.containers[0].name", "Invalid value: \"Web_1\": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"),
        ("spec.containers[0].ports[0].containerPort", "Invalid value: 70000: must be between 1 and 65535, inclusive"),
        ("spec.containers[0].ports[1].name", "Duplicate value: \"http\""),
        ("spec.containers[0].ports[1].protocol", "Unsupported value: \"HTTP\": supported values: \"SCTP\", \"TCP\", \"UDP\""),
        ("spec.containers[0].resources.requests", "Invalid value: \"2\": must be less than or equal to cpu limit of 500m"),
        ("spec.containers[1].image", "Required value"),
        ("spec.containers[2].name", "Duplicate value: \"side\""),
    ]
    .iter()
    .map(|(f, m)| (f.to_string(), m.to_string()))
    .collect();
    assert_eq!(causes(&r), want, "{}", r.text);
    assert!(r.json["message"]
        .as_str()
        .unwrap_or_default()
        .starts_with("Pod \"bad\" is invalid: [spec.containers[0].name: Invalid value: \"Web_1\""));

    // A quantity that does not parse is a decoding error, as Go's decoder reports it.
    let r = send(
        &s,
        "POST",
        "/api/v1/namespaces/default/pods",
        JSON,
        &json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "q"},
                "spec": {"containers": [{"name": "c", "image": "nginx", "resources": {"limits": {"memory": "lots"}}}]}}),
    )
    .await;
    assert_eq!(r.status, 400, "{}", r.text);
    assert_eq!(r.json["reason"], "BadRequest");
    assert_eq!(
        r.json["message"],
        "Pod in version \"v1\" cannot be handled as a Pod: quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
    );

    // Templates are pod specs too: a Deployment's container needs an image.
    let deployment = json!({
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
        "spec": {"selector": {"matchLabels": {"app": "d"}},
                 "template": {"metadata": {"labels": {"app": "d"}},
                              "spec": {"containers": [{"name": "c", "image": ""}]}}}
    });
    let r = send(
        &s,
        "POST",
        "/apis/apps/v1/namespaces/default/deployments",
        JSON,
        &deployment,
    )
    .await;
    assert_eq!(
        causes(&r),
        vec![(
            "spec.template.spec.containers[0].image".to_string(),
            "Required value".to_string()
        )]
    );

    // And kubectl shows the first of them as upstream's does.
    let file = s.write_file("bad.json", &pod.to_string());
    let out = s.kubectl(&["create", "-f", file.to_str().unwrap()]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("The Pod \"bad\" is invalid: "), "{err}");
    assert!(
        err.contains("spec.containers[1].image: Required value"),
        "{err}"
    );
}

const CLAIM: &str = "/api/v1/namespaces/default/persistentvolumeclaims/data";
const CLAIM_FIXED: &str = "Forbidden: spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims\n";

/// A claim's spec is fixed at creation, as upstream's: a volume name may be set once,
/// and only a bound claim's storage request changes (never below its capacity).
#[tokio::test(flavor = "multi_thread")]
async fn a_claims_spec_is_fixed_but_a_bound_claim_expands() {
    let s = TestServer::start();
    let r = send(
        &s,
        "POST",
        "/api/v1/namespaces/default/persistentvolumeclaims",
        JSON,
        &json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "data"},
                "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}),
    )
    .await;
    assert_eq!(r.status, 201, "{}", r.text);
    let grow = json!({"spec": {"resources": {"requests": {"storage": "2Gi"}}}});

    // Unbound: the request is as fixed as the rest.
    let c = causes(&send(&s, "PATCH", CLAIM, MERGE, &grow).await);
    assert_eq!(c.len(), 1, "{c:?}");
    assert_eq!(c[0].0, "spec");
    assert!(c[0].1.starts_with(CLAIM_FIXED), "{}", c[0].1);
    assert!(
        c[0].1.contains("spec.resources.requests.storage"),
        "{}",
        c[0].1
    );

    // Binding names the volume, once.
    let r = send(
        &s,
        "PATCH",
        CLAIM,
        MERGE,
        &json!({"spec": {"volumeName": "pv-1"}}),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.text);
    let c = causes(
        &send(
            &s,
            "PATCH",
            CLAIM,
            MERGE,
            &json!({"spec": {"volumeName": "pv-2"}}),
        )
        .await,
    );
    assert!(c[0].1.starts_with(CLAIM_FIXED), "{c:?}");

    // Bound: it expands, and may shrink back no further than its capacity.
    let r = send(
        &s,
        "PATCH",
        &format!("{CLAIM}/status"),
        MERGE,
        &json!({"status": {"phase": "Bound", "capacity": {"storage": "1Gi"}}}),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.text);
    let r = send(&s, "PATCH", CLAIM, MERGE, &grow).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.json["spec"]["resources"]["requests"]["storage"], "2Gi");
    let shrink = json!({"spec": {"resources": {"requests": {"storage": "1Gi"}}}});
    assert_eq!(
        causes(&send(&s, "PATCH", CLAIM, MERGE, &shrink).await),
        vec![(
            "spec.resources.requests.storage".to_string(),
            "Forbidden: field can not be less than status.capacity".to_string()
        )]
    );

    // kubectl shows the refusal of anything else.
    let out = s.kubectl(&[
        "patch",
        "pvc",
        "data",
        "-p",
        r#"{"spec":{"accessModes":["ReadWriteMany"]}}"#,
    ]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims"), "{err}");
}
