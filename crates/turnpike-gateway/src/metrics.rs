//! The gateway's Prometheus metrics and the management listener that serves them
//! (`--metrics-addr`, `GET /metrics`). One place names every metric (the `M_*`
//! constants); docs/observability.md lists them.
//!
//! The request path stays lock-free and allocation-free: each API's handles (request
//! counters by status class, upstream-error counters by kind, a fixed-bucket duration
//! histogram) are resolved once per snapshot into a table keyed by the `CompiledApi`'s
//! address, behind an `ArcSwap`; a request does one table lookup and a few atomic adds.
//! The per-API series are our own atomics rendered at scrape time, and an API's series
//! are dropped when a swap removes the API (so reloading a huge file and then a small one
//! shrinks `/metrics` and memory back). Gateway-wide gauges and counters go through the
//! `metrics` facade into a `metrics-exporter-prometheus` recorder owned by this gateway
//! (not installed globally, so several gateways in one process keep apart). Throttle
//! decisions are read at scrape time from the throttler's striped counters, which
//! survive reloads.

use std::collections::HashMap;
use std::convert::Infallible;
use std::fmt::Write as _;
use std::hash::{BuildHasherDefault, Hasher};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use arc_swap::ArcSwap;
use bytes::Bytes;
use http::header::CONTENT_TYPE;
use http::{HeaderValue, Method, Request, Response, StatusCode};
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::{TokioIo, TokioTimer};
use metrics::{Counter, Gauge, Key, Label, Level, Metadata, Recorder};
use metrics_exporter_prometheus::{PrometheusBuilder, PrometheusHandle, PrometheusRecorder};
use tokio::net::TcpListener;
use turnpike_auth::policy::AuthPolicy;
use turnpike_config::{CompiledApi, Snapshot};
use turnpike_throttle::policy::ThrottlePolicy;

use crate::error::ErrorKind;
use crate::health::Health;
use crate::metric_labels::{api_labels, escape};

/// Requests answered, by API, version and status class (`2xx`...).
pub(crate) const M_REQUESTS: &str = "turnpike_http_requests_total";
/// Requests answered, by API, version, resource template and status class (opt-in:
/// `--metrics-per-resource`).
pub(crate) const M_RESOURCE_REQUESTS: &str = "turnpike_http_resource_requests_total";
/// Time from the request head to the response head, by API and version.
pub(crate) const M_DURATION: &str = "turnpike_http_request_duration_seconds";
/// Upstream failures (connect, timeout, reset, protocol), by API, version and kind.
pub(crate) const M_UPSTREAM_ERRORS: &str = "turnpike_upstream_errors_total";
/// The version of the snapshot being served.
pub(crate) const M_SNAPSHOT_VERSION: &str = "turnpike_snapshot_version";
/// Snapshot swaps seen (file reloads, control-plane pushes).
pub(crate) const M_SNAPSHOT_SWAPS: &str = "turnpike_snapshot_swaps_total";
/// APIs in the snapshot being served.
pub(crate) const M_APIS: &str = "turnpike_apis";
/// Throttle decisions by policy, rule and decision (`allowed|throttled|flagged`).
pub(crate) const M_THROTTLE: &str = "turnpike_throttle_decisions_total";
/// Token cache lookups by cache (`jwt|introspection`) and result (`hit|miss`).
pub(crate) const M_TOKEN_CACHE_LOOKUPS: &str = "turnpike_token_cache_lookups_total";
/// Hits over lookups since start, by cache.
pub(crate) const M_TOKEN_CACHE_HIT_RATIO: &str = "turnpike_token_cache_hit_ratio";
/// Tokens held, by cache.
pub(crate) const M_TOKEN_CACHE_ENTRIES: &str = "turnpike_token_cache_entries";
/// Bytes held (entries weighed as in docs/security.md), by cache.
pub(crate) const M_TOKEN_CACHE_BYTES: &str = "turnpike_token_cache_bytes";
/// The byte budget, by cache.
pub(crate) const M_TOKEN_CACHE_BUDGET: &str = "turnpike_token_cache_budget_bytes";

/// Upper bounds of the duration histogram's buckets, in seconds.
const BUCKETS: [f64; 14] = [
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
];
const BUCKET_NS: [u64; 14] = [
    500_000,
    1_000_000,
    2_500_000,
    5_000_000,
    10_000_000,
    25_000_000,
    50_000_000,
    100_000_000,
    250_000_000,
    500_000_000,
    1_000_000_000,
    2_500_000_000,
    5_000_000_000,
    10_000_000_000,
];

