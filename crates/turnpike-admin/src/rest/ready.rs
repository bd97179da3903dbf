//! `/health` (the process answers) and `/ready` (it can also write to its store) of the
//! control plane. Readiness is a write probe ([`turnpike_store::Store::probe_write`])
//! run at most every [`PROBE_EVERY`], never per request, plus what requests saw: one
//! that failed for a full disk keeps the store unready until a write succeeds again or
//! [`FULL_HOLD`] passes (a small probe can fit in space a bigger write cannot; a
//! database that is down or back is the probe's call alone). Reads, tokens and the
//! gateways' snapshots keep working during an outage; `/ready` is what tells a balancer
//! or an operator that writes do not.

use std::time::{Duration, Instant};

use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use http::StatusCode;
use serde_json::json;
use turnpike_store::Outage;

use crate::error::{ApiError, StoreOutage};
use crate::AppState;

/// The probe's answer is reused this long.
const PROBE_EVERY: Duration = Duration::from_secs(5);
/// A probe slower than this counts as a failure.
const PROBE_TIMEOUT: Duration = Duration::from_secs(3);
/// How long a request that hit a full disk keeps `/ready` failing without a successful
/// write.
const FULL_HOLD: Duration = Duration::from_secs(30);

/// The readiness state of one control plane.
#[derive(Default)]
pub(crate) struct Readiness {
    probe: tokio::sync::Mutex<Option<(Instant, Option<Outage>)>>,
    last_full: std::sync::Mutex<Option<Instant>>,
}

impl Readiness {
    fn full_seen(&self) -> bool {
        let last = self.last_full.lock().unwrap_or_else(|p| p.into_inner());
        last.is_some_and(|at| at.elapsed() < FULL_HOLD)
    }

    fn set_full(&self, full: bool) {
        let mut last = self.last_full.lock().unwrap_or_else(|p| p.into_inner());
        *last = full.then(Instant::now);
    }

    /// A write succeeded: the store writes again, whatever the last probe said.
    fn write_succeeded(&self) {
        self.set_full(false);
        if let Ok(mut probe) = self.probe.try_lock() {
            *probe = None;
        }
    }

    /// The probe's answer, rerun when older than [`PROBE_EVERY`] (one caller probes,
    /// the others wait for its answer).
    async fn probe(&self, state: &AppState) -> Option<Outage> {
        let mut cached = self.probe.lock().await;
        if let Some((at, answer)) = *cached {
            if at.elapsed() < PROBE_EVERY {
                return answer;
            }
        }
        let answer = match tokio::time::timeout(PROBE_TIMEOUT, state.store().probe_write()).await {
            Ok(Ok(())) => None,
            Ok(Err(e)) => {
                tracing::warn!(error = %e, "control plane: store write probe failed");
                Some(e.outage().unwrap_or(Outage::Unavailable))
            }
            Err(_) => Some(Outage::Unavailable),
        };
        *cached = Some((Instant::now(), answer));
        answer
    }
}

pub(crate) fn routes() -> Router<AppState> {
    Router::new()
        .route("/health", get(|| async { "ok\n" }))
        .route("/ready", get(ready))
}

async fn ready(State(s): State<AppState>) -> Response {
    let r = &s.inner.readiness;
    let outage = match r.full_seen() {
        true => Some(Outage::Full),
        false => r.probe(&s).await,
    };
    match outage {
        None => (StatusCode::OK, axum::Json(json!({"ready": true}))).into_response(),
        Some(o) => ApiError::store_outage(o).into_response(),
    }
}

/// Middleware: a response that failed for a full disk marks the store unready; a
/// successful write marks it ready again.
pub(crate) async fn observe(State(s): State<AppState>, req: Request, next: Next) -> Response {
    let write = !matches!(
        *req.method(),
        http::Method::GET | http::Method::HEAD | http::Method::OPTIONS
    );
    let resp = next.run(req).await;
    if let Some(StoreOutage(Outage::Full)) = resp.extensions().get::<StoreOutage>() {
        s.inner.readiness.set_full(true);
    } else if write && resp.status().is_success() {
        s.inner.readiness.write_succeeded();
    }
    resp
}
