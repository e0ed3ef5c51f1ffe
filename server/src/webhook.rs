//! The HTTPS client side of webhooks (conversion and admission): a `clientConfig`
//! (`url` or `service`, and `caBundle`) turned into an endpoint that takes one JSON
//! review and answers the JSON the webhook sent back, within a deadline. A Service is
//! resolved on each new connection, as APIServices' are. Delegated authentication and
//! authorization reach their parent API server through the same client
//! ([`Endpoint::new`], [`Endpoint::call`]).

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use serde_json::Value;

use crate::aggregator::ServiceReference;

/// The largest answer read from a webhook.
const MAX_RESPONSE_BYTES: usize = 64 * 1024 * 1024;
/// Idle connections kept per endpoint (as Go's default transport keeps per host).
const MAX_IDLE_CONNECTIONS: usize = 100;

type Sender = hyper::client::conn::http1::SendRequest<Full<Bytes>>;

/// Finds where a Service is reached (the aggregator's resolution: ExternalName, cluster
/// IP, or an endpoint with `--enable-aggregator-routing`).
#[async_trait::async_trait]
pub trait ResolveService: Send + Sync {
    /// The host and port `service` is reached at now.
    async fn resolve(&self, service: &ServiceReference) -> Result<(String, u16), String>;
}

/// The resolver of the running server. Process-wide: webhook client configurations are
/// read where no server state is at hand (a CRD's conversion, checked by its strategy).
static SERVICE_RESOLVER: OnceLock<Arc<dyn ResolveService>> = OnceLock::new();

/// Sets the resolver service references go through (once, at start-up).
pub fn set_service_resolver(resolver: Arc<dyn ResolveService>) {
    let _ = SERVICE_RESOLVER.set(resolver);
}

/// Where a webhook listens, and the TLS configuration that trusts its `caBundle`.
pub struct Endpoint {
    url: String,
    /// The name the certificate must hold (and the `Host` header): the URL's host, or
    /// `<name>.<namespace>.svc` for a Service.
    host: String,
    port: u16,
    /// A Service to resolve on each new connection (instead of `host:port`).
    service: Option<ServiceReference>,
    path: String,
    tls: Arc<rustls::ClientConfig>,
    /// The `Authorization` header sent with every request (a bearer token), if any.
    authorization: Option<String>,
    /// Kept-alive connections, so a call is not a TLS handshake each time.
    idle: std::sync::Mutex<Vec<Sender>>,
}

impl std::fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Endpoint").field("url", &self.url).finish()
    }
}

impl Endpoint {
    /// The endpoint a webhook's `clientConfig` names; why it cannot be used otherwise.
    pub fn from_client_config(config: &Value) -> Result<Endpoint, String> {
        let service = service_reference(&config["service"]);
        let url = match (config["url"].as_str(), &service) {
            (Some(url), _) => url.to_string(),
            // Named as upstream names a Service's webhook in its messages.
            (None, Some((s, path))) => {
                format!("https://{}.{}.svc:{}{path}", s.name, s.namespace, s.port)
            }
            (None, None) => return Err("clientConfig has neither url nor service".into()),
        };
        // The URL's own mistakes first, before the caBundle's.
        if !url.starts_with("https://") {
            return Err(format!("{url:?} is not an https URL"));
        }
        let roots = match config["caBundle"].as_str() {
            Some(bundle) => ca_bundle_roots(bundle, "caBundle")?,
            None => rustls::RootCertStore::empty(),
        };
        if roots.is_empty() {
            return Err("clientConfig.caBundle holds no certificate to trust".into());
        }
        let tls = rustls::ClientConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_root_certificates(roots)
        .with_no_client_auth();
        let mut endpoint = Endpoint::new(&url, Arc::new(tls))?;
        if config["url"].is_null() {
            endpoint.service = service.map(|(s, _)| s);
        }
        Ok(endpoint)
    }

