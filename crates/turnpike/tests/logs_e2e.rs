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
