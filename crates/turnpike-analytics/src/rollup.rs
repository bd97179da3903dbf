//! Rollups: events summed per period (a minute when ingested; an hour or a day after
//! compaction) and [`RollupKey`]. Every field merges by addition, histograms included,
//! so any set of rollups merges into the rollup of all their events.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use crate::event::{Event, Latency, Outcome};
use crate::hist::Hist;
use crate::time::align;

/// One minute.
pub const MINUTE: i64 = 60;
pub const HOUR: i64 = 3_600;
pub const DAY: i64 = 86_400;

/// What a rollup row is about. Empty strings stand for "none" (an unrouted request has
/// no API; an open API no application).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Default, Serialize, Deserialize)]
pub struct RollupKey {
    pub gateway: String,
    pub api_name: String,
    pub api_context: String,
    pub api_version: String,
    pub resource: String,
    pub method: String,
    pub application_id: String,
    pub application_name: String,
    /// 1..5 for 1xx..5xx.
    pub status_class: u8,
    pub outcome: String,
    /// The error code or the throttling policy (see [`Event::reason`]).
    pub reason: String,
    /// An AI API call's provider and model (empty for other requests).
    #[serde(default)]
    pub provider: String,
    #[serde(default)]
    pub model: String,
}

impl RollupKey {
    pub fn of(e: &Event) -> RollupKey {
        let s = |v: &Option<String>| v.clone().unwrap_or_default();
        RollupKey {
            gateway: e.gateway.clone(),
            api_name: s(&e.api_name),
            api_context: s(&e.api_context),
            api_version: s(&e.api_version),
            resource: s(&e.resource),
            method: e.method.clone(),
            application_id: s(&e.application_id),
            application_name: s(&e.application_name),
            status_class: e.status_class(),
            outcome: e.outcome.as_str().to_string(),
            reason: s(&e.reason),
            provider: e
                .ai
                .as_ref()
                .map(|a| a.provider.clone())
                .unwrap_or_default(),
            model: e.ai.as_ref().map(|a| a.model.clone()).unwrap_or_default(),
        }
    }
}

/// Sums over the events of one key and period.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Rollup {
    pub requests: u64,
    /// Answered with a status of 400 or more (499 included).
    pub errors: u64,
    pub throttled: u64,
    pub cache_hits: u64,
    pub bytes_in: u64,
    pub bytes_out: u64,
    /// In JSON the histograms are `lat_*`, as the store's columns.
    #[serde(rename = "lat_total")]
    pub total: Hist,
    /// The gateway's share (before + after) per request.
    #[serde(rename = "lat_gateway")]
    pub gateway: Hist,
    /// The back end's, for requests an upstream answered.
    #[serde(rename = "lat_upstream")]
    pub upstream: Hist,
    #[serde(rename = "lat_before")]
    pub before: Hist,
    #[serde(rename = "lat_after")]
    pub after: Hist,
    /// AI API calls' tokens (zero for other requests).
    #[serde(default)]
    pub prompt_tokens: u64,
    #[serde(default)]
    pub completion_tokens: u64,
    #[serde(default)]
    pub cached_tokens: u64,
    /// AI API calls' time to first token (request head to first response byte).
    #[serde(rename = "lat_ttft", default)]
    pub ttft: Hist,
}

impl Rollup {
    pub fn add(&mut self, e: &Event) {
        self.count(&Counted {
            status: e.status,
            outcome: e.outcome,
            bytes_in: e.bytes_in,
            bytes_out: e.bytes_out,
            latency: e.latency,
            upstream_answered: e.upstream_status.is_some(),
            tokens: e.ai.as_ref().map(|a| Tokens {
                prompt: a.prompt_tokens,
                completion: a.completion_tokens,
                cached: a.cached_tokens,
                ttft_us: a.ttft_us,
            }),
        });
    }

    /// Adds one request.
    pub fn count(&mut self, c: &Counted) {
        self.requests += 1;
        self.errors += u64::from(c.status >= 400);
        self.throttled += u64::from(c.outcome == Outcome::Throttled);
        self.cache_hits += u64::from(c.outcome == Outcome::CacheHit);
        self.bytes_in += c.bytes_in;
        self.bytes_out += c.bytes_out;
        let l = &c.latency;
        self.total.record(l.total_us);
        self.gateway.record(l.gateway_us());
        if c.upstream_answered {
            self.upstream.record(l.upstream_us);
        }
        self.before.record(l.before_us);
        self.after.record(l.after_us);
        if let Some(t) = &c.tokens {
            self.prompt_tokens += t.prompt;
            self.completion_tokens += t.completion;
            self.cached_tokens += t.cached;
            if let Some(us) = t.ttft_us {
                self.ttft.record(us);
            }
        }
    }

