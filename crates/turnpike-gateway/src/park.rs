//! Idle HTTP/1.1 connections that hold no buffers ("parked").
//!
//! hyper keeps, for every connection it serves, a read and a write buffer (8 KiB each)
//! and its dispatcher's state for as long as the connection lives, idle or not: 10,000
//! idle keep-alive clients held about 270 MiB. Here a plain-HTTP/1.1 connection that has
//! had no request in flight, no bytes from the client and no write left waiting for a
//! whole sweep period is parked: hyper's connection is taken apart
//! (`Connection::into_parts`: the socket, the bytes read but not yet parsed, the service)
//! and dropped, and the task waits for the socket to become readable holding nothing
//! else. The next bytes start a new hyper connection, fed the unparsed bytes first. A new
//! connection starts parked (nothing is allocated until its first bytes).
//!
//! - Busy connections are never parked (a read during the last period keeps one awake),
//!   so a request pays no rebuild; the sweep is one tick per gateway on the channel the
//!   drain already uses, so a request pays nothing for it either.
//! - The wait for the next request keeps hyper's rule: a parked connection closes after
//!   the header-read timeout; a request head cut short by a park keeps its deadline
//!   across parks and gets `408 request_timeout` when it passes, as without parking.
//! - A drain closes parked connections at once (they have nothing in flight).
//!
//! - An upgraded connection (a WebSocket) is never parked: while its `101` is on its
//!   way the connection counts as busy, and once hyper lets the socket go the serve loop
//!   ends in the relay (`upgrade/`), which parks nothing.
//!
//! TLS connections are not parked: rustls keeps its own buffers and may hold decrypted
//! bytes the socket's readiness would not announce.

use std::future::poll_fn;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::HttpService;
use hyper_util::rt::TokioIo;
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;
use tokio::time::Instant;

use crate::conn_limit::ConnPermit;
use crate::drain::{draining, Watcher};
use crate::h1_conn;
use crate::io::{JsonErrorsIo, Traffic, UpgradeSlot, WatchedIo};
use crate::self_wake::{ConnWake, SelfWake};

/// Moves when connections were parked since the last sweep (their buffers freed): an
/// allocator hands free pages back to the OS lazily, during later allocation work an
/// idle gateway never does, so the binary returns them when the epoch moved (see
/// [`set_memory_release`]).
static RELEASE_EPOCH: AtomicU64 = AtomicU64::new(0);
static RELEASE: std::sync::OnceLock<fn()> = std::sync::OnceLock::new();

/// See [`RELEASE_EPOCH`]: a multi-threaded runtime's idle workers compare it with the
/// last epoch they saw.
pub fn memory_release_epoch() -> u64 {
    RELEASE_EPOCH.load(Ordering::Relaxed)
}

/// What returns free memory to the OS (the allocator's collect), called by the sweep on
/// its own thread when the epoch moves; the first setting stays.
pub fn set_memory_release(release: fn()) {
    let _ = RELEASE.set(release);
}

/// Called by the sweeper with the parked count now; `previous` keeps the last one.
pub(crate) fn note_parked(now: usize, previous: &AtomicUsize) {
    if now > previous.swap(now, Ordering::Relaxed) {
        RELEASE_EPOCH.fetch_add(1, Ordering::Relaxed);
        if let Some(release) = RELEASE.get() {
            release();
        }
    }
}

/// What a parking connection holds: its permit (counted as parked while parked) and its
/// upgrade slot (a `101` on its way ends the loop in the relay).
pub(crate) struct Held<'a> {
    pub(crate) permit: &'a ConnPermit,
    pub(crate) upgrade: &'a UpgradeSlot,
    /// The connection's wake state (`self_wake.rs`), its requests' too.
    pub(crate) wake: &'a Arc<ConnWake>,
}

