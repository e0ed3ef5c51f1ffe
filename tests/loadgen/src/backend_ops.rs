//! `loadgen backend-ops`: issue 20's figures for each storage backend from one run of
//! one binary. One etcd is started (`--etcd-bin`, through `etcd-launcher`); each run
//! starts a fresh server in each of three configurations:
//!
//! 1. the embedded store (the default);
//! 2. etcd with `--etcd-watch-progress=unordered`: consistent reads go to etcd (the path
//!    of an etcd older than 3.4.31 / 3.5.13, such as Debian's 3.4.23);
//! 3. etcd with `--etcd-watch-progress=ordered`: consistent reads come from the watch
//!    cache after a (coalesced) revision request, the path a trusted etcd (3.5.13+, 3.6)
//!    takes.
//!
//! Each server gets `--count` ConfigMaps created, then GETs of random ones, LISTs of all
//! of them and updates (GET + PUT with the resourceVersion read). Per operation: etcd
//! requests (the server's `etcd_requests_total` for ConfigMaps plus
//! `etcd_current_revision_requests_total`) and the CPU time of the server, of etcd and
//! of this load generator from `/proc/<pid>/stat` over the phase, which hold steady
//! when the machine is shared (ops/s does not); the RSS the creates added to the server
//! and to etcd.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::future::Future;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

use crate::authz::load_average;
use crate::bench_etcd::{BenchEtcd, EtcdBenchOptions};
use crate::client::Client;
use crate::consistent_reads::cpu_time;
use crate::metrics::{median, num, Row};
use crate::scenarios::{self, ListKind};
use crate::server::{rss_of, ServerProcess};

/// The namespace of the ConfigMaps.
const NAMESPACE: &str = "bench";

/// LISTs of the whole namespace per run (at most; also bounded by `--duration`).
const LISTS: u64 = 20;

/// A storage backend and, on etcd, where consistent reads are served from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Config {
    /// The embedded store.
    Embedded,
    /// etcd; consistent reads go to etcd.
    EtcdUnordered,
    /// etcd; consistent reads come from the watch cache.
    EtcdOrdered,
}

impl Config {
    /// Every configuration, in table order.
    pub const ALL: [Config; 3] = [Config::Embedded, Config::EtcdUnordered, Config::EtcdOrdered];

    fn label(self) -> &'static str {
        match self {
            Config::Embedded => "embedded store",
            Config::EtcdUnordered => "etcd, reads from etcd (`unordered`)",
            Config::EtcdOrdered => "etcd, reads from the watch cache (`ordered`)",
        }
    }

    fn on_etcd(self) -> bool {
        self != Config::Embedded
    }

    fn flag(self) -> Option<&'static str> {
        match self {
            Config::Embedded => None,
            Config::EtcdUnordered => Some("--etcd-watch-progress=unordered"),
            Config::EtcdOrdered => Some("--etcd-watch-progress=ordered"),
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
    /// LIST of every ConfigMap (JSON), one at a time.
    List,
    /// GET of a ConfigMap, then PUT of it changed, with the resourceVersion read.
    Update,
}

impl Op {
    fn label(self) -> &'static str {
        match self {
            Op::Create => "create",
            Op::Get => "GET",
            Op::List => "LIST of all",
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
    /// etcd CPU per operation, µs (0 on the embedded store).
    pub etcd_cpu_us: f64,
    /// Cores busy over the phase: the server, etcd and the load generator.
    pub cores: Cores,
}

/// CPU use over a phase, in cores (CPU seconds per wall second).
#[derive(Clone, Copy, Debug, Default)]
pub struct Cores {
    /// The API server.
    pub server: f64,
    /// etcd (0 on the embedded store).
    pub etcd: f64,
    /// This load generator.
    pub loadgen: f64,
    /// Every other process on the machine (`/proc/stat`'s busy time minus the three).
    pub others: f64,
}

impl Cores {
    fn total(&self) -> f64 {
        self.server + self.etcd + self.loadgen + self.others
    }

