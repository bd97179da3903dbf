//! The `cache` kind ([`Cache`]) and its policy ([`ResponseCache`]).
//!
//! On the request side a fresh stored answer is sent at once (`X-Cache: HIT`); a
//! stale one within stale-while-revalidate is sent (`STALE`) while one request, the
//! leader, refreshes it; otherwise the request leads the key's miss, or, when another
//! request already leads it, waits (bounded) for that one's stored answer. On the
//! response side the upstream's answer is judged by RFC 9111 and stored, or, when the
//! upstream failed, replaced by a stale answer within stale-if-error.

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use http::header::{HeaderValue, AGE};
use http::{request, response, HeaderMap, HeaderName, Method, Response, StatusCode};
use http_cache_semantics::CachePolicy;
use turnpike_model::clock::Clock;
use turnpike_model::policy::CacheSpec;
use turnpike_policy::{
    BuildCx, Flow, FromCache, GatewayError, HookResult, Hooks, Policy, PolicyKind, RequestCtx,
    Stage, Step,
};

use crate::admission::Watch;
use crate::key::{keys, Keys};
use crate::request::{Asked, RequestHead};
use crate::revalidate;
use crate::rfc::{self, directive, seconds_directive, Said};
use crate::settings::Settings;
use crate::shared::{Fetched, SharedLevel, Write};
use crate::store::{ApiStore, Flight, Found, Presented, Received, Variant};
use crate::wire::WireEntry;

use crate::label::X_CACHE;

/// How the cache answered a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Label {
    Hit,
    Miss,
    Stale,
    Bypass,
    Revalidated,
}

impl Label {
    /// Each a constant: `from_static` made at run time checks its bytes every time.
    fn value(self) -> HeaderValue {
        const HIT: HeaderValue = HeaderValue::from_static("HIT");
        const MISS: HeaderValue = HeaderValue::from_static("MISS");
        const STALE: HeaderValue = HeaderValue::from_static("STALE");
        const BYPASS: HeaderValue = HeaderValue::from_static("BYPASS");
        const REVALIDATED: HeaderValue = HeaderValue::from_static("REVALIDATED");
        match self {
            Label::Hit => HIT,
            Label::Miss => MISS,
            Label::Stale => STALE,
            Label::Bypass => BYPASS,
            Label::Revalidated => REVALIDATED,
        }
    }
}

/// What one request's request side left for its response side (in `ctx.cache`).
struct Exchange {
    label: Label,
    keys: Option<Keys>,
    method: Method,
    /// The request headers RFC 9111 compares later (host, cache directives, the
    /// `Vary`'d ones: filtered when the answer is stored), and what they say.
    req_headers: RequestHead,
    asked: Asked,
    leader: Option<Flight>,
    /// A stored answer to send if the upstream fails.
    fallback: Option<Arc<Variant>>,
    /// Whether the upstream request asks conditionally for `fallback` (revalidate.rs).
    revalidating: bool,
    /// The lookup found nothing stored under the request's keys (its answer's store
    /// need not look again).
    absent: bool,
    /// The API's purge generation in the shared level, read before going upstream:
    /// what the answer is written through with (`None`: not written through).
    generation: Option<u64>,
    /// Set by the response headers hook: the stored answer sent instead of the
    /// upstream's (stale in place of a failure, or revalidated by a 304).
    serve: Option<(Arc<Variant>, Label)>,
    /// Set by the response headers hook: the answer will be stored.
    candidate: Option<Candidate>,
    /// Set by the response headers hook: the `Age` the answer arrived with.
    arrived_age: Duration,
}

impl Exchange {
    /// Boxed once, when made, and only when the response side needs it (a hit makes
    /// none): it is a few hundred bytes, and each move of it was a copy.
    fn boxed(label: Label, method: &Method) -> Box<Exchange> {
        Box::new(Exchange {
            label,
            keys: None,
            method: method.clone(),
            req_headers: RequestHead::default(),
            asked: Asked::default(),
            leader: None,
            fallback: None,
            revalidating: false,
            absent: false,
            generation: None,
            serve: None,
            candidate: None,
            arrived_age: Duration::ZERO,
        })
    }
}

