//! Open-loop send times exact to microseconds without burning the core. tokio's timer has
//! 1 ms ticks (a request woken by it is up to 1 ms late, the ~0.9 ms floor issue 32
//! measured). On Linux each open-loop connection owns a timerfd (a kernel hrtimer, no
//! timer slack) armed a *margin* before its due time, awaited through the runtime's epoll
//! like a socket; the margin is spent yielding to the other connections (their I/O goes on)
//! and the last microseconds spinning. The margin follows how late this thread's
//! wake-ups have recently been: a core that sleeps between requests can take hundreds of
//! microseconds to wake (a VM's vCPU halted and descheduled by its host), which was the
//! send-lag tail (p99 0.17-0.5 ms at 1,000 req/s); a busy core wakes in microseconds and
//! pays no margin. Elsewhere, or when a timerfd cannot be made: tokio's timer to within a
//! tick, then the same yielding.

use std::cell::Cell;
use std::time::{Duration, Instant};

/// The least margin: an epoll wake-up on an awake core takes a few microseconds.
const MIN_MARGIN: Duration = Duration::from_micros(30);
/// The most margin: at most this much yielding per request (a 1,000 req/s run yields at
/// most half of its thread's time).
const MAX_MARGIN: Duration = Duration::from_micros(500);
/// The last stretch is a tight spin: a yield round (an epoll poll) takes microseconds.
const SPIN: Duration = Duration::from_micros(3);
/// tokio's timer granularity: the fallback yields for the last tick.
const TICK: Duration = Duration::from_millis(1);

thread_local! {
    /// Recent wake-up lateness of this thread's timers (ns), a decaying maximum shared by
    /// the thread's connections.
    static WAKE_LATE_NS: Cell<u64> = const { Cell::new(0) };
}

/// The next lateness estimate after a wake-up `late_ns` late: jumps up to a late wake-up
/// at once, decays by 1/64 per wake-up (half-life ~44 wake-ups) otherwise.
pub fn next_estimate(estimate_ns: u64, late_ns: u64) -> u64 {
    late_ns.max(estimate_ns - estimate_ns / 64)
}

/// How early to arm the timer for an estimated lateness: twice the estimate (the tail is
/// wider than the recent maximum), within [`MIN_MARGIN`, `MAX_MARGIN`].
pub fn margin(estimate_ns: u64) -> Duration {
    Duration::from_nanos(estimate_ns.saturating_mul(2)).clamp(MIN_MARGIN, MAX_MARGIN)
}

/// Waits for due times, one per call, for one connection.
pub struct DueTimer {
    #[cfg(target_os = "linux")]
    fd: Option<tokio::io::unix::AsyncFd<std::os::fd::OwnedFd>>,
}

impl DueTimer {
    /// Must be called inside a tokio runtime (the timerfd registers with its reactor).
    pub fn new() -> Self {
        DueTimer {
            #[cfg(target_os = "linux")]
            fd: linux::timerfd(),
        }
    }

    /// Returns at `due` (a few microseconds after it at most, on an idle thread).
    pub async fn wait(&mut self, due: Instant) {
        let estimate = WAKE_LATE_NS.with(Cell::get);
        if let Some(early) = due.checked_sub(margin(estimate)) {
            if Instant::now() < early {
                self.sleep_until(early).await;
                let late = Instant::now().saturating_duration_since(early).as_nanos();
                let late = u64::try_from(late).unwrap_or(u64::MAX);
                WAKE_LATE_NS.with(|e| e.set(next_estimate(e.get(), late)));
            }
        }
        yield_until(due.checked_sub(SPIN).unwrap_or(due)).await;
        while Instant::now() < due {
            std::hint::spin_loop();
        }
    }

    async fn sleep_until(&mut self, at: Instant) {
        #[cfg(target_os = "linux")]
        if let Some(fd) = &self.fd {
            if linux::sleep_until(fd, at).await.is_ok() {
                return;
            }
        }
        coarse_sleep_until(at).await
    }
}

