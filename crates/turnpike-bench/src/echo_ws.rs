//! WebSockets of `turnpike echo`: the upgrade handshake (hyper's upgrade, tungstenite's
//! accept key), a frame echo on any path ending in `/ws`, and, with `--graphql`,
//! GraphQL over WebSocket in both subprotocols (`graphql-transport-ws` and the legacy
//! `graphql-ws`): each `subscribe` / `start` is executed against the schema like an HTTP
//! query; a subscription gets [`EVENTS`] `next` / `data` messages shaped to its query
//! (the `stars` of each event count 1, 2, 3), a query or mutation one, then `complete`;
//! an invalid operation gets an `error` message.
//!
//! The echo keeps RFC 6455: a close frame is answered with a close frame carrying the
//! same code (§5.5.1; tungstenite queues the reply, the next read sends it), and a
//! client that breaks the protocol gets a close frame before the socket closes
//! (§7.1.7): 1002 for a protocol error, 1007 for a text message that is not UTF-8, 1009
//! for a message over the size cap.

use std::sync::Arc;

use bytes::Bytes;
use futures_util::{SinkExt, StreamExt};
use http::{header, HeaderValue, Request, Response, StatusCode};
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio_tungstenite::tungstenite::error::ProtocolError;
use tokio_tungstenite::tungstenite::handshake::derive_accept_key;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::protocol::{CloseFrame, Role};
use tokio_tungstenite::tungstenite::{Error as WsError, Message};
use tokio_tungstenite::WebSocketStream;

use crate::graphql_echo::GraphqlBackend;

/// Events sent for each subscription.
pub const EVENTS: usize = 3;

/// Whether `req` asks for a WebSocket.
pub fn is_upgrade(req: &Request<Incoming>) -> bool {
    let has = |name, token: &str| {
        req.headers()
            .get_all(name)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(','))
            .any(|t| t.trim().eq_ignore_ascii_case(token))
    };
    has(header::UPGRADE, "websocket") && has(header::CONNECTION, "upgrade")
}

/// What the socket serves.
enum Serve {
    Echo,
    Graphql(Arc<GraphqlBackend>, bool),
}

/// Answers an upgrade request: `101` and a task serving the socket, or `400`/`404`.
pub fn upgrade(
    mut req: Request<Incoming>,
    graphql: Option<&Arc<GraphqlBackend>>,
) -> Response<Bytes> {
    let refuse = |status: StatusCode, why: &'static str| {
        let mut r = Response::new(Bytes::from_static(why.as_bytes()));
        *r.status_mut() = status;
        r
    };
    let Some(key) = req.headers().get(header::SEC_WEBSOCKET_KEY) else {
        return refuse(StatusCode::BAD_REQUEST, "no Sec-WebSocket-Key");
    };
    let accept = derive_accept_key(key.as_bytes());
    let offered: Vec<String> = req
        .headers()
        .get_all(header::SEC_WEBSOCKET_PROTOCOL)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(|p| p.trim().to_owned())
        .collect();
    let (serve, protocol) = match graphql {
        Some(g) => {
            let p = ["graphql-transport-ws", "graphql-ws"]
                .into_iter()
                .find(|p| offered.iter().any(|o| o == p));
            let Some(p) = p else {
                return refuse(StatusCode::BAD_REQUEST, "no GraphQL subprotocol offered");
            };
            (Serve::Graphql(g.clone(), p == "graphql-ws"), Some(p))
        }
        None if req.uri().path().ends_with("/ws") => (Serve::Echo, None),
        None => return refuse(StatusCode::NOT_FOUND, "WebSockets are served on /ws"),
    };
    let on = hyper::upgrade::on(&mut req);
    tokio::spawn(async move {
        let Ok(upgraded) = on.await else { return };
        let ws = WebSocketStream::from_raw_socket(TokioIo::new(upgraded), Role::Server, None).await;
        match serve {
            Serve::Echo => echo(ws).await,
            Serve::Graphql(g, legacy) => serve_graphql(ws, &g, legacy).await,
        }
    });
    let mut resp = Response::new(Bytes::new());
    *resp.status_mut() = StatusCode::SWITCHING_PROTOCOLS;
    let h = resp.headers_mut();
    h.insert(header::CONNECTION, HeaderValue::from_static("upgrade"));
    h.insert(header::UPGRADE, HeaderValue::from_static("websocket"));
    if let Ok(v) = HeaderValue::from_str(&accept) {
        h.insert(header::SEC_WEBSOCKET_ACCEPT, v);
    }
    if let Some(p) = protocol {
        h.insert(header::SEC_WEBSOCKET_PROTOCOL, HeaderValue::from_static(p));
    }
    resp
}

type Ws = WebSocketStream<TokioIo<hyper::upgrade::Upgraded>>;

