//! Property: rolling events up per minute, compacting minutes into hours and days, and
//! merging any window of rows gives the same counts, bytes and percentiles as computing
//! them from the raw events of that window (percentiles to the histogram's bucket: the
//! bucket of the exact rank-th smallest value).

use proptest::prelude::*;
use turnpike_analytics::hist::{bucket_high, bucket_of, rank};
use turnpike_analytics::rollup::{compact, roll_up, Rollup, Row, DAY, HOUR, MINUTE};
use turnpike_analytics::{Event, Latency, Outcome};

#[allow(clippy::too_many_arguments)]
fn event(
    t_ms: i64,
    api: u8,
    app: u8,
    status: u16,
    before: u64,
    up: Option<u64>,
    after: u64,
    bytes: u64,
) -> Event {
    let upstream_us = up.unwrap_or(0);
    let outcome = match status {
        429 => Outcome::Throttled,
        401 => Outcome::AuthFailed,
        502 => Outcome::BackendError,
        _ => Outcome::Served,
    };
    Event {
        time_ms: t_ms,
        time: String::new(),
        request_id: String::new(),
        gateway: "g".into(),
        outcome,
        reason: None,
        error_code: None,
        api_name: Some(format!("api{api}")),
        api_context: Some(format!("/api{api}")),
        api_version: Some("v1".into()),
        resource: Some("/*".into()),
        method: "GET".into(),
        application_id: Some(format!("app{app}")),
        application_name: None,
        subscriber: None,
        key_type: None,
        status,
        upstream_status: up.map(|_| 200),
        bytes_in: bytes / 2,
        bytes_out: bytes,
        latency: Latency {
            before_us: before,
            upstream_us,
            after_us: after,
            total_us: before + upstream_us + after,
        },
        snapshot_version: 1,
        client_ip: None,
        trace_id: None,
        ai: None,
    }
}

fn events() -> impl Strategy<Value = Vec<Event>> {
    let one = (
        0i64..(3 * DAY * 1000),
        0u8..3,
        0u8..3,
        prop::sample::select(vec![200u16, 201, 401, 429, 502]),
        0u64..5_000,
        prop::option::of(0u64..2_000_000),
        0u64..3_000,
        0u64..10_000,
    )
        .prop_map(|(t, api, app, s, b, u, a, bytes)| event(t, api, app, s, b, u, a, bytes));
    prop::collection::vec(one, 1..300)
}

fn merged(rows: &[Row]) -> Rollup {
    let mut all = Rollup::default();
    rows.iter().for_each(|r| all.merge(&r.sums));
    all
}

/// The percentile of raw values, to the bucket.
fn raw_percentile(mut values: Vec<u64>, q: f64) -> Option<u64> {
    if values.is_empty() {
        return None;
    }
    values.sort_unstable();
    let v = values[(rank(q, values.len() as u64) - 1) as usize];
    Some(bucket_high(bucket_of(v)))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn merged_windows_equal_the_raw_events(evs in events(), from in 0i64..(2 * DAY), len in 1i64..(2 * DAY)) {
        let minutes = roll_up(&evs, MINUTE);
        let hours = compact(&minutes, HOUR);
        let days = compact(&hours, DAY);
        // A window aligned to hours: minute and hour rows inside it must agree with
        // the raw events inside it.
        let from = from - from.rem_euclid(HOUR);
        let to = from + (len / HOUR).max(1) * HOUR;
        let inside = |r: &&Row| r.bucket >= from && r.bucket < to;
        let raw: Vec<&Event> = evs.iter().filter(|e| { let s = e.time_ms.div_euclid(1000); s >= from && s < to }).collect();
        for rows in [&minutes, &hours] {
            let window: Vec<Row> = rows.iter().filter(inside).cloned().collect();
            let m = merged(&window);
            prop_assert_eq!(m.requests, raw.len() as u64);
            prop_assert_eq!(m.errors, raw.iter().filter(|e| e.status >= 400).count() as u64);
            prop_assert_eq!(m.throttled, raw.iter().filter(|e| e.outcome == Outcome::Throttled).count() as u64);
            prop_assert_eq!(m.bytes_out, raw.iter().map(|e| e.bytes_out).sum::<u64>());
            prop_assert_eq!(m.bytes_in, raw.iter().map(|e| e.bytes_in).sum::<u64>());
            for q in [0.5, 0.95, 0.99, 1.0] {
                prop_assert_eq!(m.total.percentile(q), raw_percentile(raw.iter().map(|e| e.latency.total_us).collect(), q));
                prop_assert_eq!(m.gateway.percentile(q), raw_percentile(raw.iter().map(|e| e.latency.gateway_us()).collect(), q));
                prop_assert_eq!(m.upstream.percentile(q), raw_percentile(raw.iter().filter(|e| e.upstream_status.is_some()).map(|e| e.latency.upstream_us).collect(), q));
            }
        }
        // All rows at every resolution hold the same totals.
        prop_assert_eq!(merged(&minutes), merged(&hours));
        prop_assert_eq!(merged(&hours), merged(&days));
        // Per key too: every (api, app) pair's requests match.
        for api in 0..3u8 {
            let n = |rows: &[Row]| rows.iter().filter(|r| r.key.api_name == format!("api{api}")).map(|r| r.sums.requests).sum::<u64>();
            prop_assert_eq!(n(&days), evs.iter().filter(|e| e.api_name.as_deref() == Some(&*format!("api{api}"))).count() as u64);
        }
        // Text round trip of the histograms (what the store keeps).
        for r in &hours {
            let back = turnpike_analytics::Hist::decode(&r.sums.total.encode());
            prop_assert_eq!(back.ok(), Some(r.sums.total.clone()));
        }
    }
}
