//! A streamed `/responses` call: the chat chunks the rest of the policy makes (relayed
//! from an OpenAI provider, or translated from another's stream) put in the Responses
//! API's events, the ones the openai SDKs parse: `response.created`,
//! `response.in_progress`, `response.output_item.added`, `response.content_part.added`,
//! `response.output_text.delta`/`.done`, `response.function_call_arguments.delta`/
//! `.done`, `response.content_part.done`, `response.output_item.done`, then
//! `response.completed` (or `response.incomplete`) with the whole Response and its
//! usage; an error chunk becomes an `error` event. Each event is `event: TYPE` and its
//! JSON with a `sequence_number`.

use std::sync::Arc;

use bytes::Bytes;
use serde_json::{json, Map, Value};
use turnpike_policy::{GatewayError, ResponseStream};

use crate::responses::{call_item, incomplete, message_item, object, usage};
use crate::sse::Events;
use crate::usage::{from_openai, Counts};

/// A function call being streamed.
struct Call {
    output_index: usize,
    call_id: Value,
    name: Value,
    arguments: String,
}

/// The chat-chunks-to-Responses-events state.
#[derive(Default)]
pub(crate) struct ToResponses {
    echoed: Arc<Map<String, Value>>,
    /// The chunk's id, `created` and `model`, from the first chunk.
    head: Option<(String, Value, Value)>,
    seq: u64,
    /// The message item's output index and text so far, while it is open.
    text: Option<(usize, String)>,
    calls: Vec<Call>,
    /// Output items closed so far, in order.
    output: Vec<Value>,
    finish: Option<String>,
    counts: Option<Counts>,
    finished: bool,
}

impl ToResponses {
    pub(crate) fn new(echoed: Arc<Map<String, Value>>) -> Self {
        ToResponses {
            echoed,
            ..Self::default()
        }
    }

    fn emit(&mut self, kind: &str, mut data: Value, out: &mut Vec<u8>) {
        data["type"] = json!(kind);
        data["sequence_number"] = json!(self.seq);
        self.seq += 1;
        out.extend_from_slice(b"event: ");
        out.extend_from_slice(kind.as_bytes());
        out.extend_from_slice(b"\n");
        crate::to_anthropic::data(&data, out);
    }

    fn id(&self) -> &str {
        self.head.as_ref().map_or("gateway", |h| h.0.as_str())
    }

    fn response(&self, status: &str) -> Value {
        let (created, model) = self
            .head
            .as_ref()
            .map_or((Value::Null, Value::Null), |h| (h.1.clone(), h.2.clone()));
        object(
            self.id(),
            &created,
            &model,
            status,
            self.output.clone(),
            &self.echoed,
        )
    }

    /// One chat chunk (a `data:` event's JSON).
    pub(crate) fn chunk(&mut self, c: &Value, out: &mut Vec<u8>) {
        if let Some(e) = c.get("error") {
            let d = json!({"code": e["code"], "message": e["message"], "param": e["param"]});
            self.emit("error", d, out);
            return;
        }
        if let Some(u) = c.get("usage").and_then(from_openai) {
            self.counts = Some(u);
        }
        if self.head.is_none() {
            let id = c["id"].as_str().unwrap_or("gateway").to_owned();
            self.head = Some((id, c["created"].clone(), c["model"].clone()));
            let r = self.response("in_progress");
            self.emit("response.created", json!({"response": r}), out);
            self.emit("response.in_progress", json!({"response": r}), out);
        }
        let Some(choice) = c.get("choices").and_then(|c| c.get(0)) else {
            return;
        };
        let delta = &choice["delta"];
        if let Some(t) = delta["content"].as_str().filter(|t| !t.is_empty()) {
            self.text_delta(t, out);
        }
        for call in delta["tool_calls"].as_array().into_iter().flatten() {
            self.call_delta(call, out);
        }
        if let Some(f) = choice["finish_reason"].as_str() {
            self.finish = Some(f.to_owned());
        }
    }

