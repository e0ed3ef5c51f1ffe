//! `loadgen soak`: a long run of mixed traffic against the server binary, sampled every
//! interval (a minute by default) for resident memory, open file descriptors, CPU and
//! per-verb latency, and checked at the end:
//!
//! - **memory**: with a bounded live set and a bounded watch history the server's RSS
//!   must level off; the run fails when the last third's mean RSS is more than
//!   `rss_growth` above the middle third's, or when RSS rises at every sample of the last
//!   third by more than half that margin in all (a climb that has not levelled off);
//! - **file descriptors**: the same rule on the count of `/proc/<pid>/fd` (connections
//!   are opened once, so a leak of sockets or files shows as growth);
//! - **watchers**: every watcher's stream must hold every acknowledged write of the
//!   objects its label selector picks, exactly once and in resourceVersion order, up to
//!   a final marker written after the writers stop; nothing may follow the marker.
//!
//! Writers own disjoint object names (each name is created once and deleted at most
//! once), so every write succeeds without conflicts and its event is known in advance:
//! ADDED and MODIFIED with the resourceVersion of the write's answer, DELETED with the
//! name (a ConfigMap's DELETE answers a Status without one). Watchers keep a count and
//! an order-free sum of hashes of those identities, so a 30-minute run needs O(1)
//! memory per watcher; a missing, extra or repeated event changes the count or the sum,
//! and a repeated or reordered one also breaks the strictly rising resourceVersions.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::PathBuf;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use bytes::Bytes;
use etcd_launcher::Etcd;
use http::Method;
use serde::Deserialize;
use serde_json::json;
use tokio::task::JoinSet;

use crate::authz::load_average;
use crate::client::{Client, Protocol, Streaming, JSON, MERGE_PATCH, STRATEGIC_MERGE_PATCH};
use crate::consistent_reads::cpu_time;
use crate::metrics::{num, Outcome, Recorder, Row};
use crate::scenarios::{self, collection, judge, padded, Rng, WatchLine};
use crate::server::{rss_of, ServerProcess};

/// The namespace the soak writes in.
const NAMESPACE: &str = "soak";
/// The label that puts an object in a shard (what the watchers select on).
const SHARD_LABEL: &str = "soak-shard";
/// Every `ALL_EVERY`th watcher watches the whole namespace; the others one shard.
const ALL_EVERY: usize = 20;
/// How long a watcher keeps reading after its final marker for events that must not come.
const AFTER_MARKER: Duration = Duration::from_secs(1);

/// The verbs timed, in table order.
pub const VERBS: [&str; 6] = [
    "create",
    "update",
    "merge patch",
    "strategic patch",
    "delete",
    "list",
];

/// Everything `loadgen soak` needs.
#[derive(Clone, Debug)]
pub struct SoakOptions {
    /// The server binary (started once, on a fresh temporary data directory).
    pub server_bin: PathBuf,
    /// Extra flags for the server.
    pub server_args: Vec<String>,
    /// Start this etcd and run the server on it (`None`: the embedded store).
    pub etcd_bin: Option<PathBuf>,
    /// Where temporary directories go (default: the system temp directory).
    pub data_root: Option<PathBuf>,
    /// HTTP/2 (one connection for the writers) or an HTTP/1.1 pool.
    pub protocol: Protocol,
    /// Timeout of one request.
    pub request_timeout: Duration,
    /// How long the writers run.
    pub duration: Duration,
    /// Time between samples.
    pub interval: Duration,
    /// Watches held for the whole run.
    pub watchers: usize,
    /// Watches per HTTP/2 connection (0: all on the writers' connection).
    pub watchers_per_connection: usize,
    /// Label shards of the objects; watchers select one shard (or the whole namespace).
    pub shards: u64,
    /// Live objects the writers keep, in all (each writer between half its share and it).
    pub objects: u64,
    /// Writer tasks (each owns its objects).
    pub writers: usize,
    /// Writes per second, in all.
    pub write_rate: f64,
    /// LIST requests per second (alternately the namespace and one shard).
    pub list_rate: f64,
    /// Approximate size of each ConfigMap's JSON, bytes.
    pub object_size: usize,
    /// The RSS (and fd) growth allowed from the middle third to the last, as a fraction.
    pub rss_growth: f64,
    /// How long watchers may take to reach their marker after the writers stop.
    pub watch_grace: Duration,
}

impl Default for SoakOptions {
    fn default() -> Self {
        SoakOptions {
            server_bin: PathBuf::from("target/release/apiserver"),
            server_args: Vec::new(),
            etcd_bin: None,
            data_root: None,
            protocol: Protocol::Http2,
            request_timeout: Duration::from_secs(60),
            duration: Duration::from_secs(30 * 60),
            interval: Duration::from_secs(60),
            watchers: 1000,
            watchers_per_connection: 100,
            shards: 16,
            objects: 2000,
            writers: 8,
            write_rate: 200.0,
            list_rate: 2.0,
            object_size: 1024,
            rss_growth: 0.10,
            watch_grace: Duration::from_secs(120),
        }
    }
}

