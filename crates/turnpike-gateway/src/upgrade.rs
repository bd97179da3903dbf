//! WebSocket upgrades (HTTP/1.1 `Connection: Upgrade` + `Upgrade: websocket`): the
//! request side of the API's chain runs on the upgrade request (pre-route, the method
//! check, request headers: auth, subscription, throttling; a refusal is the error table's
//! answer and nothing is upgraded), then a new connection to an endpoint (plain or TLS,
//! ALPN `http/1.1` only, counted in the endpoint's connection cap) carries the upgrade
//! request through hyper's client (`with_upgrades`); the upstream's `101` is answered to
//! the client and a relay job is left in the connection's [`UpgradeSlot`]; an upstream
//! that refuses has its answer relayed (response hooks as usual).
//!
//! hyper's server connection hands the socket back once the `101` is written: the
//! connection's serve loop (`h1_conn::ended`, for parked and unparked connections alike)
//! takes it apart (`Connection::into_parts`: the socket and the bytes hyper read past the
//! head) and runs the job there, so the upgraded connection keeps its connection permit
//! (caps and the open count) and its drain watcher (a drain closes it), and is never
//! parked. `server::with_upgrades` is not used because its connection cannot be taken
//! apart, which parking needs.
//!
//! What the job does: a GraphQL API (its chain gives an `OperationGuard`) gets the
//! message-level relay (`ws.rs`); any other API a byte relay
//! (`tokio::io::copy_bidirectional`) until either side closes or the gateway drains.

use std::sync::Arc;

use bytes::Bytes;
use http::header::{CONNECTION, HOST, SEC_WEBSOCKET_EXTENSIONS, SEC_WEBSOCKET_PROTOCOL, UPGRADE};
use http::{request, HeaderValue, Method, Request, Response, StatusCode, Version};
use http_body_util::Empty;
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use tokio::sync::OwnedSemaphorePermit;
use turnpike_config::CompiledApi;
use turnpike_policy::{RequestCtx, Stop};

use crate::answer::{answer_response, response_hooks, Refuse};
use crate::body::GatewayBody;
use crate::conn::{ConnCtx, Shared};
use crate::drain::{draining, Watcher};
use crate::error::{ErrorKind, GatewayError};
use crate::headers;
use crate::io::{ClientIo, RelayJob, UpstreamIo};

/// Whether hyper saw an upgrade request (its `OnUpgrade` extension: a null check on an
/// empty extension map for every other request) and it asks for a WebSocket over
/// HTTP/1.1 with GET.
#[inline]
pub(crate) fn is_websocket(parts: &request::Parts) -> bool {
    parts
        .extensions
        .get::<hyper::upgrade::OnUpgrade>()
        .is_some()
        && wants_websocket(parts)
}

#[cold]
fn wants_websocket(parts: &request::Parts) -> bool {
    let has = |name, token: &str| {
        parts
            .headers
            .get_all(name)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(','))
            .any(|t| t.trim().eq_ignore_ascii_case(token))
    };
    parts.method == Method::GET
        && parts.version == Version::HTTP_11
        && has(UPGRADE, "websocket")
        && has(CONNECTION, "upgrade")
}

/// The upgrade request through the API's chain and to the upstream: the `101` (with the
/// relay job left in the connection's slot), or the refusal. Returns the error table's
/// row when the gateway answered with an error.
pub(crate) async fn exchange(
    conn: &Arc<ConnCtx>,
    api: &Arc<CompiledApi>,
    ctx: &mut RequestCtx,
    parts: request::Parts,
    refuse: Option<Refuse>,
) -> (Response<GatewayBody>, Option<ErrorKind>) {
    let chain = &api.chain;
    let (mut rparts, mut rbody, upto, mut failed) =
        match request_side(conn, api, ctx, parts, refuse).await {
            Ok(Opened::Upgraded(resp)) => return (resp, None),
            Ok(Opened::Refused(resp)) => {
                let (mut p, b) = resp.into_parts();
                headers::strip_hop_by_hop(&mut p.headers);
                p.version = Version::HTTP_11;
                (p, GatewayBody::upstream(b, None), chain.len(), None)
            }
            Err(Stop { at, answer }) => {
                let (p, b, failed) = answer_response(answer, &ctx.request_id);
                (p, b, at, failed)
            }
        };
    response_hooks(chain, ctx, &mut rparts, &mut rbody, upto, &mut failed);
    (Response::from_parts(rparts, rbody), failed)
}

enum Opened {
    /// The `101` for the client; the relay job is in the connection's slot.
    Upgraded(Response<GatewayBody>),
    /// The upstream's answer other than `101`.
    Refused(Response<Incoming>),
}

