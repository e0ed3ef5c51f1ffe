//! `loadgen crds`: what CustomResourceDefinitions cost (issue #12). Against the server
//! binary on fresh data directories it measures
//!
//! 1. the time from a CRD's POST to its `Established=True` condition (seen on a watch of
//!    the definitions opened before the create) and to its kind's collection answering
//!    200, one definition after another;
//! 2. resident memory with 0 definitions and after each step of installed ones;
//! 3. start-up on a data directory holding each step's definitions: to `/readyz` 200 and
//!    to every kind being served, and the idle memory after it;
//! 4. create, GET and LIST of a custom kind next to ConfigMaps at the same concurrency and
//!    object size, through the suite's own scenarios.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use bytes::Bytes;
use http::Method;
use serde::Deserialize;
use serde_json::json;
use tokio::sync::mpsc;
use tokio::task::JoinSet;

use crate::client::{Client, Protocol, Streaming, JSON};
use crate::metrics::{median, median_rows, progress, table, Outcome, Recorder, Row};
use crate::scenarios::{self, ListKind, Objects};
use crate::server::ServerProcess;

/// The definitions' collection.
const CRDS: &str = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";

const MIB: f64 = 1024.0 * 1024.0;

/// Which parts of `loadgen crds` to run.
#[derive(Clone, Debug)]
pub struct CrdSelection {
    /// Create-to-Established latency and memory per installed definition (one server).
    pub install: bool,
    /// Start-up with the definitions installed.
    pub startup: bool,
    /// Custom objects next to ConfigMaps.
    pub compare: bool,
}

impl Default for CrdSelection {
    fn default() -> Self {
        CrdSelection {
            install: true,
            startup: true,
            compare: true,
        }
    }
}

/// Everything `loadgen crds` needs.
#[derive(Clone, Debug)]
pub struct CrdOptions {
    /// The server binary, started on fresh temporary data directories.
    pub server_bin: PathBuf,
    /// Extra flags for the server.
    pub server_args: Vec<String>,
    /// Where temporary data directories go (default: the system temp directory).
    pub data_root: Option<PathBuf>,
    /// HTTP/2 (one connection) or an HTTP/1.1 pool.
    pub protocol: Protocol,
    /// Timeout of one request.
    pub request_timeout: Duration,
    /// How many times to repeat everything; tables show medians.
    pub runs: usize,
    /// Numbers of installed definitions at which memory and start-up are measured,
    /// e.g. `[1, 100, 1000]` (definitions are added up to each in turn).
    pub steps: Vec<u64>,
    /// How long one definition may take to be Established and served.
    pub establish_timeout: Duration,
    /// Pause between polls of a collection that is not served yet.
    pub poll_interval: Duration,
    /// Objects created per concurrency level and kind in the comparison.
    pub objects: u64,
    /// Concurrency levels of the comparison.
    pub concurrency: Vec<usize>,
    /// Approximate size of each object's JSON, bytes (both kinds).
    pub object_size: usize,
    /// How long each GET level and each LIST runs at most.
    pub duration: Duration,
    /// LIST requests per kind at most.
    pub list_requests: u64,
    /// How long a create level may run before stopping short of `objects`.
    pub write_time: Duration,
    /// Which parts to run.
    pub selection: CrdSelection,
}

/// Resident memory with `crds` definitions installed.
#[derive(Clone, Debug, PartialEq)]
pub struct MemoryPoint {
    /// Definitions installed (and Established).
    pub crds: u64,
    /// Settled `VmRSS`, bytes.
    pub rss: f64,
}

/// One start-up on a data directory holding `crds` definitions.
#[derive(Clone, Debug, PartialEq)]
pub struct StartupPoint {
    /// Definitions on the data directory.
    pub crds: u64,
    /// Spawn to the first `/readyz` 200, ms.
    pub ready_ms: f64,
    /// Spawn to the first kind's collection answering 200, ms (0 without definitions).
    pub first_served_ms: f64,
    /// Spawn to every kind's collection having answered 200, ms (0 without definitions).
    pub all_served_ms: f64,
    /// Runs (of the medians) in which a kind was still not served right after `/readyz`.
    pub unserved_at_ready: u64,
    /// Settled `VmRSS` after start-up, bytes.
    pub rss: f64,
}

/// The results of `loadgen crds`.
#[derive(Clone, Debug, Default)]
pub struct CrdReport {
    /// How the server was run, for the header.
    pub description: String,
    /// Latency rows (POST, Established, served) of every run.
    pub latency_runs: Vec<Vec<Row>>,
    /// Memory points of every run.
    pub memory_runs: Vec<Vec<MemoryPoint>>,
    /// Start-up points of every run.
    pub startup_runs: Vec<Vec<StartupPoint>>,
    /// Comparison rows (ConfigMap and custom kind alternating) of every run.
    pub compare_runs: Vec<Vec<Row>>,
    /// The custom kind of the comparison.
    pub compare_kind: String,
}

