//! The JWT the matrix's `graphql` scenario sends, as the seed's tests called WSO2 with
//! JWT tokens: one P-256 key made per process, its public JWK (the matrix's gateway
//! trusts it as an issuer) and one ES256 token for the bench application, valid for a
//! day. The gateway verifies it as any token (its verified-token cache then answers),
//! so the GraphQL cells pay what a JWT-secured API pays. The secured scenarios send a pool
//! of such tokens (`tokens: N` in a plan) when the plan's `auth` is `jwt`.

use std::sync::OnceLock;
use std::time::{SystemTime, UNIX_EPOCH};

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use ring::rand::SystemRandom;
use ring::signature::{EcdsaKeyPair, KeyPair as _, ECDSA_P256_SHA256_FIXED_SIGNING};
use serde_json::{json, Value};

use crate::BenchError;

/// The issuer the matrix's gateway trusts.
pub const ISSUER: &str = "https://bench.turnpike.invalid";
/// The audience of the bench token.
pub const AUDIENCE: &str = "turnpike-bench";
/// The application the token names (the matrix's subscriptions are for it).
pub const APPLICATION: &str = "bench";

/// The key's public half and the token signed with it.
pub struct BenchIssuer {
    pub jwk: Value,
    pub token: String,
    pair: EcdsaKeyPair,
}

impl BenchIssuer {
    /// The request header carrying the token.
    pub fn header(&self) -> String {
        format!("authorization: Bearer {}", self.token)
    }

    /// `n` distinct tokens for the bench application (distinct subject and `jti`), as the
    /// latency study's pool of 5,000: the gateway verifies each once, then its cache
    /// answers. The first is [`BenchIssuer::token`]'s claims with a `jti`.
    pub fn pool(&self, n: usize) -> Result<Vec<String>, BenchError> {
        if n == 0 || n > crate::tokens::MAX_TOKENS {
            return Err(BenchError::Usage(format!(
                "tokens: between 1 and {}, not {n}",
                crate::tokens::MAX_TOKENS
            )));
        }
        (0..n)
            .map(|i| sign(&self.pair, &format!("bench-user-{i}"), Some(i)))
            .collect::<Result<_, _>>()
            .map_err(BenchError::Token)
    }
}

/// This process's bench issuer (made at the first call).
pub fn issuer() -> Result<&'static BenchIssuer, BenchError> {
    static ISSUER_KEY: OnceLock<Result<BenchIssuer, String>> = OnceLock::new();
    ISSUER_KEY
        .get_or_init(make)
        .as_ref()
        .map_err(|e| BenchError::Token(e.clone()))
}

fn make() -> Result<BenchIssuer, String> {
    let rng = SystemRandom::new();
    let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng)
        .map_err(|_| "generating a P-256 key failed".to_owned())?;
    let pair = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, pkcs8.as_ref(), &rng)
        .map_err(|_| "reading the generated key failed".to_owned())?;
    // An uncompressed point: 0x04, then X and Y (32 bytes each).
    let point = pair.public_key().as_ref();
    let (x, y) = (point.get(1..33), point.get(33..65));
    let (Some(x), Some(y)) = (x, y) else {
        return Err("unexpected public key encoding".to_owned());
    };
    let jwk = json!({
        "kty": "EC", "crv": "P-256", "alg": "ES256", "use": "sig", "kid": "bench-1",
        "x": URL_SAFE_NO_PAD.encode(x),
        "y": URL_SAFE_NO_PAD.encode(y),
    });
    let token = sign(&pair, APPLICATION, None)?;
    Ok(BenchIssuer { jwk, token, pair })
}

/// One ES256 token for the bench application, valid for a day.
fn sign(pair: &EcdsaKeyPair, sub: &str, jti: Option<usize>) -> Result<String, String> {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let mut claims = json!({
        "iss": ISSUER, "aud": AUDIENCE, "sub": sub, "application": APPLICATION,
        "iat": now, "exp": now + 86_400,
    });
    if let Some(i) = jti {
        claims["jti"] = json!(format!("bench-{i}"));
    }
    let b64 = |v: &Value| URL_SAFE_NO_PAD.encode(v.to_string());
    let input = format!(
        "{}.{}",
        b64(&json!({"alg": "ES256", "kid": "bench-1", "typ": "JWT"})),
        b64(&claims)
    );
    let sig = pair
        .sign(&SystemRandom::new(), input.as_bytes())
        .map_err(|_| "signing the bench token failed".to_owned())?;
    Ok(format!("{input}.{}", URL_SAFE_NO_PAD.encode(sig.as_ref())))
}
