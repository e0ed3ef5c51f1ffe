//! Command-line flags, named as kube-apiserver's, parsed with clap and validated with
//! every problem reported at once.

use std::net::IpAddr;
use std::path::PathBuf;

use clap::Parser;

/// Flags of the `apiserver` binary.
#[derive(Debug, Clone, Parser)]
#[command(
    name = "apiserver",
    version,
    about = "A Kubernetes-compatible API server whose resources are generated from definitions."
)]
pub struct ServerRunOptions {
    /// The port on which to serve HTTPS.
    #[arg(long = "secure-port", default_value_t = 6443)]
    pub secure_port: u16,

    /// A CIDR notation IP range from which to assign service cluster IPs (IPv4 only
    /// here; upstream also takes an IPv6 or a dual-stack pair).
    #[arg(long = "service-cluster-ip-range", default_value = crate::registry::services::DEFAULT_CLUSTER_IP_RANGE)]
    pub service_cluster_ip_range: String,

    /// A port range to reserve for services with NodePort visibility (`30000-32767`,
    /// inclusive at both ends).
    #[arg(long = "service-node-port-range", default_value = crate::registry::services::DEFAULT_NODE_PORT_RANGE)]
    pub service_node_port_range: String,

    /// The IP address on which to listen for the --secure-port port.
    #[arg(long = "bind-address", default_value = "127.0.0.1")]
    pub bind_address: IpAddr,

    /// File containing the default x509 certificate for HTTPS (CA cert, if any,
    /// concatenated after the server cert).
    #[arg(long = "tls-cert-file")]
    pub tls_cert_file: Option<PathBuf>,

    /// File containing the default x509 private key matching --tls-cert-file.
    #[arg(long = "tls-private-key-file")]
    pub tls_private_key_file: Option<PathBuf>,

    /// The directory where the self-signed TLS certificate is written when
    /// --tls-cert-file and --tls-private-key-file are not given. Defaults to
    /// <data-dir>/certs.
    #[arg(long = "cert-dir")]
    pub cert_dir: Option<PathBuf>,

    /// The directory of the embedded store; the admin kubeconfig is written beside it.
    #[arg(long = "data-dir", default_value = ".apiserver-data")]
    pub data_dir: PathBuf,

    /// Where to write the admin kubeconfig. Defaults to <data-dir>/admin.kubeconfig.
    #[arg(long = "kubeconfig-out")]
    pub kubeconfig_out: Option<PathBuf>,

    /// The number of HTTP worker threads (0 = one per core).
    #[arg(long = "workers", default_value_t = 0)]
    pub workers: usize,

    /// List of etcd servers to connect with (scheme://ip:port), comma separated. When
    /// given, etcd is used instead of the embedded store (needs a binary built with the
    /// `etcd` feature).
    #[arg(long = "etcd-servers", value_delimiter = ',')]
    pub etcd_servers: Vec<String>,

    /// The prefix to prepend to all resource paths in etcd (replaces `/registry`).
    #[arg(long = "etcd-prefix", default_value = "/registry")]
    pub etcd_prefix: String,

    /// SSL Certificate Authority file used to secure etcd communication.
    #[arg(long = "etcd-cafile")]
    pub etcd_cafile: Option<PathBuf>,

    /// SSL certification file used to secure etcd communication.
    #[arg(long = "etcd-certfile")]
    pub etcd_certfile: Option<PathBuf>,

    /// SSL key file used to secure etcd communication.
    #[arg(long = "etcd-keyfile")]
    pub etcd_keyfile: Option<PathBuf>,

