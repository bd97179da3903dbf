//! The OAuth2 authorization server as a library. [`KeyManager::router`] is an axum
//! `Router` the control plane mounts: `/oauth2/token` (RFC 6749: client_credentials,
//! password, refresh_token with rotation and reuse detection, authorization_code with
//! PKCE), `/oauth2/authorize` and its login page, `/oauth2/logout`, `/oauth2/revoke`
//! (RFC 7009), `/oauth2/introspect` (RFC 7662), `/oauth2/jwks` (RFC 7517) and
//! `/.well-known/openid-configuration` (also served as RFC 8414's
//! `/.well-known/oauth-authorization-server`). Access tokens are ES256 (or RS256) JWTs by
//! default, opaque per application. Persistence is behind the [`ClientStore`],
//! [`TokenStore`] and [`KeyStore`] traits; this crate must not depend on the SQL store,
//! the admin API or the gateway. Secrets are never logged.

#![cfg_attr(test, allow(clippy::unwrap_used))]

mod authorize;
mod clientauth;
mod endpoints;
mod error;
mod keys;
mod limiter;
mod login_page;
mod memory;
mod metadata_document;
mod peer;
mod registration;
mod resource;
mod secret;
mod store;
mod token;
mod verify;

use std::sync::Arc;
use std::time::Duration;

use axum::extract::DefaultBodyLimit;
use axum::routing::{get, post};
use axum::Router;

pub use authorize::{s256_challenge, AuthorizeClient};

/// The client id of the web portals (the control plane registers it): its login page
/// links to the portals' sign-up page.
pub const PORTAL_CLIENT_ID: &str = "turnpike-ui";
pub use error::OAuthError;
pub use keys::{Jwk, Jwks, KeyError};
pub use limiter::{user_account, BruteForcePolicy, PasswordGuard};
pub use memory::MemoryStore;
pub use metadata_document::MetadataDocumentPolicy;
pub use peer::PeerIp;
pub use registration::RegistrationPolicy;
pub use secret::{hash_secret, hash_secret_for_tests, random_token, token_hash, verify_secret};
pub use store::{
    ClientRecord, ClientStore, Grant, GrantType, KeyStore, OpaqueRecord, RefreshRecord, RefreshUse,
    Registration, RevokedJti, SigningAlg, StoreError, StoredKey, TokenFormat, TokenStore,
    UserRecord,
};
pub use token::{key_type_name, AccessClaims};
pub use turnpike_model::clock::{Clock, ManualClock, SystemClock};
pub use verify::{KeyInfo, TokenRejection, VerifyError};

use keys::KeyRing;

/// Server settings. Per-application lifetimes live on [`ClientRecord`].
#[derive(Debug, Clone)]
pub struct KeyManagerConfig {
    /// `iss` of every token, and the base of the discovery document's URLs.
    pub issuer: String,
    /// `aud` for clients that set none.
    pub audience: Vec<String>,
    pub signing_alg: SigningAlg,
    /// Caps any application's access-token lifetime; also how long a retired signing key
    /// stays in the JWKS.
    pub max_access_ttl: Duration,
    /// Brute-force limits on client secrets and user passwords (by account and client
    /// address, `limiter.rs`); ignored by [`KeyManager::with_guard`], whose guard has its own.
    pub brute_force: BruteForcePolicy,
    /// Client ids that authenticate with `client_id` alone (RFC 6749 §2.1 public clients,
    /// e.g. a command-line tool that cannot keep a secret). Give them only the password
    /// and refresh_token grants: the user's password is the credential.
    pub public_clients: Vec<String>,
    /// First-party clients that may use the authorization code grant (with PKCE) from a
    /// browser without a consent step, and their exact redirect URIs. Applications use it
    /// by registering redirect URIs ([`ClientRecord::redirect_uris`]).
    pub authorize_clients: Vec<AuthorizeClient>,
    /// How long a browser login session lasts (the login page is skipped meanwhile).
    pub session_ttl: Duration,
    /// Dynamic client registration (RFC 7591); `None` (the default): off.
    pub registration: Option<RegistrationPolicy>,
    /// Client ID metadata documents; `None` (the default): the store's policy decides
    /// (off unless an administrator turned them on).
    pub metadata_documents: Option<MetadataDocumentPolicy>,
}

impl KeyManagerConfig {
    pub fn new(issuer: impl Into<String>) -> Self {
        Self {
            issuer: issuer.into(),
            audience: vec!["turnpike".into()],
            signing_alg: SigningAlg::ES256,
            max_access_ttl: Duration::from_secs(24 * 3600),
            brute_force: BruteForcePolicy::default(),
            public_clients: Vec::new(),
            authorize_clients: Vec::new(),
            session_ttl: Duration::from_secs(8 * 3600),
            registration: None,
            metadata_documents: None,
        }
    }
}

/// The stores the key manager reads and writes.
#[derive(Clone)]
pub struct Stores {
    pub clients: Arc<dyn ClientStore>,
    pub tokens: Arc<dyn TokenStore>,
    pub keys: Arc<dyn KeyStore>,
}

