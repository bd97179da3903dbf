//! Security end to end with the real binary: a DB-less `turnpike gateway` whose file
//! trusts an issuer (the test's own P-256 key, public JWK inline), declares an API key, a
//! basic user and subscriptions, and a header-echoing upstream run by the test. Tokens
//! are minted here with `ring` and hand-built JOSE (independent of the gateway's JWT
//! library). Each case names the behaviour it checks.

mod support;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::path::Path;
use std::process::Command;
use std::time::{SystemTime, UNIX_EPOCH};

use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use base64::Engine;
use ring::rand::SystemRandom;
use ring::signature::{EcdsaKeyPair, KeyPair, ECDSA_P256_SHA256_FIXED_SIGNING};
use serde_json::{json, Value};
use support::{start_file_gateway, TempDir};

const ISS: &str = "https://idp.test";
const AUD: &str = "turnpike";
const API_KEY: &str = "key-4f9a1c";

/// An upstream that answers every request with its own request head, then closes.
fn header_echo() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind upstream");
    let addr = listener.local_addr().expect("addr").to_string();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            std::thread::spawn(move || {
                let mut reader = BufReader::new(stream.try_clone().expect("clone"));
                let mut head = String::new();
                let mut len = 0usize;
                loop {
                    let mut line = String::new();
                    if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                        break;
                    }
                    if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                        len = v.trim().parse().unwrap_or(0);
                    }
                    head.push_str(&line);
                }
                let mut body = vec![0; len];
                let _ = reader.read_exact(&mut body);
                let resp = format!(
                    "HTTP/1.1 200 OK\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{head}",
                    head.len()
                );
                let _ = stream.write_all(resp.as_bytes());
            });
        }
    });
    addr
}

struct Key {
    pair: EcdsaKeyPair,
    jwk: Value,
}

fn key() -> Key {
    let rng = SystemRandom::new();
    let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng).expect("gen");
    let pair = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, pkcs8.as_ref(), &rng)
        .expect("pair");
    let point = pair.public_key().as_ref().to_vec();
    let jwk = json!({
        "kty": "EC", "crv": "P-256", "alg": "ES256", "use": "sig", "kid": "test-1",
        "x": URL_SAFE_NO_PAD.encode(&point[1..33]),
        "y": URL_SAFE_NO_PAD.encode(&point[33..65]),
    });
    Key { pair, jwk }
}