/// One sample: the server's state and the interval's traffic.
#[derive(Clone, Debug)]
pub struct Sample {
    /// Time since the writers started.
    pub at: Duration,
    /// The server's `VmRSS`, bytes.
    pub rss: u64,
    /// Entries of `/proc/<pid>/fd`.
    pub fds: u64,
    /// The server's CPU over the interval, percent of one core.
    pub cpu_percent: f64,
    /// etcd's `VmRSS`, bytes, when the server runs on an etcd the soak started.
    pub etcd_rss: Option<u64>,
    /// The machine's 1-minute load average.
    pub load: Option<f64>,
    /// Live objects at the sample.
    pub live: i64,
    /// Per verb, the interval's operations.
    pub verbs: BTreeMap<&'static str, Row>,
    /// Watch events the watchers read in the interval.
    pub watch_events: u64,
}

impl Sample {
    fn errors(&self) -> u64 {
        self.verbs.values().map(Row::error_count).sum()
    }

    fn writes(&self) -> u64 {
        self.verbs
            .iter()
            .filter(|(v, _)| **v != "list")
            .map(|(_, r)| r.ops)
            .sum()
    }
}

/// A growth check over the samples of one figure.
#[derive(Clone, Debug, PartialEq)]
pub struct Growth {
    /// Mean of the middle third.
    pub middle: f64,
    /// Mean of the last third.
    pub last: f64,
    /// Whether every sample of the last third was at least the one before it, rising by
    /// more than half the allowed growth in all.
    pub climbing: bool,
    /// Whether the figure passes.
    pub ok: bool,
}

/// Judges the growth of `values` (one per sample): the last third's mean may exceed the
/// middle third's by at most `allowed` (a fraction) plus `slack` (absolute), and the last
/// third may not climb at every sample by more than half of that. The first third is
/// warm-up (the live set fills, the watch history fills) and is not judged. `None` with
/// fewer than 6 samples, too few for thirds to mean anything.
pub fn growth(values: &[f64], allowed: f64, slack: f64) -> Option<Growth> {
    let n = values.len();
    if n < 6 {
        return None;
    }
    let third = n / 3;
    let mean = |s: &[f64]| s.iter().sum::<f64>() / s.len() as f64;
    let middle = mean(&values[third..n - third]);
    let tail = &values[n - third..];
    let last = mean(tail);
    let limit = middle * (1.0 + allowed) + slack;
    let rise = tail[tail.len() - 1] - tail[0];
    let climbing = tail.windows(2).all(|w| w[1] >= w[0]) && rise > (limit - middle) / 2.0;
    Some(Growth {
        middle,
        last,
        climbing,
        ok: last <= limit && !climbing,
    })
}

/// What the watchers saw against what was written.
#[derive(Clone, Debug, Default)]
pub struct WatchCheck {
    /// Watchers held.
    pub watchers: usize,
    /// Watchers whose stream matched the acknowledged writes exactly.
    pub exact: usize,
    /// Events read by all watchers.
    pub delivered: u64,
    /// Events the acknowledged writes mean in all (what `delivered` must equal).
    pub expected: u64,
    /// Watches opened again after the server ended them (their timeout).
    pub rewatches: u64,
    /// The first few problems.
    pub samples: Vec<String>,
}

/// The results of a soak run.
#[derive(Clone, Debug, Default)]
pub struct SoakReport {
    /// What was run against what, for the header.
    pub description: String,
    /// One per interval.
    pub samples: Vec<Sample>,
    /// The watchers' check.
    pub watch: WatchCheck,
    /// The RSS check (`None`: too few samples to judge).
    pub rss: Option<Growth>,
    /// The open-fd check.
    pub fds: Option<Growth>,
    /// Allowed growth (fraction), for the report.
    pub rss_growth: f64,
    /// Failed requests and other failures, with the first few described.
    pub errors: u64,
    /// Descriptions of the first few failures.
    pub error_samples: Vec<String>,
    /// Load average at the start and the end.
    pub load: (Option<f64>, Option<f64>),
}

impl SoakReport {
    /// Everything that makes the run fail: failed requests, watchers that did not see
    /// exactly the writes, and an RSS or fd count that kept growing.
    pub fn failures(&self) -> u64 {
        let watch = (self.watch.watchers - self.watch.exact) as u64;
        let grew = [&self.rss, &self.fds]
            .iter()
            .filter(|g| matches!(g, Some(g) if !g.ok))
            .count() as u64;
        self.errors + watch + grew
    }

