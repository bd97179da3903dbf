//! Adaptive admission (`admission: adaptive`, the default): which misses store their
//! answer. A store whose answers are not asked again (every request a new key: search
//! strings, ids walked once) pays a storing miss's full cost for nothing, and evicts
//! entries that were earning hits. TinyLFU (Caffeine, moka) admits a key only once
//! seen before (its doorkeeper); here that rule applies only while it pays:
//!
//! - Each lookup of the API's store is counted, and each hit (relaxed atomics: one add
//!   per lookup, one more per hit). At the end of each window of [`WINDOW`] lookups,
//!   if the window earned fewer than 1/64 hits and took under [`BOUND`] of wall time,
//!   the store goes **selective**: a miss stores only a key asked before (the `Uses`
//!   table with n = 2), the others go upstream unstored (`X-Cache: MISS`).
//! - A window with at least 1/32 hits (hysteresis), or one slower than [`BOUND`], returns
//!   it to storing every miss; a quicker one with fewer hits confirms the mode.
//! - The mode never outlives its burst: a miss more than [`BOUND`] after the mode was
//!   last confirmed returns the store to storing every miss (the clock is read only on
//!   a miss while selective, and once per window). Low traffic never switches: the cost
//!   only matters under load, and a quiet gateway keeps issue 27's contract (a key's
//!   first GET stores, its second is a `HIT`).

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};

use turnpike_model::clock::Clock;

/// Lookups per window (a power of two: its share thresholds are shifts).
pub(crate) const WINDOW: u32 = 4096;
/// Sets the lookups per window for every store the process makes: for benchmarks that
/// cannot run a window within [`BOUND`] (under valgrind a gateway serves a few hundred
/// requests a second; bench/cache-callgrind.sh's `adaptive` arm sets 64).
const WINDOW_ENV: &str = "TURNPIKE_CACHE_ADMISSION_WINDOW";
/// The longest a window may take and still switch the store, and the longest the
/// selective mode lasts without a window confirming it (nanoseconds: one second).
const BOUND: u64 = 1_000_000_000;

/// One store's admission state.
pub(crate) struct Admission {
    lookups: AtomicU32,
    hits: AtomicU32,
    /// Lookups per window (tests make it small).
    window: AtomicU32,
    /// When the current window began (Unix nanoseconds; 0: not yet known).
    began: AtomicU64,
    selective: AtomicBool,
    /// When the selective mode was last entered or confirmed (Unix nanoseconds).
    confirmed: AtomicU64,
    /// Misses not stored because the store was selective.
    unadmitted: AtomicU64,
}

impl Default for Admission {
    fn default() -> Admission {
        Admission {
            lookups: AtomicU32::new(0),
            hits: AtomicU32::new(0),
            window: AtomicU32::new(window_from_env()),
            began: AtomicU64::new(0),
            selective: AtomicBool::new(false),
            confirmed: AtomicU64::new(0),
            unadmitted: AtomicU64::new(0),
        }
    }
}

/// [`WINDOW`], or what [`WINDOW_ENV`] says (read when a store is made, not per request).
fn window_from_env() -> u32 {
    std::env::var(WINDOW_ENV)
        .ok()
        .and_then(|v| v.trim().parse::<u32>().ok())
        .filter(|w| *w > 0)
        .unwrap_or(WINDOW)
}

impl Admission {
    /// Counts one lookup (`hit`: it was answered from the store), closing the window
    /// at its last lookup.
    #[inline]
    pub(crate) fn count(&self, hit: bool, clock: &dyn Clock) {
        if hit {
            self.hits.fetch_add(1, Ordering::Relaxed);
        }
        let n = self.lookups.fetch_add(1, Ordering::Relaxed) + 1;
        if n >= self.window.load(Ordering::Relaxed) {
            self.close_window(clock.now().as_nanos());
        }
    }