const CLASSES: [&str; 5] = ["1xx", "2xx", "3xx", "4xx", "5xx"];
/// Upstream error kinds: their rows of the error table, labelled by the row's code.
const UPSTREAM_KINDS: [ErrorKind; 6] = [
    ErrorKind::UpstreamConnectTimeout,
    ErrorKind::UpstreamResponseTimeout,
    ErrorKind::UpstreamConnectFailed,
    ErrorKind::UpstreamReset,
    ErrorKind::UpstreamProtocol,
    ErrorKind::NoEndpoint,
];

fn upstream_index(kind: ErrorKind) -> Option<usize> {
    UPSTREAM_KINDS.iter().position(|k| *k == kind)
}

/// A fixed-bucket histogram of durations: atomics only, rendered at scrape time.
#[derive(Default)]
struct DurationHistogram {
    /// Per bucket (not cumulative); the last slot is +Inf.
    buckets: [AtomicU64; BUCKETS.len() + 1],
    sum_ns: AtomicU64,
}

impl DurationHistogram {
    #[inline]
    fn observe(&self, d: Duration) {
        let ns = u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
        let i = BUCKET_NS.partition_point(|&b| b < ns);
        self.buckets[i].fetch_add(1, Ordering::Relaxed);
        self.sum_ns.fetch_add(ns, Ordering::Relaxed);
    }

    fn render(&self, out: &mut String, labels: &str) {
        let mut cumulative = 0u64;
        for (i, le) in BUCKETS.iter().enumerate() {
            cumulative += self.buckets[i].load(Ordering::Relaxed);
            let _ = writeln!(
                out,
                "{M_DURATION}_bucket{{{labels},le=\"{le}\"}} {cumulative}"
            );
        }
        cumulative += self.buckets[BUCKETS.len()].load(Ordering::Relaxed);
        let _ = writeln!(
            out,
            "{M_DURATION}_bucket{{{labels},le=\"+Inf\"}} {cumulative}"
        );
        let sum = self.sum_ns.load(Ordering::Relaxed) as f64 / 1e9;
        let _ = writeln!(out, "{M_DURATION}_sum{{{labels}}} {sum}");
        let _ = writeln!(out, "{M_DURATION}_count{{{labels}}} {cumulative}");
    }
}

/// One resource's requests by status class (`--metrics-per-resource`).
struct ResourceMetrics {
    template: Arc<str>,
    requests: [AtomicU64; CLASSES.len()],
}

/// What keeps an API's series across swaps: the router's own key of an API (host,
/// context, version), so two APIs that share a name and version never share counters;
/// and its name, so a renamed API's series carry the new name (as new series).
type SeriesKey = (Option<String>, String, String, String);

fn series_key(api: &CompiledApi) -> SeriesKey {
    (
        api.host.clone(),
        api.context.clone(),
        api.version.clone(),
        api.name.clone(),
    )
}

/// One API's series (kept across swaps by host, context and version while the API exists).
pub(crate) struct ApiMetrics {
    requests: [AtomicU64; CLASSES.len()],
    /// Per resource template, when asked for: added on a template's first request
    /// (copy on write), read without a lock.
    resources: ArcSwap<Vec<Arc<ResourceMetrics>>>,
    upstream_errors: [AtomicU64; UPSTREAM_KINDS.len()],
    duration: DurationHistogram,
    /// `api="..",version="..",context="..",id=".."`, escaped, for every line.
    labels: String,
}

impl ApiMetrics {
    fn new(api: &CompiledApi) -> ApiMetrics {
        Self::labelled(&api.name, &api.version, &api.context, &api.labelled_id())
    }

    fn labelled(name: &str, version: &str, context: &str, id: &str) -> ApiMetrics {
        ApiMetrics {
            requests: Default::default(),
            resources: ArcSwap::from_pointee(Vec::new()),
            upstream_errors: Default::default(),
            duration: DurationHistogram::default(),
            labels: api_labels(name, version, context, id),
        }
    }

