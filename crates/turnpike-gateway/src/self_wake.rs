//! A connection that wakes itself while it is being polled is polled again at once, in
//! the same turn of its task, instead of being rescheduled by the runtime.
//!
//! Why: hyper hands a request body to the service through a channel whose sender (the
//! connection's dispatcher) registers the task's waker each time it offers a chunk, and
//! whose receiver wakes that waker each time it takes one, even when the sender has
//! already gone because the body ended. A request whose body arrived with its head (most
//! POSTs, every MCP message) therefore wakes its own connection task from inside that
//! task's poll: the runtime queues the task again and polls the whole connection once
//! more (the scheduler, the drain watch beside the connection, hyper's dispatcher and the
//! service's futures), ~1.8k instructions for nothing new. Polled through
//! [`SelfWake::poll`], a wake that comes while the connection is being polled is only
//! recorded, and the connection is polled again before the task returns (the runtime's
//! share of the second poll gone, ~0.6k).
//!
//! A wake at any other time (the socket became readable, a timer fired, another thread
//! finished something) wakes the task as before. A future that keeps waking itself (a
//! runtime's cooperative budget spent, hyper's yield after 16 rounds) is polled again at
//! most [`REPOLLS`] times, then woken the ordinary way so other tasks run.
//!
//! The second poll itself goes too where the wake is known to be for nothing: an
//! HTTP/1.1 connection's request body polled through [`ConnWake::holding_wakes`] (the
//! gateway's `ClientBody`) holds the wakes that poll makes on this thread, and its caller
//! passes them on unless the body is then complete (the dispatcher woken to send a next
//! chunk there is none of). Wakes from other threads are never held. HTTP/2 connections
//! hold none: a stream's read there may wake the connection to send a window update
//! other streams wait for.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};

use futures_util::task::AtomicWaker;

/// In-place polls after a self-wake before the task is woken the ordinary way.
const REPOLLS: u32 = 2;

thread_local! {
    /// This thread's identity for [`ConnWake::holding`]: the address of this byte.
    static THREAD_TAG: u8 = const { 0 };
}

/// A number no other live thread has (never 0).
fn thread_tag() -> usize {
    THREAD_TAG.with(|b| std::ptr::from_ref(b) as usize)
}

const IDLE: u8 = 0;
const POLLING: u8 = 1;
const WOKEN: u8 = 2;

/// Polls a connection with its [`ConnWake`]'s waker (one per hyper connection).
pub(crate) struct SelfWake {
    shared: Arc<ConnWake>,
    waker: Waker,
}

/// A client connection's wake state, shared by its poller ([`SelfWake`]), the waker
/// hyper registers everywhere, and its request bodies ([`ConnWake::holding_wakes`]).
pub(crate) struct ConnWake {
    /// [`IDLE`], [`POLLING`] (the connection is inside its poll), [`WOKEN`] (it woke
    /// itself during that poll).
    state: AtomicU8,
    /// The task's own waker, for wakes outside a poll.
    task: AtomicWaker,
    /// An HTTP/1.1 connection: its bodies' wakes may be held.
    h1: AtomicBool,
    /// The thread whose wakes are being held (0: none), and whether one came.
    holding: AtomicUsize,
    held: AtomicBool,
}

impl ConnWake {
    pub(crate) fn new() -> Arc<ConnWake> {
        Arc::new(ConnWake {
            state: AtomicU8::new(IDLE),
            task: AtomicWaker::new(),
            h1: AtomicBool::new(false),
            holding: AtomicUsize::new(0),
            held: AtomicBool::new(false),
        })
    }

    /// Runs `poll` (a request body's), holding the wakes of this connection it makes on
    /// this thread, and says whether one came: the caller passes it on
    /// (`Wake::wake_by_ref` of this connection, whichever task polled the body) unless
    /// the body has no more to come. On an HTTP/2 connection, just `poll` (and `false`).
    pub(crate) fn holding_wakes<T>(&self, poll: impl FnOnce() -> T) -> (T, bool) {
        if !self.h1.load(Ordering::Relaxed) {
            return (poll(), false);
        }
        self.held.store(false, Ordering::Relaxed);
        self.holding.store(thread_tag(), Ordering::Release);
        let _held = Holding(self);
        let out = poll();
        (out, self.held.load(Ordering::Relaxed))
    }
}

