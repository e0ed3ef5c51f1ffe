//! `loadgen consistent-reads`: consistent GETs (no resourceVersion) on etcd, and the etcd
//! round trips they cost. One etcd is started (`--etcd-bin`, through `etcd-launcher`);
//! each run starts a fresh server on it, under its own key prefix, in each of three
//! configurations:
//!
//! 1. reads from etcd (`--etcd-watch-progress=unordered`: the path of an etcd older than
//!    3.4.31 / 3.5.13, such as Debian's 3.4.23, and kube-apiserver's for GET);
//! 2. from the watch cache, one revision request per read
//!    (`--etcd-watch-progress=ordered --etcd-coalesce-revision-requests=false`);
//! 3. from the watch cache, revision requests coalesced (`ordered`, the default
//!    coalescing).
//!
//! `ordered` is forced so that an etcd whose version is not trusted still shows the
//! cache's path; the figures are about cost, not about that etcd's ordering. Per GET it
//! reports the etcd revision requests (`etcd_current_revision_requests_total` on
//! `/metrics`) and the CPU time of the server and of etcd (`/proc/<pid>/stat`).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::time::Duration;

use anyhow::{bail, Context, Result};

use crate::authz::load_average;
use crate::bench_etcd::{BenchEtcd, EtcdBenchOptions};
use crate::client::Client;
use crate::metrics::{median, num, Row};
use crate::scenarios;
use crate::server::ServerProcess;

/// The namespace of the ConfigMaps read.
const NAMESPACE: &str = "bench";

/// One server configuration.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Config {
    /// Consistent reads go to etcd.
    Etcd,
    /// From the watch cache after one revision request per read.
    CacheSeparate,
    /// From the watch cache after a shared revision request.
    CacheCoalesced,
}

impl Config {
    /// Every configuration, in table order.
    pub const ALL: [Config; 3] = [Config::Etcd, Config::CacheSeparate, Config::CacheCoalesced];

    /// The row heading.
    pub fn label(self) -> &'static str {
        match self {
            Config::Etcd => "reads from etcd (`--etcd-watch-progress=unordered`)",
            Config::CacheSeparate => "watch cache, one revision request per read (coalescer off)",
            Config::CacheCoalesced => "watch cache, coalesced revision requests (coalescer on)",
        }
    }

    fn flags(self) -> [&'static str; 2] {
        match self {
            Config::Etcd => ["--etcd-watch-progress=unordered", ""],
            Config::CacheSeparate => [
                "--etcd-watch-progress=ordered",
                "--etcd-coalesce-revision-requests=false",
            ],
            Config::CacheCoalesced => ["--etcd-watch-progress=ordered", ""],
        }
    }
}

/// One configuration's figures in one run.
#[derive(Clone, Debug)]
pub struct Measured {
    /// The GET scenario's row.
    pub get: Row,
    /// etcd requests for the current revision per GET.
    pub revision_requests_per_get: f64,
    /// Server CPU per GET, µs.
    pub server_cpu_us: f64,
    /// etcd CPU per GET, µs.
    pub etcd_cpu_us: f64,
}

/// The results of `loadgen consistent-reads`.
#[derive(Clone, Debug, Default)]
pub struct ConsistentReadReport {
    /// The etcd version measured against.
    pub etcd_version: String,
    /// GETs in flight.
    pub concurrency: usize,
    /// Each configuration's figures, one entry per run.
    pub runs: BTreeMap<Config, Vec<Measured>>,
    /// 1-minute load average before the first and after the last run.
    pub load: (Option<f64>, Option<f64>),
}

impl ConsistentReadReport {
    /// Every failed request of every run.
    pub fn error_count(&self) -> u64 {
        self.runs
            .values()
            .flatten()
            .map(|m| m.get.error_count())
            .sum()
    }

    /// The report as markdown: one row per configuration (medians over runs), then each
    /// run's GET/s (the noise).
    pub fn markdown(&self) -> String {
        let mut out = String::new();
        let runs = self.runs.values().map(Vec::len).max().unwrap_or(0);
        let _ = writeln!(
            out,
            "consistent GETs on etcd {}, concurrency {} — medians of {runs} run(s)\n",
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
            "| configuration | GET/s | p50 ms | p99 ms | etcd revision requests per GET \
             | server CPU µs per GET | etcd CPU µs per GET | GET/s, each run |\n\
             | --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |"
        );
        for (config, measured) in &self.runs {
            let med = |f: fn(&Measured) -> f64| {
                let mut v: Vec<f64> = measured.iter().map(f).collect();
                median(&mut v)
            };
            let each: Vec<String> = measured
                .iter()
                .map(|m| format!("{:.0}", m.get.throughput))
                .collect();
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {:.3} | {} | {} | {} |",
                config.label(),
                num(med(|m| m.get.throughput)),
                num(med(|m| m.get.p50_ms)),
                num(med(|m| m.get.p99_ms)),
                med(|m| m.revision_requests_per_get),
                num(med(|m| m.server_cpu_us)),
                num(med(|m| m.etcd_cpu_us)),
                each.join(", ")
            );
        }
        out
    }
}

