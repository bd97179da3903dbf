//! The per-request context every hook of a chain shares ([`RequestCtx`]): who asked,
//! where the request goes upstream ([`UpstreamTarget`], which a policy may rewrite),
//! what earlier steps learned (the caller, the throttle decision, typed extensions), and
//! what [`on_complete`](crate::Policy::on_complete) is told ([`Completion`]).

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use crate::caller::Identity;
use http::{HeaderValue, Method, StatusCode, Uri};

use crate::error::ErrorKind;

/// What the gateway knows about one request, owned by the request (so `on_complete`
/// can run when the response body ends, after the request future is gone).
pub struct RequestCtx {
    pub request_id: HeaderValue,
    pub client: SocketAddr,
    /// The request came over TLS.
    pub https: bool,
    /// The path and query the upstream receives (below the endpoint's base path).
    pub upstream: UpstreamTarget,
    /// Who called, set by the auth step; `None` for open APIs and resources.
    pub auth: Option<Authenticated>,
    /// The throttle step's decision when a limit applied (its response hook writes the
    /// rate-limit headers from it). A field, not `ext`: no allocation on the hot path.
    pub throttle: Option<crate::quota::Decision>,
    /// What other policies learned, typed (a map allocated on first insert).
    pub ext: http::Extensions,
    /// The response cache's state between its request and response hooks. A field,
    /// not `ext`: the map's allocation, hashing and drop were a tenth of what a cache
    /// miss added to a request.
    pub cache: Option<Box<dyn std::any::Any + Send + Sync>>,
    /// The state between its hooks of the policy that serves the request itself (an
    /// MCP endpoint's exchange: its message read before auth, the call's answer to
    /// wrap). A field, not `ext`, for the reason `cache` is one.
    pub endpoint: Option<Box<dyn std::any::Any + Send + Sync>>,
    /// Set by an early-body hook that left the request no body and removed its framing
    /// headers (`Content-Length`, `Transfer-Encoding`): an MCP tool call to a GET
    /// operation. It goes upstream as a bodiless REST request does, without a
    /// `Content-Length: 0` of the gateway's (a body policy that gives it a body again
    /// has its length written as any).
    pub bodiless: bool,
    /// The matched resource's path template as written (`/pets/{id}`), set by the
    /// gateway only when something observes the request (analytics).
    pub resource: Option<Arc<str>>,
    /// The version of the snapshot that routed the request (0 when none matched).
    pub snapshot_version: u64,
    /// The throttling policy that refused the request (its 429), for observers; set on
    /// the refusal path only.
    pub throttled_by: Option<Arc<str>>,
    /// W3C trace context, when tracing is on (`--otlp-endpoint`): boxed so a gateway
    /// without tracing carries one pointer.
    pub trace: Option<Box<crate::trace::TraceContext>>,
}

impl RequestCtx {
    pub fn new(
        request_id: HeaderValue,
        client: SocketAddr,
        https: bool,
        upstream: UpstreamTarget,
    ) -> Self {
        RequestCtx {
            request_id,
            client,
            https,
            upstream,
            auth: None,
            throttle: None,
            ext: http::Extensions::new(),
            cache: None,
            endpoint: None,
            bodiless: false,
            resource: None,
            snapshot_version: 0,
            throttled_by: None,
            trace: None,
        }
    }

    /// The authenticated caller, if the API is secured.
    #[inline]
    pub fn identity(&self) -> Option<&Arc<Identity>> {
        self.auth.as_ref().map(|a| &a.identity)
    }

    /// The tier of the caller's subscription to this API, if one was required.
    #[inline]
    pub fn subscription_tier(&self) -> Option<&str> {
        self.auth
            .as_ref()
            .and_then(|a| a.subscription_tier.as_deref())
    }
}

/// Put in [`RequestCtx::ext`] by the auth step of a secured API that opens some of its
/// operations (a GraphQL API's `auth: none` operations) when a request carries no
/// credential at all: the request goes on unauthenticated, and the policy that knows
/// the operations refuses it unless every operation it calls is open.
#[derive(Debug, Clone, Copy)]
pub struct Anonymous;

