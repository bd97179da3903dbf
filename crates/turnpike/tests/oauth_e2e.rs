//! OAuth2 end to end with real processes: `turnpike control-plane` (SQLite), `turnpike
//! gateway --control-plane` and `turnpike echo`. Through the REST APIs an API is created
//! and published, an application subscribes and gets keys; the independent `oauth2` crate
//! obtains a token by client_credentials; the JWT is verified with p256 against
//! `/oauth2/jwks`; the gateway answers 200 with it, 403 once the subscription is blocked,
//! 401 once the token is revoked (both within a couple of snapshots, although the
//! gateway cached the token); the password grant's refresh token rotates and a replay
//! fails; guessing the client secret is rate limited (429). A second run covers the other
//! credentials an application holds: opaque tokens (introspected by the gateway) and API
//! keys, 200 with them and 401 once the token is revoked or the key deleted; and
//! `turnpike login`'s REST-API token, good on `/api/am/*` and refused by the gateway.

mod support;

use std::process::Command;
use std::time::{Duration, Instant};

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use oauth2::basic::BasicClient;
use oauth2::{
    ClientId, ClientSecret, ResourceOwnerPassword, ResourceOwnerUsername, TokenResponse, TokenUrl,
};
use serde_json::{json, Value};
use support::{Stack, TempDir};

const TOKEN: &str = "oauth-e2e-gateway-token";
const PASSWORD: &str = "oauth-e2e-admin-password";

