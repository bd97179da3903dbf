//! AWS event-stream frames (`application/vnd.amazon.eventstream`, Bedrock's
//! `ConverseStream`) cut from a body's chunks as they arrive: a 12-byte prelude (total
//! length, headers length, the prelude's CRC-32), typed headers, the payload, the
//! message's CRC-32, all big-endian. Both checksums are checked; a frame is at most
//! [`MAX_FRAME`] bytes, so what waits for its end is capped; a header's value is read
//! only when it is a string (the ones that name the event), the others skipped by their
//! declared size.

/// The most bytes one frame may declare.
pub const MAX_FRAME: usize = 1 << 20;
const PRELUDE: usize = 12;

/// One frame: the headers that say what it is, and its payload (Bedrock's: JSON).
#[derive(Debug, Default, PartialEq)]
pub struct Frame {
    /// `:message-type`: `event` or `exception`.
    pub message_type: Option<String>,
    /// `:event-type` (`contentBlockDelta`, ...) of an event.
    pub event_type: Option<String>,
    /// `:exception-type` of an exception.
    pub exception_type: Option<String>,
    pub payload: Vec<u8>,
}

/// The bytes of frames not yet whole.
#[derive(Default)]
pub struct Frames {
    buf: Vec<u8>,
}

fn be32(b: &[u8], at: usize) -> Option<usize> {
    let w: [u8; 4] = b.get(at..at + 4)?.try_into().ok()?;
    usize::try_from(u32::from_be_bytes(w)).ok()
}

/// Each header type's value size when fixed (`None`: length-prefixed).
fn fixed_size(kind: u8) -> Result<Option<usize>, String> {
    Ok(Some(match kind {
        0 | 1 => 0,
        2 => 1,
        3 => 2,
        4 => 4,
        5 | 8 => 8,
        9 => 16,
        6 | 7 => return Ok(None),
        k => return Err(format!("an event-stream header of unknown type {k}")),
    }))
}

/// The headers block into `frame`.
fn headers(mut h: &[u8], frame: &mut Frame) -> Result<(), String> {
    let short = || "an event-stream header is cut short".to_string();
    while let Some((&name_len, rest)) = h.split_first() {
        let name = rest.get(..usize::from(name_len)).ok_or_else(short)?;
        let rest = rest.get(usize::from(name_len)..).ok_or_else(short)?;
        let (&kind, rest) = rest.split_first().ok_or_else(short)?;
        let (value, rest) = match fixed_size(kind)? {
            Some(n) => (None, rest.get(n..).ok_or_else(short)?),
            None => {
                let len: [u8; 2] = rest
                    .get(..2)
                    .ok_or_else(short)?
                    .try_into()
                    .map_err(|_| short())?;
                let len = usize::from(u16::from_be_bytes(len));
                let v = rest.get(2..2 + len).ok_or_else(short)?;
                (Some(v), rest.get(2 + len..).ok_or_else(short)?)
            }
        };
        if let (Some(v), 7) = (value, kind) {
            let v = Some(String::from_utf8_lossy(v).into_owned());
            match name {
                b":message-type" => frame.message_type = v,
                b":event-type" => frame.event_type = v,
                b":exception-type" => frame.exception_type = v,
                _ => {}
            }
        }
        h = rest;
    }
    Ok(())
}

impl Frames {
    pub fn push(&mut self, chunk: &[u8]) {
        self.buf.extend_from_slice(chunk);
    }