    /// What bounds a phase, as measured: CPU when the processes (ours and the machine's
    /// others) kept (nearly) every core busy, or one core when a single process kept one busy (a request at a time);
    /// otherwise waiting (fsync, etcd's round trips, the requests in flight).
    fn bound(&self, cores: f64) -> String {
        let mut split = format!("server {:.2}", self.server);
        if self.etcd > 0.0 {
            let _ = write!(split, ", etcd {:.2}", self.etcd);
        }
        let _ = write!(split, ", loadgen {:.2}", self.loadgen);
        if self.others >= 0.05 {
            let _ = write!(split, ", other processes {:.2}", self.others);
        }
        let busiest = self.server.max(self.etcd).max(self.loadgen);
        let verdict = if self.total() >= 0.85 * cores {
            "CPU"
        } else if busiest >= 0.8 {
            "one core"
        } else {
            "not CPU"
        };
        format!(
            "{verdict}: {:.2} of {cores:.0} cores ({split})",
            self.total()
        )
    }
}

/// The resident memory the creates added, per ConfigMap created.
#[derive(Clone, Copy, Debug, Default)]
pub struct Footprint {
    /// The server's RSS growth per object, bytes.
    pub server: f64,
    /// etcd's RSS growth per object, bytes (0 on the embedded store).
    pub etcd: f64,
}

/// The results of `loadgen backend-ops`.
#[derive(Clone, Debug, Default)]
pub struct BackendOpsReport {
    /// The etcd version measured against.
    pub etcd_version: String,
    /// Requests in flight (GETs, creates, updates; LISTs run one at a time).
    pub concurrency: usize,
    /// ConfigMaps created per run.
    pub count: u64,
    /// Cores of this machine.
    pub cores: f64,
    /// Each configuration's and operation's figures, one entry per run.
    pub runs: BTreeMap<(Config, Op), Vec<Measured>>,
    /// Each configuration's memory per object, one entry per run.
    pub footprints: BTreeMap<Config, Vec<Footprint>>,
    /// 1-minute load average before the first and after the last run.
    pub load: (Option<f64>, Option<f64>),
}

impl BackendOpsReport {
    /// Every failed request of every run.
    pub fn error_count(&self) -> u64 {
        self.runs
            .values()
            .flatten()
            .map(|m| m.row.error_count())
            .sum()
    }

    /// The median over runs of `f` for one configuration and operation.
    fn median_of(&self, config: Config, op: Op, f: impl Fn(&Measured) -> f64) -> Option<f64> {
        let mut v: Vec<f64> = self.runs.get(&(config, op))?.iter().map(f).collect();
        (!v.is_empty()).then(|| median(&mut v))
    }

    /// The run whose throughput is the median one (for its CPU split).
    fn median_run(&self, config: Config, op: Op) -> Option<&Measured> {
        let mut runs: Vec<&Measured> = self.runs.get(&(config, op))?.iter().collect();
        runs.sort_by(|a, b| a.row.throughput.total_cmp(&b.row.throughput));
        runs.get(runs.len() / 2).copied()
    }

    fn footprint(&self, config: Config, f: impl Fn(&Footprint) -> f64) -> Option<f64> {
        let mut v: Vec<f64> = self.footprints.get(&config)?.iter().map(f).collect();
        (!v.is_empty()).then(|| median(&mut v))
    }

    /// The report as markdown: issue 20's figures in one table per backend, then every
    /// operation's row (medians over runs) with each run's ops/s.
    pub fn markdown(&self) -> String {
        let mut out = String::new();
        let runs = self.runs.values().map(Vec::len).max().unwrap_or(0);
        let load = |l: Option<f64>| l.map_or("?".into(), |l| format!("{l:.2}"));
        let _ = writeln!(
            out,
            "{} ConfigMaps of ~1 KiB per run, concurrency {} (LISTs one at a time), the \
             embedded store and etcd {} — medians of {runs} run(s); 1-minute load average \
             {} at the start, {} at the end.\n",
            self.count,
            self.concurrency,
            self.etcd_version,
            load(self.load.0),
            load(self.load.1)
        );
        let _ = writeln!(out, "#### Embedded store\n");
        self.backend_table(&mut out, &[Config::Embedded]);
        let _ = writeln!(out, "#### etcd {}\n", self.etcd_version);
        self.backend_table(&mut out, &[Config::EtcdUnordered, Config::EtcdOrdered]);
        let _ = writeln!(
            out,
            "What bounds it: the CPU the server, etcd, the load generator and every other \
             process used over the phase (median run), against the machine's {:.0} cores: \
             `CPU` when they kept ~every core busy, `one core` when one process kept one \
             busy (one HTTP/2 connection is served by one worker thread; LISTs run one at a \
             time), `not CPU` otherwise.\n",
            self.cores
        );
        let _ = writeln!(out, "#### Every operation\n");
        let _ = writeln!(
            out,
            "| configuration | operation | ops/s | p50 ms | p99 ms | storage requests per op \
             | server CPU µs per op | etcd CPU µs per op | errors | ops/s, each run |\n\
             | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |"
        );
        for ((config, op), measured) in &self.runs {
            let med = |f: fn(&Measured) -> f64| self.median_of(*config, *op, f).unwrap_or(f64::NAN);
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
                if config.on_etcd() {
                    num(med(|m| m.etcd_cpu_us))
                } else {
                    "—".into()
                },
                each.join(", ")
            );
        }
        out
    }

