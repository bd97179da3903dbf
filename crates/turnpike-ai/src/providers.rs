//! What differs by provider kind once a call is routed: the API it speaks ([`Wire`]),
//! the path and query a front call goes to ([`target`]: Azure's deployments and
//! `api-version`, Gemini's `models/{m}:generateContent`, Bedrock's
//! `/model/{id}/converse`), the request body ([`body`]: Mistral's differences from
//! OpenAI's, the Messages-shaped hub for Gemini and Bedrock), and the key's header
//! (or Bedrock's SigV4 signature, [`sign`], over the final body).

use std::fmt::Write as _;
use std::sync::Arc;

use http::{HeaderMap, HeaderName, HeaderValue};
use serde_json::{json, Map, Value};
use turnpike_model::ai::ProviderKind;
use turnpike_policy::{ErrorKind, GatewayError};

use crate::request::Front;
use crate::{bedrock, gemini, sigv4, to_anthropic, to_openai};

/// A compiled provider.
pub(crate) struct Provider {
    pub(crate) name: Arc<str>,
    pub(crate) kind: ProviderKind,
    /// The key as its header's value (`Bearer …` for OpenAI), marked sensitive.
    pub(crate) auth: Option<HeaderValue>,
    /// Bedrock's signing credentials (the key is then the secret access key).
    pub(crate) aws: Option<Box<crate::sigv4::Credentials>>,
    /// Azure's `api-version=...` query.
    pub(crate) azure_query: String,
    /// The URL's `host[:port]` and path, as the request is signed with them.
    pub(crate) host: String,
    pub(crate) base_path: String,
    /// The API's endpoint with this provider's URL.
    pub(crate) endpoint: usize,
    /// Long-lived: kept across snapshots (`routing::HealthRegistry`).
    pub(crate) health: Arc<crate::routing::ProviderHealth>,
}

/// The API a provider speaks on the wire.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Wire {
    Openai,
    Anthropic,
    Gemini,
    Bedrock,
}

pub(crate) fn wire(kind: ProviderKind) -> Wire {
    match kind {
        ProviderKind::Openai | ProviderKind::Mistral | ProviderKind::Azure => Wire::Openai,
        ProviderKind::Anthropic => Wire::Anthropic,
        ProviderKind::Gemini => Wire::Gemini,
        ProviderKind::Bedrock => Wire::Bedrock,
    }
}

/// The header a provider's key goes in (Bedrock: `Authorization: Bearer` for an API
/// key; signed credentials replace it).
pub(crate) fn key_header(kind: ProviderKind) -> (HeaderName, bool) {
    match kind {
        ProviderKind::Openai | ProviderKind::Mistral | ProviderKind::Bedrock => {
            (http::header::AUTHORIZATION, true)
        }
        ProviderKind::Anthropic => (HeaderName::from_static("x-api-key"), false),
        ProviderKind::Azure => (HeaderName::from_static("api-key"), false),
        ProviderKind::Gemini => (HeaderName::from_static("x-goog-api-key"), false),
    }
}

/// Every header any kind's key may be in: the client's are dropped before the
/// provider's goes in.
pub(crate) const KEY_HEADERS: [&str; 3] = ["api-key", "x-goog-api-key", "x-api-key"];

pub(crate) fn bad_request(message: impl Into<String>) -> GatewayError {
    let mut e = GatewayError::new(ErrorKind::BadRequest);
    e.detail = Some(message.into().into());
    e
}

/// A model name as one path segment: everything but RFC 3986's unreserved characters
/// percent-encoded (a client's model never adds a path segment or a query; Bedrock's
/// `:` in model ids goes as `%3A`, as AWS's SDKs send it).
fn segment(model: &str) -> String {
    let mut out = String::with_capacity(model.len());
    for b in model.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(char::from(b));
        } else {
            let _ = write!(out, "%{b:02X}");
        }
    }
    out
}