    pub fn merge(&mut self, o: &Rollup) {
        self.requests += o.requests;
        self.errors += o.errors;
        self.throttled += o.throttled;
        self.cache_hits += o.cache_hits;
        self.bytes_in += o.bytes_in;
        self.bytes_out += o.bytes_out;
        self.total.merge(&o.total);
        self.gateway.merge(&o.gateway);
        self.upstream.merge(&o.upstream);
        self.before.merge(&o.before);
        self.after.merge(&o.after);
        self.prompt_tokens += o.prompt_tokens;
        self.completion_tokens += o.completion_tokens;
        self.cached_tokens += o.cached_tokens;
        self.ttft.merge(&o.ttft);
    }
}

/// What a rollup counts of one request (an [`Event`]'s or a queued record's).
#[derive(Debug, Clone, Copy)]
pub struct Counted {
    pub status: u16,
    pub outcome: Outcome,
    pub bytes_in: u64,
    pub bytes_out: u64,
    pub latency: Latency,
    pub upstream_answered: bool,
    /// An AI API call's tokens.
    pub tokens: Option<Tokens>,
}

/// What an AI API call adds to a rollup.
#[derive(Debug, Clone, Copy)]
pub struct Tokens {
    pub prompt: u64,
    pub completion: u64,
    pub cached: u64,
    pub ttft_us: Option<u64>,
}

/// A rollup row: the period's start (Unix seconds, a multiple of `period`), its length
/// in seconds, the key and the sums. In JSON (a gateway's shipped batch, a rollups
/// file's line) the key's and the sums' fields sit beside `bucket` and `period`, the
/// histograms as their text.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Row {
    pub bucket: i64,
    pub period: i64,
    #[serde(flatten)]
    pub key: RollupKey,
    #[serde(flatten)]
    pub sums: Rollup,
}

impl Row {
    /// Whether a row received from elsewhere (a gateway's batch) is one the store may
    /// keep: a minute row on a minute boundary whose histograms count its requests.
    pub fn check_minute(&self) -> Result<(), String> {
        if self.period != MINUTE || self.bucket.rem_euclid(MINUTE) != 0 {
            return Err(format!(
                "rollup row: period {} at {}: expected a minute row (period 60, bucket a multiple of 60)",
                self.period, self.bucket
            ));
        }
        let s = &self.sums;
        let counts = [
            s.total.count(),
            s.gateway.count(),
            s.before.count(),
            s.after.count(),
        ];
        let partial = s.upstream.count().max(s.ttft.count());
        if counts.iter().any(|&c| c != s.requests) || partial > s.requests {
            return Err(format!(
                "rollup row: histograms count {counts:?} (upstream {}) for {} requests",
                s.upstream.count(),
                s.requests
            ));
        }
        if s.errors > s.requests || s.throttled > s.requests || s.cache_hits > s.requests {
            return Err("rollup row: more errors, throttled or cache hits than requests".into());
        }
        if !(1..=5).contains(&self.key.status_class) {
            return Err(format!(
                "rollup row: status class {} (expected 1..5)",
                self.key.status_class
            ));
        }
        Ok(())
    }
}

/// Rolls `events` up per `period` (by the request's start) and key.
pub fn roll_up(events: &[Event], period: i64) -> Vec<Row> {
    let mut by: HashMap<(i64, RollupKey), Rollup> = HashMap::new();
    for e in events {
        let bucket = align(e.time_ms.div_euclid(1000), period);
        by.entry((bucket, RollupKey::of(e))).or_default().add(e);
    }
    into_rows(by, period)
}

/// Merges rows into rows of a longer `period` (compaction); rows of the same key and
/// new bucket become one. With `period` equal to the rows' own, rows of the same key
/// and bucket become one.
pub fn compact(rows: &[Row], period: i64) -> Vec<Row> {
    let mut by: HashMap<(i64, RollupKey), Rollup> = HashMap::new();
    for r in rows {
        by.entry((align(r.bucket, period), r.key.clone()))
            .or_default()
            .merge(&r.sums);
    }
    into_rows(by, period)
}

fn into_rows(by: HashMap<(i64, RollupKey), Rollup>, period: i64) -> Vec<Row> {
    let mut rows: Vec<Row> = by
        .into_iter()
        .map(|((bucket, key), sums)| Row {
            bucket,
            period,
            key,
            sums,
        })
        .collect();
    rows.sort_by(|a, b| (a.bucket, &a.key).cmp(&(b.bucket, &b.key)));
    rows
}