fn b64(v: &Value) -> String {
    URL_SAFE_NO_PAD.encode(v.to_string())
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

fn claims(app: &str, scope: &str) -> Value {
    json!({ "iss": ISS, "aud": AUD, "sub": "alice", "iat": now(), "nbf": now() - 5,
            "exp": now() + 600, "jti": format!("j-{app}-{scope}"), "application": app,
            "scope": scope })
}

fn es256(key: &Key, claims: &Value) -> String {
    let input = format!(
        "{}.{}",
        b64(&json!({"alg": "ES256", "kid": "test-1", "typ": "JWT"})),
        b64(claims)
    );
    let sig = key
        .pair
        .sign(&SystemRandom::new(), input.as_bytes())
        .expect("sign");
    format!("{input}.{}", URL_SAFE_NO_PAD.encode(sig.as_ref()))
}

fn hs256_with_public_key(key: &Key, claims: &Value) -> String {
    let input = format!(
        "{}.{}",
        b64(&json!({"alg": "HS256", "kid": "test-1", "typ": "JWT"})),
        b64(claims)
    );
    let secret = ring::hmac::Key::new(ring::hmac::HMAC_SHA256, key.jwk.to_string().as_bytes());
    let tag = ring::hmac::sign(&secret, input.as_bytes());
    format!("{input}.{}", URL_SAFE_NO_PAD.encode(tag.as_ref()))
}

fn write_config(path: &Path, key: &Key, upstream: &str, password_hash: &str) {
    let key_digest = ring::digest::digest(&ring::digest::SHA256, API_KEY.as_bytes());
    let hex: String = key_digest
        .as_ref()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    let yaml = format!(
        r#"
security:
  issuers:
    - issuer: {ISS}
      audiences: [{AUD}]
      jwks: {{ "keys": [{jwk}] }}
  api_keys:
    - {{ sha256: "{hex}", application: app-key, subscriber: bob, scopes: [pets:read] }}
  basic_users:
    - {{ username: carol, password_hash: "{password_hash}", application: app-basic, scopes: [pets:read] }}
  subscriptions:
    - {{ api: /shop/v1, application: app-1, state: ACTIVE, tier: Gold }}
    - {{ api: /shop/v1, application: app-blocked, state: BLOCKED, tier: Gold }}
    - {{ api: /shop/v1, application: app-key, state: ACTIVE, tier: Silver }}
    - {{ api: /shop/v1, application: app-basic, state: ACTIVE, tier: Bronze }}
apis:
  - name: shop
    context: /shop
    version: v1
    endpoints: ["http://{upstream}"]
    auth: {{ oauth2: true, api_key: true, api_key_query: api_key, basic: true, backend_jwt: {{}} }}
    resources:
      - {{ path: /pets, methods: [GET], scopes: [pets:read] }}
      - {{ path: /admin, methods: [GET], scopes: [admin] }}
      - {{ path: /health, methods: [GET], auth: none }}
      - {{ path: "/*", methods: ["*"] }}
  - name: free
    context: /free
    version: v1
    endpoints: ["http://{upstream}"]
    resources:
      - {{ path: "/*", methods: ["*"] }}
"#,
        jwk = key.jwk
    );
    std::fs::write(path, yaml).expect("write config");
}

/// Status, response head (lower case) and body.
struct Reply {
    code: u16,
    head: String,
    body: String,
}

impl Reply {
    fn json_code(&self) -> String {
        serde_json::from_str::<Value>(&self.body)
            .ok()
            .and_then(|v| v["code"].as_str().map(str::to_owned))
            .unwrap_or_default()
    }
    fn challenged(&self) -> bool {
        self.head.contains("\nwww-authenticate:")
    }
}

fn call(url: &str, headers: &[&str]) -> Reply {
    let mut cmd = Command::new("curl");
    cmd.args(["-s", "-i", url]);
    for h in headers {
        cmd.args(["-H", h]);
    }
    let out = cmd.output().expect("curl runs");
    let text = String::from_utf8_lossy(&out.stdout).replace("\r\n", "\n");
    let (head, body) = text.split_once("\n\n").unwrap_or((&text, ""));
    let code = head
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    Reply {
        code,
        head: head.to_ascii_lowercase(),
        body: body.to_owned(),
    }
}

fn bearer(token: &str) -> String {
    format!("Authorization: Bearer {token}")
}

fn password_hash(password: &str) -> String {
    use argon2::password_hash::{PasswordHasher, SaltString};
    let salt = SaltString::encode_b64(b"turnpike-e2e-salt").expect("salt");
    argon2::Argon2::default()
        .hash_password(password.as_bytes(), &salt)
        .expect("hash")
        .to_string()
}

#[test]
fn secured_gateway_checks_every_credential_kind() {
    let dir = TempDir::new();
    let upstream = header_echo();
    let key = key();
    let cfg = dir.path().join("secured.yaml");
    write_config(&cfg, &key, &upstream, &password_hash("s3cret"));
    let (_gw, gw) = start_file_gateway(&cfg, &dir.path().join("data"), &[]);
    let url = |p: &str| format!("http://{gw}{p}");

    // A valid token passes; the upstream sees no Authorization, but a back-end JWT.
    let good = es256(&key, &claims("app-1", "pets:read"));
    let r = call(&url("/shop/v1/pets"), &[&bearer(&good)]);
    assert_eq!(r.code, 200, "{}", r.body);
    assert!(
        !r.body.to_ascii_lowercase().contains("authorization:"),
        "{}",
        r.body
    );
    assert!(
        r.body.to_ascii_lowercase().contains("x-jwt-assertion: ey"),
        "{}",
        r.body
    );
    // Cached the second time: same answer.
    assert_eq!(call(&url("/shop/v1/pets"), &[&bearer(&good)]).code, 200);

    // 401 with a challenge and a JSON code for every bad credential.
    let mut expired = claims("app-1", "pets:read");
    expired["exp"] = json!(now() - 3600);
    let mut early = claims("app-1", "pets:read");
    early["nbf"] = json!(now() + 3600);
    let mut wrong_iss = claims("app-1", "pets:read");
    wrong_iss["iss"] = json!("https://evil.test");
    let mut wrong_aud = claims("app-1", "pets:read");
    wrong_aud["aud"] = json!("someone-else");
    let mut bad_sig = es256(&key, &claims("app-1", "pets:read"));
    let flip = if bad_sig.ends_with('A') { "B" } else { "A" };
    bad_sig.replace_range(bad_sig.len() - 1.., flip);
    let c = claims("app-1", "pets:read");
    let alg_none = format!(
        "{}.{}.",
        b64(&json!({"alg": "none", "typ": "JWT"})),
        b64(&c)
    );
    let hs256 = hs256_with_public_key(&key, &c);
    let cases: Vec<(&str, String, &str)> = vec![
        ("expired", bearer(&es256(&key, &expired)), "expired_token"),
        (
            "nbf in the future",
            bearer(&es256(&key, &early)),
            "invalid_token",
        ),
        (
            "wrong issuer",
            bearer(&es256(&key, &wrong_iss)),
            "invalid_token",
        ),
        (
            "wrong audience",
            bearer(&es256(&key, &wrong_aud)),
            "invalid_token",
        ),
        ("bad signature", bearer(&bad_sig), "invalid_token"),
        ("alg none", bearer(&alg_none), ""),
        ("HS256 with the public key", bearer(&hs256), "invalid_token"),
        (
            "empty bearer",
            "Authorization: Bearer".into(),
            "malformed_credentials",
        ),
        (
            "two words",
            "Authorization: Bearer a b".into(),
            "malformed_credentials",
        ),
        ("unknown scheme", "Authorization: Token abc".into(), ""),
        (
            "basic not base64",
            "Authorization: Basic !!!".into(),
            "malformed_credentials",
        ),
        ("nothing", "X-Nothing: 1".into(), "missing_credentials"),
        ("bad API key", "apikey: nope".into(), "invalid_api_key"),
    ];
    for (name, header, code) in &cases {
        let r = call(&url("/shop/v1/pets"), &[header]);
        assert_eq!(r.code, 401, "{name}: {}", r.body);
        assert!(r.challenged(), "{name}: no WWW-Authenticate in {}", r.head);
        let got = r.json_code();
        assert!(!got.is_empty(), "{name}: no JSON code in {}", r.body);
        if !code.is_empty() {
            assert_eq!(&got, code, "{name}");
        }
    }

    // 403: not subscribed, blocked subscription, missing scope.
    for (name, token, path, code) in [
        (
            "unsubscribed",
            es256(&key, &claims("app-none", "pets:read")),
            "/shop/v1/pets",
            "not_subscribed",
        ),
        (
            "blocked",
            es256(&key, &claims("app-blocked", "pets:read")),
            "/shop/v1/pets",
            "subscription_blocked",
        ),
        (
            "missing scope",
            good.clone(),
            "/shop/v1/admin",
            "insufficient_scope",
        ),
    ] {
        let r = call(&url(path), &[&bearer(&token)]);
        assert_eq!(
            (r.code, r.json_code().as_str()),
            (403, code),
            "{name}: {}",
            r.body
        );
    }

    // API key in a header and in the query; neither reaches the upstream.
    let r = call(&url("/shop/v1/pets"), &[&format!("apikey: {API_KEY}")]);
    assert_eq!(r.code, 200, "{}", r.body);
    assert!(!r.body.contains(API_KEY), "{}", r.body);
    let r = call(
        &url(&format!("/shop/v1/pets?api_key={API_KEY}&page=2")),
        &[],
    );
    assert_eq!(r.code, 200, "{}", r.body);
    assert!(r.body.starts_with("GET /pets?page=2 "), "{}", r.body);

    // HTTP Basic: right and wrong password.
    let basic = |u: &str, p: &str| {
        format!(
            "Authorization: Basic {}",
            STANDARD.encode(format!("{u}:{p}"))
        )
    };
    let r = call(&url("/shop/v1/pets"), &[&basic("carol", "s3cret")]);
    assert_eq!(r.code, 200, "{}", r.body);
    let r = call(&url("/shop/v1/pets"), &[&basic("carol", "wrong")]);
    assert_eq!(
        (r.code, r.json_code().as_str()),
        (401, "invalid_credentials")
    );
    assert!(r.challenged());

    // Open resource of a secured API, and an API without auth.
    let r = call(&url("/shop/v1/health"), &[]);
    assert_eq!(r.code, 200, "{}", r.body);
    assert_eq!(call(&url("/free/v1/anything"), &[]).code, 200);
}

#[test]
fn bad_security_spec_is_refused_with_its_line() {
    let dir = TempDir::new();
    let cfg = dir.path().join("bad.yaml");
    std::fs::write(
        &cfg,
        "security:\n  api_keys:\n    - { sha256: nothex, application: a, subscriber: b }\napis:\n  - name: x\n    context: /x\n    version: v1\n    endpoints: [\"http://127.0.0.1:1\"]\n    auth: { api_key: true, oauth2: false }\n    resources: [{ path: \"/*\", methods: [\"*\"] }]\n",
    )
    .expect("write");
    let out = Command::new(env!("CARGO_BIN_EXE_turnpike"))
        .args([
            "gateway",
            "--config",
            cfg.to_str().expect("utf-8 path"),
            "--http-port",
            "0",
            "--https-port",
            "off",
            "--data-dir",
            dir.path().join("data").to_str().expect("utf-8 path"),
        ])
        .output()
        .expect("run");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!out.status.success(), "{text}");
    assert!(text.contains("line 3"), "{text}");
    assert!(text.contains("security.api_keys[0].sha256"), "{text}");
}

