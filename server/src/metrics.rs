//! `/metrics`: Prometheus text exposition under kube-apiserver's metric names and labels,
//! so dashboards and alerts written for kube-apiserver read this server unchanged.
//!
//! The metrics live in one process-wide registry ([`metrics()`]), as upstream's legacy
//! registry: the request filter, the store and the watch streams record into it without
//! being handed anything. Figures that are a state rather than a sum (requests in flight,
//! objects stored) are read when `/metrics` is scraped, so the request path pays nothing
//! for them.
//!
//! Per-request cost: label values are borrowed from the parsed [`RequestInfo`] and static
//! strings (no allocation); each series is one hashed lookup under a read lock, then
//! atomic adds.

use std::rc::Rc;
use std::sync::LazyLock;
use std::time::Instant;

use actix_web::body::{BodySize, BoxBody, MessageBody};
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::{Method, StatusCode};
use actix_web::middleware::Next;
use actix_web::{web, HttpMessage, HttpRequest, HttpResponse};
use prometheus::{
    Encoder, HistogramOpts, HistogramVec, IntCounter, IntCounterVec, IntGaugeVec, Opts, Registry,
    TextEncoder,
};

use crate::endpoints::request_info::RequestInfo;
use crate::endpoints::ApiState;
use crate::filters::limits::ServingLimits;

/// The `component` label of requests this server answers (upstream's
/// `APIServerComponent`).
const COMPONENT: &str = "apiserver";

/// Buckets of `apiserver_request_duration_seconds` and `etcd_request_duration_seconds`
/// (upstream's: 5 ms to 60 s).
const LATENCY_BUCKETS: &[f64] = &[
    0.005, 0.025, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 1.0, 1.25, 1.5, 2.0, 3.0, 4.0, 5.0, 6.0, 8.0,
    10.0, 15.0, 20.0, 30.0, 45.0, 60.0,
];

/// Every metric this server exports.
pub struct Metrics {
    registry: Registry,
    /// `apiserver_request_total`.
    requests: IntCounterVec,
    /// `apiserver_request_duration_seconds`.
    request_duration: HistogramVec,
    /// `apiserver_response_sizes` (GET and LIST only, as upstream).
    response_sizes: HistogramVec,
    /// `apiserver_longrunning_requests`.
    longrunning: IntGaugeVec,
    /// `apiserver_current_inflight_requests`, set at scrape time.
    inflight: IntGaugeVec,
    /// `apiserver_watch_events_total`.
    watch_events: IntCounterVec,
    /// `apiserver_registered_watchers`.
    registered_watchers: IntGaugeVec,
    /// `apiserver_terminated_watchers_total`.
    terminated_watchers: IntCounterVec,
    /// `apiserver_storage_objects` (deprecated upstream since 1.34) and
    /// `apiserver_resource_objects`, set at scrape time.
    storage_objects: IntGaugeVec,
    resource_objects: IntGaugeVec,
    /// `etcd_request_duration_seconds`, `etcd_requests_total`, `etcd_request_errors_total`.
    etcd_duration: HistogramVec,
    etcd_requests: IntCounterVec,
    etcd_errors: IntCounterVec,
    /// `etcd_current_revision_requests_total` and `etcd_current_revision_callers_total`.
    revision_requests: IntCounter,
    revision_callers: IntCounter,
}

/// The metric families `--disabled-metrics` leaves out of `/metrics`.
static DISABLED: std::sync::OnceLock<std::collections::BTreeSet<String>> =
    std::sync::OnceLock::new();

/// Leaves the metric families `names` (fully qualified) out of `/metrics` from now on
/// (`--disabled-metrics`; set once, at start-up).
pub fn disable(names: &[String]) {
    if !names.is_empty() {
        let _ = DISABLED.set(names.iter().cloned().collect());
    }
}

/// The only value `--show-hidden-metrics-for-version` takes: the minor version before
/// the one this server reports (`1.31` for v1.32), as upstream allows.
pub fn previous_minor_version() -> String {
    let version = crate::server::health::GIT_VERSION.trim_start_matches('v');
    let mut parts = version.split(['.', '+', '-']);
    let major = parts.next().unwrap_or("1");
    let minor: u32 = parts.next().and_then(|m| m.parse().ok()).unwrap_or(1);
    format!("{major}.{}", minor.saturating_sub(1))
}

