//! The launcher against the real etcd: its options, and a kill and restart on the same
//! data directory and ports.

use etcd_launcher::Etcd;

#[test]
fn starts_with_options_and_restarts_on_the_same_ports_and_data() {
    let parent = tempfile::tempdir().unwrap();
    let mut etcd = Etcd::builder()
        .tls()
        .dir_in(parent.path())
        .arg("--quota-backend-bytes=1073741824")
        .start();
    let endpoint = etcd.endpoint();
    assert!(endpoint.starts_with("https://127.0.0.1:"), "{endpoint}");
    let tls = etcd.tls().expect("certificates").clone();
    assert!(tls.ca.is_file() && tls.client_cert.is_file() && tls.client_key.is_file());
    assert!(etcd.data_dir().starts_with(parent.path()));
    assert!(etcd.data_dir().join("member").is_dir());
    assert!(etcd.is_running() && etcd.pid().is_some());

    etcd.kill();
    assert!(!etcd.is_running() && etcd.pid().is_none());
    etcd.kill();
    etcd.restart();
    assert!(etcd.is_running(), "{}", etcd.log_tail());
    assert_eq!(etcd.endpoint(), endpoint);

    let data = etcd.data_dir();
    drop(etcd);
    assert!(!data.exists(), "the temporary directory goes with the etcd");
}

#[test]
fn a_failed_start_says_why() {
    let err = Etcd::builder()
        .arg("--no-such-flag")
        .try_start()
        .err()
        .expect("etcd refuses an unknown flag");
    assert!(err.to_string().contains("no-such-flag"), "{err}");
}