    /// The report as markdown: a header, the per-interval table and the verdicts.
    pub fn markdown(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(out, "{}\n", self.description);
        let load = |l: Option<f64>| l.map_or("?".into(), |l| format!("{l:.2}"));
        let _ = writeln!(
            out,
            "1-minute load average {} at the start, {} at the end.\n",
            load(self.load.0),
            load(self.load.1)
        );
        let etcd = self.samples.iter().any(|s| s.etcd_rss.is_some());
        let mut head = String::from("| min | RSS MiB | open fds | server CPU % |");
        let mut rule = String::from("| ---: | ---: | ---: | ---: |");
        if etcd {
            head.push_str(" etcd RSS MiB |");
            rule.push_str(" ---: |");
        }
        head.push_str(" load | live objects | writes/s |");
        rule.push_str(" ---: | ---: | ---: |");
        for v in VERBS {
            let _ = write!(head, " {v} p50 / p99 ms |");
            rule.push_str(" ---: |");
        }
        head.push_str(" watch events/s | errors |");
        rule.push_str(" ---: | ---: |");
        let _ = writeln!(out, "{head}\n{rule}");
        for s in &self.samples {
            let secs = s
                .verbs
                .values()
                .map(|r| r.seconds)
                .fold(0.0, f64::max)
                .max(1e-9);
            let mut line = format!(
                "| {} | {:.1} | {} | {:.0} |",
                num(s.at.as_secs_f64() / 60.0),
                s.rss as f64 / MIB,
                s.fds,
                s.cpu_percent
            );
            if etcd {
                let v = s
                    .etcd_rss
                    .map_or("?".into(), |r| format!("{:.1}", r as f64 / MIB));
                let _ = write!(line, " {v} |");
            }
            let _ = write!(
                line,
                " {} | {} | {:.0} |",
                load(s.load),
                s.live,
                s.writes() as f64 / secs
            );
            for v in VERBS {
                match s.verbs.get(v) {
                    Some(r) if r.ops > 0 => {
                        let _ = write!(line, " {} / {} |", num(r.p50_ms), num(r.p99_ms));
                    }
                    _ => line.push_str(" — |"),
                }
            }
            let _ = write!(
                line,
                " {:.0} | {} |",
                s.watch_events as f64 / secs,
                s.errors()
            );
            let _ = writeln!(out, "{line}");
        }
        let _ = writeln!(out);
        let pct = 100.0 * self.rss_growth;
        let verdict = |name: &str, g: &Option<Growth>, unit: &str, scale: f64| match g {
            None => format!("- {name}: not judged (fewer than 6 samples)"),
            Some(g) => format!(
                "- {name}: mean of the middle third {:.1}{unit}, of the last third {:.1}{unit} \
                 ({:+.1}%; allowed +{pct:.0}%){}: **{}**",
                g.middle / scale,
                g.last / scale,
                100.0 * (g.last - g.middle) / g.middle.max(1e-9),
                if g.climbing {
                    ", still climbing at every sample"
                } else {
                    ""
                },
                if g.ok { "pass" } else { "FAIL" }
            ),
        };
        let _ = writeln!(out, "{}", verdict("RSS", &self.rss, " MiB", MIB));
        let _ = writeln!(out, "{}", verdict("open fds", &self.fds, "", 1.0));
        let w = &self.watch;
        let _ = writeln!(
            out,
            "- watchers: {} of {} saw exactly the acknowledged writes of their selection, once each \
             and in order, up to the final marker ({} events read, {} expected; {} watches \
             resumed after the server's timeout): **{}**",
            w.exact,
            w.watchers,
            w.delivered,
            w.expected,
            w.rewatches,
            if w.exact == w.watchers {
                "pass"
            } else {
                "FAIL"
            }
        );
        let _ = writeln!(
            out,
            "- failed requests: {}: **{}**",
            self.errors,
            if self.errors == 0 { "pass" } else { "FAIL" }
        );
        for s in self.watch.samples.iter().chain(&self.error_samples) {
            let _ = writeln!(out, "  - {s}");
        }
        out
    }
}

const MIB: f64 = 1024.0 * 1024.0;

/// Count and order-free hash of a set of watch events.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Tally {
    count: u64,
    sum: u64,
}

impl Tally {
    fn add(&mut self, id: u64) {
        self.count += 1;
        self.sum = self.sum.wrapping_add(id);
    }

    fn merge(&mut self, other: &Tally) {
        self.count += other.count;
        self.sum = self.sum.wrapping_add(other.sum);
    }
}

/// The identity of the event a write causes: its type and object name, and for ADDED and
/// MODIFIED the resourceVersion (pass 0 for DELETED).
fn identity(event: &str, name: &str, rv: u64) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in event.bytes().chain([0]).chain(name.bytes()) {
        h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
    }
    Rng::new(h ^ rv.wrapping_mul(0x9E37_79B9_7F4A_7C15)).below(u64::MAX)
}

/// The JSON of soak object `name` in `shard`, about `size` bytes.
fn soak_object(name: &str, shard: u64, seq: u64, size: usize, rv: Option<u64>) -> Bytes {
    let mut meta =
        json!({ "name": name, "labels": { "app": "soak", SHARD_LABEL: shard.to_string() } });
    if let Some(rv) = rv {
        meta["resourceVersion"] = json!(rv.to_string());
    }
    let obj = json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": meta,
        "data": { "payload": "", "seq": seq.to_string() },
    });
    padded(obj, "data", seq, size)
}

#[derive(Deserialize)]
struct Written {
    metadata: WrittenMeta,
}

#[derive(Deserialize)]
struct WrittenMeta {
    #[serde(rename = "resourceVersion")]
    resource_version: String,
}

/// The resourceVersion of a write's answer.
fn written_rv(body: &[u8]) -> Result<u64, String> {
    let w: Written =
        serde_json::from_slice(body).map_err(|e| format!("the answer is not an object: {e}"))?;
    w.metadata
        .resource_version
        .parse()
        .map_err(|e| format!("resourceVersion {:?}: {e}", w.metadata.resource_version))
}

