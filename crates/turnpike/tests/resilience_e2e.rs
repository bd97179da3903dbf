//! Endpoint resilience through the control plane with the real binary: `turnpike apply`
//! of `examples/resilience.yaml` (one endpoint written as an object with a weight) to
//! `turnpike control-plane`; a `turnpike gateway --control-plane` following it serves
//! every GET while the other endpoint is down and suspends that one (its `/metrics`
//! says so) and reports the states to the control plane, whose `/gateways` lists them
//! under the gateway; the export gives the section and the endpoint object back; a bad
//! `resilience:` is refused by apply with the field named.

mod support;

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use serde_json::Value;
use support::{get, start, start_printing, wait_for_status, Proc, TempDir, BIN};

const TOKEN: &str = "resilience-e2e-gateway-token";
const PASSWORD: &str = "resilience-e2e-password";

/// A gateway following `cp`, with `/metrics` on its own listener: (it, its address,
/// the metrics address).
fn following_gateway(cp: &str, data: &Path) -> (Proc, String, String) {
    let (proc, mut printed) = start_printing(
        &[
            "gateway",
            "--control-plane",
            &format!("http://{cp}"),
            "--gateway-token",
            TOKEN,
            "--gateway-id",
            "gw-1",
            "--http-port",
            "0",
            "--https-port",
            "off",
            "--metrics-addr",
            "127.0.0.1:0",
            "--data-dir",
            data.to_str().expect("utf-8 path"),
        ],
        &[],
        &["gateway metrics on http://", "gateway listening on http://"],
    );
    let gw = printed.pop().expect("listening address");
    let metrics = printed.pop().expect("metrics address");
    (proc, gw, metrics.trim_end_matches("/metrics").to_owned())
}

fn apply(file: &Path, cp: &str) -> (bool, String) {
    let out = Command::new(BIN)
        .args(["apply", "-f", file.to_str().expect("utf-8 path")])
        .args([
            "--control-plane",
            &format!("http://{cp}"),
            "--user",
            "admin",
        ])
        .env("TURNPIKE_PASSWORD", PASSWORD)
        .env("TURNPIKE_LOG", "warn")
        .output()
        .expect("run turnpike apply");
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), said)
}

/// A port on 127.0.0.1 where nothing listens (bound, then released).
fn closed_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    l.local_addr().expect("addr").port()
}

/// The value of the suspensions counter of `endpoint` in a scrape.
fn suspensions(scrape: &str, endpoint: &str) -> u64 {
    let label = format!("endpoint=\"{endpoint}\"");
    scrape
        .lines()
        .find(|l| {
            l.starts_with("turnpike_upstream_endpoint_suspensions_total") && l.contains(&label)
        })
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no suspensions line for {endpoint}:\n{scrape}"))
}

/// The endpoint `url` of gateway `gw-1` in a `/gateways` answer.
fn endpoint<'a>(gateways: &'a Value, url: &str) -> &'a Value {
    gateways["list"]
        .as_array()
        .and_then(|l| l.iter().find(|g| g["id"] == "gw-1"))
        .and_then(|g| g["endpoints"].as_array())
        .and_then(|e| e.iter().find(|e| e["endpoint"] == url))
        .unwrap_or(&Value::Null)
}

