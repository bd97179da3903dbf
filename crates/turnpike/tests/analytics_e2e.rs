//! Analytics through the real binary: `turnpike up` ships its gateway's events to its
//! own control plane, and the Admin and Publisher analytics APIs answer with them (plus
//! the pipeline's counters on `/metrics`); a DB-less `turnpike gateway --analytics-file`
//! writes one JSON line per request, here under WSO2's field names.

mod support;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;
use support::{Proc, TempDir, BIN};

const PASSWORD: &str = "analytics-e2e-admin-password";

fn get_json(url: &str, auth: Option<&str>) -> (u16, Value) {
    let mut cmd = Command::new("curl");
    cmd.args(["-s", "-o", "-", "-w", "\n%{http_code}", url]);
    if let Some(a) = auth {
        cmd.args(["-u", a]);
    }
    let out = cmd.output().expect("curl runs");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let (body, code) = text.rsplit_once('\n').unwrap_or(("", "0"));
    (
        code.trim().parse().unwrap_or(0),
        serde_json::from_str(body).unwrap_or(Value::Null),
    )
}

fn status(url: &str) -> u16 {
    support::get(url).0
}

/// `turnpike up` on free ports; the lines it printed up to `Try:`.
fn up(dir: &TempDir) -> (Proc, Vec<String>) {
    let mut child = Command::new(BIN)
        .args([
            "up",
            "--cp-port",
            "0",
            "--http-port",
            "0",
            "--https-port",
            "off",
        ])
        .args([
            "--metrics-addr",
            "127.0.0.1:0",
            "--gateway-id",
            "edge-1",
            "--analytics-interval",
            "0.3",
            "--data-dir",
        ])
        .arg(dir.path())
        .env("TURNPIKE_ADMIN_PASSWORD", PASSWORD)
        .env("TURNPIKE_LOG", "warn")
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("spawn turnpike up");
    let stdout = child.stdout.take().expect("stdout");
    let mut lines = BufReader::new(stdout).lines();
    let mut seen = Vec::new();
    loop {
        let line = lines
            .next()
            .expect("`turnpike up` exited before it was up")
            .expect("read stdout");
        let done = line.starts_with("Try:");
        seen.push(line);
        if done {
            break;
        }
    }
    std::thread::spawn(move || for _ in lines {});
    (Proc(child), seen)
}

fn after<'a>(lines: &'a [String], prefix: &str) -> &'a str {
    lines
        .iter()
        .find_map(|l| l.trim_start().strip_prefix(prefix))
        .map(|s| s.split_whitespace().next().unwrap_or(""))
        .unwrap_or_else(|| panic!("no line starting with {prefix:?} in {lines:#?}"))
}

