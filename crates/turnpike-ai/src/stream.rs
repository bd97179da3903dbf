//! An AI API's streamed answer as it passes ([`AiStream`], the gateway's response
//! stream hook): relayed untouched when the provider speaks the front's API (its events
//! read on the side for the usage), translated event by event otherwise; the token
//! usage the last event gave, or an estimate when the stream ended without one (the
//! client went away), is left in `ctx.ext` before `on_complete`.

use std::sync::Arc;

use bytes::Bytes;
use serde_json::Value;
use turnpike_policy::ai::TokenEstimate;
use turnpike_policy::{ErrorKind, GatewayError, ResponseStream};

use crate::foreign::Foreign;
use crate::sse::Events;
use crate::to_anthropic::StreamToOpenai;
use crate::to_openai::StreamToAnthropic;
use crate::usage::{self, Counts};

/// What the stream does with events.
pub(crate) enum Mode {
    /// An OpenAI stream to an OpenAI front: relayed, usage read from the last chunk;
    /// `strip_usage`: that chunk was asked for by the gateway, not the client, and is
    /// left out (so a client reading `choices[0]` of every chunk keeps working); the
    /// events are then re-cut whole.
    ObserveOpenai { strip_usage: bool },
    /// An Anthropic stream to an Anthropic front: relayed, usage read from
    /// `message_start` and `message_delta`.
    ObserveAnthropic,
    /// Anthropic events to OpenAI chunks.
    ToOpenai(Box<StreamToOpenai>),
    /// OpenAI chunks to Anthropic events.
    ToAnthropic(Box<StreamToAnthropic>),
    /// A provider that speaks neither front's API (Gemini, Bedrock), in its own framing.
    Foreign(Box<Foreign>),
}

pub(crate) struct AiStream {
    events: Events,
    mode: Mode,
    counts: Option<Counts>,
    /// Bytes of the answer's events, for the estimate when no usage came.
    relayed: u64,
    estimate: TokenEstimate,
    model: Option<Arc<str>>,
    provider: Arc<str>,
}

impl AiStream {
    pub(crate) fn new(
        mode: Mode,
        estimate: TokenEstimate,
        model: Option<Arc<str>>,
        provider: Arc<str>,
    ) -> Self {
        AiStream {
            events: Events::default(),
            mode,
            counts: None,
            relayed: 0,
            estimate,
            model,
            provider,
        }
    }

    /// Every whole event so far: read, and translated into `out` when translating.
    fn drain(&mut self, out: &mut Vec<u8>) {
        while let Some(e) = self.events.next_event() {
            self.relayed += e.data.len() as u64;
            let strip = matches!(self.mode, Mode::ObserveOpenai { strip_usage: true });
            if e.data == "[DONE]" {
                match &mut self.mode {
                    Mode::ToAnthropic(s) => s.finish(out),
                    _ if strip => out.extend_from_slice(b"data: [DONE]\n\n"),
                    _ => {}
                }
                continue;
            }
            // A relayed event is read only when it may carry the usage: the content
            // deltas, nearly all of a stream, pass as their bytes, unparsed.
            let observed = matches!(
                self.mode,
                Mode::ObserveOpenai { .. } | Mode::ObserveAnthropic
            );
            if observed && !names_usage(&e.data) {
                if strip {
                    raw_event(&e.data, out);
                }
                continue;
            }
            let Ok(v) = serde_json::from_str::<Value>(&e.data) else {
                continue;
            };
            match &mut self.mode {
                Mode::ObserveOpenai { .. } => {
                    let counts = v.get("usage").and_then(usage::from_openai);
                    let usage_only = counts.is_some()
                        && v.get("choices")
                            .and_then(Value::as_array)
                            .is_some_and(Vec::is_empty);
                    if strip && !usage_only {
                        raw_event(&e.data, out);
                    }
                    if counts.is_some() {
                        self.counts = counts;
                    }
                }
                Mode::ObserveAnthropic => observe_anthropic(&mut self.counts, &v),
                Mode::ToOpenai(s) => s.event(&v, out),
                Mode::ToAnthropic(s) => s.chunk(&v, out),
                Mode::Foreign(_) => {}
            }
        }
    }

