//! The Bedrock Converse front of `echo --llm`: `POST /model/{id}/converse` answered as
//! a Converse response, `/converse-stream` as AWS event-stream frames
//! (`application/vnd.amazon.eventstream`: `messageStart`, `contentBlockStart` for a
//! tool, `contentBlockDelta` a token, `contentBlockStop`, `messageStop`, `metadata`
//! with the usage), each frame with its prelude and message CRC-32s; errors as
//! Bedrock's `{"message"}` with `x-amzn-ErrorType`. The request's SigV4 signature is
//! not verified (the gateway's signer is checked against AWS's test vectors); with
//! `--llm-key` its credential's key id must be the key.

use bytes::Bytes;
use http::StatusCode;
use serde_json::{json, Value};
use turnpike_tokens::{ChatCount, Encoding};

use super::answer::{Answer, Call, Finish, Last, Prompt, Reply, Tool, ToolChoice};
use super::paced::Event;
use super::parse::{self, Failure, MAX_MESSAGES, MAX_PARTS, MAX_TOOLS};

fn content(m: &Value, count: &mut ChatCount) -> Result<Last, Failure> {
    let blocks = parse::array(m, "content", MAX_PARTS)?;
    let mut text = String::new();
    let mut result = None;
    for b in blocks {
        if let Some(t) = b.get("text").and_then(Value::as_str) {
            text.push_str(t);
        } else if b.get("image").is_some() {
            count.image();
        } else if let Some(u) = b.get("toolUse") {
            count.text(u.get("name").and_then(Value::as_str).unwrap_or(""));
            count.text(&u.get("input").map(Value::to_string).unwrap_or_default());
        } else if let Some(r) = b.get("toolResult") {
            let mut out = String::new();
            for c in parse::optional_array(r, "content", MAX_PARTS)? {
                match (c.get("text").and_then(Value::as_str), c.get("json")) {
                    (Some(t), _) => out.push_str(t),
                    (None, Some(j)) => out.push_str(&j.to_string()),
                    _ => {}
                }
            }
            count.text(&out);
            result = Some(out);
        }
    }
    count.text(&text);
    Ok(result.map_or(Last::Text(text), Last::ToolResult))
}

fn tools(body: &Value, count: &mut ChatCount) -> Result<(Vec<Tool>, ToolChoice), Failure> {
    let Some(config) = body.get("toolConfig") else {
        return Ok((Vec::new(), ToolChoice::Auto));
    };
    let mut out = Vec::new();
    for t in parse::array(config, "tools", MAX_TOOLS)? {
        let Some(spec) = t.get("toolSpec") else {
            continue;
        };
        let name = parse::string(spec, "name")
            .map_err(|_| Failure::bad("toolConfig", "tools[].toolSpec.name: required"))?;
        count.text(&spec.to_string());
        let schema = spec
            .pointer("/inputSchema/json")
            .cloned()
            .unwrap_or(Value::Null);
        out.push(Tool { name, schema });
    }
    let choice = match config
        .pointer("/toolChoice/tool/name")
        .and_then(Value::as_str)
    {
        Some(n) => ToolChoice::Named(n.to_owned()),
        None => ToolChoice::Auto,
    };
    Ok((out, choice))
}

/// A Converse body.
pub(super) fn parse(body: &Value, model: String) -> Result<Prompt, Failure> {
    let messages = parse::array(body, "messages", MAX_MESSAGES)?;
    if messages.is_empty() {
        return Err(Failure::bad("messages", "must not be empty"));
    }
    let mut count = ChatCount::new(Encoding::for_model(&model));
    for s in parse::optional_array(body, "system", MAX_PARTS)? {
        count.message("system");
        count.text(s.get("text").and_then(Value::as_str).unwrap_or(""));
    }
    let mut last = Last::Text(String::new());
    for m in messages {
        count.message(m.get("role").and_then(Value::as_str).unwrap_or("user"));
        last = content(m, &mut count)?;
    }
    let (tools, tool_choice) = tools(body, &mut count)?;
    let max_tokens = match body.get("inferenceConfig") {
        Some(c) => parse::positive(c, &["maxTokens"])?,
        None => None,
    };
    Ok(Prompt {
        model,
        last,
        tools,
        tool_choice,
        max_tokens,
        prompt_tokens: count.total(),
    })
}

