//! The scenarios: each drives one kind of traffic against a namespace of ConfigMaps (or,
//! for create, get and list, any collection: [`Objects`]) and returns a table [`Row`].

use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context, Result};
use bytes::Bytes;
use http::Method;
use serde::de::IgnoredAny;
use serde::Deserialize;
use serde_json::json;
use tokio::task::JoinSet;

use crate::client::{Client, Response, Streaming, JSON, MERGE_PATCH, TABLE};
use crate::metrics::{Outcome, Recorder, Row};

/// Sizes and limits of the scenarios.
#[derive(Clone, Debug)]
pub struct Settings {
    /// ConfigMaps created per create run (and the working set of the other scenarios).
    pub count: u64,
    /// Concurrency levels of create, get, update and patch.
    pub concurrency: Vec<usize>,
    /// How long each time-bound scenario (get, update, patch, list) runs at most.
    pub duration: Duration,
    /// At most this many requests per list scenario.
    pub list_requests: u64,
    /// Page size of the paginated list walk.
    pub page_limit: usize,
    /// Watcher counts of the fan-out scenario.
    pub watchers: Vec<usize>,
    /// Writes each fan-out scenario makes (every watcher must see each).
    pub watch_events: u64,
    /// Write rates of the fan-out scenario, per second; 0 = one after another.
    pub watch_rates: Vec<f64>,
    /// Watches per HTTP/2 connection (0 = all on the one connection of the client).
    pub watchers_per_connection: usize,
    /// Approximate size of a ConfigMap's JSON, bytes.
    pub object_size: usize,
    /// How long a scenario waits for watchers to catch up after the last write.
    pub watch_grace: Duration,
    /// How long a create or delete-all level may run before it stops short of `count`.
    pub write_time: Duration,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            count: 10_000,
            concurrency: vec![1, 8, 32],
            duration: Duration::from_secs(5),
            list_requests: 20,
            page_limit: 500,
            watchers: vec![100, 1000, 10_000],
            watch_events: 100,
            watch_rates: vec![0.0, 100.0],
            watchers_per_connection: 100,
            object_size: 1024,
            watch_grace: Duration::from_secs(30),
            write_time: Duration::from_secs(600),
        }
    }
}

/// A small, fast pseudo-random generator (splitmix64); benchmarks need spread, not
/// cryptographic quality.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    /// A generator from `seed`.
    pub fn new(seed: u64) -> Self {
        Rng(seed)
    }

    /// The next value in `0..n` (`n > 0`).
    pub fn below(&mut self, n: u64) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        (z ^ (z >> 31)) % n.max(1)
    }
}

/// Name of the `i`th benchmark ConfigMap.
pub fn object_name(i: u64) -> String {
    format!("cm-{i:07}")
}

/// Path of a namespace's ConfigMap collection.
pub fn collection(ns: &str) -> String {
    format!("/api/v1/namespaces/{ns}/configmaps")
}

/// The JSON of ConfigMap `name` padded to about `size` bytes.
pub fn configmap(name: &str, i: u64, size: usize) -> Bytes {
    let obj = json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": { "name": name, "labels": { "app": "loadgen", "shard": (i % 16).to_string() } },
        "data": { "payload": "" },
    });
    padded(obj, "data", i, size)
}

/// `obj` with the string `obj[field]["payload"]` grown until its JSON is about `size`
/// bytes, so that objects of different kinds can be compared at the same size.
pub fn padded(mut obj: serde_json::Value, field: &str, i: u64, size: usize) -> Bytes {
    let base = serde_json::to_vec(&obj).map(|v| v.len()).unwrap_or(0);
    let pad = size.saturating_sub(base);
    let text: String = (0..pad)
        .map(|k| char::from(b'a' + ((k as u64 + i) % 26) as u8))
        .collect();
    obj[field]["payload"] = json!(text);
    Bytes::from(serde_json::to_vec(&obj).unwrap_or_default())
}

/// Builds the JSON of object `name`, the `i`th, of about `size` bytes.
pub type BodyFn = Arc<dyn Fn(&str, u64, usize) -> Bytes + Send + Sync>;