/// The process-wide metrics.
pub fn metrics() -> &'static Metrics {
    static METRICS: LazyLock<Metrics> = LazyLock::new(Metrics::new);
    &METRICS
}

fn counter(registry: &Registry, name: &str, help: &str, labels: &[&str]) -> IntCounterVec {
    let c = IntCounterVec::new(Opts::new(name, help), labels).expect("valid metric definition");
    registry
        .register(Box::new(c.clone()))
        .expect("registered once");
    c
}

fn plain_counter(registry: &Registry, name: &str, help: &str) -> IntCounter {
    let c = IntCounter::new(name, help).expect("valid metric definition");
    registry
        .register(Box::new(c.clone()))
        .expect("registered once");
    c
}

fn gauge(registry: &Registry, name: &str, help: &str, labels: &[&str]) -> IntGaugeVec {
    let g = IntGaugeVec::new(Opts::new(name, help), labels).expect("valid metric definition");
    registry
        .register(Box::new(g.clone()))
        .expect("registered once");
    g
}

fn histogram(
    registry: &Registry,
    name: &str,
    help: &str,
    buckets: Vec<f64>,
    labels: &[&str],
) -> HistogramVec {
    let h = HistogramVec::new(HistogramOpts::new(name, help).buckets(buckets), labels)
        .expect("valid metric definition");
    registry
        .register(Box::new(h.clone()))
        .expect("registered once");
    h
}

impl Metrics {
    fn new() -> Metrics {
        let r = Registry::new();
        #[cfg(target_os = "linux")]
        {
            // process_cpu_seconds_total, process_resident_memory_bytes, process_open_fds,
            // process_max_fds, process_virtual_memory_bytes, process_start_time_seconds,
            // process_threads: the names Go's process collector gives kube-apiserver.
            let _ = r.register(Box::new(
                prometheus::process_collector::ProcessCollector::for_self(),
            ));
        }
        let request_labels = &[
            "verb",
            "dry_run",
            "group",
            "version",
            "resource",
            "subresource",
            "scope",
            "component",
        ];
        let mut with_code = request_labels.to_vec();
        with_code.push("code");
        let size_labels = &[
            "verb",
            "group",
            "version",
            "resource",
            "subresource",
            "scope",
            "component",
        ];
        Metrics {
            requests: counter(
                &r,
                "apiserver_request_total",
                "Counter of apiserver requests broken out for each verb, dry run value, group, \
                 version, resource, scope, component, and HTTP response code.",
                &with_code,
            ),
            request_duration: histogram(
                &r,
                "apiserver_request_duration_seconds",
                "Response latency distribution in seconds for each verb, dry run value, group, \
                 version, resource, subresource, scope and component.",
                LATENCY_BUCKETS.to_vec(),
                request_labels,
            ),
            response_sizes: histogram(
                &r,
                "apiserver_response_sizes",
                "Response size distribution in bytes for each group, version, verb, resource, \
                 subresource, scope and component.",
                prometheus::exponential_buckets(1000.0, 10.0, 8).expect("valid buckets"),
                size_labels,
            ),
            longrunning: gauge(
                &r,
                "apiserver_longrunning_requests",
                "Gauge of all active long-running apiserver requests broken out by verb, group, \
                 version, resource, scope and component. Not all requests are tracked this way.",
                size_labels,
            ),
            inflight: gauge(
                &r,
                "apiserver_current_inflight_requests",
                "Number of requests this apiserver is executing now, per request kind \
                 (readOnly, mutating).",
                &["request_kind"],
            ),
            watch_events: counter(
                &r,
                "apiserver_watch_events_total",
                "Number of events sent in watch clients",
                &["group", "version", "resource"],
            ),
            registered_watchers: gauge(
                &r,
                "apiserver_registered_watchers",
                "Number of currently registered watchers for a given resources",
                &["group", "version", "kind"],
            ),
            terminated_watchers: counter(
                &r,
                "apiserver_terminated_watchers_total",
                "Counter of watchers closed due to unresponsiveness broken by resource type.",
                &["group", "resource"],
            ),
            storage_objects: gauge(
                &r,
                "apiserver_storage_objects",
                "[DEPRECATED, consider using apiserver_resource_objects instead] Number of \
                 stored objects split by kind.",
                &["resource"],
            ),
            resource_objects: gauge(
                &r,
                "apiserver_resource_objects",
                "Number of stored objects split by kind.",
                &["group", "resource"],
            ),
            etcd_duration: histogram(
                &r,
                "etcd_request_duration_seconds",
                "Etcd request latency in seconds for each operation and object type.",
                LATENCY_BUCKETS.to_vec(),
                &["operation", "group", "resource"],
            ),
            etcd_requests: counter(
                &r,
                "etcd_requests_total",
                "Etcd request counts for each operation and object type.",
                &["operation", "group", "resource"],
            ),
            etcd_errors: counter(
                &r,
                "etcd_request_errors_total",
                "Etcd failed request counts for each operation and object type.",
                &["operation", "group", "resource"],
            ),
            revision_requests: plain_counter(
                &r,
                "etcd_current_revision_requests_total",
                "Requests made to etcd for its current revision (consistent reads served by \
                 the watch cache wait for one; concurrent callers share one).",
            ),
            revision_callers: plain_counter(
                &r,
                "etcd_current_revision_callers_total",
                "Callers that needed etcd's current revision, consistent reads among them.",
            ),
            registry: r,
        }
    }

