//! Dynamic client registration (RFC 7591) at `POST /oauth2/register`, under the policy an
//! administrator sets ([`RegistrationPolicy`]; off by default, and then the endpoint is
//! 404 and the metadata names none). Open, or with an initial access token sent as a
//! bearer token (RFC 7591 §3). Each registration becomes one application of the
//! policy's owner (so the DevPortal lists it and subscriptions work as for any
//! application), with one OAuth2 client: confidential (`client_secret_basic` or
//! `_post`, a secret shown once) or public (`none`: authorization code with PKCE only).
//! Redirect URIs must be `https` or loopback `http` (RFC 8252 §7.3) without fragment;
//! grant types only those the policy allows, scopes outside it dropped; the owner's
//! applications are capped and each client address may register a few times a minute.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Mutex;

use axum::extract::State;
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use bytes::Bytes;
use serde::Deserialize;
use subtle::ConstantTimeEq;

use crate::error::no_store;
use crate::secret::{hash_secret, random_id, random_token, token_hash};
use crate::store::{GrantType, Registration};
use crate::{KeyManager, PeerIp};

/// What an administrator allows registering clients to do.
#[derive(Debug, Clone)]
pub struct RegistrationPolicy {
    /// `None`: open registration; else the SHA-256 (lowercase hex) of the initial access
    /// token callers must send as `Authorization: Bearer` ([`Self::token_sha256`]).
    pub initial_access_token_sha256: Option<String>,
    /// The user who owns every registered application.
    pub owner: String,
    /// The application tier of registered applications.
    pub application_tier: String,
    /// Grant types a client may register, of `authorization_code`, `refresh_token` and
    /// `client_credentials`.
    pub grant_types: Vec<String>,
    /// Scopes a registered client may ask for (its `scope` defaults to all of them).
    pub scopes: Vec<String>,
    /// The owner's applications at most (registered ones and any other).
    pub max_clients: u64,
    /// Registrations per client address per minute.
    pub per_minute: u32,
}

impl RegistrationPolicy {
    /// What [`Self::initial_access_token_sha256`] holds for `token`.
    pub fn token_sha256(token: &str) -> String {
        token_hash(token)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect()
    }
}

impl Default for RegistrationPolicy {
    fn default() -> Self {
        Self {
            initial_access_token_sha256: None,
            owner: "admin".into(),
            application_tier: "Unlimited".into(),
            grant_types: vec!["authorization_code".into(), "refresh_token".into()],
            scopes: Vec::new(),
            max_clients: 1000,
            per_minute: 10,
        }
    }
}

/// Caps on one registration's metadata.
const MAX_REDIRECT_URIS: usize = 10;
const MAX_URI_LEN: usize = 2048;
const MAX_NAME_LEN: usize = 100;
/// Client addresses the rate limiter remembers in one minute.
const MAX_TRACKED_PEERS: usize = 10_000;

/// Registrations per client address in the current minute.
#[derive(Default)]
pub(crate) struct RegistrationLimiter {
    window: Mutex<(u64, HashMap<Option<IpAddr>, u32>)>,
}

impl RegistrationLimiter {
    /// Counts one registration from `ip` at `now`; false past `per_minute` (or when too
    /// many addresses registered this minute).
    fn admit(&self, ip: Option<IpAddr>, now: u64, per_minute: u32) -> bool {
        let Ok(mut w) = self.window.lock() else {
            return false;
        };
        let minute = now / 60;
        if w.0 != minute {
            *w = (minute, HashMap::new());
        }
        if w.1.len() >= MAX_TRACKED_PEERS && !w.1.contains_key(&ip) {
            return false;
        }
        let n = w.1.entry(ip).or_insert(0);
        *n += 1;
        *n <= per_minute
    }
}

/// The client metadata of RFC 7591 §2 that matter here; others are ignored.
#[derive(Debug, Deserialize)]
struct Metadata {
    redirect_uris: Option<Vec<String>>,
    token_endpoint_auth_method: Option<String>,
    grant_types: Option<Vec<String>>,
    response_types: Option<Vec<String>>,
    client_name: Option<String>,
    scope: Option<String>,
}

/// RFC 7591 §3.2.2 errors (and 401/403/404/429 for the policy's refusals).
fn refusal(status: StatusCode, error: &str, description: &str) -> Response {
    let body = serde_json::json!({ "error": error, "error_description": description });
    let mut resp = (status, Json(body)).into_response();
    no_store(&mut resp);
    resp
}

/// Why metadata was refused (RFC 7591 §3.2.2): `invalid_redirect_uri` or
/// `invalid_client_metadata`, 400.
struct Refused {
    error: &'static str,
    description: &'static str,
}

fn bad_metadata(description: &'static str) -> Refused {
    Refused {
        error: "invalid_client_metadata",
        description,
    }
}

fn bad_redirect(description: &'static str) -> Refused {
    Refused {
        error: "invalid_redirect_uri",
        description,
    }
}

