//! How often each key was asked, for `min_uses` (store a key's answer only from its
//! Nth request, nginx's `proxy_cache_min_uses`): a storing miss costs a third more
//! than a request without a cache (the answer buffered, copied and inserted, an older
//! entry evicted), which buys nothing for a key nobody asks again.
//!
//! A table of 8-bit counters indexed by the key's hash (seeded per process), eight to a
//! word: counting is one atomic add, nothing is allocated per key, and the table's size
//! is fixed when the API's store is made (one counter per KiB of its `max_size`, between
//! 4 Ki and 1 Mi counters). Two keys sharing a counter only get stored sooner. The table
//! forgets: each time it has counted as many requests as it has counters, every count
//! is halved (TinyLFU's reset), so a key counts as asked again only if it comes back
//! before about that many other requests were counted.

use std::hash::BuildHasher;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use foldhash::fast::RandomState;

/// Counters of a table (a power of two) for a store bounded at `max_size` bytes.
fn counters_for(max_size: u64) -> usize {
    ((max_size >> 10) as usize)
        .clamp(1 << 12, 1 << 20)
        .next_power_of_two()
}

/// Each byte's top bit cleared after a shift (a halving keeps counts in their bytes).
const HALVED: u64 = 0x7f7f_7f7f_7f7f_7f7f;

/// The request counts of one API's keys.
pub(crate) struct Uses {
    words: Box<[AtomicU64]>,
    /// Requests counted since the last halving.
    counted: AtomicUsize,
    hasher: RandomState,
}

impl Uses {
    pub(crate) fn new(max_size: u64) -> Uses {
        Uses {
            words: (0..counters_for(max_size) / 8)
                .map(|_| AtomicU64::new(0))
                .collect(),
            counted: AtomicUsize::new(0),
            hasher: RandomState::default(),
        }
    }

    fn counters(&self) -> usize {
        self.words.len() * 8
    }

    fn index(&self, key: &str) -> usize {
        (self.hasher.hash_one(key) as usize) & (self.counters() - 1)
    }

    /// Whether this request is at least the `n`th for `key` (then it is not counted:
    /// its answer will be stored); else it is counted.
    pub(crate) fn reached(&self, key: &str, n: u8) -> bool {
        self.reached_within(key, n, self.counters())
    }

    /// Whether `key` was asked before (this is its second request), for adaptive
    /// admission's selective mode (admission.rs). Counts only go from 0 to 1 here, so a
    /// halving empties the table; it comes every eighth of the table's counters: a
    /// stream of new keys fills at most an eighth of the counters (about 6 % of one-off
    /// keys on average find theirs taken by another and are stored; with the whole
    /// table's period, 42 %, and 66 % measured at 7,000 new keys a second), and a key
    /// counts as asked again if it comes back within that many new keys.
    pub(crate) fn seen_before(&self, key: &str) -> bool {
        self.reached_within(key, 2, self.counters() / 8)
    }

    /// [`Uses::reached`], halving every `period` requests counted.
    fn reached_within(&self, key: &str, n: u8, period: usize) -> bool {
        let i = self.index(key);
        let (word, shift) = (&self.words[i / 8], (i % 8) * 8);
        let seen = (word.load(Ordering::Relaxed) >> shift) as u8;
        // A count stays below `n` (at most 64), racing adds aside: its byte never
        // overflows into the next.
        if u16::from(seen) + 1 >= u16::from(n) {
            return true;
        }
        word.fetch_add(1 << shift, Ordering::Relaxed);
        if self.counted.fetch_add(1, Ordering::Relaxed) + 1 >= period {
            self.halve();
        }
        false
    }

    /// Halves every count (and starts counting anew): a key must come back before
    /// about as many requests as there are counters were counted.
    #[cold]
    fn halve(&self) {
        self.counted.store(0, Ordering::Relaxed);
        for word in self.words.iter() {
            let _ = word.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |w| {
                Some((w >> 1) & HALVED)
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_reaches_n_on_its_nth_request() {
        let uses = Uses::new(64 << 20);
        for n in [2u8, 3, 5] {
            let key = format!("GET /k{n}");
            let answers: Vec<bool> = (0..n).map(|_| uses.reached(&key, n)).collect();
            let mut expected = vec![false; usize::from(n) - 1];
            expected.push(true);
            assert_eq!(answers, expected, "n = {n}");
            assert!(uses.reached(&key, n), "and every request after it");
        }
    }

    #[test]
    fn one_use_is_reached_at_once_and_counts_nothing() {
        let uses = Uses::new(0);
        assert!(uses.reached("GET /a", 1));
        assert_eq!(uses.counted.load(Ordering::Relaxed), 0);
    }

    #[test]
    fn counts_are_halved_once_the_table_has_counted_its_size() {
        let uses = Uses::new(0);
        assert_eq!(uses.counters(), 4096);
        // Three requests of one key: two counted (the third reaches 3).
        assert!(!uses.reached("GET /old", 3));
        assert!(!uses.reached("GET /old", 3));
        // Other keys (none on /old's counter) fill the table's count: the halving
        // takes /old from 2 to 1.
        let old = uses.index("GET /old");
        let others = (0..)
            .map(|i| format!("GET /other/{i}"))
            .filter(|k| uses.index(k) != old);
        for key in others.take(uses.counters() - 2) {
            assert!(!uses.reached(&key, 64));
        }
        assert_eq!(
            uses.counted.load(Ordering::Relaxed),
            0,
            "halved and restarted"
        );
        assert!(
            !uses.reached("GET /old", 3),
            "forgot one of its two requests"
        );
        assert!(uses.reached("GET /old", 3));
    }

    #[test]
    fn seen_before_forgets_every_eighth_of_the_table() {
        let uses = Uses::new(0);
        assert!(!uses.seen_before("GET /k"), "its first request");
        assert!(uses.seen_before("GET /k"), "its second");
        // New keys each on a counter of its own (a shared one would be "seen"): with
        // `/k`'s count they fill the period.
        let mut taken = std::collections::HashSet::from([uses.index("GET /k")]);
        let others = (0..)
            .map(|i| format!("GET /new/{i}"))
            .filter(|key| taken.insert(uses.index(key)));
        for key in others.take(uses.counters() / 8 - 1) {
            assert!(!uses.seen_before(&key));
        }
        assert_eq!(uses.counted.load(Ordering::Relaxed), 0, "emptied");
        assert!(!uses.seen_before("GET /k"), "forgotten");
    }

    #[test]
    fn the_table_is_sized_by_the_store_within_its_caps() {
        assert_eq!(counters_for(0), 4096);
        assert_eq!(counters_for(64 << 20), 65536);
        assert_eq!(counters_for(1 << 40), 1 << 20);
    }
}
