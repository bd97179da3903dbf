//! Google Gemini (`kind: gemini`, `models/{model}:generateContent` and
//! `:streamGenerateContent?alt=sse`): a Messages-shaped request (see `foreign.rs`) as
//! `contents` of `parts` (`user`/`model` turns, `systemInstruction`, images as
//! `inlineData` or `fileData`, `functionCall`/`functionResponse` parts,
//! `functionDeclarations`, `toolConfig`, `generationConfig`), and Gemini's answers,
//! whole or streamed, as OpenAI's (`usageMetadata` read as the usage).

use std::collections::HashMap;

use serde_json::{json, Map, Value};

use crate::chunks::{tool_call, Chunks, Reply};
use crate::usage::Counts;

/// Schema keywords Gemini's function declarations refuse.
const UNSUPPORTED_SCHEMA: [&str; 3] = ["$schema", "additionalProperties", "strict"];

/// Anthropic content (a string or blocks) as blocks.
pub(crate) fn blocks(content: Option<&Value>) -> Vec<Value> {
    match content {
        Some(Value::String(s)) => vec![json!({"type": "text", "text": s})],
        Some(Value::Array(b)) => b.clone(),
        _ => Vec::new(),
    }
}

/// The text of Anthropic content (a tool result's, a system prompt's).
pub(crate) fn text(content: Option<&Value>) -> String {
    blocks(content)
        .iter()
        .filter_map(|b| b.get("text").and_then(Value::as_str))
        .collect::<Vec<_>>()
        .join("\n")
}

/// A URL's image type by its extension (Gemini wants one for `fileData`).
fn mime_of(url: &str) -> &'static str {
    let lower = url.rsplit('.').next().unwrap_or("").to_ascii_lowercase();
    match lower.as_str() {
        "png" => "image/png",
        "gif" => "image/gif",
        "webp" => "image/webp",
        _ => "image/jpeg",
    }
}

fn part(b: &Value, names: &HashMap<String, String>) -> Option<Value> {
    Some(match b.get("type")?.as_str()? {
        "text" => json!({"text": b.get("text")?}),
        "image" => {
            let s = b.get("source")?;
            match s.get("type").and_then(Value::as_str) {
                Some("base64") => {
                    json!({"inlineData": {"mimeType": s.get("media_type")?, "data": s.get("data")?}})
                }
                _ => {
                    let url = s.get("url")?.as_str()?;
                    json!({"fileData": {"mimeType": mime_of(url), "fileUri": url}})
                }
            }
        }
        "tool_use" => {
            json!({"functionCall": {"id": b.get("id")?, "name": b.get("name")?, "args": b.get("input").cloned().unwrap_or_else(|| json!({}))}})
        }
        "tool_result" => {
            let id = b.get("tool_use_id")?.as_str()?;
            let name = names.get(id).map_or(id, String::as_str);
            json!({"functionResponse": {"id": id, "name": name,
                   "response": {"content": text(b.get("content"))}}})
        }
        _ => return None,
    })
}

/// A JSON schema without the keywords Gemini refuses (the body's nesting is capped).
fn clean(schema: &Value) -> Value {
    match schema {
        Value::Object(o) => Value::Object(
            o.iter()
                .filter(|(k, _)| !UNSUPPORTED_SCHEMA.contains(&k.as_str()))
                .map(|(k, v)| (k.clone(), clean(v)))
                .collect(),
        ),
        Value::Array(a) => Value::Array(a.iter().map(clean).collect()),
        v => v.clone(),
    }
}

fn tools(body: &Map<String, Value>, out: &mut Map<String, Value>) {
    let Some(list) = body.get("tools").and_then(Value::as_array) else {
        return;
    };
    let decls: Vec<Value> = list
        .iter()
        .filter_map(|t| {
            let mut d = json!({"name": t.get("name")?});
            if let Some(desc) = t.get("description") {
                d["description"] = desc.clone();
            }
            if let Some(s) = t.get("input_schema") {
                d["parameters"] = clean(s);
            }
            Some(d)
        })
        .collect();
    if decls.is_empty() {
        return;
    }
    out.insert("tools".into(), json!([{"functionDeclarations": decls}]));
    let choice = body.get("tool_choice");
    let mode = match choice.and_then(|c| c.get("type")).and_then(Value::as_str) {
        Some("any") => json!({"mode": "ANY"}),
        Some("tool") => {
            json!({"mode": "ANY", "allowedFunctionNames": [choice.and_then(|c| c.get("name"))]})
        }
        Some("none") => json!({"mode": "NONE"}),
        _ => return,
    };
    out.insert("toolConfig".into(), json!({"functionCallingConfig": mode}));
}