/// What the create, get and list scenarios work on: a collection and how to build its
/// objects. The ConfigMap one is what the suite uses; `loadgen crds` passes a custom kind.
#[derive(Clone)]
pub struct Objects {
    /// The kind, for scenario names (`ConfigMap`).
    pub kind: String,
    /// The collection's path.
    pub collection: String,
    /// The objects' JSON.
    pub body: BodyFn,
}

impl Objects {
    /// ConfigMaps of namespace `ns`.
    pub fn configmaps(ns: &str) -> Objects {
        Objects {
            kind: "ConfigMap".into(),
            collection: collection(ns),
            body: Arc::new(configmap),
        }
    }
}

/// How a request ended, with a description when it failed.
pub(crate) fn judge(r: &Result<Response>) -> (Outcome, Option<String>) {
    match r {
        Ok(resp) if (200..300).contains(&resp.status) => (Outcome::Status(resp.status), None),
        Ok(resp) => (
            Outcome::Status(resp.status),
            Some(format!(
                "HTTP {}: {}",
                resp.status,
                String::from_utf8_lossy(&resp.body[..resp.body.len().min(300)])
            )),
        ),
        Err(e) => (Outcome::Transport, Some(format!("{e:#}"))),
    }
}

/// Runs `op(i)` for `i = 0, 1, ...` on `concurrency` workers until `max_ops` operations
/// were started or `max_time` passed; returns what was recorded and the wall time.
/// Each operation's latency is its whole duration.
pub async fn drive<F, Fut>(
    concurrency: usize,
    max_ops: u64,
    max_time: Duration,
    op: F,
) -> (Recorder, Duration)
where
    F: Fn(u64) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = (Outcome, Option<String>)> + Send + 'static,
{
    let op = Arc::new(op);
    drive_timed(concurrency, max_ops, max_time, move |i| {
        let op = op.clone();
        async move {
            let t = Instant::now();
            let (outcome, why) = op(i).await;
            (outcome, why, t.elapsed())
        }
    })
    .await
}

/// As [`drive`], with each operation reporting its own latency (so that client-side
/// work such as checking a response is left out of it).
pub async fn drive_timed<F, Fut>(
    concurrency: usize,
    max_ops: u64,
    max_time: Duration,
    op: F,
) -> (Recorder, Duration)
where
    F: Fn(u64) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = (Outcome, Option<String>, Duration)> + Send + 'static,
{
    let op = Arc::new(op);
    let next = Arc::new(AtomicU64::new(0));
    let started = Instant::now();
    let mut workers = JoinSet::new();
    for _ in 0..concurrency.max(1) {
        let (op, next) = (op.clone(), next.clone());
        workers.spawn(async move {
            let mut rec = Recorder::default();
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= max_ops || started.elapsed() >= max_time {
                    break;
                }
                let (outcome, why, latency) = op(i).await;
                rec.record(latency, outcome);
                if let Some(why) = why {
                    rec.note_error(why);
                }
            }
            rec
        });
    }
    let mut total = Recorder::default();
    while let Some(r) = workers.join_next().await {
        match r {
            Ok(rec) => total.merge(&rec),
            Err(e) => total.fail(Outcome::Check, 1, format!("worker panicked: {e}")),
        }
    }
    (total, started.elapsed())
}

/// Logs a few failures of a scenario to stderr.
fn report_samples(scenario: &str, rec: &Recorder) {
    for s in &rec.samples {
        eprintln!("  {scenario}: {s}");
    }
}

/// Creates namespace `ns` (an existing one is fine).
pub async fn create_namespace(client: &Client, ns: &str) -> Result<()> {
    let body = json!({ "apiVersion": "v1", "kind": "Namespace", "metadata": { "name": ns } });
    let r = client
        .send(
            Method::POST,
            "/api/v1/namespaces",
            JSON,
            Some(JSON),
            Bytes::from(body.to_string()),
        )
        .await?;
    if r.status != 201 && r.status != 409 {
        bail!(
            "creating namespace {ns}: HTTP {}: {}",
            r.status,
            String::from_utf8_lossy(&r.body)
        );
    }
    Ok(())
}

