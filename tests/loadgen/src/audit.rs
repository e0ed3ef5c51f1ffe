//! `loadgen audit`: what the audit log costs writes. The suite's create and update
//! (GET + PUT) scenarios run against fresh servers in two configurations, paired in
//! every run:
//!
//! 1. auditing off (no `--audit-policy-file`);
//! 2. every request audited at Metadata (one catch-all rule), logged to a file in the
//!    run's temporary directory (`--audit-log-path`, default blocking mode).
//!
//! The report counts the events each audited run wrote, so a log that stayed empty
//! cannot pass for a cheap one.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{bail, Context, Result};

use crate::authz::load_average;
use crate::client::{Client, Protocol};
use crate::consistent_reads::cpu_time;
use crate::metrics::{
    cost, each_cpu, median_cpu, median_rows, num, per_op_us, progress, table, Cpu, PickCpu, Row,
    CPU_FIGURES,
};
use crate::scenarios;
use crate::server::ServerProcess;

/// The namespace the benchmark writes in.
pub const NAMESPACE: &str = "bench";

/// Every request at Metadata.
const METADATA_POLICY: &str = "\
apiVersion: audit.k8s.io/v1
kind: Policy
rules:
  - level: Metadata
";

/// One server configuration.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Config {
    /// No audit policy.
    Off,
    /// Every request at Metadata into a file.
    Metadata,
}

impl Config {
    /// Every configuration, in table order.
    pub const ALL: [Config; 2] = [Config::Off, Config::Metadata];

    /// The column heading.
    pub fn label(self) -> &'static str {
        match self {
            Config::Off => "audit off",
            Config::Metadata => "audit at Metadata",
        }
    }
}

/// Everything `loadgen audit` needs.
#[derive(Clone, Debug)]
pub struct AuditOptions {
    /// The server binary, started on a fresh temporary data directory per configuration.
    pub server_bin: PathBuf,
    /// Extra flags for the server (not the audit flags, which each configuration sets).
    pub server_args: Vec<String>,
    /// Where temporary directories go (default: the system temp directory).
    pub data_root: Option<PathBuf>,
    /// HTTP/2 (one connection) or an HTTP/1.1 pool.
    pub protocol: Protocol,
    /// Timeout of one request.
    pub request_timeout: Duration,
    /// How many times to repeat everything; tables show medians.
    pub runs: usize,
    /// ConfigMaps created (the updates' working set).
    pub count: u64,
    /// Requests in flight.
    pub concurrency: usize,
    /// How long the updates run.
    pub duration: Duration,
    /// Approximate size of each ConfigMap's JSON, bytes.
    pub object_size: usize,
    /// How long the creates may run before stopping short of `count`.
    pub write_time: Duration,
}

/// The results of `loadgen audit`.
#[derive(Clone, Debug, Default)]
pub struct AuditReport {
    /// How the server was run, for the header.
    pub description: String,
    /// Scenario rows of every run, by configuration.
    pub runs: BTreeMap<Config, Vec<Vec<Row>>>,
    /// Events in the audit log after each audited run.
    pub events_logged: Vec<u64>,
    /// Server CPU (user + system) per create and per update, µs, each run, by
    /// configuration: unlike throughput, hardly moved by what else the machine runs.
    pub cpu_us: BTreeMap<Config, Vec<Cpu>>,
    /// 1-minute load average before the first and after the last run.
    pub load: (Option<f64>, Option<f64>),
}

impl AuditReport {
    /// Every failed request of every run.
    pub fn error_count(&self) -> u64 {
        self.runs
            .values()
            .flatten()
            .flatten()
            .map(Row::error_count)
            .sum()
    }

    fn medians(&self, config: Config) -> Vec<Row> {
        self.runs
            .get(&config)
            .map(|r| median_rows(r))
            .unwrap_or_default()
    }

