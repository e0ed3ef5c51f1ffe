//! Command-line flags, named as kube-apiserver's, parsed with clap and validated with
//! every problem reported at once. `--help` groups them in kube-apiserver's sections
//! and order; upstream flags this server does not implement are answered by
//! [`crate::upstream_flags`].

use std::net::IpAddr;
use std::path::PathBuf;
use std::time::Duration;

use clap::{CommandFactory, FromArgMatches, Parser};

/// The sections of `--help`, in kube-apiserver's order (its named flag sets). Sections
/// whose flags this server has none of (API enablement, egress selector, traces) are
/// left out.
pub mod sections {
    pub const GENERIC: &str = "Generic flags";
    pub const ETCD: &str = "Etcd flags";
    pub const SECURE_SERVING: &str = "Secure serving flags";
    pub const AUDITING: &str = "Auditing flags";
    pub const FEATURES: &str = "Features flags";
    pub const AUTHENTICATION: &str = "Authentication flags";
    pub const AUTHORIZATION: &str = "Authorization flags";
    pub const ADMISSION: &str = "Admission flags";
    pub const METRICS: &str = "Metrics flags";
    pub const LOGS: &str = "Logs flags";
    pub const MISC: &str = "Misc flags";
    pub const GLOBAL: &str = "Global flags";
}

/// `--help`'s layout: upstream's synopsis shape, then the sections.
const HELP_TEMPLATE: &str = "{about-with-newline}\nUsage:\n  {usage}\n\n{all-args}";

/// Flags of the `apiserver` binary. Fields are declared section by section (clap lists
/// sections in the order their first flag is declared), alphabetically within each, as
/// upstream prints them.
#[derive(Debug, Clone, Parser)]
#[command(
    name = "apiserver",
    version = crate::server::health::GIT_VERSION,
    about = "A Kubernetes-compatible API server whose resources are generated from definitions.",
    override_usage = "apiserver [flags]",
    help_template = HELP_TEMPLATE,
    disable_help_flag = true,
    disable_version_flag = true,
    max_term_width = 120
)]
pub struct ServerRunOptions {
    // Generic flags.
    /// A set of key=value pairs that describe feature gates (see `feature_gates`).
    #[arg(long = "feature-gates", help = crate::feature_gates::help(), help_heading = sections::GENERIC, value_name = "mapStringBool")]
    pub feature_gates: Vec<String>,

    /// The most mutating requests (create, update, patch, delete) served at once; more
    /// get 429 with Retry-After. 0: no limit.
    #[arg(long = "max-mutating-requests-inflight", default_value_t = 200, help_heading = sections::GENERIC, value_name = "int")]
    pub max_mutating_requests_inflight: usize,

    /// The most read-only requests served at once (watches not counted); more get 429
    /// with Retry-After. 0: no limit.
    #[arg(long = "max-requests-inflight", default_value_t = 400, help_heading = sections::GENERIC, value_name = "int")]
    pub max_requests_inflight: usize,

    /// The longest a request may take (watches excepted) before it is answered 504, as a
    /// duration such as 1m0s or 30s.
    #[arg(long = "request-timeout", default_value = "1m0s", value_parser = crate::filters::limits::parse_duration, help_heading = sections::GENERIC, value_name = "duration")]
    pub request_timeout: Duration,

    /// Time to delay the termination after SIGTERM or SIGINT. Meanwhile requests are
    /// served as usual and /healthz and /livez pass, but /readyz fails at once, so a load
    /// balancer can stop sending traffic here.
    #[arg(long = "shutdown-delay-duration", default_value = "0s", value_parser = crate::filters::limits::parse_duration, help_heading = sections::GENERIC, value_name = "duration")]
    pub shutdown_delay_duration: Duration,

