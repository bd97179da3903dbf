//! What the key manager needs from persistence, as three traits the control plane's SQL
//! store implements: [`ClientStore`] (OAuth2 clients = applications, and resource-owner
//! users), [`TokenStore`] (refresh-token families, opaque access tokens, revoked token
//! ids) and [`KeyStore`] (signing keys). Tokens only ever arrive here hashed.
//! [`crate::MemoryStore`] implements all three for tests and DB-less use.

use std::time::Duration;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use crate::secret::TokenHash;

/// A store failure. The key manager answers 500 `server_error` and logs the source, or
/// 503 `temporarily_unavailable` with `Retry-After` when the store is down or full
/// ([`StoreError::unavailable`]): a caller should retry.
#[derive(Debug, thiserror::Error)]
#[error("store: {message}")]
pub struct StoreError {
    pub message: String,
    /// The database is down, unreachable, read-only or full.
    pub unavailable: bool,
}

impl StoreError {
    pub fn new(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            unavailable: false,
        }
    }

    pub fn unavailable(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            unavailable: true,
        }
    }
}

/// The OAuth2 grants an application may use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GrantType {
    ClientCredentials,
    Password,
    RefreshToken,
}

impl GrantType {
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "client_credentials" => Some(Self::ClientCredentials),
            "password" => Some(Self::Password),
            "refresh_token" => Some(Self::RefreshToken),
            _ => None,
        }
    }
}

/// How access tokens are issued to an application.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TokenFormat {
    /// Self-contained, validated locally by gateways against the JWKS.
    #[default]
    Jwt,
    /// Random, stored hashed, validated by introspection.
    Opaque,
}

/// An OAuth2 client: one per application (per key type, if the control plane wants
/// production and sandbox keys).
#[derive(Debug, Clone)]
pub struct ClientRecord {
    pub client_id: String,
    /// argon2 PHC string of the client secret ([`crate::hash_secret`]).
    pub secret_hash: String,
    pub application_id: String,
    pub application_name: String,
    /// The application's owner: the `subscriber` claim.
    pub owner: String,
    pub grant_types: Vec<GrantType>,
    /// Scopes this client may ask for. No `scope` parameter grants all of them.
    pub scopes: Vec<String>,
    pub token_format: TokenFormat,
    pub access_token_ttl: Duration,
    pub refresh_token_ttl: Duration,
    /// `aud` of issued access tokens; empty means the server's default audience.
    pub audience: Vec<String>,
    /// May introspect any token (gateways); otherwise only tokens issued to itself.
    pub can_introspect: bool,
    /// The application's sandbox keys (WSO2: each application has a production and a
    /// sandbox pair): its tokens carry `keytype: SANDBOX`.
    pub sandbox: bool,
    /// Exact redirect URIs the application registered: any makes it a client of the
    /// authorization code grant (with PKCE, after the user's consent).
    pub redirect_uris: Vec<String>,
}

/// A resource owner for the password grant.
#[derive(Debug, Clone)]
pub struct UserRecord {
    pub username: String,
    /// argon2 PHC string.
    pub password_hash: String,
    /// Scopes this user may delegate; `None` means no user-level restriction.
    pub scopes: Option<Vec<String>>,
}

/// Clients and users, read-only from the key manager's side.
#[async_trait]
pub trait ClientStore: Send + Sync + 'static {
    async fn client(&self, client_id: &str) -> Result<Option<ClientRecord>, StoreError>;
    async fn user(&self, username: &str) -> Result<Option<UserRecord>, StoreError>;

    /// The scopes `user` may delegate to `client` in a password grant (`None`: no
    /// user-level restriction). Default: the user's own `scopes`. A store overrides it
    /// when what a user may grant depends on the client (e.g. role-derived scopes for a
    /// built-in management client only).
    async fn delegable_scopes(
        &self,
        client: &ClientRecord,
        user: &UserRecord,
    ) -> Result<Option<Vec<String>>, StoreError> {
        let _ = client;
        Ok(user.scopes.clone())
    }

    /// Whether `path` (`/{context}/{version}`, the path of a resource URI) names an API
    /// a token may be bound to (RFC 8707 `resource`). Default: none (every `resource`
    /// is `invalid_target`).
    async fn api_exists(&self, path: &str) -> Result<bool, StoreError> {
        let _ = path;
        Ok(false)
    }

    /// The dynamic client registration policy an administrator set (RFC 7591);
    /// `None`: registration is off. Default: off.
    async fn registration_policy(&self) -> Result<Option<crate::RegistrationPolicy>, StoreError> {
        Ok(None)
    }

    /// The client ID metadata document policy an administrator set; `None`: such
    /// documents are not fetched. Default: off.
    async fn metadata_document_policy(
        &self,
    ) -> Result<Option<crate::MetadataDocumentPolicy>, StoreError> {
        Ok(None)
    }

    /// Stores a dynamically registered client (RFC 7591) as a new application of
    /// `reg.owner`, in one transaction that first counts the owner's applications:
    /// `Ok(None)` when they already number `max_clients`. Default: unsupported.
    async fn register_client(
        &self,
        reg: &Registration,
        max_clients: u64,
    ) -> Result<Option<ClientRecord>, StoreError> {
        let _ = (reg, max_clients);
        Err(StoreError::new("this store cannot register clients"))
    }
}

