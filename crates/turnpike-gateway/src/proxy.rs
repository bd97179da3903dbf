//! The request path: load the snapshot once, route, check limits, run the policy chain,
//! pick an endpoint (round robin, failover on connect failure), forward with streaming
//! bodies, and turn every failure into the JSON error of `error.rs`. Everything here runs
//! per request, so it avoids locks, formatting and clock reads beyond what it must do.

use std::cell::Cell;
use std::convert::Infallible;
use std::error::Error as _;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use arc_swap::ArcSwap;
use bytes::Bytes;
use http::header::{CONTENT_LENGTH, HOST};
use http::uri::{PathAndQuery, Scheme};
use http::{request, HeaderValue, Request, Response, Uri, Version};
use hyper::body::Incoming;
use turnpike_config::{CompiledApi, Endpoint, LoadBalancing, RouteResult, Snapshot};

use crate::access_log::{AccessLog, PendingRecord};
use crate::body::{BodyError, GatewayBody, OnBodyEnd, Pooled, RequestBody};
use crate::error::{ErrorKind, GatewayError};
use crate::h1::{self, DirectBody};
use crate::headers::{self, X_REQUEST_ID};
use crate::metrics::GatewayMetrics;
use crate::policy::{Chain, Flow, RequestCtx};
use crate::upstream::{Conn, EndpointPool, Upstreams};

/// State shared by every connection of a gateway.
pub struct Shared {
    pub snapshots: Arc<ArcSwap<Snapshot>>,
    pub upstreams: Upstreams,
    pub access_log: Option<Arc<AccessLog>>,
    pub chain: Chain,
    pub metrics: Option<Arc<GatewayMetrics>>,
}

/// Per-connection facts, computed once at accept.
pub struct ConnCtx {
    pub shared: Arc<Shared>,
    pub client: SocketAddr,
    pub client_ip: HeaderValue,
    pub https: bool,
}

thread_local! {
    static ROUND_ROBIN: Cell<usize> = const { Cell::new(0) };
}

/// The service of every connection.
pub async fn handle(
    conn: Arc<ConnCtx>,
    req: Request<Incoming>,
) -> Result<Response<GatewayBody>, Infallible> {
    let shared = &conn.shared;
    let start = (shared.access_log.is_some() || shared.metrics.is_some()).then(Instant::now);
    let (mut parts, body) = req.into_parts();
    let request_id = headers::request_id(&mut parts.headers);
    let log_head = shared
        .access_log
        .as_ref()
        .map(|_| (parts.method.clone(), parts.uri.clone()));
    let mut routed = None;
    // The upstream latency is for the access log only.
    let log_start = start.filter(|_| shared.access_log.is_some());
    let result = proxy(&conn, parts, body, &request_id, log_start, &mut routed).await;
    let (mut resp, upstream, failed) = match result {
        Ok((r, u)) => (r, u, None),
        Err(e) => {
            let kind = e.kind;
            (e.into_response(&request_id), None, Some(kind))
        }
    };
    if let (Some(m), Some(start)) = (shared.metrics.as_deref(), start) {
        m.observe(routed.as_ref(), resp.status(), start.elapsed(), failed);
    }
    resp.headers_mut()
        .insert(X_REQUEST_ID.clone(), request_id.clone());
    if let (Some(log), Some(start), Some((method, uri))) =
        (conn.shared.access_log.as_ref(), start, log_head)
    {
        let rec = Box::new(PendingRecord {
            start,
            request_id,
            client: conn.client,
            method,
            uri,
            status: resp.status().as_u16(),
            bytes: 0,
            upstream,
            sink: log.clone(),
        });
        resp.body_mut().attach_log(rec);
    }
    Ok(resp)
}

type Routed = (Arc<CompiledApi>, usize, Option<String>);

/// Routes on the snapshot loaded once; returns the API and where the upstream path
/// starts in the request path (or an owned path when it is not a suffix).
fn route(snapshots: &ArcSwap<Snapshot>, parts: &request::Parts) -> Result<Routed, GatewayError> {
    let snap = snapshots.load();
    let path = parts.uri.path();
    let host = parts
        .headers
        .get(HOST)
        .and_then(|h| h.to_str().ok())
        .or_else(|| parts.uri.authority().map(|a| a.as_str()))
        .map(host_without_port);
    match snap.route(host, &parts.method, path) {
        RouteResult::Matched { api, upstream_path } => {
            if path.ends_with(upstream_path) {
                Ok((api.clone(), path.len() - upstream_path.len(), None))
            } else {
                Ok((api.clone(), 0, Some(upstream_path.to_owned())))
            }
        }
        RouteResult::MethodNotAllowed { allow } => {
            let mut e = GatewayError::new(ErrorKind::MethodNotAllowed);
            e.allow = Some(allow);
            Err(e)
        }
        RouteResult::NotFound => Err(GatewayError::new(ErrorKind::NotFound)),
    }
}

