//! The HTTPS client of one APIService's server: TLS that trusts the APIService's
//! `caBundle` (or nothing, with `insecureSkipTLSVerify`), checks the certificate for the
//! Service's DNS name (`<name>.<namespace>.svc`, as upstream), and presents the
//! front-proxy client certificate; the Service resolved to an address per request, as
//! kube-apiserver resolves it; kept-alive connections.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use http_body_util::Full;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use serde_json::Value;

use super::ServiceReference;
use crate::api::options::ReadAt;
use crate::catalog::Catalog;
use crate::registry::Store;

/// A connection that takes one request at a time.
pub type Sender = hyper::client::conn::http1::SendRequest<Full<Bytes>>;

/// Idle connections kept per address.
const MAX_IDLE: usize = 32;

/// The front-proxy client certificate (`--proxy-client-cert-file`,
/// `--proxy-client-key-file`) the aggregator presents to backends.
pub struct ProxyClientCert {
    chain: Vec<CertificateDer<'static>>,
    key: PrivateKeyDer<'static>,
}

impl Clone for ProxyClientCert {
    fn clone(&self) -> Self {
        ProxyClientCert {
            chain: self.chain.clone(),
            key: self.key.clone_key(),
        }
    }
}

impl std::fmt::Debug for ProxyClientCert {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProxyClientCert").finish_non_exhaustive()
    }
}

impl ProxyClientCert {
    /// Reads the PEM certificate chain and key.
    pub fn load(cert: &std::path::Path, key: &std::path::Path) -> Result<Self, String> {
        let read = |p: &std::path::Path| {
            std::fs::read(p).map_err(|e| format!("reading {}: {e}", p.display()))
        };
        let chain: Vec<CertificateDer<'static>> =
            rustls_pemfile::certs(&mut read(cert)?.as_slice())
                .collect::<Result<_, _>>()
                .map_err(|e| format!("--proxy-client-cert-file: {e}"))?;
        if chain.is_empty() {
            return Err(format!(
                "--proxy-client-cert-file: {} holds no certificate",
                cert.display()
            ));
        }
        let key = rustls_pemfile::private_key(&mut read(key)?.as_slice())
            .map_err(|e| format!("--proxy-client-key-file: {e}"))?
            .ok_or_else(|| format!("--proxy-client-key-file: {} holds no key", key.display()))?;
        Ok(ProxyClientCert { chain, key })
    }
}

/// What of an APIService's spec decides how its server is reached.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BackendSpec {
    pub service: ServiceReference,
    /// `caBundle` as the object has it (base64 of PEM).
    pub ca_bundle: Option<String>,
    pub insecure_skip_tls_verify: bool,
}

/// One APIService's server.
pub struct Backend {
    spec: BackendSpec,
    /// Why TLS cannot be set up, when it cannot (a bad `caBundle`).
    tls: Result<Arc<rustls::ClientConfig>, String>,
    idle: Mutex<HashMap<(String, u16), Vec<Sender>>>,
}

impl std::fmt::Debug for Backend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Backend").field("spec", &self.spec).finish()
    }
}

/// Why a backend could not be reached.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReachError {
    /// The Service or its port or endpoints are missing: upstream's reasons
    /// `ServiceNotFound`, `ServicePortError`, `MissingEndpoints`.
    Resolve {
        reason: &'static str,
        message: String,
    },
    /// Connecting or TLS failed.
    Connect(String),
}

impl std::fmt::Display for ReachError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ReachError::Resolve { message, .. } => f.write_str(message),
            ReachError::Connect(e) => f.write_str(e),
        }
    }
}

impl Backend {
    /// The backend part of an APIService spec; `None` for a local APIService.
    pub fn spec_of(spec: &Value) -> Option<BackendSpec> {
        let service = spec["service"].as_object()?;
        Some(BackendSpec {
            service: ServiceReference {
                namespace: service
                    .get("namespace")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string(),
                name: service
                    .get("name")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string(),
                port: service
                    .get("port")
                    .and_then(Value::as_u64)
                    .and_then(|p| u16::try_from(p).ok())
                    .unwrap_or(443),
            },
            ca_bundle: spec["caBundle"]
                .as_str()
                .filter(|b| !b.is_empty())
                .map(str::to_string),
            insecure_skip_tls_verify: spec["insecureSkipTLSVerify"].as_bool().unwrap_or(false),
        })
    }

    /// A backend for `spec`; one whose TLS settings cannot be used answers every
    /// request with why.
    pub fn new(spec: BackendSpec, cert: Option<ProxyClientCert>) -> Backend {
        Backend {
            tls: client_tls(&spec, cert).map(Arc::new),
            spec,
            idle: Default::default(),
        }
    }

    /// The spec it was built from.
    pub fn spec(&self) -> &BackendSpec {
        &self.spec
    }

    /// The Service's DNS name, which the serving certificate must hold.
    pub fn server_name(&self) -> String {
        let s = &self.spec.service;
        format!("{}.{}.svc", s.name, s.namespace)
    }

