//! The storage layer alone: create/s, get/s, a list of every key of a 10,000-key prefix and
//! CAS update/s through the server's `Storage` trait (no HTTP, no API layer) for the
//! embedded store and for etcd, next to the raw engines on the same machine: durable redb
//! transactions ([`crate::raw`]) and plain etcd-client puts, gets and range reads against
//! the same etcd. Also resident memory and bytes on disk per stored object.
//!
//! etcd is started by this module (`--etcd-bin`, through the `etcd-launcher` crate) on
//! free loopback ports with a data directory on the disk under test, so its process and
//! files can be measured; it is killed at the end of each run.

use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{anyhow, Context, Result};
use apiserver::storage::embedded::EmbeddedStorage;
use apiserver::storage::etcd::EtcdStorage;
use apiserver::storage::{EtcdConfig, Storage};
use bytes::Bytes;
use etcd_launcher::Etcd;
use rand::Rng;

use crate::metrics::{median, median_rows, table, Outcome, Recorder, Row};
use crate::raw::{self, RawOptions};
use crate::server::rss_of;

/// A backend to measure.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backend {
    /// `EmbeddedStorage` (redb, group commit), against raw redb transactions.
    Embedded,
    /// `EtcdStorage`, against raw etcd-client calls to the same etcd.
    Etcd,
}

impl Backend {
    fn name(self) -> &'static str {
        match self {
            Backend::Embedded => "embedded",
            Backend::Etcd => "etcd",
        }
    }
}

/// What to measure.
#[derive(Clone, Debug)]
pub struct StorageOptions {
    /// Backends, in order.
    pub backends: Vec<Backend>,
    /// Directory on the disk under test for the store files and etcd's data directory
    /// (a temporary directory is made inside it); default: the system temp directory.
    pub dir: Option<PathBuf>,
    /// The etcd binary.
    pub etcd_bin: PathBuf,
    /// Use this (loopback) etcd instead of starting one: then there are no memory or
    /// disk figures for etcd.
    pub etcd_endpoint: Option<String>,
    /// Keys created per concurrency level (and the size of the listed prefix).
    pub count: u64,
    /// Concurrency levels (tasks in flight).
    pub concurrency: Vec<usize>,
    /// Bytes per value (about what the server stores for a ~1 KiB ConfigMap).
    pub value_size: usize,
    /// How long each get and update level runs.
    pub duration: Duration,
    /// Full lists of the prefix per measurement.
    pub list_requests: u64,
    /// Repetitions; tables show medians.
    pub runs: usize,
}

impl Default for StorageOptions {
    fn default() -> Self {
        StorageOptions {
            backends: vec![Backend::Embedded, Backend::Etcd],
            dir: None,
            etcd_bin: PathBuf::from("etcd"),
            etcd_endpoint: None,
            count: 10_000,
            concurrency: vec![1, 8, 64],
            value_size: 1400,
            duration: Duration::from_secs(5),
            list_requests: 10,
            runs: 3,
        }
    }
}

/// Memory and disk per stored object after the creates of every level.
#[derive(Clone, Debug)]
pub struct Footprint {
    /// Which backend.
    pub backend: Backend,
    /// Objects stored when measured.
    pub objects: u64,
    /// Resident memory growth per object: of this process for the embedded store (it
    /// runs in-process), of the etcd process for etcd.
    pub rss_per_object: f64,
    /// Bytes of the store's database file per object (`store.redb`; etcd's
    /// `member/snap/db`).
    pub db_per_object: f64,
    /// Bytes of every file of the store per object (etcd: with its write-ahead log,
    /// which preallocates 64 MiB segments).
    pub files_per_object: f64,
}

/// The results of every run.
#[derive(Default)]
pub struct StorageReport {
    /// Per backend, per run: rows through the trait.
    pub through_trait: Vec<(Backend, Vec<Vec<Row>>)>,
    /// Per backend, per run: the raw engine's rows.
    pub raw: Vec<(Backend, Vec<Vec<Row>>)>,
    /// Every run's footprint.
    pub footprints: Vec<Footprint>,
}

