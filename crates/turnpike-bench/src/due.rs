//! Open-loop send times exact to microseconds without burning the core. tokio's timer has
//! 1 ms ticks (a request woken by it is up to 1 ms late, the ~0.9 ms floor issue 32
//! measured). On Linux each open-loop connection owns a timerfd (a kernel hrtimer, no
//! timer slack) armed at its due time minus [`SPIN`], awaited through the runtime's epoll
//! like a socket, then spins the last microseconds. Elsewhere, or when a timerfd cannot be
//! made: tokio's timer to within a tick, then yielding to the other connections, then
//! spinning (exact too, but it keeps the thread busy for the last millisecond).

use std::time::{Duration, Instant};

/// Below this much time to go, spin: an epoll wake-up takes a few microseconds.
const SPIN: Duration = Duration::from_micros(30);
/// tokio's timer granularity: the fallback yields for the last tick.
const TICK: Duration = Duration::from_millis(1);

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
        if let Some(early) = due.checked_sub(SPIN) {
            if Instant::now() < early {
                self.sleep_until(early).await;
            }
        }
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

/// tokio's timer to within a tick, then yield (other connections' I/O still runs).
async fn coarse_sleep_until(at: Instant) {
    if let Some(early) = at.checked_sub(TICK) {
        if Instant::now() < early {
            tokio::time::sleep_until(tokio::time::Instant::from_std(early)).await;
        }
    }
    while Instant::now() < at {
        tokio::task::yield_now().await;
    }
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
