//! Long-lived counter state: the slots of every limiter, keyed by a stable 64-bit hash of
//! (policy, window length, scope ids) so that a new `Throttler` built from a new snapshot
//! finds the same counts and a swap never resets a quota.
//!
//! Slots live in shards of lock-free maps (papaya); a slot is three atomics. A slot whose
//! window has ended (or whose GCRA bucket is full again) carries no information and is
//! removed by `sweep`, so memory follows the keys active in the current windows, not
//! every key ever seen. A hard cap (`max_entries`) bounds it even under a flood of new
//! keys inside one window: past it, new keys are admitted untracked and counted.

use std::hash::{BuildHasherDefault, Hasher};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use turnpike_model::fnv::{fnv64_extend, FNV_OFFSET};

use crate::cluster::ClusterLink;
use crate::counter;
use crate::stats::RuleStats;

const SHARDS: usize = 16;

/// How a `CounterStore` is sized.
#[derive(Debug, Clone)]
pub struct StoreConfig {
    /// Most slots kept at once (all shards together).
    pub max_entries: usize,
}

impl Default for StoreConfig {
    fn default() -> Self {
        StoreConfig {
            max_entries: 2_000_000,
        }
    }
}

/// What a slot counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SlotKind {
    /// A fixed window of `unit_ns`.
    Window { unit_ns: u64 },
    /// A GCRA bucket.
    Gcra,
}

pub(crate) struct Slot {
    kind: SlotKind,
    /// Window: `tag|count`; GCRA: the TAT.
    pub(crate) word: AtomicU64,
    /// Cluster mode: what Redis granted this node in the current window.
    pub(crate) lease: AtomicU64,
    /// Cluster mode: what the other nodes had taken at the last grant (`tag|count`).
    pub(crate) others: AtomicU64,
    /// Cluster mode: a lease request for this slot is queued.
    pub(crate) lease_pending: AtomicBool,
}

impl Slot {
    fn new(kind: SlotKind) -> Self {
        Slot {
            kind,
            word: AtomicU64::new(0),
            lease: AtomicU64::new(0),
            others: AtomicU64::new(0),
            lease_pending: AtomicBool::new(false),
        }
    }

    fn expired(&self, now: u64) -> bool {
        match self.kind {
            SlotKind::Gcra => self.word.load(Ordering::Acquire) <= now,
            SlotKind::Window { unit_ns } => {
                let w = now / unit_ns.max(1);
                counter::window_used(&self.word, w) == 0
                    && counter::lease_read(&self.lease, w).0 == 0
            }
        }
    }
}

/// Keys are already well-mixed hashes: the map hashes them as they are.
#[derive(Default)]
pub(crate) struct IdHasher(u64);

impl Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 = (self.0 << 8) | u64::from(*b);
        }
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }
}

type Shard = papaya::HashMap<u64, Slot, BuildHasherDefault<IdHasher>>;

/// The counters of one gateway process. Create one, keep it for the process's life, and
/// build every `Throttler` over it.
pub struct CounterStore {
    shards: Box<[Shard]>,
    per_shard_cap: usize,
    sweeping: AtomicBool,
    next_inline_sweep: AtomicU64,
    untracked: AtomicU64,
    swept: AtomicU64,
    stats: Mutex<std::collections::HashMap<String, Arc<RuleStats>>>,
    pub(crate) cluster: OnceLock<Arc<ClusterLink>>,
}

impl std::fmt::Debug for CounterStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CounterStore")
            .field("entries", &self.len())
            .finish_non_exhaustive()
    }
}

impl CounterStore {
    pub fn new(config: StoreConfig) -> Arc<Self> {
        let shards = (0..SHARDS).map(|_| Shard::default()).collect();
        Arc::new(CounterStore {
            shards,
            per_shard_cap: (config.max_entries / SHARDS).max(1),
            sweeping: AtomicBool::new(false),
            next_inline_sweep: AtomicU64::new(0),
            untracked: AtomicU64::new(0),
            swept: AtomicU64::new(0),
            stats: Mutex::new(Default::default()),
            cluster: OnceLock::new(),
        })
    }

    fn shard(&self, key: u64) -> &Shard {
        // Bits 32..36: papaya takes its 7-bit probe tag from the top bits and the bucket
        // from the low bits, so a shard picked by the top bits left every key of a shard
        // sharing 4 of its 7 tag bits (8x the false tag matches, each a cache miss on a
        // large map: the cost of a new key's insertion).
        &self.shards[(key >> 32) as usize % SHARDS]
    }

