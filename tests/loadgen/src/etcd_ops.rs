//! `loadgen etcd-ops`: what one create, one consistent GET and one update (GET + PUT with
//! resourceVersion) cost on etcd, in etcd round trips and in CPU of the server and of
//! etcd (issue 20). One etcd is started (`--etcd-bin`, through `etcd-launcher`); each run
//! starts a fresh server on it, under its own key prefix, in each of two configurations:
//!
//! 1. `--etcd-watch-progress=unordered`: consistent reads go to etcd (the path of an etcd
//!    older than 3.4.31 / 3.5.13, such as Debian's 3.4.23);
//! 2. `--etcd-watch-progress=ordered`: consistent reads come from the watch cache after a
//!    (coalesced) revision request, the path a trusted etcd (3.5.13+, 3.6) takes.
//!
//! CPU time comes from `/proc/<pid>/stat` of both processes over each phase, so it does
//! not depend on what else the machine runs; round trips from the server's
//! `etcd_requests_total` and `etcd_current_revision_requests_total`.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::future::Future;
use std::time::Duration;

use anyhow::{bail, Context, Result};

use crate::authz::load_average;
use crate::bench_etcd::{BenchEtcd, EtcdBenchOptions};
use crate::client::Client;
use crate::consistent_reads::cpu_time;
use crate::metrics::{median, num, Row};
use crate::scenarios;
use crate::server::ServerProcess;

/// The namespace of the ConfigMaps.
const NAMESPACE: &str = "bench";

/// Where consistent reads are served from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Config {
    /// Consistent reads go to etcd.
    Unordered,
    /// Consistent reads come from the watch cache.
    Ordered,
}

impl Config {
    /// Every configuration, in table order.
    pub const ALL: [Config; 2] = [Config::Unordered, Config::Ordered];

    fn label(self) -> &'static str {
        match self {
            Config::Unordered => "reads from etcd (`unordered`)",
            Config::Ordered => "reads from the watch cache (`ordered`)",
        }
    }

    fn flag(self) -> &'static str {
        match self {
            Config::Unordered => "--etcd-watch-progress=unordered",
            Config::Ordered => "--etcd-watch-progress=ordered",
        }
    }
}

/// The operations measured, in the order they run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Op {
    /// POST of a new ConfigMap.
    Create,
    /// GET of a random ConfigMap without resourceVersion.
    Get,
    /// GET of a ConfigMap, then PUT of it changed, with the resourceVersion read.
    Update,
}

impl Op {
    fn label(self) -> &'static str {
        match self {
            Op::Create => "create",
            Op::Get => "GET",
            Op::Update => "update (GET + PUT)",
        }
    }
}

/// One operation's figures in one run.
#[derive(Clone, Debug)]
pub struct Measured {
    /// The scenario's row.
    pub row: Row,
    /// etcd requests (reads, writes and revision requests) per operation.
    pub etcd_requests: f64,
    /// Server CPU per operation, µs.
    pub server_cpu_us: f64,
    /// etcd CPU per operation, µs.
    pub etcd_cpu_us: f64,
}

/// The results of `loadgen etcd-ops`.
#[derive(Clone, Debug, Default)]
pub struct EtcdOpsReport {
    /// The etcd version measured against.
    pub etcd_version: String,
    /// Requests in flight.
    pub concurrency: usize,
    /// Each configuration's and operation's figures, one entry per run.
    pub runs: BTreeMap<(Config, Op), Vec<Measured>>,
    /// 1-minute load average before the first and after the last run.
    pub load: (Option<f64>, Option<f64>),
}

impl EtcdOpsReport {
    /// Every failed request of every run.
    pub fn error_count(&self) -> u64 {
        self.runs
            .values()
            .flatten()
            .map(|m| m.row.error_count())
            .sum()
    }

    /// The report as markdown: one row per configuration and operation (medians over
    /// runs), then each run's ops/s.
    pub fn markdown(&self) -> String {
        let mut out = String::new();
        let runs = self.runs.values().map(Vec::len).max().unwrap_or(0);
        let _ = writeln!(
            out,
            "creates, GETs and updates on etcd {}, concurrency {} — medians of {runs} run(s)\n",
            self.etcd_version, self.concurrency
        );
        let load = |l: Option<f64>| l.map_or("?".into(), |l| format!("{l:.2}"));
        let _ = writeln!(
            out,
            "1-minute load average {} at the start, {} at the end.\n",
            load(self.load.0),
            load(self.load.1)
        );
        let _ = writeln!(
            out,
            "| consistent reads | operation | ops/s | p50 ms | p99 ms | etcd requests per op \
             | server CPU µs per op | etcd CPU µs per op | errors | ops/s, each run |\n\
             | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |"
        );
        for ((config, op), measured) in &self.runs {
            let med = |f: fn(&Measured) -> f64| {
                let mut v: Vec<f64> = measured.iter().map(f).collect();
                median(&mut v)
            };
            let each: Vec<String> = measured
                .iter()
                .map(|m| format!("{:.0}", m.row.throughput))
                .collect();
            let errors: u64 = measured.iter().map(|m| m.row.error_count()).sum();
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {} | {:.2} | {} | {} | {errors} | {} |",
                config.label(),
                op.label(),
                num(med(|m| m.row.throughput)),
                num(med(|m| m.row.p50_ms)),
                num(med(|m| m.row.p99_ms)),
                med(|m| m.etcd_requests),
                num(med(|m| m.server_cpu_us)),
                num(med(|m| m.etcd_cpu_us)),
                each.join(", ")
            );
        }
        out
    }
}

