//! Panics caught and logged: in handlers (`filters::recover_panics`), spawned tasks
//! (controllers, watch caches, storage watches), streaming response bodies (watches) and
//! the server's own threads. Each caught panic is one `tracing` error line with what was
//! running, the panic's message and where it was raised, instead of the default hook's
//! line on stderr.
//!
//! The location is only known to the panic hook: [`install_hook`] makes it remember the
//! location (and print nothing) while a catcher of this module is running on the thread;
//! panics elsewhere go to the previous hook as before.

use std::any::Any;
use std::cell::{Cell, RefCell};
use std::future::Future;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::pin::Pin;
use std::sync::Once;
use std::task::{Context, Poll};

thread_local! {
    /// How many catchers of this module are running on this thread.
    static CATCHING: Cell<usize> = const { Cell::new(0) };
    /// Where the last panic caught on this thread was raised.
    static LOCATION: RefCell<Option<String>> = const { RefCell::new(None) };
}

/// Installs the panic hook that keeps a caught panic's location for its catcher's log
/// line (once per process; later calls do nothing).
pub fn install_hook() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if CATCHING.with(Cell::get) == 0 {
                return previous(info);
            }
            let at = info.location().map(|l| l.to_string());
            LOCATION.with(|l| *l.borrow_mut() = at);
        }));
    });
}

/// The text a panic was raised with (`panic!("...")` payloads are `&str` or `String`).
pub fn message(payload: &(dyn Any + Send)) -> &str {
    if let Some(s) = payload.downcast_ref::<&str>() {
        s
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s
    } else {
        "(no message)"
    }
}

/// Runs `f` as a catcher: a panic is logged as `what` panicking and returned.
fn caught<R>(what: &str, f: impl FnOnce() -> R) -> Result<R, ()> {
    CATCHING.with(|c| c.set(c.get() + 1));
    let result = catch_unwind(AssertUnwindSafe(f));
    CATCHING.with(|c| c.set(c.get() - 1));
    result.map_err(|payload| {
        let location = LOCATION.with(|l| l.borrow_mut().take());
        tracing::error!(
            what,
            panic = message(&*payload),
            location = location.as_deref().unwrap_or("unknown"),
            "panicked"
        );
    })
}

/// `fut`, with a panic while it is polled logged (as `what` panicking) and turned into
/// `None`.
pub fn catch<F: Future>(what: &str, fut: F) -> Catch<'_, F> {
    Catch {
        what,
        fut: Box::pin(fut),
        done: false,
    }
}

/// The future of [`catch`].
pub struct Catch<'a, F> {
    what: &'a str,
    fut: Pin<Box<F>>,
    done: bool,
}

impl<F: Future> Future for Catch<'_, F> {
    type Output = Option<F::Output>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        if this.done {
            return Poll::Ready(None);
        }
        match caught(this.what, || this.fut.as_mut().poll(cx)) {
            Ok(Poll::Pending) => Poll::Pending,
            Ok(Poll::Ready(out)) => Poll::Ready(Some(out)),
            Err(()) => {
                // A panicked future must not be polled again.
                this.done = true;
                Poll::Ready(None)
            }
        }
    }
}

/// `tokio::spawn` for the server's background tasks: a panic is logged (with `what`)
/// and ends the task, as tokio would, but no longer silently.
pub fn spawn<F>(what: &'static str, fut: F) -> tokio::task::JoinHandle<()>
where
    F: Future<Output = ()> + Send + 'static,
{
    tokio::spawn(async move {
        catch(what, fut).await;
    })
}

/// `std::thread::Builder::spawn` for the server's threads, named `name`: a panic is
/// logged and ends the thread. The thread logs where its spawner logs.
pub fn thread<F>(name: &'static str, f: F) -> std::io::Result<std::thread::JoinHandle<()>>
where
    F: FnOnce() + Send + 'static,
{
    let dispatch = tracing::dispatcher::get_default(Clone::clone);
    std::thread::Builder::new()
        .name(name.into())
        .spawn(move || {
            tracing::dispatcher::with_default(&dispatch, || {
                let _ = caught(name, f);
            });
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};

    /// The log lines written while `f` runs on this thread.
    fn logged(f: impl FnOnce()) -> String {
        #[derive(Clone, Default)]
        struct Lines(Arc<Mutex<Vec<u8>>>);
        impl std::io::Write for Lines {
            fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
                self.0.lock().unwrap().extend_from_slice(buf);
                Ok(buf.len())
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        let lines = Lines::default();
        let writer = lines.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_writer(move || writer.clone())
            .with_ansi(false)
            .finish();
        tracing::subscriber::with_default(subscriber, f);
        let text = String::from_utf8(lines.0.lock().unwrap().clone()).unwrap();
        text
    }

    fn current_thread_runtime() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap()
    }

    #[test]
    fn a_panicking_task_is_one_line_with_its_name_message_and_location() {
        install_hook();
        let log = logged(|| {
            current_thread_runtime().block_on(async {
                let h = spawn("test task", async { panic!("boom {}", 1) });
                // The task ends normally: the panic did not reach tokio.
                h.await.expect("the task's panic was caught");
            });
        });
        let lines: Vec<&str> = log.lines().collect();
        assert_eq!(lines.len(), 1, "{log}");
        assert!(lines[0].contains("test task"), "{log}");
        assert!(lines[0].contains("boom 1"), "{log}");
        assert!(lines[0].contains("server/src/panics.rs:"), "{log}");
    }

    #[test]
    fn a_caught_future_gives_its_output_or_none() {
        install_hook();
        let rt = current_thread_runtime();
        assert_eq!(rt.block_on(catch("fine", async { 7 })), Some(7));
        let log = logged(|| {
            let out = rt.block_on(catch("failing", async { panic!("static text") }));
            assert_eq!(out, None::<()>);
        });
        assert!(
            log.contains("failing") && log.contains("static text"),
            "{log}"
        );
    }

    #[test]
    fn a_panicking_thread_is_logged_and_ends() {
        install_hook();
        let log = logged(|| {
            let h = thread("test-thread", || panic!("in a thread")).unwrap();
            h.join().expect("the thread's panic was caught");
        });
        assert_eq!(log.lines().count(), 1, "{log}");
        assert!(
            log.contains("test-thread") && log.contains("in a thread"),
            "{log}"
        );
        assert!(log.contains("server/src/panics.rs:"), "{log}");
    }

    #[test]
    fn a_panic_payload_gives_its_message() {
        let payload = catch_unwind(|| panic!("with {}", "format")).unwrap_err();
        assert_eq!(message(&*payload), "with format");
    }
}
