//! [`StripedCounter`]: a counter several cores bump on the request path (throttle
//! decisions per rule, token-cache hits). Striped over a few cache lines so that two
//! cores counting the same event do not fight over one line.

use std::cell::Cell;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

const STRIPES: usize = 8;

#[repr(align(64))]
#[derive(Default)]
struct Padded(AtomicU64);

/// A counter striped by thread.
#[derive(Default)]
pub struct StripedCounter([Padded; STRIPES]);

/// This thread's stripe, assigned round-robin on its first count.
#[inline]
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_from_every_thread_add_up() {
        let c = StripedCounter::default();
        std::thread::scope(|s| {
            for _ in 0..4 {
                s.spawn(|| (0..100).for_each(|_| c.add(2)));
            }
        });
        assert_eq!(c.get(), 800);
    }
}
