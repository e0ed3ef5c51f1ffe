//! The HTTPS client side of webhooks (conversion and admission): a `clientConfig`
//! (`url` + `caBundle`) turned into an endpoint that takes one JSON review and answers
//! the JSON the webhook sent back, within a deadline.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use serde_json::Value;

/// The largest answer read from a webhook.
const MAX_RESPONSE_BYTES: usize = 64 * 1024 * 1024;

/// Where a webhook listens, and the TLS configuration that trusts its `caBundle`.
pub struct Endpoint {
    url: String,
    host: String,
    port: u16,
    path: String,
    tls: Arc<rustls::ClientConfig>,
}

impl std::fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Endpoint").field("url", &self.url).finish()
    }
}

impl Endpoint {
    /// The endpoint a webhook's `clientConfig` names; why it cannot be used otherwise.
    pub fn from_client_config(config: &Value) -> Result<Endpoint, String> {
        let url = match (config["url"].as_str(), config["service"].is_object()) {
            (Some(url), _) => url.to_string(),
            // Services are not served yet, so there is nothing to resolve one with.
            (None, true) => {
                return Err(
                    "service references are not supported by this server; use clientConfig.url"
                        .into(),
                )
            }
            (None, false) => return Err("clientConfig has neither url nor service".into()),
        };
        let rest = url
            .strip_prefix("https://")
            .ok_or_else(|| format!("{url:?} is not an https URL"))?;
        let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
        let (host, port) = match authority.rsplit_once(':') {
            Some((h, p)) if !h.is_empty() => {
                (h, p.parse().map_err(|_| format!("bad port in {url:?}"))?)
            }
            _ => (authority, 443),
        };
        let host = host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_string();
        let mut roots = rustls::RootCertStore::empty();
        if let Some(bundle) = config["caBundle"].as_str() {
            use base64::Engine;
            let pem = base64::engine::general_purpose::STANDARD
                .decode(bundle)
                .map_err(|e| format!("caBundle is not base64: {e}"))?;
            for cert in rustls_pemfile::certs(&mut pem.as_slice()) {
                let cert = cert.map_err(|e| format!("caBundle: {e}"))?;
                roots.add(cert).map_err(|e| format!("caBundle: {e}"))?;
            }
        }
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
        Ok(Endpoint {
            path: if path.is_empty() {
                "/".into()
            } else {
                path.to_string()
            },
            url,
            host,
            port,
            tls: Arc::new(tls),
        })
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
        match tokio::time::timeout(timeout, self.exchange(&path, body, review)).await {
            Ok(Ok(answer)) => Ok(answer),
            Ok(Err(e)) => Err(format!("Post {:?}: {e}", self.url)),
            Err(_) => Err(format!(
                "Post {:?}: context deadline exceeded (timed out after {}s)",
                self.url,
                timeout.as_secs_f64()
            )),
        }
    }

    /// One request over a new TLS connection.
    async fn exchange(&self, path: &str, body: String, review: &str) -> Result<Value, String> {
        let tcp = tokio::net::TcpStream::connect((self.host.as_str(), self.port))
            .await
            .map_err(|e| e.to_string())?;
        let name = rustls::pki_types::ServerName::try_from(self.host.clone())
            .map_err(|e| e.to_string())?;
        let tls = tokio_rustls::TlsConnector::from(self.tls.clone())
            .connect(name, tcp)
            .await
            .map_err(|e| e.to_string())?;
        let (mut sender, connection) =
            hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(tls))
                .await
                .map_err(|e| e.to_string())?;
        tokio::spawn(connection);
        let request = hyper::Request::post(path)
            .header(hyper::header::HOST, &self.host)
            .header(hyper::header::CONTENT_TYPE, "application/json")
            .header(hyper::header::ACCEPT, "application/json")
            .body(Full::new(Bytes::from(body)))
            .map_err(|e| e.to_string())?;
        let response = sender
            .send_request(request)
            .await
            .map_err(|e| e.to_string())?;
        let status = response.status();
        let bytes = Limited::new(response.into_body(), MAX_RESPONSE_BYTES)
            .collect()
            .await
            .map_err(|e| e.to_string())?
            .to_bytes();
        if !status.is_success() {
            return Err(format!("the webhook answered {status}"));
        }
        serde_json::from_slice(&bytes).map_err(|e| format!("the answer is not a {review}: {e}"))
    }
}
