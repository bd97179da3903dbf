//! The request path: load the snapshot once, route, run the API's chain (compiled into
//! its `CompiledApi`: pre-route, request headers, request body), forward
//! (`upstream/forward.rs`), run the response side (response headers, response body, reverse
//! order), and hand `on_complete`, metrics and the access log to the response body
//! (`complete.rs`) so they run once the last byte went out, whatever happened. Every
//! failure becomes the error table's JSON response and passes the response hooks too.
//! Everything here runs per request, so it avoids locks, formatting and clock reads
//! beyond what the API's policies and the gateway's options ask for.

use std::convert::Infallible;
use std::future::Future;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use std::time::Instant;

use arc_swap::ArcSwap;
use futures_util::future::Either;
use http::header::ALLOW;
use http::{request, HeaderValue, Request, Response, Version};
use hyper::body::Incoming;
use turnpike_config::{CompiledApi, RouteResult, Snapshot, DEFAULT_MAX_BODY_BYTES};
use turnpike_policy::http::content_length;
use turnpike_policy::{Hooks, RequestCtx, Stop, TraceContext, UpstreamTarget};

use crate::answer::{
    answer_response, error_parts, leaving, response_hooks, stop, upstream_response, Refuse,
};
use crate::client_body::ClientBody;
use crate::complete::{BytesIn, Finisher, Marks};
use crate::conn::ConnCtx;
use crate::error::{ErrorKind, GatewayError};
use crate::headers::{self, request_host, X_REQUEST_ID};
use crate::lenient::{normalise_uri, Lenient};
use crate::park::HeldBody;
use crate::response_body::{self as body, ResponseBody};
use crate::upstream::forward::{forward, Upstream};

/// The service of every connection: what HTTP forbids is refused first (`edge.rs`),
/// then route, the API's chain and the upstream exchange. While draining, each
/// HTTP/1.x answer closes its connection, so a balancer's pooled connections leave this
/// gateway before it stops accepting. The response body holds the connection's context
/// until hyper is done with it (what the park sweep reads as "in flight").
///
/// The steps before and after the exchange are plain functions: each async level a
/// request's future nests is a copy of the whole future below it as it starts. The
/// request is taken apart, checked and routed before the future exists ([`begin`]),
/// and the future uses what it captured in place: hyper moves the whole future into its
/// slot on every request (`Dispatch::recv_msg`), and an async fn would hold the request
/// it was given beside the parts taken from it (rust-lang/rust#62958).
pub(crate) fn handle(
    conn: Arc<ConnCtx>,
    req: Request<Incoming>,
) -> impl Future<Output = Result<Response<HeldBody<ResponseBody, Arc<ConnCtx>>>, Infallible>> {
    let Begun {
        api,
        mut ctx,
        mut parts,
        body,
        refuse,
        request_id,
        observed,
        h1,
    } = match begin(&conn, req) {
        Ok(begun) => begun,
        Err(answered) => return Either::Left(std::future::ready(Ok(answered))),
    };
    Either::Right(async move {
        if crate::upgrade::is_websocket(&parts) {
            let resp = upgrade(&conn, api, ctx, parts, refuse, observed).await;
            return Ok(leaving(resp, request_id, h1, &conn));
        }
        if !observed && !api.chain.hooks().contains(Hooks::COMPLETE) {
            // The fast path: nothing to tell at the end, the context stays here.
            let (resp, _) = exchange(&conn, &api, &mut ctx, None, &mut parts, body, refuse).await;
            return Ok(leaving(resp, request_id, h1, &conn));
        }
        // Boxed in the finisher with the context: if the client goes away before
        // the response head, the finisher's drop still reports the request (aborted).
        let declared = hyper::body::Body::size_hint(&body).exact();
        let mut f = Finisher::new(&conn, Some(api.clone()), ctx, &parts, declared);
        let (ctx, marks) = f.parts();
        let (mut resp, failed) =
            exchange(&conn, &api, ctx, Some(marks), &mut parts, body, refuse).await;
        f.responded(resp.status(), failed);
        resp.body_mut().finish_with(f);
        Ok(leaving(resp, request_id, h1, &conn))
    })
}