/// CPU time a process has used (user + system), from `/proc/<pid>/stat` in clock ticks
/// of 10 ms (Linux's USER_HZ).
pub fn cpu_time(pid: u32) -> Result<Duration> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .with_context(|| format!("reading /proc/{pid}/stat"))?;
    // The command name (field 2) may hold spaces: count fields after its `)`.
    let after = stat
        .rsplit_once(')')
        .map(|(_, rest)| rest)
        .context("no command name in /proc/<pid>/stat")?;
    let fields: Vec<&str> = after.split_whitespace().collect();
    // utime and stime are fields 14 and 15 of the whole line, 12 and 13 after `)`.
    let ticks = |i: usize| -> Result<u64> {
        fields
            .get(i)
            .context("short /proc/<pid>/stat")?
            .parse()
            .context("a CPU time in /proc/<pid>/stat")
    };
    Ok(Duration::from_millis((ticks(11)? + ticks(12)?) * 10))
}

/// The value of an unlabelled counter in a Prometheus text exposition.
pub fn counter(exposition: &str, name: &str) -> Option<f64> {
    exposition.lines().find_map(|line| {
        let value = line.strip_prefix(name)?.strip_prefix(' ')?;
        value.trim().parse().ok()
    })
}

async fn revision_requests(client: &Client) -> Result<f64> {
    let r = client.get("/metrics").await?;
    if r.status != 200 {
        bail!("GET /metrics: HTTP {}", r.status);
    }
    let text = String::from_utf8_lossy(&r.body);
    counter(&text, "etcd_current_revision_requests_total")
        .context("/metrics has no etcd_current_revision_requests_total")
}

/// Runs every configuration `runs` times against one etcd.
pub async fn run(opts: &EtcdBenchOptions) -> Result<ConsistentReadReport> {
    let etcd = BenchEtcd::start(opts, "loadgen-consistent-reads-")?;
    let mut report = ConsistentReadReport {
        etcd_version: etcd.version.clone(),
        concurrency: opts.concurrency,
        load: (load_average(), None),
        ..Default::default()
    };
    for run in 0..opts.runs.max(1) {
        for config in Config::ALL {
            eprintln!("run {}/{}: {}", run + 1, opts.runs.max(1), config.label());
            let (data, mut args) = etcd.server_setup(&opts.server_args)?;
            args.extend(
                config
                    .flags()
                    .iter()
                    .filter(|f| !f.is_empty())
                    .map(|f| f.to_string()),
            );
            let server = ServerProcess::start(&opts.server_bin, data.path(), &args).await?;
            let measured = measure(opts, &server, etcd.pid).await;
            server.stop().await;
            let measured = measured?;
            eprintln!(
                "  {:.0} GET/s, {:.3} revision requests per GET",
                measured.get.throughput, measured.revision_requests_per_get
            );
            report.runs.entry(config).or_default().push(measured);
        }
    }
    report.load.1 = load_average();
    Ok(report)
}

/// Creates the working set, then GETs it while counting revision requests and CPU.
async fn measure(
    opts: &EtcdBenchOptions,
    server: &ServerProcess,
    etcd_pid: u32,
) -> Result<Measured> {
    let client = Client::new(server.target.clone(), opts.protocol, opts.request_timeout)?;
    scenarios::create_namespace(&client, NAMESPACE).await?;
    let created = scenarios::create(
        &client,
        NAMESPACE,
        opts.count,
        opts.concurrency,
        opts.object_size,
        Duration::from_secs(600),
    )
    .await;
    if created.error_count() > 0 || created.ops != opts.count {
        bail!(
            "creating {} ConfigMaps: {} sent, {} failed",
            opts.count,
            created.ops,
            created.error_count()
        );
    }
    let server_pid = server.pid().context("the server's pid")?;
    let requests_before = revision_requests(&client).await?;
    let (server_before, etcd_before) = (cpu_time(server_pid)?, cpu_time(etcd_pid)?);
    let get = scenarios::get(
        &client,
        NAMESPACE,
        opts.count,
        opts.concurrency,
        opts.duration,
    )
    .await;
    let (server_after, etcd_after) = (cpu_time(server_pid)?, cpu_time(etcd_pid)?);
    let requests_after = revision_requests(&client).await?;
    let gets = get.ops.max(1) as f64;
    let per_get = |d: Duration| d.as_secs_f64() * 1e6 / gets;
    Ok(Measured {
        // The scrape after the GETs is one request more; it makes no revision request.
        revision_requests_per_get: (requests_after - requests_before) / gets,
        server_cpu_us: per_get(server_after.saturating_sub(server_before)),
        etcd_cpu_us: per_get(etcd_after.saturating_sub(etcd_before)),
        get,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_are_read_from_the_exposition() {
        let text = "# HELP etcd_current_revision_requests_total x\n\
                    etcd_current_revision_requests_total 42\n\
                    etcd_current_revision_requests_total_other 1\n";
        assert_eq!(
            counter(text, "etcd_current_revision_requests_total"),
            Some(42.0)
        );
        assert_eq!(counter(text, "etcd_current_revision_callers_total"), None);
    }

    #[test]
    fn cpu_time_of_this_process_is_read() {
        cpu_time(std::process::id()).expect("this process's CPU time");
    }
}
