//! [`Drain`] is the graceful shutdown of all connections (hyper-util's cannot watch the
//! driver above): a signal each connection turns into hyper's graceful shutdown, and a
//! wait until every connection ended. The same channel carries the park sweep
//! (`park.rs`), so a connection watches one thing, not two.

use std::future::{poll_fn, Future};
use std::pin::Pin;
use std::sync::Arc;

use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::HttpService;
use tokio::sync::watch;

use crate::self_wake::{ConnWake, SelfWake};

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
    /// An HTTP/1.1 connection (its request bodies' wakes may be held: `self_wake.rs`).
    const HTTP1: bool;
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
    const HTTP1: bool = true;
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
    const HTTP1: bool = false;
    fn begin_graceful(self: Pin<&mut Self>) {
        self.graceful_shutdown();
    }
}

/// Runs `conn` to its end; when `drain` signals, asks it to shut down gracefully and
/// keeps running it (`drain` is held until the end, which is what [`Drain::shutdown`]
/// waits for).
pub(crate) async fn until_done<C: Graceful>(
    conn: Pin<&mut C>,
    drain: &mut Watcher,
    wake: &Arc<ConnWake>,
) -> C::Output {
    let mut conn = conn;
    let mut asked = false;
    let polled = SelfWake::new(wake, C::HTTP1);
    loop {
        tokio::select! {
            out = poll_fn(|cx| polled.poll(conn.as_mut(), cx)) => return out,
            r = drain.changed(), if !asked => {
                if draining(r, drain) {
                    asked = true;
                    conn.as_mut().begin_graceful();
                }
            }
        }
    }
}
