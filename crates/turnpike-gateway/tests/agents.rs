//! An API as an OAuth protected resource, through a real gateway on 127.0.0.1:0 and a
//! real key manager issuing resource-bound tokens (RFC 8707): the 401's
//! `resource_metadata=` and `scope=`, the RFC 9728 document at the path-suffixed
//! well-known URL (only for APIs that publish it), a token bound to one API admitted
//! there and refused (`invalid_token`) at another, an unbound token refused where the
//! API checks audiences and admitted elsewhere, the API's MCP endpoint URI as the same
//! resource, and `--public-url` as the base of it all.

mod support;

use std::sync::Arc;

use serde_json::{json, Value};
use support::*;
use turnpike_config::{PolicyRuntime, Snapshot};
use turnpike_keymanager as km;

const WELL_KNOWN: &str = "/.well-known/oauth-protected-resource";

/// A key manager on 127.0.0.1:0 with one JWT client (`agent`, scope `read`) and two APIs
/// a token may be bound to. Returns its URL and JWKS.
async fn key_manager() -> (String, Value) {
    let store = Arc::new(km::MemoryStore::new());
    store.add_client(km::ClientRecord {
        client_id: "agent".into(),
        secret_hash: km::hash_secret_for_tests("agent-secret").expect("hash"),
        application_id: "app-agent".into(),
        application_name: "Agent".into(),
        owner: "alice".into(),
        grant_types: vec![km::GrantType::ClientCredentials],
        scopes: vec!["read".into()],
        token_format: km::TokenFormat::Jwt,
        access_token_ttl: std::time::Duration::from_secs(600),
        refresh_token_ttl: std::time::Duration::from_secs(600),
        audience: Vec::new(),
        can_introspect: false,
        sandbox: false,
        redirect_uris: Vec::new(),
    });
    store.add_api("/pizza/v1");
    store.add_api("/other/v1");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let base = format!("http://{}", listener.local_addr().expect("addr"));
    let manager = km::KeyManager::new(
        km::KeyManagerConfig::new(base.clone()),
        km::Stores::memory(store),
        Arc::new(km::SystemClock),
    )
    .await
    .expect("key manager");
    let jwks = serde_json::to_value(manager.jwks()).expect("jwks");
    let app = manager.router();
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    (base, jwks)
}

/// A client_credentials token, bound to `resource` when given.
async fn token(km: &str, resource: Option<&str>) -> String {
    let mut body = "grant_type=client_credentials&scope=read".to_owned();
    if let Some(r) = resource {
        body.push_str(&format!("&resource={r}"));
    }
    let resp = client()
        .post(format!("{km}/oauth2/token"))
        .basic_auth("agent", Some("agent-secret"))
        .header("content-type", "application/x-www-form-urlencoded")
        .body(body)
        .send()
        .await
        .expect("token");
    assert_eq!(resp.status(), 200);
    let json: Value = resp.json().await.expect("json");
    json["access_token"].as_str().expect("token").to_owned()
}

/// `pizza` publishes its metadata and takes bound tokens only; `other` does neither.
fn file(km: &str, jwks: &Value, echo: &str) -> String {
    json!({
        "security": {"issuers": [{"issuer": km, "audiences": ["turnpike"], "jwks": jwks,
            "resource_audiences": true}]},
        "apis": [
            {"name": "pizza", "context": "/pizza", "version": "v1", "endpoints": [echo],
             "auth": {"subscription": false, "resource_metadata": true, "audience_check": true},
             "resources": [{"path": "/menu", "methods": ["GET"], "scopes": ["read"]}]},
            {"name": "other", "context": "/other", "version": "v1", "endpoints": [echo],
             "auth": {"subscription": false},
             "resources": [{"path": "/*", "methods": ["GET"]}]}
        ]
    })
    .to_string()
}

async fn call(url: &str, token: Option<&str>) -> (u16, String, Value) {
    let mut req = client().get(url);
    if let Some(t) = token {
        req = req.bearer_auth(t);
    }
    let resp = req.send().await.expect("send");
    let status = resp.status().as_u16();
    let challenge = resp
        .headers()
        .get("www-authenticate")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_owned();
    (status, challenge, resp.json().await.unwrap_or(Value::Null))
}

