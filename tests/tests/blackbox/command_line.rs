//! The command line as a kube-apiserver user meets it: `--help` in upstream's named
//! sections, `--version`, every bad flag reported at once, upstream flags this server
//! does not implement answered by name; and the log: klog's JSON fields and one
//! access-log line per request at `-v=3`, without credentials.

use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use apiserver_tests::{server_binary, TestServer};

/// Runs the binary with `args` (on a data directory of its own) and returns its output.
fn run(args: &[&str]) -> Output {
    let dir = tempfile::tempdir().unwrap();
    Command::new(server_binary())
        .arg("--data-dir")
        .arg(dir.path())
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("running the apiserver binary")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn help_lists_kube_apiserver_s_flag_sections_in_its_order() {
    let out = run(&["--help"]);
    assert!(out.status.success(), "{out:?}");
    let help = text(&out.stdout);
    let sections = [
        "Generic flags:",
        "Etcd flags:",
        "Secure serving flags:",
        "Auditing flags:",
        "Features flags:",
        "Authentication flags:",
        "Authorization flags:",
        "Admission flags:",
        "Metrics flags:",
        "Logs flags:",
        "Misc flags:",
        "Global flags:",
    ];
    let positions: Vec<usize> = sections
        .iter()
        .map(|s| {
            help.lines()
                .position(|l| l == *s)
                .unwrap_or_else(|| panic!("no {s:?} heading in:\n{help}"))
        })
        .collect();
    assert!(
        positions.windows(2).all(|w| w[0] < w[1]),
        "sections out of upstream's order: {positions:?}\n{help}"
    );
    assert!(help.contains("Usage:\n  apiserver [flags]\n"), "{help}");
    // A flag sits in its section: between its heading and the next.
    let section_of = |flag: &str| {
        let line = help
            .lines()
            .position(|l| l.trim_start().starts_with(flag))
            .unwrap_or_else(|| panic!("{flag} is not listed:\n{help}"));
        sections[positions.iter().rposition(|p| *p < line).unwrap()]
    };
    assert_eq!(section_of("--shutdown-delay-duration"), "Generic flags:");
    assert_eq!(section_of("--etcd-servers"), "Etcd flags:");
    assert_eq!(section_of("--tls-cert-file"), "Secure serving flags:");
    assert_eq!(section_of("-v, --v"), "Logs flags:");
    assert_eq!(section_of("--feature-gates"), "Generic flags:");
    assert_eq!(section_of("--profiling"), "Features flags:");
    assert_eq!(
        section_of("--enable-priority-and-fairness"),
        "Features flags:"
    );
    assert_eq!(section_of("--disabled-metrics"), "Metrics flags:");
    assert_eq!(
        section_of("--show-hidden-metrics-for-version"),
        "Metrics flags:"
    );
    // The gates this server knows, as upstream lists them under --feature-gates.
    assert!(
        help.contains("MultiCIDRServiceAllocator=true|false (BETA - default=true)"),
        "{help}"
    );
    assert_eq!(section_of("--storage-cache-size"), "Misc flags:");
    assert_eq!(section_of("--storage-history-size"), "Misc flags:");
    assert_eq!(section_of("--version"), "Global flags:");
}

#[test]
fn version_prints_the_kubernetes_version_under_this_server_s_name() {
    let out = run(&["--version"]);
    assert!(out.status.success(), "{out:?}");
    let version = text(&out.stdout);
    assert!(
        version.starts_with("apiserver v1.") && version.contains("+apiserver-rs."),
        "{version:?}"
    );
    assert_eq!(version.lines().count(), 1, "{version:?}");
}

#[test]
fn bad_values_of_two_flags_are_both_reported_and_nothing_starts() {
    let out = run(&[
        "--secure-port=https",
        "--logging-format=xml",
        "--request-timeout=0s",
    ]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(
        out.stdout.is_empty(),
        "it must not start: {}",
        text(&out.stdout)
    );
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("error: invalid value 'https' for '--secure-port"),
        "{stderr}"
    );
    assert!(
        stderr.contains("error: --logging-format \"xml\": unknown format; supported: text, json"),
        "{stderr}"
    );
    assert!(
        stderr.contains("error: --request-timeout must be greater than 0"),
        "{stderr}"
    );
}

/// The embedded store's memory bounds are checked before anything starts, both reported.
#[test]
fn storage_cache_and_history_sizes_out_of_bounds_are_both_reported() {
    let out = run(&["--storage-cache-size=512Ki", "--storage-history-size=5"]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(
        out.stdout.is_empty(),
        "it must not start: {}",
        text(&out.stdout)
    );
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("invalid value '512Ki' for '--storage-cache-size")
            && stderr.contains("less than 1Mi"),
        "{stderr}"
    );
    assert!(
        stderr.contains("invalid value '5' for '--storage-history-size")
            && stderr.contains("from 100 to 10000000 changes"),
        "{stderr}"
    );
}

#[test]
fn an_unsupported_upstream_flag_exits_1_naming_it() {
    let out = run(&[
        "--oidc-issuer-url",
        "https://issuer.example",
        "--goaway-chance=0.01",
    ]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("error: flag --oidc-issuer-url is not supported by this server\n"),
        "{stderr}"
    );
    assert!(
        stderr.contains("error: flag --goaway-chance is not supported by this server\n"),
        "{stderr}"
    );
}

#[test]
fn feature_and_metrics_flags_take_what_this_server_does_and_refuse_the_rest_together() {
    let out = run(&[
        "--feature-gates=APIResponseCompression=true,NoSuchGate=true",
        "--feature-gates=ConsistentListFromCache=false",
        "--profiling=true",
        "--enable-priority-and-fairness",
        "--show-hidden-metrics-for-version=1.20",
        "--disabled-metrics=apiserver_request_total,not a name",
    ]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let stderr = text(&out.stderr);
    for expected in [
        "error: --feature-gates: unrecognized feature gate: NoSuchGate",
        "error: --feature-gates: ConsistentListFromCache=false is not supported by this server: it always behaves as ConsistentListFromCache=true",
        "error: --profiling=true is not supported by this server",
        "error: --enable-priority-and-fairness=true is not supported by this server",
        "error: --show-hidden-metrics-for-version must be omitted or have the value '1.31'. Only the previous minor version is allowed",
        "error: --disabled-metrics \"not a name\": not a metric name",
    ] {
        assert!(stderr.contains(expected), "no {expected:?} in:\n{stderr}");
    }
    // A known gate at the value this server behaves as is accepted.
    assert!(
        !stderr.contains("APIResponseCompression=true is not supported"),
        "{stderr}"
    );
}

#[tokio::test]
async fn a_disabled_metric_is_left_out_of_metrics() {
    let s = TestServer::start_with_flags(&[
        "--feature-gates=MultiCIDRServiceAllocator=true",
        "--profiling=false",
        "--show-hidden-metrics-for-version=1.31",
        "--disabled-metrics=apiserver_request_total",
    ]);
    s.kubectl_ok(&["get", "namespaces"]);
    let metrics = s.kubectl_ok(&["get", "--raw", "/metrics"]);
    assert!(
        !metrics.contains("apiserver_request_total"),
        "a disabled metric is exposed"
    );
    assert!(
        metrics.contains("apiserver_request_duration_seconds_bucket"),
        "the others stay"
    );
}

#[test]
fn a_deprecated_upstream_flag_gets_upstream_s_deprecation_notice() {
    // With a bad value beside it, so the server does not start.
    let out = run(&["--enable-logs-handler", "--secure-port=0"]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains(
            "Flag --enable-logs-handler has been deprecated, This flag will be removed in v1.19\n"
        ),
        "{stderr}"
    );
    assert!(stderr.contains("error: --secure-port 0"), "{stderr}");
}

#[test]
fn a_mistyped_flag_is_answered_with_the_flag_meant() {
    let out = run(&["--secure-prot=7443"]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("unexpected argument '--secure-prot' found"),
        "{stderr}"
    );
    assert!(
        stderr.contains("a similar argument exists: '--secure-port'"),
        "{stderr}"
    );
}

#[test]
fn json_logs_use_klog_s_fields_and_log_each_request_once_at_v3_without_credentials() {
    let s = TestServer::start_with_flags(&["--logging-format=json", "-v=3"]);
    s.kubectl_ok(&["get", "namespaces", "--request-timeout=20s"]);
    let token = std::fs::read_to_string(s.data_dir().join("admin.token")).unwrap();

    // The access line is written once the answer is; wait for it.
    let deadline = Instant::now() + Duration::from_secs(20);
    let access = loop {
        let log = s.stderr();
        let found = log
            .lines()
            .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
            .find(|l| {
                l["msg"] == "HTTP"
                    && l["verb"] == "LIST"
                    && l["URI"]
                        .as_str()
                        .is_some_and(|u| u.starts_with("/api/v1/namespaces"))
            });
        if let Some(line) = found {
            break line;
        }
        assert!(
            Instant::now() < deadline,
            "no access line for kubectl's LIST:\n{log}"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(access["v"], 3, "{access}");
    assert_eq!(access["resp"], 200, "{access}");
    assert_eq!(access["user"], "admin", "{access}");
    assert!(access["ts"].is_f64(), "{access}");
    assert!(
        access["caller"]
            .as_str()
            .is_some_and(|c| c.contains(".rs:")),
        "{access}"
    );
    assert!(
        access["userAgent"]
            .as_str()
            .is_some_and(|ua| ua.starts_with("kubectl/")),
        "{access}"
    );
    assert!(
        access["latency"].is_string() && access["srcIP"].is_string(),
        "{access}"
    );

    let log = s.stderr();
    for line in log.lines().filter(|l| !l.trim().is_empty()) {
        let parsed: serde_json::Value = serde_json::from_str(line)
            .unwrap_or_else(|e| panic!("not a JSON log line ({e}): {line}"));
        assert!(
            parsed["ts"].is_number() && parsed["msg"].is_string(),
            "{line}"
        );
    }
    assert!(!log.contains(token.trim()), "the bearer token was logged");
}