/// A client to register (RFC 7591), already checked against the registration policy.
#[derive(Debug, Clone)]
pub struct Registration {
    pub client_id: String,
    /// argon2 PHC string; empty for a public client (`token_endpoint_auth_method:
    /// none`), which authenticates with its `client_id` and PKCE only.
    pub secret_hash: String,
    /// The application's name (`client_name`, or the client id).
    pub name: String,
    /// The designated owner of registered applications.
    pub owner: String,
    /// The application tier of registered applications.
    pub tier: String,
    pub grant_types: Vec<GrantType>,
    pub scopes: Vec<String>,
    pub redirect_uris: Vec<String>,
}

/// What was granted: shared by refresh tokens and opaque access tokens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Grant {
    pub client_id: String,
    /// `sub`: the user for the password grant, the client id for client_credentials.
    pub subject: String,
    /// Set for the password grant.
    pub username: Option<String>,
    pub scopes: Vec<String>,
}

/// One refresh token (stored by hash). Tokens rotated from one another share a family.
#[derive(Debug, Clone)]
pub struct RefreshRecord {
    pub hash: TokenHash,
    pub family: String,
    pub grant: Grant,
    pub expires_at: u64,
    /// The access token issued with it, revoked if the family is.
    pub access_jti: String,
    pub access_expires_at: u64,
}

/// Outcome of presenting a refresh token.
#[derive(Debug, Clone)]
pub enum RefreshUse {
    /// First use: the store marked it used atomically.
    Fresh(RefreshRecord),
    /// Already used (or its family revoked): a replay.
    Reused(RefreshRecord),
    Unknown,
}

/// One opaque access token (stored by hash).
#[derive(Debug, Clone)]
pub struct OpaqueRecord {
    pub jti: String,
    pub grant: Grant,
    pub issued_at: u64,
    pub expires_at: u64,
    pub audience: Vec<String>,
}

/// A revoked JWT id with the time after which it no longer matters.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RevokedJti {
    pub jti: String,
    pub expires_at: u64,
}

/// Refresh families, opaque tokens and revocations.
#[async_trait]
pub trait TokenStore: Send + Sync + 'static {
    async fn put_refresh(&self, record: RefreshRecord) -> Result<(), StoreError>;
    /// Marks the token used and returns it, atomically: of two concurrent uses, one sees
    /// `Fresh` and the other `Reused`.
    async fn use_refresh(&self, hash: &TokenHash) -> Result<RefreshUse, StoreError>;
    async fn find_refresh(&self, hash: &TokenHash) -> Result<Option<RefreshRecord>, StoreError>;
    /// Revokes every refresh token of the family; returns the access tokens issued with
    /// them so the caller can revoke those too.
    async fn revoke_family(&self, family: &str) -> Result<Vec<RevokedJti>, StoreError>;
    async fn put_opaque(&self, hash: TokenHash, record: OpaqueRecord) -> Result<(), StoreError>;
    async fn find_opaque(&self, hash: &TokenHash) -> Result<Option<OpaqueRecord>, StoreError>;
    async fn revoke_jti(&self, revoked: RevokedJti) -> Result<(), StoreError>;
    async fn is_revoked(&self, jti: &str) -> Result<bool, StoreError>;
    /// Revoked ids not yet expired at `now`: what a snapshot ships to gateways.
    async fn revoked_since(&self, now: u64) -> Result<Vec<RevokedJti>, StoreError>;
}

/// Signing key algorithm.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum SigningAlg {
    #[default]
    ES256,
    RS256,
}

/// A signing key at rest. `private_der` is secret: PKCS#8 for ES256, PKCS#1 for RS256.
#[derive(Clone)]
pub struct StoredKey {
    pub kid: String,
    pub alg: SigningAlg,
    pub private_der: Vec<u8>,
    pub created_at: u64,
    /// When a newer key took over; the key stays in the JWKS until its tokens expire.
    pub retired_at: Option<u64>,
}

impl std::fmt::Debug for StoredKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StoredKey")
            .field("kid", &self.kid)
            .field("alg", &self.alg)
            .field("created_at", &self.created_at)
            .field("retired_at", &self.retired_at)
            .finish_non_exhaustive()
    }
}

/// Signing keys.
#[async_trait]
pub trait KeyStore: Send + Sync + 'static {
    async fn load_keys(&self) -> Result<Vec<StoredKey>, StoreError>;
    /// Inserts or replaces by `kid`.
    async fn save_key(&self, key: StoredKey) -> Result<(), StoreError>;
    async fn delete_key(&self, kid: &str) -> Result<(), StoreError>;
}
