//! Where cached responses live: one byte-bounded store per API id ([`ApiStore`]: a
//! `quick_cache` S3-FIFO cache weighed by each entry's bytes), all kept in the gateway's
//! `Runtime` ([`CacheStores`]) so a snapshot swap keeps them; and the in-flight misses
//! that request collapsing waits on.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use foldhash::fast::RandomState;
use http::header::{CACHE_CONTROL, HOST, PRAGMA, VARY};
use http::{HeaderMap, HeaderName, HeaderValue, Method, StatusCode};
use http_cache_semantics::{BeforeRequest, CachePolicy};
use quick_cache::sync::Cache;
use quick_cache::Weighter;
use turnpike_model::policy::CachePurge;

use crate::admission::Admission;
use crate::detach::{detach, Detached};
use crate::flight::{Flights, Follow, Led};
use crate::footprint::{footprint, PER_ALLOCATION, STORE_SLOT};
use crate::request::RequestHead;
use crate::revalidate::VALIDATORS;
pub(crate) use crate::rfc::Presented;
use crate::rfc::{self, MAX_VARY};
use crate::shared::SharedLevel;
use crate::uses::Uses;
use crate::wire::{ToWire, WireEntry};

/// Variants of one key kept for `Vary` (the oldest goes when one more arrives).
const MAX_VARIANTS: usize = 8;

/// Every API's store, in the gateway's runtime.
#[derive(Default)]
pub struct CacheStores {
    apis: Mutex<HashMap<Box<str>, Arc<ApiStore>>>,
    /// The shared level, when the gateway was started with one (`--redis`).
    shared: OnceLock<Arc<SharedLevel>>,
}

impl CacheStores {
    /// The store of API `id`, bounded to `max_size` bytes (a rebuild with a new bound
    /// resizes it, keeping what fits). Locked at build time only.
    pub(crate) fn for_api(&self, id: &str, max_size: u64) -> Arc<ApiStore> {
        let mut apis = self.apis.lock().unwrap_or_else(PoisonError::into_inner);
        let store = match apis.get(id) {
            Some(store) => {
                if store.entries.capacity() != max_size {
                    store.entries.set_capacity(max_size);
                }
                store.clone()
            }
            None => {
                let store = Arc::new(ApiStore::new(id, max_size));
                apis.insert(id.into(), store.clone());
                store
            }
        };
        if let Some(level) = self.shared.get() {
            let _ = store.shared.set(level.clone());
        }
        store
    }

    /// Gives every API built from now on with `shared: redis` the shared level `level`.
    /// `false` if one was attached already (one per process).
    pub fn attach_shared(&self, level: Arc<SharedLevel>) -> bool {
        self.shared.set(level).is_ok()
    }

    /// The store of API `id`, if one was built.
    pub fn get(&self, id: &str) -> Option<Arc<ApiStore>> {
        let apis = self.apis.lock().unwrap_or_else(PoisonError::into_inner);
        apis.get(id).cloned()
    }
}

/// The variants stored under one key: most keys have one, kept without a list (one
/// allocation less per entry, and one reference count less per lookup).
#[derive(Clone)]
enum Variants {
    One(Arc<Variant>),
    Many(Arc<[Arc<Variant>]>),
}

impl Variants {
    fn iter(&self) -> std::slice::Iter<'_, Arc<Variant>> {
        match self {
            Variants::One(v) => std::slice::from_ref(v).iter(),
            Variants::Many(vs) => vs.iter(),
        }
    }
}

#[derive(Clone)]
struct ByBytes;

impl Weighter<String, Variants> for ByBytes {
    /// The memory the entry holds (see [`footprint`]): its key's string, its slot in
    /// the store, its variants and their list.
    fn weight(&self, key: &String, val: &Variants) -> u64 {
        let list = match val {
            Variants::One(_) => 0,
            Variants::Many(vs) => 16 + vs.len() * size_of::<usize>() + PER_ALLOCATION,
        };
        let own = key.capacity() + PER_ALLOCATION + STORE_SLOT + list;
        own as u64 + val.iter().map(|v| v.weight).sum::<u64>()
    }
}

