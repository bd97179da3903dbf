//! The analytics reports, computed from rollup rows (`turnpike_analytics::rollup`):
//! totals, traffic over time, top APIs / applications / resources, error and throttle
//! breakdowns, latency percentiles split gateway vs back end. Pure functions: the
//! handlers in `rest/analytics.rs` read the rows and pick the report.

use std::collections::{BTreeMap, HashMap};

use serde_json::{json, Value};
use turnpike_analytics::rollup::Row;
use turnpike_analytics::time::{align, rfc3339_ms};
use turnpike_analytics::{Hist, Rollup};

/// The percentiles every latency block reports.
const QUANTILES: [(&str, f64); 4] = [("p50", 0.5), ("p90", 0.9), ("p95", 0.95), ("p99", 0.99)];

fn merged<'a>(rows: impl Iterator<Item = &'a Row>) -> Rollup {
    let mut all = Rollup::default();
    rows.for_each(|r| all.merge(&r.sums));
    all
}

fn counts(r: &Rollup) -> Value {
    json!({
        "requests": r.requests,
        "errors": r.errors,
        "throttled": r.throttled,
        "cacheHits": r.cache_hits,
        "bytesIn": r.bytes_in,
        "bytesOut": r.bytes_out,
    })
}

/// Percentiles in microseconds (the upper bound of the value's histogram bucket, at
/// most 12.5 % above it) and how many requests they cover.
fn percentiles(h: &Hist) -> Value {
    let mut m = serde_json::Map::new();
    m.insert("count".into(), h.count().into());
    for (name, q) in QUANTILES {
        m.insert(format!("{name}Us"), h.percentile(q).into());
    }
    Value::Object(m)
}

/// The distinct application ids of `rows` (what [`name_applications`] looks up).
pub fn application_ids(rows: &[Row]) -> Vec<&str> {
    let mut ids: Vec<&str> = rows
        .iter()
        .map(|r| r.key.application_id.as_str())
        .filter(|id| !id.is_empty())
        .collect();
    ids.sort_unstable();
    ids.dedup();
    ids
}

/// Gives every row of an application one name, so each application is one row in every
/// report whatever its events carried (API-key and client-credentials events may carry
/// no name): its name in the store now (`current`, so a rename shows everywhere), else,
/// for a deleted application, the last name its rows carried.
pub fn name_applications(rows: &mut [Row], current: &HashMap<String, String>) {
    let mut last: HashMap<String, (i64, String)> = HashMap::new();
    for r in rows.iter() {
        let k = &r.key;
        if k.application_id.is_empty() || k.application_name.is_empty() {
            continue;
        }
        let seen = last.entry(k.application_id.clone()).or_default();
        if r.bucket >= seen.0 {
            *seen = (r.bucket, k.application_name.clone());
        }
    }
    for r in rows.iter_mut() {
        let k = &mut r.key;
        if k.application_id.is_empty() {
            continue;
        }
        if let Some(name) = current
            .get(&k.application_id)
            .or_else(|| last.get(&k.application_id).map(|l| &l.1))
        {
            k.application_name.clone_from(name);
        }
    }
}

/// Totals and latency over all rows.
pub fn summary(rows: &[Row]) -> Value {
    let all = merged(rows.iter());
    json!({ "totals": counts(&all), "latency": latency_of(&all) })
}

fn latency_of(r: &Rollup) -> Value {
    json!({
        "total": percentiles(&r.total),
        "gateway": percentiles(&r.gateway),
        "backend": percentiles(&r.upstream),
        "gatewayBeforeUpstream": percentiles(&r.before),
        "gatewayAfterUpstream": percentiles(&r.after),
    })
}

/// The intervals of a report over time: `[from, to)` in steps of `interval` seconds.
#[derive(Debug, Clone, Copy)]
pub struct Axis {
    pub from: i64,
    pub to: i64,
    pub interval: i64,
}

/// Latency percentiles, overall and per interval (every interval of the axis: one
/// without requests has `count` 0 and no percentiles, so a chart leaves a gap).
pub fn latency(rows: &[Row], axis: Axis) -> Value {
    let all = merged(rows.iter());
    let interval = axis.interval;
    let points: Vec<Value> = by_interval(rows, axis)
        .into_iter()
        .map(|(t, r)| {
            json!({
                "time": rfc3339_ms(t * 1000),
                "timestamp": t,
                "total": percentiles(&r.total),
                "gateway": percentiles(&r.gateway),
                "backend": percentiles(&r.upstream),
            })
        })
        .collect();
    let mut v = latency_of(&all);
    if let Value::Object(m) = &mut v {
        m.insert("interval".into(), interval.into());
        m.insert("points".into(), points.into());
    }
    v
}