/// Deletes namespace `ns` (and so its contents); a missing one is fine.
pub async fn delete_namespace(client: &Client, ns: &str) -> Result<()> {
    let r = client
        .send(
            Method::DELETE,
            &format!("/api/v1/namespaces/{ns}"),
            JSON,
            None,
            Bytes::new(),
        )
        .await?;
    if !(200..300).contains(&r.status) && r.status != 404 {
        bail!("deleting namespace {ns}: HTTP {}", r.status);
    }
    Ok(())
}

/// POSTs ConfigMaps `0..count` of about `size` bytes into `ns` at `concurrency`, for at
/// most `max_time` (the row's `ops` says how many were sent).
pub async fn create(
    client: &Client,
    ns: &str,
    count: u64,
    concurrency: usize,
    size: usize,
    max_time: Duration,
) -> Row {
    let objects = Objects::configmaps(ns);
    create_objects(client, &objects, count, concurrency, size, max_time).await
}

/// As [`create`], for any [`Objects`].
pub async fn create_objects(
    client: &Client,
    objects: &Objects,
    count: u64,
    concurrency: usize,
    size: usize,
    max_time: Duration,
) -> Row {
    let scenario = format!("create {} (~{} B)", objects.kind, size);
    let (c, path, make) = (
        client.clone(),
        objects.collection.clone(),
        objects.body.clone(),
    );
    let (rec, elapsed) = drive(concurrency, count, max_time, move |i| {
        let (c, path, make) = (c.clone(), path.clone(), make.clone());
        async move {
            let body = make(&object_name(i), i, size);
            judge(&c.send(Method::POST, &path, JSON, Some(JSON), body).await)
        }
    })
    .await;
    report_samples(&scenario, &rec);
    rec.row(&scenario, concurrency, rec.count(), elapsed)
}

/// GETs random objects of the first `count` in `ns` for `duration`.
pub async fn get(
    client: &Client,
    ns: &str,
    count: u64,
    concurrency: usize,
    duration: Duration,
) -> Row {
    get_objects(
        client,
        &Objects::configmaps(ns),
        count,
        concurrency,
        duration,
    )
    .await
}

/// As [`get`], for any [`Objects`].
pub async fn get_objects(
    client: &Client,
    objects: &Objects,
    count: u64,
    concurrency: usize,
    duration: Duration,
) -> Row {
    let scenario = format!("get random {}", objects.kind);
    let (c, path) = (client.clone(), objects.collection.clone());
    let (rec, elapsed) = drive(concurrency, u64::MAX, duration, move |i| {
        let (c, path) = (c.clone(), path.clone());
        async move {
            let n = Rng::new(i).below(count);
            judge(&c.get(&format!("{path}/{}", object_name(n))).await)
        }
    })
    .await;
    report_samples(&scenario, &rec);
    rec.row(&scenario, concurrency, rec.count(), elapsed)
}

#[derive(Deserialize)]
struct ListBody {
    #[serde(default)]
    items: Vec<IgnoredAny>,
    #[serde(default)]
    rows: Vec<IgnoredAny>,
    #[serde(default)]
    metadata: ListMeta,
}

#[derive(Default, Deserialize)]
struct ListMeta {
    #[serde(default, rename = "continue")]
    continue_token: Option<String>,
    #[serde(default, rename = "resourceVersion")]
    resource_version: Option<String>,
}

fn parse_list(body: &[u8]) -> Result<ListBody> {
    serde_json::from_slice(body).context("the list answer is not a JSON list")
}

/// Which list scenario to run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ListKind {
    /// The whole namespace as a JSON `ConfigMapList`.
    Json,
    /// The whole namespace as a `meta.k8s.io/v1` Table.
    Table,
    /// A walk through the namespace in pages of `limit` (one op = the whole walk).
    Paginated(usize),
}

/// Lists all `count` objects of `ns` repeatedly (at most `requests` times or `duration`),
/// checking that every object is there.
pub async fn list(
    client: &Client,
    ns: &str,
    count: u64,
    kind: ListKind,
    concurrency: usize,
    requests: u64,
    duration: Duration,
) -> Row {
    let path = collection(ns);
    list_objects(client, &path, count, kind, concurrency, requests, duration).await
}

