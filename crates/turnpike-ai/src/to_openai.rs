//! The Anthropic front over an OpenAI-compatible provider: a Messages request becomes a
//! chat completion request ([`request`]), the completion that answers it a message
//! ([`response`]), and streamed `chat.completion.chunk`s Anthropic's events
//! (`message_start`, `content_block_start`/`_delta`/`_stop`, `message_delta`,
//! `message_stop`: [`StreamToAnthropic`]). `system` becomes the first message,
//! `tool_use` blocks tool calls, `tool_result` blocks `tool` messages, image blocks
//! image parts.

use serde_json::{json, Map, Value};

use crate::usage::{self, Counts};

/// A block list's (or a string's) text.
fn text_of(v: Option<&Value>) -> String {
    match v {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(blocks)) => blocks
            .iter()
            .filter_map(|b| b.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

fn image_part(source: &Value) -> Option<Value> {
    let url = match source.get("type").and_then(Value::as_str) {
        Some("base64") => format!(
            "data:{};base64,{}",
            source.get("media_type")?.as_str()?,
            source.get("data")?.as_str()?
        ),
        Some("url") => source.get("url")?.as_str()?.to_owned(),
        _ => return None,
    };
    Some(json!({"type": "image_url", "image_url": {"url": url}}))
}

/// One Anthropic message as OpenAI messages (a user turn's tool results come first, as
/// `tool` messages).
fn convert(m: &Value, out: &mut Vec<Value>) {
    let role = m.get("role").and_then(Value::as_str).unwrap_or("user");
    let blocks = match m.get("content") {
        Some(Value::String(s)) => {
            out.push(json!({"role": role, "content": s}));
            return;
        }
        Some(Value::Array(b)) => b,
        _ => return,
    };
    let mut parts = Vec::new();
    let mut calls = Vec::new();
    for b in blocks {
        match b.get("type").and_then(Value::as_str) {
            Some("text") => parts.push(json!({"type": "text", "text": b["text"]})),
            Some("image") => parts.extend(image_part(&b["source"])),
            Some("tool_use") => {
                let args = serde_json::to_string(&b["input"]).unwrap_or_else(|_| "{}".into());
                calls.push(json!({"id": b["id"], "type": "function",
                                  "function": {"name": b["name"], "arguments": args}}));
            }
            Some("tool_result") => out.push(json!({
                "role": "tool", "tool_call_id": b["tool_use_id"], "content": text_of(b.get("content")),
            })),
            _ => {}
        }
    }
    if role == "assistant" {
        let text: String = parts.iter().filter_map(|p| p["text"].as_str()).collect();
        let text = if text.is_empty() {
            Value::Null
        } else {
            Value::String(text)
        };
        let mut msg = json!({"role": "assistant", "content": text});
        if !calls.is_empty() {
            msg["tool_calls"] = Value::Array(calls);
        }
        out.push(msg);
    } else if !parts.is_empty() {
        out.push(json!({"role": role, "content": parts}));
    }
}

fn tool_choice(c: &Value) -> Option<Value> {
    match c.get("type").and_then(Value::as_str)? {
        "auto" => Some(json!("auto")),
        "any" => Some(json!("required")),
        "none" => Some(json!("none")),
        "tool" => Some(json!({"type": "function", "function": {"name": c.get("name")?}})),
        _ => None,
    }
}

/// A Messages request as a chat completion request for `model` (a stream asks for its
/// usage in the last chunk).
pub fn request(body: &Map<String, Value>, model: &str, default_max: u64) -> Value {
    let mut messages = Vec::new();
    let system = text_of(body.get("system"));
    if !system.is_empty() {
        messages.push(json!({"role": "system", "content": system}));
    }
    for m in body
        .get("messages")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        convert(m, &mut messages);
    }
    let max = body
        .get("max_tokens")
        .and_then(Value::as_u64)
        .unwrap_or(default_max);
    let mut out = json!({"model": model, "messages": messages, "max_tokens": max});
    for k in ["temperature", "top_p"] {
        if let Some(v) = body.get(k) {
            out[k] = v.clone();
        }
    }
    if body.get("stream").and_then(Value::as_bool) == Some(true) {
        out["stream"] = json!(true);
        out["stream_options"] = json!({"include_usage": true});
    }
    if let Some(Value::Array(s)) = body.get("stop_sequences") {
        out["stop"] = Value::Array(s.clone());
    }
    if let Some(Value::Array(tools)) = body.get("tools") {
        let list: Vec<Value> = tools
            .iter()
            .map(|t| {
                let mut f = json!({"name": t["name"], "parameters": t.get("input_schema").cloned().unwrap_or_else(|| json!({"type": "object"}))});
                if let Some(d) = t.get("description") {
                    f["description"] = d.clone();
                }
                json!({"type": "function", "function": f})
            })
            .collect();
        out["tools"] = Value::Array(list);
    }
    if let Some(c) = body.get("tool_choice").and_then(tool_choice) {
        out["tool_choice"] = c;
    }
    if let Some(user) = body.get("metadata").and_then(|m| m.get("user_id")) {
        out["user"] = user.clone();
    }
    out
}

/// OpenAI's finish reason as Anthropic's stop reason.
pub fn stop_reason(finish: Option<&str>) -> &'static str {
    match finish {
        Some("length") => "max_tokens",
        Some("tool_calls" | "function_call") => "tool_use",
        Some("content_filter") => "refusal",
        _ => "end_turn",
    }
}

