//! The lock-free counter algorithms, as functions over one `AtomicU64` each, so a slot
//! is a few words and a check is a load and (when admitting) one compare-and-swap.
//!
//! - Fixed window: `tag:24 | count:40`. The tag is the window index modulo 2^24; a word
//!   whose tag is older than the caller's window is an expired count and is reset by the
//!   first writer of the new window. Denials do not write, so a throttled hot key costs
//!   a load and no cache-line traffic.
//! - GCRA: the word is the theoretical arrival time (TAT) in ns since the UNIX epoch.
//! - Lease (cluster mode): `tag:24 | exhausted:1 | granted:39`, what Redis granted this
//!   node in the current window.

use std::sync::atomic::{AtomicU64, Ordering};

const COUNT_BITS: u32 = 40;
const COUNT_MASK: u64 = (1 << COUNT_BITS) - 1;
const TAG_BITS: u32 = 24;
const TAG_MASK: u64 = (1 << TAG_BITS) - 1;
/// Tags cycle through 1..=TAG_MASK; tag 0 marks a word never written.
const TAG_CYCLE: u64 = TAG_MASK;

fn tag_of(window: u64) -> u64 {
    window % TAG_CYCLE + 1
}

/// True when `word_tag` is the same as or newer than `my_tag` (modulo the tag cycle, so a
/// late clock on one thread never resets a window another thread already opened). A
/// never-written word is older than every window.
fn current_or_newer(word_tag: u64, my_tag: u64) -> bool {
    word_tag != 0 && (word_tag + TAG_CYCLE - my_tag) % TAG_CYCLE < TAG_CYCLE / 2
}

fn pack(tag: u64, count: u64) -> u64 {
    (tag << COUNT_BITS) | count.min(COUNT_MASK)
}

fn unpack(word: u64) -> (u64, u64) {
    (word >> COUNT_BITS, word & COUNT_MASK)
}

/// The count of `window` held in `word` (0 when the word belongs to an older window).
pub(crate) fn window_used(word: &AtomicU64, window: u64) -> u64 {
    let (t, c) = unpack(word.load(Ordering::Acquire));
    if current_or_newer(t, tag_of(window)) {
        c
    } else {
        0
    }
}

/// Adds `cost` if the count stays within `allowance` (always, when `force`). Returns
/// whether it was added and the count after (or the current count when refused).
pub(crate) fn window_take(
    word: &AtomicU64,
    window: u64,
    cost: u64,
    allowance: u64,
    force: bool,
) -> (bool, u64) {
    let my_tag = tag_of(window);
    let mut cur = word.load(Ordering::Acquire);
    loop {
        let (t, c) = unpack(cur);
        let (tag, used) = if current_or_newer(t, my_tag) {
            (t, c)
        } else {
            (my_tag, 0)
        };
        let next = used.saturating_add(cost);
        if next > allowance && !force {
            return (false, used);
        }
        match word.compare_exchange_weak(cur, pack(tag, next), Ordering::AcqRel, Ordering::Acquire)
        {
            Ok(_) => return (true, next),
            Err(v) => cur = v,
        }
    }
}

/// Gives back `cost` taken in `window` (a later policy refused the request).
pub(crate) fn window_refund(word: &AtomicU64, window: u64, cost: u64) {
    let my_tag = tag_of(window);
    let mut cur = word.load(Ordering::Acquire);
    loop {
        let (t, c) = unpack(cur);
        if t != my_tag {
            return;
        }
        let next = pack(t, c.saturating_sub(cost));
        match word.compare_exchange_weak(cur, next, Ordering::AcqRel, Ordering::Acquire) {
            Ok(_) => return,
            Err(v) => cur = v,
        }
    }
}

/// Sets the count of `window` to `value` (cluster mode: what the other nodes took).
pub(crate) fn window_set(word: &AtomicU64, window: u64, value: u64) {
    word.store(pack(tag_of(window), value), Ordering::Release);
}

/// Outcome of a GCRA step, in nanoseconds.
#[derive(Debug, Clone, Copy)]
pub(crate) struct GcraOutcome {
    pub allowed: bool,
    pub remaining: u64,
    /// Until the bucket is full again.
    pub reset_ns: u64,
    /// Until the next request would pass (0 when allowed).
    pub retry_ns: u64,
}

/// GCRA with emission interval `t_ns` and room for `n` requests at once: admits at most
/// `n` in any interval of `n * t_ns`, exactly, with no window edges.
pub(crate) fn gcra_take(word: &AtomicU64, now: u64, t_ns: u64, n: u64) -> GcraOutcome {
    let span = t_ns.saturating_mul(n);
    let mut cur = word.load(Ordering::Acquire);
    loop {
        let tat = cur.max(now);
        let new_tat = tat.saturating_add(t_ns);
        if new_tat - now > span {
            return GcraOutcome {
                allowed: false,
                remaining: 0,
                reset_ns: tat - now,
                retry_ns: new_tat - span - now,
            };
        }
        match word.compare_exchange_weak(cur, new_tat, Ordering::AcqRel, Ordering::Acquire) {
            Ok(_) => {
                return GcraOutcome {
                    allowed: true,
                    remaining: (now + span - new_tat) / t_ns.max(1),
                    reset_ns: new_tat - now,
                    retry_ns: 0,
                }
            }
            Err(v) => cur = v,
        }
    }
}

