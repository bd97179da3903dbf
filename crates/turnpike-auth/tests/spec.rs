//! Security as data: a spec (as a snapshot or the DB-less file carries it) compiles into
//! validators; a bad spec reports every problem at once.

mod support;

use std::sync::Arc;

use support::*;
use turnpike_auth::*;

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[tokio::test]
async fn a_spec_compiles_into_working_authenticators() {
    let km = start_km().await;
    let jwks: serde_json::Value = serde_json::from_slice(&km.jwks_bytes().await).expect("json");
    let spec: SecuritySpec = serde_json::from_value(serde_json::json!({
        "issuers": [{ "issuer": km.base, "audiences": ["turnpike"], "jwks": jwks }],
        "api_keys": [{ "sha256": hex(&hash_api_key("k-1")), "application": "app-app1", "subscriber": "alice" }],
        "subscriptions": [
            { "api": "pizza", "application": "app-app1", "state": "ACTIVE", "tier": "Gold" },
        ],
        "revoked": ["some-old-jti"],
    }))
    .expect("spec");
    let runtime = AuthRuntime::new(Arc::new(SystemClock));
    let compiled = runtime.compile(&spec).expect("valid spec");
    let api = ApiAuthSpec {
        api_key: true,
        ..ApiAuthSpec::default()
    };
    let auth = compiled.authenticator(&api).expect("authenticator");
    let token = km.token("app1", None).await;
    let id = auth.authenticate(&bearer(&token)).await.expect("jwt");
    assert_eq!(
        compiled.subscriptions.check(&id, "pizza").map(|s| &*s.tier),
        Ok("Gold")
    );
    let id = auth
        .authenticate(&head("/x", &[("apikey", "k-1")]))
        .await
        .expect("api key");
    assert!(compiled.subscriptions.check(&id, "pizza").is_ok());
    // An API that accepts only OAuth2 ignores API keys.
    let oauth_only = compiled
        .authenticator(&ApiAuthSpec::default())
        .expect("authenticator");
    assert_eq!(
        oauth_only
            .authenticate(&head("/x", &[("apikey", "k-1")]))
            .await
            .err(),
        Some(AuthError::Missing)
    );
}

#[test]
fn a_bad_spec_lists_every_problem() {
    let spec: SecuritySpec = serde_json::from_value(serde_json::json!({
        "issuers": [
            { "issuer": "a" },
            { "issuer": "b", "jwks": {"keys": []} },
            { "issuer": "c", "jwks_url": "https://c/jwks", "jwks": {"keys": []} },
            { "issuer": "d", "jwks": {"keys": []}, "claims": {"colour": "x"} },
        ],
        "api_keys": [{ "sha256": "xyz", "application": "a", "subscriber": "s" }],
        "basic_users": [{ "username": "u", "password_hash": "plain" }],
        "subscriptions": [{ "api": "p", "application": "a", "state": "MAYBE", "tier": "Gold" }],
    }))
    .expect("spec");
    let errors = match AuthRuntime::new(Arc::new(SystemClock)).compile(&spec) {
        Err(e) => e,
        Ok(_) => panic!("spec must be refused"),
    };
    let paths: Vec<&str> = errors.iter().map(|e| e.path.as_str()).collect();
    for want in [
        "issuers[0]",
        "issuers[1].jwks",
        "issuers[2]",
        "issuers[3].claims.colour",
        "api_keys[0].sha256",
        "basic_users[0].password_hash",
        "subscriptions[0].state",
    ] {
        assert!(paths.contains(&want), "missing {want} in {paths:?}");
    }
    assert!(
        serde_json::from_value::<SecuritySpec>(serde_json::json!({"isuers": []})).is_err(),
        "unknown fields refused"
    );
}