/// `curl` with optional basic user (admin), bearer token, JSON body or form body.
fn http(method: &str, url: &str, auth: &[&str], body: Option<&Value>) -> (u16, Value) {
    let mut cmd = Command::new("curl");
    cmd.args(["-s", "-o", "-", "-w", "\n%{http_code}", "-X", method, url]);
    cmd.args(auth);
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

fn admin() -> Vec<String> {
    vec!["-u".into(), format!("admin:{PASSWORD}")]
}

fn rest(method: &str, cp: &str, path: &str, body: Option<Value>) -> Value {
    let a = admin();
    let a: Vec<&str> = a.iter().map(String::as_str).collect();
    let (code, v) = http(method, &format!("http://{cp}{path}"), &a, body.as_ref());
    assert!((200..300).contains(&code), "{method} {path}: {code} {v}");
    v
}

fn header_status(url: &str, header: &str) -> u16 {
    http("GET", url, &["-H", header], None).0
}

fn bearer_status(url: &str, token: &str) -> u16 {
    header_status(url, &format!("authorization: Bearer {token}"))
}

/// Polls until `url` with `token` answers `code`; returns how long that took.
fn wait_status(url: &str, token: &str, code: u16, limit: Duration) -> Duration {
    wait_header_status(url, &format!("authorization: Bearer {token}"), code, limit)
}

/// Polls until `url` with the request header `header` answers `code`.
fn wait_header_status(url: &str, header: &str, code: u16, limit: Duration) -> Duration {
    let start = Instant::now();
    loop {
        let got = header_status(url, header);
        if got == code {
            return start.elapsed();
        }
        assert!(
            start.elapsed() < limit,
            "{url} answers {got}, expected {code}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// ES256 verification with p256 (not the server's ring/jsonwebtoken) against the JWKS.
fn verify_es256(jwt: &str, jwks: &Value) -> Value {
    let parts: Vec<&str> = jwt.split('.').collect();
    assert_eq!(parts.len(), 3, "compact JWT");
    let dec = |s: &str| URL_SAFE_NO_PAD.decode(s).expect("base64url");
    let header: Value = serde_json::from_slice(&dec(parts[0])).expect("header");
    assert_eq!(header["alg"], "ES256");
    let jwk = jwks["keys"]
        .as_array()
        .expect("keys")
        .iter()
        .find(|k| k["kid"] == header["kid"])
        .expect("kid in JWKS");
    use p256::ecdsa::signature::Verifier;
    let minimal = json!({"kty": jwk["kty"], "crv": jwk["crv"], "x": jwk["x"], "y": jwk["y"]});
    let pk = p256::PublicKey::from_jwk_str(&minimal.to_string()).expect("jwk");
    let sig = p256::ecdsa::Signature::from_slice(&dec(parts[2])).expect("signature");
    p256::ecdsa::VerifyingKey::from(pk)
        .verify(format!("{}.{}", parts[0], parts[1]).as_bytes(), &sig)
        .expect("signature verifies");
    serde_json::from_slice(&dec(parts[1])).expect("claims")
}

fn http_client() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .expect("client")
}

fn stack(dir: &TempDir) -> Stack {
    support::cp_stack(dir, TOKEN, PASSWORD)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oauth2_through_control_plane_and_gateway() {
    let dir = TempDir::new();
    let Stack {
        _procs,
        echo,
        cp,
        gw,
    } = stack(&dir);

    // Publisher: an API (secured by default: OAuth2 + subscription), published.
    let api = rest(
        "POST",
        &cp,
        "/api/am/publisher/v1/apis",
        Some(
            json!({"name": "Secure", "context": "/secure", "version": "v1",
            "endpoints": [format!("http://{echo}")], "resources": [{"path": "/*", "methods": ["GET"]}]}),
        ),
    );
    let api_id = api["id"].as_str().expect("id");
    let sec = rest(
        "GET",
        &cp,
        &format!("/api/am/publisher/v1/apis/{api_id}/security"),
        None,
    );
    assert_eq!(
        (sec["oauth2"].clone(), sec["subscription"].clone()),
        (json!(true), json!(true))
    );
    rest(
        "POST",
        &cp,
        &format!("/api/am/publisher/v1/apis/change-lifecycle?apiId={api_id}&action=Publish"),
        None,
    );
    let url = format!("http://{gw}/secure/v1/hello");
    // Live and secured: no credential is 401.
    wait_status(&url, "", 401, Duration::from_secs(10));

    // DevPortal: application, subscription, keys (secret shown once).
    let app = rest(
        "POST",
        &cp,
        "/api/am/devportal/v1/applications",
        Some(json!({"name": "shop"})),
    );
    let app_id = app["id"].as_str().expect("app id");
    let sub = rest(
        "POST",
        &cp,
        "/api/am/devportal/v1/subscriptions",
        Some(json!({"applicationId": app_id, "apiId": api_id, "throttlingPolicy": "Unlimited"})),
    );
    let sub_id = sub["subscriptionId"]
        .as_str()
        .or(sub["id"].as_str())
        .expect("subscription id")
        .to_string();
    let keys = rest(
        "POST",
        &cp,
        &format!("/api/am/devportal/v1/applications/{app_id}/generate-keys"),
        Some(json!({})),
    );
    let (ck, cs) = (
        keys["consumerKey"].as_str().expect("key").to_string(),
        keys["consumerSecret"].as_str().expect("secret").to_string(),
    );
    let listed = rest(
        "GET",
        &cp,
        &format!("/api/am/devportal/v1/applications/{app_id}/keys"),
        None,
    );
    assert!(
        listed["list"][0].get("consumerSecret").is_none(),
        "secret shown once"
    );

    // An independent OAuth2 client: client_credentials.
    let client = BasicClient::new(ClientId::new(ck.clone()))
        .set_client_secret(ClientSecret::new(cs.clone()))
        .set_token_uri(TokenUrl::new(format!("http://{cp}/oauth2/token")).expect("url"));
    let token = client
        .exchange_client_credentials()
        .request_async(&http_client())
        .await
        .expect("client_credentials token");
    let at = token.access_token().secret().clone();
    let jwks: Value = reqwest::get(format!("http://{cp}/oauth2/jwks"))
        .await
        .expect("jwks")
        .json()
        .await
        .expect("json");
    let claims = verify_es256(&at, &jwks);
    assert_eq!(claims["iss"], format!("http://{cp}"));
    assert_eq!(claims["application"], app_id);
    assert_eq!(claims["sub"], ck.as_str());

    // Through the gateway.
    let took = wait_status(&url, &at, 200, Duration::from_secs(5));
    eprintln!("subscribed token live at the gateway after {took:?}");
    assert_eq!(bearer_status(&url, &at), 200, "cached token still good");

    // Blocking the subscription stops the (cached) token: 403.
    rest(
        "POST",
        &cp,
        &format!("/api/am/publisher/v1/subscriptions/block-subscription?subscriptionId={sub_id}&blockState=BLOCKED"),
        None,
    );
    let took = wait_status(&url, &at, 403, Duration::from_secs(3));
    eprintln!("blocked subscription -> 403 after {took:?}");
    rest(
        "POST",
        &cp,
        &format!("/api/am/publisher/v1/subscriptions/unblock-subscription?subscriptionId={sub_id}"),
        None,
    );
    wait_status(&url, &at, 200, Duration::from_secs(3));

    // Revoking the token (RFC 7009) stops it although the gateway cached it: 401.
    let auth = format!("{ck}:{cs}");
    let (code, _) = http(
        "POST",
        &format!("http://{cp}/oauth2/revoke"),
        &["-u", &auth, "--data-urlencode", &format!("token={at}")],
        None,
    );
    assert_eq!(code, 200);
    let took = wait_status(&url, &at, 401, Duration::from_secs(3));
    eprintln!("revoked token -> 401 after {took:?}");

    // Password grant (the control plane's users) with refresh-token rotation.
    let first = client
        .exchange_password(
            &ResourceOwnerUsername::new("admin".into()),
            &ResourceOwnerPassword::new(PASSWORD.into()),
        )
        .request_async(&http_client())
        .await
        .expect("password grant");
    let r1 = first.refresh_token().expect("refresh token").clone();
    assert_eq!(bearer_status(&url, first.access_token().secret()), 200);
    let second = client
        .exchange_refresh_token(&r1)
        .request_async(&http_client())
        .await
        .expect("refresh");
    let r2 = second.refresh_token().expect("rotated").clone();
    assert_ne!(r1.secret(), r2.secret());
    let replay = client
        .exchange_refresh_token(&r1)
        .request_async(&http_client())
        .await;
    assert!(replay.is_err(), "a reused refresh token is refused");
    // ...and the replay revoked the family: the rotated one is dead too.
    assert!(client
        .exchange_refresh_token(&r2)
        .request_async(&http_client())
        .await
        .is_err());

    // Guessing the secret: 429 after 10 failures, even with the right secret then.
    let mut codes = Vec::new();
    for i in 0..11 {
        let bad = format!("{ck}:wrong-{i}");
        let (code, _) = http(
            "POST",
            &format!("http://{cp}/oauth2/token"),
            &["-u", &bad, "-d", "grant_type=client_credentials"],
            None,
        );
        codes.push(code);
    }
    assert_eq!(codes[0], 401);
    assert_eq!(codes[10], 429, "{codes:?}");
    let (code, _) = http(
        "POST",
        &format!("http://{cp}/oauth2/token"),
        &["-u", &auth, "-d", "grant_type=client_credentials"],
        None,
    );
    assert_eq!(code, 429, "locked even with the right secret");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn opaque_tokens_and_api_keys_through_the_gateway() {
    let dir = TempDir::new();
    let Stack {
        _procs,
        echo,
        cp,
        gw,
    } = stack(&dir);
    let api = rest(
        "POST",
        &cp,
        "/api/am/publisher/v1/apis",
        Some(json!({"name": "Keys", "context": "/keys", "version": "v1",
            "endpoints": [format!("http://{echo}")], "resources": [{"path": "/*", "methods": ["GET"]}]})),
    );
    let api_id = api["id"].as_str().expect("id");
    rest(
        "PUT",
        &cp,
        &format!("/api/am/publisher/v1/apis/{api_id}/security"),
        Some(json!({"oauth2": true, "api_key": true, "subscription": true})),
    );
    rest(
        "POST",
        &cp,
        &format!("/api/am/publisher/v1/apis/change-lifecycle?apiId={api_id}&action=Publish"),
        None,
    );
    let url = format!("http://{gw}/keys/v1/hello");
    wait_status(&url, "", 401, Duration::from_secs(10));

    // `turnpike login` prints a REST-API token (password grant, client turnpike-cli).
    let out = Command::new(support::BIN)
        .args(["login", "--control-plane", &format!("http://{cp}")])
        .env("TURNPIKE_PASSWORD", PASSWORD)
        .env("TURNPIKE_LOG", "warn")
        .output()
        .expect("run turnpike login");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let rest_token = String::from_utf8_lossy(&out.stdout).trim().to_string();
    let apis = format!("http://{cp}/api/am/publisher/v1/apis");
    assert_eq!(
        bearer_status(&apis, &rest_token),
        200,
        "REST API with the token"
    );
    assert_eq!(bearer_status(&url, &rest_token), 401, "not a gateway token");
    let app = rest(
        "POST",
        &cp,
        "/api/am/devportal/v1/applications",
        Some(json!({"name": "opaque-app"})),
    );
    let app_id = app["id"].as_str().expect("app id");
    rest(
        "POST",
        &cp,
        "/api/am/devportal/v1/subscriptions",
        Some(json!({"applicationId": app_id, "apiId": api_id, "throttlingPolicy": "Unlimited"})),
    );

    // Opaque tokens: random strings the gateway introspects (and caches).
    let keys = rest(
        "POST",
        &cp,
        &format!("/api/am/devportal/v1/applications/{app_id}/generate-keys"),
        Some(json!({"tokenType": "OPAQUE", "grantTypes": ["client_credentials"]})),
    );
    assert_eq!(keys["tokenType"], "OPAQUE");
    let auth = format!(
        "{}:{}",
        keys["consumerKey"].as_str().expect("key"),
        keys["consumerSecret"].as_str().expect("secret")
    );
    let (code, token) = http(
        "POST",
        &format!("http://{cp}/oauth2/token"),
        &["-u", &auth, "-d", "grant_type=client_credentials"],
        None,
    );
    assert_eq!(code, 200, "{token}");
    let opaque = token["access_token"].as_str().expect("token").to_string();
    assert!(!opaque.contains('.'), "opaque, not a JWT");
    let took = wait_status(&url, &opaque, 200, Duration::from_secs(5));
    eprintln!("opaque token accepted after {took:?}");
    assert_eq!(bearer_status(&url, &opaque), 200, "cached introspection");
    assert_eq!(bearer_status(&url, "not-a-token-we-issued"), 401);
    let (code, _) = http(
        "POST",
        &format!("http://{cp}/oauth2/revoke"),
        &["-u", &auth, "--data-urlencode", &format!("token={opaque}")],
        None,
    );
    assert_eq!(code, 200);
    let took = wait_status(&url, &opaque, 401, Duration::from_secs(3));
    eprintln!("revoked opaque token -> 401 after {took:?}");

    // API keys: shown once, sent in the `apikey` header, stopped by deleting them.
    let key = rest(
        "POST",
        &cp,
        &format!("/api/am/devportal/v1/applications/{app_id}/api-keys"),
        Some(json!({"name": "ci"})),
    );
    let (key_id, apikey) = (
        key["id"].as_str().expect("key id").to_string(),
        key["apikey"].as_str().expect("apikey").to_string(),
    );
    let header = format!("apikey: {apikey}");
    let took = wait_header_status(&url, &header, 200, Duration::from_secs(5));
    eprintln!("API key accepted after {took:?}");
    assert_eq!(header_status(&url, "apikey: tpk_wrong"), 401);
    rest(
        "DELETE",
        &cp,
        &format!("/api/am/devportal/v1/applications/{app_id}/api-keys/{key_id}"),
        None,
    );
    let took = wait_header_status(&url, &header, 401, Duration::from_secs(3));
    eprintln!("deleted API key -> 401 after {took:?}");
}