#[tokio::test]
async fn a_bound_token_opens_its_own_api_only() {
    let (km, jwks) = key_manager().await;
    let echo = http(echo().await);
    let gw = gateway(&file(&km, &jwks, &echo)).await;
    let base = http(gw.http);
    let pizza = format!("{base}/pizza/v1/menu");
    let other = format!("{base}/other/v1/x");

    let (status, challenge, _) = call(&pizza, None).await;
    assert_eq!(status, 401);
    assert_eq!(
        challenge,
        format!("Bearer realm=\"turnpike\", resource_metadata=\"{base}{WELL_KNOWN}/pizza/v1\", scope=\"read\"")
    );
    let prm = client()
        .get(format!("{base}{WELL_KNOWN}/pizza/v1"))
        .send()
        .await
        .expect("metadata");
    assert_eq!(prm.status(), 200);
    assert_eq!(prm.headers()["access-control-allow-origin"], "*");
    let doc: Value = prm.json().await.expect("json");
    assert_eq!(doc["resource"], format!("{base}/pizza/v1"));
    assert_eq!(doc["authorization_servers"], json!([km]));
    assert_eq!(doc["scopes_supported"], json!(["read"]));
    assert_eq!(doc["bearer_methods_supported"], json!(["header"]));
    let (status, _, _) = call(&format!("{base}{WELL_KNOWN}/other/v1"), None).await;
    assert_eq!(status, 404, "other publishes no metadata");
    let (status, challenge, _) = call(&other, None).await;
    assert_eq!(
        (status, challenge.as_str()),
        (401, "Bearer realm=\"turnpike\"")
    );

    let bound = token(&km, Some(&format!("{base}/pizza/v1"))).await;
    assert_eq!(call(&pizza, Some(&bound)).await.0, 200);
    let (status, _, body) = call(&other, Some(&bound)).await;
    assert_eq!((status, &body["code"]), (401, &json!("invalid_token")));

    let unbound = token(&km, None).await;
    assert_eq!(call(&other, Some(&unbound)).await.0, 200);
    let (status, challenge, body) = call(&pizza, Some(&unbound)).await;
    assert_eq!((status, &body["code"]), (401, &json!("invalid_token")));
    assert!(
        challenge.contains("resource_metadata=") && challenge.contains("error=\"invalid_token\""),
        "{challenge}"
    );

    // The API's MCP endpoint (`/mcp/pizza/v1`) is the same resource to the gateway; its
    // metadata names that URI, the one MCP clients check.
    let mcp: Value = client()
        .get(format!("{base}{WELL_KNOWN}/mcp/pizza/v1"))
        .send()
        .await
        .expect("metadata")
        .json()
        .await
        .expect("json");
    assert_eq!(mcp["resource"], format!("{base}/mcp/pizza/v1"));
    let mcp_bound = token(&km, Some(&format!("{base}/mcp/pizza/v1"))).await;
    assert_eq!(call(&pizza, Some(&mcp_bound)).await.0, 200);
    assert_eq!(call(&other, Some(&mcp_bound)).await.0, 401);

    let for_other = token(&km, Some(&format!("{base}/other/v1"))).await;
    assert_eq!(call(&other, Some(&for_other)).await.0, 200);
    assert_eq!(call(&pizza, Some(&for_other)).await.0, 401);
}

#[tokio::test]
async fn the_public_url_is_the_base_of_resource_uris() {
    let (km, jwks) = key_manager().await;
    let echo = http(echo().await);
    let runtime = PolicyRuntime::new();
    runtime.auth.set_public_url("https://api.example/");
    let snap =
        Snapshot::from_yaml_with(&file(&km, &jwks, &echo), "test", &runtime).expect("valid config");
    let gw = gateway_serving(snap, |_| {}).await;
    let pizza = gw.url("/pizza/v1/menu");
    let (_, challenge, _) = call(&pizza, None).await;
    assert!(
        challenge.contains("resource_metadata=\"https://api.example/.well-known/oauth-protected-resource/pizza/v1\""),
        "{challenge}"
    );
    let bound = token(&km, Some("https://api.example/pizza/v1")).await;
    assert_eq!(call(&pizza, Some(&bound)).await.0, 200);
    let host_bound = token(&km, Some(&format!("http://{}/pizza/v1", gw.http))).await;
    assert_eq!(
        call(&pizza, Some(&host_bound)).await.0,
        401,
        "the public URL wins over Host"
    );
}