/// Replaces the request's path by its normal form (`turnpike_config::normalise_path`)
/// before anything looks at it, so routing, auth, throttling conditions and the upstream
/// request all see the same path; refuses the forms the normaliser refuses.
fn normalise_uri(parts: &mut request::Parts) -> Result<(), GatewayError> {
    let normal = match turnpike_config::normalise_path(parts.uri.path()) {
        Ok(std::borrow::Cow::Borrowed(_)) => return Ok(()),
        Ok(std::borrow::Cow::Owned(p)) => p,
        Err(e) => return Err(GatewayError::with_source(ErrorKind::InvalidPath, e)),
    };
    let mut pq = normal;
    if let Some(q) = parts.uri.query() {
        pq.push('?');
        pq.push_str(q);
    }
    let mut uri = std::mem::take(&mut parts.uri).into_parts();
    uri.path_and_query = Some(
        PathAndQuery::from_maybe_shared(Bytes::from(pq))
            .map_err(|e| GatewayError::with_source(ErrorKind::InvalidPath, e))?,
    );
    parts.uri =
        Uri::from_parts(uri).map_err(|e| GatewayError::with_source(ErrorKind::InvalidPath, e))?;
    Ok(())
}

fn host_without_port(h: &str) -> &str {
    if let Some(rest) = h.strip_prefix('[') {
        return rest.split(']').next().unwrap_or(rest);
    }
    h.split(':').next().unwrap_or(h)
}

async fn proxy(
    conn: &ConnCtx,
    mut parts: request::Parts,
    body: Incoming,
    request_id: &HeaderValue,
    start: Option<Instant>,
    routed: &mut Option<Arc<CompiledApi>>,
) -> Result<(Response<GatewayBody>, Option<Duration>), GatewayError> {
    let shared = &conn.shared;
    normalise_uri(&mut parts)?;
    let (api, suffix_at, owned_path) = route(&shared.snapshots, &parts)?;
    // Handed back to the caller (metrics) without another reference count.
    let api: &Arc<CompiledApi> = routed.insert(api);
    if let Some(limit) = api.max_body_bytes {
        let declared = parts
            .headers
            .get(CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<u64>().ok());
        if declared.is_some_and(|n| n > limit) {
            return Err(GatewayError::new(ErrorKind::BodyTooLarge));
        }
    }
    let auth = match api.security.as_deref() {
        None => None,
        Some(sec) => {
            let uri = parts.uri.clone(); // refcounted: the path stays borrowable
            let upstream_path = match &owned_path {
                Some(p) => p.as_str(),
                None => uri.path().get(suffix_at..).unwrap_or("/"),
            };
            crate::policies::auth::enforce(sec, &mut parts, upstream_path).await?
        }
    };
    let mut ctx = (!shared.chain.is_empty()).then(|| RequestCtx {
        request_id,
        client: conn.client,
        api,
        ext: http::Extensions::new(),
        throttle: None,
        auth,
    });
    if let Some(ctx) = ctx.as_mut() {
        match shared.chain.on_request_headers(ctx, &mut parts) {
            Ok(Flow::Continue) => {}
            Ok(Flow::Respond(r)) => {
                shared.chain.on_complete(ctx, r.status());
                return Ok((r, None));
            }
            Err(e) => {
                shared.chain.on_complete(ctx, e.kind.spec().status);
                return Err(e);
            }
        }
    }
    let target = Target {
        uri: parts.uri.clone(),
        suffix_at,
        owned_path,
    };
    headers::strip_hop_by_hop(&mut parts.headers);
    let fwd = h1::Forwarded {
        client_ip: &conn.client_ip,
        https: conn.https,
    };
    let body = RequestBody::new(body, api.max_body_bytes);
    let result = forward(shared, api, parts, body, &target, &fwd).await;
    let result = match result {
        Ok(up) => finish_response(&shared.chain, ctx.as_mut(), up, start),
        Err(e) => Err(e),
    };
    if let Some(ctx) = ctx.as_ref() {
        let status = match &result {
            Ok((r, _)) => r.status(),
            Err(e) => e.kind.spec().status,
        };
        shared.chain.on_complete(ctx, status);
    }
    result
}