/// The rows summed per interval, with every interval of the axis present (zero-filled:
/// a minute without traffic is a point with 0 requests, not a missing one). The axis is
/// bounded by the caller (the window's `MAX_POINTS`).
fn by_interval(rows: &[Row], axis: Axis) -> BTreeMap<i64, Rollup> {
    let interval = axis.interval.max(1);
    let mut by: BTreeMap<i64, Rollup> = BTreeMap::new();
    let mut t = align(axis.from, interval);
    while t < axis.to {
        by.insert(t, Rollup::default());
        t += interval;
    }
    for r in rows {
        by.entry(align(r.bucket, interval))
            .or_default()
            .merge(&r.sums);
    }
    by
}

/// Requests, errors, throttled and bytes per interval, every interval of the axis (0
/// where nothing was counted).
pub fn traffic(rows: &[Row], axis: Axis) -> Value {
    let interval = axis.interval;
    let points: Vec<Value> = by_interval(rows, axis)
        .into_iter()
        .map(|(t, r)| {
            let mut p = counts(&r);
            if let Value::Object(m) = &mut p {
                m.insert("time".into(), rfc3339_ms(t * 1000).into());
                m.insert("timestamp".into(), t.into());
            }
            p
        })
        .collect();
    json!({ "interval": interval, "points": points })
}

/// What `top` groups by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TopBy {
    Api,
    Application,
    Resource,
    /// MCP tool calls only, by tool (a tool call's resource is its tool's name).
    Tool,
    /// MCP tool calls only, by tool and application.
    ToolApplication,
}

impl TopBy {
    pub fn parse(s: &str) -> Option<TopBy> {
        match s {
            "api" => Some(TopBy::Api),
            "application" => Some(TopBy::Application),
            "resource" => Some(TopBy::Resource),
            "tool" => Some(TopBy::Tool),
            "tool_application" => Some(TopBy::ToolApplication),
            _ => None,
        }
    }
}

/// Whether a row's resource is an MCP tool call's: tools are named without the `/` a
/// resource's path template starts with, and the endpoint's own messages (`initialize`,
/// `tools/list`, ...) are its `mcp` resource.
fn is_tool_call(resource: &str) -> bool {
    !resource.is_empty()
        && !resource.starts_with('/')
        && resource != turnpike_model::mcp::ENDPOINT_RESOURCE
}

/// The `limit` busiest groups, by requests (ties by name), with counts and latency.
pub fn top(rows: &[Row], by: TopBy, limit: usize) -> Value {
    let mut groups: BTreeMap<Vec<String>, Rollup> = BTreeMap::new();
    let tools_only = matches!(by, TopBy::Tool | TopBy::ToolApplication);
    for r in rows
        .iter()
        .filter(|r| !tools_only || is_tool_call(&r.key.resource))
    {
        let k = &r.key;
        let api = [
            k.api_name.clone(),
            k.api_context.clone(),
            k.api_version.clone(),
        ];
        let key = match by {
            TopBy::Api => vec![
                k.api_name.clone(),
                k.api_context.clone(),
                k.api_version.clone(),
            ],
            TopBy::Application => vec![k.application_id.clone(), k.application_name.clone()],
            TopBy::Resource => vec![
                k.api_name.clone(),
                k.api_context.clone(),
                k.api_version.clone(),
                k.method.clone(),
                k.resource.clone(),
            ],
            TopBy::Tool => [&api[..], std::slice::from_ref(&k.resource)].concat(),
            TopBy::ToolApplication => [
                &api[..],
                &[
                    k.resource.clone(),
                    k.application_id.clone(),
                    k.application_name.clone(),
                ],
            ]
            .concat(),
        };
        groups.entry(key).or_default().merge(&r.sums);
    }
    let mut list: Vec<(Vec<String>, Rollup)> = groups.into_iter().collect();
    list.sort_by(|a, b| b.1.requests.cmp(&a.1.requests).then_with(|| a.0.cmp(&b.0)));
    let names: &[&str] = match by {
        TopBy::Api => &["apiName", "apiContext", "apiVersion"],
        TopBy::Application => &["applicationId", "applicationName"],
        TopBy::Resource => &["apiName", "apiContext", "apiVersion", "method", "resource"],
        TopBy::Tool => &["apiName", "apiContext", "apiVersion", "tool"],
        TopBy::ToolApplication => &[
            "apiName",
            "apiContext",
            "apiVersion",
            "tool",
            "applicationId",
            "applicationName",
        ],
    };
    let items: Vec<Value> = list
        .into_iter()
        .take(limit)
        .map(|(key, r)| {
            let mut v = counts(&r);
            if let Value::Object(m) = &mut v {
                for (n, k) in names.iter().zip(key) {
                    m.insert((*n).into(), k.into());
                }
                m.insert("latency".into(), latency_of(&r));
            }
            v
        })
        .collect();
    json!({ "list": items })
}

