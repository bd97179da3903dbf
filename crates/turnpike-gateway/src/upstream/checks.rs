//! Active health checks: one task per (API, endpoint) whose API has a `health_check`,
//! each sending `GET {base}{path}` on a fresh connection every `interval` and telling
//! the endpoint's long-lived state (`EndpointState::checked`) whether it passed. A
//! supervisor (one per gateway) starts and stops the tasks as snapshots swap: a task
//! keyed by API id and endpoint URL lives across swaps that keep both (and the same
//! settings), and stops when the endpoint or its check disappears.

use std::collections::HashMap;
use std::sync::{Arc, Weak};
use std::time::Duration;

use bytes::Bytes;
use http::{Method, Request, Uri};
use http_body_util::BodyExt;
use tokio::task::JoinHandle;
use turnpike_config::endpoint_state::EndpointState;
use turnpike_config::resilience::HealthCheck;
use turnpike_config::{Endpoint, Snapshot};

use super::forward::prepare;
use super::pool::Conn;
use crate::client_body::ClientBody;
use crate::conn::Shared;

/// How often the supervisor looks for a new snapshot (a pointer compare).
const WATCH_EVERY: Duration = Duration::from_millis(200);

/// Most bytes of a check's response body read (the rest is dropped with the connection).
const MAX_CHECK_BODY: usize = 64 * 1024;

type Key = (String, String);

struct Running {
    settings: String,
    task: JoinHandle<()>,
}

impl Drop for Running {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Starts the supervisor; it ends with the gateway's shared state.
pub(crate) fn spawn_supervisor(shared: Weak<Shared>) {
    tokio::spawn(async move {
        let mut running: HashMap<Key, Running> = HashMap::new();
        // Weak: the snapshot's contents (and the states it holds) go when it is
        // replaced; the allocation stays, so its address is not reused meanwhile.
        let mut seen: Weak<Snapshot> = Weak::new();
        loop {
            {
                let Some(s) = shared.upgrade() else { return };
                let snap = s.snapshots.load_full();
                if !std::ptr::eq(Arc::as_ptr(&snap), seen.as_ptr()) {
                    seen = Arc::downgrade(&snap);
                    reconcile(&shared, &snap, &mut running);
                }
            }
            tokio::time::sleep(WATCH_EVERY).await;
        }
    });
}

/// Every endpoint the snapshot wants checked, with its check.
fn wanted(snap: &Snapshot) -> HashMap<Key, (Endpoint, Arc<EndpointState>, HealthCheck)> {
    let mut out = HashMap::new();
    for api in &snap.apis {
        let Some(hc) = api
            .resilience
            .as_ref()
            .and_then(|r| r.health_check.as_ref())
        else {
            continue;
        };
        for ep in api.endpoints.iter().chain(&api.sandbox_endpoints) {
            if let Some(state) = &ep.state {
                let key = (state.api_id.clone(), state.url.clone());
                out.insert(key, (ep.clone(), state.clone(), hc.clone()));
            }
        }
    }
    out
}

fn reconcile(shared: &Weak<Shared>, snap: &Snapshot, running: &mut HashMap<Key, Running>) {
    let mut wanted = wanted(snap);
    // Gone, or changed: stopped (dropping a `Running` aborts its task).
    running.retain(|k, r| {
        wanted
            .get(k)
            .is_some_and(|(ep, _, hc)| settings(ep, hc) == r.settings)
    });
    for (key, (ep, state, hc)) in wanted.drain() {
        if running.contains_key(&key) {
            continue;
        }
        let settings = settings(&ep, &hc);
        let task = tokio::spawn(check_loop(shared.clone(), ep, state, hc));
        running.insert(key, Running { settings, task });
    }
}

fn settings(ep: &Endpoint, hc: &HealthCheck) -> String {
    format!("{hc:?}|{}|{:?}", ep.url, ep.connect_timeout)
}

async fn check_loop(
    shared: Weak<Shared>,
    ep: Endpoint,
    state: Arc<EndpointState>,
    hc: HealthCheck,
) {
    let mut tick = tokio::time::interval(hc.interval);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        let Some(shared) = shared.upgrade() else {
            return;
        };
        let passed = tokio::time::timeout(hc.timeout, check_once(&shared, &ep, &hc))
            .await
            .unwrap_or(false);
        drop(shared);
        if state.checked(passed, hc.healthy_threshold, hc.unhealthy_threshold) {
            tracing::warn!(api = %state.api_id, endpoint = %state.url,
                healthy = passed, "health check changed the endpoint's state");
        }
    }
}

/// One check on a fresh connection: the status is one of the expected ones.
async fn check_once(shared: &Shared, ep: &Endpoint, hc: &HealthCheck) -> bool {
    let https = ep.scheme == http::uri::Scheme::HTTPS;
    let pool = shared.upstreams.pool(https, &ep.authority);
    let Ok(conn) = pool.connect_new(ep.connect_timeout).await else {
        return false;
    };
    let Ok(uri) = format!("{}{}", ep.base_path, hc.path).parse::<Uri>() else {
        return false;
    };
    let mut req = Request::new(ClientBody::full(Bytes::new()));
    *req.method_mut() = Method::GET;
    *req.uri_mut() = uri;
    let resp = match conn {
        Conn::H1 { mut sender, .. } => {
            prepare(&mut req, &pool, false);
            sender.send_request(req).await
        }
        Conn::H2(mut sender) => {
            prepare(&mut req, &pool, true);
            sender.send_request(req).await
        }
    };
    let Ok(resp) = resp else { return false };
    let status = resp.status();
    // Read (a bounded part of) the body so the back end sees a complete exchange.
    let _ = http_body_util::Limited::new(resp.into_body(), MAX_CHECK_BODY)
        .collect()
        .await;
    hc.expected.contains(status)
}
