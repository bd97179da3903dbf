//! Liveness and readiness, as the management listener reports them (`GET /health`,
//! `GET /ready`; docs/operations.md). Live: the process answers. Ready: a snapshot is
//! loaded (from the file, from the control plane, or from the copy saved on disk) and the
//! gateway is not draining. A balancer or Kubernetes sends traffic only to a ready
//! gateway; it restarts only one that is not live.
//!
//! Two more facts the request path reads here, each one atomic load on a cold path: with
//! no snapshot loaded an unrouted request answers `503 not_ready` rather than 404 (a
//! missing configuration is not a deleted API), and once the snapshot is stale (older
//! than `--max-snapshot-age` without word from the control plane) a credential is
//! refused with `503 snapshot_stale`.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

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
    stale: AtomicBool,
}

impl Health {
    /// `loaded`: whether a snapshot is already being served.
    pub fn new(loaded: bool) -> Arc<Health> {
        Arc::new(Health {
            loaded: AtomicBool::new(loaded),
            draining: AtomicBool::new(false),
            stale: AtomicBool::new(false),
        })
    }

    /// A snapshot is being served.
    pub fn set_loaded(&self) {
        self.loaded.store(true, Ordering::Release);
    }

    /// Whether a snapshot is being served.
    #[inline]
    pub fn is_loaded(&self) -> bool {
        self.loaded.load(Ordering::Acquire)
    }

    /// The snapshot served is older than the maximum snapshot age (or fresh again).
    pub fn set_stale(&self, stale: bool) {
        self.stale.store(stale, Ordering::Release);
    }

    /// The snapshot can no longer vouch for credentials (see [`Health::set_stale`]).
    #[inline]
    pub fn is_stale(&self) -> bool {
        self.stale.load(Ordering::Relaxed)
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
        } else if !self.is_loaded() {
            Err(NotReady::NoSnapshot)
        } else {
            Ok(())
        }
    }
}

/// Marks `health` stale while the snapshot is older than `max_age`, as `confirmed_at`
/// (when the snapshot source last confirmed it current; `None`: nothing served yet)
/// says; checked a few times per `max_age`, at least once a second. Runs until aborted.
pub fn watch_age(
    health: Arc<Health>,
    max_age: Duration,
    confirmed_at: impl Fn() -> Option<SystemTime> + Send + 'static,
) -> tokio::task::JoinHandle<()> {
    let every = (max_age / 8).clamp(Duration::from_millis(50), Duration::from_secs(1));
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(every);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tick.tick().await;
            let age = confirmed_at().map(|t| t.elapsed().unwrap_or_default());
            let stale = age.is_some_and(|a| a > max_age);
            if stale != health.is_stale() {
                if stale {
                    tracing::warn!(?age, ?max_age, "snapshot older than --max-snapshot-age: \
                        credentials are refused (503 snapshot_stale) until the control plane answers");
                } else {
                    tracing::info!("snapshot confirmed again: credentials accepted");
                }
                health.set_stale(stale);
            }
        }
    })
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