/// The provider's path and query for a front call.
pub(crate) fn target(
    p: &Provider,
    front: Front,
    model: &str,
    stream: bool,
) -> Result<(String, Option<String>), GatewayError> {
    let m = segment(model);
    let none = |what: &str| bad_request(format!("this model's provider ({what}) has no such API"));
    Ok(match (p.kind, front) {
        (ProviderKind::Azure, Front::Chat | Front::Messages) => (
            format!("/deployments/{m}/chat/completions"),
            Some(p.azure_query.clone()),
        ),
        (ProviderKind::Azure, Front::Completions) => (
            format!("/deployments/{m}/completions"),
            Some(p.azure_query.clone()),
        ),
        (ProviderKind::Azure, Front::Embeddings) => (
            format!("/deployments/{m}/embeddings"),
            Some(p.azure_query.clone()),
        ),
        (ProviderKind::Mistral, Front::Completions) => return Err(none("Mistral")),
        (ProviderKind::Openai | ProviderKind::Mistral, Front::Chat | Front::Messages) => {
            ("/chat/completions".into(), None)
        }
        (ProviderKind::Openai, Front::Completions) => ("/completions".into(), None),
        (ProviderKind::Openai | ProviderKind::Mistral, Front::Embeddings) => {
            ("/embeddings".into(), None)
        }
        (ProviderKind::Anthropic, Front::Chat | Front::Messages) => ("/messages".into(), None),
        (ProviderKind::Gemini, Front::Chat | Front::Messages) if stream => (
            format!("/models/{m}:streamGenerateContent"),
            Some("alt=sse".into()),
        ),
        (ProviderKind::Gemini, Front::Chat | Front::Messages) => {
            (format!("/models/{m}:generateContent"), None)
        }
        (ProviderKind::Bedrock, Front::Chat | Front::Messages) => {
            let op = if stream {
                "converse-stream"
            } else {
                "converse"
            };
            (format!("/model/{m}/{op}"), None)
        }
        (ProviderKind::Anthropic, _) => return Err(none("Anthropic")),
        (ProviderKind::Gemini, _) => return Err(none("Gemini, translated")),
        (ProviderKind::Bedrock, _) => return Err(none("Bedrock Converse")),
        (_, Front::Models | Front::Other | Front::Responses) => return Err(none("a front call")),
    })
}

/// The body, path and query of a front call for `p`: its embeddings API when that is
/// not OpenAI's (`embed.rs`), else [`body`] at [`target`]; no body when the client's
/// goes as it came ([`as_sent`]).
pub(crate) fn call(
    p: &Provider,
    front: Front,
    parsed: &Map<String, Value>,
    model: &str,
    stream: bool,
    default_max: u64,
) -> Result<(Option<Value>, String, Option<String>), GatewayError> {
    if front == Front::Embeddings && matches!(wire(p.kind), Wire::Gemini | Wire::Bedrock) {
        let (path, body) =
            crate::embed::request(p.kind, parsed, model, &segment(model)).map_err(bad_request)?;
        return Ok((Some(body), path, None));
    }
    let (path, query) = target(p, front, model, stream)?;
    if as_sent(front, p.kind, parsed, model, stream) {
        return Ok((None, path, query));
    }
    let out = body(front, p.kind, parsed, model, default_max)?;
    Ok((Some(out), path, query))
}

/// Whether [`body`] would give the client's body back unchanged: the provider speaks
/// the front's API, the model keeps its name and a streamed OpenAI call already asks
/// for the usage chunk. Such a call is sent as its bytes came, neither copied nor
/// written again (a call's own CPU queues the next call's first token).
fn as_sent(
    front: Front,
    kind: ProviderKind,
    parsed: &Map<String, Value>,
    model: &str,
    stream: bool,
) -> bool {
    if parsed.get("model").and_then(Value::as_str) != Some(model) {
        return false;
    }
    let usage_asked = || {
        parsed
            .get("stream_options")
            .and_then(|o| o.get("include_usage"))
            .and_then(Value::as_bool)
            == Some(true)
    };
    match (front, kind) {
        (_, ProviderKind::Mistral) => false,
        (Front::Messages, ProviderKind::Anthropic) => true,
        (Front::Embeddings, _) => wire(kind) == Wire::Openai,
        (Front::Chat | Front::Completions, _) => {
            wire(kind) == Wire::Openai && (!stream || usage_asked())
        }
        _ => false,
    }
}

