//! Panics outside a request handler: in spawned tasks (controllers, watch caches,
//! storage watches) and in streaming response bodies (watches). Handlers' panics are
//! caught by `filters::recover_panics`; these are caught here and logged the same way,
//! with what was running and the panic's message, instead of leaving only the default
//! hook's line on stderr.

use std::any::Any;
use std::future::Future;
use std::panic::AssertUnwindSafe;

use futures_util::FutureExt;

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

/// Awaits `fut`, turning a panic into `None` after logging it as `what` panicking.
pub async fn catch<F: Future>(what: &str, fut: F) -> Option<F::Output> {
    match AssertUnwindSafe(fut).catch_unwind().await {
        Ok(out) => Some(out),
        Err(payload) => {
            tracing::error!(task = what, panic = message(&*payload), "task panicked");
            None
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

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_panicking_task_is_caught_and_its_message_kept() {
        let h = spawn("test task", async { panic!("boom {}", 1) });
        // The task ends normally: the panic did not reach tokio.
        h.await.expect("the task's panic was caught");
        let out = catch("fine", async { 7 }).await;
        assert_eq!(out, Some(7));
        let out = catch("failing", async { panic!("static text") }).await;
        assert_eq!(out, None::<()>);
        let payload = std::panic::catch_unwind(|| panic!("with {}", "format")).unwrap_err();
        assert_eq!(message(&*payload), "with format");
    }
}
