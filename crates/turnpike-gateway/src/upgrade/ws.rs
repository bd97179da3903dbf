//! The message-level WebSocket relay of an API whose chain gives an
//! [`OperationGuard`] (a GraphQL API's subscriptions): both sides framed by tungstenite
//! with message and frame size caps; every client message of the GraphQL protocols that
//! carries an operation (`subscribe` in `graphql-transport-ws`, `start` in the legacy
//! `graphql-ws`) is checked by the guard (parse, validation, limits, field access,
//! per-operation scopes of the upgrade's caller) before it is forwarded; a refused one
//! gets an `error` message for its id and goes no further, and the socket stays open.
//! Other messages pass as they are, both ways.
//!
//! Hostile input: a message over the cap closes the client with 1009; a text message
//! that is not a JSON object, or a binary message, closes it with 4400 (as
//! graphql-transport-ws says for an invalid message). A drain closes both sides with
//! 1001. A frame that breaks RFC 6455 fails the connection as its §7.1.7 says, with a
//! close frame before TCP closes ([`failure`], [`fail`]): 1002 for a protocol error (a
//! reserved opcode or bit, an unmasked client frame, a fragmented control frame, ...),
//! 1007 for a text message that is not UTF-8.

use futures_util::{SinkExt, StreamExt};
use http::HeaderValue;
use serde_json::{json, Value};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio_tungstenite::tungstenite::error::ProtocolError;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::protocol::{CloseFrame, Role, WebSocketConfig};
use tokio_tungstenite::tungstenite::{Error as WsError, Message, Utf8Bytes};
use tokio_tungstenite::WebSocketStream;
use turnpike_policy::OperationGuard;

use crate::drain::{draining, Watcher};
use crate::io::{ClientIo, UpstreamIo};

/// Size caps of the message-level relay (both directions).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Limits {
    /// Largest message (all its frames): 1 MiB.
    pub(crate) max_message: usize,
    /// Largest frame: 256 KiB.
    pub(crate) max_frame: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_message: 1 << 20,
            max_frame: 256 << 10,
        }
    }
}

impl Limits {
    pub(crate) fn config(&self) -> WebSocketConfig {
        WebSocketConfig::default()
            .max_message_size(Some(self.max_message))
            .max_frame_size(Some(self.max_frame))
    }
}

/// The GraphQL-over-WebSocket protocol the upstream chose.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Subprotocol {
    /// `graphql-transport-ws` (the `graphql-ws` library), also assumed when none was
    /// negotiated.
    TransportWs,
    /// `graphql-ws` (the legacy subscriptions-transport-ws).
    Legacy,
}

impl Subprotocol {
    pub(crate) fn of(negotiated: Option<&HeaderValue>) -> Self {
        match negotiated.map(HeaderValue::as_bytes) {
            Some(b"graphql-ws") => Subprotocol::Legacy,
            _ => Subprotocol::TransportWs,
        }
    }
}

/// What a client's text message is, for the relay.
#[derive(Debug, PartialEq)]
pub enum Inbound {
    /// An operation to check: the message's id and its payload as JSON bytes.
    Operation { id: Value, payload: Vec<u8> },
    /// Anything else: forwarded as it is.
    Other,
}

/// Why a client's message is not one of the protocol's.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum DecodeError {
    #[error("the message is not a JSON object")]
    NotAnObject,
    #[error("the message has no `type`")]
    NoType,
}

/// Reads a client's text message (public for the fuzz target).
pub fn decode(text: &str, protocol: Subprotocol) -> Result<Inbound, DecodeError> {
    let v: Value = serde_json::from_str(text).map_err(|_| DecodeError::NotAnObject)?;
    let Value::Object(mut m) = v else {
        return Err(DecodeError::NotAnObject);
    };
    let kind = match m.get("type") {
        Some(Value::String(t)) => t.as_str(),
        _ => return Err(DecodeError::NoType),
    };
    let operation = match protocol {
        Subprotocol::TransportWs => kind == "subscribe",
        Subprotocol::Legacy => kind == "start",
    };
    if !operation {
        return Ok(Inbound::Other);
    }
    let id = m.remove("id").unwrap_or(Value::Null);
    let payload = m.remove("payload").unwrap_or(Value::Null);
    Ok(Inbound::Operation {
        id,
        payload: serde_json::to_vec(&payload).unwrap_or_default(),
    })
}

