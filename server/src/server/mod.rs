//! Start-up, in kube-apiserver's order: resource registration → flags → generic config
//! (storage, serving certificates, admin kubeconfig) → the delegation chain → HTTPS.

pub mod auth;
pub mod chain;
pub mod client_stream;
pub mod connection;
pub mod health;
pub mod https;
pub mod kubeconfig;
pub mod lifecycle;
pub mod tls;
pub mod write_batch;

use std::process::ExitCode;
use std::sync::Arc;

use actix_web::web;
use serde_json::json;

use crate::catalog::Catalog;
use crate::endpoints::ApiState;
use crate::openapi::OpenApi;
use crate::options::{CommandLine, ServerRunOptions};
use crate::registry::Store;
use crate::storage::encryption::EncryptionConfig;
use crate::storage::{ResourceStorages, Storage};
use crate::{filters, generated};

/// Namespaces that exist from the first start, as in every Kubernetes cluster.
const SYSTEM_NAMESPACES: &[&str] = &["default", "kube-node-lease", "kube-public", "kube-system"];
/// actix-web's keep-alive: an idle HTTP/1 connection is closed after it, and an HTTP/2
/// connection is PINGed every period and closed when the answer takes longer than one.
/// Not actix's 5 s: a PING waits behind every byte already queued on the connection, so
/// a live client a few seconds behind a busy connection of watches (or briefly starved
/// of CPU) answered late and lost all its watches at once. 15 s still finds a dead peer
/// within 30 s.
const KEEP_ALIVE: std::time::Duration = std::time::Duration::from_secs(15);

impl ApiState {
    /// Whether storage answers (within a short deadline); used by `/readyz` and `/healthz`.
    pub async fn store_health(&self) -> Result<(), String> {
        self.storage.health().await.map_err(|e| e.to_string())
    }
}

