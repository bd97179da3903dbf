//! Idle timeout for HTTP/2 connections, which hyper does not have: the IO is wrapped to
//! count reads and writes, and a timer checks once per period whether anything moved.
//! (On HTTP/1.1 hyper's header-read timer already bounds the wait for the next request.)

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

pin_project_lite::pin_project! {
    /// An IO stream that counts its successful reads and writes.
    pub struct ActivityIo<T> {
        #[pin]
        inner: T,
        activity: Arc<AtomicU64>,
    }
}

impl<T> ActivityIo<T> {
    pub(crate) fn new(inner: T) -> (Self, Arc<AtomicU64>) {
        let activity = Arc::new(AtomicU64::new(0));
        (
            ActivityIo {
                inner,
                activity: activity.clone(),
            },
            activity,
        )
    }
}

impl<T: AsyncRead> AsyncRead for ActivityIo<T> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.project();
        let r = this.inner.poll_read(cx, buf);
        if r.is_ready() {
            this.activity.fetch_add(1, Ordering::Relaxed);
        }
        r
    }
}

impl<T: AsyncWrite> AsyncWrite for ActivityIo<T> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.project();
        let r = this.inner.poll_write(cx, buf);
        if r.is_ready() {
            this.activity.fetch_add(1, Ordering::Relaxed);
        }
        r
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.project();
        let r = this.inner.poll_write_vectored(cx, bufs);
        if r.is_ready() {
            this.activity.fetch_add(1, Ordering::Relaxed);
        }
        r
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.project().inner.poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.project().inner.poll_shutdown(cx)
    }
}

/// Runs `conn` until it ends or nothing moved on it for a whole `idle` period (then the
/// connection is dropped, which closes it).
pub(crate) async fn watch_idle<F, E>(
    conn: F,
    activity: Arc<AtomicU64>,
    idle: Duration,
) -> Result<(), E>
where
    F: Future<Output = Result<(), E>>,
{
    tokio::pin!(conn);
    let mut seen = activity.load(Ordering::Relaxed);
    loop {
        tokio::select! {
            r = &mut conn => return r,
            _ = tokio::time::sleep(idle) => {
                let now = activity.load(Ordering::Relaxed);
                if now == seen {
                    tracing::debug!(?idle, "closing an idle HTTP/2 connection");
                    return Ok(());
                }
                seen = now;
            }
        }
    }
}