    /// The report as markdown: throughput and latency with auditing off and on, the
    /// cost, each configuration's rows, and each run's throughputs.
    pub fn markdown(&self) -> String {
        let mut out = String::new();
        let runs = self.runs.values().map(Vec::len).max().unwrap_or(0);
        let _ = writeln!(out, "{} — medians of {runs} run(s)\n", self.description);
        let load = |l: Option<f64>| l.map_or("?".into(), |l| format!("{l:.2}"));
        let _ = writeln!(
            out,
            "1-minute load average {} at the start, {} at the end.\n",
            load(self.load.0),
            load(self.load.1)
        );
        let _ = writeln!(
            out,
            "| figure | {} | {} | cost |\n| --- | ---: | ---: | ---: |",
            Config::Off.label(),
            Config::Metadata.label()
        );
        type Pick = fn(&Row) -> f64;
        let figures: [(&str, &str, Pick, bool); 6] = [
            ("create, requests/s", "create", |r| r.throughput, true),
            ("create p50 ms", "create", |r| r.p50_ms, false),
            ("create p99 ms", "create", |r| r.p99_ms, false),
            (
                "update (GET + PUT), ops/s",
                "update",
                |r| r.throughput,
                true,
            ),
            ("update p50 ms", "update", |r| r.p50_ms, false),
            ("update p99 ms", "update", |r| r.p99_ms, false),
        ];
        let mut row = |name: &str, off: Option<f64>, on: Option<f64>, higher_better: bool| {
            let _ = writeln!(
                out,
                "| {name} | {} | {} | {} |",
                off.map_or("—".into(), num),
                on.map_or("—".into(), num),
                cost(off, on, higher_better)
            );
        };
        for (name, prefix, pick, higher_better) in figures {
            let value = |c: Config| {
                self.medians(c)
                    .iter()
                    .find(|r| r.scenario.starts_with(prefix))
                    .map(pick)
            };
            row(
                name,
                value(Config::Off),
                value(Config::Metadata),
                higher_better,
            );
        }
        for (name, pick) in CPU_FIGURES {
            let value = |c: Config| median_cpu(self.cpu_us.get(&c), pick);
            row(name, value(Config::Off), value(Config::Metadata), false);
        }
        let _ = writeln!(
            out,
            "\ncost: how much lower the throughput, or higher the latency or CPU, than with \
             auditing off (negative: better). Server CPU: user + system time of the server \
             process during the creates (during the updates) over their count. Events in \
             the audit log after each audited run: {:?}.\n",
            self.events_logged
        );
        let mut rows = Vec::new();
        for c in Config::ALL {
            for mut r in self.medians(c) {
                r.scenario = format!("{}, {}", r.scenario, c.label());
                rows.push(r);
            }
        }
        let _ = writeln!(out, "{}", table(&rows, "ops"));
        let _ = writeln!(
            out,
            "| configuration | create requests/s, each run | update ops/s, each run | \
             server CPU µs per create, each run | per update, each run |\n\
             | --- | --- | --- | --- | --- |"
        );
        for c in Config::ALL
            .into_iter()
            .filter(|c| self.runs.contains_key(c))
        {
            let each = |prefix: &str| {
                self.runs[&c]
                    .iter()
                    .filter_map(|run| run.iter().find(|r| r.scenario.starts_with(prefix)))
                    .map(|r| format!("{:.0}", r.throughput))
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            let each_cpu = |pick: PickCpu| each_cpu(self.cpu_us.get(&c), pick);
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {} |",
                c.label(),
                each("create"),
                each("update"),
                each_cpu(|c| c.create),
                each_cpu(|c| c.update),
            );
        }
        out
    }
}

fn temp_dir(opts: &AuditOptions) -> Result<tempfile::TempDir> {
    let parent = opts.data_root.clone().unwrap_or_else(std::env::temp_dir);
    std::fs::create_dir_all(&parent)?;
    tempfile::Builder::new()
        .prefix("loadgen-audit-")
        .tempdir_in(&parent)
        .with_context(|| format!("making a temporary directory in {}", parent.display()))
}

/// The audit flags of `config`, with the policy and log in `dir`.
fn audit_flags(config: Config, dir: &Path) -> Result<Vec<String>> {
    Ok(match config {
        Config::Off => Vec::new(),
        Config::Metadata => {
            let policy = dir.join("audit-policy.yaml");
            std::fs::write(&policy, METADATA_POLICY)?;
            vec![
                format!("--audit-policy-file={}", policy.display()),
                format!("--audit-log-path={}", dir.join("audit.log").display()),
            ]
        }
    })
}