/// One API's cached responses and in-flight misses.
///
/// Both maps hash with foldhash, seeded per process (keys are request paths: SipHash
/// was a tenth of a miss's instructions, and a seeded hash still keeps a client from
/// choosing colliding keys offline).
pub struct ApiStore {
    /// The API's id (the shared level's namespace).
    id: Arc<str>,
    entries: Cache<String, Variants, ByBytes, RandomState>,
    flights: Flights,
    /// The highest purge id applied (purges arrive with every snapshot; each applies once).
    purged: AtomicU64,
    /// The shared level, when the process has one (used only by caches saying
    /// `shared: redis`), and the purges applied here that have not reached it yet
    /// (while any is pending, this API reads and writes around it).
    shared: OnceLock<Arc<SharedLevel>>,
    purges_pending: Arc<AtomicUsize>,
    /// Whether a `public` answer was ever stored under the shared key of a request
    /// whose callers have keys of their own (until then their misses look up one key).
    public: AtomicBool,
    /// How often keys were asked, made for the first cache of the API that says
    /// `min_uses`, or for the selective mode of adaptive admission (uses.rs).
    uses: OnceLock<Uses>,
    /// Whether misses store every answer or only keys asked before (admission.rs).
    admission: Admission,
}

/// One stored response (one `Vary` variant of a key).
pub(crate) struct Variant {
    /// The RFC 9111 policy: built when stored for an answer with caching headers of its
    /// own, else (a plain answer, [`rfc::is_plain`]) on first need: a request with
    /// directives of its own, or a stale entry judged. Boxed: most entries never have
    /// one, and each byte of an entry is held for its life.
    policy: OnceLock<Box<CachePolicy>>,
    pub(crate) status: StatusCode,
    /// The head, the `Host` and `Vary`'d request values it was stored for (what a
    /// request without cache directives of its own must match), and the body.
    copied: Detached,
    /// Until when it is fresh, and how long after that it may still be served while
    /// one request refreshes it, or in place of an upstream failure.
    pub(crate) fresh_until: SystemTime,
    pub(crate) stale_while_revalidate: Duration,
    pub(crate) stale_if_error: Duration,
    pub(crate) tags: Box<[Box<str>]>,
    /// When it was received, the `Age` it arrived with, and the configured TTL (the
    /// freshness of an answer stating none): what rebuilds its policy.
    received_at: SystemTime,
    arrived_age: Duration,
    ttl: Duration,
    /// The request method it was stored for.
    method: Method,
    /// `Vary: *` (never reused without the RFC rules).
    vary_star: bool,
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
    /// Something is stored under the key, nothing usable for this request.
    Nothing,
    /// Nothing is stored under the key (what its answer's store is then told, so it
    /// inserts without looking the key up again).
    Absent,
}

/// An upstream answer about to be stored (its head and body are copied).
pub(crate) struct Received<'a> {
    pub(crate) status: StatusCode,
    pub(crate) headers: &'a HeaderMap,
    pub(crate) body: &'a Bytes,
    pub(crate) at: SystemTime,
    /// The `Age` it arrived with.
    pub(crate) arrived_age: Duration,
    /// The configured TTL (freshness of an answer stating none).
    pub(crate) ttl: Duration,
    /// stale-while-revalidate and stale-if-error.
    pub(crate) stale: (Duration, Duration),
    pub(crate) tags: Box<[Box<str>]>,
}

impl Variant {
    /// `policy`: the RFC policy already built for an answer with caching headers;
    /// `None` for a plain one (its freshness is the TTL less the `Age` it arrived with,
    /// which is what the policy would compute). `None` for a head too large to keep.
    pub(crate) fn new(
        r: Received<'_>,
        method: &Method,
        req: &RequestHead,
        policy: Option<Box<CachePolicy>>,
    ) -> Option<Variant> {
        let arrived_age = r.arrived_age;
        let fresh_until = match &policy {
            Some(p) => r.at + p.time_to_live(r.at),
            None => r.at + rfc::default_max_age(r.ttl).saturating_sub(arrived_age),
        };
        let (selecting, room, vary_star) = selecting(req, r.headers);
        let copied = detach(r.headers, selecting, room, r.body)?;
        let weight = footprint(size_of::<Variant>(), &copied, &r.tags, policy.is_some());
        let cell = OnceLock::new();
        if let Some(p) = policy {
            let _ = cell.set(p);
        }
        Some(Variant {
            policy: cell,
            status: r.status,
            weight,
            copied,
            fresh_until,
            stale_while_revalidate: r.stale.0,
            stale_if_error: r.stale.1,
            tags: r.tags,
            received_at: r.at,
            arrived_age,
            ttl: r.ttl,
            method: method.clone(),
            vary_star,
        })
    }

    /// The head (its map built when first asked for: a hit, a revalidation).
    pub(crate) fn headers(&self) -> &HeaderMap {
        self.copied.headers()
    }

