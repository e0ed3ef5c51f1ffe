//! The garbage collector (issue 15, item 1): dependents named by `ownerReferences` go
//! with their owner as `kubectl delete --cascade=background|foreground|orphan` asks, as on
//! a cluster with kube-controller-manager; dependents of an owner that does not exist are
//! collected; `--controllers` turns the collector off.

use std::time::{Duration, Instant};

use apiserver_tests::TestServer;
use serde_json::{json, Value};

/// How long the collector may take to act (it follows watch caches; a few ms normally).
const PATIENCE: Duration = Duration::from_secs(20);

/// Polls `cond` until it holds; panics with `what` after [`PATIENCE`].
fn wait_for(what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + PATIENCE;
    while !cond() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn get(s: &TestServer, kind: &str, name: &str) -> Option<Value> {
    let out = s.kubectl(&["get", kind, name, "-o", "json", "--ignore-not-found"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    (!text.trim().is_empty()).then(|| serde_json::from_str(&text).unwrap())
}

fn uid(s: &TestServer, kind: &str, name: &str) -> String {
    s.kubectl_ok(&["get", kind, name, "-o", "jsonpath={.metadata.uid}"])
}

/// An owner reference to the ConfigMap `name` (uid `uid`).
fn owned_by(name: &str, uid: &str, block: bool) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "name": name, "uid": uid, "blockOwnerDeletion": block})
}