/// Mistral's chat API is OpenAI's but for a few names: `random_seed`, `tool_choice:
/// any`, no `stream_options` (its last chunk carries the usage anyway), `max_tokens`
/// only, no `user`.
fn mistral(out: &mut Map<String, Value>) {
    out.remove("stream_options");
    out.remove("user");
    if let Some(v) = out.remove("max_completion_tokens") {
        out.entry("max_tokens").or_insert(v);
    }
    if let Some(v) = out.remove("seed") {
        out.insert("random_seed".into(), v);
    }
    if out.get("tool_choice").and_then(Value::as_str) == Some("required") {
        out.insert("tool_choice".into(), Value::from("any"));
    }
}

/// The request in the provider's API, with the provider's model.
pub(crate) fn body(
    front: Front,
    kind: ProviderKind,
    body: &Map<String, Value>,
    model: &str,
    default_max: u64,
) -> Result<Value, GatewayError> {
    let same = |with_usage: bool| {
        let mut out = body.clone();
        out.insert("model".into(), Value::from(model));
        if with_usage && out.get("stream").and_then(Value::as_bool) == Some(true) {
            let opts = out.entry("stream_options").or_insert_with(|| json!({}));
            if let Value::Object(o) = opts {
                o.insert("include_usage".into(), Value::Bool(true));
            }
        }
        Value::Object(out)
    };
    let messages = || match front {
        Front::Chat => to_anthropic::request(body, model, default_max),
        _ => Value::Object(body.clone()),
    };
    let mut out = match (front, wire(kind)) {
        (Front::Embeddings, Wire::Openai) => same(false),
        (Front::Chat | Front::Completions, Wire::Openai) => same(true),
        (Front::Messages, Wire::Anthropic) => same(false),
        (Front::Chat, Wire::Anthropic) => to_anthropic::request(body, model, default_max),
        (Front::Messages, Wire::Openai) => to_openai::request(body, model, default_max),
        (_, Wire::Gemini) => match messages() {
            Value::Object(m) => gemini::request(&m),
            _ => return Err(bad_request("the body must be a JSON object")),
        },
        (_, Wire::Bedrock) => match messages() {
            Value::Object(m) => bedrock::request(&m).map_err(bad_request)?,
            _ => return Err(bad_request("the body must be a JSON object")),
        },
        _ => return Err(bad_request("this model's provider has no such API")),
    };
    if kind == ProviderKind::Mistral {
        if let Value::Object(o) = &mut out {
            mistral(o);
        }
    }
    Ok(out)
}

/// Signs a Bedrock request with the provider's credentials (a no-op for others).
pub(crate) fn sign(
    p: &Provider,
    method: &str,
    path: &str,
    query: Option<&str>,
    body: &[u8],
    h: &mut HeaderMap,
) {
    let Some(aws) = &p.aws else { return };
    let full = format!("{}{path}", p.base_path);
    let req = sigv4::Signed {
        method,
        host: &p.host,
        path: &full,
        query,
        body,
    };
    sigv4::sign(aws, &req, h, crate::chunks::now());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn model_names_stay_one_segment() {
        assert_eq!(segment("anthropic.claude-v2:1"), "anthropic.claude-v2%3A1");
        assert_eq!(segment("../x?y"), "..%2Fx%3Fy");
    }

    #[test]
    fn mistral_renames_what_differs() {
        let Value::Object(b) = json!({"model": "m", "messages": [], "seed": 3, "tool_choice": "required",
            "max_completion_tokens": 9, "stream": true, "user": "u"})
        else {
            panic!("an object")
        };
        let out = body(Front::Chat, ProviderKind::Mistral, &b, "mistral-small", 100).expect("ok");
        assert_eq!(out["random_seed"], 3);
        assert_eq!(out["tool_choice"], "any");
        assert_eq!(out["max_tokens"], 9);
        assert!(out.get("stream_options").is_none() && out.get("user").is_none());
        assert_eq!(out["model"], "mistral-small");
    }
}