    #[inline]
    fn observe(&self, status: StatusCode, elapsed: Duration, failed: Option<ErrorKind>) {
        let class = (status.as_u16() / 100).clamp(1, 5) as usize - 1;
        self.requests[class].fetch_add(1, Ordering::Relaxed);
        self.duration.observe(elapsed);
        if let Some(i) = failed.and_then(upstream_index) {
            self.upstream_errors[i].fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Counts a request of `template` (pointer-equal to the router's, so a lookup is a
    /// few pointer compares).
    fn observe_resource(&self, template: &Arc<str>, status: StatusCode) {
        let class = (status.as_u16() / 100).clamp(1, 5) as usize - 1;
        let find = |v: &Vec<Arc<ResourceMetrics>>| {
            v.iter()
                .find(|r| Arc::ptr_eq(&r.template, template) || r.template == *template)
                .cloned()
        };
        let r = match find(&self.resources.load()) {
            Some(r) => r,
            None => {
                let fresh = Arc::new(ResourceMetrics {
                    template: template.clone(),
                    requests: Default::default(),
                });
                self.resources.rcu(|v| {
                    let mut v = (**v).clone();
                    if find(&v).is_none() {
                        v.push(fresh.clone());
                    }
                    v
                });
                match find(&self.resources.load()) {
                    Some(r) => r,
                    None => return,
                }
            }
        };
        r.requests[class].fetch_add(1, Ordering::Relaxed);
    }

    fn render_resource_requests(&self, out: &mut String) {
        for r in self.resources.load().iter() {
            let template = escape(&r.template);
            for (class, n) in CLASSES.iter().zip(&r.requests) {
                let n = n.load(Ordering::Relaxed);
                let _ = writeln!(
                    out,
                    "{M_RESOURCE_REQUESTS}{{{},resource=\"{template}\",class=\"{class}\"}} {n}",
                    self.labels
                );
            }
        }
    }

    fn render_requests(&self, out: &mut String) {
        for (class, n) in CLASSES.iter().zip(&self.requests) {
            let n = n.load(Ordering::Relaxed);
            let _ = writeln!(out, "{M_REQUESTS}{{{},class=\"{class}\"}} {n}", self.labels);
        }
    }

    fn render_upstream_errors(&self, out: &mut String) {
        for (kind, n) in UPSTREAM_KINDS.iter().zip(&self.upstream_errors) {
            let kind = kind.spec().code;
            let n = n.load(Ordering::Relaxed);
            let _ = writeln!(
                out,
                "{M_UPSTREAM_ERRORS}{{{},kind=\"{kind}\"}} {n}",
                self.labels
            );
        }
    }
}

/// Addresses are keys: hashed as they are, mixed a little (allocations are aligned).
#[derive(Default)]
struct PtrHasher(u64);

impl Hasher for PtrHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 = (self.0 << 8) | u64::from(*b);
        }
    }
    fn write_usize(&mut self, n: usize) {
        self.0 = (n as u64 >> 4).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }
}

/// The handles of one snapshot's APIs, by the address of their `CompiledApi`. Holds the
/// snapshot, so no address is reused while the table is current.
#[derive(Default)]
struct ApiTable {
    snapshot: Option<Arc<Snapshot>>,
    by_ptr: HashMap<usize, Arc<ApiMetrics>, BuildHasherDefault<PtrHasher>>,
}

/// The gateway's metrics: one per gateway, shared by its connections and the
/// management listener.
pub struct GatewayMetrics {
    recorder: PrometheusRecorder,
    handle: PrometheusHandle,
    snapshots: Arc<ArcSwap<Snapshot>>,
    table: ArcSwap<ApiTable>,
    /// The series of the APIs being served, by (host, context, version): swaps keep the
    /// counts of the APIs they keep, and drop the others' (so the series are bounded by
    /// the APIs served).
    known: Mutex<HashMap<SeriesKey, Arc<ApiMetrics>>>,
    /// Requests that matched no API (404, 405).
    unmatched: Arc<ApiMetrics>,
    swaps: Counter,
    version: Gauge,
    apis: Gauge,
    /// Sections other parts of the process render at scrape time (the analytics
    /// pipeline's counters), appended after the gateway's own.
    sections: Mutex<Vec<Section>>,
    /// Requests are also counted per resource template (`--metrics-per-resource`).
    per_resource: bool,
    /// AI API calls' tokens and time to first token (`genai_metrics.rs`).
    genai: crate::genai_metrics::GenAiMetrics,
}

/// Writes Prometheus text for one part of the process.
pub(crate) type Section = Box<dyn Fn(&mut String) + Send + Sync>;

fn meta() -> Metadata<'static> {
    Metadata::new(module_path!(), Level::INFO, Some(module_path!()))
}