/// A `chat.completion` as an Anthropic message, with its token counts.
pub fn response(c: &Value) -> Option<(Value, Counts)> {
    let choice = c.get("choices")?.get(0)?;
    let msg = choice.get("message")?;
    let mut content = Vec::new();
    if let Some(t) = msg
        .get("content")
        .and_then(Value::as_str)
        .filter(|t| !t.is_empty())
    {
        content.push(json!({"type": "text", "text": t}));
    }
    for call in msg
        .get("tool_calls")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let f = &call["function"];
        let args = f["arguments"].as_str().unwrap_or("{}");
        let input: Value = serde_json::from_str(args).unwrap_or_else(|_| json!({}));
        content
            .push(json!({"type": "tool_use", "id": call["id"], "name": f["name"], "input": input}));
    }
    let counts = c
        .get("usage")
        .and_then(usage::from_openai)
        .unwrap_or_default();
    let out = json!({
        "id": c.get("id").cloned().unwrap_or(Value::Null),
        "type": "message", "role": "assistant",
        "model": c.get("model").cloned().unwrap_or(Value::Null),
        "content": content,
        "stop_reason": stop_reason(choice.get("finish_reason").and_then(Value::as_str)),
        "stop_sequence": null,
        "usage": usage::anthropic_json(counts),
    });
    Some((out, counts))
}

/// The block being streamed.
#[derive(Clone, Copy, PartialEq)]
enum Open {
    None,
    Text,
    /// A tool call: OpenAI's index for it.
    Tool(u64),
}

/// Streamed chunks, one by one, as Anthropic's events.
pub struct StreamToAnthropic {
    started: bool,
    open: Open,
    /// Blocks started so far (Anthropic numbers them from 0).
    blocks: u64,
    stop: &'static str,
    counts: Option<Counts>,
    finished: bool,
}

impl Default for StreamToAnthropic {
    fn default() -> Self {
        StreamToAnthropic {
            started: false,
            open: Open::None,
            blocks: 0,
            stop: "end_turn",
            counts: None,
            finished: false,
        }
    }
}

fn event(name: &str, data: &Value, out: &mut Vec<u8>) {
    out.extend_from_slice(b"event: ");
    out.extend_from_slice(name.as_bytes());
    out.extend_from_slice(b"\n");
    crate::to_anthropic::data(data, out);
}

