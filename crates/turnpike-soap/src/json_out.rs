//! JSON text of a [`Value`] for SOAP-to-REST responses, the same text `serde_json` writes
//! (compact, keys in the map's order), with the string escaping done eight bytes at a
//! time: `serde_json`'s per-byte escape loop was the largest single cost of a 5 KB
//! response after the XML read.

use serde_json::Value;

/// `v` as compact JSON text.
pub fn to_string(v: &Value) -> String {
    let mut out = String::with_capacity(128);
    write_value(&mut out, v);
    out
}

fn write_value(out: &mut String, v: &Value) {
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(true) => out.push_str("true"),
        Value::Bool(false) => out.push_str("false"),
        Value::Number(n) => out.push_str(&n.to_string()),
        Value::String(s) => write_str(out, s),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_value(out, item);
            }
            out.push(']');
        }
        Value::Object(map) => {
            out.push('{');
            for (i, (k, item)) in map.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_str(out, k);
                out.push(':');
                write_value(out, item);
            }
            out.push('}');
        }
    }
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

fn write_str(out: &mut String, s: &str) {
    out.reserve(s.len() + 2);
    out.push('"');
    let bytes = s.as_bytes();
    let mut at = 0;
    while at < bytes.len() {
        let run = crate::xml::plain_run(&bytes[at..], &PLAIN);
        // Every byte that stops a run is ASCII, so `at` stays on a char boundary.
        out.push_str(&s[at..at + run]);
        at += run;
        let Some(&c) = bytes.get(at) else { break };
        match c {
            b'"' => out.push_str("\\\""),
            b'\\' => out.push_str("\\\\"),
            b'\n' => out.push_str("\\n"),
            b'\r' => out.push_str("\\r"),
            b'\t' => out.push_str("\\t"),
            0x08 => out.push_str("\\b"),
            0x0C => out.push_str("\\f"),
            c => {
                const HEX: &[u8; 16] = b"0123456789abcdef";
                out.push_str("\\u00");
                out.push(char::from(HEX[usize::from(c >> 4)]));
                out.push(char::from(HEX[usize::from(c & 0xF)]));
            }
        }
        at += 1;
    }
    out.push('"');
}