/// RFC 8252 §7.3 loopback hosts, any port.
fn is_loopback_http(uri: &str) -> bool {
    let Some(rest) = uri.strip_prefix("http://") else {
        return false;
    };
    let authority = rest.split('/').next().unwrap_or("");
    let host = match authority.rsplit_once(':') {
        Some((h, port)) if port.bytes().all(|b| b.is_ascii_digit()) => h,
        _ => authority,
    };
    matches!(host, "127.0.0.1" | "[::1]" | "localhost")
}

/// A redirect URI this server accepts: `https` or loopback `http`, absolute, with a
/// host, no fragment, no characters a `Location` or the store's word list would break.
pub(crate) fn redirect_uri_ok(uri: &str) -> bool {
    let https_host = uri
        .strip_prefix("https://")
        .is_some_and(|r| !r.is_empty() && !r.starts_with('/'));
    uri.len() <= MAX_URI_LEN
        && !uri.contains('#')
        && !uri
            .bytes()
            .any(|b| b.is_ascii_whitespace() || b.is_ascii_control())
        && (https_host || is_loopback_http(uri))
}

/// The checked registration, or the refusal to send.
fn check(m: Metadata, policy: &RegistrationPolicy) -> Result<Checked, Refused> {
    let method = m
        .token_endpoint_auth_method
        .unwrap_or_else(|| "client_secret_basic".into());
    let public =
        match method.as_str() {
            "none" => true,
            "client_secret_basic" | "client_secret_post" => false,
            _ => return Err(bad_metadata(
                "token_endpoint_auth_method: use none, client_secret_basic or client_secret_post",
            )),
        };
    let grants = m
        .grant_types
        .unwrap_or_else(|| vec!["authorization_code".into()]);
    if grants.is_empty() || grants.iter().any(|g| !policy.grant_types.contains(g)) {
        return Err(bad_metadata(
            "grant_types: a grant type is not allowed here",
        ));
    }
    let code = grants.iter().any(|g| g == "authorization_code");
    if public && grants.iter().any(|g| g == "client_credentials") {
        return Err(bad_metadata(
            "grant_types: client_credentials needs a confidential client",
        ));
    }
    let responses = m.response_types.unwrap_or_else(|| vec!["code".into()]);
    if responses.iter().any(|r| r != "code") || (code && responses.is_empty()) {
        return Err(bad_metadata("response_types: only code is supported"));
    }
    let uris = m.redirect_uris.unwrap_or_default();
    if code && uris.is_empty() {
        return Err(bad_redirect("authorization_code needs redirect_uris"));
    }
    if uris.len() > MAX_REDIRECT_URIS || uris.iter().any(|u| !redirect_uri_ok(u)) {
        return Err(bad_redirect(
            "redirect URIs must be https or loopback http, without fragment (at most 10)",
        ));
    }
    // RFC 7591 §3.2.1 lets the server replace requested values: scopes outside the
    // policy are dropped (the answer's `scope` says what was registered).
    let scopes: Vec<String> = match m.scope {
        Some(s) => policy
            .scopes
            .iter()
            .filter(|p| s.split(' ').any(|r| r == p.as_str()))
            .cloned()
            .collect(),
        None => policy.scopes.clone(),
    };
    let name = m.client_name.unwrap_or_default();
    if name.chars().count() > MAX_NAME_LEN || name.chars().any(char::is_control) {
        return Err(bad_metadata("client_name: at most 100 characters"));
    }
    let grant_types = grants.iter().filter_map(|g| GrantType::parse(g)).collect();
    Ok(Checked {
        public,
        method,
        grants,
        grant_types,
        uris,
        scopes,
        name,
    })
}

struct Checked {
    public: bool,
    method: String,
    grants: Vec<String>,
    grant_types: Vec<GrantType>,
    uris: Vec<String>,
    scopes: Vec<String>,
    name: String,
}

impl KeyManager {
    /// The registration policy in force: the configuration's, else the store's (an
    /// administrator's setting); `None`: registration is off.
    pub(crate) async fn registration_policy(
        &self,
    ) -> Result<Option<RegistrationPolicy>, crate::OAuthError> {
        if let Some(p) = &self.inner.config.registration {
            return Ok(Some(p.clone()));
        }
        Ok(self.inner.stores.clients.registration_policy().await?)
    }