/// Runs every backend `opts.runs` times.
pub async fn run(opts: &StorageOptions) -> Result<StorageReport> {
    let parent = opts.dir.clone().unwrap_or_else(std::env::temp_dir);
    std::fs::create_dir_all(&parent).with_context(|| format!("creating {}", parent.display()))?;
    let mut report = StorageReport::default();
    for &backend in &opts.backends {
        let (mut trait_runs, mut raw_runs) = (Vec::new(), Vec::new());
        for run in 0..opts.runs.max(1) {
            eprintln!("{} run {}/{}", backend.name(), run + 1, opts.runs.max(1));
            let dir = tempfile::Builder::new()
                .prefix("loadgen-storage-")
                .tempdir_in(&parent)
                .with_context(|| format!("a temporary directory in {}", parent.display()))?;
            let (rows, raw_rows, footprint) = match backend {
                Backend::Embedded => embedded_run(opts, dir.path()).await?,
                Backend::Etcd => etcd_run(opts, dir.path()).await?,
            };
            for r in rows.iter().chain(&raw_rows) {
                eprintln!(
                    "  {} c={}: {:.0}/s p99 {:.2} ms{}",
                    r.scenario,
                    r.concurrency,
                    r.throughput,
                    r.p99_ms,
                    if r.error_count() > 0 { " ERRORS" } else { "" }
                );
            }
            trait_runs.push(rows);
            raw_runs.push(raw_rows);
            report.footprints.push(footprint);
        }
        report.through_trait.push((backend, trait_runs));
        report.raw.push((backend, raw_runs));
    }
    Ok(report)
}

/// The key of object `i` of level `c`.
fn key(c: usize, i: u64) -> String {
    format!("/registry/configmaps/bench-c{c}/cm-{i:07}")
}

fn value(size: usize, salt: u64) -> Bytes {
    (0..size)
        .map(|i| b'a' + ((i as u64 + salt) % 26) as u8)
        .collect::<Vec<u8>>()
        .into()
}

/// Runs `op(worker, index)` from `c` tasks: the indexes `0..count` handed out in order
/// (`Some(count)`), or for `time` with each worker counting its own operations (`None`).
async fn drive<F, Fut>(c: usize, count: Option<u64>, time: Duration, op: F) -> (Recorder, Duration)
where
    F: Fn(usize, u64) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<(), String>> + Send,
{
    let op = Arc::new(op);
    let next = Arc::new(AtomicU64::new(0));
    let started = Instant::now();
    let tasks: Vec<_> = (0..c.max(1))
        .map(|worker| {
            let (op, next) = (op.clone(), next.clone());
            tokio::spawn(async move {
                let mut rec = Recorder::default();
                let mut own = 0;
                loop {
                    let i = match count {
                        Some(n) => {
                            let i = next.fetch_add(1, Ordering::Relaxed);
                            if i >= n {
                                break;
                            }
                            i
                        }
                        None => {
                            if started.elapsed() >= time {
                                break;
                            }
                            own += 1;
                            own - 1
                        }
                    };
                    let begin = Instant::now();
                    match op(worker, i).await {
                        Ok(()) => rec.record_ok(begin.elapsed()),
                        Err(e) => {
                            rec.record(begin.elapsed(), Outcome::Transport);
                            rec.note_error(e);
                        }
                    }
                }
                rec
            })
        })
        .collect();
    let mut total = Recorder::default();
    for t in tasks {
        match t.await {
            Ok(r) => total.merge(&r),
            Err(e) => total.fail(Outcome::Check, 1, format!("a worker panicked: {e}")),
        }
    }
    (total, started.elapsed())
}

fn row(rec: &Recorder, scenario: &str, c: usize, elapsed: Duration) -> Row {
    for s in &rec.samples {
        eprintln!("    {scenario} c={c}: {s}");
    }
    rec.row(scenario, c, rec.count(), elapsed)
}

/// Through the trait: creates for every level, then (footprint measured by the caller in
/// between) gets, CAS updates and lists.
struct TraitBench {
    store: Arc<dyn Storage>,
    opts: StorageOptions,
    /// Per level, the current mod revision of each key (for CAS updates).
    revisions: Vec<Arc<Vec<AtomicU64>>>,
}

impl TraitBench {
    fn new(store: Arc<dyn Storage>, opts: &StorageOptions) -> Self {
        TraitBench {
            store,
            opts: opts.clone(),
            revisions: Vec::new(),
        }
    }

    async fn creates(&mut self) -> Vec<Row> {
        let mut rows = Vec::new();
        for &c in &self.opts.concurrency {
            let revs: Arc<Vec<AtomicU64>> =
                Arc::new((0..self.opts.count).map(|_| AtomicU64::new(0)).collect());
            let (store, r, size) = (self.store.clone(), revs.clone(), self.opts.value_size);
            let (rec, took) = drive(c, Some(self.opts.count), Duration::MAX, move |_, i| {
                let (store, r) = (store.clone(), r.clone());
                async move {
                    let rev = store
                        .create(&key(c, i), value(size, i))
                        .await
                        .map_err(|e| e.to_string())?;
                    r[i as usize].store(rev, Ordering::Relaxed);
                    Ok(())
                }
            })
            .await;
            rows.push(row(&rec, "create", c, took));
            self.revisions.push(revs);
        }
        rows
    }

