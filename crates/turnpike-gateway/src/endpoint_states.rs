//! Each endpoint's state (active, suspended, probing, unhealthy) as Prometheus gauges,
//! read at scrape time from the long-lived states the current snapshot holds
//! (`turnpike_config::endpoint_state`); only APIs with resilience settings have any.
//! The same list feeds the gateway's status report (`list`).

use std::fmt::Write as _;

use turnpike_config::endpoint_state::EndpointHealth;
use turnpike_config::Snapshot;

pub(crate) const M_ENDPOINT_STATE: &str = "turnpike_upstream_endpoint_state";
pub(crate) const M_ENDPOINT_IN_FLIGHT: &str = "turnpike_upstream_endpoint_in_flight";
pub(crate) const M_ENDPOINT_SUSPENSIONS: &str = "turnpike_upstream_endpoint_suspensions_total";

/// One endpoint as a status report shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EndpointStatus {
    /// `{context}/{version}`.
    pub api: String,
    pub endpoint: String,
    /// `production` or `sandbox`.
    pub pool: &'static str,
    /// `active`, `suspended`, `probing` or `unhealthy`.
    pub state: &'static str,
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
                    api: s.api_id.clone(),
                    endpoint: s.url.clone(),
                    pool,
                    state: s.health().as_str(),
                    in_flight: s.in_flight(),
                    suspensions: s.suspensions(),
                });
            }
        }
    }
    out
}

/// The gauges (one line per state, 1 for the current one, as Kong's
/// `kong_upstream_target_health`), in-flight requests and suspensions so far.
pub(crate) fn render(snap: &Snapshot, out: &mut String, escape: fn(&str) -> String) {
    let all = list(snap);
    if all.is_empty() {
        return;
    }
    let _ = writeln!(out, "# HELP {M_ENDPOINT_STATE} Each upstream endpoint's state (1 for the current one)\n# TYPE {M_ENDPOINT_STATE} gauge");
    for e in &all {
        let labels = format!(
            "api=\"{}\",endpoint=\"{}\",pool=\"{}\"",
            escape(&e.api),
            escape(&e.endpoint),
            e.pool
        );
        for h in EndpointHealth::ALL {
            let v = u8::from(h.as_str() == e.state);
            let _ = writeln!(
                out,
                "{M_ENDPOINT_STATE}{{{labels},state=\"{}\"}} {v}",
                h.as_str()
            );
        }
    }
    let per_endpoint = |out: &mut String,
                        name: &str,
                        kind: &str,
                        help: &str,
                        v: &dyn Fn(&EndpointStatus) -> u64| {
        let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}");
        for e in &all {
            let (api, ep) = (escape(&e.api), escape(&e.endpoint));
            let _ = writeln!(
                out,
                "{name}{{api=\"{api}\",endpoint=\"{ep}\",pool=\"{}\"}} {}",
                e.pool,
                v(e)
            );
        }
    };
    per_endpoint(
        out,
        M_ENDPOINT_IN_FLIGHT,
        "gauge",
        "Requests waiting on each endpoint's response head",
        &|e| u64::from(e.in_flight),
    );
    per_endpoint(
        out,
        M_ENDPOINT_SUSPENSIONS,
        "counter",
        "Times each endpoint was suspended",
        &|e| e.suspensions,
    );
}
