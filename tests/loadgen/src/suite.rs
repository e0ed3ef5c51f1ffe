//! The whole benchmark: every scenario, the resource figures and the raw baseline,
//! repeated `runs` times, reduced to medians and printed as markdown.

use std::fmt::Write as _;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{bail, Context, Result};

use crate::client::{Client, Protocol};
use crate::kubeconfig;
use crate::metrics::{median, median_rows, progress, table, Row};
use crate::raw::{self, RawOptions};
use crate::scenarios::{self, ListKind, Settings};
use crate::server::ServerProcess;

/// Which scenario groups to run.
#[derive(Clone, Debug)]
pub struct Selection {
    /// The scenarios at all: creates load the working set of every other scenario, so
    /// without them only the resource figures and the raw baseline run.
    pub create: bool,
    /// Random GETs at each concurrency (creates always run: they load the working set).
    pub get: bool,
    /// JSON, Table and paginated lists.
    pub list: bool,
    /// Read-modify-write update and merge patch.
    pub update: bool,
    /// Watch fan-out.
    pub watch: bool,
    /// Delete one by one and deletecollection.
    pub delete: bool,
    /// Resident memory and start-to-ready figures (needs `--server-bin`).
    pub resources: bool,
}

impl Default for Selection {
    fn default() -> Self {
        Selection {
            create: true,
            get: true,
            list: true,
            update: true,
            watch: true,
            delete: true,
            resources: true,
        }
    }
}

/// Everything a suite run needs.
#[derive(Clone, Debug)]
pub struct SuiteOptions {
    /// Start this server binary for each run (fresh temporary data directory).
    pub server_bin: Option<PathBuf>,
    /// Or drive the server of this kubeconfig (loopback only).
    pub kubeconfig: Option<PathBuf>,
    /// Extra flags for the started server (e.g. `--etcd-servers=...`).
    pub server_args: Vec<String>,
    /// Where temporary data directories go (default: the system temp directory).
    pub data_root: Option<PathBuf>,
    /// HTTP/2 (one connection) or an HTTP/1.1 pool.
    pub protocol: Protocol,
    /// Timeout of one request.
    pub request_timeout: Duration,
    /// How many times to repeat everything; tables show medians.
    pub runs: usize,
    /// Scenario sizes.
    pub settings: Settings,
    /// Which scenarios.
    pub selection: Selection,
    /// Objects loaded for the resource figures.
    pub resource_objects: u64,
    /// A second, larger load for the resource figures (0 = skip), e.g. 100,000.
    pub large_objects: u64,
    /// Idle watchers for the memory figure.
    pub idle_watchers: usize,
    /// Run the raw redb baseline too (same disk as the data directories).
    pub raw: Option<RawOptions>,
}

/// One resource figure (median over runs).
#[derive(Clone, Debug, PartialEq)]
pub struct Figure {
    /// What it is.
    pub name: String,
    /// Its value.
    pub value: f64,
    /// Its unit (`ms`, `MiB`, `B`, ...).
    pub unit: &'static str,
}

/// The results of a suite run.
#[derive(Clone, Debug, Default)]
pub struct Report {
    /// Scenario rows of every run.
    pub runs: Vec<Vec<Row>>,
    /// Resource figures of every run.
    pub figure_runs: Vec<Vec<Figure>>,
    /// Raw baseline rows of every run.
    pub raw_runs: Vec<Vec<Row>>,
    /// How the server was reached, for the report header.
    pub description: String,
}

const MIB: f64 = 1024.0 * 1024.0;

impl Report {
    /// Median scenario rows.
    pub fn scenario_medians(&self) -> Vec<Row> {
        median_rows(&self.runs)
    }

    /// Median raw baseline rows.
    pub fn raw_medians(&self) -> Vec<Row> {
        median_rows(&self.raw_runs)
    }

