//! Serving certificates: the ones given by flags, or a self-signed CA plus a serving
//! certificate for localhost/127.0.0.1/the bind address, made at first start and reused.

use std::fs;
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};
use std::time::Duration;

use rustls::crypto::CryptoProvider;
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;

use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose,
};

/// PEM files the server serves with, and the CA clients should trust.
pub struct ServingCert {
    pub cert_file: PathBuf,
    pub key_file: PathBuf,
    /// PEM of the CA that signed the serving cert (the cert itself when given by flags).
    pub ca_pem: String,
}

/// Uses the given files, or makes (once) a self-signed CA and serving cert in `cert_dir`.
pub fn serving_cert(
    cert: Option<&Path>,
    key: Option<&Path>,
    cert_dir: &Path,
    bind: IpAddr,
) -> Result<ServingCert, String> {
    if let (Some(c), Some(k)) = (cert, key) {
        let ca_pem = fs::read_to_string(c).map_err(|e| format!("reading {}: {e}", c.display()))?;
        return Ok(ServingCert {
            cert_file: c.to_path_buf(),
            key_file: k.to_path_buf(),
            ca_pem,
        });
    }
    let cert_file = cert_dir.join("apiserver.crt");
    let key_file = cert_dir.join("apiserver.key");
    let ca_file = cert_dir.join("ca.crt");
    if !(cert_file.is_file() && key_file.is_file() && ca_file.is_file()) {
        generate(cert_dir, &cert_file, &key_file, &ca_file, bind)?;
    }
    let ca_pem =
        fs::read_to_string(&ca_file).map_err(|e| format!("reading {}: {e}", ca_file.display()))?;
    Ok(ServingCert {
        cert_file,
        key_file,
        ca_pem,
    })
}

