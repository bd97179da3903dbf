//! Each tracked endpoint of a snapshot as `/metrics` and the gateway's status report
//! show it (read at scrape or report time from the long-lived `endpoint_state`s; only
//! APIs with resilience settings have any).

use serde::Serialize;

use crate::Snapshot;

/// One endpoint of one API, labelled as the per-API metrics label the API.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct EndpointStatus {
    /// The API's name.
    pub api: String,
    pub version: String,
    pub context: String,
    /// `{context}/{version}`, host-prefixed for a host-limited API.
    pub id: String,
    pub endpoint: String,
    /// `production` or `sandbox`.
    pub pool: &'static str,
    /// `active`, `suspended` (circuit open), `probing` (half-open) or `unhealthy`.
    pub state: &'static str,
    /// When the suspension ends, Unix milliseconds (suspended only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub until_ms: Option<u64>,
    /// Counted failures since the last success or suspension.
    pub failures: u32,
    pub in_flight: u32,
    pub suspensions: u64,
}

/// Every tracked endpoint of the snapshot, in file order.
pub fn list(snap: &Snapshot) -> Vec<EndpointStatus> {
    let mut out = Vec::new();
    for api in &snap.apis {
        let pools = [
            ("production", &api.endpoints),
            ("sandbox", &api.sandbox_endpoints),
        ];
        for (pool, eps) in pools {
            for s in eps.iter().filter_map(|e| e.state.as_ref()) {
                out.push(EndpointStatus {
                    api: api.name.clone(),
                    version: api.version.clone(),
                    context: api.context.clone(),
                    id: api.labelled_id(),
                    endpoint: s.url.clone(),
                    pool,
                    state: s.health().as_str(),
                    until_ms: s.suspended_until_ms(),
                    failures: s.consecutive_failures(),
                    in_flight: s.in_flight(),
                    suspensions: s.suspensions(),
                });
            }
        }
    }
    out
}