    fn translated_counts(&self) -> Option<Counts> {
        match &self.mode {
            Mode::ToOpenai(s) => s.counts(),
            Mode::ToAnthropic(s) => s.counts(),
            Mode::Foreign(f) => f.counts(),
            _ => self.counts,
        }
    }
}

/// Whether an event's JSON may hold a usage object: a `"usage"` key not set to null
/// (OpenAI sends `"usage": null` in every chunk before the last when asked for it).
/// A string's `"usage"` is escaped (`\"usage\"`) and never matches.
fn names_usage(data: &str) -> bool {
    data.contains("\"usage\"")
        && !data.contains("\"usage\":null")
        && !data.contains("\"usage\": null")
}

/// One `data:` event with its JSON as it came.
fn raw_event(data: &str, out: &mut Vec<u8>) {
    out.extend_from_slice(b"data: ");
    out.extend_from_slice(data.as_bytes());
    out.extend_from_slice(b"\n\n");
}

/// An Anthropic stream's counts: the prompt in `message_start`, the answer's in
/// `message_delta`.
fn observe_anthropic(counts: &mut Option<Counts>, v: &Value) {
    let c = counts.get_or_insert_with(Counts::default);
    match v.get("type").and_then(Value::as_str) {
        Some("message_start") => *c = usage::from_anthropic(&v["message"]["usage"]),
        Some("message_delta") => {
            if let Some(n) = v["usage"]["output_tokens"].as_u64() {
                c.completion = n;
            }
        }
        _ => {}
    }
}

/// A stream that cannot be read as its framing says.
fn protocol(message: String) -> GatewayError {
    let mut e = GatewayError::new(ErrorKind::UpstreamProtocol);
    e.detail = Some(message.into());
    e
}

impl ResponseStream for AiStream {
    fn on_chunk(&mut self, chunk: Bytes) -> Result<Bytes, GatewayError> {
        if let Mode::Foreign(f) = &mut self.mode {
            let mut out = Vec::new();
            self.relayed += chunk.len() as u64;
            f.push(&chunk, &mut out).map_err(protocol)?;
            return Ok(Bytes::from(out));
        }
        self.events.push(&chunk).map_err(protocol)?;
        let mut out = Vec::new();
        self.drain(&mut out);
        Ok(match self.mode {
            // Relayed as it came: no event is held for the reading.
            Mode::ObserveOpenai { strip_usage: false } | Mode::ObserveAnthropic => chunk,
            _ => Bytes::from(out),
        })
    }

    fn on_end(&mut self) -> Result<Option<Bytes>, GatewayError> {
        if let Mode::Foreign(f) = &mut self.mode {
            let mut out = Vec::new();
            f.finish(&mut out);
            return Ok(Some(Bytes::from(out)));
        }
        let _ = self.events.push(b"\n\n");
        let mut out = Vec::new();
        self.drain(&mut out);
        match &mut self.mode {
            Mode::ToOpenai(s) => s.finish(&mut out),
            Mode::ToAnthropic(s) => s.finish(&mut out),
            _ => {}
        }
        Ok((!out.is_empty()).then(|| Bytes::from(out)))
    }

