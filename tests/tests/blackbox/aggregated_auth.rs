//! Serving as an aggregated API server: a child server B with
//! `--authentication-kubeconfig` and `--authorization-kubeconfig` pointing at a parent A
//! (token users, RBAC) trusts front proxies' headers, checks unknown tokens with
//! TokenReviews on A and asks A whether each request is allowed; A publishes its client
//! and front-proxy CAs in kube-system/extension-apiserver-authentication, where a child
//! given no CA flags finds them.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use apiserver_tests::credentials::{request_as, TestCa, UserCredentials};
use apiserver_tests::{RawResponse, TestServer};
use serde_json::{json, Value};

const TOKENS: &str = "alice-token,alice,1001,devs\nbob-token,bob,1002\n";
const PROXY_NAME: &str = "front-proxy-client";
const REVIEWS: &str = "/apis/authentication.k8s.io/v1/selfsubjectreviews";
const CONFIGMAPS: &str = "/api/v1/namespaces/default/configmaps";

/// The files the servers are started with.
struct Files {
    dir: tempfile::TempDir,
    proxy_ca: TestCa,
    client_ca: TestCa,
}

impl Files {
    fn new() -> Files {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("tokens.csv"), TOKENS).unwrap();
        Files {
            dir,
            proxy_ca: TestCa::new("front-proxy-ca"),
            client_ca: TestCa::new("client-ca"),
        }
    }

    fn write(&self, name: &str, contents: &str) -> String {
        let path = self.dir.path().join(name);
        std::fs::write(&path, contents).unwrap();
        path.display().to_string()
    }

    /// `--flag=<file holding contents>`.
    fn flag(&self, flag: &str, name: &str, contents: &str) -> String {
        format!("--{flag}={}", self.write(name, contents))
    }

    fn proxy_ca_flag(&self) -> String {
        self.flag(
            "requestheader-client-ca-file",
            "proxy-ca.crt",
            &self.proxy_ca.pem,
        )
    }

    fn client_ca_flag(&self) -> String {
        self.flag("client-ca-file", "client-ca.crt", &self.client_ca.pem)
    }

    /// The parent: token users and RBAC, plus `extra` flags.
    fn parent(&self, extra: &[String]) -> TestServer {
        let tokens = format!(
            "--token-auth-file={}",
            self.dir.path().join("tokens.csv").display()
        );
        let mut flags = vec![tokens];
        flags.extend(extra.iter().cloned());
        start(&flags)
    }

    /// A child of `parent` (its admin kubeconfig names it), plus `extra` flags.
    fn child(&self, parent: &TestServer, extra: &[String]) -> TestServer {
        let kubeconfig = parent.kubeconfig().display().to_string();
        let mut flags = vec![
            format!("--authentication-kubeconfig={kubeconfig}"),
            format!("--authorization-kubeconfig={kubeconfig}"),
        ];
        flags.extend(extra.iter().cloned());
        start(&flags)
    }

    /// A kubeconfig for `server` presenting a client certificate of `ca` named `cn`.
    fn cert_user(&self, server: &TestServer, ca: &TestCa, cn: &str) -> PathBuf {
        let (cert, key) = ca.client_cert(cn, None);
        server.kubeconfig_for(cn, &UserCredentials::Certificate(cert, key))
    }
}

fn start(flags: &[String]) -> TestServer {
    let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
    TestServer::start_with_flags(&flags)
}

/// Who `kubeconfig`'s requests (with `headers`) are to the server: its
/// SelfSubjectReview's userInfo.
fn whoami(kubeconfig: &Path, headers: &[(&str, &str)]) -> Value {
    let review = json!({"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"});
    let out = request_as(kubeconfig, "POST", REVIEWS, Some(&review), headers);
    assert_eq!(out.status, 201, "SelfSubjectReview: {}", out.text);
    out.json["status"]["userInfo"].clone()
}

fn list_configmaps(kubeconfig: &Path, headers: &[(&str, &str)]) -> RawResponse {
    request_as(kubeconfig, "GET", CONFIGMAPS, None, headers)
}

/// The 403 message B gives for `user` listing ConfigMaps in default: upstream's words,
/// then the reason A's SubjectAccessReview gives, if any.
fn forbidden_message(parent: &TestServer, user: &str) -> String {
    let review = json!({
        "apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
        "spec": {"user": user, "groups": ["system:authenticated"],
                 "resourceAttributes": {"namespace": "default", "verb": "list", "version": "v1", "resource": "configmaps"}},
    });
    let answer = request_as(
        parent.kubeconfig(),
        "POST",
        "/apis/authorization.k8s.io/v1/subjectaccessreviews",
        Some(&review),
        &[],
    );
    assert_eq!(answer.json["status"]["allowed"], false, "{}", answer.text);
    let mut message = format!(
        r#"configmaps is forbidden: User "{user}" cannot list resource "configmaps" in API group "" in the namespace "default""#
    );
    if let Some(reason) = answer.json["status"]["reason"]
        .as_str()
        .filter(|r| !r.is_empty())
    {
        message = format!("{message}: {reason}");
    }
    message
}

