//! The back-end JWT (WSO2's "JWT generation"): a short-lived ES256 token carrying the
//! caller's identity, sent upstream in a header (`X-JWT-Assertion` by default) so the
//! back end can trust who called without re-validating the client's credential. Signed
//! once per identity and cached until shortly before it expires.

use std::sync::Arc;

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use http::HeaderValue;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use ring::rand::SystemRandom;
use ring::signature::{EcdsaKeyPair, KeyPair, ECDSA_P256_SHA256_FIXED_SIGNING};
use serde::Serialize;
use turnpike_model::clock::Clock;
use turnpike_policy::Identity;

use crate::cache::{TokenCache, TokenKey};

/// Back-end JWT failure (key setup or signing); the gateway answers 500.
#[derive(Debug, thiserror::Error)]
#[error("back-end JWT: {0}")]
pub struct BackendJwtError(String);

/// Settings for the back-end JWT.
#[derive(Debug, Clone)]
pub struct BackendJwtConfig {
    pub issuer: String,
    pub header: http::HeaderName,
    /// Lifetime in seconds; entries are reused until 10 s before expiry.
    pub ttl: u64,
    pub cache_capacity: usize,
}

impl Default for BackendJwtConfig {
    fn default() -> Self {
        Self {
            issuer: "turnpike-gateway".into(),
            header: http::HeaderName::from_static("x-jwt-assertion"),
            ttl: 300,
            cache_capacity: 10_000,
        }
    }
}

#[derive(Serialize)]
struct Claims<'a> {
    iss: &'a str,
    sub: &'a str,
    iat: u64,
    exp: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    application: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    application_name: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    subscriber: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    client_id: Option<&'a str>,
    scope: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    enduser_issuer: Option<&'a str>,
}

/// Signs and caches back-end JWTs.
pub struct BackendJwtSigner {
    config: BackendJwtConfig,
    kid: String,
    key: EncodingKey,
    public_jwk: serde_json::Value,
    cache: TokenCache<HeaderValue>,
    clock: Arc<dyn Clock>,
}

impl BackendJwtSigner {
    /// With a fresh ES256 key; publish [`Self::jwks`] to back ends.
    pub fn generate(
        config: BackendJwtConfig,
        clock: Arc<dyn Clock>,
    ) -> Result<Self, BackendJwtError> {
        let rng = SystemRandom::new();
        let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng)
            .map_err(|e| BackendJwtError(e.to_string()))?;
        Self::from_pkcs8(config, pkcs8.as_ref(), clock)
    }

    /// With a stored P-256 PKCS#8 key.
    pub fn from_pkcs8(
        config: BackendJwtConfig,
        pkcs8: &[u8],
        clock: Arc<dyn Clock>,
    ) -> Result<Self, BackendJwtError> {
        let pair = EcdsaKeyPair::from_pkcs8(
            &ECDSA_P256_SHA256_FIXED_SIGNING,
            pkcs8,
            &SystemRandom::new(),
        )
        .map_err(|e| BackendJwtError(e.to_string()))?;
        let point = pair.public_key().as_ref();
        if point.len() != 65 {
            return Err(BackendJwtError("unexpected EC point".into()));
        }
        let kid = URL_SAFE_NO_PAD
            .encode(&ring::digest::digest(&ring::digest::SHA256, point).as_ref()[..12]);
        let public_jwk = serde_json::json!({
            "kty": "EC", "crv": "P-256", "use": "sig", "alg": "ES256", "kid": kid,
            "x": URL_SAFE_NO_PAD.encode(&point[1..33]),
            "y": URL_SAFE_NO_PAD.encode(&point[33..65]),
        });
        Ok(Self {
            cache: TokenCache::with_entries(config.cache_capacity, 600, clock.clone()),
            config,
            kid,
            key: EncodingKey::from_ec_der(pkcs8),
            public_jwk,
            clock,
        })
    }

    pub fn header_name(&self) -> &http::HeaderName {
        &self.config.header
    }

    /// The JWKS back ends verify with.
    pub fn jwks(&self) -> serde_json::Value {
        serde_json::json!({ "keys": [self.public_jwk] })
    }

    /// The header value for this identity, from cache when still fresh.
    pub fn header_value(&self, identity: &Identity) -> Result<HeaderValue, BackendJwtError> {
        let key = claims_key(identity);
        if let Some(v) = self.cache.get(&key) {
            return Ok(v);
        }
        let now = self.clock.now_secs();
        let exp = match identity.expires_at {
            Some(e) => e.min(now + self.config.ttl),
            None => now + self.config.ttl,
        };
        let claims = Claims {
            iss: &self.config.issuer,
            sub: &identity.subject,
            iat: now,
            exp,
            application: identity.application_id.as_deref(),
            application_name: identity.application_name.as_deref(),
            subscriber: identity.subscriber.as_deref(),
            client_id: identity.client_id.as_deref(),
            scope: identity.scopes.join(" "),
            enduser_issuer: identity.issuer.as_deref(),
        };
        let mut header = Header::new(Algorithm::ES256);
        header.kid = Some(self.kid.clone());
        header.typ = Some("JWT".into());
        let jwt = jsonwebtoken::encode(&header, &claims, &self.key)
            .map_err(|e| BackendJwtError(e.to_string()))?;
        let value = HeaderValue::from_str(&jwt).map_err(|e| BackendJwtError(e.to_string()))?;
        self.cache
            .insert(key, value.clone(), exp.saturating_sub(10));
        Ok(value)
    }
}

/// Digest of everything the back-end JWT says about an identity: equal identities (the
/// same token, or two tokens saying the same) share one signed header.
fn claims_key(identity: &Identity) -> TokenKey {
    use sha2::{Digest, Sha256};
    let mut h = Sha256::new();
    let mut field = |s: Option<&str>| {
        let s = s.unwrap_or("\u{0}none");
        h.update((s.len() as u64).to_le_bytes());
        h.update(s.as_bytes());
    };
    field(Some(&identity.subject));
    field(identity.application_id.as_deref());
    field(identity.application_name.as_deref());
    field(identity.subscriber.as_deref());
    field(identity.client_id.as_deref());
    field(identity.issuer.as_deref());
    for s in &identity.scopes {
        field(Some(s));
    }
    h.update(identity.expires_at.unwrap_or(0).to_le_bytes());
    TokenKey(h.finalize().into())
}
