//! Decision counters per rule (allowed, throttled, flagged), as plain atomics a metrics
//! exporter reads. Each counter is striped over a few cache lines so that two cores
//! admitting on the same hot policy do not fight over one line.

use std::cell::Cell;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

const STRIPES: usize = 8;

#[repr(align(64))]
#[derive(Default)]
struct Padded(AtomicU64);

/// A counter striped by thread.
#[derive(Default)]
pub struct StripedCounter([Padded; STRIPES]);

fn stripe() -> usize {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    thread_local! {
        static MINE: Cell<usize> = const { Cell::new(usize::MAX) };
    }
    MINE.with(|m| {
        if m.get() == usize::MAX {
            m.set(NEXT.fetch_add(1, Ordering::Relaxed) % STRIPES);
        }
        m.get()
    })
}

impl StripedCounter {
    #[inline]
    pub fn add(&self, n: u64) {
        self.0[stripe()].0.fetch_add(n, Ordering::Relaxed);
    }

    pub fn get(&self) -> u64 {
        self.0.iter().map(|p| p.0.load(Ordering::Relaxed)).sum()
    }
}

impl std::fmt::Debug for StripedCounter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.get())
    }
}

/// What one rule decided. A request counts once per rule that saw it: `allowed` when the
/// rule admitted it, `throttled` when the rule refused it, `flagged` when a billing
/// (non-stopping) quota let it through over the limit.
#[derive(Debug, Default)]
pub struct RuleStats {
    pub allowed: StripedCounter,
    pub throttled: StripedCounter,
    pub flagged: StripedCounter,
}