    /// One request to etcd for its current revision.
    pub fn etcd_revision_request(&self) {
        self.revision_requests.inc();
    }

    /// One caller of etcd's current revision (served by a request of its own or shared).
    pub fn etcd_revision_caller(&self) {
        self.revision_callers.inc();
    }

    /// Records one storage call of `resource` in `group` that began at `start`.
    pub fn storage_call(
        &self,
        operation: &str,
        group: &str,
        resource: &str,
        start: Instant,
        ok: bool,
    ) {
        let labels = [operation, group, resource];
        self.etcd_duration
            .with_label_values(&labels)
            .observe(start.elapsed().as_secs_f64());
        self.etcd_requests.with_label_values(&labels).inc();
        if !ok {
            self.etcd_errors.with_label_values(&labels).inc();
        }
    }

    /// The counters of one watch: events sent, and the watcher registered until dropped.
    pub fn watch(&self, group: &str, version: &str, resource: &str, kind: &str) -> WatchMeter {
        let registered = self
            .registered_watchers
            .with_label_values(&[group, version, kind]);
        registered.inc();
        WatchMeter {
            events: self
                .watch_events
                .with_label_values(&[group, version, resource]),
            terminated: self
                .terminated_watchers
                .with_label_values(&[group, resource]),
            registered,
        }
    }

    /// The exposition in Prometheus' text format, without the `--disabled-metrics`.
    fn render(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(64 * 1024);
        let mut families = self.registry.gather();
        if let Some(disabled) = DISABLED.get() {
            families.retain(|f| !disabled.contains(f.name()));
        }
        // Encoding fails only on invalid metric families, which ours are not.
        let _ = TextEncoder::new().encode(&families, &mut out);
        out
    }
}

/// One watch's pre-resolved counters; the watcher is unregistered when it drops.
pub struct WatchMeter {
    events: prometheus::IntCounter,
    terminated: prometheus::IntCounter,
    registered: prometheus::IntGauge,
}

impl WatchMeter {
    /// One event (or bookmark) sent to the client.
    pub fn event(&self) {
        self.events.inc();
    }

    /// The counter of watchers terminated for not reading (the watch cache counts
    /// into it when it terminates this one).
    pub fn terminated(&self) -> prometheus::IntCounter {
        self.terminated.clone()
    }
}

impl Drop for WatchMeter {
    fn drop(&mut self) {
        self.registered.dec();
    }
}

/// Mounts `/metrics`.
pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.route("/metrics", web::get().to(serve));
}