impl Default for DueTimer {
    fn default() -> Self {
        Self::new()
    }
}

/// Yields to the thread's other connections (their I/O is polled between yields) until
/// `at`.
async fn yield_until(at: Instant) {
    while Instant::now() < at {
        tokio::task::yield_now().await;
    }
}

/// tokio's timer to within a tick, then yield.
async fn coarse_sleep_until(at: Instant) {
    if let Some(early) = at.checked_sub(TICK) {
        if Instant::now() < early {
            tokio::time::sleep_until(tokio::time::Instant::from_std(early)).await;
        }
    }
    yield_until(at).await
}

#[cfg(target_os = "linux")]
mod linux {
    use std::os::fd::OwnedFd;
    use std::time::Instant;

    use rustix::time::{
        clock_gettime, timerfd_create, timerfd_settime, ClockId, Itimerspec, TimerfdClockId,
        TimerfdFlags, TimerfdTimerFlags, Timespec,
    };
    use tokio::io::unix::AsyncFd;
    use tokio::io::Interest;

    pub fn timerfd() -> Option<AsyncFd<OwnedFd>> {
        let fd = timerfd_create(
            TimerfdClockId::Monotonic,
            TimerfdFlags::NONBLOCK | TimerfdFlags::CLOEXEC,
        )
        .ok()?;
        // tokio 1.54 deprecates its safe constructors (a registered fd closed by its owner
        // while tokio still polls it); the only other way is `unsafe`, which this crate
        // forbids. Here the AsyncFd owns the OwnedFd and deregisters it before closing it.
        #[allow(deprecated)]
        AsyncFd::with_interest(fd, Interest::READABLE).ok()
    }

    /// Arms the timer at `at` (CLOCK_MONOTONIC, the clock `Instant` reads) and waits for it.
    pub async fn sleep_until(fd: &AsyncFd<OwnedFd>, at: Instant) -> std::io::Result<()> {
        let left = at.saturating_duration_since(Instant::now());
        let now = clock_gettime(ClockId::Monotonic);
        let nanos = now.tv_nsec + i64::from(left.subsec_nanos());
        let value = Timespec {
            tv_sec: now.tv_sec + left.as_secs() as i64 + nanos / 1_000_000_000,
            tv_nsec: nanos % 1_000_000_000,
        };
        let spec = Itimerspec {
            it_interval: Timespec::default(),
            it_value: value,
        };
        timerfd_settime(fd.get_ref(), TimerfdTimerFlags::ABSTIME, &spec)?;
        loop {
            let mut guard = fd.readable().await?;
            let mut expirations = [0u8; 8];
            match guard.try_io(|fd| Ok(rustix::io::read(fd.get_ref(), &mut expirations)?)) {
                Ok(Ok(_)) => return Ok(()),
                Ok(Err(e)) => return Err(e),
                // Not expired yet (a stale readiness): wait again.
                Err(_would_block) => continue,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_margin_follows_recent_lateness_within_its_bounds() {
        assert_eq!(margin(0), MIN_MARGIN);
        assert_eq!(margin(100_000), Duration::from_micros(200));
        assert_eq!(margin(10_000_000), MAX_MARGIN);
        // A late wake-up raises the estimate at once; punctual ones lower it slowly.
        let mut e = next_estimate(0, 150_000);
        assert_eq!(e, 150_000);
        for _ in 0..44 {
            e = next_estimate(e, 5_000);
        }
        assert!((70_000..80_000).contains(&e), "{e}");
        for _ in 0..1000 {
            e = next_estimate(e, 5_000);
        }
        assert_eq!(e, 5_000);
    }

    #[tokio::test]
    async fn waits_return_at_their_due_time_never_before() {
        let mut t = DueTimer::new();
        let start = Instant::now();
        for i in 1..=20u32 {
            let due = start + Duration::from_millis(2) * i;
            t.wait(due).await;
            assert!(Instant::now() >= due);
        }
    }
}