/// Creates a ConfigMap with these owner references and finalizers.
fn create_dependent(s: &TestServer, name: &str, owners: &[Value], finalizers: &[&str]) {
    let cm = json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": name, "ownerReferences": owners, "finalizers": finalizers},
    });
    let out = s.kubectl_with_stdin(&["create", "-f", "-"], Some(&cm.to_string()));
    assert!(
        out.status.success(),
        "{name}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn owner_uids(obj: &Value) -> Vec<String> {
    obj["metadata"]["ownerReferences"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|r| r["uid"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn background_cascade_deletes_dependents_of_every_kind_after_the_owner() {
    let s = TestServer::start();
    s.kubectl_ok(&["create", "configmap", "owner"]);
    let owner = uid(&s, "configmap", "owner");
    create_dependent(&s, "dep-cm", &[owned_by("owner", &owner, false)], &[]);
    // A dependent of another kind and group: a Role owned by the ConfigMap.
    let role = json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
        "metadata": {"name": "dep-role", "ownerReferences": [owned_by("owner", &owner, false)]},
        "rules": [],
    });
    let out = s.kubectl_with_stdin(&["create", "-f", "-"], Some(&role.to_string()));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Owned by something else: stays.
    s.kubectl_ok(&["create", "configmap", "bystander"]);

    let out = s.kubectl_ok(&["delete", "configmap", "owner"]);
    assert_eq!(
        out.trim(),
        r#"configmap "owner" deleted from default namespace"#
    );
    assert!(
        get(&s, "configmap", "owner").is_none(),
        "a background delete removes the owner at once"
    );
    wait_for("the dependents to be collected", || {
        get(&s, "configmap", "dep-cm").is_none() && get(&s, "role", "dep-role").is_none()
    });
    assert!(get(&s, "configmap", "bystander").is_some());
}

#[test]
fn foreground_cascade_keeps_the_owner_until_blocking_dependents_are_gone() {
    let s = TestServer::start();
    s.kubectl_ok(&["create", "configmap", "owner"]);
    let owner = uid(&s, "configmap", "owner");
    // The dependent holds a finalizer of its own, so the test decides when it goes.
    create_dependent(
        &s,
        "blocker",
        &[owned_by("owner", &owner, true)],
        &["example.com/hold"],
    );

    s.kubectl_ok(&[
        "delete",
        "configmap",
        "owner",
        "--cascade=foreground",
        "--wait=false",
    ]);
    let pending =
        get(&s, "configmap", "owner").expect("a foreground delete leaves the owner readable");
    assert!(
        pending["metadata"]["deletionTimestamp"].is_string(),
        "{pending}"
    );
    assert_eq!(
        pending["metadata"]["finalizers"],
        json!(["foregroundDeletion"]),
        "{pending}"
    );
    wait_for("the dependent to be deleted", || {
        get(&s, "configmap", "blocker")
            .is_some_and(|b| b["metadata"]["deletionTimestamp"].is_string())
    });
    // The blocking dependent is still there: so is its owner.
    assert!(
        get(&s, "configmap", "owner").is_some(),
        "the owner went before its blocking dependent"
    );

    s.kubectl_ok(&[
        "patch",
        "configmap",
        "blocker",
        "--type=merge",
        "-p",
        r#"{"metadata":{"finalizers":null}}"#,
    ]);
    wait_for("the owner to go after its dependent", || {
        get(&s, "configmap", "owner").is_none()
    });
    assert!(get(&s, "configmap", "blocker").is_none());
}

#[test]
fn foreground_cascade_goes_down_a_chain_of_owners() {
    let s = TestServer::start();
    s.kubectl_ok(&["create", "configmap", "top"]);
    let top = uid(&s, "configmap", "top");
    create_dependent(&s, "middle", &[owned_by("top", &top, true)], &[]);
    let middle = uid(&s, "configmap", "middle");
    create_dependent(&s, "bottom", &[owned_by("middle", &middle, true)], &[]);

    // kubectl waits until the owner is gone, which needs the whole chain gone first.
    let out = s.kubectl_ok(&[
        "delete",
        "configmap",
        "top",
        "--cascade=foreground",
        "--timeout=30s",
    ]);
    assert_eq!(
        out.trim(),
        r#"configmap "top" deleted from default namespace"#
    );
    assert!(get(&s, "configmap", "middle").is_none());
    assert!(get(&s, "configmap", "bottom").is_none());
}

#[test]
fn orphan_cascade_leaves_dependents_without_the_reference() {
    let s = TestServer::start();
    s.kubectl_ok(&["create", "configmap", "owner"]);
    s.kubectl_ok(&["create", "configmap", "other-owner"]);
    let owner = uid(&s, "configmap", "owner");
    let other = uid(&s, "configmap", "other-owner");
    create_dependent(&s, "orphan-1", &[owned_by("owner", &owner, true)], &[]);
    create_dependent(
        &s,
        "orphan-2",
        &[
            owned_by("owner", &owner, false),
            owned_by("other-owner", &other, false),
        ],
        &[],
    );

    // kubectl waits for the owner, which goes once no dependent names it.
    s.kubectl_ok(&[
        "delete",
        "configmap",
        "owner",
        "--cascade=orphan",
        "--timeout=30s",
    ]);
    assert!(get(&s, "configmap", "owner").is_none());
    let one = get(&s, "configmap", "orphan-1").expect("an orphaned dependent stays");
    assert_eq!(owner_uids(&one), Vec::<String>::new(), "{one}");
    let two = get(&s, "configmap", "orphan-2").expect("an orphaned dependent stays");
    assert_eq!(owner_uids(&two), vec![other], "{two}");
}

#[test]
fn dependents_of_owners_that_do_not_exist_are_collected_and_live_owners_keep_theirs() {
    let s = TestServer::start();
    s.kubectl_ok(&["create", "configmap", "alive"]);
    let alive = uid(&s, "configmap", "alive");
    // The owner's name exists, but with another uid: the reference dangles.
    s.kubectl_ok(&["create", "configmap", "replaced"]);
    create_dependent(
        &s,
        "dangling",
        &[owned_by(
            "replaced",
            "00000000-0000-0000-0000-000000000000",
            false,
        )],
        &[],
    );
    create_dependent(
        &s,
        "half",
        &[
            owned_by("alive", &alive, false),
            owned_by("ghost", "11111111-1111-1111-1111-111111111111", false),
        ],
        &[],
    );
    wait_for("the dependent of a missing owner to be collected", || {
        get(&s, "configmap", "dangling").is_none()
    });
    // One live owner keeps it; the dangling reference is dropped.
    wait_for("the dangling reference to be dropped", || {
        get(&s, "configmap", "half").is_some_and(|h| owner_uids(&h) == vec![alive.clone()])
    });
    assert!(get(&s, "configmap", "replaced").is_some());
}

#[test]
fn a_cluster_scoped_owner_collects_namespaced_dependents_across_restarts() {
    let mut s = TestServer::start();
    s.kubectl_ok(&[
        "create",
        "clusterrole",
        "owner-role",
        "--verb=get",
        "--resource=configmaps",
    ]);
    let owner = uid(&s, "clusterrole", "owner-role");
    let reference = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "name": "owner-role", "uid": owner});
    create_dependent(&s, "of-role", &[reference], &[]);
    // The collector's graph is rebuilt from storage at start-up.
    s.restart();
    s.kubectl_ok(&["delete", "clusterrole", "owner-role"]);
    wait_for("the namespaced dependent to be collected", || {
        get(&s, "configmap", "of-role").is_none()
    });
}

#[test]
fn controllers_flag_turns_the_collector_off() {
    let s = TestServer::start_with_flags(&["--controllers=*,-garbage-collector-controller"]);
    s.kubectl_ok(&["create", "configmap", "owner"]);
    let owner = uid(&s, "configmap", "owner");
    create_dependent(&s, "kept", &[owned_by("owner", &owner, false)], &[]);
    s.kubectl_ok(&["delete", "configmap", "owner"]);
    // Nothing to wait for when nothing runs: the dependent must still be there after
    // longer than the collector takes when it runs (the other tests: milliseconds).
    let until = Instant::now() + Duration::from_secs(2);
    while Instant::now() < until {
        assert!(
            get(&s, "configmap", "kept").is_some(),
            "collected with the collector off"
        );
        std::thread::sleep(Duration::from_millis(200));
    }

    let dir = tempfile::tempdir().unwrap();
    let out = std::process::Command::new(apiserver_tests::server_binary())
        .arg("--data-dir")
        .arg(dir.path())
        .arg("--controllers=*,-no-such-controller")
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(r#""no-such-controller" is not a known controller"#),
        "{stderr}"
    );
}
