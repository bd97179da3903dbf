//! The gateway's [`Offload`]: CPU-heavy policy work (reading a large XML body) runs on
//! tokio's blocking pool under a process-wide budget (half the cores, at least one):
//! past it, requests wait their turn asynchronously, holding no worker, and the other
//! half of the CPU stays with the workers. Registered in the policy runtime every
//! serving gateway compiles with ([`policy_runtime`]); mediation and SOAP take it from
//! there when their policies are built.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

use tokio::sync::Semaphore;
use turnpike_config::PolicyRuntime;
use turnpike_policy::offload::{Job, Offload, Ran};

/// The process-wide budget: the CPU is one resource, whichever API or runtime a
/// request is for.
fn budget() -> &'static Semaphore {
    static BUDGET: OnceLock<Semaphore> = OnceLock::new();
    BUDGET.get_or_init(|| {
        let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
        Semaphore::new((cores / 2).max(1))
    })
}

/// Runs jobs on the blocking pool within the budget (inline outside a tokio runtime,
/// as in a unit test). A panic in a job is resumed in the request, as if it had run
/// inline.
#[derive(Debug, Default)]
pub struct TokioOffload {
    /// Jobs handed to the blocking pool (tests read it to see the work left the workers).
    offloaded: AtomicU64,
}

impl TokioOffload {
    /// How many jobs went to the blocking pool.
    pub fn offloaded(&self) -> u64 {
        self.offloaded.load(Ordering::Relaxed)
    }
}

impl Offload for TokioOffload {
    fn run(&self, job: Job) -> Ran {
        if tokio::runtime::Handle::try_current().is_err() {
            job();
            return Box::pin(std::future::ready(()));
        }
        self.offloaded.fetch_add(1, Ordering::Relaxed);
        Box::pin(async move {
            // The semaphore is never closed, so acquiring only waits.
            let _permit = budget().acquire().await;
            if let Err(e) = tokio::task::spawn_blocking(job).await {
                // Cancelled only when the runtime shuts down, which drops this future too.
                std::panic::resume_unwind(
                    e.try_into_panic()
                        .unwrap_or_else(|_| Box::new("offloaded work cancelled")),
                );
            }
        })
    }
}

/// The policy runtime of a serving gateway: fresh caches and counters, CPU-heavy work
/// on the blocking pool.
pub fn policy_runtime() -> PolicyRuntime {
    PolicyRuntime::with_offload(Arc::new(TokioOffload::default()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use turnpike_policy::offload::offload;

    #[tokio::test(flavor = "current_thread")]
    async fn a_single_worker_keeps_serving_while_offloaded_work_blocks() {
        let (release, blocked) = std::sync::mpsc::channel::<()>();
        let to: Arc<dyn Offload> = Arc::new(TokioOffload::default());
        let job = tokio::spawn(async move {
            offload(&to, move || {
                let _ = blocked.recv();
                7
            })
            .await
        });
        // The one worker runs other tasks while the job is blocked on its thread.
        let other = tokio::spawn(async { 1 }).await.expect("runs");
        assert_eq!(other, 1);
        release.send(()).expect("the job waits");
        assert_eq!(job.await.expect("job"), 7);
    }

    #[tokio::test]
    async fn a_panic_in_the_job_is_resumed_in_the_caller() {
        let to: Arc<dyn Offload> = Arc::new(TokioOffload::default());
        let caller = tokio::spawn(async move { offload(&to, || panic!("boom")).await });
        let err = caller.await.expect_err("the caller panicked");
        assert!(err.is_panic());
    }
}
