//! Throttling end to end with the real binary: an API-level policy of 5 requests a
//! minute refuses the 6th with 429, `Retry-After`, the rate-limit headers and a JSON
//! error naming the policy; passing responses carry the headers too; a reload keeps the
//! window's count. Then three gateway processes sharing one real redis-server (started
//! on a free port) hold a global limit within the documented bound n x b, keep serving
//! when Redis is killed, and resynchronise when it comes back. With real credentials:
//! subscription tiers count per application and API (one app exhausted, the other still
//! passes), application tiers per application and user across APIs, claim conditions
//! read the caller's JWT, and bandwidth quotas charge response bytes.

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
    get_with(url, &[])
}

/// GET with extra request headers (`"apikey: k"`).
fn get_with(url: &str, headers: &[&str]) -> Got {
    let mut cmd = Command::new("curl");
    cmd.args(["-s", "-i", url]);
    for h in headers {
        cmd.args(["-H", h]);
    }
    let out = cmd.output().expect("curl runs");
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
            .expect("redis-server is installed (scripts/install-test-deps.sh)");
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

fn sha256_hex(s: &str) -> String {
    ring::digest::digest(&ring::digest::SHA256, s.as_bytes())
        .as_ref()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

fn policy_of(r: &Got) -> String {
    serde_json::from_str::<serde_json::Value>(&r.body)
        .ok()
        .and_then(|v| v["policy"].as_str().map(str::to_owned))
        .unwrap_or_default()
}

#[test]
fn subscription_tier_per_application_and_application_tier_per_user_across_apis_with_api_keys() {
    let dir = TempDir::new();
    let (_echo, echo) = start(&["echo", "--port", "0"], "echo listening on http://");
    let api = |name: &str| {
        format!(
            "  - name: {name}\n    context: /{name}\n    version: v1\n    \
             endpoints: [\"http://{echo}\"]\n    auth: {{ api_key: true, oauth2: false }}\n    \
             resources: [ {{ path: \"/*\", methods: [GET] }} ]\n"
        )
    };
    let yaml = format!(
        "security:\n  api_keys:\n    \
         - {{ sha256: \"{}\", application: app-one, subscriber: ann }}\n    \
         - {{ sha256: \"{}\", application: app-two, subscriber: bob }}\n    \
         - {{ sha256: \"{}\", application: app-one, subscriber: cat }}\n  \
         subscriptions:\n    \
         - {{ api: /a/v1, application: app-one, state: ACTIVE, tier: ThreePerMin }}\n    \
         - {{ api: /b/v1, application: app-one, state: ACTIVE, tier: ThreePerMin }}\n    \
         - {{ api: /a/v1, application: app-two, state: ACTIVE, tier: ThreePerMin }}\n\
         throttling:\n  subscription_tiers:\n    \
         - {{ name: ThreePerMin, quota: {{ requests: 3, per: minute }} }}\n  \
         application_tiers:\n    - {{ name: FourPerMin, quota: {{ requests: 4, per: minute }} }}\n  \
         applications:\n    - {{ application: app-one, tier: FourPerMin }}\n\
         apis:\n{}{}",
        sha256_hex("key-one"),
        sha256_hex("key-two"),
        sha256_hex("key-three"),
        api("a"),
        api("b"),
    );
    let cfg = dir.path().join("apis.yaml");
    std::fs::write(&cfg, yaml).expect("write config");
    avoid_window_edge(60, Duration::from_secs(15));
    let (_gw, gw) = gateway(&cfg, &dir.path().join("data"), &[]);
    let one = ["apikey: key-one"];
    let two = ["apikey: key-two"];
    let a = format!("http://{gw}/a/v1/x");
    let b = format!("http://{gw}/b/v1/x");

    let statuses: Vec<u16> = (0..3).map(|_| get_with(&a, &one).status).collect();
    assert_eq!(statuses, [200, 200, 200]);
    let r = get_with(&a, &one);
    assert_eq!(r.status, 429, "app-one used its subscription on /a");
    assert_eq!(policy_of(&r), "ThreePerMin");
    assert!(r
        .header("ratelimit")
        .is_some_and(|v| v.starts_with("\"sub:ThreePerMin\";r=0;")));
    // The quota is app-one's on /a: app-two's subscription to the same API still passes.
    let r = get_with(&a, &two);
    assert_eq!(r.status, 200, "{}", r.body);
    assert!(r
        .header("ratelimit")
        .is_some_and(|v| v.starts_with("\"sub:ThreePerMin\";r=2;")));
    // app-one's application tier (4 a minute) counts across APIs: a fresh subscription on
    // /b admits one more, then the application tier refuses.
    assert_eq!(get_with(&b, &one).status, 200);
    let r = get_with(&b, &one);
    assert_eq!(r.status, 429);
    assert_eq!(policy_of(&r), "FourPerMin", "{}", r.body);
    // Another user of app-one: the application tier counts per user (cat has all 4),
    // the subscription per application (app-one has 2 left on /b, shared with ann).
    let cat = ["apikey: key-three"];
    assert_eq!(get_with(&b, &cat).status, 200);
    assert_eq!(get_with(&b, &cat).status, 200);
    let r = get_with(&b, &cat);
    assert_eq!(r.status, 429);
    assert_eq!(policy_of(&r), "ThreePerMin", "{}", r.body);
    // A refusal costs nothing: app-two still has exactly 2 left on /a.
    let statuses: Vec<u16> = (0..3).map(|_| get_with(&a, &two).status).collect();
    assert_eq!(statuses, [200, 200, 429]);
}

#[test]
fn bandwidth_quota_charges_response_bytes() {
    let dir = TempDir::new();
    let (_echo, echo) = start(&["echo", "--port", "0"], "echo listening on http://");
    let yaml = format!(
        "throttling:\n  unauthenticated_tier: Unlimited\n  \
         advanced_policies:\n    - name: ThreeKBPerMin\n      \
         default_limit: {{ bytes: 3000, per: minute }}\n\
         apis:\n  - name: files\n    context: /files\n    version: v1\n    \
         throttling: ThreeKBPerMin\n    endpoints: [\"http://{echo}\"]\n    \
         resources: [ {{ path: \"/*\", methods: [GET] }} ]\n  \
         - name: stream\n    context: /stream\n    version: v1\n    \
         throttling: ThreeKBPerMin\n    endpoints: [\"http://{echo}\"]\n    \
         request_buffering: {{ enabled: false }}\n    \
         resources: [ {{ path: \"/*\", methods: [POST] }} ]\n"
    );
    let cfg = dir.path().join("apis.yaml");
    std::fs::write(&cfg, yaml).expect("write config");
    avoid_window_edge(60, Duration::from_secs(15));
    let (_gw, gw) = gateway(&cfg, &dir.path().join("data"), &[]);
    // Bodiless GETs cost nothing on the way in; each 1200-byte response is charged.
    let url = format!("http://{gw}/files/v1/x?size=1200");
    let mut remaining = Vec::new();
    for _ in 0..3 {
        let r = get(&url);
        assert_eq!(r.status, 200, "{}", r.body);
        assert_eq!(r.body.len(), 1200);
        remaining.push(r.header("ratelimit").unwrap_or_default().to_owned());
    }
    // What was left before each response was charged: 3000, 1800, 600.
    for (rl, left) in remaining.iter().zip([3000, 1800, 600]) {
        assert!(
            rl.starts_with(&format!("\"adv:ThreeKBPerMin\";r={left};")),
            "{rl} (expected r={left})"
        );
    }
    let r = get(&url);
    assert_eq!(r.status, 429, "3600 of 3000 bytes sent: refused");
    assert_eq!(policy_of(&r), "ThreeKBPerMin");
    assert!(r.body.contains("bytes"), "{}", r.body);

    // Streamed both ways (chunked, no Content-Length): the request costs nothing at
    // check time, the response is charged the bytes sent when its body ends.
    let file = dir.path().join("body");
    std::fs::write(&file, vec![b'x'; 1200]).expect("write body");
    let post = |url: &str| {
        let out = Command::new("curl")
            .args([
                "-s",
                "-i",
                "-H",
                "transfer-encoding: chunked",
                "--data-binary",
            ])
            .arg(format!("@{}", file.display()))
            .arg(url)
            .output()
            .expect("curl runs");
        String::from_utf8_lossy(&out.stdout).replace("\r\n", "\n")
    };
    let url = format!("http://{gw}/stream/v1/x");
    for i in 0..3 {
        let r = post(&url);
        assert!(r.starts_with("HTTP/1.1 200"), "request {}: {r}", i + 1);
        let head = r.split("\n\n").next().unwrap_or("").to_ascii_lowercase();
        assert!(head.contains("transfer-encoding: chunked"), "{head}");
        assert!(!head.contains("content-length"), "{head}");
    }
    let r = post(&url);
    assert!(
        r.starts_with("HTTP/1.1 429"),
        "3600 streamed bytes: refused: {r}"
    );
}

struct SigningKey {
    pair: ring::signature::EcdsaKeyPair,
    jwk: serde_json::Value,
}

fn signing_key() -> SigningKey {
    use base64::Engine;
    use ring::signature::{EcdsaKeyPair, KeyPair, ECDSA_P256_SHA256_FIXED_SIGNING};
    let rng = ring::rand::SystemRandom::new();
    let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng).expect("gen");
    let pair = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, pkcs8.as_ref(), &rng)
        .expect("pair");
    let point = pair.public_key().as_ref().to_vec();
    let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD;
    let jwk = serde_json::json!({
        "kty": "EC", "crv": "P-256", "alg": "ES256", "use": "sig", "kid": "k1",
        "x": b64.encode(&point[1..33]), "y": b64.encode(&point[33..65]),
    });
    SigningKey { pair, jwk }
}