impl Stores {
    /// All three backed by one [`MemoryStore`].
    pub fn memory(store: Arc<MemoryStore>) -> Self {
        Self {
            clients: store.clone(),
            tokens: store.clone(),
            keys: store,
        }
    }
}

/// Failure to start the key manager.
#[derive(Debug, thiserror::Error)]
#[error("key manager: {0}")]
pub struct StartError(#[from] KeyError);

pub(crate) struct Inner {
    pub(crate) config: KeyManagerConfig,
    pub(crate) stores: Stores,
    pub(crate) clock: Arc<dyn Clock>,
    pub(crate) keys: KeyRing,
    /// Shared with the control plane's HTTP Basic check: one count per account.
    pub(crate) guard: Arc<PasswordGuard>,
    /// Bumped after every revocation: the control plane publishes a snapshot on change.
    pub(crate) revocations: tokio::sync::watch::Sender<u64>,
    /// Authorization codes, login sessions and consents (`authorize.rs`).
    pub(crate) browser: authorize::BrowserState,
    /// Registrations per client address (`registration.rs`).
    pub(crate) registrations: registration::RegistrationLimiter,
    pub(crate) documents: metadata_document::DocumentCache,
}

/// The authorization server. Cheap to clone.
#[derive(Clone)]
pub struct KeyManager {
    pub(crate) inner: Arc<Inner>,
}

impl KeyManager {
    /// Opens the key ring (generating a first signing key if the store has none).
    pub async fn new(
        config: KeyManagerConfig,
        stores: Stores,
        clock: Arc<dyn Clock>,
    ) -> Result<Self, StartError> {
        let guard = Arc::new(PasswordGuard::new(
            config.brute_force.clone(),
            clock.clone(),
        ));
        Self::with_guard(config, stores, clock, guard).await
    }

    /// [`KeyManager::new`] counting failed authentications in `guard`, which the caller
    /// shares with its other password checks (the control plane's HTTP Basic).
    pub async fn with_guard(
        config: KeyManagerConfig,
        stores: Stores,
        clock: Arc<dyn Clock>,
        guard: Arc<PasswordGuard>,
    ) -> Result<Self, StartError> {
        let keys =
            KeyRing::open(stores.keys.as_ref(), config.signing_alg, clock.now_secs()).await?;
        Ok(Self {
            inner: Arc::new(Inner {
                config,
                stores,
                clock,
                keys,
                guard,
                revocations: tokio::sync::watch::channel(0).0,
                browser: authorize::BrowserState::default(),
                registrations: registration::RegistrationLimiter::default(),
                documents: metadata_document::DocumentCache::default(),
            }),
        })
    }

    /// The routes, ready to mount at the control plane's root.
    pub fn router(&self) -> Router {
        Router::new()
            .route("/oauth2/token", post(endpoints::token))
            .route(
                "/oauth2/authorize",
                get(authorize::authorize_get).post(authorize::authorize_post),
            )
            .route("/oauth2/logout", post(authorize::logout))
            .route("/oauth2/register", post(registration::register))
            .route("/oauth2/revoke", post(endpoints::revoke))
            .route("/oauth2/introspect", post(endpoints::introspect))
            .route("/oauth2/jwks", get(endpoints::jwks))
            .route(
                "/.well-known/openid-configuration",
                get(endpoints::discovery),
            )
            .route(
                "/.well-known/oauth-authorization-server",
                get(endpoints::discovery),
            )
            .layer(DefaultBodyLimit::max(16 * 1024))
            .with_state(self.clone())
    }

    /// The public keys for the gateway snapshot (same as `/oauth2/jwks`).
    pub fn jwks(&self) -> Jwks {
        self.inner.keys.jwks()
    }

    /// Starts signing with a new key; the old one stays published until its tokens expire.
    /// Returns the new `kid`.
    pub async fn rotate_keys(&self) -> Result<String, KeyError> {
        let now = self.inner.clock.now_secs();
        let store = self.inner.stores.keys.as_ref();
        self.inner
            .keys
            .prune(store, now, self.inner.config.max_access_ttl.as_secs())
            .await?;
        self.inner.keys.rotate(store, now).await
    }

    /// Revoked token ids still unexpired: what the snapshot ships to gateways.
    pub async fn revoked(&self) -> Result<Vec<RevokedJti>, StoreError> {
        self.inner
            .stores
            .tokens
            .revoked_since(self.inner.clock.now_secs())
            .await
    }

    /// Changes after every revocation (revoke endpoint, refresh-token reuse). The control
    /// plane waits on it and publishes a snapshot carrying [`Self::revoked`], so a revoked
    /// token stops at every gateway within one publish, cached or not.
    pub fn revocations_changed(&self) -> tokio::sync::watch::Receiver<u64> {
        self.inner.revocations.subscribe()
    }

    pub(crate) async fn revoke_jti(&self, revoked: RevokedJti) -> Result<(), StoreError> {
        self.inner.stores.tokens.revoke_jti(revoked).await?;
        self.inner.revocations.send_modify(|g| *g += 1);
        Ok(())
    }

    pub fn issuer(&self) -> &str {
        &self.inner.config.issuer
    }
}
