//! [`TokenCache`]: a bounded, sharded map from a token's SHA-256 to a value that expires
//! at a given Unix second (a token's `exp`, or sooner). Keys are digests, so the cache
//! never holds a token in clear and a collision would need a SHA-256 collision. When a
//! shard is full, expired entries go first, then the soonest-expiring of a small sample.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hash, Hasher};
use std::sync::{Arc, Mutex};

use sha2::{Digest, Sha256};

use crate::clock::Clock;

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
#[derive(Default)]
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

struct Entry<V> {
    value: V,
    expires_at: u64,
}

const SHARDS: usize = 16;
const EVICTION_SAMPLE: usize = 8;

/// A bounded cache with per-entry expiry. Cheap to share (`Arc`).
pub struct TokenCache<V> {
    shards: Vec<Mutex<PrefixMap<TokenKey, Entry<V>>>>,
    per_shard: usize,
    clock: Arc<dyn Clock>,
}

impl<V: Clone> TokenCache<V> {
    /// A cache of at most about `capacity` entries.
    pub fn new(capacity: usize, clock: Arc<dyn Clock>) -> Self {
        let per_shard = capacity.div_ceil(SHARDS).max(1);
        Self {
            shards: (0..SHARDS)
                .map(|_| Mutex::new(PrefixMap::default()))
                .collect(),
            per_shard,
            clock,
        }
    }

    fn shard(&self, key: &TokenKey) -> std::sync::MutexGuard<'_, PrefixMap<TokenKey, Entry<V>>> {
        // Use bytes other than the map's hash bytes to pick the shard.
        let idx = usize::from(key.0[31]) % SHARDS;
        self.shards[idx].lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The value if present and not expired.
    pub fn get(&self, key: &TokenKey) -> Option<V> {
        let now = self.clock.now();
        let mut shard = self.shard(key);
        match shard.get(key) {
            Some(e) if e.expires_at > now => Some(e.value.clone()),
            Some(_) => {
                shard.remove(key);
                None
            }
            None => None,
        }
    }

    /// Inserts until `expires_at` (Unix seconds). Already expired values are not stored.
    pub fn insert(&self, key: TokenKey, value: V, expires_at: u64) {
        let now = self.clock.now();
        if expires_at <= now {
            return;
        }
        let mut shard = self.shard(&key);
        if shard.len() >= self.per_shard && !shard.contains_key(&key) {
            shard.retain(|_, e| e.expires_at > now);
            if shard.len() >= self.per_shard {
                let victim = shard
                    .iter()
                    .take(EVICTION_SAMPLE)
                    .min_by_key(|(_, e)| e.expires_at)
                    .map(|(k, _)| *k);
                if let Some(victim) = victim {
                    shard.remove(&victim);
                }
            }
        }
        shard.insert(key, Entry { value, expires_at });
    }

    pub fn remove(&self, key: &TokenKey) {
        self.shard(key).remove(key);
    }

    /// Entries held, expired ones included until touched.
    pub fn len(&self) -> usize {
        self.shards
            .iter()
            .map(|s| s.lock().map(|m| m.len()).unwrap_or(0))
            .sum()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn clear(&self) {
        for s in &self.shards {
            s.lock().unwrap_or_else(|p| p.into_inner()).clear();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::ManualClock;

    #[test]
    fn entries_expire_at_their_own_time() {
        let clock = Arc::new(ManualClock::new(1000));
        let cache = TokenCache::new(100, clock.clone());
        cache.insert(TokenKey::of("a"), 1, 1010);
        cache.insert(TokenKey::of("b"), 2, 1100);
        cache.insert(TokenKey::of("c"), 3, 999);
        assert_eq!(cache.get(&TokenKey::of("a")), Some(1));
        assert_eq!(cache.get(&TokenKey::of("c")), None);
        clock.set(1010);
        assert_eq!(cache.get(&TokenKey::of("a")), None);
        assert_eq!(cache.get(&TokenKey::of("b")), Some(2));
    }

    #[test]
    fn size_stays_bounded() {
        let clock = Arc::new(ManualClock::new(0));
        let cache = TokenCache::new(160, clock);
        for i in 0..10_000u64 {
            cache.insert(TokenKey::of(&i.to_string()), i, 100 + i);
        }
        assert!(cache.len() <= 160, "len {}", cache.len());
        assert_eq!(cache.get(&TokenKey::of("9999")), Some(9999));
    }
}