/// Ends a hold when dropped (a panic included).
struct Holding<'a>(&'a ConnWake);

impl Drop for Holding<'_> {
    fn drop(&mut self) {
        self.0.holding.store(0, Ordering::Release);
    }
}

impl Wake for ConnWake {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        // Held: made on the holding thread while a body is polled (one load otherwise).
        let holder = self.holding.load(Ordering::Acquire);
        if holder != 0 && holder == thread_tag() {
            self.held.store(true, Ordering::Relaxed);
            return;
        }
        // During the poll: noted, and the poller polls again. Otherwise: the task.
        match self
            .state
            .compare_exchange(POLLING, WOKEN, Ordering::AcqRel, Ordering::Acquire)
        {
            Ok(_) | Err(WOKEN) => {}
            Err(_) => self.task.wake(),
        }
    }
}

impl SelfWake {
    /// `h1`: an HTTP/1.1 connection, whose request bodies' wakes may be held.
    pub(crate) fn new(conn: &Arc<ConnWake>, h1: bool) -> Self {
        conn.h1.store(h1, Ordering::Relaxed);
        SelfWake {
            shared: conn.clone(),
            waker: Waker::from(conn.clone()),
        }
    }

    /// Polls `fut` with this waker; a wake during the poll polls it again here.
    pub(crate) fn poll<F: Future + ?Sized>(
        &self,
        mut fut: Pin<&mut F>,
        cx: &mut Context<'_>,
    ) -> Poll<F::Output> {
        self.shared.task.register(cx.waker());
        let mut inner = Context::from_waker(&self.waker);
        for _ in 0..=REPOLLS {
            self.shared.state.store(POLLING, Ordering::Release);
            if let Poll::Ready(out) = fut.as_mut().poll(&mut inner) {
                self.shared.state.store(IDLE, Ordering::Release);
                return Poll::Ready(out);
            }
            // Not woken meanwhile: later wakes go to the task.
            if self
                .shared
                .state
                .compare_exchange(POLLING, IDLE, Ordering::AcqRel, Ordering::Acquire)
                .is_ok()
            {
                return Poll::Pending;
            }
        }
        self.shared.state.store(IDLE, Ordering::Release);
        cx.waker().wake_by_ref();
        Poll::Pending
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;

    /// Counts its polls; wakes itself during the first `self_wakes` of them.
    struct Waking {
        polls: usize,
        self_wakes: usize,
        ready_at: usize,
    }

    impl Waking {
        fn new(self_wakes: usize, ready_at: usize) -> Self {
            Waking {
                polls: 0,
                self_wakes,
                ready_at,
            }
        }
    }

    impl Future for Waking {
        type Output = usize;
        fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<usize> {
            self.polls += 1;
            if self.polls == self.ready_at {
                return Poll::Ready(self.polls);
            }
            if self.polls <= self.self_wakes {
                cx.waker().wake_by_ref();
            }
            Poll::Pending
        }
    }

    struct Counter(AtomicUsize);
    impl Wake for Counter {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    fn task() -> (Arc<Counter>, Waker) {
        let c = Arc::new(Counter(AtomicUsize::new(0)));
        (c.clone(), Waker::from(c))
    }

    /// A connection's wake state and its poller (`h1`: HTTP/1.1).
    fn connection(h1: bool) -> (Arc<ConnWake>, SelfWake) {
        let conn = ConnWake::new();
        let sw = SelfWake::new(&conn, h1);
        (conn, sw)
    }

    /// One poll of `f` through `sw`, in a task woken by `waker`.
    fn poll<F: Future + Unpin>(sw: &SelfWake, f: &mut F, waker: &Waker) -> Poll<F::Output> {
        sw.poll(Pin::new(f), &mut Context::from_waker(waker))
    }

    #[test]
    fn a_wake_during_the_poll_polls_again_without_waking_the_task() {
        let (woken, waker) = task();
        let (_, sw) = connection(false);
        let mut f = Waking::new(1, 2);
        let out = poll(&sw, &mut f, &waker);
        assert_eq!(out, Poll::Ready(2));
        assert_eq!(woken.0.load(Ordering::SeqCst), 0);
    }

    #[test]
    fn a_future_that_keeps_waking_itself_yields_to_the_runtime() {
        let (woken, waker) = task();
        let (_, sw) = connection(false);
        let mut f = Waking::new(usize::MAX, usize::MAX);
        let out = poll(&sw, &mut f, &waker);
        assert!(out.is_pending());
        assert_eq!(f.polls, 1 + REPOLLS as usize);
        assert_eq!(woken.0.load(Ordering::SeqCst), 1, "woken the ordinary way");
    }

    #[test]
    fn a_wake_after_the_poll_wakes_the_task() {
        let (woken, waker) = task();
        let (_, sw) = connection(false);
        let mut f = Waking::new(0, usize::MAX);
        assert!(poll(&sw, &mut f, &waker).is_pending());
        assert_eq!(f.polls, 1);
        // What hyper registered (the socket, a timer) fires later, from anywhere.
        sw.waker.wake_by_ref();
        assert_eq!(woken.0.load(Ordering::SeqCst), 1);
    }

    /// Inside its poll, runs `inside` under its connection's `holding_wakes` with the
    /// connection's waker, and keeps what it said.
    struct Body<F: FnMut(&Waker)> {
        conn: Arc<ConnWake>,
        inside: F,
        polls: usize,
        held: Vec<bool>,
    }

    impl<F: FnMut(&Waker) + Unpin> Future for Body<F> {
        type Output = ();
        fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
            self.polls += 1;
            let waker = cx.waker().clone();
            let conn = self.conn.clone();
            let ((), woke) = conn.holding_wakes(|| (self.inside)(&waker));
            self.held.push(woke);
            Poll::Pending
        }
    }

    fn body<F: FnMut(&Waker)>(conn: &Arc<ConnWake>, inside: F) -> Body<F> {
        Body {
            conn: conn.clone(),
            inside,
            polls: 0,
            held: vec![],
        }
    }

    #[test]
    fn a_wake_made_while_a_body_is_polled_is_reported_not_delivered() {
        let (woken, waker) = task();
        let (conn, sw) = connection(true);
        let mut f = body(&conn, |w: &Waker| w.wake_by_ref());
        assert!(poll(&sw, &mut f, &waker).is_pending());
        assert_eq!((f.polls, f.held.as_slice()), (1, &[true][..]));
        assert_eq!(woken.0.load(Ordering::SeqCst), 0);
        // The hold ended with the body's poll: a later wake reaches the task.
        sw.waker.wake_by_ref();
        assert_eq!(woken.0.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn a_wake_from_another_thread_is_never_held() {
        let (woken, waker) = task();
        let (conn, sw) = connection(true);
        let mut f = body(&conn, |w: &Waker| {
            let w = w.clone();
            std::thread::spawn(move || w.wake_by_ref())
                .join()
                .expect("waker thread");
        });
        assert!(poll(&sw, &mut f, &waker).is_pending());
        // Polled again in place for the foreign wake, each time (then the task woken).
        assert_eq!(f.polls, 1 + REPOLLS as usize);
        assert!(f.held.iter().all(|h| !h));
        assert_eq!(woken.0.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn an_http2_connection_holds_nothing() {
        let (_, waker) = task();
        let (conn, sw) = connection(false);
        let mut f = body(&conn, |w: &Waker| w.wake_by_ref());
        let _ = poll(&sw, &mut f, &waker);
        // The body's wake polled the connection again, as any self-wake does.
        assert_eq!(f.polls, 1 + REPOLLS as usize);
        assert!(f.held.iter().all(|h| !h));
    }
}