/// A routed request, taken apart: what its future captures.
struct Begun {
    api: Arc<CompiledApi>,
    ctx: RequestCtx,
    parts: request::Parts,
    body: Incoming,
    refuse: Option<Refuse>,
    /// For the answer's `X-Request-Id` (the context keeps its own).
    request_id: HeaderValue,
    observed: bool,
    h1: bool,
}

/// The synchronous start of every request: the edge's refusals, the request id,
/// routing and the context. `Err`: the request was answered without an API.
// The refusal is the rare path, returned once per refused request: not worth a box.
#[allow(clippy::result_large_err)]
fn begin(
    conn: &Arc<ConnCtx>,
    req: Request<Incoming>,
) -> Result<Begun, Response<HeldBody<ResponseBody, Arc<ConnCtx>>>> {
    if let Err(e) = crate::edge::check(&req) {
        let id = headers::next_request_id();
        let mut resp = e.into_response(&id).map(ResponseBody::full);
        resp.headers_mut().insert(X_REQUEST_ID.clone(), id);
        return Err(resp.map(|b| HeldBody::new(b, conn.clone())));
    }
    let h1 = req.version() < Version::HTTP_2;
    let (mut parts, body) = req.into_parts();
    let request_id = headers::request_id(&mut parts.headers);
    let shared = &conn.shared;
    let observed = shared.access_log.is_some()
        || shared.metrics.is_some()
        || !shared.observers.is_empty()
        || shared.trace;
    let routed = normalise_uri(&mut parts)
        .and_then(|lenient| route(&shared.snapshots, &mut parts, observed, lenient));
    let Routed {
        api,
        target,
        refuse,
        resource,
        snapshot_version,
    } = match routed {
        Ok(routed) => routed,
        Err(e) => {
            let resp = unrouted(conn, parts, e, request_id.clone(), observed);
            return Err(leaving(resp, request_id, h1, conn));
        }
    };
    let mut ctx = RequestCtx::new(request_id.clone(), conn.client, conn.https, target);
    ctx.resource = resource;
    ctx.snapshot_version = snapshot_version;
    ctx.trace = trace_context(conn, &parts);
    Ok(Begun {
        api,
        ctx,
        parts,
        body,
        refuse,
        request_id,
        observed,
        h1,
    })
}

/// The routing result: the API, where its upstream path is, and the refusal routing
/// already decided (answered through the API's chain).
struct Routed {
    api: Arc<CompiledApi>,
    target: UpstreamTarget,
    refuse: Option<Refuse>,
    /// The resource's template, kept only when the request is observed or the API's
    /// chain reads bodies early.
    resource: Option<Arc<str>>,
    snapshot_version: u64,
}

/// Routes on the snapshot loaded once. A path that only some APIs accept as it is
/// (`;` parameters, letter case: `lenient.rs`) is settled first, against the same
/// snapshot, into the one path everything after sees.
fn route(
    snapshots: &ArcSwap<Snapshot>,
    parts: &mut request::Parts,
    observed: bool,
    lenient: Lenient,
) -> Result<Routed, GatewayError> {
    let snap = snapshots.load();
    if lenient == Lenient::Parameters
        || (snap.folds_case() && crate::lenient::may_fold(parts.uri.path()))
    {
        crate::lenient::settle_path(&snap, parts, lenient)?;
    }
    let parts = &*parts;
    let path = parts.uri.path();
    let host = request_host(parts);
    let (api, upstream_path, refuse, resource) = match snap.route(host, &parts.method, path) {
        RouteResult::Matched {
            api,
            upstream_path,
            resource,
        } => (api, upstream_path, None, Some(resource)),
        RouteResult::MethodNotAllowed {
            api,
            upstream_path,
            allow,
            resource,
        } => (
            api,
            upstream_path,
            Some(Refuse::Method(allow)),
            Some(resource),
        ),
        RouteResult::NotFoundIn { api, upstream_path } => {
            (api, upstream_path, Some(Refuse::NotFound), None)
        }
        RouteResult::NotFound => return Err(GatewayError::new(ErrorKind::NotFound)),
    };
    // Kept for the observers, and for a chain whose policy decides on it whether to read
    // the body early (an MCP endpoint is the resource `mcp`): without it, the endpoint
    // would be proxied as a REST call when nothing observes the request.
    let keep = observed || api.chain.hooks().contains(Hooks::EARLY_BODY);
    let uri = parts.uri.clone(); // refcounted
    let target = if path.ends_with(upstream_path) {
        UpstreamTarget::suffix(uri, path.len() - upstream_path.len())
    } else {
        UpstreamTarget::owned(uri, upstream_path)
    };
    Ok(Routed {
        api: api.clone(),
        target,
        refuse,
        resource: resource.filter(|_| keep).cloned(),
        snapshot_version: snap.version,
    })
}

