//! Where cached responses live: one byte-bounded store per API id ([`ApiStore`]: a
//! `quick_cache` S3-FIFO cache weighed by each entry's bytes), all kept in the gateway's
//! `Runtime` ([`CacheStores`]) so a snapshot swap keeps them; and the in-flight misses
//! that request collapsing waits on.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, SystemTime};

use bytes::Bytes;
use http::{HeaderMap, Method, StatusCode};
use http_cache_semantics::{BeforeRequest, CachePolicy, RequestLike};
use quick_cache::sync::Cache;
use quick_cache::Weighter;
use tokio::sync::watch;
use turnpike_model::policy::CachePurge;

/// Variants of one key kept for `Vary` (the oldest goes when one more arrives).
const MAX_VARIANTS: usize = 8;
/// Fixed bytes charged per entry besides its body and headers (key, policy, maps).
const ENTRY_OVERHEAD: u64 = 512;

/// Every API's store, in the gateway's runtime.
#[derive(Default)]
pub struct CacheStores {
    apis: Mutex<HashMap<Box<str>, Arc<ApiStore>>>,
}

impl CacheStores {
    /// The store of API `id`, bounded to `max_size` bytes (a rebuild with a new bound
    /// resizes it, keeping what fits). Locked at build time only.
    pub(crate) fn for_api(&self, id: &str, max_size: u64) -> Arc<ApiStore> {
        let mut apis = self.apis.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(store) = apis.get(id) {
            if store.entries.capacity() != max_size {
                store.entries.set_capacity(max_size);
            }
            return store.clone();
        }
        let store = Arc::new(ApiStore::new(max_size));
        apis.insert(id.into(), store.clone());
        store
    }

    /// The store of API `id`, if one was built.
    pub fn get(&self, id: &str) -> Option<Arc<ApiStore>> {
        let apis = self.apis.lock().unwrap_or_else(PoisonError::into_inner);
        apis.get(id).cloned()
    }
}

type Variants = Arc<[Arc<Variant>]>;

#[derive(Clone)]
struct ByBytes;

impl Weighter<String, Variants> for ByBytes {
    fn weight(&self, key: &String, val: &Variants) -> u64 {
        key.len() as u64 + val.iter().map(|v| v.weight).sum::<u64>()
    }
}

/// One API's cached responses and in-flight misses.
pub struct ApiStore {
    entries: Cache<String, Variants, ByBytes>,
    flights: papaya::HashMap<String, watch::Receiver<()>>,
    /// The highest purge id applied (purges arrive with every snapshot; each applies once).
    purged: AtomicU64,
}

/// One stored response (one `Vary` variant of a key).
pub(crate) struct Variant {
    pub(crate) policy: CachePolicy,
    pub(crate) status: StatusCode,
    pub(crate) headers: HeaderMap,
    pub(crate) body: Bytes,
    /// Until when it is fresh, and how long after that it may still be served while
    /// one request refreshes it, or in place of an upstream failure.
    pub(crate) fresh_until: SystemTime,
    pub(crate) stale_while_revalidate: Duration,
    pub(crate) stale_if_error: Duration,
    pub(crate) tags: Box<[Box<str>]>,
    weight: u64,
}

/// What a lookup found for a request.
pub(crate) enum Found {
    Fresh(Arc<Variant>),
    /// Past freshness, within stale-while-revalidate.
    Stale(Arc<Variant>),
    /// Only usable if the upstream fails (within stale-if-error, or the request asked
    /// to revalidate).
    Fallback(Arc<Variant>),
    Nothing,
}

/// A request as the RFC 9111 rules compare it: the key already matched the URI.
pub(crate) struct Presented<'a> {
    pub(crate) method: &'a Method,
    pub(crate) headers: &'a HeaderMap,
}

impl RequestLike for Presented<'_> {
    fn uri(&self) -> http::Uri {
        http::Uri::from_static("/")
    }
    fn is_same_uri(&self, _: &http::Uri) -> bool {
        true
    }
    fn method(&self) -> &Method {
        self.method
    }
    fn headers(&self) -> &HeaderMap {
        self.headers
    }
}

impl Variant {
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(
        policy: CachePolicy,
        status: StatusCode,
        headers: HeaderMap,
        body: Bytes,
        now: SystemTime,
        stale: (Duration, Duration),
        tags: Box<[Box<str>]>,
    ) -> Variant {
        let fresh_until = now + policy.time_to_live(now);
        let header_bytes: usize = headers
            .iter()
            .map(|(k, v)| k.as_str().len() + v.len() + 8)
            .sum();
        Variant {
            policy,
            status,
            headers,
            weight: ENTRY_OVERHEAD + body.len() as u64 + header_bytes as u64,
            body,
            fresh_until,
            stale_while_revalidate: stale.0,
            stale_if_error: stale.1,
            tags,
        }
    }

    /// How long it has been stale at `now` (`None` while fresh).
    fn staleness(&self, now: SystemTime) -> Option<Duration> {
        now.duration_since(self.fresh_until).ok()
    }

    /// Whether it may replace an upstream failure at `now`.
    pub(crate) fn serves_errors(&self, now: SystemTime) -> bool {
        self.staleness(now).is_none_or(|s| s <= self.stale_if_error)
    }