    /// Where the APIService's Service is reached now ([`resolve_service`]).
    pub async fn location(
        &self,
        catalog: &Catalog,
        store: &Store,
        endpoints: bool,
    ) -> Result<(String, u16), ReachError> {
        resolve_service(catalog, store, endpoints, &self.spec.service).await
    }

    /// A kept-alive connection to `addr` that can take a request, or a new one.
    pub async fn connection(&self, addr: &(String, u16)) -> Result<Sender, ReachError> {
        if let Some(sender) = self.idle_connection(addr) {
            return Ok(sender);
        }
        self.connect_new(addr).await
    }

    fn idle_connection(&self, addr: &(String, u16)) -> Option<Sender> {
        let mut idle = self.idle.lock().unwrap_or_else(|e| e.into_inner());
        let senders = idle.get_mut(addr)?;
        while let Some(sender) = senders.pop() {
            if sender.is_ready() {
                return Some(sender);
            }
        }
        None
    }

    /// Keeps a connection whose exchange is over for the next request.
    pub fn release(&self, addr: (String, u16), sender: Sender) {
        if !sender.is_ready() {
            return;
        }
        let mut idle = self.idle.lock().unwrap_or_else(|e| e.into_inner());
        let senders = idle.entry(addr).or_default();
        if senders.len() < MAX_IDLE {
            senders.push(sender);
        }
    }

    /// A new connection to `addr`.
    pub async fn connect_new(&self, (host, port): &(String, u16)) -> Result<Sender, ReachError> {
        let tls = self.tls.clone().map_err(ReachError::Connect)?;
        let dial = |e: std::io::Error| ReachError::Connect(format!("dial tcp {host}:{port}: {e}"));
        let tcp = tokio::net::TcpStream::connect((host.as_str(), *port))
            .await
            .map_err(dial)?;
        let _ = tcp.set_nodelay(true);
        let name = ServerName::try_from(self.server_name())
            .map_err(|e| ReachError::Connect(e.to_string()))?;
        let stream = tokio_rustls::TlsConnector::from(tls)
            .connect(name, tcp)
            .await
            .map_err(|e| ReachError::Connect(format!("tls: {e}")))?;
        let (sender, connection) =
            hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream))
                .await
                .map_err(|e| ReachError::Connect(e.to_string()))?;
        // With upgrades: a connection that switched protocols (a proxied WebSocket)
        // is handed over rather than closed.
        tokio::spawn(connection.with_upgrades());
        Ok(sender)
    }
}

impl Backend {
    /// Sends on a kept-alive connection (again on a new one when the backend had closed
    /// it), else on a new one.
    pub async fn send(
        &self,
        addr: &(String, u16),
        request: hyper::Request<Full<Bytes>>,
    ) -> Result<(Sender, hyper::Response<hyper::body::Incoming>), String> {
        let mut sender = self.connection(addr).await.map_err(|e| e.to_string())?;
        let retry = request_clone(&request);
        match sender.send_request(request).await {
            Ok(response) => Ok((sender, response)),
            Err(e) if e.is_canceled() || e.is_closed() || e.is_incomplete_message() => {
                let mut sender = self.connect_new(addr).await.map_err(|e| e.to_string())?;
                let response = sender
                    .send_request(retry)
                    .await
                    .map_err(|e| e.to_string())?;
                Ok((sender, response))
            }
            Err(e) => Err(e.to_string()),
        }
    }

    /// GETs `path` as `system:kube-aggregator` in `system:masters` (the identity upstream's
    /// checks use, so a backend's authorization cannot hide it), with `If-None-Match`
    /// when an ETag is given, reading at most `limit` bytes of the answer.
    pub async fn get_as_aggregator(
        &self,
        addr: &(String, u16),
        path: &str,
        if_none_match: Option<&str>,
        limit: usize,
    ) -> Result<Fetched, String> {
        use http_body_util::{BodyExt, Limited};
        let mut request = hyper::Request::get(path)
            .header("host", format!("{}:{}", self.server_name(), addr.1))
            .header("accept", "application/json")
            .header("x-remote-user", "system:kube-aggregator")
            .header("x-remote-group", "system:masters");
        if let Some(etag) = if_none_match {
            request = request.header("if-none-match", etag);
        }
        let request = request
            .body(Full::new(Bytes::new()))
            .map_err(|e| e.to_string())?;
        let (sender, response) = self.send(addr, request).await?;
        let status = response.status().as_u16();
        let etag = response
            .headers()
            .get("etag")
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        let body = Limited::new(response.into_body(), limit)
            .collect()
            .await
            .map_err(|e| e.to_string())?
            .to_bytes();
        self.release(addr.clone(), sender);
        Ok(Fetched { status, etag, body })
    }
}

/// A backend's answer to [`Backend::get_as_aggregator`].
#[derive(Debug)]
pub struct Fetched {
    pub status: u16,
    /// Its `ETag`, when it gave one.
    pub etag: Option<String>,
    pub body: Bytes,
}

