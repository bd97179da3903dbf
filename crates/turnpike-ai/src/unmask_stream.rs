//! A streamed answer with PII placeholders put back ([`UnmaskStream`]): it reads the
//! events the AI stream gives the client (OpenAI chunks or Anthropic events, whichever
//! the front speaks) and rewrites their text deltas through an [`Unmasker`], which
//! holds back a tail that may be a placeholder cut across chunks (`<EMA` + `IL_1>`). The
//! held text goes out before the next event that is not a text delta (the finish chunk,
//! `content_block_stop`) and at the end. Only APIs that mask PII pay for it.

use std::sync::Arc;

use bytes::Bytes;
use serde_json::{json, Value};
use turnpike_policy::{ErrorKind, GatewayError, ResponseStream};

use crate::pii::{Masks, Unmasker};
use crate::sse::Events;
use crate::to_anthropic::data;

pub(crate) struct UnmaskStream {
    inner: Box<dyn ResponseStream>,
    events: Events,
    unmasker: Unmasker,
    masks: Arc<Masks>,
    anthropic: bool,
    /// The last OpenAI chunk with a text delta: the template of the held text's chunk.
    last: Option<Value>,
}

impl UnmaskStream {
    pub(crate) fn new(inner: Box<dyn ResponseStream>, masks: Arc<Masks>, anthropic: bool) -> Self {
        UnmaskStream {
            inner,
            events: Events::default(),
            unmasker: Unmasker::default(),
            masks,
            anthropic,
            last: None,
        }
    }

    fn rewrite(&mut self, chunk: &[u8]) -> Result<Bytes, GatewayError> {
        self.events.push(chunk).map_err(|m| {
            let mut e = GatewayError::new(ErrorKind::UpstreamProtocol);
            e.detail = Some(m.into());
            e
        })?;
        let mut out = Vec::new();
        while let Some(e) = self.events.next_event() {
            let Ok(mut v) = serde_json::from_str::<Value>(&e.data) else {
                self.flush(&mut out);
                event(e.name.as_deref(), &e.data, &mut out);
                continue;
            };
            match self.text_of(&mut v) {
                Some(t) => {
                    let piece = self.unmasker.push(&self.masks, t.as_str().unwrap_or(""));
                    *t = Value::String(piece);
                    if !self.anthropic {
                        self.last = Some(v.clone());
                    }
                }
                None => self.flush(&mut out),
            }
            let text = serde_json::to_string(&v).unwrap_or_default();
            event(e.name.as_deref(), &text, &mut out);
        }
        Ok(Bytes::from(out))
    }

    /// The text delta of an event, if it is one.
    fn text_of<'v>(&self, v: &'v mut Value) -> Option<&'v mut Value> {
        if self.anthropic {
            if v.get("type").and_then(Value::as_str) != Some("content_block_delta") {
                return None;
            }
            return v
                .get_mut("delta")?
                .get_mut("text")
                .filter(|t| t.is_string());
        }
        v.get_mut("choices")?
            .get_mut(0)?
            .get_mut("delta")?
            .get_mut("content")
            .filter(|t| t.is_string())
    }

    /// The held text as an event of its own.
    fn flush(&mut self, out: &mut Vec<u8>) {
        if !self.unmasker.holds() {
            return;
        }
        let text = self.unmasker.flush(&self.masks);
        if self.anthropic {
            let v = json!({"type": "content_block_delta", "index": 0,
                           "delta": {"type": "text_delta", "text": text}});
            event(Some("content_block_delta"), &v.to_string(), out);
            return;
        }
        let mut v = self
            .last
            .clone()
            .unwrap_or_else(|| json!({"choices": [{"index": 0, "delta": {}}]}));
        v["choices"][0]["delta"] = json!({"content": text});
        v["choices"][0]["finish_reason"] = Value::Null;
        data(&v, out);
    }
}

fn event(name: Option<&str>, data: &str, out: &mut Vec<u8>) {
    if let Some(n) = name {
        out.extend_from_slice(b"event: ");
        out.extend_from_slice(n.as_bytes());
        out.push(b'\n');
    }
    out.extend_from_slice(b"data: ");
    out.extend_from_slice(data.as_bytes());
    out.extend_from_slice(b"\n\n");
}