    /// After the shutdown delay, keep listening until the requests in flight are done,
    /// answering new ones 429 with Retry-After and `Connection: close` (instead of
    /// closing the listener at once).
    #[arg(
        long = "shutdown-send-retry-after",
        default_value_t = false,
        num_args = 0..=1,
        default_missing_value = "true",
        action = clap::ArgAction::Set,
        help_heading = sections::GENERIC
    )]
    pub shutdown_send_retry_after: bool,

    /// How long shutdown waits for open watches to send their end (they are all told to
    /// end once the shutdown delay is over); at least a second is always given.
    #[arg(long = "shutdown-watch-termination-grace-period", default_value = "0s", value_parser = crate::filters::limits::parse_duration, help_heading = sections::GENERIC, value_name = "duration")]
    pub shutdown_watch_termination_grace_period: Duration,

    // Etcd flags.
    /// The file of an `apiserver.config.k8s.io/v1` EncryptionConfiguration: which
    /// resources are encrypted at rest, and with which providers and keys (identity,
    /// aescbc, aesgcm, secretbox).
    #[arg(long = "encryption-provider-config", value_name = "FILE", help_heading = sections::ETCD)]
    pub encryption_provider_config: Option<PathBuf>,

    /// SSL Certificate Authority file used to secure etcd communication.
    #[arg(long = "etcd-cafile", help_heading = sections::ETCD, value_name = "string")]
    pub etcd_cafile: Option<PathBuf>,

    /// SSL certification file used to secure etcd communication.
    #[arg(long = "etcd-certfile", help_heading = sections::ETCD, value_name = "string")]
    pub etcd_certfile: Option<PathBuf>,

    /// The interval of compaction requests (Go duration, e.g. 5m0s; 0 disables). Applies
    /// to etcd and to the embedded store's watch history.
    #[arg(
        long = "etcd-compaction-interval",
        default_value = "5m0s",
        value_parser = crate::storage::parse_duration,
        help_heading = sections::ETCD,
        value_name = "duration")]
    pub etcd_compaction_interval: Duration,

    /// SSL key file used to secure etcd communication.
    #[arg(long = "etcd-keyfile", help_heading = sections::ETCD, value_name = "string")]
    pub etcd_keyfile: Option<PathBuf>,

    /// The prefix to prepend to all resource paths in etcd (replaces `/registry`).
    #[arg(long = "etcd-prefix", default_value = "/registry", help_heading = sections::ETCD, value_name = "string")]
    pub etcd_prefix: String,

    /// List of etcd servers to connect with (scheme://ip:port), comma separated. When
    /// given, etcd is used instead of the embedded store (needs a binary built with the
    /// `etcd` feature).
    #[arg(long = "etcd-servers", value_delimiter = ',', help_heading = sections::ETCD, value_name = "strings")]
    pub etcd_servers: Vec<String>,

    /// Enable watch caching: one in-memory cache per resource serves watches, and LISTs
    /// and GETs (resourceVersion 0, and consistent reads once caught up), without
    /// reading storage.
    #[arg(
        long = "watch-cache",
        default_value_t = true,
        num_args = 0..=1,
        default_missing_value = "true",
        action = clap::ArgAction::Set,
        help_heading = sections::ETCD
    )]
    pub watch_cache: bool,

    // Secure serving flags.
    /// The IP address on which to listen for the --secure-port port.
    #[arg(long = "bind-address", default_value = "127.0.0.1", help_heading = sections::SECURE_SERVING, value_name = "ip")]
    pub bind_address: IpAddr,

    /// The directory where the self-signed TLS certificate is written when
    /// --tls-cert-file and --tls-private-key-file are not given. Defaults to
    /// <data-dir>/certs.
    #[arg(long = "cert-dir", help_heading = sections::SECURE_SERVING, value_name = "string")]
    pub cert_dir: Option<PathBuf>,

    /// The port on which to serve HTTPS.
    #[arg(long = "secure-port", default_value_t = 6443, help_heading = sections::SECURE_SERVING, value_name = "int")]
    pub secure_port: u16,

    /// File containing the default x509 certificate for HTTPS (CA cert, if any,
    /// concatenated after the server cert).
    #[arg(long = "tls-cert-file", help_heading = sections::SECURE_SERVING, value_name = "string")]
    pub tls_cert_file: Option<PathBuf>,

    /// Comma-separated TLS 1.2 cipher suites to allow, by IANA name (e.g.
    /// TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256); TLS 1.3 suites are always allowed. Empty:
    /// all suites rustls offers.
    #[arg(
        long = "tls-cipher-suites",
        value_delimiter = ',',
        value_name = "SUITES",
        help_heading = sections::SECURE_SERVING
    )]
    pub tls_cipher_suites: Vec<String>,

    /// The oldest TLS version served: VersionTLS12 (default) or VersionTLS13.
    #[arg(long = "tls-min-version", value_name = "VERSION", help_heading = sections::SECURE_SERVING)]
    pub tls_min_version: Option<String>,

    /// File containing the default x509 private key matching --tls-cert-file.
    #[arg(long = "tls-private-key-file", help_heading = sections::SECURE_SERVING, value_name = "string")]
    pub tls_private_key_file: Option<PathBuf>,

    // Auditing flags.
    /// Days to keep rotated audit log files (0: no limit).
    #[arg(
        long = "audit-log-maxage",
        default_value_t = 0,
        allow_negative_numbers = true,
        help_heading = sections::AUDITING,
        value_name = "int")]
    pub audit_log_maxage: i64,

    /// Rotated audit log files to keep (0: all).
    #[arg(
        long = "audit-log-maxbackup",
        default_value_t = 0,
        allow_negative_numbers = true,
        help_heading = sections::AUDITING,
        value_name = "int")]
    pub audit_log_maxbackup: i64,

    /// Megabytes the audit log may reach before it is rotated (0: 100).
    #[arg(
        long = "audit-log-maxsize",
        default_value_t = 0,
        allow_negative_numbers = true,
        help_heading = sections::AUDITING,
        value_name = "int")]
    pub audit_log_maxsize: i64,

    /// The format of audit log lines: json (`legacy` is not supported).
    #[arg(long = "audit-log-format", default_value = "json", help_heading = sections::AUDITING, value_name = "string")]
    pub audit_log_format: String,

    /// How audit events are written: blocking (each request waits for its events to be
    /// written; failures are logged), blocking-strict (as blocking, and a request whose
    /// first event cannot be written fails) or batch (queued for a writer thread;
    /// dropped when the queue is full).
    #[arg(long = "audit-log-mode", default_value = "blocking", help_heading = sections::AUDITING, value_name = "string")]
    pub audit_log_mode: String,

    /// Where audit events are written, one JSON line each; `-` is standard output.
    /// Without it nothing is audited.
    #[arg(long = "audit-log-path", value_name = "PATH", help_heading = sections::AUDITING)]
    pub audit_log_path: Option<PathBuf>,

    /// The audit policy (audit.k8s.io/v1 Policy, YAML): which requests are audited and
    /// how much of each. Without it nothing is audited.
    #[arg(long = "audit-policy-file", value_name = "FILE", help_heading = sections::AUDITING)]
    pub audit_policy_file: Option<PathBuf>,

    /// Events a batching audit webhook queues before it drops them.
    #[arg(long = "audit-webhook-batch-buffer-size", default_value_t = 10_000, allow_negative_numbers = true, help_heading = sections::AUDITING, value_name = "int")]
    pub audit_webhook_batch_buffer_size: i64,

    /// The most events a batching audit webhook sends in one EventList.
    #[arg(long = "audit-webhook-batch-max-size", default_value_t = 400, allow_negative_numbers = true, help_heading = sections::AUDITING, value_name = "int")]
    pub audit_webhook_batch_max_size: i64,

    /// The longest a batching audit webhook collects events before it sends them.
    #[arg(long = "audit-webhook-batch-max-wait", default_value = "30s", value_parser = crate::filters::limits::parse_duration, help_heading = sections::AUDITING, value_name = "duration")]
    pub audit_webhook_batch_max_wait: Duration,

    /// EventLists a batching audit webhook may send at once after sending none for a while.
    #[arg(long = "audit-webhook-batch-throttle-burst", default_value_t = 15, allow_negative_numbers = true, help_heading = sections::AUDITING, value_name = "int")]
    pub audit_webhook_batch_throttle_burst: i64,

    /// Whether a batching audit webhook's sends are throttled.
    #[arg(
        long = "audit-webhook-batch-throttle-enable",
        default_value_t = true,
        num_args = 0..=1,
        default_missing_value = "true",
        action = clap::ArgAction::Set,
        help_heading = sections::AUDITING
    )]
    pub audit_webhook_batch_throttle_enable: bool,

    /// EventLists a batching audit webhook sends a second at most.
    #[arg(long = "audit-webhook-batch-throttle-qps", default_value_t = 10.0, allow_negative_numbers = true, help_heading = sections::AUDITING, value_name = "float32")]
    pub audit_webhook_batch_throttle_qps: f64,

    /// A kubeconfig naming the audit webhook (its cluster's server, CA and the client's
    /// credentials): audit events are POSTed there as audit.k8s.io/v1 EventLists.
    #[arg(long = "audit-webhook-config-file", value_name = "string", help_heading = sections::AUDITING)]
    pub audit_webhook_config_file: Option<PathBuf>,

    /// How long to wait before retrying a failed send to the audit webhook (later
    /// retries wait 1.5 times longer each, five tries in all).
    #[arg(long = "audit-webhook-initial-backoff", default_value = "10s", value_parser = crate::filters::limits::parse_duration, help_heading = sections::AUDITING, value_name = "duration")]
    pub audit_webhook_initial_backoff: Duration,

    /// How events are sent to the audit webhook: batch (queued and sent in lists; dropped
    /// when the queue is full), blocking (each request waits for its events to be sent;
    /// failures are logged) or blocking-strict (as blocking, and a request whose first
    /// event cannot be sent fails).
    #[arg(long = "audit-webhook-mode", default_value = "batch", help_heading = sections::AUDITING, value_name = "string")]
    pub audit_webhook_mode: String,

    /// The API version of the events sent to the audit webhook: audit.k8s.io/v1.
    #[arg(long = "audit-webhook-version", default_value = "audit.k8s.io/v1", help_heading = sections::AUDITING, value_name = "string")]
    pub audit_webhook_version: String,

    // Features flags.
    /// Whether profiling also records blocking (contention). This server has no
    /// profiling endpoints, so only false is accepted.
    #[arg(
        long = "contention-profiling",
        default_value_t = false,
        num_args = 0..=1,
        default_missing_value = "true",
        action = clap::ArgAction::Set,
        help_heading = sections::FEATURES
    )]
    pub contention_profiling: bool,

    /// Whether requests are queued and limited by API Priority and Fairness. This
    /// server limits them with --max-requests-inflight and
    /// --max-mutating-requests-inflight instead (kube-apiserver's behaviour when this
    /// is false), so only false is accepted.
    #[arg(
        long = "enable-priority-and-fairness",
        default_value_t = false,
        num_args = 0..=1,
        default_missing_value = "true",
        action = clap::ArgAction::Set,
        help_heading = sections::FEATURES
    )]
    pub enable_priority_and_fairness: bool,

    /// Whether /debug/pprof/ serves profiles of the running process. This server has
    /// no profiling endpoints, so only false is accepted.
    #[arg(
        long = "profiling",
        default_value_t = false,
        num_args = 0..=1,
        default_missing_value = "true",
        action = clap::ArgAction::Set,
        help_heading = sections::FEATURES
    )]
    pub profiling: bool,

    // Authentication flags.
    /// Requests without credentials are served as `system:anonymous` (group
    /// `system:unauthenticated`), allowed what the authorizers grant them; with false
    /// they are 401.
    #[arg(
        long = "anonymous-auth",
        default_value_t = true,
        num_args = 0..=1,
        default_missing_value = "true",
        action = clap::ArgAction::Set,
        help_heading = sections::AUTHENTICATION
    )]
    pub anonymous_auth: bool,

    /// The audiences a token must be for, comma-separated. Default: the issuers.
    #[arg(long = "api-audiences", value_delimiter = ',', help_heading = sections::AUTHENTICATION, value_name = "strings")]
    pub api_audiences: Vec<String>,

    /// A kubeconfig naming the parent API server this one is aggregated into: bearer
    /// tokens it does not know are checked with TokenReviews there, and client and
    /// front-proxy CAs not given by flags are read from the parent's
    /// kube-system/extension-apiserver-authentication ConfigMap.
    #[arg(long = "authentication-kubeconfig", value_name = "string", help_heading = sections::AUTHENTICATION)]
    pub authentication_kubeconfig: Option<PathBuf>,

    /// Do not read the parent's extension-apiserver-authentication ConfigMap.
    #[arg(
        long = "authentication-skip-lookup",
        default_value_t = false,
        num_args = 0..=1,
        default_missing_value = "true",
        action = clap::ArgAction::Set,
        help_heading = sections::AUTHENTICATION
    )]
    pub authentication_skip_lookup: bool,

    /// How long the parent's TokenReview answers are cached.
    #[arg(long = "authentication-token-webhook-cache-ttl", default_value = "10s", value_parser = crate::filters::limits::parse_duration, help_heading = sections::AUTHENTICATION, value_name = "duration")]
    pub authentication_token_webhook_cache_ttl: std::time::Duration,

    /// Start even when the parent's extension-apiserver-authentication ConfigMap cannot
    /// be read (without the CAs it would give).
    #[arg(
        long = "authentication-tolerate-lookup-failure",
        default_value_t = false,
        num_args = 0..=1,
        default_missing_value = "true",
        action = clap::ArgAction::Set,
        help_heading = sections::AUTHENTICATION
    )]
    pub authentication_tolerate_lookup_failure: bool,

    /// A PEM bundle of the CAs whose client certificates authenticate: the common name
    /// is the user name, each organization a group.
    #[arg(long = "client-ca-file", value_name = "FILE", help_heading = sections::AUTHENTICATION)]
    pub client_ca_file: Option<PathBuf>,

    /// Common names a front proxy's certificate may have (comma-separated); empty: any
    /// certificate the requestheader CA signed.
    #[arg(long = "requestheader-allowed-names", value_delimiter = ',', help_heading = sections::AUTHENTICATION, value_name = "strings")]
    pub requestheader_allowed_names: Vec<String>,

    /// A PEM bundle of the CAs that sign front proxies' client certificates: a request
    /// with such a certificate is the user its --requestheader-username-headers name.
    #[arg(long = "requestheader-client-ca-file", value_name = "string", help_heading = sections::AUTHENTICATION)]
    pub requestheader_client_ca_file: Option<PathBuf>,

    /// Prefixes of request headers carrying the user's extras. Default: X-Remote-Extra-.
    #[arg(long = "requestheader-extra-headers-prefix", value_delimiter = ',', help_heading = sections::AUTHENTICATION, value_name = "strings")]
    pub requestheader_extra_headers_prefix: Vec<String>,

    /// Request headers carrying the user's groups. Default: X-Remote-Group.
    #[arg(long = "requestheader-group-headers", value_delimiter = ',', help_heading = sections::AUTHENTICATION, value_name = "strings")]
    pub requestheader_group_headers: Vec<String>,

    /// Request headers carrying the user's uid (X-Remote-Uid is suggested). Default: none.
    #[arg(long = "requestheader-uid-headers", value_delimiter = ',', help_heading = sections::AUTHENTICATION, value_name = "strings")]
    pub requestheader_uid_headers: Vec<String>,

    /// Request headers naming the user, the first with a value counts. Default:
    /// X-Remote-User.
    #[arg(long = "requestheader-username-headers", value_delimiter = ',', help_heading = sections::AUTHENTICATION, value_name = "strings")]
    pub requestheader_username_headers: Vec<String>,

    /// The `iss` of the service account tokens issued (the first) and accepted (all);
    /// repeatable.
    #[arg(
        long = "service-account-issuer",
        value_name = "URL",
        default_value = "https://kubernetes.default.svc.cluster.local",
        help_heading = sections::AUTHENTICATION
    )]
    pub service_account_issuer: Vec<String>,

    /// PEM keys (public, or PKCS#8 private) that verify service account tokens;
    /// repeatable. Default: the key of `--service-account-signing-key-file`.
    #[arg(long = "service-account-key-file", value_name = "FILE", help_heading = sections::AUTHENTICATION)]
    pub service_account_key_file: Vec<PathBuf>,

    /// The longest lifetime a TokenRequest may ask for (e.g. 24h); unset: no limit.
    #[arg(long = "service-account-max-token-expiration", value_parser = crate::filters::limits::parse_duration, help_heading = sections::AUTHENTICATION, value_name = "duration")]
    pub service_account_max_token_expiration: Option<Duration>,

    /// A CSV file of bearer tokens: `token,user,uid,"group1,group2"` per line.
    #[arg(long = "token-auth-file", value_name = "FILE", help_heading = sections::AUTHENTICATION)]
    pub token_auth_file: Option<PathBuf>,

    // Authorization flags.
    /// Paths anyone may request without asking the parent (with
    /// --authorization-kubeconfig); a trailing * matches by prefix.
    #[arg(
        long = "authorization-always-allow-paths",
        value_delimiter = ',',
        default_value = "/healthz,/readyz,/livez",
        help_heading = sections::AUTHORIZATION,
        value_name = "strings"
    )]
    pub authorization_always_allow_paths: Vec<String>,

    /// A kubeconfig naming the parent API server that authorizes this one's requests
    /// with SubjectAccessReviews.
    #[arg(long = "authorization-kubeconfig", value_name = "string", help_heading = sections::AUTHORIZATION)]
    pub authorization_kubeconfig: Option<PathBuf>,

    /// Authorizers asked in order, comma-separated: AlwaysAllow, AlwaysDeny, RBAC.
    /// Default: RBAC; with --authorization-kubeconfig none (the parent decides), and
    /// modes given as well are asked before the parent.
    #[arg(
        long = "authorization-mode",
        value_delimiter = ',',
        help_heading = sections::AUTHORIZATION,
        value_name = "strings")]
    pub authorization_mode: Vec<String>,

    /// How long the parent's "allowed" answers are cached.
    #[arg(long = "authorization-webhook-cache-authorized-ttl", default_value = "10s", value_parser = crate::filters::limits::parse_duration, help_heading = sections::AUTHORIZATION, value_name = "duration")]
    pub authorization_webhook_cache_authorized_ttl: std::time::Duration,

    /// How long the parent's "not allowed" answers are cached.
    #[arg(long = "authorization-webhook-cache-unauthorized-ttl", default_value = "10s", value_parser = crate::filters::limits::parse_duration, help_heading = sections::AUTHORIZATION, value_name = "duration")]
    pub authorization_webhook_cache_unauthorized_ttl: std::time::Duration,

    // Admission flags.
    /// Admission plugins to turn off, default ones included (comma-separated).
    #[arg(
        long = "disable-admission-plugins",
        value_delimiter = ',',
        value_name = "PLUGINS",
        help_heading = sections::ADMISSION
    )]
    pub disable_admission_plugins: Vec<String>,

    /// Admission plugins to turn on besides the default ones, by upstream's names
    /// (comma-separated); the chain runs them in upstream's order, not this one's.
    #[arg(
        long = "enable-admission-plugins",
        value_delimiter = ',',
        value_name = "PLUGINS",
        help_heading = sections::ADMISSION
    )]
    pub enable_admission_plugins: Vec<String>,

    // Metrics flags.
    /// Metrics to leave out of /metrics, each by its full name (comma-separated): a way
    /// around a metric that misbehaves.
    #[arg(long = "disabled-metrics", value_delimiter = ',', help_heading = sections::METRICS, value_name = "strings")]
    pub disabled_metrics: Vec<String>,

    /// Show the metrics hidden in the given version; only the minor version before this
    /// server's is accepted. This server hides no metrics, so the value is checked and
    /// changes nothing.
    #[arg(long = "show-hidden-metrics-for-version", help_heading = sections::METRICS, value_name = "string")]
    pub show_hidden_metrics_for_version: Option<String>,

    // Logs flags.
    /// Sets the log format: text (klog's lines) or json (one object per line, klog's
    /// field names: ts, caller, msg, v, ...).
    #[arg(long = "logging-format", default_value = "text", help_heading = sections::LOGS, value_name = "string")]
    pub logging_format: String,

    /// Number for the log level verbosity: 2 adds detail, 3 one access-log line per
    /// request, 5 tracing, 6 the libraries' own debug output.
    #[arg(short = 'v', long = "v", default_value_t = 0, value_name = "Level", help_heading = sections::LOGS)]
    pub v: u32,

    /// Comma-separated `module=N` verbosities for modules of this server (e.g.
    /// registry::store=5,httplog=3).
    #[arg(long = "vmodule", value_name = "MODULE=N,...", help_heading = sections::LOGS)]
    pub vmodule: Option<String>,

    // Misc flags: upstream's, then this server's own.
    /// Amount of time to retain events.
    #[arg(long = "event-ttl", default_value = "1h0m0s", value_parser = crate::filters::limits::parse_duration, help_heading = sections::MISC, value_name = "duration")]
    pub event_ttl: Duration,

    /// The built-in controllers to run, as kube-controller-manager's flag: `*` for all,
    /// a name to add one, `-name` to leave one out (e.g. `*,-garbage-collector-controller`).
    #[arg(
        long = "controllers",
        value_delimiter = ',',
        default_value = "*",
        value_name = "NAMES",
        help_heading = sections::MISC
    )]
    pub controllers: Vec<String>,

    /// Start a leader election client and gain leadership (a coordination.k8s.io/v1
    /// Lease) before running the controllers of --controllers, so that of several
    /// instances on one etcd one runs them. The embedded store has one instance: there
    /// they run at once.
    #[arg(
        long = "leader-elect",
        default_value_t = true,
        num_args = 0..=1,
        default_missing_value = "true",
        action = clap::ArgAction::Set,
        help_heading = sections::MISC
    )]
    pub leader_elect: bool,

    /// How long after the leader's last observed renewal other candidates wait before
    /// taking the Lease: the longest a stopped leader goes unreplaced.
    #[arg(long = "leader-elect-lease-duration", default_value = "15s", value_parser = crate::filters::limits::parse_duration, help_heading = sections::MISC, value_name = "duration")]
    pub leader_elect_lease_duration: Duration,

    /// How long the leader keeps trying to renew the Lease before it stops leading.
    /// Must be less than the lease duration.
    #[arg(long = "leader-elect-renew-deadline", default_value = "10s", value_parser = crate::filters::limits::parse_duration, help_heading = sections::MISC, value_name = "duration")]
    pub leader_elect_renew_deadline: Duration,

    /// The kind of object leader election locks; only `leases`.
    #[arg(long = "leader-elect-resource-lock", default_value = "leases", help_heading = sections::MISC, value_name = "string")]
    pub leader_elect_resource_lock: String,

    /// The name of the Lease leader election uses.
    #[arg(long = "leader-elect-resource-name", default_value = "kube-controller-manager", help_heading = sections::MISC, value_name = "string")]
    pub leader_elect_resource_name: String,

    /// The namespace of the Lease leader election uses.
    #[arg(long = "leader-elect-resource-namespace", default_value = "kube-system", help_heading = sections::MISC, value_name = "string")]
    pub leader_elect_resource_namespace: String,

    /// The pause between a candidate's tries to take the Lease and between the leader's
    /// renewals.
    #[arg(long = "leader-elect-retry-period", default_value = "2s", value_parser = crate::filters::limits::parse_duration, help_heading = sections::MISC, value_name = "duration")]
    pub leader_elect_retry_period: Duration,

    /// The directory of the embedded store; the admin kubeconfig is written beside it.
    /// Not a kube-apiserver flag.
    #[arg(long = "data-dir", default_value = ".apiserver-data", help_heading = sections::MISC, value_name = "string")]
    pub data_dir: PathBuf,

    /// A directory of YAML resource definitions (the `api-defs/` format) to serve without
    /// codegen or a restart: files added, changed or removed there are registered,
    /// re-registered or unregistered within a second. Not a kube-apiserver flag; for
    /// trying a definition out (kinds that need typed Rust go through codegen).
    #[arg(long = "definitions-dir", value_name = "DIR", help_heading = sections::MISC)]
    pub definitions_dir: Option<PathBuf>,

    /// With --etcd-servers: consistent reads served by the watch cache share requests for
    /// etcd's current revision (each takes the first that started after it arrived);
    /// false makes one request per read. Not a kube-apiserver flag.
    #[arg(
        long = "etcd-coalesce-revision-requests",
        num_args = 0..=1,
        default_missing_value = "true",
        action = clap::ArgAction::Set,
        value_name = "bool",
        help_heading = sections::MISC
    )]
    pub etcd_coalesce_revision_requests: Option<bool>,

    /// With --etcd-servers: whether etcd's watch progress notifications come in order
    /// with its events, which lets the watch cache answer consistent reads. `auto`
    /// decides from etcd's version (ordered from 3.4.31 and 3.5.13); `ordered` trusts an
    /// older build known to carry the fix (on one without it a consistent read may miss
    /// a recent write); `unordered` sends every consistent read to etcd. Not a
    /// kube-apiserver flag.
    #[arg(
        long = "etcd-watch-progress",
        value_parser = ["auto", "ordered", "unordered"],
        value_name = "auto|ordered|unordered",
        help_heading = sections::MISC
    )]
    pub etcd_watch_progress: Option<String>,

    /// Where to write the admin kubeconfig. Defaults to <data-dir>/admin.kubeconfig.
    /// Not a kube-apiserver flag.
    #[arg(long = "kubeconfig-out", help_heading = sections::MISC, value_name = "string")]
    pub kubeconfig_out: Option<PathBuf>,

    /// The embedded store's page cache, in bytes or with a Ki, Mi or Gi suffix (at least
    /// 1Mi). The watch caches hold every object already, so it speeds up writes and the
    /// reads that reach the store (exact and past reads); a larger one holds more of the
    /// store's pages in memory. Unused with --etcd-servers. Not a kube-apiserver flag.
    #[arg(long = "storage-cache-size", default_value = "64Mi", value_parser = crate::storage::parse_cache_size, help_heading = sections::MISC, value_name = "quantity")]
    pub storage_cache_size: usize,

    /// How many changes the embedded store keeps in memory for watches and paginated
    /// lists (at least 100); a watch or continue token older than that gets 410 Expired
    /// and the client lists again. --etcd-compaction-interval trims it too. Unused with
    /// --etcd-servers. Not a kube-apiserver flag.
    #[arg(long = "storage-history-size", default_value_t = crate::storage::events::DEFAULT_HISTORY, value_parser = crate::storage::parse_history_size, help_heading = sections::MISC, value_name = "int")]
    pub storage_history_size: usize,

    /// The PKCS#8 private key (RSA or ECDSA) that signs service account tokens.
    /// Default: a P-256 key the server generates once in `--data-dir`.
    #[arg(long = "service-account-signing-key-file", value_name = "FILE", help_heading = sections::MISC)]
    pub service_account_signing_key_file: Option<PathBuf>,

    /// A CIDR notation IP range from which to assign service cluster IPs (IPv4 only
    /// here; upstream also takes an IPv6 or a dual-stack pair).
    #[arg(long = "service-cluster-ip-range", default_value = crate::registry::services::DEFAULT_CLUSTER_IP_RANGE, help_heading = sections::MISC, value_name = "string")]
    pub service_cluster_ip_range: String,

    /// A port range to reserve for services with NodePort visibility (`30000-32767`,
    /// inclusive at both ends).
    #[arg(long = "service-node-port-range", default_value = crate::registry::services::DEFAULT_NODE_PORT_RANGE, help_heading = sections::MISC, value_name = "string")]
    pub service_node_port_range: String,

    /// Proxy to an APIService's Service through one of its endpoints rather than its
    /// cluster IP.
    #[arg(long = "enable-aggregator-routing", default_value_t = false, help_heading = sections::MISC)]
    pub enable_aggregator_routing: bool,

    /// Client certificate (PEM) the aggregator presents to the servers of APIServices,
    /// which read the user from its front-proxy headers.
    #[arg(long = "proxy-client-cert-file", value_name = "string", help_heading = sections::MISC)]
    pub proxy_client_cert_file: Option<PathBuf>,

    /// Private key (PEM) of --proxy-client-cert-file.
    #[arg(long = "proxy-client-key-file", value_name = "string", help_heading = sections::MISC)]
    pub proxy_client_key_file: Option<PathBuf>,

    /// How often the OpenAPI documents of APIServices' servers are asked for again
    /// (upstream's fixed minute). Not a kube-apiserver flag.
    #[arg(long = "aggregated-openapi-refresh-interval", default_value = "1m0s", value_parser = crate::filters::limits::parse_duration, help_heading = sections::MISC, value_name = "duration")]
    pub aggregated_openapi_refresh_interval: Duration,

    /// The number of HTTP worker threads (0 = one per core). Not a kube-apiserver flag.
    #[arg(long = "workers", default_value_t = 0, help_heading = sections::MISC, value_name = "int")]
    pub workers: usize,

    // Global flags.
    /// Help for apiserver.
    #[arg(short = 'h', long = "help", action = clap::ArgAction::Help, help_heading = sections::GLOBAL)]
    help: Option<bool>,

    /// Print version information and quit.
    #[arg(long = "version", action = clap::ArgAction::Version, help_heading = sections::GLOBAL)]
    version: Option<bool>,
}

