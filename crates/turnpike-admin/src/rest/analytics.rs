//! The analytics REST API (docs/analytics.md): the gateways' ingest endpoint
//! (`POST /api/am/gateway/v1/analytics`, gateway token: events rolled up per minute into
//! the store) and the reports, scoped like the rest:
//! * Admin (`apim:admin`): `/api/am/admin/v1/analytics/{report}`, all traffic;
//! * Publisher (`apim:api_view`): `/api/am/publisher/v1/apis/{id}/analytics/{report}`,
//!   one API;
//! * DevPortal (`apim:subscribe`): `/api/am/devportal/v1/applications/{id}/analytics/{report}`,
//!   one of the caller's applications (admins: any).
//!
//! Reports (`analytics_report.rs`): `summary`, `traffic`, `top`, `errors`, `throttling`,
//! `latency`. Query: `from`, `to` (Unix seconds; default the last 24 hours), `interval`
//! (seconds, for `traffic` and `latency`; default by the window), `by` and `limit` (for
//! `top`).

use std::collections::HashMap;

use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde_json::{json, Value};
use turnpike_analytics::rollup::{roll_up, DAY, HOUR, MINUTE};
use turnpike_analytics::ship::Batch;
use turnpike_store::RollupFilter;

use crate::ai_report::AiBy;
use crate::analytics_report::{self as report, TopBy};
use crate::auth::{constant_time_eq, Admin, ApiViewer};
use crate::error::{ApiError, ApiResult};
use crate::rest::devportal::OwnApp;
use crate::AppState;

/// The reports every analytics path serves.
pub const REPORTS: [&str; 7] = [
    "summary",
    "traffic",
    "top",
    "errors",
    "throttling",
    "latency",
    "ai",
];

/// The longest window a query may span (the day rows' default retention).
const MAX_WINDOW: i64 = 400 * DAY;
/// The most points a time series may have.
const MAX_POINTS: i64 = 10_000;

pub fn gateway_routes() -> Router<AppState> {
    Router::new().route("/analytics", post(ingest))
}

pub fn admin_routes() -> Router<AppState> {
    Router::new().route("/analytics/{report}", get(admin_report))
}

pub fn publisher_routes() -> Router<AppState> {
    Router::new().route("/apis/{id}/analytics/{report}", get(api_report))
}

pub fn devportal_routes() -> Router<AppState> {
    Router::new().route("/applications/{id}/analytics/{report}", get(app_report))
}

/// `Authorization: Bearer <gateway token>`, as the snapshot long-poll checks it.
pub(crate) fn gateway_token(s: &AppState, headers: &HeaderMap) -> ApiResult<()> {
    let token = headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .ok_or_else(ApiError::unauthorized)?;
    let expected = s.inner.config.gateway_token.as_bytes();
    if expected.is_empty() || !constant_time_eq(token.trim().as_bytes(), expected) {
        return Err(ApiError::new(
            StatusCode::UNAUTHORIZED,
            "unauthorized",
            "bad gateway token",
        ));
    }
    Ok(())
}

