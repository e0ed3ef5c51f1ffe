//! `loadgen`: benchmarks the apiserver binary (or the server of a kubeconfig) and prints
//! markdown tables; `loadgen raw-redb` measures the raw engine baseline; `loadgen storage`
//! the storage layer of both backends next to their raw engines; `loadgen crds` what
//! CustomResourceDefinitions cost; `loadgen authz` what authorization (RBAC) costs;
//! `loadgen admission` what a validating webhook and a ValidatingAdmissionPolicy cost;
//! `loadgen audit` what the audit log costs writes; `loadgen consistent-reads` what
//! consistent GETs cost on etcd; `loadgen soak` a long mixed run checked for memory growth
//! and for watchers that miss an event; `loadgen startup` start-to-ready and idle memory.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use apiserver_loadgen::admission::{self, AdmissionOptions};
use apiserver_loadgen::audit::{self, AuditOptions};
use apiserver_loadgen::authz::{self, AuthzOptions};
use apiserver_loadgen::backend_ops;
use apiserver_loadgen::bench_etcd::EtcdBenchOptions;
use apiserver_loadgen::client::Protocol;
use apiserver_loadgen::consistent_reads;
use apiserver_loadgen::crds::{self, CrdOptions, CrdSelection};
use apiserver_loadgen::metrics::{median_rows, table};
use apiserver_loadgen::raw::{self, RawOptions};
use apiserver_loadgen::scenarios::Settings;
use apiserver_loadgen::soak::{self, SoakOptions};
use apiserver_loadgen::startup::{self, StartupOptions};
use apiserver_loadgen::storage::{self, Backend, StorageOptions};
use apiserver_loadgen::suite::{self, Selection, SuiteOptions};
use clap::{Args, Parser, Subcommand};

#[derive(Parser)]
#[command(
    name = "loadgen",
    about = "Benchmarks the apiserver over HTTPS as Kubernetes clients do; prints markdown tables.",
    args_conflicts_with_subcommands = true
)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    #[command(flatten)]
    suite: SuiteArgs,
}

#[derive(Subcommand)]
enum Command {
    /// Durable redb write transactions (the server's engine) on the same disk: the
    /// baseline for the server's create rate.
    RawRedb(RawArgs),
    /// The storage layer alone: create, get, list and CAS update through the server's
    /// `Storage` trait for the embedded store and etcd, next to raw redb transactions and
    /// raw etcd-client calls to the same etcd (which it starts), plus memory and disk per
    /// stored object.
    Storage(StorageArgs),
    /// CustomResourceDefinitions against the started server binary: time from a CRD's
    /// create to Established and to its kind being served, memory per installed CRD,
    /// start-up with CRDs installed, and custom objects next to ConfigMaps.
    Crds(CrdArgs),
    /// Authorization's cost: create and GET throughput and latency of a non-admin user
    /// (static token) under AlwaysAllow, under RBAC through a RoleBinding, and under RBAC
    /// with many other bindings; the admin (system:masters) under RBAC for reference.
    Authz(AuthzArgs),
    /// Admission's cost: create and update (GET + PUT) throughput and latency with
    /// nothing configured, with one validating webhook (loopback HTTPS, allows at once)
    /// and with one ValidatingAdmissionPolicy bound with Deny.
    Admission(AdmissionArgs),
    /// The audit log's cost: create and update (GET + PUT) throughput and latency with
    /// auditing off and with every request audited at Metadata into a file.
    Audit(AuditArgs),
    /// Consistent GETs (no resourceVersion) on an etcd it starts: GET/s, latency, etcd
    /// revision requests and server and etcd CPU per GET, with reads going to etcd,
    /// served by the watch cache after a revision request each, and after coalesced
    /// revision requests.
    ConsistentReads(ConsistentReadArgs),
    /// Issue 20's figures per backend from one binary: creates, consistent GETs, LISTs
    /// and updates (GET + PUT) on the embedded store and on an etcd it starts (consistent
    /// reads going to etcd and served by the watch cache): ops/s, latency, etcd requests,
    /// server and etcd CPU per operation, the cores each phase kept busy, and RSS per
    /// stored object.
    #[command(alias = "etcd-ops")]
    BackendOps(ConsistentReadArgs),
    /// A soak run: minutes of mixed creates, updates, merge and strategic patches,
    /// deletes and lists with 1,000 watchers open, sampled every minute (RSS, open fds,
    /// CPU, p50/p99 per verb, watch events); fails if RSS or fds keep growing or a watcher
    /// misses or repeats an event. Not part of the test command.
    Soak(SoakArgs),
    /// Start-up cost: the server started on a fresh, empty data directory again and
    /// again; spawn to the first `/readyz` 200 and the settled idle memory (VmRSS,
    /// anonymous and file-backed) of each start, as medians.
    Startup(StartupArgs),
}

