//! The parent API server of delegated authentication and authorization
//! (`--authentication-kubeconfig`, `--authorization-kubeconfig`): the kubeconfig read as
//! client-go reads it (its current context's cluster and user), and JSON calls to the
//! parent within a deadline, over the webhooks' HTTPS client. The audit webhook
//! (`--audit-webhook-config-file`) is a server named the same way.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use base64::Engine;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use serde_json::Value;

use crate::webhook::Endpoint;

/// How long one call to the parent may take (upstream's delegated clients use 10 s).
pub const CALL_TIMEOUT: Duration = Duration::from_secs(10);

/// Why a call to the parent did not give an answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ParentError {
    /// Nothing usable came back: refused connection, TLS failure, timeout, not JSON.
    Unreachable(String),
    /// The parent answered with a failure `Status`.
    Status {
        /// The HTTP status code.
        code: u16,
        /// The Status's message (or the body when it is not a Status).
        message: String,
    },
}

impl std::fmt::Display for ParentError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ParentError::Unreachable(e) => f.write_str(e),
            ParentError::Status { code, message } => write!(f, "{message} ({code})"),
        }
    }
}

impl ParentError {
    /// Whether trying again may succeed: nothing came back, the parent was too busy
    /// (429) or failed itself (5xx), as upstream's webhook clients decide.
    pub fn is_transient(&self) -> bool {
        match self {
            ParentError::Unreachable(_) => true,
            ParentError::Status { code, .. } => *code == 429 || *code >= 500,
        }
    }
}

/// Upstream's webhook backoff: `waits` waits between tries, from `initial` growing ×1.5,
/// each up to 20% longer at random (so servers that failed together do not retry
/// together). Calls to the parent and the audit webhook both retry this way.
pub fn backoff(initial: Duration, waits: usize) -> impl Iterator<Item = Duration> {
    std::iter::successors(Some(initial), |d| Some(d.mul_f64(1.5)))
        .take(waits)
        .map(|d| d.mul_f64(1.0 + 0.2 * rand::random::<f64>()))
}

/// The waits before the second to fifth tries of a call to the parent: from 0.5 s.
fn retry_delays() -> impl Iterator<Item = Duration> {
    backoff(Duration::from_millis(500), 4)
}

/// A connection to the parent API server.
#[derive(Debug)]
pub struct Parent {
    endpoint: Endpoint,
}

impl Parent {
    /// The parent a kubeconfig file names; `flag` names the file in errors.
    pub fn from_kubeconfig(path: &Path, flag: &str) -> Result<Parent, String> {
        let config =
            Kubeconfig::load(path).map_err(|e| format!("{flag} {}: {e}", path.display()))?;
        config
            .connect()
            .map_err(|e| format!("{flag} {}: {e}", path.display()))
    }

    /// POSTs `body` to `path` and reads the JSON answer.
    pub async fn post(&self, path: &str, body: &Value) -> Result<Value, ParentError> {
        self.call(hyper::Method::POST, path, Some(body.to_string()))
            .await
    }

    /// GETs `path` and reads the JSON answer.
    pub async fn get(&self, path: &str) -> Result<Value, ParentError> {
        self.call(hyper::Method::GET, path, None).await
    }

    /// PUTs `body` to `path` and reads the JSON answer.
    pub async fn put(&self, path: &str, body: &Value) -> Result<Value, ParentError> {
        self.call(hyper::Method::PUT, path, Some(body.to_string()))
            .await
    }

    /// POSTs `body` (JSON) to `path` within `timeout`; any 2xx is success, whatever the
    /// answer's body.
    pub async fn post_expecting_success(
        &self,
        path: &str,
        body: String,
        timeout: Duration,
    ) -> Result<(), ParentError> {
        let (status, bytes) = self
            .endpoint
            .call(hyper::Method::POST, path, Some(body), timeout)
            .await
            .map_err(ParentError::Unreachable)?;
        match status.is_success() {
            true => Ok(()),
            false => Err(status_error(status, &bytes)),
        }
    }

