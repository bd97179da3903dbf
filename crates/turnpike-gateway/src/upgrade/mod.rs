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

pub(crate) mod init;
mod relay;
pub mod ws;

use std::sync::Arc;

use http::header::{CONNECTION, SEC_WEBSOCKET_PROTOCOL, UPGRADE};
use http::{request, HeaderValue, Method, Response, StatusCode, Version};
use hyper::body::Incoming;
use turnpike_config::CompiledApi;
use turnpike_policy::{RequestCtx, Stop};

use crate::answer::{answer_response, response_hooks, Refuse};
use crate::conn::ConnCtx;
use crate::drain::Watcher;
use crate::error::{ErrorKind, GatewayError};
use crate::headers;
use crate::io::{ClientIo, RelayJob};
use crate::response_body::ResponseBody;
use relay::{connect, relay_bytes, Origin};

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
) -> (Response<ResponseBody>, Option<ErrorKind>) {
    let chain = &api.chain;
    let (mut rparts, mut rbody, upto, mut failed) =
        match request_side(conn, api, ctx, parts, refuse).await {
            Ok(Opened::Upgraded(resp)) => return (resp, None),
            Ok(Opened::Refused(resp)) => {
                let (mut p, b) = resp.into_parts();
                headers::strip_hop_by_hop(&mut p.headers);
                p.version = Version::HTTP_11;
                (p, ResponseBody::upstream(b, None), chain.len(), None)
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
    Upgraded(Response<ResponseBody>),
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
        return match init::defer(conn, api, ctx, parts, &stop) {
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
    let mut out = Response::new(ResponseBody::empty());
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
    let limits = ws::Limits::default();
    let job: RelayJob = Box::new(move |client: ClientIo, drain: Watcher| {
        Box::pin(async move {
            let _slot = slot;
            match guard {
                Some(guard) => ws::relay(client, upstream, guard, protocol, limits, drain).await,
                None => relay_bytes(client, upstream, drain).await,
            }
        })
    });
    conn.upgrade.put(job);
    Ok(Opened::Upgraded(out))
}
