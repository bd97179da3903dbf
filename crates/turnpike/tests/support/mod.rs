//! Shared by the binary's end-to-end tests: scratch dirs, child processes that print the
//! address they bound, and curl.
#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};

pub const BIN: &str = env!("CARGO_BIN_EXE_turnpike");

/// A scratch directory removed at the end (no tempfile dependency in this crate).
pub struct TempDir(std::path::PathBuf);

impl TempDir {
    pub fn new() -> Self {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0);
        let p = std::env::temp_dir().join(format!("turnpike-e2e-{}-{nanos}", std::process::id()));
        std::fs::create_dir_all(&p).expect("scratch dir");
        TempDir(p)
    }

    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Kills the child if the test panics before it is stopped.
pub struct Proc(pub Child);

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts `turnpike ARGS` and returns it with the address it printed after `prefix`.
pub fn start(args: &[&str], prefix: &str) -> (Proc, String) {
    start_env(args, &[], prefix)
}

/// [`start`] with extra environment variables.
pub fn start_env(args: &[&str], env: &[(&str, &str)], prefix: &str) -> (Proc, String) {
    let mut child = Command::new(BIN)
        .args(args)
        .env("TURNPIKE_LOG", "warn")
        .envs(env.iter().copied())
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

/// A control plane on SQLite in `dir` (`turnpike.db` unless `file` says otherwise) with
/// this gateway token and admin password: (process, `host:port`).
pub fn sqlite_control_plane(dir: &Path, file: &str, token: &str, password: &str) -> (Proc, String) {
    let db = format!("sqlite://{}", dir.join(file).display());
    start_env(
        &[
            "control-plane",
            "--database",
            &db,
            "--port",
            "0",
            "--gateway-token",
            token,
        ],
        &[("TURNPIKE_ADMIN_PASSWORD", password)],
        "control plane listening on http://",
    )
}

pub fn curl(url: &str) -> (u16, String) {
    let out = Command::new("curl")
        .args(["-s", "-o", "-", "-w", "\n%{http_code}", "-d", "hello", url])
        .output()
        .expect("curl runs");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let (body, code) = text.rsplit_once('\n').unwrap_or(("", "0"));
    (code.trim().parse().unwrap_or(0), body.to_owned())
}

/// Polls `url` until it answers `code`, or panics after `limit`.
pub fn wait_for_status(url: &str, code: u16, limit: std::time::Duration) {
    let deadline = std::time::Instant::now() + limit;
    loop {
        let got = curl(url).0;
        if got == code {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{url} still answers {got}, expected {code}"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

/// Starts `turnpike ARGS` (with `env`) and returns what it printed after each of
/// `prefixes`, in the order given (each line is matched against the next prefix wanted).
pub fn start_printing(
    args: &[&str],
    env: &[(&str, &str)],
    prefixes: &[&str],
) -> (Proc, Vec<String>) {
    let mut child = Command::new(BIN)
        .args(args)
        .env("TURNPIKE_LOG", "warn")
        .envs(env.iter().copied())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("spawn turnpike");
    let stdout = child.stdout.take().expect("stdout");
    let mut lines = BufReader::new(stdout).lines();
    let mut found = Vec::new();
    for prefix in prefixes {
        let value = loop {
            let line = lines
                .next()
                .unwrap_or_else(|| panic!("`turnpike {args:?}` exited before printing {prefix}"))
                .expect("read stdout");
            if let Some(a) = line.strip_prefix(prefix) {
                break a.trim().to_owned();
            }
        };
        found.push(value);
    }
    std::thread::spawn(move || for _ in lines {});
    (Proc(child), found)
}

/// `GET url`: the status and the body.
pub fn get(url: &str) -> (u16, String) {
    let out = Command::new("curl")
        .args(["-s", "-o", "-", "-w", "\n%{http_code}", url])
        .output()
        .expect("curl runs");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let (body, code) = text.rsplit_once('\n').unwrap_or(("", "0"));
    (code.trim().parse().unwrap_or(0), body.to_owned())
}

/// Starts a DB-less `turnpike gateway` on `cfg` (plain HTTP on a free port, no HTTPS,
/// state under `data_dir`), with `extra` flags; returns it and its address.
pub fn start_file_gateway(cfg: &Path, data_dir: &Path, extra: &[&str]) -> (Proc, String) {
    let mut args = vec![
        "gateway",
        "--config",
        cfg.to_str().expect("utf-8 path"),
        "--http-port",
        "0",
        "--https-port",
        "off",
        "--data-dir",
        data_dir.to_str().expect("utf-8 path"),
    ];
    args.extend_from_slice(extra);
    start(&args, "gateway listening on http://")
}

/// Writes `yaml` to `file` and reconciles it into the control plane at `cp`
/// (`turnpike apply`, signed in as `admin` with `password`).
pub fn apply_yaml(file: &Path, yaml: &str, cp: &str, password: &str) {
    std::fs::write(file, yaml).expect("write apis file");
    let out = Command::new(BIN)
        .args(["apply", "-f", file.to_str().expect("utf-8 path")])
        .args([
            "--control-plane",
            &format!("http://{cp}"),
            "--user",
            "admin",
        ])
        .env("TURNPIKE_PASSWORD", password)
        .env("TURNPIKE_LOG", "warn")
        .output()
        .expect("run turnpike apply");
    assert!(out.status.success(), "apply failed: {out:?}");
}

/// The echo back end, a control plane (SQLite in `dir`, admin `password`) and a gateway
/// following it with `token`.
pub struct Stack {
    pub _procs: Vec<Proc>,
    pub echo: String,
    pub cp: String,
    pub gw: String,
}

pub fn cp_stack(dir: &TempDir, token: &str, password: &str) -> Stack {
    let (echo_proc, echo) = start(&["echo", "--port", "0"], "echo listening on http://");
    let (cp_proc, cp) = sqlite_control_plane(dir.path(), "cp.db", token, password);
    let gw_data = dir.path().join("gw");
    let (gw_proc, gw) = start(
        &[
            "gateway",
            "--control-plane",
            &format!("http://{cp}"),
            "--gateway-token",
            token,
            "--gateway-id",
            "gw-1",
            "--http-port",
            "0",
            "--https-port",
            "off",
            "--data-dir",
            gw_data.to_str().expect("utf-8 path"),
        ],
        "gateway listening on http://",
    );
    Stack {
        _procs: vec![echo_proc, cp_proc, gw_proc],
        echo,
        cp,
        gw,
    }
}
/// Polls `ok` every 50 ms until it holds, or panics after 15 s naming `what`.
pub fn wait_until(what: &str, mut ok: impl FnMut() -> bool) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(15);
    while !ok() {
        assert!(
            std::time::Instant::now() < deadline,
            "timed out waiting for {what}"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

/// A gateway following the control plane at `cp_url` (plain HTTP on `http_port`, no
/// HTTPS, metrics on a free port, state under `data`), with `extra` flags: (process,
/// traffic address, management address).
pub fn follower(
    data: &Path,
    cp_url: &str,
    token: &str,
    http_port: &str,
    extra: &[&str],
) -> (Proc, String, String) {
    let mut args = vec![
        "gateway",
        "--control-plane",
        cp_url,
        "--gateway-token",
        token,
        "--http-port",
        http_port,
        "--https-port",
        "off",
        "--metrics-addr",
        "127.0.0.1:0",
        "--data-dir",
        data.to_str().expect("utf-8 path"),
    ];
    args.extend_from_slice(extra);
    let (p, found) = start_printing(
        &args,
        &[],
        &["gateway metrics on http://", "gateway listening on http://"],
    );
    let mgmt = found[0].trim_end_matches("/metrics").to_owned();
    (p, found[1].clone(), mgmt)
}

/// `POST` a JSON `body` with curl (and `headers`, each `name: value`), as an MCP client
/// does (it accepts JSON or an event stream): the status, the head lower-cased, the body.
pub fn post_json(url: &str, headers: &[&str], body: &str) -> (u16, String, String) {
    let mut cmd = Command::new("curl");
    cmd.args(["-s", "-D", "-", "-o", "-", "-w", "\n%{http_code}"]);
    cmd.args(["-H", "content-type: application/json"]);
    cmd.args(["-H", "accept: application/json, text/event-stream"]);
    for h in headers {
        cmd.args(["-H", h]);
    }
    let out = cmd.args(["-d", body, url]).output().expect("curl runs");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let (rest, code) = text.rsplit_once('\n').unwrap_or(("", "0"));
    let (head, body) = rest.split_once("\r\n\r\n").unwrap_or((rest, ""));
    (
        code.trim().parse().unwrap_or(0),
        head.to_ascii_lowercase(),
        body.to_owned(),
    )
}

/// examples/ai.yaml with its provider at `echo`, and the key its comment names.
pub fn ai_example(echo: &str) -> (String, String) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let text = std::fs::read_to_string(root.join("examples/ai.yaml")).expect("examples/ai.yaml");
    let key = text
        .lines()
        .find_map(|l| l.strip_prefix("# example key: "))
        .expect("the example names its key")
        .trim()
        .to_owned();
    (text.replace("127.0.0.1:9000", echo), key)
}

/// The official MCP Python SDK's server as a remote MCP server (tests/py/mcp_remote.py)
/// over `transport` (`streamable_http`, or `sse`: the legacy HTTP+SSE transport): the
/// process and its URL. Each tool it runs is appended to `log`.
pub fn mcp_remote(name: &str, log: &Path, transport: &str) -> (Proc, String) {
    let mut child = Command::new("python3")
        .arg(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/py/mcp_remote.py"
        ))
        .args([name, log.to_str().expect("utf-8"), transport])
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("python3 runs (scripts/install-test-deps.sh installs the mcp SDK)");
    let stdout = child.stdout.take().expect("stdout");
    let mut lines = BufReader::new(stdout).lines();
    let url = loop {
        let line = lines
            .next()
            .expect("the remote printed its URL")
            .expect("read stdout");
        if let Some(u) = line.strip_prefix("remote mcp on ") {
            break u.trim().to_owned();
        }
    };
    std::thread::spawn(move || for _ in lines {});
    (Proc(child), url)
}

/// The official MCP Python SDK's client running `steps` against `url` as the API key
/// `key` (tests/py/mcp_steps.py): what it saw, as JSON.
pub fn mcp_steps(url: &str, key: &str, steps: &serde_json::Value) -> serde_json::Value {
    let out = Command::new("python3")
        .arg(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/py/mcp_steps.py"
        ))
        .args([url, key, &steps.to_string()])
        .output()
        .expect("python3 runs");
    assert!(
        out.status.success(),
        "mcp_steps.py failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("json from the script")
}

/// The command lines of running processes that name `path` (Linux's /proc).
pub fn processes_naming(path: &str) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .bytes()
                .all(|b| b.is_ascii_digit())
        })
        .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok())
        .map(|c| String::from_utf8_lossy(&c).replace('\0', " "))
        .filter(|c| c.contains(path))
        .collect()
}

