//! The relay of a stream already in the front's API (an OpenAI provider's to the OpenAI
//! front, an Anthropic one's to the Anthropic front): the bytes go on as they came, and
//! only the events that carry a usage are cut out and parsed. Events are found by their
//! blank line (`\n\n`, or `\r\n\r\n`) with `memchr`, and the content deltas, nearly all
//! of a stream, are neither copied, parsed nor allocated for: a relayed chunk that ends
//! on an event's end passes as the same `Bytes`. With `strip`, the usage-only chunk the
//! gateway asked an OpenAI provider for (the client did not) is cut out of the bytes.

use bytes::Bytes;
use memchr::memmem;
use serde_json::Value;

/// The most bytes of one unfinished event kept to be scanned (as `sse::MAX_EVENT`).
const MAX_EVENT: usize = turnpike_policy::sse::MAX_EVENT;

/// The end of the first event end in `b` at or after `from` (past its blank line).
fn event_end(b: &[u8], from: usize) -> Option<usize> {
    let mut at = from;
    while let Some(i) = memchr::memchr(b'\n', b.get(at..)?) {
        let nl = at + i;
        match (b.get(nl + 1), b.get(nl + 2)) {
            (Some(b'\n'), _) => return Some(nl + 2),
            (Some(b'\r'), Some(b'\n')) => return Some(nl + 3),
            _ => at = nl + 1,
        }
    }
    None
}

/// The end of the last event end in `b` (0: none).
fn last_end(b: &[u8]) -> usize {
    let (mut end, mut at) = (0, 0);
    while let Some(e) = event_end(b, at) {
        end = e;
        at = e;
    }
    end
}

/// An event's `data:` lines joined (`\r` dropped), as the SSE reader reads them.
fn data(event: &[u8]) -> String {
    let text = String::from_utf8_lossy(event);
    let mut out = String::new();
    for line in text.lines() {
        if let Some(v) = line.strip_prefix("data:") {
            if !out.is_empty() {
                out.push('\n');
            }
            out.push_str(v.strip_prefix(' ').unwrap_or(v));
        }
    }
    out
}

/// Whether the bytes after a `"usage"` key give it a value other than null.
fn has_value(after: &[u8]) -> bool {
    let rest = after
        .iter()
        .position(|b| !matches!(b, b' ' | b':' | b'\t'))
        .map_or(&[][..], |i| &after[i..]);
    !rest.is_empty() && !rest.starts_with(b"null")
}

/// The events of `region` (whole events) whose `"usage"` has a value: each event's
/// byte range. A `"usage"` inside a JSON string is escaped (`\"usage\"`) and never
/// matches.
fn usage_events(region: &[u8]) -> Vec<(usize, usize)> {
    let mut out: Vec<(usize, usize)> = Vec::new();
    for hit in memmem::find_iter(region, b"\"usage\"") {
        if out.last().is_some_and(|(_, end)| hit < *end) || !has_value(&region[hit + 7..]) {
            continue;
        }
        let start = last_end(&region[..hit]);
        let end = event_end(region, hit).unwrap_or(region.len());
        out.push((start, end));
    }
    out
}

/// The scan of a relayed stream.
#[derive(Default)]
pub(crate) struct Observer {
    /// The bytes of an event whose end has not come yet.
    carry: Vec<u8>,
    /// Cut the OpenAI usage-only chunk out of what the client gets.
    strip: bool,
}

impl Observer {
    pub(crate) fn new(strip: bool) -> Self {
        Observer {
            carry: Vec::new(),
            strip,
        }
    }

    /// One chunk: what goes to the client, each usage event's data handed to `usage`.
    pub(crate) fn chunk(
        &mut self,
        chunk: Bytes,
        usage: &mut dyn FnMut(&Value) -> bool,
    ) -> Result<Bytes, String> {
        let joined;
        let (all, owned): (&[u8], bool) = if self.carry.is_empty() {
            (&chunk[..], false)
        } else {
            self.carry.extend_from_slice(&chunk);
            joined = std::mem::take(&mut self.carry);
            (&joined[..], true)
        };
        let end = last_end(all);
        if all.len() - end > MAX_EVENT {
            return Err(format!("a streamed event exceeds {MAX_EVENT} bytes"));
        }
        let out = self.whole(&all[..end], usage);
        self.carry = all[end..].to_vec();
        if !self.strip {
            return Ok(chunk);
        }
        Ok(match out {
            Some(kept) => Bytes::from(kept),
            None if owned => Bytes::copy_from_slice(&all[..end]),
            None => chunk.slice(..end),
        })
    }

