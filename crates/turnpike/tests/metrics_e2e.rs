//! Prometheus metrics end to end with the real binary: `turnpike gateway --metrics-addr
//! 127.0.0.1:0` serves `GET /metrics` on its own listener; after 5 passing and 2
//! throttled requests to an API limited to 5 a minute, and one to an API whose upstream
//! is down, the scrape counts them by value (requests by class, the duration histogram,
//! throttle decisions for the named policy, upstream errors by kind), and a reload of
//! the file shows as a snapshot swap.

mod support;

use std::io::{BufRead, BufReader};
use std::net::TcpListener;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use support::{Proc, TempDir, BIN};

/// Starts the gateway and returns it with (gateway address, metrics address).
fn gateway(cfg: &str, data: &str) -> (Proc, String, String) {
    gateway_with(cfg, data, &[])
}

fn gateway_with(cfg: &str, data: &str, extra: &[&str]) -> (Proc, String, String) {
    let access_log = format!("{cfg}.access.log");
    let mut child = Command::new(BIN)
        .args([
            "gateway",
            "--config",
            cfg,
            "--http-port",
            "0",
            "--https-port",
            "off",
            "--data-dir",
            data,
            "--metrics-addr",
            "127.0.0.1:0",
            "--access-log",
            &access_log,
        ])
        .args(extra)
        .env("TURNPIKE_LOG", "warn")
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("spawn turnpike");
    let stdout = child.stdout.take().expect("stdout");
    let proc = Proc(child);
    let mut lines = BufReader::new(stdout).lines();
    let mut metrics = None;
    let gw = loop {
        let line = lines
            .next()
            .expect("gateway exited early")
            .expect("read stdout");
        if let Some(a) = line.strip_prefix("gateway metrics on http://") {
            metrics = Some(a.trim_end_matches("/metrics").to_owned());
        }
        if let Some(a) = line.strip_prefix("gateway listening on http://") {
            break a.trim().to_owned();
        }
    };
    std::thread::spawn(move || for _ in lines {});
    (proc, gw, metrics.expect("metrics address printed first"))
}

fn status(url: &str) -> u16 {
    let out = Command::new("curl")
        .args(["-s", "-o", "/dev/null", "-w", "%{http_code}", url])
        .output()
        .expect("curl runs");
    String::from_utf8_lossy(&out.stdout).parse().unwrap_or(0)
}

fn scrape(metrics: &str) -> String {
    let out = Command::new("curl")
        .args(["-s", "-f", &format!("http://{metrics}/metrics")])
        .output()
        .expect("curl runs");
    assert!(out.status.success(), "GET /metrics answers 200");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The value of the series whose name and labels are exactly `series`.
fn value(text: &str, series: &str) -> Option<f64> {
    text.lines()
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' '))
        .and_then(|v| v.trim().parse().ok())
}

/// A port nothing listens on (bound, then released).
fn closed_port() -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").expect("bind");
    l.local_addr().expect("addr").port()
}

fn config(echo: &str, dead: u16, extra_api: bool) -> String {
    let mut yaml = format!(
        "throttling:\n  advanced_policies:\n    - name: FivePerMin\n      \
         default_limit: {{ requests: 5, per: minute }}\n\
         apis:\n  - name: echo\n    context: /echo\n    version: v1\n    \
         throttling: FivePerMin\n    endpoints: [\"http://{echo}\"]\n    \
         resources: [ {{ path: \"/*\", methods: [GET] }} ]\n\
         \x20 - name: dead\n    context: /dead\n    version: v1\n    \
         endpoints: [\"http://127.0.0.1:{dead}\"]\n    \
         resources: [ {{ path: \"/*\", methods: [GET] }} ]\n"
    );
    if extra_api {
        yaml.push_str(&format!(
            "  - name: more\n    context: /more\n    version: v1\n    \
             endpoints: [\"http://{echo}\"]\n    resources: [ {{ path: \"/*\", methods: [GET] }} ]\n"
        ));
    }
    yaml
}

