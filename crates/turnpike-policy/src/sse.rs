//! Server-Sent Events cut from a body's chunks as they arrive (an event may span
//! chunks, a chunk may hold several). What waits for its end is capped. One reader for
//! every kind that reads a streamed answer (an LLM's, a proxied MCP server's).

/// The most bytes one event may hold while it waits for its end.
pub const MAX_EVENT: usize = 1 << 20;

/// One event: its `event:` name and its `data:` lines joined.
#[derive(Debug, PartialEq)]
pub struct Event {
    pub name: Option<String>,
    /// Its `id:` (a resumable stream's position), kept so a relay can pass it on.
    pub id: Option<String>,
    pub data: String,
}

impl Event {
    /// The event as it goes on the wire again (`event:`, `id:`, one `data:` per line).
    pub fn write(&self, out: &mut Vec<u8>) {
        if let Some(n) = &self.name {
            out.extend_from_slice(b"event: ");
            out.extend_from_slice(n.as_bytes());
            out.push(b'\n');
        }
        if let Some(id) = &self.id {
            out.extend_from_slice(b"id: ");
            out.extend_from_slice(id.as_bytes());
            out.push(b'\n');
        }
        for line in self.data.split('\n') {
            out.extend_from_slice(b"data: ");
            out.extend_from_slice(line.as_bytes());
            out.push(b'\n');
        }
        out.push(b'\n');
    }
}

/// The bytes of events not yet whole.
#[derive(Default)]
pub struct Events {
    buf: Vec<u8>,
}

impl Events {
    /// Adds a chunk (`\r` dropped: `\r\n` line ends read as `\n`); `Err` when an event
    /// grows past [`MAX_EVENT`].
    pub fn push(&mut self, chunk: &[u8]) -> Result<(), String> {
        self.buf
            .extend(chunk.iter().copied().filter(|b| *b != b'\r'));
        if self.buf.len() > MAX_EVENT && !self.buf.windows(2).any(|w| w == b"\n\n") {
            return Err(format!("a streamed event exceeds {MAX_EVENT} bytes"));
        }
        Ok(())
    }

    /// The next whole event, if one arrived.
    pub fn next_event(&mut self) -> Option<Event> {
        loop {
            let end = self.buf.windows(2).position(|w| w == b"\n\n")?;
            let raw: Vec<u8> = self.buf.drain(..end + 2).collect();
            let text = String::from_utf8_lossy(&raw[..end]);
            let mut e = Event {
                name: None,
                id: None,
                data: String::new(),
            };
            let mut any = false;
            for line in text.lines() {
                let (field, value) = line.split_once(':').unwrap_or((line, ""));
                let value = value.strip_prefix(' ').unwrap_or(value);
                match field {
                    "event" => e.name = Some(value.to_owned()),
                    "id" => e.id = Some(value.to_owned()),
                    "data" => {
                        if any {
                            e.data.push('\n');
                        }
                        e.data.push_str(value);
                        any = true;
                    }
                    _ => {}
                }
            }
            if any || e.name.is_some() || e.id.is_some() {
                return Some(e);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_span_chunks_and_chunks_hold_several() {
        let mut ev = Events::default();
        ev.push(b"event: a\r\ndata: {\"x\"").expect("push");
        assert_eq!(ev.next_event(), None);
        ev.push(b":1}\r\n\r\n: comment\n\ndata: 2\ndata: 3\n\n")
            .expect("push");
        assert_eq!(
            ev.next_event(),
            Some(Event {
                name: Some("a".into()),
                id: None,
                data: "{\"x\":1}".into()
            })
        );
        assert_eq!(
            ev.next_event(),
            Some(Event {
                name: None,
                id: None,
                data: "2\n3".into()
            })
        );
        assert_eq!(ev.next_event(), None);
        let big = vec![b'x'; MAX_EVENT + 1];
        assert!(ev.push(&big).is_err());
    }
}