async fn serve(
    state: web::Data<ApiState>,
    limits: Option<web::Data<ServingLimits>>,
) -> HttpResponse {
    let m = metrics();
    if let Some(limits) = limits {
        let (read_only, mutating) = limits.in_flight();
        m.inflight
            .with_label_values(&["readOnly"])
            .set(read_only as i64);
        m.inflight
            .with_label_values(&["mutating"])
            .set(mutating as i64);
    }
    // Objects per resource, from the watch caches (resources no longer served drop out).
    m.storage_objects.reset();
    m.resource_objects.reset();
    for (group, resource, count) in state.store.object_counts(&state.catalog) {
        let name = if group.is_empty() {
            resource.clone()
        } else {
            format!("{resource}.{group}")
        };
        m.storage_objects.with_label_values(&[&name]).set(count);
        m.resource_objects
            .with_label_values(&[&group, &resource])
            .set(count);
    }
    HttpResponse::Ok()
        .content_type("text/plain; version=0.0.4; charset=utf-8")
        .body(m.render())
}

/// The verb upstream's metrics and access log report for a request (see
/// [`reported_verb`]).
pub fn request_verb(req: &HttpRequest, info: &RequestInfo) -> &'static str {
    reported_verb(info, req.method(), is_apply(req))
}

fn is_apply(req: &HttpRequest) -> bool {
    req.method() == Method::PATCH
        && req
            .headers()
            .get(actix_web::http::header::CONTENT_TYPE)
            .is_some_and(|v| v.as_bytes().starts_with(b"application/apply-patch"))
}

/// The verb upstream reports: the installer's action verbs (POST, PUT, not create,
/// update), APPLY for server-side apply, the method for non-resource requests, `other`
/// for anything else.
fn reported_verb(info: &RequestInfo, method: &Method, apply: bool) -> &'static str {
    if info.is_resource_request {
        return match info.verb.as_str() {
            "get" => "GET",
            "list" => "LIST",
            "watch" => "WATCH",
            "create" => "POST",
            "update" => "PUT",
            "patch" if apply => "APPLY",
            "patch" => "PATCH",
            "delete" => "DELETE",
            "deletecollection" => "DELETECOLLECTION",
            _ => "other",
        };
    }
    match *method {
        Method::GET => "GET",
        Method::POST => "POST",
        Method::PUT => "PUT",
        Method::PATCH => "PATCH",
        Method::DELETE => "DELETE",
        Method::CONNECT => "CONNECT",
        _ => "other",
    }
}

/// Upstream's scope label.
fn scope(info: &RequestInfo) -> &'static str {
    if info.namespace.as_deref().is_some_and(|n| !n.is_empty()) {
        "namespace"
    } else if info.name.is_some() {
        "resource"
    } else if info.is_resource_request {
        "cluster"
    } else {
        ""
    }
}

/// Non-resource paths that always exist (any answer keeps their path as the label).
const KNOWN_PATHS: &[&str] = &[
    "/healthz",
    "/livez",
    "/readyz",
    "/metrics",
    "/version",
    "/version/",
    "/api",
    "/apis",
    "/openapi/v2",
    "/openapi/v3",
    "/docs",
];

/// What one request is counted under. Label values come from the request info; when the
/// request was refused before a route could vouch for its names (4xx/5xx on a path no
/// entry serves), they are left empty, so no client can grow the series without bound.
struct Labels<'a> {
    verb: &'static str,
    dry_run: &'static str,
    group: &'a str,
    version: &'a str,
    resource: &'a str,
    subresource: &'a str,
    scope: &'static str,
}

impl<'a> Labels<'a> {
    fn of(
        info: &'a RequestInfo,
        method: &Method,
        apply: bool,
        dry_run: bool,
        status: StatusCode,
        state: Option<&ApiState>,
    ) -> Labels<'a> {
        let mut labels = Labels {
            verb: reported_verb(info, method, apply),
            dry_run: if dry_run { "All" } else { "" },
            group: "",
            version: "",
            resource: "",
            subresource: "",
            scope: scope(info),
        };
        let vouched = status.as_u16() < 400;
        if info.is_resource_request {
            if vouched || state.is_some_and(|s| served(info, s)) {
                labels.group = &info.api_group;
                labels.version = &info.api_version;
                labels.resource = &info.resource;
                labels.subresource = info.subresource.as_deref().unwrap_or_default();
            }
        } else if vouched || KNOWN_PATHS.contains(&info.path.as_str()) {
            labels.subresource = &info.path;
        }
        labels
    }

    fn request(&self) -> [&str; 8] {
        [
            self.verb,
            self.dry_run,
            self.group,
            self.version,
            self.resource,
            self.subresource,
            self.scope,
            COMPONENT,
        ]
    }

    fn size(&self) -> [&str; 7] {
        [
            self.verb,
            self.group,
            self.version,
            self.resource,
            self.subresource,
            self.scope,
            COMPONENT,
        ]
    }
}