/// Runs every configuration `runs` times against one etcd.
pub async fn run(opts: &EtcdBenchOptions) -> Result<EtcdOpsReport> {
    let etcd = BenchEtcd::start(opts, "loadgen-etcd-ops-")?;
    let mut report = EtcdOpsReport {
        etcd_version: etcd.version.clone(),
        concurrency: opts.concurrency,
        load: (load_average(), None),
        ..Default::default()
    };
    for run in 0..opts.runs.max(1) {
        for config in Config::ALL {
            eprintln!("run {}/{}: {}", run + 1, opts.runs.max(1), config.label());
            let (data, mut args) = etcd.server_setup(&opts.server_args)?;
            args.push(config.flag().into());
            let server = ServerProcess::start(&opts.server_bin, data.path(), &args).await?;
            let measured = measure(opts, &server, etcd.pid).await;
            server.stop().await;
            for (op, m) in measured? {
                eprintln!(
                    "  {}: {:.0}/s, {:.2} etcd requests, server {:.0} µs, etcd {:.0} µs per op",
                    op.label(),
                    m.row.throughput,
                    m.etcd_requests,
                    m.server_cpu_us,
                    m.etcd_cpu_us
                );
                report.runs.entry((config, op)).or_default().push(m);
            }
        }
    }
    report.load.1 = load_average();
    Ok(report)
}

/// Creates the working set, then GETs and updates it, measuring each phase.
async fn measure(
    opts: &EtcdBenchOptions,
    server: &ServerProcess,
    etcd_pid: u32,
) -> Result<Vec<(Op, Measured)>> {
    let client = Client::new(server.target.clone(), opts.protocol, opts.request_timeout)?;
    scenarios::create_namespace(&client, NAMESPACE).await?;
    let server_pid = server.pid().context("the server's pid")?;
    let create = measure_phase(&client, server_pid, etcd_pid, || {
        scenarios::create(
            &client,
            NAMESPACE,
            opts.count,
            opts.concurrency,
            opts.object_size,
            Duration::from_secs(600),
        )
    })
    .await?;
    if create.row.error_count() > 0 || create.row.ops != opts.count {
        bail!(
            "creating {} ConfigMaps: {} sent, {} failed",
            opts.count,
            create.row.ops,
            create.row.error_count()
        );
    }
    let get = measure_phase(&client, server_pid, etcd_pid, || {
        scenarios::get(
            &client,
            NAMESPACE,
            opts.count,
            opts.concurrency,
            opts.duration,
        )
    })
    .await?;
    let update = measure_phase(&client, server_pid, etcd_pid, || {
        scenarios::update(
            &client,
            NAMESPACE,
            opts.count,
            opts.concurrency,
            opts.duration,
        )
    })
    .await?;
    Ok(vec![
        (Op::Create, create),
        (Op::Get, get),
        (Op::Update, update),
    ])
}

/// Runs one phase, with the CPU of both processes and the etcd requests around it.
async fn measure_phase<F, Fut>(
    client: &Client,
    server_pid: u32,
    etcd_pid: u32,
    phase: F,
) -> Result<Measured>
where
    F: FnOnce() -> Fut,
    Fut: Future<Output = Row>,
{
    let requests_before = etcd_requests(client).await?;
    let (server_before, etcd_before) = (cpu_time(server_pid)?, cpu_time(etcd_pid)?);
    let row = phase().await;
    let (server_after, etcd_after) = (cpu_time(server_pid)?, cpu_time(etcd_pid)?);
    let requests_after = etcd_requests(client).await?;
    let ops = row.ops.max(1) as f64;
    let per_op = |d: Duration| d.as_secs_f64() * 1e6 / ops;
    Ok(Measured {
        etcd_requests: (requests_after - requests_before) / ops,
        server_cpu_us: per_op(server_after.saturating_sub(server_before)),
        etcd_cpu_us: per_op(etcd_after.saturating_sub(etcd_before)),
        row,
    })
}

/// etcd requests the server made so far for ConfigMaps, plus its revision requests.
async fn etcd_requests(client: &Client) -> Result<f64> {
    let r = client.get("/metrics").await?;
    if r.status != 200 {
        bail!("GET /metrics: HTTP {}", r.status);
    }
    let text = String::from_utf8_lossy(&r.body);
    Ok(sum_requests(&text))
}

/// The sum of `etcd_requests_total` for configmaps and of
/// `etcd_current_revision_requests_total` in an exposition.
fn sum_requests(exposition: &str) -> f64 {
    exposition
        .lines()
        .filter(|l| {
            (l.starts_with("etcd_requests_total{") && l.contains("resource=\"configmaps\""))
                || l.starts_with("etcd_current_revision_requests_total ")
        })
        .filter_map(|l| l.rsplit_once(' ')?.1.trim().parse::<f64>().ok())
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_are_summed_for_configmaps_and_revisions() {
        let text = "etcd_requests_total{group=\"\",operation=\"get\",resource=\"configmaps\"} 3\n\
                    etcd_requests_total{group=\"\",operation=\"update\",resource=\"configmaps\"} 2\n\
                    etcd_requests_total{group=\"\",operation=\"get\",resource=\"secrets\"} 7\n\
                    etcd_current_revision_requests_total 4\n";
        assert_eq!(sum_requests(text), 9.0);
    }
}