impl CrdReport {
    /// Every failed operation of every run.
    pub fn error_count(&self) -> u64 {
        self.latency_runs
            .iter()
            .chain(&self.compare_runs)
            .flatten()
            .map(Row::error_count)
            .sum()
    }

    /// Median memory points, by number of definitions.
    pub fn memory_medians(&self) -> Vec<MemoryPoint> {
        let mut by: BTreeMap<u64, Vec<f64>> = BTreeMap::new();
        for p in self.memory_runs.iter().flatten() {
            by.entry(p.crds).or_default().push(p.rss);
        }
        by.into_iter()
            .map(|(crds, mut v)| MemoryPoint {
                crds,
                rss: median(&mut v),
            })
            .collect()
    }

    /// Median start-up points, by number of definitions (each figure's own median).
    pub fn startup_medians(&self) -> Vec<StartupPoint> {
        let mut by: BTreeMap<u64, Vec<&StartupPoint>> = BTreeMap::new();
        for p in self.startup_runs.iter().flatten() {
            by.entry(p.crds).or_default().push(p);
        }
        by.into_iter()
            .map(|(crds, ps)| {
                let med = |f: fn(&StartupPoint) -> f64| {
                    median(&mut ps.iter().map(|p| f(p)).collect::<Vec<_>>())
                };
                StartupPoint {
                    crds,
                    ready_ms: med(|p| p.ready_ms),
                    first_served_ms: med(|p| p.first_served_ms),
                    all_served_ms: med(|p| p.all_served_ms),
                    unserved_at_ready: ps.iter().map(|p| p.unserved_at_ready).sum(),
                    rss: med(|p| p.rss),
                }
            })
            .collect()
    }

    /// The report as markdown tables.
    pub fn markdown(&self) -> String {
        let mut out = String::new();
        let runs = [
            self.latency_runs.len(),
            self.memory_runs.len(),
            self.startup_runs.len(),
            self.compare_runs.len(),
        ]
        .into_iter()
        .max()
        .unwrap_or(0);
        let _ = writeln!(out, "{} — medians of {runs} run(s)\n", self.description);
        let latency = median_rows(&self.latency_runs);
        if !latency.is_empty() {
            let _ = writeln!(
                out,
                "CRD create to Established and to served, one definition at a time \
                 (latency from just before the POST; CRD/s is definitions installed per second):\n"
            );
            let _ = writeln!(out, "{}", table(&latency, "CRD"));
        }
        let memory = self.memory_medians();
        if let Some(base) = memory.iter().find(|p| p.crds == 0).map(|p| p.rss) {
            let _ = writeln!(
                out,
                "| CRDs installed | RSS | RSS − RSS with 0 CRDs | per CRD |\n| ---: | ---: | ---: | ---: |"
            );
            for p in &memory {
                let growth = p.rss - base;
                let per = if p.crds > 0 {
                    format!("{:.1} KiB", growth / p.crds as f64 / 1024.0)
                } else {
                    "—".into()
                };
                let _ = writeln!(
                    out,
                    "| {} | {:.1} MiB | {:.2} MiB | {per} |",
                    p.crds,
                    p.rss / MIB,
                    growth / MIB
                );
            }
            let _ = writeln!(out);
        }
        let startup = self.startup_medians();
        if !startup.is_empty() {
            let base = startup.iter().find(|p| p.crds == 0).map(|p| p.rss);
            let _ = writeln!(
                out,
                "| CRDs on disk | start to /readyz 200 | start to first kind served | start to every kind served | runs with a kind unserved at /readyz | idle RSS after start | (RSS − RSS with 0 CRDs) / CRDs |\n| ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
            );
            for p in &startup {
                let (first, all) = if p.crds == 0 {
                    ("—".to_string(), "—".to_string())
                } else {
                    (ms(p.first_served_ms), ms(p.all_served_ms))
                };
                let per = match base {
                    Some(b) if p.crds > 0 => {
                        format!("{:.1} KiB", (p.rss - b) / p.crds as f64 / 1024.0)
                    }
                    _ => "—".into(),
                };
                let _ = writeln!(
                    out,
                    "| {} | {} | {first} | {all} | {} | {:.1} MiB | {per} |",
                    p.crds,
                    ms(p.ready_ms),
                    p.unserved_at_ready,
                    p.rss / MIB
                );
            }
            let _ = writeln!(out);
        }
        let compare = median_rows(&self.compare_runs);
        if !compare.is_empty() {
            let kind = &self.compare_kind;
            let _ = writeln!(
                out,
                "ConfigMaps next to custom objects ({kind}, one CRD installed), same server, \
                 same concurrency and object size:\n"
            );
            let _ = writeln!(out, "{}", table(&compare, "ops"));
            let _ = writeln!(
                out,
                "| operation | concurrency | ConfigMap ops/s | {kind} ops/s | {kind} / ConfigMap | ConfigMap p50 / p99 ms | {kind} p50 / p99 ms |\n| --- | ---: | ---: | ---: | ---: | ---: | ---: |"
            );
            for cm in compare.iter().filter(|r| r.scenario.contains("ConfigMap")) {
                let name = cm.scenario.replace("ConfigMap", kind);
                let Some(cr) = compare
                    .iter()
                    .find(|r| r.scenario == name && r.concurrency == cm.concurrency)
                else {
                    continue;
                };
                let op = cm
                    .scenario
                    .replace(" ConfigMaps", "")
                    .replace(" ConfigMap", "");
                let _ = writeln!(
                    out,
                    "| {op} | {} | {:.0} | {:.0} | {:.0}% | {:.2} / {:.2} | {:.2} / {:.2} |",
                    cm.concurrency,
                    cm.throughput,
                    cr.throughput,
                    100.0 * cr.throughput / cm.throughput.max(f64::MIN_POSITIVE),
                    cm.p50_ms,
                    cm.p99_ms,
                    cr.p50_ms,
                    cr.p99_ms
                );
            }
            let _ = writeln!(out);
        }
        out
    }
}