    /// The endpoint at an `https://` `url`, reached with `tls` (which says whom to trust
    /// and which client certificate to present).
    pub fn new(url: &str, tls: Arc<rustls::ClientConfig>) -> Result<Endpoint, String> {
        let rest = url
            .strip_prefix("https://")
            .ok_or_else(|| format!("{url:?} is not an https URL"))?;
        let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
        let (host, port) = match authority.rsplit_once(':') {
            Some((h, p)) if !h.is_empty() && !authority.ends_with(']') => {
                (h, p.parse().map_err(|_| format!("bad port in {url:?}"))?)
            }
            _ => (authority, 443),
        };
        let host = host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_string();
        if host.is_empty() {
            return Err(format!("{url:?} names no host"));
        }
        Ok(Endpoint {
            path: if path.is_empty() {
                "/".into()
            } else {
                path.to_string()
            },
            url: url.to_string(),
            host,
            port,
            service: None,
            tls,
            authorization: None,
            idle: Default::default(),
        })
    }

    /// The same endpoint, sending `token` as `Authorization: Bearer` on every request.
    pub fn with_bearer_token(mut self, token: &str) -> Endpoint {
        self.authorization = Some(format!("Bearer {token}"));
        self
    }

    /// One request for `path` (below the URL's own path) within `timeout`: the status
    /// and body of whatever was answered; errors as Go's client words them
    /// (`Get "<url>": ...`).
    pub async fn call(
        &self,
        method: hyper::Method,
        path: &str,
        body: Option<String>,
        timeout: Duration,
    ) -> Result<(hyper::StatusCode, Bytes), String> {
        let full = match format!("{}{path}", self.path.trim_end_matches('/')) {
            full if full.is_empty() => "/".to_string(),
            full => full,
        };
        let url = format!("{}{path}", self.url.trim_end_matches('/'));
        let verb = method_word(&method);
        let body = Bytes::from(body.unwrap_or_default());
        match tokio::time::timeout(timeout, self.exchange(&method, &full, body)).await {
            Ok(Ok(answer)) => Ok(answer),
            Ok(Err(e)) => Err(format!("{verb} {url:?}: {e}")),
            Err(_) => Err(format!(
                "{verb} {url:?}: context deadline exceeded (timed out after {}s)",
                timeout.as_secs_f64()
            )),
        }
    }

    /// The URL, for messages.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// POSTs `body` (a `review` object) as JSON and reads the JSON answer, all within
    /// `timeout`; errors read as kube-apiserver words them (`Post "<url>": ...`).
    pub async fn post(
        &self,
        body: String,
        timeout: Duration,
        review: &str,
    ) -> Result<Value, String> {
        // As client-go tells a server how long it has: `?timeout=10s`.
        let sep = if self.path.contains('?') { '&' } else { '?' };
        let path = format!("{}{sep}timeout={}s", self.path, timeout.as_secs().max(1));
        let answer = async {
            let (status, bytes) = self
                .exchange(&hyper::Method::POST, &path, Bytes::from(body))
                .await?;
            if !status.is_success() {
                return Err(format!("the webhook answered {status}"));
            }
            serde_json::from_slice(&bytes).map_err(|e| format!("the answer is not a {review}: {e}"))
        };
        match tokio::time::timeout(timeout, answer).await {
            Ok(Ok(answer)) => Ok(answer),
            Ok(Err(e)) => Err(format!("Post {:?}: {e}", self.url)),
            Err(_) => Err(format!(
                "Post {:?}: context deadline exceeded (timed out after {}s)",
                self.url,
                timeout.as_secs_f64()
            )),
        }
    }

    /// A kept-alive connection that can take a request, if there is one.
    fn idle_connection(&self) -> Option<Sender> {
        let mut idle = self.idle.lock().unwrap_or_else(|e| e.into_inner());
        while let Some(sender) = idle.pop() {
            if sender.is_ready() {
                return Some(sender);
            }
        }
        None
    }

