//! An HTTPS client that talks to the server the way Kubernetes clients do: TLS with the
//! kubeconfig's CA, a bearer token, and either one multiplexed HTTP/2 connection (as
//! client-go does by default) or a pool of HTTP/1.1 connections (`--http1`).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{anyhow, bail, Context, Result};
use bytes::Bytes;
use http::header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE, HOST, USER_AGENT};
use http::{HeaderValue, Method, Request};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::client::conn::{http1, http2};
use hyper_util::rt::{TokioExecutor, TokioIo};
use rustls::pki_types::ServerName;
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;

use crate::kubeconfig::Target;

/// The JSON media type.
pub const JSON: &str = "application/json";
/// The Accept header that asks for a server-side Table (as kubectl get does).
pub const TABLE: &str = "application/json;as=Table;v=v1;g=meta.k8s.io";
/// The content type of a JSON merge patch.
pub const MERGE_PATCH: &str = "application/merge-patch+json";
/// The content type of a strategic merge patch.
pub const STRATEGIC_MERGE_PATCH: &str = "application/strategic-merge-patch+json";

/// Which HTTP version and connection layout to use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Protocol {
    /// One HTTP/2 connection carrying every request as a stream (client-go's default).
    Http2,
    /// HTTP/1.1: one connection per request in flight, kept in a pool for reuse.
    Http1,
}

/// A finished request: status and the whole body.
#[derive(Debug)]
pub struct Response {
    /// HTTP status code.
    pub status: u16,
    /// The response body.
    pub body: Bytes,
}

/// A streaming response (a watch): status and the body still arriving.
pub struct Streaming {
    /// HTTP status code.
    pub status: u16,
    /// The body, read frame by frame.
    pub body: Incoming,
    /// Keeps an HTTP/1.1 connection's sender alive while its body streams.
    _conn: Option<http1::SendRequest<Full<Bytes>>>,
}

/// A client for one server; cheap to clone (clones share connections).
#[derive(Clone)]
pub struct Client {
    inner: Arc<Inner>,
}

struct Inner {
    target: Target,
    tls: TlsConnector,
    server_name: ServerName<'static>,
    authority: String,
    token: Option<HeaderValue>,
    protocol: Protocol,
    timeout: Duration,
    /// The HTTP/2 connection (reopened when it closes).
    h2: tokio::sync::Mutex<Option<http2::SendRequest<Full<Bytes>>>>,
    /// Idle HTTP/1.1 connections.
    h1_idle: Mutex<Vec<http1::SendRequest<Full<Bytes>>>>,
}

/// Go's HTTP/2 transport defaults (`transportDefaultStreamFlow`, `...ConnFlow`).
const STREAM_WINDOW: u32 = 4 << 20;
const CONN_WINDOW: u32 = 1 << 30;

impl Client {
    /// A client for `target`; nothing is connected until the first request. Requests
    /// that take longer than `timeout` fail (watch streams are not bounded by it).
    pub fn new(target: Target, protocol: Protocol, timeout: Duration) -> Result<Client> {
        let mut roots = rustls::RootCertStore::empty();
        let mut found = 0;
        for cert in rustls_pemfile::certs(&mut target.ca_pem.as_slice()) {
            roots
                .add(cert.context("reading the CA certificate")?)
                .context("adding the CA certificate")?;
            found += 1;
        }
        if found == 0 {
            bail!("the kubeconfig's certificate authority holds no PEM certificate");
        }
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut config = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()?
            .with_root_certificates(roots)
            .with_no_client_auth();
        config.alpn_protocols = match protocol {
            Protocol::Http2 => vec![b"h2".to_vec()],
            Protocol::Http1 => vec![b"http/1.1".to_vec()],
        };
        let server_name = ServerName::try_from(target.host.clone())
            .map_err(|e| anyhow!("TLS server name {:?}: {e}", target.host))?;
        let authority = target
            .url
            .trim_start_matches("https://")
            .split('/')
            .next()
            .unwrap_or_default()
            .to_string();
        let token = match &target.token {
            Some(t) => Some(
                HeaderValue::from_str(&format!("Bearer {t}")).context("the token is not ASCII")?,
            ),
            None => None,
        };
        Ok(Client {
            inner: Arc::new(Inner {
                target,
                tls: TlsConnector::from(Arc::new(config)),
                server_name,
                authority,
                token,
                protocol,
                timeout,
                h2: tokio::sync::Mutex::new(None),
                h1_idle: Mutex::new(Vec::new()),
            }),
        })
    }

    /// A client for the same server with connections of its own, as another client
    /// process would have.
    pub fn separate(&self) -> Client {
        let i = &self.inner;
        Client {
            inner: Arc::new(Inner {
                target: i.target.clone(),
                tls: i.tls.clone(),
                server_name: i.server_name.clone(),
                authority: i.authority.clone(),
                token: i.token.clone(),
                protocol: i.protocol,
                timeout: i.timeout,
                h2: tokio::sync::Mutex::new(None),
                h1_idle: Mutex::new(Vec::new()),
            }),
        }
    }

    /// The protocol in use.
    pub fn protocol(&self) -> Protocol {
        self.inner.protocol
    }

    async fn tls_stream(&self) -> Result<TokioIo<tokio_rustls::client::TlsStream<TcpStream>>> {
        let tcp = TcpStream::connect(self.inner.target.addr)
            .await
            .with_context(|| format!("connecting to {}", self.inner.target.addr))?;
        tcp.set_nodelay(true)?;
        let tls = self
            .inner
            .tls
            .connect(self.inner.server_name.clone(), tcp)
            .await
            .context("TLS handshake")?;
        Ok(TokioIo::new(tls))
    }