/// State shared by the writers, the lister and the sampler.
struct Shared {
    client: Client,
    opts: SoakOptions,
    /// The current interval's recorders, per verb.
    window: Mutex<BTreeMap<&'static str, Recorder>>,
    live: AtomicI64,
    /// Watch events read since the last sample.
    delivered: AtomicU64,
    errors: AtomicU64,
    error_samples: Mutex<Vec<String>>,
}

impl Shared {
    fn record(&self, verb: &'static str, latency: Duration, outcome: Outcome, why: Option<String>) {
        let mut w = self.window.lock().unwrap_or_else(|e| e.into_inner());
        w.entry(verb).or_default().record(latency, outcome);
        drop(w);
        if let Some(why) = why {
            self.fail(format!("{verb}: {why}"));
        }
    }

    fn fail(&self, why: String) {
        self.errors.fetch_add(1, Ordering::Relaxed);
        let mut s = self.error_samples.lock().unwrap_or_else(|e| e.into_inner());
        if s.len() < 5 {
            eprintln!("  {why}");
            s.push(why);
        }
    }

    /// Sends a write, times it, and returns the resourceVersion of its answer (when it
    /// has one) or `None` after recording the failure.
    async fn write(
        &self,
        verb: &'static str,
        method: Method,
        path: &str,
        content_type: Option<&str>,
        body: Bytes,
    ) -> Option<Option<u64>> {
        let t = Instant::now();
        let r = self
            .client
            .send(method.clone(), path, JSON, content_type, body)
            .await;
        let latency = t.elapsed();
        let (outcome, why) = judge(&r);
        if !outcome.is_ok() {
            self.record(verb, latency, outcome, why);
            return None;
        }
        if method == Method::DELETE {
            self.record(verb, latency, outcome, None);
            return Some(None);
        }
        let body = r.map(|r| r.body).unwrap_or_default();
        match written_rv(&body) {
            Ok(rv) => {
                self.record(verb, latency, outcome, None);
                Some(Some(rv))
            }
            Err(e) => {
                self.record(verb, latency, Outcome::Check, Some(e));
                None
            }
        }
    }
}

/// An object a writer owns.
struct Owned {
    name: String,
    shard: u64,
    rv: u64,
}

/// One writer: creates, updates, patches and deletes its own objects at its share of the
/// write rate until `stop`; returns what its acknowledged writes mean per shard.
async fn writer(shared: Arc<Shared>, w: usize, stop: Instant) -> Vec<Tally> {
    let o = &shared.opts;
    let mut tallies = vec![Tally::default(); o.shards as usize];
    let cap = (o.objects / o.writers.max(1) as u64).max(2) as usize;
    let per_writer = o.write_rate / o.writers.max(1) as f64;
    let mut pace = tokio::time::interval(Duration::from_secs_f64(1.0 / per_writer.max(1e-3)));
    pace.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut rng = Rng::new(0x50a4 + w as u64);
    let mut live: Vec<Owned> = Vec::new();
    let path = collection(NAMESPACE);
    let mut seq = 0u64;
    while Instant::now() < stop {
        pace.tick().await;
        seq += 1;
        let choice = if live.len() < cap / 2 {
            0
        } else if live.len() >= cap {
            4
        } else {
            rng.below(5)
        };
        if choice == 0 {
            let shard = rng.below(o.shards);
            let name = format!("s{shard:02}-w{w:03}-{seq:08}");
            let body = soak_object(&name, shard, seq, o.object_size, None);
            if let Some(Some(rv)) = shared
                .write("create", Method::POST, &path, Some(JSON), body)
                .await
            {
                tallies[shard as usize].add(identity("ADDED", &name, rv));
                live.push(Owned { name, shard, rv });
                shared.live.fetch_add(1, Ordering::Relaxed);
            }
            continue;
        }
        let idx = rng.below(live.len() as u64) as usize;
        let (name, shard) = (live[idx].name.clone(), live[idx].shard);
        let url = format!("{path}/{name}");
        let (verb, method, ct, body) = match choice {
            1 => (
                "update",
                Method::PUT,
                JSON,
                soak_object(&name, shard, seq, o.object_size, Some(live[idx].rv)),
            ),
            2 => (
                "merge patch",
                Method::PATCH,
                MERGE_PATCH,
                Bytes::from(json!({ "data": { "merged": seq.to_string() } }).to_string()),
            ),
            3 => (
                "strategic patch",
                Method::PATCH,
                STRATEGIC_MERGE_PATCH,
                Bytes::from(json!({ "data": { "strategic": seq.to_string() } }).to_string()),
            ),
            _ => ("delete", Method::DELETE, JSON, Bytes::new()),
        };
        let ct = (method != Method::DELETE).then_some(ct);
        let shard = shard as usize;
        match shared.write(verb, method.clone(), &url, ct, body).await {
            Some(Some(rv)) => {
                tallies[shard].add(identity("MODIFIED", &name, rv));
                live[idx].rv = rv;
            }
            Some(None) => {
                tallies[shard].add(identity("DELETED", &name, 0));
                live.swap_remove(idx);
                shared.live.fetch_sub(1, Ordering::Relaxed);
            }
            // Its state is unknown now (the failure fails the run): leave it alone.
            None => {
                live.swap_remove(idx);
                shared.live.fetch_sub(1, Ordering::Relaxed);
            }
        }
    }
    tallies
}