impl GatewayMetrics {
    /// Metrics over the snapshots this gateway serves from.
    pub fn new(snapshots: Arc<ArcSwap<Snapshot>>) -> Arc<Self> {
        Self::with_options(snapshots, false)
    }

    /// [`GatewayMetrics::new`], counting requests per resource template too when
    /// `per_resource` (one series per template and status class: an opt-in, as the
    /// number of series grows with the APIs' resources).
    pub fn with_options(snapshots: Arc<ArcSwap<Snapshot>>, per_resource: bool) -> Arc<Self> {
        let recorder = PrometheusBuilder::new().build_recorder();
        let handle = recorder.handle();
        let describe = |name: &'static str, help: &'static str| {
            recorder.describe_counter(name.into(), None, help.into());
        };
        describe(M_SNAPSHOT_SWAPS, "Snapshot swaps seen");
        describe(M_THROTTLE, "Throttle decisions, by policy and rule");
        recorder.describe_gauge(
            M_SNAPSHOT_VERSION.into(),
            None,
            "Version of the snapshot being served".into(),
        );
        recorder.describe_gauge(M_APIS.into(), None, "APIs being served".into());
        let unmatched = Arc::new(ApiMetrics::labelled("", "", "", ""));
        let swaps = recorder.register_counter(&Key::from_name(M_SNAPSHOT_SWAPS), &meta());
        let version = recorder.register_gauge(&Key::from_name(M_SNAPSHOT_VERSION), &meta());
        let apis = recorder.register_gauge(&Key::from_name(M_APIS), &meta());
        let m = Arc::new(GatewayMetrics {
            recorder,
            handle,
            snapshots,
            table: ArcSwap::from_pointee(ApiTable::default()),
            known: Mutex::new(HashMap::new()),
            unmatched,
            swaps,
            version,
            apis,
            sections: Mutex::new(Vec::new()),
            per_resource,
            genai: Default::default(),
        });
        m.refresh();
        m
    }

    /// Whether requests are counted per resource template.
    #[inline]
    pub fn per_resource(&self) -> bool {
        self.per_resource
    }

    /// Counts one request of `api` under its resource `template` (only called when
    /// [`GatewayMetrics::per_resource`]).
    pub fn observe_resource(
        &self,
        api: &Arc<CompiledApi>,
        template: &Arc<str>,
        status: StatusCode,
    ) {
        let key = Arc::as_ptr(api) as usize;
        if let Some(m) = self.table.load().by_ptr.get(&key) {
            m.observe_resource(template, status);
        }
    }

    /// Records an AI API call's tokens and time to first token.
    pub(crate) fn observe_ai(
        &self,
        api: Option<&turnpike_policy::ApiLabel>,
        usage: &turnpike_policy::ai::TokenUsage,
        ttft: Option<Duration>,
    ) {
        self.genai.observe(api, usage, ttft, escape);
    }

    /// Records one answered request: `api` is the routed API (`None`: no API matched),
    /// `failed` the error kind when the gateway answered with an error.
    #[inline]
    pub fn observe(
        &self,
        api: Option<&Arc<CompiledApi>>,
        status: StatusCode,
        elapsed: Duration,
        failed: Option<ErrorKind>,
    ) {
        let Some(api) = api else {
            self.unmatched.observe(status, elapsed, failed);
            return;
        };
        let key = Arc::as_ptr(api) as usize;
        if let Some(m) = self.table.load().by_ptr.get(&key) {
            m.observe(status, elapsed, failed);
            return;
        }
        // Cold: the first requests after a swap (or in flight across one).
        self.observe_cold(api, key, status, elapsed, failed);
    }

    #[cold]
    fn observe_cold(
        &self,
        api: &Arc<CompiledApi>,
        key: usize,
        status: StatusCode,
        elapsed: Duration,
        failed: Option<ErrorKind>,
    ) {
        self.refresh();
        let m = match self.table.load().by_ptr.get(&key) {
            Some(m) => m.clone(),
            // A request on a snapshot already swapped out: counted if its API is still
            // served; a removed API's series are gone and stay gone.
            None => match self.lock_known().get(&series_key(api)) {
                Some(m) => m.clone(),
                None => return,
            },
        };
        m.observe(status, elapsed, failed);
    }

