//! Mediation end to end with the real binary and real processes:
//! - a DB-less `turnpike gateway --config` whose transformation reads the caller's token
//!   claims (`$identity.claims.tier`, kept by the JWT validator because the program
//!   names it), its subject and application; tokens minted here (ES256 with `ring`);
//! - `turnpike control-plane` + `turnpike gateway --control-plane`, the API published
//!   with `turnpike apply` carrying `mediation:` at API and resource level: the gateway
//!   applies both, the export carries both, and a program that does not compile is
//!   refused by apply with its field named.

mod support;

use std::path::Path;
use std::process::Command;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use ring::rand::SystemRandom;
use ring::signature::{EcdsaKeyPair, KeyPair, ECDSA_P256_SHA256_FIXED_SIGNING};
use serde_json::{json, Value};
use support::{start, start_file_gateway, wait_for_status, TempDir, BIN};

const ISS: &str = "https://idp.test";
const TOKEN: &str = "mediation-e2e-gateway-token";
const PASSWORD: &str = "mediation-e2e-password";

/// `POST url` with a JSON body and extra headers: status and body.
fn post(url: &str, body: &str, headers: &[&str]) -> (u16, String) {
    let mut cmd = Command::new("curl");
    cmd.args(["-s", "-o", "-", "-w", "\n%{http_code}"]).args([
        "-H",
        "content-type: application/json",
        "--data-binary",
        body,
    ]);
    for h in headers {
        cmd.args(["-H", h]);
    }
    let out = cmd.arg(url).output().expect("curl runs");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let (body, code) = text.rsplit_once('\n').unwrap_or(("", "0"));
    (code.trim().parse().unwrap_or(0), body.to_owned())
}

fn json(body: &str) -> Value {
    serde_json::from_str(body).unwrap_or_else(|e| panic!("not JSON ({e}): {body}"))
}

fn es256_token(pair: &EcdsaKeyPair, claims: &Value) -> String {
    let b64 = |v: &Value| URL_SAFE_NO_PAD.encode(v.to_string());
    let input = format!(
        "{}.{}",
        b64(&json!({"alg": "ES256", "kid": "k1", "typ": "JWT"})),
        b64(claims)
    );
    let sig = pair
        .sign(&SystemRandom::new(), input.as_bytes())
        .expect("sign");
    format!("{input}.{}", URL_SAFE_NO_PAD.encode(sig.as_ref()))
}

#[test]
fn a_transformation_reads_the_callers_token_claims() {
    let dir = TempDir::new();
    let (_echo, echo) = start(&["echo", "--port", "0"], "echo listening on http://");
    let rng = SystemRandom::new();
    let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng).expect("gen");
    let pair = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, pkcs8.as_ref(), &rng)
        .expect("pair");
    let point = pair.public_key().as_ref().to_vec();
    let jwk = json!({
        "kty": "EC", "crv": "P-256", "alg": "ES256", "use": "sig", "kid": "k1",
        "x": URL_SAFE_NO_PAD.encode(&point[1..33]),
        "y": URL_SAFE_NO_PAD.encode(&point[33..65]),
    });
    let yaml = format!(
        r#"security:
  issuers:
    - issuer: {ISS}
      audiences: [turnpike]
      jwks: {{ "keys": [{jwk}] }}
  subscriptions:
    - {{ api: /orders/v1, application: app-1, state: ACTIVE, tier: Unlimited }}
apis:
  - name: orders
    context: /orders
    version: v1
    endpoints: ["http://{echo}"]
    auth: {{ oauth2: true }}
    mediation:
      request:
        body:
          jq: '{{order: ., tier: $identity.claims.tier, unit: $identity.claims["org.unit"], who: $identity.subject, app: $identity.app}}'
    resources:
      - {{ path: "/*", methods: [POST] }}
"#
    );
    let cfg = dir.path().join("gateway.yaml");
    std::fs::write(&cfg, yaml).expect("write config");
    let (_gw, gw) = start_file_gateway(&cfg, &dir.path().join("data"), &[]);
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let token = es256_token(
        &pair,
        &json!({"iss": ISS, "aud": "turnpike", "sub": "alice", "iat": now, "exp": now + 600,
                "application": "app-1", "tier": "gold", "org": {"unit": "sales"}, "secret": "x"}),
    );
    let (code, body) = post(
        &format!("http://{gw}/orders/v1/new"),
        "{\"n\":[1]}",
        &[&format!("authorization: Bearer {token}")],
    );
    assert_eq!(code, 200, "{body}");
    assert_eq!(
        json(&body),
        json!({"order": {"n": [1]}, "tier": "gold", "unit": "sales", "who": "alice", "app": "app-1"})
    );
}

