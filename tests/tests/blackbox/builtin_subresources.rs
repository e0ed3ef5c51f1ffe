//! The built-in subresources that write one part of an object, and pods' graceful
//! deletion (issue 16): `kubectl debug` adding an ephemeral container, `pods/resize`,
//! `namespaces/finalize` as tools use it to release a stuck namespace, `kubectl
//! certificate approve|deny` through `certificatesigningrequests/approval`, a CSR's
//! `/status`, a DELETE of a pod bound to a node leaving it Terminating for its grace
//! period, and the selector and labels a Job gets.

use std::time::{Duration, Instant};

use apiserver_tests::{invalid_causes, raw_request, send, TestServer};
use serde_json::{json, Value};

/// How long a server-side step (a controller, a grace period of a few seconds) may take.
const WITHIN: Duration = Duration::from_secs(20);

fn get_json(s: &TestServer, args: &[&str]) -> Value {
    let mut full = vec!["get"];
    full.extend_from_slice(args);
    full.extend(["-o", "json"]);
    serde_json::from_str(&s.kubectl_ok(&full)).expect("JSON from kubectl")
}

/// Whether `kubectl get` finds the object.
fn exists(s: &TestServer, args: &[&str]) -> bool {
    let mut full = vec!["get"];
    full.extend_from_slice(args);
    full.extend(["-o", "name", "--ignore-not-found"]);
    !s.kubectl_ok(&full).trim().is_empty()
}

