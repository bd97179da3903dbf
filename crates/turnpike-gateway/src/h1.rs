//! The plain-HTTP/1.1 upstream exchange, run inside the request's own task. hyper's
//! client connection runs as a separate task fed through channels (request mpsc,
//! response oneshot, body channel), which costs several task wake-ups and moves per
//! request; here the request future writes the head (and body) straight to the pooled
//! socket, parses the response head with `httparse`, and the response body reads the
//! same socket from the client connection's task, handing it back to the pool at the end.
//! HTTPS upstreams (TLS, HTTP/2 by ALPN) keep using hyper's client (`upstream.rs`).

use std::future::poll_fn;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{ready, Context, Poll};

use bytes::Bytes;
use http::header::{CONNECTION, CONTENT_LENGTH, HOST, TRANSFER_ENCODING};
use http::{request, HeaderMap, HeaderName, HeaderValue, Method, Response, StatusCode, Version};
use http_body::{Body, Frame, SizeHint};
use tokio::io::{AsyncRead, AsyncWriteExt, ReadBuf};
use tokio::net::TcpStream;

use crate::body::{BodyError, RequestBody};
use crate::error::{ErrorKind, GatewayError};
use crate::upstream::EndpointPool;

/// Read buffer of a connection (allocated once per connection, zeroed once).
const READ_BUF: usize = 16 * 1024;
/// Largest upstream response head accepted (hyper's client allows about as much).
const MAX_HEAD: usize = 64 * 1024;
/// Most headers in an upstream response (hyper's default).
const MAX_HEADERS: usize = 100;
/// Largest chunk-size or trailer line.
const MAX_LINE: usize = 4 * 1024;
/// Largest request body sent by this client. It writes the whole request before it
/// reads the response, which cannot deadlock against an upstream that answers while
/// still reading only when the body fits in the sockets' buffers; bigger and chunked
/// bodies go through hyper's full-duplex client.
pub const MAX_DIRECT_BODY: u64 = 16 * 1024;

/// Whether this request can use the in-task client: no body, or a declared one of at
/// most [`MAX_DIRECT_BODY`] bytes.
pub fn fits(headers: &HeaderMap, body: &RequestBody) -> bool {
    match headers.get(CONTENT_LENGTH) {
        Some(v) => std::str::from_utf8(v.as_bytes())
            .ok()
            .and_then(|s| s.trim().parse::<u64>().ok())
            .is_some_and(|n| n <= MAX_DIRECT_BODY),
        None => body.is_end_stream(),
    }
}

/// A pooled plain-TCP upstream connection and its read buffer.
pub struct H1Conn {
    io: TcpStream,
    buf: Vec<u8>,
    start: usize,
    end: usize,
}

impl H1Conn {
    /// Boxed once per connection, so moving it in and out of the pool and the response
    /// body stays cheap.
    pub fn new(io: TcpStream) -> Box<Self> {
        Box::new(H1Conn {
            io,
            buf: vec![0; READ_BUF],
            start: 0,
            end: 0,
        })
    }

    fn pending(&self) -> &[u8] {
        &self.buf[self.start..self.end]
    }

    fn consume(&mut self, n: usize) {
        self.start += n;
        if self.start == self.end {
            self.start = 0;
            self.end = 0;
        }
    }

