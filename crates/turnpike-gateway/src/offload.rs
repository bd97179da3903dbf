//! CPU-heavy work of a policy (reading a large XML body) run off the runtime's workers,
//! so one hostile request cannot delay every other connection a worker serves. The
//! offloaded work runs on tokio's blocking pool under a process-wide budget (half the
//! cores, at least one): past it, requests wait their turn asynchronously, holding no
//! worker, and the other half of the CPU stays with the workers. A body below
//! [`OFFLOAD_ABOVE`] is read inline: its bounded cost (the XML reader's caps make it
//! linear) is below the hand-off's.

use std::sync::OnceLock;

use tokio::sync::Semaphore;

/// Bodies larger than this (bytes) are parsed off the workers.
pub const OFFLOAD_ABOVE: usize = 64 << 10;

/// The process-wide budget: the CPU is one resource, whichever API a request is for.
fn budget() -> &'static Semaphore {
    static BUDGET: OnceLock<Semaphore> = OnceLock::new();
    BUDGET.get_or_init(|| {
        let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
        Semaphore::new((cores / 2).max(1))
    })
}

/// Runs `work` on the blocking pool within the budget (inline outside a runtime, as in
/// a unit test). A panic in `work` is resumed here, as if it had run inline.
pub async fn offload<T, F>(work: F) -> T
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    if tokio::runtime::Handle::try_current().is_err() {
        return work();
    }
    // The semaphore is never closed, so acquiring only waits.
    let _permit = budget().acquire().await;
    match tokio::task::spawn_blocking(work).await {
        Ok(out) => out,
        // Cancelled only when the runtime shuts down, which drops this future too.
        Err(e) => std::panic::resume_unwind(
            e.try_into_panic()
                .unwrap_or_else(|_| Box::new("offloaded work cancelled")),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outside_a_runtime_the_work_runs_inline() {
        let here = std::thread::current().id();
        let ran_on = futures_lite_block_on(offload(move || std::thread::current().id()));
        assert_eq!(ran_on, here);
    }

    /// Polls a future that never waits (no runtime needed).
    fn futures_lite_block_on<F: std::future::Future>(f: F) -> F::Output {
        use std::task::{Context, Poll, Waker};
        let mut f = std::pin::pin!(f);
        let mut cx = Context::from_waker(Waker::noop());
        loop {
            if let Poll::Ready(out) = f.as_mut().poll(&mut cx) {
                return out;
            }
        }
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_single_worker_keeps_serving_while_offloaded_work_blocks() {
        let (release, blocked) = std::sync::mpsc::channel::<()>();
        let job = tokio::spawn(offload(move || {
            let _ = blocked.recv();
            7
        }));
        // The one worker runs other tasks while the job is blocked on its thread.
        let other = tokio::spawn(async { 1 }).await.expect("runs");
        assert_eq!(other, 1);
        release.send(()).expect("the job waits");
        assert_eq!(job.await.expect("job"), 7);
    }
}
