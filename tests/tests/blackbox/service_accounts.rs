//! Service account tokens from outside: `kubectl create token` (TokenRequest) and what
//! makes a token stop working — another server's key, expiry, a tampered payload, the
//! audience, the deletion of its ServiceAccount or of the object it is bound to — each
//! answered 401, and TokenRequest's own checks.

use std::path::Path;
use std::time::{Duration, Instant};

use apiserver_tests::credentials::UserCredentials;
use apiserver_tests::TestServer;
use base64::Engine;

/// A namespace `a` with ServiceAccount `robot`, allowed to read ConfigMaps there.
fn with_robot(s: &TestServer) {
    s.kubectl_ok(&["create", "namespace", "a"]);
    s.kubectl_ok(&["create", "serviceaccount", "robot", "-n", "a"]);
    s.grant(
        "a",
        "cm-reader",
        "get,list",
        "configmaps",
        "--serviceaccount=a:robot",
    );
}

/// The HTTP status of listing ConfigMaps in `a` with `token`.
fn list_with(s: &TestServer, token: &str) -> u16 {
    let kubeconfig = s.kubeconfig_for("t", &UserCredentials::Token(token.to_string()));
    let path = "/api/v1/namespaces/a/configmaps";
    apiserver_tests::credentials::get_as(&kubeconfig, path, &[]).status
}

/// Waits until listing with `token` answers `code` (RBAC and deletions reach the
/// authenticator and authorizer through the watch caches).
fn eventually_status(s: &TestServer, token: &str, code: u16) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let got = list_with(s, token);
        if got == code {
            return;
        }
        assert!(Instant::now() < deadline, "still {got}, waiting for {code}");
    }
}

/// A TokenReview of `token` (with `audiences`), as the admin.
fn review(s: &TestServer, token: &str, audiences: &[&str]) -> serde_json::Value {
    let mut spec = serde_json::json!({ "token": token });
    if !audiences.is_empty() {
        spec["audiences"] = serde_json::json!(audiences);
    }
    let body = serde_json::json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": spec});
    let file = s.write_file("review.json", &body.to_string());
    serde_json::from_str(&s.kubectl_ok(&["create", "-f", file.to_str().unwrap(), "-o", "json"]))
        .unwrap()
}

/// The claims of a JWT, unverified.
fn claims_of(token: &str) -> serde_json::Value {
    let payload = token.trim().split('.').nth(1).expect("a JWT");
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(payload)
        .expect("base64url");
    serde_json::from_slice(&bytes).expect("JSON claims")
}

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

#[test]
fn tokens_that_stop_working() {
    let a = TestServer::start();
    let b = TestServer::start();
    for s in [&a, &b] {
        with_robot(s);
    }
    let token = a
        .kubectl_ok(&["create", "token", "robot", "-n", "a"])
        .trim()
        .to_string();
    eventually_status(&a, &token, 200);
    // Another server signs with another key (and its robot has another uid).
    assert_eq!(list_with(&b, &token), 401);
    // A payload changed after signing.
    let parts: Vec<&str> = token.split('.').collect();
    let mut claims = claims_of(&token);
    claims["exp"] = serde_json::json!(claims["exp"].as_u64().unwrap() + 86_400);
    let tampered = format!(
        "{}.{}.{}",
        parts[0],
        b64(claims.to_string().as_bytes()),
        parts[2]
    );
    assert_eq!(list_with(&a, &tampered), 401);
    assert_eq!(review(&a, &tampered, &[])["status"]["authenticated"], false);
    // Malformed tokens.
    for bad in [
        "a.b.c",
        "not-a-jwt",
        "e30.e30.",
        &format!("{}.{}", parts[0], parts[1]),
    ] {
        assert_eq!(list_with(&a, bad), 401, "{bad}");
    }

    // Audiences: a token for another audience is not one for the API.
    let vault = a
        .kubectl_ok(&["create", "token", "robot", "-n", "a", "--audience=vault"])
        .trim()
        .to_string();
    assert_eq!(list_with(&a, &vault), 401);
    assert_eq!(review(&a, &vault, &[])["status"]["authenticated"], false);
    let answer = review(&a, &vault, &["vault"]);
    assert_eq!(answer["status"]["authenticated"], true, "{answer}");
    assert_eq!(answer["status"]["audiences"], serde_json::json!(["vault"]));

    // Bound to a Secret: dies with it; unbound: dies with the ServiceAccount.
    a.kubectl_ok(&[
        "create",
        "secret",
        "generic",
        "s",
        "-n",
        "a",
        "--from-literal=k=v",
    ]);
    let bound = a
        .kubectl_ok(&[
            "create",
            "token",
            "robot",
            "-n",
            "a",
            "--bound-object-kind=Secret",
            "--bound-object-name=s",
        ])
        .trim()
        .to_string();
    eventually_status(&a, &bound, 200);
    a.kubectl_ok(&["delete", "secret", "s", "-n", "a"]);
    eventually_status(&a, &bound, 401);
    assert_eq!(list_with(&a, &token), 200);
    a.kubectl_ok(&["delete", "serviceaccount", "robot", "-n", "a"]);
    eventually_status(&a, &token, 401);
    // A new ServiceAccount of the same name is another identity.
    a.kubectl_ok(&["create", "serviceaccount", "robot", "-n", "a"]);
    assert_eq!(list_with(&a, &token), 401);
}

