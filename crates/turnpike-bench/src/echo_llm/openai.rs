//! The OpenAI front of `echo --llm`: chat completions, legacy completions, embeddings and
//! models, answers and stream chunks shaped as OpenAI's (`chat.completion`,
//! `chat.completion.chunk` ... `data: [DONE]`, a final usage chunk when
//! `stream_options.include_usage`), errors as `{"error": {message, type, param, code}}`.

use http::StatusCode;
use serde_json::{json, Value};
use turnpike_tokens::{ChatCount, Encoding};

use super::answer::{Answer, Call, Finish, Last, Prompt, Reply, Tool, ToolChoice};
use super::paced::Event;
use super::parse::{self, Failure, MAX_MESSAGES, MAX_TOOLS};

/// A parsed chat or completions request.
pub(super) struct Request {
    pub prompt: Prompt,
    pub stream: bool,
    pub include_usage: bool,
}

/// `POST /v1/chat/completions`.
pub(super) fn parse_chat(body: &Value, model: String) -> Result<Request, Failure> {
    let messages = parse::array(body, "messages", MAX_MESSAGES)?;
    if messages.is_empty() {
        return Err(Failure::bad("messages", "must not be empty"));
    }
    check_n(body)?;
    let enc = Encoding::for_model(&model);
    let mut count = ChatCount::new(enc);
    let mut last = Last::Text(String::new());
    for m in messages {
        let role = m.get("role").and_then(Value::as_str).unwrap_or("user");
        let mut images = 0;
        let text = parse::text_of(m.get("content"), &mut images)?;
        count.message(role);
        count.text(&text);
        (0..images).for_each(|_| count.image());
        for call in m
            .get("tool_calls")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let f = call.get("function");
            count.text(
                f.and_then(|f| f.get("name"))
                    .and_then(Value::as_str)
                    .unwrap_or(""),
            );
            count.text(
                f.and_then(|f| f.get("arguments"))
                    .and_then(Value::as_str)
                    .unwrap_or(""),
            );
        }
        last = match role {
            "tool" | "function" => Last::ToolResult(text),
            _ => Last::Text(text),
        };
    }
    let tools = tools(body, &mut count)?;
    Ok(Request {
        prompt: Prompt {
            model,
            last,
            tools,
            tool_choice: tool_choice(body),
            max_tokens: parse::positive(body, &["max_completion_tokens", "max_tokens"])?,
            prompt_tokens: count.total(),
        },
        stream: parse::flag(body, "stream")?,
        include_usage: include_usage(body),
    })
}

/// `POST /v1/completions`: one prompt, a string or an array of one string.
pub(super) fn parse_completion(body: &Value, model: String) -> Result<Request, Failure> {
    let prompt = match body.get("prompt") {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(items)) if items.len() == 1 && items[0].is_string() => {
            items[0].as_str().unwrap_or_default().to_owned()
        }
        None | Some(Value::Null) => return Err(Failure::bad("prompt", "Field required")),
        Some(_) => {
            return Err(Failure::bad(
                "prompt",
                "the echo provider takes one string prompt",
            ))
        }
    };
    check_n(body)?;
    let prompt_tokens = Encoding::for_model(&model).count(&prompt);
    Ok(Request {
        prompt: Prompt {
            model,
            last: Last::Text(prompt),
            tools: Vec::new(),
            tool_choice: ToolChoice::Auto,
            max_tokens: parse::positive(body, &["max_tokens"])?,
            prompt_tokens,
        },
        stream: parse::flag(body, "stream")?,
        include_usage: include_usage(body),
    })
}

fn check_n(body: &Value) -> Result<(), Failure> {
    match parse::positive(body, &["n"])? {
        None | Some(1) => Ok(()),
        Some(_) => Err(Failure::bad(
            "n",
            "the echo provider answers one choice (n = 1)",
        )),
    }
}

/// `"none"`, `"auto"`, `"required"` or `{"type": "function", "function": {"name": ..}}`.
fn tool_choice(body: &Value) -> ToolChoice {
    match body.get("tool_choice") {
        Some(Value::String(s)) if s == "none" => ToolChoice::None,
        Some(v) => match v.pointer("/function/name").and_then(Value::as_str) {
            Some(name) => ToolChoice::Named(name.to_owned()),
            None => ToolChoice::Auto,
        },
        None => ToolChoice::Auto,
    }
}