/// Issue 25 items 9 and 10 through the real binary: time claims are NumericDates
/// (fractional ones read, malformed ones refused); what a client may not tell the back
/// end (a back-end JWT on an open resource, forwarding headers from a peer outside
/// `--trusted-proxies`, URL overrides) never reaches it.
#[test]
fn numeric_dates_and_what_a_client_may_not_forward() {
    let dir = TempDir::new();
    let upstream = header_echo();
    let key = key();
    let cfg = dir.path().join("secured.yaml");
    write_config(&cfg, &key, &upstream, &password_hash("s3cret"));
    let (_gw, gw) = start_file_gateway(
        &cfg,
        &dir.path().join("data"),
        &["--trusted-proxies", "10.0.0.0/8"],
    );
    let url = |p: &str| format!("http://{gw}{p}");
    let t = now() as f64;
    let with = |field: &str, v: Value| {
        let mut c = claims("app-1", "pets:read");
        c[field] = v;
        bearer(&es256(&key, &c))
    };
    let r = call(&url("/shop/v1/pets"), &[&with("exp", json!(t + 600.5))]);
    assert_eq!(r.code, 200, "a fractional exp is a date: {}", r.body);
    for (name, header) in [
        (
            "fractional nbf in the future",
            with("nbf", json!(t + 3600.5)),
        ),
        ("nbf as a string", with("nbf", json!("2099-01-01"))),
        ("huge exp", with("exp", json!(1e300))),
        ("iat as a string", with("iat", json!("yesterday"))),
    ] {
        let r = call(&url("/shop/v1/pets"), &[&header]);
        assert_eq!(
            (r.code, r.json_code().as_str()),
            (401, "invalid_token"),
            "{name}: {}",
            r.body
        );
    }

    // An open resource of an API with a back-end JWT: the client's own never passes.
    let r = call(
        &url("/shop/v1/health"),
        &["X-JWT-Assertion: eyJhbGciOiJub25lIn0.eyJzdWIiOiJhZG1pbiJ9."],
    );
    assert_eq!(r.code, 200, "{}", r.body);
    assert!(
        !r.body.to_ascii_lowercase().contains("x-jwt-assertion"),
        "{}",
        r.body
    );
    // The loopback peer is no trusted proxy: its forwarding headers go, the list is
    // the peer alone; URL overrides go from anyone.
    let r = call(
        &url("/free/v1/anything"),
        &[
            "X-Forwarded-For: 6.6.6.6",
            "X-Forwarded-Host: evil.example",
            "X-Real-IP: 6.6.6.6",
            "Forwarded: for=6.6.6.6",
            "X-Original-URL: /admin",
            "X-Rewrite-URL: /admin",
        ],
    );
    assert_eq!(r.code, 200, "{}", r.body);
    let seen = r.body.to_ascii_lowercase();
    assert!(seen.contains("x-forwarded-for: 127.0.0.1\n"), "{seen}");
    for gone in ["6.6.6.6", "evil.example", "x-original-url", "x-rewrite-url"] {
        assert!(!seen.contains(gone), "{gone} reached the back end: {seen}");
    }
}
