//! GraphQL WebSockets authenticated by their `connection_init` message: browsers cannot
//! set headers on a WebSocket, so GraphQL clients put the token in `connection_init`'s
//! payload. When a GraphQL API's upgrade request carries no credential at all (the auth
//! step's `missing_credentials`) and offers a GraphQL subprotocol, the gateway answers
//! the `101` itself (no upstream connection yet) and waits for `connection_init` (up to
//! [`INIT_TIMEOUT`]: else close 4408). Its payload's `Authorization` (or
//! `authorization`) becomes the `Authorization` header, its `apikey` the `apikey`
//! header, and the API's request headers hooks run again on the upgrade request with
//! them (auth, subscription, throttling): a refusal closes with 4401 (no or a bad
//! credential) or 4403 (anything else: no subscription, throttled, ...). Admitted, the
//! upgrade goes to the upstream as `upgrade/relay.rs` sends any, `connection_init` follows,
//! and the message relay (`ws.rs`) takes over.

use std::sync::Arc;
use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use http::header::{
    AUTHORIZATION, CONNECTION, SEC_WEBSOCKET_ACCEPT, SEC_WEBSOCKET_KEY, SEC_WEBSOCKET_PROTOCOL,
    UPGRADE,
};
use http::{request, HeaderName, HeaderValue, Response, StatusCode};
use serde_json::Value;
use tokio_tungstenite::tungstenite::handshake::derive_accept_key;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::protocol::Role;
use tokio_tungstenite::tungstenite::{Error as WsError, Message};
use tokio_tungstenite::WebSocketStream;
use turnpike_config::CompiledApi;
use turnpike_policy::{Answer, RequestCtx, Stop};

use super::relay::{self, Origin};
use super::ws::{self, close, Limits, Subprotocol};
use crate::conn::ConnCtx;
use crate::drain::{draining, Watcher};
use crate::error::ErrorKind;
use crate::io::{ClientIo, RelayJob};
use crate::response_body::ResponseBody;

/// Longest wait for `connection_init` on a socket whose credential it carries.
pub(crate) const INIT_TIMEOUT: Duration = Duration::from_secs(10);

static APIKEY: HeaderName = HeaderName::from_static("apikey");

/// The `101` of a deferred authentication, with its job left in the connection's slot,
/// when `stop` is a missing credential on a GraphQL API (its chain gives a guard) whose
/// client offers a GraphQL subprotocol; `None` otherwise (the refusal stands).
pub(crate) fn defer(
    conn: &ConnCtx,
    api: &Arc<CompiledApi>,
    ctx: &RequestCtx,
    parts: request::Parts,
    stop: &Stop,
) -> Option<Response<ResponseBody>> {
    let missing =
        matches!(&stop.answer, Answer::Error(e) if e.kind == ErrorKind::MissingCredentials);
    if !missing || api.chain.upgrade_guard(ctx).is_none() {
        return None;
    }
    let accept = derive_accept_key(parts.headers.get(SEC_WEBSOCKET_KEY)?.as_bytes());
    let offered = |p: &str| {
        parts
            .headers
            .get_all(SEC_WEBSOCKET_PROTOCOL)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(','))
            .any(|o| o.trim() == p)
    };
    let chosen = ["graphql-transport-ws", "graphql-ws"]
        .into_iter()
        .find(|p| offered(p))?;
    let mut out = Response::new(ResponseBody::empty());
    *out.status_mut() = StatusCode::SWITCHING_PROTOCOLS;
    let h = out.headers_mut();
    h.insert(CONNECTION, HeaderValue::from_static("upgrade"));
    h.insert(UPGRADE, HeaderValue::from_static("websocket"));
    h.insert(SEC_WEBSOCKET_ACCEPT, HeaderValue::from_str(&accept).ok()?);
    let protocol = HeaderValue::from_static(chosen);
    h.insert(SEC_WEBSOCKET_PROTOCOL, protocol.clone());
    let pending = Pending {
        origin: Origin::of(conn),
        api: api.clone(),
        parts,
        request_id: ctx.request_id.clone(),
        target: ctx.upstream.clone(),
        protocol,
    };
    let job: RelayJob = Box::new(move |client, drain| Box::pin(pending.run(client, drain)));
    relay::leave(conn, job);
    Some(out)
}

/// An upgrade waiting for its `connection_init`.
struct Pending {
    origin: Origin,
    api: Arc<CompiledApi>,
    parts: request::Parts,
    request_id: HeaderValue,
    target: turnpike_policy::UpstreamTarget,
    protocol: HeaderValue,
}

