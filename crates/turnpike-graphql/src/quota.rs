//! Cost quotas: a budget of complexity per fixed window (aligned to the UNIX epoch, so
//! every gateway cuts the same windows), debited by each admitted query's complexity.
//! Lock-free (a concurrent map of atomics); meant to live for the process, outside
//! snapshots, so a swap does not reset a budget ([`CostQuotas::shared`]).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use crate::spec::CostQuota;

#[derive(Debug, Default)]
struct Window {
    start: AtomicU64,
    used: AtomicU64,
}

/// Why a debit was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OverQuota {
    /// Seconds until the window ends.
    pub reset_secs: u64,
}

/// The budgets in use, by key (API and caller).
#[derive(Debug, Default)]
pub struct CostQuotas {
    windows: papaya::HashMap<Box<str>, Arc<Window>>,
}

impl CostQuotas {
    /// Debits `cost` from `key`'s budget at `now` (UNIX seconds): the budget left, or
    /// the refusal (a refused query debits nothing).
    pub fn debit(
        &self,
        key: &str,
        cost: u64,
        quota: CostQuota,
        now: u64,
    ) -> Result<u64, OverQuota> {
        let window = quota.window_secs.max(1);
        let start = now - now % window;
        let w = {
            let map = self.windows.pin();
            match map.get(key) {
                Some(w) => w.clone(),
                None => map.get_or_insert_with(key.into(), Arc::default).clone(),
            }
        };
        let seen = w.start.load(Ordering::Acquire);
        if seen != start
            && w.start
                .compare_exchange(seen, start, Ordering::AcqRel, Ordering::Acquire)
                .is_ok()
        {
            w.used.store(0, Ordering::Release);
        }
        let used = w
            .used
            .fetch_add(cost, Ordering::AcqRel)
            .saturating_add(cost);
        if used > quota.cost {
            w.used.fetch_sub(cost, Ordering::AcqRel);
            return Err(OverQuota {
                reset_secs: start + window - now,
            });
        }
        Ok(quota.cost - used)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_budget_is_spent_refused_then_renewed_by_the_next_window() {
        let q = CostQuotas::default();
        let quota = CostQuota {
            cost: 100,
            window_secs: 60,
        };
        assert_eq!(q.debit("a", 60, quota, 120), Ok(40));
        assert_eq!(
            q.debit("a", 50, quota, 130),
            Err(OverQuota { reset_secs: 50 })
        );
        assert_eq!(
            q.debit("a", 40, quota, 130),
            Ok(0),
            "the refusal debited nothing"
        );
        assert_eq!(q.debit("b", 100, quota, 130), Ok(0), "keys are separate");
        assert_eq!(q.debit("a", 60, quota, 180), Ok(40), "a new window");
    }
}
