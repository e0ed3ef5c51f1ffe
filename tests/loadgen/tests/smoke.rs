//! Keeps the benchmarks from rotting: every scenario with tiny sizes against the debug
//! server binary, asserting that nothing failed and every watcher saw every event.
//! No timing is asserted.

use std::time::Duration;

use apiserver_loadgen::client::Protocol;
use apiserver_loadgen::raw::RawOptions;
use apiserver_loadgen::scenarios::Settings;
use apiserver_loadgen::suite::{self, Selection, SuiteOptions};

fn options(protocol: Protocol) -> SuiteOptions {
    SuiteOptions {
        server_bin: Some(apiserver_tests::server_binary().to_path_buf()),
        kubeconfig: None,
        server_args: Vec::new(),
        data_root: None,
        protocol,
        request_timeout: Duration::from_secs(60),
        runs: 1,
        settings: Settings {
            count: 20,
            concurrency: vec![1, 4],
            duration: Duration::from_millis(200),
            list_requests: 3,
            page_limit: 7,
            watchers: vec![3],
            watch_events: 20,
            watch_rates: vec![0.0, 200.0],
            watchers_per_connection: 2,
            object_size: 1024,
            watch_grace: Duration::from_secs(20),
            write_time: Duration::from_secs(60),
        },
        selection: Selection::default(),
        resource_objects: 20,
        large_objects: 30,
        idle_watchers: 3,
        raw: Some(RawOptions {
            count: 20,
            concurrency: vec![1, 4],
            batch: 4,
            ..RawOptions::default()
        }),
    }
}

