//! What the server keeps about each accepted connection (`on_connect`): the client's
//! certificates, and for HTTP/1 a second handle on the socket that ends the connection
//! from outside its request (a terminated watch whose response body is not being
//! polled because the client stopped reading), and the slot a switching handler claims
//! the connection's held read side from (`client_stream`); for HTTP/2 the mark its watches
//! set as they hand events over (`write_batch`).

use std::os::fd::AsFd;
use std::sync::Arc;

use actix_web::dev::Extensions;

use super::client_stream::{ClientStream, Tls};

/// The HTTP service's `on_connect_ext`: everything kept per connection.
pub fn on_connect(conn: &ClientStream, ext: &mut Extensions) {
    let Some(tls) = conn.tls() else {
        return;
    };
    crate::filters::auth::remember_peer_certificates(tls, ext);
    if tls.get_ref().1.alpn_protocol() != Some(b"h2") {
        remember_socket(tls, ext);
        ext.insert(conn.upgrade_slot());
    }
    if let Some(streaming) = conn.streaming() {
        ext.insert(streaming);
    }
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

fn remember_socket(tls: &Tls, ext: &mut Extensions) {
    let tcp = tls.get_ref().0;
    // A duplicate descriptor of the same socket: shutting it down ends the connection,
    // and it cannot name another socket later (as a bare descriptor number could).
    if let Ok(fd) = tcp.as_fd().try_clone_to_owned() {
        ext.insert(ConnectionCloser(Arc::new(std::net::TcpStream::from(fd))));
    }
}
