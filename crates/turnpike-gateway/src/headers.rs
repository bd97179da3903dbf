//! Header rules of the proxy: hop-by-hop removal (RFC 9110 §7.6.1) in both directions,
//! what a client may not tell the upstream (forwarding headers from a peer that is not a
//! trusted proxy, URL overrides: [`strip_request`]), `X-Forwarded-For/-Proto/-Host`, and
//! request ids. Request ids are a per-process random
//! prefix and a per-thread block of a global counter, hex-formatted on the stack: no
//! allocation beyond the header value itself and no contended atomic per request.

use std::cell::Cell;
use std::net::IpAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

use bytes::Bytes;
use http::header::{
    HeaderMap, HeaderName, HeaderValue, CONNECTION, HOST, PROXY_AUTHENTICATE, PROXY_AUTHORIZATION,
    TE, TRAILER, TRANSFER_ENCODING, UPGRADE,
};
use http::request;
use http::uri::PathAndQuery;
use turnpike_config::Endpoint;
use turnpike_policy::UpstreamTarget;

use crate::error::{ErrorKind, GatewayError};

pub(crate) static X_REQUEST_ID: HeaderName = HeaderName::from_static("x-request-id");
pub(crate) static X_FORWARDED_FOR: HeaderName = HeaderName::from_static("x-forwarded-for");
pub(crate) static X_FORWARDED_PROTO: HeaderName = HeaderName::from_static("x-forwarded-proto");
pub(crate) static X_FORWARDED_HOST: HeaderName = HeaderName::from_static("x-forwarded-host");
static KEEP_ALIVE: HeaderName = HeaderName::from_static("keep-alive");
static PROXY_CONNECTION: HeaderName = HeaderName::from_static("proxy-connection");

/// Longest client-chosen request id we keep; longer ones are replaced.
const MAX_REQUEST_ID: usize = 128;

/// One length switch and a compare: the request and the response path test every
/// header name with it.
#[inline]
pub(crate) fn is_hop_by_hop(name: &HeaderName) -> bool {
    kind(name) == Kind::HopByHop
}

/// What a request header is to [`strip_request`].
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    EndToEnd,
    HopByHop,
    /// With which IIS-style and Symfony/Zend back ends route on another URL than the
    /// request line's, past the gateway's resource rules: never forwarded, from anyone.
    UrlOverride,
    /// Through which a client would speak for a proxy: where the request came from
    /// (`X-Forwarded-*`, RFC 7239 `Forwarded`, `X-Real-IP`), believed by back ends and
    /// frameworks (Spring's `ForwardedHeaderFilter`, Express's `trust proxy`, servlet
    /// containers' `RemoteIpValve`) for redirects, links, "is it HTTPS" and IP
    /// allow-lists. Kept only from a trusted proxy ([`TrustedProxies`]).
    Forwarding,
}

/// One match (a length switch, then one compare) per header name.
#[inline]
fn kind(name: &HeaderName) -> Kind {
    match name.as_str() {
        "connection"
        | "transfer-encoding"
        | "keep-alive"
        | "te"
        | "trailer"
        | "upgrade"
        | "proxy-authorization"
        | "proxy-authenticate"
        | "proxy-connection" => Kind::HopByHop,
        "x-original-url" | "x-rewrite-url" => Kind::UrlOverride,
        "x-forwarded-for" | "x-forwarded-host" | "x-forwarded-proto" | "x-forwarded-port"
        | "x-forwarded-prefix" | "x-forwarded-ssl" | "forwarded" | "x-real-ip" => Kind::Forwarding,
        _ => Kind::EndToEnd,
    }
}

/// Strips what the client may not tell the upstream, in one pass over the names when
/// none is present (the common case: no allocation, no removal): hop-by-hop headers and
/// those named in `Connection`, the URL overrides, and the forwarding headers unless the
/// peer is a trusted proxy. An untrusted client's `X-Forwarded-For` goes too, so the
/// upstream's list starts at the peer the gateway saw: the one address it can vouch for
/// (a back end reading the leftmost entry would otherwise take a forged one).
pub(crate) fn strip_request(headers: &mut HeaderMap, trusted_peer: bool) {
    let (mut hop, mut spoofable) = (false, false);
    for name in headers.keys() {
        match kind(name) {
            Kind::EndToEnd => {}
            Kind::HopByHop => hop = true,
            Kind::UrlOverride => spoofable = true,
            Kind::Forwarding => spoofable |= !trusted_peer,
        }
    }
    if hop {
        strip_hop_by_hop(headers);
    }
    if spoofable {
        strip_spoofable(headers, trusted_peer);
    }
}

