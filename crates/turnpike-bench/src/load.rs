//! The schedulers. Closed loop: N users, each with its own connection, send, wait for the
//! answer, send again (JMeter threads). Open loop: requests are due at fixed times
//! (start + i / rate); a free connection takes the next due request, and its latency is
//! measured from the time it was *due*, so a slow server cannot slow the clock that
//! measures it (no coordinated omission). Work is split over `threads` OS threads, each
//! with its own recorder, merged at the end: no locks and no cross-thread wake-ups on the
//! hot path. A closed loop over plain HTTP/1.1 runs on an epoll loop per thread (`epoll`,
//! as wrk does); everything else on a single-threaded tokio runtime per thread. Open-loop
//! requests are written at their due time to within microseconds (`due::DueTimer`); the
//! lag of every write behind its due time is measured and reported (`SendLag`).

use std::cell::{Cell, RefCell};
use std::future::Future;
use std::rc::Rc;
use std::sync::Arc;
use std::task::{Poll, Waker};
use std::time::{Duration, Instant, SystemTime};

use crate::client::{Conn, RequestTemplate, Target};
use crate::stats::{Outcome, Recorder, Sample, Window};
use crate::BenchError;

/// How load is offered.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Mode {
    /// `users` concurrent users in a closed loop.
    Closed { users: usize },
    /// A fixed arrival rate (requests/s) served by up to `connections` connections.
    Open { rate: f64, connections: usize },
}

/// Everything a run needs; shared read-only by the generator threads.
#[derive(Debug)]
pub struct LoadSpec {
    pub target: Target,
    pub request: RequestTemplate,
    pub mode: Mode,
    pub window: Window,
    pub threads: usize,
    /// Per-request timeout (counted as an error).
    pub timeout: Duration,
    /// Keep up to this many samples for a JTL (0: none).
    pub jtl_cap: usize,
}

/// Runs the load on `spec.threads` threads and returns the merged samples and the wall-clock
/// time of the start. Blocking: call it from a plain thread or `spawn_blocking`.
pub fn run_blocking(spec: Arc<LoadSpec>) -> Result<(Recorder, SystemTime), BenchError> {
    let threads = spec.threads.max(1);
    // Every thread shares one start instant so their windows line up for the merge. The
    // short lead lets threads build their runtimes before the clock starts.
    let lead = Duration::from_millis(20);
    let (start, started) = (Instant::now() + lead, SystemTime::now() + lead);
    let handles: Vec<_> = (0..threads)
        .map(|t| {
            let spec = spec.clone();
            std::thread::Builder::new()
                .name(format!("bench-{t}"))
                .spawn(move || run_thread(&spec, t, threads, start))
        })
        .collect::<Result<_, _>>()
        .map_err(|e| BenchError::Io(format!("spawning generator threads: {e}")))?;
    let mut total = recorder(&spec, spec.jtl_cap);
    for h in handles {
        let rec = h
            .join()
            .map_err(|_| BenchError::Io("a generator thread panicked".into()))??;
        total.merge(&rec);
    }
    Ok((total, started))
}

fn recorder(spec: &LoadSpec, jtl_cap: usize) -> Recorder {
    let rec = Recorder::new(spec.window).with_samples(jtl_cap);
    match spec.mode {
        Mode::Open { .. } => rec.with_send_lag(),
        Mode::Closed { .. } => rec,
    }
}

/// This thread's share of `n` split over `threads`.
fn share(n: usize, t: usize, threads: usize) -> usize {
    n / threads + usize::from(t < n % threads)
}

struct ThreadCtx {
    spec: Arc<LoadSpec>,
    start: Instant,
    end: Instant,
    rec: RefCell<Recorder>,
    /// Open loop: next due request of this thread, and this thread's slot in the schedule.
    next: Cell<u64>,
    thread: u64,
    threads: u64,
    /// One per user of this thread, read by the watchdog.
    watches: Box<[Watch]>,
    /// Set by the watchdog once the run's end has passed.
    ended: Cell<bool>,
}

/// A user's request (or connect) in flight, as the thread's watchdog sees it. One
/// watchdog per thread enforces every timeout and the end of the run, so a request
/// costs a `Cell` write instead of arming a tokio timer and polling it on every wake-up
/// (~400 instructions per request, issue 32 item 4).
#[derive(Default)]
struct Watch {
    /// When the operation in flight gives up.
    deadline: Cell<Option<Instant>>,
    /// Set by the watchdog when `deadline` passed.
    expired: Cell<bool>,
    /// The user task's waker, taken once (a task's waker does not change).
    waker: RefCell<Option<Waker>>,
}

