//! One request and its response head over a pooled [`H1Conn`]: the head (and a small
//! body) written straight to the socket, the response head parsed with `httparse`, and
//! the response body left owning the connection (`body.rs`).

use std::future::{poll_fn, Future};
use std::io;
use std::pin::Pin;
use std::sync::Arc;

use bytes::Bytes;
use http::header::{CONNECTION, CONTENT_LENGTH, HOST, TRANSFER_ENCODING};
use http::{request, HeaderMap, HeaderName, HeaderValue, Method, Response, StatusCode, Version};
use http_body::{Body, SizeHint};
use tokio::io::AsyncWriteExt;
use turnpike_policy::http::content_length;

use super::body::{BodyFraming, Chunk, DirectBody};
use super::conn::{H1Conn, MAX_HEAD};
use crate::client_body::{BodyError, ClientBody};
use crate::error::{ErrorKind, GatewayError};
use crate::upstream::pool::EndpointPool;

/// Most headers in an upstream response (hyper's default).
const MAX_HEADERS: usize = 100;
/// Largest request body sent by this client. It writes the whole request before it
/// reads the response, which cannot deadlock against an upstream that answers while
/// still reading only when the body fits in the sockets' buffers; bigger and chunked
/// bodies go through hyper's full-duplex client.
pub(crate) const MAX_DIRECT_BODY: u64 = 16 * 1024;

/// Whether this request can use the in-task client: no body, or a declared one of at
/// most [`MAX_DIRECT_BODY`] bytes.
pub(crate) fn fits(headers: &HeaderMap, body: &ClientBody) -> bool {
    match content_length(headers) {
        Ok(Some(n)) => n <= MAX_DIRECT_BODY,
        Ok(None) => body.is_end_stream(),
        // hyper's server refused such a head already; hyper's client is the safe side.
        Err(_) => false,
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
            Failure::Body(e @ BodyError::ReadTimeout { .. }) => {
                GatewayError::with_source(ErrorKind::RequestTimeout, e)
            }
            Failure::Body(e) => GatewayError::with_source(ErrorKind::BadRequest, e),
            Failure::Io(e) => GatewayError::with_source(ErrorKind::UpstreamReset, e),
            Failure::Protocol(m) => GatewayError::with_source(ErrorKind::UpstreamProtocol, m),
        }
    }
}

/// The upstream request line's path, written as is: the endpoint's base path, the
/// request path below the API's context, and the query. All three come from an already
/// validated URI or the compiled endpoint.
pub(crate) struct UpstreamPath<'a> {
    pub base: &'a str,
    pub path: &'a str,
    pub query: Option<&'a str>,
    /// `X-Forwarded-*` to write while encoding (the header map's rules, without
    /// inserting into the map: hashing and growing it cost ~3,000 instructions a request);
    /// `None` when they are already in the map.
    pub forwarded: Option<&'a crate::headers::Forwarded<'a>>,
}

/// How the request body is framed upstream.
enum ReqFraming {
    None,
    Length,
    Chunked,
}

/// Sends the request on `conn` and reads the response head. On success the response's
/// body owns the connection and returns it to `pool` when it ends cleanly.
/// Not an `async fn`, and the body borrowed from the forwarder (an async fn holds each
/// argument twice, rust-lang/rust#62958): every plain-HTTP request's future holds this
/// one. The body is taken (left empty) once written.
#[allow(clippy::manual_async_fn)] // deliberately not an async fn: see the doc comment
pub(crate) fn exchange<'a>(
    pool: Arc<EndpointPool>,
    mut conn: Box<H1Conn>,
    parts: &'a request::Parts,
    body: &'a mut ClientBody,
    path: UpstreamPath<'a>,
) -> impl Future<Output = Result<Response<DirectBody>, GatewayError>> + Send + 'a {
    async move {
        let head_only = parts.method == Method::HEAD;
        let framing = if parts.headers.contains_key(CONTENT_LENGTH) {
            ReqFraming::Length
        } else if body.is_end_stream() {
            ReqFraming::None
        } else {
            // Not taken through `fits`; kept correct for any caller.
            ReqFraming::Chunked
        };
        let mut out = std::mem::take(&mut conn.wbuf);
        out.clear();
        encode_head(
            &mut out,
            parts,
            &pool.host,
            &path,
            &framing,
            body.size_hint(),
        );
        write_request(&mut conn, &mut out, body, framing).await?;
        conn.wbuf = out;
        // Written: what the body holds (a buffering reservation, the client's stream)
        // goes now, not when the forwarder ends.
        drop(std::mem::replace(body, ClientBody::empty()));
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
}

