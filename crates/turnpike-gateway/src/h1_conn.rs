//! Client connections' edges that hyper answers itself, made to answer like the rest of
//! the gateway (the error table's JSON body, a request id):
//!
//! - [`JsonErrorsIo`] wraps a client connection's socket. hyper's HTTP/1.1 server writes
//!   its own `400`, `414` and `431` (a head it cannot parse, a target or head too large)
//!   with an empty body; every answer of the gateway's service carries `x-request-id`,
//!   so a `4xx` head without one was written by hyper, and is replaced on its way out by
//!   the table's answer (`bad_request`, `uri_too_long`, `headers_too_large`).
//! - [`serve_h1`] drives an HTTP/1.1 connection and, when hyper gives up on a request
//!   head that did not arrive in time (`header_read_timeout`), answers `408
//!   request_timeout` if part of a head was received (an idle keep-alive connection is
//!   just closed, as HTTP allows).
//! - [`Drain`] is the graceful shutdown of all connections (hyper-util's cannot watch
//!   the driver above): a signal each connection turns into hyper's graceful shutdown,
//!   and a wait until every connection ended. The same channel carries the park sweep
//!   (`park.rs`), so a connection watches one thing, not two.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::HttpService;
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio::sync::watch;

use crate::error::{json_body, ErrorKind};
use crate::headers;
use crate::upgrade::{ClientIo, UpgradeSlot};

/// What a connection is told: drain, or (a sweep) look whether you are idle.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Signal {
    pub(crate) draining: bool,
}

/// A connection's receiving end of [`Drain`].
pub(crate) type Watcher = watch::Receiver<Signal>;

/// `true` when the signal that woke `watcher` (or a closed channel) means: drain.
pub(crate) fn draining(woke: Result<(), watch::error::RecvError>, watcher: &mut Watcher) -> bool {
    woke.is_err() || watcher.borrow_and_update().draining
}

/// The graceful shutdown of every client connection.
pub(crate) struct Drain {
    /// Plain-HTTP connections: drains and park sweeps.
    plain: watch::Sender<Signal>,
    /// TLS connections: drains only (they are not parked; a sweep would only wake them).
    tls: watch::Sender<Signal>,
}

impl Drain {
    pub(crate) fn new() -> Drain {
        Drain {
            plain: watch::channel(Signal::default()).0,
            tls: watch::channel(Signal::default()).0,
        }
    }

    /// Held by a connection until it ends; tells it when to shut down gracefully (and,
    /// for a plain-HTTP one, when to look whether it is idle).
    pub(crate) fn watcher(&self, tls: bool) -> Watcher {
        if tls {
            self.tls.subscribe()
        } else {
            self.plain.subscribe()
        }
    }

    /// A sender of sweeps to the plain-HTTP connections (a drain still waits for them).
    pub(crate) fn sweeper(&self) -> Sweeper {
        Sweeper(self.plain.clone())
    }

    /// Asks every connection to finish its request in flight and close, and waits until
    /// all have.
    pub(crate) async fn shutdown(self) {
        for tx in [&self.plain, &self.tls] {
            tx.send_modify(|s| s.draining = true);
        }
        self.plain.closed().await;
        self.tls.closed().await;
    }
}

/// Wakes every plain-HTTP connection to look whether it is idle (see `park.rs`).
pub(crate) struct Sweeper(watch::Sender<Signal>);

impl Sweeper {
    pub(crate) fn sweep(&self) {
        self.0.send_modify(|_| {});
    }
}

/// A connection hyper can shut down gracefully (HTTP/1.1 and HTTP/2 server connections).
pub(crate) trait Graceful: Future {
    fn begin_graceful(self: Pin<&mut Self>);
}

impl<I, S, B> Graceful for http1::Connection<I, S>
where
    S: HttpService<Incoming, ResBody = B>,
    S::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    I: hyper::rt::Read + hyper::rt::Write + Unpin,
    B: http_body::Body + 'static,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    fn begin_graceful(self: Pin<&mut Self>) {
        self.graceful_shutdown();
    }
}

impl<I, S, B, E> Graceful for hyper::server::conn::http2::Connection<I, S, E>
where
    S: HttpService<Incoming, ResBody = B>,
    S::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    I: hyper::rt::Read + hyper::rt::Write + Unpin,
    B: http_body::Body + 'static,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    E: hyper::rt::bounds::Http2ServerConnExec<S::Future, B>,
{
    fn begin_graceful(self: Pin<&mut Self>) {
        self.graceful_shutdown();
    }
}

