//! Time for the limiters: a wall-clock instant in nanoseconds since the UNIX epoch (so
//! that every gateway of a cluster cuts the same windows and names the same Redis keys),
//! and the `Clock` trait that lets tests drive time by hand instead of sleeping.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Nanoseconds since the UNIX epoch (UTC). Good until the year 2554.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct UnixNanos(pub u64);

impl UnixNanos {
    pub const fn from_secs(secs: u64) -> Self {
        UnixNanos(secs * 1_000_000_000)
    }

    pub const fn from_millis(ms: u64) -> Self {
        UnixNanos(ms * 1_000_000)
    }

    pub const fn as_nanos(self) -> u64 {
        self.0
    }

    #[must_use]
    pub fn plus(self, d: Duration) -> Self {
        UnixNanos(
            self.0
                .saturating_add(d.as_nanos().min(u64::MAX as u128) as u64),
        )
    }
}

/// Where the limiters read the time. `Send + Sync` so one clock serves every thread.
pub trait Clock: Send + Sync + 'static {
    fn now(&self) -> UnixNanos;
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
        UnixNanos(d.as_nanos().min(u64::MAX as u128) as u64)
    }
}

/// A clock that only moves when told to; clones share the same time.
#[derive(Debug, Clone, Default)]
pub struct ManualClock(Arc<AtomicU64>);

impl ManualClock {
    pub fn new(start: UnixNanos) -> Self {
        ManualClock(Arc::new(AtomicU64::new(start.0)))
    }

    pub fn advance(&self, d: Duration) {
        let n = d.as_nanos().min(u64::MAX as u128) as u64;
        self.0.fetch_add(n, Ordering::SeqCst);
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
