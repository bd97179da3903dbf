//! Decision counters per rule (allowed, throttled, flagged), as plain atomics a metrics
//! exporter reads (each a [`StripedCounter`], so two cores admitting on the same hot
//! policy do not fight over one line).

use turnpike_policy::StripedCounter;

/// What one rule decided. A request counts once per rule that saw it: `allowed` when the
/// rule admitted it, `throttled` when the rule refused it, `flagged` when a billing
/// (non-stopping) quota let it through over the limit.
#[derive(Debug, Default)]
pub struct RuleStats {
    pub allowed: StripedCounter,
    pub throttled: StripedCounter,
    pub flagged: StripedCounter,
}