/// Serves one plain-TCP HTTP/1.1 connection until it ends or drains, parking it whenever
/// a sweep finds it idle (see the module). `busy` says whether a request of this
/// connection is in flight (its response body not yet dropped by hyper).
pub(crate) async fn serve_parking<S, B>(
    builder: &http1::Builder,
    stream: TcpStream,
    service: S,
    mut drain: Watcher,
    busy: impl Fn() -> bool,
    head_timeout: Duration,
    conn: Held<'_>,
) -> hyper::Result<()>
where
    S: HttpService<Incoming, ResBody = B> + Unpin,
    S::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    B: http_body::Body + 'static,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let Held {
        permit,
        upgrade,
        wake: conn_wake,
    } = conn;
    let traffic = Arc::new(Traffic::default());
    let mut io = WatchedIo {
        stream,
        unread: Bytes::new(),
        traffic: traffic.clone(),
    };
    let mut service = service;
    // A request head cut short by a park: when it began, and the writes then (a write
    // since means that head was answered and the bytes now are a new one).
    let mut head: Option<(Instant, u64)> = None;
    loop {
        let deadline = head.map_or_else(Instant::now, |(began, _)| began) + head_timeout;
        let wake = {
            let _parked = permit.parked();
            wait_for_bytes(&io.stream, &mut drain, deadline).await
        };
        match wake {
            Wake::Bytes => {}
            Wake::Timeout if !io.unread.is_empty() => {
                h1_conn::answer_timeout(io.stream).await;
                return Ok(());
            }
            Wake::Timeout | Wake::Drain | Wake::Closed => return Ok(()),
        }
        let mut conn = builder.serve_connection(TokioIo::new(JsonErrorsIo::new(io)), service);
        let mut reads = traffic.reads();
        let polled = SelfWake::new(conn_wake, true);
        loop {
            tokio::select! {
                out = poll_fn(|cx| polled.poll(Pin::new(&mut conn), cx)) => {
                    return h1_conn::ended(out, conn, upgrade, &drain).await
                }
                woke = drain.changed() => {
                    if draining(woke, &mut drain) {
                        Pin::new(&mut conn).graceful_shutdown();
                        let out = (&mut conn).await;
                        return h1_conn::ended(out, conn, upgrade, &drain).await;
                    }
                    let now = traffic.reads();
                    if now == reads && !busy() && !traffic.write_blocked() {
                        break;
                    }
                    reads = now;
                }
            }
        }
        let parts = conn.into_parts();
        let (mut watched, unwritten) = parts.io.into_inner().into_parts();
        if let Some(answer) = unwritten {
            // hyper's own error answer, being replaced, then a close: finish it.
            let _ = tokio::time::timeout(Duration::from_secs(1), async {
                watched.stream.write_all(&answer).await?;
                watched.stream.shutdown().await
            })
            .await;
            return Ok(());
        }
        service = parts.service;
        // Copied: hyper's bytes share its 8 KiB buffer, which is what parking frees.
        watched.unread = match (parts.read_buf.is_empty(), watched.unread.is_empty()) {
            (true, _) => watched.unread,
            (false, true) => Bytes::copy_from_slice(&parts.read_buf),
            (false, false) => [&parts.read_buf[..], &watched.unread[..]].concat().into(),
        };
        let writes = traffic.writes();
        head = match head {
            _ if watched.unread.is_empty() => None,
            Some((began, w)) if w == writes => Some((began, w)),
            _ => Some((Instant::now(), writes)),
        };
        io = watched;
    }
}

enum Wake {
    Bytes,
    Drain,
    Timeout,
    Closed,
}

/// Waits, holding nothing, until the client sends, the gateway drains or `deadline`.
async fn wait_for_bytes(stream: &TcpStream, drain: &mut Watcher, deadline: Instant) -> Wake {
    let expiry = tokio::time::sleep_until(deadline);
    tokio::pin!(expiry);
    loop {
        tokio::select! {
            r = stream.readable() => return if r.is_ok() { Wake::Bytes } else { Wake::Closed },
            woke = drain.changed() => {
                if draining(woke, drain) {
                    return Wake::Drain;
                }
            }
            () = &mut expiry => return Wake::Timeout,
        }
    }
}

