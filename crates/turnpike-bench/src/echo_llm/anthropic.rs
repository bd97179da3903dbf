//! The Anthropic front of `echo --llm`: `POST /v1/messages` answered as a `message`, or
//! streamed as Anthropic frames it (`message_start`, `content_block_start`, `ping`,
//! `content_block_delta`..., `content_block_stop`, `message_delta` with usage,
//! `message_stop`); `POST /v1/messages/count_tokens`; errors as
//! `{"type": "error", "error": {type, message}}`.
//!
//! Usage follows Anthropic's meaning: `input_tokens` excludes the prompt tokens read
//! from the cache (`cache_read_input_tokens`), where OpenAI's `prompt_tokens` includes them.

use http::StatusCode;
use serde_json::{json, Value};
use turnpike_tokens::{ChatCount, Encoding};

use super::answer::{Answer, Call, Finish, Last, Prompt, Reply, Tool, ToolChoice};
use super::paced::Event;
use super::parse::{self, Failure, MAX_MESSAGES, MAX_PARTS, MAX_TOOLS};

/// A parsed Messages request.
pub(super) struct Request {
    pub prompt: Prompt,
    pub stream: bool,
}

/// `POST /v1/messages` (`max_tokens` required) or `/v1/messages/count_tokens` (not).
pub(super) fn parse(body: &Value, model: String, count_only: bool) -> Result<Request, Failure> {
    let max_tokens = parse::positive(body, &["max_tokens"])?;
    if max_tokens.is_none() && !count_only {
        return Err(Failure::bad("max_tokens", "Field required"));
    }
    let messages = parse::array(body, "messages", MAX_MESSAGES)?;
    if messages.is_empty() {
        return Err(Failure::bad("messages", "must not be empty"));
    }
    let mut count = ChatCount::new(Encoding::for_model(&model));
    if let Some(system) = body.get("system").filter(|s| !s.is_null()) {
        let mut images = 0;
        count.message("system");
        count.text(&parse::text_of(Some(system), &mut images)?);
    }
    let mut last = Last::Text(String::new());
    for m in messages {
        let role = m.get("role").and_then(Value::as_str).unwrap_or("user");
        count.message(role);
        last = blocks(m.get("content"), &mut count)?;
    }
    let mut tools = Vec::new();
    for t in parse::optional_array(body, "tools", MAX_TOOLS)? {
        let Some(name) = t.get("name").and_then(Value::as_str) else {
            continue;
        };
        count.text(&t.to_string());
        let schema = t.get("input_schema").cloned().unwrap_or(Value::Null);
        tools.push(Tool {
            name: name.to_owned(),
            schema,
        });
    }
    Ok(Request {
        prompt: Prompt {
            model,
            last,
            tools,
            tool_choice: tool_choice(body),
            max_tokens,
            prompt_tokens: count.total(),
        },
        stream: parse::flag(body, "stream")?,
    })
}

/// `{"type": "auto" | "any" | "none"}` or `{"type": "tool", "name": ..}`.
fn tool_choice(body: &Value) -> ToolChoice {
    let name = body.pointer("/tool_choice/name").and_then(Value::as_str);
    match (
        body.pointer("/tool_choice/type").and_then(Value::as_str),
        name,
    ) {
        (Some("none"), _) => ToolChoice::None,
        (Some("tool"), Some(name)) => ToolChoice::Named(name.to_owned()),
        _ => ToolChoice::Auto,
    }
}

/// Counts one message's content and says what it is: its text, or the tool result it
/// carries.
fn blocks(content: Option<&Value>, count: &mut ChatCount) -> Result<Last, Failure> {
    let blocks = match content {
        Some(Value::Array(blocks)) if blocks.len() > MAX_PARTS => {
            return Err(Failure::bad(
                "content",
                format!("{} blocks, over the limit of {MAX_PARTS}", blocks.len()),
            ))
        }
        Some(Value::Array(blocks)) => blocks,
        other => {
            let text = parse::text_of(other, &mut 0)?;
            count.text(&text);
            return Ok(Last::Text(text));
        }
    };
    let mut text = String::new();
    let mut result = None;
    for b in blocks {
        match b.get("type").and_then(Value::as_str) {
            Some("image" | "document") => count.image(),
            Some("tool_use") => {
                count.text(b.get("name").and_then(Value::as_str).unwrap_or(""));
                count.text(&b.get("input").map(Value::to_string).unwrap_or_default());
            }
            Some("tool_result") => {
                let mut images = 0;
                let content = parse::text_of(b.get("content"), &mut images)?;
                count.text(&content);
                (0..images).for_each(|_| count.image());
                result = Some(content);
            }
            _ => {
                let t = b.get("text").or_else(|| b.get("thinking"));
                text.push_str(t.and_then(Value::as_str).unwrap_or(""));
            }
        }
    }
    count.text(&text);
    Ok(match result {
        Some(content) => Last::ToolResult(content),
        None => Last::Text(text),
    })
}

