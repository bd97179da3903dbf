//! Opaque tokens: validated by RFC 7662 introspection at the key manager, with a positive
//! cache bounded by bytes (64 MiB by default: about 250,000 tokens; 15 minutes as in
//! WSO2, but never past the token's `exp`), a negative cache for tokens found inactive, and single-flight: while
//! one call for a token is in flight, every other request for that token waits for its
//! answer instead of making another. Revocation lists are checked on every hit.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use bytes::Bytes;
use http::{header, HeaderValue, Method, Request, Uri};
use http_body_util::Full;
use serde_json::Value;
use tokio::sync::OnceCell;
use turnpike_model::clock::Clock;
use turnpike_policy::{CredentialKind, Identity};

use crate::cache::CacheStats;
use crate::cache::{TokenCache, TokenKey};
use crate::error::AuthError;
use crate::http_client::{FetchError, HttpClient};
use crate::identity::{ClaimMapping, Principals};
use crate::jwt::Revocations;

/// Introspection settings.
#[derive(Debug, Clone)]
pub struct IntrospectionConfig {
    /// The key manager's `/oauth2/introspect`.
    pub endpoint: Uri,
    /// The gateway's own client credentials (a client with `can_introspect`).
    pub client_id: String,
    pub client_secret: String,
    /// Byte budget of the positive cache (see [`crate::ENTRY_OVERHEAD`]).
    pub cache_bytes: u64,
    pub cache_ttl: Duration,
    /// Byte budget of the negative cache.
    pub negative_bytes: u64,
    pub negative_ttl: Duration,
    pub timeout: Duration,
    pub mapping: ClaimMapping,
}

impl IntrospectionConfig {
    pub fn new(
        endpoint: Uri,
        client_id: impl Into<String>,
        client_secret: impl Into<String>,
    ) -> Self {
        Self {
            endpoint,
            client_id: client_id.into(),
            client_secret: client_secret.into(),
            cache_bytes: 64 << 20,
            cache_ttl: Duration::from_secs(15 * 60),
            negative_bytes: 4 << 20,
            negative_ttl: Duration::from_secs(30),
            timeout: Duration::from_secs(5),
            mapping: ClaimMapping::default(),
        }
    }
}

type Flight = Arc<OnceCell<Result<Arc<Identity>, AuthError>>>;

struct FlightGuard<'a> {
    map: &'a Mutex<HashMap<[u8; 32], Flight>>,
    key: [u8; 32],
    flight: Flight,
}

impl Drop for FlightGuard<'_> {
    fn drop(&mut self) {
        let mut map = self.map.lock().unwrap_or_else(|p| p.into_inner());
        let ours = map
            .get(&self.key)
            .is_some_and(|f| Arc::ptr_eq(f, &self.flight));
        // Two holders left means the map and us: nobody else is waiting.
        if ours && (self.flight.initialized() || Arc::strong_count(&self.flight) <= 2) {
            map.remove(&self.key);
        }
    }
}

/// The introspection client with its caches. Long-lived: keep it across snapshot swaps.
pub struct Introspector {
    http: HttpClient,
    endpoint: Uri,
    authorization: HeaderValue,
    cache_ttl: u64,
    negative_ttl: u64,
    mapping: ClaimMapping,
    positive: TokenCache<Arc<Identity>>,
    negative: TokenCache<()>,
    principals: Principals,
    inflight: Mutex<HashMap<[u8; 32], Flight>>,
    clock: Arc<dyn Clock>,
}

fn form_encode(s: &str) -> String {
    form_urlencoded::byte_serialize(s.as_bytes()).collect()
}

impl Introspector {
    pub fn new(config: IntrospectionConfig, clock: Arc<dyn Clock>) -> Result<Self, FetchError> {
        let creds = format!(
            "{}:{}",
            form_encode(&config.client_id),
            form_encode(&config.client_secret)
        );
        let mut authorization = HeaderValue::from_str(&format!("Basic {}", STANDARD.encode(creds)))
            .map_err(|e| FetchError::Request(e.to_string()))?;
        authorization.set_sensitive(true);
        Ok(Self {
            http: HttpClient::new(config.timeout)?,
            endpoint: config.endpoint,
            authorization,
            cache_ttl: config.cache_ttl.as_secs(),
            negative_ttl: config.negative_ttl.as_secs(),
            mapping: config.mapping,
            positive: TokenCache::new(config.cache_bytes, clock.clone()),
            negative: TokenCache::new(config.negative_bytes, clock.clone()),
            principals: Principals::default(),
            inflight: Mutex::new(HashMap::new()),
            clock,
        })
    }

