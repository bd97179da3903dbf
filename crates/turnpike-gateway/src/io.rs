//! The client and upstream sockets as the connection loops, parking and upgrades see
//! them: [`JsonErrorsIo`] (hyper's own error answers replaced by the table's),
//! [`WatchedIo`] (what parking watches), the boxed [`Io`] of upgrades with the
//! [`UpgradeSlot`] a `101` leaves its relay job in, and [`read_ahead`], which serves the
//! bytes read past a head before the socket.
//!
//! [`JsonErrorsIo`] wraps a client connection's socket. hyper's HTTP/1.1 server writes
//! its own `400`, `414` and `431` (a head it cannot parse, a target or head too large)
//! with an empty body; every answer of the gateway's service carries `x-request-id`, so a
//! `4xx` head without one was written by hyper, and is replaced on its way out by the
//! table's answer (`bad_request`, `uri_too_long`, `headers_too_large`).

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use bytes::{Buf, Bytes};
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;

use crate::conn_limit::{ConnLimits, ParkedMark};
use crate::drain::Watcher;
use crate::error::{json_body, ErrorKind};
use crate::headers;

/// A socket of either side, boxed: upgrades are rare, and the relay is one code path
/// for plain and TLS sockets, parked and unparked connections.
pub(crate) trait Io: AsyncRead + AsyncWrite + Send + Unpin + 'static {}
impl<T: AsyncRead + AsyncWrite + Send + Unpin + 'static> Io for T {}

/// The client's socket after the `101`, with the bytes hyper had read past the head.
pub(crate) struct ClientIo {
    io: Box<dyn Io>,
    unread: Bytes,
}

impl ClientIo {
    pub(crate) fn new(io: Box<dyn Io>, unread: Bytes) -> Self {
        ClientIo { io, unread }
    }
}

impl AsyncRead for ClientIo {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = &mut *self;
        if read_ahead(&mut this.unread, buf) {
            return Poll::Ready(Ok(()));
        }
        Pin::new(&mut this.io).poll_read(cx, buf)
    }
}

impl AsyncWrite for ClientIo {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.io).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }
}

type BoxFuture = Pin<Box<dyn Future<Output = ()> + Send>>;

/// What runs on an upgraded connection: given the client's socket and the drain
/// watcher, relays until either side closes or the gateway drains.
pub(crate) type RelayJob = Box<dyn FnOnce(ClientIo, Watcher) -> BoxFuture + Send>;

/// A connection's upgrade in progress: set by the service with its `101`, taken by the
/// connection's serve loop once hyper let the socket go. Empty for every other request.
#[derive(Default)]
pub(crate) struct UpgradeSlot {
    job: Mutex<Option<RelayJob>>,
    /// Where the relay is counted (`turnpike_connections_upgraded`).
    limits: Option<Arc<ConnLimits>>,
}

impl UpgradeSlot {
    /// A slot whose relays are counted in `limits`.
    pub(crate) fn counted(limits: Arc<ConnLimits>) -> Self {
        UpgradeSlot {
            job: Mutex::new(None),
            limits: Some(limits),
        }
    }

    pub(crate) fn put(&self, job: RelayJob) {
        *self.job.lock().unwrap_or_else(|p| p.into_inner()) = Some(job);
    }

    pub(crate) fn take(&self) -> Option<RelayJob> {
        self.job.lock().unwrap_or_else(|p| p.into_inner()).take()
    }

    /// A `101` is on its way: the connection must not be parked.
    pub(crate) fn is_pending(&self) -> bool {
        self.job.lock().unwrap_or_else(|p| p.into_inner()).is_some()
    }

    /// Counts the connection as upgraded while the mark lives.
    pub(crate) fn mark(&self) -> Option<ParkedMark<'_>> {
        self.limits.as_ref().map(|l| l.upgraded_mark())
    }
}

/// The upstream side of an upgraded connection.
pub(crate) type UpstreamIo = TokioIo<hyper::upgrade::Upgraded>;

/// A whole HTTP/1.1 answer from the error table that closes the connection.
pub(crate) fn error_answer(kind: ErrorKind) -> Vec<u8> {
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

/// What the socket saw, for the sweep. Only the connection's task writes it.
#[derive(Default)]
pub(crate) struct Traffic {
    /// Reads that returned (bytes or the end).
    reads: AtomicU64,
    /// Writes that went out (in part or whole).
    writes: AtomicU64,
    /// The last write could not go out: hyper holds bytes a park would lose.
    write_blocked: AtomicBool,
}

impl Traffic {
    pub(crate) fn reads(&self) -> u64 {
        self.reads.load(Ordering::Relaxed)
    }

    pub(crate) fn writes(&self) -> u64 {
        self.writes.load(Ordering::Relaxed)
    }

    pub(crate) fn write_blocked(&self) -> bool {
        self.write_blocked.load(Ordering::Relaxed)
    }

    fn read(&self) {
        // One writer: a load and a store, no locked instruction.
        self.reads.store(self.reads() + 1, Ordering::Relaxed);
    }

    fn wrote<T>(&self, r: &Poll<io::Result<T>>) {
        self.write_blocked.store(r.is_pending(), Ordering::Relaxed);
        if r.is_ready() {
            self.writes.store(self.writes() + 1, Ordering::Relaxed);
        }
    }
}

/// The client socket as hyper sees it: bytes read before a park come first.
pub(crate) struct WatchedIo {
    pub(crate) stream: TcpStream,
    pub(crate) unread: Bytes,
    pub(crate) traffic: Arc<Traffic>,
}

/// Serves a read from `unread` (bytes read past what their first reader used, handed
/// on with the socket) before the socket itself: whether it did.
pub(crate) fn read_ahead(unread: &mut Bytes, buf: &mut ReadBuf<'_>) -> bool {
    if unread.is_empty() {
        return false;
    }
    let n = unread.len().min(buf.remaining());
    buf.put_slice(&unread[..n]);
    unread.advance(n);
    true
}

impl AsyncRead for WatchedIo {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = &mut *self;
        if read_ahead(&mut this.unread, buf) {
            return Poll::Ready(Ok(()));
        }
        let r = Pin::new(&mut this.stream).poll_read(cx, buf);
        if r.is_ready() {
            this.traffic.read();
        }
        r
    }
}

impl AsyncWrite for WatchedIo {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let r = Pin::new(&mut self.stream).poll_write(cx, buf);
        self.traffic.wrote(&r);
        r
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let r = Pin::new(&mut self.stream).poll_write_vectored(cx, bufs);
        self.traffic.wrote(&r);
        r
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let r = Pin::new(&mut self.stream).poll_shutdown(cx);
        self.traffic.wrote(&r);
        r
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