/// Runs the server until it is stopped; the binary's whole `main`. Flag errors exit 1,
/// as kube-apiserver's do; so does a second SIGTERM/SIGINT during graceful shutdown.
pub fn run() -> ExitCode {
    // `apiserver migrate-storage ...` is a client of a running server, not a server.
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some("migrate-storage") {
        return crate::migrate::run(&args[1..]);
    }
    // 1. Resource registration: the compiled-in definitions become catalog entries.
    let catalog = match Catalog::from_definitions(generated::CATALOG) {
        Ok(c) => Arc::new(c),
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::FAILURE;
        }
    };
    // 2. Flags, every problem reported at once.
    let (command_line, warnings) = ServerRunOptions::from_command_line(std::env::args());
    for w in &warnings {
        eprintln!("{w}");
    }
    let opts = match command_line {
        CommandLine::Serve(opts) => *opts,
        CommandLine::Print(text) => {
            print!("{text}");
            return ExitCode::SUCCESS;
        }
        CommandLine::Refuse(errors) => {
            for e in &errors {
                eprintln!("error: {e}");
            }
            eprintln!("Run 'apiserver --help' for the flags this server takes.");
            return ExitCode::FAILURE;
        }
    };
    // Validated with the other flags; the text format at -v=0 would do otherwise.
    let (format, verbosity, modules) =
        opts.logging()
            .unwrap_or((crate::logging::LogFormat::Text, 0, Vec::new()));
    crate::logging::init(format, verbosity, &modules);
    crate::panics::install_hook();
    raise_open_files_limit();
    match actix_web::rt::System::new().block_on(serve(opts, catalog)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

async fn serve(opts: ServerRunOptions, catalog: Arc<Catalog>) -> Result<(), String> {
    // 3. Generic config: storage, serving certificate, admin kubeconfig.
    std::fs::create_dir_all(&opts.data_dir)
        .map_err(|e| format!("creating --data-dir {}: {e}", opts.data_dir.display()))?;
    // The embedded store, or etcd with --etcd-servers; plus the history compactor.
    // Encryption at rest is checked before storage is touched, so a bad file changes nothing.
    let encryption = match &opts.encryption_provider_config {
        Some(path) => Some(EncryptionConfig::load(path)?),
        None => None,
    };
    crate::metrics::disable(&opts.disabled_metrics);
    let storage: Arc<dyn Storage> = crate::storage::open(&opts.storage_config()).await?;
    let storages = ResourceStorages::new(storage.clone(), encryption.as_ref());
    let store = Store::new(storages, opts.watch_cache)
        .with_service_ranges(opts.service_allocator().map_err(|e| e.join("; "))?)
        .with_service_kinds(&catalog);
    // Watch caches load now, on this runtime, rather than on a worker's first request;
    // entries registered later get theirs when they are registered.
    for res in catalog.all() {
        store.warm_up(&res);
    }
    store.follow(&catalog);
    let cert = tls::serving_cert(
        opts.tls_cert_file.as_deref(),
        opts.tls_private_key_file.as_deref(),
        &opts.cert_dir(),
        opts.bind_address,
    )?;
    let admin_token = admin_token(&opts)?;
    let aggregator = crate::aggregator::Aggregator::new(
        catalog.clone(),
        store.clone(),
        opts.proxy_client_cert()?,
        opts.enable_aggregator_routing,
        opts.aggregated_openapi_refresh_interval,
    );
    let state = web::Data::new(ApiState {
        catalog: catalog.clone(),
        store,
        storage,
        crds_synced: Default::default(),
        hooks: Default::default(),
        aggregator: aggregator.clone(),
        lifecycle: Arc::new(lifecycle::Lifecycle::new(opts.shutdown_send_retry_after)),
    });
    // Post-start hooks, as kube-apiserver names them; readiness waits for each.
    let hooks = &state.hooks;
    hooks.register_flag("crd-informer-synced", state.crds_synced.clone());
    let namespaces_created = hooks.register("start-system-namespaces-controller");
    let caches_loaded = hooks.register("storage-readiness");
    {
        let store = state.store.clone();
        crate::panics::spawn("storage readiness", async move {
            store.wait_caches_loaded().await;
            caches_loaded.store(true, std::sync::atomic::Ordering::Release);
        });
    }
    // Listened for from here on, so a signal during start-up is not missed.
    let signals =
        lifecycle::Signals::listen().map_err(|e| format!("listening for signals: {e}"))?;
    let configured = auth::configure(&opts, &admin_token, &state).await?;
    let tls_config = tls::rustls_config(&cert, &opts.tls_policy(), configured.client_verifier)?;
    bootstrap(&state).await?;
    auth::publish_extension_authentication(&state, &configured.published).await?;
    kubernetes_service(&state, opts.secure_port).await?;
    let endpoint_reconciler =
        endpoint_reconciler(&state, opts.bind_address, opts.secure_port).await?;
    // After the kubernetes Service: its cluster IP is claimed by its own create.
    crate::registry::service_claims::spawn_repair(
        state.store.clone(),
        hooks.register("start-service-ip-repair-controllers"),
    );
    namespaces_created.store(true, std::sync::atomic::Ordering::Release);
    if let Some(rbac) = configured.rbac {
        let bootstrapped = state.hooks.register("rbac/bootstrap-roles");
        crate::controllers::rbac::start(catalog.clone(), state.store.clone(), rbac).await?;
        bootstrapped.store(true, std::sync::atomic::Ordering::Release);
    }
    let elector = controller_manager(&opts, &state, &cert.ca_pem)?;
    crate::controllers::crd::spawn(
        catalog.clone(),
        state.store.clone(),
        state.crds_synced.clone(),
    );
    if let Some(dir) = &opts.definitions_dir {
        crate::controllers::definitions::spawn(catalog.clone(), dir.clone());
    }
    // After the system namespaces and the CRD controller: the local APIServices name
    // every group-version served at start-up.
    aggregator.start().await?;
    let openapi = web::Data::new(OpenApi::new(catalog.clone()).with_aggregator(aggregator.clone()));

    // 4. The delegation chain inside the request filters.
    let app_state = state.clone();
    let limits = web::Data::new(filters::limits::ServingLimits::new(
        opts.max_requests_inflight,
        opts.max_mutating_requests_inflight,
        opts.request_timeout,
    ));
    let shutdown = lifecycle::ShutdownConfig {
        delay: opts.shutdown_delay_duration,
        watch_grace: opts.shutdown_watch_termination_grace_period,
        request_timeout: opts.request_timeout,
    };
    let auth = web::Data::new(configured.auth);
    let admission = web::Data::new(admission_chain(&opts, &state, &auth).await?);
    let (audit, audit_webhook) = audit(&opts)?;
    let app = move || {
        filters::handler_chain(
            app_state.clone(),
            openapi.clone(),
            limits.clone(),
            auth.clone(),
            admission.clone(),
            audit.clone(),
        )
    };
    let serving = https::Serving {
        keep_alive: KEEP_ALIVE,
        workers: opts.workers,
        shutdown_timeout: shutdown.connections_timeout().as_secs().max(1),
    };
    let addr = std::net::SocketAddr::new(opts.bind_address, opts.secure_port);
    let socket = listener(addr).map_err(|e| format!("cannot listen on {addr}: {e}"))?;
    // Kept to refuse new connections at shutdown, while the server finishes its own.
    let listening = socket
        .try_clone()
        .map_err(|e| format!("cannot listen on {addr}: {e}"))?;
    let bound = socket.local_addr().unwrap_or(addr);
    let server = https::server(app, socket, tls_config, &serving)
        .map_err(|e| format!("cannot listen on {addr}: {e}"))?;

    // 5. Serving: tell the user where, and how to reach it with kubectl.
    let host = if bound.ip().is_unspecified() {
        "127.0.0.1".to_string()
    } else {
        bound.ip().to_string()
    };
    let host = if host.contains(':') {
        format!("[{host}]")
    } else {
        host
    };
    let url = format!("https://{host}:{}", bound.port());
    let kubeconfig = opts.kubeconfig_path();
    kubeconfig::write(&kubeconfig, &url, &cert.ca_pem, &admin_token)?;
    let kubeconfig = std::fs::canonicalize(&kubeconfig).unwrap_or(kubeconfig);
    println!("Serving securely on {url}");
    println!("Admin kubeconfig: {}", kubeconfig.display());
    println!(
        "Try: kubectl --kubeconfig {} get namespaces",
        kubeconfig.display()
    );
    let graceful = lifecycle::shutdown(
        signals,
        state.lifecycle.clone(),
        state.hooks.clone(),
        lifecycle::HttpServerControl {
            handle: server.handle(),
            listener: socket2::Socket::from(listening),
        },
        shutdown,
    );
    tokio::pin!(server);
    tokio::select! {
        served = &mut server => served.map_err(|e| e.to_string())?,
        () = graceful => lifecycle::connections_closed(&mut server).await,
    }
    // A held Lease is released, and this instance taken out of the kubernetes
    // Service's endpoints (both at shutdown's start), before storage closes.
    for task in [elector, endpoint_reconciler].into_iter().flatten() {
        let _ = tokio::time::timeout(LEASE_RELEASE_WAIT, task).await;
    }
    if let Some(webhook) = audit_webhook {
        webhook.shutdown(AUDIT_FLUSH_WAIT).await;
    }
    // Nothing is served any more: storage is closed last.
    state.storage.close().await;
    tracing::info!("[graceful-termination] apiserver is exiting");
    Ok(())
}

/// How long shutdown waits for the leader elector to release its Lease.
const LEASE_RELEASE_WAIT: std::time::Duration = std::time::Duration::from_secs(5);

/// Starts kube-controller-manager's controllers: at once on the embedded store (one
/// instance serves it) or with `--leader-elect=false`, else whenever this instance
/// holds the leader Lease. Returns the elector's task, which ends at shutdown once the
/// Lease is released.
fn controller_manager(
    opts: &ServerRunOptions,
    state: &ApiState,
    ca_pem: &str,
) -> Result<Option<tokio::task::JoinHandle<()>>, String> {
    use crate::controllers::{leader_election, scope::Scope, ControllerManager};
    let manager = ControllerManager {
        catalog: state.catalog.clone(),
        store: state.store.clone(),
        selection: crate::controllers::Selection::parse(&opts.controllers)?,
        root_ca_pem: ca_pem.to_string(),
        event_ttl: opts.event_ttl,
    };
    let Some(config) = opts.leader_election() else {
        manager.start(&Scope::forever());
        return Ok(None);
    };
    let lease = state
        .catalog
        .get("coordination.k8s.io", "v1", "leases")
        .ok_or("--leader-elect needs the coordination.k8s.io/v1 Lease kind")?;
    let elector = leader_election::LeaderElector::new(
        config,
        leader_election::identity(),
        state.store.clone(),
        lease,
    );
    let hooks = state.hooks.clone();
    Ok(Some(crate::panics::spawn(
        "leader election",
        elector.run(hooks, move |scope| manager.start(scope)),
    )))
}

/// The admission chain of the plugins the flags select, their configuration followed
/// from the watch caches from here on.
async fn admission_chain(
    opts: &ServerRunOptions,
    state: &ApiState,
    auth: &web::Data<crate::auth::Auth>,
) -> Result<crate::admission::Chain, String> {
    use crate::admission::{plugins, policy::Policies, webhook::WebhookConfigurations};
    let selected = opts.admission_plugins().map_err(|e| e.join("; "))?;
    let inert = plugins::inert(&selected);
    if !inert.is_empty() {
        tracing::info!(
            "admission plugins with nothing to act on here (their kinds are not served): {}",
            inert.join(", ")
        );
    }
    let webhooks = WebhookConfigurations::start(state.catalog.clone(), state.store.clone()).await;
    let policies = Policies::start(state.catalog.clone(), state.store.clone()).await;
    Ok(plugins::build(
        &selected,
        plugins::Dependencies {
            catalog: state.catalog.clone(),
            store: state.store.clone(),
            escalation: crate::auth::escalation::EscalationCheck { auth: auth.clone() },
            webhooks,
            policies,
        },
    ))
}

/// Auditing, when `--audit-policy-file` and a backend (`--audit-log-path`,
/// `--audit-webhook-config-file`) are given; the webhook backend too, to flush at shutdown.
fn audit(opts: &ServerRunOptions) -> Result<AuditParts, String> {
    let Some(config) = opts.audit_config().map_err(|e| e.join("; "))? else {
        let backend = opts.audit_log_path.is_some() || opts.audit_webhook_config_file.is_some();
        if opts.audit_policy_file.is_some() != backend {
            tracing::warn!(
                "auditing is off: it needs --audit-policy-file and --audit-log-path or --audit-webhook-config-file"
            );
        }
        return Ok((None, None));
    };
    let mut backends: Vec<Arc<dyn crate::audit::Backend>> = Vec::new();
    if let Some((destination, mode)) = config.log {
        let log = crate::audit::log::LogBackend::open(destination, mode)
            .map_err(|e| format!("--audit-log-path: {e}"))?;
        backends.push(log);
    }
    let webhook = config
        .webhook
        .map(crate::audit::webhook::WebhookBackend::start);
    if let Some(webhook) = &webhook {
        backends.push(webhook.clone());
    }
    let audit = crate::audit::Audit::new(config.policy, backends);
    Ok((Some(web::Data::new(audit)), webhook))
}

/// The audit filter's state and the webhook backend, when there is one.
type AuditParts = (
    Option<web::Data<crate::audit::Audit>>,
    Option<Arc<crate::audit::webhook::WebhookBackend>>,
);

/// How long shutdown waits for a batching audit webhook to send what it holds.
const AUDIT_FLUSH_WAIT: std::time::Duration = std::time::Duration::from_secs(10);

/// How long a connection is idle before TCP keep-alive probes start, and how far apart
/// they are (Go's net/http server, kube-apiserver's, probes every 15 s).
const TCP_KEEPALIVE: std::time::Duration = std::time::Duration::from_secs(15);

/// The listening socket. Accepted connections inherit its options: TCP_NODELAY (with
/// Nagle's algorithm a response written as several TLS records waits for the client's
/// delayed ACK, ~40 ms per request), and TCP keep-alive, which finds half-open
/// connections (a client host gone without closing) that a long watch would otherwise
/// hold until its timeout. HTTP/2 connections are also pinged (actix-web's keep-alive).
fn listener(addr: std::net::SocketAddr) -> std::io::Result<std::net::TcpListener> {
    let socket = socket2::Socket::new(
        socket2::Domain::for_address(addr),
        socket2::Type::STREAM,
        Some(socket2::Protocol::TCP),
    )?;
    socket.set_reuse_address(true)?;
    socket.set_tcp_nodelay(true)?;
    socket.set_tcp_keepalive(
        &socket2::TcpKeepalive::new()
            .with_time(TCP_KEEPALIVE)
            .with_interval(TCP_KEEPALIVE),
    )?;
    socket.bind(&addr.into())?;
    socket.listen(1024)?;
    Ok(socket.into())
}

/// Raises the soft limit of open files to the hard one, as Go's runtime does at start
/// for every Go program (kube-apiserver among them): each connection is a descriptor,
/// and a soft limit of 1024 would refuse clients long before memory runs short.
fn raise_open_files_limit() {
    use rustix::process::{getrlimit, setrlimit, Resource, Rlimit};
    let limit = getrlimit(Resource::Nofile);
    if limit.current == limit.maximum {
        return;
    }
    let raised = Rlimit {
        current: limit.maximum,
        maximum: limit.maximum,
    };
    if let Err(e) = setrlimit(Resource::Nofile, raised) {
        tracing::warn!(error = %e, "could not raise the open files limit");
    }
}

/// The admin bearer token, made once per data directory.
fn admin_token(opts: &ServerRunOptions) -> Result<String, String> {
    let path = opts.data_dir.join("admin.token");
    if let Ok(t) = std::fs::read_to_string(&path) {
        if !t.trim().is_empty() {
            return Ok(t.trim().to_string());
        }
    }
    let token = uuid::Uuid::new_v4().simple().to_string();
    std::fs::write(&path, &token).map_err(|e| format!("writing {}: {e}", path.display()))?;
    Ok(token)
}

/// Objects every cluster starts with.
async fn bootstrap(state: &ApiState) -> Result<(), String> {
    let Some(namespaces) = state.catalog.get("", "v1", "namespaces") else {
        return Ok(());
    };
    for ns in SYSTEM_NAMESPACES {
        let obj = json!({ "apiVersion": "v1", "kind": "Namespace", "metadata": { "name": ns } });
        state
            .store
            .ensure(&namespaces, obj)
            .await
            .map_err(|e| format!("creating namespace {ns}: {e}"))?;
    }
    Ok(())
}

/// Lists this instance (at the bind address, 127.0.0.1 when unspecified) in the
/// `kubernetes` Service's endpoints at once, then keeps its endpoint Lease renewed;
/// the returned task ends once shutdown has taken it out again.
async fn endpoint_reconciler(
    state: &ApiState,
    bind: std::net::IpAddr,
    port: u16,
) -> Result<Option<tokio::task::JoinHandle<()>>, String> {
    use crate::controllers::endpoint_reconciler::EndpointReconciler;
    let address = match bind {
        std::net::IpAddr::V4(a) if a.is_unspecified() => std::net::Ipv4Addr::LOCALHOST.into(),
        std::net::IpAddr::V6(a) if a.is_unspecified() => std::net::Ipv6Addr::LOCALHOST.into(),
        other => other,
    };
    let me = std::net::SocketAddr::new(address, port);
    let Some(reconciler) = EndpointReconciler::new(&state.catalog, state.store.clone(), me) else {
        return Ok(None);
    };
    reconciler
        .reconcile()
        .await
        .map_err(|e| format!("writing the kubernetes service's endpoints: {e}"))?;
    Ok(Some(reconciler.spawn(state.hooks.clone())))
}

/// The `kubernetes` Service in `default` (the first address of the cluster IP range,
/// port 443 `https` to the secure port), created when missing. Its Endpoints and
/// EndpointSlices are the endpoint reconciler's (`controllers::endpoint_reconciler`).
async fn kubernetes_service(state: &ApiState, port: u16) -> Result<(), String> {
    use crate::registry::store::WriteContext;
    let Some(res) = state.catalog.get("", "v1", "services") else {
        return Ok(());
    };
    let (range, _) = state.store.service_ranges();
    let labels = json!({ "component": "apiserver", "provider": "kubernetes" });
    let obj = json!({ "apiVersion": "v1", "kind": "Service", "metadata": { "name": "kubernetes", "labels": labels }, "spec": { "type": "ClusterIP", "clusterIP": range.first().to_string(), "ports": [{ "name": "https", "port": 443, "protocol": "TCP", "targetPort": port }], "sessionAffinity": "None" } });
    let fail = |e: crate::api::ApiError| format!("creating service default/kubernetes: {e}");
    // Looked up first: creating the Service again would find its address taken.
    match state.store.get(&res, Some("default"), "kubernetes").await {
        Ok(_) => Ok(()),
        Err(e) if e.is_not_found() => {
            let ctx = WriteContext::new("kube-apiserver");
            match state.store.create(&res, Some("default"), obj, &ctx).await {
                Ok(_) => Ok(()),
                // Another instance starting at the same time created it first.
                Err(e)
                    if state
                        .store
                        .get(&res, Some("default"), "kubernetes")
                        .await
                        .is_ok() =>
                {
                    tracing::debug!(
                        "service default/kubernetes: created by another instance ({e})"
                    );
                    Ok(())
                }
                Err(e) => Err(fail(e)),
            }
        }
        Err(e) => Err(fail(e)),
    }
}
