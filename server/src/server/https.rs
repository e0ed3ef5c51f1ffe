//! The HTTPS listener, assembled from the parts actix-web's `HttpServer` is made of, so
//! that the byte stream under HTTP is ours ([`ClientStream`]): actix-server's workers
//! accept, actix-tls makes the TLS handshake, ALPN picks HTTP/2 or HTTP/1.1, and
//! actix-http's `HttpService` serves the application, with the settings `HttpServer`
//! gives it (and ours: keep-alive, `on_connect`).

use std::fmt;
use std::time::Duration;

use actix_http::body::MessageBody;
use actix_http::{HttpService, Protocol, Request, Response};
use actix_service::{map_config, IntoServiceFactory, Service, ServiceFactory, ServiceFactoryExt};
use actix_tls::accept::rustls_0_23::{reexports::ServerConfig, Acceptor};
use actix_tls::accept::TlsError;
use actix_web::dev::AppConfig;

use super::client_stream::{ClientStream, Tls};
use super::connection;

/// How the server serves connections.
pub struct Serving {
    /// actix-web's keep-alive (idle HTTP/1 connections; HTTP/2 PINGs).
    pub keep_alive: Duration,
    /// Workers; 0: one per CPU (actix-server's default).
    pub workers: usize,
    /// How long stopping waits for connections to end, in seconds.
    pub shutdown_timeout: u64,
}

/// The time a client has to send its first request's head (`HttpServer`'s default).
const CLIENT_REQUEST_TIMEOUT: Duration = Duration::from_secs(5);
/// The time a closing connection has to end (`HttpServer`'s default).
const CLIENT_DISCONNECT_TIMEOUT: Duration = Duration::from_secs(1);

/// The server serving `app` (built once per worker) over TLS on `listener`, not yet
/// running. Shutdown is ours (`lifecycle`): the server does not act on signals.
pub fn server<F, I, S, B>(
    app: F,
    listener: std::net::TcpListener,
    mut tls: ServerConfig,
    serving: &Serving,
) -> std::io::Result<actix_server::Server>
where
    F: Fn() -> I + Send + Clone + 'static,
    I: IntoServiceFactory<S, Request>,
    S: ServiceFactory<Request, Config = AppConfig> + 'static,
    S::Error: Into<actix_web::Error> + 'static,
    S::InitError: fmt::Debug,
    S::Response: Into<Response<B>> + 'static,
    <S::Service as Service<Request>>::Future: 'static,
    S::Service: 'static,
    B: MessageBody + 'static,
{
    let addr = listener.local_addr()?;
    let mut builder = actix_server::Server::build()
        .disable_signals()
        .shutdown_timeout(serving.shutdown_timeout);
    if serving.workers > 0 {
        builder = builder.workers(serving.workers);
    }
    // HTTP/1 connections close after their current answer once shutdown starts.
    let draining = builder.graceful_shutdown_signal();
    let mut protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    protocols.append(&mut tls.alpn_protocols);
    tls.alpn_protocols = protocols;
    let keep_alive = serving.keep_alive;
    builder
        .listen("apiserver-https", listener, move || {
            let draining = draining.clone();
            let http = HttpService::build()
                .keep_alive(keep_alive)
                .client_request_timeout(CLIENT_REQUEST_TIMEOUT)
                .client_disconnect_timeout(CLIENT_DISCONNECT_TIMEOUT)
                .h1_allow_half_closed(true)
                .graceful_shutdown_signal(move || {
                    let draining = draining.clone();
                    async move { draining.notified().await }
                })
                .on_connect_ext(|io: &ClientStream, ext: _| connection::on_connect(io, ext))
                .finish(map_config(
                    app().into_factory().map_err(|e| e.into().error_response()),
                    // As `HttpServer` configures it: the host a request without one is
                    // taken to name (`ConnectionInfo`), over HTTPS.
                    move |_| AppConfig::__priv_test_new(true, addr.to_string(), addr),
                ));
            Acceptor::new(tls.clone())
                .map_init_err(|_| unreachable!("the TLS acceptor does not fail to start"))
                .map_err(TlsError::into_service_error)
                .and_then(|tls: Tls| async move {
                    let http2 = tls.get_ref().1.alpn_protocol() == Some(b"h2");
                    let peer = tls.get_ref().0.peer_addr().ok();
                    let protocol = if http2 {
                        Protocol::Http2
                    } else {
                        Protocol::Http1
                    };
                    Ok((ClientStream::new(tls, !http2), protocol, peer))
                })
                .and_then(http.map_err(TlsError::Service))
        })
        .map(actix_server::ServerBuilder::run)
}
