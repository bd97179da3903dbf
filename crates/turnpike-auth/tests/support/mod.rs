//! Test harness: a real key manager on 127.0.0.1:0 (the gateway's counterpart), request
//! heads, and validators built from the JWKS it serves.
#![allow(dead_code)]

use std::sync::Arc;
use std::time::Duration;

use turnpike_auth::*;
use turnpike_keymanager as km;

pub const SECRET: &str = "s3cret-value";

pub struct Km {
    pub base: String,
    pub km: km::KeyManager,
    pub clock: Arc<km::ManualClock>,
}

pub fn now() -> u64 {
    SystemClock.now_secs()
}

fn client(id: &str, format: km::TokenFormat, can_introspect: bool) -> km::ClientRecord {
    km::ClientRecord {
        client_id: id.into(),
        secret_hash: km::hash_secret_for_tests(SECRET).expect("hash"),
        application_id: format!("app-{id}"),
        application_name: format!("App {id}"),
        owner: "alice".into(),
        grant_types: vec![km::GrantType::ClientCredentials],
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

pub async fn start_km() -> Km {
    start_km_with(km::SigningAlg::ES256).await
}

pub async fn start_km_with(alg: km::SigningAlg) -> Km {
    let store = Arc::new(km::MemoryStore::new());
    store.add_client(client("app1", km::TokenFormat::Jwt, false));
    store.add_client(client("opaque1", km::TokenFormat::Opaque, false));
    store.add_client(client("gateway", km::TokenFormat::Jwt, true));
    let clock = Arc::new(km::ManualClock::at_secs(now()));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let base = format!("http://{}", listener.local_addr().expect("addr"));
    let mut config = km::KeyManagerConfig::new(base.clone());
    config.signing_alg = alg;
    let manager = km::KeyManager::new(config, km::Stores::memory(store), clock.clone())
        .await
        .expect("key manager");
    let app = manager.router();
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    Km {
        base,
        km: manager,
        clock,
    }
}

impl Km {
    pub async fn token(&self, client_id: &str, scope: Option<&str>) -> String {
        let mut form = vec![("grant_type", "client_credentials")];
        if let Some(s) = scope {
            form.push(("scope", s));
        }
        let body: String = form_urlencoded::Serializer::new(String::new())
            .extend_pairs(form)
            .finish();
        let resp: serde_json::Value = reqwest::Client::new()
            .post(format!("{}/oauth2/token", self.base))
            .basic_auth(client_id, Some(SECRET))
            .header("content-type", "application/x-www-form-urlencoded")
            .body(body)
            .send()
            .await
            .expect("token request")
            .json()
            .await
            .expect("json");
        resp["access_token"]
            .as_str()
            .expect("access_token")
            .to_owned()
    }

    pub async fn jwks_bytes(&self) -> Vec<u8> {
        reqwest::get(format!("{}/oauth2/jwks", self.base))
            .await
            .expect("jwks")
            .bytes()
            .await
            .expect("body")
            .to_vec()
    }

    pub async fn issuer(&self, audiences: &[&str]) -> Arc<TrustedIssuer> {
        let keys = KeySet::from_jwks_json(&self.jwks_bytes().await).expect("keyset");
        Arc::new(TrustedIssuer::new(
            self.base.clone(),
            audiences.iter().map(|s| s.to_string()).collect(),
            keys,
        ))
    }
}

pub struct Jwt {
    pub validator: Arc<JwtValidator>,
    pub cache: Arc<TokenCache<Arc<Identity>>>,
    pub revocations: Arc<Revocations>,
}

pub fn jwt_validator(issuers: Vec<Arc<TrustedIssuer>>) -> Jwt {
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    let cache = Arc::new(TokenCache::new(16 << 20, clock.clone()));
    let revocations = Arc::new(Revocations::default());
    let validator = Arc::new(JwtValidator::new(
        issuers,
        revocations.clone(),
        cache.clone(),
        clock,
        30,
    ));
    Jwt {
        validator,
        cache,
        revocations,
    }
}

/// A request head with the given headers.
pub fn head(uri: &str, headers: &[(&str, &str)]) -> http::request::Parts {
    let mut b = http::Request::builder().uri(uri);
    for (k, v) in headers {
        b = b.header(*k, *v);
    }
    b.body(()).expect("request").into_parts().0
}

pub fn bearer(token: &str) -> http::request::Parts {
    head(
        "/api/v1/x",
        &[("authorization", &format!("Bearer {token}"))],
    )
}
