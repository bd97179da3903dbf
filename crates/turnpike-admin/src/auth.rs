//! Who is calling the REST APIs. HTTP Basic against the store's argon2 hashes, with a
//! short-lived cache of successful checks (argon2 costs tens of milliseconds by design);
//! or `Authorization: Bearer` with a JWT from this control plane's key manager, validated
//! locally (signature, `iss`, `aud` = [`REST_AUDIENCE`], `exp`, revocation) and mapped to
//! the user's *current* roles. [`Caller::require`] checks an operation's [`Scope`]: the
//! role always, the token's scopes too for bearer callers. Handlers take one of the
//! scoped extractors ([`ApiViewer`], [`ApiCreator`], [`ApiPublisher`],
//! [`SubscriptionBlocker`], [`Portal`], [`Admin`]), which run that check before the
//! handler reads its body.

use std::collections::HashMap;
use std::net::IpAddr;
use std::time::{Duration, Instant};

use axum::extract::FromRequestParts;
use base64::Engine;
use http::request::Parts;
use turnpike_keymanager::{user_account, PeerIp};

use crate::error::ApiError;
use crate::scopes::{self, Scope};
use crate::security::REST_AUDIENCE;
use crate::AppState;

/// Who is calling.
#[derive(Debug, Clone)]
pub struct Caller {
    pub name: String,
    pub roles: Vec<String>,
    /// The bearer token's scopes; `None` for HTTP Basic (the roles alone decide).
    pub scopes: Option<Vec<String>>,
}

impl Caller {
    /// 403 unless the caller's roles allow `scope` and, for a bearer token, the token
    /// carries it.
    pub fn require(&self, scope: Scope) -> Result<(), ApiError> {
        if !scopes::allowed(&self.roles, scope) {
            return Err(ApiError::forbidden(scope.role().unwrap_or("any")));
        }
        match &self.scopes {
            Some(granted) if !granted.iter().any(|g| g == scope.as_str()) => {
                Err(ApiError::insufficient_scope(scope.as_str()))
            }
            _ => Ok(()),
        }
    }

    pub fn is_admin(&self) -> bool {
        self.roles.iter().any(|r| r == "admin")
    }
}

const CACHE_TTL: Duration = Duration::from_secs(60);

/// Successful Basic checks, keyed by the raw header value.
#[derive(Default)]
pub struct AuthCache {
    entries: std::sync::Mutex<HashMap<String, (Caller, Instant)>>,
}

impl AuthCache {
    fn get(&self, key: &str) -> Option<Caller> {
        let map = self.entries.lock().ok()?;
        map.get(key)
            .filter(|(_, at)| at.elapsed() < CACHE_TTL)
            .map(|(c, _)| c.clone())
    }

    fn put(&self, key: String, caller: Caller) {
        if let Ok(mut map) = self.entries.lock() {
            if map.len() > 10_000 {
                map.clear();
            }
            map.insert(key, (caller, Instant::now()));
        }
    }

    /// Forgets every cached check (a user or their roles changed).
    pub fn clear(&self) {
        if let Ok(mut map) = self.entries.lock() {
            map.clear();
        }
    }
}

fn parse_basic(header: &str) -> Option<(String, String)> {
    let b64 = header
        .strip_prefix("Basic ")
        .or_else(|| header.strip_prefix("basic "))?;
    let raw = base64::engine::general_purpose::STANDARD
        .decode(b64.trim())
        .ok()?;
    let text = String::from_utf8(raw).ok()?;
    let (user, pass) = text.split_once(':')?;
    Some((user.to_string(), pass.to_string()))
}

impl FromRequestParts<AppState> for Caller {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        let header = parts
            .headers
            .get(http::header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .ok_or_else(ApiError::unauthorized)?;
        if let Some((scheme, token)) = header.split_once(' ') {
            if scheme.eq_ignore_ascii_case("bearer") {
                return bearer(state, token.trim()).await;
            }
        }
        basic(state, header, PeerIp::of(&parts.extensions).0).await
    }
}