/// No API: the error, observed by metrics and the access log only; or an API's RFC 9728
/// metadata (`well_known.rs`), whose path no API routes.
fn unrouted(
    conn: &Arc<ConnCtx>,
    parts: request::Parts,
    e: GatewayError,
    request_id: HeaderValue,
    observed: bool,
) -> Response<ResponseBody> {
    if e.kind == ErrorKind::NotFound
        && parts
            .uri
            .path()
            .starts_with(turnpike_auth::policy::WELL_KNOWN_PRM)
    {
        let snap = conn.shared.snapshots.load();
        if let Some(resp) = crate::well_known::protected_resource(&snap, &parts, conn.https) {
            return resp;
        }
    }
    let e = not_ready_or(e, &conn.shared.health);
    let kind = e.kind;
    let mut resp = e.into_response(&request_id).map(ResponseBody::full);
    if observed {
        let target = UpstreamTarget::suffix(parts.uri.clone(), 0);
        let mut ctx = RequestCtx::new(request_id, conn.client, conn.https, target);
        ctx.trace = trace_context(conn, &parts);
        let declared = content_length(&parts.headers).ok().flatten();
        let mut f = Finisher::new(conn, None, ctx, &parts, declared);
        f.responded(resp.status(), Some(kind));
        resp.body_mut().finish_with(f);
    }
    resp
}

/// Without a snapshot yet, "no API matches" would read as a deleted API (a balancer's
/// TCP check already sends traffic): say `503 not_ready` with `Retry-After` instead.
fn not_ready_or(e: GatewayError, health: &crate::health::Health) -> GatewayError {
    if e.kind != ErrorKind::NotFound || health.is_loaded() {
        return e;
    }
    GatewayError::new(ErrorKind::NotReady)
        .with_header(http::header::RETRY_AFTER, HeaderValue::from_static("1"))
}

/// A WebSocket upgrade request (`upgrade/`), reported like any request (its status is
/// the `101` or the refusal). Cold and boxed: no other request carries its future.
#[cold]
fn upgrade(
    conn: &Arc<ConnCtx>,
    api: Arc<CompiledApi>,
    mut ctx: RequestCtx,
    parts: request::Parts,
    refuse: Option<Refuse>,
    observed: bool,
) -> std::pin::Pin<Box<dyn std::future::Future<Output = Response<ResponseBody>> + Send + '_>> {
    Box::pin(async move {
        if !observed && !api.chain.hooks().contains(Hooks::COMPLETE) {
            return crate::upgrade::exchange(conn, &api, &mut ctx, parts, refuse)
                .await
                .0;
        }
        let mut f = Finisher::new(conn, Some(api.clone()), ctx, &parts, Some(0));
        let (ctx, _) = f.parts();
        let (mut resp, failed) = crate::upgrade::exchange(conn, &api, ctx, parts, refuse).await;
        f.responded(resp.status(), failed);
        resp.body_mut().finish_with(f);
        resp
    })
}