    /// The initial access token check: `None` when the caller may register.
    fn registration_refusal(
        &self,
        policy: &RegistrationPolicy,
        headers: &HeaderMap,
        ip: Option<IpAddr>,
    ) -> Option<Response> {
        if let Some(expected) = &policy.initial_access_token_sha256 {
            let presented = headers
                .get(header::AUTHORIZATION)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.strip_prefix("Bearer "))
                .unwrap_or("");
            let presented = RegistrationPolicy::token_sha256(presented);
            if !bool::from(presented.as_bytes().ct_eq(expected.as_bytes())) {
                let mut r = refusal(
                    StatusCode::UNAUTHORIZED,
                    "invalid_token",
                    "an initial access token is required",
                );
                if let Ok(v) = "Bearer realm=\"turnpike\", error=\"invalid_token\"".parse() {
                    r.headers_mut().insert(header::WWW_AUTHENTICATE, v);
                }
                return Some(r);
            }
        }
        let now = self.inner.clock.now_secs();
        if !self.inner.registrations.admit(ip, now, policy.per_minute) {
            let mut r = refusal(
                StatusCode::TOO_MANY_REQUESTS,
                "slow_down",
                "too many registrations from this address; retry in a minute",
            );
            r.headers_mut().insert(
                header::RETRY_AFTER,
                axum::http::HeaderValue::from_static("60"),
            );
            return Some(r);
        }
        None
    }

    async fn register(&self, c: Checked, policy: &RegistrationPolicy) -> Response {
        let owner = policy.owner.as_str();
        let client_id = random_id();
        let secret = (!c.public).then(random_token);
        let secret_hash = match &secret {
            None => String::new(),
            Some(s) => {
                let s = s.clone();
                match tokio::task::spawn_blocking(move || hash_secret(&s)).await {
                    Ok(Ok(h)) => h,
                    _ => {
                        return crate::OAuthError::Server("hashing a client secret".into())
                            .into_response()
                    }
                }
            }
        };
        // Application names are unique per owner: the id's head tells same-named agents apart.
        let shown = if c.name.is_empty() {
            "agent"
        } else {
            c.name.as_str()
        };
        let reg = Registration {
            client_id: client_id.clone(),
            secret_hash,
            name: format!("{shown} ({})", client_id.get(..8).unwrap_or(&client_id)),
            owner: owner.to_owned(),
            tier: policy.application_tier.clone(),
            grant_types: c.grant_types,
            scopes: c.scopes.clone(),
            redirect_uris: c.uris.clone(),
        };
        let max = policy.max_clients;
        match self.inner.stores.clients.register_client(&reg, max).await {
            Ok(Some(_)) => {}
            Ok(None) => {
                return refusal(
                    StatusCode::FORBIDDEN,
                    "access_denied",
                    "the registration limit is reached",
                )
            }
            Err(e) => return crate::OAuthError::from(e).into_response(),
        }
        tracing::info!(client_id = %client_id, owner = %owner, "client registered (RFC 7591)");
        let mut body = serde_json::json!({
            "client_id": client_id,
            "client_id_issued_at": self.inner.clock.now_secs(),
            "client_name": reg.name,
            "redirect_uris": c.uris,
            "grant_types": c.grants,
            "response_types": ["code"],
            "token_endpoint_auth_method": c.method,
            "scope": c.scopes.join(" "),
        });
        if let Some(s) = secret {
            body["client_secret"] = s.into();
            body["client_secret_expires_at"] = 0.into();
        }
        let mut resp = (StatusCode::CREATED, Json(body)).into_response();
        no_store(&mut resp);
        resp
    }
}

/// `POST /oauth2/register`.
pub(crate) async fn register(
    State(km): State<KeyManager>,
    PeerIp(ip): PeerIp,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let policy = match km.registration_policy().await {
        Ok(Some(p)) => p,
        Ok(None) => {
            return refusal(
                StatusCode::NOT_FOUND,
                "not_found",
                "dynamic client registration is off",
            )
        }
        Err(e) => return e.into_response(),
    };
    if let Some(r) = km.registration_refusal(&policy, &headers, ip) {
        return r;
    }
    let metadata: Metadata = match serde_json::from_slice(&body) {
        Ok(m) => m,
        Err(_) => {
            let r = bad_metadata("the body must be a JSON object of client metadata");
            return refusal(StatusCode::BAD_REQUEST, r.error, r.description);
        }
    };
    match check(metadata, &policy) {
        Ok(c) => km.register(c, &policy).await,
        Err(r) => refusal(StatusCode::BAD_REQUEST, r.error, r.description),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redirect_uris_are_https_or_loopback() {
        for ok in [
            "https://agent.example/cb",
            "http://127.0.0.1:33418/callback",
            "http://localhost/cb",
            "http://[::1]:8080/cb",
        ] {
            assert!(redirect_uri_ok(ok), "{ok}");
        }
        for bad in [
            "http://agent.example/cb",
            "http://localhost.evil.example/cb",
            "https://agent.example/cb#x",
            "https:///cb",
            "javascript:alert(1)",
            "https://a.example/c b",
        ] {
            assert!(!redirect_uri_ok(bad), "{bad}");
        }
    }

    #[test]
    fn the_limiter_counts_per_address_per_minute() {
        let l = RegistrationLimiter::default();
        let ip = Some(IpAddr::from([10, 0, 0, 1]));
        assert!(l.admit(ip, 60, 2) && l.admit(ip, 61, 2));
        assert!(!l.admit(ip, 62, 2));
        assert!(l.admit(Some(IpAddr::from([10, 0, 0, 2])), 62, 2));
        assert!(l.admit(ip, 120, 2));
    }

    #[test]
    fn public_clients_may_not_use_client_credentials() {
        let policy = RegistrationPolicy {
            grant_types: vec!["authorization_code".into(), "client_credentials".into()],
            ..RegistrationPolicy::default()
        };
        let m: Metadata = serde_json::from_value(serde_json::json!({
            "token_endpoint_auth_method": "none",
            "grant_types": ["client_credentials"],
        }))
        .unwrap();
        assert!(check(m, &policy).is_err());
    }
}
