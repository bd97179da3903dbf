//! The Gemini front of `echo --llm`: `POST .../models/{model}:generateContent` answered
//! as a `GenerateContentResponse`, `:streamGenerateContent?alt=sse` as its SSE chunks
//! (one per token, the last with `finishReason` and the whole `usageMetadata`);
//! `contents` of `parts` (text, `inlineData`/`fileData` images, `functionCall`,
//! `functionResponse`), `systemInstruction`, `functionDeclarations`, `toolConfig`,
//! `generationConfig.maxOutputTokens`; errors as Google's `{"error": {code, message,
//! status}}`.

use http::StatusCode;
use serde_json::{json, Value};
use turnpike_tokens::{ChatCount, Encoding};

use super::answer::{Answer, Call, Finish, Last, Prompt, Reply, Tool, ToolChoice};
use super::paced::Event;
use super::parse::{self, Failure, MAX_MESSAGES, MAX_PARTS, MAX_TOOLS};

/// One content's parts counted; what the last of them says.
fn parts(content: &Value, count: &mut ChatCount) -> Result<Last, Failure> {
    let parts = parse::array(content, "parts", MAX_PARTS)?;
    let mut text = String::new();
    let mut result = None;
    for p in parts {
        if let Some(t) = p.get("text").and_then(Value::as_str) {
            text.push_str(t);
        } else if p.get("inlineData").is_some() || p.get("fileData").is_some() {
            count.image();
        } else if let Some(f) = p.get("functionCall") {
            count.text(f.get("name").and_then(Value::as_str).unwrap_or(""));
            count.text(&f.get("args").map(Value::to_string).unwrap_or_default());
        } else if let Some(r) = p.get("functionResponse") {
            let response = r.get("response").cloned().unwrap_or(Value::Null);
            let content = match response.get("content") {
                Some(Value::String(s)) => s.clone(),
                _ => response.to_string(),
            };
            count.text(&content);
            result = Some(content);
        }
    }
    count.text(&text);
    Ok(result.map_or(Last::Text(text), Last::ToolResult))
}

fn tools(body: &Value, count: &mut ChatCount) -> Result<Vec<Tool>, Failure> {
    let mut out = Vec::new();
    for t in parse::optional_array(body, "tools", MAX_TOOLS)? {
        for d in parse::optional_array(t, "functionDeclarations", MAX_TOOLS)? {
            let name = parse::string(d, "name")
                .map_err(|_| Failure::bad("tools", "functionDeclarations[].name: required"))?;
            count.text(&d.to_string());
            let schema = d
                .get("parameters")
                .or_else(|| d.get("parametersJsonSchema"))
                .cloned()
                .unwrap_or(Value::Null);
            out.push(Tool { name, schema });
        }
    }
    Ok(out)
}

fn tool_choice(body: &Value) -> ToolChoice {
    let config = body.pointer("/toolConfig/functionCallingConfig");
    let mode = config.and_then(|c| c.get("mode")).and_then(Value::as_str);
    let named = config
        .and_then(|c| c.pointer("/allowedFunctionNames/0"))
        .and_then(Value::as_str);
    match (mode, named) {
        (Some("NONE"), _) => ToolChoice::None,
        (_, Some(n)) => ToolChoice::Named(n.to_owned()),
        _ => ToolChoice::Auto,
    }
}

/// A `generateContent` body.
pub(super) fn parse(body: &Value, model: String) -> Result<Prompt, Failure> {
    let contents = parse::array(body, "contents", MAX_MESSAGES)?;
    if contents.is_empty() {
        return Err(Failure::bad("contents", "must not be empty"));
    }
    let mut count = ChatCount::new(Encoding::for_model(&model));
    if let Some(system) = body.get("systemInstruction") {
        count.message("system");
        parts(system, &mut count)?;
    }
    let mut last = Last::Text(String::new());
    for c in contents {
        count.message(c.get("role").and_then(Value::as_str).unwrap_or("user"));
        last = parts(c, &mut count)?;
    }
    let tools = tools(body, &mut count)?;
    let max_tokens = match body.get("generationConfig") {
        Some(g) => parse::positive(g, &["maxOutputTokens"])?,
        None => None,
    };
    Ok(Prompt {
        model,
        last,
        tools,
        tool_choice: tool_choice(body),
        max_tokens,
        prompt_tokens: count.total(),
    })
}

fn finish_reason(reply: &Reply) -> &'static str {
    match reply {
        Reply::Text {
            finish: Finish::Length,
            ..
        } => "MAX_TOKENS",
        _ => "STOP",
    }
}

fn usage(a: &Answer, completion: u64) -> Value {
    json!({"promptTokenCount": a.prompt_tokens, "candidatesTokenCount": completion,
           "totalTokenCount": a.prompt_tokens + completion})
}

fn response(call: &Call, parts: Value, finish: Option<&str>, usage: Value) -> Value {
    let mut candidate = json!({"content": {"role": "model", "parts": parts}, "index": 0});
    if let Some(f) = finish {
        candidate["finishReason"] = Value::from(f);
    }
    json!({"candidates": [candidate], "usageMetadata": usage, "modelVersion": call.model,
           "responseId": call.id})
}

fn call_part(name: &str, arguments: &Value) -> Value {
    json!({"functionCall": {"name": name, "args": arguments}})
}

/// The non-streamed answer.
pub(super) fn answer_json(call: &Call, a: &Answer) -> Value {
    let parts = match &a.reply {
        Reply::Text { .. } => json!([{ "text": a.text() }]),
        Reply::ToolCall { name, arguments } => json!([call_part(name, arguments)]),
    };
    let u = usage(a, a.completion_tokens);
    response(call, parts, Some(finish_reason(&a.reply)), u)
}

/// The streamed answer: a chunk a token, the last with the finish reason and usage.
pub(super) fn answer_events(call: &Call, a: &Answer) -> Vec<Event> {
    let chunk = |v: &Value| Event::sse(None, &v.to_string(), true);
    let mut events = Vec::new();
    match &a.reply {
        Reply::Text { pieces, .. } => {
            for p in pieces {
                events.push(chunk(&response(
                    call,
                    json!([{ "text": p }]),
                    None,
                    usage(a, 0),
                )));
            }
            let end = response(
                call,
                json!([{"text": ""}]),
                Some(finish_reason(&a.reply)),
                usage(a, a.completion_tokens),
            );
            events.push(Event::sse(None, &end.to_string(), false));
        }
        Reply::ToolCall { name, arguments } => {
            let u = usage(a, a.completion_tokens);
            let parts = json!([call_part(name, arguments)]);
            events.push(chunk(&response(call, parts, Some("STOP"), u)));
        }
    }
    events
}

/// Google's error body for a failure.
pub(super) fn error_json(f: &Failure) -> Value {
    let status = match f.status {
        StatusCode::UNAUTHORIZED => "UNAUTHENTICATED",
        StatusCode::FORBIDDEN => "PERMISSION_DENIED",
        StatusCode::NOT_FOUND => "NOT_FOUND",
        StatusCode::TOO_MANY_REQUESTS => "RESOURCE_EXHAUSTED",
        StatusCode::SERVICE_UNAVAILABLE => "UNAVAILABLE",
        s if s.is_server_error() => "INTERNAL",
        _ => "INVALID_ARGUMENT",
    };
    json!({"error": {"code": f.status.as_u16(), "message": f.message, "status": status}})
}