/// What the command line asks for.
#[derive(Debug)]
pub enum CommandLine {
    /// Serve with these options.
    Serve(Box<ServerRunOptions>),
    /// Print this (`--help`, `--version`) and exit successfully.
    Print(String),
    /// Refuse to start: every problem found.
    Refuse(Vec<String>),
}

/// The most value errors one run of the parser reports before giving up.
const MAX_VALUE_ERRORS: usize = 32;

impl ServerRunOptions {
    /// Reads a command line (the program name first): upstream flags this server does
    /// not implement, bad values and bad combinations are all reported together;
    /// upstream's deprecation notices come back as `warnings`.
    pub fn from_command_line(args: impl IntoIterator<Item = String>) -> (CommandLine, Vec<String>) {
        let screened = crate::upstream_flags::screen(args);
        let mut errors = screened.errors;
        let mut args = screened.args;
        let command = Self::command();
        let parsed = loop {
            match command.clone().try_get_matches_from(&args) {
                Ok(matches) => break Self::from_arg_matches(&matches).ok(),
                Err(e) => {
                    use clap::error::ErrorKind;
                    match e.kind() {
                        ErrorKind::DisplayHelp | ErrorKind::DisplayVersion => {
                            return (
                                CommandLine::Print(e.render().to_string()),
                                screened.warnings,
                            )
                        }
                        ErrorKind::InvalidValue | ErrorKind::ValueValidation
                            if errors.len() < MAX_VALUE_ERRORS =>
                        {
                            errors.push(clap_message(&e));
                            // Drop the bad value and parse again, to find the others.
                            if !remove_bad_value(&command, &e, &mut args) {
                                break None;
                            }
                        }
                        _ => {
                            errors.push(clap_message(&e));
                            break None;
                        }
                    }
                }
            }
        };
        if let Some(options) = &parsed {
            errors.extend(options.validate());
        }
        let outcome = match parsed {
            Some(options) if errors.is_empty() => CommandLine::Serve(Box::new(options)),
            _ => CommandLine::Refuse(errors),
        };
        (outcome, screened.warnings)
    }
}