/// Requests that did not end `served` with a status below 400, by outcome, reason
/// (error code) and status class.
pub fn errors(rows: &[Row]) -> Value {
    let mut by: BTreeMap<(String, String, u8), u64> = BTreeMap::new();
    for r in rows {
        let k = &r.key;
        if k.outcome == "served" && k.status_class < 4 {
            continue;
        }
        *by.entry((k.outcome.clone(), k.reason.clone(), k.status_class))
            .or_default() += r.sums.requests;
    }
    let mut list: Vec<Value> = by
        .into_iter()
        .map(|((outcome, reason, class), n)| {
            json!({ "outcome": outcome, "reason": reason, "statusClass": format!("{class}xx"), "requests": n })
        })
        .collect();
    list.sort_by_key(|v| std::cmp::Reverse(v["requests"].as_u64().unwrap_or(0)));
    json!({ "list": list })
}

/// Throttled requests by policy, API and application.
pub fn throttling(rows: &[Row]) -> Value {
    let mut by: BTreeMap<(String, String, String, String, String), u64> = BTreeMap::new();
    for r in rows.iter().filter(|r| r.key.outcome == "throttled") {
        let k = &r.key;
        *by.entry((
            k.reason.clone(),
            k.api_context.clone(),
            k.api_version.clone(),
            k.application_id.clone(),
            k.application_name.clone(),
        ))
        .or_default() += r.sums.requests;
    }
    let mut list: Vec<Value> = by
        .into_iter()
        .map(|((policy, ctx, ver, app, app_name), n)| {
            json!({ "policy": policy, "apiContext": ctx, "apiVersion": ver, "applicationId": app, "applicationName": app_name, "requests": n })
        })
        .collect();
    list.sort_by_key(|v| std::cmp::Reverse(v["requests"].as_u64().unwrap_or(0)));
    json!({ "list": list })
}

#[cfg(test)]
mod tests {
    use super::*;
    use turnpike_analytics::rollup::RollupKey;

    fn row(bucket: i64, requests: u64) -> Row {
        Row {
            bucket,
            period: 60,
            key: RollupKey::default(),
            sums: Rollup {
                requests,
                ..Rollup::default()
            },
        }
    }

    /// Minutes without traffic are points with 0 requests (and latency without
    /// percentiles), from the window's first minute to its last.
    #[test]
    fn time_axes_are_zero_filled() {
        let axis = Axis {
            from: 600,
            to: 900,
            interval: 60,
        };
        let rows = [row(660, 3), row(780, 2)];
        let t = traffic(&rows, axis);
        let points: Vec<(i64, u64)> = t["points"]
            .as_array()
            .map(|p| {
                p.iter()
                    .map(|p| {
                        (
                            p["timestamp"].as_i64().unwrap_or(-1),
                            p["requests"].as_u64().unwrap_or(99),
                        )
                    })
                    .collect()
            })
            .unwrap_or_default();
        assert_eq!(points, [(600, 0), (660, 3), (720, 0), (780, 2), (840, 0)]);
        let l = latency(&rows, axis);
        let gaps: Vec<bool> = l["points"]
            .as_array()
            .map(|p| p.iter().map(|p| p["total"]["p95Us"].is_null()).collect())
            .unwrap_or_default();
        assert_eq!(gaps.len(), 5);
        assert!(gaps[0] && gaps[2] && gaps[4], "{l}");
    }
}