/// Text and binary messages back as they came, until the client closes (its close
/// frame answered) or breaks the protocol (failed with a close frame).
async fn echo(mut ws: Ws) {
    loop {
        match ws.next().await {
            Some(Ok(m @ (Message::Text(_) | Message::Binary(_)))) => {
                if ws.send(m).await.is_err() {
                    return;
                }
            }
            // The server closes TCP first once the closing handshake is done (§7.1.1).
            Some(Ok(Message::Close(_))) => {
                if ws.flush().await.is_ok() {
                    linger(ws.get_mut()).await;
                }
                return;
            }
            // Pings are answered by tungstenite.
            Some(Ok(_)) => {}
            Some(Err(e)) => {
                if let Some(frame) = failure(&e) {
                    fail(ws, frame).await;
                }
                return;
            }
            None => return,
        }
    }
}

/// The close frame that fails a connection whose client sent `e` (RFC 6455 §7.1.7), or
/// `None` when the socket itself failed or ended.
fn failure(e: &WsError) -> Option<Message> {
    let (code, why) = match e {
        WsError::Capacity(_) => (CloseCode::Size, "message too large"),
        WsError::Utf8 => (CloseCode::Invalid, "a text message that is not UTF-8"),
        WsError::Protocol(ProtocolError::ResetWithoutClosingHandshake) => return None,
        WsError::Protocol(_) => (CloseCode::Protocol, "protocol error"),
        _ => return None,
    };
    Some(Message::Close(Some(CloseFrame {
        code,
        reason: why.into(),
    })))
}

/// Sends `frame`, then closes as [`linger`] does.
async fn fail(mut ws: Ws, frame: Message) {
    if ws.send(frame).await.is_ok() {
        linger(ws.get_mut()).await;
    }
}

/// Closes the sending side and reads what the client still sends (up to 1 s, 64 KiB)
/// before the socket closes: unread bytes at close make the kernel send a reset, which
/// can destroy the close frame before the client reads it.
async fn linger(io: &mut TokioIo<hyper::upgrade::Upgraded>) {
    let _ = io.shutdown().await;
    let drain = async {
        let (mut buf, mut left) = ([0u8; 4096], 64usize << 10);
        while left > 0 {
            match io.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(n) => left = left.saturating_sub(n),
            }
        }
    };
    let _ = tokio::time::timeout(std::time::Duration::from_secs(1), drain).await;
}

async fn serve_graphql(mut ws: Ws, g: &GraphqlBackend, legacy: bool) {
    let (operation, event, stop) = if legacy {
        ("start", "data", "connection_terminate")
    } else {
        ("subscribe", "next", "")
    };
    while let Some(Ok(m)) = ws.next().await {
        let text = match m {
            Message::Text(t) => t,
            Message::Close(_) => return,
            _ => continue,
        };
        let Ok(v) = serde_json::from_str::<Value>(text.as_str()) else {
            let _ = ws.close(None).await;
            return;
        };
        let kind = v["type"].as_str().unwrap_or("");
        let mut out: Vec<Value> = Vec::new();
        match kind {
            "connection_init" => out.push(json!({ "type": "connection_ack" })),
            "ping" => out.push(json!({ "type": "pong" })),
            k if k == stop => return,
            k if k == operation => {
                let id = v["id"].clone();
                let payload = serde_json::to_vec(&v["payload"]).unwrap_or_default();
                let result: Value = serde_json::from_slice(&g.answer(
                    "POST",
                    Some("application/json"),
                    None,
                    &payload,
                ))
                .unwrap_or(Value::Null);
                if result.get("errors").is_some() {
                    let errors = if legacy {
                        result["errors"][0].clone()
                    } else {
                        result["errors"].clone()
                    };
                    out.push(json!({ "id": id, "type": "error", "payload": errors }));
                } else {
                    let query = v["payload"]["query"].as_str().unwrap_or("");
                    let n = if query.trim_start().starts_with("subscription") {
                        EVENTS
                    } else {
                        1
                    };
                    for i in 1..=n {
                        let mut data = result.clone();
                        number_stars(&mut data, i);
                        out.push(json!({ "id": id, "type": event, "payload": data }));
                    }
                    out.push(json!({ "id": id, "type": "complete" }));
                }
            }
            _ => {}
        }
        for m in out {
            if ws.send(Message::text(m.to_string())).await.is_err() {
                return;
            }
        }
    }
}

/// Sets every `stars` field of `data`'s root objects to `n` (events tell apart).
fn number_stars(v: &mut Value, n: usize) {
    if let Some(roots) = v.get_mut("data").and_then(Value::as_object_mut) {
        for root in roots.values_mut() {
            if let Some(stars) = root.get_mut("stars") {
                *stars = json!(n);
            }
        }
    }
}
