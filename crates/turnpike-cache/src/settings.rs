//! A `cache:` spec compiled once per snapshot into [`Settings`]: durations and sizes
//! resolved, methods as a bit set, header names parsed. Every bad field is reported
//! (under `….cache.field`) and the build carries on, so a file's errors come at once.

use std::time::Duration;

use http::HeaderName;
use turnpike_model::policy::{CacheAdmission, CacheSpec, SharedCache};
use turnpike_model::Quantity;
use turnpike_policy::spec::duration::parse_duration;
use turnpike_policy::spec::methods::MethodSet;
use turnpike_policy::spec::size::parse_size;
use turnpike_policy::BuildCx;

/// Freshness of a response that says nothing itself.
const DEFAULT_TTL: Duration = Duration::from_secs(60);
/// Largest body stored by default.
const DEFAULT_MAX_ENTRY: u64 = 1 << 20;
/// Bytes one API's entries hold by default.
pub(crate) const DEFAULT_MAX_SIZE: u64 = 64 << 20;
/// How long followers of a miss wait for the leader by default.
const DEFAULT_LOCK_TIMEOUT: Duration = Duration::from_secs(5);
/// Caps on what a spec may list (every count has a cap).
const MAX_KEY_HEADERS: usize = 16;
const MAX_STATUSES: usize = 32;
/// The most a stale answer may be kept past freshness, and the longest a key's waiters
/// wait: a day and a minute (a typo of `"60d"` is a problem, not a month of stale data).
const MAX_STALE: Duration = Duration::from_secs(24 * 3600);
const MAX_LOCK_TIMEOUT: Duration = Duration::from_secs(60);
/// The most requests a key may need before its answer is stored (`min_uses`).
const MAX_MIN_USES: u32 = 64;

/// RFC 9111 section 15 statuses "heuristically cacheable" that a gateway usually wants
/// (206 needs range handling, which the cache does not do).
const DEFAULT_STATUSES: [u16; 8] = [200, 203, 204, 300, 301, 308, 404, 410];

/// One API's compiled cache settings.
#[derive(Debug, Clone)]
pub(crate) struct Settings {
    pub(crate) ttl: Duration,
    pub(crate) methods: MethodSet,
    pub(crate) statuses: Box<[u16]>,
    pub(crate) query: bool,
    pub(crate) headers: Box<[HeaderName]>,
    pub(crate) consumer: bool,
    pub(crate) max_entry: u64,
    pub(crate) max_size: u64,
    pub(crate) stale_while_revalidate: Duration,
    pub(crate) stale_if_error: Duration,
    pub(crate) lock_timeout: Duration,
    pub(crate) tag_header: Option<HeaderName>,
    /// Request headers that carry a credential (`Authorization` and the API's API-key
    /// header): an anonymous request holding one is keyed by it (RFC 9111 section 3.5).
    pub(crate) credentials: Box<[HeaderName]>,
    /// [`crate::request::name_lengths`] of `credentials`.
    pub(crate) asked_lengths: u64,
    /// Entries are written to and read from the shared level (`shared: redis`).
    pub(crate) shared: bool,
    /// A key's answer is stored from its request number `min_uses` on (1: every miss
    /// stores).
    pub(crate) min_uses: u8,
    /// Adaptive admission (admission.rs): `admission` is not `always` and `min_uses`
    /// is not set to 2 or more (which wins).
    pub(crate) adaptive: bool,
}

/// The settings, or `None` after pushing every problem into `cx`.
pub(crate) fn compile(spec: &CacheSpec, cx: &mut BuildCx<'_>) -> Option<Settings> {
    let before = cx.problems.len();
    let ttl = duration(cx, ".ttl", spec.ttl.as_ref(), DEFAULT_TTL, MAX_STALE * 365);
    if ttl.is_zero() {
        cx.problem(".ttl", "must be longer than 0s");
    }
    let credentials = credential_headers(cx);
    let min_uses = min_uses(cx, spec.min_uses);
    let settings = Settings {
        ttl,
        methods: methods(cx, &spec.methods),
        statuses: statuses(cx, &spec.statuses),
        query: spec.key.query,
        headers: key_headers(cx, &spec.key.headers),
        consumer: spec.key.consumer,
        max_entry: size(
            cx,
            ".max_entry_size",
            spec.max_entry_size.as_ref(),
            DEFAULT_MAX_ENTRY,
        ),
        max_size: size(cx, ".max_size", spec.max_size.as_ref(), DEFAULT_MAX_SIZE),
        stale_while_revalidate: duration(
            cx,
            ".stale_while_revalidate",
            spec.stale_while_revalidate.as_ref(),
            Duration::ZERO,
            MAX_STALE,
        ),
        stale_if_error: duration(
            cx,
            ".stale_if_error",
            spec.stale_if_error.as_ref(),
            Duration::ZERO,
            MAX_STALE,
        ),
        lock_timeout: duration(
            cx,
            ".lock_timeout",
            spec.lock_timeout.as_ref(),
            DEFAULT_LOCK_TIMEOUT,
            MAX_LOCK_TIMEOUT,
        ),
        tag_header: spec
            .tag_header
            .as_deref()
            .and_then(|h| header(cx, ".tag_header", h)),
        asked_lengths: crate::request::name_lengths(&credentials),
        credentials,
        shared: spec.shared == Some(SharedCache::Redis),
        min_uses,
        adaptive: spec.admission != Some(CacheAdmission::Always) && min_uses <= 1,
    };
    purges(cx, &spec.purges);
    if settings.max_entry > settings.max_size {
        cx.problem(".max_entry_size", "must not be larger than max_size");
    }
    (cx.problems.len() == before).then_some(settings)
}