/// LISTs the namespace and one shard in turn at the list rate until `stop`.
async fn lister(shared: Arc<Shared>, stop: Instant) {
    let o = &shared.opts;
    if o.list_rate <= 0.0 {
        return;
    }
    let mut pace = tokio::time::interval(Duration::from_secs_f64(1.0 / o.list_rate));
    pace.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let path = collection(NAMESPACE);
    let mut i = 0u64;
    while Instant::now() < stop {
        pace.tick().await;
        let url = if i.is_multiple_of(2) {
            path.clone()
        } else {
            format!("{path}?labelSelector={SHARD_LABEL}%3D{}", i % o.shards)
        };
        i += 1;
        let t = Instant::now();
        let r = shared.client.get(&url).await;
        let latency = t.elapsed();
        let (outcome, why) = judge(&r);
        shared.record("list", latency, outcome, why);
    }
}

/// Which objects a watcher selects.
#[derive(Clone, Copy, Debug)]
enum Selection {
    All,
    Shard(u64),
}

/// What one watcher read.
struct Read {
    tally: Tally,
    problem: Option<String>,
}

/// The next chunk of `stream`, or an error once the deadline `deadline` says passed.
async fn next_chunk(
    stream: &mut Streaming,
    deadline: &mut tokio::sync::watch::Receiver<tokio::time::Instant>,
    cap: Option<tokio::time::Instant>,
) -> Result<Option<Bytes>, String> {
    loop {
        let d = cap.map_or(*deadline.borrow(), |c| c.min(*deadline.borrow()));
        tokio::select! {
            c = stream.chunk() => return match c {
                None => Ok(None),
                Some(Ok(b)) => Ok(Some(b)),
                Some(Err(e)) => Err(format!("reading the watch: {e:#}")),
            },
            _ = tokio::time::sleep_until(d) => return Err("timed out".into()),
            changed = deadline.changed() => {
                if changed.is_err() {
                    // The deadline can no longer move: wait for it as it is.
                    let d = *deadline.borrow();
                    return match tokio::time::timeout_at(d, stream.chunk()).await {
                        Err(_) => Err("timed out".into()),
                        Ok(None) => Ok(None),
                        Ok(Some(Ok(b))) => Ok(Some(b)),
                        Ok(Some(Err(e))) => Err(format!("reading the watch: {e:#}")),
                    };
                }
            }
        }
    }
}

/// One watcher: where it watches, and what ends its reading.
struct WatchPlan {
    /// The client of its connection (for re-watching).
    client: Client,
    /// Its watch URL without `resourceVersion`.
    url: String,
    /// The revision it starts from.
    from: u64,
    /// The name of its final marker.
    marker: String,
}

/// Reads one watch until its final marker and for [`AFTER_MARKER`] after it, tallying
/// every event and checking that resourceVersions rise strictly. When the server ends the
/// watch (its timeout) it watches again from the last resourceVersion it read, as
/// client-go's reflectors do.
async fn read_soak_watch(
    mut stream: Streaming,
    plan: WatchPlan,
    delivered: Arc<AtomicU64>,
    rewatches: Arc<AtomicU64>,
    mut deadline: tokio::sync::watch::Receiver<tokio::time::Instant>,
) -> Read {
    let mut read = Read {
        tally: Tally::default(),
        problem: None,
    };
    let marker = plan.marker;
    let mut last_rv = plan.from;
    let mut after: Option<tokio::time::Instant> = None;
    let mut buf: Vec<u8> = Vec::new();
    loop {
        let chunk = match next_chunk(&mut stream, &mut deadline, after).await {
            Ok(Some(c)) => c,
            // The quiet time after the marker passed: the expected end.
            Err(_) if after.is_some() => return read,
            Ok(None) if after.is_some() => return read,
            Ok(None) => {
                let url = format!("{}&resourceVersion={last_rv}", plan.url);
                match plan.client.stream(&url).await {
                    Ok(s) if s.status == 200 => {
                        rewatches.fetch_add(1, Ordering::Relaxed);
                        stream = s;
                        buf.clear();
                        continue;
                    }
                    Ok(s) => {
                        read.problem = Some(format!(
                            "watching again from {last_rv}: HTTP {} after {} events",
                            s.status, read.tally.count
                        ));
                    }
                    Err(e) => {
                        read.problem = Some(format!(
                            "watching again from {last_rv}: {e:#} after {} events",
                            read.tally.count
                        ));
                    }
                }
                return read;
            }
            Err(e) => {
                read.problem = Some(format!(
                    "{e} before the final marker after {} events",
                    read.tally.count
                ));
                return read;
            }
        };
        buf.extend_from_slice(&chunk);
        let mut start = 0;
        while let Some(pos) = buf[start..].iter().position(|&b| b == b'\n') {
            let line = &buf[start..start + pos];
            start += pos + 1;
            if line.is_empty() {
                continue;
            }
            let ev: WatchLine = match serde_json::from_slice(line) {
                Ok(ev) => ev,
                Err(e) => {
                    read.problem.get_or_insert(format!("bad watch line: {e}"));
                    continue;
                }
            };
            let kind = ev.kind.as_str();
            if !matches!(kind, "ADDED" | "MODIFIED" | "DELETED") {
                if kind == "ERROR" {
                    read.problem.get_or_insert(format!(
                        "ERROR event: {}",
                        ev.object.message.unwrap_or_default()
                    ));
                }
                continue;
            }
            delivered.fetch_add(1, Ordering::Relaxed);
            let meta = ev.object.metadata;
            if after.is_some() {
                read.problem.get_or_insert(format!(
                    "{kind} {} (resourceVersion {}) after the final marker",
                    meta.name, meta.resource_version
                ));
                continue;
            }
            let rv: u64 = match meta.resource_version.parse() {
                Ok(rv) => rv,
                Err(_) => {
                    read.problem.get_or_insert(format!(
                        "{kind} {} has resourceVersion {:?}",
                        meta.name, meta.resource_version
                    ));
                    continue;
                }
            };
            if rv <= last_rv {
                read.problem.get_or_insert(format!(
                    "{kind} {} at resourceVersion {rv} after {last_rv}: repeated or out of order",
                    meta.name
                ));
            }
            last_rv = last_rv.max(rv);
            let id_rv = if kind == "DELETED" { 0 } else { rv };
            read.tally.add(identity(kind, &meta.name, id_rv));
            if meta.name == marker {
                after = Some(tokio::time::Instant::now() + AFTER_MARKER);
            }
        }
        buf.drain(..start);
    }
}

