//! A group of controller tasks that stop together, as kube-controller-manager's
//! controllers share one context that is cancelled when leadership is lost.

use std::future::Future;

use tokio::sync::watch;

/// Where controller tasks run: every task spawned through it (and through the tasks it
/// spawns, which are handed the same scope) ends when the scope stops.
#[derive(Clone, Debug)]
pub struct Scope {
    stopped: watch::Receiver<bool>,
}

/// Stops its [`Scope`] when told to or when dropped.
#[derive(Debug)]
pub struct Stopper(watch::Sender<bool>);

impl Scope {
    /// A scope and the handle that stops it.
    pub fn new() -> (Scope, Stopper) {
        let (tx, rx) = watch::channel(false);
        (Scope { stopped: rx }, Stopper(tx))
    }

    /// A scope that never stops: controllers that run for the life of the process.
    pub fn forever() -> Scope {
        // The sender is dropped without sending `true` (a `Stopper` would send it), so
        // `stopped` never resolves.
        let (_, stopped) = watch::channel(false);
        Scope { stopped }
    }

    /// Whether the scope has stopped.
    pub fn is_stopped(&self) -> bool {
        *self.stopped.borrow()
    }

    /// Resolves when the scope stops (never for [`Scope::forever`]).
    pub async fn stopped(&self) {
        let mut rx = self.stopped.clone();
        if rx.wait_for(|s| *s).await.is_err() {
            std::future::pending::<()>().await;
        }
    }

    /// Runs `fut` as a background task (panics logged, as [`crate::panics::spawn`]) until
    /// it ends or the scope stops.
    pub fn spawn<F>(&self, what: &'static str, fut: F) -> tokio::task::JoinHandle<()>
    where
        F: Future<Output = ()> + Send + 'static,
    {
        let scope = self.clone();
        crate::panics::spawn(what, async move {
            tokio::select! {
                () = fut => {}
                () = scope.stopped() => {}
            }
        })
    }
}

impl Stopper {
    /// Stops the scope's tasks (at their next await).
    pub fn stop(&self) {
        self.0.send_replace(true);
    }
}

impl Drop for Stopper {
    fn drop(&mut self) {
        self.stop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[tokio::test]
    async fn tasks_of_a_scope_end_when_its_stopper_is_dropped() {
        let (scope, stopper) = Scope::new();
        let inner_scope = scope.clone();
        let outer = scope.spawn("outer", async move {
            inner_scope
                .spawn("inner", std::future::pending())
                .await
                .unwrap();
        });
        drop(stopper);
        tokio::time::timeout(Duration::from_secs(5), outer)
            .await
            .expect("the scope's tasks ended")
            .unwrap();
        assert!(scope.is_stopped());
    }

    #[tokio::test]
    async fn a_forever_scope_does_not_stop() {
        let scope = Scope::forever();
        let waited = tokio::time::timeout(Duration::from_millis(50), scope.stopped()).await;
        assert!(waited.is_err() && !scope.is_stopped());
    }
}