fn ms(v: f64) -> String {
    if v >= 100.0 {
        format!("{v:.0} ms")
    } else {
        format!("{v:.1} ms")
    }
}

/// One benchmark definition: its own group, plural and kind.
#[derive(Clone, Debug)]
pub struct Crd {
    /// `<plural>.<group>`.
    pub name: String,
    /// API group.
    pub group: String,
    /// Resource (plural) name.
    pub plural: String,
    /// Kind.
    pub kind: String,
}

impl Crd {
    /// The `i`th benchmark definition (`bench0007s.g0007.crds.loadgen.example`).
    pub fn nth(i: u64) -> Crd {
        Crd::new(
            &format!("g{i:04}.crds.loadgen.example"),
            &format!("bench{i:04}s"),
            &format!("Bench{i:04}"),
        )
    }

    /// A definition of `plural` in `group` with `kind`.
    pub fn new(group: &str, plural: &str, kind: &str) -> Crd {
        Crd {
            name: format!("{plural}.{group}"),
            group: group.into(),
            plural: plural.into(),
            kind: kind.into(),
        }
    }

    /// The kind's collection in namespace `ns`.
    pub fn collection(&self, ns: &str) -> String {
        format!("/apis/{}/v1/namespaces/{ns}/{}", self.group, self.plural)
    }

    /// The definition: one served version with a small structural schema (a few typed
    /// properties, so that writes are validated and pruned) and a status subresource.
    pub fn manifest(&self) -> serde_json::Value {
        json!({
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": { "name": self.name },
            "spec": {
                "group": self.group,
                "scope": "Namespaced",
                "names": {
                    "plural": self.plural,
                    "singular": self.plural.trim_end_matches('s'),
                    "kind": self.kind,
                    "listKind": format!("{}List", self.kind),
                },
                "versions": [{
                    "name": "v1",
                    "served": true,
                    "storage": true,
                    "subresources": { "status": {} },
                    "schema": { "openAPIV3Schema": {
                        "type": "object",
                        "properties": {
                            "spec": {
                                "type": "object",
                                "properties": {
                                    "payload": { "type": "string" },
                                    "shard": { "type": "integer", "minimum": 0 },
                                    "mode": { "type": "string", "enum": ["fast", "safe"] },
                                    "tags": { "type": "array", "items": { "type": "string" } },
                                },
                            },
                            "status": {
                                "type": "object",
                                "properties": {
                                    "ready": { "type": "boolean" },
                                    "observed": { "type": "integer" },
                                },
                            },
                        },
                    }},
                }],
            },
        })
    }

