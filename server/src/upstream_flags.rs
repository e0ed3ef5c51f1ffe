//! kube-apiserver flags this server does not implement, so a flag set written for
//! kube-apiserver is answered clearly: a known flag is "not supported by this server",
//! a deprecated one gets upstream's deprecation notice, and anything else is left to
//! clap (unknown, with its did-you-mean suggestion).

/// kube-apiserver flags (from its reference documentation) that this server does not
/// implement. Flags it does implement are [`crate::options::ServerRunOptions`]'s.
const NOT_SUPPORTED: &[&str] = &[
    "admission-control-config-file",
    "advertise-address",
    "aggregator-reject-forwarding-redirect",
    "allow-metric-labels",
    "allow-metric-labels-manifest",
    "allow-privileged",
    "apiserver-count",
    "audit-log-batch-buffer-size",
    "audit-log-batch-max-size",
    "audit-log-batch-max-wait",
    "audit-log-batch-throttle-burst",
    "audit-log-batch-throttle-enable",
    "audit-log-batch-throttle-qps",
    "audit-log-compress",
    "audit-log-truncate-enabled",
    "audit-log-truncate-max-batch-size",
    "audit-log-truncate-max-event-size",
    "audit-log-version",
    "audit-webhook-truncate-enabled",
    "audit-webhook-truncate-max-batch-size",
    "audit-webhook-truncate-max-event-size",
    "authentication-config",
    "authentication-token-webhook-config-file",
    "authentication-token-webhook-version",
    "authorization-config",
    "authorization-policy-file",
    "authorization-webhook-config-file",
    "authorization-webhook-version",
    "cloud-config",
    "cloud-provider",
    "cors-allowed-origins",
    "debug-socket-path",
    "default-not-ready-toleration-seconds",
    "default-unreachable-toleration-seconds",
    "default-watch-cache-size",
    "delete-collection-workers",
    "disable-http2-serving",
    "egress-selector-config-file",
    "emulated-version",
    "enable-bootstrap-token-auth",
    "enable-garbage-collector",
    "encryption-provider-config-automatic-reload",
    "endpoint-reconciler-type",
    "etcd-count-metric-poll-period",
    "etcd-db-metric-poll-interval",
    "etcd-healthcheck-timeout",
    "etcd-readycheck-timeout",
    "etcd-servers-overrides",
    "external-hostname",
    "goaway-chance",
    "http2-max-streams-per-connection",
    "kubelet-certificate-authority",
    "kubelet-client-certificate",
    "kubelet-client-key",
    "kubelet-port",
    "kubelet-preferred-address-types",
    "kubelet-read-only-port",
    "kubelet-timeout",
    "kubernetes-service-node-port",
    "lease-reuse-duration-seconds",
    "livez-grace-period",
    "log-flush-frequency",
    "log-json-info-buffer-size",
    "log-json-split-stream",
    "log-text-info-buffer-size",
    "log-text-split-stream",
    "max-connection-bytes-per-sec",
    "min-request-timeout",
    "oidc-ca-file",
    "oidc-client-id",
    "oidc-groups-claim",
    "oidc-groups-prefix",
    "oidc-issuer-url",
    "oidc-required-claim",
    "oidc-signing-algs",
    "oidc-username-claim",
    "oidc-username-prefix",
    "peer-advertise-ip",
    "peer-advertise-port",
    "peer-ca-file",
    "permit-address-sharing",
    "permit-port-sharing",
    "runtime-config",
    "service-account-extend-token-expiration",
    "service-account-jwks-uri",
    "service-account-lookup",
    "storage-backend",
    "storage-initialization-timeout",
    "storage-media-type",
    "strict-transport-security-directives",
    "tls-sni-cert-key",
    "tracing-config-file",
    "watch-cache-sizes",
];

/// kube-apiserver flags upstream marks deprecated, with its deprecation message and
/// whether this server may ignore them (they change nothing a client sees here).
const DEPRECATED: &[(&str, &str, bool)] = &[
    (
        "admission-control",
        "Use --enable-admission-plugins or --disable-admission-plugins instead. Will be removed in a future version.",
        false,
    ),
    (
        "enable-logs-handler",
        "This flag will be removed in v1.19",
        true,
    ),
];

/// What the upstream-flag check found in a command line.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Screened {
    /// The arguments left for clap, in order.
    pub args: Vec<String>,
    /// Deprecation notices, in upstream's words (printed, not fatal).
    pub warnings: Vec<String>,
    /// Upstream flags this server refuses.
    pub errors: Vec<String>,
}

/// Takes the upstream flags this server does not implement out of `args` (the program
/// name first): each is an error or, when deprecated and harmless, a warning. A flag's
/// value goes with it, whether written `--flag=value` or `--flag value`.
pub fn screen(args: impl IntoIterator<Item = String>) -> Screened {
    let mut out = Screened::default();
    let mut args = args.into_iter().peekable();
    while let Some(arg) = args.next() {
        let Some(name) = arg.strip_prefix("--").filter(|n| !n.is_empty()) else {
            out.args.push(arg);
            continue;
        };
        let (name, inline_value) = match name.split_once('=') {
            Some((n, _)) => (n, true),
            None => (name, false),
        };
        let deprecated = DEPRECATED.iter().find(|(n, _, _)| *n == name);
        if deprecated.is_none() && !NOT_SUPPORTED.contains(&name) {
            out.args.push(arg);
            continue;
        }
        if !inline_value && args.peek().is_some_and(|next| !next.starts_with('-')) {
            args.next();
        }
        if let Some((_, why, ignored)) = deprecated {
            out.warnings
                .push(format!("Flag --{name} has been deprecated, {why}"));
            if *ignored {
                continue;
            }
        }
        out.errors
            .push(format!("flag --{name} is not supported by this server"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn unsupported_upstream_flags_are_taken_out_with_their_values() {
        let s = screen(args(&[
            "apiserver",
            "--goaway-chance=0.01",
            "--secure-port",
            "7443",
            "--oidc-issuer-url",
            "https://issuer",
            "--enable-logs-handler",
            "--admission-control=NamespaceLifecycle",
            "--v=2",
        ]));
        assert_eq!(
            s.args,
            args(&["apiserver", "--secure-port", "7443", "--v=2"])
        );
        assert_eq!(
            s.errors,
            [
                "flag --goaway-chance is not supported by this server",
                "flag --oidc-issuer-url is not supported by this server",
                "flag --admission-control is not supported by this server",
            ]
        );
        assert_eq!(
            s.warnings,
            [
                "Flag --enable-logs-handler has been deprecated, This flag will be removed in v1.19",
                "Flag --admission-control has been deprecated, Use --enable-admission-plugins or --disable-admission-plugins instead. Will be removed in a future version.",
            ]
        );
    }

    #[test]
    fn no_flag_this_server_implements_is_listed_as_unsupported() {
        use clap::CommandFactory;
        let command = crate::options::ServerRunOptions::command();
        let ours: Vec<&str> = command
            .get_arguments()
            .filter_map(|a| a.get_long())
            .collect();
        for name in NOT_SUPPORTED
            .iter()
            .chain(DEPRECATED.iter().map(|(n, _, _)| n))
        {
            assert!(!ours.contains(name), "--{name} is implemented");
        }
    }

    #[test]
    fn the_tables_do_not_list_a_flag_twice() {
        let mut names: Vec<&str> = NOT_SUPPORTED
            .iter()
            .copied()
            .chain(DEPRECATED.iter().map(|(n, _, _)| *n))
            .collect();
        let count = names.len();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), count);
    }
}