    /// Reads more bytes after what is pending; `Ok(0)` is end of stream.
    fn poll_fill(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<usize>> {
        if self.start > 0 && self.end == self.buf.len() {
            self.buf.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
        }
        if self.end == self.buf.len() {
            let grown = (self.buf.len() * 2).min(MAX_HEAD + READ_BUF);
            if grown == self.buf.len() {
                return Poll::Ready(Err(io::Error::other("upstream response head too large")));
            }
            self.buf.resize(grown, 0);
        }
        let mut rb = ReadBuf::new(&mut self.buf[self.end..]);
        ready!(Pin::new(&mut self.io).poll_read(cx, &mut rb))?;
        let n = rb.filled().len();
        self.end += n;
        Poll::Ready(Ok(n))
    }

    /// Whether an idle connection is still usable: no bytes and no end of stream are
    /// waiting on it. Costs no syscall when the socket has no new readiness.
    pub async fn is_alive(&mut self) -> bool {
        if self.start != self.end {
            return false;
        }
        poll_fn(|cx| {
            let mut probe = [0u8; 1];
            let mut rb = ReadBuf::new(&mut probe);
            match Pin::new(&mut self.io).poll_read(cx, &mut rb) {
                Poll::Pending => Poll::Ready(true),
                Poll::Ready(_) => Poll::Ready(false),
            }
        })
        .await
    }
}

/// Why an exchange failed before the response head arrived.
enum Failure {
    Body(BodyError),
    Io(io::Error),
    Protocol(String),
}

impl From<Failure> for GatewayError {
    fn from(f: Failure) -> Self {
        match f {
            Failure::Body(BodyError::TooLarge { limit }) => {
                GatewayError::with_source(ErrorKind::BodyTooLarge, BodyError::TooLarge { limit })
            }
            Failure::Body(e) => GatewayError::with_source(ErrorKind::BadRequest, e),
            Failure::Io(e) => GatewayError::with_source(ErrorKind::UpstreamReset, e),
            Failure::Protocol(m) => GatewayError::with_source(ErrorKind::UpstreamProtocol, m),
        }
    }
}

/// How the request body is framed upstream.
enum ReqFraming {
    None,
    Length,
    Chunked,
}

/// Sends the request on `conn` and reads the response head. On success the response's
/// body owns the connection and returns it to `pool` when it ends cleanly.
pub async fn exchange(
    pool: Arc<EndpointPool>,
    mut conn: Box<H1Conn>,
    parts: request::Parts,
    mut body: RequestBody,
    pq: &str,
) -> Result<Response<DirectBody>, GatewayError> {
    let head_only = parts.method == Method::HEAD;
    let framing = if parts.headers.contains_key(CONTENT_LENGTH) {
        ReqFraming::Length
    } else if body.is_end_stream() {
        ReqFraming::None
    } else {
        // Not taken through `fits`; kept correct for any caller.
        ReqFraming::Chunked
    };
    let mut out = Vec::with_capacity(512);
    encode_head(&mut out, &parts, &pool.host, pq, &framing, body.size_hint());
    write_request(&mut conn, out, &mut body, framing).await?;
    drop(body);
    let (resp, body_framing, keep_alive) = read_head(&mut conn, head_only).await?;
    let mut direct = DirectBody {
        conn: Some(conn),
        pool: Some(pool),
        framing: body_framing,
        keep_alive,
    };
    direct.release_if_done();
    Ok(resp.map(|()| direct))
}

fn encode_head(
    out: &mut Vec<u8>,
    parts: &request::Parts,
    host: &HeaderValue,
    pq: &str,
    framing: &ReqFraming,
    hint: SizeHint,
) {
    out.extend_from_slice(parts.method.as_str().as_bytes());
    out.push(b' ');
    out.extend_from_slice(pq.as_bytes());
    out.extend_from_slice(b" HTTP/1.1\r\nhost: ");
    out.extend_from_slice(host.as_bytes());
    out.extend_from_slice(b"\r\n");
    for (name, value) in parts.headers.iter() {
        if name == HOST {
            continue;
        }
        out.extend_from_slice(name.as_str().as_bytes());
        out.extend_from_slice(b": ");
        out.extend_from_slice(value.as_bytes());
        out.extend_from_slice(b"\r\n");
    }
    if let ReqFraming::Chunked = framing {
        match hint.exact() {
            Some(n) => {
                out.extend_from_slice(b"content-length: ");
                out.extend_from_slice(n.to_string().as_bytes());
                out.extend_from_slice(b"\r\n");
            }
            None => out.extend_from_slice(b"transfer-encoding: chunked\r\n"),
        }
    }
    out.extend_from_slice(b"\r\n");
}

/// Writes the head with as much of the body as is at hand, then streams the rest.
async fn write_request(
    conn: &mut H1Conn,
    mut out: Vec<u8>,
    body: &mut RequestBody,
    framing: ReqFraming,
) -> Result<(), Failure> {
    let chunked = matches!(framing, ReqFraming::Chunked) && body.size_hint().exact().is_none();
    if !matches!(framing, ReqFraming::None) {
        loop {
            let frame = poll_fn(|cx| Pin::new(&mut *body).poll_frame(cx)).await;
            match frame {
                None => {
                    if chunked {
                        out.extend_from_slice(b"0\r\n\r\n");
                    }
                    break;
                }
                Some(Err(e)) => return Err(Failure::Body(e)),
                Some(Ok(frame)) => {
                    let Ok(data) = frame.into_data() else {
                        continue; // request trailers are not forwarded
                    };
                    if data.is_empty() {
                        continue;
                    }
                    if chunked {
                        out.extend_from_slice(format!("{:x}\r\n", data.len()).as_bytes());
                        out.extend_from_slice(&data);
                        out.extend_from_slice(b"\r\n");
                    } else {
                        out.extend_from_slice(&data);
                    }
                }
            }
            if body.is_end_stream() {
                if chunked {
                    out.extend_from_slice(b"0\r\n\r\n");
                }
                break;
            }
            conn.io.write_all(&out).await.map_err(Failure::Io)?;
            out.clear();
        }
    }
    conn.io.write_all(&out).await.map_err(Failure::Io)
}

/// Reads and parses the response head (skipping 1xx interim responses).
async fn read_head(
    conn: &mut H1Conn,
    head_only: bool,
) -> Result<(Response<()>, BodyFraming, bool), Failure> {
    loop {
        if conn.start != conn.end {
            if let Some(r) = parse_head(conn, head_only)? {
                return Ok(r);
            }
        }
        if conn.end - conn.start > MAX_HEAD {
            return Err(Failure::Protocol("upstream response head too large".into()));
        }
        let n = poll_fn(|cx| conn.poll_fill(cx))
            .await
            .map_err(Failure::Io)?;
        if n == 0 {
            return Err(Failure::Io(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "upstream closed the connection before a complete response head",
            )));
        }
    }
}

