//! W3C Trace Context (<https://www.w3.org/TR/trace-context/>) for a request the gateway
//! traces: the `traceparent` it came with (validated; an invalid one starts a new
//! trace, as the specification asks), the span the gateway opens for it and the span of
//! its call to the upstream, whose id the upstream receives as its parent. Present on a
//! [`crate::RequestCtx`] only when tracing is on (`--otlp-endpoint`); otherwise
//! `traceparent` passes through untouched and nothing here runs.

use std::cell::Cell;
use std::time::SystemTime;

use http::HeaderValue;

/// The header's name.
pub const TRACEPARENT: &str = "traceparent";

/// One traced request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceContext {
    pub trace_id: [u8; 16],
    /// The caller's span (from its `traceparent`), parent of the gateway's span.
    pub parent_span_id: Option<[u8; 8]>,
    /// The gateway's span for the request.
    pub span_id: [u8; 8],
    /// The span of the upstream call: the parent the upstream sees.
    pub upstream_span_id: [u8; 8],
    /// Recorded and exported (the caller's sampled flag; new traces are sampled).
    pub sampled: bool,
    /// When the request arrived, in nanoseconds since the Unix epoch.
    pub start_unix_nanos: u64,
}

impl TraceContext {
    /// The context of a request that came with `traceparent` (or none).
    pub fn for_request(traceparent: Option<&HeaderValue>) -> TraceContext {
        let start_unix_nanos = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64);
        let (trace_id, parent_span_id, sampled) =
            match traceparent.and_then(|v| parse_traceparent(v.as_bytes())) {
                Some(p) => (p.trace_id, Some(p.parent_id), p.flags & 1 == 1),
                None => (random_trace_id(), None, true),
            };
        TraceContext {
            trace_id,
            parent_span_id,
            span_id: random_span_id(),
            upstream_span_id: random_span_id(),
            sampled,
            start_unix_nanos,
        }
    }

    /// The `traceparent` the upstream receives: this trace, the upstream call's span.
    pub fn upstream_traceparent(&self) -> HeaderValue {
        let mut out = [0u8; 55];
        out[..3].copy_from_slice(b"00-");
        hex_into(&self.trace_id, &mut out[3..35]);
        out[35] = b'-';
        hex_into(&self.upstream_span_id, &mut out[36..52]);
        out[52] = b'-';
        out[53] = b'0';
        out[54] = if self.sampled { b'1' } else { b'0' };
        // Hex digits and dashes only: always a valid header value.
        HeaderValue::from_bytes(&out).unwrap_or_else(|_| HeaderValue::from_static(""))
    }

    /// The trace id as 32 lowercase hex digits (analytics events, logs).
    pub fn trace_id_hex(&self) -> String {
        let mut out = [0u8; 32];
        hex_into(&self.trace_id, &mut out);
        out.iter().map(|&b| char::from(b)).collect()
    }
}

/// A valid `traceparent`'s fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Traceparent {
    pub version: u8,
    pub trace_id: [u8; 16],
    pub parent_id: [u8; 8],
    pub flags: u8,
}

/// Parses a `traceparent` value; None when the specification says to ignore it.
pub fn parse_traceparent(v: &[u8]) -> Option<Traceparent> {
    if v.len() < 55 || v[2] != b'-' || v[35] != b'-' || v[52] != b'-' {
        return None;
    }
    let version = hex_byte(&v[0..2])?;
    // Version ff is invalid; version 00 is exactly 55 characters; a later version may
    // append fields after a dash.
    if version == 0xff || (version == 0 && v.len() != 55) || (v.len() > 55 && v[55] != b'-') {
        return None;
    }
    let mut trace_id = [0u8; 16];
    let mut parent_id = [0u8; 8];
    hex_decode(&v[3..35], &mut trace_id)?;
    hex_decode(&v[36..52], &mut parent_id)?;
    let flags = hex_byte(&v[53..55])?;
    if trace_id == [0; 16] || parent_id == [0; 8] {
        return None;
    }
    Some(Traceparent {
        version,
        trace_id,
        parent_id,
        flags,
    })
}