fn marker_name(shard: u64) -> String {
    format!("soak-marker-{shard:02}")
}

/// Runs the soak: starts the server (and etcd), opens the watchers, writes for
/// `duration` while sampling, writes the final markers and checks the watchers.
pub async fn run(opts: &SoakOptions) -> Result<SoakReport> {
    if opts.shards == 0 || opts.writers == 0 || opts.write_rate <= 0.0 {
        bail!("--shards, --writers and --write-rate must be positive");
    }
    let root = opts.data_root.clone().unwrap_or_else(std::env::temp_dir);
    std::fs::create_dir_all(&root)?;
    let dir = tempfile::Builder::new()
        .prefix("loadgen-soak-")
        .tempdir_in(&root)
        .with_context(|| format!("making a temporary directory in {}", root.display()))?;
    let mut args = opts.server_args.clone();
    let etcd = match &opts.etcd_bin {
        Some(bin) => {
            let etcd = Etcd::builder().binary(bin).dir_in(dir.path()).try_start()?;
            args.push(format!("--etcd-servers={}", etcd.endpoint()));
            args.push("--etcd-prefix=/soak-{unique}".into());
            Some(etcd)
        }
        None => None,
    };
    let data = dir.path().join("server");
    let server = ServerProcess::start(&opts.server_bin, &data, &args).await?;
    let result = soak(opts, &server, etcd.as_ref().and_then(Etcd::pid)).await;
    if !matches!(&result, Ok(r) if r.failures() == 0) {
        eprintln!("server log tail:\n{}", server.log_tail());
    }
    server.stop().await;
    let mut report = result?;
    let backend = match &opts.etcd_bin {
        Some(bin) => format!("an etcd it started ({})", bin.display()),
        None => "the embedded store".into(),
    };
    let proto = match opts.protocol {
        Protocol::Http2 => "HTTP/2",
        Protocol::Http1 => "HTTP/1.1 pool",
    };
    report.description = format!(
        "server {} on {backend} ({proto}): {} min of {} writes/s from {} writers \
         (create, update, merge and strategic patch, delete of ~{} B ConfigMaps, about {} live), \
         {} LIST/s, {} watchers ({} per connection; one in {ALL_EVERY} the whole namespace, the \
         others one of {} label shards); a sample every {:.0} s",
        opts.server_bin.display(),
        num(opts.duration.as_secs_f64() / 60.0),
        opts.write_rate,
        opts.writers,
        opts.object_size,
        opts.objects,
        opts.list_rate,
        opts.watchers,
        opts.watchers_per_connection,
        opts.shards,
        opts.interval.as_secs_f64()
    );
    Ok(report)
}