    /// The window's verdict. Racing lookups may be lost across the reset: the shares
    /// need not be exact.
    #[cold]
    fn close_window(&self, now: u64) {
        self.lookups.store(0, Ordering::Relaxed);
        let hits = self.hits.swap(0, Ordering::Relaxed);
        let began = self.began.swap(now, Ordering::Relaxed);
        let window = self.window.load(Ordering::Relaxed);
        let quick = began != 0 && now.saturating_sub(began) < BOUND;
        let selective = self.selective.load(Ordering::Relaxed);
        let verdict = match selective {
            false => quick && hits < window >> 6,
            true => quick && hits < window >> 5,
        };
        if verdict {
            self.confirmed.store(now, Ordering::Relaxed);
        }
        if verdict != selective {
            self.selective.store(verdict, Ordering::Relaxed);
        }
    }

    /// Whether a miss now stores only a key asked before: the store is selective and
    /// was confirmed within [`BOUND`] (else it stores every miss again from now on).
    #[inline]
    pub(crate) fn selective(&self, clock: &dyn Clock) -> bool {
        if !self.selective.load(Ordering::Relaxed) {
            return false;
        }
        let now = clock.now().as_nanos();
        if now.saturating_sub(self.confirmed.load(Ordering::Relaxed)) <= BOUND {
            return true;
        }
        self.selective.store(false, Ordering::Relaxed);
        false
    }

    /// Counts a miss not stored because the store was selective.
    pub(crate) fn unadmitted(&self) {
        self.unadmitted.fetch_add(1, Ordering::Relaxed);
    }

    /// Whether the store is selective now (what `/metrics` shows; the mode's time
    /// bound is applied by the next miss).
    pub(crate) fn is_selective(&self) -> bool {
        self.selective.load(Ordering::Relaxed)
    }

    pub(crate) fn unadmitted_total(&self) -> u64 {
        self.unadmitted.load(Ordering::Relaxed)
    }

    /// Sets the lookups per window and starts a new one (tests: a burst of a few dozen
    /// requests then switches the store).
    pub(crate) fn set_window(&self, lookups: u32) {
        self.window.store(lookups.max(1), Ordering::Relaxed);
        self.lookups.store(0, Ordering::Relaxed);
        self.hits.store(0, Ordering::Relaxed);
        self.began.store(0, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use turnpike_model::clock::{ManualClock, UnixNanos};

    fn window(a: &Admission, clock: &ManualClock, hits: u32) {
        for i in 0..a.window.load(Ordering::Relaxed) {
            a.count(i < hits, clock);
        }
    }

    fn at_1000() -> ManualClock {
        ManualClock::new(UnixNanos::from_secs(1000))
    }

    #[test]
    fn a_quick_window_without_hits_makes_the_store_selective() {
        let (a, clock) = (Admission::default(), at_1000());
        window(&a, &clock, 0);
        assert!(
            !a.selective(&clock),
            "the first window only starts the clock"
        );
        window(&a, &clock, 0);
        assert!(a.selective(&clock));
    }

    #[test]
    fn hits_keep_it_storing_and_bring_it_back_with_hysteresis() {
        let (a, clock) = (Admission::default(), at_1000());
        window(&a, &clock, 0);
        window(&a, &clock, WINDOW / 64);
        assert!(!a.selective(&clock), "1/64 hits: stays storing");
        window(&a, &clock, 0);
        assert!(a.selective(&clock));
        window(&a, &clock, WINDOW / 32 - 1);
        assert!(a.selective(&clock), "below 1/32: confirmed");
        window(&a, &clock, WINDOW / 32);
        assert!(!a.selective(&clock), "1/32 hits: storing again");
    }

    #[test]
    fn a_slow_window_never_switches_and_the_mode_ends_with_its_burst() {
        let (a, clock) = (Admission::default(), at_1000());
        window(&a, &clock, 0);
        clock.advance(std::time::Duration::from_millis(1100));
        window(&a, &clock, 0);
        assert!(!a.selective(&clock), "a slow window");
        window(&a, &clock, 0);
        assert!(a.selective(&clock));
        clock.advance(std::time::Duration::from_millis(1001));
        assert!(!a.selective(&clock), "unconfirmed for over a second");
        assert!(!a.is_selective());
    }
}
