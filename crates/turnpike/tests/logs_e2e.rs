//! Log floods (issue 11, defect 9): with its only upstream down, a gateway answering
//! 300 requests with 502 writes a few WARN lines (one per second and call site, each
//! saying how many were left out), not two per request.

mod support;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::Duration;

use support::{TempDir, BIN};

#[test]
fn a_down_upstream_under_load_logs_a_few_lines_not_one_per_request() {
    let dir = TempDir::new();
    // A port nothing listens on.
    let dead = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let dead_addr = dead.local_addr().expect("addr");
    drop(dead);
    let cfg = dir.path().join("apis.yaml");
    std::fs::write(
        &cfg,
        format!(
            "apis:\n  - name: down\n    context: /down\n    version: v1\n    \
             endpoints: [\"http://{dead_addr}\"]\n    resources:\n      \
             - {{ path: \"/*\", methods: [GET] }}\n"
        ),
    )
    .expect("config");
    let mut child = Command::new(BIN)
        .args(["gateway", "--config"])
        .arg(&cfg)
        .args(["--http-port", "0", "--https-port", "off", "--data-dir"])
        .arg(dir.path().join("data"))
        .env("TURNPIKE_LOG", "warn")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn turnpike");
    let stderr = child.stderr.take().expect("stderr");
    let log = std::thread::spawn(move || {
        BufReader::new(stderr)
            .lines()
            .map_while(Result::ok)
            .collect::<Vec<String>>()
    });
    let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
    let addr = loop {
        let line = lines.next().expect("gateway exited").expect("stdout");
        if let Some(a) = line.strip_prefix("gateway listening on http://") {
            break a.trim().to_owned();
        }
    };
    let guard = support::Proc(child);
    // 300 requests on one keep-alive connection: every one is a 502.
    let url = format!("http://{addr}/down/v1/x");
    let out = Command::new("curl")
        .args(["-s", "-w", "\ncode=%{http_code}\n"])
        .args(std::iter::repeat_n(&url, 300))
        .output()
        .expect("curl");
    let codes = String::from_utf8_lossy(&out.stdout).into_owned();
    let failed = codes.lines().filter(|c| *c == "code=502").count();
    assert_eq!(failed, 300, "{codes}");
    std::thread::sleep(Duration::from_millis(300));
    drop(guard); // kills the gateway: stderr ends
    let log = log.join().expect("log reader");
    let warns: Vec<&String> = log.iter().filter(|l| l.contains("WARN")).collect();
    assert!(!warns.is_empty(), "the outage is logged at all: {log:#?}");
    assert!(
        warns.len() <= 12,
        "{} WARN lines for 300 failed requests: {warns:#?}",
        warns.len()
    );
}

/// Runs a gateway whose only upstream is down with `args` added and stderr to a pipe,
/// sends three requests (each a 502 with a WARN line) and returns what it wrote to stderr.
fn stderr_of_a_gateway_with_a_dead_upstream(args: &[&str]) -> Vec<u8> {
    let dir = TempDir::new();
    let dead = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let dead_addr = dead.local_addr().expect("addr");
    drop(dead);
    let cfg = dir.path().join("apis.yaml");
    std::fs::write(
        &cfg,
        format!(
            "apis:\n  - name: down\n    context: /down\n    version: v1\n    \
             endpoints: [\"http://{dead_addr}\"]\n    resources:\n      \
             - {{ path: \"/*\", methods: [GET] }}\n"
        ),
    )
    .expect("config");
    let mut child = Command::new(BIN)
        .args(["gateway", "--config"])
        .arg(&cfg)
        .args(["--http-port", "0", "--https-port", "off", "--data-dir"])
        .arg(dir.path().join("data"))
        .args(args)
        .env("TURNPIKE_LOG", "info")
        .env_remove("TURNPIKE_LOG_FORMAT")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn turnpike");
    let mut stderr = child.stderr.take().expect("stderr");
    let log = std::thread::spawn(move || {
        let mut all = Vec::new();
        let _ = std::io::Read::read_to_end(&mut stderr, &mut all);
        all
    });
    let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
    let addr = loop {
        let line = lines.next().expect("gateway exited").expect("stdout");
        if let Some(a) = line.strip_prefix("gateway listening on http://") {
            break a.trim().to_owned();
        }
    };
    let guard = support::Proc(child);
    let url = format!("http://{addr}/down/v1/x");
    let out = Command::new("curl")
        .args(["-s", "-w", "%{http_code}\n"])
        .args((0..3).flat_map(|_| ["-o", "/dev/null", url.as_str()]))
        .output()
        .expect("curl");
    assert_eq!(String::from_utf8_lossy(&out.stdout), "502\n502\n502\n");
    std::thread::sleep(Duration::from_millis(300));
    drop(guard);
    log.join().expect("log reader")
}

#[test]
fn logs_to_a_pipe_carry_no_ansi_colour() {
    let log = stderr_of_a_gateway_with_a_dead_upstream(&[]);
    let text = String::from_utf8_lossy(&log);
    assert!(text.contains("WARN"), "the outage is logged: {text}");
    assert!(
        !log.contains(&0x1b),
        "ESC bytes in logs written to a pipe: {text:?}"
    );
}

#[test]
fn log_format_json_writes_one_object_per_line() {
    let log = stderr_of_a_gateway_with_a_dead_upstream(&["--log-format", "json"]);
    let text = String::from_utf8_lossy(&log);
    assert!(!log.contains(&0x1b), "ESC bytes in JSON logs: {text:?}");
    let lines: Vec<&str> = text.lines().filter(|l| !l.is_empty()).collect();
    assert!(!lines.is_empty(), "no log lines at all");
    let mut warns = 0;
    for line in &lines {
        let v: serde_json::Value = serde_json::from_str(line)
            .unwrap_or_else(|e| panic!("not one JSON object per line ({e}): {line}"));
        let level = v["level"]
            .as_str()
            .unwrap_or_else(|| panic!("no level: {line}"));
        assert!(v["timestamp"].is_string(), "no timestamp: {line}");
        assert!(v["fields"].is_object(), "no fields: {line}");
        if level == "WARN" {
            warns += 1;
        }
    }
    assert!(warns >= 1, "the outage's WARN line is among {lines:#?}");
}
