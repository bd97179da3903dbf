//! Test harness: a key manager on 127.0.0.1:0 with an in-memory store, a manual clock
//! and a few clients, plus an independent ES256/RS256 verifier.
#![allow(dead_code)]

use std::sync::Arc;
use std::time::Duration;

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use turnpike_keymanager::*;

pub const SECRET: &str = "s3cret-value";

pub struct Km {
    pub base: String,
    pub km: KeyManager,
    pub store: Arc<MemoryStore>,
    pub clock: Arc<ManualClock>,
}

pub fn now() -> u64 {
    SystemClock.now_secs()
}

pub fn client(id: &str, format: TokenFormat, can_introspect: bool) -> ClientRecord {
    ClientRecord {
        client_id: id.into(),
        secret_hash: hash_secret_for_tests(SECRET).expect("hash"),
        application_id: format!("app-{id}"),
        application_name: format!("App {id}"),
        owner: "alice".into(),
        grant_types: vec![
            GrantType::ClientCredentials,
            GrantType::Password,
            GrantType::RefreshToken,
        ],
        scopes: vec!["read".into(), "write".into()],
        token_format: format,
        access_token_ttl: Duration::from_secs(600),
        refresh_token_ttl: Duration::from_secs(3600),
        audience: vec![],
        can_introspect,
        sandbox: false,
        redirect_uris: Vec::new(),
    }
}

pub async fn start_with(config: KeyManagerConfig) -> Km {
    let store = Arc::new(MemoryStore::new());
    store.add_client(client("app1", TokenFormat::Jwt, false));
    store.add_client(client("app2", TokenFormat::Jwt, false));
    store.add_client(client("opaque1", TokenFormat::Opaque, false));
    store.add_client(client("gateway", TokenFormat::Jwt, true));
    for (id, format) in [
        ("sandbox1", TokenFormat::Jwt),
        ("sandbox-opaque", TokenFormat::Opaque),
    ] {
        store.add_client(ClientRecord {
            sandbox: true,
            ..client(id, format, false)
        });
    }
    let mut cc_only = client("cconly", TokenFormat::Jwt, false);
    cc_only.grant_types = vec![GrantType::ClientCredentials];
    store.add_client(cc_only);
    store.add_user(UserRecord {
        username: "alice".into(),
        password_hash: hash_secret_for_tests("alice-pw").expect("hash"),
        scopes: Some(vec!["read".into()]),
    });
    let clock = Arc::new(ManualClock::at_secs(now()));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let base = format!("http://{}", listener.local_addr().expect("addr"));
    let mut config = config;
    if config.issuer.is_empty() {
        config.issuer = base.clone();
    }
    let km = KeyManager::new(config, Stores::memory(store.clone()), clock.clone())
        .await
        .expect("key manager");
    let app = km.router();
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    Km {
        base,
        km,
        store,
        clock,
    }
}

pub async fn start() -> Km {
    start_with(KeyManagerConfig::new("")).await
}

impl Km {
    pub fn url(&self, path: &str) -> String {
        format!("{}{}", self.base, path)
    }

    /// A raw form POST (for what the oauth2 crate cannot express).
    pub async fn post(
        &self,
        path: &str,
        basic: Option<(&str, &str)>,
        form: &[(&str, &str)],
    ) -> (u16, reqwest::header::HeaderMap, serde_json::Value) {
        let mut req = reqwest::Client::new()
            .post(self.url(path))
            .header("content-type", "application/x-www-form-urlencoded");
        if let Some((u, p)) = basic {
            req = req.basic_auth(u, Some(p));
        }
        let body: String = form_urlencoded::Serializer::new(String::new())
            .extend_pairs(form)
            .finish();
        let resp = req.body(body).send().await.expect("send");
        let status = resp.status().as_u16();
        let headers = resp.headers().clone();
        let json = resp.json().await.unwrap_or(serde_json::Value::Null);
        (status, headers, json)
    }

    pub async fn client_credentials(&self, client_id: &str) -> serde_json::Value {
        let (status, _, json) = self
            .post(
                "/oauth2/token",
                Some((client_id, SECRET)),
                &[("grant_type", "client_credentials")],
            )
            .await;
        assert_eq!(status, 200, "{json}");
        json
    }
}

/// Splits a compact JWT into (header JSON, claims JSON, signing input, signature).
pub fn split(jwt: &str) -> (serde_json::Value, serde_json::Value, String, Vec<u8>) {
    let parts: Vec<&str> = jwt.split('.').collect();
    assert_eq!(parts.len(), 3);
    let dec = |s: &str| URL_SAFE_NO_PAD.decode(s).expect("b64");
    let header = serde_json::from_slice(&dec(parts[0])).expect("header");
    let claims = serde_json::from_slice(&dec(parts[1])).expect("claims");
    (
        header,
        claims,
        format!("{}.{}", parts[0], parts[1]),
        dec(parts[2]),
    )
}

/// Verifies a JWT against a JWKS with libraries independent of the server's
/// (p256 for ES256, rsa for RS256). Returns the claims.
pub fn verify_independently(jwt: &str, jwks: &serde_json::Value) -> serde_json::Value {
    let (header, claims, input, sig) = split(jwt);
    let kid = header["kid"].as_str().expect("kid");
    let jwk = jwks["keys"]
        .as_array()
        .expect("keys")
        .iter()
        .find(|k| k["kid"] == kid)
        .expect("kid in JWKS");
    match header["alg"].as_str() {
        Some("ES256") => {
            use p256::ecdsa::signature::Verifier;
            let minimal = serde_json::json!({"kty": jwk["kty"], "crv": jwk["crv"], "x": jwk["x"], "y": jwk["y"]});
            let pk = p256::PublicKey::from_jwk_str(&minimal.to_string()).expect("jwk");
            let vk = p256::ecdsa::VerifyingKey::from(pk);
            let sig = p256::ecdsa::Signature::from_slice(&sig).expect("sig");
            vk.verify(input.as_bytes(), &sig)
                .expect("ES256 signature verifies");
        }
        Some("RS256") => {
            use rsa::signature::Verifier;
            let b = |f: &str| {
                rsa::BigUint::from_bytes_be(
                    &URL_SAFE_NO_PAD
                        .decode(jwk[f].as_str().expect("field"))
                        .expect("b64"),
                )
            };
            let pk = rsa::RsaPublicKey::new(b("n"), b("e")).expect("rsa key");
            let vk = rsa::pkcs1v15::VerifyingKey::<sha2::Sha256>::new(pk);
            let sig = rsa::pkcs1v15::Signature::try_from(sig.as_slice()).expect("sig");
            vk.verify(input.as_bytes(), &sig)
                .expect("RS256 signature verifies");
        }
        other => panic!("unexpected alg {other:?}"),
    }
    claims
}