/// What a miss not to be stored (`min_uses` not reached) leaves for its response side:
/// nothing but that (no allocation: it has no size).
struct Unstored;

/// An answer judged storable from its head.
struct Candidate {
    /// `public`: stored under the shared key, else under the caller's.
    public: bool,
    /// The RFC policy, built only for an answer with caching headers (`None`: plain).
    /// Boxed: it is large, and a plain answer's `Exchange` should not carry its room.
    policy: Option<Box<CachePolicy>>,
    /// When its head arrived.
    at: SystemTime,
}

/// The response cache of one API.
pub struct ResponseCache {
    settings: Settings,
    store: Arc<ApiStore>,
    clock: Arc<dyn Clock>,
}

impl ResponseCache {
    pub(crate) fn new(settings: Settings, store: Arc<ApiStore>, clock: Arc<dyn Clock>) -> Self {
        ResponseCache {
            settings,
            store,
            clock,
        }
    }

    /// This API's store (tests and purges read it).
    pub fn store(&self) -> &Arc<ApiStore> {
        &self.store
    }

    fn now(&self) -> SystemTime {
        UNIX_EPOCH + Duration::from_nanos(self.clock.now().as_nanos())
    }

    /// The caller's own entry first, then the shared (`public`) one.
    /// (The shared key is not looked up while the API never stored a `public` answer
    /// under callers' keys: most APIs never do, and a miss then costs one lookup.)
    /// (`now` is read only when something is stored under a key.)
    fn find(&self, keys: &Keys, req: &Presented<'_>, now: &dyn Fn() -> SystemTime) -> Found {
        if let Some(own) = keys.consumer() {
            let found = self.store.lookup(own, req, now);
            if !matches!(found, Found::Nothing | Found::Absent) || !self.store.holds_public() {
                return found;
            }
            return match (found, self.store.lookup(keys.shared(), req, now)) {
                // Absent means absent under every key looked up.
                (Found::Nothing, Found::Absent) => Found::Nothing,
                (_, shared) => shared,
            };
        }
        self.store.lookup(keys.shared(), req, now)
    }

    /// Whether a miss of `key` may store its answer: from its `min_uses`th request;
    /// with adaptive admission, every miss, or while the store is selective a key
    /// asked before (admission.rs).
    fn admits(&self, key: &str) -> bool {
        if !self.settings.adaptive {
            return self.store.used(key, self.settings.min_uses);
        }
        let admission = self.store.admission();
        if !admission.selective() {
            return true;
        }
        let seen = self.store.seen_before(key);
        if !seen {
            admission.unadmitted();
        }
        seen
    }