/// As [`list`], for the collection at `path` (of any kind).
pub async fn list_objects(
    client: &Client,
    path: &str,
    count: u64,
    kind: ListKind,
    concurrency: usize,
    requests: u64,
    duration: Duration,
) -> Row {
    let scenario = match kind {
        ListKind::Json => format!("list {count} (JSON)"),
        ListKind::Table => format!("list {count} (Table)"),
        ListKind::Paginated(l) => format!("list {count} paginated limit={l} (whole walk)"),
    };
    let (c, path) = (client.clone(), path.to_string());
    let (rec, elapsed) = drive_timed(concurrency, requests, duration, move |_| {
        let (c, path) = (c.clone(), path.clone());
        async move {
            // Latency: request sent to body received, summed over the pages; checking
            // the answers (a JSON parse here) is left out.
            let mut latency = Duration::ZERO;
            let (accept, page) = match kind {
                ListKind::Json => (JSON, None),
                ListKind::Table => (TABLE, None),
                ListKind::Paginated(l) => (JSON, Some(l)),
            };
            let mut seen = 0u64;
            let mut token: Option<String> = None;
            // Bounded: a walk never takes more pages than the objects warrant.
            let max_pages = page.map_or(1, |l| count / l.max(1) as u64 + 2);
            for _ in 0..max_pages {
                let url = match (page, &token) {
                    (None, _) => path.clone(),
                    (Some(l), None) => format!("{path}?limit={l}"),
                    (Some(l), Some(t)) => format!("{path}?limit={l}&continue={t}"),
                };
                let t = Instant::now();
                let r = c.send(Method::GET, &url, accept, None, Bytes::new()).await;
                latency += t.elapsed();
                let (outcome, why) = judge(&r);
                let Ok(resp) = r.as_ref() else {
                    return (outcome, why, latency);
                };
                if !outcome.is_ok() {
                    return (outcome, why, latency);
                }
                let body = match parse_list(&resp.body) {
                    Ok(b) => b,
                    Err(e) => return (Outcome::Check, Some(format!("{e:#}")), latency),
                };
                seen += match kind {
                    ListKind::Table => body.rows.len(),
                    _ => body.items.len(),
                } as u64;
                token = body.metadata.continue_token.filter(|t| !t.is_empty());
                if token.is_none() {
                    break;
                }
            }
            if seen != count || token.is_some() {
                let why = format!("listed {seen} objects, expected {count}");
                return (Outcome::Check, Some(why), latency);
            }
            (Outcome::Status(200), None, latency)
        }
    })
    .await;
    report_samples(&scenario, &rec);
    rec.row(&scenario, concurrency, rec.count(), elapsed)
}

/// Read-modify-write: GET an object, change its data, PUT it back with the
/// resourceVersion read (one op = GET + PUT). Objects are spread so that no two
/// workers write the same object at once.
pub async fn update(
    client: &Client,
    ns: &str,
    count: u64,
    concurrency: usize,
    duration: Duration,
) -> Row {
    let scenario = "update (GET + PUT with resourceVersion)";
    let (c, path) = (client.clone(), collection(ns));
    let (rec, elapsed) = drive(concurrency, count, duration, move |i| {
        let (c, path) = (c.clone(), path.clone());
        async move {
            let url = format!("{path}/{}", object_name(i % count));
            let r = c.get(&url).await;
            let (outcome, why) = judge(&r);
            let Ok(resp) = r else { return (outcome, why) };
            if !outcome.is_ok() {
                return (outcome, why);
            }
            let mut obj: serde_json::Value = match serde_json::from_slice(&resp.body) {
                Ok(v) => v,
                Err(e) => return (Outcome::Check, Some(format!("GET answer: {e}"))),
            };
            if obj["metadata"]["resourceVersion"].as_str().is_none() {
                return (
                    Outcome::Check,
                    Some("GET answer has no resourceVersion".into()),
                );
            }
            obj["data"]["updated"] = json!(i.to_string());
            let body = Bytes::from(obj.to_string());
            judge(&c.send(Method::PUT, &url, JSON, Some(JSON), body).await)
        }
    })
    .await;
    report_samples(scenario, &rec);
    rec.row(scenario, concurrency, rec.count(), elapsed)
}

