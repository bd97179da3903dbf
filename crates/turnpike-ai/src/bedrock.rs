//! AWS Bedrock's Converse API (`kind: bedrock`, `/model/{id}/converse` and
//! `/converse-stream`, SigV4-signed by `sigv4.rs`): a Messages-shaped request (see
//! `foreign.rs`) as Converse's (`system`, `messages` of `text`/`image`/`toolUse`/
//! `toolResult` blocks, `inferenceConfig`, `toolConfig`), its answer as OpenAI's, and
//! its stream's event-stream frames (`messageStart`, `contentBlockStart`/`Delta`/
//! `Stop`, `messageStop`, `metadata` with the usage; exceptions) as OpenAI chunks.

use serde_json::{json, Map, Value};

use crate::chunks::{tool_call, Chunks, Reply};
use crate::eventstream::Frame;
use crate::gemini::{blocks, text};
use crate::usage::Counts;

fn image(source: &Value) -> Result<Value, String> {
    if source.get("type").and_then(Value::as_str) != Some("base64") {
        return Err("Bedrock takes images as base64 data (data: URLs), not by URL".into());
    }
    let media = source
        .get("media_type")
        .and_then(Value::as_str)
        .unwrap_or("");
    let format = media.strip_prefix("image/").unwrap_or(media);
    Ok(json!({"image": {"format": format, "source": {"bytes": source.get("data")}}}))
}

fn block(b: &Value) -> Result<Option<Value>, String> {
    Ok(Some(match b.get("type").and_then(Value::as_str) {
        Some("text") => json!({"text": b.get("text")}),
        Some("image") => image(b.get("source").unwrap_or(&Value::Null))?,
        Some("tool_use") => json!({"toolUse": {"toolUseId": b.get("id"), "name": b.get("name"),
                                  "input": b.get("input").cloned().unwrap_or_else(|| json!({}))}}),
        Some("tool_result") => {
            let mut r = json!({"toolUseId": b.get("tool_use_id"),
                               "content": [{"text": text(b.get("content"))}]});
            if b.get("is_error") == Some(&Value::Bool(true)) {
                r["status"] = Value::from("error");
            }
            json!({ "toolResult": r })
        }
        _ => return Ok(None),
    }))
}

fn tool_config(body: &Map<String, Value>) -> Option<Value> {
    let tools: Vec<Value> = body
        .get("tools")?
        .as_array()?
        .iter()
        .filter_map(|t| {
            let mut spec = json!({"name": t.get("name")?,
                "inputSchema": {"json": t.get("input_schema").cloned().unwrap_or_else(|| json!({"type": "object"}))}});
            if let Some(d) = t.get("description") {
                spec["description"] = d.clone();
            }
            Some(json!({ "toolSpec": spec }))
        })
        .collect();
    if tools.is_empty() {
        return None;
    }
    let mut config = json!({ "tools": tools });
    let choice = body.get("tool_choice");
    match choice.and_then(|c| c.get("type")).and_then(Value::as_str) {
        Some("any") => config["toolChoice"] = json!({"any": {}}),
        Some("tool") => {
            config["toolChoice"] = json!({"tool": {"name": choice.and_then(|c| c.get("name"))}})
        }
        // Converse has no "none": the tools stay declared (a conversation that used
        // them must), and the model is left to choose.
        _ => {}
    }
    Some(config)
}

/// A Messages-shaped request as a Converse body; `Err` for what Converse cannot take.
pub fn request(body: &Map<String, Value>) -> Result<Value, String> {
    let mut messages = Vec::new();
    for m in body
        .get("messages")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let role = if m["role"] == "assistant" {
            "assistant"
        } else {
            "user"
        };
        let mut content = Vec::new();
        for b in blocks(m.get("content")) {
            content.extend(block(&b)?);
        }
        if !content.is_empty() {
            messages.push(json!({"role": role, "content": content}));
        }
    }
    let mut out = json!({ "messages": messages });
    let system = text(body.get("system"));
    if !system.is_empty() {
        out["system"] = json!([{ "text": system }]);
    }
    let mut inference = Map::new();
    for (from, to) in [
        ("max_tokens", "maxTokens"),
        ("temperature", "temperature"),
        ("top_p", "topP"),
        ("stop_sequences", "stopSequences"),
    ] {
        if let Some(v) = body.get(from).filter(|v| !v.is_null()) {
            inference.insert(to.into(), v.clone());
        }
    }
    if !inference.is_empty() {
        out["inferenceConfig"] = Value::Object(inference);
    }
    if let Some(t) = tool_config(body) {
        out["toolConfig"] = t;
    }
    Ok(out)
}

