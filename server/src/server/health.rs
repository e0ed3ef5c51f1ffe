//! `/healthz`, `/livez`, `/readyz` and `/version`.
//!
//! The health endpoints answer as kube-apiserver's healthz package does: a list of named
//! checks (`ping`, `log`, `etcd`, `poststarthook/<name>` for each start-up hook, and for
//! readiness `etcd-readiness` and `shutdown`), each also served on its own path
//! (`/readyz/ping`, `/livez/poststarthook/rbac/bootstrap-roles`; 404 for a name that is not
//! a check); `?verbose` lists every check, `?exclude=<name>` (repeatable) skips one and
//! lists it as excluded; a failing check makes the answer 500 with the list, its reason
//! withheld (the reason is on the check's own path and in the log).

use std::fmt::Write as _;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, RwLock};

use actix_web::http::StatusCode;
use actix_web::{web, HttpRequest, HttpResponse};
use serde_json::json;

use crate::api::ApiError;
use crate::endpoints::ApiState;

/// The post-start hooks health reports, in the order they were registered, and whether
/// the server is shutting down.
#[derive(Debug, Default)]
pub struct Hooks {
    hooks: RwLock<Vec<(&'static str, Arc<AtomicBool>)>>,
    /// A channel rather than a flag: the leader elector waits on it to let its lease go.
    shutting_down: tokio::sync::watch::Sender<bool>,
}

impl Hooks {
    /// Adds the hook `poststarthook/<name>`, done once `done` is set.
    pub fn register_flag(&self, name: &'static str, done: Arc<AtomicBool>) {
        self.hooks
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .push((name, done));
    }

    /// Adds the hook `poststarthook/<name>` and returns the flag that finishes it.
    pub fn register(&self, name: &'static str) -> Arc<AtomicBool> {
        let done = Arc::new(AtomicBool::new(false));
        self.register_flag(name, done.clone());
        done
    }

    /// From now on `/readyz` fails its `shutdown` check.
    pub fn shut_down(&self) {
        self.shutting_down.send_replace(true);
    }

    /// Resolves once shutdown has begun (SIGTERM or SIGINT).
    pub async fn shutdown_initiated(&self) {
        let mut rx = self.shutting_down.subscribe();
        // The sender lives as long as `self`, which this borrow keeps alive.
        let _ = rx.wait_for(|s| *s).await;
    }

    fn snapshot(&self) -> Vec<(&'static str, Arc<AtomicBool>)> {
        self.hooks.read().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

/// The three health endpoints.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Endpoint {
    Healthz,
    Livez,
    Readyz,
}

impl Endpoint {
    fn name(self) -> &'static str {
        match self {
            Endpoint::Healthz => "healthz",
            Endpoint::Livez => "livez",
            Endpoint::Readyz => "readyz",
        }
    }
}

/// One named check.
#[derive(Clone, Debug)]
enum Check {
    Ping,
    Log,
    /// Storage answers (named after etcd, as upstream, whichever backend serves).
    Etcd,
    /// The same, for readiness (upstream checks it with its own timeout).
    EtcdReadiness,
    PostStartHook(&'static str, Arc<AtomicBool>),
    Shutdown,
}

impl Check {
    fn name(&self) -> String {
        match self {
            Check::Ping => "ping".into(),
            Check::Log => "log".into(),
            Check::Etcd => "etcd".into(),
            Check::EtcdReadiness => "etcd-readiness".into(),
            Check::PostStartHook(name, _) => format!("poststarthook/{name}"),
            Check::Shutdown => "shutdown".into(),
        }
    }
}

/// The checks of `endpoint`, in upstream's order.
fn checks(endpoint: Endpoint, hooks: &Hooks) -> Vec<Check> {
    let mut checks = vec![Check::Ping, Check::Log, Check::Etcd];
    if endpoint == Endpoint::Readyz {
        checks.push(Check::EtcdReadiness);
    }
    checks.extend(
        hooks
            .snapshot()
            .into_iter()
            .map(|(name, done)| Check::PostStartHook(name, done)),
    );
    if endpoint == Endpoint::Readyz {
        checks.push(Check::Shutdown);
    }
    checks
}

/// Runs checks, asking storage at most once per request.
struct Runner<'a> {
    state: &'a ApiState,
    hooks: &'a Hooks,
    storage: Option<Result<(), String>>,
}

impl Runner<'_> {
    async fn run(&mut self, check: &Check) -> Result<(), String> {
        match check {
            Check::Ping => Ok(()),
            // Logs are written synchronously to stderr: nothing can be stuck behind them.
            Check::Log => Ok(()),
            Check::Etcd | Check::EtcdReadiness => {
                if self.storage.is_none() {
                    self.storage = Some(self.state.store_health().await);
                }
                self.storage.clone().unwrap_or(Ok(()))
            }
            Check::PostStartHook(_, done) => match done.load(Ordering::Acquire) {
                true => Ok(()),
                false => Err("not finished".into()),
            },
            Check::Shutdown => match *self.hooks.shutting_down.borrow() {
                true => Err("process is shutting down".into()),
                false => Ok(()),
            },
        }
    }
}