async fn soak(
    opts: &SoakOptions,
    server: &ServerProcess,
    etcd_pid: Option<u32>,
) -> Result<SoakReport> {
    let pid = server.pid().context("the server's pid")?;
    let client = Client::new(server.target.clone(), opts.protocol, opts.request_timeout)?;
    scenarios::create_namespace(&client, NAMESPACE).await?;
    let rv0: u64 = scenarios::collection_revision(&client, NAMESPACE)
        .await?
        .parse()
        .context("the namespace's resourceVersion")?;
    let mut report = SoakReport {
        rss_growth: opts.rss_growth,
        load: (load_average(), None),
        ..SoakReport::default()
    };

    // The watchers, open before the first write, `watchers_per_connection` to a
    // connection. Each asks for a timeout as client-go's reflectors do (5 to 10 minutes),
    // so the run also covers watches ending and resuming.
    let mut rng = Rng::new(0x3a7c);
    let plans: Vec<(Selection, WatchPlan)> = (0..opts.watchers)
        .map(|i| {
            let sel = if i % ALL_EVERY == 0 {
                Selection::All
            } else {
                Selection::Shard(i as u64 % opts.shards)
            };
            let timeout = 300 + rng.below(300);
            let mut url = format!(
                "{}?watch=true&timeoutSeconds={timeout}",
                collection(NAMESPACE)
            );
            let marker = match sel {
                Selection::All => marker_name(opts.shards - 1),
                Selection::Shard(k) => {
                    let _ = write!(url, "&labelSelector={SHARD_LABEL}%3D{k}");
                    marker_name(k)
                }
            };
            let plan = WatchPlan {
                client: client.clone(),
                url,
                from: rv0,
                marker,
            };
            (sel, plan)
        })
        .collect();
    eprintln!("opening {} watches", opts.watchers);
    let per = match opts.watchers_per_connection {
        0 => opts.watchers.max(1),
        k => k,
    };
    let mut opened: Vec<(Selection, WatchPlan, Streaming)> = Vec::new();
    let mut plans = plans.into_iter().peekable();
    while plans.peek().is_some() {
        let conn = client.separate();
        let group: Vec<(Selection, WatchPlan)> = plans.by_ref().take(per).collect();
        let urls = group
            .iter()
            .map(|(_, p)| format!("{}&resourceVersion={}", p.url, p.from))
            .collect();
        let streams = scenarios::open_watch_urls(&conn, urls, 0).await?;
        for ((sel, mut plan), stream) in group.into_iter().zip(streams) {
            plan.client = conn.clone();
            opened.push((sel, plan, stream));
        }
    }
    let selections: Vec<Selection> = opened.iter().map(|(s, _, _)| *s).collect();
    let delivered = Arc::new(AtomicU64::new(0));
    let rewatches = Arc::new(AtomicU64::new(0));
    let far = tokio::time::Instant::now() + Duration::from_secs(365 * 24 * 3600);
    let (deadline_tx, deadline_rx) = tokio::sync::watch::channel(far);
    let mut readers = JoinSet::new();
    for (i, (_, plan, stream)) in opened.into_iter().enumerate() {
        let (delivered, rewatches, rx) =
            (delivered.clone(), rewatches.clone(), deadline_rx.clone());
        readers.spawn(async move {
            (
                i,
                read_soak_watch(stream, plan, delivered, rewatches, rx).await,
            )
        });
    }

    let shared = Arc::new(Shared {
        client: client.clone(),
        opts: opts.clone(),
        window: Mutex::new(BTreeMap::new()),
        live: AtomicI64::new(0),
        delivered: AtomicU64::new(0),
        errors: AtomicU64::new(0),
        error_samples: Mutex::new(Vec::new()),
    });
    let started = Instant::now();
    let stop = started + opts.duration;
    let mut writers = JoinSet::new();
    for w in 0..opts.writers {
        writers.spawn(writer(shared.clone(), w, stop));
    }
    let list_task = tokio::spawn(lister(shared.clone(), stop));

    // Samples, one per interval until the writers stop.
    let intervals = (opts.duration.as_secs_f64() / opts.interval.as_secs_f64()).ceil() as u32;
    let mut tick =
        tokio::time::interval_at(tokio::time::Instant::now() + opts.interval, opts.interval);
    let mut cpu_before = cpu_time(pid)?;
    let mut at_before = Instant::now();
    for i in 1..=intervals {
        tick.tick().await;
        let now = Instant::now();
        let window = std::mem::take(&mut *shared.window.lock().unwrap_or_else(|e| e.into_inner()));
        let events = delivered.swap(0, Ordering::Relaxed);
        shared.delivered.fetch_add(events, Ordering::Relaxed);
        let (rss, fds, cpu) = match (rss_of(pid), open_fds(pid), cpu_time(pid)) {
            (Ok(r), Ok(f), Ok(c)) => (r, f, c),
            (r, f, c) => {
                let why = [r.err(), f.err(), c.err()]
                    .into_iter()
                    .flatten()
                    .map(|e| format!("{e:#}"))
                    .collect::<Vec<_>>()
                    .join("; ");
                bail!(
                    "the server is gone at sample {i}: {why}\n{}",
                    server.log_tail()
                );
            }
        };
        let elapsed = now - at_before;
        let sample = Sample {
            at: now - started,
            rss,
            fds,
            cpu_percent: 100.0 * (cpu - cpu_before).as_secs_f64() / elapsed.as_secs_f64(),
            etcd_rss: etcd_pid.and_then(|p| rss_of(p).ok()),
            load: load_average(),
            live: shared.live.load(Ordering::Relaxed),
            verbs: window
                .iter()
                .map(|(v, rec)| (*v, rec.row(v, 1, rec.count(), elapsed)))
                .collect(),
            watch_events: events,
        };
        (cpu_before, at_before) = (cpu, now);
        eprintln!(
            "  {:>5.1} min: RSS {:.1} MiB, {} fds, CPU {:.0}%, {} live, {} writes, {} watch events, p99 {}",
            sample.at.as_secs_f64() / 60.0,
            rss as f64 / MIB,
            fds,
            sample.cpu_percent,
            sample.live,
            sample.writes(),
            events,
            VERBS
                .iter()
                .filter_map(|v| sample.verbs.get(v).map(|r| format!("{v} {} ms", num(r.p99_ms))))
                .collect::<Vec<_>>()
                .join(", ")
        );
        report.samples.push(sample);
    }

    // The writers' acknowledged writes, then one marker per shard after all of them.
    let mut tallies = vec![Tally::default(); opts.shards as usize];
    while let Some(r) = writers.join_next().await {
        match r {
            Ok(t) => tallies.iter_mut().zip(&t).for_each(|(a, b)| a.merge(b)),
            Err(e) => shared.fail(format!("a writer failed: {e}")),
        }
    }
    if let Err(e) = list_task.await {
        shared.fail(format!("the lister failed: {e}"));
    }
    let path = collection(NAMESPACE);
    for k in 0..opts.shards {
        let name = marker_name(k);
        let body = soak_object(&name, k, 0, 64, None);
        match shared
            .write("create", Method::POST, &path, Some(JSON), body)
            .await
        {
            Some(Some(rv)) => tallies[k as usize].add(identity("ADDED", &name, rv)),
            _ => shared.fail(format!("creating the final marker {name} failed")),
        }
    }
    let _ = deadline_tx.send(tokio::time::Instant::now() + opts.watch_grace);
    let all = tallies.iter().fold(Tally::default(), |mut a, t| {
        a.merge(t);
        a
    });
    let mut check = WatchCheck {
        watchers: opts.watchers,
        ..WatchCheck::default()
    };
    while let Some(r) = readers.join_next().await {
        let (i, read) = match r {
            Ok(x) => x,
            Err(e) => {
                check.samples.push(format!("a watcher task failed: {e}"));
                continue;
            }
        };
        let want = match selections[i] {
            Selection::All => all,
            Selection::Shard(k) => tallies[k as usize],
        };
        check.delivered += read.tally.count;
        check.expected += want.count;
        let problem = read.problem.or_else(|| {
            (read.tally != want).then(|| {
                format!(
                    "read {} events, the acknowledged writes mean {}{}",
                    read.tally.count,
                    want.count,
                    if read.tally.count == want.count {
                        " (same count, other events)"
                    } else {
                        ""
                    }
                )
            })
        });
        match problem {
            None => check.exact += 1,
            Some(p) if check.samples.len() < 5 => {
                let sel = match selections[i] {
                    Selection::All => "whole namespace".to_string(),
                    Selection::Shard(k) => format!("shard {k}"),
                };
                check.samples.push(format!("watcher {i} ({sel}): {p}"));
            }
            Some(_) => {}
        }
    }
    drop(deadline_tx);
    check.rewatches = rewatches.load(Ordering::Relaxed);
    report.watch = check;
    report.load.1 = load_average();
    let rss: Vec<f64> = report.samples.iter().map(|s| s.rss as f64).collect();
    let fds: Vec<f64> = report.samples.iter().map(|s| s.fds as f64).collect();
    report.rss = growth(&rss, opts.rss_growth, 0.0);
    // A few descriptors come and go with the lister's and the writers' connections.
    report.fds = growth(&fds, opts.rss_growth, 8.0);
    report.errors = shared.errors.load(Ordering::Relaxed);
    report.error_samples = shared
        .error_samples
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .clone();
    Ok(report)
}

