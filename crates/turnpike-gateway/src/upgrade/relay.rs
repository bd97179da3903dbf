//! The upstream side of an upgrade and the byte relay: where the upgrade request comes
//! from ([`Origin`]), the connection to the first endpoint that accepts one (the
//! caller's pool, production or sandbox, balanced and without suspended endpoints as a
//! request's choice is: `upstream::resilient::connection_order`) with the
//! upgrade request through hyper's client ([`connect`]), leaving the relay job in the
//! connection's slot ([`leave`]), and the byte relay of a non-GraphQL API.

use std::sync::Arc;

use bytes::Bytes;
use http::header::{CONNECTION, HOST, SEC_WEBSOCKET_EXTENSIONS, UPGRADE};
use http::{request, HeaderValue, Method, Request, Response, StatusCode};
use http_body_util::Empty;
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use tokio::sync::OwnedSemaphorePermit;
use turnpike_config::CompiledApi;
use turnpike_policy::RequestCtx;

use crate::conn::{ConnCtx, Shared};
use crate::drain::{draining, Watcher};
use crate::error::{ErrorKind, GatewayError};
use crate::headers;
use crate::io::{ClientIo, RelayJob, UpstreamIo};
use crate::upstream::resilient;

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

/// Opens a connection to the first endpoint that accepts one (in the order
/// `connection_order` gives) and sends the upgrade request: the upstream's answer, and when it is a `101`
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
    let sandbox = ctx
        .identity()
        .is_some_and(|i| i.key_type == turnpike_policy::KeyType::Sandbox);
    let mut last = GatewayError::new(ErrorKind::NoEndpoint);
    for ep in resilient::connection_order(api, sandbox)? {
        let https = ep.scheme == http::uri::Scheme::HTTPS;
        let pool = conn.shared.upstreams.pool(https, &ep.authority);
        let opened = pool.connect_raw(ep.connect_timeout).await;
        resilient::report_connection(api, ep, opened.is_ok());
        let (io, slot) = match opened {
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
        return match tokio::time::timeout(ep.read_timeout, exchange).await {
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
pub(super) async fn relay_bytes(client: ClientIo, upstream: UpstreamIo, mut drain: Watcher) {
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