async fn request_side(
    conn: &Arc<ConnCtx>,
    api: &Arc<CompiledApi>,
    ctx: &mut RequestCtx,
    mut parts: request::Parts,
    refuse: Option<Refuse>,
) -> Result<Opened, Stop> {
    let chain = &api.chain;
    let end = chain.len();
    let stop = |e: GatewayError| Stop {
        at: end,
        answer: turnpike_policy::Answer::Error(e),
    };
    if let Some(Refuse::NotFound) = refuse {
        return Err(stop(GatewayError::new(ErrorKind::NotFound)));
    }
    chain.pre_route(ctx, &mut parts).await?;
    if let Some(Refuse::Method(allow)) = refuse {
        let e =
            GatewayError::new(ErrorKind::MethodNotAllowed).with_header(http::header::ALLOW, allow);
        return Err(stop(e));
    }
    if let Err(stop) = chain.request_headers(ctx, &mut parts).await {
        return match crate::ws_init::defer(conn, api, ctx, parts, &stop) {
            Some(resp) => Ok(Opened::Upgraded(resp)),
            None => Err(stop),
        };
    }
    // The request body hooks do not run: an upgrade request has no body, and what the
    // socket then carries is checked message by message (the guard) when a policy
    // asks for it.
    let guard = chain.upgrade_guard(ctx);
    let origin = Origin::of(conn);
    let (resp, upstream, slot) = connect(&origin, api, ctx, parts, guard.is_some())
        .await
        .map_err(stop)?;
    let Some(upstream) = upstream else {
        return Ok(Opened::Refused(resp));
    };
    let (rparts, _) = resp.into_parts();
    let mut out = Response::new(GatewayBody::empty());
    *out.status_mut() = StatusCode::SWITCHING_PROTOCOLS;
    for (name, value) in &rparts.headers {
        let n = name.as_str();
        if n.starts_with("sec-websocket-") || !headers::is_hop_by_hop(name) {
            out.headers_mut().append(name.clone(), value.clone());
        }
    }
    out.headers_mut()
        .insert(CONNECTION, HeaderValue::from_static("upgrade"));
    out.headers_mut()
        .insert(UPGRADE, HeaderValue::from_static("websocket"));
    let protocol = rparts.headers.get(SEC_WEBSOCKET_PROTOCOL).cloned();
    let limits = crate::ws::Limits::default();
    let job: RelayJob = Box::new(move |client: ClientIo, drain: Watcher| {
        Box::pin(async move {
            let _slot = slot;
            match guard {
                Some(guard) => {
                    crate::ws::relay(client, upstream, guard, protocol, limits, drain).await
                }
                None => relay_bytes(client, upstream, drain).await,
            }
        })
    });
    conn.upgrade.put(job);
    Ok(Opened::Upgraded(out))
}

/// Leaves `job` in the connection's slot, for its serve loop to run after the `101`.
pub(crate) fn leave(conn: &ConnCtx, job: RelayJob) {
    conn.upgrade.put(job);
}

/// Where an upgrade comes from: what the upstream request needs of the client
/// connection (kept by a relay job, which must not hold the connection's context: the
/// context holds the job).
pub(crate) struct Origin {
    pub(crate) shared: Arc<Shared>,
    pub(crate) client: std::net::SocketAddr,
    pub(crate) client_ip: HeaderValue,
    pub(crate) trusted_proxy: bool,
    pub(crate) https: bool,
}

impl Origin {
    pub(crate) fn of(conn: &ConnCtx) -> Origin {
        Origin {
            shared: conn.shared.clone(),
            client: conn.client,
            client_ip: conn.client_ip.clone(),
            trusted_proxy: conn.trusted_proxy,
            https: conn.https,
        }
    }
}