/// Waits until the object is gone; panics after `within`.
fn wait_gone(s: &TestServer, args: &[&str], within: Duration) -> Duration {
    let start = Instant::now();
    while exists(s, args) {
        assert!(
            start.elapsed() < within,
            "{args:?} still there after {within:?}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    start.elapsed()
}

const JSON: &str = "application/json";
const MERGE: &str = "application/merge-patch+json";
const STRATEGIC: &str = "application/strategic-merge-patch+json";

#[tokio::test(flavor = "multi_thread")]
async fn kubectl_debug_adds_an_ephemeral_container_which_stays_as_it_was_added() {
    let s = TestServer::start();
    s.kubectl_ok(&["run", "web", "--image=nginx"]);
    let out = s.kubectl(&["debug", "web", "--image=busybox", "--container=debugger"]);
    assert!(
        out.status.success(),
        "kubectl debug: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let pod = get_json(&s, &["pod", "web"]);
    let ephemeral = &pod["spec"]["ephemeralContainers"];
    assert_eq!(ephemeral.as_array().map(Vec::len), Some(1), "{pod}");
    assert_eq!(ephemeral[0]["name"], "debugger");
    assert_eq!(ephemeral[0]["image"], "busybox");
    // Defaulted as any container is.
    assert_eq!(ephemeral[0]["terminationMessagePolicy"], "File");
    assert_eq!(pod["spec"]["containers"][0]["image"], "nginx");

    let path = "/api/v1/namespaces/default/pods/web/ephemeralcontainers";
    let client = s.client().await;
    let read = raw_request(&client, "GET", path, None, "").await;
    assert_eq!(read.status, 200, "{}", read.text);
    assert_eq!(read.json["kind"], "Pod");
    assert_eq!(
        read.json["spec"]["ephemeralContainers"][0]["name"],
        "debugger"
    );

    // Removing or changing one is refused, in upstream's words.
    let mut without = read.json.clone();
    without["spec"]["ephemeralContainers"] = json!([]);
    let refused = send(&s, "PUT", path, JSON, without).await;
    assert_eq!(
        invalid_causes(&refused),
        [(
            "spec.ephemeralContainers".to_string(),
            "Forbidden: existing ephemeral containers \"debugger\" may not be removed".to_string()
        )]
    );
    let changed = send(
        &s,
        "PATCH",
        path,
        STRATEGIC,
        json!({"spec": {"ephemeralContainers": [{"name": "debugger", "image": "alpine"}]}}),
    )
    .await;
    assert_eq!(
        invalid_causes(&changed),
        [(
            "spec.ephemeralContainers[debugger]".to_string(),
            "Forbidden: existing ephemeral containers \"debugger\" may not be changed".to_string()
        )]
    );
    // What an ephemeral container may not have, and a target that is not there.
    let bad = send(
        &s,
        "PATCH",
        path,
        STRATEGIC,
        json!({"spec": {"ephemeralContainers": [{"name": "probe", "image": "busybox", "ports": [{"containerPort": 80}], "targetContainerName": "nope"}]}}),
    )
    .await;
    assert_eq!(
        invalid_causes(&bad),
        [
            (
                "spec.ephemeralContainers[1].ports".to_string(),
                "Forbidden: cannot be set for an Ephemeral Container".to_string()
            ),
            (
                "spec.ephemeralContainers[1].targetContainerName".to_string(),
                "Not found: \"nope\"".to_string()
            )
        ]
    );
    // A second one is added beside the first; nothing else of the body is taken.
    let added = send(
        &s,
        "PATCH",
        path,
        STRATEGIC,
        json!({"metadata": {"labels": {"through": "subresource"}}, "spec": {"ephemeralContainers": [{"name": "second", "image": "busybox", "targetContainerName": "web"}]}}),
    )
    .await;
    assert_eq!(added.status, 200, "{}", added.text);
    let names: Vec<&str> = added.json["spec"]["ephemeralContainers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["debugger", "second"]);
    assert!(added.json["metadata"]["labels"].get("through").is_none());

    // The pod itself does not change them (a pod update may change images and little
    // else), and no pod is created with one.
    let out = s.kubectl(&[
        "patch",
        "pod",
        "web",
        "--type=json",
        "-p",
        r#"[{"op":"remove","path":"/spec/ephemeralContainers"}]"#,
    ]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("spec: Forbidden: pod updates may not change fields other than"),
        "{err}"
    );
    let pod = get_json(&s, &["pod", "web"]);
    assert_eq!(
        pod["spec"]["ephemeralContainers"].as_array().map(Vec::len),
        Some(2)
    );
    let created = send(
        &s,
        "POST",
        "/api/v1/namespaces/default/pods",
        JSON,
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "early"}, "spec": {"containers": [{"name": "c", "image": "nginx"}], "ephemeralContainers": [{"name": "d", "image": "busybox"}]}}),
    )
    .await;
    assert_eq!(
        invalid_causes(&created),
        [(
            "spec.ephemeralContainers".to_string(),
            "Forbidden: cannot be set on create".to_string()
        )]
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_resize_changes_container_resources_and_nothing_else() {
    let s = TestServer::start();
    let pod = s.write_file(
        "pod.yaml",
        "apiVersion: v1\nkind: Pod\nmetadata: {name: sized}\nspec:\n  containers:\n  - {name: app, image: nginx, resources: {requests: {cpu: 100m, memory: 64Mi}}}\n",
    );
    s.kubectl_ok(&["apply", "-f", pod.to_str().unwrap()]);
    let path = "/api/v1/namespaces/default/pods/sized/resize";
    let resized = send(
        &s,
        "PATCH",
        path,
        STRATEGIC,
        json!({"spec": {"containers": [{"name": "app", "image": "httpd", "resources": {"requests": {"cpu": "200m", "memory": "64Mi"}}, "resizePolicy": [{"resourceName": "cpu", "restartPolicy": "NotRequired"}]}]}}),
    )
    .await;
    assert_eq!(resized.status, 200, "{}", resized.text);
    let pod = get_json(&s, &["pod", "sized"]);
    let app = &pod["spec"]["containers"][0];
    assert_eq!(app["resources"]["requests"]["cpu"], "200m");
    assert_eq!(app["resizePolicy"][0]["resourceName"], "cpu");
    assert_eq!(
        app["image"], "nginx",
        "the image does not change through resize"
    );

    // Limits equal to requests would make the pod Guaranteed: its class may not change.
    let guaranteed = send(
        &s,
        "PATCH",
        path,
        STRATEGIC,
        json!({"spec": {"containers": [{"name": "app", "resources": {"limits": {"cpu": "200m", "memory": "64Mi"}}}]}}),
    )
    .await;
    assert_eq!(
        invalid_causes(&guaranteed),
        [(
            "spec".to_string(),
            "Invalid value: \"Burstable\": Pod QOS Class may not change as a result of resizing"
                .to_string()
        )]
    );
    let removed = send(
        &s,
        "PATCH",
        path,
        MERGE,
        json!({"spec": {"containers": [{"name": "app", "resources": {"requests": {"cpu": "200m"}}}]}}),
    )
    .await;
    assert_eq!(
        invalid_causes(&removed),
        [(
            "spec.containers[0].resources.requests".to_string(),
            "Forbidden: resource requests cannot be removed".to_string()
        )]
    );
    let other = send(
        &s,
        "PATCH",
        path,
        STRATEGIC,
        json!({"spec": {"containers": [{"name": "app", "resources": {"requests": {"ephemeral-storage": "1Gi"}}}]}}),
    )
    .await;
    assert_eq!(
        invalid_causes(&other),
        [(
            "spec".to_string(),
            "Forbidden: only cpu and memory resources are mutable".to_string()
        )]
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn namespaces_finalize_releases_a_stuck_namespace_and_changes_nothing_else() {
    let s = TestServer::start();
    s.kubectl_ok(&["create", "namespace", "stuck"]);
    // Something in it that nothing will ever finalize.
    let held = s.write_file(
        "held.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: held, namespace: stuck, finalizers: [example.com/never]}\n",
    );
    s.kubectl_ok(&["apply", "-f", held.to_str().unwrap()]);
    s.kubectl_ok(&["delete", "namespace", "stuck", "--wait=false"]);
    let ns = get_json(&s, &["namespace", "stuck"]);
    assert_eq!(ns["status"]["phase"], "Terminating");
    assert_eq!(ns["spec"]["finalizers"], json!(["kubernetes"]));

    // The namespace itself does not drop its finalizers.
    s.kubectl_ok(&[
        "patch",
        "namespace",
        "stuck",
        "--type=merge",
        "-p",
        r#"{"spec":{"finalizers":[]}}"#,
    ]);
    assert_eq!(
        get_json(&s, &["namespace", "stuck"])["spec"]["finalizers"],
        json!(["kubernetes"])
    );

    // What the guides say to do: PUT the namespace without them to `finalize`.
    let mut ns = get_json(&s, &["namespace", "stuck"]);
    ns["spec"]["finalizers"] = json!([]);
    let file = s.write_file("stuck.json", &ns.to_string());
    s.kubectl_ok(&[
        "replace",
        "--raw",
        "/api/v1/namespaces/stuck/finalize",
        "-f",
        file.to_str().unwrap(),
    ]);
    wait_gone(&s, &["namespace", "stuck"], WITHIN);

    // On a live namespace: spec.finalizers alone change, whatever else the body says.
    s.kubectl_ok(&["create", "namespace", "live"]);
    let path = "/api/v1/namespaces/live/finalize";
    let answered = send(
        &s,
        "PUT",
        path,
        JSON,
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "live", "labels": {"extra": "label"}}, "spec": {"finalizers": ["example.com/mine"]}, "status": {"phase": "Terminating"}}),
    )
    .await;
    assert_eq!(answered.status, 200, "{}", answered.text);
    let live = get_json(&s, &["namespace", "live"]);
    assert_eq!(live["spec"]["finalizers"], json!(["example.com/mine"]));
    assert_eq!(live["status"]["phase"], "Active");
    assert!(live["metadata"]["labels"].get("extra").is_none(), "{live}");
    let bad = send(
        &s,
        "PUT",
        path,
        JSON,
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "live"}, "spec": {"finalizers": ["unqualified"]}}),
    )
    .await;
    assert_eq!(
        invalid_causes(&bad),
        [(
            "spec.finalizers[0]".to_string(),
            "Invalid value: \"unqualified\": name is neither a standard finalizer name nor is it fully qualified".to_string()
        )]
    );
    // PUT alone, as upstream serves it.
    let client = s.client().await;
    let get = raw_request(&client, "GET", path, None, "").await;
    assert_eq!(get.status, 405, "{}", get.text);
}