fn apply(file: &Path, cp: &str) -> std::process::Output {
    Command::new(BIN)
        .args(["apply", "-f", file.to_str().expect("utf-8 path")])
        .args([
            "--control-plane",
            &format!("http://{cp}"),
            "--user",
            "admin",
        ])
        .env("TURNPIKE_PASSWORD", PASSWORD)
        .env("TURNPIKE_LOG", "warn")
        .output()
        .expect("run turnpike apply")
}

#[test]
fn apply_carries_mediation_to_a_control_planes_gateways() {
    let dir = TempDir::new();
    let (_echo, echo) = start(&["echo", "--port", "0"], "echo listening on http://");
    let (_cp, cp) = support::sqlite_control_plane(dir.path(), "turnpike.db", TOKEN, PASSWORD);
    let (_gw, gw) = start(
        &[
            "gateway",
            "--control-plane",
            &format!("http://{cp}"),
            "--gateway-token",
            TOKEN,
            "--gateway-id",
            "gw-1",
            "--http-port",
            "0",
            "--https-port",
            "off",
            "--data-dir",
            dir.path().join("gw").to_str().expect("utf-8 path"),
        ],
        "gateway listening on http://",
    );
    let file = dir.path().join("apis.yaml");
    let yaml = format!(
        r#"apis:
  - name: shop
    context: /shop
    version: v1
    endpoints: ["http://{echo}"]
    mediation:
      request:
        body: {{ jq: '{{wrapped: ., method: $method}}' }}
      response:
        headers: {{ set: {{ x-mediated: "yes" }} }}
    resources:
      - path: /orders/{{id}}
        methods: [POST]
        mediation:
          request:
            body: {{ jq: '{{id: ($path.id | tonumber), lines: .}}' }}
      - {{ path: "/*", methods: [GET, POST] }}
"#
    );
    std::fs::write(&file, &yaml).expect("write apis file");
    let out = apply(&file, &cp);
    assert!(
        out.status.success(),
        "apply failed: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    wait_for_status(
        &format!("http://{gw}/shop/v1/x"),
        200,
        Duration::from_secs(10),
    );
    let (code, body) = post(&format!("http://{gw}/shop/v1/x"), "[\"a\"]", &[]);
    assert_eq!(code, 200, "{body}");
    assert_eq!(json(&body), json!({"wrapped": ["a"], "method": "POST"}));
    let (code, body) = post(&format!("http://{gw}/shop/v1/orders/12"), "[]", &[]);
    assert_eq!((code, json(&body)), (200, json!({"id": 12, "lines": []})));
    let head = Command::new("curl")
        .args(["-s", "-D", "-", "-o", "/dev/null"])
        .arg(format!("http://{gw}/shop/v1/x"))
        .output()
        .expect("curl");
    assert!(
        String::from_utf8_lossy(&head.stdout)
            .to_ascii_lowercase()
            .contains("x-mediated: yes"),
        "{}",
        String::from_utf8_lossy(&head.stdout)
    );

    // The export carries both levels.
    let out = Command::new("curl")
        .args(["-s", "-u", &format!("admin:{PASSWORD}")])
        .args(["-H", "accept: application/json"])
        .arg(format!("http://{cp}/api/am/admin/v1/export"))
        .output()
        .expect("curl");
    let exported = json(&String::from_utf8_lossy(&out.stdout));
    let shop = &exported["apis"][0];
    assert_eq!(
        shop["mediation"]["request"]["body"]["jq"], "{wrapped: ., method: $method}",
        "{exported}"
    );
    assert_eq!(
        shop["resources"][0]["mediation"]["request"]["body"]["jq"],
        "{id: ($path.id | tonumber), lines: .}"
    );

    // A program that does not compile: apply fails naming the field, nothing changes.
    std::fs::write(&file, yaml.replace("{wrapped: .,", "{wrapped: .,,")).expect("write");
    let out = apply(&file, &cp);
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!out.status.success(), "{said}");
    assert!(said.contains("mediation.request.body.jq"), "{said}");
    let (_, body) = post(&format!("http://{gw}/shop/v1/x"), "1", &[]);
    assert_eq!(json(&body), json!({"wrapped": 1, "method": "POST"}));
}