fn include_usage(body: &Value) -> bool {
    body.pointer("/stream_options/include_usage")
        .and_then(Value::as_bool)
        .unwrap_or(false)
}

/// The offered function tools, each counted as its JSON text.
fn tools(body: &Value, count: &mut ChatCount) -> Result<Vec<Tool>, Failure> {
    let mut out = Vec::new();
    for t in parse::optional_array(body, "tools", MAX_TOOLS)? {
        let Some(f) = t.get("function") else { continue };
        let name = parse::string(f, "name")
            .map_err(|_| Failure::bad("tools", "function.name: Field required"))?;
        count.text(&f.to_string());
        let schema = f.get("parameters").cloned().unwrap_or(Value::Null);
        out.push(Tool { name, schema });
    }
    Ok(out)
}

fn finish_reason(reply: &Reply) -> &'static str {
    match reply {
        Reply::Text {
            finish: Finish::Stop,
            ..
        } => "stop",
        Reply::Text {
            finish: Finish::Length,
            ..
        } => "length",
        Reply::ToolCall { .. } => "tool_calls",
    }
}

fn usage(call: &Call, a: &Answer) -> Value {
    let cached = call.cached.min(a.prompt_tokens);
    json!({
        "prompt_tokens": a.prompt_tokens,
        "completion_tokens": a.completion_tokens,
        "total_tokens": a.prompt_tokens + a.completion_tokens,
        "prompt_tokens_details": {"cached_tokens": cached, "audio_tokens": 0},
        "completion_tokens_details": {
            "reasoning_tokens": 0, "audio_tokens": 0,
            "accepted_prediction_tokens": 0, "rejected_prediction_tokens": 0
        }
    })
}

fn tool_call(call: &Call, name: &str, arguments: &Value) -> Value {
    json!({
        "id": format!("call_{}", call.id),
        "type": "function",
        "function": {"name": name, "arguments": arguments.to_string()}
    })
}

/// The non-streamed chat answer.
pub(super) fn chat_json(call: &Call, a: &Answer) -> Value {
    let message = match &a.reply {
        Reply::Text { .. } => json!({"role": "assistant", "content": a.text(), "refusal": null}),
        Reply::ToolCall { name, arguments } => json!({
            "role": "assistant", "content": null, "refusal": null,
            "tool_calls": [tool_call(call, name, arguments)]
        }),
    };
    let mut out = json!({
        "id": format!("chatcmpl-{}", call.id),
        "object": "chat.completion",
        "created": call.created,
        "model": call.model,
        "system_fingerprint": "fp_turnpike_echo",
        "choices": [{"index": 0, "message": message, "logprobs": null,
                     "finish_reason": finish_reason(&a.reply)}],
    });
    if !call.omit_usage {
        out["usage"] = usage(call, a);
    }
    out
}

/// The streamed chat answer: a role chunk, one chunk per token, a finish chunk, the
/// usage chunk if asked for, `[DONE]`.
pub(super) fn chat_events(call: &Call, a: &Answer, include_usage: bool) -> Vec<Event> {
    let with_usage = include_usage && !call.omit_usage;
    let chunk = |delta: Value, finish: Option<&str>| {
        let mut c = json!({
            "id": format!("chatcmpl-{}", call.id),
            "object": "chat.completion.chunk",
            "created": call.created,
            "model": call.model,
            "system_fingerprint": "fp_turnpike_echo",
            "choices": [{"index": 0, "delta": delta, "logprobs": null, "finish_reason": finish}],
        });
        if with_usage {
            c["usage"] = Value::Null;
        }
        c
    };
    let mut events = Vec::new();
    match &a.reply {
        Reply::Text { pieces, .. } => {
            let first = json!({"role": "assistant", "content": "", "refusal": null});
            events.push(Event::sse(None, &chunk(first, None).to_string(), false));
            for p in pieces {
                events.push(Event::sse(
                    None,
                    &chunk(json!({"content": p}), None).to_string(),
                    true,
                ));
            }
        }
        Reply::ToolCall { name, arguments } => {
            let mut head = tool_call(call, name, arguments);
            head["index"] = json!(0);
            head["function"]["arguments"] = json!("");
            let first = json!({"role": "assistant", "content": null, "tool_calls": [head]});
            events.push(Event::sse(None, &chunk(first, None).to_string(), true));
            let enc = Encoding::for_model(&call.model);
            for p in enc.pieces(&arguments.to_string()) {
                let d = json!({"tool_calls": [{"index": 0, "function": {"arguments": p}}]});
                events.push(Event::sse(None, &chunk(d, None).to_string(), true));
            }
        }
    }
    let last = chunk(json!({}), Some(finish_reason(&a.reply)));
    events.push(Event::sse(None, &last.to_string(), false));
    if with_usage {
        let mut u = chunk(json!({}), None);
        u["choices"] = json!([]);
        u["usage"] = usage(call, a);
        events.push(Event::sse(None, &u.to_string(), false));
    }
    events.push(Event::sse(None, "[DONE]", false));
    events
}

