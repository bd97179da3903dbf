//! Reading request fields with caps, and the one failure type both fronts render in their
//! own error shape.

use http::StatusCode;
use serde_json::Value;

/// Most messages in one request.
pub(super) const MAX_MESSAGES: usize = 2048;
/// Most content parts (blocks) in one message.
pub(super) const MAX_PARTS: usize = 256;
/// Most tools offered in one request.
pub(super) const MAX_TOOLS: usize = 128;

/// Why a request is refused, rendered by the front it came through.
#[derive(Debug, Clone)]
pub(super) struct Failure {
    pub status: StatusCode,
    pub message: String,
    /// The request field at fault (OpenAI's `param`).
    pub param: Option<String>,
}

impl Failure {
    pub fn bad(param: &str, message: impl Into<String>) -> Failure {
        Failure {
            status: StatusCode::BAD_REQUEST,
            message: format!("{param}: {}", message.into()),
            param: Some(param.to_owned()),
        }
    }

    pub fn status(status: StatusCode, message: impl Into<String>) -> Failure {
        Failure {
            status,
            message: message.into(),
            param: None,
        }
    }
}

/// A required string field.
pub(super) fn string(body: &Value, name: &str) -> Result<String, Failure> {
    match body.get(name) {
        Some(Value::String(s)) if !s.is_empty() => Ok(s.clone()),
        Some(Value::String(_)) | None | Some(Value::Null) => {
            Err(Failure::bad(name, "Field required"))
        }
        Some(_) => Err(Failure::bad(name, "must be a string")),
    }
}

/// An optional boolean field.
pub(super) fn flag(body: &Value, name: &str) -> Result<bool, Failure> {
    match body.get(name) {
        None | Some(Value::Null) => Ok(false),
        Some(Value::Bool(b)) => Ok(*b),
        Some(_) => Err(Failure::bad(name, "must be a boolean")),
    }
}

/// The first present one of `names` as a positive integer.
pub(super) fn positive(body: &Value, names: &[&str]) -> Result<Option<u64>, Failure> {
    for name in names {
        match body.get(*name) {
            None | Some(Value::Null) => continue,
            Some(v) => {
                return match v.as_u64() {
                    Some(n) if n >= 1 => Ok(Some(n)),
                    _ => Err(Failure::bad(name, "must be an integer >= 1")),
                }
            }
        }
    }
    Ok(None)
}

/// A required array field with at most `max` items.
pub(super) fn array<'a>(body: &'a Value, name: &str, max: usize) -> Result<&'a [Value], Failure> {
    match body.get(name) {
        Some(Value::Array(items)) if items.len() > max => Err(Failure::bad(
            name,
            format!("{} items, over the limit of {max}", items.len()),
        )),
        Some(Value::Array(items)) => Ok(items),
        None | Some(Value::Null) => Err(Failure::bad(name, "Field required")),
        Some(_) => Err(Failure::bad(name, "must be an array")),
    }
}

/// An optional array field with at most `max` items (empty when absent).
pub(super) fn optional_array<'a>(
    body: &'a Value,
    name: &str,
    max: usize,
) -> Result<&'a [Value], Failure> {
    match body.get(name) {
        None | Some(Value::Null) => Ok(&[]),
        Some(_) => array(body, name, max),
    }
}

/// A field's text: a string, or the `text` of each part of an array of parts; counts
/// image parts in `images`.
pub(super) fn text_of(content: Option<&Value>, images: &mut u64) -> Result<String, Failure> {
    match content {
        None | Some(Value::Null) => Ok(String::new()),
        Some(Value::String(s)) => Ok(s.clone()),
        Some(Value::Array(parts)) if parts.len() > MAX_PARTS => Err(Failure::bad(
            "content",
            format!("{} parts, over the limit of {MAX_PARTS}", parts.len()),
        )),
        Some(Value::Array(parts)) => {
            let mut text = String::new();
            for part in parts {
                match part.get("type").and_then(Value::as_str) {
                    Some("image_url" | "image" | "input_image") => *images += 1,
                    _ => {
                        if let Some(t) = part.get("text").and_then(Value::as_str) {
                            text.push_str(t);
                        }
                    }
                }
            }
            Ok(text)
        }
        Some(_) => Err(Failure::bad(
            "content",
            "must be a string or an array of parts",
        )),
    }
}