#[test]
fn scrape_counts_requests_durations_throttle_decisions_upstream_errors_and_swaps() {
    let dir = TempDir::new();
    let (_echo, echo) = support::start(&["echo", "--port", "0"], "echo listening on http://");
    let dead = closed_port();
    let cfg = dir.path().join("apis.yaml");
    std::fs::write(&cfg, config(&echo, dead, false)).expect("write config");
    // Fixed windows are aligned to the epoch: stay clear of a minute's edge.
    let into = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() % 60);
    if into > 45 {
        std::thread::sleep(Duration::from_secs(61 - into));
    }
    let data = dir.path().join("data");
    let (_gw, gw, metrics) = gateway(cfg.to_str().expect("utf-8"), data.to_str().expect("utf-8"));

    let statuses: Vec<u16> = (0..7)
        .map(|_| status(&format!("http://{gw}/echo/v1/x")))
        .collect();
    assert_eq!(statuses, [200, 200, 200, 200, 200, 429, 429]);
    assert_eq!(status(&format!("http://{gw}/dead/v1/x")), 502);
    assert_eq!(status(&format!("http://{gw}/nowhere")), 404);

    let text = scrape(&metrics);
    let echo_req = |class: &str| {
        value(
            &text,
            &format!(
                "turnpike_http_requests_total{{api=\"echo\",version=\"v1\",context=\"/echo\",id=\"/echo/v1\",class=\"{class}\"}}"
            ),
        )
    };
    assert_eq!(echo_req("2xx"), Some(5.0), "{text}");
    assert_eq!(echo_req("4xx"), Some(2.0));
    assert_eq!(echo_req("5xx"), Some(0.0));
    assert_eq!(
        value(
            &text,
            "turnpike_http_request_duration_seconds_count{api=\"echo\",version=\"v1\",context=\"/echo\",id=\"/echo/v1\"}"
        ),
        Some(7.0)
    );
    assert_eq!(
        value(
            &text,
            "turnpike_http_request_duration_seconds_bucket{api=\"echo\",version=\"v1\",context=\"/echo\",id=\"/echo/v1\",le=\"+Inf\"}"
        ),
        Some(7.0)
    );
    let decisions = |d: &str| {
        value(
            &text,
            &format!(
                "turnpike_throttle_decisions_total{{policy=\"FivePerMin\",rule=\"adv:FivePerMin\",decision=\"{d}\"}}"
            ),
        )
    };
    assert_eq!(decisions("allowed"), Some(5.0));
    assert_eq!(decisions("throttled"), Some(2.0));
    assert_eq!(decisions("flagged"), Some(0.0));
    // The counter store holds the FivePerMin window's slot; nothing went untracked.
    assert!(
        value(&text, "turnpike_throttle_counters").is_some_and(|n| n >= 1.0),
        "{text}"
    );
    assert_eq!(value(&text, "turnpike_throttle_untracked_total"), Some(0.0));
    assert!(value(&text, "turnpike_throttle_swept_total").is_some());
    assert_eq!(value(&text, "turnpike_access_log_dropped_total"), Some(0.0));
    assert!(
        !text.contains("turnpike_http_resource_requests_total"),
        "per-resource series are an opt-in"
    );
    assert_eq!(
        value(
            &text,
            "turnpike_upstream_errors_total{api=\"dead\",version=\"v1\",context=\"/dead\",id=\"/dead/v1\",kind=\"upstream_unavailable\"}"
        ),
        Some(1.0)
    );
    assert_eq!(
        value(
            &text,
            "turnpike_http_requests_total{api=\"\",version=\"\",context=\"\",id=\"\",class=\"4xx\"}"
        ),
        Some(1.0)
    );
    assert_eq!(value(&text, "turnpike_snapshot_swaps_total"), Some(0.0));
    assert_eq!(value(&text, "turnpike_apis"), Some(2.0));

    // A reload (one more API) is a swap; the counts carry over.
    std::fs::write(&cfg, config(&echo, dead, true)).expect("rewrite config");
    let deadline = Instant::now() + Duration::from_secs(15);
    let text = loop {
        let text = scrape(&metrics);
        if value(&text, "turnpike_apis") == Some(3.0) {
            break text;
        }
        assert!(Instant::now() < deadline, "the reload was not seen: {text}");
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(value(&text, "turnpike_snapshot_swaps_total"), Some(1.0));
    assert_eq!(
        value(
            &text,
            "turnpike_http_requests_total{api=\"echo\",version=\"v1\",context=\"/echo\",id=\"/echo/v1\",class=\"2xx\"}"
        ),
        Some(5.0)
    );
    assert_eq!(status(&format!("http://{metrics}/other")), 404);
}

