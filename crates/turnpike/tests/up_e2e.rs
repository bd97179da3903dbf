//! `turnpike up` (the real binary) runs the gateway `turnpike gateway` runs: a
//! subscription tier of 5 requests a minute, created and subscribed through the REST
//! APIs, lets 5 calls through with `RateLimit` headers and answers the 6th with the error
//! table's 429; the API's CORS setting (Publisher API `corsConfiguration`) answers a
//! preflight before auth; the metrics listener (`--metrics-addr`, a `turnpike gateway`
//! flag `up` takes) serves the counts. `up` prints its gateway token, and a standalone
//! `turnpike gateway --control-plane` following the same control plane with it behaves
//! the same way, request for request.

mod support;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use support::{start_printing, Proc, TempDir, BIN};

const PASSWORD: &str = "up-e2e-admin-password";

/// `curl`: status, headers (lower-case names) and body.
fn call(method: &str, url: &str, args: &[&str], body: Option<&Value>) -> (u16, String, String) {
    let mut cmd = Command::new("curl");
    cmd.args([
        "-s",
        "-D",
        "-",
        "-o",
        "-",
        "-w",
        "\n%{http_code}",
        "-X",
        method,
        url,
    ]);
    cmd.args(args);
    if let Some(b) = body {
        cmd.args(["-H", "content-type: application/json", "-d", &b.to_string()]);
    }
    let out = cmd.output().expect("curl runs");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let (rest, code) = text.rsplit_once('\n').unwrap_or(("", "0"));
    let (head, body) = rest.split_once("\r\n\r\n").unwrap_or((rest, ""));
    (
        code.trim().parse().unwrap_or(0),
        head.to_ascii_lowercase(),
        body.to_owned(),
    )
}

fn rest(method: &str, cp: &str, path: &str, body: Option<Value>) -> Value {
    let auth = format!("admin:{PASSWORD}");
    let (code, _, text) = call(
        method,
        &format!("http://{cp}{path}"),
        &["-u", &auth],
        body.as_ref(),
    );
    assert!((200..300).contains(&code), "{method} {path}: {code} {text}");
    serde_json::from_str(&text).unwrap_or(Value::Null)
}

/// Starts `turnpike up` on free ports; returns it with the lines it printed up to `Try:`.
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
        .args(["--metrics-addr", "127.0.0.1:0", "--data-dir"])
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

/// What a gateway must do for the API `Limited` (5 a minute for the subscriber, CORS for
/// `https://app.example`): the same for `up`'s gateway and a standalone one.
fn enforces_the_control_planes_policies(gw: &str, metrics: &str, bearer: &str) {
    let url = format!("http://{gw}/limited/v1/hello");
    // Wait until the subscription is live at this gateway (the first 200 counts too).
    let start = Instant::now();
    loop {
        let (code, head, _) = call("GET", &url, &["-H", bearer], None);
        if code == 200 {
            assert!(head.contains("\nratelimit"), "{head}");
            break;
        }
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "{gw}: still {code}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    for i in 2..=5 {
        let (code, head, _) = call("GET", &url, &["-H", bearer], None);
        assert_eq!(code, 200, "{gw}: call {i}");
        assert!(head.contains("\nratelimit-policy:"), "{head}");
    }
    let origin = "origin: https://app.example";
    let (code, head, body) = call("GET", &url, &["-H", bearer, "-H", origin], None);
    assert_eq!(code, 429, "{gw}: {body}");
    assert!(head.contains("\nretry-after:"), "{head}");
    assert!(head.contains("\nratelimit"), "{head}");
    // The error response passes through the response hooks: CORS headers on the 429.
    assert!(
        head.contains("\naccess-control-allow-origin: https://app.example"),
        "{head}"
    );
    let err: Value = serde_json::from_str(&body).expect("json error");
    assert_eq!(err["code"], "throttled");
    assert_eq!(err["policy"], "FivePerMin");
    assert!(err["request_id"].is_string(), "{err}");

    // A preflight is answered before auth (no token) and before the quota.
    let (code, head, _) = call(
        "OPTIONS",
        &url,
        &[
            "-H",
            origin,
            "-H",
            "access-control-request-method: GET",
            "-H",
            "access-control-request-headers: authorization",
        ],
        None,
    );
    assert_eq!(code, 204, "{gw}: {head}");
    assert!(
        head.contains("\naccess-control-allow-origin: https://app.example"),
        "{head}"
    );
    assert!(head.contains("\naccess-control-max-age: 600"), "{head}");
    let (code, _, _) = call(
        "OPTIONS",
        &url,
        &[
            "-H",
            "origin: https://evil.example",
            "-H",
            "access-control-request-method: GET",
        ],
        None,
    );
    assert_eq!(code, 403, "{gw}: a preflight from another origin");

    let (code, _, text) = call("GET", &format!("http://{metrics}/metrics"), &[], None);
    assert_eq!(code, 200);
    let count = |class: &str| {
        let series = format!(
            "turnpike_http_requests_total{{api=\"Limited\",version=\"v1\",context=\"/limited\",id=\"/limited/v1\",class=\"{class}\"}} "
        );
        text.lines()
            .find_map(|l| l.strip_prefix(&series))
            .and_then(|n| n.parse::<u64>().ok())
            .unwrap_or_else(|| panic!("{gw}: no {series}in\n{text}"))
    };
    // Five 200s and the preflight's 204; the 429 (the refused preflight may still be
    // in flight to the counters).
    assert_eq!(count("2xx"), 6, "{text}");
    assert!(count("4xx") >= 1, "{text}");
}

