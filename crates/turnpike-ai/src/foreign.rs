//! Providers that speak neither front's API (Gemini, Bedrock's Converse) go through one
//! hub on each side, so each needs one translation per direction: requests are
//! translated from Anthropic's Messages shape (an OpenAI request is first made one by
//! `to_anthropic::request`: system apart, turns alternating, tool calls and results as
//! blocks, which both providers' shapes follow), answers to OpenAI's `chat.completion`
//! and its chunks (then made Anthropic's by `to_openai` for the Anthropic front). This
//! module holds [`Foreign`], the stream that cuts a provider's events (SSE for Gemini,
//! AWS event-stream frames for Bedrock) and writes them in the front's shape; the
//! OpenAI shapes both build are in `chunks.rs`.

use serde_json::{json, Value};

use crate::eventstream::Frames;
use crate::sse::Events;
use crate::to_openai::StreamToAnthropic;
use crate::usage::Counts;
use crate::{bedrock, gemini};

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
