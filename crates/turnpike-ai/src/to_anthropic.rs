//! The OpenAI front over an Anthropic provider: a chat completion request becomes a
//! Messages request ([`request`]), the message that answers it a `chat.completion`
//! ([`response`]), and a streamed message's events `chat.completion.chunk`s
//! ([`StreamToOpenai`]). System and developer messages become `system`, tool calls
//! `tool_use` blocks, tool results `tool_result` blocks, image parts image blocks.

use serde_json::{json, Map, Value};

use crate::usage::{self, Counts};

/// The text of an OpenAI content (a string, or parts of which the text ones count).
fn text_of(content: Option<&Value>) -> String {
    match content {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// An image part's URL as an Anthropic image source (`data:` URLs inline, others by URL).
fn image_source(url: &str) -> Value {
    if let Some(rest) = url.strip_prefix("data:") {
        if let Some((media_type, data)) = rest.split_once(";base64,") {
            return json!({"type": "base64", "media_type": media_type, "data": data});
        }
    }
    json!({"type": "url", "url": url})
}

/// An OpenAI message's content as Anthropic blocks.
fn blocks(content: Option<&Value>) -> Vec<Value> {
    match content {
        Some(Value::String(s)) if !s.is_empty() => vec![json!({"type": "text", "text": s})],
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(|p| match p.get("type").and_then(Value::as_str) {
                Some("text") => Some(json!({"type": "text", "text": p.get("text")?})),
                Some("image_url") => {
                    let url = p.get("image_url")?.get("url")?.as_str()?;
                    Some(json!({"type": "image", "source": image_source(url)}))
                }
                _ => None,
            })
            .collect(),
        _ => Vec::new(),
    }
}

/// An assistant message's tool calls as `tool_use` blocks (arguments parsed back into
/// the JSON object Anthropic wants; unparsable arguments become `{}`).
fn tool_uses(calls: &[Value]) -> impl Iterator<Item = Value> + '_ {
    calls.iter().filter_map(|c| {
        let f = c.get("function")?;
        let args = f.get("arguments").and_then(Value::as_str).unwrap_or("{}");
        let input: Value = serde_json::from_str(args).unwrap_or_else(|_| json!({}));
        Some(
            json!({"type": "tool_use", "id": c.get("id")?, "name": f.get("name")?, "input": input}),
        )
    })
}

/// Appends blocks to the conversation, merging into the last message when it has the
/// same role (Anthropic wants user and assistant turns to alternate).
fn push(messages: &mut Vec<Value>, role: &str, mut content: Vec<Value>) {
    if content.is_empty() {
        return;
    }
    if let Some(last) = messages.last_mut() {
        if last["role"] == role {
            if let Some(Value::Array(c)) = last.get_mut("content") {
                c.append(&mut content);
                return;
            }
        }
    }
    messages.push(json!({"role": role, "content": content}));
}

fn tools(list: &[Value]) -> Vec<Value> {
    list.iter()
        .filter_map(|t| {
            let f = t.get("function")?;
            let mut tool = json!({
                "name": f.get("name")?,
                "input_schema": f.get("parameters").cloned().unwrap_or_else(|| json!({"type": "object"})),
            });
            if let Some(d) = f.get("description") {
                tool["description"] = d.clone();
            }
            Some(tool)
        })
        .collect()
}

fn tool_choice(c: &Value) -> Option<Value> {
    match c {
        Value::String(s) => match s.as_str() {
            "auto" => Some(json!({"type": "auto"})),
            "required" => Some(json!({"type": "any"})),
            "none" => Some(json!({"type": "none"})),
            _ => None,
        },
        Value::Object(o) => {
            let name = o.get("function")?.get("name")?;
            Some(json!({"type": "tool", "name": name}))
        }
        _ => None,
    }
}

/// A chat completion request as a Messages request for `model`.
pub fn request(body: &Map<String, Value>, model: &str, default_max: u64) -> Value {
    let mut system = Vec::new();
    let mut messages = Vec::new();
    let empty = Vec::new();
    let list = body
        .get("messages")
        .and_then(Value::as_array)
        .unwrap_or(&empty);
    for m in list {
        let content = m.get("content");
        match m.get("role").and_then(Value::as_str) {
            Some("system" | "developer") => system.push(text_of(content)),
            Some("assistant") => {
                let mut b = blocks(content);
                if let Some(Value::Array(calls)) = m.get("tool_calls") {
                    b.extend(tool_uses(calls));
                }
                push(&mut messages, "assistant", b);
            }
            Some("tool") => {
                let result = json!({
                    "type": "tool_result",
                    "tool_use_id": m.get("tool_call_id").cloned().unwrap_or(Value::Null),
                    "content": text_of(content),
                });
                push(&mut messages, "user", vec![result]);
            }
            _ => push(&mut messages, "user", blocks(content)),
        }
    }
    let max = body
        .get("max_completion_tokens")
        .or_else(|| body.get("max_tokens"))
        .and_then(Value::as_u64)
        .unwrap_or(default_max);
    let mut out = json!({"model": model, "messages": messages, "max_tokens": max});
    if !system.is_empty() {
        out["system"] = Value::String(system.join("\n"));
    }
    for k in ["temperature", "top_p", "stream"] {
        if let Some(v) = body.get(k) {
            out[k] = v.clone();
        }
    }
    match body.get("stop") {
        Some(Value::String(s)) => out["stop_sequences"] = json!([s]),
        Some(Value::Array(a)) => out["stop_sequences"] = Value::Array(a.clone()),
        _ => {}
    }
    if let Some(Value::Array(t)) = body.get("tools") {
        out["tools"] = Value::Array(tools(t));
    }
    if let Some(c) = body.get("tool_choice").and_then(tool_choice) {
        if c["type"] == "none" {
            if let Some(o) = out.as_object_mut() {
                o.remove("tools");
            }
        } else {
            out["tool_choice"] = c;
        }
    }
    if let Some(user) = body.get("user") {
        out["metadata"] = json!({"user_id": user});
    }
    out
}

/// Anthropic's stop reason as OpenAI's finish reason.
pub fn finish_reason(stop: Option<&str>) -> Value {
    Value::from(match stop {
        Some("max_tokens") => "length",
        Some("tool_use") => "tool_calls",
        Some("refusal") => "content_filter",
        None => return Value::Null,
        _ => "stop",
    })
}

fn created() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// An Anthropic message as a `chat.completion`, with its token counts.
pub fn response(msg: &Value) -> Option<(Value, Counts)> {
    let content = msg.get("content")?.as_array()?;
    let text: String = content
        .iter()
        .filter(|b| b["type"] == "text")
        .filter_map(|b| b.get("text").and_then(Value::as_str))
        .collect();
    let calls: Vec<Value> = content
        .iter()
        .filter(|b| b["type"] == "tool_use")
        .map(|b| {
            let args = serde_json::to_string(&b["input"]).unwrap_or_else(|_| "{}".into());
            json!({"id": b["id"], "type": "function", "function": {"name": b["name"], "arguments": args}})
        })
        .collect();
    let counts = usage::from_anthropic(msg.get("usage").unwrap_or(&Value::Null));
    let text = if text.is_empty() && !calls.is_empty() {
        Value::Null
    } else {
        Value::String(text)
    };
    let mut message = json!({"role": "assistant", "content": text});
    if !calls.is_empty() {
        message["tool_calls"] = Value::Array(calls);
    }
    let stop = msg.get("stop_reason").and_then(Value::as_str);
    let out = json!({
        "id": msg.get("id").cloned().unwrap_or(Value::Null),
        "object": "chat.completion",
        "created": created(),
        "model": msg.get("model").cloned().unwrap_or(Value::Null),
        "choices": [{"index": 0, "message": message, "finish_reason": finish_reason(stop), "logprobs": null}],
        "usage": usage::openai_json(counts),
    });
    Some((out, counts))
}

/// A streamed Anthropic message, event by event, as OpenAI chunks.
#[derive(Default)]
pub struct StreamToOpenai {
    id: Value,
    model: Value,
    created: u64,
    /// Tool calls started so far (OpenAI numbers them from 0).
    tools: u64,
    counts: Counts,
    reported: bool,
    finished: bool,
    /// The client asked for the usage chunk (`stream_options.include_usage`).
    usage_chunk: bool,
}

impl StreamToOpenai {
    /// `usage_chunk`: end with OpenAI's usage-only chunk (the client asked for it).
    pub fn new(usage_chunk: bool) -> Self {
        StreamToOpenai {
            usage_chunk,
            ..StreamToOpenai::default()
        }
    }

    fn chunk(&self, delta: Value, finish: Value, out: &mut Vec<u8>) {
        let c = json!({
            "id": self.id, "object": "chat.completion.chunk", "created": self.created,
            "model": self.model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish, "logprobs": null}],
        });
        data(&c, out);
    }

    /// One event's `data` (its `type` names it).
    pub fn event(&mut self, e: &Value, out: &mut Vec<u8>) {
        match e.get("type").and_then(Value::as_str) {
            Some("message_start") => {
                let m = &e["message"];
                self.id = m["id"].clone();
                self.model = m["model"].clone();
                self.created = created();
                self.counts = usage::from_anthropic(&m["usage"]);
                self.chunk(
                    json!({"role": "assistant", "content": ""}),
                    Value::Null,
                    out,
                );
            }
            Some("content_block_start") if e["content_block"]["type"] == "tool_use" => {
                let b = &e["content_block"];
                let call = json!({"index": self.tools, "id": b["id"], "type": "function",
                                  "function": {"name": b["name"], "arguments": ""}});
                self.tools += 1;
                self.chunk(json!({"tool_calls": [call]}), Value::Null, out);
            }
            Some("content_block_delta") => self.delta(&e["delta"], out),
            Some("message_delta") => {
                let u = &e["usage"];
                self.counts.completion = u["output_tokens"]
                    .as_u64()
                    .unwrap_or(self.counts.completion);
                if u.get("input_tokens").is_some() {
                    let later = usage::from_anthropic(u);
                    self.counts.prompt = later.prompt.max(self.counts.prompt);
                }
                let stop = e["delta"]["stop_reason"].as_str();
                self.chunk(json!({}), finish_reason(stop), out);
            }
            Some("message_stop") => self.finish(out),
            Some("error") => data(&json!({"error": e["error"]}), out),
            _ => {}
        }
    }

    fn delta(&mut self, d: &Value, out: &mut Vec<u8>) {
        match d.get("type").and_then(Value::as_str) {
            Some("text_delta") => self.chunk(json!({"content": d["text"]}), Value::Null, out),
            Some("input_json_delta") => {
                let call = json!({"index": self.tools.saturating_sub(1),
                                  "function": {"arguments": d["partial_json"]}});
                self.chunk(json!({"tool_calls": [call]}), Value::Null, out);
            }
            _ => {}
        }
    }

    /// The usage chunk (when asked for) and `[DONE]`, once.
    pub fn finish(&mut self, out: &mut Vec<u8>) {
        if std::mem::replace(&mut self.finished, true) {
            return;
        }
        if self.usage_chunk {
            let c = json!({
                "id": self.id, "object": "chat.completion.chunk", "created": self.created,
                "model": self.model, "choices": [], "usage": usage::openai_json(self.counts),
            });
            data(&c, out);
        }
        self.reported = true;
        out.extend_from_slice(b"data: [DONE]\n\n");
    }

    /// The counts, once the message said them.
    pub fn counts(&self) -> Option<Counts> {
        (self.reported || self.counts.completion > 0).then_some(self.counts)
    }
}