    pub(crate) fn body(&self) -> Bytes {
        self.copied.body()
    }

    /// The RFC policy, built from what was stored when first needed. A plain answer's
    /// request kept nothing but `Host` and its `Vary`'d values, which `copied` holds.
    fn policy(&self) -> &CachePolicy {
        self.policy.get_or_init(|| {
            let mut req = HeaderMap::new();
            for (name, value) in self.copied.kept_values() {
                if let Some(v) = value {
                    req.append(name, v);
                }
            }
            let presented = Presented {
                method: &self.method,
                headers: &req,
            };
            Box::new(rfc::policy(
                &presented,
                self.status,
                self.headers(),
                self.ttl,
                self.received_at,
            ))
        })
    }

    /// How old it is at `now` (RFC 9111 4.2.3: the `Age` it arrived with plus the time
    /// held here).
    pub(crate) fn age(&self, now: SystemTime) -> Duration {
        self.arrived_age + now.duration_since(self.received_at).unwrap_or_default()
    }

    /// How long it has been stale at `now` (`None` while fresh).
    fn staleness(&self, now: SystemTime) -> Option<Duration> {
        now.duration_since(self.fresh_until).ok()
    }

    /// Whether it may replace an upstream failure at `now`.
    pub(crate) fn serves_errors(&self, now: SystemTime) -> bool {
        self.staleness(now).is_none_or(|s| s <= self.stale_if_error)
    }

    pub(crate) fn judge(self: &Arc<Self>, req: &Presented<'_>, now: SystemTime) -> Found {
        if let Some(found) = self.judge_plain(req, now) {
            return found;
        }
        match self.policy().before_request(req, now) {
            BeforeRequest::Fresh(_) => Found::Fresh(self.clone()),
            BeforeRequest::Stale { matches: false, .. } => Found::Nothing,
            BeforeRequest::Stale { matches: true, .. } => match self.staleness(now) {
                // Still fresh by time: the request itself asked to revalidate.
                None => Found::Fallback(self.clone()),
                Some(s) if s <= self.stale_while_revalidate => Found::Stale(self.clone()),
                Some(s) if s <= self.stale_if_error => Found::Fallback(self.clone()),
                // Kept to be revalidated (revalidate.rs) by the request that goes
                // upstream; never sent without a 304 (it serves no errors this stale).
                Some(_) if VALIDATORS.iter().any(|v| self.copied.has(v)) => {
                    Found::Fallback(self.clone())
                }
                Some(_) => Found::Nothing,
            },
        }
    }
}

impl Variant {
    /// The common case without the RFC machinery: a request with no cache directives
    /// of its own is matched on method, `Host` and the `Vary`'d values, and is fresh
    /// until the freshness computed when stored. That is what `before_request` decides
    /// then, without building (cloning headers, formatting a date) a response to throw
    /// away. `None`: the full rules decide (request directives, `Vary: *`, stale).
    fn judge_plain(self: &Arc<Self>, req: &Presented<'_>, now: SystemTime) -> Option<Found> {
        let h = req.headers;
        if self.vary_star || h.contains_key(CACHE_CONTROL) || h.contains_key(PRAGMA) {
            return None;
        }
        let same = *req.method == self.method && self.copied.selects(h);
        if !same {
            return Some(Found::Nothing);
        }
        (now < self.fresh_until).then(|| Found::Fresh(self.clone()))
    }
}

impl ToWire for Variant {
    /// Its shared-level form under the full `key`, fetched in purge `generation`.
    fn to_wire(&self, key: &str, generation: u64) -> WireEntry {
        WireEntry {
            key: key.to_owned(),
            generation,
            status: self.status,
            method: self.method.clone(),
            selecting: self.copied.kept_values().collect(),
            vary_star: self.vary_star,
            headers: self.headers().clone(),
            body: self.body(),
            received_at_ms: unix_ms(self.received_at),
            fresh_until_ms: unix_ms(self.fresh_until),
            arrived_age_s: self.arrived_age.as_secs(),
            ttl_ms: millis(self.ttl),
            stale_while_revalidate_ms: millis(self.stale_while_revalidate),
            stale_if_error_ms: millis(self.stale_if_error),
            tags: self.tags.to_vec(),
        }
    }
}

