//! A bounded cache of a parent API server's answers, each kept for its own time to live
//! (TokenReviews for `--authentication-token-webhook-cache-ttl`, SubjectAccessReviews
//! for the authorized or unauthorized TTL), so a busy delegated server does not ask its
//! parent about every request.

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Answers by key, each until its expiry; at most `capacity` of them. When full, expired
/// entries go first, then the one closest to expiry (upstream uses an LRU; what matters
/// is that memory stays bounded and fresh answers stay).
pub struct TtlCache<K, V> {
    capacity: usize,
    entries: Mutex<HashMap<K, (V, Instant)>>,
}

impl<K: Eq + Hash + Clone, V: Clone> TtlCache<K, V> {
    /// An empty cache holding at most `capacity` answers.
    pub fn new(capacity: usize) -> Self {
        TtlCache {
            capacity: capacity.max(1),
            entries: Mutex::new(HashMap::new()),
        }
    }

    /// The answer for `key`, if it has not expired at `now`.
    pub fn get(&self, key: &K, now: Instant) -> Option<V> {
        let mut entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        match entries.get(key) {
            Some((value, expires)) if *expires > now => Some(value.clone()),
            Some(_) => {
                entries.remove(key);
                None
            }
            None => None,
        }
    }

    /// Keeps `value` for `ttl` from `now`; a zero TTL keeps nothing.
    pub fn insert(&self, key: K, value: V, ttl: Duration, now: Instant) {
        if ttl.is_zero() {
            return;
        }
        let mut entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        if entries.len() >= self.capacity && !entries.contains_key(&key) {
            entries.retain(|_, (_, expires)| *expires > now);
            if entries.len() >= self.capacity {
                let soonest = entries
                    .iter()
                    .min_by_key(|(_, (_, expires))| *expires)
                    .map(|(k, _)| k.clone());
                if let Some(k) = soonest {
                    entries.remove(&k);
                }
            }
        }
        entries.insert(key, (value, now + ttl));
    }

    /// How many answers are held (expired ones included until looked at or evicted).
    pub fn len(&self) -> usize {
        self.entries.lock().unwrap_or_else(|e| e.into_inner()).len()
    }

    /// Whether no answer is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECOND: Duration = Duration::from_secs(1);

    #[test]
    fn an_answer_is_served_until_its_ttl_passes() {
        let cache = TtlCache::new(8);
        let t0 = Instant::now();
        cache.insert("alice", true, 10 * SECOND, t0);
        assert_eq!(cache.get(&"alice", t0 + 9 * SECOND), Some(true));
        assert_eq!(cache.get(&"alice", t0 + 10 * SECOND), None);
        assert!(
            cache.is_empty(),
            "an expired answer is dropped when looked at"
        );
    }

    #[test]
    fn each_answer_keeps_its_own_ttl_and_a_zero_ttl_caches_nothing() {
        let cache = TtlCache::new(8);
        let t0 = Instant::now();
        cache.insert("allowed", true, 10 * SECOND, t0);
        cache.insert("denied", false, SECOND, t0);
        cache.insert("uncached", false, Duration::ZERO, t0);
        let later = t0 + 2 * SECOND;
        assert_eq!(cache.get(&"allowed", later), Some(true));
        assert_eq!(cache.get(&"denied", later), None);
        assert_eq!(cache.get(&"uncached", t0), None);
    }

    #[test]
    fn a_full_cache_evicts_expired_answers_then_the_soonest_to_expire() {
        let cache = TtlCache::new(2);
        let t0 = Instant::now();
        cache.insert("a", 1, SECOND, t0);
        cache.insert("b", 2, 10 * SECOND, t0);
        // "a" has expired by now: it makes room.
        cache.insert("c", 3, 10 * SECOND, t0 + 2 * SECOND);
        assert_eq!(cache.len(), 2);
        assert_eq!(cache.get(&"b", t0 + 2 * SECOND), Some(2));
        // Nothing expired: "b" (expiring first) goes.
        cache.insert("d", 4, 20 * SECOND, t0 + 3 * SECOND);
        assert_eq!(cache.len(), 2);
        assert_eq!(cache.get(&"b", t0 + 3 * SECOND), None);
        assert_eq!(cache.get(&"c", t0 + 3 * SECOND), Some(3));
        assert_eq!(cache.get(&"d", t0 + 3 * SECOND), Some(4));
    }
}
