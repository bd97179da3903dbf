//! Convergence you can see: every gateway's long-poll records what it serves (version,
//! hash, its poll wait, which control plane) in the store, its status report
//! (`POST /api/am/gateway/v1/status`: a JSON object, apply time and whatever fields the
//! gateway adds) is kept whole, and any control plane lists every gateway with its lag
//! (`/api/am/admin/v1/gateways`, `GET /metrics`).
//!
//! A gateway's lag is how long it may have been out of date as far as the control plane
//! can tell: since the commit of the first version it does not serve yet, or, when it
//! stopped polling, since its next poll was due (last contact + its poll wait + a
//! [`CONTACT_GRACE`]). Past the threshold it is `lagging`.

use std::time::Duration;

use axum::extract::State;
use axum::response::{IntoResponse, Response};
use http::{HeaderMap, StatusCode};
use serde::Serialize;
use turnpike_store::{GatewayContact, GatewayRow};

use crate::error::{ApiError, ApiResult};
use crate::AppState;

/// Time past a gateway's poll wait before its silence counts as lag.
pub const CONTACT_GRACE: Duration = Duration::from_secs(2);
/// Largest status report accepted.
pub const MAX_REPORT_BYTES: usize = 64 * 1024;
/// Longest gateway id recorded.
const MAX_ID_CHARS: usize = 100;

/// One gateway as the Admin API, the portal, the CLI and the metrics show it.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct GatewayView {
    pub id: String,
    pub serving_version: u64,
    pub serving_hash: String,
    /// The control plane (as the gateway addressed it) it polled last.
    pub control_plane: String,
    pub last_seen_ms_ago: u64,
    /// Commit of `serving_version` to the gateway's first poll serving it.
    pub last_convergence_ms: Option<u64>,
    /// How long its last snapshot took to apply and compile.
    pub apply_ms: Option<u64>,
    pub versions_behind: u64,
    pub lag_ms: u64,
    pub lagging: bool,
    pub up_to_date: bool,
    /// Each tracked endpoint's state as the gateway last reported it (APIs with
    /// resilience settings; lifted out of the report).
    pub endpoints: Vec<serde_json::Value>,
    /// The gateway's last status report as it sent it, `endpoints` aside.
    pub report: serde_json::Value,
}

/// The view of one stored row at `now_ms`, against the current version.
pub fn view(row: GatewayRow, current: u64, now_ms: i64, max_lag: Duration) -> GatewayView {
    let ms = |v: i64| u64::try_from(v).unwrap_or(0);
    let behind = current.saturating_sub(row.version);
    let behind_ms = match (behind, row.behind_since_ms) {
        (0, _) | (_, None) => 0,
        (_, Some(since)) => ms(now_ms - since),
    };
    let mut report: serde_json::Value = serde_json::from_str(&row.report).unwrap_or_default();
    let endpoints = match report.as_object_mut().and_then(|r| r.remove("endpoints")) {
        Some(serde_json::Value::Array(list)) => list,
        _ => Vec::new(),
    };
    let grace = i64::try_from(CONTACT_GRACE.as_millis()).unwrap_or(0);
    let silent_ms = ms(now_ms - row.last_contact_ms - row.poll_wait_ms - grace);
    let lag_ms = behind_ms.max(silent_ms);
    GatewayView {
        id: row.id,
        serving_version: row.version,
        serving_hash: row.hash,
        control_plane: row.control_plane,
        last_seen_ms_ago: ms(now_ms - row.last_contact_ms),
        last_convergence_ms: row.convergence_ms.map(ms),
        apply_ms: row.apply_ms.map(ms),
        versions_behind: behind,
        lag_ms,
        lagging: u128::from(lag_ms) > max_lag.as_millis(),
        up_to_date: behind == 0,
        endpoints,
        report,
    }
}

/// Every gateway the store knows, with its lag against `max_lag`.
pub async fn views(s: &AppState, max_lag: Duration) -> ApiResult<(u64, Vec<GatewayView>)> {
    let current = *s.inner.store.watch_version().borrow();
    let rows = s.inner.store.gateway_statuses().await?;
    let now = turnpike_store::now_ms();
    let list = rows
        .into_iter()
        .map(|r| view(r, current, now, max_lag))
        .collect();
    Ok((current, list))
}

fn header<'a>(h: &'a HeaderMap, name: &str) -> Option<&'a str> {
    h.get(name).and_then(|v| v.to_str().ok())
}

fn gateway_id(headers: &HeaderMap) -> Option<String> {
    header(headers, super::GATEWAY_HEADER).map(|id| id.chars().take(MAX_ID_CHARS).collect())
}

/// Records the contact of a long-poll that names its gateway. A store that cannot
/// record it does not fail the poll: serving snapshots matters more.
pub async fn record_contact(s: &AppState, headers: &HeaderMap, after: u64, wait: Duration) {
    let Some(id) = gateway_id(headers) else {
        return;
    };
    let version = header(headers, super::SERVING_HEADER)
        .and_then(|v| v.parse().ok())
        .unwrap_or(after);
    let host = header(headers, "host").unwrap_or("");
    let contact = GatewayContact {
        id: &id,
        version,
        hash: header(headers, super::SERVING_HASH_HEADER).unwrap_or(""),
        poll_wait_ms: i64::try_from(wait.as_millis()).unwrap_or(i64::MAX),
        control_plane: &host.chars().take(200).collect::<String>(),
    };
    if let Err(e) = s.inner.store.record_gateway_contact(&contact).await {
        tracing::warn!(gateway = %id, error = %e, "control plane: gateway contact not recorded");
    }
}