/// The `error` message refusing operation `id` (`errors`: a JSON array of GraphQL errors).
pub fn error_message(protocol: Subprotocol, id: Value, errors: Value) -> String {
    match protocol {
        Subprotocol::TransportWs => json!({ "id": id, "type": "error", "payload": errors }),
        // subscriptions-transport-ws sends one error object as the payload.
        Subprotocol::Legacy => {
            let first = errors.get(0).cloned().unwrap_or(Value::Null);
            json!({ "id": id, "type": "error", "payload": first })
        }
    }
    .to_string()
}

pub(crate) fn close(code: CloseCode, reason: &'static str) -> Message {
    Message::Close(Some(CloseFrame {
        code,
        reason: Utf8Bytes::from_static(reason),
    }))
}

/// The close frame that fails a connection whose peer sent `e` (RFC 6455 §7.1.7), or
/// `None` when the socket itself failed or ended and there is no one left to tell.
pub(crate) fn failure(e: &WsError) -> Option<Message> {
    let (code, why) = match e {
        WsError::Capacity(_) => (CloseCode::Size, "message too large"),
        WsError::Utf8 => (CloseCode::Invalid, "a text message that is not UTF-8"),
        WsError::Protocol(ProtocolError::ResetWithoutClosingHandshake) => return None,
        WsError::Protocol(_) => (CloseCode::Protocol, "protocol error"),
        _ => return None,
    };
    Some(close(code, why))
}

/// How long a failed connection stays half-open after its close frame.
const LINGER: std::time::Duration = std::time::Duration::from_secs(1);
/// Most bytes read and dropped while lingering.
const LINGER_BYTES: usize = 64 << 10;

/// Fails a WebSocket: sends `frame`, closes the sending side, then reads and drops what
/// the peer still sends (for at most [`LINGER`] and [`LINGER_BYTES`]) before the socket
/// closes. Closing with unread bytes would make the kernel send a reset, which can
/// destroy the close frame before the peer reads it.
pub(crate) async fn fail<S>(mut ws: WebSocketStream<S>, frame: Message)
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    if ws.send(frame).await.is_err() {
        return;
    }
    let io = ws.get_mut();
    let _ = io.shutdown().await;
    let drain = async {
        let (mut buf, mut left) = ([0u8; 4096], LINGER_BYTES);
        while left > 0 {
            match io.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(n) => left = left.saturating_sub(n),
            }
        }
    };
    let _ = tokio::time::timeout(LINGER, drain).await;
}

/// Relays messages between the client and the upstream until either closes, the client
/// breaks the protocol or the gateway drains.
pub(crate) async fn relay(
    client: ClientIo,
    upstream: UpstreamIo,
    guard: Box<dyn OperationGuard>,
    negotiated: Option<HeaderValue>,
    limits: Limits,
    drain: Watcher,
) {
    let protocol = Subprotocol::of(negotiated.as_ref());
    let client =
        WebSocketStream::from_raw_socket(client, Role::Server, Some(limits.config())).await;
    let upstream =
        WebSocketStream::from_raw_socket(upstream, Role::Client, Some(limits.config())).await;
    relay_streams(client, upstream, guard, protocol, drain).await;
}

