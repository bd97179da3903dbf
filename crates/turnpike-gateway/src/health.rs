//! Liveness and readiness, as the management listener reports them (`GET /health`,
//! `GET /ready`; docs/operations.md). Live: the process answers. Ready: a snapshot is
//! loaded (from the file, from the control plane, or from the copy saved on disk) and the
//! gateway is not draining. A balancer or Kubernetes sends traffic only to a ready
//! gateway; it restarts only one that is not live.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// Why a gateway is not ready.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NotReady {
    /// No snapshot yet: every request would answer 404.
    NoSnapshot,
    /// Shutting down: still serving, but the balancer should stop sending.
    Draining,
}

impl NotReady {
    /// The stable code and the sentence the probe's body carries.
    pub fn describe(self) -> (&'static str, &'static str) {
        match self {
            NotReady::NoSnapshot => (
                "no_snapshot",
                "no snapshot loaded yet (control plane not reached and none saved on disk)",
            ),
            NotReady::Draining => (
                "draining",
                "shutting down: finishing requests, send new ones elsewhere",
            ),
        }
    }
}

/// Shared by the listeners, the snapshot source and the management listener.
#[derive(Debug)]
pub struct Health {
    loaded: AtomicBool,
    draining: AtomicBool,
}

impl Health {
    /// `loaded`: whether a snapshot is already being served.
    pub fn new(loaded: bool) -> Arc<Health> {
        Arc::new(Health {
            loaded: AtomicBool::new(loaded),
            draining: AtomicBool::new(false),
        })
    }

    /// A snapshot is being served.
    pub fn set_loaded(&self) {
        self.loaded.store(true, Ordering::Release);
    }

    /// Shutdown began: readiness fails from now on.
    pub fn begin_drain(&self) {
        self.draining.store(true, Ordering::Release);
    }

    #[inline]
    pub fn is_draining(&self) -> bool {
        self.draining.load(Ordering::Relaxed)
    }

    /// `Ok` when the gateway should receive traffic.
    pub fn ready(&self) -> Result<(), NotReady> {
        if self.is_draining() {
            Err(NotReady::Draining)
        } else if !self.loaded.load(Ordering::Acquire) {
            Err(NotReady::NoSnapshot)
        } else {
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ready_only_when_loaded_and_not_draining() {
        let h = Health::new(false);
        assert_eq!(h.ready(), Err(NotReady::NoSnapshot));
        h.set_loaded();
        assert_eq!(h.ready(), Ok(()));
        h.begin_drain();
        assert_eq!(h.ready(), Err(NotReady::Draining));
    }
}
