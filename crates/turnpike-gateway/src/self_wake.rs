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
//! recorded, and the connection is polled again before the task returns: the dispatcher
//! and the service still see a second poll, the runtime and the drain watch do not
//! (-0.64k a request with a body, +0.07k one without: bench/RESULTS.md, session 23).
//!
//! A wake at any other time (the socket became readable, a timer fired, another thread
//! finished something) wakes the task as before. A future that keeps waking itself (a
//! runtime's cooperative budget spent, hyper's yield after 16 rounds) is polled again at
//! most [`REPOLLS`] times, then woken the ordinary way so other tasks run.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};

use futures_util::task::AtomicWaker;

/// In-place polls after a self-wake before the task is woken the ordinary way.
const REPOLLS: u32 = 2;

const IDLE: u8 = 0;
const POLLING: u8 = 1;
const WOKEN: u8 = 2;

/// The waker a connection is polled with (one per connection, made once).
pub(crate) struct SelfWake {
    shared: Arc<Shared>,
    waker: Waker,
}

struct Shared {
    /// [`IDLE`], [`POLLING`] (the connection is inside its poll), [`WOKEN`] (it woke
    /// itself during that poll).
    state: AtomicU8,
    /// The task's own waker, for wakes outside a poll.
    task: AtomicWaker,
}

impl Wake for Shared {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
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
    pub(crate) fn new() -> Self {
        let shared = Arc::new(Shared {
            state: AtomicU8::new(IDLE),
            task: AtomicWaker::new(),
        });
        let waker = Waker::from(shared.clone());
        SelfWake { shared, waker }
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

    #[test]
    fn a_wake_during_the_poll_polls_again_without_waking_the_task() {
        let (woken, waker) = task();
        let sw = SelfWake::new();
        let mut f = Waking {
            polls: 0,
            self_wakes: 1,
            ready_at: 2,
        };
        let out = sw.poll(Pin::new(&mut f), &mut Context::from_waker(&waker));
        assert_eq!(out, Poll::Ready(2));
        assert_eq!(woken.0.load(Ordering::SeqCst), 0);
    }

    #[test]
    fn a_future_that_keeps_waking_itself_yields_to_the_runtime() {
        let (woken, waker) = task();
        let sw = SelfWake::new();
        let mut f = Waking {
            polls: 0,
            self_wakes: usize::MAX,
            ready_at: usize::MAX,
        };
        let out = sw.poll(Pin::new(&mut f), &mut Context::from_waker(&waker));
        assert!(out.is_pending());
        assert_eq!(f.polls, 1 + REPOLLS as usize);
        assert_eq!(woken.0.load(Ordering::SeqCst), 1, "woken the ordinary way");
    }

    #[test]
    fn a_wake_after_the_poll_wakes_the_task() {
        let (woken, waker) = task();
        let sw = SelfWake::new();
        let mut f = Waking {
            polls: 0,
            self_wakes: 0,
            ready_at: usize::MAX,
        };
        assert!(sw
            .poll(Pin::new(&mut f), &mut Context::from_waker(&waker))
            .is_pending());
        assert_eq!(f.polls, 1);
        // What hyper registered (the socket, a timer) fires later, from anywhere.
        sw.waker.wake_by_ref();
        assert_eq!(woken.0.load(Ordering::SeqCst), 1);
    }
}