/// [`relay`] over sockets already framed.
pub(crate) async fn relay_streams(
    client: WebSocketStream<ClientIo>,
    upstream: WebSocketStream<UpstreamIo>,
    guard: Box<dyn OperationGuard>,
    protocol: Subprotocol,
    mut drain: Watcher,
) {
    let (mut to_client, mut from_client) = client.split();
    let (mut to_upstream, mut from_upstream) = upstream.split();
    if drain.borrow().draining {
        let _ = to_client
            .send(close(CloseCode::Away, "gateway shutting down"))
            .await;
        return;
    }
    loop {
        tokio::select! {
            m = from_client.next() => {
                let m = match m {
                    Some(Ok(m)) => m,
                    Some(Err(e)) => {
                        tracing::debug!(error = %e, "websocket client error");
                        let _ = to_upstream.send(close(CloseCode::Away, "client closed")).await;
                        if let (Some(frame), Ok(ws)) = (failure(&e), to_client.reunite(from_client)) {
                            fail(ws, frame).await;
                        }
                        return;
                    }
                    None => {
                        let _ = to_upstream.send(close(CloseCode::Away, "client closed")).await;
                        return;
                    }
                };
                match m {
                    Message::Text(t) => match decode(t.as_str(), protocol) {
                        Ok(Inbound::Other) => {
                            if to_upstream.send(Message::Text(t)).await.is_err() {
                                let _ = to_client.send(close(CloseCode::Error, "upstream gone")).await;
                                return;
                            }
                        }
                        Ok(Inbound::Operation { id, payload }) => {
                            match guard.check_operation(&payload) {
                                Ok(()) => {
                                    if to_upstream.send(Message::Text(t)).await.is_err() {
                                        let _ = to_client.send(close(CloseCode::Error, "upstream gone")).await;
                                        return;
                                    }
                                }
                                Err(errors) => {
                                    let msg = error_message(protocol, id, errors);
                                    if to_client.send(Message::text(msg)).await.is_err() {
                                        let _ = to_upstream.send(close(CloseCode::Away, "client closed")).await;
                                        return;
                                    }
                                }
                            }
                        }
                        Err(_) => {
                            let _ = to_client
                                .send(close(CloseCode::Library(4400), "invalid message"))
                                .await;
                            let _ = to_upstream.send(close(CloseCode::Away, "client closed")).await;
                            return;
                        }
                    },
                    Message::Binary(_) => {
                        let _ = to_client
                            .send(close(CloseCode::Library(4400), "binary messages are not allowed"))
                            .await;
                        let _ = to_upstream.send(close(CloseCode::Away, "client closed")).await;
                        return;
                    }
                    Message::Close(frame) => {
                        let _ = to_upstream.send(Message::Close(frame)).await;
                        let _ = to_client.close().await;
                        return;
                    }
                    // Pings are answered by tungstenite on each side.
                    Message::Ping(_) | Message::Pong(_) | Message::Frame(_) => {}
                }
            }
            m = from_upstream.next() => {
                match m {
                    Some(Ok(Message::Close(frame))) => {
                        let _ = to_client.send(Message::Close(frame)).await;
                        let _ = to_upstream.close().await;
                        return;
                    }
                    Some(Ok(m @ (Message::Text(_) | Message::Binary(_)))) => {
                        if to_client.send(m).await.is_err() {
                            let _ = to_upstream.send(close(CloseCode::Away, "client closed")).await;
                            return;
                        }
                    }
                    Some(Ok(_)) => {}
                    Some(Err(WsError::Capacity(_))) => {
                        let _ = to_client.send(close(CloseCode::Error, "upstream message too large")).await;
                        let _ = to_upstream.send(close(CloseCode::Size, "message too large")).await;
                        return;
                    }
                    Some(Err(e)) => {
                        if let Some(frame) = failure(&e) {
                            let _ = to_upstream.send(frame).await;
                        }
                        let _ = to_client.send(close(CloseCode::Error, "upstream gone")).await;
                        return;
                    }
                    None => {
                        let _ = to_client.send(close(CloseCode::Error, "upstream gone")).await;
                        return;
                    }
                }
            }
            woke = drain.changed() => {
                if draining(woke, &mut drain) {
                    let _ = to_client.send(close(CloseCode::Away, "gateway shutting down")).await;
                    let _ = to_upstream.send(close(CloseCode::Away, "gateway shutting down")).await;
                    return;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn operations_are_found_by_protocol() {
        let sub = r#"{"id":"1","type":"subscribe","payload":{"query":"subscription { x }"}}"#;
        let Ok(Inbound::Operation { id, payload }) = decode(sub, Subprotocol::TransportWs) else {
            panic!("an operation");
        };
        assert_eq!(id, json!("1"));
        assert_eq!(payload, br#"{"query":"subscription { x }"}"#);
        assert_eq!(decode(sub, Subprotocol::Legacy), Ok(Inbound::Other));
        let start = r#"{"id":"2","type":"start","payload":{"query":"{ a }"}}"#;
        assert!(matches!(
            decode(start, Subprotocol::Legacy),
            Ok(Inbound::Operation { .. })
        ));
        assert_eq!(
            decode(r#"{"type":"connection_init"}"#, Subprotocol::TransportWs),
            Ok(Inbound::Other)
        );
    }

    #[test]
    fn malformed_messages_are_refused() {
        for bad in ["", "{", "[]", "1", r#"{"type":1}"#, r#"{"id":"1"}"#] {
            assert!(decode(bad, Subprotocol::TransportWs).is_err(), "{bad}");
        }
    }

    #[test]
    fn error_messages_take_each_protocols_shape() {
        let errors = json!([{ "message": "no", "extensions": { "code": "X" } }]);
        let m: Value = serde_json::from_str(&error_message(
            Subprotocol::TransportWs,
            json!("7"),
            errors.clone(),
        ))
        .unwrap_or_default();
        assert_eq!(m, json!({ "id": "7", "type": "error", "payload": errors }));
        let m: Value =
            serde_json::from_str(&error_message(Subprotocol::Legacy, json!("7"), errors))
                .unwrap_or_default();
        assert_eq!(m["payload"]["message"], "no");
    }
}