    /// The stream's end: an event left without its blank line is read (and, stripping,
    /// what of it the client gets).
    pub(crate) fn end(&mut self, usage: &mut dyn FnMut(&Value) -> bool) -> Option<Bytes> {
        let mut rest = std::mem::take(&mut self.carry);
        if rest.is_empty() {
            return None;
        }
        rest.extend_from_slice(b"\n\n");
        let out = self.whole(&rest, usage);
        self.strip.then(|| Bytes::from(out.unwrap_or(rest)))
    }

    /// Reads the usage events of whole events; stripping, the bytes without the
    /// usage-only ones, when there were any (`None`: all of them go).
    fn whole(&self, region: &[u8], usage: &mut dyn FnMut(&Value) -> bool) -> Option<Vec<u8>> {
        let found = usage_events(region);
        if found.is_empty() {
            return None;
        }
        let mut kept = Vec::new();
        let mut at = 0;
        for (start, end) in found {
            let Ok(v) = serde_json::from_str::<Value>(&data(&region[start..end])) else {
                continue;
            };
            // `usage` says whether the event held nothing but the usage.
            if usage(&v) && self.strip {
                kept.extend_from_slice(&region[at..start]);
                at = end;
            }
        }
        if at == 0 {
            return None;
        }
        kept.extend_from_slice(&region[at..]);
        Some(kept)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(o: &mut Observer, chunks: &[&'static [u8]]) -> (Vec<u8>, Vec<Value>) {
        let (mut out, mut seen) = (Vec::new(), Vec::new());
        for c in chunks {
            let b = o
                .chunk(Bytes::from_static(c), &mut |v: &Value| {
                    seen.push(v.clone());
                    v["choices"].as_array().is_some_and(Vec::is_empty)
                })
                .expect("chunk");
            out.extend_from_slice(&b);
        }
        if let Some(b) = o.end(&mut |v: &Value| {
            seen.push(v.clone());
            false
        }) {
            out.extend_from_slice(&b);
        }
        (out, seen)
    }

    #[test]
    fn only_usage_events_are_read_across_chunks() {
        let mut o = Observer::new(false);
        let (out, seen) = run(
            &mut o,
            &[
                b"data: {\"choices\":[{\"delta\":{\"content\":\"the \\\"usage\\\"\"}}],\"usage\":null}\n\ndata: {\"choices\":[],\"us",
                b"age\": {\"prompt_tokens\":4}}\r\n\r\ndata: [DONE]\n\n",
            ],
        );
        assert_eq!(
            seen,
            vec![serde_json::json!({"choices": [], "usage": {"prompt_tokens": 4}})]
        );
        assert!(out.ends_with(b"data: [DONE]\n\n"));
        assert!(String::from_utf8_lossy(&out).contains("\"us"));
    }

    #[test]
    fn stripping_cuts_the_usage_only_event_and_holds_half_events() {
        let mut o = Observer::new(true);
        let first = o
            .chunk(
                Bytes::from_static(b"data: {\"choices\":[{\"delta\":{}}]}\n\ndata: {\"cho"),
                &mut |_: &Value| false,
            )
            .expect("chunk");
        assert_eq!(&first[..], b"data: {\"choices\":[{\"delta\":{}}]}\n\n");
        let (out, seen) = run(
            &mut o,
            &[b"ices\":[],\"usage\":{\"completion_tokens\":2}}\n\ndata: [DONE]\n\n"],
        );
        assert_eq!(seen.len(), 1);
        assert_eq!(&out[..], b"data: [DONE]\n\n");
    }

    #[test]
    fn an_endless_event_is_refused() {
        let mut o = Observer::new(false);
        let big = Bytes::from(vec![b'x'; MAX_EVENT + 1]);
        assert!(o.chunk(big, &mut |_: &Value| false).is_err());
    }
}