fn finish_response(
    chain: &Chain,
    ctx: Option<&mut RequestCtx<'_>>,
    up: Upstream,
    start: Option<Instant>,
) -> Result<(Response<GatewayBody>, Option<Duration>), GatewayError> {
    let latency = start.map(|s| s.elapsed());
    let (mut rparts, mut body) = match up {
        Upstream::Hyper(resp, pooled) => {
            let (rparts, rbody) = resp.into_parts();
            (rparts, GatewayBody::upstream(rbody, pooled, None))
        }
        Upstream::Direct(resp) => {
            let (rparts, rbody) = resp.into_parts();
            (rparts, GatewayBody::direct(rbody))
        }
    };
    headers::strip_hop_by_hop(&mut rparts.headers);
    rparts.version = Version::HTTP_11;
    if let Some(ctx) = ctx {
        chain.on_response_headers(ctx, &mut rparts)?;
        if let Some(end) = rparts.extensions.remove::<OnBodyEnd>() {
            body.on_end(end);
        }
    }
    Ok((Response::from_parts(rparts, body), latency))
}

/// Where the request goes below the endpoint's base path: the client's URI (a cheap
/// refcounted clone) and where the upstream path starts in it.
struct Target {
    uri: Uri,
    suffix_at: usize,
    owned_path: Option<String>,
}

impl Target {
    /// The upstream path in pieces, for the in-task client to write without allocating.
    fn upstream_path<'a>(&'a self, ep: &'a Endpoint) -> h1::UpstreamPath<'a> {
        h1::UpstreamPath {
            base: &ep.base_path,
            path: match &self.owned_path {
                Some(p) => p.as_str(),
                None => self.uri.path().get(self.suffix_at..).unwrap_or("/"),
            },
            query: self.uri.query(),
        }
    }

    /// The one allocation of the upstream request line.
    fn path_and_query(&self, ep: &Endpoint) -> Result<PathAndQuery, GatewayError> {
        let upstream_path = match &self.owned_path {
            Some(p) => p.as_str(),
            None => self.uri.path().get(self.suffix_at..).unwrap_or("/"),
        };
        let query = self.uri.query();
        let q = query.map_or(0, |q| q.len() + 1);
        let mut s = String::with_capacity(ep.base_path.len() + upstream_path.len() + q);
        s.push_str(&ep.base_path);
        s.push_str(upstream_path);
        if let Some(q) = query {
            s.push('?');
            s.push_str(q);
        }
        PathAndQuery::from_maybe_shared(Bytes::from(s))
            .map_err(|e| GatewayError::with_source(ErrorKind::BadRequest, e))
    }
}

/// An upstream response: from hyper's client (HTTPS) or the in-task client (HTTP).
enum Upstream {
    Hyper(Response<Incoming>, Option<Pooled>),
    Direct(Response<DirectBody>),
}

/// Picks endpoints round robin, failing over to the next one when connecting fails.
async fn forward(
    shared: &Shared,
    api: &CompiledApi,
    parts: request::Parts,
    body: RequestBody,
    target: &Target,
    fwd: &h1::Forwarded<'_>,
) -> Result<Upstream, GatewayError> {
    let n = api.endpoints.len();
    if n == 0 {
        return Err(GatewayError::new(ErrorKind::NoEndpoint));
    }
    let first = if n == 1 || api.load_balancing == LoadBalancing::Failover {
        0
    } else {
        ROUND_ROBIN.with(|c| {
            let v = c.get();
            c.set(v.wrapping_add(1));
            v % n
        })
    };
    let direct_ok = h1::fits(&parts.headers, &body);
    let mut last_err = GatewayError::new(ErrorKind::NoEndpoint);
    for i in 0..n {
        let ep = &api.endpoints[(first + i) % n];
        let https = ep.scheme == Scheme::HTTPS;
        let pool = shared.upstreams.pool(https, &ep.authority);
        if !https && direct_ok {
            // Plain HTTP with a small body: the in-task client (h1.rs), no connection
            // task or channels.
            match pool.checkout_direct(api.connect_timeout).await {
                Ok(conn) => {
                    let path = target.upstream_path(ep);
                    let fut = h1::exchange(pool, conn, parts, body, path, fwd);
                    return match tokio::time::timeout(api.response_timeout, fut).await {
                        Ok(r) => r.map(Upstream::Direct),
                        Err(_) => Err(GatewayError::new(ErrorKind::UpstreamResponseTimeout)),
                    };
                }
                Err(e) => {
                    tracing::warn!(api = %api.name, endpoint = %ep.authority, error = %e,
                        cause = ?e.source(), "endpoint failed, trying the next one");
                    last_err = e;
                    continue;
                }
            }
        }
        match pool.checkout(api.connect_timeout).await {
            Ok(conn) => {
                let pq = target.path_and_query(ep)?;
                let mut parts = parts;
                let fwd_host = parts.headers.get(HOST).cloned().or_else(|| {
                    parts
                        .uri
                        .authority()
                        .and_then(|a| HeaderValue::from_str(a.as_str()).ok())
                });
                headers::add_forwarded(&mut parts.headers, fwd.client_ip, fwd.https, fwd_host);
                let req = build_request(parts, body, pq);
                return send(pool, conn, req, api)
                    .await
                    .map(|(r, p)| Upstream::Hyper(r, p));
            }
            Err(e) => {
                tracing::warn!(api = %api.name, endpoint = %ep.authority, error = %e,
                    cause = ?e.source(), "endpoint failed, trying the next one");
                last_err = e;
            }
        }
    }
    Err(last_err)
}

