//! The byte stream of one accepted connection as actix-web serves it (TLS, then HTTP/1.1
//! or HTTP/2 by ALPN), and what it adds: a connection whose first request asks to
//! upgrade to anything but WebSocket (SPDY/3.1: kubectl before 1.31, and its fallback,
//! for exec, attach, cp and port-forward).
//!
//! actix-http hands a handler the bytes after a request's head only for a WebSocket
//! upgrade (and CONNECT); after any other head it parses them as further requests, and
//! its upgrade service is not called for such requests either. So this stream reads
//! the first request's head as it passes through: when that head asks for such an
//! upgrade and has no body, what follows it is held back from actix-web. The request
//! still goes through every filter (authentication, audit, authorization, limits) to
//! its handler, as any other; a handler that switches the connection (the aggregator's
//! proxy, once the backend answered 101) claims the held read side
//! ([`UpgradeSlot::claim`]) before its answer is written, and copies from it. An
//! answer written without a claim gives the bytes back to actix-web (which closes the
//! connection after an upgrade request it did not switch). Only the first request: knowing where a later request starts would
//! take parsing every body's framing, actix-web's job.
//!
//! An HTTP/2 connection's writes are coalesced ([`WriteBatch`]): one TLS write per busy
//! stretch of the codec rather than one per frame part.

use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{ready, Context, Poll, Waker};

use actix_web::http::header::{HeaderMap, HeaderName, HeaderValue};
use actix_web::rt::net::TcpStream;
use bytes::{Buf, BytesMut};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf, ReadHalf, WriteHalf};

use super::write_batch::{Streaming, WriteBatch};

/// A TLS connection as actix-tls accepts it.
pub type Tls = actix_tls::accept::rustls_0_23::TlsStream<TcpStream>;

/// The longest first request head looked at; a longer one is left to actix-web (which
/// refuses heads far shorter).
const MAX_HEAD: usize = 64 * 1024;
/// The most header fields a first head is parsed with (actix-web allows 96).
const MAX_HEADERS: usize = 128;

/// One accepted connection's bytes, as actix-web reads and writes them.
pub struct ClientStream {
    io: Io,
    phase: Phase,
    slot: UpgradeSlot,
    /// HTTP/2's writes, coalesced (`write_batch.rs`); HTTP/1 writes pass as they come.
    batch: Option<WriteBatch>,
}

// Every connection is `Whole` (inline, as actix-web held it); few are ever split.
#[allow(clippy::large_enum_variant)]
enum Io {
    Whole(Tls),
    /// Split when the first head asked for an upgrade: the read half is in the slot
    /// (or a claimer's), actix-web writes through this half.
    Split(WriteHalf<Tls>),
    /// Only while being split.
    Splitting,
}

enum Phase {
    /// Reading an HTTP/1 connection's first request head: what came so far when it
    /// took more than one read.
    FirstHead(BytesMut),
    /// Bytes pass as they come.
    Through,
    /// The first request asked for a non-WebSocket upgrade: actix-web reads nothing
    /// until its answer is written.
    Held,
    /// A handler claimed the read side: the connection is no longer HTTP.
    Switched,
}

impl ClientStream {
    /// The stream of an accepted TLS connection; `http1`: its first request head is
    /// looked at (HTTP/2 connections carry no connection upgrades).
    pub fn new(tls: Tls, http1: bool) -> Self {
        ClientStream {
            io: Io::Whole(tls),
            phase: if http1 {
                Phase::FirstHead(BytesMut::new())
            } else {
                Phase::Through
            },
            slot: UpgradeSlot::default(),
            batch: (!http1).then(WriteBatch::default),
        }
    }

    /// The TLS connection, while it is whole (always, when `on_connect` runs).
    pub fn tls(&self) -> Option<&Tls> {
        match &self.io {
            Io::Whole(tls) => Some(tls),
            _ => None,
        }
    }

    /// The mark an HTTP/2 connection's watches set as they hand events over.
    pub fn streaming(&self) -> Option<Streaming> {
        self.batch.as_ref().map(WriteBatch::streaming)
    }

    /// The slot a handler claims this connection's held read side from.
    pub fn upgrade_slot(&self) -> UpgradeSlot {
        self.slot.clone()
    }

    fn read_first_head(
        &mut self,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let Io::Whole(tls) = &mut self.io else {
            return Poll::Ready(Err(io::Error::other(
                "the first head is read before a split",
            )));
        };
        let before = buf.filled().len();
        ready!(Pin::new(tls).poll_read(cx, buf))?;
        let Phase::FirstHead(seen) = &mut self.phase else {
            return Poll::Ready(Ok(()));
        };
        let new = &buf.filled()[before..];
        if new.is_empty() {
            self.phase = Phase::Through;
            return Poll::Ready(Ok(()));
        }
        // Most heads come in one read: parsed where they lie, copied only when split.
        let prior = seen.len();
        let head = if prior == 0 {
            first_head(new)
        } else {
            seen.extend_from_slice(new);
            first_head(seen)
        };
        match head {
            Head::Partial if prior + new.len() <= MAX_HEAD => {
                if prior == 0 {
                    seen.extend_from_slice(new);
                }
            }
            Head::Partial | Head::Other => self.phase = Phase::Through,
            Head::RawUpgrade(len) => {
                // The head ends within this read (it was partial without it).
                let end = before + (len - prior);
                let early = BytesMut::from(&buf.filled()[end..]);
                buf.set_filled(end);
                self.hold(early);
            }
        }
        Poll::Ready(Ok(()))
    }

