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
/// Longest response head remembered by [`HeadMemo`] (bytes kept per connection).
const MEMO_MAX: usize = 512;

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

/// One keep-alive connection on an async stream.
pub struct H1Conn {
    io: Box<dyn Io>,
    reader: Reader,
    /// The request being written (reused).
    out: Vec<u8>,
}

impl H1Conn {
    pub fn new(io: Box<dyn Io>) -> Self {
        H1Conn {
            io,
            reader: Reader::new(),
            out: Vec::with_capacity(1024),
        }
    }

    /// The server said `Connection: close` or ended the stream: open a new one.
    pub fn is_closed(&self) -> bool {
        self.reader.is_closed()
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
        loop {
            if let Some(done) = self.reader.advance(head_request)? {
                return Ok(done);
            }
            match self.io.read(self.reader.space()).await? {
                0 => return self.reader.ended(),
                n => self.reader.filled(n),
            }
        }
    }
}

/// How the response body ends.
#[derive(Clone, Copy)]
enum BodyLen {
    Fixed(u64),
    Chunked,
    ToEof,
}

/// Where the reader is within the current response.
#[derive(Clone, Copy)]
enum Part {
    Head,
    /// Body bytes (or, for a chunk, data and its CRLF) still to skip.
    Fixed {
        left: u64,
        chunk: bool,
    },
    ChunkSize,
    Trailers,
    ToEof,
}

/// Responses read from a byte stream, one at a time, whatever the stream (an async
/// connection or the epoll loop's nonblocking socket): bytes go into [`Reader::space`],
/// [`Reader::advance`] says when a response is complete. The buffer is zeroed once and
/// reused; bytes read but not yet consumed are `buf[pos..end]`.
pub struct Reader {
    buf: Vec<u8>,
    pos: usize,
    end: usize,
    part: Part,
    status: u16,
    closed: bool,
    /// Response bytes consumed over the connection's life, and where the current response
    /// began (the received-bytes count).
    consumed: u64,
    began: u64,
    memo: HeadMemo,
}

/// The connection's last response head, its bytes and what they said. A server's heads
/// repeat byte for byte (an echo's or a gateway's change with `Date`, once a second), and
/// equal bytes scan to the same result, so comparing them (a `memcmp`) replaces the scan:
/// the scan was ~960 of the kit's ~1,850 user-space instructions per response (callgrind,
/// issue 32 item 4). A head that differs is scanned as before and remembered instead.
#[derive(Default)]
struct HeadMemo {
    bytes: Vec<u8>,
    head: Option<Head>,
}

impl HeadMemo {
    /// The remembered head, if `buf` starts with its bytes.
    fn get(&self, buf: &[u8]) -> Option<Head> {
        let head = self.head?;
        (buf.get(..self.bytes.len())? == self.bytes.as_slice()).then_some(head)
    }

    /// Remembers `head`, scanned from `bytes` (its whole head), unless it is long.
    fn keep(&mut self, bytes: &[u8], head: Head) {
        if bytes.len() <= MEMO_MAX {
            self.bytes.clear();
            self.bytes.extend_from_slice(bytes);
            self.head = Some(head);
        }
    }
}

impl Default for Reader {
    fn default() -> Self {
        Self::new()
    }
}

impl Reader {
    pub fn new() -> Self {
        Reader {
            buf: vec![0; READ_CHUNK],
            pos: 0,
            end: 0,
            part: Part::Head,
            status: 0,
            closed: false,
            consumed: 0,
            began: 0,
            memo: HeadMemo::default(),
        }
    }

    /// The server said `Connection: close` or ended the stream: open a new one.
    pub fn is_closed(&self) -> bool {
        self.closed
    }

    /// Where to read the next bytes (never empty).
    pub fn space(&mut self) -> &mut [u8] {
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
        &mut self.buf[self.end..]
    }

    /// `n` bytes were read into [`Reader::space`].
    pub fn filled(&mut self, n: usize) {
        self.end = (self.end + n).min(self.buf.len());
    }

    /// The stream ended: the response it completes (a body to the end of the stream), or
    /// an error if one was still expected.
    pub fn ended(&mut self) -> Result<(u16, u64), H1Error> {
        self.closed = true;
        match self.part {
            Part::ToEof => {
                let n = self.buffered();
                self.consume(n);
                Ok(self.done())
            }
            _ => Err(H1Error::Closed),
        }
    }

