//! JSON bytes <-> jaq values. Reading goes through serde_json (strict JSON, nesting
//! limited to 128 levels); writing is strict too, unlike jaq's own printer: NaN becomes
//! `null` and infinities the largest finite double (as jq does), byte strings and
//! non-string keys are refused, and the output cap and a depth limit are checked while
//! writing.

use jaq_json::{Num, Val};

use crate::error::MediationErrorKind;

/// Deepest nesting written (reading is limited by serde_json to 128).
pub(crate) const MAX_DEPTH: usize = 256;

/// Parses a whole body. An empty (or all-whitespace) body reads as `null`.
pub(crate) fn parse(bytes: &[u8]) -> Result<Val, MediationErrorKind> {
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Ok(Val::Null);
    }
    serde_json::from_slice::<Val>(bytes).map_err(|e| MediationErrorKind::BadJson(e.to_string()))
}

/// Writes `v` as compact JSON, failing past `cap` bytes.
pub(crate) fn write(v: &Val, cap: usize) -> Result<Vec<u8>, MediationErrorKind> {
    let mut out = Out {
        buf: Vec::with_capacity(128.min(cap)),
        cap,
    };
    out.value(v, 0)?;
    Ok(out.buf)
}

struct Out {
    buf: Vec<u8>,
    cap: usize,
}

fn unrepresentable(message: impl Into<String>) -> MediationErrorKind {
    MediationErrorKind::Unrepresentable {
        format: "JSON",
        message: message.into(),
    }
}

impl Out {
    #[inline]
    fn push(&mut self, bytes: &[u8]) -> Result<(), MediationErrorKind> {
        if self.buf.len() + bytes.len() > self.cap {
            return Err(MediationErrorKind::OutputTooLarge(self.cap));
        }
        self.buf.extend_from_slice(bytes);
        Ok(())
    }

    fn value(&mut self, v: &Val, depth: usize) -> Result<(), MediationErrorKind> {
        match v {
            Val::Null => self.push(b"null"),
            Val::Bool(true) => self.push(b"true"),
            Val::Bool(false) => self.push(b"false"),
            Val::Num(n) => self.num(n),
            Val::TStr(s) => self.string(s),
            Val::BStr(_) => Err(unrepresentable("a byte string is not JSON")),
            Val::Arr(a) => {
                if depth >= MAX_DEPTH {
                    return Err(unrepresentable(format!("nesting deeper than {MAX_DEPTH}")));
                }
                self.push(b"[")?;
                for (i, x) in a.iter().enumerate() {
                    if i > 0 {
                        self.push(b",")?;
                    }
                    self.value(x, depth + 1)?;
                }
                self.push(b"]")
            }
            Val::Obj(o) => {
                if depth >= MAX_DEPTH {
                    return Err(unrepresentable(format!("nesting deeper than {MAX_DEPTH}")));
                }
                self.push(b"{")?;
                for (i, (k, x)) in o.iter().enumerate() {
                    if i > 0 {
                        self.push(b",")?;
                    }
                    match k {
                        Val::TStr(s) => self.string(s)?,
                        _ => return Err(unrepresentable("an object key that is not a string")),
                    }
                    self.push(b":")?;
                    self.value(x, depth + 1)?;
                }
                self.push(b"}")
            }
        }
    }

    fn num(&mut self, n: &Num) -> Result<(), MediationErrorKind> {
        match n {
            Num::Float(x) if x.is_nan() => self.push(b"null"),
            Num::Float(x) if x.is_infinite() => {
                let text = if *x > 0.0 {
                    "1.7976931348623157e+308"
                } else {
                    "-1.7976931348623157e+308"
                };
                self.push(text.as_bytes())
            }
            n => self.push(n.to_string().as_bytes()),
        }
    }

    fn string(&mut self, s: &[u8]) -> Result<(), MediationErrorKind> {
        let text = String::from_utf8_lossy(s);
        self.push(b"\"")?;
        let mut start = 0;
        let bytes = text.as_bytes();
        for (i, &b) in bytes.iter().enumerate() {
            let escape: Option<&[u8]> = match b {
                b'"' => Some(b"\\\""),
                b'\\' => Some(b"\\\\"),
                b'\n' => Some(b"\\n"),
                b'\r' => Some(b"\\r"),
                b'\t' => Some(b"\\t"),
                0x08 => Some(b"\\b"),
                0x0c => Some(b"\\f"),
                0x00..=0x1f | 0x7f => None,
                _ => continue,
            };
            self.push(&bytes[start..i])?;
            match escape {
                Some(e) => self.push(e)?,
                None => self.push(format!("\\u{b:04x}").as_bytes())?,
            }
            start = i + 1;
        }
        self.push(&bytes[start..])?;
        self.push(b"\"")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round(text: &str) -> String {
        let v = parse(text.as_bytes()).expect("parses");
        String::from_utf8(write(&v, 1 << 20).expect("writes")).expect("utf8")
    }

    #[test]
    fn types_survive_a_round_trip() {
        assert_eq!(
            round(r#"{"a":[1],"b":"{\"x\":1}","c":[],"d":1.5,"e":"ü\u0001\"","f":null}"#),
            r#"{"a":[1],"b":"{\"x\":1}","c":[],"d":1.5,"e":"ü\u0001\"","f":null}"#
        );
        assert_eq!(round(" "), "null");
    }

    #[test]
    fn bad_json_and_deep_json_are_refused() {
        assert!(matches!(parse(b"{"), Err(MediationErrorKind::BadJson(_))));
        let deep = "[".repeat(10_000);
        assert!(matches!(
            parse(deep.as_bytes()),
            Err(MediationErrorKind::BadJson(_))
        ));
        assert!(matches!(parse(b"NaN"), Err(MediationErrorKind::BadJson(_))));
    }
}