    /// The interval of compaction requests (Go duration, e.g. 5m0s; 0 disables). Applies
    /// to etcd and to the embedded store's watch history.
    #[arg(
        long = "etcd-compaction-interval",
        default_value = "5m0s",
        value_parser = crate::storage::parse_duration
    )]
    pub etcd_compaction_interval: std::time::Duration,

    /// The file of an `apiserver.config.k8s.io/v1` EncryptionConfiguration: which
    /// resources are encrypted at rest, and with which providers and keys (identity,
    /// aescbc, aesgcm, secretbox).
    #[arg(long = "encryption-provider-config", value_name = "FILE")]
    pub encryption_provider_config: Option<PathBuf>,

    /// Enable watch caching: one in-memory cache per resource serves watches, and LISTs
    /// and GETs (resourceVersion 0, and consistent reads once caught up), without
    /// reading storage.
    #[arg(
        long = "watch-cache",
        default_value_t = true,
        num_args = 0..=1,
        default_missing_value = "true",
        action = clap::ArgAction::Set
    )]
    pub watch_cache: bool,

    /// A directory of YAML resource definitions (the `api-defs/` format) to serve without
    /// codegen or a restart: files added, changed or removed there are registered,
    /// re-registered or unregistered within a second. Not a kube-apiserver flag; for
    /// trying a definition out (kinds that need typed Rust go through codegen).
    #[arg(long = "definitions-dir", value_name = "DIR")]
    pub definitions_dir: Option<PathBuf>,

    /// A PEM bundle of the CAs whose client certificates authenticate: the common name
    /// is the user name, each organization a group.
    #[arg(long = "client-ca-file", value_name = "FILE")]
    pub client_ca_file: Option<PathBuf>,

    /// A CSV file of bearer tokens: `token,user,uid,"group1,group2"` per line.
    #[arg(long = "token-auth-file", value_name = "FILE")]
    pub token_auth_file: Option<PathBuf>,

    /// Requests without credentials are served as `system:anonymous` (group
    /// `system:unauthenticated`), allowed what the authorizers grant them; with false
    /// they are 401.
    #[arg(
        long = "anonymous-auth",
        default_value_t = true,
        num_args = 0..=1,
        default_missing_value = "true",
        action = clap::ArgAction::Set
    )]
    pub anonymous_auth: bool,

    /// PEM keys (public, or PKCS#8 private) that verify service account tokens;
    /// repeatable. Default: the key of `--service-account-signing-key-file`.
    #[arg(long = "service-account-key-file", value_name = "FILE")]
    pub service_account_key_file: Vec<PathBuf>,

    /// The PKCS#8 private key (RSA or ECDSA) that signs service account tokens.
    /// Default: a P-256 key the server generates once in `--data-dir`.
    #[arg(long = "service-account-signing-key-file", value_name = "FILE")]
    pub service_account_signing_key_file: Option<PathBuf>,

    /// The `iss` of the service account tokens issued (the first) and accepted (all);
    /// repeatable.
    #[arg(
        long = "service-account-issuer",
        value_name = "URL",
        default_value = "https://kubernetes.default.svc.cluster.local"
    )]
    pub service_account_issuer: Vec<String>,

    /// The audiences a token must be for, comma-separated. Default: the issuers.
    #[arg(long = "api-audiences", value_delimiter = ',')]
    pub api_audiences: Vec<String>,

    /// The longest lifetime a TokenRequest may ask for (e.g. 24h); unset: no limit.
    #[arg(long = "service-account-max-token-expiration", value_parser = crate::filters::limits::parse_duration)]
    pub service_account_max_token_expiration: Option<std::time::Duration>,

    /// Authorizers asked in order, comma-separated: AlwaysAllow, AlwaysDeny, RBAC.
    /// Default: RBAC; with --authorization-kubeconfig none (the parent decides), and
    /// modes given as well are asked before the parent.
    #[arg(
        long = "authorization-mode",
        value_delimiter = ',',
        value_name = "MODES"
    )]
    pub authorization_mode: Vec<String>,

    /// A PEM bundle of the CAs that sign front proxies' client certificates: a request
    /// with such a certificate is the user its --requestheader-username-headers name.
    #[arg(long = "requestheader-client-ca-file", value_name = "FILE")]
    pub requestheader_client_ca_file: Option<PathBuf>,

    /// Common names a front proxy's certificate may have (comma-separated); empty: any
    /// certificate the requestheader CA signed.
    #[arg(long = "requestheader-allowed-names", value_delimiter = ',')]
    pub requestheader_allowed_names: Vec<String>,

    /// Request headers naming the user, the first with a value counts. Default:
    /// X-Remote-User.
    #[arg(long = "requestheader-username-headers", value_delimiter = ',')]
    pub requestheader_username_headers: Vec<String>,

    /// Request headers carrying the user's groups. Default: X-Remote-Group.
    #[arg(long = "requestheader-group-headers", value_delimiter = ',')]
    pub requestheader_group_headers: Vec<String>,

    /// Prefixes of request headers carrying the user's extras. Default: X-Remote-Extra-.
    #[arg(long = "requestheader-extra-headers-prefix", value_delimiter = ',')]
    pub requestheader_extra_headers_prefix: Vec<String>,

    /// Request headers carrying the user's uid (X-Remote-Uid is suggested). Default: none.
    #[arg(long = "requestheader-uid-headers", value_delimiter = ',')]
    pub requestheader_uid_headers: Vec<String>,

    /// A kubeconfig naming the parent API server this one is aggregated into: bearer
    /// tokens it does not know are checked with TokenReviews there, and client and
    /// front-proxy CAs not given by flags are read from the parent's
    /// kube-system/extension-apiserver-authentication ConfigMap.
    #[arg(long = "authentication-kubeconfig", value_name = "FILE")]
    pub authentication_kubeconfig: Option<PathBuf>,

    /// How long the parent's TokenReview answers are cached.
    #[arg(long = "authentication-token-webhook-cache-ttl", default_value = "10s", value_parser = crate::filters::limits::parse_duration)]
    pub authentication_token_webhook_cache_ttl: std::time::Duration,

    /// Do not read the parent's extension-apiserver-authentication ConfigMap.
    #[arg(
        long = "authentication-skip-lookup",
        default_value_t = false,
        num_args = 0..=1,
        default_missing_value = "true",
        action = clap::ArgAction::Set
    )]
    pub authentication_skip_lookup: bool,

    /// Start even when the parent's extension-apiserver-authentication ConfigMap cannot
    /// be read (without the CAs it would give).
    #[arg(
        long = "authentication-tolerate-lookup-failure",
        default_value_t = false,
        num_args = 0..=1,
        default_missing_value = "true",
        action = clap::ArgAction::Set
    )]
    pub authentication_tolerate_lookup_failure: bool,

    /// A kubeconfig naming the parent API server that authorizes this one's requests
    /// with SubjectAccessReviews.
    #[arg(long = "authorization-kubeconfig", value_name = "FILE")]
    pub authorization_kubeconfig: Option<PathBuf>,

    /// How long the parent's "allowed" answers are cached.
    #[arg(long = "authorization-webhook-cache-authorized-ttl", default_value = "10s", value_parser = crate::filters::limits::parse_duration)]
    pub authorization_webhook_cache_authorized_ttl: std::time::Duration,

    /// How long the parent's "not allowed" answers are cached.
    #[arg(long = "authorization-webhook-cache-unauthorized-ttl", default_value = "10s", value_parser = crate::filters::limits::parse_duration)]
    pub authorization_webhook_cache_unauthorized_ttl: std::time::Duration,

    /// Paths anyone may request without asking the parent (with
    /// --authorization-kubeconfig); a trailing * matches by prefix.
    #[arg(
        long = "authorization-always-allow-paths",
        value_delimiter = ',',
        default_value = "/healthz,/readyz,/livez"
    )]
    pub authorization_always_allow_paths: Vec<String>,

    /// Admission plugins to turn on besides the default ones, by upstream's names
    /// (comma-separated); the chain runs them in upstream's order, not this one's.
    #[arg(
        long = "enable-admission-plugins",
        value_delimiter = ',',
        value_name = "PLUGINS"
    )]
    pub enable_admission_plugins: Vec<String>,

    /// Admission plugins to turn off, default ones included (comma-separated).
    #[arg(
        long = "disable-admission-plugins",
        value_delimiter = ',',
        value_name = "PLUGINS"
    )]
    pub disable_admission_plugins: Vec<String>,

    /// The most read-only requests served at once (watches not counted); more get 429
    /// with Retry-After. 0: no limit.
    #[arg(long = "max-requests-inflight", default_value_t = 400)]
    pub max_requests_inflight: usize,

    /// The most mutating requests (create, update, patch, delete) served at once; more
    /// get 429 with Retry-After. 0: no limit.
    #[arg(long = "max-mutating-requests-inflight", default_value_t = 200)]
    pub max_mutating_requests_inflight: usize,

    /// The oldest TLS version served: VersionTLS12 (default) or VersionTLS13.
    #[arg(long = "tls-min-version", value_name = "VERSION")]
    pub tls_min_version: Option<String>,

    /// Comma-separated TLS 1.2 cipher suites to allow, by IANA name (e.g.
    /// TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256); TLS 1.3 suites are always allowed. Empty:
    /// all suites rustls offers.
    #[arg(
        long = "tls-cipher-suites",
        value_delimiter = ',',
        value_name = "SUITES"
    )]
    pub tls_cipher_suites: Vec<String>,

    /// The longest a request may take (watches excepted) before it is answered 504, as a
    /// duration such as 1m0s or 30s.
    #[arg(long = "request-timeout", default_value = "1m0s", value_parser = crate::filters::limits::parse_duration)]
    pub request_timeout: std::time::Duration,

    /// The built-in controllers to run, as kube-controller-manager's flag: `*` for all,
    /// a name to add one, `-name` to leave one out (e.g. `*,-garbage-collector-controller`).
    #[arg(
        long = "controllers",
        value_delimiter = ',',
        default_value = "*",
        value_name = "NAMES"
    )]
    pub controllers: Vec<String>,

    /// The audit policy (audit.k8s.io/v1 Policy, YAML): which requests are audited and
    /// how much of each. Without it nothing is audited.
    #[arg(long = "audit-policy-file", value_name = "FILE")]
    pub audit_policy_file: Option<PathBuf>,

    /// Where audit events are written, one JSON line each; `-` is standard output.
    /// Without it nothing is audited.
    #[arg(long = "audit-log-path", value_name = "PATH")]
    pub audit_log_path: Option<PathBuf>,

    /// Days to keep rotated audit log files (0: no limit).
    #[arg(
        long = "audit-log-maxage",
        default_value_t = 0,
        allow_negative_numbers = true
    )]
    pub audit_log_maxage: i64,

    /// Rotated audit log files to keep (0: all).
    #[arg(
        long = "audit-log-maxbackup",
        default_value_t = 0,
        allow_negative_numbers = true
    )]
    pub audit_log_maxbackup: i64,

    /// Megabytes the audit log may reach before it is rotated (0: 100).
    #[arg(
        long = "audit-log-maxsize",
        default_value_t = 0,
        allow_negative_numbers = true
    )]
    pub audit_log_maxsize: i64,

    /// The format of audit log lines: json (`legacy` is not supported).
    #[arg(long = "audit-log-format", default_value = "json")]
    pub audit_log_format: String,

    /// How audit events are written: blocking (each request waits for its events to be
    /// written; failures are logged), blocking-strict (as blocking, and a request whose
    /// first event cannot be written fails) or batch (queued for a writer thread;
    /// dropped when the queue is full).
    #[arg(long = "audit-log-mode", default_value = "blocking")]
    pub audit_log_mode: String,

    /// Client certificate (PEM) the aggregator presents to the servers of APIServices,
    /// which read the user from its front-proxy headers.
    #[arg(long = "proxy-client-cert-file", value_name = "FILE")]
    pub proxy_client_cert_file: Option<PathBuf>,

    /// Private key (PEM) of --proxy-client-cert-file.
    #[arg(long = "proxy-client-key-file", value_name = "FILE")]
    pub proxy_client_key_file: Option<PathBuf>,

    /// Proxy to an APIService's Service through one of its endpoints rather than its
    /// cluster IP.
    #[arg(long = "enable-aggregator-routing", default_value_t = false)]
    pub enable_aggregator_routing: bool,
}

