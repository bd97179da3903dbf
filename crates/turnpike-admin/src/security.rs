//! The control plane's key manager and what security the snapshot carries. [`enable`]
//! opens the OAuth2 authorization server over the SQL store (clients are applications'
//! keys, password-grant users are the control plane's users, signing keys persist), adds
//! the gateways' own introspection client (`turnpike-gateway`, whose secret is the gateway
//! token), and turns every revocation into a snapshot version bump. [`spec`] builds the
//! snapshot's `security:` section; [`api_auth`] each API's `auth:` (OAuth2 and a
//! subscription required unless the publisher set otherwise, as in WSO2).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use turnpike_keymanager::{
    ClientRecord, ClientStore, KeyManager, KeyManagerConfig, StoreError as KmError, Stores,
    SystemClock, TokenFormat, UserRecord,
};
use turnpike_model::security::{
    ApiAuthSpec, ApiKeySpec, IntrospectionSpec, IssuerSpec, SecuritySpec, SubscriptionSpec,
};
use turnpike_store::{Api, Store};

use crate::error::ApiError;
use crate::AppState;

/// The client id gateways introspect opaque tokens with; its secret is the gateway token.
pub const GATEWAY_CLIENT_ID: &str = "turnpike-gateway";

/// The running key manager and the URL gateways reach it at.
pub struct Security {
    pub km: KeyManager,
    /// The control plane's public URL: the tokens' `iss` and the introspection base.
    pub public_url: String,
}

/// The SQL client store plus the gateways' introspection client.
struct Clients {
    store: Store,
    gateway: ClientRecord,
}

#[async_trait]
impl ClientStore for Clients {
    async fn client(&self, client_id: &str) -> Result<Option<ClientRecord>, KmError> {
        if client_id == GATEWAY_CLIENT_ID {
            return Ok(Some(self.gateway.clone()));
        }
        self.store.client(client_id).await
    }
    async fn user(&self, username: &str) -> Result<Option<UserRecord>, KmError> {
        ClientStore::user(&self.store, username).await
    }
}

/// Why the key manager did not start.
#[derive(Debug, thiserror::Error)]
pub enum EnableError {
    #[error("{0}")]
    Start(#[from] turnpike_keymanager::StartError),
    #[error("hashing the gateway token: {0}")]
    Hash(String),
    #[error("the key manager is already enabled")]
    AlreadyEnabled,
}

/// Starts the key manager (issuer = `public_url`) and attaches it to `state`: its routes
/// are mounted by [`crate::router`] and its keys and revocations go into every snapshot.
pub async fn enable(state: &AppState, public_url: &str) -> Result<KeyManager, EnableError> {
    let store = state.inner.store.clone();
    let token = state.inner.config.gateway_token.clone();
    let secret_hash = tokio::task::spawn_blocking(move || turnpike_keymanager::hash_secret(&token))
        .await
        .map_err(|e| EnableError::Hash(e.to_string()))?
        .map_err(|e| EnableError::Hash(e.to_string()))?;
    let gateway = ClientRecord {
        client_id: GATEWAY_CLIENT_ID.into(),
        secret_hash,
        application_id: String::new(),
        application_name: String::new(),
        owner: String::new(),
        grant_types: Vec::new(),
        scopes: Vec::new(),
        token_format: TokenFormat::Jwt,
        access_token_ttl: Duration::from_secs(0),
        refresh_token_ttl: Duration::from_secs(0),
        audience: Vec::new(),
        can_introspect: true,
    };
    let public_url = public_url.trim_end_matches('/').to_string();
    let shared = Arc::new(store.clone());
    let km = KeyManager::new(
        KeyManagerConfig::new(public_url.clone()),
        Stores {
            clients: Arc::new(Clients {
                store: store.clone(),
                gateway,
            }),
            tokens: shared.clone(),
            keys: shared,
        },
        Arc::new(SystemClock),
    )
    .await?;
    state
        .inner
        .security
        .set(Security {
            km: km.clone(),
            public_url,
        })
        .map_err(|_| EnableError::AlreadyEnabled)?;
    // A revocation is a snapshot change: gateways drop the token within one long-poll.
    let mut rx = km.revocations_changed();
    tokio::spawn(async move {
        while rx.changed().await.is_ok() {
            if let Err(e) = store.bump_version("keymanager", "token revoked").await {
                tracing::warn!(error = %e, "control plane: could not publish a revocation");
            }
        }
    });
    Ok(km)
}

/// The snapshot API id of an API (`{context}/{version}`), what subscriptions are keyed by.
pub fn api_id(context: &str, version: &str) -> String {
    format!("{context}/{version}")
}

/// The snapshot's `security:` section.
pub async fn spec(
    store: &Store,
    sec: &Security,
    gateway_token: &str,
) -> Result<SecuritySpec, ApiError> {
    let jwks = serde_json::to_value(sec.km.jwks()).map_err(|_| ApiError::internal())?;
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let revoked = sec
        .km
        .revoked()
        .await
        .map_err(|e| {
            tracing::error!(error = %e, "control plane: reading revocations");
            ApiError::internal()
        })?
        .into_iter()
        .map(|r| r.jti)
        .collect();
    let subscriptions = store
        .live_subscriptions()
        .await?
        .into_iter()
        .map(
            |(context, version, application, state, tier)| SubscriptionSpec {
                api: api_id(&context, &version),
                application,
                state,
                tier,
            },
        )
        .collect();
    let api_keys = store
        .all_api_keys(i64::try_from(now).unwrap_or(i64::MAX))
        .await?
        .into_iter()
        .map(|g| ApiKeySpec {
            sha256: g.key.sha256,
            application: g.key.application_id,
            application_name: String::new(),
            subscriber: g.owner,
            scopes: g.key.scopes,
            sandbox: g.key.key_type == "SANDBOX",
            expires_at: g.key.expires_at.map(|e| e.max(0) as u64),
        })
        .collect();
    Ok(SecuritySpec {
        issuers: vec![IssuerSpec {
            issuer: sec.public_url.clone(),
            audiences: vec!["turnpike".into()],
            jwks: Some(jwks),
            jwks_url: None,
            claims: HashMap::new(),
        }],
        api_keys,
        basic_users: Vec::new(),
        subscriptions,
        revoked,
        introspection: Some(IntrospectionSpec {
            endpoint: format!("{}/oauth2/introspect", sec.public_url),
            client_id: GATEWAY_CLIENT_ID.into(),
            client_secret: gateway_token.to_string(),
        }),
    })
}

/// Each live API's `auth:`: the stored setting, else the default (OAuth2 + subscription).
pub async fn api_auth(
    store: &Store,
    apis: &[Api],
) -> Result<HashMap<String, ApiAuthSpec>, ApiError> {
    let mut stored: HashMap<String, String> = store.api_security_all().await?.into_iter().collect();
    let mut out = HashMap::with_capacity(apis.len());
    for a in apis {
        let spec = match stored.remove(&a.id) {
            Some(json) => serde_json::from_str(&json).map_err(|e| {
                tracing::error!(api = %a.id, error = %e, "control plane: corrupt API security");
                ApiError::internal()
            })?,
            None => ApiAuthSpec::default(),
        };
        out.insert(a.id.clone(), spec);
    }
    Ok(out)
}