fn parse_head(
    conn: &mut H1Conn,
    head_only: bool,
) -> Result<Option<(Response<()>, BodyFraming, bool)>, Failure> {
    loop {
        let mut slots = [httparse::EMPTY_HEADER; MAX_HEADERS];
        let mut parsed = httparse::Response::new(&mut slots);
        let pending = conn.pending();
        let n = match parsed.parse(pending) {
            Ok(httparse::Status::Complete(n)) => n,
            Ok(httparse::Status::Partial) => return Ok(None),
            Err(e) => return Err(Failure::Protocol(format!("bad upstream response: {e}"))),
        };
        let code = parsed.code.unwrap_or(0);
        let status = StatusCode::from_u16(code)
            .map_err(|_| Failure::Protocol(format!("bad upstream status {code}")))?;
        if status.is_informational() && status != StatusCode::SWITCHING_PROTOCOLS {
            conn.consume(n);
            if conn.start == conn.end {
                return Ok(None);
            }
            continue;
        }
        let version = if parsed.version == Some(0) {
            Version::HTTP_10
        } else {
            Version::HTTP_11
        };
        // One copy of the head; header values are slices of it.
        let head = Bytes::copy_from_slice(&pending[..n]);
        let base = pending.as_ptr() as usize;
        let mut headers = HeaderMap::with_capacity(parsed.headers.len());
        for h in parsed.headers.iter() {
            let name = HeaderName::from_bytes(h.name.as_bytes())
                .map_err(|_| Failure::Protocol("bad upstream header name".into()))?;
            let at = h.value.as_ptr() as usize - base;
            let value = HeaderValue::from_maybe_shared(head.slice(at..at + h.value.len()))
                .map_err(|_| Failure::Protocol("bad upstream header value".into()))?;
            headers.append(name, value);
        }
        conn.consume(n);
        let framing = body_framing(status, head_only, &headers)?;
        let keep_alive = keeps_alive(version, &headers) && !matches!(framing, BodyFraming::Eof);
        let mut resp = Response::new(());
        *resp.status_mut() = status;
        *resp.version_mut() = version;
        *resp.headers_mut() = headers;
        return Ok(Some((resp, framing, keep_alive)));
    }
}

