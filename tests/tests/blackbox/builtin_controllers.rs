//! The per-namespace controllers a standalone control plane runs (the `default`
//! ServiceAccount, the `kube-root-ca.crt` ConfigMap) and the Events TTL, seen through
//! kubectl as a user of a cluster would see them.

use std::time::{Duration, Instant};

use apiserver_tests::TestServer;
use base64::Engine;
use serde_json::Value;

/// How long a controller may take to act.
const WITHIN: Duration = Duration::from_secs(10);

/// `kubectl get -o json` of one object, or `None` while it does not exist.
fn get_json(s: &TestServer, args: &[&str]) -> Option<Value> {
    let mut full = vec!["get"];
    full.extend_from_slice(args);
    full.extend(["-o", "json", "--ignore-not-found"]);
    let out = s.kubectl_ok(&full);
    (!out.trim().is_empty()).then(|| serde_json::from_str(&out).expect("JSON from kubectl"))
}

/// Waits until `args` names an object that `accept` takes, and returns it.
fn wait_for(s: &TestServer, args: &[&str], accept: impl Fn(&Value) -> bool) -> Value {
    let deadline = Instant::now() + WITHIN;
    loop {
        let got = get_json(s, args);
        if let Some(obj) = got.as_ref().filter(|o| accept(o)) {
            return obj.clone();
        }
        assert!(
            Instant::now() < deadline,
            "waiting for {args:?}; last seen: {got:?}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The PEM of the CA the admin kubeconfig trusts the server by.
fn kubeconfig_ca(s: &TestServer) -> String {
    let text = std::fs::read_to_string(s.kubeconfig()).expect("reading the kubeconfig");
    let config: serde_yaml::Value = serde_yaml::from_str(&text).expect("a YAML kubeconfig");
    let data = config["clusters"][0]["cluster"]["certificate-authority-data"]
        .as_str()
        .expect("certificate-authority-data");
    let pem = base64::engine::general_purpose::STANDARD
        .decode(data)
        .expect("base64 CA data");
    String::from_utf8(pem).expect("a PEM")
}

#[test]
fn a_new_namespace_gets_a_default_service_account_and_the_root_ca_config_map_and_both_come_back_when_deleted(
) {
    let s = TestServer::start();
    s.kubectl_ok(&["create", "namespace", "team"]);
    let sa = wait_for(&s, &["serviceaccount", "default", "-n", "team"], |_| true);
    let cm = wait_for(&s, &["configmap", "kube-root-ca.crt", "-n", "team"], |_| {
        true
    });
    assert_eq!(cm["data"]["ca.crt"], kubeconfig_ca(&s), "{cm}");
    let description = cm["metadata"]["annotations"]["kubernetes.io/description"]
        .as_str()
        .unwrap_or_default();
    assert!(
        description
            .starts_with("Contains a CA bundle that can be used to verify the kube-apiserver"),
        "{cm}"
    );
    // The namespaces made at start-up have them too.
    for ns in ["default", "kube-system", "kube-public", "kube-node-lease"] {
        wait_for(&s, &["serviceaccount", "default", "-n", ns], |_| true);
        wait_for(&s, &["configmap", "kube-root-ca.crt", "-n", ns], |_| true);
    }

    s.kubectl_ok(&["delete", "serviceaccount", "default", "-n", "team"]);
    let old_uid = sa["metadata"]["uid"].clone();
    wait_for(&s, &["serviceaccount", "default", "-n", "team"], |o| {
        o["metadata"]["uid"] != old_uid
    });

    s.kubectl_ok(&["delete", "configmap", "kube-root-ca.crt", "-n", "team"]);
    let old_uid = cm["metadata"]["uid"].clone();
    let ca = kubeconfig_ca(&s);
    wait_for(&s, &["configmap", "kube-root-ca.crt", "-n", "team"], |o| {
        o["metadata"]["uid"] != old_uid && o["data"]["ca.crt"] == ca.as_str()
    });

    // An edit of the published CA is put back; the user's labels stay.
    s.kubectl_ok(&[
        "patch",
        "configmap",
        "kube-root-ca.crt",
        "-n",
        "team",
        "--type=merge",
        "-p",
        r#"{"metadata":{"labels":{"mine":"yes"}},"data":{"ca.crt":"tampered","extra":"x"}}"#,
    ]);
    let repaired = wait_for(&s, &["configmap", "kube-root-ca.crt", "-n", "team"], |o| {
        o["data"]["ca.crt"] == ca.as_str() && o["data"].get("extra").is_none()
    });
    assert_eq!(repaired["metadata"]["labels"]["mine"], "yes", "{repaired}");
}

/// One server for the flags' tests: the ServiceAccount controller left out, a short
/// Events TTL.
#[test]
fn controllers_left_out_do_not_run_and_events_expire_after_the_event_ttl() {
    let s = TestServer::start_with_flags(&[
        "--controllers=*,-serviceaccount-controller",
        "--event-ttl=2s",
    ]);
    s.kubectl_ok(&["create", "namespace", "quiet"]);
    let core = r#"{"apiVersion":"v1","kind":"Event","metadata":{"name":"e1","namespace":"quiet"},"involvedObject":{"kind":"Namespace","namespace":"quiet","name":"quiet"},"reason":"Tested","message":"m","type":"Normal"}"#;
    let modern = r#"{"apiVersion":"events.k8s.io/v1","kind":"Event","metadata":{"name":"e2","namespace":"quiet"},"eventTime":"2026-01-01T00:00:00.000000Z","reportingController":"tests","reportingInstance":"t1","action":"Test","reason":"Tested","type":"Normal","regarding":{"kind":"Namespace","namespace":"quiet","name":"quiet"}}"#;
    for event in [core, modern] {
        let out = s.kubectl_with_stdin(&["create", "-f", "-"], Some(event));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{stderr}");
    }
    let created = Instant::now();
    // One stored resource: each Event is in both groups (and expires once).
    for name in ["e1", "e2"] {
        assert!(get_json(&s, &["events", name, "-n", "quiet"]).is_some());
        assert!(get_json(&s, &["events.events.k8s.io", name, "-n", "quiet"]).is_some());
    }

    // The root CA publisher runs, so the namespace has been seen by the controllers.
    wait_for(
        &s,
        &["configmap", "kube-root-ca.crt", "-n", "quiet"],
        |_| true,
    );
    let accounts = s.kubectl_ok(&["get", "serviceaccounts", "-n", "quiet", "-o", "name"]);
    assert_eq!(accounts.trim(), "", "no default ServiceAccount is made");

    let deadline = Instant::now() + WITHIN;
    loop {
        let left = s.kubectl_ok(&[
            "get",
            "events,events.events.k8s.io",
            "-n",
            "quiet",
            "-o",
            "name",
        ]);
        if left.trim().is_empty() {
            break;
        }
        assert!(Instant::now() < deadline, "Events still there: {left}");
        std::thread::sleep(Duration::from_millis(200));
    }
    assert!(
        created.elapsed() >= Duration::from_millis(1500),
        "deleted before their TTL passed"
    );
}
