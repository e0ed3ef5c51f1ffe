//! What an operator's probes and dashboards see: `/healthz`, `/livez` and `/readyz` with
//! kube-apiserver's named checks, and `/metrics` in Prometheus' text format under
//! kube-apiserver's metric names and labels, counting what kubectl does.

use std::time::{Duration, Instant};

use apiserver_tests::credentials::UserCredentials;
use apiserver_tests::metrics::{scrape, Scrape};
use apiserver_tests::{client_from_kubeconfig, raw_request, RawResponse, TestServer};
use futures_util::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, PostParams, WatchEvent, WatchParams};

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
         [+]poststarthook/start-service-ip-repair-controllers ok\n\
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
    // individual checks and /metrics are system:monitoring's.
    let anonymous =
        client_from_kubeconfig(&s.kubeconfig_for("anonymous", &UserCredentials::Anonymous)).await;
    for path in ["/readyz", "/livez", "/healthz?verbose"] {
        assert_eq!(get(&anonymous, path).await.status, 200, "{path}");
    }
    for path in ["/readyz/ping", "/metrics"] {
        assert_eq!(get(&anonymous, path).await.status, 403, "{path}");
    }
    let monitor = client_from_kubeconfig(
        &s.kubeconfig_for("prometheus", &UserCredentials::Token("prom-token".into())),
    )
    .await;
    for path in ["/readyz/ping", "/livez/etcd", "/metrics"] {
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

const CREATE_CONFIGMAP: &[(&str, &str)] = &[
    ("verb", "POST"),
    ("dry_run", ""),
    ("group", ""),
    ("version", "v1"),
    ("resource", "configmaps"),
    ("subresource", ""),
    ("scope", "namespace"),
    ("component", "apiserver"),
    ("code", "201"),
];

#[tokio::test]
async fn metrics_count_what_kubectl_does() {
    let s = TestServer::start_with_flags(&[apiserver_tests::WITHOUT_ROOT_CA_PUBLISHER]);
    let client = s.client().await;
    get_when_ok(&client, "/readyz").await;

    let before = scrape(&client).await;
    for name in ["m1", "m2", "m3"] {
        s.kubectl_ok(&["create", "configmap", name, "-n", "default"]);
    }
    let manifest = s.write_file(
        "applied.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: applied\n  namespace: default\n",
    );
    s.kubectl_ok(&["apply", "--server-side", "-f", manifest.to_str().unwrap()]);
    let after = scrape(&client).await;

    let created = |m: &Scrape| m.value("apiserver_request_total", CREATE_CONFIGMAP);
    assert_eq!(created(&after) - created(&before), 3.0);
    let durations = |m: &Scrape| {
        m.value(
            "apiserver_request_duration_seconds_count",
            &CREATE_CONFIGMAP[..8],
        )
    };
    assert_eq!(durations(&after) - durations(&before), 3.0);
    // A server-side apply of a new object: verb APPLY, answered 201.
    let mut applied = CREATE_CONFIGMAP.to_vec();
    applied[0] = ("verb", "APPLY");
    assert_eq!(
        after.value("apiserver_request_total", &applied)
            - before.value("apiserver_request_total", &applied),
        1.0
    );
    let stored = |m: &Scrape| {
        m.value(
            "etcd_request_duration_seconds_count",
            &[
                ("operation", "create"),
                ("group", ""),
                ("resource", "configmaps"),
            ],
        )
    };
    assert_eq!(stored(&after) - stored(&before), 4.0);
    assert!(
        after.value(
            "apiserver_current_inflight_requests",
            &[("request_kind", "readOnly")]
        ) >= 1.0,
        "the scrape itself is in flight"
    );
    for name in [
        "process_resident_memory_bytes",
        "process_open_fds",
        "process_start_time_seconds",
    ] {
        assert!(after.value(name, &[]) > 0.0, "{name}");
    }
    // Whole seconds (the client's process collector counts so): present, maybe still 0.
    assert!(after.has("process_cpu_seconds_total"));

    // The objects gauges follow the creates (read from the watch cache, which may lag).
    let objects = |m: &Scrape| {
        (
            m.value("apiserver_storage_objects", &[("resource", "configmaps")]),
            m.value(
                "apiserver_resource_objects",
                &[("group", ""), ("resource", "configmaps")],
            ),
        )
    };
    let deadline = Instant::now() + DEADLINE;
    while objects(&scrape(&client).await) != (4.0, 4.0) {
        assert!(
            Instant::now() < deadline,
            "{:?}",
            objects(&scrape(&client).await)
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(
        scrape(&client)
            .await
            .value("apiserver_storage_objects", &[("resource", "namespaces")]),
        4.0,
        "the system namespaces"
    );

    // A watch is a registered, long-running request whose events are counted.
    let configmaps: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let mut events = configmaps
        .watch(&WatchParams::default(), "0")
        .await
        .unwrap()
        .boxed();
    configmaps
        .create(
            &PostParams::default(),
            &apiserver_tests::objects::configmap("m4", &[]),
        )
        .await
        .unwrap();
    let deadline = Instant::now() + DEADLINE;
    loop {
        let event =
            tokio::time::timeout_at(tokio::time::Instant::from_std(deadline), events.try_next())
                .await
                .expect("the watch event within the deadline")
                .unwrap()
                .expect("an open watch");
        if matches!(&event, WatchEvent::Added(cm) if cm.metadata.name.as_deref() == Some("m4")) {
            break;
        }
    }
    let watching = scrape(&client).await;
    assert_eq!(
        watching.value(
            "apiserver_registered_watchers",
            &[("group", ""), ("version", "v1"), ("kind", "ConfigMap")]
        ),
        1.0
    );
    assert_eq!(
        watching.value(
            "apiserver_longrunning_requests",
            &[
                ("verb", "WATCH"),
                ("group", ""),
                ("version", "v1"),
                ("resource", "configmaps"),
                ("subresource", ""),
                ("scope", "namespace"),
                ("component", "apiserver"),
            ]
        ),
        1.0
    );
    assert!(
        watching.value(
            "apiserver_watch_events_total",
            &[("group", ""), ("version", "v1"), ("resource", "configmaps")]
        ) >= 5.0,
        "four initial ADDED events and m4's"
    );
    drop(events);
    // The watch is counted as a request once it has ended (the server notices the client
    // has gone when it next writes to it: give it events to write).
    let deadline = Instant::now() + DEADLINE;
    for n in 5.. {
        configmaps
            .create(
                &PostParams::default(),
                &apiserver_tests::objects::configmap(&format!("m{n}"), &[]),
            )
            .await
            .unwrap();
        let m = scrape(&client).await;
        let ended = m.value(
            "apiserver_request_total",
            &[
                ("verb", "WATCH"),
                ("dry_run", ""),
                ("group", ""),
                ("version", "v1"),
                ("resource", "configmaps"),
                ("subresource", ""),
                ("scope", "namespace"),
                ("component", "apiserver"),
                ("code", "200"),
            ],
        );
        let registered = m.value(
            "apiserver_registered_watchers",
            &[("group", ""), ("version", "v1"), ("kind", "ConfigMap")],
        );
        if (ended, registered) == (1.0, 0.0) {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "watch still counted: {ended} {registered}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
