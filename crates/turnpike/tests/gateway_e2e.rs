//! End to end with the real binary: `turnpike echo` and `turnpike gateway --config` as
//! processes on free loopback ports, curl through the gateway, a config change picked
//! up from the file, and SIGTERM ending the gateway with exit status 0.

mod support;

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use support::{curl, start, TempDir};

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
    let (mut gw, gw_addr) = start(
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
        ],
        "gateway listening on http://",
    );

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