fn stop_reason(reply: &Reply) -> &'static str {
    match reply {
        Reply::Text {
            finish: Finish::Stop,
            ..
        } => "end_turn",
        Reply::Text {
            finish: Finish::Length,
            ..
        } => "max_tokens",
        Reply::ToolCall { .. } => "tool_use",
    }
}

fn usage(call: &Call, a: &Answer, output_tokens: u64) -> Value {
    let cached = call.cached.min(a.prompt_tokens);
    json!({
        "input_tokens": a.prompt_tokens - cached,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": cached,
        "output_tokens": output_tokens,
    })
}

fn message(call: &Call, a: &Answer, content: Value, stop: Option<&str>, output: u64) -> Value {
    json!({
        "id": format!("msg_{}", call.id),
        "type": "message",
        "role": "assistant",
        "model": call.model,
        "content": content,
        "stop_reason": stop,
        "stop_sequence": null,
        "usage": usage(call, a, output),
    })
}

fn tool_use(call: &Call, name: &str, input: Value) -> Value {
    json!({"type": "tool_use", "id": format!("toolu_{}", call.id), "name": name, "input": input})
}

/// The non-streamed answer.
pub(super) fn message_json(call: &Call, a: &Answer) -> Value {
    let content = match &a.reply {
        Reply::Text { .. } => json!([{"type": "text", "text": a.text()}]),
        Reply::ToolCall { name, arguments } => json!([tool_use(call, name, arguments.clone())]),
    };
    let stop = stop_reason(&a.reply);
    message(call, a, content, Some(stop), a.completion_tokens)
}

fn event(name: &str, data: &Value, token: bool) -> Event {
    Event::sse(Some(name), &data.to_string(), token)
}

/// The streamed answer.
pub(super) fn message_events(call: &Call, a: &Answer) -> Vec<Event> {
    let start = message(call, a, json!([]), None, 1);
    let mut events = vec![event(
        "message_start",
        &json!({"type": "message_start", "message": start}),
        false,
    )];
    let (block, deltas) = match &a.reply {
        Reply::Text { pieces, .. } => (
            json!({"type": "text", "text": ""}),
            pieces
                .iter()
                .map(|p| json!({"type": "text_delta", "text": p}))
                .collect::<Vec<_>>(),
        ),
        Reply::ToolCall { name, arguments } => {
            let pieces = Encoding::for_model(&call.model).pieces(&arguments.to_string());
            (
                tool_use(call, name, json!({})),
                pieces
                    .iter()
                    .map(|p| json!({"type": "input_json_delta", "partial_json": p}))
                    .collect(),
            )
        }
    };
    let start_block = json!({"type": "content_block_start", "index": 0, "content_block": block});
    events.push(event("content_block_start", &start_block, false));
    events.push(event("ping", &json!({"type": "ping"}), false));
    for delta in deltas {
        let d = json!({"type": "content_block_delta", "index": 0, "delta": delta});
        events.push(event("content_block_delta", &d, true));
    }
    let stop = json!({"type": "content_block_stop", "index": 0});
    events.push(event("content_block_stop", &stop, false));
    let delta = json!({
        "type": "message_delta",
        "delta": {"stop_reason": stop_reason(&a.reply), "stop_sequence": null},
        "usage": usage(call, a, a.completion_tokens),
    });
    events.push(event("message_delta", &delta, false));
    events.push(event(
        "message_stop",
        &json!({"type": "message_stop"}),
        false,
    ));
    events
}

/// `POST /v1/messages/count_tokens`.
pub(super) fn count_json(prompt: &Prompt) -> Value {
    json!({"input_tokens": prompt.prompt_tokens})
}

/// Anthropic's error body for a failure.
pub(super) fn error_json(f: &Failure, request_id: &str) -> Value {
    let ty = match f.status {
        StatusCode::UNAUTHORIZED => "authentication_error",
        StatusCode::FORBIDDEN => "permission_error",
        StatusCode::NOT_FOUND => "not_found_error",
        StatusCode::PAYLOAD_TOO_LARGE => "request_too_large",
        StatusCode::TOO_MANY_REQUESTS => "rate_limit_error",
        s if s.as_u16() == 529 => "overloaded_error",
        s if s.is_server_error() => "api_error",
        _ => "invalid_request_error",
    };
    json!({"type": "error", "error": {"type": ty, "message": f.message}, "request_id": request_id})
}
