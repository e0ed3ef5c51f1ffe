//! What an operator's probes see: `/healthz`, `/livez` and `/readyz` with
//! kube-apiserver's named checks.

use std::time::{Duration, Instant};

use apiserver_tests::credentials::UserCredentials;
use apiserver_tests::{client_from_kubeconfig, raw_request, RawResponse, TestServer};

const DEADLINE: Duration = Duration::from_secs(20);

/// A user in `system:monitoring`, by token.
const TOKENS: &str = "prom-token,prometheus,2001,system:monitoring\n";

async fn get(client: &kube::Client, path: &str) -> RawResponse {
    raw_request(client, "GET", path, None, Vec::new()).await
}

/// GETs `path` until it answers 200 (start-up hooks may still be running), or panics
/// with the last answer at the deadline.
async fn get_when_ok(client: &kube::Client, path: &str) -> RawResponse {
    let deadline = Instant::now() + DEADLINE;
    loop {
        let r = get(client, path).await;
        if r.status == 200 {
            return r;
        }
        assert!(
            Instant::now() < deadline,
            "{path} never answered 200: {r:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn health_endpoints_report_named_checks() {
    let dir = tempfile::tempdir().unwrap();
    let tokens = dir.path().join("tokens.csv");
    std::fs::write(&tokens, TOKENS).unwrap();
    let s = TestServer::start_with_flags(&[&format!("--token-auth-file={}", tokens.display())]);
    let admin = s.client().await;

    let ready = get_when_ok(&admin, "/readyz?verbose").await;
    assert_eq!(
        ready.text,
        "[+]ping ok\n\
         [+]log ok\n\
         [+]etcd ok\n\
         [+]etcd-readiness ok\n\
         [+]poststarthook/crd-informer-synced ok\n\
         [+]poststarthook/start-system-namespaces-controller ok\n\
         [+]poststarthook/storage-readiness ok\n\
         [+]poststarthook/rbac/bootstrap-roles ok\n\
         [+]shutdown ok\n\
         readyz check passed\n"
    );
    assert!(ready.headers["content-type"]
        .to_str()
        .unwrap()
        .starts_with("text/plain"));
    assert_eq!(get(&admin, "/readyz").await.text, "ok");
    // Liveness has neither the readiness-only storage check nor shutdown.
    let live = get(&admin, "/livez?verbose").await;
    assert_eq!(live.status, 200);
    assert!(live
        .text
        .starts_with("[+]ping ok\n[+]log ok\n[+]etcd ok\n[+]poststarthook/"));
    assert!(!live.text.contains("shutdown") && !live.text.contains("etcd-readiness"));
    assert!(live
        .text
        .ends_with("[+]poststarthook/rbac/bootstrap-roles ok\nlivez check passed\n"));
    let healthz = get(&admin, "/healthz?verbose=1").await;
    assert!(
        healthz.text.ends_with("healthz check passed\n"),
        "{healthz:?}"
    );

    // Each check on its own path.
    for path in [
        "/readyz/ping",
        "/readyz/shutdown",
        "/livez/etcd",
        "/healthz/log",
        "/readyz/poststarthook/rbac/bootstrap-roles",
    ] {
        let r = get(&admin, path).await;
        assert_eq!((r.status, r.text.as_str()), (200, "ok"), "{path}");
    }
    for path in [
        "/readyz/nope",
        "/livez/shutdown",
        "/healthz/poststarthook/nope",
    ] {
        assert_eq!(get(&admin, path).await.status, 404, "{path}");
    }

    // Excluded checks are listed as such; unknown names are warned about.
    let excluded = get(&admin, "/readyz?verbose&exclude=etcd&exclude=nope").await;
    assert_eq!(excluded.status, 200);
    assert!(
        excluded.text.contains("[+]etcd excluded: ok\n"),
        "{excluded:?}"
    );
    assert!(excluded.text.contains("[+]etcd-readiness ok\n"));
    assert!(excluded
        .text
        .contains("warn: some health checks cannot be excluded: no matches for \"nope\"\n"));
    let hook = get(
        &admin,
        "/readyz?verbose&exclude=poststarthook%2Frbac%2Fbootstrap-roles",
    )
    .await;
    assert!(hook
        .text
        .contains("[+]poststarthook/rbac/bootstrap-roles excluded: ok\n"));
    assert_eq!(get(&admin, "/livez?exclude=ping").await.text, "ok");

    // Anyone may ask the endpoints, as upstream's system:public-info-viewer allows; the
    // individual checks are system:monitoring's.
    let anonymous =
        client_from_kubeconfig(&s.kubeconfig_for("anonymous", &UserCredentials::Anonymous)).await;
    for path in ["/readyz", "/livez", "/healthz?verbose"] {
        assert_eq!(get(&anonymous, path).await.status, 200, "{path}");
    }
    assert_eq!(get(&anonymous, "/readyz/ping").await.status, 403);
    let monitor = client_from_kubeconfig(
        &s.kubeconfig_for("prometheus", &UserCredentials::Token("prom-token".into())),
    )
    .await;
    for path in ["/readyz/ping", "/livez/etcd"] {
        assert_eq!(get(&monitor, path).await.status, 200, "{path}");
    }
}

#[tokio::test]
async fn a_failing_check_fails_the_endpoint_with_its_reason_withheld() {
    let mut s = TestServer::start_on_etcd();
    let client = s.client().await;
    get_when_ok(&client, "/readyz").await;
    s.etcd().kill();

    let deadline = Instant::now() + DEADLINE;
    let failed = loop {
        let r = get(&client, "/readyz").await;
        if r.status == 500 {
            break r;
        }
        assert!(Instant::now() < deadline, "/readyz never failed: {r:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    // Without ?verbose too: every check, the failing ones' reasons withheld.
    assert!(
        failed.text.starts_with(
            "[+]ping ok\n[+]log ok\n[-]etcd failed: reason withheld\n\
             [-]etcd-readiness failed: reason withheld\n"
        ),
        "{failed:?}"
    );
    assert!(failed
        .text
        .ends_with("[+]shutdown ok\nreadyz check failed\n"));
    // The reason is on the check's own path.
    let etcd = get(&client, "/livez/etcd").await;
    assert_eq!(etcd.status, 500);
    assert!(etcd.text.starts_with("internal server error: "), "{etcd:?}");
    // Probes that exclude storage still pass.
    let live = get(&client, "/livez?exclude=etcd").await;
    assert_eq!((live.status, live.text.as_str()), (200, "ok"));
}