/// Runs `conn` to its end; when `drain` signals, asks it to shut down gracefully and
/// keeps running it (`drain` is held until the end, which is what [`Drain::shutdown`]
/// waits for).
pub(crate) async fn until_done<C: Graceful>(conn: Pin<&mut C>, drain: &mut Watcher) -> C::Output {
    let mut conn = conn;
    let mut asked = false;
    loop {
        tokio::select! {
            out = conn.as_mut() => return out,
            r = drain.changed(), if !asked => {
                if draining(r, drain) {
                    asked = true;
                    conn.as_mut().begin_graceful();
                }
            }
        }
    }
}

/// Serves one HTTP/1.1 connection until it ends or drains; a request head cut short by
/// the header-read timeout gets `408 request_timeout` before the close.
pub(crate) async fn serve_h1<T, S, B>(
    builder: &http1::Builder,
    io: T,
    service: S,
    mut drain: Watcher,
    upgrade: &UpgradeSlot,
) -> hyper::Result<()>
where
    T: AsyncRead + AsyncWrite + Send + Unpin + 'static,
    S: HttpService<Incoming, ResBody = B> + Unpin,
    S::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    B: http_body::Body + 'static,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let mut conn = builder.serve_connection(TokioIo::new(JsonErrorsIo::new(io)), service);
    let result = until_done(Pin::new(&mut conn), &mut drain).await;
    ended(result, conn, upgrade, &drain).await
}

/// A connection hyper finished: a request head cut short by the header-read timeout
/// gets `408 request_timeout` before the close; a connection hyper let go after a `101`
/// (the service left a relay job in `upgrade`) is taken apart, and the job runs on its
/// socket (with the bytes hyper read past the head) until the relay ends or `drain`
/// says so.
pub(crate) async fn ended<T, S, B>(
    result: hyper::Result<()>,
    conn: http1::Connection<TokioIo<JsonErrorsIo<T>>, S>,
    upgrade: &UpgradeSlot,
    drain: &Watcher,
) -> hyper::Result<()>
where
    T: AsyncRead + AsyncWrite + Send + Unpin + 'static,
    S: HttpService<Incoming, ResBody = B>,
    S::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    B: http_body::Body + 'static,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    match result {
        Ok(()) => {
            if let Some(job) = upgrade.take() {
                let _counted = upgrade.mark();
                let parts = conn.into_parts();
                let (io, _) = parts.io.into_inner().into_parts();
                let client = ClientIo::new(Box::new(io), parts.read_buf);
                job(client, drain.clone()).await;
            }
            Ok(())
        }
        Err(e) if e.is_timeout() => {
            let parts = conn.into_parts();
            if !parts.read_buf.is_empty() {
                answer_timeout(parts.io.into_inner()).await;
            }
            Err(e)
        }
        other => other,
    }
}

/// Writes `408 request_timeout` (a head that did not arrive in time) and closes.
pub(crate) async fn answer_timeout<T: AsyncWrite + Unpin>(mut io: T) {
    let answer = error_answer(ErrorKind::RequestTimeout);
    let _ = tokio::time::timeout(std::time::Duration::from_secs(1), async {
        io.write_all(&answer).await?;
        io.shutdown().await
    })
    .await;
}

/// A whole HTTP/1.1 answer from the error table that closes the connection.
fn error_answer(kind: ErrorKind) -> Vec<u8> {
    let spec = kind.spec();
    let id = headers::next_request_id();
    let body = json_body(spec.code, spec.message, id.as_bytes());
    let mut out = format!(
        "HTTP/1.1 {} {}\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\
         connection: close\r\nx-request-id: ",
        spec.status.as_u16(),
        spec.status.canonical_reason().unwrap_or(""),
        body.len()
    )
    .into_bytes();
    out.extend_from_slice(id.as_bytes());
    out.extend_from_slice(b"\r\n\r\n");
    out.extend_from_slice(&body);
    out
}