/// A clap error as one message: without the `error: ` prefix, the usage and the
/// pointer to `--help` (the caller prints its own), keeping clap's suggestions.
fn clap_message(e: &clap::Error) -> String {
    let text = e.render().to_string();
    let text = text.strip_prefix("error: ").unwrap_or(&text);
    let kept: Vec<&str> = text
        .lines()
        .take_while(|l| !l.starts_with("Usage:") && !l.starts_with("For more information"))
        .filter(|l| !l.trim().is_empty())
        .collect();
    kept.join("\n")
}

/// Removes the flag occurrence whose value `e` refused; false when none was found.
fn remove_bad_value(command: &clap::Command, e: &clap::Error, args: &mut Vec<String>) -> bool {
    use clap::error::{ContextKind, ContextValue};
    let text = |kind| match e.get(kind) {
        Some(ContextValue::String(s)) => Some(s.clone()),
        _ => None,
    };
    let (Some(arg), Some(value)) = (
        text(ContextKind::InvalidArg),
        text(ContextKind::InvalidValue),
    ) else {
        return false;
    };
    // `--secure-port <SECURE_PORT>` or `-v <LEVEL>`: the flag, then its value's name.
    let flag = arg.split_whitespace().next().unwrap_or_default();
    let Some(found) = command.get_arguments().find(|a| {
        a.get_long().is_some_and(|l| flag == format!("--{l}"))
            || a.get_short().is_some_and(|s| flag == format!("-{s}"))
    }) else {
        return false;
    };
    let mut spellings = Vec::new();
    if let Some(l) = found.get_long() {
        spellings.push(format!("--{l}"));
    }
    if let Some(s) = found.get_short() {
        spellings.push(format!("-{s}"));
    }
    for i in 1..args.len() {
        for spelling in &spellings {
            if args[i] == format!("{spelling}={value}") {
                args.remove(i);
                return true;
            }
            if args[i] == *spelling && args.get(i + 1) == Some(&value) {
                args.drain(i..i + 2);
                return true;
            }
        }
    }
    false
}