/// JSON merge patches of one data key.
pub async fn merge_patch(
    client: &Client,
    ns: &str,
    count: u64,
    concurrency: usize,
    duration: Duration,
) -> Row {
    let scenario = "merge patch";
    let (c, path) = (client.clone(), collection(ns));
    let (rec, elapsed) = drive(concurrency, count, duration, move |i| {
        let (c, path) = (c.clone(), path.clone());
        async move {
            let url = format!("{path}/{}", object_name(i % count));
            let body = Bytes::from(json!({ "data": { "patched": i.to_string() } }).to_string());
            judge(
                &c.send(Method::PATCH, &url, JSON, Some(MERGE_PATCH), body)
                    .await,
            )
        }
    })
    .await;
    report_samples(scenario, &rec);
    rec.row(scenario, concurrency, rec.count(), elapsed)
}

/// DELETEs objects `0..count` of `ns` one by one at `concurrency`, for at most `max_time`.
pub async fn delete_each(
    client: &Client,
    ns: &str,
    count: u64,
    concurrency: usize,
    max_time: Duration,
) -> Row {
    let scenario = "delete one by one";
    let (c, path) = (client.clone(), collection(ns));
    let (rec, elapsed) = drive(concurrency, count, max_time, move |i| {
        let (c, path) = (c.clone(), path.clone());
        async move {
            let url = format!("{path}/{}", object_name(i));
            judge(&c.send(Method::DELETE, &url, JSON, None, Bytes::new()).await)
        }
    })
    .await;
    report_samples(scenario, &rec);
    rec.row(scenario, concurrency, rec.count(), elapsed)
}

/// One DELETE of the whole collection of `count` objects; throughput is objects/s.
pub async fn delete_collection(client: &Client, ns: &str, count: u64) -> Row {
    let scenario = format!("deletecollection {count} (objects/s)");
    let started = Instant::now();
    let r = client
        .send(Method::DELETE, &collection(ns), JSON, None, Bytes::new())
        .await;
    let elapsed = started.elapsed();
    let mut rec = Recorder::default();
    let (mut outcome, mut why) = judge(&r);
    if let (true, Ok(resp)) = (outcome.is_ok(), &r) {
        match parse_list(&resp.body) {
            Ok(b) if b.items.len() as u64 == count => {}
            Ok(b) => {
                outcome = Outcome::Check;
                why = Some(format!(
                    "deleted {} objects, expected {count}",
                    b.items.len()
                ));
            }
            Err(e) => {
                outcome = Outcome::Check;
                why = Some(format!("{e:#}"));
            }
        }
    }
    rec.record(elapsed, outcome);
    if let Some(w) = why {
        rec.note_error(w);
    }
    report_samples(&scenario, &rec);
    rec.row(&scenario, 1, count, elapsed)
}

/// The collection's current resourceVersion (from a one-item list).
pub async fn collection_revision(client: &Client, ns: &str) -> Result<String> {
    list_revision(client, &collection(ns)).await
}

/// The current resourceVersion of the collection at `path` (from a one-item list).
pub async fn list_revision(client: &Client, path: &str) -> Result<String> {
    let r = client.get(&format!("{path}?limit=1")).await?;
    if r.status != 200 {
        bail!("listing {path}: HTTP {}", r.status);
    }
    parse_list(&r.body)?
        .metadata
        .resource_version
        .ok_or_else(|| anyhow!("the list of {path} has no resourceVersion"))
}

/// Opens `n` watches of `ns`'s ConfigMaps from `rv`, `per_connection` to a connection
/// (0: all on `client`'s), at most 64 opening at once; returns them once every one has
/// its response headers.
pub async fn open_watches(
    client: &Client,
    ns: &str,
    rv: &str,
    n: usize,
    per_connection: usize,
) -> Result<Vec<Streaming>> {
    let url = format!(
        "{}?watch=true&resourceVersion={rv}&timeoutSeconds=600",
        collection(ns)
    );
    open_watch_urls(client, vec![url; n], per_connection).await
}

