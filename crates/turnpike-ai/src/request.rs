//! What a request to an AI API asks for: the front its path names ([`Front::of`]) and
//! its JSON body, parsed once under caps ([`parse`]): nesting depth (checked on the
//! bytes before any tree is built), messages and tools counted after.

use serde_json::{Map, Value};

/// The API a client speaks, named by the path below the API's context.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Front {
    /// OpenAI `POST /chat/completions`.
    Chat,
    /// OpenAI `POST /completions` (legacy text completions).
    Completions,
    /// OpenAI `POST /embeddings`.
    Embeddings,
    /// OpenAI `GET /models`: the API's model names.
    Models,
    /// Anthropic `POST /messages`.
    Messages,
    /// OpenAI `POST /responses`, served as a chat call (`responses.rs`).
    Responses,
    /// Anything else: the provider's own API, when pass-through is on.
    Other,
}

impl Front {
    /// The front of an upstream path (`/chat/completions`, `/v1/chat/completions`).
    pub fn of(path: &str) -> Front {
        let path = path.trim_end_matches('/');
        let path = path.strip_prefix("/v1").unwrap_or(path);
        match path {
            "/chat/completions" => Front::Chat,
            "/completions" => Front::Completions,
            "/embeddings" => Front::Embeddings,
            "/models" => Front::Models,
            "/messages" => Front::Messages,
            "/responses" => Front::Responses,
            _ => Front::Other,
        }
    }

    /// The front a call is translated from for its provider: a `/responses` call is put
    /// in the chat shape first.
    pub fn sent_as(self) -> Front {
        match self {
            Front::Responses => Front::Chat,
            f => f,
        }
    }

    /// Whether errors and answers take Anthropic's shape.
    pub fn is_anthropic(self) -> bool {
        self == Front::Messages
    }
}

/// The caps a request body is read under.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// Deepest nesting of arrays and objects.
    pub max_depth: usize,
    pub max_messages: usize,
    pub max_tools: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_depth: 32,
            max_messages: 256,
            max_tools: 128,
        }
    }
}

/// The deepest nesting of `[`/`{` in JSON text, strings skipped; stops counting once
/// past `cap` (so a hostile body costs one pass and no recursion).
pub fn depth(bytes: &[u8], cap: usize) -> usize {
    let (mut depth, mut deepest) = (0usize, 0usize);
    let (mut in_string, mut escaped) = (false, false);
    for &b in bytes {
        if in_string {
            match (escaped, b) {
                (true, _) => escaped = false,
                (false, b'\\') => escaped = true,
                (false, b'"') => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'[' | b'{' => {
                depth += 1;
                deepest = deepest.max(depth);
                if deepest > cap {
                    return deepest;
                }
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    deepest
}

/// The request body as a JSON object, or why it cannot be one (a client message).
pub fn parse(bytes: &[u8], limits: &Limits) -> Result<Map<String, Value>, String> {
    if depth(bytes, limits.max_depth) > limits.max_depth {
        return Err(format!(
            "the body nests deeper than {} levels",
            limits.max_depth
        ));
    }
    let value: Value =
        serde_json::from_slice(bytes).map_err(|e| format!("the body is not JSON: {e}"))?;
    let Value::Object(body) = value else {
        return Err("the body must be a JSON object".into());
    };
    let count = |k: &str| body.get(k).and_then(Value::as_array).map_or(0, Vec::len);
    if count("messages") > limits.max_messages {
        return Err(format!("more than {} messages", limits.max_messages));
    }
    if count("tools") > limits.max_tools {
        return Err(format!("more than {} tools", limits.max_tools));
    }
    Ok(body)
}

/// The body's `model`, required by every front that has a body.
pub fn model(body: &Map<String, Value>) -> Result<&str, String> {
    match body.get("model") {
        Some(Value::String(m)) if !m.is_empty() && m.len() <= 256 => Ok(m),
        Some(_) => Err("`model` must be a non-empty string of at most 256 bytes".into()),
        None => Err("`model` is required".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fronts_by_path() {
        assert_eq!(Front::of("/chat/completions"), Front::Chat);
        assert_eq!(Front::of("/v1/chat/completions/"), Front::Chat);
        assert_eq!(Front::of("/messages"), Front::Messages);
        assert_eq!(Front::of("/models"), Front::Models);
        assert_eq!(Front::of("/v1/responses"), Front::Responses);
        assert_eq!(Front::of("/v1/files"), Front::Other);
    }

    #[test]
    fn depth_skips_strings_and_caps() {
        assert_eq!(depth(br#"{"a":[1,{"b":"[[[["}]}"#, 10), 3);
        let deep = "[".repeat(100);
        assert_eq!(depth(deep.as_bytes(), 5), 6);
        let e = parse(deep.as_bytes(), &Limits::default()).expect_err("too deep");
        assert!(e.contains("32 levels"), "{e}");
    }

    #[test]
    fn counts_are_capped() {
        let limits = Limits {
            max_messages: 2,
            ..Limits::default()
        };
        let body = br#"{"model":"m","messages":[{},{},{}]}"#;
        assert_eq!(
            parse(body, &limits).expect_err("3 > 2"),
            "more than 2 messages"
        );
        assert!(parse(b"[1]", &limits).is_err());
        let ok = parse(br#"{"model":"m","messages":[]}"#, &limits).expect("ok");
        assert_eq!(model(&ok), Ok("m"));
    }
}