fn generation_config(body: &Map<String, Value>) -> Map<String, Value> {
    let mut g = Map::new();
    for (from, to) in [
        ("max_tokens", "maxOutputTokens"),
        ("temperature", "temperature"),
        ("top_p", "topP"),
        ("top_k", "topK"),
        ("stop_sequences", "stopSequences"),
    ] {
        if let Some(v) = body.get(from).filter(|v| !v.is_null()) {
            g.insert(to.into(), v.clone());
        }
    }
    g
}

/// A Messages-shaped request as a `generateContent` body.
pub fn request(body: &Map<String, Value>) -> Value {
    let empty = Vec::new();
    let messages = body
        .get("messages")
        .and_then(Value::as_array)
        .unwrap_or(&empty);
    let names: HashMap<String, String> = messages
        .iter()
        .flat_map(|m| blocks(m.get("content")))
        .filter(|b| b["type"] == "tool_use")
        .filter_map(|b| Some((b["id"].as_str()?.to_owned(), b["name"].as_str()?.to_owned())))
        .collect();
    let mut contents: Vec<Value> = Vec::new();
    for m in messages {
        let role = if m["role"] == "assistant" {
            "model"
        } else {
            "user"
        };
        let mut parts: Vec<Value> = blocks(m.get("content"))
            .iter()
            .filter_map(|b| part(b, &names))
            .collect();
        match contents.last_mut() {
            Some(last) if last["role"] == role => {
                if let Some(Value::Array(p)) = last.get_mut("parts") {
                    p.append(&mut parts);
                }
            }
            _ if parts.is_empty() => {}
            _ => contents.push(json!({"role": role, "parts": parts})),
        }
    }
    let mut out = Map::new();
    out.insert("contents".into(), Value::Array(contents));
    let system = text(body.get("system"));
    if !system.is_empty() {
        out.insert(
            "systemInstruction".into(),
            json!({"parts": [{"text": system}]}),
        );
    }
    tools(body, &mut out);
    let g = generation_config(body);
    if !g.is_empty() {
        out.insert("generationConfig".into(), Value::Object(g));
    }
    Value::Object(out)
}

/// Gemini's finish reason as OpenAI's.
fn finish(reason: Option<&str>, called: bool) -> &'static str {
    match reason {
        Some("MAX_TOKENS") => "length",
        Some(
            "SAFETY" | "RECITATION" | "BLOCKLIST" | "PROHIBITED_CONTENT" | "SPII" | "IMAGE_SAFETY",
        ) => "content_filter",
        _ if called => "tool_calls",
        _ => "stop",
    }
}

/// `usageMetadata` (thinking tokens are billed as output).
fn counts(u: &Value) -> Option<Counts> {
    let n = |k: &str| u.get(k).and_then(Value::as_u64).unwrap_or(0);
    u.get("promptTokenCount")?;
    Some(Counts {
        prompt: n("promptTokenCount"),
        completion: n("candidatesTokenCount").saturating_add(n("thoughtsTokenCount")),
        cached: n("cachedContentTokenCount"),
    })
}