/// Opens one watch per URL of `urls`, `per_connection` to a connection (0: all on
/// `client`'s), at most 64 opening at once; returns them in the order of `urls` once every
/// one has its response headers.
pub async fn open_watch_urls(
    client: &Client,
    urls: Vec<String>,
    per_connection: usize,
) -> Result<Vec<Streaming>> {
    let n = urls.len();
    let clients: Vec<Client> = match per_connection {
        0 => vec![client.clone()],
        k => (0..n.div_ceil(k)).map(|_| client.separate()).collect(),
    };
    let gate = Arc::new(tokio::sync::Semaphore::new(64));
    let mut set = JoinSet::new();
    for (i, url) in urls.into_iter().enumerate() {
        let c = clients[i.checked_div(per_connection).unwrap_or(0)].clone();
        let gate = gate.clone();
        set.spawn(async move {
            let _permit = gate.acquire_owned().await;
            (i, c.stream(&url).await)
        });
    }
    let mut streams: Vec<Option<Streaming>> = (0..n).map(|_| None).collect();
    while let Some(r) = set.join_next().await {
        let (i, s) = r.map_err(|e| anyhow!("opening a watch: {e}"))?;
        let s = s.with_context(|| format!("opening watch {i}"))?;
        if s.status != 200 {
            bail!("watch {i}: HTTP {}", s.status);
        }
        streams[i] = Some(s);
    }
    Ok(streams.into_iter().flatten().collect())
}

/// One line of a JSON watch stream, as far as the load generator reads it.
#[derive(Deserialize)]
pub(crate) struct WatchLine {
    #[serde(rename = "type")]
    pub kind: String,
    pub object: WatchObject,
}

/// A watch event's object: its metadata, or an ERROR event's Status message.
#[derive(Deserialize)]
pub(crate) struct WatchObject {
    #[serde(default)]
    pub metadata: WatchMeta,
    #[serde(default)]
    pub message: Option<String>,
}

/// The metadata fields the load generator checks (empty when absent).
#[derive(Default, Deserialize)]
pub(crate) struct WatchMeta {
    #[serde(default)]
    pub name: String,
    #[serde(default, rename = "resourceVersion")]
    pub resource_version: String,
}

/// What one watcher saw: when each expected event arrived, and what went wrong.
struct Seen {
    receipts: Vec<Option<Instant>>,
    problem: Option<String>,
}

/// Reads a watch until it has seen ADDED for every `ev-<i>`, `i < events`, or `deadline`.
async fn read_watch(mut stream: Streaming, events: u64, deadline: tokio::time::Instant) -> Seen {
    let mut seen = Seen {
        receipts: vec![None; events as usize],
        problem: None,
    };
    let mut missing = events;
    let mut buf: Vec<u8> = Vec::new();
    while missing > 0 {
        let chunk = match tokio::time::timeout_at(deadline, stream.chunk()).await {
            Err(_) => {
                seen.problem = Some(format!("timed out with {missing} events missing"));
                break;
            }
            Ok(None) => {
                seen.problem = Some(format!("the watch ended with {missing} events missing"));
                break;
            }
            Ok(Some(Err(e))) => {
                seen.problem = Some(format!("reading the watch: {e:#}"));
                break;
            }
            Ok(Some(Ok(c))) => c,
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
            let ev: WatchLine = match serde_json::from_slice(line) {
                Ok(ev) => ev,
                Err(e) => {
                    seen.problem = Some(format!("bad watch line: {e}"));
                    continue;
                }
            };
            match ev.kind.as_str() {
                "ADDED" => {
                    let idx = ev
                        .object
                        .metadata
                        .name
                        .strip_prefix("ev-")
                        .and_then(|n| n.parse::<usize>().ok());
                    if let Some(slot) = idx.and_then(|i| seen.receipts.get_mut(i)) {
                        if slot.is_none() {
                            *slot = Some(now);
                            missing -= 1;
                        }
                    }
                }
                "ERROR" => {
                    seen.problem = Some(format!(
                        "ERROR event: {}",
                        ev.object.message.unwrap_or_default()
                    ));
                }
                _ => {}
            }
        }
        buf.drain(..start);
    }
    seen
}