/// Whether the catalog serves the resource (and subresource) a request names.
fn served(info: &RequestInfo, state: &ApiState) -> bool {
    let Some(res) = state
        .catalog
        .get(&info.api_group, &info.api_version, &info.resource)
    else {
        return false;
    };
    info.subresource
        .as_deref()
        .is_none_or(|s| codegen::endpoints::Subresource::parse(&res.def, s).is_some())
}

/// What the filter notes about a request before it runs.
struct Pending {
    start: Instant,
    info: Rc<RequestInfo>,
    method: Method,
    apply: bool,
    dry_run: bool,
    state: Option<web::Data<ApiState>>,
}

impl Pending {
    fn new(req: &HttpRequest, info: Rc<RequestInfo>) -> Pending {
        let apply = is_apply(req);
        let dry_run = req.query_string().split('&').any(|kv| kv == "dryRun=All");
        Pending {
            start: Instant::now(),
            info,
            method: req.method().clone(),
            apply,
            dry_run,
            state: req.app_data::<web::Data<ApiState>>().cloned(),
        }
    }

    fn labels(&self, status: StatusCode) -> Labels<'_> {
        Labels::of(
            &self.info,
            &self.method,
            self.apply,
            self.dry_run,
            status,
            self.state.as_deref().map(|s| &**s),
        )
    }

    /// Counts the finished request: its code, latency and (GET, LIST) response size.
    fn finish(&self, status: StatusCode, size: Option<u64>) {
        let m = metrics();
        let labels = self.labels(status);
        let request = labels.request();
        let mut with_code = [""; 9];
        with_code[..8].copy_from_slice(&request);
        with_code[8] = status.as_str();
        m.requests.with_label_values(&with_code).inc();
        m.request_duration
            .with_label_values(&request)
            .observe(self.start.elapsed().as_secs_f64());
        if let (Some(size), "GET" | "LIST") = (size, labels.verb) {
            m.response_sizes
                .with_label_values(&labels.size())
                .observe(size as f64);
        }
    }
}