impl StreamToAnthropic {
    /// One chunk (a `data:` event's JSON).
    pub fn chunk(&mut self, c: &Value, out: &mut Vec<u8>) {
        if let Some(u) = c.get("usage").and_then(usage::from_openai) {
            self.counts = Some(u);
        }
        if !self.started {
            self.started = true;
            let msg = json!({"id": c["id"], "type": "message", "role": "assistant", "model": c["model"],
                "content": [], "stop_reason": null, "stop_sequence": null,
                "usage": {"input_tokens": 0, "output_tokens": 0}});
            event(
                "message_start",
                &json!({"type": "message_start", "message": msg}),
                out,
            );
        }
        let Some(choice) = c.get("choices").and_then(|c| c.get(0)) else {
            return;
        };
        let delta = &choice["delta"];
        if let Some(t) = delta
            .get("content")
            .and_then(Value::as_str)
            .filter(|t| !t.is_empty())
        {
            if self.open != Open::Text {
                self.start(Open::Text, json!({"type": "text", "text": ""}), out);
            }
            let d = json!({"type": "content_block_delta", "index": self.blocks - 1,
                           "delta": {"type": "text_delta", "text": t}});
            event("content_block_delta", &d, out);
        }
        for call in delta
            .get("tool_calls")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            self.tool_call(call, out);
        }
        if let Some(f) = choice.get("finish_reason").and_then(Value::as_str) {
            self.stop = stop_reason(Some(f));
        }
    }

    fn tool_call(&mut self, call: &Value, out: &mut Vec<u8>) {
        let index = call["index"].as_u64().unwrap_or(0);
        if self.open != Open::Tool(index) {
            let block = json!({"type": "tool_use", "id": call["id"], "name": call["function"]["name"], "input": {}});
            self.start(Open::Tool(index), block, out);
        }
        if let Some(args) = call["function"]["arguments"]
            .as_str()
            .filter(|a| !a.is_empty())
        {
            let d = json!({"type": "content_block_delta", "index": self.blocks - 1,
                           "delta": {"type": "input_json_delta", "partial_json": args}});
            event("content_block_delta", &d, out);
        }
    }

    fn start(&mut self, what: Open, block: Value, out: &mut Vec<u8>) {
        self.close(out);
        let s =
            json!({"type": "content_block_start", "index": self.blocks, "content_block": block});
        event("content_block_start", &s, out);
        self.blocks += 1;
        self.open = what;
    }

    fn close(&mut self, out: &mut Vec<u8>) {
        if self.open != Open::None {
            let s = json!({"type": "content_block_stop", "index": self.blocks - 1});
            event("content_block_stop", &s, out);
            self.open = Open::None;
        }
    }

    /// `[DONE]` or the end of the body: the last events, once.
    pub fn finish(&mut self, out: &mut Vec<u8>) {
        if !self.started || std::mem::replace(&mut self.finished, true) {
            return;
        }
        self.close(out);
        let c = self.counts.unwrap_or_default();
        let d = json!({"type": "message_delta", "delta": {"stop_reason": self.stop, "stop_sequence": null},
                       "usage": {"output_tokens": c.completion, "input_tokens": c.prompt - c.cached.min(c.prompt)}});
        event("message_delta", &d, out);
        event("message_stop", &json!({"type": "message_stop"}), out);
    }

    /// The counts the last chunk gave.
    pub fn counts(&self) -> Option<Counts> {
        self.counts
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_messages_request_with_tools_and_results_becomes_a_chat_request() {
        let body = json!({
            "model": "claude-sonnet-4-5", "max_tokens": 64, "system": "Be brief.", "stream": true,
            "tool_choice": {"type": "tool", "name": "weather"},
            "tools": [{"name": "weather", "description": "w", "input_schema": {"type": "object"}}],
            "messages": [
                {"role": "user", "content": [{"type": "text", "text": "Weather?"},
                    {"type": "image", "source": {"type": "base64", "media_type": "image/jpeg", "data": "/9j"}}]},
                {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "weather", "input": {"city": "Oslo"}}]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "snow"}]},
            ],
        });
        let out = request(body.as_object().expect("object"), "gpt-4o-mini", 4096);
        let m = &out["messages"];
        assert_eq!(m[0], json!({"role": "system", "content": "Be brief."}));
        assert_eq!(
            m[1]["content"][1]["image_url"]["url"],
            "data:image/jpeg;base64,/9j"
        );
        assert_eq!(
            m[2]["tool_calls"][0]["function"]["arguments"],
            "{\"city\":\"Oslo\"}"
        );
        assert_eq!(
            m[3],
            json!({"role": "tool", "tool_call_id": "toolu_1", "content": "snow"})
        );
        assert_eq!(out["stream_options"]["include_usage"], true);
        assert_eq!(out["tool_choice"]["function"]["name"], "weather");
        assert_eq!(out["tools"][0]["function"]["parameters"]["type"], "object");
    }

    #[test]
    fn a_completion_becomes_a_message() {
        // Shape from platform.openai.com, "Chat Completions" (function calling).
        let c = json!({"id": "chatcmpl-1", "object": "chat.completion", "model": "gpt-4o-mini",
            "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {"role": "assistant", "content": null,
                "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "weather", "arguments": "{\"city\":\"Oslo\"}"}}]}}],
            "usage": {"prompt_tokens": 12, "completion_tokens": 5, "total_tokens": 17}});
        let (m, counts) = response(&c).expect("a completion");
        assert_eq!(
            counts,
            Counts {
                prompt: 12,
                completion: 5,
                cached: 0
            }
        );
        assert_eq!(m["stop_reason"], "tool_use");
        assert_eq!(
            m["content"][0],
            json!({"type": "tool_use", "id": "call_1", "name": "weather", "input": {"city": "Oslo"}})
        );
        assert_eq!(m["usage"]["input_tokens"], 12);
    }

    #[test]
    fn chunks_become_events_in_order() {
        let chunks = [
            json!({"id": "c1", "model": "m", "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}]}),
            json!({"id": "c1", "model": "m", "choices": [{"index": 0, "delta": {"content": "Hel"}}]}),
            json!({"id": "c1", "model": "m", "choices": [{"index": 0, "delta": {"content": "lo"}}]}),
            json!({"id": "c1", "model": "m", "choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": "call_1", "function": {"name": "f", "arguments": ""}}]}}]}),
            json!({"id": "c1", "model": "m", "choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"arguments": "{}"}}]}}]}),
            json!({"id": "c1", "model": "m", "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}),
            json!({"id": "c1", "model": "m", "choices": [], "usage": {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5}}),
        ];
        let mut s = StreamToAnthropic::default();
        let mut out = Vec::new();
        for c in &chunks {
            s.chunk(c, &mut out);
        }
        s.finish(&mut out);
        let text = String::from_utf8(out).expect("utf-8");
        let names: Vec<&str> = text
            .lines()
            .filter_map(|l| l.strip_prefix("event: "))
            .collect();
        assert_eq!(
            names,
            [
                "message_start",
                "content_block_start",
                "content_block_delta",
                "content_block_delta",
                "content_block_stop",
                "content_block_start",
                "content_block_delta",
                "content_block_stop",
                "message_delta",
                "message_stop"
            ]
        );
        assert!(text.contains("\"stop_reason\":\"tool_use\""), "{text}");
        assert!(text.contains("\"output_tokens\":2"), "{text}");
        assert_eq!(
            s.counts(),
            Some(Counts {
                prompt: 3,
                completion: 2,
                cached: 0
            })
        );
    }
}
