//! Each AI provider's health (`turnpike_ai::ProviderHealth`: failures in a row, the
//! suspension that leaves it out of its models' routes) as Prometheus series, read at
//! scrape time from the AI policies the current snapshot holds; APIs without an `ai:`
//! section have none. Semantics: docs/ai-gateway.md "Routing and fallback".

use std::fmt::Write as _;

use turnpike_ai::AiPolicy;
use turnpike_config::Snapshot;

pub(crate) const M_SUSPENDED: &str = "turnpike_ai_provider_suspended";
pub(crate) const M_FAILURES: &str = "turnpike_ai_provider_consecutive_failures";
pub(crate) const M_SUSPENSIONS: &str = "turnpike_ai_provider_suspensions_total";

/// One provider's series values, with its labels.
struct Row {
    labels: String,
    suspended: bool,
    failures: u32,
    suspensions: u64,
}

/// One row per provider: `api`, `version`, `context` as the per-API series label an
/// API, then `provider`.
pub(crate) fn render(snap: &Snapshot, out: &mut String, escape: fn(&str) -> String) {
    let mut rows: Vec<Row> = Vec::new();
    for api in &snap.apis {
        let Some(ai) = api.chain.find::<AiPolicy>() else {
            continue;
        };
        let now = ai.now_ms();
        for (name, h) in ai.provider_health() {
            rows.push(Row {
                labels: format!(
                    "api=\"{}\",version=\"{}\",context=\"{}\",provider=\"{}\"",
                    escape(&api.name),
                    escape(&api.version),
                    escape(&api.context),
                    escape(name)
                ),
                suspended: h.suspended(now),
                failures: h.consecutive_failures(),
                suspensions: h.suspensions(),
            });
        }
    }
    if rows.is_empty() {
        return;
    }
    let series: [(&str, &str, &str, fn(&Row) -> u64); 3] = [
        (
            M_SUSPENDED,
            "gauge",
            "1 while the AI provider is suspended after failures",
            |r| u64::from(r.suspended),
        ),
        (
            M_FAILURES,
            "gauge",
            "The AI provider's failed calls in a row",
            |r| u64::from(r.failures),
        ),
        (
            M_SUSPENSIONS,
            "counter",
            "Times the AI provider was suspended",
            |r| r.suspensions,
        ),
    ];
    for (name, kind, help, value) in series {
        let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}");
        for r in &rows {
            let _ = writeln!(out, "{name}{{{}}} {}", r.labels, value(r));
        }
    }
}