#[derive(Args)]
struct StartupArgs {
    /// The apiserver binary.
    #[arg(long, value_name = "PATH")]
    server_bin: PathBuf,
    /// An extra flag for the started server (repeat for more).
    #[arg(long = "server-arg", value_name = "ARG", allow_hyphen_values = true)]
    server_args: Vec<String>,
    /// Directory for the temporary data directories (default: the system temp directory).
    #[arg(long, value_name = "DIR")]
    data_root: Option<PathBuf>,
    /// Starts measured; the table shows medians.
    #[arg(long, default_value_t = 9)]
    runs: usize,
    /// Also write the markdown report to this file.
    #[arg(long, value_name = "FILE")]
    output: Option<PathBuf>,
}

#[derive(Args)]
struct SoakArgs {
    /// The apiserver binary, started once on a fresh temporary data directory.
    #[arg(long, value_name = "PATH")]
    server_bin: PathBuf,
    /// An extra flag for the started server (repeat for more).
    #[arg(long = "server-arg", value_name = "ARG", allow_hyphen_values = true)]
    server_args: Vec<String>,
    /// Run the server on an etcd started from this binary (default: the embedded store).
    #[arg(long, value_name = "PATH")]
    etcd_bin: Option<PathBuf>,
    /// Directory for temporary data (default: the system temp directory).
    #[arg(long, value_name = "DIR")]
    data_root: Option<PathBuf>,
    /// Use a pool of HTTP/1.1 connections instead of one HTTP/2 connection.
    #[arg(long)]
    http1: bool,
    /// Minutes the writers run.
    #[arg(long, default_value_t = 30.0)]
    duration: f64,
    /// Seconds between samples.
    #[arg(long, default_value_t = 60.0)]
    interval: f64,
    /// Watches held for the whole run.
    #[arg(long, default_value_t = 1000)]
    watchers: usize,
    /// Watches per HTTP/2 connection (0 = all on one connection).
    #[arg(long, default_value_t = 100)]
    watchers_per_connection: usize,
    /// Label shards; each watcher selects one (one in 20 the whole namespace).
    #[arg(long, default_value_t = 16)]
    shards: u64,
    /// Live objects the writers keep, about.
    #[arg(long, default_value_t = 2000)]
    objects: u64,
    /// Writer tasks (each owns its objects, so none conflict).
    #[arg(long, default_value_t = 8)]
    writers: usize,
    /// Writes per second, in all.
    #[arg(long, default_value_t = 200.0)]
    write_rate: f64,
    /// LIST requests per second.
    #[arg(long, default_value_t = 2.0)]
    list_rate: f64,
    /// Approximate size of each ConfigMap's JSON, bytes.
    #[arg(long, default_value_t = 1024)]
    object_size: usize,
    /// RSS (and fd) growth allowed from the middle third of the samples to the last,
    /// percent.
    #[arg(long, default_value_t = 10.0)]
    rss_growth: f64,
    /// Seconds the watchers may take to reach the final markers after the writers stop.
    #[arg(long, default_value_t = 120.0)]
    watch_grace: f64,
    /// Timeout of one request, seconds.
    #[arg(long, default_value_t = 60.0)]
    timeout: f64,
    /// Worker threads of the load generator's runtime (default: one per core).
    #[arg(long)]
    threads: Option<usize>,
    /// Also write the markdown report to this file.
    #[arg(long, value_name = "FILE")]
    output: Option<PathBuf>,
}

#[derive(Args)]
struct ConsistentReadArgs {
    /// The apiserver binary (with the etcd feature), started fresh per configuration
    /// and run.
    #[arg(long, value_name = "PATH")]
    server_bin: PathBuf,
    /// The etcd binary to start (once; every server gets its own key prefix).
    #[arg(long, value_name = "PATH", default_value = "etcd")]
    etcd_bin: PathBuf,
    /// An extra flag for the started server (repeat for more); not the etcd flags,
    /// which each configuration sets.
    #[arg(long = "server-arg", value_name = "ARG", allow_hyphen_values = true)]
    server_args: Vec<String>,
    /// Directory for etcd's and the servers' temporary data (default: the system temp
    /// directory).
    #[arg(long, value_name = "DIR")]
    data_root: Option<PathBuf>,
    /// Use a pool of HTTP/1.1 connections instead of one HTTP/2 connection.
    #[arg(long)]
    http1: bool,
    /// Repeat every configuration this many times; the table shows medians.
    #[arg(long, default_value_t = 3)]
    runs: usize,
    /// ConfigMaps created (the working set of the GETs).
    #[arg(long, default_value_t = 1000)]
    count: u64,
    /// GETs (and creates) in flight.
    #[arg(long, default_value_t = 32)]
    concurrency: usize,
    /// Seconds the GETs run.
    #[arg(long, default_value_t = 5.0)]
    duration: f64,
    /// Approximate size of each ConfigMap's JSON, bytes.
    #[arg(long, default_value_t = 1024)]
    object_size: usize,
    /// Timeout of one request, seconds.
    #[arg(long, default_value_t = 300.0)]
    timeout: f64,
    /// Worker threads of the load generator's runtime (default: one per core).
    #[arg(long)]
    threads: Option<usize>,
    /// Also write the markdown report to this file.
    #[arg(long, value_name = "FILE")]
    output: Option<PathBuf>,
}