/// Lowercase hex only (the specification's HEXDIGLC).
fn hex_digit(c: u8) -> Option<u8> {
    match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        _ => None,
    }
}

fn hex_byte(two: &[u8]) -> Option<u8> {
    Some(hex_digit(two[0])? << 4 | hex_digit(two[1])?)
}

fn hex_decode(hex: &[u8], out: &mut [u8]) -> Option<()> {
    for (o, pair) in out.iter_mut().zip(hex.chunks_exact(2)) {
        *o = hex_byte(pair)?;
    }
    Some(())
}

fn hex_into(bytes: &[u8], out: &mut [u8]) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    for (pair, b) in out.chunks_exact_mut(2).zip(bytes) {
        pair[0] = HEX[usize::from(b >> 4)];
        pair[1] = HEX[usize::from(b & 0xF)];
    }
}

thread_local! {
    /// A per-thread xorshift state seeded from the process's random hasher keys: ids
    /// need to be unique, not secret.
    static RNG: Cell<u64> = Cell::new(seed());
}

fn seed() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(
        SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64),
    );
    h.finish() | 1
}

fn next_u64() -> u64 {
    RNG.with(|s| {
        // xorshift64*
        let mut x = s.get();
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        s.set(x);
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    })
}

fn nonzero_u64() -> u64 {
    loop {
        let v = next_u64();
        if v != 0 {
            return v;
        }
    }
}

fn random_trace_id() -> [u8; 16] {
    let mut id = [0u8; 16];
    id[..8].copy_from_slice(&nonzero_u64().to_be_bytes());
    id[8..].copy_from_slice(&next_u64().to_be_bytes());
    id
}

fn random_span_id() -> [u8; 8] {
    nonzero_u64().to_be_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    const VALID: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

    #[test]
    fn a_valid_traceparent_continues_its_trace() {
        let v = HeaderValue::from_static(VALID);
        let t = TraceContext::for_request(Some(&v));
        assert_eq!(t.trace_id_hex(), "4bf92f3577b34da6a3ce929d0e0e4736");
        assert_eq!(
            t.parent_span_id,
            Some(0x00f0_67aa_0ba9_02b7u64.to_be_bytes())
        );
        assert!(t.sampled);
        let up = t.upstream_traceparent();
        let p = parse_traceparent(up.as_bytes()).expect("we write valid ones");
        assert_eq!(p.trace_id, t.trace_id);
        assert_eq!(p.parent_id, t.upstream_span_id);
        assert_ne!(t.upstream_span_id, t.span_id);
    }

    #[test]
    fn invalid_traceparents_start_a_new_trace() {
        for bad in [
            "",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra",
            "00-4bf92f3577b34da6a3ce929d0e0e473-600f067aa0ba902b7-01",
            "0x-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
        ] {
            assert_eq!(parse_traceparent(bad.as_bytes()), None, "{bad}");
        }
        // A later version may carry more fields.
        let later = "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-what";
        assert!(parse_traceparent(later.as_bytes()).is_some());
        let v = HeaderValue::from_static("00-00000000000000000000000000000000-00f067aa0ba902b7-01");
        let t = TraceContext::for_request(Some(&v));
        assert_eq!(t.parent_span_id, None);
        assert_ne!(t.trace_id, [0; 16]);
    }

    #[test]
    fn new_traces_and_spans_get_distinct_ids() {
        let a = TraceContext::for_request(None);
        let b = TraceContext::for_request(None);
        assert_ne!(a.trace_id, b.trace_id);
        assert_ne!(a.span_id, b.span_id);
        assert!(a.sampled);
    }

    #[test]
    fn an_unsampled_caller_is_not_sampled() {
        let v = HeaderValue::from_static("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00");
        let t = TraceContext::for_request(Some(&v));
        assert!(!t.sampled);
        assert!(t.upstream_traceparent().as_bytes().ends_with(b"-00"));
    }
}
