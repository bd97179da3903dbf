//! WebSockets of `turnpike echo`: the upgrade handshake (hyper's upgrade, tungstenite's
//! accept key), a frame echo on any path ending in `/ws`, and, with `--graphql`,
//! GraphQL over WebSocket in both subprotocols (`graphql-transport-ws` and the legacy
//! `graphql-ws`): each `subscribe` / `start` is executed against the schema like an HTTP
//! query; a subscription gets [`EVENTS`] `next` / `data` messages shaped to its query
//! (the `stars` of each event count 1, 2, 3), a query or mutation one, then `complete`;
//! an invalid operation gets an `error` message.

use std::sync::Arc;

use bytes::Bytes;
use futures_util::{SinkExt, StreamExt};
use http::{header, HeaderValue, Request, Response, StatusCode};
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use serde_json::{json, Value};
use tokio_tungstenite::tungstenite::handshake::derive_accept_key;
use tokio_tungstenite::tungstenite::protocol::Role;
use tokio_tungstenite::tungstenite::Message;
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

/// Text and binary messages back as they came, until the client closes.
async fn echo(mut ws: Ws) {
    while let Some(Ok(m)) = ws.next().await {
        let echoed = matches!(m, Message::Text(_) | Message::Binary(_));
        if matches!(m, Message::Close(_)) || (echoed && ws.send(m).await.is_err()) {
            return;
        }
    }
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
