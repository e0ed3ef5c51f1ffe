//! `loadgen admission`: what admission costs writes. The suite's create and update
//! (GET + PUT) scenarios run against fresh servers in three configurations:
//!
//! 1. no webhook configuration and no policy (the default plugins, with nothing to do);
//! 2. one ValidatingWebhookConfiguration for ConfigMap creates and updates, served by a
//!    webhook in this process over loopback HTTPS that allows at once;
//! 3. one ValidatingAdmissionPolicy (two CEL validations) bound with Deny.
//!
//! The webhook serves with the server's own certificate (valid for 127.0.0.1), and
//! counts its calls: the report says how many each configuration made, so a webhook
//! that was not called cannot pass for a cheap one.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use base64::Engine;
use bytes::Bytes;
use http::Method;
use http_body_util::{BodyExt, Full};
use serde_json::{json, Value};

use crate::authz::load_average;
use crate::client::{Client, Protocol, JSON};
use crate::consistent_reads::cpu_time;
use crate::metrics::{
    cost, each_cpu, median_cpu, median_rows, num, per_op_us, progress, table, Cpu, PickCpu, Row,
    CPU_FIGURES,
};
use crate::scenarios;
use crate::server::ServerProcess;

/// The namespace the benchmark writes in.
pub const NAMESPACE: &str = "bench";
const ADMISSION_API: &str = "/apis/admissionregistration.k8s.io/v1";

/// One server configuration.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Config {
    /// Nothing configured.
    Plain,
    /// One validating webhook that allows at once.
    Webhook,
    /// One ValidatingAdmissionPolicy bound with Deny.
    Policy,
}

impl Config {
    /// Every configuration, in table order.
    pub const ALL: [Config; 3] = [Config::Plain, Config::Webhook, Config::Policy];

    /// The column heading.
    pub fn label(self) -> &'static str {
        match self {
            Config::Plain => "no webhook, no policy",
            Config::Webhook => "one validating webhook",
            Config::Policy => "one ValidatingAdmissionPolicy",
        }
    }
}

/// Everything `loadgen admission` needs.
#[derive(Clone, Debug)]
pub struct AdmissionOptions {
    /// The server binary, started on a fresh temporary data directory per configuration.
    pub server_bin: PathBuf,
    /// Extra flags for the server.
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
    /// How long a new configuration may take to be in effect.
    pub effect_timeout: Duration,
}

/// The results of `loadgen admission`.
#[derive(Clone, Debug, Default)]
pub struct AdmissionReport {
    /// How the server was run, for the header.
    pub description: String,
    /// Scenario rows of every run, by configuration.
    pub runs: BTreeMap<Config, Vec<Vec<Row>>>,
    /// Webhook calls during the measured writes, per run (webhook configuration only).
    pub webhook_calls: Vec<u64>,
    /// Server CPU (user + system) per create and per update, µs, each run, by
    /// configuration: unlike throughput, hardly moved by what else the machine runs.
    pub cpu_us: BTreeMap<Config, Vec<Cpu>>,
    /// 1-minute load average before the first and after the last run.
    pub load: (Option<f64>, Option<f64>),
}

impl AdmissionReport {
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