/// `Authorization`, and the header the API reads API keys from (`apikey` unless its
/// `auth` names another): on an open API these still identify a caller to the back end.
fn credential_headers(cx: &BuildCx<'_>) -> Box<[HeaderName]> {
    let named = cx
        .file
        .apis
        .get(cx.api)
        .and_then(|api| api.auth.as_ref())
        .and_then(|auth| auth.api_key_header.as_deref())
        .and_then(|h| HeaderName::from_bytes(h.trim().as_bytes()).ok());
    let api_key = named.unwrap_or(HeaderName::from_static("apikey"));
    Box::new([http::header::AUTHORIZATION, api_key])
}

/// Purges kept in a spec (the control plane keeps the latest).
const MAX_PURGES: usize = 32;

fn purges(cx: &mut BuildCx<'_>, list: &[turnpike_model::policy::CachePurge]) {
    if list.len() > MAX_PURGES {
        cx.problem(".purges", format!("at most {MAX_PURGES} purges"));
    }
    for (i, p) in list.iter().enumerate() {
        if p.prefix.is_some() && p.tag.is_some() {
            cx.problem(
                &format!(".purges[{i}]"),
                "a purge names a prefix or a tag, not both",
            );
        }
        if p.prefix.as_deref().is_some_and(|x| !x.starts_with('/')) {
            cx.problem(
                &format!(".purges[{i}].prefix"),
                "an upstream path prefix starts with '/'",
            );
        }
    }
}

fn min_uses(cx: &mut BuildCx<'_>, n: Option<u32>) -> u8 {
    match n {
        None => 1,
        Some(n @ 1..=MAX_MIN_USES) => n as u8,
        Some(n) => {
            cx.problem(".min_uses", format!("{n} is not within 1..={MAX_MIN_USES}"));
            1
        }
    }
}

fn duration(
    cx: &mut BuildCx<'_>,
    field: &str,
    q: Option<&Quantity>,
    default: Duration,
    max: Duration,
) -> Duration {
    let Some(q) = q else { return default };
    match parse_duration(q) {
        Ok(d) if d <= max => d,
        Ok(_) => {
            cx.problem(
                field,
                format!("{q} is longer than the cap of {}s", max.as_secs()),
            );
            default
        }
        Err(e) => {
            cx.problem(field, e);
            default
        }
    }
}

fn size(cx: &mut BuildCx<'_>, field: &str, q: Option<&Quantity>, default: u64) -> u64 {
    let Some(q) = q else { return default };
    match parse_size(q) {
        Ok(Some(n)) if n > 0 => n,
        Ok(_) => {
            cx.problem(
                field,
                "a cache needs a bound: write a size such as \"64MiB\"",
            );
            default
        }
        Err(e) => {
            cx.problem(field, e);
            default
        }
    }
}

fn methods(cx: &mut BuildCx<'_>, names: &[String]) -> MethodSet {
    if names.is_empty() {
        // GET brings HEAD along.
        return MethodSet::parse("GET").unwrap_or_default();
    }
    let mut set = MethodSet::default();
    for (i, name) in names.iter().enumerate() {
        match MethodSet::parse(name) {
            Ok(m) => set = set.union(m),
            Err(e) => cx.problem(&format!(".methods[{i}]"), e),
        }
    }
    set
}

fn statuses(cx: &mut BuildCx<'_>, list: &[u16]) -> Box<[u16]> {
    if list.is_empty() {
        return DEFAULT_STATUSES.into();
    }
    if list.len() > MAX_STATUSES {
        cx.problem(".statuses", format!("at most {MAX_STATUSES} statuses"));
    }
    for (i, s) in list.iter().enumerate() {
        if !(200..=599).contains(s) {
            cx.problem(
                &format!(".statuses[{i}]"),
                format!("{s} is not a final HTTP status"),
            );
        }
    }
    list.into()
}

fn key_headers(cx: &mut BuildCx<'_>, names: &[String]) -> Box<[HeaderName]> {
    if names.len() > MAX_KEY_HEADERS {
        cx.problem(".key.headers", format!("at most {MAX_KEY_HEADERS} headers"));
    }
    names
        .iter()
        .enumerate()
        .filter_map(|(i, n)| header(cx, &format!(".key.headers[{i}]"), n))
        .collect()
}

fn header(cx: &mut BuildCx<'_>, field: &str, name: &str) -> Option<HeaderName> {
    match HeaderName::from_bytes(name.as_bytes()) {
        Ok(h) => Some(h),
        Err(_) => {
            cx.problem(field, format!("{name:?} is not a header name"));
            None
        }
    }
}