    /// Validates an opaque token; at most one introspection call per token at a time.
    pub async fn validate(
        &self,
        token: &str,
        revocations: &Revocations,
    ) -> Result<Arc<Identity>, AuthError> {
        let key = TokenKey::of(token);
        if let Some(id) = self.cached(&key)? {
            revocations.check(&id)?;
            return Ok(id);
        }
        let flight = {
            let mut map = self.inflight.lock().unwrap_or_else(|p| p.into_inner());
            map.entry(key.0).or_default().clone()
        };
        // Removes the flight when it lands or when its last waiter goes away (a client
        // that disconnects mid-call must not leave an entry behind).
        let guard = FlightGuard {
            map: &self.inflight,
            key: key.0,
            flight,
        };
        let result = guard
            .flight
            .get_or_init(|| async {
                // A flight that just landed may have filled the cache.
                match self.cached(&key) {
                    Ok(Some(id)) => Ok(id),
                    Err(e) => Err(e),
                    Ok(None) => self.call(token, key).await,
                }
            })
            .await
            .clone();
        drop(guard);
        let id = result?;
        revocations.check(&id)?;
        Ok(id)
    }

    /// The cached answer, if any, without I/O.
    pub fn peek(
        &self,
        token: &str,
        revocations: &Revocations,
    ) -> Option<Result<Arc<Identity>, AuthError>> {
        self.peek_key(&TokenKey::of(token), revocations)
    }

    /// [`Introspector::peek`] by the token's digest.
    pub fn peek_key(
        &self,
        key: &TokenKey,
        revocations: &Revocations,
    ) -> Option<Result<Arc<Identity>, AuthError>> {
        match self.cached(key) {
            Ok(Some(id)) => Some(revocations.check(&id).map(|_| id)),
            Ok(None) => None,
            Err(e) => Some(Err(e)),
        }
    }

    fn cached(&self, key: &TokenKey) -> Result<Option<Arc<Identity>>, AuthError> {
        if let Some(id) = self.positive.get(key) {
            return Ok(Some(id));
        }
        if self.negative.get(key).is_some() {
            return Err(AuthError::InvalidToken("the token is not active"));
        }
        Ok(None)
    }

    /// One introspection call; fills the positive or negative cache before returning.
    async fn call(&self, token: &str, key: TokenKey) -> Result<Arc<Identity>, AuthError> {
        let body = format!("token={}&token_type_hint=access_token", form_encode(token));
        let req = Request::builder()
            .method(Method::POST)
            .uri(self.endpoint.clone())
            .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
            .header(header::ACCEPT, "application/json")
            .header(header::AUTHORIZATION, self.authorization.clone())
            .body(Full::new(Bytes::from(body)))
            .map_err(|_| AuthError::Unavailable)?;
        let bytes = self.http.send(req).await.map_err(|e| {
            tracing::warn!(error = %e, endpoint = %self.endpoint, "introspection failed");
            AuthError::Unavailable
        })?;
        let claims: Value = serde_json::from_slice(&bytes).map_err(|_| AuthError::Unavailable)?;
        let now = self.clock.now_secs();
        let exp = claims.get("exp").and_then(crate::numeric_date::seconds);
        let active = claims.get("active").and_then(Value::as_bool) == Some(true);
        if !active || exp.is_some_and(|e| e <= now) {
            self.negative.insert(key, (), now + self.negative_ttl);
            return Err(AuthError::InvalidToken("the token is not active"));
        }
        let id = Arc::new(self.mapping.identity(
            CredentialKind::Opaque,
            &claims,
            None,
            None,
            &self.principals,
            // The key manager refuses `resource` for opaque tokens: never bound.
            Vec::new(),
        ));
        let until = (now + self.cache_ttl).min(exp.unwrap_or(u64::MAX));
        self.positive.insert(key, id.clone(), until);
        Ok(id)
    }

    /// The positive cache's lookups and size.
    pub fn cache_stats(&self) -> CacheStats {
        self.positive.stats()
    }

    /// Calls in flight right now (for tests and metrics).
    pub fn in_flight(&self) -> usize {
        self.inflight.lock().map(|m| m.len()).unwrap_or(0)
    }

    /// Drops a token from both caches (e.g. on a revocation event).
    pub fn forget(&self, token: &str) {
        let key = TokenKey::of(token);
        self.positive.remove(&key);
        self.negative.remove(&key);
    }
}