/// Mounts the health and version endpoints.
pub fn configure(cfg: &mut web::ServiceConfig) {
    for (path, endpoint) in [
        ("/healthz", Endpoint::Healthz),
        ("/livez", Endpoint::Livez),
        ("/readyz", Endpoint::Readyz),
    ] {
        cfg.route(
            path,
            web::get().to(move |req: HttpRequest, state: web::Data<ApiState>| async move {
                report(&req, &state, endpoint).await
            }),
        )
        .route(
            &format!("{path}/{{check:.+}}"),
            web::get().to(
                move |req: HttpRequest,
                      state: web::Data<ApiState>,
                      check: web::Path<String>| async move {
                    one(&req, &state, endpoint, &check).await
                },
            ),
        );
    }
    cfg.route("/version", web::get().to(version))
        .route("/version/", web::get().to(version));
}

/// What the query asks: `verbose` (present, whatever its value) and the `exclude`d names.
fn query(req: &HttpRequest) -> (bool, Vec<String>) {
    let mut verbose = false;
    let mut excluded = Vec::new();
    for kv in req.query_string().split('&').filter(|kv| !kv.is_empty()) {
        let (k, v) = kv.split_once('=').unwrap_or((kv, ""));
        match decode(k).as_str() {
            "verbose" => verbose = true,
            "exclude" => excluded.push(decode(v)),
            _ => {}
        }
    }
    (verbose, excluded)
}

/// Percent-decodes a query component (`+` is a space).
fn decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < bytes.len() => {
                let hex = |c: u8| (c as char).to_digit(16);
                match (hex(bytes[i + 1]), hex(bytes[i + 2])) {
                    (Some(hi), Some(lo)) => {
                        out.push((hi * 16 + lo) as u8);
                        i += 2;
                    }
                    _ => out.push(b'%'),
                }
            }
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn text(status: StatusCode, body: String) -> HttpResponse {
    HttpResponse::build(status)
        .content_type("text/plain; charset=utf-8")
        .insert_header(("X-Content-Type-Options", "nosniff"))
        .body(body)
}