    /// One call, tried again after a transient failure with upstream's backoff for
    /// delegated authentication and authorization (0.5 s, ×1.5, 20% jitter, 5 tries),
    /// all within [`CALL_TIMEOUT`].
    async fn call(
        &self,
        method: hyper::Method,
        path: &str,
        body: Option<String>,
    ) -> Result<Value, ParentError> {
        let deadline = tokio::time::Instant::now() + CALL_TIMEOUT;
        let mut delays = retry_delays();
        loop {
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            let answer = self
                .call_once(method.clone(), path, body.clone(), left)
                .await;
            match (answer, delays.next()) {
                (Err(e), Some(delay)) if e.is_transient() && delay < left => {
                    tracing::debug!("calling the parent {path}: {e}; again in {delay:?}");
                    tokio::time::sleep(delay).await;
                }
                (answer, _) => return answer,
            }
        }
    }

    async fn call_once(
        &self,
        method: hyper::Method,
        path: &str,
        body: Option<String>,
        timeout: Duration,
    ) -> Result<Value, ParentError> {
        let (status, bytes) = self
            .endpoint
            .call(method, path, body, timeout)
            .await
            .map_err(ParentError::Unreachable)?;
        if !status.is_success() {
            return Err(status_error(status, &bytes));
        }
        serde_json::from_slice(&bytes).ok().ok_or_else(|| {
            ParentError::Unreachable(format!(
                "{}{path}: the answer is not JSON",
                self.endpoint.url()
            ))
        })
    }
}

/// A failure answer: its Status's message, else the body.
fn status_error(status: hyper::StatusCode, body: &[u8]) -> ParentError {
    let message = serde_json::from_slice::<Value>(body)
        .ok()
        .and_then(|a| a["message"].as_str().map(str::to_string))
        .unwrap_or_else(|| String::from_utf8_lossy(body).into_owned());
    ParentError::Status {
        code: status.as_u16(),
        message,
    }
}

/// What a kubeconfig's current context says: where the parent is, whom to trust, who
/// we are.
#[derive(Debug, Default, PartialEq)]
struct Kubeconfig {
    server: String,
    ca_pem: Vec<u8>,
    token: Option<String>,
    client_cert_pem: Option<Vec<u8>>,
    client_key_pem: Option<Vec<u8>>,
}

impl Kubeconfig {
    fn load(path: &Path) -> Result<Kubeconfig, String> {
        let text = std::fs::read_to_string(path).map_err(|e| e.to_string())?;
        let base = path.parent().unwrap_or(Path::new("."));
        Kubeconfig::parse(&text, base)
    }

