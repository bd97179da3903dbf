//! Throttling for Turnpike: policy *data* (subscription, application and advanced
//! policies, burst control, WSO2's default tiers), a `Throttler` compiled once per
//! snapshot whose `check` decides a request with lock-free counters and no allocation,
//! the response headers and error body of a decision, and cluster mode, where quotas are
//! leased from Redis by a background task (no Redis round trip on the request path).
//! Tiers and policies may also count an LLM API's tokens (`tokens.rs`: a call's estimate
//! held before it, its real usage charged after).
//!
//! Counters live in a `CounterStore` that outlives snapshots, keyed by stable ids, so a
//! configuration swap never resets a quota. Time comes from an injectable `Clock`. The
//! throttle policy kind (`policy`: `impl PolicyKind` and `impl Policy`) is here too. It
//! depends only on `turnpike-model` (the policy data) and `turnpike-policy` (the kernel);
//! see docs/throttling.md for the model, the accuracy of each algorithm and the
//! cluster's over-admission bound.

mod cluster;
mod compile;
mod counter;
mod facts;
mod headers;
mod ip;
pub mod policy;
mod stats;
mod store;
mod throttler;
mod token_limit;
mod tokens;

pub use cluster::{Cluster, ClusterConfig, ClusterError, FailMode, SyncReport};
pub use facts::{Lookup, NoLookup, RequestFacts};
pub use headers::retry_after_secs;
pub use ip::IpRange;
pub use stats::RuleStats;
pub use store::{CounterStore, StoreConfig};
pub use throttler::Throttler;
pub use tokens::{token_limit_problems, TokenDecision};
pub use turnpike_model::clock::{Clock, ManualClock, SystemClock, UnixNanos};
/// The policy data lives in `turnpike-model` (the file format); re-exported here.
pub use turnpike_model::throttling::{
    AdvancedPolicy, ApplicationThrottle, ApplicationTier, BurstLimit, BurstUnit, Condition,
    ConditionGroup, HeaderStyle, Limit, SubscriptionTier, ThrottleSpec, TimeUnit, TokenLimit,
    UNAUTHENTICATED, UNLIMITED,
};
/// The decision's types moved to turnpike-policy (the request context carries them);
/// kept here until their users import them from there.
pub use turnpike_policy::{Charges, Decision, RuleId, StripedCounter};
