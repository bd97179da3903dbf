//! Snapshot distribution: compiles the live APIs into the declarative file format
//! (`turnpike_model::GatewayFile`, sent as JSON: DB-less and control-plane gateways run the
//! same compile code; with the key manager it carries `security:` and each API's `auth:`,
//! see `security.rs`), serves it by long-poll with the version as cursor
//! (`GET /api/am/gateway/v1/snapshot?after=V`), authenticated by the gateway token, and
//! records what each gateway reports it serves and how long the last change took to reach it
//! (`convergence.rs`: in the store, so every control plane on one database lists every
//! gateway).
//! A gateway that already holds a recent version (and says so with
//! `x-turnpike-accept-delta`) gets only what changed (`delta.rs`, `turnpike_sync::wire`).
//! A build (`build.rs`) reads the APIs' revisions, the sections and the subscription counter; API rows
//! are refetched only when their revision or security moved (`index.rs`), a million
//! subscriptions reread only when that counter moved (`subs.rs`), and the whole
//! file is serialized only when some gateway asks for it whole.

pub(crate) mod build;
pub(crate) mod convergence;
pub(crate) mod delta;
pub(crate) mod index;
pub(crate) mod subs;
pub(crate) mod throttling;

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::extract::{Query, State};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use bytes::Bytes;
use http::{HeaderMap, HeaderValue, StatusCode};

use crate::error::{ApiError, ApiResult};
use crate::snapshot::build::{build, Built, Indexes};
use crate::AppState;

pub const VERSION_HEADER: &str = "x-turnpike-version";
pub const HASH_HEADER: &str = "x-turnpike-hash";
pub const GATEWAY_HEADER: &str = "x-turnpike-gateway";
pub const SERVING_HEADER: &str = "x-turnpike-serving";
pub const SERVING_HASH_HEADER: &str = "x-turnpike-serving-hash";

/// The last built snapshot, reused until the version moves, and the subscription index
/// builds update.
#[derive(Default)]
pub struct Cache {
    last: tokio::sync::Mutex<Last>,
    deltas: crate::snapshot::delta::Deltas,
    /// How long the last build took.
    last_build_ms: AtomicU64,
}

#[derive(Default)]
struct Last {
    built: Option<Arc<Built>>,
    indexes: Indexes,
}

impl Cache {
    async fn get(&self, s: &AppState, at_least: u64) -> Result<Arc<Built>, ApiError> {
        let mut last = self.last.lock().await;
        if let Some(b) = last.built.as_ref().filter(|b| b.version >= at_least) {
            return Ok(b.clone());
        }
        // One change is often several commits (create, secure, publish): when a build is
        // slow, wait a tenth of it (at most 250 ms) so one build takes them all.
        let pause = self.last_build_ms.load(Ordering::Relaxed) / 10;
        if pause > 0 {
            tokio::time::sleep(Duration::from_millis(pause.min(250))).await;
        }
        let security = s
            .inner
            .security
            .get()
            .map(|sec| (sec, s.inner.config.gateway_token.as_str()));
        let started = Instant::now();
        let b = Arc::new(build(&s.inner.store, security, &mut last.indexes).await?);
        self.last_build_ms
            .store(started.elapsed().as_millis() as u64, Ordering::Relaxed);
        self.deltas.built(&b);
        last.built = Some(b.clone());
        keep_manifest(&s.inner.store, &b).await;
        Ok(b)
    }

    /// The delta from the base the gateway names, its manifest read back from the store
    /// when this process has not built that version (restarted, or the gateway followed
    /// another control plane).
    async fn delta(&self, s: &AppState, b: &Built, base: u64, base_hash: &str) -> Option<Bytes> {
        if base < b.version && !self.deltas.knows(base, base_hash) {
            let text = s.inner.store.manifest(base, base_hash).await.ok()??;
            let m = tokio::task::spawn_blocking(move || serde_json::from_str(&text))
                .await
                .ok()?
                .ok()?;
            self.deltas.remember(m);
        }
        self.deltas.delta(b, base, base_hash)
    }
}

/// Keeps the manifest of a freshly built version in the store (another control plane
/// may have kept it first). A failure costs some gateway a full file later, no more.
async fn keep_manifest(store: &turnpike_store::Store, b: &Built) {
    let m = b.manifest.clone();
    let json = tokio::task::spawn_blocking(move || serde_json::to_string(&*m)).await;
    let saved = match json {
        Ok(Ok(text)) => store
            .save_manifest(b.version, &b.hash, &text)
            .await
            .map_err(|e| e.to_string()),
        Ok(Err(e)) => Err(e.to_string()),
        Err(e) => Err(e.to_string()),
    };
    if let Err(e) = saved {
        tracing::warn!(version = b.version, error = %e, "control plane: manifest not kept");
    }
}

pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/snapshot", get(snapshot))
        .route("/status", post(convergence::status))
}

/// `GET /metrics` on the control plane's port: the gateways' convergence.
pub fn metrics_routes() -> Router<AppState> {
    Router::new().route("/metrics", get(convergence::metrics))
}

fn header<'a>(h: &'a HeaderMap, name: &str) -> Option<&'a str> {
    h.get(name).and_then(|v| v.to_str().ok())
}

async fn snapshot(
    State(s): State<AppState>,
    Query(q): Query<HashMap<String, String>>,
    headers: HeaderMap,
) -> ApiResult<Response> {
    crate::rest::analytics::gateway_token(&s, &headers)?;
    let wire = wire_version(&headers)?;
    let after = match q.get("after") {
        None => 0,
        Some(a) => a
            .parse::<u64>()
            .map_err(|_| ApiError::bad_request("after must be a version number"))?,
    };
    let wait = q
        .get("wait")
        .and_then(|w| w.parse::<u64>().ok())
        .map(Duration::from_secs)
        .unwrap_or(s.inner.config.long_poll)
        .min(s.inner.config.long_poll);
    convergence::record_contact(&s, &headers, after, wait).await;
    let mut rx = s.inner.store.watch_version();
    let current = *rx.borrow_and_update();
    // A cursor from the future (another database, a restore) gets a full resync.
    if current == after {
        let mut closing = s.inner.closing.subscribe();
        let waited = tokio::select! {
            w = tokio::time::timeout(wait, rx.wait_for(|v| *v > after)) => matches!(w, Ok(Ok(_))),
            _ = closing.wait_for(|c| *c) => {
                return Err(ApiError::new(StatusCode::SERVICE_UNAVAILABLE, "shutting_down", "the control plane is stopping; retry"));
            }
        };
        if !waited {
            let v = HeaderValue::from(current);
            let mut resp = (StatusCode::NOT_MODIFIED, [(VERSION_HEADER, v)]).into_response();
            answer_wire(&mut resp, wire);
            return Ok(resp);
        }
    }
    let latest = *rx.borrow();
    let built = s.inner.snapshots.get(&s, latest).await?;
    let hash = HeaderValue::from_str(&built.hash).unwrap_or(HeaderValue::from_static(""));
    let delta = header(&headers, turnpike_sync::ACCEPT_DELTA_HEADER)
        .zip(header(&headers, SERVING_HEADER).and_then(|v| v.parse::<u64>().ok()))
        .zip(header(&headers, SERVING_HASH_HEADER))
        .map(|((_, base), base_hash)| (base, base_hash));
    let delta = match delta {
        Some((base, base_hash)) => s.inner.snapshots.delta(&s, &built, base, base_hash).await,
        None => None,
    };
    let (kind, body) = match delta {
        Some(d) => ("delta", d),
        None => ("full", built.full_body().await?),
    };
    let mut resp = (
        StatusCode::OK,
        [
            (
                http::header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            ),
            (
                http::header::HeaderName::from_static(VERSION_HEADER),
                HeaderValue::from(built.version),
            ),
            (http::header::HeaderName::from_static(HASH_HEADER), hash),
            (
                http::header::HeaderName::from_static(turnpike_sync::KIND_HEADER),
                HeaderValue::from_static(kind),
            ),
        ],
        body,
    )
        .into_response();
    answer_wire(&mut resp, wire);
    Ok(resp)
}

/// The wire version a follower speaks (`x-turnpike-wire`; none: 1, the version before
/// the header). Older than [`turnpike_sync::OLDEST_WIRE`]: 426, the gateway must be
/// upgraded (it keeps serving its last good snapshot meanwhile).
fn wire_version(headers: &HeaderMap) -> ApiResult<u32> {
    let wire = match header(headers, turnpike_sync::WIRE_HEADER) {
        None => 1,
        Some(v) => v
            .trim()
            .parse::<u32>()
            .map_err(|_| ApiError::bad_request("x-turnpike-wire must be a wire version number"))?,
    };
    if wire < turnpike_sync::OLDEST_WIRE {
        return Err(ApiError::new(
            StatusCode::UPGRADE_REQUIRED,
            "wire_version_unsupported",
            format!(
                "this control plane serves gateways of wire version {} to {}; the gateway speaks {wire}: upgrade it",
                turnpike_sync::OLDEST_WIRE,
                turnpike_sync::WIRE_VERSION
            ),
        ));
    }
    Ok(wire)
}

/// Says this control plane's wire version to followers that speak the header (a version 1
/// follower is answered exactly as before).
fn answer_wire(resp: &mut Response, wire: u32) {
    if wire >= 2 {
        resp.headers_mut().insert(
            http::header::HeaderName::from_static(turnpike_sync::WIRE_HEADER),
            HeaderValue::from(turnpike_sync::WIRE_VERSION),
        );
    }
}