fn encode_head(
    out: &mut Vec<u8>,
    parts: &request::Parts,
    host: &HeaderValue,
    path: &UpstreamPath<'_>,
    framing: &ReqFraming,
    hint: SizeHint,
) {
    out.extend_from_slice(parts.method.as_str().as_bytes());
    out.push(b' ');
    out.extend_from_slice(path.base.as_bytes());
    out.extend_from_slice(path.path.as_bytes());
    if path.base.is_empty() && path.path.is_empty() {
        // `UpstreamTarget::set_endpoint_only` on an endpoint with no path of its own.
        out.push(b'/');
    }
    if let Some(q) = path.query {
        out.push(b'?');
        out.extend_from_slice(q.as_bytes());
    }
    out.extend_from_slice(b" HTTP/1.1\r\nhost: ");
    out.extend_from_slice(host.as_bytes());
    out.extend_from_slice(b"\r\n");
    // The client's `Host` is replaced by the upstream's; `X-Forwarded-*` are written as
    // `headers::Forwarded::apply` would put them in the map (when not already there).
    let fwd = path.forwarded;
    let (mut saw_for, mut saw_proto, mut saw_host) = (false, false, false);
    for (name, value) in parts.headers.iter() {
        if name == HOST {
            continue;
        }
        if let Some(f) = fwd {
            if name == crate::headers::X_FORWARDED_FOR {
                // The first list gets the client appended; later ones are dropped.
                if !saw_for {
                    saw_for = true;
                    out.extend_from_slice(b"x-forwarded-for: ");
                    out.extend_from_slice(value.as_bytes());
                    out.extend_from_slice(b", ");
                    out.extend_from_slice(f.client_ip.as_bytes());
                    out.extend_from_slice(b"\r\n");
                }
                continue;
            }
            saw_proto |= name == crate::headers::X_FORWARDED_PROTO;
            saw_host |= name == crate::headers::X_FORWARDED_HOST;
        }
        out.extend_from_slice(name.as_str().as_bytes());
        out.extend_from_slice(b": ");
        out.extend_from_slice(value.as_bytes());
        out.extend_from_slice(b"\r\n");
    }
    if let Some(f) = fwd {
        if !saw_for {
            out.extend_from_slice(b"x-forwarded-for: ");
            out.extend_from_slice(f.client_ip.as_bytes());
            out.extend_from_slice(b"\r\n");
        }
        if !saw_proto {
            out.extend_from_slice(if f.https {
                b"x-forwarded-proto: https\r\n"
            } else {
                b"x-forwarded-proto: http\r\n"
            });
        }
        if !saw_host {
            let client_host = parts.headers.get(HOST).map(HeaderValue::as_bytes);
            let authority = parts.uri.authority().map(|a| a.as_str().as_bytes());
            if let Some(h) = authority.or(client_host) {
                out.extend_from_slice(b"x-forwarded-host: ");
                out.extend_from_slice(h);
                out.extend_from_slice(b"\r\n");
            }
        }
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
    out: &mut Vec<u8>,
    body: &mut ClientBody,
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
            conn.io.write_all(out).await.map_err(Failure::Io)?;
            out.clear();
        }
    }
    conn.io.write_all(out).await.map_err(Failure::Io)
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
        // RFC 9110 §15: status codes are 100-599 (`http` accepts up to 999).
        let status = StatusCode::from_u16(code)
            .ok()
            .filter(|_| code < 600)
            .ok_or_else(|| Failure::Protocol(format!("bad upstream status {code}")))?;
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
        // Room for what the gateway adds (X-Request-ID, the rate-limit headers: up to
        // three in the legacy style) without regrowing the map.
        let mut headers = HeaderMap::with_capacity(parsed.headers.len() + 5);
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
    // Not digits, or a list of differing values: where the body ends is unknown.
    let len = content_length(headers)
        .map_err(|_| Failure::Protocol("bad or conflicting upstream content-length".into()))?;
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

#[cfg(test)]
mod tests;
