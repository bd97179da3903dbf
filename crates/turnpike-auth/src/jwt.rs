//! Local JWT validation. Each [`TrustedIssuer`] holds its verification keys in memory
//! (from the snapshot's JWKS, or fetched in the background from a JWKS URL), each key
//! pinned to one algorithm: a token whose header names another algorithm (`none`, or
//! HS256 "signed" with the public key) is refused before any crypto. [`JwtValidator`]
//! checks signature (`crate::jws`), `exp`/`nbf` (RFC 7519 NumericDates, integer or
//! fractional, with a small leeway; `iat` only for its form), `iss` and `aud`,
//! then caches the identity until the token's `exp`; the revocation list and the key's
//! presence are re-checked on every cache hit. Concurrent first uses of one token verify
//! it once (single-flight on the cache slot).

use std::sync::Arc;

use arc_swap::ArcSwap;
use foldhash::{HashMap, HashMapExt, HashSet};
use jsonwebtoken::Algorithm;
use serde::Deserialize;
use serde_json::Value;
use turnpike_model::clock::Clock;
use turnpike_policy::{CredentialKind, Identity, KeptClaims};

use crate::cache::{CacheStats, Lookup, TokenCache, TokenKey};
use crate::error::AuthError;
use crate::identity::{ClaimMapping, Principals};
use crate::jws::{Compact, Verifier, HEADER_MAX};
use crate::numeric_date;

/// One verification key with its pinned algorithm, decoded once.
#[derive(Clone)]
pub struct VerifyKey {
    pub alg: Algorithm,
    key: Verifier,
}

/// A JWK as found in a JWKS document (only what verification needs).
#[derive(Debug, Deserialize)]
struct RawJwk {
    kty: String,
    kid: Option<String>,
    alg: Option<String>,
    #[serde(rename = "use")]
    use_: Option<String>,
    crv: Option<String>,
    x: Option<String>,
    y: Option<String>,
    n: Option<String>,
    e: Option<String>,
}

#[derive(Debug, Deserialize)]
struct RawJwks {
    keys: Vec<RawJwk>,
}

/// Why a JWKS document could not be used.
#[derive(Debug, thiserror::Error)]
pub enum JwksError {
    #[error("JWKS is not valid JSON: {0}")]
    Json(#[from] serde_json::Error),
    #[error("JWKS holds no usable signing key")]
    Empty,
}

/// Verification keys by `kid`.
#[derive(Clone)]
pub struct KeySet {
    keys: HashMap<String, VerifyKey>,
}

impl Default for KeySet {
    fn default() -> Self {
        Self {
            keys: HashMap::new(),
        }
    }
}

impl KeySet {
    /// Parses a JWKS document. Keys of unsupported types, encryption keys and symmetric
    /// keys are skipped; the algorithm comes from `alg` or else the key type.
    pub fn from_jwks_json(json: &[u8]) -> Result<Self, JwksError> {
        let raw: RawJwks = serde_json::from_slice(json)?;
        let mut keys = HashMap::new();
        for (i, k) in raw.keys.into_iter().enumerate() {
            if k.use_.as_deref().is_some_and(|u| u != "sig") {
                continue;
            }
            let kid = k.kid.clone().unwrap_or_else(|| format!("#{i}"));
            if let Some(vk) = verify_key(&k) {
                keys.insert(kid, vk);
            }
        }
        if keys.is_empty() {
            return Err(JwksError::Empty);
        }
        Ok(Self { keys })
    }

