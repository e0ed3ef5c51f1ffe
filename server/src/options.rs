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
}

impl ServerRunOptions {
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
