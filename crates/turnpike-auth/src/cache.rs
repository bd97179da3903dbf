//! [`TokenCache`]: a concurrent cache from a credential's SHA-256 to a value that expires
//! at a given Unix second (a token's `exp`, or sooner), bounded by a byte budget. Keys
//! are digests, so the cache never holds a token in clear and a collision would need a
//! SHA-256 collision.
//!
//! The table holds the digest's first 128 bits (finding a second token that matches a
//! cached one on 128 bits is a 2^128 search) and a 16-byte entry, so that a million
//! tokens fit in well under 256 MiB with their identities (measured: the
//! `token_cache_budget` test).
//!
//! Admission and eviction are `quick_cache`'s (a CLOCK-PRO variant of the S3-FIFO class:
//! new keys enter a small probationary queue, a ghost list remembers recently evicted
//! keys, so a scan of one-off tokens cannot flush the tokens clients keep reusing). Each
//! entry weighs [`ENTRY_OVERHEAD`] bytes (its slot in the table) plus what its value
//! holds on the heap ([`CacheWeight`]); the cache keeps the sum under its budget. The
//! table grows with use: a gateway whose APIs never see a token pays nothing for the
//! budget. A miss can hold a [`Guard`] so that concurrent first uses of one token do the
//! expensive work (a signature check) once: see [`TokenCache::get_or_guard`].

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hash, Hasher};
use std::sync::Arc;

use quick_cache::sync::{GuardResult, PlaceholderGuard};
use quick_cache::Weighter;
use sha2::{Digest, Sha256};
use turnpike_policy::StripedCounter;

use turnpike_model::clock::Clock;

/// SHA-256 of a credential: the key of every cache here.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct TokenKey(pub [u8; 32]);

impl TokenKey {
    pub fn of(token: &str) -> Self {
        Self(Sha256::digest(token.as_bytes()).into())
    }

    pub(crate) fn prefix(&self) -> u64 {
        let mut b = [0u8; 8];
        b.copy_from_slice(&self.0[..8]);
        u64::from_le_bytes(b)
    }
}

impl Hash for TokenKey {
    fn hash<H: Hasher>(&self, state: &mut H) {
        // The key is already a uniform digest: its first 8 bytes are a perfect hash.
        state.write_u64(self.prefix());
    }
}

/// Passes a `write_u64` through: the hasher for digest keys.
#[derive(Default, Clone)]
pub(crate) struct PrefixHasher(u64);

impl Hasher for PrefixHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(*b);
        }
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }
}

pub(crate) type PrefixMap<K, V> = HashMap<K, V, BuildHasherDefault<PrefixHasher>>;

/// Bytes one cached entry costs besides its value's heap: the key and value inline in
/// `quick_cache`'s entry slab, its index in the hash table (at the table's load factor)
/// and its share of the ghost list. Measured by the `budget` test (which fills a cache
/// with a million real identities and counts every allocated byte), rounded up.
pub const ENTRY_OVERHEAD: usize = 96;

/// What a cached value holds on the heap beyond its inline size: the part of an entry's
/// weight that varies. Shared data (an interned [`crate::Principal`]) is not counted: it
/// is bounded by its own interner.
pub trait CacheWeight {
    fn heap_bytes(&self) -> usize;
}

impl CacheWeight for () {
    fn heap_bytes(&self) -> usize {
        0
    }
}

impl CacheWeight for http::HeaderValue {
    fn heap_bytes(&self) -> usize {
        // `Bytes` header (shared vtable) + the value.
        32 + self.len()
    }
}

impl<V: CacheWeight, E> CacheWeight for Result<V, E> {
    fn heap_bytes(&self) -> usize {
        self.as_ref().map_or(0, CacheWeight::heap_bytes)
    }
}

/// The table's key: the first 128 bits of the digest, as two words (8-byte aligned, so
/// an entry packs into 40 bytes).
#[derive(Clone, Copy, PartialEq, Eq)]
struct Short([u64; 2]);

impl Short {
    fn of(key: &TokenKey) -> Self {
        let word = |i: usize| {
            let mut b = [0u8; 8];
            b.copy_from_slice(&key.0[i..i + 8]);
            u64::from_le_bytes(b)
        };
        Short([word(0), word(8)])
    }
}

impl Hash for Short {
    fn hash<H: Hasher>(&self, state: &mut H) {
        state.write_u64(self.0[0]);
    }
}

#[derive(Clone)]
struct Entry<V> {
    value: V,
    /// Unix seconds (saturating at 2106).
    expires_at: u32,
    weight: u32,
}

#[derive(Clone)]
struct ByWeight;

impl<V> Weighter<Short, Entry<V>> for ByWeight {
    fn weight(&self, _key: &Short, entry: &Entry<V>) -> u64 {
        u64::from(entry.weight)
    }
}

type Inner<V> = quick_cache::sync::Cache<
    Short,
    Entry<V>,
    ByWeight,
    BuildHasherDefault<PrefixHasher>,
    quick_cache::sync::DefaultLifecycle<Short, Entry<V>>,
>;