    /// The report as markdown: throughput and latency per configuration with the cost
    /// against the plain one, each configuration's rows, and each run's throughputs.
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
        let configs: Vec<Config> = Config::ALL
            .into_iter()
            .filter(|c| self.runs.contains_key(c))
            .collect();
        let mut head = "| figure |".to_string();
        let mut rule = "| --- |".to_string();
        for &c in &configs {
            head += &format!(" {} |", c.label());
            rule += " ---: |";
            if c != Config::Plain {
                head += " cost |";
                rule += " ---: |";
            }
        }
        let _ = writeln!(out, "{head}\n{rule}");
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
        for (name, prefix, pick, higher_better) in figures {
            let value = |c: Config| {
                self.medians(c)
                    .iter()
                    .find(|r| r.scenario.starts_with(prefix))
                    .map(pick)
            };
            let base = value(Config::Plain);
            let mut line = format!("| {name} |");
            for &c in &configs {
                line += &format!(" {} |", value(c).map_or("—".into(), num));
                if c != Config::Plain {
                    line += &format!(" {} |", cost(base, value(c), higher_better));
                }
            }
            let _ = writeln!(out, "{line}");
        }
        for (name, pick) in CPU_FIGURES {
            let value = |c: Config| median_cpu(self.cpu_us.get(&c), pick);
            let base = value(Config::Plain);
            let mut line = format!("| {name} |");
            for &c in &configs {
                line += &format!(" {} |", value(c).map_or("—".into(), num));
                if c != Config::Plain {
                    line += &format!(" {} |", cost(base, value(c), false));
                }
            }
            let _ = writeln!(out, "{line}");
        }
        let _ = writeln!(
            out,
            "\ncost: how much lower the throughput, or higher the latency or CPU, than with \
             nothing configured (negative: better). Server CPU: user + system time of the \
             server process during the creates (during the updates) over their count. \
             Webhook calls during the measured writes, per run: {:?}.\n",
            self.webhook_calls
        );
        let mut rows = Vec::new();
        for &c in &configs {
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
        for &c in &configs {
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

/// A validating webhook on loopback HTTPS that allows every request at once.
struct AllowingWebhook {
    port: u16,
    calls: Arc<AtomicU64>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for AllowingWebhook {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl AllowingWebhook {
    /// Serves with the certificate and key in `certs` (the server's own).
    async fn start(certs: &Path) -> Result<AllowingWebhook> {
        let read =
            |name: &str| std::fs::read(certs.join(name)).with_context(|| format!("reading {name}"));
        let chain = rustls_pemfile::certs(&mut read("apiserver.crt")?.as_slice())
            .collect::<Result<Vec<_>, _>>()?;
        let key = rustls_pemfile::private_key(&mut read("apiserver.key")?.as_slice())?
            .context("no private key in apiserver.key")?;
        let config = rustls::ServerConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()?
        .with_no_client_auth()
        .with_single_cert(chain, key)?;
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let port = listener.local_addr()?.port();
        let calls = Arc::new(AtomicU64::new(0));
        let counted = calls.clone();
        let task = tokio::spawn(async move {
            while let Ok((tcp, _)) = listener.accept().await {
                let (acceptor, calls) = (acceptor.clone(), counted.clone());
                tokio::spawn(async move {
                    let _ = tcp.set_nodelay(true);
                    let Ok(tls) = acceptor.accept(tcp).await else {
                        return;
                    };
                    let service = hyper::service::service_fn(move |req| {
                        let calls = calls.clone();
                        async move { allow(req, &calls).await }
                    });
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(hyper_util::rt::TokioIo::new(tls), service)
                        .await;
                });
            }
        });
        Ok(AllowingWebhook { port, calls, task })
    }
}

/// Answers an AdmissionReview with `allowed: true`.
async fn allow(
    req: hyper::Request<hyper::body::Incoming>,
    calls: &AtomicU64,
) -> Result<hyper::Response<Full<Bytes>>, hyper::Error> {
    let body = req.into_body().collect().await?.to_bytes();
    calls.fetch_add(1, Ordering::Relaxed);
    let review: Value = serde_json::from_slice(&body).unwrap_or_default();
    let answer = json!({
        "apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
        "response": { "uid": review["request"]["uid"], "allowed": true },
    });
    Ok(hyper::Response::builder()
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from(answer.to_string())))
        .expect("a valid response"))
}

async fn post(client: &Client, path: &str, body: &Value) -> Result<()> {
    let r = client
        .send(
            Method::POST,
            path,
            JSON,
            Some(JSON),
            Bytes::from(body.to_string()),
        )
        .await?;
    if r.status != 201 {
        bail!(
            "POST {path}: HTTP {}: {}",
            r.status,
            String::from_utf8_lossy(&r.body)
        );
    }
    Ok(())
}

/// A server-side dry-run create of a ConfigMap `name` with `data`: its HTTP status.
async fn dry_run(client: &Client, name: &str, data: Value) -> Result<u16> {
    let path = format!("{}?dryRun=All", scenarios::collection(NAMESPACE));
    let body = json!({ "apiVersion": "v1", "kind": "ConfigMap", "metadata": { "name": name }, "data": data });
    let r = client
        .send(
            Method::POST,
            &path,
            JSON,
            Some(JSON),
            Bytes::from(body.to_string()),
        )
        .await?;
    Ok(r.status)
}

/// Polls until `done` says the configuration is in effect.
async fn wait_for(
    timeout: Duration,
    what: &str,
    mut done: impl AsyncFnMut() -> Result<bool>,
) -> Result<()> {
    let deadline = Instant::now() + timeout;
    while !done().await? {
        if Instant::now() > deadline {
            bail!("{what} did not take effect within {timeout:?}");
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    Ok(())
}

/// Installs the configuration's webhook or policy and waits until it is in effect.
async fn install(
    admin: &Client,
    config: Config,
    certs: &Path,
    opts: &AdmissionOptions,
) -> Result<Option<AllowingWebhook>> {
    match config {
        Config::Plain => Ok(None),
        Config::Webhook => {
            let webhook = AllowingWebhook::start(certs).await?;
            let ca = std::fs::read(certs.join("ca.crt")).context("reading ca.crt")?;
            let configuration = json!({
                "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
                "metadata": { "name": "loadgen-allow" },
                "webhooks": [{
                    "name": "allow.loadgen.example.dev",
                    "admissionReviewVersions": ["v1"], "sideEffects": "None", "failurePolicy": "Fail",
                    "clientConfig": {
                        "url": format!("https://127.0.0.1:{}/validate", webhook.port),
                        "caBundle": base64::engine::general_purpose::STANDARD.encode(ca),
                    },
                    "rules": [{ "operations": ["CREATE", "UPDATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["configmaps"] }],
                }],
            });
            post(
                admin,
                &format!("{ADMISSION_API}/validatingwebhookconfigurations"),
                &configuration,
            )
            .await?;
            let calls = webhook.calls.clone();
            wait_for(opts.effect_timeout, "the webhook", async || {
                dry_run(admin, "probe", json!({})).await?;
                Ok(calls.load(Ordering::Relaxed) > 0)
            })
            .await?;
            Ok(Some(webhook))
        }
        Config::Policy => {
            let policy = json!({
                "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
                "metadata": { "name": "loadgen-limits" },
                "spec": {
                    "failurePolicy": "Fail",
                    "matchConstraints": { "resourceRules": [{ "operations": ["CREATE", "UPDATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["configmaps"] }] },
                    "validations": [
                        { "expression": "object.metadata.name.size() <= 63", "message": "names are at most 63 characters" },
                        { "expression": "!has(object.data) || !('forbidden' in object.data)", "message": "the key forbidden is not allowed" },
                    ],
                },
            });
            let binding = json!({
                "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding",
                "metadata": { "name": "loadgen-limits" },
                "spec": { "policyName": "loadgen-limits", "validationActions": ["Deny"] },
            });
            post(
                admin,
                &format!("{ADMISSION_API}/validatingadmissionpolicies"),
                &policy,
            )
            .await?;
            post(
                admin,
                &format!("{ADMISSION_API}/validatingadmissionpolicybindings"),
                &binding,
            )
            .await?;
            wait_for(opts.effect_timeout, "the policy", async || {
                Ok(dry_run(admin, "probe", json!({ "forbidden": "x" })).await? == 422)
            })
            .await?;
            Ok(None)
        }
    }
}

fn temp_dir(opts: &AdmissionOptions) -> Result<tempfile::TempDir> {
    let parent = opts.data_root.clone().unwrap_or_else(std::env::temp_dir);
    std::fs::create_dir_all(&parent)?;
    tempfile::Builder::new()
        .prefix("loadgen-admission-")
        .tempdir_in(&parent)
        .with_context(|| format!("making a temporary directory in {}", parent.display()))
}

/// One configuration on a fresh server: its rows and the webhook's calls during them.
async fn measure(opts: &AdmissionOptions, config: Config) -> Result<(Vec<Row>, Option<u64>, Cpu)> {
    let dir = temp_dir(opts)?;
    let data = dir.path().join("data");
    std::fs::create_dir_all(&data)?;
    let server = ServerProcess::start(&opts.server_bin, &data, &opts.server_args).await?;
    let result = async {
        let admin = Client::new(server.target.clone(), opts.protocol, opts.request_timeout)?;
        scenarios::create_namespace(&admin, NAMESPACE).await?;
        let webhook = install(&admin, config, &data.join("certs"), opts).await?;
        let before = webhook.as_ref().map(|w| w.calls.load(Ordering::Relaxed));
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
        let calls = webhook
            .as_ref()
            .zip(before)
            .map(|(w, b)| w.calls.load(Ordering::Relaxed) - b);
        if let Some(calls) = calls {
            // Every create and every PUT asks the webhook.
            let writes = create.ops + update.ops;
            if calls < writes {
                bail!("the webhook was called {calls} times for {writes} writes");
            }
        }
        anyhow::Ok((vec![create, update], calls, cpu))
    }
    .await;
    if !matches!(&result, Ok((r, _, _)) if r.iter().all(|r| r.error_count() == 0)) {
        eprintln!("server log tail:\n{}", server.log_tail());
    }
    server.stop().await;
    result
}

/// Runs `loadgen admission`: every configuration once per run, in an order rotated
/// from run to run so that none always goes first while the machine drifts.
pub async fn run(opts: &AdmissionOptions) -> Result<AdmissionReport> {
    let proto = match opts.protocol {
        Protocol::Http2 => "HTTP/2, one connection",
        Protocol::Http1 => "HTTP/1.1 connection pool",
    };
    let mut report = AdmissionReport {
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
        ..AdmissionReport::default()
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
            let (rows, calls, cpu) = measure(opts, config)
                .await
                .with_context(|| config.label())?;
            report.runs.entry(config).or_default().push(rows);
            report.cpu_us.entry(config).or_default().push(cpu);
            report.webhook_calls.extend(calls);
        }
    }
    report.load.1 = load_average();
    Ok(report)
}