/// Auditing as the flags ask for it (see [`ServerRunOptions::audit_config`]): the
/// policy and at least one backend.
pub struct AuditConfig {
    pub policy: crate::audit::policy::Policy,
    /// The log: where and how it is written.
    pub log: Option<(crate::audit::log::Destination, crate::audit::log::Mode)>,
    pub webhook: Option<crate::audit::webhook::WebhookConfig>,
}

impl ServerRunOptions {
    /// The admission plugins the flags select, in the order they run.
    pub fn admission_plugins(&self) -> Result<Vec<&'static str>, Vec<String>> {
        crate::admission::plugins::select(
            &self.enable_admission_plugins,
            &self.disable_admission_plugins,
        )
    }

    /// Auditing, when a policy and a backend (log path, webhook) are given (`None`
    /// otherwise, as upstream: no backend or no policy means no audit); every problem
    /// with the audit flags, the policy file or the webhook's kubeconfig otherwise.
    pub fn audit_config(&self) -> Result<Option<AuditConfig>, Vec<String>> {
        use crate::audit::log::{Destination, Mode};
        use crate::audit::rotation::Rotation;
        let mut errors = Vec::new();
        let mut count = |flag: &str, value: i64| {
            u64::try_from(value).unwrap_or_else(|_| {
                errors.push(format!("{flag} {value} must not be negative"));
                0
            })
        };
        let rotation = Rotation {
            max_age_days: count("--audit-log-maxage", self.audit_log_maxage),
            max_backups: count("--audit-log-maxbackup", self.audit_log_maxbackup) as usize,
            max_size_mb: count("--audit-log-maxsize", self.audit_log_maxsize),
        };
        match self.audit_log_format.as_str() {
            "json" => {}
            "legacy" => errors
                .push("--audit-log-format=legacy is not supported by this server: use json".into()),
            other => errors.push(format!(
                "--audit-log-format {other:?}: unknown format; supported: json"
            )),
        }
        let mut mode_of = |flag: &str, value: &str| {
            Mode::parse(value).unwrap_or_else(|| {
                errors.push(format!(
                    "{flag} {value:?}: unknown mode; supported: {}",
                    Mode::NAMES.join(", ")
                ));
                Mode::Blocking
            })
        };
        let mode = mode_of("--audit-log-mode", &self.audit_log_mode);
        let webhook_mode = mode_of("--audit-webhook-mode", &self.audit_webhook_mode);
        let webhook = self.audit_webhook_config(webhook_mode, &mut errors);
        let policy = match &self.audit_policy_file {
            Some(path) => crate::audit::policy::Policy::load(path)
                .map_err(|e| errors.push(e.to_string()))
                .ok(),
            None => None,
        };
        let destination = match &self.audit_log_path {
            Some(p) if p.as_os_str() == "-" => Some(Destination::Stdout),
            Some(p) if p.as_os_str().is_empty() => None,
            Some(p) => Some(Destination::File(p.clone(), rotation)),
            None => None,
        };
        if !errors.is_empty() {
            return Err(errors);
        }
        let log = destination.map(|d| (d, mode));
        Ok(match policy {
            Some(policy) if log.is_some() || webhook.is_some() => Some(AuditConfig {
                policy,
                log,
                webhook,
            }),
            _ => None,
        })
    }

    /// The audit webhook, when `--audit-webhook-config-file` names one; its flags'
    /// problems go to `errors`.
    fn audit_webhook_config(
        &self,
        mode: crate::audit::log::Mode,
        errors: &mut Vec<String>,
    ) -> Option<crate::audit::webhook::WebhookConfig> {
        use crate::audit::webhook::{BatchConfig, WebhookConfig};
        let mut positive = |flag: &str, value: i64| {
            usize::try_from(value)
                .ok()
                .filter(|v| *v > 0)
                .unwrap_or_else(|| {
                    errors.push(format!("{flag} {value} must be greater than 0"));
                    1
                })
        };
        let buffer_size = positive(
            "--audit-webhook-batch-buffer-size",
            self.audit_webhook_batch_buffer_size,
        );
        let max_size = positive(
            "--audit-webhook-batch-max-size",
            self.audit_webhook_batch_max_size,
        );
        let throttle = self.audit_webhook_batch_throttle_enable.then(|| {
            let burst = positive(
                "--audit-webhook-batch-throttle-burst",
                self.audit_webhook_batch_throttle_burst,
            );
            (self.audit_webhook_batch_throttle_qps, burst as u32)
        });
        if throttle.is_some() && self.audit_webhook_batch_throttle_qps <= 0.0 {
            errors.push(format!(
                "--audit-webhook-batch-throttle-qps {} must be greater than 0",
                self.audit_webhook_batch_throttle_qps
            ));
        }
        if self.audit_webhook_batch_max_wait.is_zero() {
            errors.push("--audit-webhook-batch-max-wait must be greater than 0".into());
        }
        if self.audit_webhook_version != "audit.k8s.io/v1" {
            errors.push(format!(
                "--audit-webhook-version {:?}: only audit.k8s.io/v1 is supported",
                self.audit_webhook_version
            ));
        }
        let path = self
            .audit_webhook_config_file
            .as_ref()
            .filter(|p| !p.as_os_str().is_empty())?;
        let flag = "--audit-webhook-config-file";
        let server = crate::auth::parent::Parent::from_kubeconfig(path, flag)
            .map_err(|e| errors.push(e))
            .ok()?;
        Some(WebhookConfig {
            server,
            mode,
            batch: BatchConfig {
                buffer_size,
                max_size,
                max_wait: self.audit_webhook_batch_max_wait,
                throttle,
            },
            initial_backoff: self.audit_webhook_initial_backoff,
        })
    }

    /// The Service address ranges of `--service-cluster-ip-range` and
    /// `--service-node-port-range`.
    pub fn service_allocator(
        &self,
    ) -> Result<crate::registry::services::ServiceAllocator, Vec<String>> {
        use crate::registry::services::{IpRange, PortRange, ServiceAllocator};
        let ips = IpRange::parse(&self.service_cluster_ip_range)
            .map_err(|e| format!("--service-cluster-ip-range {e}"));
        let ports = PortRange::parse(&self.service_node_port_range)
            .map_err(|e| format!("--service-node-port-range {e}"));
        match (ips, ports) {
            (Ok(ips), Ok(ports)) => Ok(ServiceAllocator::new(ips, ports)),
            (ips, ports) => Err(ips.err().into_iter().chain(ports.err()).collect()),
        }
    }

    /// Checks flag combinations; returns every problem found.
    pub fn validate(&self) -> Vec<String> {
        let mut errors = Vec::new();
        if self.secure_port == 0 {
            errors.push(
                "--secure-port 0 is not allowed: choose a port between 1 and 65535".to_string(),
            );
        }
        match (&self.tls_cert_file, &self.tls_private_key_file) {
            (Some(_), None) => {
                errors.push("--tls-cert-file requires --tls-private-key-file".into())
            }
            (None, Some(_)) => {
                errors.push("--tls-private-key-file requires --tls-cert-file".into())
            }
            (Some(c), Some(k)) => {
                for (flag, p) in [("--tls-cert-file", c), ("--tls-private-key-file", k)] {
                    if !p.is_file() {
                        errors.push(format!("{flag} {}: no such file", p.display()));
                    }
                }
            }
            (None, None) => {}
        }
        if self.event_ttl.is_zero() {
            errors.push("--event-ttl must be greater than 0s".to_string());
        }
        if let Err(e) = self.tls_policy().check() {
            errors.push(e);
        }
        if self.request_timeout.is_zero() {
            errors.push("--request-timeout must be greater than 0, e.g. 1m0s".into());
        }
        if self.aggregated_openapi_refresh_interval.is_zero() {
            errors.push(
                "--aggregated-openapi-refresh-interval must be greater than 0, e.g. 1m0s".into(),
            );
        }
        if let Err(e) = self.logging() {
            errors.extend(e);
        }
        self.validate_etcd(&mut errors);
        self.validate_auth(&mut errors);
        self.validate_features_and_metrics(&mut errors);
        if let Err(e) = self.service_allocator() {
            errors.extend(e);
        }
        // Its contents are checked at start-up (`storage::encryption`), every field at fault.
        if let Some(p) = self
            .encryption_provider_config
            .as_ref()
            .filter(|p| !p.is_file())
        {
            errors.push(format!(
                "--encryption-provider-config {}: no such file",
                p.display()
            ));
        }
        if let Err(e) = self.admission_plugins() {
            errors.extend(e);
        }
        if let Err(e) = crate::controllers::Selection::parse(&self.controllers) {
            errors.push(e);
        }
        if self.leader_elect {
            errors.extend(self.leader_election_config().check());
            if self.leader_elect_resource_lock != "leases" {
                errors.push(format!(
                    "--leader-elect-resource-lock {:?}: only \"leases\" is supported",
                    self.leader_elect_resource_lock
                ));
            }
        }
        if let Err(e) = self.audit_config() {
            errors.extend(e);
        }
        if self.data_dir.as_os_str().is_empty() {
            errors.push("--data-dir must not be empty".into());
        } else if self.data_dir.exists() && !self.data_dir.is_dir() {
            errors.push(format!(
                "--data-dir {}: exists and is not a directory",
                self.data_dir.display()
            ));
        }
        errors
    }

    /// Leader election for the controllers: `None` with `--leader-elect=false` and on the
    /// embedded store, which only one instance can open.
    pub fn leader_election(
        &self,
    ) -> Option<crate::controllers::leader_election::LeaderElectionConfig> {
        let on_etcd = self.etcd_servers.iter().any(|s| !s.is_empty());
        (self.leader_elect && on_etcd).then(|| self.leader_election_config())
    }

    fn leader_election_config(&self) -> crate::controllers::leader_election::LeaderElectionConfig {
        crate::controllers::leader_election::LeaderElectionConfig {
            lease_duration: self.leader_elect_lease_duration,
            renew_deadline: self.leader_elect_renew_deadline,
            retry_period: self.leader_elect_retry_period,
            namespace: self.leader_elect_resource_namespace.clone(),
            name: self.leader_elect_resource_name.clone(),
        }
    }

    /// The Features and Metrics sections: what this server cannot do is refused by value.
    fn validate_features_and_metrics(&self, errors: &mut Vec<String>) {
        for value in &self.feature_gates {
            errors.extend(crate::feature_gates::check(value));
        }
        for (flag, on) in [
            ("--profiling", self.profiling),
            ("--contention-profiling", self.contention_profiling),
        ] {
            if on {
                errors.push(format!(
                    "{flag}=true is not supported by this server: it serves no /debug/pprof profiling endpoints"
                ));
            }
        }
        if self.enable_priority_and_fairness {
            errors.push("--enable-priority-and-fairness=true is not supported by this server: it limits requests with --max-requests-inflight and --max-mutating-requests-inflight (as kube-apiserver with --enable-priority-and-fairness=false)".into());
        }
        if let Some(version) = self
            .show_hidden_metrics_for_version
            .as_deref()
            .filter(|v| !v.is_empty())
        {
            let previous = crate::metrics::previous_minor_version();
            if version != previous {
                errors.push(format!("--show-hidden-metrics-for-version must be omitted or have the value '{previous}'. Only the previous minor version is allowed"));
            }
        }
        for name in &self.disabled_metrics {
            let valid = !name.is_empty()
                && name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':')
                && !name.starts_with(|c: char| c.is_ascii_digit());
            if !valid {
                errors.push(format!(
                    "--disabled-metrics {name:?}: not a metric name (letters, digits, '_' and ':')"
                ));
            }
        }
    }

    fn validate_auth(&self, errors: &mut Vec<String>) {
        let mut files: Vec<(&str, &PathBuf)> = [
            ("--client-ca-file", &self.client_ca_file),
            (
                "--requestheader-client-ca-file",
                &self.requestheader_client_ca_file,
            ),
            ("--token-auth-file", &self.token_auth_file),
            (
                "--service-account-signing-key-file",
                &self.service_account_signing_key_file,
            ),
        ]
        .into_iter()
        .filter_map(|(flag, path)| Some((flag, path.as_ref()?)))
        .collect();
        for path in &self.service_account_key_file {
            files.push(("--service-account-key-file", path));
        }
        for (flag, path) in files {
            if !path.is_file() {
                errors.push(format!("{flag} {}: no such file", path.display()));
            }
        }
        if self.service_account_issuer.iter().any(String::is_empty) {
            errors.push("--service-account-issuer must not be empty".into());
        }
        for (flag, kubeconfig) in [
            (
                "--authentication-kubeconfig",
                &self.authentication_kubeconfig,
            ),
            ("--authorization-kubeconfig", &self.authorization_kubeconfig),
        ] {
            if let Some(Err(e)) = kubeconfig
                .as_ref()
                .map(|p| crate::auth::parent::Parent::from_kubeconfig(p, flag))
            {
                errors.push(e);
            }
        }
        if let Err(e) = crate::auth::webhook_authz::AlwaysAllowPaths::new(
            &self.authorization_always_allow_paths,
        ) {
            errors.push(e);
        }
        if let Err(e) = self.proxy_client_cert() {
            errors.push(e);
        }
        let modes = &self.authorization_mode;
        if modes.iter().any(String::is_empty) {
            errors.push("--authorization-mode: name at least one mode, e.g. RBAC".into());
        }
        for (i, mode) in modes.iter().enumerate() {
            if !mode.is_empty() && !crate::auth::authz::MODES.contains(&mode.as_str()) {
                errors.push(format!(
                    "--authorization-mode: unknown or unsupported mode {mode:?}; supported: {}",
                    crate::auth::authz::MODES.join(", ")
                ));
            }
            if modes[..i].contains(mode) {
                errors.push(format!("--authorization-mode: {mode} is listed twice"));
            }
        }
    }

    fn validate_etcd(&self, errors: &mut Vec<String>) {
        let servers: Vec<&String> = self.etcd_servers.iter().filter(|s| !s.is_empty()).collect();
        if servers.is_empty() {
            for (flag, given) in [
                ("--etcd-cafile", self.etcd_cafile.is_some()),
                ("--etcd-certfile", self.etcd_certfile.is_some()),
                ("--etcd-keyfile", self.etcd_keyfile.is_some()),
                (
                    "--etcd-coalesce-revision-requests",
                    self.etcd_coalesce_revision_requests.is_some(),
                ),
                ("--etcd-watch-progress", self.etcd_watch_progress.is_some()),
            ] {
                if given {
                    errors.push(format!("{flag} requires --etcd-servers"));
                }
            }
            return;
        }
        if !cfg!(feature = "etcd") {
            errors.push(crate::storage::ETCD_NOT_BUILT.to_string());
        }
        for s in &servers {
            if !(s.starts_with("http://") || s.starts_with("https://")) {
                errors.push(format!(
                    "--etcd-servers {s}: expected a URL such as http://127.0.0.1:2379"
                ));
            }
        }
        if self.etcd_certfile.is_some() != self.etcd_keyfile.is_some() {
            errors.push("--etcd-certfile and --etcd-keyfile must be given together".into());
        }
        for (flag, path) in [
            ("--etcd-cafile", &self.etcd_cafile),
            ("--etcd-certfile", &self.etcd_certfile),
            ("--etcd-keyfile", &self.etcd_keyfile),
        ] {
            if let Some(p) = path.as_ref().filter(|p| !p.is_file()) {
                errors.push(format!("{flag} {}: no such file", p.display()));
            }
        }
    }

    /// The log format, verbosity and per-module levels the Logs flags ask for.
    pub fn logging(
        &self,
    ) -> Result<
        (
            crate::logging::LogFormat,
            u32,
            Vec<crate::logging::ModuleLevel>,
        ),
        Vec<String>,
    > {
        let format = crate::logging::LogFormat::parse(&self.logging_format);
        let modules = match &self.vmodule {
            Some(text) => crate::logging::parse_vmodule(text),
            None => Ok(Vec::new()),
        };
        match (format, modules) {
            (Ok(format), Ok(modules)) => Ok((format, self.v, modules)),
            (format, modules) => Err(format
                .err()
                .into_iter()
                .chain(modules.err().into_iter().flatten())
                .collect()),
        }
    }

    /// The `--authorization-mode` modes asked: as given, else RBAC, or none when the
    /// parent authorizes (`--authorization-kubeconfig`).
    pub fn authorization_modes(&self) -> Vec<String> {
        if !self.authorization_mode.is_empty() || self.authorization_kubeconfig.is_some() {
            return self.authorization_mode.clone();
        }
        vec!["RBAC".into()]
    }

    /// The `--requestheader-*` headers and allowed names, with the headers every
    /// front proxy sends (X-Remote-User, X-Remote-Group, X-Remote-Extra-) where not given.
    pub fn request_header_config(&self) -> crate::auth::authn::requestheader::RequestHeaderConfig {
        let or = |given: &[String], default: &str| {
            let given: Vec<String> = given.iter().filter(|h| !h.is_empty()).cloned().collect();
            if given.is_empty() {
                vec![default.to_string()]
            } else {
                given
            }
        };
        crate::auth::authn::requestheader::RequestHeaderConfig {
            username_headers: or(&self.requestheader_username_headers, "X-Remote-User"),
            uid_headers: self
                .requestheader_uid_headers
                .iter()
                .filter(|h| !h.is_empty())
                .cloned()
                .collect(),
            group_headers: or(&self.requestheader_group_headers, "X-Remote-Group"),
            extra_prefixes: or(&self.requestheader_extra_headers_prefix, "X-Remote-Extra-"),
            allowed_names: self
                .requestheader_allowed_names
                .iter()
                .filter(|n| !n.is_empty())
                .cloned()
                .collect(),
        }
    }

    /// The aggregator's front-proxy client certificate, when both files are given.
    pub fn proxy_client_cert(
        &self,
    ) -> Result<Option<crate::aggregator::backend::ProxyClientCert>, String> {
        match (&self.proxy_client_cert_file, &self.proxy_client_key_file) {
            (Some(cert), Some(key)) => {
                crate::aggregator::backend::ProxyClientCert::load(cert, key).map(Some)
            }
            (Some(_), None) => {
                Err("--proxy-client-cert-file requires --proxy-client-key-file".into())
            }
            (None, Some(_)) => {
                Err("--proxy-client-key-file requires --proxy-client-cert-file".into())
            }
            (None, None) => Ok(None),
        }
    }

    /// Where objects are kept: etcd when `--etcd-servers` is given, else the embedded store.
    pub fn storage_config(&self) -> crate::storage::StorageConfig {
        use crate::storage::{RevisionRequests, WatchProgress};
        let servers: Vec<String> = self
            .etcd_servers
            .iter()
            .filter(|s| !s.is_empty())
            .cloned()
            .collect();
        crate::storage::StorageConfig {
            data_dir: self.data_dir.clone(),
            etcd: (!servers.is_empty()).then(|| crate::storage::EtcdConfig {
                servers,
                prefix: self.etcd_prefix.clone(),
                ca_file: self.etcd_cafile.clone(),
                cert_file: self.etcd_certfile.clone(),
                key_file: self.etcd_keyfile.clone(),
                watch_progress: match self.etcd_watch_progress.as_deref() {
                    Some("ordered") => WatchProgress::Ordered,
                    Some("unordered") => WatchProgress::Unordered,
                    _ => WatchProgress::FromVersion,
                },
                revision_requests: match self.etcd_coalesce_revision_requests {
                    Some(false) => RevisionRequests::Separate,
                    _ => RevisionRequests::Coalesced,
                },
            }),
            compaction_interval: self.etcd_compaction_interval,
            embedded: crate::storage::embedded::EmbeddedOptions {
                cache_size: self.storage_cache_size,
                history: self.storage_history_size,
            },
        }
    }

    /// The TLS versions and suites the flags allow.
    pub fn tls_policy(&self) -> crate::server::tls::TlsPolicy {
        crate::server::tls::TlsPolicy {
            min_version: self.tls_min_version.clone(),
            cipher_suites: self.tls_cipher_suites.clone(),
        }
    }

    /// Directory for the generated serving certificate.
    pub fn cert_dir(&self) -> PathBuf {
        self.cert_dir
            .clone()
            .unwrap_or_else(|| self.data_dir.join("certs"))
    }

    /// Path of the admin kubeconfig.
    pub fn kubeconfig_path(&self) -> PathBuf {
        self.kubeconfig_out
            .clone()
            .unwrap_or_else(|| self.data_dir.join("admin.kubeconfig"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn command_line(args: &[&str]) -> (CommandLine, Vec<String>) {
        let dir = std::env::temp_dir().join("apiserver-options-test");
        let mut all = vec![
            "apiserver".to_string(),
            format!("--data-dir={}", dir.display()),
        ];
        all.extend(args.iter().map(|a| a.to_string()));
        ServerRunOptions::from_command_line(all)
    }

    fn refused(args: &[&str]) -> Vec<String> {
        match command_line(args).0 {
            CommandLine::Refuse(errors) => errors,
            other => panic!("{args:?} must be refused, got {other:?}"),
        }
    }

    #[test]
    fn leader_election_flags_are_checked_together_and_only_on_etcd_elect() {
        let errors = refused(&[
            "--leader-elect-lease-duration=5s",
            "--leader-elect-renew-deadline=5s",
            "--leader-elect-retry-period=0s",
            "--leader-elect-resource-lock=endpoints",
        ]);
        for expected in [
            "--leader-elect-retry-period must be greater than zero",
            "--leader-elect-lease-duration must be greater than --leader-elect-renew-deadline",
            "--leader-elect-resource-lock \"endpoints\": only \"leases\" is supported",
        ] {
            assert!(
                errors.iter().any(|e| e == expected),
                "{expected} in {errors:?}"
            );
        }
        // Not checked when leader election is off.
        let CommandLine::Serve(off) =
            command_line(&["--leader-elect=false", "--leader-elect-renew-deadline=1h"]).0
        else {
            panic!("--leader-elect=false with any durations must serve");
        };
        assert_eq!(off.leader_election(), None);
        let CommandLine::Serve(embedded) = command_line(&[]).0 else {
            panic!("the defaults must serve");
        };
        assert_eq!(
            embedded.leader_election(),
            None,
            "the embedded store elects no leader"
        );
    }

    #[test]
    fn bad_values_of_several_flags_are_all_reported() {
        let errors = refused(&["--secure-port=abc", "--v", "x", "--request-timeout=soon"]);
        assert_eq!(errors.len(), 3, "{errors:?}");
        assert!(errors[0].contains("'abc' for '--secure-port"), "{errors:?}");
        assert!(errors[1].contains("'x' for '--v"), "{errors:?}");
        assert!(
            errors[2].contains("'soon' for '--request-timeout"),
            "{errors:?}"
        );
    }

    #[test]
    fn etcd_read_flags_take_known_values_and_need_etcd_servers() {
        let errors = refused(&[
            "--etcd-watch-progress=sometimes",
            "--etcd-coalesce-revision-requests=false",
        ]);
        assert_eq!(errors.len(), 2, "{errors:?}");
        assert!(
            errors[0].contains("'sometimes' for '--etcd-watch-progress"),
            "{errors:?}"
        );
        assert_eq!(
            errors[1],
            "--etcd-coalesce-revision-requests requires --etcd-servers"
        );
        if !cfg!(feature = "etcd") {
            return;
        }
        let (CommandLine::Serve(opts), _) = command_line(&[
            "--etcd-servers=http://127.0.0.1:2379",
            "--etcd-watch-progress=ordered",
            "--etcd-coalesce-revision-requests=false",
        ]) else {
            panic!("the etcd flags are accepted");
        };
        let etcd = opts.storage_config().etcd.expect("etcd is configured");
        assert_eq!(etcd.watch_progress, crate::storage::WatchProgress::Ordered);
        assert_eq!(
            etcd.revision_requests,
            crate::storage::RevisionRequests::Separate
        );
        let (CommandLine::Serve(opts), _) = command_line(&["--etcd-servers=http://127.0.0.1:2379"])
        else {
            panic!("etcd alone is accepted");
        };
        let etcd = opts.storage_config().etcd.expect("etcd is configured");
        assert_eq!(
            etcd.watch_progress,
            crate::storage::WatchProgress::FromVersion
        );
        assert_eq!(
            etcd.revision_requests,
            crate::storage::RevisionRequests::Coalesced
        );
    }

    #[test]
    fn bad_values_and_bad_combinations_are_reported_together() {
        let errors = refused(&[
            "--logging-format=xml",
            "--vmodule=*.go=3",
            "--secure-port=0",
            "--debug-socket-path=/tmp/s",
        ]);
        assert_eq!(errors.len(), 4, "{errors:?}");
        assert_eq!(
            errors[0],
            "flag --debug-socket-path is not supported by this server"
        );
        assert!(errors
            .iter()
            .any(|e| e.starts_with("--logging-format \"xml\"")));
        assert!(errors.iter().any(|e| e.starts_with("--vmodule \"*.go=3\"")));
        assert!(errors.iter().any(|e| e.starts_with("--secure-port 0")));
    }

    #[test]
    fn a_typo_gets_clap_s_suggestion() {
        let errors = refused(&["--secure-prot=7443"]);
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert!(
            errors[0].contains("unexpected argument '--secure-prot'"),
            "{errors:?}"
        );
        assert!(errors[0].contains("--secure-port"), "{errors:?}");
    }

    #[test]
    fn klog_verbosity_is_read_in_every_spelling() {
        for spelling in [["-v=4"].as_slice(), &["-v", "4"], &["--v=4"], &["--v", "4"]] {
            match command_line(spelling).0 {
                CommandLine::Serve(o) => assert_eq!(o.v, 4, "{spelling:?}"),
                other => panic!("{spelling:?}: {other:?}"),
            }
        }
    }

    #[test]
    fn no_flag_is_both_served_and_listed_as_upstream_s_unsupported() {
        for arg in ServerRunOptions::command().get_arguments() {
            if let Some(long) = arg.get_long() {
                let screened = crate::upstream_flags::screen(["x".into(), format!("--{long}=1")]);
                assert!(screened.errors.is_empty(), "--{long} is served and refused");
            }
        }
    }
}
