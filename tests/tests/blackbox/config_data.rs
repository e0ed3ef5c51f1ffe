//! What kube-apiserver enforces on ConfigMap and Secret data, as kubectl users meet it:
//! key names, keys in both `data` and `binaryData`, the 1 MiB limit, the keys each Secret
//! type needs, bad base64 (a decoding error), immutable objects and a Secret's `type`;
//! and `/version` with or without its trailing slash.

use apiserver_tests::TestServer;

/// kubectl's stderr for a create from `manifest` (JSON) that must fail.
fn create_err(s: &TestServer, manifest: &str) -> String {
    let out = s.kubectl_with_stdin(&["create", "-f", "-"], Some(manifest));
    assert!(!out.status.success(), "created: {manifest}");
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn create_ok(s: &TestServer, manifest: &str) {
    let out = s.kubectl_with_stdin(&["create", "-f", "-"], Some(manifest));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
}

fn assert_mentions(err: &str, parts: &[&str]) {
    for part in parts {
        assert!(err.contains(part), "{part:?} missing from: {err}");
    }
}

#[test]
fn config_maps_refuse_bad_keys_duplicate_keys_oversized_data_and_changes_once_immutable() {
    let s = TestServer::start();
    let err = create_err(
        &s,
        r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"bad-key"},"data":{"a b":"x"}}"#,
    );
    assert_mentions(
        &err,
        &[
            r#"The ConfigMap "bad-key" is invalid"#,
            r#"data[a b]: Invalid value: "a b": a valid config key must consist of alphanumeric characters, '-', '_' or '.'"#,
            "regex used for validation is '[-._a-zA-Z0-9]+'",
        ],
    );
    let err = create_err(
        &s,
        r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"dup"},"data":{"k":"x"},"binaryData":{"k":"eA=="}}"#,
    );
    assert_mentions(
        &err,
        &[
            r#"data[k]: Invalid value: "k": duplicate of key present in binaryData"#,
            r#"binaryData[k]: Invalid value: "k": duplicate of key present in data"#,
        ],
    );
    let big = format!(
        r#"{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"big"}},"data":{{"a":"{}","b":"{}"}}}}"#,
        "x".repeat(600 * 1024),
        "y".repeat(600 * 1024)
    );
    let err = create_err(&s, &big);
    assert_mentions(&err, &["Too long: may not be more than 1048576 bytes"]);

    create_ok(
        &s,
        r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"frozen"},"immutable":true,"data":{"k":"v"}}"#,
    );
    let patch = |p: &str| s.kubectl(&["patch", "configmap", "frozen", "--type=merge", "-p", p]);
    let out = patch(r#"{"data":{"k":"changed"}}"#);
    assert!(!out.status.success());
    assert_mentions(
        &String::from_utf8_lossy(&out.stderr),
        &["data: Forbidden: field is immutable when `immutable` is set"],
    );
    let out = patch(r#"{"immutable":false}"#);
    assert_mentions(
        &String::from_utf8_lossy(&out.stderr),
        &["immutable: Forbidden: field is immutable when `immutable` is set"],
    );
    // Metadata still changes.
    s.kubectl_ok(&["label", "configmap", "frozen", "team=a"]);
    assert_eq!(
        s.kubectl_ok(&["get", "configmap", "frozen", "-o", "jsonpath={.data.k}"]),
        "v"
    );
}

#[test]
fn secrets_need_their_types_keys_keep_their_type_and_refuse_changes_once_immutable() {
    let s = TestServer::start();
    let err = create_err(
        &s,
        r#"{"apiVersion":"v1","kind":"Secret","metadata":{"name":"tls"},"type":"kubernetes.io/tls","data":{"tls.crt":""}}"#,
    );
    assert_mentions(
        &err,
        &[
            r#"The Secret "tls" is invalid"#,
            "data[tls.key]: Required value",
        ],
    );
    let err = create_err(
        &s,
        r#"{"apiVersion":"v1","kind":"Secret","metadata":{"name":"pull"},"type":"kubernetes.io/dockerconfigjson","stringData":{".dockerconfigjson":"not json"}}"#,
    );
    assert_mentions(
        &err,
        &[
            r#"data[.dockerconfigjson]: Invalid value: "<secret contents redacted>": invalid character 'o' in literal null (expecting 'u')"#,
        ],
    );
    // Bad base64 is a decoding error, as Go's JSON decoder reports it.
    let err = create_err(
        &s,
        r#"{"apiVersion":"v1","kind":"Secret","metadata":{"name":"b64"},"data":{"k":"not*base64"}}"#,
    );
    assert_mentions(
        &err,
        &[
            "Error from server (BadRequest)",
            r#"Secret in version "v1" cannot be handled as a Secret: illegal base64 data at input byte 3"#,
        ],
    );
    let err = create_err(
        &s,
        r#"{"apiVersion":"v1","kind":"Secret","metadata":{"name":"pull2"},"type":"kubernetes.io/dockerconfigjson"}"#,
    );
    assert_mentions(&err, &["data[.dockerconfigjson]: Required value"]);
    let err = create_err(
        &s,
        r#"{"apiVersion":"v1","kind":"Secret","metadata":{"name":"basic"},"type":"kubernetes.io/basic-auth"}"#,
    );
    assert_mentions(
        &err,
        &[
            "data[username]: Required value",
            "data[password]: Required value",
        ],
    );
    let err = create_err(
        &s,
        r#"{"apiVersion":"v1","kind":"Secret","metadata":{"name":"ssh"},"type":"kubernetes.io/ssh-auth"}"#,
    );
    assert_mentions(&err, &["data[ssh-privatekey]: Required value"]);
    // kubectl's own TLS and docker-registry secrets pass.
    s.kubectl_ok(&[
        "create",
        "secret",
        "docker-registry",
        "reg",
        "--docker-server=r.example",
        "--docker-username=u",
        "--docker-password=p",
    ]);

    create_ok(
        &s,
        r#"{"apiVersion":"v1","kind":"Secret","metadata":{"name":"frozen"},"immutable":true,"stringData":{"k":"v"}}"#,
    );
    let out = s.kubectl(&[
        "patch",
        "secret",
        "frozen",
        "--type=merge",
        "-p",
        r#"{"stringData":{"k":"changed"}}"#,
    ]);
    assert_mentions(
        &String::from_utf8_lossy(&out.stderr),
        &["data: Forbidden: field is immutable when `immutable` is set"],
    );
    let out = s.kubectl(&[
        "patch",
        "secret",
        "frozen",
        "--type=merge",
        "-p",
        r#"{"type":"kubernetes.io/basic-auth","data":{"username":"dQ=="}}"#,
    ]);
    assert_mentions(
        &String::from_utf8_lossy(&out.stderr),
        &[r#"type: Invalid value: "kubernetes.io/basic-auth": field is immutable"#],
    );
}

#[test]
fn version_answers_with_and_without_a_trailing_slash() {
    let s = TestServer::start();
    for path in ["/version", "/version/"] {
        let out = s.kubectl_ok(&["get", "--raw", path]);
        let v: serde_json::Value = serde_json::from_str(&out).expect("JSON");
        assert!(
            v["gitVersion"].as_str().is_some_and(|g| g.starts_with('v')),
            "{path}: {out}"
        );
    }
}
