//! Coalesced writes of an HTTP/2 connection: what the HTTP/2 codec writes in a busy
//! stretch leaves as one write to TLS, so as a few full TLS records and one system call,
//! instead of a record and a system call per frame part.
//!
//! The codec (h2) flushes after every DATA frame whose payload it does not copy (over
//! 1 KiB: a watch event), writing the frame's head and its payload apart; to TLS below it
//! each write is a record of its own and a `writev`. One change sent to 100 watches of a
//! connection was 200 records and 200 system calls.
//!
//! The rules, at each flush:
//! - a flush with nothing new since the last one (the codec has nothing more to say)
//!   writes everything out, as does any flush once [`FLUSH_AT`] bytes are kept, and a
//!   shutdown;
//! - a flush that comes with new bytes (the codec may be between a frame's parts, or more
//!   frames may follow) keeps them and wakes the connection's task, which flushes again
//!   when next polled: a frame's head and payload leave together;
//! - while watches stream on the connection ([`Streaming`]: a watch marks it as it hands
//!   over an event) and the last write went out less than [`CORK`] ago, new bytes wait for
//!   [`CORK`] after it, so the events a change brings to the connection's watches (their
//!   responses are polled one after another, each waking the codec) leave together
//!   rather than one by one. Other answers never wait for a timer.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::{ready, Context, Poll};
use std::time::Duration;

use bytes::{Buf, BytesMut};
use tokio::io::AsyncWrite;
use tokio::time::{Instant, Sleep};

/// Kept bytes that are written out at the next flush, however busy the codec: four full
/// TLS records (16 KiB of plaintext each).
pub const FLUSH_AT: usize = 64 * 1024;
/// How long watch events wait, after the last write, for others to join them.
pub const CORK: Duration = Duration::from_millis(1);
/// A drained buffer larger than this is let go, so an idle connection holds nothing.
const KEEP_CAPACITY: usize = 16 * 1024;

/// Whether watch events were handed to the connection since its last write (kept in the
/// connection's data, `HttpRequest::conn_data`, for its watches to mark).
#[derive(Clone, Default)]
pub struct Streaming(Arc<AtomicBool>);

impl Streaming {
    /// A watch handed an event over.
    pub fn mark(&self) {
        self.0.store(true, Ordering::Relaxed);
    }

    fn take(&self) -> bool {
        self.0.swap(false, Ordering::Relaxed)
    }
}

/// Bytes kept for one writer; see the module docs.
pub struct WriteBatch {
    kept: BytesMut,
    /// Bytes were kept since the last flush.
    fresh: bool,
    streaming: Streaming,
    /// When the last write out ended.
    last_out: Option<Instant>,
    /// Watch events wait until then.
    cork: Option<Pin<Box<Sleep>>>,
    /// [`CORK`], but in tests.
    cork_for: Duration,
}

impl Default for WriteBatch {
    fn default() -> Self {
        WriteBatch {
            kept: BytesMut::new(),
            fresh: false,
            streaming: Streaming::default(),
            last_out: None,
            cork: None,
            cork_for: CORK,
        }
    }
}

impl WriteBatch {
    /// The mark this batch's connection's watches set.
    pub fn streaming(&self) -> Streaming {
        self.streaming.clone()
    }

    /// Keeps `data` (all of it), first writing out what is kept once that reached
    /// [`FLUSH_AT`] (pending while the writer is).
    pub fn poll_write<W: AsyncWrite + ?Sized>(
        &mut self,
        mut w: Pin<&mut W>,
        cx: &mut Context<'_>,
        data: &[u8],
    ) -> Poll<io::Result<usize>> {
        if self.kept.len() >= FLUSH_AT {
            ready!(self.poll_write_out(w.as_mut(), cx))?;
        }
        if !data.is_empty() {
            self.kept.extend_from_slice(data);
            self.fresh = true;
        }
        Poll::Ready(Ok(data.len()))
    }

    /// Writes out and flushes, or keeps the bytes a while longer (see the module docs),
    /// having arranged to be polled again.
    pub fn poll_flush<W: AsyncWrite + ?Sized>(
        &mut self,
        mut w: Pin<&mut W>,
        cx: &mut Context<'_>,
    ) -> Poll<io::Result<()>> {
        if !self.kept.is_empty() && self.kept.len() < FLUSH_AT && self.wait(cx) {
            return Poll::Ready(Ok(()));
        }
        ready!(self.poll_write_out(w.as_mut(), cx))?;
        w.poll_flush(cx)
    }

