//! Encryption at rest (`--encryption-provider-config`): what reaches the store is
//! encrypted for the resources the file names and plain for the others, clients see
//! plain objects (get, list, watch), keys rotate by restart and replace, and a bad file
//! stops start-up with the file and field named.
//!
//! On either backend (`APISERVER_TEST_STORAGE`): the raw values are read with etcd's own
//! API (its JSON gateway) on etcd, and with the embedded store's own reader (the server
//! stopped for the moment, as the store is locked while it runs) on the embedded store,
//! whose file is also searched byte by byte for what must never reach it.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use apiserver_tests::{free_port, server_binary, Backend, TestServer};
use base64::Engine;
use futures_util::StreamExt;
use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, PostParams, WatchEvent, WatchParams};
use tempfile::TempDir;

const KEY1: &str = "MTIzNDU2Nzg5MDEyMzQ1Njc4OTAxMjM0NTY3ODkwMTI="; // 32 bytes
const KEY2: &str = "YWJjZGVmZ2hpamtsbW5vcHFyc3R1dnd4eXphYmNkZWY="; // 32 bytes

fn b64(s: &str) -> String {
    base64::engine::general_purpose::STANDARD.encode(s)
}

/// A marker no earlier run wrote (redb keeps old pages, so a reused text could be found
/// from another test's write).
fn marker(what: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    format!("{what}-{nanos:x}-{}", std::process::id())
}

/// An EncryptionConfiguration for secrets with `providers` (YAML list items).
fn config_for_secrets(providers: &str) -> String {
    format!(
        "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n- resources: [secrets]\n  providers:\n{providers}"
    )
}

fn keyed(provider: &str, keys: &[(&str, &str)]) -> String {
    let mut out = format!("  - {provider}:\n      keys:\n");
    for (name, secret) in keys {
        out.push_str(&format!("      - name: {name}\n        secret: {secret}\n"));
    }
    out
}

const IDENTITY: &str = "  - identity: {}\n";

/// A server with `--encryption-provider-config` at a file the test rewrites between
/// restarts.
struct Encrypted {
    server: TestServer,
    config: PathBuf,
    _dir: TempDir,
}

impl Encrypted {
    fn start(config: &str) -> Encrypted {
        let dir = TempDir::with_prefix("apiserver-encryption-").unwrap();
        let path = dir.path().join("encryption.yaml");
        std::fs::write(&path, config).unwrap();
        let flag = format!("--encryption-provider-config={}", path.display());
        let server = TestServer::start_with_flags(&[&flag]);
        Encrypted {
            server,
            config: path,
            _dir: dir,
        }
    }

    /// Restarts the server with the configuration `config`.
    fn restart_with(&mut self, config: &str) {
        std::fs::write(&self.config, config).unwrap();
        self.server.restart();
    }

    fn create_secret(&self, name: &str, password: &str) {
        self.server.kubectl_ok(&[
            "create",
            "secret",
            "generic",
            name,
            &format!("--from-literal=password={password}"),
        ]);
    }

    /// The password as a client reads it (decoded from `data`).
    fn password(&self, name: &str) -> String {
        let data =
            self.server
                .kubectl_ok(&["get", "secret", name, "-o", "jsonpath={.data.password}"]);
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(data.trim())
            .unwrap_or_else(|e| panic!("secret {name}: {data:?}: {e}"));
        String::from_utf8(bytes).unwrap()
    }

    /// The values stored under `prefix`, as the backend holds them.
    fn raw(&mut self, prefix: &str) -> BTreeMap<String, Vec<u8>> {
        crate::stored::raw(&mut self.server, prefix)
    }