fn es256(key: &SigningKey, claims: &serde_json::Value) -> String {
    use base64::Engine;
    let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD;
    let header = serde_json::json!({"alg": "ES256", "kid": "k1", "typ": "JWT"});
    let input = format!(
        "{}.{}",
        b64.encode(header.to_string()),
        b64.encode(claims.to_string())
    );
    let sig = key
        .pair
        .sign(&ring::rand::SystemRandom::new(), input.as_bytes())
        .expect("sign");
    format!("{input}.{}", b64.encode(sig.as_ref()))
}

#[test]
fn claim_condition_reads_the_callers_jwt() {
    let dir = TempDir::new();
    let (_echo, echo) = start(&["echo", "--port", "0"], "echo listening on http://");
    let key = signing_key();
    let yaml = format!(
        "security:\n  issuers:\n    - issuer: https://idp.test\n      audiences: [turnpike]\n      \
         jwks: {{ \"keys\": [{jwk}] }}\n  subscriptions:\n    \
         - {{ api: /plans/v1, application: app-free, state: ACTIVE, tier: Unlimited }}\n    \
         - {{ api: /plans/v1, application: app-pro, state: ACTIVE, tier: Unlimited }}\n\
         throttling:\n  advanced_policies:\n    - name: ByPlan\n      \
         default_limit: {{ requests: 100, per: minute }}\n      groups:\n        \
         - name: free\n          conditions: [ {{ type: claim, name: plan, value: free }} ]\n          \
         limit: {{ requests: 2, per: minute }}\n\
         apis:\n  - name: plans\n    context: /plans\n    version: v1\n    \
         throttling: ByPlan\n    endpoints: [\"http://{echo}\"]\n    auth: {{ oauth2: true }}\n    \
         resources: [ {{ path: \"/*\", methods: [GET] }} ]\n",
        jwk = key.jwk
    );
    let cfg = dir.path().join("apis.yaml");
    std::fs::write(&cfg, yaml).expect("write config");
    avoid_window_edge(60, Duration::from_secs(15));
    let (_gw, gw) = gateway(&cfg, &dir.path().join("data"), &[]);
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let token = |app: &str, plan: &str| {
        es256(
            &key,
            &serde_json::json!({ "iss": "https://idp.test", "aud": "turnpike", "sub": "u",
                "exp": now + 600, "application": app, "plan": plan }),
        )
    };
    let free = format!("authorization: Bearer {}", token("app-free", "free"));
    let pro = format!("authorization: Bearer {}", token("app-pro", "pro"));
    let url = format!("http://{gw}/plans/v1/x");

    let r = get_with(&url, &[&free]);
    assert_eq!(r.status, 200, "{}", r.body);
    assert!(
        r.header("ratelimit-policy")
            .is_some_and(|v| v.starts_with("\"adv:ByPlan/group:free\";q=2;")),
        "the claim picked the group: {:?}",
        r.header("ratelimit-policy")
    );
    assert_eq!(
        get_with(&url, &[&free]).status,
        200,
        "cached token, same group"
    );
    let r = get_with(&url, &[&free]);
    assert_eq!(r.status, 429);
    assert_eq!(policy_of(&r), "ByPlan");
    // Another plan falls under the default limit.
    for _ in 0..3 {
        let r = get_with(&url, &[&pro]);
        assert_eq!(r.status, 200, "{}", r.body);
        assert!(r
            .header("ratelimit-policy")
            .is_some_and(|v| v.starts_with("\"adv:ByPlan\";q=100;")));
    }
}

