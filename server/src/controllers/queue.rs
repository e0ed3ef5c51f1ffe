//! The work queue controllers share: a key is examined by one worker at a time, and a
//! change arriving meanwhile has it examined again.

use std::collections::{HashSet, VecDeque};
use std::sync::Mutex;

use tokio::sync::Notify;

/// A queue of keys (uids, namespace names) to examine, as client-go's workqueue: a uid is queued at most once,
/// and one added while it is being examined is examined again afterwards (never by two
/// workers at once).
#[derive(Default)]
pub struct WorkQueue {
    state: Mutex<QueueState>,
    ready: Notify,
}

#[derive(Default)]
struct QueueState {
    order: VecDeque<String>,
    queued: HashSet<String>,
    active: HashSet<String>,
    again: HashSet<String>,
}

impl WorkQueue {
    fn lock(&self) -> std::sync::MutexGuard<'_, QueueState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Queues `uid` unless it is queued already.
    pub fn add(&self, uid: String) {
        let mut s = self.lock();
        if s.active.contains(&uid) {
            s.again.insert(uid);
        } else if s.queued.insert(uid.clone()) {
            s.order.push_back(uid);
            drop(s);
            self.ready.notify_one();
        }
    }

    /// The next key to examine, waiting for one.
    pub async fn take(&self) -> String {
        loop {
            let ready = self.ready.notified();
            tokio::pin!(ready);
            ready.as_mut().enable();
            {
                let mut s = self.lock();
                if let Some(uid) = s.order.pop_front() {
                    s.queued.remove(&uid);
                    s.active.insert(uid.clone());
                    if !s.order.is_empty() {
                        // Wake another worker for the rest.
                        self.ready.notify_one();
                    }
                    return uid;
                }
            }
            ready.await;
        }
    }

    /// Marks `uid` examined, queueing it again if it was added meanwhile.
    pub fn done(&self, uid: &str) {
        let mut s = self.lock();
        s.active.remove(uid);
        if s.again.remove(uid) {
            drop(s);
            self.add(uid.to_string());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_queue_holds_a_uid_once_and_requeues_one_added_while_active() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        rt.block_on(async {
            let q = WorkQueue::default();
            q.add("a".into());
            q.add("a".into());
            q.add("b".into());
            assert_eq!(q.take().await, "a");
            q.add("a".into());
            assert_eq!(q.take().await, "b");
            q.done("b");
            assert!(
                q.lock().order.is_empty(),
                "a is active, not queued again yet"
            );
            q.done("a");
            assert_eq!(q.take().await, "a");
        });
    }
}
