//! An API's `policies:` list: each entry is one policy kind with its settings, written
//! as `- kind: { ... }` (e.g. `- cors: { allow_origins: ["https://app.example"] }`).
//! `turnpike-config` validates each entry and builds it into the API's chain; a new kind
//! is one field here, one build function there and one `Policy` implementation (see
//! docs/ARCHITECTURE.md, "Adding a policy kind").

use serde::{Deserialize, Serialize};

use crate::Quantity;

/// One entry of an API's `policies:` list: exactly one kind's settings (a struct of
/// optional kinds rather than an enum, so YAML and JSON write it the same way:
/// `- cors: {...}` / `{"cors": {...}}`). A new kind is one more field here.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PolicySpec {
    /// Cross-origin resource sharing: preflights answered at the gateway (before
    /// authentication), `Access-Control-*` headers on every response, errors included.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cors: Option<CorsSpec>,
    /// Response cache (RFC 9111): stored answers served without calling the upstream
    /// (docs/caching.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache: Option<CacheSpec>,
}

impl PolicySpec {
    /// The kinds this entry names, as written in the file (valid entries name one).
    pub fn kinds(&self) -> Vec<&'static str> {
        let mut k = Vec::new();
        if self.cors.is_some() {
            k.push("cors");
        }
        if self.cache.is_some() {
            k.push("cache");
        }
        k
    }
}

/// CORS settings (the Fetch standard's names; WSO2's `corsConfiguration`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CorsSpec {
    /// Origins allowed (`https://app.example`), or `"*"` for any.
    pub allow_origins: Vec<String>,
    /// Methods a preflight may ask for; GET, HEAD, POST, PUT, PATCH, DELETE when empty.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allow_methods: Vec<String>,
    /// Request headers a preflight may ask for (case-insensitive), or `"*"`;
    /// `authorization`, `content-type`, `apikey` when empty.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allow_headers: Vec<String>,
    /// Response headers the browser lets the page read.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub expose_headers: Vec<String>,
    /// Send `Access-Control-Allow-Credentials: true` (needs explicit origins).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub allow_credentials: bool,
    /// How long a browser may cache a preflight answer (`"10m"`, or seconds).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_age: Option<Quantity>,
}

/// Response cache settings (`- cache: { ttl: 60s }`). What may be stored and served
/// follows the response's `Cache-Control`, `Expires` and `Vary` (RFC 9111); these
/// settings bound it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CacheSpec {
    /// How long a response stays fresh when it says nothing itself (no `max-age`,
    /// `s-maxage` or `Expires`): `"60s"`, `"5m"` (60 s when omitted).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl: Option<Quantity>,
    /// Methods whose responses are cached: GET and HEAD when empty.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub methods: Vec<String>,
    /// Upstream statuses cached: 200, 203, 204, 300, 301, 308, 404, 410 when empty.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub statuses: Vec<u16>,
    /// What the cache key is made of, besides the method and the path.
    #[serde(default, skip_serializing_if = "CacheKeySpec::is_default")]
    pub key: CacheKeySpec,
    /// Largest response body stored (`"1MiB"` when omitted); larger ones pass through.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_entry_size: Option<Quantity>,
    /// Bytes all of this API's entries may hold (`"64MiB"` when omitted); the least
    /// useful entries go first (S3-FIFO).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_size: Option<Quantity>,
    /// How long past freshness a stored answer may still be served (`X-Cache: STALE`)
    /// while one request refreshes it (0 when omitted; a response's own
    /// `stale-while-revalidate` directive wins).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stale_while_revalidate: Option<Quantity>,
    /// How long past freshness a stored answer replaces an upstream failure (a 5xx or
    /// no connection) (0 when omitted; a response's own `stale-if-error` wins).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stale_if_error: Option<Quantity>,
    /// How long concurrent misses of one key wait for the first one's response before
    /// going upstream themselves (`"5s"` when omitted).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lock_timeout: Option<Quantity>,
    /// Store a key's answer only from its Nth request (1, every miss stores, when
    /// omitted): a key asked once costs its miss no store; its requests are counted
    /// in a small per-API table that forgets as new keys fill it (nginx's
    /// `proxy_cache_min_uses`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_uses: Option<u32>,
    /// Which misses store their answer: `adaptive` (when omitted) stores every miss
    /// until a burst of requests earns almost no hits (every request a new key), then
    /// only keys asked before, until hits come back or the burst ends; `always` stores
    /// every miss (docs/caching.md, "Admission"). An explicit `min_uses` of 2 or more
    /// wins over both.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub admission: Option<CacheAdmission>,
    /// A response header whose comma-separated values tag the entry, for purges by tag
    /// (e.g. `Cache-Tag`, `Surrogate-Key`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tag_header: Option<String>,
    /// A second level shared by the gateways of a cluster (`redis`: the gateway's
    /// `--redis`), read on a local miss before the back end is called; `none` (a
    /// resource opting out of its API's) or omitted: this gateway's memory only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shared: Option<SharedCache>,
    /// Purges (the control plane appends one per Publisher purge; a file may list them
    /// too): each gateway applies a purge once, when it first sees its `id`, so a purge
    /// travels with the snapshot to every gateway.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub purges: Vec<CachePurge>,
}