pin_project_lite::pin_project! {
    /// A response body that holds its connection's context until hyper drops it: the
    /// sweep reads the context's reference count as "a request in flight".
    pub(crate) struct HeldBody<B, H> {
        #[pin]
        body: B,
        hold: H,
    }
}

impl<B, H> HeldBody<B, H> {
    pub(crate) fn new(body: B, hold: H) -> Self {
        HeldBody { body, hold }
    }
}

impl<B: http_body::Body, H> http_body::Body for HeldBody<B, H> {
    type Data = B::Data;
    type Error = B::Error;

    #[inline]
    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<B::Data>, B::Error>>> {
        self.project().body.poll_frame(cx)
    }

    #[inline]
    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    #[inline]
    fn size_hint(&self) -> http_body::SizeHint {
        self.body.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use std::convert::Infallible;

    use http_body_util::Full;
    use hyper::service::service_fn;
    use tokio::io::AsyncReadExt;
    use tokio::net::{TcpListener, TcpSocket};

    use super::*;
    use crate::conn_limit::ConnLimits;
    use crate::drain::Drain;

    const ANSWER: usize = 3_000_000;

    /// An answer hyper has taken whole (its body dropped, so nothing is "in flight") but
    /// cannot send while the client does not read: sweeps must not park the connection,
    /// or the unsent bytes would be lost. Small socket buffers on both sides, so that
    /// most of the answer waits in hyper's queue.
    #[tokio::test]
    async fn an_answer_waiting_to_be_sent_is_not_parked() {
        let sock = TcpSocket::new_v4().expect("socket");
        sock.set_send_buffer_size(4096).expect("sndbuf"); // inherited by accepted sockets
        sock.bind("127.0.0.1:0".parse().expect("addr"))
            .expect("bind");
        let listener: TcpListener = sock.listen(16).expect("listen");
        let addr = listener.local_addr().expect("addr");
        let drain = Drain::new();
        let watcher = drain.watcher(false);
        let sweeper = drain.sweeper();
        let caps = ConnLimits::new(16, 0);
        let permit = caps.admit(addr.ip()).expect("permit");
        let server = tokio::spawn(async move {
            let (stream, _) = listener.accept().await.expect("accept");
            let svc = service_fn(|_req| async {
                Ok::<_, Infallible>(hyper::Response::new(Full::new(Bytes::from(vec![
                    b'x';
                    ANSWER
                ]))))
            });
            let builder = http1::Builder::new();
            // Never "busy": only the unsent bytes may keep the connection from a park.
            let _ = serve_parking(
                &builder,
                stream,
                svc,
                watcher,
                || false,
                Duration::from_secs(30),
                Held {
                    permit: &permit,
                    upgrade: &UpgradeSlot::default(),
                    wake: &ConnWake::new(),
                },
            )
            .await;
        });
        let client = TcpSocket::new_v4().expect("socket");
        client.set_recv_buffer_size(4096).expect("rcvbuf");
        let mut s = client.connect(addr).await.expect("connect");
        s.write_all(b"GET / HTTP/1.1\r\nHost: t\r\n\r\n")
            .await
            .expect("write");
        // Read a little, then stop reading while sweeps go by.
        let mut first = [0u8; 1024];
        let n = s.read(&mut first).await.expect("read");
        assert!(first[..n].starts_with(b"HTTP/1.1 200"));
        for _ in 0..5 {
            tokio::time::sleep(Duration::from_millis(50)).await;
            sweeper.sweep();
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert_eq!(caps.parked(), 0, "parked with an answer still to send");
        let mut buf = vec![0u8; 64 * 1024];
        let head_end = first[..n]
            .windows(4)
            .position(|w| w == b"\r\n\r\n")
            .map_or(n, |i| i + 4);
        let mut body = n - head_end;
        while body < ANSWER {
            let r = tokio::time::timeout(Duration::from_secs(5), s.read(&mut buf)).await;
            let Ok(Ok(k)) = r else { break };
            if k == 0 {
                break;
            }
            body += k;
        }
        assert_eq!(body, ANSWER, "the whole answer after the pause");
        drop(s);
        server.abort();
    }
}
