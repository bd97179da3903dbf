//! Cluster mode: quotas shared by every gateway through Redis, with no Redis round trip
//! on the request path.
//!
//! Each node *leases* quota from a per-window Redis hash (one field per node plus a
//! `_total`), in batches, from a background task. On the request path a node admits
//! while its local count stays within what it was granted plus a credit; when it
//! reaches its grant it queues a lease request (one atomic flag, one `try_send`). The
//! task runs every `sync_interval`, pipelines one Lua call per queued key and applies the
//! grants.
//!
//! The credit is one batch `b`, or while much quota is still unleased, a share of it:
//! `max(b, unleased / (2 x nodes))` (unleased and nodes as the last lease saw them; a
//! window not leased yet counts as wholly unleased). So a node never refuses while the
//! window is far from its limit just because its next lease is late (a busy runtime, a
//! slow Redis, traffic above `b` per sync interval, the first requests of a window, the
//! moments after Redis returns); the shares of all nodes together stay under half the
//! unleased quota, and near the limit the credit is `b` again, so per key and window,
//! with `n` nodes: admitted <= limit + n * b. docs/throttling.md has the details.
//!
//! Each call re-asserts the node's own grants (`HSET node max(held, mine)`), so a Redis
//! that lost its data (restart without persistence) is refilled by the nodes. While Redis
//! is unreachable, nodes serve on local limits (`FailMode`), log once, and reconnect by
//! themselves; consumption during the outage is charged on the first lease after it.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use serde::{Deserialize, Serialize};
use tokio::sync::mpsc;
use turnpike_model::clock::Clock;

use crate::counter;
use crate::store::{CounterStore, Slot};

/// What a node does with its quotas while Redis is unreachable.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FailMode {
    /// Each node enforces the full limit on its own (the cluster may admit up to
    /// `nodes x limit` per window during the outage).
    #[default]
    Open,
    /// Each node admits only what Redis had already granted it; then 429.
    Closed,
}

/// Cluster settings.
#[derive(Debug, Clone)]
pub struct ClusterConfig {
    /// `redis://host:port/db`.
    pub url: String,
    /// Lease size `b` (capped per key at a tenth of its limit, at least 1).
    pub batch: u64,
    /// How often queued leases are fetched.
    pub sync_interval: Duration,
    pub fail_mode: FailMode,
    /// Prefix of every Redis key.
    pub key_prefix: String,
    /// This node's name in the lease hashes; unique per process when `None`.
    pub node_id: Option<String>,
}

