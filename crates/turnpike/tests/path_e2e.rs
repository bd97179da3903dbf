//! Odd request paths end to end with the real binary (issue 11, defect 1): a secured API
//! with an open resource `/public/*` and a scoped `/admin/*` behind an endpoint with a
//! base path. Requests go over raw sockets (curl would normalise `..` itself), and a
//! recording upstream shows what reached the back end. Every form of `..` is either
//! resolved before routing and authorisation (so it is judged, and forwarded, as the
//! path it names) or refused with 400 `invalid_path`; none reaches the back end as sent.

mod support;

#[path = "../../turnpike-config/tests/support/lenient_backend.rs"]
mod lenient_backend;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;
use support::{start_file_gateway, TempDir};

const API_KEY: &str = "read-only-key-77";

/// An upstream that records each request line and answers 200 with it as the body.
fn recording_upstream() -> (String, Arc<Mutex<Vec<String>>>) {
    upstream(|line| line.to_owned())
}

/// An upstream that records what `answer` makes of each request line and answers 200
/// with it as the body.
fn upstream(answer: fn(&str) -> String) -> (String, Arc<Mutex<Vec<String>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind upstream");
    let addr = listener.local_addr().expect("addr").to_string();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let log = log.clone();
            std::thread::spawn(move || {
                let mut reader = BufReader::new(stream.try_clone().expect("clone"));
                loop {
                    let mut request_line = String::new();
                    if reader.read_line(&mut request_line).unwrap_or(0) == 0 {
                        return;
                    }
                    loop {
                        let mut line = String::new();
                        if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                            break;
                        }
                    }
                    let line = answer(request_line.trim_end());
                    log.lock().expect("log").push(line.clone());
                    let resp = format!(
                        "HTTP/1.1 200 OK\r\ncontent-length: {}\r\n\r\n{line}",
                        line.len()
                    );
                    if stream.write_all(resp.as_bytes()).is_err() {
                        return;
                    }
                }
            });
        }
    });
    (addr, seen)
}

fn sha256_hex(key: &str) -> String {
    let digest = ring::digest::digest(&ring::digest::SHA256, key.as_bytes());
    digest.as_ref().iter().map(|b| format!("{b:02x}")).collect()
}

fn write_config(path: &std::path::Path, upstream: &str) {
    let hex = sha256_hex(API_KEY);
    let yaml = format!(
        r#"
security:
  api_keys:
    - {{ sha256: "{hex}", application: app-ro, subscriber: bob, scopes: [pets:read] }}
  subscriptions:
    - {{ api: /shop/v1, application: app-ro, state: ACTIVE, tier: Gold }}
apis:
  - name: shop
    context: /shop
    version: v1
    endpoints: ["http://{upstream}/backend"]
    auth: {{ api_key: true }}
    resources:
      - {{ path: "/public/*", methods: [GET], auth: none }}
      - {{ path: /pets, methods: [GET], scopes: [pets:read] }}
      - {{ path: "/admin/*", methods: [GET], scopes: [admin] }}
      - {{ path: "/*", methods: [GET], scopes: [pets:read] }}
"#
    );
    std::fs::write(path, yaml).expect("write config");
}

/// Sends `GET {path}` exactly as given; returns the status and the JSON `code` (or body).
fn get(gw: &str, path: &str, key: bool) -> (u16, String) {
    get_with(gw, path, key.then_some(API_KEY))
}

/// [`get`] with this API key, or none.
fn get_with(gw: &str, path: &str, key: Option<&str>) -> (u16, String) {
    let mut s = TcpStream::connect(gw).expect("connect gateway");
    s.set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    let key_header = key.map_or(String::new(), |k| format!("apikey: {k}\r\n"));
    let req =
        format!("GET {path} HTTP/1.1\r\nHost: gw.test\r\n{key_header}connection: close\r\n\r\n");
    s.write_all(req.as_bytes()).expect("send");
    let mut text = String::new();
    let _ = s.read_to_string(&mut text);
    let code = text
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    let body = text.split_once("\r\n\r\n").map_or("", |(_, b)| b);
    let json_code = serde_json::from_str::<Value>(body)
        .ok()
        .and_then(|v| v["code"].as_str().map(str::to_owned));
    (code, json_code.unwrap_or_else(|| body.to_owned()))
}