#[cold]
fn strip_spoofable(headers: &mut HeaderMap, trusted_peer: bool) {
    for n in ["x-original-url", "x-rewrite-url"] {
        headers.remove(n);
    }
    if !trusted_peer {
        for n in [
            "x-forwarded-for",
            "x-forwarded-host",
            "x-forwarded-proto",
            "x-forwarded-port",
            "x-forwarded-prefix",
            "x-forwarded-ssl",
            "forwarded",
            "x-real-ip",
        ] {
            headers.remove(n);
        }
    }
}

/// Most entries in `--trusted-proxies` (a balancer fleet fits in a few CIDR blocks).
pub(crate) const MAX_TRUSTED_PROXIES: usize = 256;

/// The peers whose forwarding headers are kept (`--trusted-proxies`): addresses and CIDR
/// blocks, checked once per connection at accept.
#[derive(Debug, Clone, Default)]
pub struct TrustedProxies(Box<[turnpike_throttle::IpRange]>);

impl TrustedProxies {
    /// Parses a comma-separated list of addresses, CIDR blocks and ranges, as throttling
    /// conditions take them (`10.0.0.0/8, 192.168.1.7, 2001:db8::/32`); empty: nobody is
    /// trusted.
    pub fn parse(list: &str) -> Result<Self, String> {
        let entries: Vec<&str> = list
            .split(',')
            .map(str::trim)
            .filter(|e| !e.is_empty())
            .collect();
        if entries.len() > MAX_TRUSTED_PROXIES {
            return Err(format!(
                "{} entries: at most {MAX_TRUSTED_PROXIES} (use CIDR blocks)",
                entries.len()
            ));
        }
        let ranges = entries
            .into_iter()
            .map(turnpike_throttle::IpRange::parse)
            .collect::<Result<Vec<_>, _>>()?;
        Ok(TrustedProxies(ranges.into()))
    }

    pub fn contains(&self, ip: IpAddr) -> bool {
        self.0.iter().any(|r| r.contains(ip))
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// Removes hop-by-hop headers and the headers named in `Connection`. One pass over the
/// names when there are none (the common case).
pub(crate) fn strip_hop_by_hop(headers: &mut HeaderMap) {
    if !headers.keys().any(is_hop_by_hop) {
        return;
    }
    let named: Vec<HeaderName> = headers
        .get_all(CONNECTION)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .filter_map(|t| HeaderName::from_bytes(t.trim().as_bytes()).ok())
        .collect();
    // A gRPC call's `TE: trailers` goes on: gRPC servers expect it (its status comes in
    // trailers) and HTTP/2 allows TE with that value only (RFC 9113 section 8.2.2).
    let trailers = turnpike_policy::http::is_grpc(headers)
        && headers.get_all(TE).iter().any(|v| {
            v.as_bytes()
                .split(|b| *b == b',')
                .any(|t| t.trim_ascii().eq_ignore_ascii_case(b"trailers"))
        });
    for n in named {
        headers.remove(n);
    }
    for n in [
        &CONNECTION,
        &TRANSFER_ENCODING,
        &KEEP_ALIVE,
        &TE,
        &TRAILER,
        &UPGRADE,
        &PROXY_AUTHORIZATION,
        &PROXY_AUTHENTICATE,
        &PROXY_CONNECTION,
    ] {
        headers.remove(n);
    }
    if trailers {
        headers.insert(TE, HeaderValue::from_static("trailers"));
    }
}

/// What the `X-Forwarded-*` headers say about this hop. The client's own forwarding
/// headers are gone by now unless its peer is a trusted proxy ([`strip_request`]), so
/// the rules below (append to a list, keep a proxy's proto and host) apply only to what
/// a trusted proxy sent.
pub(crate) struct Forwarded<'a> {
    /// The connection's peer address, formatted once per connection.
    pub client_ip: &'a HeaderValue,
    pub https: bool,
}

impl Forwarded<'_> {
    /// Writes the `X-Forwarded-*` headers into the request's header map: the one place
    /// they are written, for both upstream clients. The host is the one the request was
    /// routed by: the authority of an absolute-form (or HTTP/2) request URI, else the
    /// client's `Host`.
    pub(crate) fn apply(&self, headers: &mut HeaderMap, uri: &http::Uri) {
        let host = uri
            .authority()
            .and_then(|a| HeaderValue::from_str(a.as_str()).ok())
            .or_else(|| headers.get(http::header::HOST).cloned());
        add_forwarded(headers, self.client_ip, self.https, host);
    }
}

