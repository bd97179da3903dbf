//! End to end with the real binary: `turnpike echo` and `turnpike gateway --config` as
//! processes on free loopback ports, curl through the gateway, a config change picked
//! up from the file, and SIGTERM draining the gateway (readiness fails, requests are
//! still served for the drain delay) and ending it with exit status 0.

mod support;

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use support::{curl, get, start, start_printing, TempDir};

fn write_config(path: &Path, context: &str, echo: &str) {
    let yaml = format!(
        "apis:\n  - name: echo\n    context: {context}\n    version: v1\n    default: true\n    \
         endpoints: [\"http://{echo}\"]\n    resources:\n      \
         - {{ path: \"/*\", methods: [GET, POST, PUT, DELETE] }}\n"
    );
    std::fs::write(path, yaml).expect("write config");
}

#[test]
fn echo_and_gateway_processes_proxy_reload_and_stop_cleanly() {
    let dir = TempDir::new();
    let (_echo, echo_addr) = start(&["echo", "--port", "0"], "echo listening on http://");
    let cfg = dir.path().join("apis.yaml");
    write_config(&cfg, "/echo", &echo_addr);
    let data = dir.path().join("data");
    let (mut gw, found) = start_printing(
        &[
            "gateway",
            "--config",
            cfg.to_str().expect("utf-8 path"),
            "--http-port",
            "0",
            "--https-port",
            "off",
            "--data-dir",
            data.to_str().expect("utf-8 path"),
            "--metrics-addr",
            "127.0.0.1:0",
        ],
        &[("TURNPIKE_DRAIN_DELAY", "3")],
        &["gateway metrics on http://", "gateway listening on http://"],
    );
    let mgmt = found[0].trim_end_matches("/metrics").to_owned();
    let gw_addr = found[1].clone();
    assert_eq!(get(&format!("http://{mgmt}/ready")).0, 200);

    let (code, body) = curl(&format!("http://{gw_addr}/echo/v1/anything"));
    assert_eq!((code, body.as_str()), (200, "hello"));
    let (code, _) = curl(&format!("http://{gw_addr}/echo/anything"));
    assert_eq!(code, 200, "default version");

    // The file changes: the gateway picks it up (polled about once a second).
    write_config(&cfg, "/renamed", &echo_addr);
    let deadline = Instant::now() + Duration::from_secs(20);
    while curl(&format!("http://{gw_addr}/renamed/v1/x")).0 != 200 {
        assert!(Instant::now() < deadline, "reload not picked up");
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(curl(&format!("http://{gw_addr}/echo/v1/x")).0, 404);

    let pid = gw.0.id().to_string();
    let killed = Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .expect("kill");
    assert!(killed.success());
    // Draining: readiness fails at once, traffic is still served for the delay.
    let deadline = Instant::now() + Duration::from_secs(2);
    while get(&format!("http://{mgmt}/ready")).0 != 503 {
        assert!(
            Instant::now() < deadline,
            "readiness still passes after SIGTERM"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(curl(&format!("http://{gw_addr}/renamed/v1/x")).0, 200);
    let deadline = Instant::now() + Duration::from_secs(20);
    let status = loop {
        if let Some(s) = gw.0.try_wait().expect("wait") {
            break s;
        }
        assert!(Instant::now() < deadline, "gateway did not stop on SIGTERM");
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(status.success(), "exit status {status:?}");
}

/// `turnpike gateway ARGS` with its stderr (the log, at `info`) sent line by line to the
/// returned channel; the HTTP address it printed.
fn gateway_logged(args: &[&str]) -> (support::Proc, String, std::sync::mpsc::Receiver<String>) {
    use std::io::{BufRead, BufReader};
    let mut child = Command::new(support::BIN)
        .arg("gateway")
        .args(args)
        .env("TURNPIKE_LOG", "info")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn turnpike");
    let (tx, rx) = std::sync::mpsc::channel();
    let stderr = child.stderr.take().expect("stderr");
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let stdout = child.stdout.take().expect("stdout");
    let mut lines = BufReader::new(stdout).lines();
    let addr = loop {
        let line = lines
            .next()
            .expect("gateway exited before listening")
            .expect("read stdout");
        if let Some(a) = line.strip_prefix("gateway listening on http://") {
            break a.trim().to_owned();
        }
    };
    std::thread::spawn(move || for _ in lines {});
    (support::Proc(child), addr, rx)
}

/// Waits for a log line containing `needle`.
fn wait_log(rx: &std::sync::mpsc::Receiver<String>, needle: &str) -> String {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok(line) if line.contains(needle) => return line,
            Ok(_) => {}
            Err(_) => panic!("no log line with {needle:?}"),
        }
    }
}

#[test]
fn a_truncated_config_file_is_refused_on_reload_and_the_apis_stay() {
    let dir = TempDir::new();
    let (_echo, echo_addr) = start(&["echo", "--port", "0"], "echo listening on http://");
    let cfg = dir.path().join("apis.yaml");
    write_config(&cfg, "/echo", &echo_addr);
    let data = dir.path().join("data");
    let args = |extra: &'static [&'static str]| {
        let mut a = vec![
            "--config".to_owned(),
            cfg.display().to_string(),
            "--http-port".into(),
            "0".into(),
            "--https-port".into(),
            "off".into(),
            "--data-dir".into(),
            data.display().to_string(),
        ];
        a.extend(extra.iter().map(|s| s.to_string()));
        a
    };
    let plain = args(&[]);
    let plain: Vec<&str> = plain.iter().map(String::as_str).collect();
    let (_gw, gw_addr, log) = gateway_logged(&plain);
    assert_eq!(curl(&format!("http://{gw_addr}/echo/v1/x")).0, 200);

    // Truncated to nothing (a failed deploy, a full disk): refused, the API stays.
    std::fs::write(&cfg, "").expect("truncate");
    let line = wait_log(&log, "config refused");
    assert!(line.contains("declares no API"), "{line}");
    assert_eq!(curl(&format!("http://{gw_addr}/echo/v1/x")).0, 200);

    // With --allow-empty, the operator's empty file is served as asked.
    write_config(&cfg, "/echo", &echo_addr);
    let allow = args(&["--allow-empty"]);
    let allow: Vec<&str> = allow.iter().map(String::as_str).collect();
    let (_gw2, gw2_addr, log2) = gateway_logged(&allow);
    assert_eq!(curl(&format!("http://{gw2_addr}/echo/v1/x")).0, 200);
    std::fs::write(&cfg, "apis: []\n").expect("empty list");
    wait_log(&log2, "config reloaded");
    assert_eq!(curl(&format!("http://{gw2_addr}/echo/v1/x")).0, 404);
}