    /// Starts the task that ends the store's selective mode once no window has
    /// confirmed it for a second (admission.rs), or ends the mode now without a runtime.
    #[cold]
    fn watch_admission(&self) {
        let (store, clock) = (self.store.clone(), self.clock.clone());
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            store.admission().end();
            return;
        };
        runtime.spawn(async move {
            while let Some(wait) = store.admission().expiry(clock.now().as_nanos()) {
                tokio::time::sleep(wait).await;
            }
        });
    }

    /// The key an answer is stored under: the caller's own, or for a `public` one the
    /// shared key (which callers' lookups then fall back to).
    fn key_for(&self, keys: Keys, public: bool) -> String {
        if public && keys.consumer().is_some() {
            self.store.mark_public();
        }
        keys.into_key(public)
    }

    fn answer(&self, v: &Variant, now: SystemTime, label: Label, head: bool) -> Response<Bytes> {
        let body = if head { Bytes::new() } else { v.body() };
        let mut resp = Response::new(body);
        *resp.status_mut() = v.status;
        *resp.headers_mut() = v.headers().clone();
        stamp(resp.headers_mut(), v, now, label);
        resp
    }

    /// The request side once nothing fresh was found: lead the key's miss, or wait for
    /// its leader and then answer from what it stored.
    fn miss<'a>(
        &'a self,
        ctx: &'a mut RequestCtx,
        req: &'a mut request::Parts,
        mut x: Box<Exchange>,
    ) -> Step<'a> {
        let Some(keys) = x.keys.take() else {
            return Step::CONTINUE;
        };
        let waiting = match self.store.fly(keys.own()) {
            Ok(flight) => {
                x.leader = Some(flight);
                if let Some(level) = self.shared_level() {
                    return Step::Pending(Box::pin(self.lead_shared(ctx, req, x, keys, level)));
                }
                lead(ctx, req, x, keys);
                return Step::CONTINUE;
            }
            Err(waiting) => waiting,
        };
        Step::Pending(Box::pin(async move {
            waiting.wait(self.settings.lock_timeout).await;
            let now = self.now();
            let presented = Presented {
                method: &req.method,
                headers: &req.headers,
            };
            if let Found::Fresh(v) = self.find(&keys, &presented, &|| now) {
                ctx.ext.insert(FromCache);
                let head = req.method == Method::HEAD;
                return Ok(Flow::Respond(self.answer(&v, now, Label::Hit, head)));
            }
            // Not storable, failed, or too slow: this one goes upstream itself (the
            // leader may have stored another variant of the key meanwhile).
            x.keys = Some(keys);
            x.absent = false;
            keep_exchange(ctx, x);
            Ok(Flow::Continue)
        }))
    }

    /// The shared level, for an API that says `shared: redis`, while it is up and no
    /// purge of the API is on its way to it.
    fn shared_level(&self) -> Option<&SharedLevel> {
        if !self.settings.shared {
            return None;
        }
        self.store.shared().filter(|l| l.is_up()).map(|l| &**l)
    }

    /// The leader of a miss on an API with a shared level: asks Redis first; a fresh
    /// answer there fills this gateway's store and is sent (`HIT`, its `Age` counted
    /// from when the back end gave it); otherwise the request goes upstream, and its
    /// answer will be written through with the generation just read.
    async fn lead_shared(
        &self,
        ctx: &mut RequestCtx,
        req: &mut request::Parts,
        mut x: Box<Exchange>,
        keys: Keys,
        level: &SharedLevel,
    ) -> HookResult {
        let fetched = level
            .fetch(self.store.id(), keys.consumer(), keys.shared())
            .await;
        if let Some(Fetched {
            generation,
            own,
            shared,
        }) = fetched
        {
            let now = self.now();
            if let Some(v) = self.adopt(&keys, [own, shared], req, now) {
                ctx.ext.insert(FromCache);
                let head = req.method == Method::HEAD;
                // Dropping `x` ends the flight: its followers find the entry stored.
                return Ok(Flow::Respond(self.answer(&v, now, Label::Hit, head)));
            }
            x.generation = Some(generation);
        }
        lead(ctx, req, x, keys);
        Ok(Flow::Continue)
    }

    /// The first entry read from the shared level that is fresh for `req`, stored here
    /// under its key.
    /// (`found`: what Redis holds under the caller's own key and under the shared one.)
    fn adopt(
        &self,
        keys: &Keys,
        found: [Option<WireEntry>; 2],
        req: &request::Parts,
        now: SystemTime,
    ) -> Option<Arc<Variant>> {
        let presented = Presented {
            method: &req.method,
            headers: &req.headers,
        };
        let [own, shared] = found;
        for (entry, public) in [(own, false), (shared, true)] {
            let Some(variant) = entry.and_then(Variant::from_wire) else {
                continue;
            };
            let variant = Arc::new(variant);
            if let Found::Fresh(v) = variant.judge(&presented, now) {
                let key = self.key_for(keys.clone(), public);
                self.store.store(key, Some(&presented), v.clone(), &|| now);
                return Some(v);
            }
        }
        None
    }

    /// Stores `variant` under `key` (`absent`: known to hold nothing, else the variants
    /// it holds are judged for `x`'s request), and writes it through to the shared level
    /// when this request read the level's generation before going upstream.
    fn put(&self, x: &Exchange, key: String, variant: Arc<Variant>, absent: bool) {
        let presented = (!absent).then(|| Presented {
            method: &x.method,
            headers: x.req_headers.map(),
        });
        let req = presented.as_ref();
        let through = x.generation.zip(self.shared_level());
        let Some((generation, level)) = through else {
            // The clock is read only if the key holds variants to judge.
            self.store.store(key, req, variant, &|| self.now());
            return;
        };
        let now = self.now();
        self.store.store(key.clone(), req, variant.clone(), &|| now);
        let ttl = variant.shared_ttl(now);
        if !ttl.is_zero() {
            level.write(Write {
                api: self.store.id().clone(),
                key,
                generation,
                entry: variant,
                ttl,
            });
        }
    }

    /// Whether the upstream's answer may be stored, judged from its head alone.
    /// The cheapest checks first: an unstorable status costs no header lookup.
    fn candidate(&self, x: &Exchange, resp: &response::Parts) -> Option<Candidate> {
        let keys = x.keys.as_ref()?;
        if !self.settings.statuses.contains(&resp.status.as_u16()) {
            return None;
        }
        let said = Said::read(&resp.headers);
        let too_large = || {
            said.length(&resp.headers)
                .is_some_and(|n| n > self.settings.max_entry)
        };
        // A response that sets a cookie is one caller's, whatever it says (RFC 9111
        // allows storing it; every gateway that did leaked sessions).
        if said.set_cookie || too_large() {
            return None;
        }
        let by_consumer = keys.consumer().is_some();
        let at = self.now();
        if rfc::plain_given(&x.method, x.asked, resp.status, said.caching, by_consumer) {
            return Some(Candidate {
                public: false,
                policy: None,
                at,
            });
        }
        // What the head alone forbids, before building the RFC policy (which copies
        // and parses both heads): a miss of an unstorable answer costs nothing more.
        // `no-cache` is stored only to be revalidated, so only with a validator.
        let unrevalidatable =
            || directive(&resp.headers, "no-cache") && !revalidate::has_validator(&resp.headers);
        if directive(&resp.headers, "no-store")
            || directive(&resp.headers, "private")
            || unrevalidatable()
        {
            return None;
        }
        let req_headers = kept_request_headers(x.req_headers.map(), &resp.headers, by_consumer);
        let presented = Presented {
            method: &x.method,
            headers: &req_headers,
        };
        let policy = rfc::policy(
            &presented,
            resp.status,
            &resp.headers,
            self.settings.ttl,
            at,
        );
        if !storable(&policy, &resp.headers, at) {
            return None;
        }
        Some(Candidate {
            public: directive(&resp.headers, "public"),
            policy: Some(Box::new(policy)),
            at,
        })
    }

    /// Stores the answer under the key its candidate chose (moving the key out).
    fn keep(&self, x: &mut Exchange, c: Candidate, resp: &response::Parts, body: &Bytes) {
        if body.len() as u64 > self.settings.max_entry {
            return;
        }
        let Some(keys) = x.keys.take() else {
            return;
        };
        // A `public` answer of a caller's request goes under the shared key, which
        // its lookup may not have asked.
        let absent = x.absent && (!c.public || keys.consumer().is_none());
        let key = self.key_for(keys, c.public);
        let plain = c.policy.is_none();
        let head = (resp.status, &resp.headers);
        let received = self.received(head, body, c.at, plain, x.arrived_age);
        if let Some(variant) = Variant::new(received, &x.method, &x.req_headers, c.policy) {
            self.put(x, key, Arc::new(variant), absent);
        }
    }

    /// An answer about to be stored: its stale windows (none for one that must be
    /// revalidated) and tags. (`plain`: [`rfc::is_plain`], so it has no `Cache-Control`;
    /// `arrived_age`: the `Age` it arrived with.)
    fn received<'a>(
        &self,
        (status, headers): (StatusCode, &'a HeaderMap),
        body: &'a Bytes,
        at: SystemTime,
        plain: bool,
        arrived_age: Duration,
    ) -> Received<'a> {
        let defaults = (
            self.settings.stale_while_revalidate,
            self.settings.stale_if_error,
        );
        // Without `Cache-Control` (most answers) nothing below can differ: skip the scans.
        let stale = match plain || !headers.contains_key(http::header::CACHE_CONTROL) {
            true => defaults,
            false => stale_windows(headers, defaults),
        };
        Received {
            status,
            tags: self.tags(headers),
            headers,
            body,
            at,
            arrived_age,
            ttl: self.settings.ttl,
            stale,
        }
    }

    /// A 304 to this request's conditional: `stored` with its head updated, stored
    /// again (when still storable) under the key the answer says. `None`: the 304 is
    /// for another representation (its `ETag` differs), or the head is too large to keep.
    fn refresh(
        &self,
        x: &mut Exchange,
        stored: &Variant,
        resp: &response::Parts,
    ) -> Option<Arc<Variant>> {
        let head = revalidate::updated_head(stored.headers(), &resp.headers, &X_CACHE)?;
        let keys = x.keys.take()?;
        let by_consumer = keys.consumer().is_some();
        let at = self.now();
        let policy =
            (!rfc::is_plain(&x.method, x.asked, stored.status, &head, by_consumer)).then(|| {
                let kept = kept_request_headers(x.req_headers.map(), &head, by_consumer);
                let presented = Presented {
                    method: &x.method,
                    headers: &kept,
                };
                Box::new(rfc::policy(
                    &presented,
                    stored.status,
                    &head,
                    self.settings.ttl,
                    at,
                ))
            });
        let keep = policy.as_ref().is_none_or(|p| storable(p, &head, at));
        let key = self.key_for(keys, directive(&head, "public"));
        let body = stored.body();
        let plain = policy.is_none();
        let age = rfc::age_header(&head);
        let received = self.received((stored.status, &head), &body, at, plain, age);
        let variant = Arc::new(Variant::new(received, &x.method, &x.req_headers, policy)?);
        if keep {
            self.put(x, key, variant.clone(), false);
        }
        Some(variant)
    }

    fn tags(&self, headers: &HeaderMap) -> Box<[Box<str>]> {
        let Some(name) = &self.settings.tag_header else {
            return Box::new([]);
        };
        headers
            .get_all(name)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split([',', ' ']))
            .filter(|t| !t.is_empty())
            .take(64)
            .map(Into::into)
            .collect()
    }
}

