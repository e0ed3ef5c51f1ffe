//! `loadgen authz`: what authorization costs. The suite's create and GET scenarios run
//! as a non-admin user (`bench`, a static bearer token from `--token-auth-file`) against
//! fresh servers in four configurations:
//!
//! 1. `--authorization-mode=AlwaysAllow`, no bindings (the baseline);
//! 2. RBAC, `bench` granted configmaps in namespace `bench` by a Role and a RoleBinding;
//! 3. the same plus `bindings` RoleBindings and ClusterRoleBindings of other users and
//!    groups (work per binding and request would show here);
//! 4. for reference, the admin (`system:masters`, decided before any mode) under RBAC.
//!
//! Every server gets the same token file (`bench` and one token per other user), so
//! authentication costs the same everywhere and the differences are authorization's.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use bytes::Bytes;
use http::Method;
use serde_json::{json, Value};

use crate::client::{Client, Protocol, JSON};
use crate::metrics::{cost, median, median_rows, num, progress, table, Outcome, Row};
use crate::scenarios;
use crate::server::ServerProcess;

/// The namespace the benchmark user works in.
pub const NAMESPACE: &str = "bench";
/// The benchmark user.
pub const USER: &str = "bench";

const RBAC_API: &str = "/apis/rbac.authorization.k8s.io/v1";
/// bench's Role (and the other RoleBindings' role).
const ROLE: &str = "loadgen-configmaps";
/// The other ClusterRoleBindings' role.
const CLUSTER_ROLE: &str = "loadgen-configmap-reader";

/// One server configuration.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Config {
    /// `--authorization-mode=AlwaysAllow`, no bindings.
    AlwaysAllow,
    /// RBAC, bench's Role and RoleBinding only.
    Rbac,
    /// RBAC, bench's binding plus the other bindings.
    RbacBindings,
    /// The admin (system:masters) under RBAC, bench's binding present.
    Admin,
}

impl Config {
    /// Every configuration, in table order.
    pub const ALL: [Config; 4] = [
        Config::AlwaysAllow,
        Config::Rbac,
        Config::RbacBindings,
        Config::Admin,
    ];

    /// The column heading.
    pub fn label(self, bindings: u64) -> String {
        match self {
            Config::AlwaysAllow => "AlwaysAllow".into(),
            Config::Rbac => "RBAC (RoleBinding)".into(),
            Config::RbacBindings => format!("RBAC, {bindings} other bindings"),
            Config::Admin => "admin (system:masters), RBAC".into(),
        }
    }

    fn mode(self) -> &'static str {
        match self {
            Config::AlwaysAllow => "AlwaysAllow",
            _ => "RBAC",
        }
    }
}

/// Everything `loadgen authz` needs.
#[derive(Clone, Debug)]
pub struct AuthzOptions {
    /// The server binary, started on a fresh temporary data directory per configuration.
    pub server_bin: PathBuf,
    /// Extra flags for the server (not `--authorization-mode` or `--token-auth-file`).
    pub server_args: Vec<String>,
    /// Where temporary directories go (default: the system temp directory).
    pub data_root: Option<PathBuf>,
    /// HTTP/2 (one connection) or an HTTP/1.1 pool.
    pub protocol: Protocol,
    /// Timeout of one request.
    pub request_timeout: Duration,
    /// How many times to repeat everything; tables show medians.
    pub runs: usize,
    /// ConfigMaps created (the GETs' working set).
    pub count: u64,
    /// Requests in flight of both scenarios.
    pub concurrency: usize,
    /// How long the GETs run.
    pub duration: Duration,
    /// Approximate size of each ConfigMap's JSON, bytes.
    pub object_size: usize,
    /// Other users' bindings in the third configuration (and other users' tokens in all).
    pub bindings: u64,
    /// How long the creates may run before stopping short of `count`.
    pub write_time: Duration,
    /// How long a new binding may take to be in effect.
    pub effect_timeout: Duration,
}

/// The results of `loadgen authz`.
#[derive(Clone, Debug, Default)]
pub struct AuthzReport {
    /// How the server was run, for the header.
    pub description: String,
    /// Other bindings of the third configuration.
    pub bindings: u64,
    /// Scenario rows of every run, by configuration.
    pub runs: BTreeMap<Config, Vec<Vec<Row>>>,
    /// bench's RoleBinding: from its 201 to bench's first allowed request, ms, per run.
    pub effective_ms: BTreeMap<Config, Vec<f64>>,
    /// 1-minute load average before the first and after the last run.
    pub load: (Option<f64>, Option<f64>),
}

/// Reads one value of a row.
type Pick = fn(&Row) -> f64;