/// A PEM certificate signing request for `cn`, base64-encoded as `spec.request` holds it.
fn csr_request(cn: &str) -> String {
    use base64::Engine;
    let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).expect("params");
    params.distinguished_name = rcgen::DistinguishedName::new();
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, cn);
    let key = rcgen::KeyPair::generate().expect("key");
    let pem = params
        .serialize_request(&key)
        .expect("CSR")
        .pem()
        .expect("PEM");
    base64::engine::general_purpose::STANDARD.encode(pem)
}

fn create_csr(s: &TestServer, name: &str) {
    let csr = json!({
        "apiVersion": "certificates.k8s.io/v1",
        "kind": "CertificateSigningRequest",
        "metadata": {"name": name},
        "spec": {"request": csr_request(name), "signerName": "example.com/signer", "usages": ["client auth"]}
    });
    let file = s.write_file(&format!("{name}.json"), &csr.to_string());
    s.kubectl_ok(&["create", "-f", file.to_str().unwrap()]);
}

/// The managedFields entry of `manager`, if any.
fn managed_by<'a>(obj: &'a Value, manager: &str) -> &'a Value {
    obj["metadata"]["managedFields"]
        .as_array()
        .and_then(|l| l.iter().find(|e| e["manager"] == manager))
        .unwrap_or(&Value::Null)
}