/// Runs the request side, forwards, runs the response side. Returns the response and
/// the error table's row when the gateway answered with an error. (Not an `async fn`:
/// see [`handle`].)
#[allow(clippy::manual_async_fn)] // deliberately not an async fn: see the doc comment
fn exchange<'a>(
    conn: &'a ConnCtx,
    api: &'a CompiledApi,
    ctx: &'a mut RequestCtx,
    mut marks: Option<&'a mut Marks>,
    parts: &'a mut request::Parts,
    body: Incoming,
    refuse: Option<Refuse>,
) -> impl Future<Output = (Response<ResponseBody>, Option<ErrorKind>)> + Send + 'a {
    async move {
        let chain = &api.chain;
        let sent = request_side(conn, api, ctx, marks.as_deref_mut(), parts, body, refuse).await;
        let (mut rparts, mut rbody, upto, mut failed) = match sent {
            Ok(up) => {
                let (p, mut b) = upstream_response(up);
                if let Some(every) = api.read_idle_timeout {
                    b = b.read_idle(every);
                }
                if let Some(m) = marks {
                    m.head = Some(Instant::now());
                    m.upstream_status = Some(p.status);
                }
                (p, b, chain.len(), None)
            }
            Err(Stop { at, answer }) => {
                let (p, b, failed) = answer_response(answer, &ctx.request_id);
                (p, b, at, failed)
            }
        };
        let upto = response_hooks(chain, ctx, &mut rparts, &mut rbody, upto, &mut failed);
        if chain.wants_response_body(ctx, &rparts, upto) {
            let limit = api.max_body_bytes.unwrap_or(DEFAULT_MAX_BODY_BYTES);
            // The length the upstream framed the body with (`Content-Length`), if any.
            let declared = http_body::Body::size_hint(&rbody).exact();
            let result = match rbody.collect(limit).await {
                Ok(mut bytes) => {
                    let read = (bytes.as_ptr(), bytes.len());
                    chain
                        .response_body(ctx, &mut rparts, &mut bytes, upto)
                        .map(|()| {
                            let kept = read == (bytes.as_ptr(), bytes.len());
                            (bytes, kept)
                        })
                        .map_err(|(_, e)| e)
                }
                Err(e) => Err(e),
            };
            rbody = match result {
                Ok((bytes, kept)) => {
                    // The body the upstream declared, not replaced (a cache storing it, a
                    // check that changed nothing): its `Content-Length` stands, and is not
                    // even looked up.
                    if !kept || declared != Some(bytes.len() as u64) {
                        body::set_length(&mut rparts.headers, bytes.len());
                    }
                    ResponseBody::full(bytes)
                }
                Err(e) => {
                    failed = Some(e.kind);
                    let (p, b) = error_parts(e, &ctx.request_id);
                    rparts = p;
                    b
                }
            };
        }
        if chain.hooks().contains(Hooks::RESPONSE_STREAM) {
            let streams = chain.response_streams(ctx, &rparts, upto);
            if !streams.is_empty() {
                rparts.headers.remove(http::header::CONTENT_LENGTH);
                rbody = rbody.transformed(streams);
            }
        }
        // A policy that answered with a refusal of its own shaping (an AI API's error in
        // its front's shape) names the error's kind in the response's extensions.
        let failed = failed.or_else(|| rparts.extensions.get::<ErrorKind>().copied());
        (Response::from_parts(rparts, rbody), failed)
    }
}

/// The whole request body, read before the request-headers hooks and given to the
/// policies that asked for it (`Policy::on_early_body`).
async fn early_body(
    conn: &ConnCtx,
    api: &CompiledApi,
    ctx: &mut RequestCtx,
    parts: &mut request::Parts,
    body: Incoming,
) -> Result<bytes::Bytes, Stop> {
    let end = api.chain.len();
    let mut bytes = read_whole(conn, api, body)
        .await
        .map_err(|e| stop(end, e))?;
    api.chain.early_body(ctx, parts, &mut bytes).await?;
    Ok(bytes)
}