    /// Whether kept bytes wait (the task will be woken to flush again).
    fn wait(&mut self, cx: &mut Context<'_>) -> bool {
        let fresh = std::mem::take(&mut self.fresh);
        if self.cork.is_none() && fresh && self.streaming.take() {
            let recent = self.last_out.filter(|t| t.elapsed() < self.cork_for);
            if let Some(t) = recent {
                self.cork = Some(Box::pin(tokio::time::sleep_until(t + self.cork_for)));
            }
        }
        if let Some(cork) = &mut self.cork {
            if cork.as_mut().poll(cx).is_pending() {
                return true;
            }
            self.cork = None;
            return false;
        }
        // A connection's first bytes (the server's SETTINGS) leave at once, as before: a
        // client may wait for them before it says anything.
        if fresh && self.last_out.is_some() {
            cx.waker().wake_by_ref();
            return true;
        }
        false
    }

    /// Writes out what is kept, then shuts the writer down.
    pub fn poll_shutdown<W: AsyncWrite + ?Sized>(
        &mut self,
        mut w: Pin<&mut W>,
        cx: &mut Context<'_>,
    ) -> Poll<io::Result<()>> {
        self.fresh = false;
        self.cork = None;
        ready!(self.poll_write_out(w.as_mut(), cx))?;
        w.poll_shutdown(cx)
    }