    async fn reads_and_updates(&self) -> Vec<Row> {
        let (count, size, time) = (self.opts.count, self.opts.value_size, self.opts.duration);
        let mut rows = Vec::new();
        for &c in &self.opts.concurrency {
            let store = self.store.clone();
            let (rec, took) = drive(c, None, time, move |_, _| {
                let store = store.clone();
                async move {
                    let i = rand::rng().random_range(0..count);
                    match store.get(&key(c, i)).await {
                        Ok(Some(_)) => Ok(()),
                        Ok(None) => Err(format!("{} is missing", key(c, i))),
                        Err(e) => Err(e.to_string()),
                    }
                }
            })
            .await;
            rows.push(row(&rec, "get random", c, took));
        }
        for (level, &c) in self.opts.concurrency.iter().enumerate() {
            let (store, revs) = (self.store.clone(), self.revisions[level].clone());
            // Worker w owns the keys w, w+c, w+2c, ... below `count`: no two updates race
            // for a key, so every compare-and-swap should succeed.
            let (rec, took) = drive(c, None, time, move |w, n| {
                let (store, revs) = (store.clone(), revs.clone());
                async move {
                    let owned = count.saturating_sub(w as u64).div_ceil(c as u64).max(1);
                    let i = w as u64 + (n % owned) * c as u64;
                    if i >= count {
                        return Err(format!("no key for worker {w} (fewer keys than workers)"));
                    }
                    let expected = revs[i as usize].load(Ordering::Relaxed);
                    let rev = store
                        .update(&key(c, i), expected, value(size, n + 1))
                        .await
                        .map_err(|e| e.to_string())?;
                    revs[i as usize].store(rev, Ordering::Relaxed);
                    Ok(())
                }
            })
            .await;
            rows.push(row(&rec, "CAS update", c, took));
        }
        let c = self.opts.concurrency[0];
        let store = self.store.clone();
        let (rec, took) = drive(
            1,
            Some(self.opts.list_requests),
            Duration::MAX,
            move |_, _| {
                let store = store.clone();
                async move {
                    let prefix = format!("/registry/configmaps/bench-c{c}/");
                    let page = store
                        .list(&prefix, None, 0)
                        .await
                        .map_err(|e| e.to_string())?;
                    if page.items.len() as u64 != count {
                        return Err(format!("listed {} keys, want {count}", page.items.len()));
                    }
                    Ok(())
                }
            },
        )
        .await;
        rows.push(row(&rec, &format!("list {count} keys"), 1, took));
        rows
    }
}

/// The embedded store in `dir`, then raw redb in `dir`.
async fn embedded_run(
    opts: &StorageOptions,
    dir: &Path,
) -> Result<(Vec<Row>, Vec<Row>, Footprint)> {
    let path = dir.join("store.redb");
    let rss_before = rss_of(std::process::id())?;
    let store: Arc<dyn Storage> = Arc::new(
        EmbeddedStorage::open(&path).map_err(|e| anyhow!("opening {}: {e}", path.display()))?,
    );
    let mut bench = TraitBench::new(store, opts);
    let mut rows = bench.creates().await;
    let objects = opts.count * opts.concurrency.len() as u64;
    let rss_after = rss_of(std::process::id())?;
    let file = std::fs::metadata(&path)?.len();
    let footprint = Footprint {
        backend: Backend::Embedded,
        objects,
        rss_per_object: rss_after.saturating_sub(rss_before) as f64 / objects as f64,
        db_per_object: file as f64 / objects as f64,
        files_per_object: dir_bytes(dir) as f64 / objects as f64,
    };
    rows.extend(bench.reads_and_updates().await);
    drop(bench);
    let raw_opts = RawOptions {
        dir: Some(dir.to_path_buf()),
        count: opts.count,
        concurrency: opts.concurrency.clone(),
        value_size: opts.value_size,
        batch: 0,
        ..RawOptions::default()
    };
    let raw_rows = tokio::task::spawn_blocking(move || raw::run(&raw_opts)).await??;
    Ok((rows, raw_rows, footprint))
}