    pub fn len(&self) -> usize {
        self.keys.len()
    }

    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    fn get(&self, kid: Option<&str>) -> Option<(&str, &VerifyKey)> {
        match kid {
            Some(kid) => self.keys.get_key_value(kid).map(|(k, v)| (k.as_str(), v)),
            // No kid: acceptable only when the issuer has exactly one key.
            None if self.keys.len() == 1 => self.keys.iter().next().map(|(k, v)| (k.as_str(), v)),
            None => None,
        }
    }
}

fn verify_key(k: &RawJwk) -> Option<VerifyKey> {
    match (k.kty.as_str(), k.alg.as_deref()) {
        ("EC", alg) => {
            let alg = match (k.crv.as_deref(), alg) {
                (Some("P-256"), None | Some("ES256")) => Algorithm::ES256,
                (Some("P-384"), None | Some("ES384")) => Algorithm::ES384,
                _ => return None,
            };
            let key = Verifier::ec(alg, k.x.as_deref()?, k.y.as_deref()?)?;
            Some(VerifyKey { alg, key })
        }
        ("RSA", alg) => {
            let alg = match alg {
                None | Some("RS256") => Algorithm::RS256,
                Some("RS384") => Algorithm::RS384,
                Some("RS512") => Algorithm::RS512,
                Some("PS256") => Algorithm::PS256,
                Some("PS384") => Algorithm::PS384,
                Some("PS512") => Algorithm::PS512,
                _ => return None,
            };
            let key = Verifier::rsa(alg, k.n.as_deref()?, k.e.as_deref()?)?;
            Some(VerifyKey { alg, key })
        }
        ("OKP", None | Some("EdDSA")) if k.crv.as_deref() == Some("Ed25519") => {
            let key = Verifier::ed25519(k.x.as_deref()?)?;
            Some(VerifyKey {
                alg: Algorithm::EdDSA,
                key,
            })
        }
        // Symmetric ("oct") keys are never trusted: a JWKS is public.
        _ => None,
    }
}

/// An issuer the gateway accepts tokens from.
pub struct TrustedIssuer {
    pub issuer: String,
    /// Accepted `aud` values (any one suffices); empty disables the audience check.
    pub audiences: Vec<String>,
    /// A token for none of `audiences` but for resource URIs only passes, bound to them
    /// (`Principal::resources`; RFC 8707).
    pub resource_audiences: bool,
    pub mapping: ClaimMapping,
    keys: ArcSwap<KeySet>,
    pub(crate) changed: tokio::sync::watch::Sender<u64>,
    pub(crate) unknown_kid: tokio::sync::Notify,
}

impl TrustedIssuer {
    pub fn new(issuer: impl Into<String>, audiences: Vec<String>, keys: KeySet) -> Self {
        Self {
            issuer: issuer.into(),
            audiences,
            resource_audiences: false,
            mapping: ClaimMapping::default(),
            keys: ArcSwap::from_pointee(keys),
            changed: tokio::sync::watch::channel(0).0,
            unknown_kid: tokio::sync::Notify::new(),
        }
    }

    pub fn with_mapping(mut self, mapping: ClaimMapping) -> Self {
        self.mapping = mapping;
        self
    }

    /// See [`TrustedIssuer::resource_audiences`].
    pub fn with_resource_audiences(mut self, on: bool) -> Self {
        self.resource_audiences = on;
        self
    }

    /// Replaces the key set (snapshot swap or background JWKS refresh).
    pub fn set_keys(&self, keys: KeySet) {
        self.keys.store(Arc::new(keys));
        self.changed.send_modify(|g| *g += 1);
    }

    pub fn key_count(&self) -> usize {
        self.keys.load().len()
    }

