//! HTTP Basic authentication against the store's argon2 hashes, with a short-lived cache of
//! successful checks (argon2 costs tens of milliseconds by design), and role checks.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use axum::extract::FromRequestParts;
use base64::Engine;
use http::request::Parts;

use crate::error::ApiError;
use crate::AppState;

/// Who is calling.
#[derive(Debug, Clone)]
pub struct Caller {
    pub name: String,
    pub roles: Vec<String>,
}

impl Caller {
    pub fn has(&self, role: &str) -> bool {
        self.roles.iter().any(|r| r == role || r == "admin")
    }

    pub fn require(&self, role: &str) -> Result<(), ApiError> {
        if self.has(role) {
            Ok(())
        } else {
            Err(ApiError::forbidden(role))
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
        if let Some(c) = state.inner.auth_cache.get(header) {
            return Ok(c);
        }
        let (user, pass) = parse_basic(header).ok_or_else(ApiError::unauthorized)?;
        let roles = state
            .inner
            .store
            .verify_password(&user, &pass)
            .await?
            .ok_or_else(ApiError::unauthorized)?;
        let caller = Caller { name: user, roles };
        state
            .inner
            .auth_cache
            .put(header.to_string(), caller.clone());
        Ok(caller)
    }
}

/// Compares two secrets in time independent of where they differ.
pub fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}
