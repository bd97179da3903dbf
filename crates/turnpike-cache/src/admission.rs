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
//! - The mode never outlives its burst: [`BOUND`] after the mode was last confirmed the
//!   store stores every miss again. A task watches that (one per selective store, gone
//!   with the mode: [`Admission::expiry`]), so a miss reads one flag and no clock; the
//!   clock is read once per window. Low traffic never switches: the cost only matters
//!   under load, and a quiet gateway keeps issue 27's contract (a key's first GET
//!   stores, its second is a `HIT`).

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::time::Duration;

use turnpike_model::clock::Clock;

/// Lookups per window (a power of two: its share thresholds are shifts).
pub(crate) const WINDOW: u32 = 4096;
/// Sets the lookups per window for every store the process makes: for benchmarks that
/// cannot run a window within [`BOUND`] (under valgrind a gateway serves a few hundred
/// requests a second; bench/cache-callgrind.sh's `auto` arm sets 64).
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
    /// A task watches the selective mode's time bound ([`Admission::expiry`]).
    watched: AtomicBool,
}

/// What counting a lookup asks of its caller.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Watch {
    Nothing,
    /// The store went selective and nothing watches its time bound: start a watcher
    /// that calls [`Admission::expiry`] until it answers `None` (or, if none can be
    /// started, call [`Admission::end`]).
    Start,
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
            watched: AtomicBool::new(false),
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
    pub(crate) fn count(&self, hit: bool, clock: &dyn Clock) -> Watch {
        if hit {
            self.hits.fetch_add(1, Ordering::Relaxed);
        }
        let n = self.lookups.fetch_add(1, Ordering::Relaxed) + 1;
        if n < self.window.load(Ordering::Relaxed) {
            return Watch::Nothing;
        }
        self.close_window(clock.now().as_nanos())
    }

    /// The window's verdict. Racing lookups may be lost across the reset: the shares
    /// need not be exact.
    #[cold]
    fn close_window(&self, now: u64) -> Watch {
        self.lookups.store(0, Ordering::Relaxed);
        let hits = self.hits.swap(0, Ordering::Relaxed);
        let began = self.began.swap(now, Ordering::Relaxed);
        let window = self.window.load(Ordering::Relaxed);
        let quick = began != 0 && now.saturating_sub(began) < BOUND;
        let selective = self.selective.load(Ordering::SeqCst);
        let verdict = match selective {
            false => quick && hits < window >> 6,
            true => quick && hits < window >> 5,
        };
        if verdict {
            self.confirmed.store(now, Ordering::SeqCst);
        }
        if verdict != selective {
            self.selective.store(verdict, Ordering::SeqCst);
        }
        match verdict && !self.watched.swap(true, Ordering::SeqCst) {
            true => Watch::Start,
            false => Watch::Nothing,
        }
    }

    /// Whether a miss now stores only a key asked before.
    #[inline]
    pub(crate) fn selective(&self) -> bool {
        self.selective.load(Ordering::Relaxed)
    }

    /// The watcher's question at `now`: how long until the selective mode may end
    /// (`Some`: ask again then), or `None` once it has ended (unconfirmed for
    /// [`BOUND`], it is ended here): the watcher stops. A window that confirms the mode
    /// while the watcher stops finds it still watched and starts none, so the watcher
    /// looks again instead of stopping.
    pub(crate) fn expiry(&self, now: u64) -> Option<Duration> {
        loop {
            if self.selective.load(Ordering::SeqCst) {
                let age = now.saturating_sub(self.confirmed.load(Ordering::SeqCst));
                if age <= BOUND {
                    return Some(Duration::from_nanos(BOUND - age + 1_000_000));
                }
                self.selective.store(false, Ordering::SeqCst);
            }
            self.watched.store(false, Ordering::SeqCst);
            let confirmed_since = self.selective.load(Ordering::SeqCst);
            if !confirmed_since || self.watched.swap(true, Ordering::SeqCst) {
                return None;
            }
        }
    }

    /// Ends the selective mode (no watcher could be started).
    pub(crate) fn end(&self) {
        self.selective.store(false, Ordering::SeqCst);
        self.watched.store(false, Ordering::SeqCst);
    }

    /// Counts a miss not stored because the store was selective.
    pub(crate) fn unadmitted(&self) {
        self.unadmitted.fetch_add(1, Ordering::Relaxed);
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

    /// A window of lookups, `hits` of them hits: whether a watcher was asked for.
    fn window(a: &Admission, clock: &ManualClock, hits: u32) -> Watch {
        let mut watch = Watch::Nothing;
        for i in 0..a.window.load(Ordering::Relaxed) {
            if a.count(i < hits, clock) == Watch::Start {
                watch = Watch::Start;
            }
        }
        watch
    }

    fn at_1000() -> ManualClock {
        ManualClock::new(UnixNanos::from_secs(1000))
    }

    #[test]
    fn a_quick_window_without_hits_makes_the_store_selective() {
        let (a, clock) = (Admission::default(), at_1000());
        assert_eq!(window(&a, &clock, 0), Watch::Nothing);
        assert!(!a.selective(), "the first window only starts the clock");
        assert_eq!(window(&a, &clock, 0), Watch::Start);
        assert!(a.selective());
        assert_eq!(window(&a, &clock, 0), Watch::Nothing, "already watched");
        assert!(a.selective());
    }

    #[test]
    fn hits_keep_it_storing_and_bring_it_back_with_hysteresis() {
        let (a, clock) = (Admission::default(), at_1000());
        window(&a, &clock, 0);
        window(&a, &clock, WINDOW / 64);
        assert!(!a.selective(), "1/64 hits: stays storing");
        window(&a, &clock, 0);
        assert!(a.selective());
        window(&a, &clock, WINDOW / 32 - 1);
        assert!(a.selective(), "below 1/32: confirmed");
        window(&a, &clock, WINDOW / 32);
        assert!(!a.selective(), "1/32 hits: storing again");
    }

    #[test]
    fn a_slow_window_never_switches_and_the_mode_ends_with_its_burst() {
        let (a, clock) = (Admission::default(), at_1000());
        window(&a, &clock, 0);
        clock.advance(Duration::from_millis(1100));
        window(&a, &clock, 0);
        assert!(!a.selective(), "a slow window");
        assert_eq!(window(&a, &clock, 0), Watch::Start);
        assert!(a.selective());
        // The watcher asks again when the mode may end.
        clock.advance(Duration::from_millis(400));
        let wait = a.expiry(clock.now().as_nanos()).expect("still selective");
        assert_eq!(wait, Duration::from_millis(601));
        clock.advance(wait);
        assert_eq!(
            a.expiry(clock.now().as_nanos()),
            None,
            "unconfirmed for 1 s"
        );
        assert!(!a.selective());
        // The next burst asks for a watcher again.
        window(&a, &clock, 0);
        assert_eq!(window(&a, &clock, 0), Watch::Start);
    }

    #[test]
    fn a_window_confirming_the_mode_as_the_watcher_stops_keeps_it_watched() {
        let (a, clock) = (Admission::default(), at_1000());
        window(&a, &clock, 0);
        assert_eq!(window(&a, &clock, 0), Watch::Start);
        // The mode ended, then a quick window confirmed it again before the watcher's
        // flag was down: that window saw it watched and started no watcher.
        a.selective.store(false, Ordering::SeqCst);
        a.selective.store(true, Ordering::SeqCst);
        a.confirmed.store(clock.now().as_nanos(), Ordering::SeqCst);
        assert!(a.expiry(clock.now().as_nanos()).is_some(), "keeps watching");
        a.end();
        assert!(!a.selective());
    }
}
