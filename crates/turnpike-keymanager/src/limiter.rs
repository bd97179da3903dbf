//! Brute-force protection for client secrets and resource-owner passwords. Each key
//! (a client id, or `user:` + a username) may fail `max_failures` times in a `window`;
//! the next failure locks it for `lockout`. While locked, every attempt, even with the
//! right secret, gets 429 `invalid_client` with `Retry-After`, and no argon2 work is done
//! (so a flood costs the server nothing). A success resets the count. The table is
//! bounded: stale entries are purged, and past the cap new keys go untracked.

use std::collections::HashMap;
use std::sync::Mutex;

#[derive(Debug, Clone, Copy)]
struct Entry {
    window_start: u64,
    failures: u32,
    locked_until: u64,
}

/// Failure counter per key, in Unix seconds from the caller's clock.
pub struct FailureLimiter {
    max_failures: u32,
    window: u64,
    lockout: u64,
    cap: usize,
    entries: Mutex<HashMap<String, Entry>>,
}

impl FailureLimiter {
    pub fn new(max_failures: u32, window: u64, lockout: u64) -> Self {
        Self {
            max_failures: max_failures.max(1),
            window: window.max(1),
            lockout,
            cap: 100_000,
            entries: Mutex::new(HashMap::new()),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Entry>> {
        self.entries.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// `Err(retry_after_secs)` while `key` is locked out.
    pub fn check(&self, key: &str, now: u64) -> Result<(), u64> {
        match self.lock().get(key) {
            Some(e) if e.locked_until > now => Err(e.locked_until - now),
            _ => Ok(()),
        }
    }

    /// Counts a failure; returns `Some(retry_after)` if this failure locked the key.
    pub fn failure(&self, key: &str, now: u64) -> Option<u64> {
        let mut map = self.lock();
        if map.len() >= self.cap && !map.contains_key(key) {
            let window = self.window;
            map.retain(|_, e| e.window_start + window > now || e.locked_until > now);
            if map.len() >= self.cap {
                return None;
            }
        }
        let e = map.entry(key.to_owned()).or_insert(Entry {
            window_start: now,
            failures: 0,
            locked_until: 0,
        });
        if now >= e.window_start + self.window {
            e.window_start = now;
            e.failures = 0;
        }
        e.failures += 1;
        if e.failures >= self.max_failures {
            e.locked_until = now + self.lockout;
            e.window_start = now;
            e.failures = 0;
            return Some(self.lockout);
        }
        None
    }

    pub fn success(&self, key: &str) {
        self.lock().remove(key);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locks_after_max_failures_and_unlocks_after_lockout() {
        let l = FailureLimiter::new(3, 60, 30);
        assert!(l.failure("c", 100).is_none());
        assert!(l.failure("c", 101).is_none());
        assert_eq!(l.failure("c", 102), Some(30));
        assert_eq!(l.check("c", 110), Err(22));
        assert!(l.check("other", 110).is_ok());
        assert!(l.check("c", 132).is_ok());
    }

    #[test]
    fn failures_outside_the_window_do_not_add_up() {
        let l = FailureLimiter::new(2, 60, 30);
        assert!(l.failure("c", 0).is_none());
        assert!(l.failure("c", 61).is_none());
        assert!(l.check("c", 62).is_ok());
    }

    #[test]
    fn success_resets() {
        let l = FailureLimiter::new(2, 60, 30);
        assert!(l.failure("c", 0).is_none());
        l.success("c");
        assert!(l.failure("c", 1).is_none());
        assert!(l.check("c", 1).is_ok());
    }
}
