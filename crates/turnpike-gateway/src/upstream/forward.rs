//! Forwarding: picks an endpoint (round robin, failover on connect failure; the
//! resilient choice is `resilient.rs`, over this file's [`attempt`]), sends the
//! request through the in-task HTTP/1.1 client (plain HTTP, small bodies: `h1`) or
//! hyper's client (HTTPS, HTTP/2 and h2c: `h2`, large or chunked bodies), within the API's timeouts,
//! and classifies failures into the error table's upstream rows.

use std::cell::Cell;
use std::error::Error as _;
use std::future::Future;
use std::sync::Arc;

use http::header::HOST;
use http::uri::{PathAndQuery, Scheme};
use http::{request, Request, Response, Uri, Version};
use http_body::Body as _;
use hyper::body::Incoming;
use turnpike_config::{CompiledApi, Endpoint, LoadBalancing};
use turnpike_policy::UpstreamTarget;

use super::body::Pooled;
use super::h1::body::DirectBody;
use super::h1::exchange as h1;
use super::pool::{Conn, EndpointPool};
use crate::client_body::{BodyEndState, BodyError, BodyWatch, ClientBody};
use crate::conn::Shared;
use crate::error::{ErrorKind, GatewayError};
use crate::headers;
use crate::log_limit::LogLimit;

thread_local! {
    pub(crate) static ROUND_ROBIN: Cell<usize> = const { Cell::new(0) };
}

/// An upstream response: from hyper's client (HTTPS) or the in-task client (HTTP).
pub(crate) enum Upstream {
    Hyper(Response<Incoming>, Option<Pooled>),
    Direct(Response<DirectBody>),
}

/// Picks endpoints round robin, failing over to the next one when connecting fails.
/// (One async level: every level a request's future nests is copied as it starts.)
/// Not an `async fn`: the block uses the body it captured in place, where an async fn
/// would hold it twice (its argument and its local; rust-lang/rust#62958), and the
/// levels below borrow it rather than each holding a copy: every request's future
/// holds this one.
#[allow(clippy::manual_async_fn)] // deliberately not an async fn: see the doc comment
pub(crate) fn forward<'a>(
    shared: &'a Shared,
    api: &'a CompiledApi,
    parts: &'a mut request::Parts,
    mut body: ClientBody,
    target: &'a UpstreamTarget,
    fwd: &'a headers::Forwarded<'a>,
) -> impl Future<Output = Result<Upstream, GatewayError>> + Send + 'a {
    async move {
        // A body still arriving: how it ends decides who a timeout blames, and whether an
        // early upstream answer may pass (not when the body then broke its limit).
        let watch = (!body.is_end_stream()).then(|| body.watch());
        let n = api.endpoints.len();
        if n == 0 {
            return Err(GatewayError::new(ErrorKind::NoEndpoint));
        }
        // Written into the map only for hyper's client; the in-task client writes them while
        // encoding the head.
        let mut in_map = false;
        let first = if n == 1 || api.load_balancing == LoadBalancing::Failover {
            0
        } else {
            ROUND_ROBIN.with(|c| {
                let v = c.get();
                c.set(v.wrapping_add(1));
                v % n
            })
        };
        let mut last_err = GatewayError::new(ErrorKind::NoEndpoint);
        for i in 0..n {
            let ep = &api.endpoints[(first + i) % n];
            match attempt(
                shared,
                api,
                ep,
                parts,
                &mut body,
                target,
                fwd,
                watch.as_ref(),
                &mut in_map,
            )
            .await
            {
                Ok(up) => return Ok(up),
                Err(Attempt::Sent(e)) => return Err(e),
                Err(Attempt::Connect(e)) => {
                    endpoint_failed(api, ep, &e);
                    last_err = e;
                }
            }
        }
        Err(last_err)
    }
}

/// Why one endpoint did not answer: it could not be reached (nothing was sent, the
/// body is still the caller's, for the next endpoint), or the exchange failed after
/// sending.
pub(crate) enum Attempt {
    Connect(GatewayError),
    Sent(GatewayError),
}

impl Upstream {
    pub(crate) fn status(&self) -> http::StatusCode {
        match self {
            Upstream::Hyper(r, _) => r.status(),
            Upstream::Direct(r) => r.status(),
        }
    }
}