/// Put in [`RequestCtx::ext`] by a response cache that answered the request itself (a
/// hit, or a stale answer): observers count it as a cache hit.
#[derive(Debug, Clone, Copy)]
pub struct FromCache;

/// What the auth step learned about the caller.
#[derive(Clone)]
pub struct Authenticated {
    pub identity: Arc<Identity>,
    /// The tier of the subscription that let the call through (throttling reads it);
    /// `None` when the API does not require a subscription.
    pub subscription_tier: Option<Arc<str>>,
}

/// The upstream path and query of a request: by default a view into the client's URI
/// (the path below `/{context}/{version}`, the query as sent), no allocation; a policy
/// that rewrites either gets its own copy.
#[derive(Debug, Clone)]
pub struct UpstreamTarget {
    uri: Uri,
    path: Path,
    query: Query,
}

#[derive(Debug, Clone)]
enum Path {
    /// The client's path from this byte on.
    Suffix(usize),
    Owned(String),
    /// A path and its query built in one buffer (`/a?b`): the path is `text[..at - 1]`,
    /// the query ([`Query::InPath`]) `text[at..]`.
    WithQuery {
        text: String,
        at: usize,
    },
}

#[derive(Debug, Clone)]
enum Query {
    Client,
    Owned(Option<String>),
    /// The query [`Path::WithQuery`] holds.
    InPath,
}

/// A rewritten path or query that is not valid in a request line.
#[derive(Debug, thiserror::Error)]
#[error("invalid upstream {what}: {value:?}")]
pub struct InvalidTarget {
    what: &'static str,
    value: String,
}

impl UpstreamTarget {
    /// The client's URI with the upstream path starting at byte `at` of its path.
    pub fn suffix(uri: Uri, at: usize) -> Self {
        UpstreamTarget {
            uri,
            path: Path::Suffix(at),
            query: Query::Client,
        }
    }

    /// The client's URI (for its query) with an upstream path of its own.
    pub fn owned(uri: Uri, path: &str) -> Self {
        // `/` (a request to a route's own prefix, an MCP endpoint's) is the client's
        // path's end as a suffix (`path()` gives `/` for it): nothing to allocate.
        let path = match path {
            "/" => Path::Suffix(uri.path().len()),
            p => Path::Owned(p.into()),
        };
        UpstreamTarget {
            uri,
            path,
            query: Query::Client,
        }
    }

    /// The upstream path, starting with `/`.
    #[inline]
    pub fn path(&self) -> &str {
        match &self.path {
            Path::Suffix(at) => match self.uri.path().get(*at..) {
                Some("") | None => "/",
                Some(p) => p,
            },
            Path::Owned(p) => p,
            Path::WithQuery { text, at } => text.get(..at - 1).unwrap_or("/"),
        }
    }

    /// The upstream query, without `?`.
    #[inline]
    pub fn query(&self) -> Option<&str> {
        match &self.query {
            Query::Client => self.uri.query(),
            Query::Owned(q) => q.as_deref(),
            Query::InPath => match &self.path {
                Path::WithQuery { text, at } => text.get(*at..),
                _ => None,
            },
        }
    }

    /// The client's request URI, as received.
    pub fn client_uri(&self) -> &Uri {
        &self.uri
    }

    /// Rewrites the upstream path (`/` first, no `?` or `#`, request-line characters).
    pub fn set_path(&mut self, path: &str) -> Result<(), InvalidTarget> {
        self.set_path_owned(path.to_owned())
    }

    /// [`set_path`](Self::set_path) with a path the caller built: kept, not copied.
    pub fn set_path_owned(&mut self, path: String) -> Result<(), InvalidTarget> {
        let ok = path.starts_with('/') && target_ok(&path, 0, path_table);
        if !ok {
            return Err(InvalidTarget {
                what: "path",
                value: path,
            });
        }
        self.split_query();
        self.path = Path::Owned(path);
        Ok(())
    }