/// Adds `X-Forwarded-For` (appended to an existing list), and `X-Forwarded-Proto` and
/// `X-Forwarded-Host` unless an earlier proxy set them. `client_ip` is the connection's
/// peer address, formatted once per connection.
pub(crate) fn add_forwarded(
    headers: &mut HeaderMap,
    client_ip: &HeaderValue,
    https: bool,
    host: Option<HeaderValue>,
) {
    match headers.get(&X_FORWARDED_FOR) {
        None => {
            headers.insert(X_FORWARDED_FOR.clone(), client_ip.clone());
        }
        Some(prev) => {
            let mut v = Vec::with_capacity(prev.len() + 2 + client_ip.len());
            v.extend_from_slice(prev.as_bytes());
            v.extend_from_slice(b", ");
            v.extend_from_slice(client_ip.as_bytes());
            if let Ok(v) = HeaderValue::from_bytes(&v) {
                headers.insert(X_FORWARDED_FOR.clone(), v);
            }
        }
    }
    if !headers.contains_key(&X_FORWARDED_PROTO) {
        let proto = if https { "https" } else { "http" };
        headers.insert(X_FORWARDED_PROTO.clone(), HeaderValue::from_static(proto));
    }
    if !headers.contains_key(&X_FORWARDED_HOST) {
        if let Some(host) = host {
            headers.insert(X_FORWARDED_HOST.clone(), host);
        }
    }
}

/// The peer address as a header value (computed once per connection).
pub(crate) fn ip_header(ip: IpAddr) -> HeaderValue {
    let ip = match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(IpAddr::V6(v6), IpAddr::V4),
        v4 => v4,
    };
    HeaderValue::from_str(&ip.to_string()).unwrap_or_else(|_| HeaderValue::from_static("unknown"))
}

/// The request's id: the client's `X-Request-ID` if it is sane, else a new one (which is
/// then also inserted into `headers` so the upstream sees it).
pub(crate) fn request_id(headers: &mut HeaderMap) -> HeaderValue {
    if let Some(v) = headers.get(&X_REQUEST_ID) {
        if !v.is_empty() && v.len() <= MAX_REQUEST_ID {
            return v.clone();
        }
    }
    let id = next_request_id();
    headers.insert(X_REQUEST_ID.clone(), id.clone());
    id
}

const BLOCK: u64 = 1 << 16;
static COUNTER: AtomicU64 = AtomicU64::new(0);
static PREFIX: OnceLock<[u8; 8]> = OnceLock::new();

thread_local! {
    /// (next, end) of this thread's block of ids.
    static LOCAL: Cell<(u64, u64)> = const { Cell::new((0, 0)) };
}

fn prefix() -> &'static [u8; 8] {
    PREFIX.get_or_init(|| {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(0);
        let addr = &COUNTER as *const _ as u64;
        let mut x = nanos ^ (u64::from(std::process::id()) << 32) ^ addr.rotate_left(17);
        // splitmix64 finaliser: spreads the entropy over all bits.
        x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        x ^= x >> 31;
        let mut out = [0u8; 8];
        hex(&mut out, x >> 32, 8);
        out
    })
}

fn hex(out: &mut [u8], mut v: u64, digits: usize) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    for i in (0..digits).rev() {
        out[i] = HEX[(v & 0xf) as usize];
        v >>= 4;
    }
}

/// `xxxxxxxx-cccccccccccc`: 8 hex of process prefix, 12 hex of counter.
pub(crate) fn next_request_id() -> HeaderValue {
    let n = LOCAL.with(|c| {
        let (mut next, mut end) = c.get();
        if next == end {
            next = COUNTER.fetch_add(BLOCK, Ordering::Relaxed);
            end = next + BLOCK;
        }
        c.set((next + 1, end));
        next
    });
    let mut buf = [0u8; 21];
    buf[..8].copy_from_slice(prefix());
    buf[8] = b'-';
    hex(&mut buf[9..], n, 12);
    HeaderValue::from_bytes(&buf).unwrap_or_else(|_| HeaderValue::from_static("unknown"))
}

/// The one allocation of the upstream request line (hyper's client).
pub(crate) fn path_and_query(
    target: &UpstreamTarget,
    ep: &Endpoint,
) -> Result<PathAndQuery, GatewayError> {
    let q = target.query().map_or(0, |q| q.len() + 1);
    let mut s = String::with_capacity(ep.base_path.len() + target.path().len() + q);
    target.write_to(&ep.base_path, &mut s);
    PathAndQuery::from_maybe_shared(Bytes::from(s))
        .map_err(|e| GatewayError::with_source(ErrorKind::BadRequest, e))
}

/// The host a request is routed by, without its port.
pub(crate) fn request_host(parts: &request::Parts) -> Option<&str> {
    // The target's authority first: an absolute-form target (RFC 9112 §3.2.2: the
    // server MUST ignore Host then) or HTTP/2's `:authority` (a differing `host` was
    // refused at the edge); the `Host` header otherwise.
    parts
        .uri
        .authority()
        .map(|a| a.host())
        .or_else(|| parts.headers.get(HOST).and_then(|h| h.to_str().ok()))
        .map(host_without_port)
}