/// Server-side apply through the part subresources: each applies its part alone (what
/// else the configuration says is ignored) and records the manager against the
/// subresource, as upstream's apply does.
#[tokio::test(flavor = "multi_thread")]
async fn server_side_apply_writes_the_part_subresources() {
    const APPLY: &str = "application/apply-patch+yaml";
    let s = TestServer::start();
    let created = send(
        &s,
        "POST",
        "/api/v1/namespaces/default/pods",
        JSON,
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web"},
               "spec": {"containers": [{"name": "web", "image": "nginx",
                        "resources": {"requests": {"cpu": "100m"}, "limits": {"cpu": "200m"}}}]}}),
    )
    .await;
    assert_eq!(created.status, 201, "{}", created.text);
    let base = "/api/v1/namespaces/default/pods/web";

    let r = send(
        &s,
        "PATCH",
        &format!("{base}/ephemeralcontainers?fieldManager=debugger"),
        APPLY,
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web", "labels": {"ignored": "yes"}},
               "spec": {"ephemeralContainers": [{"name": "dbg", "image": "busybox"}]}}),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.json["spec"]["ephemeralContainers"][0]["name"], "dbg");
    assert!(r.json["metadata"].get("labels").is_none(), "{}", r.text);
    let entry = managed_by(&r.json, "debugger");
    assert_eq!(entry["operation"], "Apply", "{}", r.text);
    assert_eq!(entry["subresource"], "ephemeralcontainers", "{}", r.text);

    // The creator owns the requests: a conflict, until forced.
    let resize = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web"},
               "spec": {"containers": [{"name": "web", "image": "ignored:1",
                        "resources": {"requests": {"cpu": "150m"}, "limits": {"cpu": "200m"}}}]}});
    let path = format!("{base}/resize?fieldManager=resizer");
    let r = send(&s, "PATCH", &path, APPLY, resize.clone()).await;
    assert_eq!(r.status, 409, "{}", r.text);
    assert!(
        r.json["message"]
            .as_str()
            .unwrap_or_default()
            .contains(".spec.containers[name=\"web\"].resources.requests.cpu"),
        "{}",
        r.text
    );
    let r = send(&s, "PATCH", &format!("{path}&force=true"), APPLY, resize).await;
    assert_eq!(r.status, 200, "{}", r.text);
    let container = &r.json["spec"]["containers"][0];
    assert_eq!(
        container["resources"]["requests"]["cpu"], "150m",
        "{}",
        r.text
    );
    assert_eq!(container["image"], "nginx", "{}", r.text);
    assert_eq!(
        managed_by(&r.json, "resizer")["subresource"],
        "resize",
        "{}",
        r.text
    );

    create_csr(&s, "carol");
    let r = send(
        &s,
        "PATCH",
        "/apis/certificates.k8s.io/v1/certificatesigningrequests/carol/approval?fieldManager=approver",
        APPLY,
        json!({"apiVersion": "certificates.k8s.io/v1", "kind": "CertificateSigningRequest",
               "metadata": {"name": "carol"},
               "status": {"conditions": [{"type": "Approved", "status": "True", "reason": "Applied", "message": "by apply"}]}}),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(
        r.json["status"]["conditions"][0]["type"], "Approved",
        "{}",
        r.text
    );
    assert_eq!(r.json["status"]["conditions"][0]["reason"], "Applied");
    assert_eq!(
        managed_by(&r.json, "approver")["subresource"],
        "approval",
        "{}",
        r.text
    );
    let csr = get_json(&s, &["csr", "carol"]);
    assert_eq!(
        csr["status"]["conditions"][0]["message"], "by apply",
        "{csr}"
    );
}

/// A CSR whose body claims to come from someone else.
fn spoofed_csr(name: &str) -> Value {
    json!({
        "apiVersion": "certificates.k8s.io/v1",
        "kind": "CertificateSigningRequest",
        "metadata": {"name": name},
        "spec": {"request": csr_request(name), "signerName": "example.com/signer", "usages": ["client auth"],
                 "username": "mallory", "uid": "forged", "groups": ["system:masters"], "extra": {"forged": ["yes"]}}
    })
}