/// etcd with its data directory in `dir`: through the trait, then raw etcd-client calls
/// (under another prefix of the same etcd).
async fn etcd_run(opts: &StorageOptions, dir: &Path) -> Result<(Vec<Row>, Vec<Row>, Footprint)> {
    let etcd = match &opts.etcd_endpoint {
        Some(_) => None,
        None => Some(
            Etcd::builder()
                .binary(&opts.etcd_bin)
                .dir_in(dir)
                // Room for every run's keys and their history (the default quota is 2 GiB).
                .arg("--quota-backend-bytes=8589934592")
                .try_start()?,
        ),
    };
    let endpoint = match (&etcd, &opts.etcd_endpoint) {
        (Some(e), _) => e.endpoint(),
        (None, Some(url)) => url.clone(),
        (None, None) => unreachable!("etcd is started when no endpoint is given"),
    };
    // Unique per run, so runs against a shared etcd do not meet each other's keys.
    let nonce = format!(
        "{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_micros())
    );
    let config = EtcdConfig {
        servers: vec![endpoint.clone()],
        prefix: format!("/bench-trait-{nonce}"),
        ..EtcdConfig::default()
    };
    let rss = || etcd.as_ref().and_then(Etcd::pid).map_or(Ok(0), rss_of);
    let rss_before = rss()?;
    let store: Arc<dyn Storage> = Arc::new(
        EtcdStorage::connect(&config)
            .await
            .map_err(|e| anyhow!("connecting to etcd: {e}"))?,
    );
    let mut bench = TraitBench::new(store, opts);
    let mut rows = bench.creates().await;
    let objects = opts.count * opts.concurrency.len() as u64;
    let rss_after = rss()?;
    let (db, files) = etcd.as_ref().map_or((0, 0), |e| {
        let data = e.data_dir();
        let db = std::fs::metadata(data.join("member/snap/db")).map_or(0, |m| m.len());
        (db, dir_bytes(&data))
    });
    let measured = |v: f64| if etcd.is_some() { v } else { f64::NAN };
    let footprint = Footprint {
        backend: Backend::Etcd,
        objects,
        rss_per_object: measured(rss_after.saturating_sub(rss_before) as f64 / objects as f64),
        db_per_object: measured(db as f64 / objects as f64),
        files_per_object: measured(files as f64 / objects as f64),
    };
    rows.extend(bench.reads_and_updates().await);
    drop(bench);
    let raw_rows = raw_etcd(opts, &endpoint, &format!("/bench-raw-{nonce}")).await?;
    drop(etcd);
    Ok((rows, raw_rows, footprint))
}

/// Plain etcd-client puts, gets and a prefix range read: what etcd itself sustains for
/// one client connection from this process, as the trait's client.
async fn raw_etcd(opts: &StorageOptions, endpoint: &str, root: &str) -> Result<Vec<Row>> {
    let client = etcd_client::Client::connect([endpoint], None)
        .await
        .context("connecting to etcd")?;
    let (count, size, time) = (opts.count, opts.value_size, opts.duration);
    let root: Arc<str> = root.into();
    let raw_key = {
        let root = root.clone();
        move |c: usize, i: u64| format!("{root}/c{c}/cm-{i:07}")
    };
    let mut rows = Vec::new();
    for &c in &opts.concurrency {
        let kv = client.kv_client();
        let raw_key = raw_key.clone();
        let (rec, took) = drive(c, Some(count), Duration::MAX, move |_, i| {
            let mut kv = kv.clone();
            let raw_key = raw_key.clone();
            async move {
                kv.put(raw_key(c, i), value(size, i).to_vec(), None)
                    .await
                    .map(|_| ())
                    .map_err(|e| e.to_string())
            }
        })
        .await;
        rows.push(row(&rec, "raw etcd put", c, took));
    }
    for &c in &opts.concurrency {
        let kv = client.kv_client();
        let raw_key = raw_key.clone();
        let (rec, took) = drive(c, None, time, move |_, _| {
            let mut kv = kv.clone();
            let raw_key = raw_key.clone();
            async move {
                let i = rand::rng().random_range(0..count);
                let resp = kv
                    .get(raw_key(c, i), None)
                    .await
                    .map_err(|e| e.to_string())?;
                match resp.kvs().len() {
                    1 => Ok(()),
                    _ => Err(format!("{} is missing", raw_key(c, i))),
                }
            }
        })
        .await;
        rows.push(row(&rec, "raw etcd get", c, took));
    }
    let c = opts.concurrency[0];
    // As the trait's client: a range of 10,000 values is ~14 MB, past gRPC's 4 MiB default.
    let kv = client.kv_client().max_decoding_message_size(1 << 30);
    let (rec, took) = drive(1, Some(opts.list_requests), Duration::MAX, move |_, _| {
        let mut kv = kv.clone();
        let prefix = format!("{root}/c{c}/");
        async move {
            let options = etcd_client::GetOptions::new().with_prefix();
            let resp = kv
                .get(prefix, Some(options))
                .await
                .map_err(|e| e.to_string())?;
            match resp.kvs().len() as u64 {
                n if n == count => Ok(()),
                n => Err(format!("ranged {n} keys, want {count}")),
            }
        }
    })
    .await;
    rows.push(row(&rec, &format!("raw etcd range {count} keys"), 1, took));
    Ok(rows)
}