    fn text_delta(&mut self, t: &str, out: &mut Vec<u8>) {
        let item_id = format!("msg_{}", self.id());
        let index = match &mut self.text {
            Some((index, text)) => {
                text.push_str(t);
                *index
            }
            None => {
                let index = self.output.len() + self.calls.len();
                let item = json!({"type": "message", "id": item_id, "status": "in_progress", "role": "assistant", "content": []});
                self.emit(
                    "response.output_item.added",
                    json!({"output_index": index, "item": item}),
                    out,
                );
                let part =
                    json!({"type": "output_text", "text": "", "annotations": [], "logprobs": []});
                let d = json!({"item_id": item_id, "output_index": index, "content_index": 0, "part": part});
                self.emit("response.content_part.added", d, out);
                self.text = Some((index, t.to_owned()));
                index
            }
        };
        let d = json!({"item_id": item_id, "output_index": index, "content_index": 0, "delta": t, "logprobs": []});
        self.emit("response.output_text.delta", d, out);
    }

    fn call_delta(&mut self, call: &Value, out: &mut Vec<u8>) {
        let at = call["index"].as_u64().unwrap_or(0) as usize;
        if at >= self.calls.len() {
            // A text before the calls is done once they start (chat sends it first).
            self.close_text(out);
            let output_index = self.output.len() + self.calls.len();
            let f = &call["function"];
            let c = Call {
                output_index,
                call_id: call["id"].clone(),
                name: f["name"].clone(),
                arguments: String::new(),
            };
            let item = call_item(&c.call_id, &c.name, "", "in_progress");
            self.emit(
                "response.output_item.added",
                json!({"output_index": output_index, "item": item}),
                out,
            );
            self.calls.push(c);
        }
        let Some(args) = call["function"]["arguments"]
            .as_str()
            .filter(|a| !a.is_empty())
        else {
            return;
        };
        let last = self.calls.len().saturating_sub(1);
        let Some(c) = self.calls.get_mut(at.min(last)) else {
            return;
        };
        c.arguments.push_str(args);
        let d = json!({"item_id": format!("fc_{}", c.call_id.as_str().unwrap_or_default()),
                       "output_index": c.output_index, "delta": args});
        self.emit("response.function_call_arguments.delta", d, out);
    }

    fn close_text(&mut self, out: &mut Vec<u8>) {
        let Some((index, text)) = self.text.take() else {
            return;
        };
        let item_id = format!("msg_{}", self.id());
        let d = json!({"item_id": item_id, "output_index": index, "content_index": 0, "text": text, "logprobs": []});
        self.emit("response.output_text.done", d, out);
        let part = json!({"type": "output_text", "text": text, "annotations": [], "logprobs": []});
        let d =
            json!({"item_id": item_id, "output_index": index, "content_index": 0, "part": part});
        self.emit("response.content_part.done", d, out);
        let item = message_item(self.id(), &text, "completed");
        self.emit(
            "response.output_item.done",
            json!({"output_index": index, "item": item.clone()}),
            out,
        );
        self.output.push(item);
    }

    /// `[DONE]` or the end of the body: the open items closed and the Response, once.
    pub(crate) fn finish(&mut self, out: &mut Vec<u8>) {
        if self.head.is_none() || std::mem::replace(&mut self.finished, true) {
            return;
        }
        self.close_text(out);
        for c in std::mem::take(&mut self.calls) {
            let item_id = format!("fc_{}", c.call_id.as_str().unwrap_or_default());
            let d = json!({"item_id": item_id, "output_index": c.output_index, "name": c.name, "arguments": c.arguments});
            self.emit("response.function_call_arguments.done", d, out);
            let item = call_item(&c.call_id, &c.name, &c.arguments, "completed");
            self.emit(
                "response.output_item.done",
                json!({"output_index": c.output_index, "item": item.clone()}),
                out,
            );
            self.output.push(item);
        }
        let reason = incomplete(self.finish.as_deref());
        let mut r = self.response(if reason.is_some() {
            "incomplete"
        } else {
            "completed"
        });
        if let Some(reason) = reason {
            r["incomplete_details"] = json!({"reason": reason});
        }
        if let Some(c) = self.counts {
            r["usage"] = usage(c);
        }
        let kind = if reason.is_some() {
            "response.incomplete"
        } else {
            "response.completed"
        };
        self.emit(kind, json!({"response": r}), out);
    }
}

