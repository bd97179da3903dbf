//! An [`Event`] as one JSON object, byte for byte what `serde_json` writes for it (field
//! order, skipped `None`s), written straight into the batch buffer: `serde_json`'s
//! writer makes a buffer call per key, quote and value and escapes strings a byte at a
//! time, which was most of the analytics cost per request (bench/RESULTS.md). Held to
//! `serde_json`'s output by a property test (`tests/json_line.rs`).

use crate::event::{Event, Latency};

/// Appends `e` as a JSON object (no newline).
pub fn write(e: &Event, out: &mut Vec<u8>) {
    out.reserve(640);
    out.extend_from_slice(b"{\"time_ms\":");
    int(out, e.time_ms);
    key_str(out, b",\"time\":", &e.time);
    key_str(out, b",\"request_id\":", &e.request_id);
    key_str(out, b",\"gateway\":", &e.gateway);
    key_str(out, b",\"outcome\":", e.outcome.as_str());
    opt_str(out, b",\"reason\":", &e.reason);
    opt_str(out, b",\"error_code\":", &e.error_code);
    opt_str(out, b",\"api_name\":", &e.api_name);
    opt_str(out, b",\"api_context\":", &e.api_context);
    opt_str(out, b",\"api_version\":", &e.api_version);
    opt_str(out, b",\"resource\":", &e.resource);
    key_str(out, b",\"method\":", &e.method);
    opt_str(out, b",\"application_id\":", &e.application_id);
    opt_str(out, b",\"application_name\":", &e.application_name);
    opt_str(out, b",\"subscriber\":", &e.subscriber);
    opt_str(out, b",\"key_type\":", &e.key_type);
    out.extend_from_slice(b",\"status\":");
    uint(out, u64::from(e.status));
    if let Some(s) = e.upstream_status {
        out.extend_from_slice(b",\"upstream_status\":");
        uint(out, u64::from(s));
    }
    out.extend_from_slice(b",\"bytes_in\":");
    uint(out, e.bytes_in);
    out.extend_from_slice(b",\"bytes_out\":");
    uint(out, e.bytes_out);
    out.extend_from_slice(b",\"latency\":");
    latency(out, &e.latency);
    out.extend_from_slice(b",\"snapshot_version\":");
    uint(out, e.snapshot_version);
    opt_str(out, b",\"client_ip\":", &e.client_ip);
    opt_str(out, b",\"trace_id\":", &e.trace_id);
    if let Some(ai) = &e.ai {
        // Only AI calls have it, and their cost is the provider's: serde's writer here.
        out.extend_from_slice(b",\"ai\":");
        let _ = serde_json::to_writer(&mut *out, ai);
    }
    out.push(b'}');
}

fn latency(out: &mut Vec<u8>, l: &Latency) {
    out.extend_from_slice(b"{\"before_us\":");
    uint(out, l.before_us);
    out.extend_from_slice(b",\"upstream_us\":");
    uint(out, l.upstream_us);
    out.extend_from_slice(b",\"after_us\":");
    uint(out, l.after_us);
    out.extend_from_slice(b",\"total_us\":");
    uint(out, l.total_us);
    out.push(b'}');
}

fn key_str(out: &mut Vec<u8>, key: &[u8], v: &str) {
    out.extend_from_slice(key);
    string(out, v);
}

fn opt_str(out: &mut Vec<u8>, key: &[u8], v: &Option<String>) {
    if let Some(v) = v {
        key_str(out, key, v);
    }
}

fn uint(out: &mut Vec<u8>, mut n: u64) {
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    loop {
        at -= 1;
        digits[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    out.extend_from_slice(&digits[at..]);
}

fn int(out: &mut Vec<u8>, n: i64) {
    if n < 0 {
        out.push(b'-');
    }
    uint(out, n.unsigned_abs());
}

/// Bytes a JSON string carries as they are: not `"`, `\` or a control character.
static PLAIN: [bool; 256] = {
    let mut t = [false; 256];
    let mut b = 0x20;
    while b < 256 {
        t[b] = b != b'"' as usize && b != b'\\' as usize;
        b += 1;
    }
    t
};

/// `s` as a JSON string, escaped as `serde_json` escapes it.
fn string(out: &mut Vec<u8>, s: &str) {
    out.push(b'"');
    let bytes = s.as_bytes();
    let mut from = 0;
    let mut i = 0;
    while i < bytes.len() {
        // Eight table lookups a step while the text needs no escaping.
        if let Some(block) = bytes.get(i..i + 8) {
            if block
                .iter()
                .fold(true, |all, &c| all & PLAIN[usize::from(c)])
            {
                i += 8;
                continue;
            }
        }
        let c = bytes[i];
        i += 1;
        if PLAIN[usize::from(c)] {
            continue;
        }
        out.extend_from_slice(&bytes[from..i - 1]);
        match c {
            b'"' => out.extend_from_slice(b"\\\""),
            b'\\' => out.extend_from_slice(b"\\\\"),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\r' => out.extend_from_slice(b"\\r"),
            b'\t' => out.extend_from_slice(b"\\t"),
            0x08 => out.extend_from_slice(b"\\b"),
            0x0C => out.extend_from_slice(b"\\f"),
            c => {
                const HEX: &[u8; 16] = b"0123456789abcdef";
                out.extend_from_slice(b"\\u00");
                out.push(HEX[usize::from(c >> 4)]);
                out.push(HEX[usize::from(c & 0xF)]);
            }
        }
        from = i;
    }
    out.extend_from_slice(&bytes[from..]);
    out.push(b'"');
}
