//! Rollups made in the gateway: each request's facts (`Facts`) are folded into per-minute
//! sums (the store's [`Row`]s) instead of formatting an event, on the request path when
//! the worker's aggregator is free and from a queued [`Record`](crate::event::Record) otherwise
//! (`pipeline.rs`); the rows go to the sink every shipping interval. A request then costs
//! a hash lookup (none for a run of one key); the rows shipped per interval are as many
//! as the distinct keys seen, not the requests. Rows of the same key add up wherever
//! they meet (a later interval, the store), so a minute shipped in several pieces sums
//! to the same row.
//!
//! Keys are looked up without allocating: the application id by `&str`, the rest by
//! the identity of the snapshot's shared labels (`Arc` pointers, kept alive by the
//! entry that holds them) and small copies. Entries that differ only in what the
//! final [`RollupKey`] does not tell apart (two snapshots' labels of one API) merge
//! when the rows are made.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

use foldhash::fast::RandomState;
use http::Method;
use turnpike_policy::ai::TokenUsage;
use turnpike_policy::Principal;
use turnpike_policy::{ApiLabel, Completion, ErrorKind, RequestCtx};

use crate::event::{status_class, Latency, Outcome, WallClock};
use crate::rollup::{compact, Counted, Rollup, RollupKey, Row, Tokens, MINUTE};

/// What one request adds to the sums, borrowed (from the request itself, or from its
/// queued record): nothing is cloned unless the request opens a new key.
pub(crate) struct Facts<'a> {
    pub(crate) start: Instant,
    pub(crate) api: Option<&'a Arc<ApiLabel>>,
    pub(crate) resource: Option<&'a Arc<str>>,
    pub(crate) throttled_by: Option<&'a Arc<str>>,
    pub(crate) principal: Option<&'a Principal>,
    pub(crate) method: &'a Method,
    pub(crate) status: u16,
    pub(crate) error: Option<ErrorKind>,
    pub(crate) aborted: bool,
    pub(crate) latency: Latency,
    pub(crate) bytes_in: u64,
    pub(crate) bytes_out: u64,
    pub(crate) upstream_answered: bool,
    /// Answered by the response cache.
    pub(crate) cache_hit: bool,
    /// An AI API call's usage and time to first byte (µs).
    pub(crate) ai: Option<(&'a TokenUsage, Option<u64>)>,
}

impl<'a> Facts<'a> {
    /// Straight from the request, in `on_complete`.
    pub(crate) fn of(ctx: &'a RequestCtx, done: &'a Completion<'a>) -> Facts<'a> {
        Facts {
            start: done.started,
            api: done.api,
            resource: ctx.resource.as_ref(),
            throttled_by: ctx.throttled_by.as_ref(),
            principal: ctx.identity().map(|i| &*i.principal),
            method: &done.method,
            status: done.status.as_u16(),
            error: done.error,
            aborted: done.aborted,
            latency: Latency::of(&done.timings),
            bytes_in: done.bytes_in,
            bytes_out: done.bytes_out,
            upstream_answered: done.upstream_status.is_some(),
            cache_hit: ctx.ext.get::<turnpike_policy::FromCache>().is_some(),
            ai: ctx.ext.get::<TokenUsage>().map(|u| {
                let ttft = done.timings.first_byte;
                (
                    u,
                    ttft.map(|d| u64::try_from(d.as_micros()).unwrap_or(u64::MAX)),
                )
            }),
        }
    }
}

/// A key's identity within one application, copies and pointers only.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Slot {
    minute: i64,
    api: usize,
    resource: usize,
    method: Method,
    status_class: u8,
    outcome: Outcome,
    error: Option<ErrorKind>,
    throttled_by: usize,
    /// An AI call's provider and model, by content (a provider's answer names them).
    provider: Option<Arc<str>>,
    model: Option<Arc<str>>,
}

/// What a slot holds: the labels its pointers name, and the sums.
struct Entry {
    api: Option<Arc<ApiLabel>>,
    resource: Option<Arc<str>>,
    throttled_by: Option<Arc<str>>,
    sums: Rollup,
}

/// One application's slots (the empty id: requests without an application).
struct App {
    id: String,
    name: String,
    /// Index into [`Aggregator::entries`].
    slots: HashMap<Slot, usize, RandomState>,
}

fn ptr<T: ?Sized>(a: Option<&Arc<T>>) -> usize {
    a.map_or(0, |a| Arc::as_ptr(a).cast::<u8>() as usize)
}