#[test]
fn apply_carries_resilience_to_a_gateway_that_suspends_a_dead_endpoint() {
    let dir = TempDir::new();
    let (_echo, echo) = start(&["echo", "--port", "0"], "echo listening on http://");
    let (_cp, cp) = support::sqlite_control_plane(dir.path(), "turnpike.db", TOKEN, PASSWORD);
    let (_gw, gw, metrics) = following_gateway(&cp, &dir.path().join("gw"));

    let example = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../examples/resilience.yaml"
    ))
    .expect("examples/resilience.yaml");
    let dead = format!("http://127.0.0.1:{}", closed_port());
    let yaml = example
        .replace("\"http://127.0.0.1:9001\"", &format!("\"{dead}\""))
        .replace(
            "- \"http://127.0.0.1:9002\"",
            &format!(
                "- {{ url: \"http://{echo}\", weight: 2, timeouts: {{ connect: 2s, read: 10s }} }}"
            ),
        );
    assert!(yaml.contains(&dead) && yaml.contains("weight: 2"), "{yaml}");
    let file = dir.path().join("resilience.yaml");
    std::fs::write(&file, &yaml).expect("write");
    let (ok, said) = apply(&file, &cp);
    assert!(ok, "apply failed: {said}");

    let url = format!("http://{gw}/resilient/v1/items");
    wait_for_status(&url, 200, Duration::from_secs(10));
    for _ in 0..10 {
        assert_eq!(get(&url).0, 200);
    }
    let scrape = Command::new("curl")
        .args(["-s", "-f", &format!("http://{metrics}/metrics")])
        .output()
        .expect("curl");
    let scrape = String::from_utf8_lossy(&scrape.stdout);
    assert!(suspensions(&scrape, &dead) >= 1, "{scrape}");
    assert_eq!(suspensions(&scrape, &format!("http://{echo}")), 0);

    // The gateway reports the states to the control plane on its own (no snapshot was
    // installed since the one that reported every endpoint active): the Admin REST
    // API lists them under the gateway, labelled as the per-API metrics are.
    let gateways = format!("http://{cp}/api/am/admin/v1/gateways");
    let mut seen = Value::Null;
    support::wait_until("the dead endpoint reported to the control plane", || {
        let out = Command::new("curl")
            .args(["-s", "-u", &format!("admin:{PASSWORD}"), &gateways])
            .output()
            .expect("curl");
        seen = serde_json::from_slice(&out.stdout).unwrap_or_default();
        let state = |url: &str| endpoint(&seen, url)["state"].as_str().map(str::to_owned);
        matches!(state(&dead).as_deref(), Some("suspended" | "unhealthy"))
            && state(&format!("http://{echo}")).as_deref() == Some("active")
    });
    let reported = endpoint(&seen, &dead);
    assert_eq!(
        (&reported["api"], &reported["id"], &reported["pool"]),
        (
            &Value::from("resilient"),
            &Value::from("/resilient/v1"),
            &Value::from("production")
        ),
        "{seen}"
    );
    assert!(reported["suspensions"].as_u64() >= Some(1), "{seen}");
    assert!(
        reported["state"] != "suspended" || reported["untilMs"].as_u64().is_some(),
        "a suspension says when it ends: {seen}"
    );

    // The export gives back what was applied.
    let out = Command::new("curl")
        .args(["-s", "-u", &format!("admin:{PASSWORD}")])
        .args(["-H", "accept: application/json"])
        .arg(format!("http://{cp}/api/am/admin/v1/export"))
        .output()
        .expect("curl");
    let exported: Value = serde_json::from_slice(&out.stdout).expect("export is JSON");
    let api = &exported["apis"][0];
    assert_eq!(
        api["resilience"]["suspension"]["initial_duration"], "5s",
        "{exported}"
    );
    assert_eq!(api["resilience"]["health_check"]["path"], "/health");
    assert_eq!(api["endpoints"][0], dead.as_str());
    assert_eq!(api["endpoints"][1]["weight"], 2, "{exported}");
    assert_eq!(api["endpoints"][1]["timeouts"]["read"], "10s");

    // A window outside 2-1000: refused with the field named, the gateway unchanged.
    let bad = yaml.replace(
        "consecutive_failures: 1 }",
        "consecutive_failures: 1, window: 5000 }",
    );
    std::fs::write(&file, &bad).expect("write");
    let (ok, said) = apply(&file, &cp);
    assert!(!ok, "{said}");
    assert!(said.contains("resilience.circuit_breaker.window"), "{said}");
    assert_eq!(get(&url).0, 200);
}