    fn lock_known(&self) -> std::sync::MutexGuard<'_, HashMap<SeriesKey, Arc<ApiMetrics>>> {
        match self.known.lock() {
            Ok(k) => k,
            Err(poisoned) => poisoned.into_inner(),
        }
    }

    /// The series of `snap`'s APIs by address (created on first sight of a host, context
    /// and version); every other API's series are dropped.
    fn resolve_all(
        &self,
        snap: &Snapshot,
    ) -> HashMap<usize, Arc<ApiMetrics>, BuildHasherDefault<PtrHasher>> {
        let mut known = self.lock_known();
        let mut live = HashMap::with_capacity(snap.apis.len());
        let by_ptr = snap
            .apis
            .iter()
            .map(|a| {
                let key = series_key(a);
                let m = match known.remove(&key) {
                    Some(m) => m,
                    None => Arc::new(ApiMetrics::new(a)),
                };
                live.insert(key, m.clone());
                (Arc::as_ptr(a) as usize, m)
            })
            .collect();
        *known = live;
        by_ptr
    }

    /// Rebuilds the table when the served snapshot changed (counted as a swap).
    pub fn refresh(&self) {
        let snap = self.snapshots.load_full();
        let current = self.table.load();
        if let Some(old) = &current.snapshot {
            if Arc::ptr_eq(old, &snap) {
                return;
            }
        }
        let by_ptr = self.resolve_all(&snap);
        let first = current.snapshot.is_none();
        self.version.set(snap.version as f64);
        self.apis.set(snap.apis.len() as f64);
        let prev = self.table.swap(Arc::new(ApiTable {
            snapshot: Some(snap.clone()),
            by_ptr,
        }));
        // Two racing refreshes of one swap: only the one that replaced the old table counts.
        let replaced_old = prev
            .snapshot
            .as_ref()
            .is_none_or(|p| !Arc::ptr_eq(p, &snap));
        if !first && replaced_old {
            self.swaps.increment(1);
        }
    }

    /// The Prometheus text exposition of every metric.
    pub fn render(&self) -> String {
        self.refresh();
        self.record_throttle();
        let mut out = self.handle.render();
        let known: Vec<Arc<ApiMetrics>> = self.lock_known().values().cloned().collect();
        let all = || known.iter().chain(std::iter::once(&self.unmatched));
        let _ = writeln!(
            out,
            "# HELP {M_REQUESTS} Requests answered, by API and status class"
        );
        let _ = writeln!(out, "# TYPE {M_REQUESTS} counter");
        all().for_each(|m| m.render_requests(&mut out));
        if self.per_resource {
            let _ = writeln!(
                out,
                "# HELP {M_RESOURCE_REQUESTS} Requests answered, by API, resource template and status class"
            );
            let _ = writeln!(out, "# TYPE {M_RESOURCE_REQUESTS} counter");
            all().for_each(|m| m.render_resource_requests(&mut out));
        }
        let _ = writeln!(
            out,
            "# HELP {M_UPSTREAM_ERRORS} Upstream failures, by API and kind"
        );
        let _ = writeln!(out, "# TYPE {M_UPSTREAM_ERRORS} counter");
        all().for_each(|m| m.render_upstream_errors(&mut out));
        let _ = writeln!(
            out,
            "# HELP {M_DURATION} Time from the request head to the response head"
        );
        let _ = writeln!(out, "# TYPE {M_DURATION} histogram");
        all().for_each(|m| m.duration.render(&mut out, &m.labels));
        render_token_caches(&self.snapshots.load(), &mut out);
        render_throttle_store(&self.snapshots.load(), &mut out);
        crate::endpoint_states::render(&self.snapshots.load(), &mut out, escape);
        crate::response_caches::render(&self.snapshots.load(), &mut out);
        crate::ai_providers::render(&self.snapshots.load(), &mut out, escape);
        self.genai.render(&mut out);
        if let Ok(sections) = self.sections.lock() {
            sections.iter().for_each(|s| s(&mut out));
        }
        out
    }

    /// Adds a section rendered on every scrape (after the gateway's own metrics).
    pub fn add_section(&self, s: Section) {
        if let Ok(mut sections) = self.sections.lock() {
            sections.push(s);
        }
    }

    /// Copies the throttler's decision counters (striped atomics, kept across reloads)
    /// into the recorder.
    fn record_throttle(&self) {
        let Some(store) = throttle_store(&self.snapshots.load()) else {
            return;
        };
        for (rule, stats) in store.stats() {
            let policy = policy_of(&rule).to_owned();
            for (decision, n) in [
                ("allowed", stats.allowed.get()),
                ("throttled", stats.throttled.get()),
                ("flagged", stats.flagged.get()),
            ] {
                let key = Key::from_parts(
                    M_THROTTLE,
                    vec![
                        Label::new("policy", policy.clone()),
                        Label::new("rule", rule.clone()),
                        Label::from_static_parts("decision", decision),
                    ],
                );
                self.recorder.register_counter(&key, &meta()).absolute(n);
            }
        }
    }
}