fn body_framing(
    status: StatusCode,
    head_only: bool,
    headers: &HeaderMap,
) -> Result<BodyFraming, Failure> {
    if head_only
        || status == StatusCode::NO_CONTENT
        || status == StatusCode::NOT_MODIFIED
        || status == StatusCode::SWITCHING_PROTOCOLS
    {
        return Ok(BodyFraming::Length(0));
    }
    if let Some(te) = headers.get_all(TRANSFER_ENCODING).iter().next_back() {
        let last = te.as_bytes().rsplit(|b| *b == b',').next().unwrap_or(b"");
        return Ok(if last.trim_ascii().eq_ignore_ascii_case(b"chunked") {
            BodyFraming::Chunked(Chunk::Size)
        } else {
            BodyFraming::Eof
        });
    }
    let mut len = None;
    for v in headers.get_all(CONTENT_LENGTH) {
        for part in v.as_bytes().split(|b| *b == b',') {
            let n = std::str::from_utf8(part.trim_ascii())
                .ok()
                .and_then(|s| s.parse::<u64>().ok())
                .ok_or_else(|| Failure::Protocol("bad upstream content-length".into()))?;
            if len.is_some_and(|l| l != n) {
                return Err(Failure::Protocol(
                    "conflicting upstream content-length".into(),
                ));
            }
            len = Some(n);
        }
    }
    Ok(len.map_or(BodyFraming::Eof, BodyFraming::Length))
}

fn keeps_alive(version: Version, headers: &HeaderMap) -> bool {
    let has = |token: &[u8]| {
        headers.get_all(CONNECTION).iter().any(|v| {
            v.as_bytes()
                .split(|b| *b == b',')
                .any(|t| t.trim_ascii().eq_ignore_ascii_case(token))
        })
    };
    if version == Version::HTTP_11 {
        !has(b"close")
    } else {
        has(b"keep-alive")
    }
}

/// Where the response body stands.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum BodyFraming {
    /// This many bytes remain.
    Length(u64),
    Chunked(Chunk),
    /// Delimited by the upstream closing the connection.
    Eof,
}

/// Chunked decoding state.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Chunk {
    Size,
    Data(u64),
    DataEnd,
    Trailers,
    Done,
}

/// The upstream's response body, read from the connection by the client's task.
pub struct DirectBody {
    conn: Option<Box<H1Conn>>,
    pool: Option<Arc<EndpointPool>>,
    framing: BodyFraming,
    keep_alive: bool,
}

impl DirectBody {
    fn done(&self) -> bool {
        matches!(
            self.framing,
            BodyFraming::Length(0) | BodyFraming::Chunked(Chunk::Done)
        )
    }

    /// At a clean end, the connection goes back to the pool (unless the upstream asked
    /// to close it or sent more than the response).
    fn release_if_done(&mut self) {
        if !self.done() {
            return;
        }
        if let (Some(conn), Some(pool)) = (self.conn.take(), self.pool.take()) {
            if self.keep_alive && conn.start == conn.end {
                pool.put_back_direct(conn);
            }
        }
    }

    /// Decodes what is buffered: a data frame, `None` when more bytes are needed.
    fn decode(&mut self) -> Result<Option<Bytes>, io::Error> {
        let Some(conn) = self.conn.as_mut() else {
            return Ok(None);
        };
        loop {
            let pending = conn.pending();
            match &mut self.framing {
                BodyFraming::Length(0) | BodyFraming::Chunked(Chunk::Done) => return Ok(None),
                BodyFraming::Length(rem) => {
                    if pending.is_empty() {
                        return Ok(None);
                    }
                    let take = pending
                        .len()
                        .min(usize::try_from(*rem).unwrap_or(usize::MAX));
                    let data = Bytes::copy_from_slice(&pending[..take]);
                    *rem -= take as u64;
                    conn.consume(take);
                    return Ok(Some(data));
                }
                BodyFraming::Eof => {
                    if pending.is_empty() {
                        return Ok(None);
                    }
                    let data = Bytes::copy_from_slice(pending);
                    let n = pending.len();
                    conn.consume(n);
                    return Ok(Some(data));
                }
                BodyFraming::Chunked(state) => match *state {
                    Chunk::Size | Chunk::Trailers => {
                        let Some(eol) = pending.windows(2).position(|w| w == b"\r\n") else {
                            if pending.len() > MAX_LINE {
                                return Err(bad_chunk());
                            }
                            return Ok(None);
                        };
                        let line = &pending[..eol];
                        if *state == Chunk::Size {
                            let digits = line.split(|b| *b == b';').next().unwrap_or(b"");
                            let size = std::str::from_utf8(digits.trim_ascii())
                                .ok()
                                .and_then(|s| u64::from_str_radix(s, 16).ok())
                                .ok_or_else(bad_chunk)?;
                            *state = if size == 0 {
                                Chunk::Trailers
                            } else {
                                Chunk::Data(size)
                            };
                        } else if line.is_empty() {
                            *state = Chunk::Done;
                        }
                        conn.consume(eol + 2);
                    }
                    Chunk::Data(rem) => {
                        if pending.is_empty() {
                            return Ok(None);
                        }
                        let take = pending
                            .len()
                            .min(usize::try_from(rem).unwrap_or(usize::MAX));
                        let data = Bytes::copy_from_slice(&pending[..take]);
                        let left = rem - take as u64;
                        *state = if left == 0 {
                            Chunk::DataEnd
                        } else {
                            Chunk::Data(left)
                        };
                        conn.consume(take);
                        return Ok(Some(data));
                    }
                    Chunk::DataEnd => {
                        if pending.len() < 2 {
                            return Ok(None);
                        }
                        if &pending[..2] != b"\r\n" {
                            return Err(bad_chunk());
                        }
                        *state = Chunk::Size;
                        conn.consume(2);
                    }
                    Chunk::Done => return Ok(None),
                },
            }
        }
    }
}