    /// Asserts `text` (and its base64 form) appears nowhere in storage: in the embedded
    /// store's whole file (old pages included), or in any value under `/registry/` on
    /// etcd.
    fn assert_never_stored(&mut self, text: &str) {
        for needle in [text.to_string(), b64(text)] {
            let found = match self.server.backend() {
                Backend::Embedded => {
                    let file = std::fs::read(self.server.data_dir().join("store.redb")).unwrap();
                    contains(&file, needle.as_bytes())
                }
                Backend::Etcd => self
                    .raw("/registry/")
                    .values()
                    .any(|v| contains(v, needle.as_bytes())),
            };
            assert!(!found, "{needle:?} reached storage in clear");
        }
    }
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

fn starts_with(value: &[u8], prefix: &str) -> bool {
    value.starts_with(prefix.as_bytes())
}

fn show(value: &[u8]) -> String {
    String::from_utf8_lossy(&value[..value.len().min(60)]).into_owned()
}

#[test]
fn secrets_are_encrypted_at_rest_with_each_provider_and_configmaps_are_not() {
    for provider in ["aescbc", "aesgcm", "secretbox"] {
        let mut s = Encrypted::start(&config_for_secrets(&keyed(provider, &[("key1", KEY1)])));
        let password = marker(&format!("{provider}-password"));
        let clear = marker(&format!("{provider}-clear"));
        s.create_secret("s", &password);
        s.server.kubectl_ok(&[
            "create",
            "configmap",
            "c",
            &format!("--from-literal=k={clear}"),
        ]);
        assert_eq!(s.password("s"), password);

        s.assert_never_stored(&password);
        let raw = s.raw("/registry/");
        let secret = &raw["/registry/secrets/default/s"];
        let prefix = format!("k8s:enc:{provider}:v1:key1:");
        assert!(
            starts_with(secret, &prefix),
            "{provider}: stored {:?}",
            show(secret)
        );
        let cm = &raw["/registry/configmaps/default/c"];
        assert!(
            contains(cm, clear.as_bytes()),
            "configmaps are not listed: stored in clear"
        );
        assert!(starts_with(cm, "{"), "{}", show(cm));

        // After the restart the raw read made (embedded), or as it is (etcd): still read.
        assert_eq!(s.password("s"), password);
        let listed =
            s.server
                .kubectl_ok(&["get", "secrets", "-o", "jsonpath={.items[*].data.password}"]);
        assert_eq!(listed.trim(), b64(&password));
    }
}

#[test]
fn keys_rotate_by_restarting_with_a_new_first_key_and_replacing_every_secret() {
    let mut s = Encrypted::start(&config_for_secrets(&keyed("aescbc", &[("key1", KEY1)])));
    s.server.kubectl_ok(&["create", "namespace", "other"]);
    let passwords = [marker("rot-a"), marker("rot-b")];
    s.create_secret("a", &passwords[0]);
    s.server.kubectl_ok(&[
        "create",
        "secret",
        "generic",
        "b",
        "-n",
        "other",
        &format!("--from-literal=password={}", passwords[1]),
    ]);
    let keys = ["/registry/secrets/default/a", "/registry/secrets/other/b"];

    // key2 first, key1 still listed: old values read, new writes use key2.
    s.restart_with(&config_for_secrets(&keyed(
        "aescbc",
        &[("key2", KEY2), ("key1", KEY1)],
    )));
    assert_eq!(s.password("a"), passwords[0]);
    let raw = s.raw("/registry/secrets/");
    for key in keys {
        assert!(
            starts_with(&raw[key], "k8s:enc:aescbc:v1:key1:"),
            "{key}: {}",
            show(&raw[key])
        );
    }

    // Replacing every secret unchanged rewrites each one with key2.
    let all = s.server.kubectl_ok(&["get", "secrets", "-A", "-o", "json"]);
    let out = s
        .server
        .kubectl_with_stdin(&["replace", "-f", "-"], Some(&all));
    assert!(
        out.status.success(),
        "replace: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let raw = s.raw("/registry/secrets/");
    for key in keys {
        assert!(
            starts_with(&raw[key], "k8s:enc:aescbc:v1:key2:"),
            "{key}: {}",
            show(&raw[key])
        );
    }
    // A second replace finds nothing stale: no write, same resourceVersion.
    let rv = |s: &Encrypted| {
        s.server.kubectl_ok(&[
            "get",
            "secret",
            "a",
            "-o",
            "jsonpath={.metadata.resourceVersion}",
        ])
    };
    let before = rv(&s);
    let one = s.server.kubectl_ok(&["get", "secret", "a", "-o", "json"]);
    let out = s
        .server
        .kubectl_with_stdin(&["replace", "-f", "-"], Some(&one));
    assert!(out.status.success());
    assert_eq!(rv(&s), before, "an up-to-date secret is not rewritten");

    // key1 dropped: everything still reads.
    s.restart_with(&config_for_secrets(&keyed("aescbc", &[("key2", KEY2)])));
    assert_eq!(s.password("a"), passwords[0]);
    let b = s.server.kubectl_ok(&[
        "get",
        "secret",
        "b",
        "-n",
        "other",
        "-o",
        "jsonpath={.data.password}",
    ]);
    assert_eq!(b.trim(), b64(&passwords[1]));
    for p in &passwords {
        s.assert_never_stored(p);
    }
}

#[test]
fn identity_first_reads_encrypted_values_and_writes_plain() {
    let aesgcm = keyed("aesgcm", &[("key1", KEY1)]);
    let mut s = Encrypted::start(&config_for_secrets(&aesgcm));
    let old = marker("old");
    s.create_secret("old", &old);

    // Migrating back: identity writes, aesgcm still reads.
    s.restart_with(&config_for_secrets(&format!("{IDENTITY}{aesgcm}")));
    assert_eq!(s.password("old"), old);
    let new = marker("new");
    s.create_secret("new", &new);
    let all = s.server.kubectl_ok(&["get", "secrets", "-o", "json"]);
    let out = s
        .server
        .kubectl_with_stdin(&["replace", "-f", "-"], Some(&all));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    let raw = s.raw("/registry/secrets/default/");
    for (name, password) in [("old", &old), ("new", &new)] {
        let v = &raw[&format!("/registry/secrets/default/{name}")];
        assert!(starts_with(v, "{"), "{name} is stored plain: {}", show(v));
        assert!(contains(v, b64(password).as_bytes()));
    }
}

#[test]
fn a_value_whose_key_was_dropped_is_a_clear_error_and_the_server_keeps_serving() {
    let mut s = Encrypted::start(&config_for_secrets(&keyed("secretbox", &[("key1", KEY1)])));
    s.create_secret("lost", &marker("lost"));
    s.restart_with(&config_for_secrets(&keyed("secretbox", &[("key2", KEY2)])));

    // Upstream answers 500 for such an object, and for a list holding it.
    for args in [&["get", "secret", "lost"][..], &["get", "secrets"]] {
        let err = s.server.kubectl_err(args);
        assert!(err.contains("InternalError"), "{args:?}: {err}");
        assert!(
            err.contains("encrypted with secretbox (v1) key") && err.contains("key1"),
            "{args:?}: the error names the missing key: {err}"
        );
    }
    assert!(s.server.is_running());
    // Other resources, and new secrets, are served.
    s.server.kubectl_ok(&["get", "configmaps"]);
    s.create_secret("fresh", "fresh-value");
    assert_eq!(s.password("fresh"), "fresh-value");
    // Putting the key back makes it readable again.
    s.restart_with(&config_for_secrets(&keyed(
        "secretbox",
        &[("key2", KEY2), ("key1", KEY1)],
    )));
    s.server.kubectl_ok(&["get", "secrets", "lost", "fresh"]);
}

#[tokio::test(flavor = "multi_thread")]
async fn watches_and_lists_see_decrypted_secrets() {
    let s = Encrypted::start(&config_for_secrets(&keyed("aesgcm", &[("key1", KEY1)])));
    let client = s.server.client().await;
    let secrets: Api<Secret> = Api::default_namespaced(client);
    let mut events = secrets
        .watch(&WatchParams::default().timeout(30), "0")
        .await
        .unwrap()
        .boxed();
    let password = marker("watched");
    let secret: Secret = serde_json::from_value(serde_json::json!({
        "metadata": { "name": "w" },
        "stringData": { "password": password },
    }))
    .unwrap();
    secrets
        .create(&PostParams::default(), &secret)
        .await
        .unwrap();
    let seen = tokio::time::timeout(Duration::from_secs(20), async {
        while let Some(e) = events.next().await {
            if let WatchEvent::Added(s) = e.unwrap() {
                if s.metadata.name.as_deref() == Some("w") {
                    return s;
                }
            }
        }
        panic!("the watch ended")
    })
    .await
    .expect("an ADDED event for w");
    let data = seen.data.unwrap();
    assert_eq!(data["password"].0, password.as_bytes());

    let listed = secrets.list(&Default::default()).await.unwrap();
    assert_eq!(
        listed.items[0].data.as_ref().unwrap()["password"].0,
        password.as_bytes()
    );
}

/// Runs the server binary with `config` as `--encryption-provider-config` and returns
/// its exit status and stderr (it must not start).
fn refused(config: &str) -> (std::process::ExitStatus, String, PathBuf, TempDir) {
    let dir = TempDir::with_prefix("apiserver-encryption-bad-").unwrap();
    let path = dir.path().join("bad.yaml");
    std::fs::write(&path, config).unwrap();
    let out = std::process::Command::new(server_binary())
        .arg("--data-dir")
        .arg(dir.path().join("data"))
        .args(["--secure-port", &free_port().to_string()])
        .arg(format!("--encryption-provider-config={}", path.display()))
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    (out.status, stderr, path, dir)
}

#[test]
fn a_bad_configuration_stops_start_up_naming_the_file_and_the_field() {
    let (status, stderr, path, _dir) = refused(&config_for_secrets(&format!(
        "{}  - kms:\n      name: vault\n",
        keyed("aesgcm", &[("key1", "c2hvcnQ=")])
    )));
    assert!(!status.success());
    let file = path.display().to_string();
    assert!(
        stderr.contains(&format!("--encryption-provider-config {file}")),
        "{stderr}"
    );
    assert!(
        stderr.contains("resources[0].providers[0].aesgcm.keys[0].secret: the key is 5 bytes long; expected one of [16, 24, 32] bytes"),
        "{stderr}"
    );
    assert!(
        stderr.contains("resources[0].providers[1].kms: KMS providers are not supported"),
        "{stderr}"
    );
    assert!(
        !stderr.contains("c2hvcnQ="),
        "secrets are not echoed: {stderr}"
    );

    let (status, stderr, _, _dir) = refused("resources: [\n");
    assert!(!status.success());
    assert!(stderr.contains("--encryption-provider-config "), "{stderr}");
}
