//! The gateway side: [`Analytics`] is an observer (`GatewayBuilder::observer`) whose
//! `on_complete` pushes a [`Record`] into a fixed-size lock-free ring
//! (`crossbeam_queue::ArrayQueue`, allocated once). When the ring is full the oldest
//! record is dropped and counted: the newest traffic is the most useful, and a push
//! never waits. One background task wakes every `flush` interval (200 ms) and empties the
//! ring: for a sink of events it turns records into events and hands them over in
//! batches. A sink that stalls stalls only that task.
//!
//! For a sink of rollups ([`Takes::Rollups`]: shipping to the control plane, a rollups
//! file) a request is summed where it ends: each runtime thread has its own
//! [`Aggregator`] (a shard; a thread takes one on first use), which `on_complete`
//! *tries* to lock, and folds the request in (no record, no copy, no reference count
//! unless the request opens a new key). When the shard is busy (the background task is
//! taking its sums, or two threads share it) the request goes through the ring as a
//! record instead: the request path never waits. Every `ship_every` the task swaps each
//! shard's sums out, adds the ring's records, and hands the rows over.

use std::cell::Cell;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crossbeam_queue::ArrayQueue;
use tokio::sync::Notify;
use turnpike_policy::{Completion, Observer, RequestCtx};

use crate::aggregate::{Aggregator, Facts};
use crate::audit::AuditQueue;
use crate::event::{Record, WallClock};
use crate::sink::{Sink, Takes};

/// The pipeline's sizes.
#[derive(Debug, Clone)]
pub struct PipelineSettings {
    /// Records the ring holds (allocated at start).
    pub capacity: usize,
    /// Largest batch handed to the sink.
    pub batch: usize,
    /// How often the background task drains the ring (at 200 ms, the default 16,384
    /// events hold 80,000 requests a second without a drop).
    pub flush: Duration,
    /// The gateway's id, written into every event.
    pub gateway: String,
    /// How often rollup rows go to a sink of rollups (and at shutdown).
    pub ship_every: Duration,
}

impl Default for PipelineSettings {
    fn default() -> Self {
        PipelineSettings {
            capacity: 16_384,
            batch: 1_000,
            flush: Duration::from_millis(200),
            gateway: "gateway".into(),
            ship_every: Duration::from_secs(10),
        }
    }
}

/// What became of the events so far.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stats {
    /// Taken by the sink (as events, or summed into rollup rows it took).
    pub written: u64,
    /// Pushed out of the full ring (the oldest first).
    pub dropped: u64,
    /// In batches the sink refused.
    pub failed: u64,
    /// Waiting in the ring.
    pub queued: u64,
}

struct Shared {
    ring: ArrayQueue<Record>,
    /// Per-thread sums (rollups sinks only; empty for a sink of events).
    shards: Box<[Mutex<Shard>]>,
    dropped: AtomicU64,
    written: AtomicU64,
    failed: AtomicU64,
    stop: Notify,
    /// The sink's backlog while its destination is away (shipping only).
    spool: Option<Arc<crate::spool::SpoolStats>>,
    /// Audited MCP tool calls (`crate::audit`).
    audits: AuditQueue,
}

/// One thread's sums and the wall clock its requests' minutes are read with (renewed by
/// the background task at every wake-up).
struct Shard {
    agg: Aggregator,
    clock: WallClock,
}

/// The shard index of the calling thread: threads take indexes in turn on first use.
fn shard_index(shards: usize) -> usize {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    thread_local!(static MINE: Cell<usize> = const { Cell::new(usize::MAX) });
    let mine = MINE.with(|m| {
        if m.get() == usize::MAX {
            m.set(NEXT.fetch_add(1, Ordering::Relaxed));
        }
        m.get()
    });
    mine % shards
}

/// The analytics observer of one gateway and its background task.
pub struct Analytics {
    shared: Arc<Shared>,
    task: Mutex<Option<tokio::task::JoinHandle<()>>>,
}