fn check(report: &suite::Report) {
    let md = report.markdown();
    println!("{md}");
    assert_eq!(report.error_count(), 0, "failures in:\n{md}");
    let rows = report.scenario_medians();
    for want in [
        "create",
        "get random",
        "list 20 (JSON)",
        "list 20 (Table)",
        "paginated",
        "update",
        "merge patch",
        "watch fan-out",
        "delete one by one",
        "deletecollection",
    ] {
        assert!(
            rows.iter().any(|r| r.scenario.contains(want) && r.ops > 0),
            "no {want:?} row with operations in:\n{md}"
        );
    }
    let watch = rows
        .iter()
        .find(|r| r.scenario.contains("watch fan-out"))
        .expect("a watch row");
    assert_eq!(watch.ops, 3 * 20, "every watcher sees every event:\n{md}");
    let figures = report.figure_medians();
    assert!(
        figures.iter().any(|f| f.name.contains("idle watchers")),
        "{figures:?}"
    );
    assert!(
        figures.iter().any(|f| f.name.contains("30 objects")),
        "{figures:?}"
    );
    assert!(!report.raw_medians().is_empty());
    assert!(md.contains("| ratio |"), "{md}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_scenario_runs_over_http2() {
    let report = suite::run(&options(Protocol::Http2)).await.expect("suite");
    check(&report);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_scenario_runs_over_http1() {
    let mut opts = options(Protocol::Http1);
    opts.selection.resources = false;
    opts.raw = None;
    let report = suite::run(&opts).await.expect("suite");
    assert_eq!(report.error_count(), 0, "{}", report.markdown());
    let watch = report
        .scenario_medians()
        .into_iter()
        .find(|r| r.scenario.contains("watch fan-out"))
        .expect("a watch row");
    assert_eq!(watch.ops, 3 * 20);
}

#[tokio::test(flavor = "multi_thread")]
async fn storage_mode_measures_both_backends_and_their_raw_engines() {
    use apiserver_loadgen::storage::{self, Backend, StorageOptions};
    let opts = StorageOptions {
        backends: vec![Backend::Embedded, Backend::Etcd],
        dir: None,
        etcd_bin: apiserver_tests::etcd_binary(),
        etcd_endpoint: None,
        count: 20,
        concurrency: vec![1, 4],
        value_size: 1400,
        duration: Duration::from_millis(100),
        list_requests: 2,
        runs: 1,
    };
    let report = storage::run(&opts).await.expect("the storage benchmark");
    let md = report.markdown();
    println!("{md}");
    assert_eq!(report.error_count(), 0, "failures in:\n{md}");
    for want in [
        "| embedded | create | 4 |",
        "| embedded | CAS update | 4 |",
        "| etcd | create | 4 |",
        "| etcd | get random | 4 |",
        "| etcd | list 20 keys | 1 |",
    ] {
        assert!(md.contains(want), "no ratio row {want:?} in:\n{md}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn crd_mode_runs_every_part() {
    use apiserver_loadgen::crds::{self, CrdOptions, CrdSelection};
    let opts = CrdOptions {
        server_bin: apiserver_tests::server_binary().to_path_buf(),
        server_args: Vec::new(),
        data_root: None,
        protocol: Protocol::Http2,
        request_timeout: Duration::from_secs(60),
        runs: 1,
        steps: vec![1, 3],
        establish_timeout: Duration::from_secs(30),
        poll_interval: Duration::from_millis(1),
        objects: 10,
        concurrency: vec![1, 4],
        object_size: 1024,
        duration: Duration::from_millis(200),
        list_requests: 2,
        write_time: Duration::from_secs(60),
        selection: CrdSelection::default(),
    };
    let report = crds::run(&opts).await.expect("the CRD benchmark");
    let md = report.markdown();
    println!("{md}");
    assert_eq!(report.error_count(), 0, "failures in:\n{md}");
    for want in [
        "CRD create until Established=True (CRDs 2–3)",
        "CRD create until its collection GET 200 (CRD 1)",
        "| 3 | ",
        "| create (~1024 B) | 4 |",
        "| get random | 4 |",
        "| list 10 (JSON) | 1 |",
    ] {
        assert!(md.contains(want), "no {want:?} in:\n{md}");
    }
    let startup = report.startup_medians();
    assert_eq!(
        startup.iter().map(|p| p.crds).collect::<Vec<_>>(),
        [0, 1, 3]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn authz_mode_runs_every_configuration() {
    use apiserver_loadgen::authz::{self, AuthzOptions};
    let opts = AuthzOptions {
        server_bin: apiserver_tests::server_binary().to_path_buf(),
        server_args: Vec::new(),
        data_root: None,
        protocol: Protocol::Http2,
        request_timeout: Duration::from_secs(60),
        runs: 1,
        count: 20,
        concurrency: 4,
        duration: Duration::from_millis(200),
        object_size: 1024,
        bindings: 8,
        write_time: Duration::from_secs(60),
        effect_timeout: Duration::from_secs(30),
    };
    let report = authz::run(&opts).await.expect("the authz benchmark");
    let md = report.markdown();
    println!("{md}");
    assert_eq!(report.error_count(), 0, "failures in:\n{md}");
    for want in [
        "| GET p99 ms |",
        "| create ConfigMap, requests/s |",
        "RBAC, 8 other bindings",
        "create ConfigMap (~1024 B), AlwaysAllow | 4 | 20 |",
    ] {
        assert!(md.contains(want), "no {want:?} in:\n{md}");
    }
    assert_eq!(report.effective_ms.len(), 3, "{md}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn admission_mode_runs_every_configuration() {
    use apiserver_loadgen::admission::{self, AdmissionOptions};
    let opts = AdmissionOptions {
        server_bin: apiserver_tests::server_binary().to_path_buf(),
        server_args: Vec::new(),
        data_root: None,
        protocol: Protocol::Http2,
        request_timeout: Duration::from_secs(60),
        runs: 1,
        count: 20,
        concurrency: 4,
        duration: Duration::from_millis(200),
        object_size: 1024,
        write_time: Duration::from_secs(60),
        effect_timeout: Duration::from_secs(30),
    };
    let report = admission::run(&opts)
        .await
        .expect("the admission benchmark");
    let md = report.markdown();
    println!("{md}");
    assert_eq!(report.error_count(), 0, "failures in:\n{md}");
    for want in [
        "| create, requests/s |",
        "| update p99 ms |",
        "| server CPU per create, µs |",
        "one ValidatingAdmissionPolicy",
        "create ConfigMap (~1024 B), one validating webhook | 4 | 20 |",
    ] {
        assert!(md.contains(want), "no {want:?} in:\n{md}");
    }
    // The webhook was asked once per create and per PUT at least.
    assert_eq!(report.webhook_calls.len(), 1, "{md}");
    assert!(report.webhook_calls[0] >= 20, "{md}");
    // Every configuration's server spent some CPU on its creates and updates.
    for (config, runs) in &report.cpu_us {
        assert!(
            runs.len() == 1 && runs.iter().all(|c| c.create > 0.0 && c.update > 0.0),
            "{config:?}: {runs:?}\n{md}"
        );
    }
    assert_eq!(report.cpu_us.len(), 3, "{md}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn audit_mode_runs_both_configurations() {
    use apiserver_loadgen::audit::{self, AuditOptions};
    let opts = AuditOptions {
        server_bin: apiserver_tests::server_binary().to_path_buf(),
        server_args: Vec::new(),
        data_root: None,
        protocol: Protocol::Http2,
        request_timeout: Duration::from_secs(60),
        runs: 1,
        count: 20,
        concurrency: 4,
        duration: Duration::from_millis(200),
        object_size: 1024,
        write_time: Duration::from_secs(60),
    };
    let report = audit::run(&opts).await.expect("the audit benchmark");
    let md = report.markdown();
    println!("{md}");
    assert_eq!(report.error_count(), 0, "failures in:\n{md}");
    for want in [
        "| create, requests/s |",
        "| update p99 ms |",
        "| server CPU per create, µs |",
        "create ConfigMap (~1024 B), audit at Metadata | 4 | 20 |",
    ] {
        assert!(md.contains(want), "no {want:?} in:\n{md}");
    }
    // Both configurations measured the server's CPU over their operations.
    assert_eq!(report.cpu_us.len(), 2, "{md}");
    for cpu in report.cpu_us.values().flatten() {
        assert!(cpu.create > 0.0 && cpu.update > 0.0, "{md}");
    }
    // The audited run logged two stages of each of its requests at least.
    assert_eq!(report.events_logged.len(), 1, "{md}");
    assert!(report.events_logged[0] >= 2 * 20, "{md}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn soak_mode_samples_and_checks_every_watcher_against_the_writes() {
    use apiserver_loadgen::soak::{self, SoakOptions};
    let opts = SoakOptions {
        server_bin: apiserver_tests::server_binary().to_path_buf(),
        duration: Duration::from_secs(3),
        interval: Duration::from_millis(500),
        watchers: 6,
        watchers_per_connection: 2,
        shards: 3,
        objects: 20,
        writers: 2,
        write_rate: 100.0,
        list_rate: 4.0,
        watch_grace: Duration::from_secs(30),
        ..SoakOptions::default()
    };
    let report = soak::run(&opts).await.expect("the soak");
    let md = report.markdown();
    println!("{md}");
    // Every write succeeded and every watcher read exactly its selection's writes; RSS on
    // a 3-second debug run is not judged here (it is warm-up all along).
    assert_eq!(report.errors, 0, "{md}");
    assert_eq!(report.watch.watchers, 6, "{md}");
    assert_eq!(report.watch.exact, 6, "{md}");
    assert_eq!(report.watch.delivered, report.watch.expected, "{md}");
    assert!(report.watch.expected > 0, "{md}");
    assert_eq!(report.samples.len(), 6, "{md}");
    let verbs: Vec<&str> = report
        .samples
        .iter()
        .flat_map(|s| s.verbs.iter().filter(|(_, r)| r.ops > 0).map(|(v, _)| *v))
        .collect();
    for verb in soak::VERBS {
        assert!(verbs.contains(&verb), "no {verb} in any sample:\n{md}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn startup_mode_times_each_start_and_reads_its_memory() {
    use apiserver_loadgen::startup::{self, StartupOptions};
    let opts = StartupOptions {
        server_bin: apiserver_tests::server_binary().to_path_buf(),
        server_args: Vec::new(),
        data_root: None,
        runs: 2,
    };
    let report = startup::run(&opts).await.expect("the start-up benchmark");
    let md = report.markdown();
    println!("{md}");
    assert_eq!(report.starts.len(), 2, "{md}");
    for s in &report.starts {
        assert!(s.ready_ms > 0.0 && s.cpu_ms > 0.0 && s.rss > 0.0, "{md}");
        assert!(s.rss_anon + s.rss_file <= s.rss + 1.0, "{md}");
    }
    assert!(md.contains("| start to /readyz 200 |"), "{md}");
    assert!(md.contains("| CPU time to /readyz 200 |"), "{md}");
}

/// `loadgen consistent-reads` and `loadgen backend-ops`: every configuration on one etcd
/// (started as the black-box tests start theirs), tiny sizes, no failed request, and
/// every configuration measured.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn etcd_modes_run_every_configuration_on_one_etcd() {
    use apiserver_loadgen::{backend_ops, bench_etcd::EtcdBenchOptions, consistent_reads};
    let opts = EtcdBenchOptions {
        server_bin: apiserver_tests::server_binary().to_path_buf(),
        etcd_bin: apiserver_tests::etcd_binary(),
        server_args: Vec::new(),
        data_root: None,
        protocol: Protocol::Http2,
        request_timeout: Duration::from_secs(60),
        runs: 1,
        count: 10,
        concurrency: 4,
        duration: Duration::from_millis(200),
        object_size: 512,
    };
    let report = consistent_reads::run(&opts)
        .await
        .expect("loadgen consistent-reads");
    let md = report.markdown();
    assert_eq!(report.error_count(), 0, "failures in:\n{md}");
    assert_eq!(
        report.runs.len(),
        consistent_reads::Config::ALL.len(),
        "{md}"
    );

    let report = backend_ops::run(&opts).await.expect("loadgen backend-ops");
    let md = report.markdown();
    assert_eq!(report.error_count(), 0, "failures in:\n{md}");
    // create, GET, LIST and update in each configuration, and a table per backend.
    assert_eq!(
        report.runs.len(),
        backend_ops::Config::ALL.len() * 4,
        "{md}"
    );
    assert!(md.contains("#### Embedded store"), "{md}");
    assert!(
        md.contains("| RSS per stored object (server + store) |"),
        "{md}"
    );
}