    /// Waits until the key set has been replaced at least `generation` times.
    pub async fn wait_for_keys(&self, generation: u64) {
        let mut rx = self.changed.subscribe();
        let _ = rx.wait_for(|g| *g >= generation).await;
    }
}

/// Revoked token ids (`jti`) and revoked applications (disabled, or whose owner was
/// disabled or deleted: every token they hold is refused), replaced wholesale from each
/// snapshot.
#[derive(Default)]
pub struct Revocations {
    jtis: ArcSwap<HashSet<String>>,
    applications: ArcSwap<HashSet<String>>,
}

impl Revocations {
    pub fn new(ids: impl IntoIterator<Item = String>) -> Self {
        Self::with_applications(ids, std::iter::empty())
    }
    /// Revoked `jti`s plus applications whose every token is refused.
    pub fn with_applications(
        ids: impl IntoIterator<Item = String>,
        applications: impl IntoIterator<Item = String>,
    ) -> Self {
        Self {
            jtis: ArcSwap::from_pointee(ids.into_iter().collect()),
            applications: ArcSwap::from_pointee(applications.into_iter().collect()),
        }
    }
    pub fn replace(&self, ids: impl IntoIterator<Item = String>) {
        self.jtis.store(Arc::new(ids.into_iter().collect()));
    }
    pub fn contains(&self, jti: &str) -> bool {
        let set = self.jtis.load();
        // Most snapshots revoke nothing: skip hashing the jti then.
        !set.is_empty() && set.contains(jti)
    }
    /// Whether every token of this application is refused.
    pub fn application_revoked(&self, application: &str) -> bool {
        let set = self.applications.load();
        !set.is_empty() && set.contains(application)
    }
    pub(crate) fn check(&self, identity: &Identity) -> Result<(), AuthError> {
        match &identity.token_id {
            Some(jti) if self.contains(jti) => return Err(AuthError::Revoked),
            _ => {}
        }
        match &identity.application_id {
            Some(app) if self.application_revoked(app) => Err(AuthError::Revoked),
            _ => Ok(()),
        }
    }
}

/// Validates JWTs from a set of trusted issuers.
pub struct JwtValidator {
    issuers: HashMap<String, Arc<TrustedIssuer>>,
    revocations: Arc<Revocations>,
    cache: Arc<TokenCache<Arc<Identity>>>,
    clock: Arc<dyn Clock>,
    leeway: u64,
    /// Claims that compiled conditions read, set once per snapshot.
    kept: std::sync::OnceLock<KeptClaims>,
    /// What the identities of one application share, interned.
    principals: Principals,
}

const MISSING_CLAIM: AuthError = AuthError::InvalidToken("a required claim is missing");

/// `aud` (a string or an array of strings) names one of `accepted`.
fn audience_ok(claims: &Value, accepted: &[String]) -> Result<(), AuthError> {
    let wrong = AuthError::InvalidToken("the token is not for this audience");
    let is_accepted = |v: &Value| v.as_str().is_some_and(|a| accepted.iter().any(|x| x == a));
    match claims.get("aud") {
        None => Err(MISSING_CLAIM),
        Some(Value::Array(list)) if list.iter().any(is_accepted) => Ok(()),
        Some(v) if is_accepted(v) => Ok(()),
        Some(_) => Err(wrong),
    }
}

/// Caps the resources one token may be bound to: each costs a comparison per request.
const MAX_TOKEN_RESOURCES: usize = 8;

/// The token's `aud` when it is one to [`MAX_TOKEN_RESOURCES`] absolute `http(s)` URIs:
/// the resources (RFC 8707) the token is bound to; `None` for any other audience.
fn resource_audiences(claims: &Value) -> Option<Vec<String>> {
    let is_uri = |a: &str| a.starts_with("https://") || a.starts_with("http://");
    let list: Vec<String> = match claims.get("aud")? {
        Value::String(a) => vec![a.clone()],
        Value::Array(list) => list
            .iter()
            .map(|v| v.as_str().map(str::to_owned))
            .collect::<Option<_>>()?,
        _ => return None,
    };
    let ok = !list.is_empty() && list.len() <= MAX_TOKEN_RESOURCES;
    (ok && list.iter().all(|a| is_uri(a))).then_some(list)
}

impl JwtValidator {
    /// `cache` is long-lived (kept across snapshot swaps); `leeway` is the clock-skew
    /// allowance for `exp` and `nbf`, in seconds.
    pub fn new(
        issuers: impl IntoIterator<Item = Arc<TrustedIssuer>>,
        revocations: Arc<Revocations>,
        cache: Arc<TokenCache<Arc<Identity>>>,
        clock: Arc<dyn Clock>,
        leeway: u64,
    ) -> Self {
        Self {
            issuers: issuers.into_iter().map(|i| (i.issuer.clone(), i)).collect(),
            revocations,
            cache,
            clock,
            leeway,
            kept: std::sync::OnceLock::new(),
            principals: Principals::default(),
        }
    }

    /// The verified-token cache's lookups and size.
    pub fn cache_stats(&self) -> CacheStats {
        self.cache.stats()
    }

    /// Keeps these claims of every verified token in its identity (`Identity::claims`);
    /// call once, right after building (later calls are ignored).
    pub fn keep_claims(&self, kept: KeptClaims) {
        let _ = self.kept.set(kept);
    }

    fn kept_id(&self) -> u64 {
        self.kept.get().map_or(0, KeptClaims::id)
    }

    /// Validates a compact JWT.
    pub fn validate(&self, token: &str) -> Result<Arc<Identity>, AuthError> {
        let key = TokenKey::of(token);
        match self.cached(&key) {
            Some(r) => r,
            None => self.verify_and_cache(token, key),
        }
    }

    /// The answer for a token verified before (`key` is its digest), without looking at
    /// the token: a hit means these exact bytes passed every check once. `None`: not
    /// cached (or its key is no longer trusted), verify it.
    pub fn cached(&self, key: &TokenKey) -> Option<Result<Arc<Identity>, AuthError>> {
        let id = self.cache.get(key)?;
        if self.still_trusted(&id) && id.claims.set() == self.kept_id() {
            return Some(self.revocations.check(&id).map(|()| id));
        }
        self.cache.remove(key);
        None
    }