/// Polls `f` until it holds or `within` passes.
fn eventually(within: Duration, mut f: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + within;
    loop {
        if f() {
            return true;
        }
        if Instant::now() > deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn a_child_server_trusts_front_proxy_headers_and_parent_tokens_and_asks_the_parent_to_authorize() {
    let files = Files::new();
    let a = files.parent(&[]);
    let b = files.child(
        &a,
        &[
            files.proxy_ca_flag(),
            format!("--requestheader-allowed-names={PROXY_NAME}"),
            files.client_ca_flag(),
            // Refusals are cached for a second, so a grant on A shows within one.
            "--authorization-webhook-cache-unauthorized-ttl=1s".into(),
        ],
    );
    let proxy = files.cert_user(&b, &files.proxy_ca, PROXY_NAME);
    let as_alice = [
        ("X-Remote-User", "alice"),
        ("X-Remote-Group", "devs"),
        ("X-Remote-Extra-Scopes", "read"),
    ];

    // (a) The front proxy's headers name the user, her groups and extras.
    assert_eq!(
        whoami(&proxy, &as_alice),
        json!({"username": "alice", "groups": ["devs", "system:authenticated"], "extra": {"scopes": ["read"]}})
    );

    // (b) Allowed on B exactly when A's RBAC allows: refused with A's reason, then
    // granted on A, then allowed on B; another user stays refused.
    let refused = list_configmaps(&proxy, &as_alice);
    assert_eq!(refused.status, 403, "{}", refused.text);
    assert_eq!(refused.json["message"], forbidden_message(&a, "alice"));
    a.grant(
        "default",
        "cm-reader",
        "get,list",
        "configmaps",
        "--user=alice",
    );
    assert!(
        eventually(Duration::from_secs(10), || list_configmaps(
            &proxy, &as_alice
        )
        .status
            == 200),
        "alice is not allowed on B after the grant on A: {}",
        list_configmaps(&proxy, &as_alice).text
    );
    let bob = list_configmaps(&proxy, &[("X-Remote-User", "bob")]);
    assert_eq!(bob.status, 403, "{}", bob.text);
    assert_eq!(bob.json["message"], forbidden_message(&a, "bob"));

    // (c) The same headers from anyone else are not honoured: an ordinary client
    // certificate is its own user, a token its own; a certificate of the proxy CA whose
    // name is not allowed is refused.
    let jane = files.cert_user(&b, &files.client_ca, "jane");
    assert_eq!(whoami(&jane, &as_alice)["username"], "jane");
    let bob_token = b.kubeconfig_for("bob", &UserCredentials::Token("bob-token".into()));
    assert_eq!(
        whoami(&bob_token, &as_alice),
        json!({"username": "bob", "uid": "1002", "groups": ["system:authenticated"]})
    );
    let mallory = files.cert_user(&b, &files.proxy_ca, "mallory");
    assert_eq!(list_configmaps(&mallory, &as_alice).status, 401);

    // (d) A's tokens are A's users on B (TokenReview), unknown ones are 401.
    let alice_token = b.kubeconfig_for("alice", &UserCredentials::Token("alice-token".into()));
    assert_eq!(
        whoami(&alice_token, &[]),
        json!({"username": "alice", "uid": "1001", "groups": ["devs", "system:authenticated"]})
    );
    assert_eq!(list_configmaps(&alice_token, &[]).status, 200);
    let forged = b.kubeconfig_for("forged", &UserCredentials::Token("forged-token".into()));
    assert_eq!(list_configmaps(&forged, &[]).status, 401);

    // With A gone, a request A has not answered before fails as upstream's does (500,
    // the authorizer's error) once the backoff's tries are spent, within the call's
    // 10 s, and B's own admin still gets through.
    drop(a);
    let started = Instant::now();
    let down = list_configmaps(&proxy, &[("X-Remote-User", "carol")]);
    assert_eq!(
        (down.status, down.json["reason"].as_str()),
        (500, Some("InternalError")),
        "{}",
        down.text
    );
    assert!(
        down.json["message"]
            .as_str()
            .unwrap_or_default()
            .contains("SubjectAccessReview"),
        "{}",
        down.text
    );
    assert!(
        started.elapsed() < Duration::from_secs(11),
        "{:?}",
        started.elapsed()
    );
    b.kubectl_ok(&["get", "configmaps"]);
}

#[test]
fn a_parent_publishes_extension_apiserver_authentication_and_a_child_without_ca_flags_follows_it() {
    let files = Files::new();
    let a = files.parent(&[
        files.proxy_ca_flag(),
        format!("--requestheader-allowed-names={PROXY_NAME}"),
        files.client_ca_flag(),
    ]);

    // (e) The ConfigMap as kube-apiserver writes it, and the role that may read it.
    let config_map: Value = serde_json::from_str(&a.kubectl_ok(&[
        "get",
        "configmap",
        "-n",
        "kube-system",
        "extension-apiserver-authentication",
        "-o",
        "json",
    ]))
    .unwrap();
    let data = &config_map["data"];
    let mut keys: Vec<&String> = data.as_object().unwrap().keys().collect();
    keys.sort();
    assert_eq!(
        keys,
        [
            "client-ca-file",
            "requestheader-allowed-names",
            "requestheader-client-ca-file",
            "requestheader-extra-headers-prefix",
            "requestheader-group-headers",
            "requestheader-uid-headers",
            "requestheader-username-headers",
        ]
    );
    assert_eq!(data["client-ca-file"], files.client_ca.pem.as_str());
    assert_eq!(
        data["requestheader-client-ca-file"],
        files.proxy_ca.pem.as_str()
    );
    assert_eq!(
        data["requestheader-allowed-names"],
        r#"["front-proxy-client"]"#
    );
    assert_eq!(
        data["requestheader-username-headers"],
        r#"["X-Remote-User"]"#
    );
    assert_eq!(data["requestheader-group-headers"], r#"["X-Remote-Group"]"#);
    assert_eq!(
        data["requestheader-extra-headers-prefix"],
        r#"["X-Remote-Extra-"]"#
    );
    assert_eq!(data["requestheader-uid-headers"], "[]");
    let rules = a.kubectl_ok(&[
        "get",
        "role",
        "-n",
        "kube-system",
        "extension-apiserver-authentication-reader",
        "-o",
        "jsonpath={.rules}",
    ]);
    assert_eq!(
        serde_json::from_str::<Value>(&rules).unwrap(),
        json!([{"apiGroups": [""], "resources": ["configmaps"],
                "resourceNames": ["extension-apiserver-authentication"], "verbs": ["get", "list", "watch"]}])
    );
    // Bound, as upstream, to the controller manager and the scheduler.
    let subjects = a.kubectl_ok(&[
        "get",
        "rolebinding",
        "-n",
        "kube-system",
        "system::extension-apiserver-authentication-reader",
        "-o",
        "jsonpath={.roleRef.name} {.subjects[*].name}",
    ]);
    assert_eq!(
        subjects,
        "extension-apiserver-authentication-reader system:kube-controller-manager system:kube-scheduler"
    );
    let can_read = a.kubectl_ok(&[
        "auth",
        "can-i",
        "get",
        "configmap/extension-apiserver-authentication",
        "-n",
        "kube-system",
        "--as=system:kube-scheduler",
    ]);
    assert_eq!(can_read.trim(), "yes");

    // A child given no CA flags trusts what A published: A's front proxy and A's
    // client certificates.
    let b = files.child(&a, &[]);
    let proxy = files.cert_user(&b, &files.proxy_ca, PROXY_NAME);
    assert_eq!(
        whoami(
            &proxy,
            &[("X-Remote-User", "alice"), ("X-Remote-Group", "devs")]
        ),
        json!({"username": "alice", "groups": ["devs", "system:authenticated"]})
    );
    let jane = files.cert_user(&b, &files.client_ca, "jane");
    assert_eq!(whoami(&jane, &[])["username"], "jane");
    let not_allowed = files.cert_user(&b, &files.proxy_ca, "mallory");
    assert_eq!(
        list_configmaps(&not_allowed, &[("X-Remote-User", "alice")]).status,
        401
    );

    // The front-proxy CA rotated and another proxy name allowed, on A only: B follows
    // without a restart.
    let rotated = TestCa::new("rotated-front-proxy-ca");
    let patch = json!({"data": {
        "requestheader-client-ca-file": rotated.pem,
        "requestheader-allowed-names": r#"["other-proxy"]"#,
    }});
    a.kubectl_ok(&[
        "patch",
        "configmap",
        "-n",
        "kube-system",
        "extension-apiserver-authentication",
        "--type=merge",
        "-p",
        &patch.to_string(),
    ]);
    let other_proxy = files.cert_user(&b, &rotated, "other-proxy");
    assert!(
        eventually(Duration::from_secs(20), || {
            list_configmaps(&other_proxy, &[("X-Remote-User", "alice")]).status != 401
        }),
        "B never trusted the rotated front-proxy CA"
    );
    assert_eq!(
        whoami(&other_proxy, &[("X-Remote-User", "alice")]),
        json!({"username": "alice", "groups": ["system:authenticated"]})
    );
    assert_eq!(
        list_configmaps(&proxy, &[("X-Remote-User", "alice")]).status,
        401,
        "the old front proxy is no longer trusted"
    );
}