/// The figures of the summary: (name, scenario prefix, which value, higher is better).
const FIGURES: [(&str, &str, Pick, bool); 6] = [
    (
        "GET one ConfigMap, requests/s",
        "get",
        |r| r.throughput,
        true,
    ),
    ("GET p50 ms", "get", |r| r.p50_ms, false),
    ("GET p99 ms", "get", |r| r.p99_ms, false),
    (
        "create ConfigMap, requests/s",
        "create",
        |r| r.throughput,
        true,
    ),
    ("create p50 ms", "create", |r| r.p50_ms, false),
    ("create p99 ms", "create", |r| r.p99_ms, false),
];

impl AuthzReport {
    /// Every failed request of every run.
    pub fn error_count(&self) -> u64 {
        self.runs
            .values()
            .flatten()
            .flatten()
            .map(Row::error_count)
            .sum()
    }

    /// Median rows of `config`.
    pub fn medians(&self, config: Config) -> Vec<Row> {
        self.runs
            .get(&config)
            .map(|r| median_rows(r))
            .unwrap_or_default()
    }

    /// The summary figure `prefix`/`value` of `config` (median over runs).
    fn figure(&self, config: Config, prefix: &str, value: fn(&Row) -> f64) -> Option<f64> {
        self.medians(config)
            .iter()
            .find(|r| r.scenario.starts_with(prefix))
            .map(value)
    }

    /// The report as markdown: the summary (figure × configuration, cost against
    /// AlwaysAllow), each configuration's rows, and each run's throughputs (the noise).
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
            head += &format!(" {} |", c.label(self.bindings));
            rule += " ---: |";
            if c != Config::AlwaysAllow {
                head += " cost |";
                rule += " ---: |";
            }
        }
        let _ = writeln!(out, "{head}\n{rule}");
        for (name, prefix, value, higher_better) in FIGURES {
            let base = self.figure(Config::AlwaysAllow, prefix, value);
            let mut line = format!("| {name} |");
            for &c in &configs {
                let v = self.figure(c, prefix, value);
                line += &format!(" {} |", v.map_or("—".into(), num));
                if c != Config::AlwaysAllow {
                    line += &format!(" {} |", cost(base, v, higher_better));
                }
            }
            let _ = writeln!(out, "{line}");
        }
        let mut line = "| bench's RoleBinding: 201 to first allowed request, ms |".to_string();
        for &c in &configs {
            let mut v = self.effective_ms.get(&c).cloned().unwrap_or_default();
            let shown = if v.is_empty() {
                "—".into()
            } else {
                num(median(&mut v))
            };
            line += &format!(" {shown} |");
            if c != Config::AlwaysAllow {
                line += " |";
            }
        }
        let _ = writeln!(out, "{line}\n");
        let _ = writeln!(
            out,
            "cost: how much lower the throughput, or higher the latency, than under \
             AlwaysAllow (negative: better).\n"
        );
        let mut rows = Vec::new();
        for &c in &configs {
            for mut r in self.medians(c) {
                r.scenario = format!("{}, {}", r.scenario, c.label(self.bindings));
                rows.push(r);
            }
        }
        let _ = writeln!(out, "{}", table(&rows, "ops"));
        // Rounds drift (the machine is shared): each run's cost against AlwaysAllow of
        // the same round, whose median does not carry that drift.
        let _ = writeln!(
            out,
            "| configuration | GET requests/s, each run (cost against AlwaysAllow in the \
             same run) | median of the runs' GET costs | create requests/s, each run (cost) \
             | median of the runs' create costs |\n| --- | --- | ---: | --- | ---: |"
        );
        for &c in &configs {
            let each = |prefix: &str| {
                let mut costs = Vec::new();
                let mut cells = Vec::new();
                for (k, run) in self.runs[&c].iter().enumerate() {
                    let Some(r) = run.iter().find(|r| r.scenario.starts_with(prefix)) else {
                        continue;
                    };
                    let base = self
                        .runs
                        .get(&Config::AlwaysAllow)
                        .and_then(|b| b.get(k))
                        .and_then(|b| b.iter().find(|r| r.scenario.starts_with(prefix)))
                        .map(|b| b.throughput);
                    match base {
                        Some(b) if c != Config::AlwaysAllow && b > 0.0 => {
                            costs.push(100.0 * (b - r.throughput) / b);
                            let pct = cost(Some(b), Some(r.throughput), true);
                            cells.push(format!("{:.0} ({pct})", r.throughput));
                        }
                        _ => cells.push(format!("{:.0}", r.throughput)),
                    }
                }
                let med = if costs.is_empty() {
                    "—".into()
                } else {
                    format!("{:+.1}%", median(&mut costs)).replace('-', "−")
                };
                (cells.join(", "), med)
            };
            let ((get, get_med), (create, create_med)) = (each("get"), each("create"));
            let _ = writeln!(
                out,
                "| {} | {get} | {get_med} | {create} | {create_med} |",
                c.label(self.bindings)
            );
        }
        out
    }
}