impl ThreadCtx {
    /// Open loop: the due time of this thread's next request, or None when past the end.
    fn next_due(&self, rate: f64) -> Option<Instant> {
        let i = self.next.get();
        self.next.set(i + 1);
        // Threads interleave: thread t owns global requests t, t+T, t+2T, ...
        let global = i * self.threads + self.thread;
        let due = self.start + Duration::from_secs_f64(global as f64 / rate);
        (due < self.end).then_some(due)
    }

    fn record(&self, due: Instant, user: usize, outcome: Outcome, sent: u64, received: u64) {
        let now = Instant::now();
        self.rec.borrow_mut().record_sample(Sample {
            start: due.saturating_duration_since(self.start),
            elapsed: now.saturating_duration_since(due),
            outcome,
            sent,
            received,
            user: user as u32,
        });
    }

    fn record_send_lag(&self, due: Instant, sent: Instant) {
        self.rec.borrow_mut().record_send_lag(
            due.saturating_duration_since(self.start),
            sent.saturating_duration_since(self.start),
        );
    }
}

fn run_thread(
    spec: &Arc<LoadSpec>,
    t: usize,
    threads: usize,
    start: Instant,
) -> Result<Recorder, BenchError> {
    let users = match spec.mode {
        Mode::Closed { users } => share(users, t, threads),
        Mode::Open { connections, .. } => share(connections, t, threads),
    };
    if let (Mode::Closed { .. }, Some(addr)) = (spec.mode, spec.target.plain_h1()) {
        let mut rec = recorder(spec, share(spec.jtl_cap, t, threads));
        let closed = crate::epoll::ClosedLoop {
            addr,
            request: &spec.request,
            timeout: spec.timeout,
            start,
            end: start + spec.window.end(),
            ids: (0..users).map(|u| u * threads + t).collect(),
            spin: spec.target.spin,
        };
        crate::epoll::run(&closed, &mut rec)
            .map_err(|e| BenchError::Io(format!("generator thread: {e}")))?;
        return Ok(rec);
    }
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| BenchError::Io(format!("building a generator runtime: {e}")))?;
    let ctx = Rc::new(ThreadCtx {
        spec: spec.clone(),
        start,
        end: start + spec.window.end(),
        rec: RefCell::new(recorder(spec, share(spec.jtl_cap, t, threads))),
        next: Cell::new(0),
        thread: t as u64,
        threads: threads as u64,
        watches: (0..users).map(|_| Watch::default()).collect(),
        ended: Cell::new(false),
    });
    let local = tokio::task::LocalSet::new();
    local.block_on(&rt, async {
        let tasks: Vec<_> = (0..users)
            .map(|u| {
                let ctx = ctx.clone();
                tokio::task::spawn_local(async move { user(&ctx, u, u * threads + t).await })
            })
            .collect();
        watchdog(&ctx).await;
        for task in tasks {
            let _ = task.await;
        }
    });
    let rec = ctx.rec.borrow().clone();
    Ok(rec)
}

/// Every timeout, and the end of the run, for one thread's users: wakes a user whose
/// deadline passed (its next poll gives up), and every user at the end (requests still in
/// flight then are outside the window anyway). Returns at the end.
async fn watchdog(ctx: &ThreadCtx) {
    // Timeouts are enforced to within a tenth of themselves (at most 100 ms late).
    let period =
        (ctx.spec.timeout / 10).clamp(Duration::from_millis(1), Duration::from_millis(100));
    let mut tick = tokio::time::interval_at(tokio::time::Instant::from_std(ctx.start), period);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        let now = Instant::now();
        let ended = now >= ctx.end;
        ctx.ended.set(ended);
        for w in ctx.watches.iter() {
            if ended || w.deadline.get().is_some_and(|d| now >= d) {
                w.expired.set(true);
                if let Some(waker) = w.waker.borrow().as_ref() {
                    waker.wake_by_ref();
                }
            }
        }
        if ended {
            return;
        }
    }
}