fn bad_chunk() -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        "bad chunked encoding from upstream",
    )
}

#[cfg(test)]
impl DirectBody {
    fn empty_for_test() -> Self {
        DirectBody {
            conn: None,
            pool: None,
            framing: BodyFraming::Length(0),
            keep_alive: false,
        }
    }
}

impl Body for DirectBody {
    type Data = Bytes;
    type Error = io::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, io::Error>>> {
        let this = self.get_mut();
        loop {
            match this.decode() {
                Ok(Some(data)) => {
                    this.release_if_done();
                    return Poll::Ready(Some(Ok(Frame::data(data))));
                }
                Ok(None) if this.done() => {
                    this.release_if_done();
                    return Poll::Ready(None);
                }
                Ok(None) => {}
                Err(e) => {
                    this.conn = None;
                    return Poll::Ready(Some(Err(e)));
                }
            }
            let Some(conn) = this.conn.as_mut() else {
                return Poll::Ready(None);
            };
            match ready!(conn.poll_fill(cx)) {
                Ok(0) if this.framing == BodyFraming::Eof => {
                    this.conn = None;
                    return Poll::Ready(None);
                }
                Ok(0) => {
                    this.conn = None;
                    return Poll::Ready(Some(Err(io::Error::new(
                        io::ErrorKind::UnexpectedEof,
                        "upstream closed the connection before the body ended",
                    ))));
                }
                Ok(_) => {}
                Err(e) => {
                    this.conn = None;
                    return Poll::Ready(Some(Err(e)));
                }
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.done()
    }

    fn size_hint(&self) -> SizeHint {
        match self.framing {
            BodyFraming::Length(n) => SizeHint::with_exact(n),
            _ => SizeHint::default(),
        }
    }
}

/// Opens a new plain-TCP connection (the caller bounds it with the connect timeout).
pub async fn connect(host: &str, port: u16) -> io::Result<Box<H1Conn>> {
    let tcp = TcpStream::connect((host, port)).await?;
    let _ = tcp.set_nodelay(true);
    Ok(H1Conn::new(tcp))
}

#[cfg(test)]
mod tests {
    use super::*;
    use http_body_util::BodyExt;
    use tokio::io::AsyncReadExt;
    use tokio::net::TcpListener;

    use crate::upstream::Upstreams;

    /// Reads one request head (and no body) from a scripted upstream socket.
    async fn read_request(s: &mut TcpStream) -> String {
        let mut got = Vec::new();
        let mut b = [0u8; 1024];
        while !got.windows(4).any(|w| w == b"\r\n\r\n") {
            let n = s.read(&mut b).await.expect("read");
            assert!(n > 0, "client closed");
            got.extend_from_slice(&b[..n]);
        }
        String::from_utf8(got).expect("utf8")
    }

    async fn get(pool: &Arc<EndpointPool>, path: &str) -> (Response<DirectBody>, Bytes) {
        let conn = pool
            .checkout_direct(std::time::Duration::from_secs(5))
            .await
            .expect("connect");
        let (parts, ()) = http::Request::get(path).body(()).expect("req").into_parts();
        let resp = exchange(pool.clone(), conn, parts, RequestBody::empty(), path)
            .await
            .expect("exchange");
        let (head, body) = resp.into_parts();
        let bytes = body.collect().await.expect("body").to_bytes();
        (
            Response::from_parts(head, DirectBody::empty_for_test()),
            bytes,
        )
    }

    #[tokio::test]
    async fn chunked_and_interim_responses_then_reuse_then_reconnect_after_close() {
        let l = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let authority: http::uri::Authority = l
            .local_addr()
            .expect("addr")
            .to_string()
            .parse()
            .expect("authority");
        let server = tokio::spawn(async move {
            let (mut s, _) = l.accept().await.expect("accept");
            let head = read_request(&mut s).await;
            assert!(head.starts_with("GET /a HTTP/1.1\r\nhost: "), "{head}");
            s.write_all(
                b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n\
                  3;x=y\r\nabc\r\n2\r\nde\r\n0\r\nx-trailer: 1\r\n\r\n",
            )
            .await
            .expect("write");
            // Same connection: kept alive and reused.
            let head = read_request(&mut s).await;
            assert!(head.starts_with("GET /b "), "{head}");
            s.write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\nconnection: close\r\n\r\nok")
                .await
                .expect("write");
            drop(s);
            // The closed connection is not reused: a new one comes.
            let (mut s, _) = l.accept().await.expect("accept again");
            let head = read_request(&mut s).await;
            assert!(head.starts_with("GET /c "), "{head}");
            s.write_all(b"HTTP/1.0 200 OK\r\n\r\nuntil-eof")
                .await
                .expect("write");
        });
        let pool = Upstreams::new().pool(false, &authority);
        let (r, body) = get(&pool, "/a").await;
        assert_eq!(r.status(), 200);
        assert_eq!(&body[..], b"abcde");
        let (_, body) = get(&pool, "/b").await;
        assert_eq!(&body[..], b"ok");
        let (r, body) = get(&pool, "/c").await;
        assert_eq!(r.version(), Version::HTTP_10);
        assert_eq!(&body[..], b"until-eof");
        server.await.expect("server");
    }

    #[tokio::test]
    async fn garbage_and_early_close_are_errors() {
        let l = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let authority: http::uri::Authority = l
            .local_addr()
            .expect("addr")
            .to_string()
            .parse()
            .expect("authority");
        tokio::spawn(async move {
            let (mut s, _) = l.accept().await.expect("accept");
            read_request(&mut s).await;
            s.write_all(b"NOT HTTP\r\n\r\n").await.expect("write");
            let (mut s, _) = l.accept().await.expect("accept");
            read_request(&mut s).await;
        });
        let pool = Upstreams::new().pool(false, &authority);
        for kind in [ErrorKind::UpstreamProtocol, ErrorKind::UpstreamReset] {
            let conn = pool
                .checkout_direct(std::time::Duration::from_secs(5))
                .await
                .expect("connect");
            let (parts, ()) = http::Request::get("/").body(()).expect("req").into_parts();
            let e = exchange(pool.clone(), conn, parts, RequestBody::empty(), "/")
                .await
                .err()
                .expect("an error");
            assert_eq!(e.kind, kind);
        }
    }

    fn framing(headers: &[(&'static str, &'static str)]) -> BodyFraming {
        let mut h = HeaderMap::new();
        for (k, v) in headers {
            h.append(*k, HeaderValue::from_static(v));
        }
        body_framing(StatusCode::OK, false, &h).unwrap_or(BodyFraming::Eof)
    }

    #[test]
    fn framing_follows_the_headers() {
        assert_eq!(framing(&[("content-length", "5")]), BodyFraming::Length(5));
        assert_eq!(
            framing(&[("transfer-encoding", "gzip, chunked")]),
            BodyFraming::Chunked(Chunk::Size)
        );
        assert_eq!(framing(&[]), BodyFraming::Eof);
        let mut h = HeaderMap::new();
        h.append(CONTENT_LENGTH, HeaderValue::from_static("1"));
        h.append(CONTENT_LENGTH, HeaderValue::from_static("2"));
        assert!(body_framing(StatusCode::OK, false, &h).is_err());
    }

    #[test]
    fn keep_alive_by_version_and_connection() {
        let mut h = HeaderMap::new();
        assert!(keeps_alive(Version::HTTP_11, &h));
        assert!(!keeps_alive(Version::HTTP_10, &h));
        h.insert(CONNECTION, HeaderValue::from_static("Close"));
        assert!(!keeps_alive(Version::HTTP_11, &h));
    }
}