impl Policy for ResponseCache {
    fn name(&self) -> &'static str {
        Cache::NAME
    }

    fn hooks(&self) -> Hooks {
        Hooks::REQUEST_HEADERS | Hooks::RESPONSE_HEADERS | Hooks::RESPONSE_BODY
    }

    fn on_request_headers<'a>(
        &'a self,
        ctx: &'a mut RequestCtx,
        req: &'a mut request::Parts,
    ) -> Step<'a> {
        let s = &self.settings;
        let asked = Asked::read(&req.headers, &s.credentials, s.asked_lengths);
        let no_store = || asked.directives && directive(&req.headers, "no-store");
        if !self.settings.methods.contains(&req.method) || no_store() {
            keep_exchange(ctx, Exchange::boxed(Label::Bypass, &req.method));
            return Step::CONTINUE;
        }
        let keys = keys(&self.settings, ctx, req, asked.credential);
        // The clock is read only when a stored answer is judged (a miss never does).
        let clock = std::cell::OnceCell::new();
        let now = || *clock.get_or_init(|| self.now());
        let presented = Presented {
            method: &req.method,
            headers: &req.headers,
        };
        let head = req.method == Method::HEAD;
        let found = self.find(&keys, &presented, &now);
        if self.settings.adaptive {
            let hit = matches!(found, Found::Fresh(_) | Found::Stale(_));
            if self.store.admission().count(hit, &*self.clock) == Watch::Start {
                self.watch_admission();
            }
        }
        let absent = matches!(found, Found::Absent);
        let fallback = match found {
            Found::Fresh(v) => {
                ctx.ext.insert(FromCache);
                return Step::Done(Ok(Flow::Respond(self.answer(&v, now(), Label::Hit, head))));
            }
            // Someone already refreshes it: this one gets the stale answer.
            Found::Stale(v) if self.store.in_flight(keys.own()) => {
                ctx.ext.insert(FromCache);
                return Step::Done(Ok(Flow::Respond(self.answer(
                    &v,
                    now(),
                    Label::Stale,
                    head,
                ))));
            }
            Found::Stale(v) | Found::Fallback(v) => Some(v),
            Found::Nothing | Found::Absent => None,
        };
        if fallback.is_none() && !self.admits(keys.own()) {
            // Not asked often enough yet to be stored (`min_uses`, or a selective
            // store): it goes upstream as if uncached, told `MISS`, with nothing kept
            // for its response side.
            ctx.cache = Some(Box::new(Unstored));
            return Step::CONTINUE;
        }
        let mut x = Exchange::boxed(Label::Miss, &req.method);
        x.fallback = fallback;
        x.absent = absent;
        // What storing the answer compares later (its `Vary`'d headers are not known
        // yet): only on a miss, never on a hit.
        x.req_headers = RequestHead::new(&req.headers);
        x.asked = asked;
        x.keys = Some(keys);
        self.miss(ctx, req, x)
    }

    fn on_response_headers(
        &self,
        ctx: &mut RequestCtx,
        resp: &mut response::Parts,
    ) -> Result<(), GatewayError> {
        let Some(x) = exchange(ctx) else {
            if ctx.cache.as_ref().is_some_and(|c| c.is::<Unstored>()) {
                resp.headers.insert(X_CACHE, Label::Miss.value());
            }
            return Ok(());
        };
        resp.headers.insert(X_CACHE, x.label.value());
        if x.label == Label::Bypass {
            return Ok(());
        }
        if x.revalidating && resp.status == StatusCode::NOT_MODIFIED {
            if let Some(v) = x.fallback.take() {
                x.serve = self.refresh(x, &v, resp).map(|v| (v, Label::Revalidated));
            }
        }
        if x.serve.is_some() {
            // Refreshed and stored: the followers wake and find it.
        } else if resp.status.is_server_error() {
            let now = self.now();
            x.serve = x
                .fallback
                .take()
                .filter(|v| v.serves_errors(now))
                .map(|v| (v, Label::Stale));
        } else {
            x.candidate = self.candidate(x, resp);
        }
        if x.candidate.is_none() {
            // Nothing will be stored: the followers go upstream now, not when this
            // response has streamed.
            x.leader = None;
        }
        // The origin's answer to this request gets no `Age` of ours (RFC 9111 5.1: an
        // `Age` says it was not made for this request); one it came with is kept.
        x.arrived_age = rfc::age_header(&resp.headers);
        Ok(())
    }

    fn wants_response_body(&self, ctx: &RequestCtx, _: &response::Parts) -> bool {
        ctx.cache
            .as_ref()
            .and_then(|x| x.downcast_ref::<Exchange>())
            .is_some_and(|x| x.serve.is_some() || x.candidate.is_some())
    }

    fn on_response_body(
        &self,
        ctx: &mut RequestCtx,
        resp: &mut response::Parts,
        body: &mut Bytes,
    ) -> Result<(), GatewayError> {
        // Taken from in place: moving the exchange out of the context is a copy.
        let Some(x) = exchange(ctx) else {
            return Ok(());
        };
        if let Some((v, label)) = x.serve.take() {
            resp.status = v.status;
            resp.headers = v.headers().clone();
            stamp(&mut resp.headers, &v, self.now(), label);
            *body = if x.method == Method::HEAD {
                Bytes::new()
            } else {
                v.body()
            };
            ctx.ext.insert(FromCache);
            return Ok(());
        }
        if let Some(c) = x.candidate.take() {
            self.keep(x, c, resp, body);
        }
        // Stored: the followers wake and find it.
        x.leader = None;
        Ok(())
    }
}

