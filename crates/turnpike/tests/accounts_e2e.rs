//! Users and applications as security objects, end to end with real processes (`turnpike
//! control-plane` on SQLite, `turnpike gateway --control-plane`, `turnpike echo`).
//! A subscriber's application holds a JWT, an opaque token and an API key, all 200 at
//! the gateway. An admin disables the application: all three are refused (401) within
//! one snapshot, and come back when it is enabled again. The admin deletes the user:
//! the tokens and the key minted before are refused, and minting after is refused at
//! the token endpoint. A request without a credential is told both schemes the API takes
//! (`WWW-Authenticate: Bearer ..., ApiKey ... header="apikey"`).

mod support;

use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use support::{start, start_env, TempDir};

const TOKEN: &str = "accounts-e2e-gateway-token";
const PASSWORD: &str = "accounts-e2e-admin-password";

/// `curl`: (status, JSON body).
fn http(method: &str, url: &str, args: &[&str], body: Option<&Value>) -> (u16, Value) {
    let mut cmd = Command::new("curl");
    cmd.args(["-s", "-o", "-", "-w", "\n%{http_code}", "-X", method, url]);
    cmd.args(args);
    if let Some(b) = body {
        cmd.args(["-H", "content-type: application/json", "-d", &b.to_string()]);
    }
    let out = cmd.output().expect("curl runs");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let (body, code) = text.rsplit_once('\n').unwrap_or(("", "0"));
    (
        code.trim().parse().unwrap_or(0),
        serde_json::from_str(body).unwrap_or(Value::Null),
    )
}

/// A 2xx REST call as `user`.
fn rest(cp: &str, user: &str, method: &str, path: &str, body: Option<Value>) -> Value {
    let password = if user == "admin" {
        PASSWORD
    } else {
        "dora-password-1"
    };
    let auth = format!("{user}:{password}");
    let (code, v) = http(
        method,
        &format!("http://{cp}{path}"),
        &["-u", &auth],
        body.as_ref(),
    );
    assert!((200..300).contains(&code), "{method} {path}: {code} {v}");
    v
}

/// The client_credentials grant: (status, access token).
fn mint(cp: &str, ck: &str, cs: &str) -> (u16, String) {
    let auth = format!("{ck}:{cs}");
    let (code, v) = http(
        "POST",
        &format!("http://{cp}/oauth2/token"),
        &["-u", &auth, "-d", "grant_type=client_credentials"],
        None,
    );
    (code, v["access_token"].as_str().unwrap_or("").to_string())
}

