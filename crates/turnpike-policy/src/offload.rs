//! CPU-heavy work of a policy (reading a large XML body) handed to whoever runs the
//! gateway, so one hostile request cannot delay every other connection a worker serves.
//! The kernel names the trait only: the gateway registers its tokio implementation (the
//! blocking pool under a CPU budget) in the [`Runtime`](crate::Runtime) it compiles
//! with; tests and tools use [`Inline`]. A policy takes its `Arc<dyn Offload>` from the
//! runtime when it is built, never from a static.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};

/// Bodies larger than this (bytes) are parsed off the workers; below it the bounded
/// cost of reading inline (the XML reader's caps make it linear) is below the hand-off's.
pub const OFFLOAD_ABOVE: usize = 64 << 10;

/// One piece of work to run off the workers.
pub type Job = Box<dyn FnOnce() + Send>;

/// Resolves once the job has run (resuming its panic, if it panicked).
pub type Ran = Pin<Box<dyn Future<Output = ()> + Send>>;

/// Runs CPU-heavy jobs somewhere that does not hold up the request workers.
pub trait Offload: Send + Sync {
    fn run(&self, job: Job) -> Ran;
}

/// Runs each job on the calling thread, at once (tests, tools, `Snapshot::from_yaml`).
#[derive(Debug, Default, Clone, Copy)]
pub struct Inline;

impl Offload for Inline {
    fn run(&self, job: Job) -> Ran {
        job();
        Box::pin(std::future::ready(()))
    }
}

/// Runs `work` through `to` and gives back its result.
pub async fn offload<T, F>(to: &Arc<dyn Offload>, work: F) -> T
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    let slot = Arc::new(Mutex::new(None));
    let out = slot.clone();
    to.run(Box::new(move || {
        let value = work();
        *out.lock().unwrap_or_else(PoisonError::into_inner) = Some(value);
    }))
    .await;
    let value = slot.lock().unwrap_or_else(PoisonError::into_inner).take();
    match value {
        Some(v) => v,
        // `run` resolves after the job ran or resumes its panic: an implementation
        // that resolves without running it is a bug in that implementation.
        None => panic!("an Offload resolved without running its job"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inline_runs_the_work_on_the_calling_thread() {
        let here = std::thread::current().id();
        let to: Arc<dyn Offload> = Arc::new(Inline);
        let ran_on = block_on(offload(&to, move || std::thread::current().id()));
        assert_eq!(ran_on, here);
    }

    /// Polls a future that never waits (no runtime needed).
    fn block_on<F: Future>(f: F) -> F::Output {
        use std::task::{Context, Poll, Waker};
        let mut f = std::pin::pin!(f);
        let mut cx = Context::from_waker(Waker::noop());
        loop {
            if let Poll::Ready(out) = f.as_mut().poll(&mut cx) {
                return out;
            }
        }
    }
}