#[derive(Args)]
struct AuditArgs {
    /// The apiserver binary, started on a fresh temporary data directory per
    /// configuration and run.
    #[arg(long, value_name = "PATH")]
    server_bin: PathBuf,
    /// An extra flag for the started server (repeat for more); not the audit flags,
    /// which each configuration sets.
    #[arg(long = "server-arg", value_name = "ARG", allow_hyphen_values = true)]
    server_args: Vec<String>,
    /// Directory for temporary data directories and audit logs (default: the system
    /// temp directory).
    #[arg(long, value_name = "DIR")]
    data_root: Option<PathBuf>,
    /// Use a pool of HTTP/1.1 connections instead of one HTTP/2 connection.
    #[arg(long)]
    http1: bool,
    /// Repeat every configuration this many times; tables show medians.
    #[arg(long, default_value_t = 3)]
    runs: usize,
    /// ConfigMaps created (the working set of the updates).
    #[arg(long, default_value_t = 10_000)]
    count: u64,
    /// Requests in flight.
    #[arg(long, default_value_t = 32)]
    concurrency: usize,
    /// Seconds the updates run.
    #[arg(long, default_value_t = 5.0)]
    duration: f64,
    /// Approximate size of each ConfigMap's JSON, bytes.
    #[arg(long, default_value_t = 1024)]
    object_size: usize,
    /// Seconds the creates may run before stopping short of --count.
    #[arg(long, default_value_t = 600.0)]
    write_time: f64,
    /// Timeout of one request, seconds.
    #[arg(long, default_value_t = 300.0)]
    timeout: f64,
    /// Worker threads of the load generator's runtime (default: one per core).
    #[arg(long)]
    threads: Option<usize>,
    /// Also write the markdown report to this file.
    #[arg(long, value_name = "FILE")]
    output: Option<PathBuf>,
}

#[derive(Args)]
struct AdmissionArgs {
    /// The apiserver binary, started on a fresh temporary data directory per
    /// configuration and run.
    #[arg(long, value_name = "PATH")]
    server_bin: PathBuf,
    /// An extra flag for the started server (repeat for more).
    #[arg(long = "server-arg", value_name = "ARG", allow_hyphen_values = true)]
    server_args: Vec<String>,
    /// Directory for temporary data directories (default: the system temp directory).
    #[arg(long, value_name = "DIR")]
    data_root: Option<PathBuf>,
    /// Use a pool of HTTP/1.1 connections instead of one HTTP/2 connection.
    #[arg(long)]
    http1: bool,
    /// Repeat every configuration this many times; tables show medians.
    #[arg(long, default_value_t = 3)]
    runs: usize,
    /// ConfigMaps created (the working set of the updates).
    #[arg(long, default_value_t = 10_000)]
    count: u64,
    /// Requests in flight.
    #[arg(long, default_value_t = 32)]
    concurrency: usize,
    /// Seconds the updates run.
    #[arg(long, default_value_t = 5.0)]
    duration: f64,
    /// Approximate size of each ConfigMap's JSON, bytes.
    #[arg(long, default_value_t = 1024)]
    object_size: usize,
    /// Seconds the creates may run before stopping short of --count.
    #[arg(long, default_value_t = 600.0)]
    write_time: f64,
    /// Seconds a new webhook configuration or policy may take to be in effect.
    #[arg(long, default_value_t = 30.0)]
    effect_timeout: f64,
    /// Timeout of one request, seconds.
    #[arg(long, default_value_t = 300.0)]
    timeout: f64,
    /// Worker threads of the load generator's runtime (default: one per core).
    #[arg(long)]
    threads: Option<usize>,
    /// Also write the markdown report to this file.
    #[arg(long, value_name = "FILE")]
    output: Option<PathBuf>,
}