fn build_request(
    parts: request::Parts,
    body: RequestBody,
    pq: PathAndQuery,
) -> Request<RequestBody> {
    let mut req = Request::new(body);
    *req.method_mut() = parts.method;
    *req.headers_mut() = parts.headers;
    *req.uri_mut() = Uri::from(pq);
    req
}

/// Sets the URI form and headers the connection's protocol wants.
fn prepare(req: &mut Request<RequestBody>, pool: &EndpointPool, h2: bool) {
    if h2 {
        *req.version_mut() = Version::HTTP_2;
        req.headers_mut().remove(HOST);
        let pq = req.uri().path_and_query().cloned();
        let mut b = Uri::builder()
            .scheme(if pool.is_https() { "https" } else { "http" })
            .authority(pool.authority().clone());
        if let Some(pq) = pq {
            b = b.path_and_query(pq);
        }
        if let Ok(uri) = b.build() {
            *req.uri_mut() = uri;
        }
    } else {
        *req.version_mut() = Version::HTTP_11;
        req.headers_mut().insert(HOST, pool.host.clone());
        if req.uri().scheme().is_some() {
            if let Some(pq) = req.uri().path_and_query().cloned() {
                *req.uri_mut() = Uri::from(pq);
            }
        }
    }
}

/// Sends within the API's response timeout; a stale pooled HTTP/1.1 connection gets one
/// retry on a fresh connection when the request was provably not sent.
async fn send(
    pool: Arc<EndpointPool>,
    conn: Conn,
    mut req: Request<RequestBody>,
    api: &CompiledApi,
) -> Result<(Response<Incoming>, Option<Pooled>), GatewayError> {
    let fut = async {
        let mut conn = conn;
        loop {
            match conn {
                Conn::H1 { mut sender, reused } => {
                    prepare(&mut req, &pool, false);
                    match sender.try_send_request(req).await {
                        Ok(resp) => return Ok((resp, Some(Pooled { sender, pool }))),
                        Err(mut e) => match e.take_message() {
                            Some(back) if reused => {
                                req = back;
                                // Cold: boxed so its (large) future is not part of every
                                // request's future.
                                conn = Box::pin(pool.connect_new(api.connect_timeout)).await?;
                            }
                            _ => return Err(send_error(e.into_error())),
                        },
                    }
                }
                Conn::H2(mut sender) => {
                    prepare(&mut req, &pool, true);
                    return match sender.send_request(req).await {
                        Ok(resp) => Ok((resp, None)),
                        Err(e) => Err(send_error(e)),
                    };
                }
            }
        }
    };
    match tokio::time::timeout(api.response_timeout, fut).await {
        Ok(r) => r,
        Err(_) => Err(GatewayError::new(ErrorKind::UpstreamResponseTimeout)),
    }
}

/// Classifies a failed exchange: our body limit (413), the client's body (400), or the
/// upstream (502).
fn send_error(e: hyper::Error) -> GatewayError {
    let mut src = e.source();
    while let Some(s) = src {
        if let Some(be) = s.downcast_ref::<BodyError>() {
            let kind = match be {
                BodyError::TooLarge { .. } => ErrorKind::BodyTooLarge,
                BodyError::Hyper(_) => ErrorKind::BadRequest,
            };
            return GatewayError::with_source(kind, e);
        }
        src = s.source();
    }
    let kind = if e.is_parse() || e.is_parse_status() {
        ErrorKind::UpstreamProtocol
    } else {
        ErrorKind::UpstreamReset
    };
    GatewayError::with_source(kind, e)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strips_ports() {
        assert_eq!(host_without_port("a.example:8080"), "a.example");
        assert_eq!(host_without_port("a.example"), "a.example");
        assert_eq!(host_without_port("[::1]:80"), "::1");
    }
}