    async fn h2_sender(&self) -> Result<http2::SendRequest<Full<Bytes>>> {
        let mut slot = self.inner.h2.lock().await;
        if let Some(s) = slot.as_ref().filter(|s| !s.is_closed()) {
            return Ok(s.clone());
        }
        let io = self.tls_stream().await?;
        let alpn = io.inner().get_ref().1.alpn_protocol().map(<[u8]>::to_vec);
        if alpn.as_deref() != Some(b"h2") {
            bail!("the server did not negotiate HTTP/2 (ALPN {alpn:?}); try --http1");
        }
        let (sender, conn) = http2::Builder::new(TokioExecutor::new())
            .initial_stream_window_size(STREAM_WINDOW)
            .initial_connection_window_size(CONN_WINDOW)
            .max_concurrent_reset_streams(4096)
            .handshake(io)
            .await
            .context("HTTP/2 handshake")?;
        tokio::spawn(async move {
            let _ = conn.await;
        });
        *slot = Some(sender.clone());
        Ok(sender)
    }

    async fn h1_sender(&self) -> Result<http1::SendRequest<Full<Bytes>>> {
        loop {
            let idle = self
                .inner
                .h1_idle
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .pop();
            match idle {
                Some(s) if s.is_ready() => return Ok(s),
                Some(_) => continue,
                None => break,
            }
        }
        let io = self.tls_stream().await?;
        let (sender, conn) = http1::handshake(io).await.context("HTTP/1.1 handshake")?;
        tokio::spawn(async move {
            let _ = conn.await;
        });
        Ok(sender)
    }

    fn h1_release(&self, sender: http1::SendRequest<Full<Bytes>>) {
        if !sender.is_closed() {
            self.inner
                .h1_idle
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(sender);
        }
    }

    fn build(
        &self,
        method: Method,
        path: &str,
        accept: &str,
        content_type: Option<&str>,
        body: Bytes,
    ) -> Result<Request<Full<Bytes>>> {
        let uri = match self.inner.protocol {
            Protocol::Http2 => format!("https://{}{path}", self.inner.authority),
            Protocol::Http1 => path.to_string(),
        };
        let mut b = Request::builder()
            .method(method)
            .uri(uri)
            .header(ACCEPT, accept)
            .header(USER_AGENT, "loadgen/0.1 (apiserver-rs benchmarks)");
        if self.inner.protocol == Protocol::Http1 {
            b = b.header(HOST, &self.inner.authority);
        }
        if let Some(t) = &self.inner.token {
            b = b.header(AUTHORIZATION, t.clone());
        }
        if let Some(ct) = content_type {
            b = b.header(CONTENT_TYPE, ct);
        }
        Ok(b.body(Full::new(body))?)
    }

    /// Sends a request and reads the whole response, within the client's timeout.
    pub async fn send(
        &self,
        method: Method,
        path: &str,
        accept: &str,
        content_type: Option<&str>,
        body: Bytes,
    ) -> Result<Response> {
        let req = self.build(method, path, accept, content_type, body)?;
        match tokio::time::timeout(self.inner.timeout, self.send_inner(req)).await {
            Ok(r) => r,
            Err(_) => bail!("timeout after {:?}", self.inner.timeout),
        }
    }

    async fn send_inner(&self, req: Request<Full<Bytes>>) -> Result<Response> {
        match self.inner.protocol {
            Protocol::Http2 => {
                let mut sender = self.h2_sender().await?;
                sender.ready().await?;
                let resp = sender.send_request(req).await?;
                let status = resp.status().as_u16();
                let body = resp.into_body().collect().await?.to_bytes();
                Ok(Response { status, body })
            }
            Protocol::Http1 => {
                let mut sender = self.h1_sender().await?;
                sender.ready().await?;
                let resp = sender.send_request(req).await?;
                let status = resp.status().as_u16();
                let body = resp.into_body().collect().await?.to_bytes();
                self.h1_release(sender);
                Ok(Response { status, body })
            }
        }
    }

    /// `GET path` accepting JSON.
    pub async fn get(&self, path: &str) -> Result<Response> {
        self.send(Method::GET, path, JSON, None, Bytes::new()).await
    }

    /// Starts a streaming GET (a watch) and returns once the response headers arrived.
    pub async fn stream(&self, path: &str) -> Result<Streaming> {
        let req = self.build(Method::GET, path, JSON, None, Bytes::new())?;
        let fut = async {
            match self.inner.protocol {
                Protocol::Http2 => {
                    let mut sender = self.h2_sender().await?;
                    sender.ready().await?;
                    let resp = sender.send_request(req).await?;
                    Ok(Streaming {
                        status: resp.status().as_u16(),
                        body: resp.into_body(),
                        _conn: None,
                    })
                }
                Protocol::Http1 => {
                    let mut sender = self.h1_sender().await?;
                    sender.ready().await?;
                    let resp = sender.send_request(req).await?;
                    Ok(Streaming {
                        status: resp.status().as_u16(),
                        body: resp.into_body(),
                        _conn: Some(sender),
                    })
                }
            }
        };
        match tokio::time::timeout(self.inner.timeout, fut).await {
            Ok(r) => r,
            Err(_) => bail!(
                "timeout after {:?} waiting for watch headers",
                self.inner.timeout
            ),
        }
    }
}

impl Streaming {
    /// The next chunk of the body; `None` at its end.
    pub async fn chunk(&mut self) -> Option<Result<Bytes>> {
        loop {
            match self.body.frame().await? {
                Ok(frame) => {
                    if let Ok(data) = frame.into_data() {
                        return Some(Ok(data));
                    }
                }
                Err(e) => return Some(Err(e.into())),
            }
        }
    }
}