#[derive(Args)]
struct AuthzArgs {
    /// The apiserver binary, started on a fresh temporary data directory per
    /// configuration and run.
    #[arg(long, value_name = "PATH")]
    server_bin: PathBuf,
    /// An extra flag for the started server (repeat for more); not
    /// --authorization-mode or --token-auth-file, which each configuration sets.
    #[arg(long = "server-arg", value_name = "ARG", allow_hyphen_values = true)]
    server_args: Vec<String>,
    /// Directory for temporary data directories (default: the system temp directory).
    #[arg(long, value_name = "DIR")]
    data_root: Option<PathBuf>,
    /// Use a pool of HTTP/1.1 connections instead of one HTTP/2 connection.
    #[arg(long)]
    http1: bool,
    /// Repeat every configuration this many times; tables show medians.
    #[arg(long, default_value_t = 3)]
    runs: usize,
    /// ConfigMaps created (the working set of the GETs).
    #[arg(long, default_value_t = 10_000)]
    count: u64,
    /// Requests in flight of the creates and the GETs.
    #[arg(long, default_value_t = 32)]
    concurrency: usize,
    /// Seconds the GETs run.
    #[arg(long, default_value_t = 5.0)]
    duration: f64,
    /// Approximate size of each ConfigMap's JSON, bytes.
    #[arg(long, default_value_t = 1024)]
    object_size: usize,
    /// RoleBindings and ClusterRoleBindings of other users and groups in the third
    /// configuration (every configuration's token file has this many other users).
    #[arg(long, default_value_t = 1000)]
    bindings: u64,
    /// Seconds the creates may run before stopping short of --count.
    #[arg(long, default_value_t = 600.0)]
    write_time: f64,
    /// Seconds a new binding may take to be in effect.
    #[arg(long, default_value_t = 30.0)]
    effect_timeout: f64,
    /// Timeout of one request, seconds.
    #[arg(long, default_value_t = 300.0)]
    timeout: f64,
    /// Worker threads of the load generator's runtime (default: one per core).
    #[arg(long)]
    threads: Option<usize>,
    /// Also write the markdown report to this file.
    #[arg(long, value_name = "FILE")]
    output: Option<PathBuf>,
}

#[derive(Args)]
struct CrdArgs {
    /// The apiserver binary, started on fresh temporary data directories.
    #[arg(long, value_name = "PATH")]
    server_bin: PathBuf,
    /// An extra flag for the started server (repeat for more).
    #[arg(long = "server-arg", value_name = "ARG", allow_hyphen_values = true)]
    server_args: Vec<String>,
    /// Directory for temporary data directories (default: the system temp directory).
    #[arg(long, value_name = "DIR")]
    data_root: Option<PathBuf>,
    /// Use a pool of HTTP/1.1 connections instead of one HTTP/2 connection.
    #[arg(long)]
    http1: bool,
    /// Repeat everything this many times; tables show medians.
    #[arg(long, default_value_t = 1)]
    runs: usize,
    /// Installed-CRD counts at which memory and start-up are measured (CRDs are created
    /// one at a time up to each in turn).
    #[arg(long, value_delimiter = ',', default_value = "1,100,1000")]
    crds: Vec<u64>,
    /// Seconds one CRD may take to be Established and served.
    #[arg(long, default_value_t = 30.0)]
    establish_timeout: f64,
    /// Milliseconds between polls of a kind's collection that is not served yet.
    #[arg(long, default_value_t = 1.0)]
    poll_ms: f64,
    /// Objects per kind and concurrency level in the ConfigMap comparison.
    #[arg(long, default_value_t = 5000)]
    objects: u64,
    /// Concurrency levels of the ConfigMap comparison.
    #[arg(long, value_delimiter = ',', default_value = "1,8,32")]
    concurrency: Vec<usize>,
    /// Approximate size of each object's JSON, bytes (both kinds).
    #[arg(long, default_value_t = 1024)]
    object_size: usize,
    /// Seconds each GET level and each LIST of the comparison runs at most.
    #[arg(long, default_value_t = 5.0)]
    duration: f64,
    /// LIST requests per kind at most.
    #[arg(long, default_value_t = 20)]
    list_requests: u64,
    /// Seconds a create level may run before stopping short of --objects.
    #[arg(long, default_value_t = 600.0)]
    write_time: f64,
    /// Timeout of one request, seconds.
    #[arg(long, default_value_t = 300.0)]
    timeout: f64,
    /// Parts to leave out: install (latency and memory), startup, compare.
    #[arg(long, value_delimiter = ',')]
    skip: Vec<String>,
    /// Worker threads of the load generator's runtime (default: one per core).
    #[arg(long)]
    threads: Option<usize>,
    /// Also write the markdown report to this file.
    #[arg(long, value_name = "FILE")]
    output: Option<PathBuf>,
}