fn stop_reason(reply: &Reply) -> &'static str {
    match reply {
        Reply::Text {
            finish: Finish::Length,
            ..
        } => "max_tokens",
        Reply::Text { .. } => "end_turn",
        Reply::ToolCall { .. } => "tool_use",
    }
}

fn usage(a: &Answer) -> Value {
    json!({"inputTokens": a.prompt_tokens, "outputTokens": a.completion_tokens,
           "totalTokens": a.prompt_tokens + a.completion_tokens})
}

fn tool_use(call: &Call, name: &str) -> Value {
    json!({"toolUseId": format!("tooluse_{}", call.id), "name": name})
}

/// The non-streamed answer.
pub(super) fn answer_json(call: &Call, a: &Answer) -> Value {
    let content = match &a.reply {
        Reply::Text { .. } => json!([{ "text": a.text() }]),
        Reply::ToolCall { name, arguments } => {
            let mut u = tool_use(call, name);
            u["input"] = arguments.clone();
            json!([{ "toolUse": u }])
        }
    };
    json!({"output": {"message": {"role": "assistant", "content": content}},
           "stopReason": stop_reason(&a.reply), "usage": usage(a), "metrics": {"latencyMs": 0}})
}

/// One event-stream frame: string headers, a JSON payload, both CRC-32s.
fn frame(event_type: &str, payload: &Value, token: bool) -> Event {
    let mut h = Vec::new();
    for (name, value) in [
        (":event-type", event_type),
        (":content-type", "application/json"),
        (":message-type", "event"),
    ] {
        h.push(name.len() as u8);
        h.extend_from_slice(name.as_bytes());
        h.push(7);
        h.extend_from_slice(&(value.len() as u16).to_be_bytes());
        h.extend_from_slice(value.as_bytes());
    }
    let payload = payload.to_string();
    let total = 12 + h.len() + payload.len() + 4;
    let mut out = Vec::with_capacity(total);
    out.extend_from_slice(&(total as u32).to_be_bytes());
    out.extend_from_slice(&(h.len() as u32).to_be_bytes());
    out.extend_from_slice(&crc32fast::hash(&out).to_be_bytes());
    out.extend_from_slice(&h);
    out.extend_from_slice(payload.as_bytes());
    out.extend_from_slice(&crc32fast::hash(&out).to_be_bytes());
    Event {
        bytes: Bytes::from(out),
        token,
    }
}

/// The streamed answer's frames.
pub(super) fn answer_frames(call: &Call, a: &Answer) -> Vec<Event> {
    let mut frames = vec![frame("messageStart", &json!({"role": "assistant"}), false)];
    match &a.reply {
        Reply::Text { pieces, .. } => {
            for p in pieces {
                let d = json!({"contentBlockIndex": 0, "delta": {"text": p}});
                frames.push(frame("contentBlockDelta", &d, true));
            }
        }
        Reply::ToolCall { name, arguments } => {
            let start = json!({"contentBlockIndex": 0, "start": {"toolUse": tool_use(call, name)}});
            frames.push(frame("contentBlockStart", &start, false));
            let pieces = Encoding::for_model(&call.model).pieces(&arguments.to_string());
            for p in pieces {
                let d = json!({"contentBlockIndex": 0, "delta": {"toolUse": {"input": p}}});
                frames.push(frame("contentBlockDelta", &d, true));
            }
        }
    }
    frames.push(frame(
        "contentBlockStop",
        &json!({"contentBlockIndex": 0}),
        false,
    ));
    let stop = json!({"stopReason": stop_reason(&a.reply)});
    frames.push(frame("messageStop", &stop, false));
    let meta = json!({"usage": usage(a), "metrics": {"latencyMs": 0}});
    frames.push(frame("metadata", &meta, false));
    frames
}

/// Bedrock's error: the body and its `x-amzn-ErrorType`.
pub(super) fn error_json(f: &Failure) -> (Value, &'static str) {
    let kind = match f.status {
        StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN => "AccessDeniedException",
        StatusCode::NOT_FOUND => "ResourceNotFoundException",
        StatusCode::TOO_MANY_REQUESTS => "ThrottlingException",
        StatusCode::SERVICE_UNAVAILABLE => "ServiceUnavailableException",
        s if s.is_server_error() => "InternalServerException",
        _ => "ValidationException",
    };
    (json!({ "message": f.message }), kind)
}