fn finish(stop: Option<&str>) -> &'static str {
    match stop {
        Some("max_tokens") => "length",
        Some("tool_use") => "tool_calls",
        Some("guardrail_intervened" | "content_filtered") => "content_filter",
        _ => "stop",
    }
}

/// Converse's `usage` (cache reads and writes are prompt tokens too).
fn counts(u: &Value) -> Option<Counts> {
    let n = |k: &str| u.get(k).and_then(Value::as_u64).unwrap_or(0);
    u.get("inputTokens")?;
    Some(Counts {
        prompt: n("inputTokens")
            .saturating_add(n("cacheReadInputTokens"))
            .saturating_add(n("cacheWriteInputTokens")),
        completion: n("outputTokens"),
        cached: n("cacheReadInputTokens"),
    })
}

/// A Converse answer as a `chat.completion` (Converse names neither the answer nor
/// the model: `model` is the routed one).
pub fn response(v: &Value, model: &str) -> Option<(Value, Counts)> {
    let content = v.pointer("/output/message/content")?.as_array()?;
    let mut text = String::new();
    let mut calls = Vec::new();
    for b in content {
        if let Some(t) = b.get("text").and_then(Value::as_str) {
            text.push_str(t);
        }
        if let Some(u) = b.get("toolUse") {
            calls.push(tool_call(&u["toolUseId"], &u["name"], &u["input"]));
        }
    }
    Some(
        Reply {
            id: Value::from(format!("chatcmpl-{:x}", crate::chunks::now())),
            model: Value::from(model),
            text,
            calls,
            finish: finish(v.get("stopReason").and_then(Value::as_str)),
            counts: v.get("usage").and_then(counts).unwrap_or_default(),
        }
        .completion(),
    )
}