/// The 1-minute load average, from `/proc/loadavg`.
pub fn load_average() -> Option<f64> {
    std::fs::read_to_string("/proc/loadavg")
        .ok()?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// Tokens of bench and the other users, written once as `--token-auth-file`.
struct Tokens {
    bench: String,
    /// Other user `i`'s token (user `other-<i>`, group `loadgen-group-<i>`).
    others: Vec<String>,
}

impl Tokens {
    fn new(others: u64) -> Tokens {
        let token = || format!("{:032x}", rand::random::<u128>());
        Tokens {
            bench: token(),
            others: (0..others).map(|_| token()).collect(),
        }
    }

    fn write(&self, path: &Path) -> Result<()> {
        let mut csv = format!("{},{USER},{USER}-uid\n", self.bench);
        for (i, t) in self.others.iter().enumerate() {
            let _ = writeln!(csv, "{t},other-{i},other-{i}-uid,\"loadgen-group-{i}\"");
        }
        std::fs::write(path, csv).with_context(|| format!("writing {}", path.display()))
    }
}

/// Other binding `i`: a RoleBinding in bench's namespace or a ClusterRoleBinding (the
/// two places a request in that namespace is looked up in), to user `other-<i>` or to
/// group `loadgen-group-<i>`, alternating so every kind of entry is present.
fn other_binding(i: u64) -> (String, Value) {
    let subject = if i.is_multiple_of(2) {
        json!({ "kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": format!("other-{i}") })
    } else {
        json!({ "kind": "Group", "apiGroup": "rbac.authorization.k8s.io", "name": format!("loadgen-group-{i}") })
    };
    if i % 4 < 2 {
        (
            format!("{RBAC_API}/namespaces/{NAMESPACE}/rolebindings"),
            json!({
                "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
                "metadata": { "name": format!("other-{i}") },
                "roleRef": { "apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": ROLE },
                "subjects": [subject],
            }),
        )
    } else {
        (
            format!("{RBAC_API}/clusterrolebindings"),
            json!({
                "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
                "metadata": { "name": format!("loadgen-other-{i}") },
                "roleRef": { "apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": CLUSTER_ROLE },
                "subjects": [subject],
            }),
        )
    }
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

/// Polls (every millisecond) a request the user of `client` may make once its binding
/// is in the RBAC snapshot; 403 until then.
async fn wait_allowed(client: &Client, timeout: Duration, who: &str) -> Result<()> {
    let path = format!("{}?limit=1", scenarios::collection(NAMESPACE));
    let deadline = Instant::now() + timeout;
    loop {
        let r = client.get(&path).await?;
        match r.status {
            200 => return Ok(()),
            403 if Instant::now() < deadline => {}
            s => bail!(
                "{who}: GET {path}: HTTP {s}: {}",
                String::from_utf8_lossy(&r.body)
            ),
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
}

/// As admin: the other bindings (if `bindings > 0`), then bench's Role and RoleBinding;
/// returns from the RoleBinding's 201 to bench's first allowed request. The bindings
/// are all in effect on return: bench's and the last of each kind are seen to work.
async fn grant(
    admin: &Client,
    user: impl Fn(&str) -> Result<Client>,
    tokens: &Tokens,
    bindings: u64,
    opts: &AuthzOptions,
) -> Result<Duration> {
    let role = json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
        "metadata": { "name": ROLE },
        "rules": [{ "apiGroups": [""], "resources": ["configmaps"],
                    "verbs": ["get", "list", "create", "update", "delete"] }],
    });
    post(
        admin,
        &format!("{RBAC_API}/namespaces/{NAMESPACE}/roles"),
        &role,
    )
    .await?;
    if bindings > 0 {
        let reader = json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
            "metadata": { "name": CLUSTER_ROLE },
            "rules": [{ "apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list"] }],
        });
        post(admin, &format!("{RBAC_API}/clusterroles"), &reader).await?;
        let c = admin.clone();
        let (rec, _) = scenarios::drive(16, bindings, opts.write_time, move |i| {
            let c = c.clone();
            async move {
                let (path, body) = other_binding(i);
                match post(&c, &path, &body).await {
                    Ok(()) => (Outcome::Status(201), None),
                    Err(e) => (Outcome::Check, Some(format!("{e:#}"))),
                }
            }
        })
        .await;
        let row = rec.row("create other bindings", 16, rec.count(), Duration::ZERO);
        if row.error_count() > 0 || rec.count() != bindings {
            bail!(
                "creating {bindings} other bindings: {} failed, {} sent: {:?}",
                row.error_count(),
                rec.count(),
                rec.samples
            );
        }
    }
    let binding = json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
        "metadata": { "name": USER },
        "roleRef": { "apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": ROLE },
        "subjects": [{ "kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": USER }],
    });
    post(
        admin,
        &format!("{RBAC_API}/namespaces/{NAMESPACE}/rolebindings"),
        &binding,
    )
    .await?;
    let created = Instant::now();
    wait_allowed(&user(&tokens.bench)?, opts.effect_timeout, USER).await?;
    let effective = created.elapsed();
    // The last binding of each of the four kinds (user or group, Role- or
    // ClusterRoleBinding): the snapshot measured holds them all.
    for i in bindings.saturating_sub(4)..bindings {
        let who = format!("other-{i}");
        wait_allowed(
            &user(&tokens.others[i as usize])?,
            opts.effect_timeout,
            &who,
        )
        .await?;
    }
    Ok(effective)
}