    /// Reads the current context (or the only one) of kubeconfig YAML; relative file
    /// names are relative to `base`, the kubeconfig's directory, as client-go reads them.
    fn parse(text: &str, base: &Path) -> Result<Kubeconfig, String> {
        let doc: serde_yaml::Value =
            serde_yaml::from_str(text).map_err(|e| format!("not a kubeconfig: {e}"))?;
        let named = |list: &str, name: &str, field: &str| -> Option<serde_yaml::Value> {
            doc.get(list)?
                .as_sequence()?
                .iter()
                .find(|e| e.get("name").and_then(|n| n.as_str()) == Some(name))?
                .get(field)
                .cloned()
        };
        let current = match doc.get("current-context").and_then(|c| c.as_str()) {
            Some(c) if !c.is_empty() => c.to_string(),
            _ => match doc.get("contexts").and_then(|c| c.as_sequence()) {
                Some(contexts) if contexts.len() == 1 => contexts[0]
                    .get("name")
                    .and_then(|n| n.as_str())
                    .unwrap_or_default()
                    .to_string(),
                _ => return Err("no current-context".into()),
            },
        };
        let context = named("contexts", &current, "context")
            .ok_or_else(|| format!("context {current:?} not found"))?;
        let text_of = |v: &serde_yaml::Value, k: &str| {
            v.get(k)
                .and_then(|s| s.as_str())
                .filter(|s| !s.is_empty())
                .map(str::to_string)
        };
        let cluster_name = text_of(&context, "cluster")
            .ok_or_else(|| format!("context {current:?} names no cluster"))?;
        let cluster = named("clusters", &cluster_name, "cluster")
            .ok_or_else(|| format!("cluster {cluster_name:?} not found"))?;
        let server = text_of(&cluster, "server")
            .ok_or_else(|| format!("cluster {cluster_name:?} has no server"))?;
        let file_or_data = |v: &serde_yaml::Value, key: &str| -> Result<Option<Vec<u8>>, String> {
            if let Some(data) = text_of(v, &format!("{key}-data")) {
                let bytes = base64::engine::general_purpose::STANDARD
                    .decode(data.trim())
                    .map_err(|e| format!("{key}-data is not base64: {e}"))?;
                return Ok(Some(bytes));
            }
            match text_of(v, key) {
                Some(file) => {
                    let file = resolve(base, &file);
                    std::fs::read(&file)
                        .map(Some)
                        .map_err(|e| format!("{key} {}: {e}", file.display()))
                }
                None => Ok(None),
            }
        };
        let ca_pem = file_or_data(&cluster, "certificate-authority")?.ok_or_else(|| {
            format!(
                "cluster {cluster_name:?} has no certificate-authority(-data): the parent's serving CA is needed (system roots and insecure-skip-tls-verify are not supported)"
            )
        })?;
        let mut config = Kubeconfig {
            server,
            ca_pem,
            ..Kubeconfig::default()
        };
        let Some(user_name) = text_of(&context, "user") else {
            return Ok(config);
        };
        let user = named("users", &user_name, "user")
            .ok_or_else(|| format!("user {user_name:?} not found"))?;
        for unsupported in ["exec", "auth-provider", "username", "password"] {
            if user.get(unsupported).is_some() {
                return Err(format!(
                    "user {user_name:?}: {unsupported} credentials are not supported; use a token or a client certificate"
                ));
            }
        }
        config.token = match (text_of(&user, "token"), text_of(&user, "tokenFile")) {
            (Some(token), _) => Some(token),
            (None, Some(file)) => {
                let file = resolve(base, &file);
                let token = std::fs::read_to_string(&file)
                    .map_err(|e| format!("tokenFile {}: {e}", file.display()))?;
                Some(token.trim().to_string())
            }
            (None, None) => None,
        };
        config.client_cert_pem = file_or_data(&user, "client-certificate")?;
        config.client_key_pem = file_or_data(&user, "client-key")?;
        if config.client_cert_pem.is_some() != config.client_key_pem.is_some() {
            return Err(format!(
                "user {user_name:?}: client-certificate and client-key go together"
            ));
        }
        Ok(config)
    }

    /// The HTTPS endpoint these settings describe.
    fn connect(&self) -> Result<Parent, String> {
        let mut roots = rustls::RootCertStore::empty();
        for cert in rustls_pemfile::certs(&mut self.ca_pem.as_slice()) {
            let cert = cert.map_err(|e| format!("certificate-authority: {e}"))?;
            roots
                .add(cert)
                .map_err(|e| format!("certificate-authority: {e}"))?;
        }
        if roots.is_empty() {
            return Err("certificate-authority holds no certificate".into());
        }
        let builder = rustls::ClientConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_root_certificates(roots);
        let tls = match (&self.client_cert_pem, &self.client_key_pem) {
            (Some(cert), Some(key)) => {
                let certs: Vec<CertificateDer<'static>> =
                    rustls_pemfile::certs(&mut cert.as_slice())
                        .collect::<Result<_, _>>()
                        .map_err(|e| format!("client-certificate: {e}"))?;
                let key: PrivateKeyDer<'static> = rustls_pemfile::private_key(&mut key.as_slice())
                    .map_err(|e| format!("client-key: {e}"))?
                    .ok_or("client-key holds no private key")?;
                builder
                    .with_client_auth_cert(certs, key)
                    .map_err(|e| format!("client-certificate: {e}"))?
            }
            _ => builder.with_no_client_auth(),
        };
        let mut endpoint = Endpoint::new(&self.server, Arc::new(tls))?;
        if let Some(token) = &self.token {
            endpoint = endpoint.with_bearer_token(token);
        }
        Ok(Parent { endpoint })
    }
}