/// The `WWW-Authenticate` values of a request without credentials.
fn challenges(url: &str) -> String {
    let out = Command::new("curl")
        .args(["-s", "-o", "/dev/null", "-D", "-", url])
        .output()
        .expect("curl runs");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_once(':'))
        .filter(|(k, _)| k.eq_ignore_ascii_case("www-authenticate"))
        .map(|(_, v)| v.trim().to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

fn status_with(url: &str, header: &str) -> u16 {
    http("GET", url, &["-H", header], None).0
}

/// Polls until every credential (request header) answers `code` at `url`; returns how
/// long that took.
fn wait_all(url: &str, headers: &[String], code: u16, limit: Duration) -> Duration {
    let start = Instant::now();
    loop {
        let got: Vec<u16> = headers.iter().map(|h| status_with(url, h)).collect();
        if got.iter().all(|c| *c == code) {
            return start.elapsed();
        }
        assert!(
            start.elapsed() < limit,
            "{url} answers {got:?}, expected {code} for every credential"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// An application of dora's with keys of `token_type`: (id, consumer key, secret).
fn app_with_keys(cp: &str, api_id: &str, name: &str, token_type: &str) -> (String, String, String) {
    let app = rest(
        cp,
        "dora",
        "POST",
        "/api/am/devportal/v1/applications",
        Some(json!({"name": name})),
    );
    let id = app["id"].as_str().expect("app id").to_string();
    rest(
        cp,
        "dora",
        "POST",
        "/api/am/devportal/v1/subscriptions",
        Some(json!({"applicationId": id, "apiId": api_id, "throttlingPolicy": "Unlimited"})),
    );
    let keys = rest(
        cp,
        "dora",
        "POST",
        &format!("/api/am/devportal/v1/applications/{id}/generate-keys"),
        Some(json!({"tokenType": token_type, "grantTypes": ["client_credentials"]})),
    );
    (
        id,
        keys["consumerKey"].as_str().expect("ck").to_string(),
        keys["consumerSecret"].as_str().expect("cs").to_string(),
    )
}

#[test]
fn disabled_applications_and_deleted_users_lose_their_credentials_at_the_gateway() {
    let dir = TempDir::new();
    let db = format!("sqlite://{}", dir.path().join("cp.db").display());
    let (_echo, echo) = start(&["echo", "--port", "0"], "echo listening on http://");
    let (_cp, cp) = start_env(
        &[
            "control-plane",
            "--database",
            &db,
            "--port",
            "0",
            "--gateway-token",
            TOKEN,
        ],
        &[("TURNPIKE_ADMIN_PASSWORD", PASSWORD)],
        "control plane listening on http://",
    );
    let gw_data = dir.path().join("gw");
    let (_gw, gw) = start(
        &[
            "gateway",
            "--control-plane",
            &format!("http://{cp}"),
            "--gateway-token",
            TOKEN,
            "--gateway-id",
            "gw-accounts",
            "--http-port",
            "0",
            "--https-port",
            "off",
            "--data-dir",
            gw_data.to_str().expect("utf-8 path"),
        ],
        "gateway listening on http://",
    );

    rest(
        &cp,
        "admin",
        "POST",
        "/api/am/admin/v1/users",
        Some(json!({"name": "dora", "password": "dora-password-1", "roles": ["subscriber"]})),
    );
    let api = rest(
        &cp,
        "admin",
        "POST",
        "/api/am/publisher/v1/apis",
        Some(json!({"name": "Shop", "context": "/shop", "version": "v1",
            "endpoints": [format!("http://{echo}")], "resources": [{"path": "/*", "methods": ["GET"]}]})),
    );
    let api_id = api["id"].as_str().expect("api id").to_string();
    rest(
        &cp,
        "admin",
        "PUT",
        &format!("/api/am/publisher/v1/apis/{api_id}/security"),
        Some(json!({"oauth2": true, "api_key": true})),
    );
    rest(
        &cp,
        "admin",
        "POST",
        &format!("/api/am/publisher/v1/apis/change-lifecycle?apiId={api_id}&action=Publish"),
        None,
    );

    let (app, ck, cs) = app_with_keys(&cp, &api_id, "jwt-app", "JWT");
    let (_, ock, ocs) = app_with_keys(&cp, &api_id, "opaque-app", "OPAQUE");
    let key = rest(
        &cp,
        "dora",
        "POST",
        &format!("/api/am/devportal/v1/applications/{app}/api-keys"),
        Some(json!({})),
    )["apikey"]
        .as_str()
        .expect("apikey")
        .to_string();
    let (code, jwt) = mint(&cp, &ck, &cs);
    assert_eq!(code, 200);
    let (code, opaque) = mint(&cp, &ock, &ocs);
    assert_eq!(code, 200);
    let url = format!("http://{gw}/shop/v1/items");
    let bearer = |t: &str| format!("authorization: Bearer {t}");
    let jwt_app_credentials = [bearer(&jwt), format!("apikey: {key}")];
    let all = [bearer(&jwt), bearer(&opaque), format!("apikey: {key}")];
    wait_all(&url, &all, 200, Duration::from_secs(10));
    // Without a credential: 401 naming both schemes the API takes.
    let c = challenges(&url);
    assert!(
        c.contains("Bearer realm=\"turnpike\"")
            && c.contains("ApiKey realm=\"turnpike\", header=\"apikey\""),
        "{c}"
    );

    // An admin disables the JWT application: its token and key stop; enabled: back.
    let app_path = format!("/api/am/admin/v1/applications/{app}");
    rest(
        &cp,
        "admin",
        "PATCH",
        &app_path,
        Some(json!({"status": "DISABLED"})),
    );
    let took = wait_all(&url, &jwt_app_credentials, 401, Duration::from_secs(5));
    eprintln!("disabled application refused at the gateway after {took:?}");
    assert_eq!(
        status_with(&url, &bearer(&opaque)),
        200,
        "another application is untouched"
    );
    assert_eq!(
        mint(&cp, &ck, &cs).0,
        401,
        "no new token for a disabled application"
    );
    rest(
        &cp,
        "admin",
        "PATCH",
        &app_path,
        Some(json!({"status": "ACTIVE"})),
    );
    wait_all(&url, &all, 200, Duration::from_secs(5));

    // Deleting the user: every credential minted before is refused within one snapshot,
    // and minting after is refused.
    rest(&cp, "admin", "DELETE", "/api/am/admin/v1/users/dora", None);
    let took = wait_all(&url, &all, 401, Duration::from_secs(5));
    eprintln!("deleted user's credentials refused at the gateway after {took:?}");
    assert_eq!(mint(&cp, &ck, &cs).0, 401, "no token after the deletion");
    assert_eq!(
        mint(&cp, &ock, &ocs).0,
        401,
        "no opaque token after the deletion"
    );
}