/// An ES256 key (ring), its public JWK, and tokens for `https://idp.test` signed with it.
mod jwt {
    use base64::engine::general_purpose::URL_SAFE_NO_PAD;
    use base64::Engine;
    use ring::rand::SystemRandom;
    use ring::signature::{EcdsaKeyPair, KeyPair, ECDSA_P256_SHA256_FIXED_SIGNING};
    use serde_json::{json, Value};

    pub struct Key(EcdsaKeyPair, pub Value);

    pub fn key() -> Key {
        let rng = SystemRandom::new();
        let pkcs8 =
            EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng).expect("gen");
        let pair = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, pkcs8.as_ref(), &rng)
            .expect("pair");
        let p = pair.public_key().as_ref().to_vec();
        let jwk = json!({"kty": "EC", "crv": "P-256", "alg": "ES256", "kid": "k1",
            "x": URL_SAFE_NO_PAD.encode(&p[1..33]), "y": URL_SAFE_NO_PAD.encode(&p[33..65])});
        Key(pair, jwk)
    }

    pub fn token(key: &Key, header: Value, sub: &str) -> String {
        let exp = super::SystemTime::now()
            .duration_since(super::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs())
            + 600;
        let claims = json!({"iss": "https://idp.test", "sub": sub, "exp": exp, "jti": sub,
            "application": "app-1"});
        let b64 = |v: &Value| URL_SAFE_NO_PAD.encode(v.to_string());
        let input = format!("{}.{}", b64(&header), b64(&claims));
        let sig = key
            .0
            .sign(&SystemRandom::new(), input.as_bytes())
            .expect("sign");
        format!("{input}.{}", URL_SAFE_NO_PAD.encode(sig.as_ref()))
    }
}

fn status_with_token(url: &str, token: &str) -> u16 {
    let out = Command::new("curl")
        .args(["-s", "-o", "/dev/null", "-w", "%{http_code}"])
        .args(["-H", &format!("Authorization: Bearer {token}"), url])
        .output()
        .expect("curl runs");
    String::from_utf8_lossy(&out.stdout).parse().unwrap_or(0)
}

#[test]
fn scrape_shows_the_token_cache_lookups_size_and_budget() {
    let dir = TempDir::new();
    let (_echo, echo) = support::start(&["echo", "--port", "0"], "echo listening on http://");
    let key = jwt::key();
    let cfg = dir.path().join("apis.yaml");
    let yaml = format!(
        "security:\n  issuers:\n    - issuer: https://idp.test\n      jwks: {{ \"keys\": [{}] }}\n  \
         subscriptions:\n    - {{ api: /secure/v1, application: app-1, state: ACTIVE, tier: Unlimited }}\n\
         apis:\n  - name: secure\n    context: /secure\n    version: v1\n    auth: {{ oauth2: true }}\n    \
         endpoints: [\"http://{echo}\"]\n    resources: [ {{ path: \"/*\", methods: [GET] }} ]\n",
        key.1
    );
    std::fs::write(&cfg, yaml).expect("write config");
    let (_gw, gw, metrics) = gateway(
        cfg.to_str().expect("utf-8"),
        dir.path().join("data").to_str().expect("utf-8"),
    );
    let url = format!("http://{gw}/secure/v1/x");
    let header = serde_json::json!({"alg": "ES256", "kid": "k1", "typ": "JWT"});
    // Three tokens, each used twice: three misses (verified once each), three hits.
    for sub in ["u1", "u2", "u3"] {
        let t = jwt::token(&key, header.clone(), sub);
        assert_eq!(status_with_token(&url, &t), 200);
        assert_eq!(status_with_token(&url, &t), 200);
    }
    // A header naming a critical extension is refused (RFC 7515 §4.1.11) and not cached.
    let crit = serde_json::json!({"alg": "ES256", "kid": "k1", "crit": ["exp"], "exp": 1});
    assert_eq!(status_with_token(&url, &jwt::token(&key, crit, "u4")), 401);
    let text = scrape(&metrics);
    let series = |name: &str, labels: &str| value(&text, &format!("{name}{{{labels}}}"));
    let lookups = "turnpike_token_cache_lookups_total";
    assert_eq!(
        series(lookups, "cache=\"jwt\",result=\"hit\""),
        Some(3.0),
        "{text}"
    );
    assert_eq!(series(lookups, "cache=\"jwt\",result=\"miss\""), Some(4.0));
    assert_eq!(
        series("turnpike_token_cache_hit_ratio", "cache=\"jwt\""),
        Some(3.0 / 7.0)
    );
    assert_eq!(
        series("turnpike_token_cache_entries", "cache=\"jwt\""),
        Some(3.0)
    );
    let bytes = series("turnpike_token_cache_bytes", "cache=\"jwt\"").unwrap_or(0.0);
    assert!(
        (300.0..3000.0).contains(&bytes),
        "3 tokens weigh {bytes} bytes"
    );
    assert_eq!(
        series("turnpike_token_cache_budget_bytes", "cache=\"jwt\""),
        Some(256.0 * 1024.0 * 1024.0)
    );
}

