//! Time as an injected dependency: Unix time read from a [`Clock`], so caches, token
//! expiry, brute-force windows and rate limits are tested by moving a [`ManualClock`]
//! instead of sleeping. Wall-clock time (not `Instant`) so every gateway of a cluster
//! cuts the same throttle windows and names the same Redis keys.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

const NANOS_PER_SEC: u64 = 1_000_000_000;

/// Nanoseconds since the UNIX epoch (UTC). Good until the year 2554.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct UnixNanos(pub u64);

impl UnixNanos {
    pub const fn from_secs(secs: u64) -> Self {
        UnixNanos(secs * NANOS_PER_SEC)
    }

    pub const fn from_millis(ms: u64) -> Self {
        UnixNanos(ms * 1_000_000)
    }

    pub const fn as_nanos(self) -> u64 {
        self.0
    }

    /// Whole seconds since the epoch (rounded down).
    pub const fn as_secs(self) -> u64 {
        self.0 / NANOS_PER_SEC
    }

    #[must_use]
    pub fn plus(self, d: Duration) -> Self {
        UnixNanos(self.0.saturating_add(saturating_nanos(d)))
    }
}

fn saturating_nanos(d: Duration) -> u64 {
    d.as_nanos().min(u128::from(u64::MAX)) as u64
}

/// A source of Unix time. `Send + Sync` so one clock serves every thread.
pub trait Clock: Send + Sync + 'static {
    fn now(&self) -> UnixNanos;

    /// Unix time in whole seconds: what token expiry and caches compare.
    fn now_secs(&self) -> u64 {
        self.now().as_secs()
    }
}

/// The system's wall clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> UnixNanos {
        // A clock before 1970 is a broken host; treat it as the epoch rather than panic.
        let d = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or(Duration::ZERO);
        UnixNanos(saturating_nanos(d))
    }
}

/// A clock that only moves when told to; clones share the same time.
#[derive(Debug, Clone, Default)]
pub struct ManualClock(Arc<AtomicU64>);

impl ManualClock {
    pub fn new(start: UnixNanos) -> Self {
        ManualClock(Arc::new(AtomicU64::new(start.0)))
    }

    /// A clock at `secs` seconds after the epoch.
    pub fn at_secs(secs: u64) -> Self {
        Self::new(UnixNanos::from_secs(secs))
    }

    pub fn advance(&self, d: Duration) {
        self.0.fetch_add(saturating_nanos(d), Ordering::SeqCst);
    }

    pub fn set(&self, t: UnixNanos) {
        self.0.store(t.0, Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now(&self) -> UnixNanos {
        UnixNanos(self.0.load(Ordering::SeqCst))
    }
}

/// Days since 1970-01-01 as the proleptic Gregorian `(year, month 1-12, day 1-31)`:
/// Howard Hinnant's `civil_from_days`, the one copy the timestamp writers share (access
/// log, analytics, HTTP dates, the control plane's snapshot entries).
pub fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    // In range by construction: day 1..=31, month 1..=12.
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (yoe + era * 400 + i64::from(month <= 2), month, day)
}

/// The inverse of [`civil_from_days`]: days since 1970-01-01 of a proleptic Gregorian
/// date (Howard Hinnant's `days_from_civil`).
pub fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seconds_round_down() {
        let c = ManualClock::new(UnixNanos(1_999_999_999));
        assert_eq!(c.now_secs(), 1);
        c.advance(Duration::from_nanos(1));
        assert_eq!(c.now_secs(), 2);
    }

    #[test]
    fn clones_share_the_time() {
        let a = ManualClock::at_secs(10);
        let b = a.clone();
        a.set(UnixNanos::from_secs(20));
        assert_eq!(b.now_secs(), 20);
    }

    #[test]
    fn civil_dates_match_the_calendar() {
        // Vectors from Python's datetime (days since 1970-01-01).
        for (days, want) in [
            (0, (1970, 1, 1)),
            (-1, (1969, 12, 31)),
            (11_016, (2000, 2, 29)),
            (19_783, (2024, 3, 1)),
            (-25_508, (1900, 3, 1)),
            (157_419, (2400, 12, 31)),
        ] {
            assert_eq!(civil_from_days(days), want, "day {days}");
            let (y, m, d) = want;
            assert_eq!(days_from_civil(y, m.into(), d.into()), days, "{want:?}");
        }
    }
}