impl ResponseStream for UnmaskStream {
    fn on_chunk(&mut self, chunk: Bytes) -> Result<Bytes, GatewayError> {
        let passed = self.inner.on_chunk(chunk)?;
        self.rewrite(&passed)
    }

    fn on_end(&mut self) -> Result<Option<Bytes>, GatewayError> {
        let tail = self.inner.on_end()?;
        let mut out = match tail {
            Some(t) => self.rewrite(&t)?.to_vec(),
            None => Vec::new(),
        };
        let _ = self.events.push(b"\n\n");
        out.extend_from_slice(&self.rewrite(b"")?);
        self.flush(&mut out);
        Ok((!out.is_empty()).then(|| Bytes::from(out)))
    }

    fn settle(&mut self, ext: &mut http::Extensions) {
        self.inner.settle(ext);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pii::Scanner;

    struct Pass;
    impl ResponseStream for Pass {
        fn on_chunk(&mut self, chunk: Bytes) -> Result<Bytes, GatewayError> {
            Ok(chunk)
        }
    }

    fn masks() -> Arc<Masks> {
        let mut m = Masks::default();
        let s = Scanner::new(&[]);
        s.mask("a@b.io", &mut m).expect("bounded").expect("found");
        Arc::new(m)
    }

    fn texts(out: &[u8], anthropic: bool) -> String {
        let mut ev = Events::default();
        ev.push(out).expect("push");
        let mut text = String::new();
        while let Some(e) = ev.next_event() {
            let Ok(v) = serde_json::from_str::<Value>(&e.data) else {
                continue;
            };
            let t = if anthropic {
                v["delta"]["text"].as_str()
            } else {
                v["choices"][0]["delta"]["content"].as_str()
            };
            text.push_str(t.unwrap_or_default());
        }
        text
    }

    #[test]
    fn a_placeholder_cut_across_chunks_and_events_is_put_back() {
        let chunk = |t: &str| {
            format!(
                "data: {}\n\n",
                json!({"choices": [{"index": 0, "delta": {"content": t}}]})
            )
        };
        let wire = [
            chunk("mail <EM"),
            chunk("AIL_"),
            chunk("1> now <EMAIL_1"),
            "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n"
                .into(),
            "data: [DONE]\n\n".into(),
        ]
        .concat();
        // Cut the wire at every byte: events split across chunks too.
        for cut in [1, 7, 40, wire.len() / 2, wire.len() - 3] {
            let mut s = UnmaskStream::new(Box::new(Pass), masks(), false);
            let mut out = s
                .on_chunk(Bytes::from(wire[..cut].to_owned()))
                .expect("chunk")
                .to_vec();
            out.extend_from_slice(
                &s.on_chunk(Bytes::from(wire[cut..].to_owned()))
                    .expect("chunk"),
            );
            out.extend_from_slice(&s.on_end().expect("end").unwrap_or_default());
            assert_eq!(
                texts(&out, false),
                "mail a@b.io now <EMAIL_1",
                "cut at {cut}"
            );
            assert!(String::from_utf8_lossy(&out).contains("[DONE]"));
        }
    }

    #[test]
    fn anthropic_text_deltas_are_put_back_before_the_block_stops() {
        let delta = |t: &str| {
            format!(
                "event: content_block_delta\ndata: {}\n\n",
                json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": t}})
            )
        };
        let wire = [
            delta("to <EMAIL"),
            delta("_1"),
            "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n"
                .into(),
        ]
        .concat();
        let mut s = UnmaskStream::new(Box::new(Pass), masks(), true);
        let out = s.on_chunk(Bytes::from(wire)).expect("chunk");
        let text = String::from_utf8_lossy(&out).to_string();
        assert_eq!(texts(&out, true), "to <EMAIL_1", "{text}");
        let stop = text.find("content_block_stop").expect("stop");
        assert!(
            text[..stop].contains("_1"),
            "held text goes out before the stop: {text}"
        );
    }
}