/// HTTP Basic under the brute-force guard the key manager shares: a locked account is
/// refused (429) before the cache or argon2 is consulted, and each failure counts toward
/// the login form's and the token endpoint's limits too.
async fn basic(state: &AppState, header: &str, ip: Option<IpAddr>) -> Result<Caller, ApiError> {
    let (user, pass) = parse_basic(header).ok_or_else(ApiError::unauthorized)?;
    let account = user_account(&user);
    state
        .inner
        .guard
        .check(&account, ip)
        .map_err(ApiError::too_many_attempts)?;
    if let Some(c) = state.inner.auth_cache.get(header) {
        return Ok(c);
    }
    let roles = guarded_password(state, &user, &pass, ip)
        .await?
        .ok_or_else(ApiError::unauthorized)?;
    let caller = Caller {
        name: user,
        roles,
        scopes: None,
    };
    state
        .inner
        .auth_cache
        .put(header.to_string(), caller.clone());
    Ok(caller)
}

/// Checks a user's password under the brute-force guard: the user's roles, `None` when
/// wrong, 429 when the account is (or just became) locked for `ip`. No argon2 runs while
/// locked.
pub(crate) async fn guarded_password(
    state: &AppState,
    user: &str,
    password: &str,
    ip: Option<IpAddr>,
) -> Result<Option<Vec<String>>, ApiError> {
    let account = user_account(user);
    let guard = &state.inner.guard;
    guard
        .check(&account, ip)
        .map_err(ApiError::too_many_attempts)?;
    let Some(roles) = state.inner.store.verify_password(user, password).await? else {
        tracing::info!(account = ?account, ip = ?ip, "failed authentication");
        return match guard.failure(&account, ip) {
            Some(retry_after) => Err(ApiError::too_many_attempts(retry_after)),
            None => Ok(None),
        };
    };
    guard.success(&account, ip);
    Ok(Some(roles))
}

/// Extractors that authenticate the caller *and* check one scope before the handler
/// runs (so before its body is parsed): a handler's signature says what it needs.
macro_rules! scoped_callers {
    ($($(#[$doc:meta])* $name:ident => $scope:ident;)*) => {$(
        $(#[$doc])*
        // Not every family has a handler that reads the caller back (readers don't).
        #[allow(dead_code)]
        pub struct $name(pub Caller);

        impl FromRequestParts<AppState> for $name {
            type Rejection = ApiError;

            async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
                let caller = Caller::from_request_parts(parts, state).await?;
                caller.require(Scope::$scope)?;
                Ok($name(caller))
            }
        }
    )*};
}

scoped_callers! {
    /// Publisher reads (`apim:api_view`).
    ApiViewer => ApiView;
    /// Publisher writes (`apim:api_create`).
    ApiCreator => ApiCreate;
    /// Lifecycle changes (`apim:api_publish`).
    ApiPublisher => ApiPublish;
    /// Blocking subscriptions (`apim:subscription_block`).
    SubscriptionBlocker => SubscriptionBlock;
    /// The DevPortal (`apim:subscribe`; any user).
    Portal => Subscribe;
    /// The Admin API (`apim:admin`).
    Admin => Admin;
}

/// A bearer token from this control plane's key manager, for the REST audience; the
/// caller gets the user's roles as they are now (a role taken away counts at once).
async fn bearer(state: &AppState, token: &str) -> Result<Caller, ApiError> {
    use turnpike_keymanager::VerifyError;
    let sec = state
        .inner
        .security
        .get()
        .ok_or_else(|| ApiError::invalid_token("this control plane issues no tokens"))?;
    let claims = sec
        .km
        .verify_access_token(token, REST_AUDIENCE)
        .await
        .map_err(|e| match e {
            VerifyError::Rejected(why) => ApiError::invalid_token(&why.to_string()),
            VerifyError::Store(e) => {
                tracing::error!(error = %e, "control plane: checking a token's revocation");
                match e.unavailable {
                    true => ApiError::store_outage(turnpike_store::Outage::Unavailable),
                    false => ApiError::internal(),
                }
            }
        })?;
    let name = claims
        .username
        .ok_or_else(|| ApiError::invalid_token("the token does not name a user"))?;
    let roles = match state.inner.store.user(&name).await {
        Ok(u) if u.status != turnpike_store::AccountStatus::Active => {
            return Err(ApiError::invalid_token("the token's user is disabled"))
        }
        Ok(u) => u.roles,
        Err(turnpike_store::StoreError::NotFound(_)) => {
            return Err(ApiError::invalid_token("the token's user no longer exists"))
        }
        Err(e) => return Err(e.into()),
    };
    let scopes = claims
        .scope
        .split(' ')
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect();
    Ok(Caller {
        name,
        roles,
        scopes: Some(scopes),
    })
}

/// Compares two secrets in time independent of where they differ.
pub fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}