fn resolve(base: &Path, file: &str) -> PathBuf {
    let path = Path::new(file);
    if path.is_absolute() {
        path.to_path_buf()
    } else {
        base.join(path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b64(s: &str) -> String {
        base64::engine::general_purpose::STANDARD.encode(s)
    }

    #[test]
    fn the_current_context_names_server_ca_and_token() {
        let text = format!(
            "apiVersion: v1
kind: Config
clusters:
- name: other
  cluster: {{server: https://other:1, certificate-authority-data: {ca}}}
- name: parent
  cluster: {{server: https://parent:6443, certificate-authority-data: {ca}}}
users:
- name: admin
  user: {{token: secret}}
contexts:
- name: a
  context: {{cluster: other, user: admin}}
- name: b
  context: {{cluster: parent, user: admin}}
current-context: b
",
            ca = b64("CA PEM")
        );
        let config = Kubeconfig::parse(&text, Path::new("/")).unwrap();
        assert_eq!(config.server, "https://parent:6443");
        assert_eq!(config.ca_pem, b"CA PEM");
        assert_eq!(config.token.as_deref(), Some("secret"));
        assert_eq!(config.client_cert_pem, None);
    }

    #[test]
    fn files_are_read_relative_to_the_kubeconfig() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("ca.crt"), "CA").unwrap();
        std::fs::write(dir.path().join("token"), "t0k\n").unwrap();
        let text =
            "clusters: [{name: c, cluster: {server: 'https://p', certificate-authority: ca.crt}}]
users: [{name: u, user: {tokenFile: token}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
";
        let config = Kubeconfig::parse(text, dir.path()).unwrap();
        assert_eq!(config.ca_pem, b"CA");
        assert_eq!(config.token.as_deref(), Some("t0k"));
    }

    #[test]
    fn transient_failures_are_tried_again_after_growing_waits() {
        let delays: Vec<Duration> = retry_delays().collect();
        assert_eq!(delays.len(), 4);
        for (d, base) in delays.iter().zip([500.0, 750.0, 1125.0, 1687.5]) {
            let ms = d.as_secs_f64() * 1000.0;
            assert!((base..base * 1.2).contains(&ms), "{ms} ms after {base}");
        }
        let status = |code| ParentError::Status {
            code,
            message: String::new(),
        };
        assert!(ParentError::Unreachable("refused".into()).is_transient());
        assert!(status(429).is_transient());
        assert!(status(503).is_transient());
        assert!(!status(403).is_transient());
        assert!(!status(404).is_transient());
    }

    #[test]
    fn what_cannot_reach_the_parent_is_an_error() {
        let missing_ca = "clusters: [{name: c, cluster: {server: 'https://p'}}]
contexts: [{name: x, context: {cluster: c}}]
current-context: x
";
        let e = Kubeconfig::parse(missing_ca, Path::new("/")).unwrap_err();
        assert!(e.contains("certificate-authority"), "{e}");
        let exec = format!(
            "clusters: [{{name: c, cluster: {{server: 'https://p', certificate-authority-data: {}}}}}]
users: [{{name: u, user: {{exec: {{command: x}}}}}}]
contexts: [{{name: x, context: {{cluster: c, user: u}}}}]
current-context: x
",
            b64("CA")
        );
        let e = Kubeconfig::parse(&exec, Path::new("/")).unwrap_err();
        assert!(e.contains("exec credentials are not supported"), "{e}");
        assert!(Kubeconfig::parse("current-context: nope", Path::new("/")).is_err());
    }
}
