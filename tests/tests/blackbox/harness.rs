//! The harness itself: start-up output, failure reporting, stop.

use apiserver_tests::{Backend, TestServer};

#[test]
fn start_reports_url_and_kubeconfig() {
    let mut s = TestServer::start();
    assert_eq!(s.url(), format!("https://127.0.0.1:{}", s.port()));
    assert!(s.kubeconfig().is_absolute());
    assert!(s
        .kubeconfig()
        .starts_with(s.data_dir().canonicalize().expect("data dir exists")));
    assert!(s.data_dir().join("certs").join("ca.crt").is_file());
    assert!(s.is_running());
    s.stop();
    assert!(!s.is_running());
    s.stop();
}

#[test]
fn a_server_that_cannot_start_fails_loudly_with_its_stderr() {
    let file = tempfile::NamedTempFile::new().unwrap();
    // --data-dir pointing at a regular file is refused by flag validation.
    let result = std::panic::catch_unwind(|| TestServer::start_in(file.path()));
    let panic = result.err().expect("start_in should have panicked");
    let message = panic
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_default();
    assert!(
        message.contains("exited before printing `Admin kubeconfig:`"),
        "{message}"
    );
    assert!(
        message.contains("exists and is not a directory"),
        "the server's stderr is missing from: {message}"
    );
}

#[test]
fn a_server_on_etcd_stores_into_the_harness_etcd_and_restarts_on_it() {
    let mut s = TestServer::start_on_etcd();
    assert_eq!(s.backend(), Backend::Etcd);
    s.kubectl_ok(&["create", "configmap", "kept", "--from-literal=a=b"]);
    // The objects are in etcd, not in an embedded store under the data directory.
    assert!(s.etcd().data_dir().join("member").is_dir());
    assert!(!s.data_dir().join("store.redb").exists());
    let ready = s.kubectl_ok(&["get", "--raw", "/readyz?verbose"]);
    assert!(ready.contains("[+]etcd ok"), "{ready}");
    s.restart();
    assert_eq!(
        s.kubectl_ok(&["get", "configmap", "kept", "-o", "jsonpath={.data.a}"]),
        "b"
    );
}

#[test]
fn the_kubectl_the_tests_run_is_the_version_tests_requirements_pins() {
    let kubectl = apiserver_tests::kubectl_binary();
    let out = std::process::Command::new(&kubectl)
        .args(["version", "--client", "-o", "json"])
        .output()
        .unwrap_or_else(|e| panic!("running {}: {e}", kubectl.display()));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let version: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        version["clientVersion"]["gitVersion"].as_str(),
        Some(apiserver_tests::pinned_kubectl_version().as_str()),
        "{} is not the kubectl tests/requirements.txt pins; `bash tests/run.sh` installs that one",
        kubectl.display()
    );
}
