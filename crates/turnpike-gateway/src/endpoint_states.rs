//! Each endpoint's state (active, suspended, probing, unhealthy) as Prometheus gauges,
//! read at scrape time from the long-lived states the current snapshot holds
//! (`turnpike_config::endpoint_state`); only APIs with resilience settings have any.
//! The same list (`turnpike_config::endpoint_status::list`) feeds the gateway's status
//! report, which the follower posts to the control plane.

use std::fmt::Write as _;

use turnpike_config::endpoint_state::EndpointHealth;
pub use turnpike_config::endpoint_status::{list, EndpointStatus};
use turnpike_config::Snapshot;

pub(crate) const M_ENDPOINT_STATE: &str = "turnpike_upstream_endpoint_state";
pub(crate) const M_ENDPOINT_IN_FLIGHT: &str = "turnpike_upstream_endpoint_in_flight";
pub(crate) const M_ENDPOINT_SUSPENSIONS: &str = "turnpike_upstream_endpoint_suspensions_total";

/// `api`, `version`, `context` and `id` as the per-API series label an API, then the
/// endpoint and its pool.
fn labels(e: &EndpointStatus, escape: fn(&str) -> String) -> String {
    format!(
        "api=\"{}\",version=\"{}\",context=\"{}\",id=\"{}\",endpoint=\"{}\",pool=\"{}\"",
        escape(&e.api),
        escape(&e.version),
        escape(&e.context),
        escape(&e.id),
        escape(&e.endpoint),
        e.pool
    )
}

/// The gauges (one line per state, 1 for the current one, as Kong's
/// `kong_upstream_target_health`), in-flight requests and suspensions so far.
pub(crate) fn render(snap: &Snapshot, out: &mut String, escape: fn(&str) -> String) {
    let all = list(snap);
    if all.is_empty() {
        return;
    }
    let labelled: Vec<(String, &EndpointStatus)> =
        all.iter().map(|e| (labels(e, escape), e)).collect();
    let _ = writeln!(out, "# HELP {M_ENDPOINT_STATE} Each upstream endpoint's state (1 for the current one)\n# TYPE {M_ENDPOINT_STATE} gauge");
    for (labels, e) in &labelled {
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
        for (labels, e) in &labelled {
            let _ = writeln!(out, "{name}{{{labels}}} {}", v(e));
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
