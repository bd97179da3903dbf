//! End to end with the real binary: `turnpike echo` and `turnpike gateway --config` as
//! processes on free loopback ports, curl through the gateway, a config change picked
//! up from the file, and SIGTERM ending the gateway with exit status 0.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_turnpike");

/// A scratch directory removed at the end (no tempfile dependency in this crate).
struct TempDir(std::path::PathBuf);

impl TempDir {
    fn new() -> Self {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0);
        let p = std::env::temp_dir().join(format!("turnpike-e2e-{}-{nanos}", std::process::id()));
        std::fs::create_dir_all(&p).expect("scratch dir");
        TempDir(p)
    }

    fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Kills the child if the test panics before it is stopped.
struct Proc(Child);

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts `turnpike ARGS` and returns it with the address it printed after `prefix`.
fn start(args: &[&str], prefix: &str) -> (Proc, String) {
    let mut child = Command::new(BIN)
        .args(args)
        .env("TURNPIKE_LOG", "warn")
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("spawn turnpike");
    let stdout = child.stdout.take().expect("stdout");
    let mut lines = BufReader::new(stdout).lines();
    let addr = loop {
        let line = lines
            .next()
            .unwrap_or_else(|| panic!("`turnpike {args:?}` exited before printing {prefix}"))
            .expect("read stdout");
        if let Some(a) = line.strip_prefix(prefix) {
            break a.trim().to_owned();
        }
    };
    // Keep draining stdout so the child never blocks on a full pipe.
    std::thread::spawn(move || for _ in lines {});
    (Proc(child), addr)
}

fn curl(url: &str) -> (u16, String) {
    let out = Command::new("curl")
        .args(["-s", "-o", "-", "-w", "\n%{http_code}", "-d", "hello", url])
        .output()
        .expect("curl runs");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let (body, code) = text.rsplit_once('\n').unwrap_or(("", "0"));
    (code.trim().parse().unwrap_or(0), body.to_owned())
}

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