impl Analytics {
    /// Starts the background task draining into `sink` (inside a tokio runtime).
    pub fn start(settings: PipelineSettings, sink: Box<dyn Sink>) -> Arc<Analytics> {
        let shards = match sink.takes() {
            Takes::Events => 0,
            Takes::Rollups => std::thread::available_parallelism().map_or(4, |n| n.get() * 2),
        };
        let shared = Arc::new(Shared {
            ring: ArrayQueue::new(settings.capacity.max(1)),
            shards: (0..shards)
                .map(|_| {
                    Mutex::new(Shard {
                        agg: Aggregator::default(),
                        clock: WallClock::now(),
                    })
                })
                .collect(),
            dropped: AtomicU64::new(0),
            written: AtomicU64::new(0),
            failed: AtomicU64::new(0),
            stop: Notify::new(),
            spool: sink.spool_stats(),
            audits: AuditQueue::new(settings.capacity),
        });
        let task = match sink.takes() {
            Takes::Events => tokio::spawn(drain(shared.clone(), settings, sink)),
            Takes::Rollups => tokio::spawn(drain_rollups(shared.clone(), settings, sink)),
        };
        Arc::new(Analytics {
            shared,
            task: Mutex::new(Some(task)),
        })
    }

    pub fn stats(&self) -> Stats {
        let s = &self.shared;
        Stats {
            written: s.written.load(Ordering::Relaxed),
            dropped: s.dropped.load(Ordering::Relaxed),
            failed: s.failed.load(Ordering::Relaxed),
            queued: s.ring.len() as u64,
        }
    }

    /// Drains what is queued into the sink, then stops the task (waiting at most
    /// `within` for a stuck sink).
    pub async fn close(&self, within: Duration) {
        self.shared.stop.notify_one();
        let task = self.task.lock().ok().and_then(|mut t| t.take());
        if let Some(mut task) = task {
            if tokio::time::timeout(within, &mut task).await.is_err() {
                task.abort();
            }
        }
    }

    /// The pipeline's counters in Prometheus text format (the gateway's `/metrics`).
    pub fn render_metrics(&self, out: &mut String) {
        use std::fmt::Write as _;
        let s = self.stats();
        let _ = writeln!(
            out,
            "# HELP turnpike_analytics_events_total Analytics events by what became of them (dropped: pushed out of the full queue, oldest first)\n# TYPE turnpike_analytics_events_total counter"
        );
        for (result, n) in [
            ("written", s.written),
            ("dropped", s.dropped),
            ("failed", s.failed),
        ] {
            let _ = writeln!(
                out,
                "turnpike_analytics_events_total{{result=\"{result}\"}} {n}"
            );
        }
        let _ = writeln!(
            out,
            "# HELP turnpike_analytics_queue_length Analytics events waiting to be written\n# TYPE turnpike_analytics_queue_length gauge\nturnpike_analytics_queue_length {}",
            s.queued
        );
        if let Some(spool) = &self.shared.spool {
            spool.render_metrics(out);
        }
        self.shared.audits.render_metrics(out);
    }
}

impl Drop for Analytics {
    fn drop(&mut self) {
        self.shared.stop.notify_one();
    }
}

impl Observer for Analytics {
    fn name(&self) -> &'static str {
        "analytics"
    }

    fn on_complete(&self, ctx: &RequestCtx, done: &Completion) {
        self.shared.audits.observe(ctx, done);
        let shards = &self.shared.shards;
        if !shards.is_empty() {
            if let Ok(mut shard) = shards[shard_index(shards.len())].try_lock() {
                let Shard { agg, clock } = &mut *shard;
                agg.add(&Facts::of(ctx, done), clock);
                return;
            }
        }
        if self
            .shared
            .ring
            .force_push(Record::new(ctx, done))
            .is_some()
        {
            self.shared.dropped.fetch_add(1, Ordering::Relaxed);
        }
    }
}

async fn drain(shared: Arc<Shared>, settings: PipelineSettings, mut sink: Box<dyn Sink>) {
    let max = settings.batch.max(1);
    let mut batch = Vec::with_capacity(max.min(4_096));
    loop {
        let stopping = tokio::select! {
            _ = tokio::time::sleep(settings.flush) => false,
            _ = shared.stop.notified() => true,
        };
        let clock = WallClock::now();
        loop {
            batch.clear();
            while batch.len() < max {
                let Some(r) = shared.ring.pop() else { break };
                batch.push(r.into_event(&settings.gateway, &clock));
            }
            if batch.is_empty() {
                break;
            }
            let n = batch.len() as u64;
            match sink.write(&batch).await {
                Ok(()) => shared.written.fetch_add(n, Ordering::Relaxed),
                Err(e) => {
                    tracing::warn!(error = %e, events = n, "analytics: the sink refused a batch");
                    shared.failed.fetch_add(n, Ordering::Relaxed)
                }
            };
            if batch.len() < max {
                break;
            }
        }
        write_audits(&shared, &settings, &mut *sink, &clock).await;
        if stopping {
            return;
        }
    }
}