    /// Keeps what follows the first head from actix-web until its answer is written.
    fn hold(&mut self, early: BytesMut) {
        let Io::Whole(tls) = std::mem::replace(&mut self.io, Io::Splitting) else {
            return;
        };
        let (read, write) = tokio::io::split(tls);
        self.io = Io::Split(write);
        let mut slot = self.slot.lock();
        slot.read = Some(read);
        slot.early = early;
        slot.held = true;
        self.phase = Phase::Held;
    }

    fn read_through(
        &mut self,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match &mut self.io {
            Io::Whole(tls) => Pin::new(tls).poll_read(cx, buf),
            // Given back after an answer that did not switch.
            Io::Split(_) => {
                let mut slot = self.slot.lock();
                if !slot.early.is_empty() {
                    let n = slot.early.len().min(buf.remaining());
                    buf.put_slice(&slot.early[..n]);
                    slot.early.advance(n);
                    return Poll::Ready(Ok(()));
                }
                match slot.read.as_mut() {
                    Some(read) => Pin::new(read).poll_read(cx, buf),
                    None => Poll::Ready(Ok(())),
                }
            }
            Io::Splitting => Poll::Ready(Err(io::Error::other("connection being split"))),
        }
    }

    /// The answer to the held request is being written: the connection switched if a
    /// handler claimed the read side; otherwise actix-web reads on.
    fn answered(&mut self) {
        let mut slot = self.slot.lock();
        slot.held = false;
        if slot.claimed {
            self.phase = Phase::Switched;
        } else {
            self.phase = Phase::Through;
            if let Some(waker) = slot.waker.take() {
                waker.wake();
            }
        }
    }
}

impl Io {
    fn writer(&mut self) -> io::Result<Pin<&mut (dyn AsyncWrite + Unpin)>> {
        match self {
            Io::Whole(tls) => Ok(Pin::new(tls)),
            Io::Split(half) => Ok(Pin::new(half)),
            Io::Splitting => Err(io::Error::other("connection being split")),
        }
    }
}

impl AsyncRead for ClientStream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        match this.phase {
            Phase::Through => this.read_through(cx, buf),
            Phase::FirstHead(_) => this.read_first_head(cx, buf),
            Phase::Held => {
                this.slot.lock().waker = Some(cx.waker().clone());
                Poll::Pending
            }
            // The claimer reads; actix-web's dispatcher is woken by the answer's body.
            Phase::Switched => Poll::Pending,
        }
    }
}

impl AsyncWrite for ClientStream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        data: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        if matches!(this.phase, Phase::Held) {
            this.answered();
        }
        let w = this.io.writer()?;
        match &mut this.batch {
            Some(batch) => batch.poll_write(w, cx, data),
            None => w.poll_write(cx, data),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let w = this.io.writer()?;
        match &mut this.batch {
            Some(batch) => batch.poll_flush(w, cx),
            None => w.poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let w = this.io.writer()?;
        match &mut this.batch {
            Some(batch) => batch.poll_shutdown(w, cx),
            None => w.poll_shutdown(cx),
        }
    }
}

impl Drop for ClientStream {
    fn drop(&mut self) {
        let mut slot = self.slot.lock();
        slot.dropped = true;
        if let Some(waker) = slot.claimer.take() {
            waker.wake();
        }
    }
}

/// Where a connection's held read side waits for the handler of the request that asked
/// to upgrade it (kept in the connection's data: `HttpRequest::conn_data`).
#[derive(Clone, Default)]
pub struct UpgradeSlot(Arc<Mutex<Slot>>);

#[derive(Default)]
struct Slot {
    /// The read half, from the split until a handler claims it.
    read: Option<ReadHalf<Tls>>,
    /// What the client sent after the head, read with it.
    early: BytesMut,
    /// The first request asked for an upgrade and is not answered yet.
    held: bool,
    claimed: bool,
    /// actix-web's read, waiting while the read side is held.
    waker: Option<Waker>,
    /// actix-web let go of the connection: a claimer's read ends too (else the read
    /// half would keep the socket open after actix-web dropped it).
    dropped: bool,
    /// A claimer's read, waiting for the client.
    claimer: Option<Waker>,
}

impl UpgradeSlot {
    fn lock(&self) -> MutexGuard<'_, Slot> {
        // Nothing panics while holding it; a poisoned slot is still consistent.
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Whether the read side is held for the request being served: it is the
    /// connection's first, asked for a non-WebSocket upgrade, had no body, and is not
    /// answered yet.
    pub fn holds(&self) -> bool {
        let slot = self.lock();
        slot.held && !slot.claimed
    }