/// Sum of the sizes of the files under `dir`.
fn dir_bytes(dir: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    entries
        .flatten()
        .map(|e| match e.metadata() {
            Ok(m) if m.is_dir() => dir_bytes(&e.path()),
            Ok(m) => m.len(),
            Err(_) => 0,
        })
        .sum()
}

impl StorageReport {
    /// Failed operations over every run.
    pub fn error_count(&self) -> u64 {
        self.through_trait
            .iter()
            .chain(&self.raw)
            .flat_map(|(_, runs)| runs.iter().flatten())
            .map(Row::error_count)
            .sum()
    }

    /// The tables: per backend through the trait and raw; the ratios; the footprints.
    pub fn markdown(&self) -> String {
        let mut out = String::new();
        let mut ratios = Vec::new();
        for ((backend, trait_runs), (_, raw_runs)) in self.through_trait.iter().zip(&self.raw) {
            let through = median_rows(trait_runs);
            let raw = median_rows(raw_runs);
            out.push_str(&format!(
                "### {} through the `Storage` trait (medians of {} run(s))\n\n{}\n",
                backend.name(),
                trait_runs.len(),
                table(&through, "op")
            ));
            let raw_name = match backend {
                Backend::Embedded => "raw redb (durable transactions, 1 key each)",
                Backend::Etcd => "raw etcd-client calls to the same etcd",
            };
            out.push_str(&format!("### {raw_name}\n\n{}\n", table(&raw, "op")));
            let find = |rows: &[Row], scenario: &str, c: usize| {
                rows.iter()
                    .find(|r| r.scenario.starts_with(scenario) && r.concurrency == c)
                    .map(|r| r.throughput)
            };
            let (put, get, range) = match backend {
                Backend::Embedded => ("redb durable write", None, None),
                Backend::Etcd => ("raw etcd put", Some("raw etcd get"), Some("raw etcd range")),
            };
            for t in &through {
                let c = t.concurrency;
                let baseline = if t.scenario == "create" || t.scenario == "CAS update" {
                    Some((put, find(&raw, put, c)))
                } else if t.scenario == "get random" {
                    get.map(|g| (g, find(&raw, g, c)))
                } else {
                    range.map(|r| (r, find(&raw, r, c)))
                };
                if let Some((name, Some(base))) = baseline {
                    ratios.push(format!(
                        "| {} | {} | {c} | {:.0} | {name}: {:.0} | {:.0}% |",
                        backend.name(),
                        t.scenario,
                        t.throughput,
                        base,
                        100.0 * t.throughput / base
                    ));
                }
            }
        }
        out.push_str("### Through the trait as a share of the raw engine\n\n");
        out.push_str("| backend | operation | concurrency | through the trait, ops/s | raw engine, ops/s | ratio |\n");
        out.push_str("| --- | --- | ---: | ---: | ---: | ---: |\n");
        for r in ratios {
            out.push_str(&r);
            out.push('\n');
        }
        out.push_str("\n### Footprint per stored object (medians)\n\n");
        out.push_str("| backend | objects | RSS growth per object | database file per object | all files per object |\n");
        out.push_str("| --- | ---: | ---: | ---: | ---: |\n");
        for (backend, _) in &self.through_trait {
            let of = |f: fn(&Footprint) -> f64| {
                let mut v: Vec<f64> = self
                    .footprints
                    .iter()
                    .filter(|x| x.backend == *backend)
                    .map(f)
                    .collect();
                median(&mut v)
            };
            let objects = self
                .footprints
                .iter()
                .find(|x| x.backend == *backend)
                .map_or(0, |x| x.objects);
            let bytes = |v: f64| {
                if v.is_nan() {
                    "n/a (etcd not started here)".to_string()
                } else {
                    format!("{v:.0} B")
                }
            };
            out.push_str(&format!(
                "| {} | {objects} | {} | {} | {} |\n",
                backend.name(),
                bytes(of(|f| f.rss_per_object)),
                bytes(of(|f| f.db_per_object)),
                bytes(of(|f| f.files_per_object))
            ));
        }
        out
    }
}