/// Auditing as the flags ask for it (see [`ServerRunOptions::audit_config`]).
pub struct AuditConfig {
    pub policy: crate::audit::policy::Policy,
    pub destination: crate::audit::log::Destination,
    pub mode: crate::audit::log::Mode,
}

impl ServerRunOptions {
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

    /// The admission plugins the flags select, in the order they run.
    pub fn admission_plugins(&self) -> Result<Vec<&'static str>, Vec<String>> {
        crate::admission::plugins::select(
            &self.enable_admission_plugins,
            &self.disable_admission_plugins,
        )
    }

    /// Auditing, when both a policy and a log path are given (`None` otherwise, as
    /// upstream: no backend or no policy means no audit); every problem with the audit
    /// flags or the policy file otherwise.
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
        let mode = Mode::parse(&self.audit_log_mode).unwrap_or_else(|| {
            errors.push(format!(
                "--audit-log-mode {:?}: unknown mode; supported: {}",
                self.audit_log_mode,
                Mode::NAMES.join(", ")
            ));
            Mode::Blocking
        });
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
        Ok(match (policy, destination) {
            (Some(policy), Some(destination)) => Some(AuditConfig {
                policy,
                destination,
                mode,
            }),
            _ => None,
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
        if let Err(e) = self.tls_policy().check() {
            errors.push(e);
        }
        if let Err(e) = self.proxy_client_cert() {
            errors.push(e);
        }
        if self.request_timeout.is_zero() {
            errors.push("--request-timeout must be greater than 0, e.g. 1m0s".into());
        }
        self.validate_etcd(&mut errors);
        self.validate_auth(&mut errors);
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

    /// Where objects are kept: etcd when `--etcd-servers` is given, else the embedded store.
    pub fn storage_config(&self) -> crate::storage::StorageConfig {
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
            }),
            compaction_interval: self.etcd_compaction_interval,
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