    /// Runs `f` on the slot of `key`, creating it if needed. `None` when the store is
    /// full even after sweeping: the caller admits untracked.
    pub(crate) fn with_slot<R>(
        &self,
        key: u64,
        kind: SlotKind,
        now: u64,
        f: impl FnOnce(&Slot) -> R,
    ) -> Option<R> {
        let shard = self.shard(key);
        let map = shard.pin();
        if let Some(slot) = map.get(&key) {
            return Some(f(slot));
        }
        if map.len() >= self.per_shard_cap {
            // At most one inline sweep per second of clock: under a flood of new keys the
            // cost stays bounded, and the extra keys go untracked meanwhile.
            let next = self.next_inline_sweep.load(Ordering::Relaxed);
            if now >= next
                && self
                    .next_inline_sweep
                    .compare_exchange(
                        next,
                        now + 1_000_000_000,
                        Ordering::AcqRel,
                        Ordering::Relaxed,
                    )
                    .is_ok()
            {
                self.sweep_shard(shard, now);
            }
            if map.len() >= self.per_shard_cap {
                self.untracked.fetch_add(1, Ordering::Relaxed);
                return None;
            }
        }
        Some(f(map.get_or_insert_with(key, || Slot::new(kind))))
    }

    /// Looks a slot up without creating it (the cluster task).
    pub(crate) fn peek<R>(&self, key: u64, f: impl FnOnce(&Slot) -> R) -> Option<R> {
        self.shard(key).pin().get(&key).map(f)
    }

    fn sweep_shard(&self, shard: &Shard, now: u64) {
        // One sweeper at a time; others go on (and may count untracked meanwhile).
        if self.sweeping.swap(true, Ordering::AcqRel) {
            return;
        }
        let map = shard.pin();
        let before = map.len();
        map.retain(|_, slot| !slot.expired(now));
        let removed = before.saturating_sub(map.len());
        self.swept.fetch_add(removed as u64, Ordering::Relaxed);
        self.sweeping.store(false, Ordering::Release);
    }

    /// Removes every slot that no longer carries information. Call it periodically (the
    /// gateway: once a second from a background task); `check` also sweeps a full shard.
    pub fn sweep(&self, now: crate::UnixNanos) {
        for shard in self.shards.iter() {
            self.sweep_shard(shard, now.as_nanos());
        }
    }

    /// Slots held now.
    pub fn len(&self) -> usize {
        self.shards.iter().map(|s| s.len()).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Requests admitted without a slot because the store was full.
    pub fn untracked_total(&self) -> u64 {
        self.untracked.load(Ordering::Relaxed)
    }

    /// Slots removed by sweeping so far.
    pub fn swept_total(&self) -> u64 {
        self.swept.load(Ordering::Relaxed)
    }

    /// The decision counters of a rule, shared by every `Throttler` built over this store
    /// (so a snapshot swap does not reset them).
    pub(crate) fn stats_for(&self, name: &str) -> Arc<RuleStats> {
        let mut map = match self.stats.lock() {
            Ok(m) => m,
            Err(poisoned) => poisoned.into_inner(),
        };
        map.entry(name.to_owned()).or_default().clone()
    }

    /// Every rule's decision counters, by rule name, for a metrics exporter.
    pub fn stats(&self) -> Vec<(String, Arc<RuleStats>)> {
        let map = match self.stats.lock() {
            Ok(m) => m,
            Err(poisoned) => poisoned.into_inner(),
        };
        let mut v: Vec<_> = map.iter().map(|(k, s)| (k.clone(), s.clone())).collect();
        v.sort_by(|a, b| a.0.cmp(&b.0));
        v
    }
}

/// A stable 64-bit key: FNV-1a over the parts with a 0xff separator (never in UTF-8),
/// then a murmur3 finaliser so the high bits (shard) and low bits (map) are both mixed.
/// Stable across processes and versions, so every node of a cluster names the same
/// Redis key.
#[derive(Debug, Clone, Copy)]
pub(crate) struct KeyHash(u64);

impl KeyHash {
    pub(crate) const fn new() -> Self {
        KeyHash(FNV_OFFSET)
    }

    #[must_use]
    pub(crate) fn part(self, bytes: &[u8]) -> Self {
        KeyHash(fnv64_extend(fnv64_extend(self.0, bytes), &[0xff]))
    }

    #[must_use]
    pub(crate) fn num(self, n: u64) -> Self {
        self.part(&n.to_le_bytes())
    }

    pub(crate) fn finish(self) -> u64 {
        let mut h = self.0;
        h ^= h >> 33;
        h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
        h ^= h >> 33;
        h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
        h ^= h >> 33;
        h
    }
}
