//! Every error an AI API answers, in the shape of the front the client called: OpenAI's
//! `{"error": {"message", "type", "param", "code"}}` or Anthropic's
//! `{"type": "error", "error": {"type", "message"}}`, whether it came from the
//! gateway (the error table's `{"code", "message", "request_id"}`: a 401 from auth, a
//! 429 from a token budget) or from a provider that speaks the other API.

use http::StatusCode;
use serde_json::{json, Map, Value};

/// What an error body says, whatever its shape.
struct Said {
    message: String,
    /// The provider's error type, when it gave one.
    kind: Option<String>,
    code: Option<Value>,
    request_id: Option<Value>,
}

fn read(body: &[u8]) -> Option<(Said, Shape)> {
    let Ok(Value::Object(o)) = serde_json::from_slice::<Value>(body) else {
        return None;
    };
    let text =
        |m: &Map<String, Value>, k: &str| m.get(k).and_then(Value::as_str).map(str::to_owned);
    if let Some(Value::Object(e)) = o.get("error") {
        let shape = if o.get("type").and_then(Value::as_str) == Some("error") {
            Shape::Anthropic
        } else if e.get("status").is_some_and(Value::is_string) && e.get("type").is_none() {
            // Google's `{"error": {"code": 400, "message", "status": "INVALID_ARGUMENT"}}`.
            Shape::Google
        } else {
            Shape::Openai
        };
        let said = Said {
            message: text(e, "message").unwrap_or_default(),
            kind: text(e, "type"),
            code: e.get("code").cloned(),
            request_id: o.get("request_id").cloned(),
        };
        return Some((said, shape));
    }
    let message = text(&o, "message")?;
    let said = Said {
        message,
        kind: None,
        code: o.get("code").cloned(),
        request_id: o.get("request_id").cloned(),
    };
    Some((said, Shape::Gateway))
}

#[derive(PartialEq)]
enum Shape {
    Openai,
    Google,
    Anthropic,
    Gateway,
}

/// Anthropic's error type for a status (docs.anthropic.com "Errors").
fn anthropic_type(status: StatusCode) -> &'static str {
    match status.as_u16() {
        400 | 405 | 415 | 422 => "invalid_request_error",
        401 => "authentication_error",
        403 => "permission_error",
        404 => "not_found_error",
        413 => "request_too_large",
        429 => "rate_limit_error",
        503 | 529 => "overloaded_error",
        _ if status.is_client_error() => "invalid_request_error",
        _ => "api_error",
    }
}

/// OpenAI's error type for a status.
fn openai_type(status: StatusCode) -> &'static str {
    match status.as_u16() {
        401 => "authentication_error",
        403 => "permission_error",
        404 => "not_found_error",
        429 => "rate_limit_error",
        _ if status.is_client_error() => "invalid_request_error",
        _ => "server_error",
    }
}

/// The error `body` in the front's shape; `None` when it is in that shape already or
/// is no JSON error at all (left as it is).
pub(crate) fn reshape(anthropic_front: bool, status: StatusCode, body: &[u8]) -> Option<Vec<u8>> {
    let (said, shape) = read(body)?;
    let out = match (anthropic_front, shape) {
        (true, Shape::Anthropic) | (false, Shape::Openai) => return None,
        (true, _) => {
            let mut o = json!({
                "type": "error",
                "error": {"type": anthropic_type(status), "message": said.message},
            });
            if let Some(id) = said.request_id {
                o["request_id"] = id;
            }
            o
        }
        (false, shape) => {
            let kind = match (shape, said.kind) {
                (Shape::Gateway | Shape::Google, _) | (_, None) => openai_type(status).to_owned(),
                (_, Some(k)) => k,
            };
            let mut o = json!({
                "error": {"message": said.message, "type": kind, "param": null,
                          "code": said.code.unwrap_or(Value::Null)},
            });
            if let Some(id) = said.request_id {
                o["request_id"] = id;
            }
            o
        }
    };
    serde_json::to_vec(&out).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(b: Option<Vec<u8>>) -> Value {
        serde_json::from_slice(&b.expect("reshaped")).expect("json")
    }

    #[test]
    fn gateway_refusals_take_each_fronts_shape() {
        let gw = br#"{"code":"throttled","message":"quota exceeded","request_id":"r1"}"#;
        let status = StatusCode::TOO_MANY_REQUESTS;
        let a = parsed(reshape(true, status, gw));
        assert_eq!(a["type"], "error");
        assert_eq!(a["error"]["type"], "rate_limit_error");
        assert_eq!(a["error"]["message"], "quota exceeded");
        let o = parsed(reshape(false, status, gw));
        assert_eq!(o["error"]["type"], "rate_limit_error");
        assert_eq!(o["error"]["code"], "throttled");
        assert_eq!(o["request_id"], "r1");
    }

    #[test]
    fn provider_errors_cross_over_and_stay_when_in_shape() {
        let openai = br#"{"error":{"message":"bad model","type":"invalid_request_error","param":null,"code":"model_not_found"}}"#;
        assert!(reshape(false, StatusCode::NOT_FOUND, openai).is_none());
        let a = parsed(reshape(true, StatusCode::NOT_FOUND, openai));
        assert_eq!(a["error"]["type"], "not_found_error");
        assert_eq!(a["error"]["message"], "bad model");
        let anthropic = br#"{"type":"error","error":{"type":"overloaded_error","message":"busy"}}"#;
        assert!(reshape(true, StatusCode::from_u16(529).expect("529"), anthropic).is_none());
        let o = parsed(reshape(
            false,
            StatusCode::from_u16(529).expect("529"),
            anthropic,
        ));
        assert_eq!(o["error"]["type"], "overloaded_error");
        assert!(reshape(false, StatusCode::BAD_GATEWAY, b"<html>").is_none());
        let google = br#"{"error":{"code":400,"message":"bad","status":"INVALID_ARGUMENT"}}"#;
        let o = parsed(reshape(false, StatusCode::BAD_REQUEST, google));
        assert_eq!(o["error"]["type"], "invalid_request_error");
        assert_eq!(o["error"]["message"], "bad");
        let a = parsed(reshape(true, StatusCode::BAD_REQUEST, google));
        assert_eq!(a["error"]["type"], "invalid_request_error");
    }
}