#[test]
fn a_csrs_requester_is_whoever_created_it_whatever_the_body_says() {
    let s = TestServer::start();
    // The admin.
    let file = s.write_file("by-admin.json", &spoofed_csr("by-admin").to_string());
    s.kubectl_ok(&["create", "-f", file.to_str().unwrap()]);
    let whoami: Value =
        serde_json::from_str(&s.kubectl_ok(&["auth", "whoami", "-o", "json"])).expect("JSON");
    let admin = &whoami["status"]["userInfo"];
    let spec = get_json(&s, &["csr", "by-admin"])["spec"].clone();
    assert_eq!(spec["username"], admin["username"], "{spec}");
    assert_ne!(spec["username"], "mallory");
    assert_eq!(spec["groups"], admin["groups"], "{spec}");
    assert_eq!(spec["uid"], admin["uid"], "{spec}");
    assert_eq!(spec["extra"], admin["extra"], "{spec}");

    // A service account, with a uid and extra of its own.
    s.kubectl_ok(&["create", "serviceaccount", "robot"]);
    s.kubectl_ok(&[
        "create",
        "clusterrole",
        "csr-creator",
        "--verb=create,get",
        "--resource=certificatesigningrequests",
    ]);
    s.kubectl_ok(&[
        "create",
        "clusterrolebinding",
        "csr-creator",
        "--clusterrole=csr-creator",
        "--serviceaccount=default:robot",
    ]);
    let token = s
        .kubectl_ok(&["create", "token", "robot"])
        .trim()
        .to_string();
    let robot = s.kubeconfig_for(
        "robot",
        &apiserver_tests::credentials::UserCredentials::Token(token),
    );
    let file = s.write_file("by-robot.json", &spoofed_csr("by-robot").to_string());
    let out = s.kubectl_as(&robot, &["create", "-f", file.to_str().unwrap()]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let spec = get_json(&s, &["csr", "by-robot"])["spec"].clone();
    assert_eq!(
        spec["username"], "system:serviceaccount:default:robot",
        "{spec}"
    );
    assert_eq!(
        spec["groups"],
        json!([
            "system:serviceaccounts",
            "system:serviceaccounts:default",
            "system:authenticated"
        ]),
        "{spec}"
    );
    let sa_uid = s.kubectl_ok(&[
        "get",
        "serviceaccount",
        "robot",
        "-o",
        "jsonpath={.metadata.uid}",
    ]);
    assert_eq!(spec["uid"], sa_uid.trim(), "{spec}");
    let extra = spec["extra"].as_object().expect("extra");
    assert!(extra.get("forged").is_none(), "{spec}");
    assert!(
        extra["authentication.kubernetes.io/credential-id"][0]
            .as_str()
            .is_some_and(|id| id.starts_with("JTI=")),
        "{spec}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn kubectl_certificate_approve_and_deny_go_through_approval_and_never_both() {
    let s = TestServer::start();
    create_csr(&s, "alice");
    let out = s.kubectl_ok(&["certificate", "approve", "alice"]);
    assert!(out.contains("approved"), "{out}");
    let csr = get_json(&s, &["csr", "alice"]);
    let conditions = csr["status"]["conditions"].as_array().expect("conditions");
    assert_eq!(conditions.len(), 1, "{csr}");
    assert_eq!(conditions[0]["type"], "Approved");
    assert_eq!(conditions[0]["status"], "True");
    assert_eq!(conditions[0]["reason"], "KubectlApprove");
    assert!(conditions[0]["lastTransitionTime"].is_string(), "{csr}");

    // Denying an approved request: kubectl itself declines; the server refuses a
    // client that asks anyway (not both).
    let err = s.kubectl_err(&["certificate", "deny", "alice"]);
    assert!(err.contains("is already Approved"), "{err}");
    let path = "/apis/certificates.k8s.io/v1/certificatesigningrequests/alice";
    let mut both = csr.clone();
    both["status"]["conditions"]
        .as_array_mut()
        .unwrap()
        .push(json!({"type": "Denied", "status": "True", "reason": "KubectlDeny"}));
    let refused = send(&s, "PUT", &format!("{path}/approval"), JSON, both).await;
    assert_eq!(
        invalid_causes(&refused),
        [(
            "status.conditions[1].type".to_string(),
            "Invalid value: \"Denied\": Approved and Denied conditions are mutually exclusive"
                .to_string()
        )]
    );
    // Nor may the approval be taken back.
    let mut without = csr.clone();
    without["status"]["conditions"] = json!([]);
    let removed = send(&s, "PUT", &format!("{path}/approval"), JSON, without).await;
    assert_eq!(
        invalid_causes(&removed),
        [(
            "status.conditions".to_string(),
            "Forbidden: updates may not remove a condition of type \"Approved\"".to_string()
        )]
    );

    // `kubectl certificate deny` of a fresh request.
    create_csr(&s, "carol");
    let out = s.kubectl_ok(&["certificate", "deny", "carol"]);
    assert!(out.contains("denied"), "{out}");
    let carol = get_json(&s, &["csr", "carol"]);
    assert_eq!(carol["status"]["conditions"][0]["type"], "Denied");
    assert_eq!(carol["status"]["conditions"][0]["reason"], "KubectlDeny");

    // `/status` is the signer's: conditions other than approval, and the certificate once.
    create_csr(&s, "bob");
    let approved_by_status = send(
        &s,
        "PATCH",
        "/apis/certificates.k8s.io/v1/certificatesigningrequests/bob/status",
        MERGE,
        json!({"status": {"conditions": [{"type": "Approved", "status": "True", "reason": "Sneaky"}]}}),
    )
    .await;
    assert_eq!(
        invalid_causes(&approved_by_status),
        [(
            "status.conditions".to_string(),
            "Forbidden: updates may not add a condition of type \"Approved\"".to_string()
        )]
    );
    let issued = {
        use base64::Engine;
        let key = rcgen::KeyPair::generate().expect("key");
        let cert = rcgen::CertificateParams::new(vec!["alice".to_string()])
            .expect("params")
            .self_signed(&key)
            .expect("certificate");
        base64::engine::general_purpose::STANDARD.encode(cert.pem())
    };
    let signed = send(
        &s,
        "PATCH",
        &format!("{path}/status"),
        MERGE,
        json!({"status": {"certificate": issued}}),
    )
    .await;
    assert_eq!(signed.status, 200, "{}", signed.text);
    assert_eq!(signed.json["status"]["certificate"], json!(issued));
    assert_eq!(signed.json["status"]["conditions"][0]["type"], "Approved");
    let resigned = send(
        &s,
        "PATCH",
        &format!("{path}/status"),
        MERGE,
        json!({"status": {"certificate": "bm90IGEgY2VydGlmaWNhdGU="}}),
    )
    .await;
    assert_eq!(
        invalid_causes(&resigned),
        [(
            "status.certificate".to_string(),
            "Forbidden: updates may not modify existing certificate content".to_string()
        )]
    );
    // The request itself never changes once made.
    s.kubectl_ok(&[
        "patch",
        "csr",
        "bob",
        "--type=merge",
        "-p",
        r#"{"spec":{"signerName":"example.com/other"}}"#,
    ]);
    assert_eq!(
        get_json(&s, &["csr", "bob"])["spec"]["signerName"],
        "example.com/signer"
    );
}

fn bound_pod(s: &TestServer, name: &str, grace: Option<u32>) {
    let grace = grace.map_or(String::new(), |g| {
        format!(", terminationGracePeriodSeconds: {g}")
    });
    let pod = s.write_file(
        &format!("{name}.yaml"),
        &format!("apiVersion: v1\nkind: Pod\nmetadata: {{name: {name}}}\nspec: {{nodeName: node1{grace}, containers: [{{name: c, image: nginx}}]}}\n"),
    );
    s.kubectl_ok(&["apply", "-f", pod.to_str().unwrap()]);
}

#[tokio::test(flavor = "multi_thread")]
async fn deleting_a_pod_on_a_node_leaves_it_terminating_for_its_grace_period() {
    let s = TestServer::start();
    bound_pod(&s, "slow", Some(3));
    let started = Instant::now();
    s.kubectl_ok(&["delete", "pod", "slow", "--wait=false"]);
    let pod = get_json(&s, &["pod", "slow"]);
    assert!(pod["metadata"]["deletionTimestamp"].is_string(), "{pod}");
    assert_eq!(pod["metadata"]["deletionGracePeriodSeconds"], 3);
    let table = s.kubectl_ok(&["get", "pod", "slow"]);
    assert!(table.contains("Terminating"), "{table}");
    // Gone once the grace period is over, with no kubelet to confirm it.
    wait_gone(&s, &["pod", "slow"], WITHIN);
    assert!(
        started.elapsed() >= Duration::from_secs(2),
        "removed before its grace period: {:?}",
        started.elapsed()
    );

    // `kubectl delete` waits for that and returns.
    bound_pod(&s, "waited", Some(1));
    s.kubectl_ok(&["delete", "pod", "waited", "--timeout=20s"]);
    assert!(!exists(&s, &["pod", "waited"]));

    // A pod no node runs, and a zero grace period, go at once; the answer is the pod.
    s.kubectl_ok(&["run", "unbound", "--image=nginx"]);
    let client = s.client().await;
    let gone = raw_request(
        &client,
        "DELETE",
        "/api/v1/namespaces/default/pods/unbound",
        None,
        "",
    )
    .await;
    assert_eq!(gone.status, 200, "{}", gone.text);
    assert_eq!(gone.json["kind"], "Pod");
    assert!(!exists(&s, &["pod", "unbound"]));
    bound_pod(&s, "forced", None);
    s.kubectl_ok(&["delete", "pod", "forced", "--grace-period=0", "--force"]);
    assert!(!exists(&s, &["pod", "forced"]));

    // A second DELETE may shorten the grace period, never lengthen it.
    bound_pod(&s, "default-grace", None);
    let path = "/api/v1/namespaces/default/pods/default-grace";
    let first = raw_request(&client, "DELETE", path, None, "").await;
    assert_eq!(first.status, 200, "{}", first.text);
    assert_eq!(first.json["metadata"]["deletionGracePeriodSeconds"], 30);
    let longer = raw_request(
        &client,
        "DELETE",
        &format!("{path}?gracePeriodSeconds=60"),
        None,
        "",
    )
    .await;
    assert_eq!(longer.status, 200, "{}", longer.text);
    assert_eq!(longer.json["metadata"]["deletionGracePeriodSeconds"], 30);
    let shorter = raw_request(
        &client,
        "DELETE",
        &format!("{path}?gracePeriodSeconds=1"),
        None,
        "",
    )
    .await;
    assert_eq!(shorter.status, 200, "{}", shorter.text);
    assert_eq!(shorter.json["metadata"]["deletionGracePeriodSeconds"], 1);
    wait_gone(&s, &["pod", "default-grace"], WITHIN);
}

#[test]
fn a_job_gets_a_selector_of_its_uid_and_labels_for_its_pods() {
    let s = TestServer::start();
    s.kubectl_ok(&["create", "job", "once", "--image=busybox"]);
    let job = get_json(&s, &["job", "once"]);
    let uid = job["metadata"]["uid"].as_str().expect("uid");
    assert_eq!(
        job["spec"]["selector"],
        json!({"matchLabels": {"batch.kubernetes.io/controller-uid": uid}})
    );
    let labels = &job["spec"]["template"]["metadata"]["labels"];
    assert_eq!(labels["batch.kubernetes.io/controller-uid"], uid);
    assert_eq!(labels["controller-uid"], uid);
    assert_eq!(labels["batch.kubernetes.io/job-name"], "once");
    assert_eq!(labels["job-name"], "once");
    // The selector never changes.
    let err = s.kubectl_err(&[
        "patch",
        "job",
        "once",
        "--type=merge",
        "-p",
        r#"{"spec":{"selector":{"matchLabels":{"batch.kubernetes.io/controller-uid":"other"}}}}"#,
    ]);
    assert!(err.contains("spec.selector: Invalid value"), "{err}");
    assert!(err.contains("field is immutable"), "{err}");

    // A selector of one's own needs manualSelector.
    let own = |name: &str, manual: bool| {
        format!(
            "apiVersion: batch/v1\nkind: Job\nmetadata: {{name: {name}}}\nspec:\n  manualSelector: {manual}\n  selector: {{matchLabels: {{app: own}}}}\n  template:\n    metadata: {{labels: {{app: own}}}}\n    spec: {{restartPolicy: Never, containers: [{{name: c, image: busybox}}]}}\n"
        )
    };
    let refused = s.write_file("own.yaml", &own("own", false));
    let err = s.kubectl_err(&["create", "-f", refused.to_str().unwrap()]);
    assert!(err.contains("`selector` not auto-generated"), "{err}");
    let manual = s.write_file("manual.yaml", &own("manual", true));
    s.kubectl_ok(&["create", "-f", manual.to_str().unwrap()]);
    let job = get_json(&s, &["job", "manual"]);
    assert_eq!(
        job["spec"]["selector"],
        json!({"matchLabels": {"app": "own"}})
    );
    assert!(job["spec"]["template"]["metadata"]["labels"]
        .get("controller-uid")
        .is_none());
}

/// The kube crate's own helpers for these subresources, on k8s-openapi's types.
#[tokio::test(flavor = "multi_thread")]
async fn kube_rs_helpers_add_ephemeral_containers_resize_pods_and_approve_requests() {
    use k8s_openapi::api::certificates::v1::CertificateSigningRequest;
    use k8s_openapi::api::core::v1::Pod;
    use kube::api::{Api, Patch, PatchParams, PostParams};

    let s = TestServer::start();
    let client = s.client().await;
    let pods: Api<Pod> = Api::default_namespaced(client.clone());
    let pod: Pod = serde_json::from_value(json!({
        "metadata": {"name": "typed"},
        "spec": {"containers": [{"name": "app", "image": "nginx", "resources": {"requests": {"cpu": "100m"}}}]}
    }))
    .unwrap();
    pods.create(&PostParams::default(), &pod)
        .await
        .expect("create pod");

    let mut current = pods.get_ephemeral_containers("typed").await.expect("get");
    assert_eq!(current.spec.as_ref().unwrap().ephemeral_containers, None);
    current.spec.as_mut().unwrap().ephemeral_containers = Some(
        serde_json::from_value(
            json!([{"name": "shell", "image": "busybox:stable", "command": ["sh"]}]),
        )
        .unwrap(),
    );
    let replaced = pods
        .replace_ephemeral_containers("typed", &PostParams::default(), &current)
        .await
        .expect("replace ephemeral containers");
    let added = replaced.spec.unwrap().ephemeral_containers.unwrap();
    assert_eq!(added[0].name, "shell");
    assert_eq!(added[0].image.as_deref(), Some("busybox:stable"));

    let resized = pods
        .patch_resize(
            "typed",
            &PatchParams::default(),
            &Patch::Strategic(json!({"spec": {"containers": [{"name": "app", "resources": {"requests": {"cpu": "300m"}}}]}})),
        )
        .await
        .expect("resize");
    let requests = resized.spec.unwrap().containers[0]
        .resources
        .clone()
        .unwrap()
        .requests
        .unwrap();
    assert_eq!(requests["cpu"].0, "300m");
    assert_eq!(
        pods.get_resize("typed")
            .await
            .unwrap()
            .metadata
            .name
            .as_deref(),
        Some("typed")
    );

    create_csr(&s, "typed");
    let csrs: Api<CertificateSigningRequest> = Api::all(client);
    let approved = csrs
        .patch_approval(
            "typed",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"conditions": [{"type": "Approved", "status": "True", "reason": "ByKube", "message": "approved by a kube-rs program"}]}})),
        )
        .await
        .expect("approve");
    let conditions = approved.status.unwrap().conditions.unwrap();
    assert_eq!(conditions[0].type_, "Approved");
    assert!(conditions[0].last_update_time.is_some());
}