/// Records folded into per-minute sums, until [`Aggregator::take_rows`].
#[derive(Default)]
pub struct Aggregator {
    /// Application id to index into `apps`.
    by_app: HashMap<String, usize, RandomState>,
    apps: Vec<App>,
    entries: Vec<Entry>,
    /// The last record's application, slot and entry: a run of requests of one key
    /// (the common case) skips both lookups.
    last: Option<(usize, Slot, usize)>,
    records: u64,
}

impl Aggregator {
    /// Records folded in since the last [`Aggregator::take_rows`].
    pub fn records(&self) -> u64 {
        self.records
    }

    pub(crate) fn add(&mut self, r: &Facts<'_>, clock: &WallClock) {
        let outcome = Outcome::of(r.error, r.aborted, r.cache_hit);
        let app_id = r
            .principal
            .and_then(|p| p.application_id.as_deref())
            .unwrap_or("");
        let slot = Slot {
            minute: clock.minute_of(r.start),
            api: ptr(r.api),
            resource: ptr(r.resource),
            method: r.method.clone(),
            status_class: status_class(r.status),
            outcome,
            error: r.error,
            throttled_by: ptr(r.throttled_by),
            provider: r.ai.and_then(|(u, _)| u.provider.clone()),
            model: r.ai.and_then(|(u, _)| u.model.clone()),
        };
        let entry = match &self.last {
            Some((app, last_slot, entry)) if *last_slot == slot && self.apps[*app].id == app_id => {
                *entry
            }
            _ => self.lookup(r, app_id, slot),
        };
        self.entries[entry].sums.count(&Counted {
            status: r.status,
            outcome,
            bytes_in: r.bytes_in,
            bytes_out: r.bytes_out,
            latency: r.latency,
            upstream_answered: r.upstream_answered,
            tokens: r.ai.map(|(u, ttft_us)| Tokens {
                prompt: u.prompt,
                completion: u.completion,
                cached: u.cached,
                ttft_us,
            }),
        });
        self.records += 1;
    }

    /// The entry of `slot` in the application `app_id`, made when new; remembered as
    /// the last one.
    fn lookup(&mut self, r: &Facts<'_>, app_id: &str, slot: Slot) -> usize {
        let app = match self.by_app.get(app_id) {
            Some(&i) => i,
            None => {
                self.apps.push(App {
                    id: app_id.to_string(),
                    name: r
                        .principal
                        .and_then(|p| p.application_name.clone())
                        .unwrap_or_default(),
                    slots: HashMap::default(),
                });
                self.by_app.insert(app_id.to_string(), self.apps.len() - 1);
                self.apps.len() - 1
            }
        };
        let entries = &mut self.entries;
        let entry = *self.apps[app].slots.entry(slot.clone()).or_insert_with(|| {
            entries.push(Entry {
                api: r.api.cloned(),
                resource: r.resource.cloned(),
                throttled_by: r.throttled_by.cloned(),
                sums: Rollup::default(),
            });
            entries.len() - 1
        });
        self.last = Some((app, slot, entry));
        entry
    }

    /// The minute rows of everything folded in since the last call, one per key and
    /// minute, and how many records they sum; the aggregator is empty afterwards.
    pub fn take_rows(&mut self, gateway: &str) -> (Vec<Row>, u64) {
        let mut entries: Vec<Option<Entry>> = std::mem::take(&mut self.entries)
            .into_iter()
            .map(Some)
            .collect();
        let mut rows = Vec::with_capacity(entries.len());
        for app in self.apps.drain(..) {
            for (slot, i) in app.slots {
                let Some(e) = entries.get_mut(i).and_then(Option::take) else {
                    continue;
                };
                let api = e.api.as_deref();
                let text = |v: Option<&str>| v.unwrap_or_default().to_string();
                let key = RollupKey {
                    gateway: gateway.to_string(),
                    api_name: text(api.map(|a| &*a.name)),
                    api_context: text(api.map(|a| &*a.context)),
                    api_version: text(api.map(|a| &*a.version)),
                    resource: text(e.resource.as_deref()),
                    method: slot.method.as_str().to_string(),
                    application_id: app.id.clone(),
                    application_name: app.name.clone(),
                    status_class: slot.status_class,
                    outcome: slot.outcome.as_str().to_string(),
                    reason: crate::event::reason(
                        slot.outcome,
                        slot.error,
                        e.throttled_by.as_deref(),
                    )
                    .unwrap_or_default(),
                    provider: text(slot.provider.as_deref()),
                    model: text(slot.model.as_deref()),
                };
                rows.push(Row {
                    bucket: slot.minute,
                    period: MINUTE,
                    key,
                    sums: e.sums,
                });
            }
        }
        self.by_app.clear();
        self.last = None;
        let records = std::mem::take(&mut self.records);
        (compact(&rows, MINUTE), records)
    }
}
