//! HTTP Basic authentication against argon2 hashes from the snapshot. argon2 is slow by
//! design (tens of milliseconds), so it runs on a blocking thread, and verified
//! credentials are cached briefly (60 s by default) under the digest of username,
//! password and stored hash: a password change in a new snapshot invalidates at once.
//! Failures are cached too, so one wrong password replayed costs one verification.

use std::collections::HashMap;
use std::sync::Arc;

use argon2::password_hash::{PasswordHash, PasswordVerifier};
use argon2::Argon2;
use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use sha2::{Digest, Sha256};
use turnpike_model::clock::Clock;
use turnpike_policy::{CredentialKind, Identity, KeyType, Principal};

use crate::cache::{TokenCache, TokenKey};
use crate::error::AuthError;

/// A user the snapshot allows to call with HTTP Basic.
#[derive(Debug, Clone)]
pub struct BasicUser {
    pub username: String,
    /// argon2 PHC string.
    pub password_hash: String,
    pub scopes: Vec<String>,
    /// Applications are optional for basic auth; subscriptions need one.
    pub application_id: Option<String>,
}

/// Verifies `Authorization: Basic` credentials.
pub struct BasicValidator {
    users: HashMap<String, BasicUser>,
    verified: Arc<TokenCache<Result<Arc<Identity>, AuthError>>>,
    ttl: u64,
    clock: Arc<dyn Clock>,
}

fn verify(password: &str, phc: &str) -> bool {
    PasswordHash::new(phc)
        .map(|h| {
            Argon2::default()
                .verify_password(password.as_bytes(), &h)
                .is_ok()
        })
        .unwrap_or(false)
}

/// Splits an `Authorization: Basic` value's payload into username and password.
pub(crate) fn decode_basic(payload: &str) -> Result<(String, String), AuthError> {
    let raw = STANDARD
        .decode(payload.trim())
        .map_err(|_| AuthError::Malformed("basic credentials are not base64"))?;
    let raw = String::from_utf8(raw)
        .map_err(|_| AuthError::Malformed("basic credentials are not UTF-8"))?;
    let (u, p) = raw
        .split_once(':')
        .ok_or(AuthError::Malformed("basic credentials lack a colon"))?;
    Ok((u.to_owned(), p.to_owned()))
}

impl BasicValidator {
    /// `cache` is long-lived (kept across snapshots); `ttl` in seconds.
    pub fn new(
        users: impl IntoIterator<Item = BasicUser>,
        cache: Arc<TokenCache<Result<Arc<Identity>, AuthError>>>,
        ttl: u64,
        clock: Arc<dyn Clock>,
    ) -> Self {
        Self {
            users: users.into_iter().map(|u| (u.username.clone(), u)).collect(),
            verified: cache,
            ttl,
            clock,
        }
    }

    fn key(username: &str, password: &str, user: &BasicUser) -> TokenKey {
        let mut h = Sha256::new();
        for part in [username, password, &user.password_hash] {
            h.update((part.len() as u64).to_le_bytes());
            h.update(part.as_bytes());
        }
        TokenKey(h.finalize().into())
    }

    /// The cached verdict, if any, without running argon2.
    pub fn peek(&self, username: &str, password: &str) -> Option<Result<Arc<Identity>, AuthError>> {
        let Some(user) = self.users.get(username) else {
            return Some(Err(AuthError::InvalidBasic));
        };
        self.verified.get(&Self::key(username, password, user))
    }

    pub async fn validate(
        &self,
        username: &str,
        password: &str,
    ) -> Result<Arc<Identity>, AuthError> {
        let user = self.users.get(username).ok_or(AuthError::InvalidBasic)?;
        let key = Self::key(username, password, user);
        if let Some(result) = self.verified.get(&key) {
            return result;
        }
        let (pw, phc) = (password.to_owned(), user.password_hash.clone());
        let ok = tokio::task::spawn_blocking(move || verify(&pw, &phc))
            .await
            .unwrap_or(false);
        let result = if ok {
            Ok(Arc::new(Identity {
                kind: CredentialKind::Basic,
                subject: user.username.as_str().into(),
                expires_at: None,
                token_id: None,
                principal: Arc::new(Principal {
                    application_id: user.application_id.clone(),
                    subscriber: Some(user.username.clone()),
                    scopes: user.scopes.clone(),
                    key_type: KeyType::Production,
                    ..Principal::default()
                }),
            }))
        } else {
            Err(AuthError::InvalidBasic)
        };
        self.verified
            .insert(key, result.clone(), self.clock.now_secs() + self.ttl);
        result
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use argon2::password_hash::{PasswordHasher, SaltString};
    use argon2::{Algorithm, Params, Version};
    use turnpike_model::clock::ManualClock;

    fn cheap_hash(pw: &str) -> String {
        let a = Argon2::new(
            Algorithm::Argon2id,
            Version::V0x13,
            Params::new(8, 1, 1, None).unwrap(),
        );
        let salt = SaltString::generate(&mut rand::rngs::OsRng);
        a.hash_password(pw.as_bytes(), &salt).unwrap().to_string()
    }

    #[tokio::test]
    async fn verifies_caches_and_refuses() {
        let clock = Arc::new(ManualClock::at_secs(0));
        let cache = Arc::new(TokenCache::new(1 << 20, clock.clone()));
        let user = BasicUser {
            username: "bob".into(),
            password_hash: cheap_hash("pw"),
            scopes: vec!["read".into()],
            application_id: Some("app-1".into()),
        };
        let v = BasicValidator::new([user], cache.clone(), 60, clock);
        assert_eq!(&*v.validate("bob", "pw").await.unwrap().subject, "bob");
        assert_eq!(cache.len(), 1);
        assert_eq!(&*v.validate("bob", "pw").await.unwrap().subject, "bob");
        assert_eq!(
            v.validate("bob", "nope").await,
            Err(AuthError::InvalidBasic)
        );
        assert_eq!(v.validate("eve", "pw").await, Err(AuthError::InvalidBasic));
    }

    #[test]
    fn decodes_basic_payloads() {
        assert_eq!(
            decode_basic("Ym9iOnA6dw==").unwrap(),
            ("bob".into(), "p:w".into())
        );
        assert!(decode_basic("!!!").is_err());
        assert!(decode_basic("Ym9i").is_err());
    }
}