#[test]
fn up_runs_the_gateway_a_standalone_gateway_runs() {
    let dir = TempDir::new();
    let (_up, lines) = up(&dir);
    let gw = after(&lines, "gateway listening on http://").to_owned();
    let metrics = after(&lines, "gateway metrics on http://")
        .trim_end_matches("/metrics")
        .to_owned();
    let echo = after(&lines, "demo back end:  http://").to_owned();
    let cp = after(&lines, "control plane:  http://")
        .trim_end_matches("/api/am/openapi.json")
        .to_owned();
    let token = after(&lines, "gateway token:").to_owned();
    assert!(token.len() >= 16, "{token:?}");

    rest(
        "POST",
        &cp,
        "/api/am/admin/v1/throttling/policies/subscription",
        Some(json!({"name": "FivePerMin", "requestCount": 5, "unitSeconds": 60})),
    );
    let api = rest(
        "POST",
        &cp,
        "/api/am/publisher/v1/apis",
        Some(
            json!({"name": "Limited", "context": "/limited", "version": "v1",
            "endpoints": [format!("http://{echo}")],
            "resources": [{"path": "/*", "methods": ["GET"]}],
            "policies": ["FivePerMin"],
            "corsConfiguration": {
                "accessControlAllowOrigins": ["https://app.example"],
                "accessControlAllowHeaders": ["authorization"],
                "accessControlMaxAge": 600}}),
        ),
    );
    assert_eq!(
        api["corsConfiguration"]["accessControlAllowOrigins"][0],
        "https://app.example"
    );
    let api_id = api["id"].as_str().expect("api id");
    rest(
        "POST",
        &cp,
        &format!("/api/am/publisher/v1/apis/change-lifecycle?apiId={api_id}&action=Publish"),
        None,
    );
    // Subscribers are shown the URL of the gateway `up` really started, not a default port.
    let shown = rest(
        "GET",
        &cp,
        &format!("/api/am/devportal/v1/apis/{api_id}"),
        None,
    );
    assert_eq!(
        shown["endpointURLs"][0]["URLs"]["http"],
        format!("http://{gw}/limited/v1"),
        "{shown}"
    );
    let app = rest(
        "POST",
        &cp,
        "/api/am/devportal/v1/applications",
        Some(json!({"name": "five"})),
    );
    let app_id = app["id"].as_str().expect("app id");
    rest(
        "POST",
        &cp,
        "/api/am/devportal/v1/subscriptions",
        Some(json!({"applicationId": app_id, "apiId": api_id, "throttlingPolicy": "FivePerMin"})),
    );
    let keys = rest(
        "POST",
        &cp,
        &format!("/api/am/devportal/v1/applications/{app_id}/generate-keys"),
        Some(json!({})),
    );
    let client = format!(
        "{}:{}",
        keys["consumerKey"].as_str().expect("key"),
        keys["consumerSecret"].as_str().expect("secret")
    );
    let (code, _, text) = call(
        "POST",
        &format!("http://{cp}/oauth2/token"),
        &["-u", &client, "-d", "grant_type=client_credentials"],
        None,
    );
    assert_eq!(code, 200, "{text}");
    let token_json: Value = serde_json::from_str(&text).expect("token json");
    let bearer = format!(
        "authorization: Bearer {}",
        token_json["access_token"].as_str().expect("access token")
    );
    enforces_the_control_planes_policies(&gw, &metrics, &bearer);

    // A standalone gateway following `up`'s control plane with the printed token.
    let standalone_dir = dir.path().join("standalone");
    let (_standalone, found) = start_printing(
        &[
            "gateway",
            "--control-plane",
            &format!("http://{cp}"),
            "--gateway-token",
            &token,
            "--gateway-id",
            "standalone",
            "--http-port",
            "0",
            "--https-port",
            "off",
            "--metrics-addr",
            "127.0.0.1:0",
            "--data-dir",
            standalone_dir.to_str().expect("utf-8 path"),
        ],
        &[],
        &["gateway metrics on http://", "gateway listening on http://"],
    );
    let standalone_metrics = found[0].trim_end_matches("/metrics");
    enforces_the_control_planes_policies(&found[1], standalone_metrics, &bearer);
}