#[derive(Args)]
struct StorageArgs {
    /// Backends to measure.
    #[arg(long, value_delimiter = ',', default_value = "embedded,etcd")]
    backends: Vec<String>,
    /// Directory on the disk under test (a temporary directory is made inside it).
    #[arg(long, value_name = "DIR")]
    dir: Option<PathBuf>,
    /// The etcd binary to start.
    #[arg(long, value_name = "PATH", default_value = "etcd")]
    etcd_bin: PathBuf,
    /// Use this loopback etcd instead of starting one (no etcd memory or disk figures),
    /// e.g. the one a server under `loadgen` runs on, for ratios against the same etcd.
    #[arg(long, value_name = "URL")]
    etcd_endpoint: Option<String>,
    /// Keys created per concurrency level (and listed).
    #[arg(long, default_value_t = 10_000)]
    count: u64,
    /// Concurrency levels.
    #[arg(long, value_delimiter = ',', default_value = "1,8,64")]
    concurrency: Vec<usize>,
    /// Bytes per value.
    #[arg(long, default_value_t = 1400)]
    value_size: usize,
    /// Seconds each get and update level runs.
    #[arg(long, default_value_t = 5.0)]
    duration: f64,
    /// Full lists per measurement.
    #[arg(long, default_value_t = 10)]
    list_requests: u64,
    /// Repeat this many times; tables show medians.
    #[arg(long, default_value_t = 3)]
    runs: usize,
    /// Also write the markdown report to this file.
    #[arg(long, value_name = "FILE")]
    output: Option<PathBuf>,
}

#[derive(Args)]
struct SuiteArgs {
    /// Start this apiserver binary for each run, on a fresh temporary data directory
    /// (enables the memory and start-to-ready figures).
    #[arg(long, value_name = "PATH", conflicts_with = "kubeconfig")]
    server_bin: Option<PathBuf>,
    /// Drive the (loopback) server of this kubeconfig instead.
    #[arg(long, value_name = "PATH")]
    kubeconfig: Option<PathBuf>,
    /// An extra flag for the started server (repeat for more), e.g.
    /// --server-arg=--etcd-servers=http://127.0.0.1:2379
    #[arg(long = "server-arg", value_name = "ARG", allow_hyphen_values = true)]
    server_args: Vec<String>,
    /// Directory for temporary data directories (default: the system temp directory).
    #[arg(long, value_name = "DIR")]
    data_root: Option<PathBuf>,
    /// Use a pool of HTTP/1.1 connections instead of one HTTP/2 connection.
    #[arg(long)]
    http1: bool,
    /// Repeat everything this many times; tables show medians.
    #[arg(long, default_value_t = 3)]
    runs: usize,
    /// ConfigMaps created per concurrency level (the working set of the other scenarios).
    #[arg(long, default_value_t = 10_000)]
    count: u64,
    /// Concurrency levels of create, get, update and patch.
    #[arg(long, value_delimiter = ',', default_value = "1,8,32")]
    concurrency: Vec<usize>,
    /// Seconds each time-bound scenario (get, list, update, patch) runs at most.
    #[arg(long, default_value_t = 5.0)]
    duration: f64,
    /// Requests per list scenario at most.
    #[arg(long, default_value_t = 20)]
    list_requests: u64,
    /// Page size of the paginated list walk.
    #[arg(long, default_value_t = 500)]
    page_limit: usize,
    /// Watcher counts of the fan-out scenario.
    #[arg(long, value_delimiter = ',', default_value = "100,1000,10000")]
    watchers: Vec<usize>,
    /// Creates per fan-out scenario (every watcher must see each).
    #[arg(long, default_value_t = 100)]
    watch_events: u64,
    /// Write rates of the fan-out scenario, creates per second (0 = one after another).
    #[arg(long, value_delimiter = ',', default_value = "0,100")]
    watch_rates: Vec<f64>,
    /// Watches per HTTP/2 connection in the fan-out and idle-watcher figures, as many
    /// client processes would hold them (0 = all on one connection).
    #[arg(long, default_value_t = 100)]
    watchers_per_connection: usize,
    /// Approximate size of each ConfigMap's JSON, bytes.
    #[arg(long, default_value_t = 1024)]
    object_size: usize,
    /// Seconds a create level (or the delete-all) may run before stopping short of
    /// --count; later scenarios use what was created.
    #[arg(long, default_value_t = 600.0)]
    write_time: f64,
    /// Timeout of one request, seconds.
    #[arg(long, default_value_t = 300.0)]
    timeout: f64,
    /// Scenario groups to leave out: create (and so every scenario), get, list, update,
    /// watch, delete, resources.
    #[arg(long, value_delimiter = ',')]
    skip: Vec<String>,
    /// Objects loaded for the memory and restart figures (default: --count).
    #[arg(long)]
    resource_objects: Option<u64>,
    /// Also load up to this many objects in total for the figures (0 = skip), e.g. 100000.
    #[arg(long, default_value_t = 0)]
    large_objects: u64,
    /// Idle watchers for the memory figure.
    #[arg(long, default_value_t = 1000)]
    idle_watchers: usize,
    /// Also run the raw redb baseline (1 key/txn at each --concurrency, --count txns) and
    /// print the server's create rate as a share of it.
    #[arg(long)]
    raw: bool,
    /// Worker threads of the load generator's runtime (default: one per core).
    #[arg(long)]
    threads: Option<usize>,
    /// Also write the markdown report to this file.
    #[arg(long, value_name = "FILE")]
    output: Option<PathBuf>,
}

