//! Long-lived policy state that compiled snapshots share and that outlives every swap:
//! the security caches (verified tokens, introspection, remote JWKS) and the throttle
//! counters. A reload compiles against the same runtime, so a swap neither empties a
//! token cache nor resets a quota. One per gateway process.

use std::sync::Arc;

/// Shared by every snapshot a gateway compiles.
pub struct PolicyRuntime {
    pub auth: Arc<turnpike_auth::AuthRuntime>,
    pub throttle: Arc<turnpike_throttle::CounterStore>,
}

impl PolicyRuntime {
    /// Fresh caches and counters on the system clock.
    pub fn new() -> Self {
        PolicyRuntime {
            auth: Arc::new(turnpike_auth::AuthRuntime::new(Arc::new(
                turnpike_auth::SystemClock,
            ))),
            throttle: turnpike_throttle::CounterStore::new(Default::default()),
        }
    }
}

impl Default for PolicyRuntime {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Debug for PolicyRuntime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PolicyRuntime").finish_non_exhaustive()
    }
}