impl Variant {
    /// A variant read back from the shared level (its RFC policy, if ever needed, is
    /// rebuilt from what it kept, as for a plain answer).
    pub(crate) fn from_wire(e: WireEntry) -> Option<Variant> {
        let kept = e.selecting.iter().map(|(n, v)| (n.clone(), v.as_ref()));
        let room = e
            .selecting
            .iter()
            .flat_map(|(_, v)| v)
            .map(HeaderValue::len)
            .sum();
        let copied = detach(&e.headers, kept, room, &e.body)?;
        let tags: Box<[Box<str>]> = e.tags.into();
        let weight = footprint(size_of::<Variant>(), &copied, &tags, false);
        Some(Variant {
            policy: OnceLock::new(),
            status: e.status,
            weight,
            copied,
            fresh_until: UNIX_EPOCH + Duration::from_millis(e.fresh_until_ms),
            stale_while_revalidate: Duration::from_millis(e.stale_while_revalidate_ms),
            stale_if_error: Duration::from_millis(e.stale_if_error_ms),
            tags,
            received_at: UNIX_EPOCH + Duration::from_millis(e.received_at_ms),
            arrived_age: Duration::from_secs(e.arrived_age_s),
            ttl: Duration::from_millis(e.ttl_ms),
            method: e.method,
            vary_star: e.vary_star,
        })
    }

    /// How long the shared level should keep it from `now`: its freshness left plus
    /// the longer of its stale windows (zero: not worth sharing).
    pub(crate) fn shared_ttl(&self, now: SystemTime) -> Duration {
        let fresh = self.fresh_until.duration_since(now).unwrap_or_default();
        if fresh.is_zero() {
            return Duration::ZERO;
        }
        fresh + self.stale_while_revalidate.max(self.stale_if_error)
    }
}

fn unix_ms(t: SystemTime) -> u64 {
    millis(t.duration_since(UNIX_EPOCH).unwrap_or_default())
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// The request headers a stored answer is selected by, with the request's values:
/// `Host` and the headers the response varies on; the host value's bytes; and whether
/// it varies on `*`.
fn selecting<'a>(
    req: &'a RequestHead,
    resp: &'a HeaderMap,
) -> (
    impl Iterator<Item = (HeaderName, Option<&'a HeaderValue>)> + 'a,
    usize,
    bool,
) {
    let vary = resp.get_all(VARY);
    let listed = move || {
        vary.iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(','))
            .take(MAX_VARY)
            .map(str::trim)
    };
    let star = listed().any(|n| n == "*");
    // A name is made lowercase as it is parsed.
    let varied = listed()
        .filter(|n| *n != "*")
        .filter_map(|n| HeaderName::from_bytes(n.as_bytes()).ok())
        .map(|n| {
            let value = req.get(&n);
            (n, value)
        });
    let host = req.get(&HOST);
    let room = host.map_or(0, HeaderValue::len);
    (std::iter::once((HOST, host)).chain(varied), room, star)
}

impl ApiStore {
    fn new(id: &str, max_size: u64) -> ApiStore {
        // Estimated items: a 4 KiB average entry.
        let items = (max_size / 4096).clamp(16, 1 << 20) as usize;
        ApiStore {
            id: id.into(),
            entries: Cache::with(
                items,
                max_size,
                ByBytes,
                RandomState::default(),
                Default::default(),
            ),
            flights: Flights::default(),
            purged: AtomicU64::new(0),
            shared: OnceLock::new(),
            purges_pending: Arc::new(AtomicUsize::new(0)),
            public: AtomicBool::new(false),
            uses: OnceLock::new(),
            admission: Admission::default(),
        }
    }

    /// The store's adaptive admission state (admission.rs).
    pub(crate) fn admission(&self) -> &Admission {
        &self.admission
    }

    /// Whether adaptive admission stores only keys asked before (`/metrics`).
    pub fn selective(&self) -> bool {
        self.admission.selective()
    }

    /// Misses not stored because the store was selective (`/metrics`).
    pub fn unadmitted_total(&self) -> u64 {
        self.admission.unadmitted_total()
    }

    /// Tests: decide the admission mode every `lookups` lookups instead of
    /// [`crate::admission::WINDOW`], starting a new window.
    #[doc(hidden)]
    pub fn set_admission_window(&self, lookups: u32) {
        self.admission.set_window(lookups);
    }

    /// Whether this request is at least the `n`th for `key` (`min_uses`; counted if
    /// not): its answer may be stored.
    #[inline]
    pub(crate) fn used(&self, key: &str, n: u8) -> bool {
        n <= 1
            || self
                .uses
                .get_or_init(|| Uses::new(self.entries.capacity()))
                .reached(key, n)
    }