/// An application's API key and the token its client got for itself (client
/// credentials: `sub` is the client id) are one end user, the application's owner, as in
/// WSO2: they share the application tier's quota.
#[test]
fn an_applications_api_key_and_client_credentials_token_share_its_application_tier() {
    let dir = TempDir::new();
    let (_echo, echo) = start(&["echo", "--port", "0"], "echo listening on http://");
    let key = signing_key();
    let yaml = format!(
        "security:\n  issuers:\n    - issuer: https://idp.test\n      audiences: [turnpike]\n      \
         jwks: {{ \"keys\": [{jwk}] }}\n  \
         api_keys:\n    - {{ sha256: \"{hash}\", application: app-one, subscriber: ann }}\n  \
         subscriptions:\n    \
         - {{ api: /shop/v1, application: app-one, state: ACTIVE, tier: Unlimited }}\n\
         throttling:\n  application_tiers:\n    \
         - {{ name: FourPerMin, quota: {{ requests: 4, per: minute }} }}\n  \
         applications:\n    - {{ application: app-one, tier: FourPerMin }}\n\
         apis:\n  - name: shop\n    context: /shop\n    version: v1\n    \
         endpoints: [\"http://{echo}\"]\n    auth: {{ oauth2: true, api_key: true }}\n    \
         resources: [ {{ path: \"/*\", methods: [GET] }} ]\n",
        jwk = key.jwk,
        hash = sha256_hex("key-one"),
    );
    let cfg = dir.path().join("apis.yaml");
    std::fs::write(&cfg, yaml).expect("write config");
    avoid_window_edge(60, Duration::from_secs(15));
    let (_gw, gw) = gateway(&cfg, &dir.path().join("data"), &[]);
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let token = es256(
        &key,
        &serde_json::json!({ "iss": "https://idp.test", "aud": "turnpike",
            "sub": "client-one", "client_id": "client-one", "exp": now + 600,
            "application": "app-one", "subscriber": "ann" }),
    );
    let bearer = format!("authorization: Bearer {token}");
    let url = format!("http://{gw}/shop/v1/x");
    for _ in 0..2 {
        let r = get_with(&url, &[&bearer]);
        assert_eq!(r.status, 200, "{}", r.body);
    }
    for _ in 0..2 {
        let r = get_with(&url, &["apikey: key-one"]);
        assert_eq!(r.status, 200, "{}", r.body);
    }
    // Four calls of one end user: both credentials are refused now.
    for h in [bearer.as_str(), "apikey: key-one"] {
        let r = get_with(&url, &[h]);
        assert_eq!(r.status, 429, "{h}: {}", r.body);
        assert_eq!(policy_of(&r), "FourPerMin");
    }
}

