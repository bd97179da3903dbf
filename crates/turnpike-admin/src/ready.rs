//! `/health` (the process answers) and `/ready` (it can also write to its store) of the
//! control plane. Readiness comes from two signals: a write probe
//! ([`turnpike_store::Store::probe_write`]) run at most every [`PROBE_EVERY`], never per
//! request, and the requests themselves: one that failed with a store outage (a full
//! disk, a database that is down) marks the store unready until a write succeeds again
//! or [`OUTAGE_HOLD`] passes. Reads, tokens and the gateways' snapshots keep working
//! during an outage; `/ready` is what tells a balancer or an operator that writes do not.

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
/// How long a request's store outage keeps `/ready` failing without a successful write.
const OUTAGE_HOLD: Duration = Duration::from_secs(30);

/// The readiness state of one control plane.
#[derive(Default)]
pub(crate) struct Readiness {
    probe: tokio::sync::Mutex<Option<(Instant, Option<Outage>)>>,
    last_outage: std::sync::Mutex<Option<(Instant, Outage)>>,
}

impl Readiness {
    fn outage_seen(&self) -> Option<Outage> {
        let last = self.last_outage.lock().unwrap_or_else(|p| p.into_inner());
        last.filter(|(at, _)| at.elapsed() < OUTAGE_HOLD)
            .map(|(_, o)| o)
    }

    fn record(&self, outage: Option<Outage>) {
        let mut last = self.last_outage.lock().unwrap_or_else(|p| p.into_inner());
        *last = outage.map(|o| (Instant::now(), o));
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
        let answer = match tokio::time::timeout(PROBE_TIMEOUT, state.store().probe_write()).await
        {
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
    let outage = match r.outage_seen() {
        Some(o) => Some(o),
        None => r.probe(&s).await,
    };
    match outage {
        None => (StatusCode::OK, axum::Json(json!({"ready": true}))).into_response(),
        Some(o) => ApiError::store_outage(o).into_response(),
    }
}

/// Middleware: a response that failed for a store outage marks the store unready; a
/// successful write marks it ready again.
pub(crate) async fn observe(State(s): State<AppState>, req: Request, next: Next) -> Response {
    let write = !matches!(
        *req.method(),
        http::Method::GET | http::Method::HEAD | http::Method::OPTIONS
    );
    let resp = next.run(req).await;
    if let Some(StoreOutage(o)) = resp.extensions().get::<StoreOutage>() {
        s.inner.readiness.record(Some(*o));
    } else if write && resp.status().is_success() {
        s.inner.readiness.record(None);
    }
    resp
}
