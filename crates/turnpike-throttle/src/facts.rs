//! What the throttler needs to know about a request, borrowed from the gateway's
//! per-request context: ids (from the route and the identity), the client address, and a
//! small lookup trait for headers, query parameters and token claims, so a check copies
//! nothing and allocates only to decode an escaped query value.

use std::borrow::Cow;
use std::net::{IpAddr, Ipv4Addr};

/// Header, query-parameter and claim lookups for conditional groups. Every method has a
/// "not present" default, so an adapter implements only what it has.
pub trait Lookup {
    /// A request header by lower-case name.
    fn header(&self, _name: &str) -> Option<&str> {
        None
    }
    /// A query parameter by name (first occurrence, decoded: `%20` and `+` are spaces,
    /// as `turnpike_policy::http::query_param` reads them).
    fn query(&self, _name: &str) -> Option<Cow<'_, str>> {
        None
    }
    /// A claim of the caller's token, as a string.
    fn claim(&self, _name: &str) -> Option<&str> {
        None
    }
}

/// A request with no headers, query or claims worth looking at.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoLookup;

impl Lookup for NoLookup {}

impl Lookup for http::HeaderMap {
    fn header(&self, name: &str) -> Option<&str> {
        self.get(name).and_then(|v| v.to_str().ok())
    }
}

/// One request as the throttler sees it.
#[derive(Clone, Copy)]
pub struct RequestFacts<'a> {
    /// Stable API id (not the display name: renaming must not reset quotas).
    pub api_id: &'a str,
    /// Stable resource key within the API, e.g. `GET /pets/{id}`.
    pub resource: Option<&'a str>,
    /// The calling application; `None` for an unauthenticated resource (then the
    /// Unauthenticated tier applies, per client IP).
    pub application_id: Option<&'a str>,
    /// The end user (token subject); application tiers count per application and user.
    pub user: Option<&'a str>,
    /// The subscription's tier (application x API).
    pub subscription_tier: Option<&'a str>,
    /// The application's tier.
    pub application_tier: Option<&'a str>,
    /// Advanced policy attached to the API.
    pub api_policy: Option<&'a str>,
    /// Advanced policy attached to the matched resource.
    pub resource_policy: Option<&'a str>,
    pub client_ip: IpAddr,
    /// What bandwidth quotas charge at check time (the request's `Content-Length`; the
    /// response's size is charged later with `Throttler::charge_bytes`).
    pub bytes: u64,
    pub lookup: &'a dyn Lookup,
}

impl<'a> RequestFacts<'a> {
    /// An anonymous request to `api_id` from `client_ip`; set the other fields with
    /// struct-update syntax.
    pub fn new(api_id: &'a str, client_ip: IpAddr) -> Self {
        RequestFacts {
            api_id,
            resource: None,
            application_id: None,
            user: None,
            subscription_tier: None,
            application_tier: None,
            api_policy: None,
            resource_policy: None,
            client_ip,
            bytes: 0,
            lookup: &NoLookup,
        }
    }
}

impl std::fmt::Debug for RequestFacts<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RequestFacts")
            .field("api_id", &self.api_id)
            .field("resource", &self.resource)
            .field("application_id", &self.application_id)
            .field("user", &self.user)
            .field("subscription_tier", &self.subscription_tier)
            .field("application_tier", &self.application_tier)
            .field("client_ip", &self.client_ip)
            .finish_non_exhaustive()
    }
}

impl Default for RequestFacts<'_> {
    fn default() -> Self {
        RequestFacts::new("", IpAddr::V4(Ipv4Addr::UNSPECIFIED))
    }
}
