//! JSON-RPC 2.0 as the Streamable HTTP transport carries it: one message per POST (the
//! current specification has no batches), read under a size cap into the envelope the
//! policy dispatches on; answers written with the SDK's model types.

use bytes::Bytes;
use http::header::CONTENT_TYPE;
use http::{HeaderValue, Response, StatusCode};
use rmcp::model::{
    ErrorCode, ErrorData, JsonRpcError, JsonRpcResponse, JsonRpcVersion2_0, RequestId,
};
use serde::Serialize;
use serde_json::Value;
use turnpike_policy::Flow;

/// Largest JSON-RPC message read (the API's `max_body_size` may be smaller).
pub const MAX_MESSAGE_BYTES: usize = 1 << 20;

/// A message a client sent.
#[derive(Debug)]
pub enum Message {
    /// A request: it gets an answer.
    Request {
        id: RequestId,
        method: String,
        params: Option<Value>,
    },
    /// A notification (no id) or a response to a server request: `202 Accepted`.
    NoAnswer,
}

/// A message refused before its method ran: the HTTP status and the JSON-RPC error.
#[derive(Debug, Clone)]
pub struct Refusal {
    pub status: StatusCode,
    pub id: Option<RequestId>,
    pub error: ErrorData,
}

impl Refusal {
    pub fn new(status: StatusCode, id: Option<RequestId>, code: ErrorCode, msg: String) -> Self {
        Refusal {
            status,
            id,
            error: ErrorData::new(code, msg, None),
        }
    }

    /// An error the request's own answer carries (HTTP 200).
    pub fn answer(id: RequestId, code: ErrorCode, msg: String) -> Self {
        Refusal::new(StatusCode::OK, Some(id), code, msg)
    }

    pub fn body(&self) -> Bytes {
        let e = JsonRpcError::new(self.id.clone(), self.error.clone());
        Bytes::from(serde_json::to_vec(&e).unwrap_or_default())
    }
}

/// Reads one message.
pub fn parse(body: &[u8]) -> Result<Message, Refusal> {
    let bad = |code, msg: &str| Refusal::new(StatusCode::BAD_REQUEST, None, code, msg.into());
    if body.len() > MAX_MESSAGE_BYTES {
        let msg = format!("a message is at most {MAX_MESSAGE_BYTES} bytes");
        return Err(Refusal::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            None,
            ErrorCode::INVALID_REQUEST,
            msg,
        ));
    }
    let v: Value = serde_json::from_slice(body).map_err(|e| {
        bad(
            ErrorCode::PARSE_ERROR,
            &format!("the body is not JSON: {e}"),
        )
    })?;
    let mut m = match v {
        Value::Object(m) => m,
        Value::Array(_) => {
            return Err(bad(
                ErrorCode::INVALID_REQUEST,
                "one JSON-RPC message per request: batches are not supported",
            ))
        }
        _ => {
            return Err(bad(
                ErrorCode::INVALID_REQUEST,
                "a JSON-RPC message is an object",
            ))
        }
    };
    if m.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return Err(bad(ErrorCode::INVALID_REQUEST, "`jsonrpc` must be \"2.0\""));
    }
    let id = match m.remove("id") {
        None => None,
        Some(id) => Some(serde_json::from_value::<RequestId>(id).map_err(|_| {
            bad(
                ErrorCode::INVALID_REQUEST,
                "`id` must be a string or an integer",
            )
        })?),
    };
    match (m.remove("method"), id) {
        (Some(Value::String(method)), Some(id)) => Ok(Message::Request {
            id,
            method,
            params: m.remove("params"),
        }),
        (Some(Value::String(_)), None) => Ok(Message::NoAnswer),
        (None, Some(_)) if m.contains_key("result") || m.contains_key("error") => {
            Ok(Message::NoAnswer)
        }
        _ => Err(bad(
            ErrorCode::INVALID_REQUEST,
            "a message needs a string `method`",
        )),
    }
}

/// A request's answer.
pub fn result<T: Serialize>(id: RequestId, result: T) -> Bytes {
    let r = JsonRpcResponse {
        jsonrpc: JsonRpcVersion2_0,
        id,
        result,
    };
    Bytes::from(serde_json::to_vec(&r).unwrap_or_default())
}

/// A request's answer from an already serialized result (the tool list, built once).
pub fn raw_result(id: &RequestId, result: &str) -> Bytes {
    let id = serde_json::to_string(id).unwrap_or_default();
    let mut out = String::with_capacity(id.len() + result.len() + 32);
    out.push_str(r#"{"jsonrpc":"2.0","id":"#);
    out.push_str(&id);
    out.push_str(r#","result":"#);
    out.push_str(result);
    out.push('}');
    Bytes::from(out)
}

/// A refusal as the endpoint answers it.
pub(crate) fn refusal(r: &Refusal) -> Flow {
    Flow::Respond(json(r.status, r.body()))
}

/// A JSON answer.
pub(crate) fn json(status: StatusCode, body: Bytes) -> Response<Bytes> {
    let mut resp = Response::new(body);
    *resp.status_mut() = status;
    resp.headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    resp
}

/// An answer without a body.
pub(crate) fn empty(status: StatusCode) -> Response<Bytes> {
    let mut resp = Response::new(Bytes::new());
    *resp.status_mut() = status;
    resp
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_requests_notifications_and_refuses_the_rest() {
        let m = parse(br#"{"jsonrpc":"2.0","id":7,"method":"tools/list"}"#).expect("request");
        assert!(
            matches!(m, Message::Request { id: RequestId::Number(7), ref method, .. } if method == "tools/list")
        );
        let n = parse(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#).expect("note");
        assert!(matches!(n, Message::NoAnswer));
        for (bad, code) in [
            (&b"{"[..], ErrorCode::PARSE_ERROR),
            (
                br#"[{"jsonrpc":"2.0","id":1,"method":"ping"}]"#,
                ErrorCode::INVALID_REQUEST,
            ),
            (
                br#"{"jsonrpc":"1.0","id":1,"method":"ping"}"#,
                ErrorCode::INVALID_REQUEST,
            ),
            (
                br#"{"jsonrpc":"2.0","id":1.5,"method":"ping"}"#,
                ErrorCode::INVALID_REQUEST,
            ),
            (br#"{"jsonrpc":"2.0","id":1}"#, ErrorCode::INVALID_REQUEST),
        ] {
            let r = parse(bad).expect_err("refused");
            assert_eq!((r.status, r.error.code), (StatusCode::BAD_REQUEST, code));
        }
        let big = vec![b' '; MAX_MESSAGE_BYTES + 1];
        assert_eq!(
            parse(&big).expect_err("cap").status,
            StatusCode::PAYLOAD_TOO_LARGE
        );
    }

    #[test]
    fn answers_are_json_rpc() {
        let v: Value = serde_json::from_slice(&raw_result(&RequestId::String("a".into()), "{}"))
            .expect("json");
        assert_eq!(v, serde_json::json!({"jsonrpc":"2.0","id":"a","result":{}}));
    }
}
