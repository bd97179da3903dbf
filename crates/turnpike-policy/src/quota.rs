//! What the throttler decided for one request ([`Decision`]), as the request context
//! carries it: the response's `RateLimit-*` headers and the bandwidth quotas to charge
//! read it. Plain data; the throttler that produces it lives in turnpike-throttle.

use std::time::Duration;

/// Index of a rule in the throttler that compiled it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RuleId(u32);

impl RuleId {
    /// The rule at `index` of its throttler; only the throttler's compiler numbers rules.
    #[doc(hidden)]
    #[inline]
    pub const fn new(index: u32) -> Self {
        RuleId(index)
    }

    /// Where the rule is in its throttler's list.
    #[inline]
    pub const fn index(self) -> usize {
        self.0 as usize
    }
}

/// The outcome of one check.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Decision {
    pub allowed: bool,
    /// A billing (non-stopping) quota was exceeded: the request passes, flagged.
    pub flagged: bool,
    /// The rule that refused the request or, when allowed, the one with the least left;
    /// `None` when no limit applies (Unlimited everywhere).
    pub rule: Option<RuleId>,
    pub limit: u64,
    pub remaining: u64,
    /// Until the binding rule's window ends (quota) or its bucket is full again (burst).
    pub reset: Duration,
    /// When refused: how long until a retry can pass.
    pub retry_after: Option<Duration>,
    /// The bandwidth quotas that admitted the request: charge the response's bytes to
    /// them with the throttler's `charge_bytes` (empty when no bandwidth quota applies).
    pub charges: Charges,
}

impl Decision {
    /// No limit applies: allowed, nothing left to count down, nothing to charge.
    pub const UNLIMITED: Decision = Decision {
        allowed: true,
        flagged: false,
        rule: None,
        limit: u64::MAX,
        remaining: u64::MAX,
        reset: Duration::ZERO,
        retry_after: None,
        charges: Charges::NONE,
    };
}

/// At most this many bandwidth quotas apply to one request (resource, API, subscription,
/// application).
const MAX_CHARGES: usize = 4;

/// The bandwidth quotas (counter key and rule) that admitted one request, so that the
/// bytes of its response can be charged to them later. Plain data: `Copy`, no allocation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Charges {
    n: u8,
    items: [(u64, u32); MAX_CHARGES],
}

impl Charges {
    /// Nothing to charge.
    pub const NONE: Charges = Charges {
        n: 0,
        items: [(0, 0); MAX_CHARGES],
    };

    #[inline]
    pub fn is_empty(&self) -> bool {
        self.n == 0
    }

    /// Records that the quota `rule` counting under `key` admitted the request; past
    /// the fourth it is ignored (no request meets more quota levels). Only the
    /// throttler's check records charges.
    #[doc(hidden)]
    #[inline]
    pub fn push(&mut self, key: u64, rule: RuleId) {
        if let Some(slot) = self.items.get_mut(self.n as usize) {
            *slot = (key, rule.0);
            self.n += 1;
        }
    }

    /// Each charged quota: `(counter key, rule)`, in the order they were pushed.
    #[inline]
    pub fn iter(&self) -> impl Iterator<Item = (u64, RuleId)> + '_ {
        self.items[..usize::from(self.n)]
            .iter()
            .map(|&(k, r)| (k, RuleId(r)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn charges_keep_at_most_four_in_order() {
        let mut c = Charges::NONE;
        assert!(c.is_empty());
        for i in 0..6 {
            c.push(u64::from(i) * 10, RuleId::new(i));
        }
        let got: Vec<_> = c.iter().map(|(k, r)| (k, r.index())).collect();
        assert_eq!(got, [(0, 0), (10, 1), (20, 2), (30, 3)]);
        assert_eq!(Decision::UNLIMITED.charges, Charges::default());
    }
}