    /// Median resource figures, in first-seen order.
    pub fn figure_medians(&self) -> Vec<Figure> {
        let mut names: Vec<(String, &'static str)> = Vec::new();
        for f in self.figure_runs.iter().flatten() {
            if !names.iter().any(|(n, _)| n == &f.name) {
                names.push((f.name.clone(), f.unit));
            }
        }
        names
            .into_iter()
            .map(|(name, unit)| {
                let mut v: Vec<f64> = self
                    .figure_runs
                    .iter()
                    .flatten()
                    .filter(|f| f.name == name)
                    .map(|f| f.value)
                    .collect();
                Figure {
                    value: median(&mut v),
                    name,
                    unit,
                }
            })
            .collect()
    }

    /// Every failure of every run and scenario.
    pub fn error_count(&self) -> u64 {
        self.runs
            .iter()
            .chain(&self.raw_runs)
            .flatten()
            .map(Row::error_count)
            .sum()
    }

    /// The report as markdown: scenario medians, resource figures, raw baseline, ratios.
    pub fn markdown(&self) -> String {
        let mut out = String::new();
        let runs = self.runs.len().max(self.raw_runs.len());
        let _ = writeln!(out, "{} — medians of {runs} run(s)\n", self.description);
        let rows = self.scenario_medians();
        if !rows.is_empty() {
            let _ = writeln!(out, "{}", table(&rows, "ops"));
        }
        let figures = self.figure_medians();
        if !figures.is_empty() {
            let _ = writeln!(out, "| resource figure | value |\n| --- | ---: |");
            for f in &figures {
                let v = if f.value >= 100.0 {
                    format!("{:.0}", f.value)
                } else {
                    format!("{:.1}", f.value)
                };
                let _ = writeln!(out, "| {} | {v} {} |", f.name, f.unit);
            }
            let _ = writeln!(out);
        }
        let raw = self.raw_medians();
        if !raw.is_empty() {
            let _ = writeln!(out, "{}", table(&raw, "txn"));
            let creates: Vec<&Row> = rows
                .iter()
                .filter(|r| r.scenario.starts_with("create"))
                .collect();
            let raw1: Vec<&Row> = raw
                .iter()
                .filter(|r| r.scenario.contains("1 key/txn"))
                .collect();
            if !creates.is_empty() && !raw1.is_empty() {
                let _ = writeln!(
                    out,
                    "| concurrency | server creates/s | raw redb txn/s (1 key/txn) | ratio |\n| ---: | ---: | ---: | ---: |"
                );
                for c in &creates {
                    if let Some(r) = raw1.iter().find(|r| r.concurrency == c.concurrency) {
                        let _ = writeln!(
                            out,
                            "| {} | {:.0} | {:.0} | {:.0}% |",
                            c.concurrency,
                            c.throughput,
                            r.throughput,
                            100.0 * c.throughput / r.throughput.max(f64::MIN_POSITIVE)
                        );
                    }
                }
                let _ = writeln!(out);
            }
        }
        out
    }
}

fn temp_dir(opts: &SuiteOptions, prefix: &str) -> Result<tempfile::TempDir> {
    let parent = opts.data_root.clone().unwrap_or_else(std::env::temp_dir);
    std::fs::create_dir_all(&parent)?;
    tempfile::Builder::new()
        .prefix(prefix)
        .tempdir_in(&parent)
        .with_context(|| format!("making a temporary directory in {}", parent.display()))
}

/// Runs the suite.
pub async fn run(opts: &SuiteOptions) -> Result<Report> {
    if opts.server_bin.is_none() && opts.kubeconfig.is_none() {
        bail!("give --server-bin (the benchmark starts the server) or --kubeconfig");
    }
    let proto = match opts.protocol {
        Protocol::Http2 => "HTTP/2, one connection",
        Protocol::Http1 => "HTTP/1.1 connection pool",
    };
    let mut report = Report {
        description: match (&opts.server_bin, &opts.kubeconfig) {
            (Some(bin), _) => format!("server {} ({proto})", bin.display()),
            (None, Some(k)) => format!("server of {} ({proto})", k.display()),
            _ => unreachable!(),
        },
        ..Report::default()
    };
    for run in 0..opts.runs.max(1) {
        eprintln!("run {}/{}", run + 1, opts.runs.max(1));
        let rows = match &opts.server_bin {
            _ if !opts.selection.create => Vec::new(),
            Some(bin) => {
                let dir = temp_dir(opts, "loadgen-data-")?;
                let server = ServerProcess::start(bin, dir.path(), &opts.server_args).await?;
                let client =
                    Client::new(server.target.clone(), opts.protocol, opts.request_timeout)?;
                let rows = scenarios_run(&client, opts, &format!("lg{run}")).await;
                if !matches!(&rows, Ok(r) if r.iter().all(|r| r.error_count() == 0)) {
                    eprintln!("server log tail:\n{}", server.log_tail());
                }
                server.stop().await;
                rows?
            }
            None => {
                let path = opts.kubeconfig.as_ref().expect("checked above");
                let target = kubeconfig::load(path)?;
                let client = Client::new(target, opts.protocol, opts.request_timeout)?;
                let tag = format!("lg{}-{run}", std::process::id());
                scenarios_run(&client, opts, &tag).await?
            }
        };
        report.runs.push(rows);
        if let (Some(bin), true) = (&opts.server_bin, opts.selection.resources) {
            eprintln!("resource figures");
            report.figure_runs.push(resources(bin, opts).await?);
        }
        if let Some(raw_opts) = &opts.raw {
            eprintln!("raw redb baseline");
            let mut raw_opts = raw_opts.clone();
            if raw_opts.dir.is_none() {
                raw_opts.dir = opts.data_root.clone();
            }
            let rows = tokio::task::spawn_blocking(move || raw::run(&raw_opts)).await??;
            rows.iter().for_each(progress);
            report.raw_runs.push(rows);
        }
    }
    Ok(report)
}

/// Every selected scenario against one server; namespaces are named after `tag`.
async fn scenarios_run(client: &Client, opts: &SuiteOptions, tag: &str) -> Result<Vec<Row>> {
    let s = &opts.settings;
    let sel = &opts.selection;
    let n = s.count;
    let mut rows = Vec::new();
    let push = |row: Row, rows: &mut Vec<Row>| {
        progress(&row);
        rows.push(row);
    };
    // Create: one namespace per concurrency level, each loaded with up to `n` objects
    // (fewer when a level hits the time limit).
    let mut loaded: Vec<(String, u64)> = Vec::new();
    for &c in &s.concurrency {
        let ns = format!("{tag}-c{c}");
        scenarios::create_namespace(client, &ns).await?;
        let row = scenarios::create(client, &ns, n, c, s.object_size, s.write_time).await;
        loaded.push((ns, row.ops));
        push(row, &mut rows);
    }
    let Some((work, n)) = loaded.last().cloned() else {
        bail!("no concurrency level given");
    };
    let max_c = s.concurrency.iter().copied().max().unwrap_or(1);
    if sel.get {
        for &c in &s.concurrency {
            push(
                scenarios::get(client, &work, n, c, s.duration).await,
                &mut rows,
            );
        }
    }
    if sel.list {
        for kind in [
            ListKind::Json,
            ListKind::Table,
            ListKind::Paginated(s.page_limit),
        ] {
            let row = scenarios::list(client, &work, n, kind, 1, s.list_requests, s.duration).await;
            push(row, &mut rows);
        }
    }
    if sel.update {
        for &c in &s.concurrency {
            push(
                scenarios::update(client, &work, n, c, s.duration).await,
                &mut rows,
            );
        }
        for &c in &s.concurrency {
            push(
                scenarios::merge_patch(client, &work, n, c, s.duration).await,
                &mut rows,
            );
        }
    }
    let mut extra = Vec::new();
    if sel.watch {
        for &rate in &s.watch_rates {
            for &w in &s.watchers {
                let ns = format!("{tag}-w{w}-r{}", rate as u64);
                scenarios::create_namespace(client, &ns).await?;
                let row = scenarios::watch_fanout(client, &ns, w, rate, s).await;
                push(row, &mut rows);
                extra.push(ns);
            }
        }
    }
    if sel.delete {
        let row = scenarios::delete_each(client, &work, n, max_c, s.write_time).await;
        push(row, &mut rows);
        // deletecollection needs another loaded namespace; load one if there is none.
        let other = match loaded.iter().rev().find(|(ns, _)| *ns != work) {
            Some(found) => found.clone(),
            None => {
                let ns = format!("{tag}-dc");
                scenarios::create_namespace(client, &ns).await?;
                let row =
                    scenarios::create(client, &ns, n, max_c, s.object_size, s.write_time).await;
                extra.push(ns.clone());
                (ns, row.ops)
            }
        };
        push(
            scenarios::delete_collection(client, &other.0, other.1).await,
            &mut rows,
        );
    }
    if opts.server_bin.is_none() {
        for ns in loaded.iter().map(|(ns, _)| ns).chain(&extra) {
            if let Err(e) = scenarios::delete_namespace(client, ns).await {
                eprintln!("  cleanup: {e:#}");
            }
        }
    }
    Ok(rows)
}

/// Figures collected by [`resources`], echoed to stderr as they come.
#[derive(Default)]
struct Figures(Vec<Figure>);

impl Figures {
    fn add(&mut self, name: String, value: f64, unit: &'static str) {
        eprintln!("  {name}: {value:.1} {unit}");
        self.0.push(Figure { name, value, unit });
    }