/// `POST /api/am/gateway/v1/status`: the gateway's status report, a JSON object (at
/// most [`MAX_REPORT_BYTES`]), `applyMs` read from it, the rest kept as sent.
pub async fn status(
    State(s): State<AppState>,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> ApiResult<Response> {
    crate::rest::analytics::gateway_token(&s, &headers)?;
    let id = gateway_id(&headers)
        .ok_or_else(|| ApiError::bad_request("x-turnpike-gateway names the gateway"))?;
    if body.len() > MAX_REPORT_BYTES {
        return Err(ApiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "payload_too_large",
            format!("a status report is at most {MAX_REPORT_BYTES} bytes"),
        ));
    }
    let report: serde_json::Map<String, serde_json::Value> = serde_json::from_slice(&body)
        .map_err(|e| ApiError::bad_request(format!("a status report is a JSON object: {e}")))?;
    let apply_ms = report.get("applyMs").and_then(|v| v.as_i64());
    let text = serde_json::Value::Object(report).to_string();
    if !s
        .inner
        .store
        .record_gateway_report(&id, apply_ms, &text)
        .await?
    {
        return Err(ApiError::not_found("gateway (poll the snapshot first)"));
    }
    Ok(StatusCode::NO_CONTENT.into_response())
}

/// The lag threshold of the metrics and of `/gateways` without `maxLag`.
pub fn default_max_lag(s: &AppState) -> Duration {
    s.inner.config.max_lag
}

/// `GET /metrics`: per-gateway lag and the count of lagging gateways, Prometheus text.
pub async fn metrics(State(s): State<AppState>) -> ApiResult<Response> {
    let (current, list) = views(&s, default_max_lag(&s)).await?;
    let mut out = String::with_capacity(256 + list.len() * 160);
    out.push_str("# HELP turnpike_control_plane_version The newest committed configuration version.\n# TYPE turnpike_control_plane_version gauge\n");
    out.push_str(&format!("turnpike_control_plane_version {current}\n"));
    out.push_str("# HELP turnpike_gateway_lag_seconds How long each gateway may have been out of date.\n# TYPE turnpike_gateway_lag_seconds gauge\n");
    for g in &list {
        out.push_str(&format!(
            "turnpike_gateway_lag_seconds{{gateway=\"{}\"}} {}\n",
            escape_label(&g.id),
            g.lag_ms as f64 / 1000.0
        ));
    }
    out.push_str("# HELP turnpike_gateway_versions_behind Versions each gateway is behind.\n# TYPE turnpike_gateway_versions_behind gauge\n");
    for g in &list {
        out.push_str(&format!(
            "turnpike_gateway_versions_behind{{gateway=\"{}\"}} {}\n",
            escape_label(&g.id),
            g.versions_behind
        ));
    }
    let lagging = list.iter().filter(|g| g.lagging).count();
    out.push_str("# HELP turnpike_gateways_lagging Gateways whose lag exceeds the threshold.\n# TYPE turnpike_gateways_lagging gauge\n");
    out.push_str(&format!("turnpike_gateways_lagging {lagging}\n"));
    out.push_str("# HELP turnpike_gateways Gateways known to the control plane.\n# TYPE turnpike_gateways gauge\n");
    out.push_str(&format!("turnpike_gateways {}\n", list.len()));
    Ok((
        [(
            http::header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        out,
    )
        .into_response())
}

/// A Prometheus label value: backslash, quote and newline escaped.
fn escape_label(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(version: u64, contact: i64, behind_since: Option<i64>) -> GatewayRow {
        GatewayRow {
            id: "g".into(),
            version,
            hash: String::new(),
            last_contact_ms: contact,
            poll_wait_ms: 1_000,
            control_plane: String::new(),
            convergence_ms: None,
            apply_ms: None,
            report: "{}".into(),
            behind_since_ms: behind_since,
        }
    }

    #[test]
    fn lag_counts_from_the_first_missing_commit_or_the_missed_poll() {
        let max = Duration::from_secs(5);
        let fresh = view(row(7, 10_000, None), 7, 10_500, max);
        assert_eq!(
            (fresh.lag_ms, fresh.lagging, fresh.up_to_date),
            (0, false, true)
        );
        let behind = view(row(6, 10_000, Some(4_000)), 7, 10_500, max);
        assert_eq!((behind.versions_behind, behind.lag_ms), (1, 6_500));
        assert!(behind.lagging);
        // Silent past its poll wait (1 s) and the grace (2 s): 20 s - 3 s.
        let silent = view(row(7, 10_000, None), 7, 30_000, max);
        assert_eq!(
            (silent.lag_ms, silent.lagging, silent.up_to_date),
            (17_000, true, true)
        );
    }
}
