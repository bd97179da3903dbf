//! Rate-limited logging for events that come in floods (an upstream down under load, a
//! connection cap reached, every request refused for the same internal reason): the
//! first occurrence is logged, then at most one line per period, saying how many were
//! left out. Lock-free: two atomics per call site.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

fn epoch() -> Instant {
    static START: OnceLock<Instant> = OnceLock::new();
    *START.get_or_init(Instant::now)
}

/// One call site's limiter: `static LIMIT: LogLimit = LogLimit::new(PERIOD);`.
#[derive(Debug)]
pub struct LogLimit {
    period_ms: u64,
    /// Milliseconds since [`epoch`] + 1 of the last line logged (0: never).
    last: AtomicU64,
    suppressed: AtomicU64,
}

impl LogLimit {
    pub const fn new(period: Duration) -> LogLimit {
        LogLimit {
            period_ms: period.as_millis() as u64,
            last: AtomicU64::new(0),
            suppressed: AtomicU64::new(0),
        }
    }

    /// `Some(n)` when this occurrence should be logged, `n` being how many were left out
    /// since the last line; `None` when it should be left out (and is counted).
    pub fn allow(&self) -> Option<u64> {
        let now = epoch().elapsed().as_millis() as u64 + 1;
        let last = self.last.load(Ordering::Relaxed);
        if last != 0 && now.saturating_sub(last) < self.period_ms {
            self.suppressed.fetch_add(1, Ordering::Relaxed);
            return None;
        }
        match self
            .last
            .compare_exchange(last, now, Ordering::AcqRel, Ordering::Relaxed)
        {
            Ok(_) => Some(self.suppressed.swap(0, Ordering::AcqRel)),
            Err(_) => {
                self.suppressed.fetch_add(1, Ordering::Relaxed);
                None
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn logs_the_first_then_counts_what_it_leaves_out() {
        let l = LogLimit::new(Duration::from_secs(3600));
        assert_eq!(l.allow(), Some(0));
        for _ in 0..5 {
            assert_eq!(l.allow(), None);
        }
        assert_eq!(l.suppressed.load(Ordering::Relaxed), 5);
        let every = LogLimit::new(Duration::ZERO);
        assert_eq!(every.allow(), Some(0));
        assert_eq!(every.allow(), Some(0));
    }
}
