//! RBAC authorization as a new user meets it (`--authorization-mode=RBAC`, the
//! default): anonymous and unbound users are refused with kube-apiserver's messages, a
//! Role and RoleBinding grant exactly what they say, `kubectl auth can-i` and `kubectl
//! auth whoami` report it, client certificates and service account tokens work through
//! kubectl, escalation is refused, and the bootstrap policy is reconciled at start-up
//! without overwriting what users changed.

use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::{Duration, Instant};

use apiserver_tests::credentials::{TestCa, UserCredentials};
use apiserver_tests::TestServer;

const TOKENS: &str = "alice-token,alice,1001,\"dev,qa\"\nbob-token,bob,1002\n";

/// A server with a token file (alice, bob) and a client CA, and its files.
fn server(ca: &TestCa) -> (TestServer, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let tokens = dir.path().join("tokens.csv");
    std::fs::write(&tokens, TOKENS).unwrap();
    let ca_file = ca.write(dir.path());
    let s = TestServer::start_with_flags(&[
        &format!("--token-auth-file={}", tokens.display()),
        &format!("--client-ca-file={}", ca_file.display()),
    ]);
    (s, dir)
}

fn user(s: &TestServer, name: &str) -> PathBuf {
    s.kubeconfig_for(name, &UserCredentials::Token(format!("{name}-token")))
}