    /// Full verification of a token that missed the cache; caches the identity. When
    /// several threads meet the same new token at once, one verifies it and the others
    /// take its answer.
    pub fn verify_and_cache(&self, token: &str, key: TokenKey) -> Result<Arc<Identity>, AuthError> {
        let guard = match self.cache.get_or_guard(&key) {
            Lookup::Miss(guard) => guard,
            // Another thread verified it while we waited.
            Lookup::Hit(_) => match self.cached(&key) {
                Some(r) => return r,
                None => return self.verify_checked(token).map(|(id, _)| id),
            },
        };
        let (id, exp) = self.verify_checked(token)?;
        guard.insert(&self.cache, id.clone(), exp);
        Ok(id)
    }

    /// Verifies and checks revocation; the second value is when the cache entry expires.
    fn verify_checked(&self, token: &str) -> Result<(Arc<Identity>, u64), AuthError> {
        let id = Arc::new(self.verify(token)?);
        self.revocations.check(&id)?;
        let exp = id.expires_at.unwrap_or(0).saturating_add(self.leeway);
        Ok((id, exp))
    }

    /// A cached identity stays valid only while its issuer still publishes its key.
    fn still_trusted(&self, id: &Identity) -> bool {
        let (Some(iss), Some(kid)) = (&id.issuer, &id.key_id) else {
            return false;
        };
        self.issuers
            .get(iss)
            .is_some_and(|i| i.keys.load().keys.contains_key(kid))
    }

    fn verify(&self, token: &str) -> Result<Identity, AuthError> {
        let jws = Compact::split(token)?;
        let mut header_buf = [0u8; HEADER_MAX];
        let header = jws.header(&mut header_buf)?;
        let alg: Algorithm = header
            .alg
            .parse()
            .map_err(|_| AuthError::InvalidToken("malformed token or unsupported algorithm"))?;
        let claims = jws.claims()?;
        let issuer = claims
            .get("iss")
            .and_then(Value::as_str)
            .and_then(|iss| self.issuers.get(iss))
            .ok_or(AuthError::InvalidToken("untrusted issuer"))?;
        let keys = issuer.keys.load();
        let Some((kid, vk)) = keys.get(header.kid.as_deref()) else {
            issuer.unknown_kid.notify_one();
            return Err(AuthError::InvalidToken("unknown signing key"));
        };
        if alg != vk.alg {
            return Err(AuthError::InvalidToken("algorithm not allowed"));
        }
        jws.verify(&vk.key)?;
        // Signed by a trusted key: now the claims mean something.
        let exp = self.check_times(&claims)?;
        let mut resources = Vec::new();
        if !issuer.audiences.is_empty() {
            if let Err(e) = audience_ok(&claims, &issuer.audiences) {
                // Not for the issuer's usual audience: still good if bound to resources.
                resources = issuer
                    .resource_audiences
                    .then(|| resource_audiences(&claims))
                    .flatten()
                    .ok_or(e)?;
            }
        }
        let mut id = issuer.mapping.identity(
            CredentialKind::Jwt,
            &claims,
            Some(kid.to_owned()),
            self.kept.get(),
            &self.principals,
            resources,
        );
        id.expires_at = Some(exp);
        Ok(id)
    }

    /// `exp` (required), `nbf` and `iat` as NumericDates (RFC 7519 §2: integer or
    /// fractional); any of them present but malformed refuses the token. Returns `exp`
    /// in whole seconds, rounded up.
    fn check_times(&self, claims: &Value) -> Result<u64, AuthError> {
        let exp = numeric_date::claim(claims, "exp")?.ok_or(MISSING_CLAIM)?;
        let nbf = numeric_date::claim(claims, "nbf")?;
        // Read only for its form: an issuer whose clock runs ahead is `nbf`'s concern.
        numeric_date::claim(claims, "iat")?;
        let now = self.clock.now_secs();
        if exp.saturating_add(self.leeway) <= now {
            return Err(AuthError::Expired);
        }
        if nbf.is_some_and(|nbf| nbf > now.saturating_add(self.leeway)) {
            return Err(AuthError::InvalidToken("the token is not valid yet"));
        }
        Ok(exp)
    }
}
