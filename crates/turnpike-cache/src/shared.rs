//! The shared second level in Redis (`cache: { shared: redis }`, the gateway's
//! `--redis`): stored answers are written through to Redis by a background task, and a
//! local miss reads Redis (one `MGET`, bounded by a few milliseconds) before the back
//! end is called, so the gateways of a cluster fill each other's memory.
//!
//! A circuit keeps an outage off the request path: the level is *up* only while the
//! last call worked; any error or timeout marks it down (logged once), and while down
//! no request touches Redis (no connect attempt per request) and no write is queued.
//! The background task probes (a fresh connection and a `PING`) every
//! `probe_interval` and marks it up again, so sharing resumes without a restart.
//!
//! Purges: a per-API *generation* in Redis (`{prefix}{api}|gen`), carried inside every
//! entry written (the one the writing request read before going upstream). Every purge,
//! whatever it names, bumps it once (a marker per purge id, `SET NX`, makes the cluster's
//! gateways bump it once between them), and readers ignore entries of another
//! generation: one `INCR` per purge instead of an index per tag and prefix kept on every
//! write. The exact purge (prefix, tag) still applies to each gateway's memory; the
//! shared level loses all of the API's entries, which the first reads refill.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use arc_swap::ArcSwapOption;
use redis::aio::MultiplexedConnection;
use redis::{AsyncConnectionConfig, Client, RedisError, RedisResult};
use tokio::sync::{mpsc, Notify};

use crate::wire::{self, ToWire};

/// Where and how the shared level talks to Redis.
#[derive(Debug, Clone)]
pub struct SharedConfig {
    /// `redis://host:port/db` (the gateway's `--redis`).
    pub url: String,
    /// The longest a request waits for Redis before going upstream as on a miss.
    pub timeout: Duration,
    /// How often a level marked down tries to reconnect.
    pub probe_interval: Duration,
    /// Prefix of every Redis key.
    pub key_prefix: String,
}

impl SharedConfig {
    pub fn new(url: impl Into<String>) -> SharedConfig {
        SharedConfig {
            url: url.into(),
            timeout: Duration::from_millis(10),
            probe_interval: Duration::from_millis(250),
            key_prefix: "turnpike:cache:".to_owned(),
        }
    }
}

/// Writes waiting for the background task; past it, new ones are dropped (counted).
const WRITE_QUEUE: usize = 4096;
/// Writes sent in one pipeline.
const WRITE_BATCH: usize = 64;
/// How long a purge's marker is kept (a gateway seeing the purge later bumps no more).
const PURGE_MARKER_MS: u64 = 7 * 24 * 3600 * 1000;

/// Bumps an API's generation once per purge id across the cluster.
const PURGE_LUA: &str = r"
if redis.call('SET', KEYS[2], '1', 'NX', 'PX', ARGV[1]) then
  return redis.call('INCR', KEYS[1])
end
return 0
";

/// One answer to write through.
pub(crate) struct Write {
    pub(crate) api: Arc<str>,
    pub(crate) key: String,
    pub(crate) generation: u64,
    pub(crate) entry: Arc<dyn ToWire>,
    pub(crate) ttl: Duration,
}

/// A purge to carry to Redis (the API's store reads around Redis while `pending` > 0).
struct Purge {
    api: Arc<str>,
    pending: Arc<AtomicUsize>,
    id: u64,
}

/// What a read of Redis found for a request's keys: the API's generation and the
/// entries of that generation under the caller's own key and under the shared one.
pub(crate) struct Fetched {
    pub(crate) generation: u64,
    pub(crate) own: Option<wire::WireEntry>,
    pub(crate) shared: Option<wire::WireEntry>,
}

/// The process's link to the shared level (in [`crate::CacheStores`]).
pub struct SharedLevel {
    client: Client,
    config: SharedConfig,
    conn: ArcSwapOption<MultiplexedConnection>,
    up: AtomicBool,
    outages: AtomicU64,
    dropped_writes: AtomicU64,
    writes: mpsc::Sender<Write>,
    queued: Mutex<Option<mpsc::Receiver<Write>>>,
    purges: Mutex<Vec<Purge>>,
    purge_wake: Notify,
}

impl std::fmt::Debug for SharedLevel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedLevel")
            .field("up", &self.is_up())
            .finish_non_exhaustive()
    }
}