impl ClusterConfig {
    pub fn new(url: impl Into<String>) -> Self {
        ClusterConfig {
            url: url.into(),
            batch: 100,
            sync_interval: Duration::from_millis(50),
            fail_mode: FailMode::Open,
            key_prefix: "turnpike:throttle:".to_owned(),
            node_id: None,
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ClusterError {
    #[error("invalid Redis URL: {0}")]
    Url(#[source] redis::RedisError),
    #[error("this counter store is already attached to a cluster")]
    AlreadyAttached,
}

/// A queued lease request.
#[derive(Debug, Clone, Copy)]
pub(crate) struct LeaseReq {
    key: u64,
    window: u64,
    unit_ns: u64,
    limit: u64,
}

/// The part of the cluster the request path sees.
pub(crate) struct ClusterLink {
    batch: u64,
    fail_mode: FailMode,
    up: AtomicBool,
    /// The most nodes seen leasing one key in one window (at least 1).
    nodes: AtomicU64,
    tx: mpsc::Sender<LeaseReq>,
}

impl ClusterLink {
    fn batch_for(&self, limit: u64) -> u64 {
        self.batch.min((limit / 10).max(1))
    }

    /// A window take under cluster rules: (admitted, local count, estimated global count).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn take(
        &self,
        s: &Slot,
        key: u64,
        window: u64,
        unit_ns: u64,
        cost: u64,
        limit: u64,
        force: bool,
    ) -> (bool, u64, u64) {
        let (granted, exhausted) = counter::lease_read(&s.lease, window);
        let others = counter::window_used(&s.others, window);
        let allowance = if self.up.load(Ordering::Relaxed) {
            if exhausted {
                granted
            } else {
                granted + self.credit(limit, granted.saturating_add(others))
            }
        } else {
            match self.fail_mode {
                FailMode::Open => limit,
                FailMode::Closed => granted,
            }
        };
        let (ok, used) = counter::window_take(&s.word, window, cost, allowance.min(limit), force);
        if !ok || used >= granted {
            self.queue_lease(s, key, window, unit_ns, limit);
        }
        (ok, used, used.saturating_add(others))
    }

    /// A hold of many units at once (a token budget's estimate): admitted while the
    /// window's count as this node knows it (its own, and the others' at its last
    /// lease) leaves room for all of it. Not bounded by this node's grants plus a
    /// credit as [`take`](Self::take) is: that credit is sized for one unit per request
    /// and would refuse a large hold far from the limit. While Redis is away, `Open`
    /// holds against the whole limit, `Closed` against what was granted. Returns
    /// (admitted, estimated global count).
    pub(crate) fn hold(
        &self,
        s: &Slot,
        key: u64,
        window: u64,
        unit_ns: u64,
        cost: u64,
        limit: u64,
    ) -> (bool, u64) {
        let others = counter::window_used(&s.others, window);
        let room = match (self.up.load(Ordering::Relaxed), self.fail_mode) {
            (true, _) | (false, FailMode::Open) => limit.saturating_sub(others),
            (false, FailMode::Closed) => counter::lease_read(&s.lease, window).0,
        };
        let (ok, used) = counter::window_take(&s.word, window, cost, room, false);
        // Every hold asks for a lease round: the next one tells this node what the
        // others used (and grants it more when it needs more).
        self.queue_lease(s, key, window, unit_ns, limit);
        (ok, used.saturating_add(others))
    }

    /// Asks the background task for a lease of this slot's window (once until it runs).
    fn queue_lease(&self, s: &Slot, key: u64, window: u64, unit_ns: u64, limit: u64) {
        if s.lease_pending.swap(true, Ordering::AcqRel) {
            return;
        }
        let req = LeaseReq {
            key,
            window,
            unit_ns,
            limit,
        };
        if self.tx.try_send(req).is_err() {
            s.lease_pending.store(false, Ordering::Release);
        }
    }

    /// How far past its grants a node may run: one batch, or a share of the quota not
    /// leased yet (`leased` = everything Redis had granted at this node's last lease).
    fn credit(&self, limit: u64, leased: u64) -> u64 {
        let unleased = limit.saturating_sub(leased);
        let nodes = self.nodes.load(Ordering::Relaxed).max(1);
        self.batch_for(limit)
            .max(unleased / nodes.saturating_mul(2))
    }
}

/// Leases: takes up to `want` for `node` from a window hash capped at `limit`, after
/// re-asserting the node's own grants (`mine`) so a Redis that lost its data is
/// refilled. Returns {granted, total, nodes holding grants}.
const LEASE_LUA: &str = r"
local key = KEYS[1]
local node = ARGV[1]
local mine = tonumber(ARGV[2])
local want = tonumber(ARGV[3])
local limit = tonumber(ARGV[4])
local held = tonumber(redis.call('HGET', key, node) or '0')
if held < mine then
  redis.call('HINCRBY', key, '_total', mine - held)
  redis.call('HSET', key, node, mine)
end
local total = tonumber(redis.call('HGET', key, '_total') or '0')
local grant = limit - total
if grant > want then grant = want end
if grant < 0 then grant = 0 end
if grant > 0 then
  total = redis.call('HINCRBY', key, '_total', grant)
  redis.call('HINCRBY', key, node, grant)
end
redis.call('PEXPIRE', key, ARGV[5])
return {grant, total, redis.call('HLEN', key) - 1}
";

/// What one sync round did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SyncReport {
    pub requested: usize,
    pub granted: u64,
    pub failed: bool,
}

/// The background side: owns the Redis connection and the lease queue.
pub struct Cluster {
    link: Arc<ClusterLink>,
    store: Arc<CounterStore>,
    clock: Arc<dyn Clock>,
    client: redis::Client,
    config: ClusterConfig,
    node: String,
    rx: tokio::sync::Mutex<mpsc::Receiver<LeaseReq>>,
    conn: tokio::sync::Mutex<Option<ConnectionManager>>,
    pending: Mutex<HashMap<u64, LeaseReq>>,
    outages: AtomicU64,
}

impl std::fmt::Debug for Cluster {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cluster")
            .field("node", &self.node)
            .field("up", &self.is_up())
            .finish_non_exhaustive()
    }
}

const QUEUE: usize = 65_536;
const MAX_PENDING: usize = 262_144;
const PIPELINE: usize = 512;

impl Cluster {
    /// Puts `store` in cluster mode. Nothing connects until the first sync.
    pub fn attach(
        store: &Arc<CounterStore>,
        config: ClusterConfig,
        clock: Arc<dyn Clock>,
    ) -> Result<Arc<Self>, ClusterError> {
        let client = redis::Client::open(config.url.as_str()).map_err(ClusterError::Url)?;
        let (tx, rx) = mpsc::channel(QUEUE);
        let link = Arc::new(ClusterLink {
            batch: config.batch.max(1),
            fail_mode: config.fail_mode,
            up: AtomicBool::new(true),
            nodes: AtomicU64::new(1),
            tx,
        });
        store
            .cluster
            .set(link.clone())
            .map_err(|_| ClusterError::AlreadyAttached)?;
        let node = config.node_id.clone().unwrap_or_else(default_node_id);
        Ok(Arc::new(Cluster {
            link,
            store: store.clone(),
            clock,
            client,
            config,
            node,
            rx: tokio::sync::Mutex::new(rx),
            conn: tokio::sync::Mutex::new(None),
            pending: Mutex::new(HashMap::new()),
            outages: AtomicU64::new(0),
        }))
    }

