//! Local validation of this server's own access-token JWTs, for a resource server that
//! runs in the same process (the control plane's REST APIs): signature against the key
//! ring with the algorithm pinned by the key, `iss`, `aud`, `exp`/`nbf` against the
//! injected clock, then the revocation list. Gateways do the same from the snapshot's
//! JWKS in `turnpike-auth`; this is the in-process twin, without a cache.

use jsonwebtoken::errors::ErrorKind;
use jsonwebtoken::Validation;
use serde::Serialize;

use crate::store::{SigningAlg, StoreError};
use crate::token::AccessClaims;
use crate::KeyManager;

/// Why an access token was refused. Each is a 401 `invalid_token` for the caller.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum TokenRejection {
    #[error("the token is not a JWT issued by this server")]
    Malformed,
    #[error("the token was signed by a key this server does not know")]
    UnknownKey,
    #[error("the token's signature is invalid")]
    BadSignature,
    #[error("the token has another issuer")]
    WrongIssuer,
    #[error("the token is not meant for this service (audience)")]
    WrongAudience,
    #[error("the token has expired")]
    Expired,
    #[error("the token is not valid yet")]
    NotYetValid,
    #[error("the token has been revoked")]
    Revoked,
}

/// A refused token, or a store failure while checking revocation.
#[derive(Debug, thiserror::Error)]
pub enum VerifyError {
    #[error("{0}")]
    Rejected(#[from] TokenRejection),
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// One signing key as an operator sees it (no key material).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct KeyInfo {
    pub kid: String,
    pub alg: SigningAlg,
    /// The key that signs new tokens.
    pub active: bool,
    pub created_at: u64,
    /// When a newer key took over; it stays in the JWKS until its tokens have expired.
    pub retired_at: Option<u64>,
}

impl KeyManager {
    /// Validates an access-token JWT this server issued, for `audience`. Opaque tokens
    /// are [`TokenRejection::Malformed`] here (introspect them instead).
    pub async fn verify_access_token(
        &self,
        token: &str,
        audience: &str,
    ) -> Result<AccessClaims, VerifyError> {
        let claims = self.verify_signed(token)?;
        if !claims.aud.iter().any(|a| a == audience) {
            return Err(TokenRejection::WrongAudience.into());
        }
        let now = self.inner.clock.now_secs();
        if claims.exp <= now {
            return Err(TokenRejection::Expired.into());
        }
        if claims.nbf > now {
            return Err(TokenRejection::NotYetValid.into());
        }
        if self.inner.stores.tokens.is_revoked(&claims.jti).await? {
            return Err(TokenRejection::Revoked.into());
        }
        Ok(claims)
    }

    /// Signature (algorithm pinned by the key named in `kid`) and issuer; no time checks.
    fn verify_signed(&self, token: &str) -> Result<AccessClaims, TokenRejection> {
        let header = jsonwebtoken::decode_header(token).map_err(|_| TokenRejection::Malformed)?;
        let kid = header.kid.as_deref().ok_or(TokenRejection::Malformed)?;
        let (alg, key) = self
            .inner
            .keys
            .decoding_key(kid)
            .ok_or(TokenRejection::UnknownKey)?;
        // `Validation::new(alg)` accepts only `alg`: `none` and HS256-with-the-public-key
        // headers fail here, before any signature work.
        let mut v = Validation::new(alg);
        v.set_issuer(&[&self.inner.config.issuer]);
        v.validate_aud = false;
        v.validate_exp = false;
        v.validate_nbf = false;
        v.leeway = 0;
        jsonwebtoken::decode::<AccessClaims>(token, &key, &v)
            .map(|d| d.claims)
            .map_err(|e| match e.kind() {
                ErrorKind::InvalidSignature => TokenRejection::BadSignature,
                ErrorKind::InvalidIssuer => TokenRejection::WrongIssuer,
                _ => TokenRejection::Malformed,
            })
    }

    /// The signing keys, newest first.
    pub fn keys(&self) -> Vec<KeyInfo> {
        self.inner.keys.info()
    }
}
