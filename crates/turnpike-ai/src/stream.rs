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
use crate::observe::Observer;
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
    /// The relay of an observed mode (`observe.rs`).
    observer: Observer,
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
        let strip = matches!(mode, Mode::ObserveOpenai { strip_usage: true });
        AiStream {
            events: Events::default(),
            observer: Observer::new(strip),
            mode,
            counts: None,
            relayed: 0,
            estimate,
            model,
            provider,
        }
    }

    /// Every whole event so far, translated into `out` (the observed modes never come
    /// here: `observe.rs` relays them).
    fn drain(&mut self, out: &mut Vec<u8>) {
        while let Some(e) = self.events.next_event() {
            self.relayed += e.data.len() as u64;
            if e.data == "[DONE]" {
                if let Mode::ToAnthropic(s) = &mut self.mode {
                    s.finish(out);
                }
                continue;
            }
            let Ok(v) = serde_json::from_str::<Value>(&e.data) else {
                continue;
            };
            match &mut self.mode {
                Mode::ToOpenai(s) => s.event(&v, out),
                Mode::ToAnthropic(s) => s.chunk(&v, out),
                _ => {}
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

impl AiStream {
    fn observed(&self) -> bool {
        matches!(
            self.mode,
            Mode::ObserveOpenai { .. } | Mode::ObserveAnthropic
        )
    }
}

/// What an observed mode does with a usage event: the counts kept; whether the event
/// was OpenAI's usage-only chunk (the one a stripping relay cuts).
fn read_usage(anthropic: bool, counts: &mut Option<Counts>, v: &Value) -> bool {
    if anthropic {
        observe_anthropic(counts, v);
        return false;
    }
    let Some(c) = v.get("usage").and_then(usage::from_openai) else {
        return false;
    };
    *counts = Some(c);
    v.get("choices")
        .and_then(Value::as_array)
        .is_some_and(Vec::is_empty)
}

impl ResponseStream for AiStream {
    fn on_chunk(&mut self, chunk: Bytes) -> Result<Bytes, GatewayError> {
        if self.observed() {
            self.relayed += chunk.len() as u64;
            let anthropic = matches!(self.mode, Mode::ObserveAnthropic);
            let counts = &mut self.counts;
            return self
                .observer
                .chunk(chunk, &mut |v: &Value| read_usage(anthropic, counts, v))
                .map_err(protocol);
        }
        if let Mode::Foreign(f) = &mut self.mode {
            let mut out = Vec::new();
            self.relayed += chunk.len() as u64;
            f.push(&chunk, &mut out).map_err(protocol)?;
            return Ok(Bytes::from(out));
        }
        self.events.push(&chunk).map_err(protocol)?;
        let mut out = Vec::new();
        self.drain(&mut out);
        Ok(Bytes::from(out))
    }

    fn on_end(&mut self) -> Result<Option<Bytes>, GatewayError> {
        if self.observed() {
            let anthropic = matches!(self.mode, Mode::ObserveAnthropic);
            let counts = &mut self.counts;
            return Ok(self
                .observer
                .end(&mut |v: &Value| read_usage(anthropic, counts, v)));
        }
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
