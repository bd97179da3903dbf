//! Throttling end to end with the real binary: an API-level policy of 5 requests a
//! minute refuses the 6th with 429, `Retry-After`, the rate-limit headers and a JSON
//! error naming the policy; passing responses carry the headers too; a reload keeps the
//! window's count. Then three gateway processes sharing one real redis-server (started
//! on a free port) hold a global limit within the documented bound n x b, keep serving
//! when Redis is killed, and resynchronise when it comes back.

mod support;

use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use support::{start, Proc, TempDir};

/// A response as curl saw it: status, lower-case headers, body.
struct Got {
    status: u16,
    headers: Vec<(String, String)>,
    body: String,
}

impl Got {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

fn get(url: &str) -> Got {
    let out = Command::new("curl")
        .args(["-s", "-i", url])
        .output()
        .expect("curl runs");
    let text = String::from_utf8_lossy(&out.stdout).replace("\r\n", "\n");
    let (head, body) = text.split_once("\n\n").unwrap_or((&text, ""));
    let mut lines = head.lines();
    let status = lines
        .next()
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    Got {
        status,
        headers,
        body: body.to_owned(),
    }
}

/// Fixed windows are aligned to the epoch: start a scenario well inside one, so that
/// it cannot straddle an edge (waits at most `margin`).
fn avoid_window_edge(window_secs: u64, margin: Duration) {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    let window = Duration::from_secs(window_secs);
    let into = Duration::from_nanos((now.as_nanos() % window.as_nanos()) as u64);
    if window - into < margin {
        std::thread::sleep(window - into + Duration::from_millis(100));
    }
}

fn gateway(cfg: &Path, data: &Path, extra: &[&str]) -> (Proc, String) {
    let mut args = vec![
        "gateway",
        "--config",
        cfg.to_str().expect("utf-8 path"),
        "--http-port",
        "0",
        "--https-port",
        "off",
        "--data-dir",
        data.to_str().expect("utf-8 path"),
    ];
    args.extend_from_slice(extra);
    start(&args, "gateway listening on http://")
}

fn limited_config(echo: &str, limit: u64, probe: bool) -> String {
    let mut yaml = format!(
        "throttling:\n  advanced_policies:\n    - name: FivePerMin\n      \
         default_limit: {{ requests: {limit}, per: minute }}\n\
         apis:\n  - name: echo\n    context: /echo\n    version: v1\n    \
         throttling: FivePerMin\n    endpoints: [\"http://{echo}\"]\n    \
         resources: [ {{ path: \"/*\", methods: [GET] }} ]\n"
    );
    if probe {
        yaml.push_str(&format!(
            "  - name: probe\n    context: /probe\n    version: v1\n    \
             endpoints: [\"http://{echo}\"]\n    resources: [ {{ path: \"/*\", methods: [GET] }} ]\n"
        ));
    }
    yaml
}

#[test]
fn api_policy_refuses_the_sixth_request_with_headers_and_a_reload_keeps_the_count() {
    let dir = TempDir::new();
    let (_echo, echo) = start(&["echo", "--port", "0"], "echo listening on http://");
    let cfg = dir.path().join("apis.yaml");
    std::fs::write(&cfg, limited_config(&echo, 5, false)).expect("write config");
    avoid_window_edge(60, Duration::from_secs(15));
    let (_gw, gw) = gateway(&cfg, &dir.path().join("data"), &[]);
    let url = format!("http://{gw}/echo/v1/x");

    for i in 0..5u64 {
        let r = get(&url);
        assert_eq!(r.status, 200, "request {} passes: {}", i + 1, r.body);
        assert_eq!(
            r.header("ratelimit-policy"),
            Some("\"adv:FivePerMin\";q=5;w=60"),
            "passing responses carry the policy"
        );
        let rl = r.header("ratelimit").unwrap_or_default();
        assert!(
            rl.starts_with(&format!("\"adv:FivePerMin\";r={};t=", 4 - i)),
            "{rl}"
        );
        assert!(r.header("retry-after").is_none());
    }
    let r = get(&url);
    assert_eq!(r.status, 429, "the 6th is refused");
    let retry: u64 = r
        .header("retry-after")
        .and_then(|v| v.parse().ok())
        .expect("Retry-After in seconds");
    assert!((1..=60).contains(&retry), "{retry}");
    assert!(r
        .header("ratelimit")
        .is_some_and(|v| v.starts_with("\"adv:FivePerMin\";r=0;t=")));
    assert_eq!(r.header("content-type"), Some("application/json"));
    let body: serde_json::Value = serde_json::from_str(&r.body).expect("JSON error");
    assert_eq!(body["code"], "throttled");
    assert_eq!(body["policy"], "FivePerMin");
    assert!(body["message"]
        .as_str()
        .is_some_and(|m| m.contains("FivePerMin")));
    assert_eq!(
        body["request_id"].as_str(),
        r.header("x-request-id"),
        "the body names the request"
    );

    // Raise the limit to 7 and add a probe API that shows when the reload landed: the
    // count of the window is kept, so exactly 2 more pass.
    std::fs::write(&cfg, limited_config(&echo, 7, true)).expect("write config");
    let deadline = Instant::now() + Duration::from_secs(20);
    while get(&format!("http://{gw}/probe/v1/x")).status != 200 {
        assert!(Instant::now() < deadline, "reload not picked up");
        std::thread::sleep(Duration::from_millis(100));
    }
    let statuses: Vec<u16> = (0..3).map(|_| get(&url).status).collect();
    assert_eq!(statuses, [200, 200, 429], "counts survive the reload");
}

/// A real redis-server on a free port, no persistence; killed on drop.
struct Redis {
    port: u16,
    dir: TempDir,
    child: Option<Child>,
}

impl Redis {
    fn start() -> Redis {
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map(|a| a.port())
            .expect("a free port");
        let mut r = Redis {
            port,
            dir: TempDir::new(),
            child: None,
        };
        r.restart();
        r
    }

    fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port)
    }

    fn stop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// Starts it (again, empty) on the same port and waits until it accepts.
    fn restart(&mut self) {
        self.stop();
        let child = Command::new("redis-server")
            .args(["--port", &self.port.to_string(), "--bind", "127.0.0.1"])
            .args(["--save", "", "--appendonly", "no"])
            .arg("--dir")
            .arg(self.dir.path())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("redis-server is installed (scripts/install-deps.sh)");
        self.child = Some(child);
        let addr = SocketAddr::from(([127, 0, 0, 1], self.port));
        let deadline = Instant::now() + Duration::from_secs(10);
        while TcpStream::connect_timeout(&addr, Duration::from_millis(100)).is_err() {
            assert!(Instant::now() < deadline, "redis-server did not start");
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

impl Drop for Redis {
    fn drop(&mut self) {
        self.stop();
    }
}

fn wait_until(what: &str, limit: Duration, mut ok: impl FnMut() -> bool) {
    let deadline = Instant::now() + limit;
    while !ok() {
        assert!(Instant::now() < deadline, "timed out waiting: {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn three_gateways_share_one_redis_within_the_bound_and_survive_an_outage() {
    const LIMIT: u64 = 60;
    const BATCH: u64 = 2; // b = min(batch, limit / 10) = 2
    const NODES: u64 = 3;
    let dir = TempDir::new();
    let mut redis = Redis::start();
    let (_echo, echo) = start(&["echo", "--port", "0"], "echo listening on http://");
    let cfg = dir.path().join("apis.yaml");
    let yaml = format!(
        "throttling:\n  advanced_policies:\n    - name: Global\n      \
         default_limit: {{ requests: {LIMIT}, per: hour }}\n\
         apis:\n  - name: limited\n    context: /limited\n    version: v1\n    \
         throttling: Global\n    endpoints: [\"http://{echo}\"]\n    \
         resources: [ {{ path: \"/*\", methods: [GET] }} ]\n  \
         - name: roomy\n    context: /roomy\n    version: v1\n    throttling: 50KPerMin\n    \
         endpoints: [\"http://{echo}\"]\n    resources: [ {{ path: \"/*\", methods: [GET] }} ]\n"
    );
    std::fs::write(&cfg, yaml).expect("write config");
    avoid_window_edge(3600, Duration::from_secs(60));
    let url = redis.url();
    let batch = BATCH.to_string();
    let flags = [
        "--redis",
        url.as_str(),
        "--redis-batch",
        batch.as_str(),
        "--redis-sync-ms",
        "20",
    ];
    let gws: Vec<(Proc, String)> = (0..NODES)
        .map(|i| gateway(&cfg, &dir.path().join(format!("data{i}")), &flags))
        .collect();
    let at = |i: usize, api: &str| format!("http://{}/{api}/v1/x", gws[i % gws.len()].1);

    // Round robin, far past the limit: the cluster admits LIMIT within n x b.
    let admitted = (0..150)
        .filter(|i| get(&at(*i, "limited")).status == 200)
        .count() as u64;
    let bound = NODES * BATCH;
    eprintln!("cluster admitted {admitted} of {LIMIT} (bound n x b = {bound})");
    assert!(
        admitted.abs_diff(LIMIT) <= bound,
        "admitted {admitted}, limit {LIMIT}, bound n x b = {bound}"
    );
    for i in 0..gws.len() {
        assert_eq!(
            get(&at(i, "limited")).status,
            429,
            "gateway {i} is at the limit"
        );
    }

    // Redis dies: every gateway keeps serving (fail open: local limits).
    redis.stop();
    for i in 0..gws.len() {
        assert_eq!(get(&at(i, "roomy")).status, 200, "gateway {i} serves");
        wait_until("fail-open on local limits", Duration::from_secs(10), || {
            get(&at(i, "limited")).status == 200
        });
    }

    // Redis returns empty: the gateways re-assert their counts and the global limit
    // holds again on every one of them.
    redis.restart();
    for i in 0..gws.len() {
        wait_until(
            "resync after redis returns",
            Duration::from_secs(10),
            || get(&at(i, "limited")).status == 429,
        );
        assert_eq!(get(&at(i, "roomy")).status, 200, "gateway {i} serves");
    }
}
