//! Request parsing shared by the endpoints: the urlencoded form (a parameter sent twice
//! is `invalid_request`, RFC 6749 §3.2) and client authentication (RFC 6749 §2.3.1: HTTP
//! Basic with form-urlencoded id and secret, or `client_id`/`client_secret` in the body;
//! using both is `invalid_request`). Failures count toward the brute-force limiter.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::OnceLock;

use axum::http::{header, HeaderMap};
use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use percent_encoding::percent_decode_str;

use crate::error::OAuthError;
use crate::secret::{hash_secret, verify_secret_blocking};
use crate::store::ClientRecord;
use crate::KeyManager;

/// A parsed `application/x-www-form-urlencoded` body.
pub(crate) struct Form(HashMap<String, String>);

impl Form {
    pub(crate) fn parse(headers: &HeaderMap, body: &[u8]) -> Result<Self, OAuthError> {
        let is_form = headers
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.split(';').next())
            .is_some_and(|m| {
                m.trim()
                    .eq_ignore_ascii_case("application/x-www-form-urlencoded")
            });
        if !is_form {
            return Err(OAuthError::InvalidRequest(
                "content type must be application/x-www-form-urlencoded",
            ));
        }
        let mut map = HashMap::new();
        for (k, v) in form_urlencoded::parse(body) {
            if map.insert(k.into_owned(), v.into_owned()).is_some() {
                return Err(OAuthError::InvalidRequest("a parameter is repeated"));
            }
        }
        Ok(Self(map))
    }

    pub(crate) fn get(&self, key: &str) -> Option<&str> {
        self.0
            .get(key)
            .map(String::as_str)
            .filter(|v| !v.is_empty())
    }
}

/// Credentials a client presented. `secret` is `None` when only `client_id` was sent
/// (allowed for public clients only).
struct Presented {
    client_id: String,
    secret: Option<String>,
}

fn form_decode(s: &str) -> Option<String> {
    let plus = s.replace('+', " ");
    percent_decode_str(&plus)
        .decode_utf8()
        .ok()
        .map(|c| c.into_owned())
}

fn presented(headers: &HeaderMap, form: &Form) -> Result<Presented, OAuthError> {
    let Some(auth) = headers.get(header::AUTHORIZATION) else {
        return match (form.get("client_id"), form.get("client_secret")) {
            (Some(id), secret) => Ok(Presented {
                client_id: id.to_owned(),
                secret: secret.map(str::to_owned),
            }),
            (None, _) => Err(OAuthError::InvalidClient),
        };
    };
    if form.get("client_secret").is_some() {
        return Err(OAuthError::InvalidRequest(
            "use one client authentication method, not two",
        ));
    }
    let value = auth.to_str().map_err(|_| OAuthError::InvalidClient)?;
    let (scheme, rest) = value.split_once(' ').ok_or(OAuthError::InvalidClient)?;
    if !scheme.eq_ignore_ascii_case("basic") {
        return Err(OAuthError::InvalidClient);
    }
    let decoded = STANDARD
        .decode(rest.trim())
        .map_err(|_| OAuthError::InvalidClient)?;
    let decoded = String::from_utf8(decoded).map_err(|_| OAuthError::InvalidClient)?;
    let (id, secret) = decoded.split_once(':').ok_or(OAuthError::InvalidClient)?;
    let (client_id, secret) = (
        form_decode(id).ok_or(OAuthError::InvalidClient)?,
        form_decode(secret).ok_or(OAuthError::InvalidClient)?,
    );
    if form.get("client_id").is_some_and(|f| f != client_id) {
        return Err(OAuthError::InvalidRequest("client_id does not match"));
    }
    Ok(Presented {
        client_id,
        secret: Some(secret).filter(|s| !s.is_empty()),
    })
}

/// A hash to verify against when the client id is unknown, so unknown and known ids
/// take the same time.
pub(crate) fn dummy_hash() -> &'static str {
    static DUMMY: OnceLock<String> = OnceLock::new();
    DUMMY.get_or_init(|| hash_secret("turnpike-dummy-secret").unwrap_or_default())
}

impl KeyManager {
    /// Authenticates the calling client, applying the brute-force limiter.
    pub(crate) async fn authenticate_client(
        &self,
        headers: &HeaderMap,
        form: &Form,
        ip: Option<IpAddr>,
    ) -> Result<ClientRecord, OAuthError> {
        let p = presented(headers, form)?;
        let public = self.inner.config.public_clients.contains(&p.client_id);
        let Some(secret) = p.secret else {
            // A public client has no secret to check; any other client must send one.
            // A registered client without a secret (RFC 7591 `none`) is public too.
            return self
                .inner
                .stores
                .clients
                .client(&p.client_id)
                .await?
                .filter(|c| public || c.secret_hash.is_empty())
                .ok_or(OAuthError::InvalidClient);
        };
        if public {
            return Err(OAuthError::InvalidClient);
        }
        let client = self.inner.stores.clients.client(&p.client_id).await?;
        let hash = client
            .as_ref()
            .map_or_else(|| dummy_hash().to_owned(), |c| c.secret_hash.clone());
        let account = format!("client:{}", p.client_id);
        match self.check_secret(&account, ip, secret, hash).await? {
            true => client.ok_or(OAuthError::InvalidClient),
            false => Err(OAuthError::InvalidClient),
        }
    }

    /// Verifies a secret of `account` presented from `ip` under the brute-force guard:
    /// `Ok(false)` when wrong, an error when the account is (or just became) locked for
    /// that address.
    pub(crate) async fn check_secret(
        &self,
        account: &str,
        ip: Option<IpAddr>,
        secret: String,
        hash: String,
    ) -> Result<bool, OAuthError> {
        let guard = &self.inner.guard;
        if let Err(retry_after) = guard.check(account, ip) {
            return Err(OAuthError::TooManyAttempts { retry_after });
        }
        if verify_secret_blocking(secret, hash).await {
            guard.success(account, ip);
            return Ok(true);
        }
        tracing::info!(account = ?account, ip = ?ip, "failed authentication");
        match guard.failure(account, ip) {
            Some(retry_after) => Err(OAuthError::TooManyAttempts { retry_after }),
            None => Ok(false),
        }
    }
}
