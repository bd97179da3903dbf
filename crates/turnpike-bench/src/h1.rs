//! The generator's own HTTP/1.1 keep-alive client: one request written from a buffer the
//! connection reuses, the response head scanned in place for its framing headers and its
//! body skipped (Content-Length, chunked, or to the end of the stream), with no per-request
//! allocation, task or channel. hyper's client costs a dispatch task, a oneshot channel and
//! a header map per request, which made the generator spend more CPU per request than wrk
//! (issue 32 item 4); HTTP/2 and the token endpoint still use hyper (see `client`).

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

/// The byte stream under a connection: TCP or TLS.
pub trait Io: AsyncRead + AsyncWrite + Unpin + Send {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send> Io for T {}

/// Most headers a response may carry; more is a protocol error for the generator.
const MAX_HEADERS: usize = 64;
/// Largest response head accepted (a bound on the read buffer for heads).
const MAX_HEAD: usize = 64 * 1024;
/// Bytes read per `read` call.
const READ_CHUNK: usize = 16 * 1024;

/// Why an exchange failed (the connection is then dropped).
#[derive(Debug, thiserror::Error)]
pub enum H1Error {
    #[error("io: {0}")]
    Io(#[from] std::io::Error),
    #[error("connection closed before the response ended")]
    Closed,
    #[error("bad response: {0}")]
    Parse(&'static str),
}

/// One keep-alive connection.
pub struct H1Conn {
    io: Box<dyn Io>,
    /// Read buffer, zeroed once and reused: bytes read but not yet consumed are
    /// `buf[pos..end]`.
    buf: Vec<u8>,
    pos: usize,
    end: usize,
    /// The request being written (reused).
    out: Vec<u8>,
    closed: bool,
    /// Response bytes consumed over the connection's life (the received-bytes count).
    consumed: u64,
}

/// How the response body ends.
enum BodyLen {
    Fixed(u64),
    Chunked,
    ToEof,
}

impl H1Conn {
    pub fn new(io: Box<dyn Io>) -> Self {
        H1Conn {
            io,
            buf: vec![0; READ_CHUNK],
            pos: 0,
            end: 0,
            out: Vec::with_capacity(1024),
            closed: false,
            consumed: 0,
        }
    }

    /// The server said `Connection: close` or ended the stream: open a new one.
    pub fn is_closed(&self) -> bool {
        self.closed
    }

    /// Writes the request `fill` puts in the (cleared) out buffer; returns the bytes sent.
    pub async fn send(&mut self, fill: impl FnOnce(&mut Vec<u8>)) -> Result<u64, H1Error> {
        self.out.clear();
        fill(&mut self.out);
        self.io.write_all(&self.out).await?;
        Ok(self.out.len() as u64)
    }

    /// Reads one whole response; returns (status, bytes received).
    pub async fn receive(&mut self, head_request: bool) -> Result<(u16, u64), H1Error> {
        let before = self.consumed;
        let (status, head_len, body) = loop {
            if let Some(head) = self.parse_head(head_request)? {
                break head;
            }
            self.fill().await?;
        };
        self.advance(head_len);
        match body {
            BodyLen::Fixed(n) => self.skip(n).await?,
            BodyLen::Chunked => self.skip_chunked().await?,
            BodyLen::ToEof => {
                self.closed = true;
                self.skip_to_eof().await?
            }
        }
        self.compact();
        Ok((status, self.consumed - before))
    }

    fn buffered(&self) -> usize {
        self.end - self.pos
    }

    fn advance(&mut self, n: usize) {
        self.pos += n;
        self.consumed += n as u64;
    }

    /// Reads more bytes; end of stream is an error (a response was still expected).
    async fn fill(&mut self) -> Result<(), H1Error> {
        self.compact();
        if self.end == self.buf.len() {
            if self.pos > 0 {
                self.buf.copy_within(self.pos..self.end, 0);
                self.end -= self.pos;
                self.pos = 0;
            } else {
                // Only a head or chunk line longer than the buffer gets here, and those
                // are refused beyond MAX_HEAD: the buffer stays bounded.
                self.buf.resize(self.buf.len() * 2, 0);
            }
        }
        match self.io.read(&mut self.buf[self.end..]).await? {
            0 => {
                self.closed = true;
                Err(H1Error::Closed)
            }
            n => {
                self.end += n;
                Ok(())
            }
        }
    }

    /// Starts the buffer over once everything read is consumed (the usual case).
    fn compact(&mut self) {
        if self.pos == self.end {
            self.pos = 0;
            self.end = 0;
        }
    }

    /// The response head at the front of the buffer, if all of it has arrived: its status,
    /// length and body framing. A scan for the three headers that frame the body instead of
    /// a full parse (`httparse` with a 64-entry header array cost ~1,800 instructions per
    /// response, more than wrk's whole request; issue 32 item 4).
    fn parse_head(&mut self, head_request: bool) -> Result<Option<(u16, usize, BodyLen)>, H1Error> {
        let Some(head) = scan_head(&self.buf[self.pos..self.end])? else {
            if self.buffered() > MAX_HEAD {
                return Err(H1Error::Parse("response head too large"));
            }
            return Ok(None);
        };
        let status = head.status;
        let mut body = head.body;
        self.closed |= head.close;
        // RFC 9112 6.3: these never have a body, whatever the headers say.
        if head_request || status == 204 || status == 304 || (100..200).contains(&status) {
            body = BodyLen::Fixed(0);
        }
        if head.http10 && !matches!(body, BodyLen::Fixed(_)) {
            self.closed = true;
        }
        Ok(Some((status, head.len, body)))
    }

    /// Consumes `n` body bytes.
    async fn skip(&mut self, mut n: u64) -> Result<(), H1Error> {
        loop {
            let take = (self.buffered() as u64).min(n);
            self.advance(take as usize);
            n -= take;
            if n == 0 {
                return Ok(());
            }
            self.fill().await?;
        }
    }

    async fn skip_to_eof(&mut self) -> Result<(), H1Error> {
        loop {
            self.advance(self.buffered());
            match self.fill().await {
                Ok(()) => {}
                Err(H1Error::Closed) => return Ok(()),
                Err(e) => return Err(e),
            }
        }
    }

    /// Consumes a chunked body up to and including its trailer section.
    async fn skip_chunked(&mut self) -> Result<(), H1Error> {
        loop {
            let size = loop {
                if let Some(line) = self.take_line()? {
                    break chunk_size(&self.buf[line])?;
                }
                self.fill().await?;
            };
            if size == 0 {
                // Trailers, then the empty line.
                loop {
                    match self.take_line()? {
                        Some(l) if l.is_empty() => return Ok(()),
                        Some(_) => {}
                        None => self.fill().await?,
                    }
                }
            }
            self.skip(size + 2).await?;
        }
    }

    /// Where in `buf` the next CRLF-terminated line is (without the CRLF), consumed; None
    /// if it is not all buffered yet.
    fn take_line(&mut self) -> Result<Option<std::ops::Range<usize>>, H1Error> {
        let start = self.pos;
        let rest = &self.buf[start..self.end];
        match rest.windows(2).position(|w| w == b"\r\n") {
            Some(i) => {
                self.advance(i + 2);
                Ok(Some(start..start + i))
            }
            None if rest.len() > MAX_HEAD => Err(H1Error::Parse("chunk line too long")),
            None => Ok(None),
        }
    }
}

/// What the generator needs from a response head.
struct Head {
    status: u16,
    /// Bytes up to and including the blank line.
    len: usize,
    body: BodyLen,
    close: bool,
    http10: bool,
}

/// Scans `buf` for a complete response head: None when its blank line has not arrived.
fn scan_head(buf: &[u8]) -> Result<Option<Head>, H1Error> {
    let Some(first) = memchr::memchr(b'\n', buf) else {
        return Ok(None);
    };
    let (status, http10) = status_line(trim_cr(&buf[..first]))?;
    let mut head = Head {
        status,
        len: 0,
        body: BodyLen::ToEof,
        close: false,
        http10,
    };
    let mut at = first + 1;
    for _ in 0..=MAX_HEADERS {
        let Some(nl) = memchr::memchr(b'\n', &buf[at..]) else {
            return Ok(None);
        };
        let line = trim_cr(&buf[at..at + nl]);
        at += nl + 1;
        if line.is_empty() {
            head.len = at;
            return Ok(Some(head));
        }
        header_line(line, &mut head)?;
    }
    Err(H1Error::Parse("too many response headers"))
}

/// `HTTP/1.x NNN reason`: the status and whether it is HTTP/1.0.
fn status_line(line: &[u8]) -> Result<(u16, bool), H1Error> {
    let bad = H1Error::Parse("malformed status line");
    match line {
        [b'H', b'T', b'T', b'P', b'/', b'1', b'.', minor @ (b'0' | b'1'), b' ', a, b, c, rest @ ..]
            if [a, b, c].iter().all(|d| d.is_ascii_digit())
                && rest.first().is_none_or(|&sp| sp == b' ') =>
        {
            let status = [a, b, c]
                .iter()
                .fold(0u16, |n, &&d| n * 10 + u16::from(d - b'0'));
            Ok((status, *minor == b'0'))
        }
        _ => Err(bad),
    }
}

/// Notes the framing headers (Content-Length, Transfer-Encoding, Connection); others are
/// only checked for a name.
fn header_line(line: &[u8], head: &mut Head) -> Result<(), H1Error> {
    let colon = memchr::memchr(b':', line)
        .filter(|&i| i > 0)
        .ok_or(H1Error::Parse("malformed response header"))?;
    let (name, value) = (&line[..colon], line[colon + 1..].trim_ascii());
    if name.eq_ignore_ascii_case(b"content-length") {
        let n = std::str::from_utf8(value)
            .ok()
            .and_then(|v| v.parse().ok())
            .ok_or(H1Error::Parse("bad content-length"))?;
        if !matches!(head.body, BodyLen::Chunked) {
            head.body = BodyLen::Fixed(n);
        }
    } else if name.eq_ignore_ascii_case(b"transfer-encoding") && ends_with_chunked(value) {
        // RFC 9112 6.3: chunked framing wins over a Content-Length.
        head.body = BodyLen::Chunked;
    } else if name.eq_ignore_ascii_case(b"connection") && value.eq_ignore_ascii_case(b"close") {
        head.close = true;
    }
    Ok(())
}

fn trim_cr(line: &[u8]) -> &[u8] {
    line.strip_suffix(b"\r").unwrap_or(line)
}

fn ends_with_chunked(v: &[u8]) -> bool {
    v.rsplit(|&b| b == b',')
        .next()
        .is_some_and(|last| last.trim_ascii().eq_ignore_ascii_case(b"chunked"))
}

fn chunk_size(line: &[u8]) -> Result<u64, H1Error> {
    let hex = line
        .split(|&b| b == b';')
        .next()
        .unwrap_or_default()
        .trim_ascii();
    std::str::from_utf8(hex)
        .ok()
        .and_then(|h| u64::from_str_radix(h, 16).ok())
        .ok_or(H1Error::Parse("bad chunk size"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A connection whose peer sends `wire` then closes.
    async fn conn_reading(wire: &'static [u8]) -> H1Conn {
        let (client, mut server) = tokio::io::duplex(64);
        tokio::spawn(async move {
            // Small writes exercise the partial-head and partial-body paths.
            for part in wire.chunks(7) {
                let _ = server.write_all(part).await;
            }
        });
        H1Conn::new(Box::new(client))
    }

    #[tokio::test]
    async fn reads_fixed_chunked_and_eof_bodies_in_sequence() {
        let wire: &[u8] = b"HTTP/1.1 200 OK\r\ncontent-length: 5\r\n\r\nhello\
            HTTP/1.1 503 Busy\r\ntransfer-encoding: chunked\r\n\r\n3;x=y\r\nabc\r\n0\r\nT: 1\r\n\r\n\
            HTTP/1.1 204 No Content\r\ncontent-length: 10\r\n\r\n\
            HTTP/1.0 200 OK\r\n\r\nuntil the end";
        let mut c = conn_reading(wire).await;
        assert_eq!(c.receive(false).await.expect("1").0, 200);
        assert_eq!(c.receive(false).await.expect("2").0, 503);
        assert_eq!(c.receive(false).await.expect("3").0, 204);
        assert!(!c.is_closed());
        let (status, _) = c.receive(false).await.expect("4");
        assert_eq!(status, 200);
        assert!(
            c.is_closed(),
            "a body to the end of the stream closes the connection"
        );
    }

    #[tokio::test]
    async fn counts_every_byte_received() {
        let wire: &[u8] = b"HTTP/1.1 200 OK\r\ncontent-length: 3\r\n\r\nabcHTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n";
        let mut c = conn_reading(wire).await;
        let a = c.receive(false).await.expect("1").1;
        let b = c.receive(false).await.expect("2").1;
        assert_eq!(a + b, wire.len() as u64);
    }

    #[test]
    fn scans_heads_whole_or_waits_for_the_rest() {
        let wire = b"HTTP/1.1 200 OK\r\nContent-Length: 12\r\nX: y\r\n\r\nbody";
        for cut in 0..wire.len() - 4 {
            assert!(scan_head(&wire[..cut]).expect("partial").is_none(), "{cut}");
        }
        let head = scan_head(wire).expect("ok").expect("complete");
        assert_eq!((head.status, head.len), (200, wire.len() - 4));
        assert!(matches!(head.body, BodyLen::Fixed(12)));
        // Bare LF line ends, no reason phrase, and chunked winning over a length.
        let lf = b"HTTP/1.0 503\ncontent-length: 3\nTransfer-Encoding: gzip, chunked\n\n";
        let head = scan_head(lf).expect("ok").expect("complete");
        assert_eq!((head.status, head.http10, head.len), (503, true, lf.len()));
        assert!(matches!(head.body, BodyLen::Chunked));
        for bad in [
            &b"HTTP/2 200 OK\r\n\r\n"[..],
            b"HTTP/1.1 2x0 OK\r\n\r\n",
            b"HTTP/1.1 200OK\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nno colon\r\n\r\n",
            b"HTTP/1.1 200 OK\r\n: empty name\r\n\r\n",
        ] {
            assert!(scan_head(bad).is_err(), "{}", String::from_utf8_lossy(bad));
        }
        let mut many = b"HTTP/1.1 200 OK\r\n".to_vec();
        for _ in 0..=MAX_HEADERS {
            many.extend_from_slice(b"a: b\r\n");
        }
        many.extend_from_slice(b"\r\n");
        assert!(matches!(scan_head(&many), Err(H1Error::Parse(_))));
    }

    #[tokio::test]
    async fn truncated_and_malformed_responses_are_errors() {
        let mut c = conn_reading(b"HTTP/1.1 200 OK\r\ncontent-length: 10\r\n\r\nabc").await;
        assert!(matches!(c.receive(false).await, Err(H1Error::Closed)));
        let mut c = conn_reading(b"HTTP/1.1 200 OK\r\ncontent-length: x\r\n\r\n").await;
        assert!(matches!(c.receive(false).await, Err(H1Error::Parse(_))));
        let mut c =
            conn_reading(b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\nzz\r\n").await;
        assert!(matches!(c.receive(false).await, Err(H1Error::Parse(_))));
        let mut c =
            conn_reading(b"HTTP/1.1 200 OK\r\nconnection: close\r\ncontent-length: 0\r\n\r\n")
                .await;
        assert!(c.receive(false).await.is_ok());
        assert!(c.is_closed());
    }
}