/// Runs `bench/SCRIPT` with `args` and `env`, its work directory (`TMPDIR`) under `dir`,
/// and returns its standard output, after checking that it succeeded and that nothing it
/// started is still running (a process naming `dir`: every config, data directory or
/// prefix it made is there).
pub fn run_bench_script(
    dir: &TempDir,
    script: &str,
    args: &[&str],
    env: &[(&str, &str)],
) -> String {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");
    let run = std::process::Command::new("bash")
        .arg(format!("{root}/bench/{script}"))
        .args(args)
        .envs(env.iter().copied())
        .env("TMPDIR", dir.path())
        .output()
        .unwrap_or_else(|e| panic!("run bench/{script}: {e}"));
    let out = String::from_utf8_lossy(&run.stdout).into_owned();
    assert!(
        run.status.success(),
        "{script}: {out}\n{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let left = processes_naming(&dir.path().to_string_lossy());
    assert!(left.is_empty(), "{script} left running: {left:?}");
    out
}

/// A number a bench script printed (the test fails, naming it, when it is not one).
pub fn number(text: &str) -> f64 {
    text.parse()
        .unwrap_or_else(|_| panic!("a number: {text:?}"))
}

/// The ratios a bench script's line prints (`1.234x`, also followed by `,` or `;`).
pub fn ratios_in(line: &str) -> Vec<f64> {
    line.split_whitespace()
        .filter_map(|w| {
            w.trim_end_matches([',', ';'])
                .strip_suffix('x')?
                .parse()
                .ok()
        })
        .collect()
}