/// The owned-404 check, pre-route, the 405 check, request headers, request body, then the upstream.
/// (Not an `async fn`: see [`handle`].)
#[allow(clippy::manual_async_fn)] // deliberately not an async fn: see the doc comment
fn request_side<'a>(
    conn: &'a ConnCtx,
    api: &'a CompiledApi,
    ctx: &'a mut RequestCtx,
    mut marks: Option<&'a mut Marks>,
    parts: &'a mut request::Parts,
    body: Incoming,
    refuse: Option<Refuse>,
) -> impl Future<Output = Result<Upstream, Stop>> + Send + 'a {
    async move {
        let chain = &api.chain;
        let end = chain.len();
        if let Some(Refuse::NotFound) = refuse {
            let mut e = GatewayError::new(ErrorKind::NotFound);
            e.detail = Some("no resource of this API serves this path".into());
            return Err(stop(end, e));
        }
        chain.pre_route(ctx, parts).await?;
        if let Some(Refuse::Method(allow)) = refuse {
            let e = GatewayError::new(ErrorKind::MethodNotAllowed).with_header(ALLOW, allow);
            return Err(stop(end, e));
        }
        if conn.shared.health.is_stale() {
            stale_refusal(api, ctx, parts).map_err(|e| stop(end, e))?;
        }
        // An API whose policy reads the request's meaning from its body (an MCP endpoint's
        // JSON-RPC message) has it read before the request-headers hooks; the others pay
        // this one bit test.
        let read = if chain.wants_early_body(ctx, parts) {
            // Boxed: the request future of an API without such a policy does not carry (and
            // move) this path's state.
            ReadBody::Whole(Box::pin(early_body(conn, api, ctx, parts, body)).await?)
        } else {
            ReadBody::Stream(body)
        };
        chain.request_headers(ctx, parts).await?;
        let read = match read {
            ReadBody::Stream(b) if chain.hooks().contains(Hooks::REQUEST_BODY) => {
                ReadBody::Whole(read_whole(conn, api, b).await.map_err(|e| stop(end, e))?)
            }
            other => other,
        };
        let body = match read {
            ReadBody::Whole(mut bytes) => {
                if chain.hooks().contains(Hooks::REQUEST_BODY) {
                    chain.request_body(ctx, parts, &mut bytes).await?;
                }
                // A request its early-body hook left without a body or framing headers
                // goes as it is (no `Content-Length: 0` on a GET).
                if !(ctx.bodiless && bytes.is_empty()) {
                    body::set_length(&mut parts.headers, bytes.len());
                }
                if let Some(m) = marks.as_deref_mut() {
                    m.bytes_in.buffered(bytes.len() as u64);
                }
                ClientBody::full(bytes)
            }
            ReadBody::Stream(body) => {
                let mut b = match api
                    .request_buffering
                    .filter(|_| !http_body::Body::is_end_stream(&body))
                    // A gRPC call's messages may stream both ways (client and bidirectional
                    // streaming): its body is never held back.
                    .filter(|_| !is_grpc_call(parts))
                {
                    // Before any upstream connection: a slow body holds none (request_buffer.rs).
                    // Boxed: a request without a body does not carry this future.
                    Some(rb) => {
                        crate::request_buffer::boxed(body, rb, api, conn, &mut parts.headers)
                            .await
                            .map_err(|e| stop(end, e))?
                    }
                    None => ClientBody::new(
                        body,
                        api.max_body_bytes,
                        conn.shared.body_read_timeout,
                        Some(&conn.wake),
                    ),
                };
                if let Some(m) = marks.as_deref_mut() {
                    // A body of unknown length (chunked) is counted as it streams; a declared
                    // one (or none) was noted when the finisher was made.
                    if !matches!(m.bytes_in, BytesIn::Declared(_)) {
                        match http_body::Body::size_hint(&b).exact() {
                            // Read whole by request buffering.
                            Some(n) => m.bytes_in.buffered(n),
                            None => {
                                let counter = Arc::new(AtomicU64::new(0));
                                m.bytes_in.streaming(counter.clone());
                                b.count_into(counter);
                            }
                        }
                    }
                }
                b
            }
        };
        if let Some(m) = marks {
            m.sent = Some(Instant::now());
        }
        headers::strip_request(&mut parts.headers, conn.trusted_proxy);
        if let Some(t) = &ctx.trace {
            parts.headers.insert(TRACEPARENT, t.upstream_traceparent());
        }
        let fwd = headers::Forwarded {
            client_ip: &conn.client_ip,
            https: conn.https,
        };
        // An AI call whose provider its policy chose (several provider URLs, fallback): the
        // bit test first, so other APIs read no extension.
        let ai_choice = chain
            .hooks()
            .contains(Hooks::REQUEST_BODY)
            .then(|| {
                ctx.ext
                    .get::<turnpike_policy::ai::ProviderChoice>()
                    .copied()
            })
            .flatten();
        if let Some(choice) = ai_choice {
            return crate::upstream::ai::forward(&conn.shared, api, ctx, parts, body, &fwd, choice)
                .await
                .map_err(|e| stop(end, e));
        }
        let sandbox = ctx
            .identity()
            .is_some_and(|i| i.key_type == turnpike_policy::KeyType::Sandbox);
        if sandbox || api.resilience.is_some() {
            return crate::upstream::resilient::forward(
                &conn.shared,
                api,
                parts,
                body,
                &ctx.upstream,
                &fwd,
                sandbox,
            )
            .await
            .map_err(|e| stop(end, e));
        }
        forward(&conn.shared, api, parts, body, &ctx.upstream, &fwd)
            .await
            .map_err(|e| stop(end, e))
    }
}