fn out(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn err(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Runs kubectl as `kubeconfig` until it succeeds (RBAC changes reach the authorizer
/// through the watch caches, a moment after the write is acknowledged).
fn eventually_ok(s: &TestServer, kubeconfig: &Path, args: &[&str]) -> String {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let o = s.kubectl_as(kubeconfig, args);
        if o.status.success() {
            return out(&o);
        }
        assert!(
            Instant::now() < deadline,
            "kubectl {args:?} kept failing: {}",
            err(&o)
        );
    }
}

/// Runs kubectl as `kubeconfig` until it fails; its stderr.
fn eventually_fails(s: &TestServer, kubeconfig: &Path, args: &[&str]) -> String {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let o = s.kubectl_as(kubeconfig, args);
        if !o.status.success() {
            return err(&o);
        }
        assert!(
            Instant::now() < deadline,
            "kubectl {args:?} kept succeeding"
        );
    }
}

/// A GET as the user of `kubeconfig`: status and body.
fn get(kubeconfig: &Path, path: &str) -> (u16, serde_json::Value) {
    let r = apiserver_tests::credentials::get_as(kubeconfig, path, &[]);
    (r.status, r.json)
}

#[test]
fn a_role_grants_what_it_says_where_it_says() {
    let ca = TestCa::new("test-client-ca");
    let (s, _files) = server(&ca);
    for ns in ["a", "b"] {
        s.kubectl_ok(&["create", "namespace", ns]);
        s.kubectl_ok(&["create", "configmap", "cm", "-n", ns, "--from-literal=k=v"]);
    }
    s.grant("a", "cm-reader", "get", "configmaps", "--user=alice");

    let alice = user(&s, "alice");
    let got = eventually_ok(
        &s,
        &alice,
        &["get", "configmap", "cm", "-n", "a", "-o", "name"],
    );
    assert_eq!(got.trim(), "configmap/cm");
    let refused = s.kubectl_as(&alice, &["get", "configmap", "cm", "-n", "b"]);
    assert!(
        err(&refused).contains(r#"Error from server (Forbidden): configmaps "cm" is forbidden: User "alice" cannot get resource "configmaps" in API group "" in the namespace "b""#),
        "{}",
        err(&refused)
    );
    // get does not grant list.
    let refused = s.kubectl_as(&alice, &["get", "configmaps", "-n", "a"]);
    assert!(err(&refused).contains(
        r#"User "alice" cannot list resource "configmaps" in API group "" in the namespace "a""#
    ));

    // Anonymous requests: public information only.
    let nobody = s.kubeconfig_for("nobody", &UserCredentials::Anonymous);
    let (code, status) = get(&nobody, "/api/v1/namespaces/default/configmaps");
    assert_eq!(code, 403);
    assert_eq!(
        status["message"],
        r#"configmaps is forbidden: User "system:anonymous" cannot list resource "configmaps" in API group "" in the namespace "default""#
    );
    assert_eq!(get(&nobody, "/version").0, 200);
    assert_eq!(get(&nobody, "/healthz").0, 200);
    assert_eq!(
        get(&nobody, "/api").0,
        403,
        "discovery is for authenticated users"
    );
    // Discovery and OpenAPI stay readable by any authenticated user.
    let bob = user(&s, "bob");
    for path in [
        "/api",
        "/apis",
        "/api/v1",
        "/openapi/v3",
        "/openapi/v2",
        "/version",
    ] {
        assert_eq!(get(&bob, path).0, 200, "{path}");
    }
    let (code, _) = get(&bob, "/api/v1/namespaces/a/configmaps/cm");
    assert_eq!(code, 403);

    // can-i answers for the user, and --list matches the granted rules.
    assert_eq!(
        out(&s.kubectl(&[
            "auth",
            "can-i",
            "get",
            "configmaps",
            "-n",
            "a",
            "--as=alice"
        ]))
        .trim(),
        "yes"
    );
    assert_eq!(
        out(&s.kubectl(&[
            "auth",
            "can-i",
            "get",
            "configmaps",
            "-n",
            "b",
            "--as=alice"
        ]))
        .trim(),
        "no"
    );
    let list = out(&s.kubectl(&["auth", "can-i", "--list", "-n", "a", "--as=alice"]));
    let configmaps: Vec<&str> = list
        .lines()
        .filter(|l| l.starts_with("configmaps "))
        .collect();
    assert_eq!(configmaps.len(), 1, "{list}");
    assert!(
        configmaps[0]
            .split_whitespace()
            .eq(["configmaps", "[]", "[]", "[get]"]),
        "{list}"
    );
    assert!(!list.contains("secrets"), "{list}");
    assert!(
        list.contains("selfsubjectaccessreviews.authorization.k8s.io"),
        "{list}"
    );
    let in_b = out(&s.kubectl(&["auth", "can-i", "--list", "-n", "b", "--as=alice"]));
    assert!(
        !in_b.lines().any(|l| l.starts_with("configmaps ")),
        "{in_b}"
    );
}

#[test]
fn whoami_certificates_and_service_account_tokens() {
    let ca = TestCa::new("test-client-ca");
    let (s, _files) = server(&ca);
    let (cert, key) = ca.client_cert("jane", Some("dev"));
    let jane = s.kubeconfig_for("jane", &UserCredentials::Certificate(cert, key));
    let who = out(&s.kubectl_as(&jane, &["auth", "whoami"]));
    assert!(
        who.lines()
            .any(|l| l.split_whitespace().eq(["Username", "jane"])),
        "{who}"
    );
    assert!(
        who.lines()
            .any(|l| l.starts_with("Groups") && l.contains("[dev system:authenticated]")),
        "{who}"
    );

    s.kubectl_ok(&["create", "namespace", "a"]);
    s.kubectl_ok(&["create", "configmap", "cm", "-n", "a", "--from-literal=k=v"]);
    s.kubectl_ok(&["create", "serviceaccount", "robot", "-n", "a"]);
    s.grant(
        "a",
        "cm-reader",
        "get",
        "configmaps",
        "--serviceaccount=a:robot",
    );
    let token = s
        .kubectl_ok(&["create", "token", "robot", "-n", "a"])
        .trim()
        .to_string();
    assert_eq!(token.split('.').count(), 3, "a JWT: {token}");
    let robot = s.kubeconfig_for("robot", &UserCredentials::Token(token.clone()));
    let who = out(&s.kubectl_as(&robot, &["auth", "whoami"]));
    assert!(who.contains("system:serviceaccount:a:robot"), "{who}");
    assert!(
        who.contains("[system:serviceaccounts system:serviceaccounts:a system:authenticated]"),
        "{who}"
    );
    eventually_ok(&s, &robot, &["get", "configmap", "cm", "-n", "a"]);

    // TokenReview sees the same.
    let review = s.write_file(
        "review.json",
        &serde_json::json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": {"token": token}}).to_string(),
    );
    let answer: serde_json::Value = serde_json::from_str(&s.kubectl_ok(&[
        "create",
        "-f",
        review.to_str().unwrap(),
        "-o",
        "json",
    ]))
    .unwrap();
    assert_eq!(answer["status"]["authenticated"], true, "{answer}");
    assert_eq!(
        answer["status"]["user"]["username"],
        "system:serviceaccount:a:robot"
    );

    // The token dies with its service account.
    s.kubectl_ok(&["delete", "serviceaccount", "robot", "-n", "a"]);
    let e = eventually_fails(&s, &robot, &["get", "configmap", "cm", "-n", "a"]);
    assert!(e.contains("You must be logged in to the server"), "{e}");
}

#[test]
fn escalation_is_refused() {
    let ca = TestCa::new("test-client-ca");
    let (s, _files) = server(&ca);
    s.kubectl_ok(&["create", "namespace", "a"]);
    s.grant(
        "a",
        "rbac-writer",
        "create,get",
        "roles,rolebindings",
        "--user=alice",
    );
    let alice = user(&s, "alice");
    // What she holds she may hand on...
    eventually_ok(
        &s,
        &alice,
        &[
            "create",
            "role",
            "reader",
            "--verb=get",
            "--resource=roles",
            "-n",
            "a",
        ],
    );
    // ...but not more.
    let e = err(&s.kubectl_as(
        &alice,
        &[
            "create",
            "role",
            "secrets",
            "--verb=get",
            "--resource=secrets",
            "-n",
            "a",
        ],
    ));
    assert!(
        e.contains(r#"roles.rbac.authorization.k8s.io "secrets" is forbidden: user "alice" (groups=["dev" "qa" "system:authenticated"]) is attempting to grant RBAC permissions not currently held:"#),
        "{e}"
    );
    let e = err(&s.kubectl_as(
        &alice,
        &[
            "create",
            "rolebinding",
            "me-admin",
            "--clusterrole=cluster-admin",
            "--user=alice",
            "-n",
            "a",
        ],
    ));
    assert!(
        e.contains(r#"rolebindings.rbac.authorization.k8s.io "me-admin" is forbidden"#),
        "{e}"
    );
    // A binding to a role that does not exist grants nothing.
    s.kubectl_ok(&[
        "create",
        "rolebinding",
        "ghost",
        "--role=missing",
        "--user=bob",
        "-n",
        "a",
    ]);
    let bob = user(&s, "bob");
    assert_eq!(get(&bob, "/api/v1/namespaces/a/configmaps").0, 403);
}

#[test]
fn bootstrap_policy_is_reconciled_without_overwriting_changes() {
    let ca = TestCa::new("test-client-ca");
    let (mut s, _files) = server(&ca);
    for role in [
        "cluster-admin",
        "admin",
        "edit",
        "view",
        "system:discovery",
        "system:basic-user",
        "system:public-info-viewer",
    ] {
        s.kubectl_ok(&["get", "clusterrole", role]);
    }
    // Aggregation: a role labelled for view joins view (and so edit and admin).
    s.kubectl_ok(&[
        "create",
        "clusterrole",
        "widget-viewer",
        "--verb=get,list",
        "--resource=widgets.example.dev",
    ]);
    s.kubectl_ok(&[
        "label",
        "clusterrole",
        "widget-viewer",
        "rbac.authorization.k8s.io/aggregate-to-view=true",
    ]);
    let deadline = Instant::now() + Duration::from_secs(10);
    while !s
        .kubectl_ok(&["get", "clusterrole", "admin", "-o", "json"])
        .contains("widgets")
    {
        assert!(
            Instant::now() < deadline,
            "admin never aggregated the widget rule"
        );
    }

    // A role the user opted out of updating keeps their change; a deleted one comes back.
    s.kubectl_ok(&[
        "annotate",
        "--overwrite",
        "clusterrole",
        "system:basic-user",
        "rbac.authorization.kubernetes.io/autoupdate=false",
    ]);
    s.kubectl_ok(&[
        "patch",
        "clusterrole",
        "system:basic-user",
        "--type=json",
        "-p",
        r#"[{"op":"replace","path":"/rules","value":[]}]"#,
    ]);
    s.kubectl_ok(&["delete", "clusterrolebinding", "system:discovery"]);
    s.restart();
    let basic = s.kubectl_ok(&[
        "get",
        "clusterrole",
        "system:basic-user",
        "-o",
        "jsonpath={.rules}",
    ]);
    assert!(basic.trim().is_empty() || basic.trim() == "[]", "{basic}");
    s.kubectl_ok(&["get", "clusterrolebinding", "system:discovery"]);
}

/// Creates `body` with kubectl as the admin; the answer as JSON, or the error text.
fn create_as_admin(
    s: &TestServer,
    name: &str,
    body: serde_json::Value,
) -> Result<serde_json::Value, String> {
    let file = s.write_file(name, &body.to_string());
    let o = s.kubectl(&["create", "-f", file.to_str().unwrap(), "-o", "json"]);
    if o.status.success() {
        Ok(serde_json::from_str(&out(&o)).unwrap())
    } else {
        Err(err(&o))
    }
}

#[test]
fn resource_names_limit_gets_and_watches_and_reviews_say_so() {
    let ca = TestCa::new("test-client-ca");
    let (s, _files) = server(&ca);
    s.kubectl_ok(&["create", "namespace", "a"]);
    for cm in ["cm", "other"] {
        s.kubectl_ok(&["create", "configmap", cm, "-n", "a", "--from-literal=k=v"]);
    }
    s.kubectl_ok(&[
        "create",
        "role",
        "one-cm",
        "--verb=get,list,watch",
        "--resource=configmaps",
        "--resource-name=cm",
        "-n",
        "a",
    ]);
    s.kubectl_ok(&[
        "create",
        "rolebinding",
        "bob-one",
        "--role=one-cm",
        "--user=bob",
        "-n",
        "a",
    ]);
    let bob = user(&s, "bob");
    eventually_ok(&s, &bob, &["get", "configmap", "cm", "-n", "a"]);
    assert!(!s
        .kubectl_as(&bob, &["get", "configmap", "other", "-n", "a"])
        .status
        .success());
    // A list or watch of that one name (fieldSelector metadata.name) is allowed; of all, not.
    let one = "fieldSelector=metadata.name%3Dcm";
    assert_eq!(
        get(&bob, &format!("/api/v1/namespaces/a/configmaps?{one}")).0,
        200
    );
    assert_eq!(
        get(
            &bob,
            &format!("/api/v1/namespaces/a/configmaps?watch=1&timeoutSeconds=1&{one}")
        )
        .0,
        200
    );
    assert_eq!(
        get(
            &bob,
            "/api/v1/namespaces/a/configmaps?watch=1&timeoutSeconds=1"
        )
        .0,
        403
    );
    assert_eq!(get(&bob, "/api/v1/namespaces/a/configmaps").0, 403);

    // SubjectAccessReview answers the same for bob, with RBAC's reason.
    let sar = |name: &str| {
        serde_json::json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
            "spec": {"user": "bob", "resourceAttributes": {"namespace": "a", "verb": "get", "resource": "configmaps", "name": name}}})
    };
    let yes = create_as_admin(&s, "sar1.json", sar("cm")).unwrap();
    assert_eq!(yes["status"]["allowed"], true, "{yes}");
    assert!(
        yes["status"]["reason"]
            .as_str()
            .unwrap()
            .contains(r#"RoleBinding "bob-one/a" of Role "one-cm""#),
        "{yes}"
    );
    let no = create_as_admin(&s, "sar2.json", sar("other")).unwrap();
    assert_eq!(no["status"]["allowed"], false, "{no}");
    // Malformed reviews are refused.
    let e = create_as_admin(
        &s,
        "sar3.json",
        serde_json::json!({"apiVersion": "authorization.k8s.io/v1",
        "kind": "SubjectAccessReview", "spec": {"user": "bob"}}),
    )
    .unwrap_err();
    assert!(
        e.contains("exactly one of nonResourceAttributes or resourceAttributes must be specified"),
        "{e}"
    );
    let e = create_as_admin(&s, "lsar.json", serde_json::json!({"apiVersion": "authorization.k8s.io/v1",
        "kind": "LocalSubjectAccessReview", "metadata": {"namespace": "a"},
        "spec": {"user": "bob", "resourceAttributes": {"namespace": "b", "verb": "get", "resource": "configmaps"}}})).unwrap_err();
    assert!(
        e.contains("spec.resourceAttributes.namespace must match metadata.namespace"),
        "{e}"
    );
    let local = create_as_admin(&s, "lsar2.json", serde_json::json!({"apiVersion": "authorization.k8s.io/v1",
        "kind": "LocalSubjectAccessReview", "metadata": {"namespace": "a"},
        "spec": {"user": "bob", "resourceAttributes": {"verb": "get", "resource": "configmaps", "name": "cm"}}})).unwrap();
    assert_eq!(local["status"]["allowed"], true, "{local}");
}