/// How a socket refused at `connection_init` closes.
enum Refusal {
    Code(u16, &'static str),
    /// The client broke the protocol (or the size cap): fail the connection with this
    /// close frame (`ws::failure`).
    Fail(Message),
    Gone,
}

impl Pending {
    async fn run(self, client: ClientIo, mut drain: Watcher) {
        let limits = Limits::default();
        let mut ws =
            WebSocketStream::from_raw_socket(client, Role::Server, Some(limits.config())).await;
        let first = tokio::select! {
            m = tokio::time::timeout(INIT_TIMEOUT, ws.next()) => m,
            _ = wait_for_drain(&mut drain) => {
                let _ = ws.send(close(CloseCode::Away, "gateway shutting down")).await;
                return;
            }
        };
        let admitted = match first {
            Err(_) => Err(Refusal::Code(4408, "connection initialisation timeout")),
            Ok(m) => self.admit(m).await,
        };
        let (init, ctx, mut parts) = match admitted {
            Ok(a) => a,
            Err(Refusal::Code(code, why)) => {
                let _ = ws.send(close(CloseCode::Library(code), why)).await;
                return;
            }
            Err(Refusal::Fail(frame)) => {
                ws::fail(ws, frame).await;
                return;
            }
            Err(Refusal::Gone) => {
                // After the client's close frame: send tungstenite's queued reply.
                let _ = ws.flush().await;
                return;
            }
        };
        let Some(guard) = self.api.chain.upgrade_guard(&ctx) else {
            return;
        };
        parts
            .headers
            .insert(SEC_WEBSOCKET_PROTOCOL, self.protocol.clone());
        let opened = relay::connect(&self.origin, &self.api, &ctx, parts, true).await;
        let (resp, up, _slot) = match opened {
            Ok((resp, Some(up), slot)) => (resp, up, slot),
            Ok(_) | Err(_) => {
                let _ = ws.send(close(CloseCode::Error, "upstream refused")).await;
                return;
            }
        };
        if resp.headers().get(SEC_WEBSOCKET_PROTOCOL) != Some(&self.protocol) {
            let _ = ws
                .send(close(
                    CloseCode::Error,
                    "upstream chose another subprotocol",
                ))
                .await;
            return;
        }
        let mut upstream =
            WebSocketStream::from_raw_socket(up, Role::Client, Some(limits.config())).await;
        if upstream.send(Message::Text(init)).await.is_err() {
            let _ = ws.send(close(CloseCode::Error, "upstream gone")).await;
            return;
        }
        let protocol = Subprotocol::of(Some(&self.protocol));
        ws::relay_streams(ws, upstream, guard, protocol, drain).await;
    }

    /// Reads `connection_init`, puts its credential in the upgrade request and runs the
    /// API's request headers hooks on it again.
    async fn admit(
        &self,
        first: Option<Result<Message, WsError>>,
    ) -> Result<
        (
            tokio_tungstenite::tungstenite::Utf8Bytes,
            RequestCtx,
            request::Parts,
        ),
        Refusal,
    > {
        let text = match first {
            Some(Ok(Message::Text(t))) => t,
            Some(Err(e)) => return Err(ws::failure(&e).map_or(Refusal::Gone, Refusal::Fail)),
            Some(Ok(Message::Close(_))) | None => return Err(Refusal::Gone),
            Some(Ok(_)) => return Err(Refusal::Code(4400, "invalid message")),
        };
        let v: Value = serde_json::from_str(text.as_str())
            .map_err(|_| Refusal::Code(4400, "invalid message"))?;
        if v.get("type").and_then(Value::as_str) != Some("connection_init") {
            return Err(Refusal::Code(4401, "unauthorized"));
        }
        let payload = &v["payload"];
        let field = |name: &str| payload.get(name).and_then(Value::as_str);
        let mut parts = self.parts.clone();
        let mut given = false;
        if let Some(t) = field("Authorization").or_else(|| field("authorization")) {
            let t = HeaderValue::from_str(t).map_err(|_| Refusal::Code(4401, "unauthorized"))?;
            parts.headers.insert(AUTHORIZATION, t);
            given = true;
        }
        if let Some(k) = field("apikey") {
            let k = HeaderValue::from_str(k).map_err(|_| Refusal::Code(4401, "unauthorized"))?;
            parts.headers.insert(APIKEY.clone(), k);
            given = true;
        }
        if !given {
            return Err(Refusal::Code(4401, "unauthorized"));
        }
        let o = &self.origin;
        let mut ctx = RequestCtx::new(
            self.request_id.clone(),
            o.client,
            o.https,
            self.target.clone(),
        );
        if let Err(stop) = self.api.chain.request_headers(&mut ctx, &mut parts).await {
            let unauthenticated = match &stop.answer {
                Answer::Error(e) => e.kind.spec().status == StatusCode::UNAUTHORIZED,
                Answer::Respond(r) => r.status() == StatusCode::UNAUTHORIZED,
            };
            return Err(if unauthenticated {
                Refusal::Code(4401, "unauthorized")
            } else {
                Refusal::Code(4403, "forbidden")
            });
        }
        Ok((text, ctx, parts))
    }
}

async fn wait_for_drain(drain: &mut Watcher) {
    loop {
        let woke = drain.changed().await;
        if draining(woke, drain) {
            return;
        }
    }
}