    /// One backend's table: a column per configuration, a row per figure of issue 20
    /// (in the order), and what bounded it.
    fn backend_table(&self, out: &mut String, configs: &[Config]) {
        let heads: Vec<&str> = configs.iter().map(|c| c.label()).collect();
        let _ = writeln!(out, "| figure | {} | what bounds it |", heads.join(" | "));
        let _ = writeln!(out, "| --- |{} --- |", " ---: |".repeat(configs.len()));
        let med = |c: Config, op: Op, f: fn(&Measured) -> f64| self.median_of(c, op, f);
        let row = |out: &mut String,
                   name: &str,
                   op: Option<Op>,
                   value: &dyn Fn(Config) -> Option<String>| {
            let cells: Vec<String> = configs
                .iter()
                .map(|&c| value(c).unwrap_or_else(|| "—".into()))
                .collect();
            let bound = match op {
                None => "RSS growth over the creates / objects created".to_string(),
                Some(op) => configs
                    .iter()
                    .filter_map(|&c| {
                        let b = self.median_run(c, op)?.cores.bound(self.cores);
                        Some(if configs.len() > 1 {
                            format!("{}: {b}", short(c))
                        } else {
                            b
                        })
                    })
                    .collect::<Vec<_>>()
                    .join("; "),
            };
            let _ = writeln!(out, "| {name} | {} | {bound} |", cells.join(" | "));
        };
        row(out, "create/s", Some(Op::Create), &|c| {
            med(c, Op::Create, |m| m.row.throughput).map(num)
        });
        row(out, "GET/s (p99 ms)", Some(Op::Get), &|c| {
            let t = med(c, Op::Get, |m| m.row.throughput)?;
            let p = med(c, Op::Get, |m| m.row.p99_ms)?;
            Some(format!("{} ({})", num(t), num(p)))
        });
        row(out, "LIST of all, p50 ms", Some(Op::List), &|c| {
            med(c, Op::List, |m| m.row.p50_ms).map(num)
        });
        row(out, "update (GET + PUT)/s", Some(Op::Update), &|c| {
            med(c, Op::Update, |m| m.row.throughput).map(num)
        });
        row(out, "RSS per stored object (server + store)", None, &|c| {
            let s = self.footprint(c, |f| f.server)?;
            if !c.on_etcd() {
                return Some(format!("{s:.0} B"));
            }
            let e = self.footprint(c, |f| f.etcd)?;
            Some(format!("{:.0} B ({s:.0} server + {e:.0} etcd)", s + e))
        });
        row(
            out,
            "CPU per GET, server + etcd (µs)",
            Some(Op::Get),
            &|c| {
                let s = med(c, Op::Get, |m| m.server_cpu_us)?;
                if !c.on_etcd() {
                    return Some(num(s));
                }
                let e = med(c, Op::Get, |m| m.etcd_cpu_us)?;
                Some(format!(
                    "{} ({} server + {} etcd)",
                    num(s + e),
                    num(s),
                    num(e)
                ))
            },
        );
        out.push('\n');
    }
}

