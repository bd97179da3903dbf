//! Long-lived policy state that compiled snapshots share and that outlives every swap:
//! the security caches (verified tokens, introspection, remote JWKS), the throttle
//! counters, and the kernel [`Runtime`] (every other kind's state by type, and where
//! CPU-heavy work runs). A reload compiles against the same runtime, so a swap neither
//! empties a token cache nor resets a quota. One per gateway process.

use std::sync::Arc;

use turnpike_policy::{Inline, Offload, Runtime};

/// Shared by every snapshot a gateway compiles.
pub struct PolicyRuntime {
    pub auth: Arc<turnpike_auth::AuthRuntime>,
    pub throttle: Arc<turnpike_throttle::CounterStore>,
    kernel: Runtime,
}

impl PolicyRuntime {
    /// Fresh caches and counters on the system clock; CPU-heavy work runs inline (tests
    /// and tools; a serving gateway passes its offload to [`with_offload`](Self::with_offload)).
    pub fn new() -> Self {
        Self::with_offload(Arc::new(Inline))
    }

    /// Fresh caches and counters whose policies send CPU-heavy work to `offload`.
    pub fn with_offload(offload: Arc<dyn Offload>) -> Self {
        let kernel = Runtime::new(offload);
        PolicyRuntime {
            auth: Arc::new(turnpike_auth::AuthRuntime::new(Arc::new(
                turnpike_auth::SystemClock,
            ))),
            // The same store the throttle kind builds on (kept in the kernel runtime).
            throttle: turnpike_throttle::policy::counters(&kernel),
            kernel,
        }
    }

    /// The same, with the kinds' kernel clock replaced (tests that move time: the
    /// response cache's freshness).
    pub fn with_clock(mut self, clock: Arc<dyn turnpike_model::clock::Clock>) -> Self {
        self.kernel = self.kernel.with_clock(clock);
        self
    }

    /// The kernel runtime every kind's build reads (its offload, its state by type).
    pub fn kernel(&self) -> &Runtime {
        &self.kernel
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