fn secs(t: u64) -> u32 {
    u32::try_from(t).unwrap_or(u32::MAX)
}

/// Counters and sizes of one cache, for metrics.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CacheStats {
    pub hits: u64,
    pub misses: u64,
    pub entries: u64,
    /// Sum of the entries' weights (bytes, as [`ENTRY_OVERHEAD`] + heap).
    pub bytes: u64,
    pub budget_bytes: u64,
}

impl CacheStats {
    /// Hits over lookups since start (0 before the first lookup).
    pub fn hit_ratio(&self) -> f64 {
        let total = self.hits + self.misses;
        if total == 0 {
            0.0
        } else {
            self.hits as f64 / total as f64
        }
    }
}

/// A byte-bounded cache with per-entry expiry. Cheap to share (`Arc`).
pub struct TokenCache<V: Clone> {
    inner: Inner<V>,
    budget: u64,
    clock: Arc<dyn Clock>,
    hits: StripedCounter,
    misses: StripedCounter,
}

/// A miss that holds the right to fill `key`: other [`TokenCache::get_or_guard`] callers
/// for the same key wait until it is filled or dropped.
pub struct Guard<'a, V: Clone> {
    inner: PlaceholderGuard<
        'a,
        Short,
        Entry<V>,
        ByWeight,
        BuildHasherDefault<PrefixHasher>,
        quick_cache::sync::DefaultLifecycle<Short, Entry<V>>,
    >,
}

impl<V: Clone + CacheWeight> Guard<'_, V> {
    /// Fills the key (until `expires_at`, Unix seconds) and wakes the waiters. A value
    /// already expired is not stored: dropping the guard lets a waiter compute its own.
    pub fn insert(self, cache: &TokenCache<V>, value: V, expires_at: u64) {
        if expires_at > cache.clock.now_secs() {
            let _ = self.inner.insert(Entry::new(value, expires_at));
        }
    }
}

impl<V: Clone> Entry<V> {
    fn new(value: V, expires_at: u64) -> Self
    where
        V: CacheWeight,
    {
        let weight = (ENTRY_OVERHEAD + value.heap_bytes()).min(u32::MAX as usize) as u32;
        Entry {
            value,
            expires_at: secs(expires_at),
            weight,
        }
    }
}

/// What [`TokenCache::get_or_guard`] found.
pub enum Lookup<'a, V: Clone> {
    Hit(V),
    /// Not cached: compute the value, then [`Guard::insert`] it.
    Miss(Guard<'a, V>),
}

impl<V: Clone + CacheWeight> TokenCache<V> {
    /// A cache of at most about `budget_bytes` (entries weighed as [`ENTRY_OVERHEAD`]
    /// plus their value's heap).
    pub fn new(budget_bytes: u64, clock: Arc<dyn Clock>) -> Self {
        let budget = budget_bytes.max(ENTRY_OVERHEAD as u64 * 64);
        // The table starts small and grows with use: an unused cache costs its shards.
        Self {
            inner: Inner::with(
                1024,
                budget,
                ByWeight,
                BuildHasherDefault::default(),
                Default::default(),
            ),
            budget,
            clock,
            hits: StripedCounter::default(),
            misses: StripedCounter::default(),
        }
    }

    /// A cache sized for about `entries` values of `typical_value_heap` bytes each.
    pub fn with_entries(entries: usize, typical_value_heap: usize, clock: Arc<dyn Clock>) -> Self {
        Self::new(
            (entries.saturating_mul(ENTRY_OVERHEAD + typical_value_heap)) as u64,
            clock,
        )
    }

    /// The value if present and not expired.
    pub fn get(&self, key: &TokenKey) -> Option<V> {
        let key = Short::of(key);
        match self.inner.get(&key) {
            Some(e) if u64::from(e.expires_at) > self.clock.now_secs() => {
                self.hits.add(1);
                Some(e.value)
            }
            Some(_) => {
                self.inner.remove(&key);
                self.misses.add(1);
                None
            }
            None => {
                self.misses.add(1);
                None
            }
        }
    }