fn completion(call: &Call, text: &str, finish: Option<&str>) -> Value {
    json!({
        "id": format!("cmpl-{}", call.id),
        "object": "text_completion",
        "created": call.created,
        "model": call.model,
        "system_fingerprint": "fp_turnpike_echo",
        "choices": [{"text": text, "index": 0, "logprobs": null, "finish_reason": finish}],
    })
}

/// The non-streamed completions answer.
pub(super) fn completion_json(call: &Call, a: &Answer) -> Value {
    let mut out = completion(call, &a.text(), Some(finish_reason(&a.reply)));
    if !call.omit_usage {
        out["usage"] = usage(call, a);
    }
    out
}

/// The streamed completions answer.
pub(super) fn completion_events(call: &Call, a: &Answer, include_usage: bool) -> Vec<Event> {
    let mut events = Vec::new();
    if let Reply::Text { pieces, .. } = &a.reply {
        for p in pieces {
            events.push(Event::sse(
                None,
                &completion(call, p, None).to_string(),
                true,
            ));
        }
    }
    let last = completion(call, "", Some(finish_reason(&a.reply)));
    events.push(Event::sse(None, &last.to_string(), false));
    if include_usage && !call.omit_usage {
        let mut u = completion(call, "", None);
        u["choices"] = json!([]);
        u["usage"] = usage(call, a);
        events.push(Event::sse(None, &u.to_string(), false));
    }
    events.push(Event::sse(None, "[DONE]", false));
    events
}

/// The models `GET /v1/models` lists (any other name is answered too).
pub(super) const MODELS: &[&str] = &[
    "gpt-4o-mini",
    "gpt-4o",
    "gpt-4.1",
    "gpt-4.1-mini",
    "o3-mini",
    "gpt-3.5-turbo",
    "text-embedding-3-small",
    "text-embedding-3-large",
    "claude-sonnet-4-5",
    "claude-haiku-4-5",
    "claude-opus-4-1",
    "error-429",
    "error-500",
    "error-503",
];

pub(super) fn model_json(id: &str) -> Value {
    json!({"id": id, "object": "model", "created": 1_700_000_000, "owned_by": "turnpike-echo"})
}

pub(super) fn models_json() -> Value {
    json!({"object": "list", "data": MODELS.iter().map(|m| model_json(m)).collect::<Vec<_>>()})
}

/// OpenAI's error body for a failure.
pub(super) fn error_json(f: &Failure) -> Value {
    let (ty, code) = match f.status {
        StatusCode::UNAUTHORIZED => ("invalid_request_error", Some("invalid_api_key")),
        StatusCode::FORBIDDEN => ("permission_denied", None),
        StatusCode::NOT_FOUND => ("invalid_request_error", Some("not_found")),
        StatusCode::PAYLOAD_TOO_LARGE => ("invalid_request_error", Some("request_too_large")),
        StatusCode::TOO_MANY_REQUESTS => ("requests", Some("rate_limit_exceeded")),
        s if s.is_server_error() => ("server_error", None),
        _ => ("invalid_request_error", None),
    };
    json!({"error": {"message": f.message, "type": ty, "param": f.param, "code": code}})
}