/// A request body read whole (for the body hooks) or left to stream.
enum ReadBody {
    Whole(bytes::Bytes),
    Stream(Incoming),
}

/// The whole request body, up to the API's limit (413 above).
fn read_whole(
    conn: &ConnCtx,
    api: &CompiledApi,
    body: Incoming,
) -> impl std::future::Future<Output = Result<bytes::Bytes, GatewayError>> {
    let limit = api.max_body_bytes.unwrap_or(DEFAULT_MAX_BODY_BYTES);
    let timed = ClientBody::new(body, None, conn.shared.body_read_timeout, Some(&conn.wake));
    body::collect(timed, limit, ErrorKind::BodyTooLarge, ErrorKind::BadRequest)
}

/// The request's trace context when tracing is on (one branch otherwise).
#[inline]
fn trace_context(conn: &ConnCtx, parts: &request::Parts) -> Option<Box<TraceContext>> {
    conn.shared.trace.then(|| {
        Box::new(TraceContext::for_request(
            parts.headers.get(turnpike_policy::trace::TRACEPARENT),
        ))
    })
}

const TRACEPARENT: http::HeaderName = http::HeaderName::from_static("traceparent");

/// A stale snapshot (`--max-snapshot-age` passed without word from the control plane)
/// may still hold an application, key or subscription revoked since: a resource that
/// takes credentials is refused `503 snapshot_stale`; an open one (`auth: none`, or an
/// API without security) is still served. Cold: runs only while stale.
#[cold]
fn stale_refusal(
    api: &CompiledApi,
    ctx: &RequestCtx,
    parts: &request::Parts,
) -> Result<(), GatewayError> {
    let Some(auth) = api.chain.find::<turnpike_auth::policy::AuthPolicy>() else {
        return Ok(());
    };
    let sec = auth.security();
    if sec.authenticator.is_none()
        || matches!(
            sec.resource_rule(&parts.method, ctx.upstream.path()),
            Some(turnpike_auth::policy::ResourceRule::Open)
        )
    {
        return Ok(());
    }
    Err(GatewayError::new(ErrorKind::SnapshotStale)
        .with_header(http::header::RETRY_AFTER, HeaderValue::from_static("30")))
}

/// A gRPC call: HTTP/2 with an `application/grpc` body (the version test first, so
/// HTTP/1.1 requests read no header).
#[inline]
fn is_grpc_call(parts: &request::Parts) -> bool {
    parts.version == http::Version::HTTP_2 && turnpike_policy::http::is_grpc(&parts.headers)
}

#[cfg(test)]
mod future_sizes;