    /// Consumes what is buffered; (status, bytes received) once a response is complete.
    pub fn advance(&mut self, head_request: bool) -> Result<Option<(u16, u64)>, H1Error> {
        loop {
            match self.part {
                Part::Head => {
                    let Some((status, len, body)) = self.parse_head(head_request)? else {
                        return Ok(None);
                    };
                    self.status = status;
                    self.consume(len);
                    self.part = match body {
                        BodyLen::Fixed(left) => Part::Fixed { left, chunk: false },
                        BodyLen::Chunked => Part::ChunkSize,
                        BodyLen::ToEof => {
                            self.closed = true;
                            Part::ToEof
                        }
                    };
                }
                Part::Fixed { left, chunk } => {
                    let take = (self.buffered() as u64).min(left);
                    self.consume(take as usize);
                    match (left - take, chunk) {
                        (0, false) => return Ok(Some(self.done())),
                        (0, true) => self.part = Part::ChunkSize,
                        (left, _) => {
                            self.part = Part::Fixed { left, chunk };
                            return Ok(None);
                        }
                    }
                }
                Part::ChunkSize => {
                    let Some(line) = self.take_line()? else {
                        return Ok(None);
                    };
                    self.part = match chunk_size(&self.buf[line])? {
                        0 => Part::Trailers,
                        size => Part::Fixed {
                            left: size + 2,
                            chunk: true,
                        },
                    };
                }
                Part::Trailers => match self.take_line()? {
                    Some(line) if line.is_empty() => return Ok(Some(self.done())),
                    Some(_) => {}
                    None => return Ok(None),
                },
                Part::ToEof => {
                    self.consume(self.buffered());
                    return Ok(None);
                }
            }
        }
    }

    /// Ends the current response: (status, its bytes).
    fn done(&mut self) -> (u16, u64) {
        self.part = Part::Head;
        self.compact();
        let n = self.consumed - self.began;
        self.began = self.consumed;
        (self.status, n)
    }

    fn buffered(&self) -> usize {
        self.end - self.pos
    }