/// The gateway's throttle counter store (shared by every API's throttler), if any API
/// throttles.
fn throttle_store(snap: &Snapshot) -> Option<Arc<turnpike_throttle::CounterStore>> {
    snap.apis
        .iter()
        .find_map(|a| a.chain.find::<ThrottlePolicy>())
        .map(|t| t.api().throttler.store().clone())
}

/// The throttle counter store's size and what it could not track (one store per
/// gateway, kept across reloads), read at scrape time; absent when no API throttles.
fn render_throttle_store(snap: &Snapshot, out: &mut String) {
    let Some(store) = throttle_store(snap) else {
        return;
    };
    let _ = writeln!(
        out,
        "# HELP turnpike_throttle_counters Throttle counter slots held (one per key and window in use)\n# TYPE turnpike_throttle_counters gauge\nturnpike_throttle_counters {}",
        store.len()
    );
    let _ = writeln!(
        out,
        "# HELP turnpike_throttle_untracked_total Requests admitted without a counter because the store was full\n# TYPE turnpike_throttle_untracked_total counter\nturnpike_throttle_untracked_total {}",
        store.untracked_total()
    );
    let _ = writeln!(
        out,
        "# HELP turnpike_throttle_swept_total Counter slots removed once their windows had passed\n# TYPE turnpike_throttle_swept_total counter\nturnpike_throttle_swept_total {}",
        store.swept_total()
    );
}

/// The verified-token (JWT) and introspection caches' lookups and sizes, read at scrape
/// time from the long-lived caches the snapshot's authenticators share.
fn render_token_caches(snap: &Snapshot, out: &mut String) {
    let authns = || {
        snap.apis
            .iter()
            .filter_map(|a| a.chain.find::<AuthPolicy>())
            .filter_map(|p| p.security().authenticator.as_ref())
    };
    let jwt = authns()
        .find_map(|a| a.jwt.as_ref())
        .map(|j| j.cache_stats());
    // One introspector per key manager; sum them.
    let mut seen = Vec::new();
    let mut introspection: Option<turnpike_auth::CacheStats> = None;
    for i in authns().filter_map(|a| a.introspector.as_ref()) {
        if seen.iter().any(|p| std::ptr::eq(*p, Arc::as_ptr(i))) {
            continue;
        }
        seen.push(Arc::as_ptr(i));
        let s = i.cache_stats();
        let t = introspection.get_or_insert_with(Default::default);
        t.hits += s.hits;
        t.misses += s.misses;
        t.entries += s.entries;
        t.bytes += s.bytes;
        t.budget_bytes += s.budget_bytes;
    }
    let caches = [("jwt", jwt), ("introspection", introspection)];
    let caches: Vec<_> = caches
        .into_iter()
        .filter_map(|(n, s)| s.map(|s| (n, s)))
        .collect();
    if caches.is_empty() {
        return;
    }
    let family = |out: &mut String, name: &str, kind: &str, help: &str| {
        let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}");
    };
    family(out, M_TOKEN_CACHE_LOOKUPS, "counter", "Token cache lookups");
    for (c, s) in &caches {
        let _ = writeln!(
            out,
            "{M_TOKEN_CACHE_LOOKUPS}{{cache=\"{c}\",result=\"hit\"}} {}\n{M_TOKEN_CACHE_LOOKUPS}{{cache=\"{c}\",result=\"miss\"}} {}",
            s.hits, s.misses
        );
    }
    let gauges: [(&str, &str, fn(&turnpike_auth::CacheStats) -> f64); 4] = [
        (
            M_TOKEN_CACHE_HIT_RATIO,
            "Token cache hits over lookups since start",
            |s| s.hit_ratio(),
        ),
        (M_TOKEN_CACHE_ENTRIES, "Tokens held", |s| s.entries as f64),
        (M_TOKEN_CACHE_BYTES, "Bytes held by the token cache", |s| {
            s.bytes as f64
        }),
        (M_TOKEN_CACHE_BUDGET, "Token cache byte budget", |s| {
            s.budget_bytes as f64
        }),
    ];
    for (name, help, value) in gauges {
        family(out, name, "gauge", help);
        for (c, s) in &caches {
            let _ = writeln!(out, "{name}{{cache=\"{c}\"}} {}", value(s));
        }
    }
}