fn temp_dir(opts: &AuthzOptions) -> Result<tempfile::TempDir> {
    let parent = opts.data_root.clone().unwrap_or_else(std::env::temp_dir);
    std::fs::create_dir_all(&parent)?;
    tempfile::Builder::new()
        .prefix("loadgen-authz-")
        .tempdir_in(&parent)
        .with_context(|| format!("making a temporary directory in {}", parent.display()))
}

/// One configuration on a fresh server: set-up as admin, then the creates and GETs as
/// bench (or as the admin). Returns the rows and bench's binding's time to effect.
async fn measure(opts: &AuthzOptions, config: Config) -> Result<(Vec<Row>, Option<Duration>)> {
    let dir = temp_dir(opts)?;
    let data = dir.path().join("data");
    std::fs::create_dir_all(&data)?;
    let token_file = dir.path().join("tokens.csv");
    let tokens = Tokens::new(opts.bindings);
    tokens.write(&token_file)?;
    let mut args = opts.server_args.clone();
    args.push(format!("--token-auth-file={}", token_file.display()));
    args.push(format!("--authorization-mode={}", config.mode()));
    let server = ServerProcess::start(&opts.server_bin, &data, &args).await?;
    let result = async {
        let (proto, timeout) = (opts.protocol, opts.request_timeout);
        let admin = Client::new(server.target.clone(), proto, timeout)?;
        let user = |token: &str| {
            let mut target = server.target.clone();
            target.token = Some(token.to_string());
            Client::new(target, proto, timeout)
        };
        scenarios::create_namespace(&admin, NAMESPACE).await?;
        let effective = match config {
            Config::AlwaysAllow => None,
            Config::Rbac | Config::Admin => Some(grant(&admin, user, &tokens, 0, opts).await?),
            Config::RbacBindings => Some(grant(&admin, user, &tokens, opts.bindings, opts).await?),
        };
        // A client of its own, as another process would have: no connection shared
        // with the set-up.
        let client = match config {
            Config::Admin => admin.separate(),
            _ => user(&tokens.bench)?,
        };
        let c = opts.concurrency;
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
        let get = scenarios::get(&client, NAMESPACE, create.ops, c, opts.duration).await;
        progress(&get);
        anyhow::Ok((vec![create, get], effective))
    }
    .await;
    if !matches!(&result, Ok((r, _)) if r.iter().all(|r| r.error_count() == 0)) {
        eprintln!("server log tail:\n{}", server.log_tail());
    }
    server.stop().await;
    result
}

/// Runs `loadgen authz`: every configuration once per run, in an order rotated from run
/// to run so that none always goes first (or last) while the machine drifts.
pub async fn run(opts: &AuthzOptions) -> Result<AuthzReport> {
    if let Some(a) = opts
        .server_args
        .iter()
        .find(|a| a.starts_with("--authorization-mode") || a.starts_with("--token-auth-file"))
    {
        bail!("--server-arg {a}: loadgen authz sets it for each configuration");
    }
    let proto = match opts.protocol {
        Protocol::Http2 => "HTTP/2, one connection",
        Protocol::Http1 => "HTTP/1.1 connection pool",
    };
    let mut report = AuthzReport {
        description: format!(
            "server {} ({proto}), {} ConfigMaps of ~{} B created then GET for {:?}, \
             concurrency {}",
            opts.server_bin.display(),
            opts.count,
            opts.object_size,
            opts.duration,
            opts.concurrency
        ),
        bindings: opts.bindings,
        load: (load_average(), None),
        ..AuthzReport::default()
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
                config.label(opts.bindings)
            );
            let (rows, effective) = measure(opts, config)
                .await
                .with_context(|| config.label(opts.bindings))?;
            report.runs.entry(config).or_default().push(rows);
            if let Some(d) = effective {
                report
                    .effective_ms
                    .entry(config)
                    .or_default()
                    .push(d.as_secs_f64() * 1000.0);
            }
        }
    }
    report.load.1 = load_average();
    Ok(report)
}