    /// Objects of this kind in `ns` for the create, get and list scenarios, built like the
    /// ConfigMaps (same labels, a `spec.payload` string padded to the same size).
    pub fn objects(&self, ns: &str) -> Objects {
        let (api_version, kind) = (format!("{}/v1", self.group), self.kind.clone());
        Objects {
            kind: self.kind.clone(),
            collection: self.collection(ns),
            body: Arc::new(move |name, i, size| {
                let obj = json!({
                    "apiVersion": api_version,
                    "kind": kind,
                    "metadata": { "name": name, "labels": { "app": "loadgen", "shard": (i % 16).to_string() } },
                    "spec": { "payload": "", "shard": i % 16 },
                });
                scenarios::padded(obj, "spec", i, size)
            }),
        }
    }
}

#[derive(Deserialize)]
struct Event {
    #[serde(rename = "type")]
    kind: String,
    object: EventObject,
}

#[derive(Deserialize)]
struct EventObject {
    #[serde(default)]
    metadata: EventMeta,
    #[serde(default)]
    status: Option<CrdStatus>,
    #[serde(default)]
    message: Option<String>,
}

#[derive(Default, Deserialize)]
struct EventMeta {
    #[serde(default)]
    name: Option<String>,
    #[serde(default, rename = "resourceVersion")]
    resource_version: Option<String>,
}

#[derive(Deserialize)]
struct CrdStatus {
    #[serde(default)]
    conditions: Vec<Condition>,
}

#[derive(Deserialize)]
struct Condition {
    #[serde(rename = "type")]
    kind: String,
    status: String,
}

enum News {
    Established(String, Instant),
    Failed(String),
}