/// The stale windows an answer's directives give (none for one that must be
/// revalidated), `defaults` where it states none.
fn stale_windows(headers: &HeaderMap, defaults: (Duration, Duration)) -> (Duration, Duration) {
    let must_revalidate = ["no-cache", "must-revalidate", "proxy-revalidate"]
        .iter()
        .any(|d| directive(headers, d));
    if must_revalidate {
        return (Duration::ZERO, Duration::ZERO);
    }
    (
        seconds_directive(headers, "stale-while-revalidate").unwrap_or(defaults.0),
        seconds_directive(headers, "stale-if-error").unwrap_or(defaults.1),
    )
}

/// Whether the RFC rules let an answer be stored: fresh for a while, or (`no-cache`,
/// `max-age=0`) with a validator to revalidate it with.
fn storable(policy: &CachePolicy, head: &HeaderMap, at: SystemTime) -> bool {
    policy.is_storable() && (!policy.time_to_live(at).is_zero() || revalidate::has_validator(head))
}

/// Leaves `x` for the response side.
fn keep_exchange(ctx: &mut RequestCtx, x: Box<Exchange>) {
    ctx.cache = Some(x);
}

/// What the request side left.
fn exchange(ctx: &mut RequestCtx) -> Option<&mut Exchange> {
    ctx.cache.as_mut()?.downcast_mut::<Exchange>()
}