fn count_lines(path: &Path) -> u64 {
    std::fs::read(path)
        .map(|b| b.iter().filter(|c| **c == b'\n').count() as u64)
        .unwrap_or(0)
}

/// One configuration on a fresh server: its rows, audited the events logged, and the
/// server's CPU per operation.
async fn measure(opts: &AuditOptions, config: Config) -> Result<(Vec<Row>, Option<u64>, Cpu)> {
    let dir = temp_dir(opts)?;
    let data = dir.path().join("data");
    std::fs::create_dir_all(&data)?;
    let mut args = opts.server_args.clone();
    args.extend(audit_flags(config, dir.path())?);
    let server = ServerProcess::start(&opts.server_bin, &data, &args).await?;
    let result = async {
        let admin = Client::new(server.target.clone(), opts.protocol, opts.request_timeout)?;
        scenarios::create_namespace(&admin, NAMESPACE).await?;
        // A client of its own, as another process would have.
        let client = admin.separate();
        let c = opts.concurrency;
        let pid = server.pid().context("the server has exited")?;
        let cpu_start = cpu_time(pid)?;
        let create = scenarios::create(
            &client,
            NAMESPACE,
            opts.count,
            c,
            opts.object_size,
            opts.write_time,
        )
        .await;
        progress(&create);
        let cpu_created = cpu_time(pid)?;
        let update =
            scenarios::update(&client, NAMESPACE, create.ops.max(1), c, opts.duration).await;
        progress(&update);
        let cpu_updated = cpu_time(pid)?;
        let cpu = Cpu {
            create: per_op_us(cpu_created.saturating_sub(cpu_start), create.ops),
            update: per_op_us(cpu_updated.saturating_sub(cpu_created), update.ops),
        };
        let logged =
            (config == Config::Metadata).then(|| count_lines(&dir.path().join("audit.log")));
        if let Some(logged) = logged {
            // Two stages per request; an update is a GET and a PUT.
            let requests = create.ops + 2 * update.ops;
            if logged < 2 * requests {
                bail!("the audit log has {logged} events for {requests} requests");
            }
        }
        anyhow::Ok((vec![create, update], logged, cpu))
    }
    .await;
    if !matches!(&result, Ok((r, _, _)) if r.iter().all(|r| r.error_count() == 0)) {
        eprintln!("server log tail:\n{}", server.log_tail());
    }
    server.stop().await;
    result
}

/// Runs `loadgen audit`: both configurations once per run, the order swapped from run
/// to run so that neither always goes first while the machine drifts.
pub async fn run(opts: &AuditOptions) -> Result<AuditReport> {
    let proto = match opts.protocol {
        Protocol::Http2 => "HTTP/2, one connection",
        Protocol::Http1 => "HTTP/1.1 connection pool",
    };
    let mut report = AuditReport {
        description: format!(
            "server {} ({proto}), {} ConfigMaps of ~{} B created, then updated (GET + PUT) \
             for {:?}, concurrency {}",
            opts.server_bin.display(),
            opts.count,
            opts.object_size,
            opts.duration,
            opts.concurrency
        ),
        load: (load_average(), None),
        ..AuditReport::default()
    };
    let runs = opts.runs.max(1);
    for run in 0..runs {
        let mut order = Config::ALL;
        order.rotate_left(run % Config::ALL.len());
        for config in order {
            let load = load_average().map_or("?".into(), |l| format!("{l:.2}"));
            eprintln!(
                "run {}/{runs}: {} (load average {load})",
                run + 1,
                config.label()
            );
            let (rows, logged, cpu) = measure(opts, config)
                .await
                .with_context(|| config.label())?;
            report.runs.entry(config).or_default().push(rows);
            report.cpu_us.entry(config).or_default().push(cpu);
            report.events_logged.extend(logged);
        }
    }
    report.load.1 = load_average();
    Ok(report)
}