/// Opens a connection to the first endpoint that accepts one (in order, as failover
/// does) and sends the upgrade request: the upstream's answer, and when it is a `101`
/// the upgraded socket and the connection's slot in the endpoint's cap.
pub(crate) async fn connect(
    conn: &Origin,
    api: &CompiledApi,
    ctx: &RequestCtx,
    mut parts: request::Parts,
    messages: bool,
) -> Result<(Response<Incoming>, Option<UpstreamIo>, OwnedSemaphorePermit), GatewayError> {
    keep_upgrade_headers(&mut parts.headers, messages, conn.trusted_proxy);
    let fwd = headers::Forwarded {
        client_ip: &conn.client_ip,
        https: conn.https,
    };
    fwd.apply(&mut parts.headers, &parts.uri);
    if let Some(t) = &ctx.trace {
        parts.headers.insert(
            http::HeaderName::from_static("traceparent"),
            t.upstream_traceparent(),
        );
    }
    let mut last = GatewayError::new(ErrorKind::NoEndpoint);
    for ep in api.endpoints.iter() {
        let https = ep.scheme == http::uri::Scheme::HTTPS;
        let pool = conn.shared.upstreams.pool(https, &ep.authority);
        let (io, slot) = match pool.connect_raw(api.connect_timeout).await {
            Ok(c) => c,
            Err(e) => {
                last = e;
                continue;
            }
        };
        let pq = headers::path_and_query(&ctx.upstream, ep)?;
        let mut req = Request::new(Empty::<Bytes>::new());
        *req.method_mut() = Method::GET;
        *req.uri_mut() = http::Uri::from(pq);
        *req.headers_mut() = parts.headers.clone();
        req.headers_mut().insert(HOST, pool.host.clone());
        let exchange = async {
            let (mut sender, hconn) = hyper::client::conn::http1::Builder::new()
                .handshake::<_, Empty<Bytes>>(TokioIo::new(io))
                .await
                .map_err(|e| GatewayError::with_source(ErrorKind::UpstreamConnectFailed, e))?;
            tokio::spawn(async move {
                if let Err(e) = hconn.with_upgrades().await {
                    tracing::debug!(error = %e, "upstream upgrade connection ended");
                }
            });
            let mut resp = sender
                .send_request(req)
                .await
                .map_err(|e| GatewayError::with_source(ErrorKind::UpstreamProtocol, e))?;
            if resp.status() != StatusCode::SWITCHING_PROTOCOLS {
                return Ok((resp, None));
            }
            let up = hyper::upgrade::on(&mut resp)
                .await
                .map_err(|e| GatewayError::with_source(ErrorKind::UpstreamProtocol, e))?;
            Ok((resp, Some(TokioIo::new(up))))
        };
        return match tokio::time::timeout(api.response_timeout, exchange).await {
            Ok(Ok((resp, up))) => Ok((resp, up, slot)),
            Ok(Err(e)) => Err(e),
            Err(_) => Err(GatewayError::new(ErrorKind::UpstreamResponseTimeout)),
        };
    }
    Err(last)
}

/// The hop-by-hop headers go, except the upgrade's own: `Connection: Upgrade`,
/// `Upgrade: websocket` (the `Sec-WebSocket-*` ones are end-to-end and stay). A relay
/// that reads messages offers no extension (it does not inflate compressed frames).
fn keep_upgrade_headers(h: &mut http::HeaderMap, messages: bool, trusted_proxy: bool) {
    headers::strip_request(h, trusted_proxy);
    h.insert(CONNECTION, HeaderValue::from_static("Upgrade"));
    h.insert(UPGRADE, HeaderValue::from_static("websocket"));
    if messages {
        h.remove(SEC_WEBSOCKET_EXTENSIONS);
    }
}

/// Once one direction of a byte relay ended (a close, an error), how long the other may
/// still finish before both sockets are closed: a WebSocket is not used half-open.
const HALF_CLOSED_GRACE: std::time::Duration = std::time::Duration::from_secs(1);

/// Bytes both ways until either side closes (the other direction then gets
/// [`HALF_CLOSED_GRACE`] to finish), or the gateway drains (both sockets are then
/// closed).
async fn relay_bytes(client: ClientIo, upstream: UpstreamIo, mut drain: Watcher) {
    use tokio::io::AsyncWriteExt;
    if drain.borrow().draining {
        return;
    }
    let (mut cr, mut cw) = tokio::io::split(client);
    let (mut ur, mut uw) = tokio::io::split(upstream);
    let up = async {
        let r = tokio::io::copy(&mut cr, &mut uw).await;
        let _ = uw.shutdown().await;
        r
    };
    let down = async {
        let r = tokio::io::copy(&mut ur, &mut cw).await;
        let _ = cw.shutdown().await;
        r
    };
    tokio::pin!(up, down);
    let both = async {
        // The direction that ended is not polled again.
        let (first, up_ended) = tokio::select! {
            r = &mut up => (r, true),
            r = &mut down => (r, false),
        };
        if let Err(e) = first {
            tracing::debug!(error = %e, "websocket relay ended");
        }
        let _ = if up_ended {
            tokio::time::timeout(HALF_CLOSED_GRACE, &mut down).await
        } else {
            tokio::time::timeout(HALF_CLOSED_GRACE, &mut up).await
        };
    };
    tokio::pin!(both);
    loop {
        tokio::select! {
            () = &mut both => return,
            woke = drain.changed() => {
                if draining(woke, &mut drain) {
                    return;
                }
            }
        }
    }
}
