//! Authentication as kube-apiserver does it: the admin kubeconfig's token, static tokens
//! (`--token-auth-file`), client certificates (`--client-ca-file`), anonymous requests
//! (`--anonymous-auth`) and impersonation. Servers here run with
//! `--authorization-mode=AlwaysDeny`, so only `system:masters` may act and every other
//! user's 403 Status names who the server thinks is asking.

use std::process::{Command, Output};

use apiserver_tests::credentials::{TestCa, UserCredentials};
use apiserver_tests::TestServer;

const TOKENS: &str = "alice-token,alice,1001,\"dev,qa\"\nroot-token,root,0,system:masters\n";

/// A server with a token file and a client CA, where only `system:masters` may act
/// (and the directory holding those files).
fn server(ca: &TestCa, extra: &[&str]) -> (TestServer, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let tokens = dir.path().join("tokens.csv");
    std::fs::write(&tokens, TOKENS).unwrap();
    let ca_file = ca.write(dir.path());
    let mut flags = vec![
        "--authorization-mode=AlwaysDeny".to_string(),
        format!("--token-auth-file={}", tokens.display()),
        format!("--client-ca-file={}", ca_file.display()),
    ];
    flags.extend(extra.iter().map(|f| f.to_string()));
    let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
    (TestServer::start_with_flags(&flags), dir)
}

const LIST: &str = "/api/v1/namespaces/b/configmaps";

fn stderr(out: &Output) -> String {
    assert!(!out.status.success(), "expected a failure: {out:?}");
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// The 403 Status of a refused list of the ConfigMaps in namespace b.
fn list_forbidden_for(user: &str) -> serde_json::Value {
    serde_json::json!({
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": format!("configmaps is forbidden: User \"{user}\" cannot list resource \"configmaps\" in API group \"\" in the namespace \"b\": Everything is forbidden."),
        "reason": "Forbidden", "details": {"kind": "configmaps"}, "code": 403,
    })
}

#[test]
fn each_kind_of_credential_names_its_user() {
    let ca = TestCa::new("test-client-ca");
    let (s, _files) = server(&ca, &[]);

    // The admin kubeconfig's token is a system:masters user: allowed.
    s.kubectl_ok(&["get", "configmaps", "-n", "b"]);
    let root = s.kubeconfig_for("root", &UserCredentials::Token("root-token".into()));
    assert_eq!(
        get(&root, &[], LIST)["kind"],
        "ConfigMapList",
        "a token-file master"
    );
    let (cert, key) = ca.client_cert("ops-admin", Some("system:masters"));
    let ops = s.kubeconfig_for("ops", &UserCredentials::Certificate(cert, key));
    let out = s.kubectl_as(&ops, &["get", "configmaps", "-n", "b"]);
    assert!(
        out.status.success(),
        "a certificate master through kubectl: {out:?}"
    );

    // A token-file user, a certificate user (CN is the user, O the group), and a
    // request without credentials (the anonymous user).
    let alice = s.kubeconfig_for("alice", &UserCredentials::Token("alice-token".into()));
    assert_eq!(get(&alice, &[], LIST), list_forbidden_for("alice"));
    let (cert, key) = ca.client_cert("jane", Some("dev"));
    let jane = s.kubeconfig_for("jane", &UserCredentials::Certificate(cert, key));
    assert_eq!(get(&jane, &[], LIST), list_forbidden_for("jane"));
    let nobody = s.kubeconfig_for("nobody", &UserCredentials::Anonymous);
    assert_eq!(
        get(&nobody, &[], LIST),
        list_forbidden_for("system:anonymous")
    );
}

#[test]
fn bad_credentials_are_401_even_with_anonymous_access() {
    let ca = TestCa::new("test-client-ca");
    let (s, _files) = server(&ca, &[]);
    let unauthorized = serde_json::json!({"kind": "Status", "apiVersion": "v1", "metadata": {},
        "status": "Failure", "message": "Unauthorized", "reason": "Unauthorized", "code": 401});

    let forged = s.kubeconfig_for("forged", &UserCredentials::Token("not-a-token".into()));
    assert_eq!(get(&forged, &[], LIST), unauthorized);
    let err = stderr(&s.kubectl_as(&forged, &["get", "configmaps"]));
    assert!(
        err.contains("error: You must be logged in to the server"),
        "{err}"
    );
    // A certificate from another CA, even one claiming system:masters.
    let (cert, key) = TestCa::new("other-ca").client_cert("mallory", Some("system:masters"));
    let other = s.kubeconfig_for("other", &UserCredentials::Certificate(cert, key));
    assert_eq!(get(&other, &[], LIST), unauthorized);
    // Next to a good token, the bad certificate is passed over: the first
    // authenticator that accepts a credential decides.
    assert_eq!(
        get(&other, &[("Authorization", "Bearer alice-token")], LIST),
        list_forbidden_for("alice"),
    );
}