impl SharedLevel {
    /// A level that connects when its task ([`spawn`](Self::spawn)) first runs.
    pub fn new(config: SharedConfig) -> Result<Arc<SharedLevel>, RedisError> {
        let client = Client::open(config.url.as_str())?;
        let (tx, rx) = mpsc::channel(WRITE_QUEUE);
        Ok(Arc::new(SharedLevel {
            client,
            config,
            conn: ArcSwapOption::empty(),
            up: AtomicBool::new(false),
            outages: AtomicU64::new(0),
            dropped_writes: AtomicU64::new(0),
            writes: tx,
            queued: Mutex::new(Some(rx)),
            purges: Mutex::new(Vec::new()),
            purge_wake: Notify::new(),
        }))
    }

    /// Whether requests use Redis now (the last call worked).
    pub fn is_up(&self) -> bool {
        self.up.load(Ordering::Relaxed)
    }

    /// How many times Redis became unreachable.
    pub fn outages(&self) -> u64 {
        self.outages.load(Ordering::Relaxed)
    }

    /// Writes dropped because the queue was full or Redis down.
    pub fn dropped_writes(&self) -> u64 {
        self.dropped_writes.load(Ordering::Relaxed)
    }

    /// The background task: connects, writes through, carries purges, and probes while
    /// down. Call once, inside a tokio runtime; abort the handle to stop it.
    pub fn spawn(self: &Arc<Self>) -> tokio::task::JoinHandle<()> {
        let me = self.clone();
        let rx = self
            .queued
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        tokio::spawn(async move {
            let Some(mut rx) = rx else {
                return;
            };
            let mut tick = tokio::time::interval(me.config.probe_interval);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tokio::select! {
                    got = rx.recv() => match got {
                        Some(first) => me.write_batch(first, &mut rx).await,
                        None => return,
                    },
                    _ = tick.tick() => me.maintain().await,
                    () = me.purge_wake.notified() => me.maintain().await,
                }
            }
        })
    }

    fn key(&self, api: &str, key: &str) -> String {
        format!("{}{api}|e|{key}", self.config.key_prefix)
    }

    fn generation_key(&self, api: &str) -> String {
        format!("{}{api}|gen", self.config.key_prefix)
    }

    /// Reads the API's generation and the entries under `own` and `shared` (one round
    /// trip, at most `timeout`). Entries of another generation, another key, or that do
    /// not decode are left out. `None`: Redis is down, slow or failed (a local miss).
    pub(crate) async fn fetch(
        &self,
        api: &str,
        own: Option<&str>,
        shared: &str,
    ) -> Option<Fetched> {
        let mut conn = self.connection()?;
        let mut cmd = redis::cmd("MGET");
        cmd.arg(self.generation_key(api)).arg(self.key(api, shared));
        if let Some(own) = own {
            cmd.arg(self.key(api, own));
        }
        let reply = tokio::time::timeout(
            self.config.timeout,
            cmd.query_async::<Vec<Option<Vec<u8>>>>(&mut conn),
        )
        .await;
        let mut values = match reply {
            Ok(Ok(v)) => v.into_iter(),
            Ok(Err(e)) => return self.down(&e.to_string()),
            Err(_) => return self.down("no answer within the timeout"),
        };
        let generation = values
            .next()
            .flatten()
            .and_then(|g| std::str::from_utf8(&g).ok()?.parse().ok())
            .unwrap_or(0);
        let valid = |bytes: Option<Vec<u8>>, key: &str| {
            let e = wire::decode(&bytes?)?;
            (e.key == key && e.generation == generation).then_some(e)
        };
        let shared_entry = valid(values.next().flatten(), shared);
        let own_entry = own.and_then(|k| valid(values.next().flatten(), k));
        Some(Fetched {
            generation,
            own: own_entry,
            shared: shared_entry,
        })
    }

    /// Queues an answer to write through (dropped, counted, when Redis is down or the
    /// queue is full: the request never waits for Redis to store).
    pub(crate) fn write(&self, w: Write) {
        if !self.is_up() || self.writes.try_send(w).is_err() {
            self.dropped_writes.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Queues purge `id` of API `api`: until it reached Redis, `pending` counts it (and
    /// the API's store reads and writes around the shared level).
    pub(crate) fn purge(&self, api: Arc<str>, pending: Arc<AtomicUsize>, id: u64) {
        pending.fetch_add(1, Ordering::AcqRel);
        self.purges
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(Purge { api, pending, id });
        self.purge_wake.notify_one();
    }

    fn connection(&self) -> Option<MultiplexedConnection> {
        if !self.is_up() {
            return None;
        }
        self.conn.load().as_deref().cloned()
    }

    fn down(&self, why: &str) -> Option<Fetched> {
        self.conn.store(None);
        if self.up.swap(false, Ordering::AcqRel) {
            self.outages.fetch_add(1, Ordering::Relaxed);
            tracing::warn!(error = %why, "redis unreachable: the response cache's shared level is off until it returns");
        }
        None
    }

    /// Probes while down; carries pending purges while up.
    async fn maintain(&self) {
        if !self.is_up() {
            self.probe().await;
        }
        if self.is_up() {
            self.carry_purges().await;
        }
    }

    async fn probe(&self) {
        let limit = self.config.probe_interval.max(self.config.timeout);
        let cfg = AsyncConnectionConfig::new()
            .set_connection_timeout(limit)
            .set_response_timeout(limit);
        let attempt = async {
            let mut c = self
                .client
                .get_multiplexed_async_connection_with_config(&cfg)
                .await?;
            redis::cmd("PING").query_async::<()>(&mut c).await?;
            RedisResult::Ok(c)
        };
        if let Ok(Ok(c)) = tokio::time::timeout(limit, attempt).await {
            self.conn.store(Some(Arc::new(c)));
            self.up.store(true, Ordering::Release);
            tracing::info!("redis reachable: the response cache's shared level is on");
        }
    }

    async fn carry_purges(&self) {
        let jobs = std::mem::take(&mut *self.purges.lock().unwrap_or_else(PoisonError::into_inner));
        let script = redis::Script::new(PURGE_LUA);
        let mut left = Vec::new();
        for job in jobs {
            let done = match self.connection() {
                Some(mut conn) => {
                    let api = &*job.api;
                    let marker = format!("{}{api}|purge|{}", self.config.key_prefix, job.id);
                    let mut invocation = script.key(self.generation_key(api));
                    invocation.key(marker).arg(PURGE_MARKER_MS);
                    let call = invocation.invoke_async::<u64>(&mut conn);
                    match tokio::time::timeout(self.slow_timeout(), call).await {
                        Ok(Ok(_)) => true,
                        Ok(Err(e)) => {
                            self.down(&e.to_string());
                            false
                        }
                        Err(_) => {
                            self.down("purge timed out");
                            false
                        }
                    }
                }
                None => false,
            };
            if done {
                job.pending.fetch_sub(1, Ordering::AcqRel);
            } else {
                left.push(job);
            }
        }
        // Kept for the next round (after the probe that finds Redis again).
        self.purges
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .extend(left);
    }

    /// Work off the request path gets longer than a request's read.
    fn slow_timeout(&self) -> Duration {
        (self.config.timeout * 20).max(Duration::from_millis(200))
    }

    async fn write_batch(&self, first: Write, rx: &mut mpsc::Receiver<Write>) {
        let mut batch = vec![first];
        while batch.len() < WRITE_BATCH {
            match rx.try_recv() {
                Ok(w) => batch.push(w),
                Err(_) => break,
            }
        }
        let Some(mut conn) = self.connection() else {
            self.dropped_writes
                .fetch_add(batch.len() as u64, Ordering::Relaxed);
            return;
        };
        let mut pipe = redis::pipe();
        let mut queued = 0;
        for w in &batch {
            let ms = u64::try_from(w.ttl.as_millis()).unwrap_or(u64::MAX).max(1);
            let Some(bytes) = wire::encode(&w.entry.to_wire(&w.key, w.generation)) else {
                continue;
            };
            pipe.cmd("SET")
                .arg(self.key(&w.api, &w.key))
                .arg(bytes)
                .arg("PX")
                .arg(ms)
                .ignore();
            queued += 1;
        }
        if queued == 0 {
            return;
        }
        match tokio::time::timeout(self.slow_timeout(), pipe.query_async::<()>(&mut conn)).await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => {
                self.down(&e.to_string());
            }
            Err(_) => {
                self.down("write timed out");
            }
        }
    }
}