/// Makes the request the leader of its key's miss: it goes upstream (conditionally
/// when a stored answer with a validator may be revalidated).
fn lead(ctx: &mut RequestCtx, req: &mut request::Parts, mut x: Box<Exchange>, keys: Keys) {
    x.keys = Some(keys);
    if let Some(v) = &x.fallback {
        x.revalidating = revalidate::make_conditional(v.headers(), &mut req.headers);
    }
    keep_exchange(ctx, x);
}

/// `Age` (the time it arrived with plus the time stored), and `X-Cache`.
fn stamp(headers: &mut HeaderMap, v: &Variant, now: SystemTime, label: Label) {
    headers.insert(AGE, HeaderValue::from(v.age(now).as_secs()));
    headers.insert(X_CACHE, label.value());
}

/// What of the request a stored answer keeps for later comparisons: `Host`, the
/// request's cache directives, the `Vary`'d headers, and `Authorization` unless the
/// caller is part of the key (then the key, not the RFC's shared-cache rule, keeps
/// callers apart).
fn kept_request_headers(req: &HeaderMap, resp: &HeaderMap, by_consumer: bool) -> HeaderMap {
    let mut kept = HeaderMap::new();
    let mut keep = |name: &str| {
        if let Ok(name) = HeaderName::from_bytes(name.trim().as_bytes()) {
            for v in req.get_all(&name) {
                kept.append(name.clone(), v.clone());
            }
        }
    };
    for name in ["host", "cache-control", "pragma"] {
        keep(name);
    }
    if !by_consumer {
        keep("authorization");
    }
    let varied = resp
        .get_all(http::header::VARY)
        .iter()
        .filter_map(|v| v.to_str().ok());
    for name in varied.flat_map(|v| v.split(',')).take(rfc::MAX_VARY) {
        keep(name);
    }
    kept
}