/// The metrics filter: counts every request with its answer's code. Long-running
/// requests (watches) are counted in `apiserver_longrunning_requests` while they stream
/// and in the request metrics when their response ends, as upstream does.
pub async fn instrument(
    req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<BoxBody>, actix_web::Error> {
    let Some(info) = req.extensions().get::<Rc<RequestInfo>>().cloned() else {
        return next
            .call(req)
            .await
            .map(ServiceResponse::map_into_boxed_body);
    };
    let pending = Pending::new(req.request(), info);
    let resp = next.call(req).await;
    let resp = match resp {
        Ok(resp) => resp,
        Err(e) => {
            pending.finish(e.as_response_error().status_code(), None);
            return Err(e);
        }
    };
    let status = resp.status();
    if pending.info.verb == "watch" && status.is_success() {
        let longrunning = metrics()
            .longrunning
            .with_label_values(&pending.labels(status).size());
        longrunning.inc();
        let body_end = WatchEnd {
            pending,
            status,
            longrunning,
        };
        return Ok(resp.map_body(move |_, body| {
            BoxBody::new(Metered {
                body: body.boxed(),
                _end: body_end,
            })
        }));
    }
    let size = match resp.response().body().size() {
        BodySize::Sized(n) => Some(n),
        BodySize::None => Some(0),
        BodySize::Stream => None,
    };
    pending.finish(status, size);
    Ok(resp.map_into_boxed_body())
}

/// Counts a long-running request when its response ends.
struct WatchEnd {
    pending: Pending,
    status: StatusCode,
    longrunning: prometheus::IntGauge,
}

impl Drop for WatchEnd {
    fn drop(&mut self) {
        self.longrunning.dec();
        self.pending.finish(self.status, None);
    }
}

/// A response body that runs [`WatchEnd`] when the response is done (ended or dropped).
struct Metered {
    body: BoxBody,
    _end: WatchEnd,
}

impl MessageBody for Metered {
    type Error = Box<dyn std::error::Error>;

    fn size(&self) -> BodySize {
        self.body.size()
    }

    fn poll_next(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<bytes::Bytes, Self::Error>>> {
        std::pin::Pin::new(&mut self.body).poll_next(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(method: &str, path: &str, query: &str) -> RequestInfo {
        RequestInfo::parse(method, path, query)
    }

    #[test]
    fn verbs_are_upstreams() {
        let cases = [
            ("GET", "/api/v1/namespaces/a/configmaps/x", "", false, "GET"),
            ("GET", "/api/v1/namespaces/a/configmaps", "", false, "LIST"),
            ("GET", "/api/v1/configmaps", "watch=true", false, "WATCH"),
            ("GET", "/api/v1/watch/configmaps", "", false, "WATCH"),
            ("POST", "/api/v1/namespaces/a/configmaps", "", false, "POST"),
            ("PUT", "/api/v1/namespaces/a/configmaps/x", "", false, "PUT"),
            (
                "PATCH",
                "/api/v1/namespaces/a/configmaps/x",
                "",
                false,
                "PATCH",
            ),
            (
                "PATCH",
                "/api/v1/namespaces/a/configmaps/x",
                "",
                true,
                "APPLY",
            ),
            (
                "DELETE",
                "/api/v1/namespaces/a/configmaps",
                "",
                false,
                "DELETECOLLECTION",
            ),
            ("GET", "/healthz", "", false, "GET"),
            ("OPTIONS", "/healthz", "", false, "other"),
        ];
        for (method, path, query, apply, want) in cases {
            let m = Method::from_bytes(method.as_bytes()).unwrap();
            assert_eq!(
                reported_verb(&info(method, path, query), &m, apply),
                want,
                "{method} {path}"
            );
        }
    }

    #[test]
    fn scopes_are_upstreams() {
        assert_eq!(
            scope(&info("GET", "/api/v1/namespaces/a/configmaps", "")),
            "namespace"
        );
        assert_eq!(scope(&info("GET", "/api/v1/namespaces/a", "")), "namespace");
        assert_eq!(scope(&info("GET", "/api/v1/namespaces", "")), "cluster");
        assert_eq!(
            scope(&info(
                "GET",
                "/apis/rbac.authorization.k8s.io/v1/clusterroles/x",
                ""
            )),
            "resource"
        );
        assert_eq!(scope(&info("GET", "/healthz", "")), "");
    }

    #[test]
    fn refused_requests_for_unserved_names_keep_no_names() {
        let i = info("GET", "/apis/made.up/v1/things", "");
        let m = Method::GET;
        let labels = Labels::of(&i, &m, false, false, StatusCode::FORBIDDEN, None);
        assert_eq!(
            labels.request(),
            ["LIST", "", "", "", "", "", "cluster", "apiserver"]
        );
        let random = info("GET", "/random/path", "");
        let labels = Labels::of(&random, &m, false, false, StatusCode::NOT_FOUND, None);
        assert_eq!(labels.subresource, "");
        let metrics = info("GET", "/metrics", "");
        let labels = Labels::of(&metrics, &m, false, false, StatusCode::FORBIDDEN, None);
        assert_eq!(labels.subresource, "/metrics");
        let ok = Labels::of(&i, &m, false, true, StatusCode::OK, None);
        assert_eq!(
            ok.request(),
            [
                "LIST",
                "All",
                "made.up",
                "v1",
                "things",
                "",
                "cluster",
                "apiserver"
            ]
        );
    }

    #[test]
    fn the_exposition_has_upstreams_names() {
        let m = metrics();
        m.storage_call("get", "", "configmaps", Instant::now(), true);
        let text = String::from_utf8(m.render()).unwrap();
        assert!(
            text.contains("# TYPE etcd_request_duration_seconds histogram"),
            "{text}"
        );
        assert!(text
            .contains("etcd_requests_total{group=\"\",operation=\"get\",resource=\"configmaps\"}"));
        #[cfg(target_os = "linux")]
        for name in [
            "process_resident_memory_bytes",
            "process_cpu_seconds_total",
            "process_open_fds",
            "process_start_time_seconds",
        ] {
            assert!(text.contains(&format!("# TYPE {name}")), "{name}");
        }
    }
}