/// A streamed answer, frame by frame.
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

    /// One frame; `Err` with the message of an exception frame.
    pub fn frame(&mut self, f: &Frame, out: &mut Vec<Value>) -> Result<(), String> {
        let v: Value = serde_json::from_slice(&f.payload).unwrap_or(Value::Null);
        if f.message_type.as_deref() == Some("exception") {
            let kind = f.exception_type.as_deref().unwrap_or("exception");
            let message = v.get("message").and_then(Value::as_str).unwrap_or("");
            return Err(format!("{kind}: {message}"));
        }
        match f.event_type.as_deref() {
            Some("contentBlockStart") => {
                if let Some(u) = v.pointer("/start/toolUse") {
                    let index = self.chunks.tools;
                    self.chunks.tools += 1;
                    let mut call = tool_call(&u["toolUseId"], &u["name"], &json!({}));
                    call["index"] = Value::from(index);
                    call["function"]["arguments"] = Value::from("");
                    self.chunks.delta(json!({"tool_calls": [call]}), None, out);
                }
            }
            Some("contentBlockDelta") => self.delta(&v["delta"], out),
            Some("messageStop") => {
                self.reason = Some(finish(v.get("stopReason").and_then(Value::as_str)));
            }
            Some("metadata") => {
                if let Some(c) = v.get("usage").and_then(counts) {
                    self.chunks.counts = Some(c);
                }
            }
            _ => {}
        }
        Ok(())
    }

    fn delta(&mut self, d: &Value, out: &mut Vec<Value>) {
        if let Some(t) = d.get("text").and_then(Value::as_str) {
            self.chunks.delta(json!({ "content": t }), None, out);
        } else if let Some(input) = d.pointer("/toolUse/input").and_then(Value::as_str) {
            let index = self.chunks.tools.saturating_sub(1);
            let call = json!({"index": index, "function": {"arguments": input}});
            self.chunks.delta(json!({"tool_calls": [call]}), None, out);
        }
    }

    pub fn finish(&mut self, out: &mut Vec<Value>) {
        self.chunks.finish(self.reason, out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::eventstream::{encode, Frames};

    #[test]
    fn a_messages_request_becomes_a_converse_request() {
        let Value::Object(body) = json!({
            "max_tokens": 20, "system": [{"type": "text", "text": "sys"}], "stop_sequences": ["x"],
            "messages": [
                {"role": "user", "content": [{"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AA"}}, {"type": "text", "text": "hi"}]},
                {"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "f", "input": {"a": 1}}]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": "ok", "is_error": true}]}
            ],
            "tools": [{"name": "f", "description": "d", "input_schema": {"type": "object"}}],
            "tool_choice": {"type": "any"}
        }) else {
            panic!("an object")
        };
        let c = request(&body).expect("translated");
        assert_eq!(c["system"][0]["text"], "sys");
        assert_eq!(c["messages"][0]["content"][0]["image"]["format"], "png");
        assert_eq!(c["messages"][1]["content"][0]["toolUse"]["input"]["a"], 1);
        assert_eq!(
            c["messages"][2]["content"][0]["toolResult"]["status"],
            "error"
        );
        assert_eq!(c["inferenceConfig"]["maxTokens"], 20);
        assert_eq!(
            c["toolConfig"]["tools"][0]["toolSpec"]["inputSchema"]["json"]["type"],
            "object"
        );
        assert!(c["toolConfig"]["toolChoice"]["any"].is_object());
        let Value::Object(url) = json!({"messages": [{"role": "user", "content": [
            {"type": "image", "source": {"type": "url", "url": "http://x/a.png"}}]}]})
        else {
            panic!("an object")
        };
        assert!(request(&url).is_err());
    }

    #[test]
    fn a_stream_of_frames_becomes_chunks() {
        let ev = |kind: &str, p: Value| {
            encode(
                &[(":message-type", "event"), (":event-type", kind)],
                p.to_string().as_bytes(),
            )
        };
        let mut bytes = ev("messageStart", json!({"role": "assistant"}));
        bytes.extend(ev(
            "contentBlockStart",
            json!({"contentBlockIndex": 0, "start": {"toolUse": {"toolUseId": "tu", "name": "f"}}}),
        ));
        bytes.extend(ev(
            "contentBlockDelta",
            json!({"contentBlockIndex": 0, "delta": {"toolUse": {"input": "{\"a\":"}}}),
        ));
        bytes.extend(ev("messageStop", json!({"stopReason": "tool_use"})));
        bytes.extend(ev(
            "metadata",
            json!({"usage": {"inputTokens": 5, "outputTokens": 2, "totalTokens": 7}}),
        ));
        let mut frames = Frames::default();
        frames.push(&bytes);
        let mut s = Stream::new("m");
        let mut out = Vec::new();
        while let Some(f) = frames.next_frame().expect("valid") {
            s.frame(&f, &mut out).expect("an event");
        }
        s.finish(&mut out);
        assert_eq!(out[0]["choices"][0]["delta"]["tool_calls"][0]["id"], "tu");
        assert_eq!(
            out[1]["choices"][0]["delta"]["tool_calls"][0]["function"]["arguments"],
            "{\"a\":"
        );
        assert_eq!(out[2]["choices"][0]["finish_reason"], "tool_calls");
        assert_eq!(out[3]["usage"]["prompt_tokens"], 5);
        let ex = encode(
            &[
                (":message-type", "exception"),
                (":exception-type", "throttlingException"),
            ],
            br#"{"message":"slow down"}"#,
        );
        let mut frames = Frames::default();
        frames.push(&ex);
        let f = frames.next_frame().expect("valid").expect("whole");
        assert_eq!(
            s.frame(&f, &mut out).expect_err("exception"),
            "throttlingException: slow down"
        );
    }
}
