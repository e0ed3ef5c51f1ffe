//! What the server keeps about each accepted connection (`HttpServer::on_connect`): the
//! client's certificates, and for HTTP/1 a second handle on the socket that ends the
//! connection from outside its request (a terminated watch whose response body is not
//! being polled because the client stopped reading).

use std::any::Any;
use std::os::fd::AsFd;
use std::sync::Arc;

use actix_web::dev::Extensions;

/// The TLS connections actix-web hands `on_connect`.
type Tls = actix_tls::accept::rustls_0_23::TlsStream<actix_web::rt::net::TcpStream>;

/// `HttpServer::on_connect`: everything kept per connection.
pub fn on_connect(conn: &dyn Any, ext: &mut Extensions) {
    crate::filters::auth::remember_peer_certificates(conn, ext);
    remember_socket(conn, ext);
}

/// Ends an HTTP/1 connection: its socket is shut down both ways, so the write the server
/// is waiting on fails and actix-web drops the connection, and the client sees it end.
/// (HTTP/2 connections carry other requests: they get none.)
#[derive(Clone)]
pub struct ConnectionCloser(Arc<std::net::TcpStream>);

impl ConnectionCloser {
    /// Shuts the connection's socket down (the file stays open until actix-web drops it).
    pub fn close(&self) {
        let _ = self.0.shutdown(std::net::Shutdown::Both);
    }
}

fn remember_socket(conn: &dyn Any, ext: &mut Extensions) {
    let Some(tls) = conn.downcast_ref::<Tls>() else {
        return;
    };
    let (tcp, session) = tls.get_ref();
    if session.alpn_protocol() == Some(b"h2") {
        return;
    }
    // A duplicate descriptor of the same socket: shutting it down ends the connection,
    // and it cannot name another socket later (as a bare descriptor number could).
    if let Ok(fd) = tcp.as_fd().try_clone_to_owned() {
        ext.insert(ConnectionCloser(Arc::new(std::net::TcpStream::from(fd))));
    }
}
