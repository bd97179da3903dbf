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

/// One row per provider: `api`, `version`, `context` as the per-API series label an
/// API, then `provider`.
pub(crate) fn render(snap: &Snapshot, out: &mut String, escape: fn(&str) -> String) {
    let mut rows: Vec<(String, bool, u32, u64)> = Vec::new();
    for api in &snap.apis {
        let Some(ai) = api.chain.find::<AiPolicy>() else {
            continue;
        };
        let now = ai.now_ms();
        for (name, h) in ai.provider_health() {
            let labels = format!(
                "api=\"{}\",version=\"{}\",context=\"{}\",provider=\"{}\"",
                escape(&api.name),
                escape(&api.version),
                escape(&api.context),
                escape(name)
            );
            rows.push((
                labels,
                h.suspended(now),
                h.consecutive_failures(),
                h.suspensions(),
            ));
        }
    }
    if rows.is_empty() {
        return;
    }
    let series: [(&str, &str, &str, &dyn Fn(&(String, bool, u32, u64)) -> u64); 3] = [
        (
            M_SUSPENDED,
            "gauge",
            "1 while the AI provider is suspended after failures",
            &|r| u64::from(r.1),
        ),
        (
            M_FAILURES,
            "gauge",
            "The AI provider's failed calls in a row",
            &|r| u64::from(r.2),
        ),
        (
            M_SUSPENSIONS,
            "counter",
            "Times the AI provider was suspended",
            &|r| r.3,
        ),
    ];
    for (name, kind, help, value) in series {
        let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}");
        for r in &rows {
            let _ = writeln!(out, "{name}{{{}}} {}", r.0, value(r));
        }
    }
}