/// One `data:` event.
pub(crate) fn data(v: &Value, out: &mut Vec<u8>) {
    out.extend_from_slice(b"data: ");
    if serde_json::to_writer(&mut *out, v).is_err() {
        out.extend_from_slice(b"{}");
    }
    out.extend_from_slice(b"\n\n");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_chat_request_with_tools_images_and_results_becomes_messages() {
        let body = json!({
            "model": "gpt-4o-mini", "max_tokens": 50, "stop": "END", "tool_choice": "required",
            "messages": [
                {"role": "system", "content": "Be brief."},
                {"role": "user", "content": [{"type": "text", "text": "What is here?"},
                    {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBO"}}]},
                {"role": "assistant", "content": null, "tool_calls": [{"id": "call_1", "type": "function",
                    "function": {"name": "weather", "arguments": "{\"city\":\"Paris\"}"}}]},
                {"role": "tool", "tool_call_id": "call_1", "content": "sunny"},
            ],
            "tools": [{"type": "function", "function": {"name": "weather", "description": "w",
                "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}],
        });
        let out = request(body.as_object().expect("object"), "claude-x", 4096);
        assert_eq!(out["model"], "claude-x");
        assert_eq!(out["system"], "Be brief.");
        assert_eq!(out["max_tokens"], 50);
        assert_eq!(out["stop_sequences"], json!(["END"]));
        assert_eq!(out["tool_choice"], json!({"type": "any"}));
        assert_eq!(
            out["tools"][0]["input_schema"]["properties"]["city"]["type"],
            "string"
        );
        let m = &out["messages"];
        assert_eq!(
            m[0]["content"][1]["source"],
            json!({"type": "base64", "media_type": "image/png", "data": "iVBO"})
        );
        assert_eq!(
            m[1]["content"][0],
            json!({"type": "tool_use", "id": "call_1", "name": "weather", "input": {"city": "Paris"}})
        );
        assert_eq!(
            m[2]["content"][0],
            json!({"type": "tool_result", "tool_use_id": "call_1", "content": "sunny"})
        );
    }

    #[test]
    fn a_message_becomes_a_chat_completion() {
        // Shape from docs.anthropic.com, "Messages" (tool use example).
        let msg = json!({"id": "msg_01", "type": "message", "role": "assistant", "model": "claude-x",
            "content": [{"type": "text", "text": "Let me check."},
                        {"type": "tool_use", "id": "toolu_1", "name": "weather", "input": {"city": "Paris"}}],
            "stop_reason": "tool_use", "usage": {"input_tokens": 20, "output_tokens": 7, "cache_read_input_tokens": 5}});
        let (out, counts) = response(&msg).expect("a message");
        assert_eq!(
            counts,
            Counts {
                prompt: 25,
                completion: 7,
                cached: 5
            }
        );
        let c = &out["choices"][0];
        assert_eq!(c["finish_reason"], "tool_calls");
        assert_eq!(c["message"]["content"], "Let me check.");
        assert_eq!(
            c["message"]["tool_calls"][0]["function"]["arguments"],
            "{\"city\":\"Paris\"}"
        );
        assert_eq!(out["usage"]["total_tokens"], 32);
    }

    #[test]
    fn streamed_events_become_chunks_with_usage_last() {
        let events = [
            json!({"type": "message_start", "message": {"id": "msg_1", "model": "claude-x", "usage": {"input_tokens": 10, "output_tokens": 1}}}),
            json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Hi"}}),
            json!({"type": "content_block_start", "index": 1, "content_block": {"type": "tool_use", "id": "toolu_1", "name": "f", "input": {}}}),
            json!({"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": "{\"a\":"}}),
            json!({"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 4}}),
            json!({"type": "message_stop"}),
        ];
        let mut s = StreamToOpenai::new(true);
        let mut out = Vec::new();
        for e in &events {
            s.event(e, &mut out);
        }
        let text = String::from_utf8(out).expect("utf-8");
        let chunks: Vec<&str> = text.split("\n\n").filter(|c| !c.is_empty()).collect();
        assert_eq!(chunks.len(), 7, "{text}");
        assert!(chunks[1].contains("\"content\":\"Hi\""), "{}", chunks[1]);
        assert!(chunks[2].contains("\"name\":\"f\""), "{}", chunks[2]);
        assert!(chunks[3].contains("{\\\"a\\\":"), "{}", chunks[3]);
        assert!(
            chunks[4].contains("\"finish_reason\":\"tool_calls\""),
            "{}",
            chunks[4]
        );
        assert!(chunks[5].contains("\"total_tokens\":14"), "{}", chunks[5]);
        assert_eq!(chunks[6], "data: [DONE]");
        assert_eq!(
            s.counts(),
            Some(Counts {
                prompt: 10,
                completion: 4,
                cached: 0
            })
        );
    }
}