    /// Runs `sync_once` every `sync_interval` until the returned handle is aborted.
    pub fn spawn(self: &Arc<Self>) -> tokio::task::JoinHandle<()> {
        let me = self.clone();
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(me.config.sync_interval);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tick.tick().await;
                me.sync_once().await;
            }
        })
    }

    /// Whether the last sync reached Redis.
    pub fn is_up(&self) -> bool {
        self.link.up.load(Ordering::Relaxed)
    }

    /// How many times Redis became unreachable.
    pub fn outages(&self) -> u64 {
        self.outages.load(Ordering::Relaxed)
    }

    pub fn node_id(&self) -> &str {
        &self.node
    }

    /// The Redis key of a counter key in a window.
    fn redis_key(&self, key: u64, window: u64) -> String {
        format!("{}{key:016x}:{window}", self.config.key_prefix)
    }

    /// Fetches every queued lease in one pipeline and applies the grants.
    pub async fn sync_once(&self) -> SyncReport {
        let now = self.clock.now().as_nanos();
        let batch = self.drain(now);
        if batch.is_empty() {
            return SyncReport::default();
        }
        let mut report = SyncReport {
            requested: batch.len(),
            ..SyncReport::default()
        };
        for chunk in batch.chunks(PIPELINE) {
            match self.lease_chunk(chunk).await {
                Ok(granted) => {
                    report.granted += granted;
                    self.mark_up();
                }
                Err(e) => {
                    report.failed = true;
                    // A fresh connection next round: reconnecting is then ours to drive.
                    self.conn.lock().await.take();
                    self.mark_down(&e);
                    self.requeue(&batch);
                    break;
                }
            }
        }
        report
    }

    /// Queued requests still in their window, one per key, with what to ask for.
    fn drain(&self, now: u64) -> Vec<(LeaseReq, u64, u64)> {
        let mut pending = match self.pending.lock() {
            Ok(p) => p,
            Err(poisoned) => poisoned.into_inner(),
        };
        if let Ok(mut rx) = self.rx.try_lock() {
            while let Ok(req) = rx.try_recv() {
                if pending.len() < MAX_PENDING || pending.contains_key(&req.key) {
                    pending.insert(req.key, req);
                }
            }
        }
        let mut out = Vec::with_capacity(pending.len());
        for (_, req) in pending.drain() {
            if now / req.unit_ns.max(1) != req.window {
                self.store
                    .peek(req.key, |s| s.lease_pending.store(false, Ordering::Release));
                continue;
            }
            let b = self.link.batch_for(req.limit);
            let asked = self.store.peek(req.key, |s| {
                let used = counter::window_used(&s.word, req.window);
                let (granted, _) = counter::lease_read(&s.lease, req.window);
                // Within its grants (a token hold asks to learn the others' count), a
                // node asks for nothing: it would only hoard what others need.
                let want = if used >= granted {
                    used - granted + b
                } else {
                    0
                };
                (granted, want)
            });
            if let Some((mine, want)) = asked {
                out.push((req, mine, want));
            }
        }
        out
    }

    fn requeue(&self, batch: &[(LeaseReq, u64, u64)]) {
        let mut pending = match self.pending.lock() {
            Ok(p) => p,
            Err(poisoned) => poisoned.into_inner(),
        };
        for (req, _, _) in batch {
            pending.entry(req.key).or_insert(*req);
        }
    }

    async fn connection(&self) -> redis::RedisResult<ConnectionManager> {
        let mut guard = self.conn.lock().await;
        if let Some(c) = guard.as_ref() {
            return Ok(c.clone());
        }
        let timeout = self.config.sync_interval.max(Duration::from_millis(200));
        let cfg = ConnectionManagerConfig::new()
            .set_number_of_retries(1)
            .set_connection_timeout(timeout)
            .set_response_timeout(timeout);
        let c = ConnectionManager::new_with_config(self.client.clone(), cfg).await?;
        *guard = Some(c.clone());
        Ok(c)
    }

    async fn lease_chunk(&self, chunk: &[(LeaseReq, u64, u64)]) -> redis::RedisResult<u64> {
        let mut conn = self.connection().await?;
        let mut pipe = redis::pipe();
        for (req, mine, want) in chunk {
            let ttl_ms = (req.unit_ns / 1_000_000).saturating_mul(2).max(2_000);
            pipe.cmd("EVAL")
                .arg(LEASE_LUA)
                .arg(1)
                .arg(self.redis_key(req.key, req.window))
                .arg(&self.node)
                .arg(*mine)
                .arg(*want)
                .arg(req.limit)
                .arg(ttl_ms);
        }
        let limit = self.config.sync_interval.max(Duration::from_millis(200)) * 4;
        let replies: Vec<(u64, u64, u64)> =
            match tokio::time::timeout(limit, pipe.query_async(&mut conn)).await {
                Ok(r) => r?,
                Err(_) => {
                    return Err(redis::RedisError::from((
                        redis::ErrorKind::IoError,
                        "lease pipeline timed out",
                    )))
                }
            };
        let mut total_granted = 0;
        for ((req, _, want), (grant, total, nodes)) in chunk.iter().zip(replies) {
            total_granted += grant;
            self.link.nodes.fetch_max(nodes, Ordering::Relaxed);
            self.store.peek(req.key, |s| {
                counter::lease_add(&s.lease, req.window, grant, grant < *want);
                let (granted, _) = counter::lease_read(&s.lease, req.window);
                counter::window_set(&s.others, req.window, total.saturating_sub(granted));
                s.lease_pending.store(false, Ordering::Release);
            });
        }
        Ok(total_granted)
    }

    fn mark_up(&self) {
        if !self.link.up.swap(true, Ordering::AcqRel) {
            tracing::info!(node = %self.node, "redis reachable again: cluster throttling resumed");
        }
    }

    fn mark_down(&self, e: &redis::RedisError) {
        if self.link.up.swap(false, Ordering::AcqRel) {
            self.outages.fetch_add(1, Ordering::Relaxed);
            tracing::warn!(
                node = %self.node,
                error = %e,
                fail_mode = ?self.config.fail_mode,
                "redis unreachable: throttling on local limits until it returns"
            );
        }
    }
}

fn default_node_id() -> String {
    let nanos = turnpike_model::clock::SystemClock.now().as_nanos();
    format!("{:x}-{:x}", std::process::id(), nanos & 0xffff_ffff)
}