/// Which table row replaces an answer hyper wrote itself, if `head` is one: a `400`,
/// `414` or `431` head without the `x-request-id` every gateway answer has.
fn hypers_own(head: &[u8]) -> Option<ErrorKind> {
    let kind = match head.get(..13)? {
        b"HTTP/1.1 400 " => ErrorKind::BadRequest,
        b"HTTP/1.1 414 " => ErrorKind::UriTooLong,
        b"HTTP/1.1 431 " => ErrorKind::HeadersTooLarge,
        _ => return None,
    };
    let end = head.windows(4).position(|w| w == b"\r\n\r\n")?;
    let head = &head[..end];
    let ours = head
        .split(|b| *b == b'\n')
        .any(|line| line.len() >= 13 && line[..13].eq_ignore_ascii_case(b"x-request-id:"));
    (!ours).then_some(kind)
}

/// A client socket whose hyper-written error answers are replaced (see the module).
pub(crate) struct JsonErrorsIo<T> {
    inner: T,
    /// A replacement answer still to be written, and how much of it is out.
    pending: Option<(Bytes, usize)>,
}

impl<T> JsonErrorsIo<T> {
    pub(crate) fn new(inner: T) -> Self {
        JsonErrorsIo {
            inner,
            pending: None,
        }
    }

    /// The socket back, with a replacement answer not yet written, if any.
    pub(crate) fn into_parts(self) -> (T, Option<Bytes>) {
        let rest = self
            .pending
            .map(|(bytes, done)| bytes.slice(done.min(bytes.len())..));
        (self.inner, rest)
    }
}

impl<T: AsyncWrite + Unpin> JsonErrorsIo<T> {
    /// Writes what is left of a replacement answer.
    fn poll_pending(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        while let Some((bytes, done)) = &mut self.pending {
            if *done >= bytes.len() {
                self.pending = None;
                break;
            }
            let n = std::task::ready!(Pin::new(&mut self.inner).poll_write(cx, &bytes[*done..]))?;
            if n == 0 {
                return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
            }
            *done += n;
        }
        Poll::Ready(Ok(()))
    }

    /// `Some(len)` when `buf` is hyper's own error answer: it is swapped for the
    /// table's and reported written whole.
    #[cold]
    fn replace(&mut self, buf: &[u8], len: usize) -> Option<usize> {
        let kind = hypers_own(buf)?;
        self.pending = Some((Bytes::from(error_answer(kind)), 0));
        Some(len)
    }
}

impl<T: AsyncRead + Unpin> AsyncRead for JsonErrorsIo<T> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for JsonErrorsIo<T> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        std::task::ready!(self.poll_pending(cx))?;
        if buf.first() == Some(&b'H') {
            if let Some(n) = self.replace(buf, buf.len()) {
                return Poll::Ready(Ok(n));
            }
        }
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        std::task::ready!(self.poll_pending(cx))?;
        if let Some(first) = bufs.iter().find(|b| !b.is_empty()) {
            if first.first() == Some(&b'H') {
                let total = bufs.iter().map(|b| b.len()).sum();
                if let Some(n) = self.replace(first, total) {
                    return Poll::Ready(Ok(n));
                }
            }
        }
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        std::task::ready!(self.poll_pending(cx))?;
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        std::task::ready!(self.poll_pending(cx))?;
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_heads_without_a_request_id_are_hypers() {
        let hyper =
            b"HTTP/1.1 431 Request Header Fields Too Large\r\ncontent-length: 0\r\ndate: x\r\n\r\n";
        assert_eq!(hypers_own(hyper), Some(ErrorKind::HeadersTooLarge));
        let hyper = b"HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\n\r\n";
        assert_eq!(hypers_own(hyper), Some(ErrorKind::BadRequest));
        let ours = b"HTTP/1.1 400 Bad Request\r\ncontent-type: application/json\r\nx-request-id: 1\r\n\r\n{}";
        assert_eq!(hypers_own(ours), None);
        assert_eq!(hypers_own(b"HTTP/1.1 200 OK\r\n\r\n"), None);
        assert_eq!(
            hypers_own(b"HTTP/1.1 400 Bad"),
            None,
            "a head cut short is left alone"
        );
    }

    #[test]
    fn the_answer_is_the_tables() {
        let a = String::from_utf8(error_answer(ErrorKind::RequestTimeout)).unwrap_or_default();
        assert!(a.starts_with("HTTP/1.1 408 Request Timeout\r\n"), "{a}");
        assert!(a.contains("\r\nconnection: close\r\n"), "{a}");
        let body = a.split_once("\r\n\r\n").map(|(_, b)| b).unwrap_or_default();
        let v: serde_json::Value = serde_json::from_str(body).unwrap_or_default();
        assert_eq!(v["code"], "request_timeout");
    }
}