    /// Whether `key` was asked before (adaptive admission's selective mode; counted if
    /// not).
    pub(crate) fn seen_before(&self, key: &str) -> bool {
        self.uses
            .get_or_init(|| Uses::new(self.entries.capacity()))
            .seen_before(key)
    }

    /// Whether callers' lookups must fall back to the shared key.
    pub(crate) fn holds_public(&self) -> bool {
        self.public.load(Ordering::Relaxed)
    }

    pub(crate) fn mark_public(&self) {
        if !self.holds_public() {
            self.public.store(true, Ordering::Relaxed);
        }
    }

    /// The API's id.
    pub(crate) fn id(&self) -> &Arc<str> {
        &self.id
    }

    /// The shared level, if the process has one and no purge of this API is still on
    /// its way to it.
    pub(crate) fn shared(&self) -> Option<&Arc<SharedLevel>> {
        let level = self.shared.get()?;
        (self.purges_pending.load(Ordering::Acquire) == 0).then_some(level)
    }

    /// The best answer stored under `key` for `req`: fresh, else stale, else fallback.
    /// (`now` is read only when something is stored under `key`.)
    pub(crate) fn lookup(
        &self,
        key: &str,
        req: &Presented<'_>,
        now: &dyn Fn() -> SystemTime,
    ) -> Found {
        let Some(variants) = self.entries.get(key) else {
            return Found::Absent;
        };
        let now = now();
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

    /// Stores `variant` under `key`, replacing the variant the same request `req` would
    /// select (same `Vary` values) and keeping at most [`MAX_VARIANTS`].
    /// `req` `None`: the request's lookup found nothing under `key` (while its miss was
    /// led, no other request stored it), so it is inserted without a second lookup.
    /// (`now` is read only when `key` holds variants.)
    pub(crate) fn store(
        &self,
        key: String,
        req: Option<&Presented<'_>>,
        variant: Arc<Variant>,
        now: &dyn Fn() -> SystemTime,
    ) {
        let old = req.and_then(|req| Some((req, self.entries.get(key.as_str())?)));
        let Some((req, old)) = old else {
            // A new key (most stores): no list.
            self.entries.insert(key, Variants::One(variant));
            return;
        };
        let now = now();
        let mut list: Vec<Arc<Variant>> = old
            .iter()
            .filter(|v| matches!(v.judge(req, now), Found::Nothing))
            .cloned()
            .collect();
        if list.len() >= MAX_VARIANTS {
            list.remove(0);
        }
        list.push(variant);
        let variants = match <[Arc<Variant>; 1]>::try_from(list) {
            Ok([one]) => Variants::One(one),
            Err(list) => Variants::Many(list.into()),
        };
        self.entries.insert(key, variants);
    }

    /// Entries held and their bytes.
    pub fn usage(&self) -> (usize, u64) {
        (self.entries.len(), self.entries.weight())
    }

    /// Applies the purges not applied yet (those above the highest id applied), at
    /// build time. A store created after a purge was listed has nothing it could drop.
    /// With a shared level (and a cache of the API that uses it), each also bumps the
    /// API's generation there (shared.rs).
    pub(crate) fn apply_purges(self: &Arc<Self>, purges: &[CachePurge], shared: bool) {
        let done = self.purged.load(Ordering::Acquire);
        let mut highest = done;
        for p in purges.iter().filter(|p| p.id > done) {
            match (&p.prefix, &p.tag) {
                (Some(prefix), _) => self.purge_prefix(prefix),
                (None, Some(tag)) => self.purge_tag(tag),
                (None, None) => self.purge_all(),
            }
            if let Some(level) = self.shared.get().filter(|_| shared) {
                level.purge(self.id.clone(), self.purges_pending.clone(), p.id);
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
    /// (dropping it wakes the followers), `Err(flight)` for a follower to wait on.
    pub(crate) fn fly(self: &Arc<Self>, key: &str) -> Result<Flight, Follow> {
        let led = self.flights.join(key)?;
        Ok(Flight {
            store: self.clone(),
            led,
        })
    }

    /// Whether a miss of `key` is in flight (someone is refreshing it).
    pub(crate) fn in_flight(&self, key: &str) -> bool {
        self.flights.in_flight(key)
    }
}

/// The leader of a miss: while it lives, other misses of its key wait; dropped (stored,
/// not storable, failed, or the request went away), they wake.
pub(crate) struct Flight {
    store: Arc<ApiStore>,
    led: Led,
}

impl Drop for Flight {
    fn drop(&mut self) {
        self.store.flights.end(&self.led);
    }
}