#[derive(Args)]
struct RawArgs {
    /// Directory on the disk under test (a temporary directory is made inside it).
    #[arg(long, value_name = "DIR")]
    dir: Option<PathBuf>,
    /// Transactions per concurrency level.
    #[arg(long, default_value_t = 10_000)]
    count: u64,
    /// Writer threads per level.
    #[arg(long, value_delimiter = ',', default_value = "1,8,32")]
    concurrency: Vec<usize>,
    /// Bytes per value.
    #[arg(long, default_value_t = 1400)]
    value_size: usize,
    /// Also measure transactions of this many keys (0 = skip).
    #[arg(long, default_value_t = 32)]
    batch: usize,
    /// Repeat this many times; the table shows medians.
    #[arg(long, default_value_t = 3)]
    runs: usize,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Some(Command::RawRedb(args)) => run_raw(args),
        Some(Command::Storage(args)) => run_storage(args),
        Some(Command::Crds(args)) => run_crds(args),
        Some(Command::Authz(args)) => run_authz(args),
        Some(Command::Admission(args)) => run_admission(args),
        Some(Command::Audit(args)) => run_audit(args),
        Some(Command::ConsistentReads(args)) => run_on_one_etcd(args, false),
        Some(Command::BackendOps(args)) => run_on_one_etcd(args, true),
        Some(Command::Soak(args)) => run_soak(args),
        Some(Command::Startup(args)) => run_startup(args),
        None => run_suite(cli.suite),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn run_raw(args: RawArgs) -> anyhow::Result<ExitCode> {
    let opts = RawOptions {
        dir: args.dir,
        count: args.count,
        concurrency: args.concurrency,
        value_size: args.value_size,
        batch: args.batch,
        ..RawOptions::default()
    };
    let mut runs = Vec::new();
    for run in 0..args.runs.max(1) {
        eprintln!("run {}/{}", run + 1, args.runs.max(1));
        let rows = raw::run(&opts)?;
        for r in &rows {
            eprintln!(
                "  {} c={}: {:.0}/s",
                r.scenario, r.concurrency, r.throughput
            );
        }
        runs.push(rows);
    }
    let rows = median_rows(&runs);
    println!(
        "raw redb (the server's redb version, durable commits) — medians of {} run(s)\n",
        runs.len()
    );
    println!("{}", table(&rows, "txn"));
    let failed = rows.iter().any(|r| r.error_count() > 0);
    Ok(if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

fn run_storage(a: StorageArgs) -> anyhow::Result<ExitCode> {
    let backends = a
        .backends
        .iter()
        .map(|b| match b.as_str() {
            "embedded" => Ok(Backend::Embedded),
            "etcd" => Ok(Backend::Etcd),
            other => Err(anyhow::anyhow!(
                "--backends {other}: expected embedded or etcd"
            )),
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    if let Some(url) = &a.etcd_endpoint {
        let loopback = ["http://127.0.0.1:", "http://localhost:", "http://[::1]:"];
        if !loopback.iter().any(|p| url.starts_with(p)) {
            anyhow::bail!("--etcd-endpoint {url}: only loopback etcd endpoints are used");
        }
    }
    if a.concurrency.is_empty() {
        anyhow::bail!("--concurrency needs at least one level");
    }
    let opts = StorageOptions {
        backends,
        dir: a.dir,
        etcd_bin: a.etcd_bin,
        etcd_endpoint: a.etcd_endpoint,
        count: a.count,
        concurrency: a.concurrency,
        value_size: a.value_size,
        duration: Duration::from_secs_f64(a.duration),
        list_requests: a.list_requests,
        runs: a.runs,
    };
    let report = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?
        .block_on(storage::run(&opts))?;
    finish(&report.markdown(), report.error_count(), a.output)
}

fn run_suite(a: SuiteArgs) -> anyhow::Result<ExitCode> {
    let known = [
        "create",
        "get",
        "list",
        "update",
        "watch",
        "delete",
        "resources",
    ];
    if let Some(bad) = a.skip.iter().find(|s| !known.contains(&s.as_str())) {
        anyhow::bail!("--skip {bad}: expected one of {}", known.join(", "));
    }
    let skip = |s: &str| a.skip.iter().any(|x| x == s);
    let opts = SuiteOptions {
        server_bin: a.server_bin,
        kubeconfig: a.kubeconfig,
        server_args: a.server_args,
        data_root: a.data_root.clone(),
        protocol: if a.http1 {
            Protocol::Http1
        } else {
            Protocol::Http2
        },
        request_timeout: Duration::from_secs_f64(a.timeout),
        runs: a.runs,
        settings: Settings {
            count: a.count,
            concurrency: a.concurrency.clone(),
            duration: Duration::from_secs_f64(a.duration),
            list_requests: a.list_requests,
            page_limit: a.page_limit,
            watchers: a.watchers,
            watch_events: a.watch_events,
            watch_rates: a.watch_rates,
            watchers_per_connection: a.watchers_per_connection,
            object_size: a.object_size,
            write_time: Duration::from_secs_f64(a.write_time),
            ..Settings::default()
        },
        selection: Selection {
            create: !skip("create"),
            get: !skip("get"),
            list: !skip("list"),
            update: !skip("update"),
            watch: !skip("watch"),
            delete: !skip("delete"),
            resources: !skip("resources"),
        },
        resource_objects: a.resource_objects.unwrap_or(a.count),
        large_objects: a.large_objects,
        idle_watchers: a.idle_watchers,
        raw: a.raw.then(|| RawOptions {
            dir: a.data_root,
            count: a.count,
            concurrency: a.concurrency,
            ..RawOptions::default()
        }),
    };
    let mut rt = tokio::runtime::Builder::new_multi_thread();
    rt.enable_all();
    if let Some(t) = a.threads {
        rt.worker_threads(t.max(1));
    }
    let report = rt.build()?.block_on(suite::run(&opts))?;
    finish(&report.markdown(), report.error_count(), a.output)
}

fn run_crds(a: CrdArgs) -> anyhow::Result<ExitCode> {
    let known = ["install", "startup", "compare"];
    if let Some(bad) = a.skip.iter().find(|s| !known.contains(&s.as_str())) {
        anyhow::bail!("--skip {bad}: expected one of {}", known.join(", "));
    }
    let skip = |s: &str| a.skip.iter().any(|x| x == s);
    let opts = CrdOptions {
        server_bin: a.server_bin,
        server_args: a.server_args,
        data_root: a.data_root,
        protocol: if a.http1 {
            Protocol::Http1
        } else {
            Protocol::Http2
        },
        request_timeout: Duration::from_secs_f64(a.timeout),
        runs: a.runs,
        steps: a.crds,
        establish_timeout: Duration::from_secs_f64(a.establish_timeout),
        poll_interval: Duration::from_secs_f64(a.poll_ms / 1000.0),
        objects: a.objects,
        concurrency: a.concurrency,
        object_size: a.object_size,
        duration: Duration::from_secs_f64(a.duration),
        list_requests: a.list_requests,
        write_time: Duration::from_secs_f64(a.write_time),
        selection: CrdSelection {
            install: !skip("install"),
            startup: !skip("startup"),
            compare: !skip("compare"),
        },
    };
    let mut rt = tokio::runtime::Builder::new_multi_thread();
    rt.enable_all();
    if let Some(t) = a.threads {
        rt.worker_threads(t.max(1));
    }
    let report = rt.build()?.block_on(crds::run(&opts))?;
    finish(&report.markdown(), report.error_count(), a.output)
}

fn run_authz(a: AuthzArgs) -> anyhow::Result<ExitCode> {
    let opts = AuthzOptions {
        server_bin: a.server_bin,
        server_args: a.server_args,
        data_root: a.data_root,
        protocol: if a.http1 {
            Protocol::Http1
        } else {
            Protocol::Http2
        },
        request_timeout: Duration::from_secs_f64(a.timeout),
        runs: a.runs,
        count: a.count,
        concurrency: a.concurrency,
        duration: Duration::from_secs_f64(a.duration),
        object_size: a.object_size,
        bindings: a.bindings,
        write_time: Duration::from_secs_f64(a.write_time),
        effect_timeout: Duration::from_secs_f64(a.effect_timeout),
    };
    let mut rt = tokio::runtime::Builder::new_multi_thread();
    rt.enable_all();
    if let Some(t) = a.threads {
        rt.worker_threads(t.max(1));
    }
    let report = rt.build()?.block_on(authz::run(&opts))?;
    finish(&report.markdown(), report.error_count(), a.output)
}

fn run_admission(a: AdmissionArgs) -> anyhow::Result<ExitCode> {
    let opts = AdmissionOptions {
        server_bin: a.server_bin,
        server_args: a.server_args,
        data_root: a.data_root,
        protocol: if a.http1 {
            Protocol::Http1
        } else {
            Protocol::Http2
        },
        request_timeout: Duration::from_secs_f64(a.timeout),
        runs: a.runs,
        count: a.count,
        concurrency: a.concurrency,
        duration: Duration::from_secs_f64(a.duration),
        object_size: a.object_size,
        write_time: Duration::from_secs_f64(a.write_time),
        effect_timeout: Duration::from_secs_f64(a.effect_timeout),
    };
    let mut rt = tokio::runtime::Builder::new_multi_thread();
    rt.enable_all();
    if let Some(t) = a.threads {
        rt.worker_threads(t.max(1));
    }
    let report = rt.build()?.block_on(admission::run(&opts))?;
    finish(&report.markdown(), report.error_count(), a.output)
}

fn run_audit(a: AuditArgs) -> anyhow::Result<ExitCode> {
    let opts = AuditOptions {
        server_bin: a.server_bin,
        server_args: a.server_args,
        data_root: a.data_root,
        protocol: if a.http1 {
            Protocol::Http1
        } else {
            Protocol::Http2
        },
        request_timeout: Duration::from_secs_f64(a.timeout),
        runs: a.runs,
        count: a.count,
        concurrency: a.concurrency,
        duration: Duration::from_secs_f64(a.duration),
        object_size: a.object_size,
        write_time: Duration::from_secs_f64(a.write_time),
    };
    let mut rt = tokio::runtime::Builder::new_multi_thread();
    rt.enable_all();
    if let Some(t) = a.threads {
        rt.worker_threads(t.max(1));
    }
    let report = rt.build()?.block_on(audit::run(&opts))?;
    finish(&report.markdown(), report.error_count(), a.output)
}

/// `consistent-reads` and `backend-ops` (which takes the same flags: `--count` ConfigMaps
/// created, then GETs, LISTs and updates for `--duration` seconds each).
fn run_on_one_etcd(a: ConsistentReadArgs, ops: bool) -> anyhow::Result<ExitCode> {
    let opts = EtcdBenchOptions {
        server_bin: a.server_bin,
        etcd_bin: a.etcd_bin,
        server_args: a.server_args,
        data_root: a.data_root,
        protocol: if a.http1 {
            Protocol::Http1
        } else {
            Protocol::Http2
        },
        request_timeout: Duration::from_secs_f64(a.timeout),
        runs: a.runs,
        count: a.count,
        concurrency: a.concurrency,
        duration: Duration::from_secs_f64(a.duration),
        object_size: a.object_size,
    };
    let mut rt = tokio::runtime::Builder::new_multi_thread();
    rt.enable_all();
    if let Some(t) = a.threads {
        rt.worker_threads(t.max(1));
    }
    let rt = rt.build()?;
    if ops {
        let report = rt.block_on(backend_ops::run(&opts))?;
        finish(&report.markdown(), report.error_count(), a.output)
    } else {
        let report = rt.block_on(consistent_reads::run(&opts))?;
        finish(&report.markdown(), report.error_count(), a.output)
    }
}

fn run_soak(a: SoakArgs) -> anyhow::Result<ExitCode> {
    let opts = SoakOptions {
        server_bin: a.server_bin,
        server_args: a.server_args,
        etcd_bin: a.etcd_bin,
        data_root: a.data_root,
        protocol: if a.http1 {
            Protocol::Http1
        } else {
            Protocol::Http2
        },
        request_timeout: Duration::from_secs_f64(a.timeout),
        duration: Duration::from_secs_f64(a.duration * 60.0),
        interval: Duration::from_secs_f64(a.interval),
        watchers: a.watchers,
        watchers_per_connection: a.watchers_per_connection,
        shards: a.shards,
        objects: a.objects,
        writers: a.writers,
        write_rate: a.write_rate,
        list_rate: a.list_rate,
        object_size: a.object_size,
        rss_growth: a.rss_growth / 100.0,
        watch_grace: Duration::from_secs_f64(a.watch_grace),
    };
    let mut rt = tokio::runtime::Builder::new_multi_thread();
    rt.enable_all();
    if let Some(t) = a.threads {
        rt.worker_threads(t.max(1));
    }
    let report = rt.build()?.block_on(soak::run(&opts))?;
    finish(&report.markdown(), report.failures(), a.output)
}

/// Prints the report (and writes it to `output`); fails the process when any operation
/// failed.
fn run_startup(a: StartupArgs) -> anyhow::Result<ExitCode> {
    let opts = StartupOptions {
        server_bin: a.server_bin,
        server_args: a.server_args,
        data_root: a.data_root,
        runs: a.runs,
    };
    let report = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?
        .block_on(startup::run(&opts))?;
    finish(&report.markdown(), 0, a.output)
}

fn finish(md: &str, errors: u64, output: Option<PathBuf>) -> anyhow::Result<ExitCode> {
    println!("{md}");
    if let Some(path) = output {
        std::fs::write(&path, md)?;
    }
    Ok(if errors > 0 {
        eprintln!("{errors} operations failed");
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}