async fn ingest(
    State(s): State<AppState>,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> ApiResult<Response> {
    gateway_token(&s, &headers)?;
    let batch: Batch = serde_json::from_slice(&body)
        .map_err(|e| ApiError::bad_request(format!("analytics batch: {e}")))?;
    for row in &batch.rollups {
        row.check_minute().map_err(ApiError::bad_request)?;
    }
    crate::rest::mcp_audit::check_records(&batch.audits)?;
    let mut rows = roll_up(&batch.events, MINUTE);
    let requests: u64 = batch.rollups.iter().map(|r| r.sums.requests).sum();
    rows.extend(batch.rollups);
    s.inner.store.insert_rollups(&rows).await?;
    s.inner.store.insert_mcp_audit(&batch.audits).await?;
    Ok((
        StatusCode::ACCEPTED,
        Json(json!({
            "accepted": batch.events.len(),
            "rollupRequests": requests,
            "rows": rows.len(),
            "audits": batch.audits.len(),
        })),
    )
        .into_response())
}

/// The query's window and options.
struct Window {
    from: i64,
    to: i64,
    interval: i64,
    q: HashMap<String, String>,
}

fn int(q: &HashMap<String, String>, name: &str) -> ApiResult<Option<i64>> {
    q.get(name)
        .map(|v| {
            v.parse::<i64>()
                .map_err(|_| ApiError::bad_request(format!("{name} must be an integer")))
        })
        .transpose()
}

fn window(q: HashMap<String, String>) -> ApiResult<Window> {
    let now = turnpike_analytics::time::now_secs();
    let to = int(&q, "to")?.unwrap_or(now + 1);
    let from = int(&q, "from")?.unwrap_or(to - DAY);
    if from >= to {
        return Err(ApiError::bad_request("from must be before to"));
    }
    if to - from > MAX_WINDOW {
        return Err(ApiError::bad_request("the window is longer than 400 days"));
    }
    let span = to - from;
    let interval = match int(&q, "interval")? {
        Some(i) if i < MINUTE => {
            return Err(ApiError::bad_request(
                "interval must be at least 60 seconds",
            ))
        }
        Some(i) => i,
        None if span <= 6 * HOUR => MINUTE,
        None if span <= 14 * DAY => HOUR,
        None => DAY,
    };
    if span / interval > MAX_POINTS {
        return Err(ApiError::bad_request(format!(
            "interval too small for the window: more than {MAX_POINTS} points"
        )));
    }
    Ok(Window {
        from,
        to,
        interval,
        q,
    })
}

async fn answer(s: &AppState, name: &str, w: Window, mut f: RollupFilter) -> ApiResult<Response> {
    f.from = w.from;
    f.to = w.to;
    if !REPORTS.contains(&name) {
        return Err(ApiError::not_found(format!(
            "analytics report {name:?} (one of {})",
            REPORTS.join(", ")
        )));
    }
    if name == "ai" {
        return ai_answer(s, w, f).await;
    }
    let by = match name {
        "top" => Some(
            TopBy::parse(w.q.get("by").map_or("api", String::as_str)).ok_or_else(|| {
                ApiError::bad_request(
                    "by must be api, application, resource, tool or tool_application",
                )
            })?,
        ),
        _ => None,
    };
    let limit = int(&w.q, "limit")?.unwrap_or(10);
    if !(1..=100).contains(&limit) {
        return Err(ApiError::bad_request("limit must be 1..100"));
    }
    let mut rows = s.inner.store.rollups(&f).await?;
    let names = s
        .inner
        .store
        .application_names(&report::application_ids(&rows))
        .await?;
    report::name_applications(&mut rows, &names);
    let axis = report::Axis {
        from: w.from,
        to: w.to,
        interval: w.interval,
    };
    let body = match (name, by) {
        ("summary", _) => report::summary(&rows),
        ("traffic", _) => report::traffic(&rows, axis),
        ("top", Some(by)) => report::top(&rows, by, limit as usize),
        ("errors", _) => report::errors(&rows),
        ("throttling", _) => report::throttling(&rows),
        _ => report::latency(&rows, axis),
    };
    let mut body = body;
    if let Value::Object(m) = &mut body {
        m.insert("from".into(), w.from.into());
        m.insert("to".into(), w.to.into());
    }
    Ok(Json(body).into_response())
}

/// The AI report: tokens, cost and time to first token (`ai_report.rs`).
async fn ai_answer(s: &AppState, w: Window, f: RollupFilter) -> ApiResult<Response> {
    let by = AiBy::parse(w.q.get("by").map_or("model", String::as_str))
        .ok_or_else(|| ApiError::bad_request("by must be model, application or api"))?;
    let limit = int(&w.q, "limit")?.unwrap_or(10);
    if !(1..=100).contains(&limit) {
        return Err(ApiError::bad_request("limit must be 1..100"));
    }
    let mut rows = s.inner.store.rollups(&f).await?;
    let names = s
        .inner
        .store
        .application_names(&report::application_ids(&rows))
        .await?;
    report::name_applications(&mut rows, &names);
    let prices = s.inner.store.ai_prices().await?;
    let mut body = crate::ai_report::ai(&rows, by, &prices, limit as usize);
    if let Value::Object(m) = &mut body {
        m.insert(
            "by".into(),
            w.q.get("by").map_or("model", String::as_str).into(),
        );
        m.insert("from".into(), w.from.into());
        m.insert("to".into(), w.to.into());
    }
    Ok(Json(body).into_response())
}

async fn admin_report(
    State(s): State<AppState>,
    _c: Admin,
    Path(name): Path<String>,
    Query(q): Query<HashMap<String, String>>,
) -> ApiResult<Response> {
    let w = window(q)?;
    let f = RollupFilter {
        api: match (w.q.get("apiContext"), w.q.get("apiVersion")) {
            (Some(c), Some(v)) => Some((c.clone(), v.clone())),
            _ => None,
        },
        application_id: w.q.get("applicationId").cloned(),
        gateway: w.q.get("gateway").cloned(),
        ..RollupFilter::default()
    };
    answer(&s, &name, w, f).await
}

async fn api_report(
    State(s): State<AppState>,
    _c: ApiViewer,
    Path((id, name)): Path<(String, String)>,
    Query(q): Query<HashMap<String, String>>,
) -> ApiResult<Response> {
    let api = s.inner.store.get_api(&id).await?;
    let w = window(q)?;
    let f = RollupFilter {
        api: Some((api.context, api.version)),
        application_id: w.q.get("applicationId").cloned(),
        ..RollupFilter::default()
    };
    answer(&s, &name, w, f).await
}

async fn app_report(
    State(s): State<AppState>,
    own: OwnApp,
    Path((_, name)): Path<(String, String)>,
    Query(q): Query<HashMap<String, String>>,
) -> ApiResult<Response> {
    let w = window(q)?;
    let f = RollupFilter {
        application_id: Some(own.app.id.clone()),
        ..RollupFilter::default()
    };
    answer(&s, &name, w, f).await
}

/// How long the control plane keeps each resolution of analytics rollups.
#[derive(Debug, Clone, clap::Args)]
pub struct RetentionArgs {
    /// Minute rollups older than this many hours are merged into hour rows.
    #[arg(long, env = "TURNPIKE_ANALYTICS_MINUTE_HOURS", default_value_t = 48)]
    pub analytics_minute_hours: u64,
    /// Hour rollups older than this many days are merged into day rows.
    #[arg(long, env = "TURNPIKE_ANALYTICS_HOUR_DAYS", default_value_t = 31)]
    pub analytics_hour_days: u64,
    /// Day rollups older than this many days are deleted.
    #[arg(long, env = "TURNPIKE_ANALYTICS_RETENTION_DAYS", default_value_t = 400)]
    pub analytics_retention_days: u64,
    /// MCP tool-call audit records older than this many days are deleted.
    #[arg(long, env = "TURNPIKE_MCP_AUDIT_RETENTION_DAYS", default_value_t = 30)]
    pub mcp_audit_retention_days: u64,
}

impl Default for RetentionArgs {
    fn default() -> Self {
        RetentionArgs {
            analytics_minute_hours: 48,
            analytics_hour_days: 31,
            analytics_retention_days: 400,
            mcp_audit_retention_days: 30,
        }
    }
}

impl RetentionArgs {
    pub fn retention(&self) -> turnpike_store::AnalyticsRetention {
        use std::time::Duration;
        turnpike_store::AnalyticsRetention {
            minutes: Duration::from_secs(self.analytics_minute_hours.saturating_mul(3_600)),
            hours: Duration::from_secs(self.analytics_hour_days.saturating_mul(86_400)),
            days: Duration::from_secs(self.analytics_retention_days.saturating_mul(86_400)),
            mcp_audit: Duration::from_secs(self.mcp_audit_retention_days.saturating_mul(86_400)),
        }
    }
}

/// Compacts the store's rollups every 10 minutes (the first time a minute after start),
/// when this control plane leads (`turnpike_store::Store::is_leader`).
pub fn spawn_compaction(
    store: turnpike_store::Store,
    retention: turnpike_store::AnalyticsRetention,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut wait = std::time::Duration::from_secs(60);
        loop {
            tokio::time::sleep(wait).await;
            wait = std::time::Duration::from_secs(600);
            // One control plane at a time: two would both move the same rows.
            if !store.is_leader().await {
                continue;
            }
            let now = turnpike_analytics::time::now_secs();
            match store.compact_analytics(now, &retention).await {
                Ok(done) => tracing::debug!(?done, "analytics compaction"),
                Err(e) => tracing::warn!(error = %e, "analytics compaction failed"),
            }
        }
    })
}