#[test]
fn without_anonymous_access_no_credentials_is_401() {
    let ca = TestCa::new("test-client-ca");
    let (s, _files) = server(&ca, &["--anonymous-auth=false"]);
    let nobody = s.kubeconfig_for("nobody", &UserCredentials::Anonymous);
    assert_eq!(get(&nobody, &[], LIST)["code"], 401);
    assert_eq!(get(&nobody, &[], "/healthz")["code"], 401);
    s.kubectl_ok(&["get", "configmaps"]);
}

#[test]
fn impersonation_is_authorized_with_the_impersonate_verb() {
    let ca = TestCa::new("test-client-ca");
    let (s, _files) = server(&ca, &[]);
    let admin = s.kubeconfig().to_path_buf();

    // A master may impersonate anyone, and then acts as them.
    let as_bob = [("Impersonate-User", "bob"), ("Impersonate-Group", "dev")];
    assert_eq!(get(&admin, &as_bob, LIST), list_forbidden_for("bob"));
    let as_sa = [("Impersonate-User", "system:serviceaccount:b:robot")];
    assert_eq!(
        get(&admin, &as_sa, LIST),
        list_forbidden_for("system:serviceaccount:b:robot")
    );
    let as_master = [
        ("Impersonate-User", "x"),
        ("Impersonate-Group", "system:masters"),
    ];
    assert_eq!(get(&admin, &as_master, LIST)["kind"], "ConfigMapList");

    // Others may not: the refusal names what they tried to impersonate.
    let alice = s.kubeconfig_for("alice", &UserCredentials::Token("alice-token".into()));
    let refused = get(&alice, &[("Impersonate-User", "bob")], LIST);
    assert_eq!(
        refused["message"],
        r#"users "bob" is forbidden: User "alice" cannot impersonate resource "users" in API group "" at the cluster scope: Everything is forbidden."#
    );
    assert_eq!(refused["code"], 403);
    let refused = get(&alice, &as_sa, LIST);
    assert_eq!(
        refused["message"],
        r#"serviceaccounts "robot" is forbidden: User "alice" cannot impersonate resource "serviceaccounts" in API group "" in the namespace "b": Everything is forbidden."#
    );
    // Not even into system:masters by naming the group alone.
    let out = get(&alice, &[("Impersonate-Group", "system:masters")], LIST);
    assert_eq!(
        (out["code"].as_u64(), out["reason"].as_str()),
        (Some(400), Some("BadRequest"))
    );
}

#[test]
fn bad_authentication_flags_stop_the_server_at_start_up() {
    let dir = tempfile::tempdir().unwrap();
    let short = dir.path().join("short.csv");
    std::fs::write(&short, "t1,alice,1\nt2,bob\n").unwrap();
    let not_pem = dir.path().join("ca.crt");
    std::fs::write(&not_pem, "not a certificate").unwrap();
    for (flag, message) in [
        (
            format!("--token-auth-file={}", short.display()),
            "line 2: 2 columns".to_string(),
        ),
        (
            format!("--client-ca-file={}", not_pem.display()),
            "no certificate found".to_string(),
        ),
        (
            "--authorization-mode=Webhook".into(),
            "unknown or unsupported mode \"Webhook\"".into(),
        ),
        (
            "--authorization-mode=RBAC,RBAC".into(),
            "RBAC is listed twice".into(),
        ),
    ] {
        let data = tempfile::tempdir().unwrap();
        let out = Command::new(apiserver_tests::server_binary())
            .arg("--data-dir")
            .arg(data.path())
            .args([
                "--secure-port",
                &apiserver_tests::free_port().to_string(),
                &flag,
            ])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            !out.status.success() && err.contains(&message),
            "{flag}: {err}"
        );
    }
}

/// A GET as the user of `kubeconfig` with extra `headers`; the body as JSON.
fn get(kubeconfig: &std::path::Path, headers: &[(&str, &str)], path: &str) -> serde_json::Value {
    apiserver_tests::credentials::get_as(kubeconfig, path, headers).json
}
