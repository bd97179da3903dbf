//! The bench kit's secured scenarios as the seeds ran them (issue 32), through the real
//! binary: a matrix whose own gateway is called over HTTPS with HTTP/2 and secured by a
//! pool of JWTs, and a plan that targets a running `turnpike up` by URL with tokens from
//! its built-in key manager (client credentials, one grant per token). Every secured cell
//! ran with throughput and no errors, and the report says how it was sent. Seconds each:
//! one users level, short runs.

mod support;

use std::process::Command;

use serde_json::{json, Value};
use support::{start_printing, TempDir, BIN};

fn matrix(plan: &std::path::Path, out: &std::path::Path) -> Value {
    let status = Command::new(BIN)
        .args([
            "--log",
            "warn",
            "bench",
            "matrix",
            "--threads",
            "1",
            "--plan",
        ])
        .arg(plan)
        .arg("--out")
        .arg(out)
        .args(["--compare", "seed-3.0"])
        .status()
        .expect("run the matrix");
    assert!(status.success(), "matrix: {status}");
    let text = std::fs::read_to_string(out.join("results.json")).expect("results");
    serde_json::from_str(&text).expect("json")
}

/// The measured gateway cell of `scenario`: ran, no errors; returns its summary.
fn ran(results: &Value, scenario: &str) -> Value {
    let cells = results["cells"].as_array().expect("cells");
    let c = cells
        .iter()
        .find(|c| c["via"] == "gateway" && c["scenario"] == scenario)
        .unwrap_or_else(|| panic!("{scenario} missing: {results}"));
    assert!(c["skipped"].is_null(), "{c}");
    let s = c["result"]["summary"].clone();
    assert!(s["samples"].as_u64().unwrap_or(0) > 0, "{c}");
    assert_eq!(s["errors"], 0, "{scenario}: {s}");
    c["result"].clone()
}

#[test]
fn the_matrix_gateway_is_called_over_https_h2_with_a_pool_of_jwts() {
    let dir = TempDir::new();
    let plan = dir.path().join("plan.yaml");
    std::fs::write(
        &plan,
        "name: tiny-secured\nscenarios: [secured-passthrough, transformation]\nusers: [2]\n\
         sizes: [50]\ndelays_ms: [0]\nwarmup: 100ms\nduration: 600ms\n\
         auth: jwt\ntokens: 50\nprotocol: h2\n",
    )
    .expect("plan");
    let out = dir.path().join("out");
    let results = matrix(&plan, &out);
    for scenario in ["secured-passthrough", "transformation"] {
        let r = ran(&results, scenario);
        let url = r["url"].as_str().unwrap_or("");
        assert!(url.starts_with("https://127.0.0.1:"), "{url}");
    }
    let setup = &results["setup"];
    assert_eq!(setup["protocol"], "HTTPS (HTTP/2)");
    let credential = setup["credential"].as_str().unwrap_or("");
    assert!(
        credential.contains("JWT") && credential.contains("50 distinct"),
        "{setup}"
    );
    let md = std::fs::read_to_string(out.join("summary.md")).expect("summary");
    assert!(
        md.contains("Transport to the gateway: HTTPS (HTTP/2)"),
        "{md}"
    );
    assert!(md.contains("Cores: "), "{md}");
    assert!(md.contains("(cross-machine comparison)"), "{md}");
    // The gateway was sent JWTs, not the API key: its config secures the API with OAuth2.
    let cfg = std::fs::read_to_string(out.join("gateway-delay-0.yaml")).expect("config");
    assert!(cfg.contains("auth: { oauth2: true }"), "{cfg}");
}

const PASSWORD: &str = "bench-e2e-admin-password";