/// The endpoint's answer: every check not excluded is run.
async fn report(req: &HttpRequest, state: &ApiState, endpoint: Endpoint) -> HttpResponse {
    let (verbose, mut excluded) = query(req);
    let hooks = state.hooks.clone();
    let mut runner = Runner {
        state,
        hooks: &hooks,
        storage: None,
    };
    let mut listing = String::new();
    let mut failed = Vec::new();
    for check in checks(endpoint, &hooks) {
        let name = check.name();
        if let Some(i) = excluded.iter().position(|e| *e == name) {
            excluded.swap_remove(i);
            excluded.retain(|e| *e != name);
            let _ = writeln!(listing, "[+]{name} excluded: ok");
            continue;
        }
        match runner.run(&check).await {
            Ok(()) => {
                let _ = writeln!(listing, "[+]{name} ok");
            }
            Err(why) => {
                // The endpoint is public: the reason goes to the log and the check's path.
                let _ = writeln!(listing, "[-]{name} failed: reason withheld");
                failed.push(format!("[-]{name} failed: {why}"));
            }
        }
    }
    if !excluded.is_empty() {
        excluded.sort();
        excluded.dedup();
        let quoted: Vec<String> = excluded.iter().map(|e| format!("{e:?}")).collect();
        let _ = writeln!(
            listing,
            "warn: some health checks cannot be excluded: no matches for {}",
            quoted.join(",")
        );
    }
    let name = endpoint.name();
    if !failed.is_empty() {
        tracing::info!("{name} check failed:\n{}", failed.join("\n"));
        listing.push_str(name);
        listing.push_str(" check failed\n");
        return text(StatusCode::INTERNAL_SERVER_ERROR, listing);
    }
    if !verbose {
        return text(StatusCode::OK, "ok".into());
    }
    listing.push_str(name);
    listing.push_str(" check passed\n");
    text(StatusCode::OK, listing)
}

/// One check on its own path: `ok`, or 500 with the reason; 404 when there is no such
/// check.
async fn one(
    req: &HttpRequest,
    state: &ApiState,
    endpoint: Endpoint,
    name: &str,
) -> Result<HttpResponse, ApiError> {
    let hooks = state.hooks.clone();
    let Some(check) = checks(endpoint, &hooks)
        .into_iter()
        .find(|c| c.name() == name)
    else {
        return Err(ApiError::path_not_found(req.path()));
    };
    let mut runner = Runner {
        state,
        hooks: &hooks,
        storage: None,
    };
    Ok(match runner.run(&check).await {
        Ok(()) => text(StatusCode::OK, "ok".into()),
        Err(why) => text(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("internal server error: {why}\n"),
        ),
    })
}

/// The version `/version` reports as `gitVersion` and `--version` prints.
pub const GIT_VERSION: &str = concat!("v1.32.0+apiserver-rs.", env!("CARGO_PKG_VERSION"));

async fn version() -> HttpResponse {
    HttpResponse::Ok().content_type("application/json").body(
        json!({
            "major": "1",
            "minor": "32",
            "gitVersion": GIT_VERSION,
            "gitCommit": "",
            "gitTreeState": "clean",
            "buildDate": "",
            "goVersion": "",
            "compiler": "rustc",
            "platform": format!("{}/{}", std::env::consts::OS, match std::env::consts::ARCH { "x86_64" => "amd64", "aarch64" => "arm64", a => a }),
        })
        .to_string(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn query_components_are_decoded() {
        assert_eq!(
            decode("poststarthook%2Frbac%2Fbootstrap-roles"),
            "poststarthook/rbac/bootstrap-roles"
        );
        assert_eq!(decode("a+b"), "a b");
        assert_eq!(decode("100%"), "100%");
        assert_eq!(decode("%zz"), "%zz");
    }

    #[test]
    fn readiness_has_more_checks_than_liveness() {
        let hooks = Hooks::default();
        hooks.register("crd-informer-synced");
        let names = |e| -> Vec<String> { checks(e, &hooks).iter().map(Check::name).collect() };
        assert_eq!(
            names(Endpoint::Livez),
            ["ping", "log", "etcd", "poststarthook/crd-informer-synced"]
        );
        assert_eq!(names(Endpoint::Healthz), names(Endpoint::Livez));
        assert_eq!(
            names(Endpoint::Readyz),
            [
                "ping",
                "log",
                "etcd",
                "etcd-readiness",
                "poststarthook/crd-informer-synced",
                "shutdown"
            ]
        );
    }
}