/// A configuration's name in a "what bounds it" cell.
fn short(c: Config) -> &'static str {
    match c {
        Config::Embedded => "embedded",
        Config::EtcdUnordered => "`unordered`",
        Config::EtcdOrdered => "`ordered`",
    }
}

/// Runs every configuration `runs` times; the etcd configurations against one etcd.
pub async fn run(opts: &EtcdBenchOptions) -> Result<BackendOpsReport> {
    let etcd = BenchEtcd::start(opts, "loadgen-backend-ops-")?;
    let mut report = BackendOpsReport {
        etcd_version: etcd.version.clone(),
        concurrency: opts.concurrency,
        count: opts.count,
        cores: std::thread::available_parallelism().map_or(1.0, |n| n.get() as f64),
        load: (load_average(), None),
        ..Default::default()
    };
    for run in 0..opts.runs.max(1) {
        for config in Config::ALL {
            eprintln!("run {}/{}: {}", run + 1, opts.runs.max(1), config.label());
            let (data, args) = match config.flag() {
                None => (etcd.server_data()?, opts.server_args.clone()),
                Some(flag) => {
                    let (data, mut args) = etcd.server_setup(&opts.server_args)?;
                    args.push(flag.into());
                    (data, args)
                }
            };
            let etcd_pid = config.on_etcd().then_some(etcd.pid);
            let server = ServerProcess::start(&opts.server_bin, data.path(), &args).await?;
            let measured = measure(opts, &server, etcd_pid).await;
            server.stop().await;
            let (footprint, measured) = measured?;
            report.footprints.entry(config).or_default().push(footprint);
            for (op, m) in measured {
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

/// Creates the working set, then GETs, LISTs and updates it, measuring each phase.
async fn measure(
    opts: &EtcdBenchOptions,
    server: &ServerProcess,
    etcd_pid: Option<u32>,
) -> Result<(Footprint, Vec<(Op, Measured)>)> {
    let client = Client::new(server.target.clone(), opts.protocol, opts.request_timeout)?;
    scenarios::create_namespace(&client, NAMESPACE).await?;
    let server_pid = server.pid().context("the server's pid")?;
    let pids = Pids {
        server: server_pid,
        etcd: etcd_pid,
    };
    let rss_before = (rss_of(server_pid)?, etcd_pid.map(rss_of).transpose()?);
    let create = measure_phase(&client, pids, || {
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
    let rss_after = (rss_of(server_pid)?, etcd_pid.map(rss_of).transpose()?);
    let per_object =
        |before: u64, after: u64| after.saturating_sub(before) as f64 / opts.count as f64;
    let footprint = Footprint {
        server: per_object(rss_before.0, rss_after.0),
        etcd: match (rss_before.1, rss_after.1) {
            (Some(b), Some(a)) => per_object(b, a),
            _ => 0.0,
        },
    };
    let get = measure_phase(&client, pids, || {
        scenarios::get(
            &client,
            NAMESPACE,
            opts.count,
            opts.concurrency,
            opts.duration,
        )
    })
    .await?;
    let list = measure_phase(&client, pids, || {
        scenarios::list(
            &client,
            NAMESPACE,
            opts.count,
            ListKind::Json,
            1,
            LISTS,
            opts.duration,
        )
    })
    .await?;
    let update = measure_phase(&client, pids, || {
        scenarios::update(
            &client,
            NAMESPACE,
            opts.count,
            opts.concurrency,
            opts.duration,
        )
    })
    .await?;
    Ok((
        footprint,
        vec![
            (Op::Create, create),
            (Op::Get, get),
            (Op::List, list),
            (Op::Update, update),
        ],
    ))
}

/// The processes whose CPU a phase measures.
#[derive(Clone, Copy)]
struct Pids {
    server: u32,
    etcd: Option<u32>,
}

/// CPU time of a process, or zero when there is none.
fn cpu_of(pid: Option<u32>) -> Result<Duration> {
    pid.map_or(Ok(Duration::ZERO), cpu_time)
}

/// Runs one phase, with the CPU of the processes and the etcd requests around it.
async fn measure_phase<F, Fut>(client: &Client, pids: Pids, phase: F) -> Result<Measured>
where
    F: FnOnce() -> Fut,
    Fut: Future<Output = Row>,
{
    let me = Some(std::process::id());
    let requests_before = etcd_requests(client).await?;
    let machine_before = machine_busy()?;
    let before = (cpu_time(pids.server)?, cpu_of(pids.etcd)?, cpu_of(me)?);
    let started = Instant::now();
    let row = phase().await;
    let wall = started.elapsed().as_secs_f64().max(1e-9);
    let after = (cpu_time(pids.server)?, cpu_of(pids.etcd)?, cpu_of(me)?);
    let machine = machine_busy()?.saturating_sub(machine_before);
    let requests_after = etcd_requests(client).await?;
    let ops = row.ops.max(1) as f64;
    let per_op = |d: Duration| d.as_secs_f64() * 1e6 / ops;
    let cores = |d: Duration| d.as_secs_f64() / wall;
    let used = (
        after.0.saturating_sub(before.0),
        after.1.saturating_sub(before.1),
        after.2.saturating_sub(before.2),
    );
    Ok(Measured {
        etcd_requests: (requests_after - requests_before) / ops,
        server_cpu_us: per_op(used.0),
        etcd_cpu_us: per_op(used.1),
        cores: Cores {
            server: cores(used.0),
            etcd: cores(used.1),
            loadgen: cores(used.2),
            others: cores(machine.saturating_sub(used.0 + used.1 + used.2)),
        },
        row,
    })
}

/// CPU time every process on the machine has used (`/proc/stat`'s first line: user,
/// nice, system, irq, softirq and steal, in clock ticks of 10 ms).
fn machine_busy() -> Result<Duration> {
    let stat = std::fs::read_to_string("/proc/stat").context("reading /proc/stat")?;
    let line = stat.lines().next().context("an empty /proc/stat")?;
    Ok(Duration::from_millis(busy_ticks(line)? * 10))
}

/// The busy ticks of `/proc/stat`'s `cpu` line (idle and iowait left out).
fn busy_ticks(line: &str) -> Result<u64> {
    let fields: Vec<u64> = line
        .strip_prefix("cpu ")
        .context("/proc/stat does not start with the cpu line")?
        .split_whitespace()
        .map(|f| f.parse().context("a tick count in /proc/stat"))
        .collect::<Result<_>>()?;
    // user nice system idle iowait irq softirq steal ...
    let at = |i: usize| fields.get(i).copied().unwrap_or(0);
    Ok(at(0) + at(1) + at(2) + at(5) + at(6) + at(7))
}

/// etcd requests the server made so far for ConfigMaps, plus its revision requests (0 on
/// the embedded store, which exports neither).
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

    #[test]
    fn busy_ticks_leave_idle_and_iowait_out() {
        let line = "cpu  100 2 30 5000 70 4 6 1 0 0";
        assert_eq!(busy_ticks(line).unwrap(), 100 + 2 + 30 + 4 + 6 + 1);
        assert!(busy_ticks("intr 1 2").is_err());
    }

    #[test]
    fn a_phase_is_cpu_bound_when_the_cores_were_busy() {
        let busy = Cores {
            server: 1.2,
            etcd: 0.3,
            loadgen: 0.3,
            others: 0.0,
        };
        assert_eq!(
            busy.bound(2.0),
            "CPU: 1.80 of 2 cores (server 1.20, etcd 0.30, loadgen 0.30)"
        );
        let serial = Cores {
            server: 0.9,
            etcd: 0.0,
            loadgen: 0.1,
            others: 0.0,
        };
        assert_eq!(
            serial.bound(2.0),
            "one core: 1.00 of 2 cores (server 0.90, loadgen 0.10)"
        );
        let waiting = Cores {
            server: 0.4,
            etcd: 0.0,
            loadgen: 0.2,
            others: 0.0,
        };
        assert_eq!(
            waiting.bound(2.0),
            "not CPU: 0.60 of 2 cores (server 0.40, loadgen 0.20)"
        );
        // The same phase on a machine other processes kept busy: CPU, and they show.
        let crowded = Cores {
            others: 1.2,
            ..waiting
        };
        assert_eq!(
            crowded.bound(2.0),
            "CPU: 1.80 of 2 cores (server 0.40, loadgen 0.20, other processes 1.20)"
        );
    }
}