    /// Rewrites the path and the query at once from one buffer the caller built:
    /// `path?query` with the query from byte `query_at` (after the `?`), or a path
    /// alone (`None`); kept, not copied. Checked as [`set_path_owned`] and
    /// [`set_query_owned`] check each part; an empty query is none.
    ///
    /// [`set_path_owned`]: Self::set_path_owned
    /// [`set_query_owned`]: Self::set_query_owned
    pub fn set_target_owned(
        &mut self,
        text: String,
        query_at: Option<usize>,
    ) -> Result<(), InvalidTarget> {
        let Some(at) = query_at else {
            self.set_path_owned(text)?;
            self.query = Query::Owned(None);
            return Ok(());
        };
        let (path, query) = match (text.get(..at.wrapping_sub(1)), text.get(at..)) {
            (Some(p), Some(q)) if text.as_bytes()[at - 1] == b'?' => (p, q),
            _ => {
                return Err(InvalidTarget {
                    what: "path",
                    value: text,
                })
            }
        };
        if !(path.starts_with('/') && target_ok(path, 0, path_table)) {
            return Err(InvalidTarget {
                what: "path",
                value: path.to_owned(),
            });
        }
        if !target_ok(query, 2, query_table) {
            return Err(InvalidTarget {
                what: "query",
                value: query.to_owned(),
            });
        }
        if query.is_empty() {
            let mut text = text;
            text.truncate(at - 1);
            self.path = Path::Owned(text);
            self.query = Query::Owned(None);
        } else {
            self.path = Path::WithQuery { text, at };
            self.query = Query::InPath;
        }
        Ok(())
    }

    /// A query held in the path's buffer moved to its own, before the path changes.
    fn split_query(&mut self) {
        if let Query::InPath = self.query {
            self.query = Query::Owned(self.query().map(str::to_owned));
        }
    }

    /// Sends the request to the endpoint's URL as written, nothing appended (a proxied
    /// MCP server's endpoint is one URL: `/mcp`, never `/mcp/`).
    pub fn set_endpoint_only(&mut self) {
        self.path = Path::Owned(String::new());
        self.query = Query::Owned(None);
    }

    /// Rewrites (or, with `None`, drops) the upstream query (without `?`).
    pub fn set_query(&mut self, query: Option<&str>) -> Result<(), InvalidTarget> {
        self.set_query_owned(query.map(str::to_owned))
    }

    /// [`set_query`](Self::set_query) with a query the caller built: kept, not copied.
    pub fn set_query_owned(&mut self, query: Option<String>) -> Result<(), InvalidTarget> {
        if let Some(q) = &query {
            if !target_ok(q, 2, query_table) {
                return Err(InvalidTarget {
                    what: "query",
                    value: q.clone(),
                });
            }
        }
        if let Path::WithQuery { text, at } = &mut self.path {
            // The path keeps its buffer, without the query.
            text.truncate(*at - 1);
            self.path = Path::Owned(std::mem::take(text));
        }
        self.query = Query::Owned(query.filter(|q| !q.is_empty()));
        Ok(())
    }

    /// `base` + path + `?query`: the upstream request target.
    pub fn write_to(&self, base: &str, out: &mut String) {
        out.push_str(base);
        out.push_str(self.path());
        if out.is_empty() {
            // An endpoint with no path of its own, asked for as it is.
            out.push('/');
        }
        if let Some(q) = self.query() {
            out.push('?');
            out.push_str(q);
        }
    }
}

/// Whether `http`'s `PathAndQuery` would take this path (or query, after `/?`) whole,
/// checked in place: building one to check it copies the text (and a query was first
/// formatted behind `/?`), a cost paid on every rewritten request. `?` and `#` are
/// refused in both (they would end the path or the query); `tests::target_bytes_as_http`
/// keeps the classes equal to http's.
#[inline]
fn target_ok(s: &str, before: usize, class: impl Fn(u8) -> bool) -> bool {
    // http's limit on a whole path and query (`u16::MAX - 1`); a query comes after `/?`.
    s.len() + before < u16::MAX as usize && s.bytes().all(class)
}