    fn ready(&mut self, what: &str, server: &ServerProcess) {
        let ms = server.ready_after.as_secs_f64() * 1000.0;
        self.add(format!("start to /readyz 200, {what}"), ms, "ms");
    }

    fn rss(&mut self, what: &str, server: &ServerProcess) -> Result<u64> {
        let rss = server.rss_bytes()?;
        self.add(format!("RSS {what}"), rss as f64 / MIB, "MiB");
        Ok(rss)
    }
}

/// Restarts the server on its data directory twice: after a graceful stop (SIGTERM) and
/// after `kill -9` (the store recovers); records start-to-ready and RSS of each.
async fn restarts(
    server: ServerProcess,
    opts: &SuiteOptions,
    n: u64,
    figs: &mut Figures,
) -> Result<ServerProcess> {
    let bin = opts
        .server_bin
        .as_deref()
        .expect("resources need --server-bin");
    let dir = server.data_dir.clone();
    server.stop_gracefully(Duration::from_secs(30)).await;
    let server = ServerProcess::start(bin, &dir, &opts.server_args).await?;
    figs.ready(&format!("{n} objects, after a graceful stop"), &server);
    figs.rss(&format!("after restart with {n} objects"), &server)?;
    server.stop().await;
    let server = ServerProcess::start(bin, &dir, &opts.server_args).await?;
    figs.ready(&format!("{n} objects, after kill -9"), &server);
    Ok(server)
}

/// Loads ConfigMaps `0..n` into `ns` at `c`, failing unless every one was created.
async fn load(client: &Client, ns: &str, n: u64, c: usize, opts: &SuiteOptions) -> Result<()> {
    let (size, limit) = (opts.settings.object_size, opts.settings.write_time);
    scenarios::create_namespace(client, ns).await?;
    let row = scenarios::create(client, ns, n, c, size, limit).await;
    if row.error_count() > 0 || row.ops < n {
        bail!(
            "loading {n} objects: {} sent within {limit:?}, failures {:?}",
            row.ops,
            row.errors
        );
    }
    Ok(())
}

/// Resident memory and start-to-ready figures on a fresh server.
async fn resources(bin: &std::path::Path, opts: &SuiteOptions) -> Result<Vec<Figure>> {
    let mut figs = Figures::default();
    let size = std::fs::metadata(bin)?.len() as f64;
    figs.add("binary size".into(), size / MIB, "MiB");
    let dir = temp_dir(opts, "loadgen-resources-")?;
    let server = ServerProcess::start(bin, dir.path(), &opts.server_args).await?;
    figs.ready("empty data dir", &server);
    let client = Client::new(server.target.clone(), opts.protocol, opts.request_timeout)?;
    let ns = "lg-resources";
    scenarios::create_namespace(&client, ns).await?;
    tokio::time::sleep(Duration::from_millis(200)).await;
    let rss0 = figs.rss("after start", &server)?;
    let n = opts.resource_objects;
    let c = opts
        .settings
        .concurrency
        .iter()
        .copied()
        .max()
        .unwrap_or(32);
    load(&client, ns, n, c, opts).await?;
    tokio::time::sleep(Duration::from_millis(200)).await;
    let rss1 = figs.rss(&format!("with {n} objects"), &server)?;
    let per_object = (rss1 as f64 - rss0 as f64) / n.max(1) as f64;
    figs.add(
        format!("RSS per stored object ({n} objects)"),
        per_object,
        "B",
    );
    if opts.idle_watchers > 0 {
        let w = opts.idle_watchers;
        let per_connection = opts.settings.watchers_per_connection;
        let watches = scenarios::hold_watches(&client, ns, w, per_connection).await?;
        tokio::time::sleep(Duration::from_millis(500)).await;
        let rss2 = figs.rss(&format!("with {w} idle watchers"), &server)?;
        let per_watcher = (rss2 as f64 - rss1 as f64) / w as f64;
        figs.add("RSS per idle watcher".into(), per_watcher, "B");
        drop(watches);
    }
    drop(client);
    let server = restarts(server, opts, n, &mut figs).await?;
    let large = opts.large_objects;
    if large > n {
        let client = Client::new(server.target.clone(), opts.protocol, opts.request_timeout)?;
        load(&client, "lg-resources-large", large - n, c, opts).await?;
        tokio::time::sleep(Duration::from_millis(200)).await;
        let rss = figs.rss(&format!("with {large} objects"), &server)?;
        let per_object = (rss as f64 - rss0 as f64) / large as f64;
        figs.add(
            format!("RSS per stored object ({large} objects)"),
            per_object,
            "B",
        );
        drop(client);
        let server = restarts(server, opts, large, &mut figs).await?;
        server.stop().await;
    } else {
        server.stop().await;
    }
    Ok(figs.0)
}