/// Hands the queued audit records to the sink, in batches.
async fn write_audits(
    shared: &Shared,
    settings: &PipelineSettings,
    sink: &mut dyn Sink,
    clock: &WallClock,
) {
    let max = settings.batch.max(1);
    loop {
        let batch = shared.audits.take(max, &settings.gateway, clock);
        if batch.is_empty() {
            return;
        }
        let n = batch.len() as u64;
        let counter = match sink.write_audits(&batch).await {
            Ok(()) => &shared.audits.written,
            Err(e) => {
                tracing::warn!(error = %e, records = n, "analytics: the sink refused MCP audit records");
                &shared.audits.failed
            }
        };
        counter.fetch_add(n, Ordering::Relaxed);
        if batch.len() < max {
            return;
        }
    }
}

/// The rollups drain: records folded into an [`Aggregator`] at every wake-up, its rows
/// handed to the sink every `ship_every` and when stopping.
async fn drain_rollups(shared: Arc<Shared>, settings: PipelineSettings, mut sink: Box<dyn Sink>) {
    let mut agg = Aggregator::default();
    let mut next_ship = tokio::time::Instant::now() + settings.ship_every;
    loop {
        let stopping = tokio::select! {
            _ = tokio::time::sleep(settings.flush) => false,
            _ = shared.stop.notified() => true,
        };
        let clock = WallClock::now();
        while let Some(r) = shared.ring.pop() {
            agg.add(&r.facts(), &clock);
        }
        let now = tokio::time::Instant::now();
        let ship = stopping || now >= next_ship;
        let mut taken = Vec::new();
        for shard in shared.shards.iter() {
            let mut s = shard.lock().unwrap_or_else(|p| p.into_inner());
            s.clock = clock;
            if ship && s.agg.records() > 0 {
                taken.push(std::mem::take(&mut s.agg));
            }
        }
        if ship {
            next_ship = now + settings.ship_every;
            let mut rows = Vec::new();
            let mut n = 0;
            for mut a in taken
                .into_iter()
                .chain(std::iter::once(std::mem::take(&mut agg)))
            {
                if a.records() > 0 {
                    let (r, k) = a.take_rows(&settings.gateway);
                    rows.extend(r);
                    n += k;
                }
            }
            if n == 0 {
                // Nothing new: a backlog (the control plane was away) still goes out.
                if let Err(e) = sink.flush().await {
                    tracing::debug!(error = %e, "analytics: backlog not sent yet");
                }
            } else {
                let rows = crate::rollup::compact(&rows, crate::rollup::MINUTE);
                match sink.write_rollups(&rows).await {
                    Ok(()) => shared.written.fetch_add(n, Ordering::Relaxed),
                    Err(e) => {
                        tracing::warn!(error = %e, rows = rows.len(), requests = n, "analytics: the sink refused rollups");
                        shared.failed.fetch_add(n, Ordering::Relaxed)
                    }
                };
            }
            write_audits(&shared, &settings, &mut *sink, &clock).await;
        }
        if stopping {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex as StdMutex;

    use http::{HeaderValue, Method, StatusCode, Uri};
    use turnpike_policy::{Timings, UpstreamTarget};

    use super::*;
    use crate::rollup::Row;
    use crate::sink::SinkError;

    /// Keeps the rows it is handed.
    struct Rows(Arc<StdMutex<Vec<Row>>>);

    #[async_trait::async_trait]
    impl Sink for Rows {
        fn takes(&self) -> Takes {
            Takes::Rollups
        }
        async fn write(&mut self, _: &[crate::event::Event]) -> Result<(), SinkError> {
            Err(SinkError::Other("rows only".into()))
        }
        async fn write_rollups(&mut self, rows: &[Row]) -> Result<(), SinkError> {
            if let Ok(mut all) = self.0.lock() {
                all.extend_from_slice(rows);
            }
            Ok(())
        }
    }

    fn request() -> RequestCtx {
        let target = UpstreamTarget::suffix(Uri::from_static("/x"), 0);
        RequestCtx::new(
            HeaderValue::from_static("1"),
            ([127, 0, 0, 1], 1).into(),
            false,
            target,
        )
    }

    fn completion(status: u16) -> Completion<'static> {
        Completion {
            status: StatusCode::from_u16(status).unwrap_or(StatusCode::OK),
            error: None,
            aborted: false,
            timings: Timings::default(),
            bytes_in: 0,
            bytes_out: 10,
            method: Method::GET,
            upstream_status: Some(StatusCode::OK),
            api: None,
            started: std::time::Instant::now(),
        }
    }

    #[tokio::test]
    async fn a_request_whose_shard_is_busy_goes_through_the_ring_and_is_counted() {
        let rows = Arc::new(StdMutex::new(Vec::new()));
        let a = Analytics::start(PipelineSettings::default(), Box::new(Rows(rows.clone())));
        let ctx = request();
        a.on_complete(&ctx, &completion(200)); // summed in this thread's shard
        {
            let _busy = a.shared.shards[shard_index(a.shared.shards.len())].lock();
            a.on_complete(&ctx, &completion(200)); // the shard is held: queued instead
            assert_eq!(a.stats().queued, 1, "the busy shard's request is queued");
        }
        a.on_complete(&ctx, &completion(200));
        a.close(Duration::from_secs(5)).await;
        let rows = rows.lock().map(|r| r.clone()).unwrap_or_default();
        let requests: u64 = rows.iter().map(|r| r.sums.requests).sum();
        assert_eq!(requests, 3, "{rows:?}");
        assert_eq!(
            rows.len(),
            1,
            "one key: the shard's and the ring's sums merge"
        );
        assert_eq!(a.stats().written, 3);
    }

    #[tokio::test]
    async fn a_request_the_response_cache_answered_counts_as_a_cache_hit() {
        let rows = Arc::new(StdMutex::new(Vec::new()));
        let a = Analytics::start(PipelineSettings::default(), Box::new(Rows(rows.clone())));
        let mut hit = request();
        hit.ext.insert(turnpike_policy::FromCache);
        a.on_complete(&hit, &completion(200));
        a.on_complete(&request(), &completion(200));
        a.close(Duration::from_secs(5)).await;
        let rows = rows.lock().map(|r| r.clone()).unwrap_or_default();
        let hits: u64 = rows.iter().map(|r| r.sums.cache_hits).sum();
        let requests: u64 = rows.iter().map(|r| r.sums.requests).sum();
        assert_eq!((hits, requests), (1, 2), "{rows:?}");
        let outcomes: Vec<&str> = rows.iter().map(|r| r.key.outcome.as_str()).collect();
        assert!(outcomes.contains(&"cache_hit"), "{outcomes:?}");
    }

    #[tokio::test]
    async fn an_ai_calls_tokens_and_time_to_first_token_reach_its_model_row() {
        let rows = Arc::new(StdMutex::new(Vec::new()));
        let a = Analytics::start(PipelineSettings::default(), Box::new(Rows(rows.clone())));
        let mut call = request();
        call.ext.insert(turnpike_policy::ai::TokenUsage {
            prompt: 120,
            completion: 80,
            cached: 20,
            total: 200,
            model: Some("gpt-4o-mini".into()),
            provider: Some("openai".into()),
            estimated: false,
        });
        let mut done = completion(200);
        done.timings.first_byte = Some(Duration::from_millis(40));
        a.on_complete(&call, &done);
        a.on_complete(&call, &done);
        a.on_complete(&request(), &completion(200));
        a.close(Duration::from_secs(5)).await;
        let rows = rows.lock().map(|r| r.clone()).unwrap_or_default();
        let ai: Vec<&Row> = rows
            .iter()
            .filter(|r| r.key.model == "gpt-4o-mini")
            .collect();
        assert_eq!(ai.len(), 1, "{rows:?}");
        let (k, s) = (&ai[0].key, &ai[0].sums);
        assert_eq!(k.provider, "openai");
        assert_eq!(
            (
                s.requests,
                s.prompt_tokens,
                s.completion_tokens,
                s.cached_tokens
            ),
            (2, 240, 160, 40)
        );
        assert_eq!(s.ttft.count(), 2);
        assert!(
            s.ttft
                .percentile(0.5)
                .is_some_and(|us| (40_000..=45_000).contains(&us)),
            "{:?}",
            s.ttft
        );
        let other: u64 = rows
            .iter()
            .filter(|r| r.key.model.is_empty())
            .map(|r| r.sums.prompt_tokens + r.sums.ttft.count())
            .sum();
        assert_eq!(other, 0, "a plain request adds no tokens");
    }
}