/// `kubectl get csr` prints kube-apiserver's columns: NAME AGE SIGNERNAME REQUESTOR
/// REQUESTEDDURATION CONDITION, the condition following approval.
#[tokio::test(flavor = "multi_thread")]
async fn kubectl_get_csr_prints_upstreams_columns() {
    let s = TestServer::start();
    let csr = json!({
        "apiVersion": "certificates.k8s.io/v1",
        "kind": "CertificateSigningRequest",
        "metadata": {"name": "dave"},
        "spec": {"request": csr_request("dave"), "signerName": "example.com/signer", "usages": ["client auth"], "expirationSeconds": 7200}
    });
    let file = s.write_file("dave.json", &csr.to_string());
    s.kubectl_ok(&["create", "-f", file.to_str().unwrap()]);
    let requestor = get_json(&s, &["csr", "dave"])["spec"]["username"]
        .as_str()
        .expect("username")
        .to_string();
    let out = s.kubectl_ok(&["get", "csr"]);
    let lines: Vec<Vec<&str>> = out
        .lines()
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(
        lines[0],
        [
            "NAME",
            "AGE",
            "SIGNERNAME",
            "REQUESTOR",
            "REQUESTEDDURATION",
            "CONDITION"
        ],
        "{out}"
    );
    assert_eq!(lines[1][0], "dave", "{out}");
    assert_eq!(
        lines[1][2..],
        ["example.com/signer", requestor.as_str(), "120m", "Pending"],
        "{out}"
    );
    s.kubectl_ok(&["certificate", "approve", "dave"]);
    let out = s.kubectl_ok(&["get", "csr", "dave", "--no-headers"]);
    assert!(out.trim_end().ends_with("Approved"), "{out}");
}