/// The response stream of a `/responses` call: the inner stream's chat chunks, read
/// again as they leave it and put in Responses events.
pub(crate) struct ResponsesStream {
    inner: Box<dyn ResponseStream>,
    events: Events,
    to: ToResponses,
}

impl ResponsesStream {
    pub(crate) fn new(inner: Box<dyn ResponseStream>, echoed: Arc<Map<String, Value>>) -> Self {
        ResponsesStream {
            inner,
            events: Events::default(),
            to: ToResponses::new(echoed),
        }
    }

    fn convert(&mut self, chat: &[u8]) -> Result<Bytes, GatewayError> {
        self.events.push(chat).map_err(|m| {
            let mut e = GatewayError::new(turnpike_policy::ErrorKind::UpstreamProtocol);
            e.detail = Some(m.into());
            e
        })?;
        let mut out = Vec::new();
        while let Some(e) = self.events.next_event() {
            if e.data == "[DONE]" {
                self.to.finish(&mut out);
            } else if let Ok(v) = serde_json::from_str::<Value>(&e.data) {
                self.to.chunk(&v, &mut out);
            }
        }
        Ok(Bytes::from(out))
    }
}

impl ResponseStream for ResponsesStream {
    fn on_chunk(&mut self, chunk: Bytes) -> Result<Bytes, GatewayError> {
        let chat = self.inner.on_chunk(chunk)?;
        self.convert(&chat)
    }

    fn on_end(&mut self) -> Result<Option<Bytes>, GatewayError> {
        let mut chat = self.inner.on_end()?.map(|b| b.to_vec()).unwrap_or_default();
        chat.extend_from_slice(b"\n\n");
        let mut out = self.convert(&chat)?.to_vec();
        self.to.finish(&mut out);
        Ok((!out.is_empty()).then(|| Bytes::from(out)))
    }

    fn settle(&mut self, ext: &mut http::Extensions) {
        self.inner.settle(ext);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_become_responses_events_in_order() {
        let chunks = [
            json!({"id": "c1", "created": 1, "model": "m", "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}]}),
            json!({"id": "c1", "model": "m", "choices": [{"index": 0, "delta": {"content": "Hel"}}]}),
            json!({"id": "c1", "model": "m", "choices": [{"index": 0, "delta": {"content": "lo"}}]}),
            json!({"id": "c1", "model": "m", "choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": "call_1", "function": {"name": "f", "arguments": ""}}]}}]}),
            json!({"id": "c1", "model": "m", "choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"arguments": "{}"}}]}}]}),
            json!({"id": "c1", "model": "m", "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}),
            json!({"id": "c1", "model": "m", "choices": [], "usage": {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5}}),
        ];
        let mut s = ToResponses::default();
        let mut out = Vec::new();
        for c in &chunks {
            s.chunk(c, &mut out);
        }
        s.finish(&mut out);
        s.finish(&mut out);
        let text = String::from_utf8(out).expect("utf-8");
        let names: Vec<&str> = text
            .lines()
            .filter_map(|l| l.strip_prefix("event: "))
            .collect();
        assert_eq!(
            names,
            [
                "response.created",
                "response.in_progress",
                "response.output_item.added",
                "response.content_part.added",
                "response.output_text.delta",
                "response.output_text.delta",
                "response.output_text.done",
                "response.content_part.done",
                "response.output_item.done",
                "response.output_item.added",
                "response.function_call_arguments.delta",
                "response.function_call_arguments.done",
                "response.output_item.done",
                "response.completed",
            ]
        );
        let last = text
            .lines()
            .rev()
            .find_map(|l| l.strip_prefix("data: "))
            .expect("data");
        let done: Value = serde_json::from_str(last).expect("json");
        assert_eq!(done["sequence_number"], 13);
        assert_eq!(done["response"]["output"][0]["content"][0]["text"], "Hello");
        assert_eq!(done["response"]["output"][1]["arguments"], "{}");
        assert_eq!(done["response"]["usage"]["output_tokens"], 2);
    }
}
