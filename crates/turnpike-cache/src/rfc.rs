//! RFC 9111 as this cache applies it: the `http-cache-semantics` policy built from a
//! response with the configured TTL as its default freshness, the `Cache-Control`
//! directive readers, and the *plain* shortcut: a response whose head carries no
//! caching header at all is judged here without building that policy (which copies
//! both heads and parses them into hash maps on every miss: half of a miss's cost).

use std::time::{Duration, SystemTime};

use http::header::{AGE, CACHE_CONTROL, CONTENT_LENGTH, EXPIRES, SET_COOKIE, VARY};
use http::{HeaderMap, HeaderValue, Method, StatusCode};
use http_cache_semantics::{CacheOptions, CachePolicy, RequestLike, ResponseLike};

use crate::request::{carries_directives, Asked};

/// The statuses `http-cache-semantics` understands (it stores no others): a plain
/// response outside them goes through the library, which refuses it.
const UNDERSTOOD_STATUSES: [u16; 14] = [
    200, 203, 204, 300, 301, 302, 303, 307, 308, 404, 405, 410, 414, 501,
];

/// Whether the library would store this answer with exactly the configured TTL as its
/// freshness, so it needs not be asked: a GET or HEAD whose request carries no cache
/// directives (nor `Authorization` unless the caller is part of the key) answered with
/// an understood status and no `Cache-Control`, `Expires`, `Pragma` or `Vary: *`. Then
/// the library adds nothing but `max-age=<ttl>` (see [`with_default_ttl`]) and stores.
pub(crate) fn is_plain(
    method: &Method,
    req: Asked,
    status: StatusCode,
    resp: &HeaderMap,
    by_consumer: bool,
) -> bool {
    plain_given(method, req, status, Said::read(resp).caching, by_consumer)
}

/// [`is_plain`] of an answer whose head was read (`caching`: [`Said::caching`]).
pub(crate) fn plain_given(
    method: &Method,
    req: Asked,
    status: StatusCode,
    caching: bool,
    by_consumer: bool,
) -> bool {
    (*method == Method::GET || *method == Method::HEAD)
        && !req.directives
        && (by_consumer || !req.authorization)
        && UNDERSTOOD_STATUSES.contains(&status.as_u16())
        && !caching
}

/// What an answer's head says to the cache, read in one pass over its names: a lookup
/// by name hashes the name, and these are names most heads of a few fields lack.
pub(crate) struct Said<'a> {
    pub(crate) set_cookie: bool,
    /// `Cache-Control`, `Pragma`, `Expires` or `Vary: *`: the RFC rules must judge it.
    pub(crate) caching: bool,
    /// Its first `Content-Length` value, and whether it has more.
    length: Option<&'a HeaderValue>,
    lengths: bool,
}

impl<'a> Said<'a> {
    pub(crate) fn read(resp: &'a HeaderMap) -> Said<'a> {
        let mut said = Said {
            set_cookie: false,
            caching: false,
            length: None,
            lengths: false,
        };
        let mut vary_read = false;
        for (name, value) in resp {
            if *name == CONTENT_LENGTH {
                said.lengths = said.length.is_some();
                said.length.get_or_insert(value);
            } else if *name == SET_COOKIE {
                said.set_cookie = true;
            } else if carries_directives(name) || *name == EXPIRES {
                said.caching = true;
            } else if *name == VARY && !vary_read {
                // Every `Vary` field at once.
                vary_read = true;
                said.caching |= varies_on_star(resp);
            }
        }
        said
    }

    /// The length it declares (as [`turnpike_policy::http::content_length`]: `None` for
    /// none, or one that declares no single length).
    pub(crate) fn length(&self, resp: &HeaderMap) -> Option<u64> {
        let declared = match self.lengths {
            true => turnpike_policy::http::content_length(resp),
            false => turnpike_policy::http::declared_length(self.length),
        };
        declared.ok().flatten()
    }
}

/// Whether `Vary` lists `*` (such an answer is never reused without the full rules).
pub(crate) fn varies_on_star(resp: &HeaderMap) -> bool {
    resp.get_all(VARY)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .take(MAX_VARY)
        .any(|n| n.trim() == "*")
}

/// Header names a `Vary` list may hold before the rest is ignored (a cap on input).
pub(crate) const MAX_VARY: usize = 32;

/// The freshness the library gives a plain answer: the configured TTL (at least a
/// second, as [`with_default_ttl`] writes it).
pub(crate) fn default_max_age(ttl: Duration) -> Duration {
    Duration::from_secs(ttl.as_secs().max(1))
}

/// The response's `Age` (what it had aged before it reached this cache).
pub(crate) fn age_header(resp: &HeaderMap) -> Duration {
    resp.get(AGE).map_or(Duration::ZERO, age)
}

/// An `Age` value's duration (none for one that is not a number of seconds).
pub(crate) fn age(value: &HeaderValue) -> Duration {
    let secs = value
        .to_str()
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0);
    Duration::from_secs(secs)
}

/// The library's policy for a response received at `at`, with `ttl` as the
/// freshness of a response stating none.
pub(crate) fn policy(
    req: &Presented<'_>,
    status: StatusCode,
    resp: &HeaderMap,
    ttl: Duration,
    at: SystemTime,
) -> CachePolicy {
    let judged = Judged {
        status,
        headers: with_default_ttl(resp, ttl),
    };
    let options = CacheOptions {
        shared: true,
        ..CacheOptions::default()
    };
    CachePolicy::new_options(req, &judged, at, options)
}

/// A response as RFC 9111 judges it here (its headers with the configured TTL).
struct Judged {
    status: StatusCode,
    headers: HeaderMap,
}

impl ResponseLike for Judged {
    fn status(&self) -> StatusCode {
        self.status
    }
    fn headers(&self) -> &HeaderMap {
        &self.headers
    }
}

/// The response's headers, with `max-age=<ttl>` added when it states no freshness of
/// its own (no `max-age`, `s-maxage` or `Expires`): the configured TTL is the API
/// owner's heuristic freshness (RFC 9111 section 4.2.2). `max-age`, not `s-maxage`: the
/// latter would let a shared cache store answers to authenticated requests.
fn with_default_ttl(headers: &HeaderMap, ttl: Duration) -> HeaderMap {
    let mut h = headers.clone();
    let explicit = directive(headers, "max-age")
        || directive(headers, "s-maxage")
        || headers.contains_key(EXPIRES);
    if !explicit {
        let value = format!("max-age={}", default_max_age(ttl).as_secs());
        if let Ok(v) = HeaderValue::from_str(&value) {
            h.append(CACHE_CONTROL, v);
        }
    }
    h
}

/// Whether `Cache-Control` holds `name` (with or without a value).
pub(crate) fn directive(headers: &HeaderMap, name: &str) -> bool {
    directives(headers).any(|(n, _)| n.eq_ignore_ascii_case(name))
}

/// The seconds of a `name=N` directive.
pub(crate) fn seconds_directive(headers: &HeaderMap, name: &str) -> Option<Duration> {
    directives(headers)
        .find(|(n, _)| n.eq_ignore_ascii_case(name))
        .and_then(|(_, v)| v?.trim_matches('"').parse().ok())
        .map(Duration::from_secs)
}

fn directives(headers: &HeaderMap) -> impl Iterator<Item = (&str, Option<&str>)> {
    headers
        .get_all(CACHE_CONTROL)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(|d| match d.split_once('=') {
            Some((n, v)) => (n.trim(), Some(v.trim())),
            None => (d.trim(), None),
        })
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
