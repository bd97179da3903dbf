//! A pooled plain-TCP upstream connection of the in-task client and its read buffer.
//! It names no pool: the pool keeps these, and the exchange and the response body
//! (`exchange.rs`, `body.rs`) read and write through them.

use std::future::poll_fn;
use std::io;
use std::pin::Pin;
use std::task::{ready, Context, Poll};

use tokio::io::{AsyncRead, ReadBuf};
use tokio::net::TcpStream;

/// Read buffer of a connection (allocated once per connection, zeroed once).
const READ_BUF: usize = 16 * 1024;
/// Largest upstream response head accepted (hyper's client allows about as much).
pub(super) const MAX_HEAD: usize = 64 * 1024;

/// A pooled plain-TCP upstream connection and its read buffer.
pub(crate) struct H1Conn {
    pub(super) io: TcpStream,
    /// The request head being written (kept for the next request on this connection).
    pub(super) wbuf: Vec<u8>,
    pub(super) buf: Vec<u8>,
    pub(super) start: usize,
    pub(super) end: usize,
    /// The endpoint's connection slot this connection holds (freed when it closes).
    slot: Option<tokio::sync::OwnedSemaphorePermit>,
}

impl H1Conn {
    /// Boxed once per connection, so moving it in and out of the pool and the response
    /// body stays cheap.
    pub(crate) fn new(io: TcpStream) -> Box<Self> {
        Box::new(H1Conn {
            io,
            wbuf: Vec::with_capacity(512),
            buf: vec![0; READ_BUF],
            start: 0,
            end: 0,
            slot: None,
        })
    }

    /// Holds one of the endpoint's connection slots for as long as this lives.
    pub(crate) fn hold(&mut self, slot: tokio::sync::OwnedSemaphorePermit) {
        self.slot = Some(slot);
    }

    pub(super) fn pending(&self) -> &[u8] {
        &self.buf[self.start..self.end]
    }

    pub(super) fn consume(&mut self, n: usize) {
        self.start += n;
        if self.start == self.end {
            self.start = 0;
            self.end = 0;
        }
    }

    /// Reads more bytes after what is pending; `Ok(0)` is end of stream.
    pub(super) fn poll_fill(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<usize>> {
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
    pub(crate) async fn is_alive(&mut self) -> bool {
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

/// Opens a new plain-TCP connection (the caller bounds it with the connect timeout).
pub(crate) async fn connect(host: &str, port: u16) -> io::Result<Box<H1Conn>> {
    let tcp = TcpStream::connect((host, port)).await?;
    let _ = tcp.set_nodelay(true);
    Ok(H1Conn::new(tcp))
}