/// `Gold` of `sub:Gold/burst`, `10KPerMin` of `adv:10KPerMin/group:ip`.
fn policy_of(rule: &str) -> &str {
    let name = rule.split_once(':').map_or(rule, |(_, n)| n);
    name.split('/').next().unwrap_or(name)
}

/// Binds the management listener.
pub(crate) async fn bind(addr: SocketAddr) -> std::io::Result<TcpListener> {
    TcpListener::bind(addr).await
}

/// Serves `GET /metrics`, `GET /health` (liveness) and `GET /ready` (readiness, from
/// `health`) on `listener` until the task is aborted.
pub(crate) async fn serve(
    listener: TcpListener,
    metrics: Arc<GatewayMetrics>,
    health: Arc<Health>,
) {
    loop {
        let (stream, _) = match listener.accept().await {
            Ok(a) => a,
            Err(e) => {
                tracing::warn!(error = %e, "metrics listener: accept failed");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let m = metrics.clone();
        let h = health.clone();
        let svc = service_fn(move |req| {
            let (m, h) = (m.clone(), h.clone());
            async move { Ok::<_, Infallible>(answer(&m, &h, &req)) }
        });
        tokio::spawn(async move {
            let conn = http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(Duration::from_secs(10))
                .serve_connection(TokioIo::new(stream), svc);
            if let Err(e) = conn.await {
                tracing::debug!(error = %e, "metrics connection error");
            }
        });
    }
}

fn answer(m: &GatewayMetrics, h: &Health, req: &Request<Incoming>) -> Response<Full<Bytes>> {
    let (status, ctype, body) = match (req.method(), req.uri().path()) {
        (&Method::GET, "/metrics") => (
            StatusCode::OK,
            "text/plain; version=0.0.4; charset=utf-8",
            Bytes::from(m.render()),
        ),
        (&Method::GET, "/health") => (StatusCode::OK, "text/plain", Bytes::from_static(b"ok\n")),
        (&Method::GET, "/ready") => match h.ready() {
            Ok(()) => (StatusCode::OK, "text/plain", Bytes::from_static(b"ready\n")),
            Err(why) => {
                let (code, message) = why.describe();
                let body = format!(r#"{{"code":"{code}","message":"{message}","request_id":""}}"#);
                (StatusCode::SERVICE_UNAVAILABLE, "application/json", Bytes::from(body))
            }
        },
        _ => (
            StatusCode::NOT_FOUND,
            "application/json",
            Bytes::from_static(
                br#"{"code":"not_found","message":"the management listener serves GET /metrics, GET /health and GET /ready","request_id":""}"#,
            ),
        ),
    };
    let mut resp = Response::new(Full::new(body));
    *resp.status_mut() = status;
    resp.headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static(ctype));
    resp
}

#[cfg(test)]
mod tests {
    use super::*;

    fn snapshot(yaml: &str) -> Arc<ArcSwap<Snapshot>> {
        let snap = match Snapshot::from_yaml(yaml, "test") {
            Ok(s) => s,
            Err(e) => panic!("{e}"),
        };
        Arc::new(ArcSwap::from_pointee(snap))
    }

    const ONE_API: &str = "apis:\n  - name: pets\n    context: /pets\n    version: v1\n    \
                           endpoints: [\"http://127.0.0.1:1\"]\n    \
                           resources: [ { path: \"/*\", methods: [GET] } ]\n";

    fn line<'a>(text: &'a str, prefix: &str) -> Option<&'a str> {
        text.lines()
            .find(|l| l.starts_with(prefix))
            .and_then(|l| l.rsplit(' ').next())
    }

    #[test]
    fn counts_by_api_and_class_and_buckets_durations() {
        let snaps = snapshot(ONE_API);
        let m = GatewayMetrics::new(snaps.clone());
        let api = snaps.load().apis.first().cloned();
        assert!(api.is_some(), "the test file compiles");
        for _ in 0..3 {
            m.observe(api.as_ref(), StatusCode::OK, Duration::from_millis(3), None);
        }
        m.observe(
            api.as_ref(),
            StatusCode::BAD_GATEWAY,
            Duration::from_millis(30),
            Some(ErrorKind::UpstreamConnectFailed),
        );
        m.observe(None, StatusCode::NOT_FOUND, Duration::from_micros(50), None);
        let text = m.render();
        let req = |class: &str| {
            line(
                &text,
                &format!("{M_REQUESTS}{{api=\"pets\",version=\"v1\",context=\"/pets\",id=\"/pets/v1\",class=\"{class}\"}}"),
            )
        };
        assert_eq!(req("2xx"), Some("3"), "{text}");
        assert_eq!(req("5xx"), Some("1"));
        assert_eq!(
            line(
                &text,
                &format!("{M_UPSTREAM_ERRORS}{{api=\"pets\",version=\"v1\",context=\"/pets\",id=\"/pets/v1\",kind=\"upstream_unavailable\"}}")
            ),
            Some("1")
        );
        let bucket = |le: &str| {
            line(
                &text,
                &format!("{M_DURATION}_bucket{{api=\"pets\",version=\"v1\",context=\"/pets\",id=\"/pets/v1\",le=\"{le}\"}}"),
            )
        };
        assert_eq!(bucket("0.0025"), Some("0"));
        assert_eq!(bucket("0.005"), Some("3"));
        assert_eq!(bucket("0.05"), Some("4"));
        assert_eq!(bucket("+Inf"), Some("4"));
        assert_eq!(
            line(
                &text,
                &format!(
                    "{M_REQUESTS}{{api=\"\",version=\"\",context=\"\",id=\"\",class=\"4xx\"}}"
                )
            ),
            Some("1")
        );
        assert_eq!(line(&text, &format!("{M_SNAPSHOT_SWAPS} ")), Some("0"));
    }

    #[test]
    fn a_swap_is_counted_and_keeps_the_counts() {
        let snaps = snapshot(ONE_API);
        let m = GatewayMetrics::new(snaps.clone());
        let api = snaps.load().apis.first().cloned();
        m.observe(api.as_ref(), StatusCode::OK, Duration::from_millis(1), None);
        let next = Snapshot::from_yaml(ONE_API, "test").unwrap_or_default();
        snaps.store(Arc::new(next));
        let api2 = snaps.load().apis.first().cloned();
        m.observe(
            api2.as_ref(),
            StatusCode::OK,
            Duration::from_millis(1),
            None,
        );
        let text = m.render();
        assert_eq!(
            line(&text, &format!("{M_SNAPSHOT_SWAPS} ")),
            Some("1"),
            "{text}"
        );
        assert_eq!(
            line(
                &text,
                &format!("{M_REQUESTS}{{api=\"pets\",version=\"v1\",context=\"/pets\",id=\"/pets/v1\",class=\"2xx\"}}")
            ),
            Some("2")
        );
    }

    #[test]
    fn a_removed_api_s_series_are_dropped() {
        let two = format!(
            "{ONE_API}  - name: gone\n    context: /gone\n    version: v1\n    \
             endpoints: [\"http://127.0.0.1:1\"]\n    resources: [ {{ path: \"/*\", methods: [GET] }} ]\n"
        );
        let snaps = snapshot(&two);
        let m = GatewayMetrics::new(snaps.clone());
        let apis = snaps.load().apis.clone();
        for a in &apis {
            m.observe(Some(a), StatusCode::OK, Duration::from_millis(1), None);
        }
        assert!(m.render().contains("api=\"gone\""));
        snaps.store(Arc::new(
            Snapshot::from_yaml(ONE_API, "test").unwrap_or_default(),
        ));
        // A straggler on the old snapshot does not bring the series back.
        m.observe(apis.last(), StatusCode::OK, Duration::from_millis(1), None);
        let text = m.render();
        assert!(!text.contains("api=\"gone\""), "{text}");
        assert_eq!(
            line(
                &text,
                &format!("{M_REQUESTS}{{api=\"pets\",version=\"v1\",context=\"/pets\",id=\"/pets/v1\",class=\"2xx\"}}")
            ),
            Some("1"),
            "the API that stays keeps its count"
        );
        assert_eq!(m.lock_known().len(), 1);
    }

    #[test]
    fn policy_names_come_from_rule_labels() {
        assert_eq!(policy_of("sub:Gold/burst"), "Gold");
        assert_eq!(policy_of("adv:10KPerMin/group:ip"), "10KPerMin");
        assert_eq!(policy_of("app:10PerMin"), "10PerMin");
    }
}
