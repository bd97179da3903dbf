//! The gateway's status report (`POST /api/am/gateway/v1/status`): what it serves, how
//! the last snapshot arrived, and each tracked endpoint's state
//! (`turnpike_config::endpoint_status`). A task of its own posts it after every install,
//! within [`CHECK_EVERY`] of an endpoint changing state, and every [`REFRESH_EVERY`]
//! while the snapshot has tracked endpoints (their failure and in-flight counts move);
//! a gateway without any posts only after installs. A lost report costs nothing: the
//! next one replaces it, and polls carry version and hash anyway.

use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::sync::Arc;
use std::time::{Duration, Instant};

use arc_swap::ArcSwap;
use bytes::Bytes;
use http_body_util::Full;
use tokio::sync::watch;
use turnpike_config::endpoint_status::{self, EndpointStatus};
use turnpike_config::Snapshot;

/// The follower's client (HTTP, or HTTPS verified as its config says), shared with the
/// reporter.
pub(crate) type HttpClient = hyper_util::client::legacy::Client<
    hyper_rustls::HttpsConnector<hyper_util::client::legacy::connect::HttpConnector>,
    Full<Bytes>,
>;

/// How often the endpoints' states are compared with the last report's.
pub const CHECK_EVERY: Duration = Duration::from_secs(1);
/// How often a gateway with tracked endpoints reports even when no state changed.
pub const REFRESH_EVERY: Duration = Duration::from_secs(10);
/// Endpoints listed in one report (the control plane takes 64 KiB): those not `active`
/// first, `endpointsTotal` says how many there were.
pub const MAX_REPORTED_ENDPOINTS: usize = 200;

/// What a gateway reports. The control plane keeps the object as sent (the endpoints
/// lifted out) and shows it in `/gateways`: add fields here.
#[derive(Debug, Clone, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct StatusReport {
    pub version: u64,
    pub hash: String,
    /// Milliseconds the last apply + compile took.
    pub apply_ms: u64,
    /// `delta` or `full`: how the last snapshot arrived.
    pub kind: &'static str,
    pub fulls: u64,
    pub deltas: u64,
    /// Unix milliseconds of the install.
    pub applied_at_ms: u64,
    /// Tracked endpoints (APIs with resilience settings), at most
    /// [`MAX_REPORTED_ENDPOINTS`].
    pub endpoints: Vec<EndpointStatus>,
    pub endpoints_total: usize,
}

/// The install the follower last made and the control plane it follows; the reporter
/// adds the endpoints at send time.
#[derive(Debug, Clone)]
pub(crate) struct Installed {
    pub report: StatusReport,
    pub control_plane: String,
}

/// Who to report to, as whom.
pub(crate) struct Reporter {
    pub client: HttpClient,
    pub token: String,
    pub gateway_id: String,
    pub snapshots: Arc<ArcSwap<Snapshot>>,
}

impl Reporter {
    /// Runs until the follower drops its sender (the follower stopped).
    pub async fn run(self, mut installs: watch::Receiver<Option<Installed>>) {
        let mut tick = tokio::time::interval(CHECK_EVERY);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
        let mut last_states = 0u64;
        let mut last_sent = Instant::now();
        loop {
            let installed = tokio::select! {
                changed = installs.changed() => match changed {
                    Ok(()) => true,
                    Err(_) => return,
                },
                _ = tick.tick() => false,
            };
            let Some(base) = installs.borrow_and_update().clone() else {
                continue;
            };
            let endpoints = endpoint_status::list(&self.snapshots.load());
            let states = states_digest(&endpoints);
            let due = !endpoints.is_empty() && last_sent.elapsed() >= REFRESH_EVERY;
            if installed || states != last_states || due {
                last_states = states;
                last_sent = Instant::now();
                self.send(base, endpoints).await;
            }
        }
    }

    async fn send(&self, base: Installed, endpoints: Vec<EndpointStatus>) {
        let mut report = base.report;
        report.endpoints_total = endpoints.len();
        report.endpoints = listed(endpoints);
        let Ok(body) = serde_json::to_vec(&report) else {
            return;
        };
        let url = format!("{}/api/am/gateway/v1/status", base.control_plane);
        let req = http::Request::post(url)
            .header(
                http::header::AUTHORIZATION,
                format!("Bearer {}", self.token),
            )
            .header("x-turnpike-gateway", self.gateway_id.as_str())
            .header(http::header::CONTENT_TYPE, "application/json")
            .body(Full::new(Bytes::from(body)));
        let Ok(req) = req else {
            return;
        };
        let sent = tokio::time::timeout(Duration::from_secs(10), self.client.request(req)).await;
        match sent {
            Ok(Ok(r)) if r.status().is_success() => {}
            Ok(Ok(r)) => tracing::debug!(status = %r.status(), "sync: status report refused"),
            _ => tracing::debug!("sync: status report not delivered"),
        }
    }
}

/// The endpoints a report lists: those not `active` first (file order kept within each
/// group), at most [`MAX_REPORTED_ENDPOINTS`].
fn listed(mut endpoints: Vec<EndpointStatus>) -> Vec<EndpointStatus> {
    endpoints.sort_by_key(|e| e.state == "active");
    endpoints.truncate(MAX_REPORTED_ENDPOINTS);
    endpoints
}

/// Which endpoint is in which state: a report goes out when this changes.
fn states_digest(endpoints: &[EndpointStatus]) -> u64 {
    let mut h = DefaultHasher::new();
    for e in endpoints {
        (&e.id, &e.endpoint, e.pool, e.state).hash(&mut h);
    }
    h.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn endpoint(n: usize, state: &'static str) -> EndpointStatus {
        EndpointStatus {
            api: "a".into(),
            version: "v1".into(),
            context: "/a".into(),
            id: "/a/v1".into(),
            endpoint: format!("http://e{n}"),
            pool: "production",
            state,
            until_ms: None,
            failures: 0,
            in_flight: 0,
            suspensions: 0,
        }
    }

    #[test]
    fn a_report_lists_endpoints_not_active_first_and_at_most_the_cap() {
        let mut all: Vec<_> = (0..MAX_REPORTED_ENDPOINTS + 50)
            .map(|n| endpoint(n, "active"))
            .collect();
        all.push(endpoint(9_000, "suspended"));
        all.push(endpoint(9_001, "unhealthy"));
        let listed = listed(all);
        assert_eq!(listed.len(), MAX_REPORTED_ENDPOINTS);
        assert_eq!(
            (listed[0].endpoint.as_str(), listed[1].endpoint.as_str()),
            ("http://e9000", "http://e9001")
        );
        assert_eq!(listed[2].endpoint, "http://e0");
    }

    #[test]
    fn only_a_change_of_state_changes_the_digest() {
        let before = vec![endpoint(1, "active"), endpoint(2, "active")];
        let mut busier = before.clone();
        busier[0].in_flight = 7;
        busier[1].failures = 2;
        assert_eq!(states_digest(&before), states_digest(&busier));
        let mut suspended = before.clone();
        suspended[1].state = "suspended";
        assert_ne!(states_digest(&before), states_digest(&suspended));
    }
}