    fn consume(&mut self, n: usize) {
        self.pos += n;
        self.consumed += n as u64;
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
        let buffered = &self.buf[self.pos..self.end];
        let head = match self.memo.get(buffered) {
            Some(head) => head,
            None => {
                let Some(head) = scan_head(buffered)? else {
                    if buffered.len() > MAX_HEAD {
                        return Err(H1Error::Parse("response head too large"));
                    }
                    return Ok(None);
                };
                self.memo.keep(&buffered[..head.len], head);
                head
            }
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

    /// Where in `buf` the next CRLF-terminated line is (without the CRLF), consumed; None
    /// if it is not all buffered yet.
    fn take_line(&mut self) -> Result<Option<std::ops::Range<usize>>, H1Error> {
        let start = self.pos;
        let rest = &self.buf[start..self.end];
        match rest.windows(2).position(|w| w == b"\r\n") {
            Some(i) => {
                self.consume(i + 2);
                Ok(Some(start..start + i))
            }
            None if rest.len() > MAX_HEAD => Err(H1Error::Parse("chunk line too long")),
            None => Ok(None),
        }
    }
}

/// What the generator needs from a response head.
#[derive(Clone, Copy)]
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
    let Some(first) = find_byte(buf, b'\n') else {
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
        let Some(nl) = find_byte(&buf[at..], b'\n') else {
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
/// only checked for a name. Names are told apart by length first: most headers match none.
fn header_line(line: &[u8], head: &mut Head) -> Result<(), H1Error> {
    let colon = find_byte(line, b':')
        .filter(|&i| i > 0)
        .ok_or(H1Error::Parse("malformed response header"))?;
    let (name, value) = (&line[..colon], &line[colon + 1..]);
    match name.len() {
        14 if name.eq_ignore_ascii_case(b"content-length") => {
            let n = decimal(value.trim_ascii()).ok_or(H1Error::Parse("bad content-length"))?;
            if !matches!(head.body, BodyLen::Chunked) {
                head.body = BodyLen::Fixed(n);
            }
        }
        // RFC 9112 6.3: chunked framing wins over a Content-Length.
        17 if name.eq_ignore_ascii_case(b"transfer-encoding") && ends_with_chunked(value) => {
            head.body = BodyLen::Chunked
        }
        10 if name.eq_ignore_ascii_case(b"connection")
            && value.trim_ascii().eq_ignore_ascii_case(b"close") =>
        {
            head.close = true
        }
        _ => {}
    }
    Ok(())
}

/// ASCII digits as a number; None if empty, not digits, or past u64.
fn decimal(digits: &[u8]) -> Option<u64> {
    if digits.is_empty() {
        return None;
    }
    digits.iter().try_fold(0u64, |n, &d| {
        let d = d.checked_sub(b'0').filter(|d| *d <= 9)?;
        n.checked_mul(10)?.checked_add(u64::from(d))
    })
}

/// The first `needle` in `hay`, eight bytes at a time: a head's lines are short, and
/// `memchr`'s set-up per call cost more than the search (callgrind, issue 32).
fn find_byte(hay: &[u8], needle: u8) -> Option<usize> {
    const LOW: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let pattern = LOW * u64::from(needle);
    let mut chunks = hay.chunks_exact(8);
    let mut at = 0;
    for chunk in &mut chunks {
        // `try_into` is a plain load: `copy_from_slice` was an out-of-line call and a
        // `memcpy` per word in the ci-bench build (~575 instructions per response).
        let word = u64::from_le_bytes(chunk.try_into().unwrap_or([0; 8]));
        // Zero bytes where the needle is; the lowest flagged byte is the first match.
        let x = word ^ pattern;
        let found = x.wrapping_sub(LOW) & !x & HIGH;
        if found != 0 {
            return Some(at + (found.trailing_zeros() / 8) as usize);
        }
        at += 8;
    }
    let rest = chunks.remainder();
    rest.iter().position(|&b| b == needle).map(|i| at + i)
}

fn trim_cr(line: &[u8]) -> &[u8] {
    match line {
        [rest @ .., b'\r'] => rest,
        _ => line,
    }
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

    #[tokio::test]
    async fn a_repeated_head_is_reused_and_a_changed_one_scanned_again() {
        // The second head repeats the first (reused); the third differs in one digit of
        // its length, the fourth in a header that closes the connection.
        let wire: &[u8] = b"HTTP/1.1 200 OK\r\ncontent-length: 5\r\n\r\nhello\
            HTTP/1.1 200 OK\r\ncontent-length: 5\r\n\r\nworld\
            HTTP/1.1 200 OK\r\ncontent-length: 3\r\n\r\nabc\
            HTTP/1.1 200 OK\r\ncontent-length: 3\r\n\r\nabc\
            HTTP/1.1 404 OK\r\nconnection: close\r\ncontent-length: 0\r\n\r\n";
        let mut c = conn_reading(wire).await;
        let head = 38;
        for (status, body) in [(200, 5), (200, 5), (200, 3), (200, 3)] {
            assert_eq!(
                c.receive(false).await.expect("response"),
                (status, head + body)
            );
            assert!(!c.is_closed());
        }
        assert_eq!(c.receive(false).await.expect("last").0, 404);
        assert!(c.is_closed());
        // A head request's answer is bodiless whatever the remembered head said.
        let mut c = conn_reading(
            b"HTTP/1.1 200 OK\r\ncontent-length: 5\r\n\r\nhello\
            HTTP/1.1 200 OK\r\ncontent-length: 5\r\n\r\n",
        )
        .await;
        assert_eq!(c.receive(false).await.expect("get").1, head + 5);
        assert_eq!(c.receive(true).await.expect("head").1, head);
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

    #[test]
    fn byte_search_and_decimals_agree_with_the_plain_versions() {
        let hay: Vec<u8> = (0..200u32).map(|i| (i * 37 % 251) as u8).collect();
        for start in 0..40 {
            for needle in [b'\n', b':', 0, 255, hay[start + 17]] {
                let plain = hay[start..].iter().position(|&b| b == needle);
                assert_eq!(find_byte(&hay[start..], needle), plain, "{start} {needle}");
            }
        }
        assert_eq!(find_byte(b"", b'x'), None);
        assert_eq!(decimal(b"0"), Some(0));
        assert_eq!(decimal(b"18446744073709551615"), Some(u64::MAX));
        for bad in [&b""[..], b"18446744073709551616", b"1x", b"-1", b" 1"] {
            assert_eq!(decimal(bad), None, "{}", String::from_utf8_lossy(bad));
        }
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