#[test]
fn an_expired_token_is_refused() {
    // The test signs with the server's own key, so only the expiry is wrong.
    let dir = tempfile::tempdir().unwrap();
    let key = rcgen::KeyPair::generate().unwrap();
    let key_file = dir.path().join("sa.key");
    std::fs::write(&key_file, key.serialize_pem()).unwrap();
    let s = TestServer::start_with_flags(&[&format!(
        "--service-account-signing-key-file={}",
        key_file.display()
    )]);
    with_robot(&s);
    let token = s
        .kubectl_ok(&["create", "token", "robot", "-n", "a"])
        .trim()
        .to_string();
    eventually_status(&s, &token, 200);
    let parts: Vec<&str> = token.split('.').collect();
    let mut claims = claims_of(&token);
    claims["exp"] = serde_json::json!(claims["iat"].as_u64().unwrap() - 60);
    let expired = resign(&key_file, parts[0], &claims);
    assert_eq!(list_with(&s, &expired), 401);
    let answer = review(&s, &expired, &[]);
    assert_eq!(answer["status"]["authenticated"], false);
    assert!(
        answer["status"]["error"]
            .as_str()
            .unwrap()
            .contains("expired"),
        "{answer}"
    );
    // The same claims unexpired, signed the same way, do work: the signing is right.
    claims["exp"] = serde_json::json!(claims["iat"].as_u64().unwrap() + 600);
    assert_eq!(list_with(&s, &resign(&key_file, parts[0], &claims)), 200);
}

/// `claims` signed ES256 with the PKCS#8 P-256 key in `key_file`, with the header
/// `header` (base64url JSON) of a token the server issued.
fn resign(key_file: &Path, header: &str, claims: &serde_json::Value) -> String {
    let header: jsonwebtoken::Header = serde_json::from_slice(
        &base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(header)
            .unwrap(),
    )
    .unwrap();
    let key = jsonwebtoken::EncodingKey::from_ec_pem(&std::fs::read(key_file).unwrap()).unwrap();
    jsonwebtoken::encode(&header, claims, &key).unwrap()
}

#[test]
fn token_requests_are_checked() {
    let s = TestServer::start_with_flags(&["--service-account-max-token-expiration=1h"]);
    with_robot(&s);
    let e = s.kubectl_err(&["create", "token", "robot", "-n", "a", "--duration=5m"]);
    assert!(
        e.contains("may not specify a duration less than 10 minutes"),
        "{e}"
    );
    let e = s.kubectl_err(&["create", "token", "ghost", "-n", "a"]);
    assert!(e.contains(r#"serviceaccounts "ghost" not found"#), "{e}");
    let e = s.kubectl_err(&[
        "create",
        "token",
        "robot",
        "-n",
        "a",
        "--bound-object-kind=Secret",
        "--bound-object-name=nope",
    ]);
    assert!(e.contains(r#"secrets "nope" not found"#), "{e}");
    // A longer lifetime is capped by --service-account-max-token-expiration.
    let token = s.kubectl_ok(&["create", "token", "robot", "-n", "a", "--duration=48h"]);
    let claims = claims_of(&token);
    let lifetime = claims["exp"].as_u64().unwrap() - claims["iat"].as_u64().unwrap();
    assert_eq!(lifetime, 3600, "{claims}");
    assert_eq!(claims["sub"], "system:serviceaccount:a:robot");
    assert_eq!(
        claims["iss"],
        "https://kubernetes.default.svc.cluster.local"
    );
}