/// Gives back one GCRA emission (a later policy refused the request).
pub(crate) fn gcra_refund(word: &AtomicU64, t_ns: u64) {
    // fetch_update never fails with a closure that always returns Some.
    let _ = word.fetch_update(Ordering::AcqRel, Ordering::Acquire, |tat| {
        Some(tat.saturating_sub(t_ns))
    });
}

const GRANT_BITS: u32 = 39;
const GRANT_MASK: u64 = (1 << GRANT_BITS) - 1;
const EXHAUSTED: u64 = 1 << GRANT_BITS;

/// What Redis granted this node in `window`: (granted, globally exhausted).
pub(crate) fn lease_read(word: &AtomicU64, window: u64) -> (u64, bool) {
    let w = word.load(Ordering::Acquire);
    if w >> COUNT_BITS != tag_of(window) {
        return (0, false);
    }
    (w & GRANT_MASK, w & EXHAUSTED != 0)
}

/// Records a grant of `add` in `window`; `exhausted` when Redis had no more to give.
pub(crate) fn lease_add(word: &AtomicU64, window: u64, add: u64, exhausted: bool) {
    let my_tag = tag_of(window);
    let _ = word.fetch_update(Ordering::AcqRel, Ordering::Acquire, |w| {
        let granted = if w >> COUNT_BITS == my_tag {
            w & GRANT_MASK
        } else {
            0
        };
        let g = granted.saturating_add(add).min(GRANT_MASK);
        Some((my_tag << COUNT_BITS) | g | if exhausted { EXHAUSTED } else { 0 })
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn window_counts_then_refuses_then_rolls_over() {
        let w = AtomicU64::new(0);
        assert_eq!(window_take(&w, 7, 1, 2, false), (true, 1));
        assert_eq!(window_take(&w, 7, 1, 2, false), (true, 2));
        assert_eq!(window_take(&w, 7, 1, 2, false), (false, 2));
        assert_eq!(window_take(&w, 8, 1, 2, false), (true, 1));
        // A late thread still on window 7 counts in the newer window 8.
        assert_eq!(window_take(&w, 7, 1, 2, false), (true, 2));
        assert_eq!(window_used(&w, 8), 2);
        window_refund(&w, 8, 1);
        assert_eq!(window_used(&w, 8), 1);
        assert_eq!(window_used(&w, 9), 0);
    }

    #[test]
    fn window_rolls_over_with_real_window_numbers() {
        let w = AtomicU64::new(0);
        assert!(window_take(&w, 1_704_067_200, 1, 1, false).0);
        assert!(!window_take(&w, 1_704_067_200, 1, 1, false).0);
        assert!(window_take(&w, 1_704_067_201, 1, 1, false).0);
        window_refund(&w, 1_704_067_201, 1);
        assert_eq!(window_used(&w, 1_704_067_201), 0);
    }

    #[test]
    fn window_tags_wrap_without_resetting_backwards() {
        let w = AtomicU64::new(0);
        let last = TAG_CYCLE - 1;
        assert!(window_take(&w, last, 1, 5, false).0);
        assert_eq!(window_take(&w, last + 1, 1, 5, false), (true, 1));
        assert_eq!(window_used(&w, last + 1), 1);
    }

    #[test]
    fn gcra_admits_exactly_n_then_one_per_interval() {
        let w = AtomicU64::new(0);
        let now = 1_000_000_000_000;
        for i in 0..3 {
            let o = gcra_take(&w, now, 100, 3);
            assert!(o.allowed);
            assert_eq!(o.remaining, 2 - i);
        }
        let o = gcra_take(&w, now, 100, 3);
        assert!(!o.allowed);
        assert_eq!(o.retry_ns, 100);
        assert!(!gcra_take(&w, now + 99, 100, 3).allowed);
        assert!(gcra_take(&w, now + 100, 100, 3).allowed);
    }

    #[test]
    fn lease_resets_on_a_new_window() {
        let w = AtomicU64::new(0);
        lease_add(&w, 3, 10, false);
        lease_add(&w, 3, 5, true);
        assert_eq!(lease_read(&w, 3), (15, true));
        assert_eq!(lease_read(&w, 4), (0, false));
        lease_add(&w, 4, 2, false);
        assert_eq!(lease_read(&w, 4), (2, false));
    }
}