/// A REST call to the control plane as the admin (curl): the JSON answer.
fn rest(cp: &str, path: &str, body: Value) -> Value {
    let out = Command::new("curl")
        .args(["-s", "-f", "-u", &format!("admin:{PASSWORD}")])
        .args([
            "-H",
            "content-type: application/json",
            "-d",
            &body.to_string(),
        ])
        .arg(format!("{cp}{path}"))
        .output()
        .expect("curl runs");
    assert!(out.status.success(), "POST {path}: {out:?}");
    serde_json::from_slice(&out.stdout).unwrap_or(Value::Null)
}

#[test]
fn a_plan_targets_turnpike_up_with_tokens_from_its_key_manager() {
    let dir = TempDir::new();
    let data = dir.path().join("up");
    let (_up, found) = start_printing(
        &[
            "up",
            "--cp-port",
            "0",
            "--http-port",
            "0",
            "--https-port",
            "off",
            "--data-dir",
            data.to_str().expect("utf-8 path"),
        ],
        &[("TURNPIKE_ADMIN_PASSWORD", PASSWORD)],
        &["  gateway:", "  control plane:", "  demo back end:"],
    );
    let gw = &found[0];
    let cp = found[1].split("/api/").next().expect("control plane URL");
    let echo = found[2].split_whitespace().next().expect("echo URL");
    // An OAuth2-secured API (the default security) over up's echo, published, an
    // application subscribed to it and its keys.
    let api = rest(
        cp,
        "/api/am/publisher/v1/apis",
        json!({"name": "Bench", "context": "/bench", "version": "v1", "endpoints": [echo],
               "resources": [{"path": "/*", "methods": ["GET", "POST"]}]}),
    );
    let api_id = api["id"].as_str().expect("api id");
    rest(
        cp,
        &format!("/api/am/publisher/v1/apis/change-lifecycle?apiId={api_id}&action=Publish"),
        json!({}),
    );
    let app = rest(
        cp,
        "/api/am/devportal/v1/applications",
        json!({"name": "bench"}),
    );
    let app_id = app["id"].as_str().expect("app id");
    rest(
        cp,
        "/api/am/devportal/v1/subscriptions",
        json!({"applicationId": app_id, "apiId": api_id, "throttlingPolicy": "Unlimited"}),
    );
    let keys = rest(
        cp,
        &format!("/api/am/devportal/v1/applications/{app_id}/generate-keys"),
        json!({}),
    );
    let (ck, cs) = (
        keys["consumerKey"].as_str().expect("key"),
        keys["consumerSecret"].as_str().expect("secret"),
    );
    // The subscription reaches the gateway within a snapshot; wait until it answers.
    support::wait_until("the API live (401 without a token)", || {
        support::get(&format!("{gw}/bench/v1/x")).0 == 401
    });
    let plan = dir.path().join("plan.yaml");
    std::fs::write(
        &plan,
        format!(
            "name: up-target\nscenarios: [secured-passthrough]\nusers: [2]\nsizes: [50]\n\
             delays_ms: [0]\nwarmup: 300ms\nduration: 600ms\ntokens: 3\npin: off\n\
             target:\n  url: {gw}\n  backend: {echo}\n  paths: {{ secured-passthrough: /bench/v1 }}\n\
             \x20 token:\n    client_credentials: {{ url: \"{cp}/oauth2/token\", client_id: \"{ck}\", client_secret: \"{cs}\" }}\n"
        ),
    )
    .expect("plan");
    let out = dir.path().join("out");
    let results = matrix(&plan, &out);
    let r = ran(&results, "secured-passthrough");
    assert_eq!(r["url"], format!("{gw}/bench/v1/bench"));
    assert_eq!(results["gateway"], gw.as_str());
    let credential = results["setup"]["credential"].as_str().unwrap_or("");
    assert!(credential.starts_with("3 token(s)"), "{credential}");
    let direct = results["cells"]
        .as_array()
        .expect("cells")
        .iter()
        .find(|c| c["via"] == "direct")
        .expect("baseline");
    assert_eq!(direct["result"]["summary"]["errors"], 0, "{direct}");
}