    /// The value, or the right to compute it: while one caller holds the [`Guard`] for
    /// a key, the others asking for it wait (a thread park: only first uses of one key
    /// racing on several cores ever wait, and only for one computation). Not counted in
    /// [`TokenCache::stats`]: callers look up with [`TokenCache::get`] first.
    pub fn get_or_guard(&self, key: &TokenKey) -> Lookup<'_, V> {
        let key = Short::of(key);
        loop {
            match self.inner.get_value_or_guard(&key, None) {
                GuardResult::Value(e) if u64::from(e.expires_at) > self.clock.now_secs() => {
                    return Lookup::Hit(e.value);
                }
                GuardResult::Value(_) => {
                    self.inner.remove(&key);
                }
                GuardResult::Guard(inner) => return Lookup::Miss(Guard { inner }),
                // No timeout was given: never happens; ask again if it does.
                GuardResult::Timeout => {}
            }
        }
    }

    /// Inserts until `expires_at` (Unix seconds). Already expired values are not stored.
    pub fn insert(&self, key: TokenKey, value: V, expires_at: u64) {
        if expires_at <= self.clock.now_secs() {
            return;
        }
        self.inner
            .insert(Short::of(&key), Entry::new(value, expires_at));
    }

    pub fn remove(&self, key: &TokenKey) {
        self.inner.remove(&Short::of(key));
    }

    /// Entries held, expired ones included until touched or evicted.
    pub fn len(&self) -> usize {
        self.inner.len()
    }

    pub fn is_empty(&self) -> bool {
        self.inner.is_empty()
    }

    pub fn clear(&self) {
        self.inner.clear();
    }

    /// Lookups, entries and weight so far.
    pub fn stats(&self) -> CacheStats {
        CacheStats {
            hits: self.hits.get(),
            misses: self.misses.get(),
            entries: self.inner.len() as u64,
            bytes: self.inner.weight(),
            budget_bytes: self.budget,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use turnpike_model::clock::ManualClock;

    #[test]
    fn entries_expire_at_their_own_time() {
        let clock = Arc::new(ManualClock::at_secs(1000));
        let cache = TokenCache::<u64Value>::new(1 << 20, clock.clone());
        cache.insert(TokenKey::of("a"), u64Value(1), 1010);
        cache.insert(TokenKey::of("b"), u64Value(2), 1100);
        cache.insert(TokenKey::of("c"), u64Value(3), 999);
        assert_eq!(cache.get(&TokenKey::of("a")), Some(u64Value(1)));
        assert_eq!(cache.get(&TokenKey::of("c")), None);
        clock.set(turnpike_model::clock::UnixNanos::from_secs(1010));
        assert_eq!(cache.get(&TokenKey::of("a")), None);
        assert_eq!(cache.get(&TokenKey::of("b")), Some(u64Value(2)));
        let s = cache.stats();
        assert_eq!((s.hits, s.misses), (2, 2));
        assert!(matches!(
            cache.get_or_guard(&TokenKey::of("b")),
            Lookup::Hit(u64Value(2))
        ));
    }

    #[derive(Clone, Debug, PartialEq)]
    #[allow(non_camel_case_types)]
    struct u64Value(u64);
    impl CacheWeight for u64Value {
        fn heap_bytes(&self) -> usize {
            0
        }
    }

    #[test]
    fn weight_stays_within_the_budget() {
        let clock = Arc::new(ManualClock::at_secs(0));
        let budget = 1000 * ENTRY_OVERHEAD as u64;
        let cache = TokenCache::new(budget, clock);
        for i in 0..100_000u64 {
            cache.insert(TokenKey::of(&i.to_string()), u64Value(i), 1_000_000);
        }
        let s = cache.stats();
        assert!(s.bytes <= budget, "{s:?}");
        assert!(s.entries >= 900 && s.entries <= 1000, "{s:?}");
        assert_eq!(s.bytes, s.entries * ENTRY_OVERHEAD as u64);
    }

    #[test]
    fn a_scan_of_one_off_keys_does_not_flush_keys_in_use() {
        let clock = Arc::new(ManualClock::at_secs(0));
        let cache = TokenCache::new(1000 * ENTRY_OVERHEAD as u64, clock);
        let hot: Vec<TokenKey> = (0..200).map(|i| TokenKey::of(&format!("hot{i}"))).collect();
        for k in &hot {
            cache.insert(*k, u64Value(1), 1_000_000);
        }
        // Clients keep using the hot keys while a scan of 20,000 one-off keys goes by.
        for i in 0..20_000u64 {
            if i % 10 == 0 {
                for k in &hot {
                    if cache.get(k).is_none() {
                        cache.insert(*k, u64Value(1), 1_000_000);
                    }
                }
            }
            cache.insert(TokenKey::of(&format!("scan{i}")), u64Value(2), 1_000_000);
        }
        let kept = hot.iter().filter(|k| cache.get(k).is_some()).count();
        assert!(kept >= 190, "only {kept} of 200 hot keys survived the scan");
    }

    #[test]
    fn concurrent_first_uses_compute_once() {
        use std::sync::atomic::{AtomicUsize, Ordering};
        let clock = Arc::new(ManualClock::at_secs(0));
        let cache = Arc::new(TokenCache::new(1 << 20, clock));
        let computed = Arc::new(AtomicUsize::new(0));
        let key = TokenKey::of("shared");
        let threads: Vec<_> = (0..8)
            .map(|_| {
                let (cache, computed) = (cache.clone(), computed.clone());
                std::thread::spawn(move || match cache.get_or_guard(&key) {
                    Lookup::Hit(v) => v,
                    Lookup::Miss(guard) => {
                        computed.fetch_add(1, Ordering::SeqCst);
                        std::thread::sleep(std::time::Duration::from_millis(50));
                        guard.insert(&cache, u64Value(7), 100);
                        u64Value(7)
                    }
                })
            })
            .collect();
        for t in threads {
            assert_eq!(t.join().unwrap(), u64Value(7));
        }
        assert_eq!(computed.load(Ordering::SeqCst), 1);
    }
}
