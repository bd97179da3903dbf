//! Providers that speak neither front's API (Gemini, Bedrock's Converse) go through one
//! hub on each side, so each needs one translation per direction: requests are
//! translated from Anthropic's Messages shape (an OpenAI request is first made one by
//! `to_anthropic::request`: system apart, turns alternating, tool calls and results as
//! blocks, which both providers' shapes follow), answers to OpenAI's `chat.completion`
//! and its chunks (then made Anthropic's by `to_openai` for the Anthropic front). This
//! module holds the answer side's shared parts: [`Reply`] for whole answers,
//! [`Chunks`] for streamed ones, and [`Foreign`], the stream that cuts a provider's
//! events (SSE for Gemini, AWS event-stream frames for Bedrock) and writes them in the
//! front's shape.

use serde_json::{json, Value};

use crate::eventstream::Frames;
use crate::sse::Events;
use crate::to_openai::StreamToAnthropic;
use crate::usage::{self, Counts};
use crate::{bedrock, gemini};

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

/// What a provider's stream is cut into.
pub(crate) enum Source {
    Gemini(Events, Box<gemini::Stream>),
    Bedrock(Frames, Box<bedrock::Stream>),
}

/// Where the OpenAI chunks go.
pub(crate) enum Sink {
    /// An OpenAI front: `data:` events, the usage chunk only when the client asked.
    Openai {
        usage_chunk: bool,
    },
    Anthropic(Box<StreamToAnthropic>),
}

/// A foreign provider's stream in the front's shape.
pub(crate) struct Foreign {
    pub(crate) source: Source,
    pub(crate) sink: Sink,
    done: bool,
}

impl Foreign {
    pub(crate) fn new(source: Source, sink: Sink) -> Foreign {
        Foreign {
            source,
            sink,
            done: false,
        }
    }

    fn write(&mut self, chunks: &[Value], out: &mut Vec<u8>) {
        for c in chunks {
            match &mut self.sink {
                Sink::Openai { usage_chunk } => {
                    let usage_only = c["choices"].as_array().is_some_and(Vec::is_empty);
                    if *usage_chunk || !usage_only {
                        crate::to_anthropic::data(c, out);
                    }
                }
                Sink::Anthropic(s) => s.chunk(c, out),
            }
        }
    }

    /// A provider's error in the middle of a stream, in the front's event shape.
    fn error(&mut self, message: &str, out: &mut Vec<u8>) {
        match &self.sink {
            Sink::Openai { .. } => crate::to_anthropic::data(
                &json!({"error": {"message": message, "type": "server_error", "param": null, "code": null}}),
                out,
            ),
            Sink::Anthropic(_) => {
                out.extend_from_slice(b"event: error\n");
                crate::to_anthropic::data(
                    &json!({"type": "error", "error": {"type": "api_error", "message": message}}),
                    out,
                );
            }
        }
    }

    /// A chunk of the provider's body; `Err` when it cannot be read as its framing.
    pub(crate) fn push(&mut self, chunk: &[u8], out: &mut Vec<u8>) -> Result<(), String> {
        let mut chunks = Vec::new();
        let mut failed = None;
        match &mut self.source {
            Source::Gemini(events, s) => {
                events.push(chunk)?;
                while let Some(e) = events.next_event() {
                    if let Ok(v) = serde_json::from_str::<Value>(&e.data) {
                        s.event(&v, &mut chunks);
                    }
                }
            }
            Source::Bedrock(frames, s) => {
                frames.push(chunk);
                while let Some(f) = frames.next_frame()? {
                    if let Err(m) = s.frame(&f, &mut chunks) {
                        failed = Some(m);
                    }
                }
            }
        }
        self.write(&chunks, out);
        if let Some(m) = failed {
            self.error(&m, out);
        }
        Ok(())
    }

    /// The body ended: the closing chunks, once.
    pub(crate) fn finish(&mut self, out: &mut Vec<u8>) {
        if std::mem::replace(&mut self.done, true) {
            return;
        }
        let mut chunks = Vec::new();
        match &mut self.source {
            Source::Gemini(events, s) => {
                let _ = events.push(b"\n\n");
                while let Some(e) = events.next_event() {
                    if let Ok(v) = serde_json::from_str::<Value>(&e.data) {
                        s.event(&v, &mut chunks);
                    }
                }
                s.finish(&mut chunks);
            }
            Source::Bedrock(_, s) => s.finish(&mut chunks),
        }
        self.write(&chunks, out);
        match &mut self.sink {
            Sink::Openai { .. } => out.extend_from_slice(b"data: [DONE]\n\n"),
            Sink::Anthropic(s) => s.finish(out),
        }
    }

    pub(crate) fn counts(&self) -> Option<Counts> {
        match &self.source {
            Source::Gemini(_, s) => s.chunks.counts,
            Source::Bedrock(_, s) => s.chunks.counts,
        }
    }
}