#[test]
fn per_resource_series_are_an_opt_in_counted_by_template() {
    let dir = TempDir::new();
    let (_echo, echo) = support::start(&["echo", "--port", "0"], "echo listening on http://");
    let cfg = dir.path().join("apis.yaml");
    std::fs::write(
        &cfg,
        format!(
            "apis:\n  - name: shop\n    context: /shop\n    version: v1\n    \
             endpoints: [\"http://{echo}\"]\n    resources:\n      \
             - {{ path: \"/items/{{id}}\", methods: [GET] }}\n      \
             - {{ path: \"/orders\", methods: [GET] }}\n"
        ),
    )
    .expect("write config");
    let data = dir.path().join("data");
    let (_gw, gw, metrics) = gateway_with(
        cfg.to_str().expect("utf-8"),
        data.to_str().expect("utf-8"),
        &["--metrics-per-resource"],
    );
    for path in ["/items/1", "/items/2", "/items/3", "/orders"] {
        assert_eq!(status(&format!("http://{gw}/shop/v1{path}")), 200);
    }
    assert_eq!(status(&format!("http://{gw}/shop/v1/nothing")), 404);
    let text = scrape(&metrics);
    let series = |resource: &str, class: &str| {
        value(
            &text,
            &format!(
                "turnpike_http_resource_requests_total{{api=\"shop\",version=\"v1\",context=\"/shop\",id=\"/shop/v1\",resource=\"{resource}\",class=\"{class}\"}}"
            ),
        )
    };
    assert_eq!(series("/items/{id}", "2xx"), Some(3.0), "{text}");
    assert_eq!(series("/items/{id}", "4xx"), Some(0.0));
    assert_eq!(series("/orders", "2xx"), Some(1.0));
    assert_eq!(
        value(
            &text,
            "turnpike_http_requests_total{api=\"shop\",version=\"v1\",context=\"/shop\",id=\"/shop/v1\",class=\"2xx\"}"
        ),
        Some(4.0)
    );
}

/// One OpenAPI document imported at two contexts gives two APIs with one name and
/// version: each counts its own requests (by id and context), none reads 0.
#[test]
fn two_apis_with_one_name_and_version_count_apart() {
    let dir = TempDir::new();
    let (_echo, echo) = support::start(&["echo", "--port", "0"], "echo listening on http://");
    let cfg = dir.path().join("apis.yaml");
    let api = |context: &str| {
        format!(
            "  - name: petstore\n    context: {context}\n    version: v1\n    \
             endpoints: [\"http://{echo}\"]\n    resources: [ {{ path: \"/*\", methods: [GET] }} ]\n"
        )
    };
    std::fs::write(&cfg, format!("apis:\n{}{}", api("/a"), api("/b"))).expect("write config");
    let data = dir.path().join("data");
    let (_gw, gw, metrics) = gateway(cfg.to_str().expect("utf-8"), data.to_str().expect("utf-8"));
    for _ in 0..3 {
        assert_eq!(status(&format!("http://{gw}/a/v1/x")), 200);
    }
    assert_eq!(status(&format!("http://{gw}/b/v1/x")), 200);
    let text = scrape(&metrics);
    let ok = |context: &str| {
        value(
            &text,
            &format!(
                "turnpike_http_requests_total{{api=\"petstore\",version=\"v1\",context=\"{context}\",id=\"{context}/v1\",class=\"2xx\"}}"
            ),
        )
    };
    assert_eq!(ok("/a"), Some(3.0), "{text}");
    assert_eq!(ok("/b"), Some(1.0), "{text}");
}