/// The response cache kind: `policies: [ { cache: {...} } ]`.
pub struct Cache;

impl PolicyKind for Cache {
    const NAME: &'static str = "cache";
    type Spec = CacheSpec;

    /// After auth and throttling (a hit is still authenticated, authorised and counted
    /// against the caller's quota) and before mediation, so a hit skips the transforms:
    /// the stored answer is the transformed one.
    fn stage(_: &CacheSpec) -> Stage {
        Stage::Transform
    }

    fn build(spec: &CacheSpec, cx: &mut BuildCx<'_>) -> Option<Arc<dyn Policy>> {
        let api = cx.file.apis.get(cx.api)?;
        let entries = api.policies.iter().filter(|p| p.cache.is_some()).count();
        if entries > 1 {
            cx.problem("", "an API has at most one cache entry");
            return None;
        }
        // Its resources' own settings too (docs/caching.md, "Per resource").
        crate::resources::build(Some(spec), cx, &new_cache)
    }
}

fn new_cache(settings: Settings, store: Arc<ApiStore>, clock: Arc<dyn Clock>) -> Arc<dyn Policy> {
    Arc::new(ResponseCache::new(settings, store, clock))
}

/// The caches of an API with no `cache` entry of its own whose resources have one (the
/// chain builds it in the `cache` entry's place, before mediation).
pub struct ResourceCaches;

impl PolicyKind for ResourceCaches {
    const NAME: &'static str = Cache::NAME;
    type Spec = ();

    fn stage(_: &()) -> Stage {
        Stage::Transform
    }

    fn build(_: &(), cx: &mut BuildCx<'_>) -> Option<Arc<dyn Policy>> {
        crate::resources::build(None, cx, &new_cache)
    }
}