/// One watch of every definition, opened before the first create; a reader task notes
/// when each definition is first seen with `Established=True`.
struct CrdWatch {
    rx: mpsc::UnboundedReceiver<News>,
    /// Definitions seen Established before anyone waited for them.
    early: HashMap<String, Instant>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for CrdWatch {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn open_crd_stream(client: &Client, rv: &str) -> Result<Streaming> {
    let url = format!("{CRDS}?watch=1&resourceVersion={rv}&timeoutSeconds=3600");
    let s = client.stream(&url).await.context("opening the CRD watch")?;
    if s.status != 200 {
        bail!("the CRD watch: HTTP {}", s.status);
    }
    Ok(s)
}

impl CrdWatch {
    /// Opens the watch from the current revision; it is open (headers received) when
    /// this returns, so no later change can be missed.
    async fn open(client: &Client) -> Result<CrdWatch> {
        let rv = scenarios::list_revision(client, CRDS).await?;
        let stream = open_crd_stream(client, &rv).await?;
        let (tx, rx) = mpsc::unbounded_channel();
        let task = tokio::spawn(read_crd_watch(client.clone(), stream, rv, tx));
        Ok(CrdWatch {
            rx,
            early: HashMap::new(),
            task,
        })
    }

    /// When `name` was first seen Established.
    async fn wait(&mut self, name: &str, deadline: tokio::time::Instant) -> Result<Instant> {
        if let Some(at) = self.early.remove(name) {
            return Ok(at);
        }
        loop {
            match tokio::time::timeout_at(deadline, self.rx.recv()).await {
                Err(_) => bail!("{name}: no Established=True on the watch in time"),
                Ok(None) => bail!("the CRD watch ended"),
                Ok(Some(News::Failed(why))) => bail!("the CRD watch failed: {why}"),
                Ok(Some(News::Established(n, at))) if n == name => return Ok(at),
                Ok(Some(News::Established(n, at))) => {
                    self.early.insert(n, at);
                }
            }
        }
    }
}

/// Reads the CRD watch, reopening it from the last revision seen if the server ends it.
async fn read_crd_watch(
    client: Client,
    mut stream: Streaming,
    mut rv: String,
    tx: mpsc::UnboundedSender<News>,
) {
    let mut established: HashSet<String> = HashSet::new();
    let mut buf: Vec<u8> = Vec::new();
    let mut reopened = 0;
    loop {
        let chunk = match stream.chunk().await {
            Some(Ok(c)) => c,
            Some(Err(_)) | None => {
                reopened += 1;
                if reopened > 10 {
                    let _ = tx.send(News::Failed("the watch kept ending".into()));
                    return;
                }
                match open_crd_stream(&client, &rv).await {
                    Ok(s) => {
                        stream = s;
                        buf.clear();
                        continue;
                    }
                    Err(e) => {
                        let _ = tx.send(News::Failed(format!("{e:#}")));
                        return;
                    }
                }
            }
        };
        let now = Instant::now();
        buf.extend_from_slice(&chunk);
        let mut start = 0;
        while let Some(pos) = buf[start..].iter().position(|&b| b == b'\n') {
            let line = &buf[start..start + pos];
            start += pos + 1;
            if line.is_empty() {
                continue;
            }
            let ev: Event = match serde_json::from_slice(line) {
                Ok(ev) => ev,
                Err(e) => {
                    let _ = tx.send(News::Failed(format!("bad watch line: {e}")));
                    return;
                }
            };
            if ev.kind == "ERROR" {
                let why = ev.object.message.unwrap_or_default();
                let _ = tx.send(News::Failed(format!("ERROR event: {why}")));
                return;
            }
            if let Some(v) = ev.object.metadata.resource_version {
                rv = v;
            }
            let is_established = ev.object.status.as_ref().is_some_and(|s| {
                s.conditions
                    .iter()
                    .any(|c| c.kind == "Established" && c.status == "True")
            });
            if let (true, Some(name)) = (is_established, ev.object.metadata.name) {
                if established.insert(name.clone())
                    && tx.send(News::Established(name, now)).is_err()
                {
                    return;
                }
            }
        }
        buf.drain(..start);
    }
}

/// Polls `path` (every `poll`) until it answers 200; returns when, and whether the first
/// answer already was 200.
async fn served_at(
    client: &Client,
    path: &str,
    deadline: tokio::time::Instant,
    poll: Duration,
) -> Result<(Instant, bool)> {
    let mut first = true;
    loop {
        let r = client.get(path).await?;
        if r.status == 200 {
            return Ok((Instant::now(), first));
        }
        first = false;
        if tokio::time::Instant::now() >= deadline {
            bail!("{path}: still HTTP {} at the deadline", r.status);
        }
        tokio::time::sleep(poll).await;
    }
}

/// What installing one definition took, each from just before its POST.
struct Install {
    post: Result<Duration>,
    established: Result<Duration>,
    served: Result<Duration>,
}

/// POSTs `crd`, then waits for it to be Established (on `watch`) and, at the same time,
/// for its collection to answer 200.
async fn install(client: &Client, watch: &mut CrdWatch, crd: &Crd, opts: &CrdOptions) -> Install {
    let body = Bytes::from(crd.manifest().to_string());
    let deadline = tokio::time::Instant::now() + opts.establish_timeout;
    let t0 = Instant::now();
    let r = client
        .send(Method::POST, CRDS, JSON, Some(JSON), body)
        .await;
    let post = t0.elapsed();
    let refused = match r {
        Ok(r) if r.status == 201 => None,
        Ok(r) => Some(anyhow::anyhow!(
            "POST {}: HTTP {}: {}",
            crd.name,
            r.status,
            String::from_utf8_lossy(&r.body[..r.body.len().min(300)])
        )),
        Err(e) => Some(e),
    };
    if let Some(e) = refused {
        let skipped = || Err(anyhow::anyhow!("not created"));
        return Install {
            post: Err(e),
            established: skipped(),
            served: skipped(),
        };
    }
    let path = crd.collection("default");
    let (established, served) = tokio::join!(
        watch.wait(&crd.name, deadline),
        served_at(client, &path, deadline, opts.poll_interval)
    );
    Install {
        post: Ok(post),
        established: established.map(|at| at.saturating_duration_since(t0)),
        served: served.map(|(at, _)| at.saturating_duration_since(t0)),
    }
}

impl Install {
    /// The first failure, if any.
    fn ok(self) -> Result<()> {
        self.post?;
        self.established?;
        self.served?;
        Ok(())
    }
}

/// Latency recorders of a band of installs.
#[derive(Default)]
struct Band {
    post: Recorder,
    established: Recorder,
    served: Recorder,
}

impl Band {
    fn add(&mut self, i: Install) {
        // A definition that was not created counts once, as a failed POST.
        if let Err(e) = &i.post {
            self.post.fail(Outcome::Check, 1, format!("{e:#}"));
            return;
        }
        for (rec, r, ok) in [
            (&mut self.post, i.post, Outcome::Status(201)),
            (&mut self.established, i.established, Outcome::Status(200)),
            (&mut self.served, i.served, Outcome::Status(200)),
        ] {
            match r {
                Ok(d) => rec.record(d, ok),
                Err(e) => rec.fail(Outcome::Check, 1, format!("{e:#}")),
            }
        }
    }

    fn rows(&self, label: &str, n: u64, elapsed: Duration) -> Vec<Row> {
        let mut rows = Vec::new();
        for (rec, what) in [
            (&self.post, "POST CRD until 201"),
            (&self.established, "CRD create until Established=True"),
            (&self.served, "CRD create until its collection GET 200"),
        ] {
            let scenario = format!("{what} ({label})");
            for s in &rec.samples {
                eprintln!("  {scenario}: {s}");
            }
            rows.push(rec.row(&scenario, 1, n, elapsed));
        }
        rows
    }
}

/// `VmRSS` once it has stopped changing: sampled every 100 ms until three samples in a
/// row lie within 64 KiB (at most 5 s). Freed memory and the controller's periodic
/// pass move it a little after the last request.
async fn settled_rss(server: &ServerProcess) -> Result<u64> {
    let mut samples: Vec<u64> = Vec::new();
    for _ in 0..50 {
        samples.push(server.rss_bytes()?);
        if let Some(w) = samples.windows(3).last() {
            let (lo, hi) = (w.iter().min(), w.iter().max());
            if let (Some(lo), Some(hi)) = (lo, hi) {
                if hi - lo <= 64 * 1024 {
                    return Ok(w[2]);
                }
            }
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    Ok(samples.last().copied().unwrap_or(0))
}

fn temp_dir(opts: &CrdOptions, prefix: &str) -> Result<tempfile::TempDir> {
    let parent = opts.data_root.clone().unwrap_or_else(std::env::temp_dir);
    std::fs::create_dir_all(&parent)?;
    tempfile::Builder::new()
        .prefix(prefix)
        .tempdir_in(&parent)
        .with_context(|| format!("making a temporary directory in {}", parent.display()))
}

fn band_label(from: u64, to: u64) -> String {
    if from == to {
        format!("CRD {to}")
    } else {
        format!("CRDs {from}–{to}")
    }
}

/// Installs definitions `from..to` one at a time; fails at the first that does not get
/// Established and served (a step's figures would not be what they say).
async fn install_all(
    client: &Client,
    watch: &mut CrdWatch,
    from: u64,
    to: u64,
    opts: &CrdOptions,
) -> Result<()> {
    for i in from..to {
        let crd = Crd::nth(i);
        let r = install(client, watch, &crd, opts).await;
        r.ok().with_context(|| format!("installing {}", crd.name))?;
    }
    Ok(())
}

/// Part 1 and 2: one server from an empty data directory; definitions installed one at a
/// time up to each step, latency per band of installs, settled RSS at each step. Returns
/// the data directory (holding the last step's definitions) for a start-up figure.
async fn install_phase(
    opts: &CrdOptions,
    report: &mut CrdReport,
) -> Result<(tempfile::TempDir, u64)> {
    let dir = temp_dir(opts, "loadgen-crds-")?;
    let server = ServerProcess::start(&opts.server_bin, dir.path(), &opts.server_args).await?;
    let result = async {
        let client = Client::new(server.target.clone(), opts.protocol, opts.request_timeout)?;
        let mut watch = CrdWatch::open(&client).await?;
        let mut points = vec![MemoryPoint {
            crds: 0,
            rss: settled_rss(&server).await? as f64,
        }];
        eprintln!("  RSS with 0 CRDs: {:.1} MiB", points[0].rss / MIB);
        let mut rows = Vec::new();
        let mut installed = 0;
        for &step in &opts.steps {
            let mut band = Band::default();
            let started = Instant::now();
            for i in installed..step {
                band.add(install(&client, &mut watch, &Crd::nth(i), opts).await);
            }
            let label = band_label(installed + 1, step);
            for row in band.rows(&label, step - installed, started.elapsed()) {
                progress(&row);
                rows.push(row);
            }
            installed = step;
            let rss = settled_rss(&server).await? as f64;
            eprintln!("  RSS with {step} CRDs: {:.1} MiB", rss / MIB);
            points.push(MemoryPoint { crds: step, rss });
        }
        report.latency_runs.push(rows);
        report.memory_runs.push(points);
        anyhow::Ok(installed)
    }
    .await;
    if result.is_err() {
        eprintln!("server log tail:\n{}", server.log_tail());
    }
    server.stop_gracefully(Duration::from_secs(30)).await;
    Ok((dir, result?))
}

/// Waits until the collection of every kind of `crds` answers 200: polls one that is
/// missing until it is served, then checks all that are still missing, and so on (the
/// controller serves the definitions in one pass, so one poll usually stands for all).
/// Returns when the first and the last kind answered, and whether the first probe
/// (right after `/readyz`) already found its kind served.
async fn wait_all_served(
    client: &Client,
    crds: u64,
    opts: &CrdOptions,
) -> Result<(Instant, Instant, bool)> {
    let deadline =
        tokio::time::Instant::now() + opts.establish_timeout.max(crate::server::READY_TIMEOUT);
    let mut pending: Vec<String> = (0..crds)
        .map(|i| Crd::nth(i).collection("default"))
        .collect();
    let mut first: Option<(Instant, bool)> = None;
    let mut last = Instant::now();
    while let Some(probe) = pending.first().cloned() {
        let (at, at_once) = served_at(client, &probe, deadline, opts.poll_interval).await?;
        first.get_or_insert((at, at_once));
        pending = unserved(client, pending).await?;
        last = Instant::now();
        if !pending.is_empty() && tokio::time::Instant::now() >= deadline {
            bail!(
                "{} kinds still not served, e.g. {}",
                pending.len(),
                pending[0]
            );
        }
    }
    let (first_at, at_once) = first.unwrap_or((last, true));
    Ok((first_at, last, at_once))
}

/// Those of `paths` that do not answer 200 (16 requests in flight).
async fn unserved(client: &Client, paths: Vec<String>) -> Result<Vec<String>> {
    let paths = Arc::new(paths);
    let workers = paths.len().clamp(1, 16);
    let mut set = JoinSet::new();
    for w in 0..workers {
        let (c, paths) = (client.clone(), paths.clone());
        set.spawn(async move {
            let mut left = Vec::new();
            for p in paths.iter().skip(w).step_by(workers) {
                if c.get(p).await?.status != 200 {
                    left.push(p.clone());
                }
            }
            anyhow::Ok(left)
        });
    }
    let mut left = Vec::new();
    while let Some(r) = set.join_next().await {
        left.extend(r??);
    }
    Ok(left)
}

/// Starts the server on `dir` (holding definitions `0..crds`) and measures start-up.
async fn start_up(
    dir: &Path,
    crds: u64,
    opts: &CrdOptions,
) -> Result<(StartupPoint, ServerProcess)> {
    let spawned = Instant::now();
    let server = ServerProcess::start(&opts.server_bin, dir, &opts.server_args).await?;
    let client = Client::new(server.target.clone(), opts.protocol, opts.request_timeout)?;
    let served = wait_all_served(&client, crds, opts).await;
    let (first, all, at_once) = match served {
        Ok(s) => s,
        Err(e) => {
            eprintln!("server log tail:\n{}", server.log_tail());
            return Err(e);
        }
    };
    drop(client);
    let since = |t: Instant| t.saturating_duration_since(spawned).as_secs_f64() * 1000.0;
    let p = StartupPoint {
        crds,
        ready_ms: server.ready_after.as_secs_f64() * 1000.0,
        first_served_ms: if crds > 0 { since(first) } else { 0.0 },
        all_served_ms: if crds > 0 { since(all) } else { 0.0 },
        unserved_at_ready: u64::from(crds > 0 && !at_once),
        rss: settled_rss(&server).await? as f64,
    };
    eprintln!(
        "  start-up with {crds} CRDs: /readyz {:.1} ms, first kind {:.1} ms, every kind {:.1} ms, RSS {:.1} MiB",
        p.ready_ms,
        p.first_served_ms,
        p.all_served_ms,
        p.rss / MIB
    );
    Ok((p, server))
}

/// Part 3: start-up after a graceful stop with 0 definitions and each step's. The last
/// step's data directory is `last` (from part 1) when given; the others are built here
/// on a directory of their own.
async fn startup_phase(
    opts: &CrdOptions,
    last: Option<(&Path, u64)>,
    report: &mut CrdReport,
) -> Result<()> {
    let dir = temp_dir(opts, "loadgen-crds-startup-")?;
    // A first start makes the data directory (certificates, store); start-up is timed
    // from the second, as for the definitions.
    let server = ServerProcess::start(&opts.server_bin, dir.path(), &opts.server_args).await?;
    server.stop_gracefully(Duration::from_secs(30)).await;
    let (p, mut server) = start_up(dir.path(), 0, opts).await?;
    let mut points = vec![p];
    let mut installed = 0;
    let steps: Vec<u64> = match last {
        Some((_, n)) => opts.steps.iter().copied().filter(|&s| s < n).collect(),
        None => opts.steps.clone(),
    };
    for step in steps {
        let client = Client::new(server.target.clone(), opts.protocol, opts.request_timeout)?;
        let mut watch = CrdWatch::open(&client).await?;
        if let Err(e) = install_all(&client, &mut watch, installed, step, opts).await {
            eprintln!("server log tail:\n{}", server.log_tail());
            return Err(e);
        }
        installed = step;
        drop(watch);
        drop(client);
        server.stop_gracefully(Duration::from_secs(30)).await;
        let (p, s) = start_up(dir.path(), step, opts).await?;
        points.push(p);
        server = s;
    }
    server.stop_gracefully(Duration::from_secs(30)).await;
    if let Some((path, n)) = last {
        let (p, s) = start_up(path, n, opts).await?;
        points.push(p);
        s.stop_gracefully(Duration::from_secs(30)).await;
    }
    report.startup_runs.push(points);
    Ok(())
}

/// The custom kind of part 4.
fn compare_crd() -> Crd {
    Crd::new("compare.loadgen.example", "widgets", "Widget")
}

/// Part 4: on a fresh server with one definition, creates of ConfigMaps and of the
/// custom kind at each concurrency (each into a namespace of its own, alternating kinds
/// so that both see the same conditions), then random GETs and JSON LISTs of the last
/// level's objects.
async fn compare_phase(opts: &CrdOptions, report: &mut CrdReport) -> Result<()> {
    let dir = temp_dir(opts, "loadgen-crds-compare-")?;
    let server = ServerProcess::start(&opts.server_bin, dir.path(), &opts.server_args).await?;
    let result = async {
        let client = Client::new(server.target.clone(), opts.protocol, opts.request_timeout)?;
        let crd = compare_crd();
        let mut watch = CrdWatch::open(&client).await?;
        let r = install(&client, &mut watch, &crd, opts).await;
        r.ok().with_context(|| format!("installing {}", crd.name))?;
        drop(watch);
        let mut rows = Vec::new();
        let mut push = |row: Row| {
            progress(&row);
            rows.push(row);
        };
        let (n, size) = (opts.objects, opts.object_size);
        let mut work: Option<(Objects, u64, Objects, u64)> = None;
        for &c in &opts.concurrency {
            let (ns_cm, ns_cr) = (format!("cmp-cm-c{c}"), format!("cmp-cr-c{c}"));
            scenarios::create_namespace(&client, &ns_cm).await?;
            scenarios::create_namespace(&client, &ns_cr).await?;
            let (cm, cr) = (Objects::configmaps(&ns_cm), crd.objects(&ns_cr));
            let a = scenarios::create_objects(&client, &cm, n, c, size, opts.write_time).await;
            let b = scenarios::create_objects(&client, &cr, n, c, size, opts.write_time).await;
            work = Some((cm, a.ops, cr, b.ops));
            push(a);
            push(b);
        }
        let Some((cm, n_cm, cr, n_cr)) = work else {
            bail!("no concurrency level given");
        };
        for &c in &opts.concurrency {
            push(scenarios::get_objects(&client, &cm, n_cm, c, opts.duration).await);
            push(scenarios::get_objects(&client, &cr, n_cr, c, opts.duration).await);
        }
        for (objects, count) in [(&cm, n_cm), (&cr, n_cr)] {
            let (req, d) = (opts.list_requests, opts.duration);
            let mut row = scenarios::list_objects(
                &client,
                &objects.collection,
                count,
                ListKind::Json,
                1,
                req,
                d,
            )
            .await;
            // The suite's name does not say the kind; the pairing below needs it.
            row.scenario = format!("list {count} {}s (JSON)", objects.kind);
            push(row);
        }
        anyhow::Ok(rows)
    }
    .await;
    if !matches!(&result, Ok(r) if r.iter().all(|r| r.error_count() == 0)) {
        eprintln!("server log tail:\n{}", server.log_tail());
    }
    server.stop().await;
    report.compare_runs.push(result?);
    Ok(())
}

/// Runs `loadgen crds`.
pub async fn run(opts: &CrdOptions) -> Result<CrdReport> {
    let mut steps = opts.steps.clone();
    steps.retain(|&s| s > 0);
    steps.sort_unstable();
    steps.dedup();
    if steps.is_empty() && (opts.selection.install || opts.selection.startup) {
        bail!("--crds needs at least one count above 0");
    }
    let opts = &CrdOptions {
        steps,
        ..opts.clone()
    };
    let proto = match opts.protocol {
        Protocol::Http2 => "HTTP/2, one connection",
        Protocol::Http1 => "HTTP/1.1 connection pool",
    };
    let mut report = CrdReport {
        description: format!("server {} ({proto})", opts.server_bin.display()),
        compare_kind: compare_crd().kind,
        ..CrdReport::default()
    };
    for run in 0..opts.runs.max(1) {
        eprintln!("run {}/{}", run + 1, opts.runs.max(1));
        let mut kept = None;
        if opts.selection.install {
            eprintln!("CRD installs and memory");
            kept = Some(install_phase(opts, &mut report).await?);
        }
        if opts.selection.startup {
            eprintln!("start-up with CRDs installed");
            let last = kept.as_ref().map(|(d, n)| (d.path(), *n));
            startup_phase(opts, last, &mut report).await?;
        }
        drop(kept);
        if opts.selection.compare {
            eprintln!("custom objects next to ConfigMaps");
            compare_phase(opts, &mut report).await?;
        }
    }
    Ok(report)
}