    fn judge(self: &Arc<Self>, req: &Presented<'_>, now: SystemTime) -> Found {
        match self.policy.before_request(req, now) {
            BeforeRequest::Fresh(_) => Found::Fresh(self.clone()),
            BeforeRequest::Stale { matches: false, .. } => Found::Nothing,
            BeforeRequest::Stale { matches: true, .. } => match self.staleness(now) {
                // Still fresh by time: the request itself asked to revalidate.
                None => Found::Fallback(self.clone()),
                Some(s) if s <= self.stale_while_revalidate => Found::Stale(self.clone()),
                Some(s) if s <= self.stale_if_error => Found::Fallback(self.clone()),
                Some(_) => Found::Nothing,
            },
        }
    }
}

impl ApiStore {
    fn new(max_size: u64) -> ApiStore {
        // Estimated items: a 4 KiB average entry.
        let items = (max_size / 4096).clamp(16, 1 << 20) as usize;
        ApiStore {
            entries: Cache::with_weighter(items, max_size, ByBytes),
            flights: papaya::HashMap::new(),
            purged: AtomicU64::new(0),
        }
    }

    /// The best answer stored under `key` for `req`: fresh, else stale, else fallback.
    pub(crate) fn lookup(&self, key: &str, req: &Presented<'_>, now: SystemTime) -> Found {
        let Some(variants) = self.entries.get(key) else {
            return Found::Nothing;
        };
        let mut best = Found::Nothing;
        for v in variants.iter() {
            match v.judge(req, now) {
                f @ Found::Fresh(_) => return f,
                f @ Found::Stale(_) => best = f,
                f @ Found::Fallback(_) if matches!(best, Found::Nothing) => best = f,
                _ => {}
            }
        }
        best
    }

    /// Stores `variant` under `key`, replacing the variant the same request would
    /// select (same `Vary` values) and keeping at most [`MAX_VARIANTS`].
    pub(crate) fn store(
        &self,
        key: String,
        req: &Presented<'_>,
        variant: Variant,
        now: SystemTime,
    ) {
        let mut list: Vec<Arc<Variant>> = match self.entries.get(key.as_str()) {
            Some(old) => old
                .iter()
                .filter(|v| matches!(v.judge(req, now), Found::Nothing))
                .cloned()
                .collect(),
            None => Vec::new(),
        };
        if list.len() >= MAX_VARIANTS {
            list.remove(0);
        }
        list.push(Arc::new(variant));
        self.entries.insert(key, list.into());
    }

    /// Entries held and their bytes.
    pub fn usage(&self) -> (usize, u64) {
        (self.entries.len(), self.entries.weight())
    }

    /// Applies the purges not applied yet (those above the highest id applied), at
    /// build time. A store created after a purge was listed has nothing it could drop.
    pub(crate) fn apply_purges(&self, purges: &[CachePurge]) {
        let done = self.purged.load(Ordering::Acquire);
        let mut highest = done;
        for p in purges.iter().filter(|p| p.id > done) {
            match (&p.prefix, &p.tag) {
                (Some(prefix), _) => self.purge_prefix(prefix),
                (None, Some(tag)) => self.purge_tag(tag),
                (None, None) => self.purge_all(),
            }
            highest = highest.max(p.id);
        }
        self.purged.fetch_max(highest, Ordering::AcqRel);
    }

    /// Drops every entry.
    pub fn purge_all(&self) {
        self.entries.clear();
    }

    /// Drops the entries whose upstream path starts with `prefix`.
    pub fn purge_prefix(&self, prefix: &str) {
        self.entries
            .retain(|k, _| !crate::key::path_of(k).starts_with(prefix));
    }

    /// Drops the entries with a variant tagged `tag`.
    pub fn purge_tag(&self, tag: &str) {
        self.entries
            .retain(|_, vs| !vs.iter().any(|v| v.tags.iter().any(|t| &**t == tag)));
    }

    /// Joins the miss in flight for `key`, or leads it: `Ok(guard)` for the leader
    /// (dropping it wakes the followers), `Err(receiver)` for a follower.
    pub(crate) fn fly(self: &Arc<Self>, key: &str) -> Result<Flight, watch::Receiver<()>> {
        let flights = self.flights.pin();
        let (tx, rx) = watch::channel(());
        match flights.try_insert(key.to_owned(), rx) {
            Ok(_) => Ok(Flight {
                store: self.clone(),
                key: key.to_owned(),
                _done: tx,
            }),
            Err(occupied) => Err(occupied.current.clone()),
        }
    }

    /// Whether a miss of `key` is in flight (someone is refreshing it).
    pub(crate) fn in_flight(&self, key: &str) -> bool {
        self.flights.pin().contains_key(key)
    }
}

/// The leader of a miss: while it lives, other misses of its key wait; dropped (stored,
/// not storable, failed, or the request went away), they wake.
pub(crate) struct Flight {
    store: Arc<ApiStore>,
    key: String,
    _done: watch::Sender<()>,
}

impl Drop for Flight {
    fn drop(&mut self) {
        // Before the sender drops (after this body), so a woken follower finds no flight.
        self.store.flights.pin().remove(&self.key);
    }
}
