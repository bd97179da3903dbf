//! OpenAI's answer shapes that the translations from Gemini and Bedrock build (see
//! `foreign.rs`): [`Reply`] for a whole `chat.completion`, [`Chunks`] for a stream's
//! `chat.completion.chunk`s.

use serde_json::{json, Value};

use crate::usage::{self, Counts};

/// A whole answer read from a provider, before it is shaped as a `chat.completion`.
pub(crate) struct Reply {
    pub(crate) id: Value,
    pub(crate) model: Value,
    pub(crate) text: String,
    /// OpenAI `tool_calls` entries.
    pub(crate) calls: Vec<Value>,
    pub(crate) finish: &'static str,
    pub(crate) counts: Counts,
}

impl Reply {
    pub(crate) fn completion(self) -> (Value, Counts) {
        let content = if self.text.is_empty() && !self.calls.is_empty() {
            Value::Null
        } else {
            Value::String(self.text)
        };
        let mut message = json!({"role": "assistant", "content": content});
        if !self.calls.is_empty() {
            message["tool_calls"] = Value::Array(self.calls);
        }
        let out = json!({
            "id": self.id, "object": "chat.completion", "created": now(), "model": self.model,
            "choices": [{"index": 0, "message": message, "finish_reason": self.finish, "logprobs": null}],
            "usage": usage::openai_json(self.counts),
        });
        (out, self.counts)
    }
}

pub(crate) fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// An OpenAI tool call entry; `arguments` is the JSON text OpenAI sends.
pub(crate) fn tool_call(id: &Value, name: &Value, input: &Value) -> Value {
    let arguments = serde_json::to_string(input).unwrap_or_else(|_| "{}".into());
    json!({"id": id, "type": "function", "function": {"name": name, "arguments": arguments}})
}

/// The chunks of one streamed answer, as OpenAI writes them.
pub(crate) struct Chunks {
    id: String,
    model: Value,
    started: bool,
    pub(crate) counts: Option<Counts>,
    /// Tool calls begun so far (OpenAI indexes them from 0).
    pub(crate) tools: u64,
    finished: bool,
}

impl Chunks {
    pub(crate) fn new(model: &str) -> Chunks {
        Chunks {
            id: format!("chatcmpl-{:x}", now()),
            model: Value::from(model),
            started: false,
            counts: None,
            tools: 0,
            finished: false,
        }
    }

    /// A chunk with `delta` (the first also says the role) and, last, a finish reason.
    pub(crate) fn delta(&mut self, mut delta: Value, finish: Option<&str>, out: &mut Vec<Value>) {
        if !std::mem::replace(&mut self.started, true) {
            delta["role"] = Value::from("assistant");
        }
        out.push(json!({"id": self.id, "object": "chat.completion.chunk", "created": now(),
            "model": self.model, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}));
    }

    /// The closing chunk once: the finish reason if no event gave it, then the usage
    /// chunk (`choices: []`) when the provider said it.
    pub(crate) fn finish(&mut self, reason: Option<&str>, out: &mut Vec<Value>) {
        if std::mem::replace(&mut self.finished, true) {
            return;
        }
        self.delta(json!({}), Some(reason.unwrap_or("stop")), out);
        if let Some(c) = self.counts {
            out.push(
                json!({"id": self.id, "object": "chat.completion.chunk", "created": now(),
                "model": self.model, "choices": [], "usage": usage::openai_json(c)}),
            );
        }
    }
}