    fn settle(&mut self, ext: &mut http::Extensions) {
        let (counts, estimated) = match self.translated_counts() {
            Some(c) => (c, false),
            // No usage came (the stream was cut): the prompt as estimated, the answer
            // by its bytes (4 a token, the usual rule of thumb for English text).
            None => (
                Counts {
                    prompt: self.estimate.prompt,
                    completion: self.relayed / 4,
                    cached: 0,
                },
                true,
            ),
        };
        ext.insert(usage::token_usage(
            counts,
            self.model.clone(),
            self.provider.clone(),
            estimated,
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use turnpike_policy::ai::TokenUsage;

    fn stream(mode: Mode) -> AiStream {
        AiStream::new(
            mode,
            TokenEstimate {
                prompt: 9,
                max_completion: 100,
            },
            None,
            "p".into(),
        )
    }

    fn usage_of(s: &mut AiStream) -> TokenUsage {
        let mut ext = http::Extensions::new();
        s.settle(&mut ext);
        ext.get::<TokenUsage>().cloned().expect("usage settled")
    }

    #[test]
    fn an_observed_stream_passes_chunks_unchanged_and_reads_usage() {
        let mut s = stream(Mode::ObserveOpenai { strip_usage: false });
        let a = Bytes::from_static(
            b"data: {\"choices\":[{\"delta\":{\"content\":\"hi\"}}]}\n\ndata: {\"choices\":[],\"us",
        );
        assert_eq!(s.on_chunk(a.clone()).expect("chunk"), a);
        let b = Bytes::from_static(
            b"age\":{\"prompt_tokens\":4,\"completion_tokens\":2}}\n\ndata: [DONE]\n\n",
        );
        assert_eq!(s.on_chunk(b.clone()).expect("chunk"), b);
        assert_eq!(s.on_end().expect("end"), None);
        let u = usage_of(&mut s);
        assert_eq!(
            (u.prompt, u.completion, u.total, u.estimated),
            (4, 2, 6, false)
        );
    }

    #[test]
    fn only_events_that_name_a_usage_are_read() {
        assert!(names_usage(r#"{"choices":[],"usage":{"prompt_tokens":1}}"#));
        assert!(!names_usage(
            r#"{"choices":[{"delta":{"content":"hi"}}],"usage":null}"#
        ));
        assert!(!names_usage(
            r#"{"choices":[{"delta":{"content":"the \"usage\" is"}}]}"#
        ));
        assert!(names_usage(
            r#"{"type":"message_delta","usage":{"output_tokens":3}}"#
        ));
    }

    #[test]
    fn a_cut_stream_is_estimated() {
        let mut s = stream(Mode::ObserveOpenai { strip_usage: false });
        let a =
            Bytes::from_static(b"data: {\"choices\":[{\"delta\":{\"content\":\"hello\"}}]}\n\n");
        s.on_chunk(a).expect("chunk");
        let u = usage_of(&mut s);
        assert!(u.estimated);
        assert_eq!(u.prompt, 9);
        assert!(u.completion > 0);
    }

    #[test]
    fn the_usage_chunk_the_gateway_asked_for_is_read_and_left_out() {
        let mut s = stream(Mode::ObserveOpenai { strip_usage: true });
        let body = b"data: {\"choices\":[{\"delta\":{\"content\":\"hi\"}}]}\n\ndata: {\"choices\":[],\"usage\":{\"prompt_tokens\":4,\"completion_tokens\":2}}\n\ndata: [DONE]\n\n";
        let out = s.on_chunk(Bytes::from_static(body)).expect("chunk");
        let text = String::from_utf8_lossy(&out).into_owned();
        assert!(!text.contains("usage"), "{text}");
        assert!(text.contains("\"content\":\"hi\""), "{text}");
        assert!(text.ends_with("data: [DONE]\n\n"), "{text}");
        assert_eq!(usage_of(&mut s).completion, 2);
    }

    #[test]
    fn a_translated_stream_holds_half_events_and_closes_at_the_end() {
        let mut s = stream(Mode::ToAnthropic(Box::default()));
        let half = s
            .on_chunk(Bytes::from_static(
                b"data: {\"id\":\"c\",\"model\":\"m\",\"choices\":[{\"delta\":{\"content\":\"H",
            ))
            .expect("chunk");
        assert!(half.is_empty(), "half an event is held");
        let whole = s
            .on_chunk(Bytes::from_static(b"i\"}}]}\n\n"))
            .expect("chunk");
        let text = String::from_utf8_lossy(&whole).into_owned();
        assert!(text.starts_with("event: message_start\n"), "{text}");
        assert!(text.contains("\"text\":\"Hi\""), "{text}");
        let end = s.on_end().expect("end").expect("closing events");
        assert!(String::from_utf8_lossy(&end)
            .ends_with("event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"));
    }
}