/// One exchange with one endpoint, within its timeouts. `in_map`: the forwarding
/// headers are already in `parts` (hyper's client needs them there; the in-task client
/// writes them while encoding the head).
/// (Not an `async fn`, and the body borrowed: see [`forward`]. A try that sends takes
/// the body, leaving an empty one.)
#[allow(clippy::manual_async_fn)] // deliberately not an async fn: see the doc comment
#[allow(clippy::too_many_arguments)]
pub(crate) fn attempt<'a>(
    shared: &'a Shared,
    api: &'a CompiledApi,
    ep: &'a Endpoint,
    parts: &'a mut request::Parts,
    body: &'a mut ClientBody,
    target: &'a UpstreamTarget,
    fwd: &'a headers::Forwarded<'a>,
    watch: Option<&'a BodyWatch>,
    in_map: &'a mut bool,
) -> impl Future<Output = Result<Upstream, Attempt>> + Send + 'a {
    async move {
        let https = ep.scheme == Scheme::HTTPS;
        let pool = shared.upstreams.pool(https, &ep.authority);
        if !https && !ep.h2c && h1::fits(&parts.headers, body) {
            // Plain HTTP with a small body: the in-task client (h1.rs), no connection
            // task or channels.
            let conn = match pool.checkout_direct(ep.connect_timeout).await {
                Ok(conn) => conn,
                Err(e) => return Err(Attempt::Connect(e)),
            };
            let path = h1::UpstreamPath {
                base: &ep.base_path,
                path: target.path(),
                query: target.query(),
                forwarded: (!*in_map).then_some(fwd),
            };
            let fut = h1::exchange(pool, conn, parts, body, path);
            return match tokio::time::timeout(ep.read_timeout, fut).await {
                Ok(r) => r.map(Upstream::Direct).map_err(Attempt::Sent),
                Err(_) => Err(Attempt::Sent(blame_the_body(
                    GatewayError::new(ErrorKind::UpstreamResponseTimeout),
                    watch,
                ))),
            };
        }
        if !*in_map {
            fwd.apply(&mut parts.headers, &parts.uri);
            *in_map = true;
        }
        // hyper's client: its futures are boxed, so the in-task client's path above
        // (and every future this one is part of) does not carry, and copy, their
        // several kilobytes.
        let conn = if ep.h2c {
            Box::pin(pool.checkout_h2c(ep.connect_timeout)).await
        } else {
            Box::pin(pool.checkout(ep.connect_timeout)).await
        };
        match conn {
            Ok(conn) => {
                let pq = headers::path_and_query(target, ep).map_err(Attempt::Sent)?;
                let req = build_request(parts, std::mem::replace(body, ClientBody::empty()), pq);
                Box::pin(send(pool, conn, req, api, ep, watch))
                    .await
                    .map(|(r, p)| Upstream::Hyper(r, p))
                    .map_err(|e| Attempt::Sent(blame_the_body(e, watch)))
            }
            Err(e) => Err(Attempt::Connect(e)),
        }
    }
}

/// A response timeout while the client was still sending its body is the client's
/// (408), not the upstream's (504).
fn blame_the_body(e: GatewayError, watch: Option<&BodyWatch>) -> GatewayError {
    let still_sending = watch.is_some_and(BodyWatch::waiting_for_client);
    if e.kind == ErrorKind::UpstreamResponseTimeout && still_sending {
        let mut e = GatewayError::with_source(ErrorKind::RequestTimeout, e);
        e.detail = Some("the request body was not received in time".into());
        return e;
    }
    e
}

/// Logs a failed connect, at most once a second (the error table logs the request's
/// failure itself when no endpoint is left).
#[cold]
pub(crate) fn endpoint_failed(api: &CompiledApi, ep: &Endpoint, e: &GatewayError) {
    static LIMIT: LogLimit = LogLimit::new(std::time::Duration::from_secs(1));
    if let Some(left_out) = LIMIT.allow() {
        tracing::warn!(api = %api.name, endpoint = %ep.authority, error = %e,
            cause = ?e.source(), left_out, "endpoint failed, trying the next one");
    }
}

/// The request for hyper's client; takes the headers out of `parts` (the request is
/// sent once).
fn build_request(
    parts: &mut request::Parts,
    body: ClientBody,
    pq: PathAndQuery,
) -> Request<ClientBody> {
    let mut req = Request::new(body);
    *req.method_mut() = parts.method.clone();
    *req.headers_mut() = std::mem::take(&mut parts.headers);
    *req.uri_mut() = Uri::from(pq);
    req
}

/// Sets the URI form and headers the connection's protocol wants.
pub(crate) fn prepare(req: &mut Request<ClientBody>, pool: &EndpointPool, h2: bool) {
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
    mut req: Request<ClientBody>,
    api: &CompiledApi,
    ep: &Endpoint,
    watch: Option<&BodyWatch>,
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
                                conn = Box::pin(pool.connect_new(ep.connect_timeout)).await?;
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
    let fut = async {
        let answer = fut.await?;
        // The upstream answered before the body's end. With a body limit, the answer
        // waits for the end: a body that then breaks the limit is the client's 413, not
        // an upstream 200 cut by a reset. (Without a limit, nothing can break it, and
        // the answer goes on at once, as a full-duplex exchange needs.)
        if let (Some(w), Some(_)) = (watch, api.max_body_bytes) {
            match w.ended().await {
                BodyEndState::TooLarge => return Err(GatewayError::new(ErrorKind::BodyTooLarge)),
                BodyEndState::TimedOut => return Err(GatewayError::new(ErrorKind::RequestTimeout)),
                _ => {}
            }
        }
        Ok(answer)
    };
    match tokio::time::timeout(ep.read_timeout, fut).await {
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
                BodyError::ReadTimeout { .. } => ErrorKind::RequestTimeout,
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