#[test]
fn up_records_analytics_that_the_rest_api_reports() {
    let dir = TempDir::new();
    let (_up, lines) = up(&dir);
    let gw = after(&lines, "gateway:")
        .trim_start_matches("http://")
        .to_string();
    let cp = after(&lines, "control plane:")
        .trim_start_matches("http://")
        .trim_end_matches("/api/am/openapi.json")
        .to_string();
    let admin = format!("admin:{PASSWORD}");
    for _ in 0..5 {
        assert_eq!(status(&format!("http://{gw}/demo/v1/hello")), 200);
    }
    for _ in 0..2 {
        assert_eq!(status(&format!("http://{gw}/nowhere")), 404);
    }
    // The gateway ships its rollups every 0.3 s: poll the Admin API until all 7 arrived.
    let summary = format!("http://{cp}/api/am/admin/v1/analytics/summary");
    let deadline = Instant::now() + Duration::from_secs(20);
    let totals = loop {
        let (code, body) = get_json(&summary, Some(&admin));
        assert_eq!(code, 200, "{body}");
        if body["totals"]["requests"] == 7 || Instant::now() > deadline {
            break body["totals"].clone();
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    assert_eq!(totals["requests"], 7, "{totals}");
    assert_eq!(totals["errors"], 2, "{totals}");

    let (_, top) = get_json(
        &format!("http://{cp}/api/am/admin/v1/analytics/top?by=api"),
        Some(&admin),
    );
    let demo = top["list"]
        .as_array()
        .and_then(|l| l.iter().find(|e| e["apiName"] == "Demo").cloned())
        .unwrap_or_else(|| panic!("no Demo in {top}"));
    assert_eq!(demo["requests"], 5, "{top}");
    assert_eq!(demo["apiContext"], "/demo");
    assert!(demo["latency"]["backend"]["count"] == 5, "{demo}");

    let (_, errors) = get_json(
        &format!("http://{cp}/api/am/admin/v1/analytics/errors"),
        Some(&admin),
    );
    assert_eq!(errors["list"][0]["outcome"], "not_found", "{errors}");
    assert_eq!(errors["list"][0]["requests"], 2, "{errors}");

    // The Publisher's view of the demo API.
    let (_, apis) = get_json(
        &format!("http://{cp}/api/am/publisher/v1/apis?context=/demo"),
        Some(&admin),
    );
    let id = apis["list"][0]["id"]
        .as_str()
        .expect("the demo API")
        .to_string();
    let (code, traffic) = get_json(
        &format!("http://{cp}/api/am/publisher/v1/apis/{id}/analytics/traffic"),
        Some(&admin),
    );
    assert_eq!(code, 200, "{traffic}");
    let served: u64 = traffic["points"]
        .as_array()
        .map(|p| p.iter().filter_map(|x| x["requests"].as_u64()).sum())
        .unwrap_or(0);
    assert_eq!(served, 5, "{traffic}");

    // The pipeline's counters on the gateway's /metrics.
    let metrics = after(&lines, "gateway metrics on http://");
    let (code, text) = support::get(&format!("http://{metrics}"));
    assert_eq!(code, 200);
    let written = text
        .lines()
        .find_map(|l| l.strip_prefix("turnpike_analytics_events_total{result=\"written\"} "))
        .and_then(|n| n.parse::<u64>().ok());
    assert_eq!(written, Some(7), "{text}");
    assert!(text.contains("turnpike_analytics_events_total{result=\"dropped\"} 0"));
}

#[test]
fn a_db_less_gateway_writes_json_lines_under_wso2_names() {
    let dir = TempDir::new();
    let (_echo, echo) = support::start(&["echo", "--port", "0"], "echo listening on http://");
    let cfg = dir.path().join("apis.yaml");
    std::fs::write(
        &cfg,
        format!(
            "apis:\n  - name: pets\n    context: /pets\n    version: v1\n    \
             endpoints: [\"http://{echo}\"]\n    resources: [ {{ path: \"/items/{{id}}\", methods: [GET] }} ]\n"
        ),
    )
    .expect("write config");
    let file = dir.path().join("events.jsonl");
    let data = dir.path().join("data");
    let (_gw, gw) = support::start_file_gateway(
        &cfg,
        &data,
        &[
            "--analytics-file",
            file.to_str().expect("utf-8"),
            "--analytics-format",
            "wso2",
        ],
    );
    assert_eq!(status(&format!("http://{gw}/pets/v1/items/7?size=5")), 200);
    assert_eq!(status(&format!("http://{gw}/pets/v1/other")), 404);
    let deadline = Instant::now() + Duration::from_secs(10);
    let events: Vec<Value> = loop {
        let text = std::fs::read_to_string(&file).unwrap_or_default();
        let events: Vec<Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).expect("a JSON line"))
            .collect();
        if events.len() >= 2 || Instant::now() > deadline {
            break events;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(events.len(), 2, "{events:#?}");
    let ok = &events[0];
    assert_eq!(ok["apiName"], "pets");
    assert_eq!(ok["apiResourceTemplate"], "/items/{id}");
    assert_eq!(ok["apiMethod"], "GET");
    assert_eq!(ok["proxyResponseCode"], 200);
    assert_eq!(ok["targetResponseCode"], 200);
    assert_eq!(ok["responseSize"], 5);
    assert_eq!(ok["eventType"], "response");
    assert_eq!(ok["regionId"], "gateway");
    let missing = &events[1];
    assert_eq!(missing["proxyResponseCode"], 404);
    assert_eq!(missing["eventType"], "fault");
    assert_eq!(missing["errorMessage"], "not_found");
}

#[test]
fn a_db_less_gateway_writes_rollup_rows() {
    let dir = TempDir::new();
    let (_echo, echo) = support::start(&["echo", "--port", "0"], "echo listening on http://");
    let cfg = dir.path().join("apis.yaml");
    std::fs::write(
        &cfg,
        format!(
            "apis:\n  - name: pets\n    context: /pets\n    version: v1\n    \
             endpoints: [\"http://{echo}\"]\n    resources: [ {{ path: \"/items/{{id}}\", methods: [GET] }} ]\n"
        ),
    )
    .expect("write config");
    let file = dir.path().join("rollups.jsonl");
    let data = dir.path().join("data");
    let (_gw, gw) = support::start_file_gateway(
        &cfg,
        &data,
        &[
            "--gateway-id",
            "edge-9",
            "--analytics-file",
            file.to_str().expect("utf-8"),
            "--analytics-format",
            "rollups",
            "--analytics-interval",
            "0.2",
        ],
    );
    for i in 0..3 {
        assert_eq!(
            status(&format!("http://{gw}/pets/v1/items/{i}?size=5")),
            200
        );
    }
    assert_eq!(status(&format!("http://{gw}/pets/v1/other")), 404);
    let deadline = Instant::now() + Duration::from_secs(10);
    let rows: Vec<Value> = loop {
        let text = std::fs::read_to_string(&file).unwrap_or_default();
        let rows: Vec<Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).expect("a JSON line"))
            .collect();
        let n: u64 = rows.iter().filter_map(|r| r["requests"].as_u64()).sum();
        if n >= 4 || Instant::now() > deadline {
            break rows;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let served: Vec<&Value> = rows.iter().filter(|r| r["outcome"] == "served").collect();
    let served_n: u64 = served.iter().filter_map(|r| r["requests"].as_u64()).sum();
    assert_eq!(served_n, 3, "{rows:#?}");
    let row = served[0];
    assert_eq!(row["period"], 60);
    assert_eq!(row["gateway"], "edge-9");
    assert_eq!(row["api_name"], "pets");
    assert_eq!(row["resource"], "/items/{id}");
    assert_eq!(row["status_class"], 2);
    assert!(
        row["lat_total"].as_str().is_some_and(|h| h.contains(':')),
        "{row}"
    );
    let missing: Vec<&Value> = rows
        .iter()
        .filter(|r| r["outcome"] == "not_found")
        .collect();
    assert_eq!(missing.len(), 1, "{rows:#?}");
    assert_eq!(missing[0]["reason"], "not_found");
    assert_eq!(missing[0]["errors"], 1);
}

/// The outside test lost 200-521 requests' analytics per gateway in an 8 s control-plane
/// outage (two retries, then dropped). A follower gateway under traffic while its control
/// plane is killed for several seconds, then started again: every request arrives, none
/// is counted dropped.
#[test]
fn analytics_made_while_the_control_plane_is_down_arrive_once_it_is_back() {
    const TOKEN: &str = "analytics-outage-token";
    let dir = TempDir::new();
    let db = format!("sqlite://{}", dir.path().join("turnpike.db").display());
    let control_plane = |port: &str| {
        support::start_env(
            &[
                "control-plane",
                "--database",
                &db,
                "--port",
                port,
                "--gateway-token",
                TOKEN,
            ],
            &[("TURNPIKE_ADMIN_PASSWORD", PASSWORD)],
            "control plane listening on http://",
        )
    };
    let (_echo, echo) = support::start(&["echo", "--port", "0"], "echo listening on http://");
    let (cp_proc, cp) = control_plane("0");
    let data = dir.path().join("gw");
    let (_gw, found) = support::start_printing(
        &[
            "gateway",
            "--control-plane",
            &format!("http://{cp}"),
            "--gateway-token",
            TOKEN,
            "--http-port",
            "0",
            "--https-port",
            "off",
            "--metrics-addr",
            "127.0.0.1:0",
            "--analytics-interval",
            "0.3",
            "--data-dir",
            data.to_str().expect("utf-8 path"),
        ],
        &[],
        &["gateway metrics on http://", "gateway listening on http://"],
    );
    let (metrics, gw) = (found[0].clone(), found[1].clone());
    let file = dir.path().join("apis.yaml");
    let yaml = format!(
        "apis:\n  - name: kept\n    context: /kept\n    version: v1\n    \
         endpoints: [\"http://{echo}\"]\n    resources:\n      \
         - {{ path: \"/*\", methods: [GET, POST] }}\n"
    );
    support::apply_yaml(&file, &yaml, &cp, PASSWORD);
    support::wait_for_status(
        &format!("http://{gw}/kept/v1/x"),
        200,
        Duration::from_secs(15),
    );

    let requests = |cp: &str| {
        let url = format!("http://{cp}/api/am/admin/v1/analytics/summary");
        let (_, body) = get_json(&url, Some(&format!("admin:{PASSWORD}")));
        body["totals"]["requests"].as_u64().unwrap_or(0)
    };
    let wait_requests = |cp: &str, want: u64| {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let got = requests(cp);
            if got >= want || Instant::now() > deadline {
                return got;
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    };
    // Everything sent so far shipped (the count stays put across a few intervals).
    let mut before = wait_requests(&cp, 1);
    loop {
        std::thread::sleep(Duration::from_secs(1));
        let now = requests(&cp);
        if now == before {
            break;
        }
        before = now;
    }

    // The control plane dies; traffic goes on for 6 s (shipped every 0.3 s, refused).
    let cp_port = cp.rsplit(':').next().expect("port").to_owned();
    drop(cp_proc);
    let mut sent = 0u64;
    let until = Instant::now() + Duration::from_secs(6);
    while Instant::now() < until {
        assert_eq!(status(&format!("http://{gw}/kept/v1/x")), 200);
        sent += 1;
        std::thread::sleep(Duration::from_millis(50));
    }
    let (_cp, cp) = control_plane(&cp_port);
    let got = wait_requests(&cp, before + sent);
    assert_eq!(got, before + sent, "analytics lost in the outage");
    let (_, text) = support::get(&format!("http://{metrics}"));
    for reason in ["age", "size", "io"] {
        let line = format!("turnpike_analytics_spool_dropped_total{{reason=\"{reason}\"}} 0");
        assert!(text.contains(&line), "{line} not in {text}");
    }
}