    /// The next whole frame, `Ok(None)` until one arrived, `Err` for a frame that
    /// cannot be one (its length out of bounds, a checksum wrong, a header cut short):
    /// the stream cannot be read past it.
    pub fn next_frame(&mut self) -> Result<Option<Frame>, String> {
        let (Some(total), Some(header_len), Some(crc)) =
            (be32(&self.buf, 0), be32(&self.buf, 4), be32(&self.buf, 8))
        else {
            return Ok(None);
        };
        if !(PRELUDE + 4..=MAX_FRAME).contains(&total) || header_len > total - PRELUDE - 4 {
            return Err(format!(
                "an event-stream frame of {total} bytes (headers {header_len}): at most {MAX_FRAME}"
            ));
        }
        let prelude = self.buf.get(..8).unwrap_or_default();
        if crc != crc32fast::hash(prelude) as usize {
            return Err("an event-stream prelude's checksum is wrong".into());
        }
        let Some(whole) = self.buf.get(..total) else {
            return Ok(None);
        };
        let body_end = total - 4;
        if be32(whole, body_end) != Some(crc32fast::hash(&whole[..body_end]) as usize) {
            return Err("an event-stream message's checksum is wrong".into());
        }
        let mut frame = Frame::default();
        headers(&whole[PRELUDE..PRELUDE + header_len], &mut frame)?;
        frame.payload = whole[PRELUDE + header_len..body_end].to_vec();
        self.buf.drain(..total);
        Ok(Some(frame))
    }

    /// Bytes waiting for their frame's end.
    pub fn pending(&self) -> usize {
        self.buf.len()
    }
}

/// One frame with string headers (for tests and the fuzz target; `echo --llm` has its
/// own encoder).
pub fn encode(headers: &[(&str, &str)], payload: &[u8]) -> Vec<u8> {
    let mut h = Vec::new();
    for (name, value) in headers {
        h.push(u8::try_from(name.len()).unwrap_or(u8::MAX));
        h.extend_from_slice(name.as_bytes());
        h.push(7);
        h.extend_from_slice(&u16::try_from(value.len()).unwrap_or(u16::MAX).to_be_bytes());
        h.extend_from_slice(value.as_bytes());
    }
    let total = PRELUDE + h.len() + payload.len() + 4;
    let mut out = Vec::with_capacity(total);
    out.extend_from_slice(&u32::try_from(total).unwrap_or(u32::MAX).to_be_bytes());
    out.extend_from_slice(&u32::try_from(h.len()).unwrap_or(u32::MAX).to_be_bytes());
    let crc = crc32fast::hash(&out);
    out.extend_from_slice(&crc.to_be_bytes());
    out.extend_from_slice(&h);
    out.extend_from_slice(payload);
    let crc = crc32fast::hash(&out);
    out.extend_from_slice(&crc.to_be_bytes());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(kind: &str, payload: &str) -> Vec<u8> {
        encode(
            &[(":message-type", "event"), (":event-type", kind)],
            payload.as_bytes(),
        )
    }

    #[test]
    fn frames_span_chunks_and_chunks_hold_several() {
        let mut bytes = event("messageStart", r#"{"role":"assistant"}"#);
        bytes.extend(event("contentBlockDelta", r#"{"delta":{"text":"Hi"}}"#));
        let mut f = Frames::default();
        f.push(&bytes[..5]);
        assert_eq!(f.next_frame(), Ok(None));
        f.push(&bytes[5..40]);
        assert_eq!(f.next_frame(), Ok(None));
        f.push(&bytes[40..]);
        let a = f.next_frame().expect("valid").expect("whole");
        assert_eq!(a.event_type.as_deref(), Some("messageStart"));
        assert_eq!(a.message_type.as_deref(), Some("event"));
        assert_eq!(a.payload, br#"{"role":"assistant"}"#);
        let b = f.next_frame().expect("valid").expect("whole");
        assert_eq!(b.event_type.as_deref(), Some("contentBlockDelta"));
        assert_eq!(f.next_frame(), Ok(None));
        assert_eq!(f.pending(), 0);
    }

    #[test]
    fn bad_checksums_and_lengths_are_errors() {
        let mut bytes = event("x", "{}");
        let last = bytes.len() - 1;
        bytes[last] ^= 1;
        let mut f = Frames::default();
        f.push(&bytes);
        assert!(f
            .next_frame()
            .expect_err("message crc")
            .contains("checksum"));
        let mut f = Frames::default();
        let mut huge = (u32::MAX).to_be_bytes().to_vec();
        huge.extend([0; 8]);
        f.push(&huge);
        assert!(f.next_frame().expect_err("too long").contains("at most"));
        let mut f = Frames::default();
        let mut bytes = event("x", "{}");
        bytes[9] ^= 1;
        f.push(&bytes);
        assert!(f.next_frame().expect_err("prelude crc").contains("prelude"));
    }
}
