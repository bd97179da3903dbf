//! JWT validation cost: cold (full ES256 verification and claim checks, cache emptied
//! before each iteration) against cached (SHA-256 of the token, one shard lookup, the
//! revocation and key-presence checks). Run: `cargo bench -p turnpike-auth --bench jwt`.

use std::sync::Arc;

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use criterion::{criterion_group, criterion_main, Criterion};
use ring::rand::SystemRandom;
use ring::signature::{EcdsaKeyPair, KeyPair, ECDSA_P256_SHA256_FIXED_SIGNING};
use turnpike_auth::*;

fn setup() -> (String, Arc<JwtValidator>, Arc<TokenCache<Arc<Identity>>>) {
    let rng = SystemRandom::new();
    let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng).expect("key");
    let pair = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, pkcs8.as_ref(), &rng)
        .expect("pair");
    let point = pair.public_key().as_ref();
    let jwks = serde_json::json!({"keys": [{
        "kty": "EC", "crv": "P-256", "kid": "k1", "alg": "ES256", "use": "sig",
        "x": URL_SAFE_NO_PAD.encode(&point[1..33]), "y": URL_SAFE_NO_PAD.encode(&point[33..65]),
    }]});
    let now = SystemClock.now();
    let claims = serde_json::json!({
        "iss": "https://km.example", "sub": "alice", "aud": ["turnpike"], "exp": now + 3600,
        "iat": now, "nbf": now, "jti": "0123456789abcdef", "scope": "read write",
        "client_id": "c1", "application": "app-1", "application_name": "App", "subscriber": "alice",
    });
    let mut header = jsonwebtoken::Header::new(jsonwebtoken::Algorithm::ES256);
    header.kid = Some("k1".into());
    let token = jsonwebtoken::encode(
        &header,
        &claims,
        &jsonwebtoken::EncodingKey::from_ec_der(pkcs8.as_ref()),
    )
    .expect("sign");
    let keys = KeySet::from_jwks_json(jwks.to_string().as_bytes()).expect("jwks");
    let issuer = Arc::new(TrustedIssuer::new(
        "https://km.example",
        vec!["turnpike".into()],
        keys,
    ));
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    let cache = Arc::new(TokenCache::new(10_000, clock.clone()));
    let revocations = Arc::new(Revocations::new((0..1000).map(|i| format!("revoked-{i}"))));
    let validator = Arc::new(JwtValidator::new(
        [issuer],
        revocations,
        cache.clone(),
        clock,
        30,
    ));
    (token, validator, cache)
}

fn bench(c: &mut Criterion) {
    let (token, validator, cache) = setup();
    let mut g = c.benchmark_group("jwt_validate");
    g.bench_function("cold_es256", |b| {
        // Evict the one entry before each call, so every call verifies.
        let key = TokenKey::of(&token);
        b.iter(|| {
            cache.remove(&key);
            validator.validate(&token).expect("valid")
        })
    });
    validator.validate(&token).expect("valid");
    g.bench_function("cached", |b| {
        b.iter(|| validator.validate(&token).expect("valid"))
    });
    g.bench_function("sha256_key_only", |b| b.iter(|| TokenKey::of(&token)));
    g.bench_function("ring_sha256", |b| {
        b.iter(|| ring::digest::digest(&ring::digest::SHA256, token.as_bytes()))
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