/// A section naming an unauthenticated tier throttles open APIs per client IP; without
/// one, open APIs are not throttled (and carry no rate-limit headers).
#[test]
fn the_unauthenticated_tier_throttles_open_apis_when_the_file_names_it() {
    let dir = TempDir::new();
    let (_echo, echo) = start(&["echo", "--port", "0"], "echo listening on http://");
    let open = format!(
        "apis:\n  - name: open\n    context: /open\n    version: v1\n    \
         endpoints: [\"http://{echo}\"]\n    resources: [ {{ path: \"/*\", methods: [GET] }} ]\n"
    );
    let named = format!(
        "throttling:\n  subscription_tiers:\n    \
         - {{ name: ThreeAnon, quota: {{ requests: 3, per: minute }} }}\n  \
         unauthenticated_tier: ThreeAnon\n{open}"
    );
    let with = dir.path().join("with.yaml");
    let without = dir.path().join("without.yaml");
    std::fs::write(&with, named).expect("write config");
    std::fs::write(&without, &open).expect("write config");
    avoid_window_edge(60, Duration::from_secs(15));
    let (_gw1, throttled) = gateway(&with, &dir.path().join("data1"), &[]);
    let (_gw2, free) = gateway(&without, &dir.path().join("data2"), &[]);

    let url = format!("http://{throttled}/open/v1/x");
    for left in [2, 1, 0] {
        let r = get(&url);
        assert_eq!(r.status, 200, "{}", r.body);
        assert!(
            r.header("ratelimit")
                .is_some_and(|v| v.starts_with(&format!("\"sub:ThreeAnon\";r={left};"))),
            "{:?}",
            r.header("ratelimit")
        );
    }
    let r = get(&url);
    assert_eq!(r.status, 429, "the 4th call from one IP");
    assert_eq!(policy_of(&r), "ThreeAnon");

    let url = format!("http://{free}/open/v1/x");
    for _ in 0..10 {
        let r = get(&url);
        assert_eq!(r.status, 200);
        assert!(r.header("ratelimit").is_none(), "not throttled at all");
    }
}