/// [`path_byte`] and [`query_byte`] as tables: a load a byte, where the range tests
/// cost ~10 instructions a byte.
static PATH_BYTES: [bool; 256] = byte_table(false);
static QUERY_BYTES: [bool; 256] = byte_table(true);

const fn byte_table(query: bool) -> [bool; 256] {
    let mut t = [false; 256];
    let mut b = 0;
    while b < 256 {
        t[b] = if query {
            query_byte(b as u8)
        } else {
            path_byte(b as u8)
        };
        b += 1;
    }
    t
}

fn path_table(b: u8) -> bool {
    PATH_BYTES[usize::from(b)]
}

fn query_table(b: u8) -> bool {
    QUERY_BYTES[usize::from(b)]
}

/// A byte http keeps as is in a path (its `PATH_MAP`), `?` and `#` excepted; bytes of
/// a multi-byte UTF-8 character are kept (the text is a `str`).
const fn path_byte(b: u8) -> bool {
    matches!(b, 0x21 | 0x22 | 0x24..=0x3B | 0x3D | 0x40..=0x5F | 0x61..=0x7E | 0x80..)
}

/// A byte http keeps as is in a query (its `QUERY_MAP`), `#` excepted.
const fn query_byte(b: u8) -> bool {
    matches!(b, 0x21 | 0x24..=0x3B | 0x3D | 0x3F..=0x7E | 0x80..)
}

/// The latency split of a request.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Timings {
    /// From the request head to the upstream request being sent (routing, policies,
    /// reading a buffered body); the whole time when no upstream was called.
    pub gateway_before: Duration,
    /// From sending to the upstream's response head; `None` when no upstream answered.
    pub upstream: Option<Duration>,
    /// From the upstream's response head to the last body byte sent (response
    /// policies, streaming to the client).
    pub gateway_after: Duration,
    /// From the request head to the first response body byte handed to the client's
    /// connection: an LLM stream's time to first token. `None` for a bodiless answer.
    pub first_byte: Option<Duration>,
}

impl Timings {
    /// The whole request, head to last byte.
    pub fn total(&self) -> Duration {
        self.gateway_before + self.upstream.unwrap_or_default() + self.gateway_after
    }
}

/// How a request ended, as `on_complete` sees it.
#[derive(Debug, Clone)]
pub struct Completion<'a> {
    /// The status sent; 499 ("client closed request", as nginx logs it) when `aborted`.
    pub status: StatusCode,
    /// The error table's row when the gateway answered with an error.
    pub error: Option<ErrorKind>,
    /// The client went away before the response body ended.
    pub aborted: bool,
    pub timings: Timings,
    /// Request body bytes received from the client.
    pub bytes_in: u64,
    /// Response body bytes sent to the client.
    pub bytes_out: u64,
    /// The request's method.
    pub method: Method,
    /// The status the upstream answered with (`None` when no upstream answered).
    pub upstream_status: Option<StatusCode>,
    /// The API that routed the request (`None` when none matched); borrowed: an
    /// observer that keeps it clones the `Arc`, one that does not pays nothing.
    pub api: Option<&'a Arc<ApiLabel>>,
    /// When the request head arrived (the instant the timings start at).
    pub started: std::time::Instant,
}

/// An API's names, built once per compile and shared by every observed request.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ApiLabel {
    pub name: Box<str>,
    /// `/pets`: no trailing slash.
    pub context: Box<str>,
    pub version: Box<str>,
}

#[cfg(test)]
mod tests {
    use http::uri::PathAndQuery;

    use super::*;

    #[test]
    fn a_root_path_is_the_root_whatever_the_client_path() {
        for uri in ["/mcp/pets/v1", "/mcp/pets/v1?x=1", "/"] {
            let t = UpstreamTarget::owned(Uri::from_static(uri), "/");
            assert_eq!(t.path(), "/", "{uri}");
            assert_eq!(t.query(), Uri::from_static(uri).query(), "{uri}");
            assert!(matches!(t.path, Path::Suffix(_)), "not allocated");
        }
        let t = UpstreamTarget::owned(Uri::from_static("/a/b"), "/c");
        assert_eq!(t.path(), "/c");
    }