/// Which misses of a cache store their answer (docs/caching.md, "Admission").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CacheAdmission {
    /// Every miss stores, but while a burst of requests earns almost no hits, only a
    /// key asked before (TinyLFU's doorkeeper).
    Adaptive,
    /// Every miss stores.
    Always,
}

/// Where a cache's second level lives (docs/caching.md, "Shared level").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SharedCache {
    /// No second level: this gateway's memory only.
    None,
    /// The Redis the gateway was started with (`--redis`).
    Redis,
}

/// One purge of an API's cached responses: every entry, those whose upstream path
/// starts with `prefix`, or those tagged `tag` (through `tag_header`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CachePurge {
    /// Increasing: a gateway applies the purges above the last one it applied.
    pub id: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefix: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tag: Option<String>,
}

/// The parts of a request that make its cache key (the method and the upstream path
/// always do).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CacheKeySpec {
    /// The query string (on when omitted).
    #[serde(default = "yes")]
    pub query: bool,
    /// Request headers whose values are part of the key (case-insensitive names).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub headers: Vec<String>,
    /// The authenticated caller (application and subject) unless the response is
    /// `public` (on when omitted). Off: an authenticated request's response is stored
    /// only when RFC 9111 lets a shared cache reuse it (`public`, `s-maxage`,
    /// `must-revalidate`).
    #[serde(default = "yes")]
    pub consumer: bool,
}

fn yes() -> bool {
    true
}

impl Default for CacheKeySpec {
    fn default() -> Self {
        CacheKeySpec {
            query: true,
            headers: Vec::new(),
            consumer: true,
        }
    }
}

impl CacheKeySpec {
    pub fn is_default(&self) -> bool {
        *self == CacheKeySpec::default()
    }
}

/// The dates of a deprecated API (`deprecation:`), each an RFC 3339 date or date-time in
/// UTC (`2026-06-30` or `2026-06-30T12:00:00Z`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DeprecationSpec {
    /// When the API was (or will be) deprecated: the `Deprecation` header. When absent,
    /// the time the gateway loaded the API as deprecated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub since: Option<String>,
    /// When the API stops answering: the `Sunset` header.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sunset: Option<String>,
    /// A page about the deprecation: `Link: <url>; rel="deprecation"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub link: Option<String>,
}

/// A resource's `cache:`: `false` switches the API's cache off for the resource,
/// `true` caches it with the API's settings (the defaults when the API has no cache),
/// and settings cache it with each field given replacing the API's (docs/caching.md,
/// "Per resource").
#[derive(Debug, Clone, PartialEq)]
pub enum ResourceCacheSpec {
    /// `true` / `false`.
    Enabled(bool),
    /// The resource's own settings, over the API's.
    Settings(Box<CacheSpec>),
}

impl ResourceCacheSpec {
    /// The resource's own settings, `None` when it is switched off.
    pub fn settings(&self) -> Option<CacheSpec> {
        match self {
            ResourceCacheSpec::Enabled(false) => None,
            ResourceCacheSpec::Enabled(true) => Some(CacheSpec::default()),
            ResourceCacheSpec::Settings(s) => Some((**s).clone()),
        }
    }
}

impl Serialize for ResourceCacheSpec {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            ResourceCacheSpec::Enabled(b) => s.serialize_bool(*b),
            ResourceCacheSpec::Settings(spec) => spec.serialize(s),
        }
    }
}

impl<'de> Deserialize<'de> for ResourceCacheSpec {
    /// A boolean or the settings, each with its own error (an untagged enum would say
    /// only "did not match any variant" for a misspelt field).
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Either;
        impl<'de> serde::de::Visitor<'de> for Either {
            type Value = ResourceCacheSpec;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("false, true or the cache settings")
            }
            fn visit_bool<E: serde::de::Error>(self, b: bool) -> Result<Self::Value, E> {
                Ok(ResourceCacheSpec::Enabled(b))
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                m: A,
            ) -> Result<Self::Value, A::Error> {
                let de = serde::de::value::MapAccessDeserializer::new(m);
                CacheSpec::deserialize(de).map(|s| ResourceCacheSpec::Settings(Box::new(s)))
            }
        }
        d.deserialize_any(Either)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod resource_cache_tests {
    use super::*;

    #[test]
    fn a_resource_cache_is_a_switch_or_settings_and_round_trips() {
        let off: ResourceCacheSpec = serde_json::from_str("false").unwrap();
        assert_eq!(off, ResourceCacheSpec::Enabled(false));
        assert_eq!(off.settings(), None);
        let on: ResourceCacheSpec = serde_json::from_str(r#"{"ttl":"5s"}"#).unwrap();
        let ttl = on.settings().unwrap().ttl.unwrap();
        assert_eq!(serde_json::to_value(&ttl).unwrap(), "5s");
        assert_eq!(serde_json::to_string(&on).unwrap(), r#"{"ttl":"5s"}"#);
        assert_eq!(serde_json::to_string(&off).unwrap(), "false");
        let bad = serde_json::from_str::<ResourceCacheSpec>(r#"{"tll":"5s"}"#).unwrap_err();
        assert!(bad.to_string().contains("tll"), "{bad}");
        assert!(serde_json::from_str::<ResourceCacheSpec>("3").is_err());
    }
}
