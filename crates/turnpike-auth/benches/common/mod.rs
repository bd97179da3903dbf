//! Keys and tokens for the JWT benches: one signing key per algorithm (ES256, RS256,
//! EdDSA), its JWKS, and key-manager-shaped tokens signed with it.
#![allow(dead_code)]

use std::sync::Arc;

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use ring::rand::SystemRandom;
use ring::signature::{EcdsaKeyPair, Ed25519KeyPair, KeyPair, ECDSA_P256_SHA256_FIXED_SIGNING};
use rsa::pkcs1::EncodeRsaPrivateKey;
use rsa::traits::PublicKeyParts;
use turnpike_auth::*;

pub const ISSUER: &str = "https://km.example";

/// A signing key, the JWK that verifies it, and the raw public key material.
pub struct Signer {
    pub alg: Algorithm,
    pub name: &'static str,
    pub encoding: EncodingKey,
    pub jwk: serde_json::Value,
    /// ES256: the uncompressed point; EdDSA: the 32-byte key; RS256: PKCS#1 DER.
    pub public: Vec<u8>,
    /// RS256: modulus and exponent.
    pub rsa_ne: Option<(Vec<u8>, Vec<u8>)>,
}

fn b64(b: &[u8]) -> String {
    URL_SAFE_NO_PAD.encode(b)
}

pub fn signers() -> Vec<Signer> {
    let rng = SystemRandom::new();
    let ec = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng).expect("ec");
    let ec_pair =
        EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, ec.as_ref(), &rng).expect("ec");
    let point = ec_pair.public_key().as_ref().to_vec();
    let ed = Ed25519KeyPair::generate_pkcs8(&rng).expect("ed");
    let ed_pub = Ed25519KeyPair::from_pkcs8(ed.as_ref())
        .expect("ed")
        .public_key()
        .as_ref()
        .to_vec();
    let rsa_key = rsa::RsaPrivateKey::new(&mut rsa::rand_core::OsRng, 2048).expect("rsa");
    let (n, e) = (rsa_key.n().to_bytes_be(), rsa_key.e().to_bytes_be());
    let rsa_der = rsa_key.to_pkcs1_der().expect("der");
    let rsa_pub = rsa::pkcs1::EncodeRsaPublicKey::to_pkcs1_der(&rsa_key.to_public_key())
        .expect("pub der")
        .as_bytes()
        .to_vec();
    vec![
        Signer {
            alg: Algorithm::ES256,
            name: "es256",
            encoding: EncodingKey::from_ec_der(ec.as_ref()),
            jwk: serde_json::json!({"kty": "EC", "crv": "P-256", "kid": "es", "alg": "ES256",
                "x": b64(&point[1..33]), "y": b64(&point[33..65])}),
            public: point,
            rsa_ne: None,
        },
        Signer {
            alg: Algorithm::RS256,
            name: "rs256",
            encoding: EncodingKey::from_rsa_der(rsa_der.as_bytes()),
            jwk: serde_json::json!({"kty": "RSA", "kid": "rs", "alg": "RS256",
                "n": b64(&n), "e": b64(&e)}),
            public: rsa_pub,
            rsa_ne: Some((n, e)),
        },
        Signer {
            alg: Algorithm::EdDSA,
            name: "eddsa",
            encoding: EncodingKey::from_ed_der(ed.as_ref()),
            jwk: serde_json::json!({"kty": "OKP", "crv": "Ed25519", "kid": "ed", "alg": "EdDSA",
                "x": b64(&ed_pub)}),
            public: ed_pub,
            rsa_ne: None,
        },
    ]
}

impl Signer {
    /// Token `i`: distinct `sub` and `jti`, one of 100 applications.
    pub fn token(&self, i: u64) -> String {
        let now = SystemClock.now_secs();
        let claims = serde_json::json!({
            "iss": ISSUER, "sub": format!("user-{i}"), "aud": ["turnpike"], "exp": now + 3600,
            "iat": now, "nbf": now, "jti": format!("{i:016x}"), "scope": "read write",
            "client_id": format!("c{}", i % 100), "application": format!("app-{}", i % 100),
            "application_name": "App", "subscriber": "alice",
        });
        let mut header = Header::new(self.alg);
        header.kid = self.jwk["kid"].as_str().map(str::to_owned);
        jsonwebtoken::encode(&header, &claims, &self.encoding).expect("sign")
    }

    pub fn jwks(&self) -> Vec<u8> {
        serde_json::json!({ "keys": [self.jwk] })
            .to_string()
            .into_bytes()
    }

    /// The signing input and raw signature of a token.
    pub fn split(token: &str) -> (&[u8], Vec<u8>) {
        let (input, sig) = token.rsplit_once('.').expect("jws");
        (input.as_bytes(), URL_SAFE_NO_PAD.decode(sig).expect("b64"))
    }
}

/// A validator trusting every signer, with a cache of `cache_bytes`.
pub fn validator(
    signers: &[Signer],
    cache_bytes: u64,
) -> (Arc<JwtValidator>, Arc<TokenCache<Arc<Identity>>>) {
    let keys =
        serde_json::json!({ "keys": signers.iter().map(|s| s.jwk.clone()).collect::<Vec<_>>() });
    let keys = KeySet::from_jwks_json(keys.to_string().as_bytes()).expect("jwks");
    let issuer = Arc::new(TrustedIssuer::new(ISSUER, vec!["turnpike".into()], keys));
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    let cache = Arc::new(TokenCache::new(cache_bytes, clock.clone()));
    let revocations = Arc::new(Revocations::new((0..1000).map(|i| format!("revoked-{i}"))));
    let validator = Arc::new(JwtValidator::new(
        [issuer],
        revocations,
        cache.clone(),
        clock,
        30,
    ));
    (validator, cache)
}

/// Median of `rounds` timings of `f` run `n` times, in nanoseconds per call.
pub fn median_ns(rounds: usize, n: u32, mut f: impl FnMut()) -> f64 {
    let mut v: Vec<f64> = (0..rounds)
        .map(|_| {
            let t = std::time::Instant::now();
            for _ in 0..n {
                f();
            }
            t.elapsed().as_nanos() as f64 / f64::from(n)
        })
        .collect();
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}
