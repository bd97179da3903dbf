//! The section's validation and the weighted schedule.

use turnpike_model::resilience::{EndpointDetail, EndpointSpec};

use crate::Snapshot;

fn problems(yaml: &str) -> Vec<String> {
    match Snapshot::from_yaml(yaml, "t") {
        Ok(_) => Vec::new(),
        Err(e) => vec![e.to_string()],
    }
}

fn snapshot(yaml: &str) -> Snapshot {
    match Snapshot::from_yaml(yaml, "t") {
        Ok(s) => s,
        Err(e) => panic!("{e}"),
    }
}

fn api(extra: &str) -> String {
    format!(
        "apis:\n  - name: a\n    context: /a\n    version: v1\n    endpoints: [\"http://127.0.0.1:1\"]\n    resources: [ {{ path: \"/*\", methods: [\"*\"] }} ]\n{extra}"
    )
}

#[test]
fn every_bad_value_is_reported_at_once() {
    let p = problems(&api(
        "    resilience:\n      suspension: { on: [timeout, 7xx, nope], initial_duration: 10s, max_duration: 1s, progression_factor: 0.5 }\n      circuit_breaker: { consecutive_failures: 0, failure_ratio: 1.5, window: 1 }\n      retries: { attempts: 9, methods: [\"*\"] }\n      health_check: { path: health, interval: 1ms, expected_statuses: [99] }\n",
    ));
    let joined = p.join("\n");
    for field in [
        "suspension.on[1]",
        "suspension.on[2]",
        "suspension.max_duration",
        "suspension.progression_factor",
        "circuit_breaker.consecutive_failures",
        "circuit_breaker.failure_ratio",
        "circuit_breaker.window",
        "retries.attempts",
        "retries.methods[0]",
        "health_check.path",
        "health_check.interval",
        "health_check.expected_statuses[0]",
    ] {
        assert!(joined.contains(field), "{field} missing in:\n{joined}");
    }
}

#[test]
fn endpoint_objects_are_checked_field_by_field() {
    let yaml = "apis:\n  - name: a\n    context: /a\n    version: v1\n    endpoints:\n      - { url: \"http://127.0.0.1:1\", weight: 101, timeouts: { connect: soon } }\n      - \"ftp://x\"\n    resources: [ { path: \"/*\", methods: [\"*\"] } ]\n";
    let joined = problems(yaml).join("\n");
    assert!(joined.contains("endpoints[0].weight"), "{joined}");
    assert!(joined.contains("endpoints[0].timeouts.connect"), "{joined}");
    assert!(joined.contains("endpoints[1]"), "{joined}");
}

#[test]
fn plain_endpoints_keep_their_wire_form() {
    let e: EndpointSpec = "http://x".into();
    assert_eq!(
        serde_json::to_string(&e).ok().as_deref(),
        Some("\"http://x\"")
    );
    let d = EndpointSpec::Detailed(EndpointDetail {
        url: "http://y".into(),
        weight: Some(3),
        timeouts: None,
    });
    let json = serde_json::to_string(&d).unwrap_or_default();
    assert_eq!(json, r#"{"url":"http://y","weight":3}"#);
}

#[test]
fn the_weighted_schedule_is_smooth_and_proportional() {
    let yaml = "apis:\n  - name: a\n    context: /a\n    version: v1\n    load_balancing: weighted_round_robin\n    endpoints:\n      - { url: \"http://127.0.0.1:1\", weight: 50 }\n      - { url: \"http://127.0.0.1:2\", weight: 10 }\n      - { url: \"http://127.0.0.1:3\", weight: 0 }\n    resources: [ { path: \"/*\", methods: [\"*\"] } ]\n";
    let snap = snapshot(yaml);
    let r = snap.apis[0]
        .resilience
        .as_ref()
        .map(|r| r.schedule.to_vec());
    // 5:1 after dividing by 10; the weight-0 endpoint is a standby, never scheduled.
    assert_eq!(r, Some(vec![0, 0, 0, 1, 0, 0]));
    assert!(snap.apis[0].endpoints.iter().all(|e| e.state.is_some()));
}

#[test]
fn an_api_without_settings_carries_nothing() {
    let snap = snapshot(&api(""));
    let a = &snap.apis[0];
    assert!(a.resilience.is_none() && a.endpoints[0].state.is_none());
}