#[test]
fn dot_segments_and_encoded_separators_cannot_bypass_routing_or_auth() {
    let dir = TempDir::new();
    let (upstream, seen) = recording_upstream();
    let cfg = dir.path().join("paths.yaml");
    write_config(&cfg, &upstream);
    let (_gw, gw) = start_file_gateway(&cfg, &dir.path().join("data"), &[]);

    // The open resource works, and the back end gets the endpoint's base path.
    assert_eq!(
        get(&gw, "/shop/v1/public/info", false),
        (200, "GET /backend/public/info HTTP/1.1".into())
    );

    // `..` out of the open resource is judged as the path it names: /pets needs a key.
    for path in [
        "/shop/v1/public/../pets",
        "/shop/v1/public/%2e%2e/pets",
        "/shop/v1/public/%2E%2e/pets",
        "/shop/v1/public/.%2E/pets",
        "/shop/v1/public/./../pets",
        "/shop/v1/public//../pets",
    ] {
        assert_eq!(
            get(&gw, path, false),
            (401, "missing_credentials".into()),
            "{path}"
        );
    }
    // With the read-only key the same request reaches /pets, forwarded normalised.
    assert_eq!(
        get(&gw, "/shop/v1/public/../pets", true),
        (200, "GET /backend/pets HTTP/1.1".into())
    );

    // A read-only key cannot reach the admin resource through a detour.
    for path in [
        "/shop/v1/x/../admin/users",
        "/shop/v1/pets/%2e%2e/admin/users",
        "/shop/v1/public/../admin/users",
    ] {
        assert_eq!(
            get(&gw, path, true),
            (403, "insufficient_scope".into()),
            "{path}"
        );
    }

    // Forms that back ends read differently are refused outright.
    for path in [
        "/shop/v1/public/..%2fpets",
        "/shop/v1/public/..%2Fadmin/users",
        "/shop/v1/public/..%5cpets",
        "/shop/v1/public/..;/pets",
        "/shop/v1/public/%2e%2e;x/pets",
        "/shop/v1/public/a%00",
        "/shop/v1/public/a%zz",
        "/shop/../../backend/admin",
    ] {
        assert_eq!(
            get(&gw, path, false),
            (400, "invalid_path".into()),
            "{path}"
        );
    }

    // Climbing out of the API lands on whatever the normal path names (no API here).
    assert_eq!(
        get(&gw, "/shop/v1/public/../../../backend/admin", true),
        (404, "not_found".into())
    );

    // Harmless odd forms are normalised and forwarded normalised.
    assert_eq!(
        get(&gw, "/shop/v1//public/./a/%7Eb", false),
        (200, "GET /backend/public/a/~b HTTP/1.1".into())
    );
    assert_eq!(
        get(&gw, "/shop/v1/public/x/../q?a=%2e%2e/b&c=1", false),
        (200, "GET /backend/public/q?a=%2e%2e/b&c=1 HTTP/1.1".into())
    );

    // Nothing but normal paths ever reached the back end.
    let seen = seen.lock().expect("log").clone();
    assert_eq!(
        seen,
        [
            "GET /backend/public/info HTTP/1.1",
            "GET /backend/pets HTTP/1.1",
            "GET /backend/public/a/~b HTTP/1.1",
            "GET /backend/public/q?a=%2e%2e/b&c=1 HTTP/1.1",
        ]
    );
}

const ADMIN_KEY: &str = "admin-key-3141";

/// The servlet-like back end's answer: which of its servlets serves the request line's
/// path as a servlet container, IIS and friends read it (`lenient_backend`), and the
/// line. Below `/iis` it ignores letter case.
fn servlet(line: &str) -> String {
    let path = line.split(' ').nth(1).unwrap_or("");
    let path = path.split('?').next().unwrap_or(path);
    let iis = path.starts_with("/iis/");
    let base = if iis { "iis" } else { "servlet" };
    if lenient_backend::is_admin(path, base, iis) {
        format!("ADMIN {line}")
    } else {
        format!("DEFAULT {line}")
    }
}

fn write_servlet_config(path: &std::path::Path, upstream: &str) {
    let hex = sha256_hex(ADMIN_KEY);
    let resources = r#"
    resources:
      - { path: "/admin/*", methods: [GET], scopes: [admin] }
      - { path: "/*", methods: [GET], auth: none }"#;
    let yaml = format!(
        r#"
security:
  api_keys:
    - {{ sha256: "{hex}", application: app-admin, subscriber: alice, scopes: [admin] }}
  subscriptions:
    - {{ api: /tc/v1, application: app-admin, state: ACTIVE, tier: Gold }}
    - {{ api: /lax/v1, application: app-admin, state: ACTIVE, tier: Gold }}
apis:
  - name: tomcat
    context: /tc
    version: v1
    endpoints: ["http://{upstream}/servlet"]
    auth: {{ api_key: true }}{resources}
  - name: lax
    context: /lax
    version: v1
    endpoints: ["http://{upstream}/iis"]
    auth: {{ api_key: true }}
    paths: {{ matrix_parameters: strip, case_insensitive: true }}{resources}
"#
    );
    std::fs::write(path, yaml).expect("write config");
}