/// Open file descriptors of process `pid` (entries of `/proc/<pid>/fd`).
pub fn open_fds(pid: u32) -> Result<u64> {
    let dir = format!("/proc/{pid}/fd");
    Ok(std::fs::read_dir(&dir)
        .with_context(|| format!("reading {dir}"))?
        .count() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn growth_passes_a_plateau_and_fails_a_leak_or_a_climb() {
        let plateau = [50.0, 80.0, 100.0, 101.0, 99.0, 102.0, 100.0, 101.0, 100.0];
        assert!(growth(&plateau, 0.10, 0.0).unwrap().ok);
        let leak = [50.0, 80.0, 100.0, 110.0, 120.0, 130.0, 140.0, 150.0, 160.0];
        let g = growth(&leak, 0.10, 0.0).unwrap();
        assert!(!g.ok && g.climbing, "{g:?}");
        // Within 10% on the means, yet rising at every sample by more than 5%.
        let climb = [50.0, 80.0, 100.0, 100.0, 100.0, 100.0, 100.0, 103.0, 106.0];
        let g = growth(&climb, 0.10, 0.0).unwrap();
        assert!(!g.ok && g.climbing, "{g:?}");
        // Flat with one small step up (allocator noise) is not a climb.
        let step = [50.0, 80.0, 100.0, 100.0, 100.0, 100.0, 100.0, 101.0, 101.0];
        assert!(growth(&step, 0.10, 0.0).unwrap().ok);
        assert_eq!(growth(&plateau[..5], 0.10, 0.0), None);
    }

    #[test]
    fn a_missing_or_repeated_event_changes_the_tally() {
        let ids = [
            identity("ADDED", "a", 5),
            identity("MODIFIED", "a", 6),
            identity("DELETED", "a", 0),
        ];
        let mut all = Tally::default();
        ids.iter().for_each(|&i| all.add(i));
        let mut missing = Tally::default();
        missing.add(ids[0]);
        missing.add(ids[2]);
        assert_ne!(all, missing);
        let mut repeated = missing;
        repeated.add(ids[0]);
        assert_eq!(repeated.count, all.count);
        assert_ne!(repeated, all);
        assert_ne!(identity("ADDED", "a", 6), identity("MODIFIED", "a", 6));
    }
}