/// Watch fan-out: `watchers` watches of one collection from its current revision, then
/// `events` creates, one after another or `rate` per second; each delivery's latency is
/// from the write's
/// acknowledgement (its 201 arriving) to the watcher reading the event, clamped at 0
/// (a watcher may read the event before the writer reads its 201). Every watcher must
/// see every event; what is missing counts as `check` errors.
pub async fn watch_fanout(
    client: &Client,
    ns: &str,
    watchers: usize,
    rate: f64,
    settings: &Settings,
) -> Row {
    let events = settings.watch_events;
    let (per_connection, size) = (settings.watchers_per_connection, settings.object_size);
    let grace = settings.watch_grace;
    let scenario = if rate > 0.0 {
        format!("watch fan-out: {events} creates at {rate}/s, delivery latency")
    } else {
        format!("watch fan-out: {events} creates, delivery latency")
    };
    let mut rec = Recorder::default();
    let fail_row = |mut rec: Recorder, why: String| {
        rec.fail(Outcome::Check, watchers as u64 * events, why);
        report_samples(&scenario, &rec);
        rec.row(&scenario, watchers, 0, Duration::ZERO)
    };
    let rv = match collection_revision(client, ns).await {
        Ok(rv) => rv,
        Err(e) => return fail_row(rec, format!("{e:#}")),
    };
    let streams = match open_watches(client, ns, &rv, watchers, per_connection).await {
        Ok(s) => s,
        Err(e) => return fail_row(rec, format!("{e:#}")),
    };
    let acks: Arc<Vec<OnceLock<Instant>>> =
        Arc::new((0..events).map(|_| OnceLock::new()).collect());
    // Readers stop at the deadline even if events never come; it is pushed past the
    // writes' end by waiting for them below.
    let far = tokio::time::Instant::now() + Duration::from_secs(3600);
    let (deadline_tx, deadline_rx) = tokio::sync::watch::channel(far);
    let mut readers = JoinSet::new();
    for s in streams {
        let mut deadline_rx = deadline_rx.clone();
        readers.spawn(async move {
            let read = read_watch(s, events, far);
            tokio::pin!(read);
            loop {
                let d = *deadline_rx.borrow();
                tokio::select! {
                    seen = &mut read => return seen,
                    _ = tokio::time::sleep_until(d) => {
                        return Seen { receipts: vec![], problem: Some("timed out waiting for events".into()) };
                    }
                    changed = deadline_rx.changed() => {
                        if changed.is_err() { return read.await; }
                    }
                }
            }
        });
    }
    let started = Instant::now();
    let path = collection(ns);
    let mut pace = (rate > 0.0).then(|| {
        let mut t = tokio::time::interval(Duration::from_secs_f64(1.0 / rate));
        t.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Burst);
        t
    });
    for i in 0..events {
        if let Some(t) = pace.as_mut() {
            t.tick().await;
        }
        let body = configmap(&format!("ev-{i}"), i, size);
        let r = client
            .send(Method::POST, &path, JSON, Some(JSON), body)
            .await;
        let (outcome, why) = judge(&r);
        if outcome.is_ok() {
            let _ = acks[i as usize].set(Instant::now());
        } else {
            rec.fail(outcome, 1, why.unwrap_or_default());
        }
    }
    let _ = deadline_tx.send(tokio::time::Instant::now() + grace);
    let mut last = started;
    let mut delivered = 0u64;
    while let Some(r) = readers.join_next().await {
        let seen = match r {
            Ok(s) => s,
            Err(e) => {
                rec.fail(Outcome::Check, events, format!("watcher task failed: {e}"));
                continue;
            }
        };
        let mut missing = 0;
        for i in 0..events as usize {
            match (seen.receipts.get(i).copied().flatten(), acks[i].get()) {
                (Some(got), Some(ack)) => {
                    rec.record_ok(got.saturating_duration_since(*ack));
                    delivered += 1;
                    last = last.max(got);
                }
                // A write that failed is already counted; the watcher cannot see it.
                (_, None) => {}
                (None, Some(_)) => missing += 1,
            }
        }
        if missing > 0 || seen.problem.is_some() {
            rec.fail(
                Outcome::Check,
                missing,
                seen.problem
                    .unwrap_or_else(|| format!("{missing} events missing")),
            );
        }
    }
    report_samples(&scenario, &rec);
    rec.row(&scenario, watchers, delivered, last.duration_since(started))
}

/// Resident-memory figures of idle watchers: opens `n` watches and holds them.
pub async fn hold_watches(
    client: &Client,
    ns: &str,
    n: usize,
    per_connection: usize,
) -> Result<Vec<Streaming>> {
    let rv = collection_revision(client, ns).await?;
    open_watches(client, ns, &rv, n, per_connection).await
}