    /// Takes the held read side: from now on what the client sends is the claimer's,
    /// and the answer about to be written must switch the connection (101).
    pub fn claim(&self) -> Option<HeldRead> {
        let mut slot = self.lock();
        if !slot.held || slot.claimed {
            return None;
        }
        let read = slot.read.take()?;
        slot.claimed = true;
        Some(HeldRead {
            early: std::mem::take(&mut slot.early),
            read,
            slot: self.clone(),
        })
    }
}

/// The client's side of a switched connection: what it sends after the upgrade
/// request's head, as it arrives.
pub struct HeldRead {
    early: BytesMut,
    read: ReadHalf<Tls>,
    slot: UpgradeSlot,
}

impl AsyncRead for HeldRead {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if !this.early.is_empty() {
            let n = this.early.len().min(buf.remaining());
            buf.put_slice(&this.early[..n]);
            this.early.advance(n);
            return Poll::Ready(Ok(()));
        }
        let mut slot = this.slot.lock();
        if slot.dropped {
            return Poll::Ready(Ok(()));
        }
        let read = Pin::new(&mut this.read).poll_read(cx, buf);
        if read.is_pending() {
            slot.claimer = Some(cx.waker().clone());
        }
        read
    }
}

/// What a first request head says.
#[derive(Debug, PartialEq)]
enum Head {
    /// Not complete yet.
    Partial,
    /// Anything actix-web alone serves (no upgrade, WebSocket, a body, not HTTP/1.1).
    Other,
    /// A non-WebSocket upgrade without a body; the head's length.
    RawUpgrade(usize),
}

fn first_head(bytes: &[u8]) -> Head {
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut req = httparse::Request::new(&mut headers);
    match req.parse(bytes) {
        Ok(httparse::Status::Partial) => Head::Partial,
        Ok(httparse::Status::Complete(len)) if is_raw_upgrade(&req) => Head::RawUpgrade(len),
        Ok(httparse::Status::Complete(_)) | Err(_) => Head::Other,
    }
}

/// An HTTP/1.1 request (not CONNECT) asking, as the aggregator reads it, to upgrade to
/// a protocol other than WebSocket, without a body (which actix-web would read).
fn is_raw_upgrade(req: &httparse::Request<'_, '_>) -> bool {
    if req.version != Some(1) || req.method == Some("CONNECT") {
        return false;
    }
    let mut relevant = HeaderMap::new();
    for h in req.headers.iter() {
        let name = h.name.to_ascii_lowercase();
        match name.as_str() {
            "transfer-encoding" => return false,
            "content-length" if h.value.trim_ascii() != b"0" => return false,
            "upgrade" if h.value.trim_ascii().eq_ignore_ascii_case(b"websocket") => return false,
            "connection" | "upgrade" => {
                if let (Ok(n), Ok(v)) = (
                    HeaderName::from_bytes(name.as_bytes()),
                    HeaderValue::from_bytes(h.value),
                ) {
                    relevant.append(n, v);
                }
            }
            _ => {}
        }
    }
    crate::aggregator::upgrade::requested_protocol(&relevant).is_some()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_bodiless_http11_upgrade_to_other_than_websocket_is_held() {
        let spdy = b"POST /apis/g/v1/namespaces/d/echoes/e/exec HTTP/1.1\r\nHost: a\r\nContent-Length: 0\r\nConnection: Upgrade\r\nUpgrade: SPDY/3.1\r\nX-Stream-Protocol-Version: v4.channel.k8s.io\r\n\r\n";
        let mut with_frames = spdy.to_vec();
        with_frames.extend_from_slice(b"\x80\x03\x00\x01");
        assert_eq!(first_head(spdy), Head::RawUpgrade(spdy.len()));
        assert_eq!(first_head(&with_frames), Head::RawUpgrade(spdy.len()));
        assert_eq!(first_head(&spdy[..40]), Head::Partial);
        for other in [
            &b"GET /api HTTP/1.1\r\nHost: a\r\n\r\n"[..],
            b"GET /x HTTP/1.1\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n",
            b"GET /x HTTP/1.1\r\nUpgrade: SPDY/3.1\r\n\r\n",
            b"POST /x HTTP/1.1\r\nConnection: Upgrade\r\nUpgrade: SPDY/3.1\r\nContent-Length: 3\r\n\r\nabc",
            b"POST /x HTTP/1.1\r\nConnection: Upgrade\r\nUpgrade: SPDY/3.1\r\nTransfer-Encoding: chunked\r\n\r\n",
            b"GET /x HTTP/1.0\r\nConnection: Upgrade\r\nUpgrade: SPDY/3.1\r\n\r\n",
            b"CONNECT a:1 HTTP/1.1\r\nConnection: Upgrade\r\nUpgrade: SPDY/3.1\r\n\r\n",
            b"\x16\x03\x01 not http at all\r\n\r\n",
        ] {
            assert_eq!(first_head(other), Head::Other, "{}", String::from_utf8_lossy(other));
        }
    }
}