fn request_clone(r: &hyper::Request<Full<Bytes>>) -> hyper::Request<Full<Bytes>> {
    let mut out = hyper::Request::new(r.body().clone());
    *out.method_mut() = r.method().clone();
    *out.uri_mut() = r.uri().clone();
    *out.headers_mut() = r.headers().clone();
    out
}

/// Where the Service `s` is reached, as kube-apiserver resolves it for APIServices and
/// webhooks: an ExternalName Service at its name, another at its cluster IP and the
/// Service port equal to `s.port`, or (`endpoints`: `--enable-aggregator-routing`) at
/// one of its ready endpoints for that port.
pub async fn resolve_service(
    catalog: &Catalog,
    store: &Store,
    endpoints: bool,
    s: &ServiceReference,
) -> Result<(String, u16), ReachError> {
    let missing = || ReachError::Resolve {
        reason: "ServiceNotFound",
        message: format!("service/{} in {:?} is not present", s.name, s.namespace),
    };
    let services = catalog.get("", "v1", "services").ok_or_else(missing)?;
    let svc = store
        .get_at(&services, Some(&s.namespace), &s.name, ReadAt::Any)
        .await
        .map_err(|_| missing())?;
    let spec = &svc["spec"];
    if spec["type"] == "ExternalName" {
        let host = spec["externalName"].as_str().unwrap_or_default();
        return Ok((host.to_string(), s.port));
    }
    let port = spec["ports"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|p| p["port"].as_u64() == Some(u64::from(s.port)))
        .ok_or_else(|| ReachError::Resolve {
            reason: "ServicePortError",
            message: format!(
                "service/{} in {:?} is not listening on port {}",
                s.name, s.namespace, s.port
            ),
        })?;
    if endpoints {
        return endpoint_of(catalog, store, s, port["name"].as_str().unwrap_or("")).await;
    }
    match spec["clusterIP"].as_str() {
        Some(ip) if !ip.is_empty() && ip != "None" => Ok((ip.to_string(), s.port)),
        _ => Err(ReachError::Resolve {
            reason: "ServiceNotFound",
            message: format!("service/{} in {:?} has no cluster IP", s.name, s.namespace),
        }),
    }
}

/// One ready address of the Service's Endpoints, for the port named `port_name`.
async fn endpoint_of(
    catalog: &Catalog,
    store: &Store,
    s: &ServiceReference,
    port_name: &str,
) -> Result<(String, u16), ReachError> {
    let missing = || ReachError::Resolve {
        reason: "MissingEndpoints",
        message: format!(
            "endpoints for service/{} in {:?} have no addresses",
            s.name, s.namespace
        ),
    };
    let kind = catalog.get("", "v1", "endpoints").ok_or_else(missing)?;
    let endpoints = store
        .get_at(&kind, Some(&s.namespace), &s.name, ReadAt::Any)
        .await
        .map_err(|_| missing())?;
    for subset in endpoints["subsets"].as_array().into_iter().flatten() {
        let port = subset["ports"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|p| p["name"].as_str().unwrap_or("") == port_name)
            .and_then(|p| p["port"].as_u64())
            .and_then(|p| u16::try_from(p).ok());
        let ip = subset["addresses"][0]["ip"].as_str();
        if let (Some(ip), Some(port)) = (ip, port) {
            return Ok((ip.to_string(), port));
        }
    }
    Err(missing())
}

/// The TLS client configuration of a backend.
fn client_tls(
    spec: &BackendSpec,
    cert: Option<ProxyClientCert>,
) -> Result<rustls::ClientConfig, String> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?;
    let builder = if spec.insecure_skip_tls_verify {
        builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(SkipVerify(provider)))
    } else {
        builder.with_root_certificates(roots(spec.ca_bundle.as_deref())?)
    };
    match cert {
        Some(c) => builder
            .with_client_auth_cert(c.chain, c.key)
            .map_err(|e| format!("the proxy client certificate: {e}")),
        None => Ok(builder.with_no_client_auth()),
    }
}

/// The roots a backend's certificate must chain to: the `caBundle`, or the system's
/// when there is none (as upstream).
fn roots(ca_bundle: Option<&str>) -> Result<rustls::RootCertStore, String> {
    let mut roots = rustls::RootCertStore::empty();
    match ca_bundle {
        Some(bundle) => {
            roots = crate::webhook::ca_bundle_roots(bundle, "spec.caBundle")?;
            if roots.is_empty() {
                return Err("spec.caBundle holds no certificate".into());
            }
        }
        None => {
            for cert in rustls_native_certs::load_native_certs().certs {
                let _ = roots.add(cert);
            }
        }
    }
    Ok(roots)
}

/// `insecureSkipTLSVerify`: any certificate is accepted (signatures are still checked,
/// so the handshake itself is sound).
#[derive(Debug)]
struct SkipVerify(Arc<rustls::crypto::CryptoProvider>);

impl rustls::client::danger::ServerCertVerifier for SkipVerify {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp: &[u8],
        _now: rustls::pki_types::UnixTime,
    ) -> Result<rustls::client::danger::ServerCertVerified, rustls::Error> {
        Ok(rustls::client::danger::ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}