    /// A path and query set from one buffer read as when set one by one, and either
    /// part set again after leaves the other as it was.
    #[test]
    fn a_path_and_query_in_one_buffer() {
        let uri = || Uri::from_static("/api/v1/x?client=1");
        let mut t = UpstreamTarget::suffix(uri(), 7);
        t.set_target_owned("/pets/7?a=1&b=%20".into(), Some(8))
            .expect("valid");
        assert_eq!((t.path(), t.query()), ("/pets/7", Some("a=1&b=%20")));
        let mut out = String::new();
        t.write_to("/base", &mut out);
        assert_eq!(out, "/base/pets/7?a=1&b=%20");
        t.set_path_owned("/other".into()).expect("valid");
        assert_eq!((t.path(), t.query()), ("/other", Some("a=1&b=%20")));

        let mut t = UpstreamTarget::suffix(uri(), 7);
        t.set_target_owned("/pets/7?a=1".into(), Some(8))
            .expect("valid");
        t.set_query_owned(Some("c=2".into())).expect("valid");
        assert_eq!((t.path(), t.query()), ("/pets/7", Some("c=2")));

        for (text, at, want) in [
            ("/pets", None, Ok(("/pets", None))),
            ("/pets?", Some(6), Ok(("/pets", None))),
            ("/?q", Some(2), Ok(("/", Some("q")))),
            ("/pets?a", Some(5), Err("path")),
            ("/pets?a", Some(9), Err("path")),
            ("/pets?a", Some(0), Err("path")),
            ("pets?a", Some(5), Err("path")),
            ("/pe#ts?a", Some(7), Err("path")),
            ("/pets?a#", Some(6), Err("query")),
        ] {
            let mut t = UpstreamTarget::suffix(uri(), 7);
            let got = t
                .set_target_owned(text.into(), at)
                .map(|()| (t.path(), t.query()))
                .map_err(|e| e.what);
            assert_eq!(got, want, "{text} {at:?}");
        }
    }

    /// Every byte, in a path and in a query, is taken or refused as `PathAndQuery` does.
    #[test]
    fn target_bytes_as_http() {
        for b in 0..=0xFFu8 {
            assert_eq!(path_table(b), path_byte(b), "{b:#x}");
            assert_eq!(query_table(b), query_byte(b), "{b:#x}");
        }
        for b in 0..=0x7Fu8 {
            let text = format!("/a{}b", b as char);
            let http = PathAndQuery::try_from(text.as_str()).is_ok() && !matches!(b, b'?' | b'#');
            assert_eq!(target_ok(&text, 0, path_byte), http, "path byte {b:#x}");
            let query = format!("a{}b", b as char);
            let http = PathAndQuery::try_from(format!("/?{query}")).is_ok() && b != b'#';
            assert_eq!(target_ok(&query, 2, query_byte), http, "query byte {b:#x}");
        }
        let path = "/caf\u{e9}/\u{1F600}";
        assert!(target_ok(path, 0, path_byte) && PathAndQuery::try_from(path).is_ok());
        let at_most = "/".repeat(u16::MAX as usize - 1);
        assert!(
            PathAndQuery::try_from(at_most.as_str()).is_ok() && target_ok(&at_most, 0, path_byte)
        );
        let longer = "/".repeat(u16::MAX as usize);
        assert!(
            PathAndQuery::try_from(longer.as_str()).is_err() && !target_ok(&longer, 0, path_byte)
        );
        let query = "a".repeat(u16::MAX as usize - 3);
        assert!(
            PathAndQuery::try_from(format!("/?{query}")).is_ok()
                && target_ok(&query, 2, query_byte)
        );
        let query = "a".repeat(u16::MAX as usize - 2);
        assert!(
            PathAndQuery::try_from(format!("/?{query}")).is_err()
                && !target_ok(&query, 2, query_byte)
        );
    }
}