/// Runs `fut` until it ends (Some) or the watchdog gives up on it at `deadline` or at the
/// end of the run (None).
async fn expiring<F: Future>(
    ctx: &ThreadCtx,
    watch: &Watch,
    deadline: Instant,
    fut: F,
) -> Option<F::Output> {
    watch.deadline.set(Some(deadline));
    let mut fut = std::pin::pin!(fut);
    let out = std::future::poll_fn(|cx| {
        if watch.expired.get() || ctx.ended.get() {
            return Poll::Ready(None);
        }
        fut.as_mut().poll(cx).map(Some)
    })
    .await;
    watch.deadline.set(None);
    watch.expired.set(false);
    out
}

/// One user (closed loop) or one connection (open loop) until the end of the run; `local`
/// is its index on this thread, `id` across the run.
async fn user(ctx: &ThreadCtx, local: usize, id: usize) {
    let spec = &ctx.spec;
    let Some(watch) = ctx.watches.get(local) else {
        return;
    };
    std::future::poll_fn(|cx| {
        *watch.waker.borrow_mut() = Some(cx.waker().clone());
        Poll::Ready(())
    })
    .await;
    let mut conn: Option<Conn> = None;
    let mut n = id;
    let mut due_timer = match spec.mode {
        Mode::Open { .. } => Some(crate::due::DueTimer::new()),
        Mode::Closed { .. } => None,
    };
    tokio::time::sleep_until(tokio::time::Instant::from_std(ctx.start)).await;
    while !ctx.ended.get() {
        let Some(due) = next_due(ctx, due_timer.as_mut()).await else {
            return;
        };
        let Some(c) = connection(ctx, watch, &mut conn, due, id).await else {
            continue;
        };
        // The timeout runs from the write: in the open loop a late write is the
        // generator's delay, reported as send lag, not the server's.
        let sent_at = match spec.mode {
            Mode::Closed { .. } => due,
            Mode::Open { .. } => {
                let now = Instant::now();
                ctx.record_send_lag(due, now);
                now
            }
        };
        let exchange = c.exchange(&spec.request, n);
        let result = expiring(ctx, watch, sent_at + spec.timeout, exchange).await;
        n = n.wrapping_add(1);
        match result {
            Some(Ok((status, sent, received))) => {
                ctx.record(due, id, Outcome::Status(status), sent, received)
            }
            failed => {
                if let Some(Err(e)) = failed {
                    tracing::debug!(error = %e, "request failed");
                }
                ctx.record(due, id, Outcome::Failed, 0, 0);
                conn = None;
            }
        }
    }
}

/// When the user's next request is due (now in the closed loop; in the open loop its slot
/// in the schedule, waited for); None past the end of the run.
async fn next_due(ctx: &ThreadCtx, timer: Option<&mut crate::due::DueTimer>) -> Option<Instant> {
    let due = match ctx.spec.mode {
        Mode::Closed { .. } => Instant::now(),
        Mode::Open { rate, .. } => {
            let due = ctx.next_due(rate)?;
            if let Some(t) = timer {
                t.wait(due).await;
            }
            due
        }
    };
    (due < ctx.end).then_some(due)
}

/// The user's open connection, or a new one; None when it cannot connect (the failure
/// recorded against the request due at `due`, after a pause).
async fn connection<'c>(
    ctx: &ThreadCtx,
    watch: &Watch,
    conn: &'c mut Option<Conn>,
    due: Instant,
    id: usize,
) -> Option<&'c mut Conn> {
    if conn.as_ref().is_some_and(|c| !c.is_closed()) {
        return conn.as_mut();
    }
    let connecting = ctx.spec.target.connect();
    match expiring(ctx, watch, Instant::now() + ctx.spec.timeout, connecting).await {
        Some(Ok(c)) => Some(conn.insert(c)),
        failed => {
            if let Some(Err(e)) = failed {
                tracing::debug!(error = %e, "connect failed");
            }
            ctx.record(due, id, Outcome::Failed, 0, 0);
            // Do not spin on a refusing server; the error is counted.
            tokio::time::sleep(Duration::from_millis(10)).await;
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shares_add_up_and_differ_by_at_most_one() {
        for (n, t) in [(100, 3), (2, 4), (7, 7), (0, 2)] {
            let s: Vec<_> = (0..t).map(|i| share(n, i, t)).collect();
            assert_eq!(s.iter().sum::<usize>(), n);
            let (lo, hi) = (s.iter().min(), s.iter().max());
            assert!(hi.zip(lo).is_none_or(|(h, l)| h - l <= 1));
        }
    }
}