fn parts(v: &Value) -> &[Value] {
    v.pointer("/candidates/0/content/parts")
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

fn call_id(p: &Value, n: u64) -> Value {
    p.get("id")
        .filter(|i| i.is_string())
        .cloned()
        .unwrap_or_else(|| Value::from(format!("call_{n}")))
}

/// A `GenerateContentResponse` as a `chat.completion`.
pub fn response(v: &Value, model: &str) -> Option<(Value, Counts)> {
    let candidate = v.get("candidates")?.get(0)?;
    let mut text = String::new();
    let mut calls = Vec::new();
    for p in parts(v) {
        if let Some(t) = p.get("text").and_then(Value::as_str) {
            if p.get("thought") != Some(&Value::Bool(true)) {
                text.push_str(t);
            }
        }
        if let Some(f) = p.get("functionCall") {
            let id = call_id(f, calls.len() as u64);
            calls.push(tool_call(&id, &f["name"], &f["args"]));
        }
    }
    let reason = candidate.get("finishReason").and_then(Value::as_str);
    Some(
        Reply {
            id: v.get("responseId").cloned().unwrap_or(Value::Null),
            model: v
                .get("modelVersion")
                .cloned()
                .unwrap_or_else(|| Value::from(model)),
            finish: finish(reason, !calls.is_empty()),
            text,
            calls,
            counts: v.get("usageMetadata").and_then(counts).unwrap_or_default(),
        }
        .completion(),
    )
}

/// A streamed answer, event by event (each a partial `GenerateContentResponse`).
pub struct Stream {
    pub(crate) chunks: Chunks,
    reason: Option<&'static str>,
}

impl Stream {
    pub fn new(model: &str) -> Stream {
        Stream {
            chunks: Chunks::new(model),
            reason: None,
        }
    }

    pub fn event(&mut self, v: &Value, out: &mut Vec<Value>) {
        if let Some(c) = v.get("usageMetadata").and_then(counts) {
            self.chunks.counts = Some(c);
        }
        for p in parts(v) {
            if let Some(t) = p.get("text").and_then(Value::as_str) {
                if p.get("thought") != Some(&Value::Bool(true)) && !t.is_empty() {
                    self.chunks.delta(json!({"content": t}), None, out);
                }
            }
            if let Some(f) = p.get("functionCall") {
                let index = self.chunks.tools;
                self.chunks.tools += 1;
                let mut call = tool_call(&call_id(f, index), &f["name"], &f["args"]);
                call["index"] = Value::from(index);
                self.chunks.delta(json!({"tool_calls": [call]}), None, out);
            }
        }
        if let Some(r) = v
            .pointer("/candidates/0/finishReason")
            .and_then(Value::as_str)
        {
            self.reason = Some(finish(Some(r), self.chunks.tools > 0));
        }
    }

    pub fn finish(&mut self, out: &mut Vec<Value>) {
        self.chunks.finish(self.reason, out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_messages_request_becomes_contents_with_tools() {
        let body = json!({
            "model": "m", "max_tokens": 50, "system": "be brief", "temperature": 0,
            "messages": [
                {"role": "user", "content": [{"type": "text", "text": "weather?"},
                    {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AAA"}}]},
                {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "get_weather", "input": {"city": "Oslo"}}]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "rain"}]}
            ],
            "tools": [{"name": "get_weather", "input_schema": {"type": "object", "additionalProperties": false,
                        "properties": {"city": {"type": "string"}}}}],
            "tool_choice": {"type": "tool", "name": "get_weather"}
        });
        let Value::Object(body) = body else { panic!() };
        let g = request(&body);
        assert_eq!(g["systemInstruction"]["parts"][0]["text"], "be brief");
        assert_eq!(
            g["contents"][0]["parts"][1]["inlineData"]["mimeType"],
            "image/png"
        );
        assert_eq!(g["contents"][1]["role"], "model");
        assert_eq!(
            g["contents"][1]["parts"][0]["functionCall"]["args"]["city"],
            "Oslo"
        );
        let fr = &g["contents"][2]["parts"][0]["functionResponse"];
        assert_eq!(fr["name"], "get_weather");
        assert_eq!(fr["response"]["content"], "rain");
        let decl = &g["tools"][0]["functionDeclarations"][0];
        assert!(decl["parameters"].get("additionalProperties").is_none());
        assert_eq!(g["toolConfig"]["functionCallingConfig"]["mode"], "ANY");
        assert_eq!(g["generationConfig"]["maxOutputTokens"], 50);
    }

    #[test]
    fn answers_whole_and_streamed_become_openais() {
        let v = json!({"candidates": [{"content": {"role": "model", "parts": [
                {"functionCall": {"name": "f", "args": {"a": 1}}}]}, "finishReason": "STOP"}],
            "usageMetadata": {"promptTokenCount": 7, "candidatesTokenCount": 3, "totalTokenCount": 10},
            "modelVersion": "gemini-x"});
        let (o, c) = response(&v, "m").expect("translated");
        assert_eq!(o["choices"][0]["finish_reason"], "tool_calls");
        assert_eq!(
            o["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"],
            "{\"a\":1}"
        );
        assert_eq!((c.prompt, c.completion), (7, 3));
        let mut s = Stream::new("m");
        let mut out = Vec::new();
        s.event(
            &json!({"candidates": [{"content": {"parts": [{"text": "Hel"}]}}]}),
            &mut out,
        );
        s.event(&json!({"candidates": [{"content": {"parts": [{"text": "lo"}]}, "finishReason": "MAX_TOKENS"}],
                        "usageMetadata": {"promptTokenCount": 2, "candidatesTokenCount": 2}}), &mut out);
        s.finish(&mut out);
        assert_eq!(out[0]["choices"][0]["delta"]["role"], "assistant");
        assert_eq!(out[1]["choices"][0]["delta"]["content"], "lo");
        assert_eq!(out[2]["choices"][0]["finish_reason"], "length");
        assert_eq!(out[3]["usage"]["total_tokens"], 4);
    }
}
