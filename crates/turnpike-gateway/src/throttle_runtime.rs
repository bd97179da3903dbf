//! The throttling side of a gateway process: the background tasks that keep the
//! long-lived `CounterStore` (`PolicyRuntime.throttle`) bounded (a sweep every second)
//! and, with `--redis`, in cluster mode (the lease task of `turnpike_throttle::Cluster`).
//! The same `--redis` gives the response cache its shared level (the task of
//! `turnpike_cache::SharedLevel`, used by APIs whose cache says `shared: redis`).
//! Both the DB-less gateway and the control-plane follower start them.

use std::sync::Arc;
use std::time::Duration;

use turnpike_config::PolicyRuntime;
use turnpike_throttle::{Clock, Cluster, ClusterConfig, FailMode, SystemClock};

use crate::GatewayArgs;

/// The running throttle tasks; dropping it stops them.
pub struct ThrottleTasks {
    tasks: Vec<tokio::task::JoinHandle<()>>,
    /// The cluster link, when `--redis` was given.
    pub cluster: Option<Arc<Cluster>>,
}

impl Drop for ThrottleTasks {
    fn drop(&mut self) {
        for t in &self.tasks {
            t.abort();
        }
    }
}

pub(crate) fn parse_fail_mode(s: &str) -> Result<FailMode, String> {
    match s.to_ascii_lowercase().as_str() {
        "open" => Ok(FailMode::Open),
        "closed" => Ok(FailMode::Closed),
        _ => Err(format!("`{s}` is not `open` or `closed`")),
    }
}

/// Starts the sweep task and, with `--redis`, attaches the runtime's counters to the
/// cluster and starts its lease task. Call once per process, inside the runtime.
pub fn start_throttling(
    args: &GatewayArgs,
    runtime: &Arc<PolicyRuntime>,
) -> Result<ThrottleTasks, String> {
    let mut tasks = Vec::new();
    let store = runtime.throttle.clone();
    tasks.push(tokio::spawn(async move {
        let mut tick = tokio::time::interval(Duration::from_secs(1));
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tick.tick().await;
            store.sweep(SystemClock.now());
        }
    }));
    let cluster = match &args.redis {
        None => None,
        Some(url) => {
            let mut cfg = ClusterConfig::new(url.clone());
            cfg.fail_mode = args.redis_fail;
            cfg.batch = args.redis_batch.max(1);
            cfg.sync_interval = Duration::from_millis(args.redis_sync_ms.max(1));
            let c = Cluster::attach(&runtime.throttle, cfg, Arc::new(SystemClock))
                .map_err(|e| format!("--redis: {e}"))?;
            tracing::info!(node = c.node_id(), fail_mode = ?args.redis_fail,
                batch = args.redis_batch, "throttle counters shared through redis");
            tasks.push(c.spawn());
            Some(c)
        }
    };
    if let Some(url) = &args.redis {
        tasks.push(share_cache(runtime, url)?);
    }
    Ok(ThrottleTasks { tasks, cluster })
}

/// Attaches the response cache's shared level on `url` to the runtime (before the first
/// snapshot is built) and starts its task (connect, write through, purges, probes).
fn share_cache(runtime: &PolicyRuntime, url: &str) -> Result<tokio::task::JoinHandle<()>, String> {
    let level = turnpike_cache::SharedLevel::new(turnpike_cache::SharedConfig::new(url))
        .map_err(|e| format!("--redis: {e}"))?;
    turnpike_cache::attach_shared(runtime.kernel(), level.clone());
    Ok(level.spawn())
}