fn host_without_port(h: &str) -> &str {
    if let Some(rest) = h.strip_prefix('[') {
        return rest.split(']').next().unwrap_or(rest);
    }
    h.split(':').next().unwrap_or(h)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strips_hop_by_hop_and_connection_named() {
        let mut h = HeaderMap::new();
        h.insert(CONNECTION, HeaderValue::from_static("close, x-secret"));
        h.insert("x-secret", HeaderValue::from_static("1"));
        h.insert("keep-alive", HeaderValue::from_static("timeout=5"));
        h.insert(TE, HeaderValue::from_static("trailers"));
        h.insert("x-kept", HeaderValue::from_static("1"));
        strip_hop_by_hop(&mut h);
        assert_eq!(h.len(), 1);
        assert!(h.contains_key("x-kept"));

        // A gRPC call keeps `te: trailers` (and nothing else of TE).
        let mut h = HeaderMap::new();
        h.insert(CONNECTION, HeaderValue::from_static("te"));
        h.insert(TE, HeaderValue::from_static("gzip, trailers"));
        h.insert("content-type", HeaderValue::from_static("application/grpc"));
        strip_hop_by_hop(&mut h);
        assert_eq!(h.get(TE), Some(&HeaderValue::from_static("trailers")));
        assert_eq!(h.len(), 2);
    }

    #[test]
    fn ids_are_unique_and_well_formed() {
        let a = next_request_id();
        let b = next_request_id();
        assert_ne!(a, b);
        assert_eq!(a.len(), 21);
    }

    fn map(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(*k, HeaderValue::from_static(v));
        }
        h
    }

    #[test]
    fn forwarding_headers_go_unless_the_peer_is_trusted_url_overrides_always() {
        let sent = [
            ("x-forwarded-for", "6.6.6.6"),
            ("x-forwarded-host", "evil.example"),
            ("x-forwarded-proto", "https"),
            ("x-forwarded-port", "443"),
            ("x-forwarded-prefix", "/admin"),
            ("forwarded", "for=6.6.6.6;host=evil.example"),
            ("x-real-ip", "6.6.6.6"),
            ("x-original-url", "/admin"),
            ("x-rewrite-url", "/admin"),
            ("connection", "close"),
            ("x-kept", "1"),
        ];
        let mut h = map(&sent);
        strip_request(&mut h, false);
        assert_eq!(h.keys().map(|k| k.as_str()).collect::<Vec<_>>(), ["x-kept"]);
        let mut h = map(&sent);
        strip_request(&mut h, true);
        assert_eq!(h.len(), 8, "{h:?}");
        for gone in ["x-original-url", "x-rewrite-url", "connection"] {
            assert!(!h.contains_key(gone), "{gone}");
        }
        // Nothing to strip: nothing changes.
        let mut h = map(&[("accept", "*/*"), ("x-kept", "1")]);
        strip_request(&mut h, false);
        assert_eq!(h.len(), 2);
    }

    #[test]
    fn trusted_proxies_parse_addresses_and_blocks_with_a_cap() {
        let t = TrustedProxies::parse("10.0.0.0/8, 192.168.1.7,2001:db8::/32,").expect("list");
        assert!(t.contains("10.9.8.7".parse().expect("ip")));
        assert!(t.contains("::ffff:192.168.1.7".parse().expect("ip")));
        assert!(t.contains("2001:db8::1".parse().expect("ip")));
        assert!(!t.contains("192.168.1.8".parse().expect("ip")));
        assert!(TrustedProxies::parse("").expect("empty").is_empty());
        assert!(TrustedProxies::parse("10.0.0.0/33").is_err());
        let range = TrustedProxies::parse("10.0.0.1-10.0.0.9").expect("range");
        assert!(range.contains("10.0.0.5".parse().expect("ip")));
        assert!(TrustedProxies::parse("proxy.example").is_err());
        let many = vec!["10.0.0.1"; MAX_TRUSTED_PROXIES + 1].join(",");
        assert!(TrustedProxies::parse(&many).is_err());
    }

    #[test]
    fn forwarded_appends() {
        let mut h = HeaderMap::new();
        h.insert(&X_FORWARDED_FOR, HeaderValue::from_static("10.0.0.1"));
        let host = Some(HeaderValue::from_static("api.example"));
        add_forwarded(&mut h, &HeaderValue::from_static("127.0.0.1"), true, host);
        assert_eq!(h[&X_FORWARDED_FOR], "10.0.0.1, 127.0.0.1");
        assert_eq!(h[&X_FORWARDED_PROTO], "https");
        assert_eq!(h[&X_FORWARDED_HOST], "api.example");
    }

    #[test]
    fn strips_ports() {
        assert_eq!(host_without_port("a.example:8080"), "a.example");
        assert_eq!(host_without_port("a.example"), "a.example");
        assert_eq!(host_without_port("[::1]:80"), "::1");
    }
}