    /// Writes everything kept to `w`.
    fn poll_write_out<W: AsyncWrite + ?Sized>(
        &mut self,
        mut w: Pin<&mut W>,
        cx: &mut Context<'_>,
    ) -> Poll<io::Result<()>> {
        if self.kept.is_empty() {
            return Poll::Ready(Ok(()));
        }
        while !self.kept.is_empty() {
            let n = ready!(w.as_mut().poll_write(cx, &self.kept))?;
            if n == 0 {
                return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
            }
            self.kept.advance(n);
        }
        self.fresh = false;
        self.cork = None;
        // Marks of the events just written are spent.
        self.streaming.take();
        self.last_out = Some(Instant::now());
        if self.kept.capacity() > KEEP_CAPACITY {
            self.kept = BytesMut::new();
        }
        Poll::Ready(Ok(()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    use std::task::{Wake, Waker};

    /// A writer that records each write and can be made to refuse (pending).
    #[derive(Default)]
    struct Recorder {
        writes: Vec<Vec<u8>>,
        flushes: usize,
        shut: bool,
        blocked: bool,
    }

    impl AsyncWrite for Recorder {
        fn poll_write(
            mut self: Pin<&mut Self>,
            _: &mut Context<'_>,
            data: &[u8],
        ) -> Poll<io::Result<usize>> {
            if self.blocked {
                return Poll::Pending;
            }
            self.writes.push(data.to_vec());
            Poll::Ready(Ok(data.len()))
        }
        fn poll_flush(mut self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
            self.flushes += 1;
            Poll::Ready(Ok(()))
        }
        fn poll_shutdown(mut self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
            self.shut = true;
            Poll::Ready(Ok(()))
        }
    }

    #[derive(Default)]
    struct Wakes(AtomicUsize);
    impl Wake for Wakes {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::Relaxed);
        }
        fn wake_by_ref(self: &Arc<Self>) {
            self.0.fetch_add(1, Ordering::Relaxed);
        }
    }

    fn context() -> (Arc<Wakes>, Waker) {
        let wakes = Arc::new(Wakes::default());
        (wakes.clone(), Waker::from(wakes))
    }

    #[test]
    fn frames_of_one_busy_poll_leave_as_one_write_at_the_idle_flush() {
        let (wakes, waker) = context();
        let cx = &mut Context::from_waker(&waker);
        let (mut batch, mut w) = (WriteBatch::default(), Recorder::default());
        // The connection's first bytes go at once.
        assert!(batch
            .poll_write(Pin::new(&mut w), cx, b"settings")
            .is_ready());
        assert!(batch.poll_flush(Pin::new(&mut w), cx).is_ready());
        assert_eq!(w.writes, vec![b"settings".to_vec()]);
        w.writes.clear();
        w.flushes = 0;
        // A frame head and its payload, a flush; again for a second stream.
        for _ in 0..2 {
            for part in [&b"head"[..], b"payload"] {
                let n = batch.poll_write(Pin::new(&mut w), cx, part);
                assert!(matches!(n, Poll::Ready(Ok(len)) if len == part.len()));
            }
            assert!(batch.poll_flush(Pin::new(&mut w), cx).is_ready());
        }
        assert!(w.writes.is_empty(), "kept while the codec is busy");
        assert_eq!(wakes.0.load(Ordering::Relaxed), 2, "the task is asked back");
        // The next poll's flush has nothing new: everything leaves, once.
        assert!(batch.poll_flush(Pin::new(&mut w), cx).is_ready());
        assert_eq!(w.writes, vec![b"headpayloadheadpayload".to_vec()]);
        assert_eq!(w.flushes, 1);
        assert_eq!(wakes.0.load(Ordering::Relaxed), 2, "no wake when idle");
        assert!(batch.poll_flush(Pin::new(&mut w), cx).is_ready());
        assert_eq!(w.writes.len(), 1, "nothing more to write");
    }

    #[test]
    fn a_full_batch_is_written_at_the_next_flush_or_write() {
        let (_, waker) = context();
        let cx = &mut Context::from_waker(&waker);
        let (mut batch, mut w) = (WriteBatch::default(), Recorder::default());
        let frame = vec![7u8; 16 * 1024 + 9];
        while batch.kept.len() < FLUSH_AT {
            assert!(batch.poll_write(Pin::new(&mut w), cx, &frame).is_ready());
        }
        assert!(batch.poll_flush(Pin::new(&mut w), cx).is_ready());
        assert_eq!(w.writes.len(), 1, "a full batch does not wait");
        // A write that finds a full batch writes it out first, and waits with it.
        while batch.kept.len() < FLUSH_AT {
            assert!(batch.poll_write(Pin::new(&mut w), cx, &frame).is_ready());
        }
        w.blocked = true;
        assert!(batch.poll_write(Pin::new(&mut w), cx, &frame).is_pending());
        w.blocked = false;
        assert!(batch.poll_write(Pin::new(&mut w), cx, &frame).is_ready());
        assert_eq!(w.writes.len(), 2);
        assert_eq!(batch.kept.len(), frame.len());
    }

    #[tokio::test]
    async fn watch_events_soon_after_a_write_wait_for_the_cork_then_leave_together() {
        let (mut batch, mut w) = (WriteBatch::default(), Recorder::default());
        // Long enough that a loaded machine does not end it between two statements.
        batch.cork_for = Duration::from_millis(300);
        let streaming = batch.streaming();
        let flush = |batch: &mut WriteBatch, w: &mut Recorder| {
            let (_, waker) = context();
            batch.poll_flush(Pin::new(w), &mut Context::from_waker(&waker))
        };
        let (_, waker) = context();
        let cx = &mut Context::from_waker(&waker);
        // A first event goes at once (fresh, then the idle flush).
        streaming.mark();
        assert!(batch.poll_write(Pin::new(&mut w), cx, b"one").is_ready());
        assert!(flush(&mut batch, &mut w).is_ready());
        assert!(flush(&mut batch, &mut w).is_ready());
        assert_eq!(w.writes.len(), 1);
        // Events right after it wait, idle flushes or not, until the cork ends.
        for part in [&b"two"[..], b"three"] {
            streaming.mark();
            assert!(batch.poll_write(Pin::new(&mut w), cx, part).is_ready());
            assert!(flush(&mut batch, &mut w).is_ready());
            assert!(flush(&mut batch, &mut w).is_ready());
        }
        assert_eq!(w.writes.len(), 1, "corked");
        // The cork's timer wakes the task, whose flush writes both.
        let waited = tokio::time::timeout(
            Duration::from_secs(10),
            std::future::poll_fn(|cx| {
                ready!(batch.poll_flush(Pin::new(&mut w), cx)).unwrap();
                if w.writes.len() == 2 {
                    Poll::Ready(())
                } else {
                    Poll::Pending
                }
            }),
        )
        .await;
        assert!(waited.is_ok(), "the cork ends by itself");
        assert_eq!(w.writes[1], b"twothree");
        // Other answers (no watch marked it) never wait for the timer.
        assert!(batch.poll_write(Pin::new(&mut w), cx, b"get").is_ready());
        assert!(flush(&mut batch, &mut w).is_ready());
        assert!(flush(&mut batch, &mut w).is_ready());
        assert_eq!(w.writes.len(), 3);
    }

    #[test]
    fn shutdown_writes_what_is_kept_first() {
        let (_, waker) = context();
        let cx = &mut Context::from_waker(&waker);
        let (mut batch, mut w) = (WriteBatch::default(), Recorder::default());
        assert!(batch.poll_write(Pin::new(&mut w), cx, b"goaway").is_ready());
        assert!(batch.poll_flush(Pin::new(&mut w), cx).is_ready());
        assert!(batch.poll_shutdown(Pin::new(&mut w), cx).is_ready());
        assert_eq!(w.writes, vec![b"goaway".to_vec()]);
        assert!(w.shut);
    }
}