/// The forms of issue 25 (item 1) that a lenient back end serves from `/admin`.
const ADMIN_FORMS: &[&str] = &[
    "/admin;/users",
    "/admin;jsessionid=x/users",
    "/admin;a=b;c=d/users",
    "/admin./users",
    "/admin%20/users",
    "/admin%09/users",
    "/x%252f..%252fadmin/users",
    "/x/%252e%252e/admin/users",
    "/x%C0%AF..%C0%AFadmin/users",
    "/x%E0%80%AF..%E0%80%AFadmin/users",
    "/%EF%BD%81dmin/users",
    "/ａｄｍｉｎ/users",
    "/admin%3Bx/users",
];

/// Only a case-insensitive back end reads these as `/admin`.
const CASE_FORMS: &[&str] = &["/Admin/users", "/ADMIN;a=b/users", "/adm%C4%B1n/users"];

/// Issue 25 item 1 through the real binary: behind an API with a scoped `/admin/*` and an
/// open `/*`, a servlet-like back end (parameters stripped, trailing dots and spaces
/// dropped, decoded twice, overlong and fullwidth forms read as ASCII, and any case below
/// `/iis`) never serves its admin servlet to a caller without the admin key: every form
/// is refused with 400 `invalid_path` or judged by the `/admin/*` rules (401). An API that
/// opts in (`paths: { matrix_parameters: strip, case_insensitive: true }`) forwards the
/// path it judged: parameters gone, lower case.
#[test]
fn path_parameters_and_lenient_forms_cannot_reach_a_servlets_admin() {
    let dir = TempDir::new();
    let (upstream, seen) = upstream(servlet);
    let cfg = dir.path().join("servlet.yaml");
    write_servlet_config(&cfg, &upstream);
    let (_gw, gw) = start_file_gateway(&cfg, &dir.path().join("data"), &[]);

    let refused_or_admin = |path: &str| {
        let (status, code) = get_with(&gw, path, None);
        assert!(
            (status, code.as_str()) == (400, "invalid_path")
                || (status, code.as_str()) == (401, "missing_credentials"),
            "{path}: {status} {code}"
        );
    };
    for (api, base, fold) in [("/tc/v1", "servlet", false), ("/lax/v1", "iis", true)] {
        let forms = ADMIN_FORMS
            .iter()
            .chain(if fold { CASE_FORMS } else { &[] });
        for form in forms {
            let backend_path = format!("/{base}{form}");
            assert!(
                lenient_backend::is_admin(&backend_path, base, fold),
                "the back end must read {backend_path} as its admin servlet"
            );
            refused_or_admin(&format!("{api}{form}"));
        }
    }
    // `;` is refused by default, even with the key; the open resource still works.
    assert_eq!(
        get_with(&gw, "/tc/v1/admin;jsessionid=x/users", Some(ADMIN_KEY)),
        (400, "invalid_path".into())
    );
    assert_eq!(
        get_with(&gw, "/tc/v1/public;v=1/info", None),
        (400, "invalid_path".into())
    );
    assert_eq!(
        get_with(&gw, "/tc/v1/public/info", None),
        (200, "DEFAULT GET /servlet/public/info HTTP/1.1".into())
    );
    // Nothing reached the admin servlet without the key.
    let before = seen.lock().expect("log").clone();
    assert!(
        before.iter().all(|l| l.starts_with("DEFAULT")),
        "{before:?}"
    );

    // The opted-in API judges and forwards the stripped, lower-case path.
    for (path, forwarded) in [
        ("/lax/v1/admin;jsessionid=x/users", "/iis/admin/users"),
        ("/lax/v1/Admin;a=b;c=d/Users?q=A", "/iis/admin/users?q=A"),
        ("/LAX/V1/ADMIN/users", "/iis/admin/users"),
    ] {
        assert_eq!(
            get_with(&gw, path, Some(ADMIN_KEY)),
            (200, format!("ADMIN GET {forwarded} HTTP/1.1")),
            "{path}"
        );
    }
    assert_eq!(
        get_with(&gw, "/lax/v1/Public;v=1/Info", None),
        (200, "DEFAULT GET /iis/public/info HTTP/1.1".into())
    );
    // The strict API's templates stay case-sensitive: `/Admin` is not `/admin` there.
    assert_eq!(
        get_with(&gw, "/tc/v1/Admin/users", Some(ADMIN_KEY)),
        (200, "DEFAULT GET /servlet/Admin/users HTTP/1.1".into())
    );
}