    /// A new TLS connection.
    async fn connect(&self) -> Result<Sender, String> {
        let (host, port) = match &self.service {
            None => (self.host.clone(), self.port),
            Some(service) => {
                let resolver = SERVICE_RESOLVER
                    .get()
                    .ok_or("service references cannot be resolved yet")?;
                resolver.resolve(service).await?
            }
        };
        let tcp = tokio::net::TcpStream::connect((host.as_str(), port))
            .await
            .map_err(|e| format!("dial tcp {host}:{port}: {e}"))?;
        let _ = tcp.set_nodelay(true);
        let name = rustls::pki_types::ServerName::try_from(self.host.clone())
            .map_err(|e| e.to_string())?;
        let tls = tokio_rustls::TlsConnector::from(self.tls.clone())
            .connect(name, tcp)
            .await
            .map_err(|e| e.to_string())?;
        let (sender, connection) =
            hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(tls))
                .await
                .map_err(|e| e.to_string())?;
        tokio::spawn(connection);
        Ok(sender)
    }

    /// One request, on a kept-alive connection when one is idle (again on a new one if
    /// the webhook had closed it), else on a new one.
    async fn exchange(
        &self,
        method: &hyper::Method,
        path: &str,
        body: Bytes,
    ) -> Result<(hyper::StatusCode, Bytes), String> {
        if let Some(sender) = self.idle_connection() {
            match self.send(sender, method, path, body.clone()).await {
                Err(Retry::Closed(_)) => {}
                Err(Retry::No(e)) => return Err(e),
                Ok(answer) => return Ok(answer),
            }
        }
        let sender = self.connect().await?;
        self.send(sender, method, path, body)
            .await
            .map_err(|e| match e {
                Retry::Closed(e) | Retry::No(e) => e,
            })
    }

    async fn send(
        &self,
        mut sender: Sender,
        method: &hyper::Method,
        path: &str,
        body: Bytes,
    ) -> Result<(hyper::StatusCode, Bytes), Retry> {
        let mut request = hyper::Request::builder()
            .method(method.clone())
            .uri(path)
            .header(hyper::header::HOST, &self.host)
            .header(hyper::header::ACCEPT, "application/json");
        if !body.is_empty() {
            request = request.header(hyper::header::CONTENT_TYPE, "application/json");
        }
        if let Some(authorization) = &self.authorization {
            request = request.header(hyper::header::AUTHORIZATION, authorization);
        }
        let request = request
            .body(Full::new(body))
            .map_err(|e| Retry::No(e.to_string()))?;
        let response = sender.send_request(request).await.map_err(|e| {
            // Nothing was answered: a kept-alive connection the webhook closed.
            if e.is_canceled() || e.is_closed() || e.is_incomplete_message() {
                Retry::Closed(e.to_string())
            } else {
                Retry::No(e.to_string())
            }
        })?;
        let status = response.status();
        let bytes = Limited::new(response.into_body(), MAX_RESPONSE_BYTES)
            .collect()
            .await
            .map_err(|e| Retry::No(e.to_string()))?
            .to_bytes();
        if sender.is_ready() {
            let mut idle = self.idle.lock().unwrap_or_else(|e| e.into_inner());
            if idle.len() < MAX_IDLE_CONNECTIONS {
                idle.push(sender);
            }
        }
        Ok((status, bytes))
    }
}

/// The certificates of a `caBundle` (base64 of PEM) as TLS roots; errors name the field
/// as `field` (possibly empty: the caller says there is nothing to trust).
pub fn ca_bundle_roots(bundle: &str, field: &str) -> Result<rustls::RootCertStore, String> {
    use base64::Engine;
    let pem = base64::engine::general_purpose::STANDARD
        .decode(bundle)
        .map_err(|e| format!("{field} is not base64: {e}"))?;
    let mut roots = rustls::RootCertStore::empty();
    for cert in rustls_pemfile::certs(&mut pem.as_slice()) {
        let cert = cert.map_err(|e| format!("{field}: {e}"))?;
        roots.add(cert).map_err(|e| format!("{field}: {e}"))?;
    }
    Ok(roots)
}

/// A `clientConfig.service` (port 443 unless given) and its path (`/` unless given).
fn service_reference(service: &Value) -> Option<(ServiceReference, String)> {
    let service = service.as_object()?;
    let text = |f: &str| {
        service
            .get(f)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string()
    };
    let port = service
        .get("port")
        .and_then(Value::as_u64)
        .and_then(|p| u16::try_from(p).ok())
        .unwrap_or(443);
    let path = Some(text("path"))
        .filter(|p| !p.is_empty())
        .unwrap_or_else(|| "/".into());
    Some((
        ServiceReference {
            namespace: text("namespace"),
            name: text("name"),
            port,
        },
        path,
    ))
}

/// A method as Go's client names it in errors (`Get`, `Post`).
fn method_word(method: &hyper::Method) -> String {
    let name = method.as_str().to_ascii_lowercase();
    let mut chars = name.chars();
    chars
        .next()
        .map(|c| c.to_ascii_uppercase().to_string() + chars.as_str())
        .unwrap_or_default()
}

/// Why a request on a connection failed: the connection was closed before anything was
/// answered (another connection may do), or anything else.
enum Retry {
    Closed(String),
    No(String),
}
