//! Long-lived policy state that every snapshot a gateway compiles shares and that
//! outlives every swap (token caches, throttle counters, GraphQL analysis caches and
//! cost quotas), kept as a type map: a kind asks for its state by type when it is built
//! (`get_or_init`), so two gateways in one process never share it, and a reload on the
//! same runtime keeps it. The map is locked at build time only, never per request.

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use turnpike_model::clock::{Clock, SystemClock};

use crate::offload::{Inline, Offload};

type Entries = HashMap<TypeId, Arc<dyn Any + Send + Sync>>;

/// One per gateway process (or per test): what the policies it compiles keep using.
pub struct Runtime {
    offload: Arc<dyn Offload>,
    clock: Arc<dyn Clock>,
    state: Mutex<Entries>,
}

impl Runtime {
    /// A runtime whose policies run CPU-heavy work through `offload`.
    pub fn new(offload: Arc<dyn Offload>) -> Runtime {
        Runtime {
            offload,
            clock: Arc::new(SystemClock),
            state: Mutex::new(HashMap::new()),
        }
    }

    /// The same runtime on `clock` (tests drive time by hand).
    pub fn with_clock(mut self, clock: Arc<dyn Clock>) -> Runtime {
        self.clock = clock;
        self
    }

    /// The time every policy reads (the system clock unless [`with_clock`](Self::with_clock)).
    pub fn clock(&self) -> &Arc<dyn Clock> {
        &self.clock
    }

    /// Where policies send CPU-heavy work.
    pub fn offload(&self) -> &Arc<dyn Offload> {
        &self.offload
    }

    /// The state of type `T`, if some build stored it.
    pub fn get<T: Any + Send + Sync>(&self) -> Option<Arc<T>> {
        let state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        state
            .get(&TypeId::of::<T>())
            .cloned()
            .and_then(|s| s.downcast::<T>().ok())
    }

    /// The state of type `T`, created by `init` the first time it is asked for.
    pub fn get_or_init<T: Any + Send + Sync>(&self, init: impl FnOnce() -> T) -> Arc<T> {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        let found = state
            .get(&TypeId::of::<T>())
            .cloned()
            .and_then(|s| s.downcast::<T>().ok());
        if let Some(found) = found {
            return found;
        }
        let fresh = Arc::new(init());
        state.insert(TypeId::of::<T>(), fresh.clone());
        fresh
    }
}

impl Default for Runtime {
    /// Work runs inline: for tests and tools that serve no traffic.
    fn default() -> Runtime {
        Runtime::new(Arc::new(Inline))
    }
}

impl std::fmt::Debug for Runtime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Runtime").finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn get_or_init_creates_once_and_runtimes_do_not_share() {
        struct Count(u32);
        let rt = Runtime::default();
        assert!(rt.get::<Count>().is_none());
        let first = rt.get_or_init(|| Count(1));
        let again = rt.get_or_init(|| Count(2));
        assert!(Arc::ptr_eq(&first, &again), "the first value is kept");
        assert_eq!(rt.get::<Count>().map(|c| c.0), Some(1));
        let other = Runtime::default();
        assert_eq!(
            other.get_or_init(|| Count(3)).0,
            3,
            "a second runtime has its own"
        );
    }
}