fn generate(
    dir: &Path,
    cert_file: &Path,
    key_file: &Path,
    ca_file: &Path,
    bind: IpAddr,
) -> Result<(), String> {
    let err = |e: rcgen::Error| format!("generating the self-signed certificate: {e}");
    fs::create_dir_all(dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;

    let ca_key = KeyPair::generate().map_err(err)?;
    let mut ca = CertificateParams::new(Vec::<String>::new()).map_err(err)?;
    ca.distinguished_name.push(
        DnType::CommonName,
        format!("apiserver-ca@{}", chrono::Utc::now().timestamp()),
    );
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    let ca_cert = ca.self_signed(&ca_key).map_err(err)?;

    let mut names = vec![
        "localhost".to_string(),
        "127.0.0.1".to_string(),
        "::1".to_string(),
    ];
    if !bind.is_unspecified() && !names.contains(&bind.to_string()) {
        names.push(bind.to_string());
    }
    let key = KeyPair::generate().map_err(err)?;
    let mut params = CertificateParams::new(names).map_err(err)?;
    params
        .distinguished_name
        .push(DnType::CommonName, "apiserver");
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    params.key_usages = vec![
        KeyUsagePurpose::DigitalSignature,
        KeyUsagePurpose::KeyEncipherment,
    ];
    let issuer = Issuer::new(ca, ca_key);
    let cert = params.signed_by(&key, &issuer).map_err(err)?;

    let write =
        |p: &Path, s: String| fs::write(p, s).map_err(|e| format!("writing {}: {e}", p.display()));
    write(ca_file, ca_cert.pem())?;
    write(cert_file, cert.pem() + &ca_cert.pem())?;
    write_private(key_file, &key.serialize_pem())
}

/// Writes a private key readable by its owner only.
pub fn write_private(path: &Path, pem: &str) -> Result<(), String> {
    fs::write(path, pem).map_err(|e| format!("writing {}: {e}", path.display()))?;
    restrict(path);
    Ok(())
}

#[cfg(unix)]
fn restrict(p: &Path) {
    use std::os::unix::fs::PermissionsExt;
    let _ = fs::set_permissions(p, fs::Permissions::from_mode(0o600));
}

#[cfg(not(unix))]
fn restrict(_: &Path) {}

/// What `--tls-min-version` and `--tls-cipher-suites` allow.
#[derive(Clone, Debug, Default)]
pub struct TlsPolicy {
    /// `VersionTLS12` (the default) or `VersionTLS13`.
    pub min_version: Option<String>,
    /// TLS 1.2 suites by their IANA names (as kube-apiserver's flag takes them); TLS 1.3
    /// suites are always offered, as Go's TLS stack does. Empty: every suite.
    pub cipher_suites: Vec<String>,
}

impl TlsPolicy {
    /// What is wrong with the flags, if anything (checked with the other flags).
    pub fn check(&self) -> Result<(), String> {
        self.apply(rustls::crypto::ring::default_provider())
            .map(|_| ())
    }

    /// The protocol versions and cipher suites allowed, or what is wrong with the flags.
    fn apply(
        &self,
        mut provider: rustls::crypto::CryptoProvider,
    ) -> Result<
        (
            rustls::crypto::CryptoProvider,
            Vec<&'static rustls::SupportedProtocolVersion>,
        ),
        String,
    > {
        let versions: Vec<&'static rustls::SupportedProtocolVersion> =
            match self.min_version.as_deref() {
                None | Some("VersionTLS12") => {
                    vec![&rustls::version::TLS13, &rustls::version::TLS12]
                }
                Some("VersionTLS13") => vec![&rustls::version::TLS13],
                Some(v @ ("VersionTLS10" | "VersionTLS11")) => {
                    return Err(format!(
                    "--tls-min-version {v} is not supported: this server speaks TLS 1.2 and 1.3"
                ))
                }
                Some(other) => {
                    return Err(format!(
                        "--tls-min-version {other:?}: use VersionTLS12 or VersionTLS13"
                    ))
                }
            };
        if !self.cipher_suites.is_empty() {
            let name = |s: &rustls::SupportedCipherSuite| s.suite().as_str().unwrap_or_default();
            let known: Vec<&str> = provider
                .cipher_suites
                .iter()
                .filter(|s| s.tls13().is_none())
                .map(name)
                .collect();
            // TLS 1.3 names, in Go's spelling, are accepted and change nothing.
            const TLS13: &[&str] = &[
                "TLS_AES_128_GCM_SHA256",
                "TLS_AES_256_GCM_SHA384",
                "TLS_CHACHA20_POLY1305_SHA256",
            ];
            for wanted in &self.cipher_suites {
                if !known.contains(&wanted.as_str()) && !TLS13.contains(&wanted.as_str()) {
                    return Err(format!(
                        "--tls-cipher-suites: unknown or unsupported suite {wanted:?}; supported: {}",
                        known.join(", ")
                    ));
                }
            }
            provider
                .cipher_suites
                .retain(|s| s.tls13().is_some() || self.cipher_suites.iter().any(|w| w == name(s)));
        }
        Ok((provider, versions))
    }
}

/// The server's rustls config; `client_verifier` asks clients for certificates
/// (`--client-ca-file`).
pub fn rustls_config(
    cert: &ServingCert,
    policy: &TlsPolicy,
    client_verifier: Option<Arc<dyn rustls::server::danger::ClientCertVerifier>>,
) -> Result<rustls::ServerConfig, String> {
    let (provider, versions) = policy.apply(rustls::crypto::ring::default_provider())?;
    let provider = Arc::new(provider);
    let resolver = ReloadingCert::start(cert, provider.clone())?;
    let builder = rustls::ServerConfig::builder_with_provider(provider)
        .with_protocol_versions(&versions)
        .map_err(|e| {
            format!("--tls-min-version and --tls-cipher-suites leave nothing to speak: {e}")
        })?;
    let builder = match client_verifier {
        Some(v) => builder.with_client_cert_verifier(v),
        None => builder.with_no_client_auth(),
    };
    Ok(builder.with_cert_resolver(resolver))
}

/// How often the certificate files are looked at for changes.
const RELOAD_CHECK: Duration = Duration::from_secs(1);

/// The serving certificate, read again when its files change: a rotated certificate is
/// served to new connections without a restart; one that does not load is logged and
/// the old one kept.
#[derive(Debug)]
struct ReloadingCert {
    current: RwLock<Arc<CertifiedKey>>,
}

impl ReloadingCert {
    /// Loads the files once (an error stops start-up) and watches them from a thread.
    fn start(cert: &ServingCert, provider: Arc<CryptoProvider>) -> Result<Arc<Self>, String> {
        let (cert_file, key_file) = (cert.cert_file.clone(), cert.key_file.clone());
        let first = load_certified_key(&cert_file, &key_file, &provider)?;
        let this = Arc::new(ReloadingCert {
            current: RwLock::new(Arc::new(first)),
        });
        let weak = Arc::downgrade(&this);
        let stamp = |p: &Path| fs::metadata(p).and_then(|m| m.modified()).ok();
        let mut seen = (stamp(&cert_file), stamp(&key_file));
        crate::panics::thread("serving-cert-reload", move || loop {
            std::thread::sleep(RELOAD_CHECK);
            let Some(this) = weak.upgrade() else { return };
            let now = (stamp(&cert_file), stamp(&key_file));
            if now == seen {
                continue;
            }
            match load_certified_key(&cert_file, &key_file, &provider) {
                Ok(key) => {
                    *this.current.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(key);
                    seen = now;
                    tracing::info!(cert = %cert_file.display(), "serving certificate reloaded");
                }
                // A half-written pair is tried again at the next check.
                Err(e) => tracing::warn!("serving certificate not reloaded: {e}"),
            }
        })
        .map_err(|e| format!("starting the certificate reloader: {e}"))?;
        Ok(this)
    }
}

impl ResolvesServerCert for ReloadingCert {
    fn resolve(&self, _hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        Some(
            self.current
                .read()
                .unwrap_or_else(|e| e.into_inner())
                .clone(),
        )
    }
}

/// The certificate chain and key in two PEM files, checked to belong together.
fn load_certified_key(
    cert_file: &Path,
    key_file: &Path,
    provider: &CryptoProvider,
) -> Result<CertifiedKey, String> {
    let certs = {
        let data =
            fs::read(cert_file).map_err(|e| format!("reading {}: {e}", cert_file.display()))?;
        rustls_pemfile::certs(&mut data.as_slice())
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| format!("parsing {}: {e}", cert_file.display()))?
    };
    if certs.is_empty() {
        return Err(format!("{}: no certificate found", cert_file.display()));
    }
    let key = {
        let data =
            fs::read(key_file).map_err(|e| format!("reading {}: {e}", key_file.display()))?;
        rustls_pemfile::private_key(&mut data.as_slice())
            .map_err(|e| format!("parsing {}: {e}", key_file.display()))?
            .ok_or_else(|| format!("{}: no private key found", key_file.display()))?
    };
    CertifiedKey::from_der(certs, key, provider)
        .map_err(|e| format!("TLS certificate and key do not match: {e}"))
}
