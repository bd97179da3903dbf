//! The control plane's key manager and what security the snapshot carries. [`enable`]
//! opens the OAuth2 authorization server over the SQL store (clients are applications'
//! keys, password-grant users are the control plane's users, signing keys persist), adds
//! the gateways' own introspection client (`turnpike-gateway`, whose secret is the gateway
//! token), and turns every revocation into a snapshot version bump. [`spec`] builds the
//! snapshot's `security:` section (each API's `auth:`, OAuth2 and a subscription unless
//! the publisher set otherwise as in WSO2, is made by `crate::snapshot::index`).
//!
//! Tokens for the REST APIs themselves come from the built-in public client
//! [`CLI_CLIENT_ID`] (password grant, as `apictl login` does against WSO2): audience
//! [`REST_AUDIENCE`], so they are useless at gateways and application tokens are useless
//! here; scopes limited to what the user's roles allow (`crate::scopes`).
//! [`rotate_signing_key`] starts a new signing key and publishes a snapshot at once.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use turnpike_keymanager::{
    AuthorizeClient, ClientRecord, ClientStore, Clock, GrantType, KeyInfo, KeyManager,
    KeyManagerConfig, MetadataDocumentPolicy, Registration, RegistrationPolicy,
    StoreError as KmError, Stores, SystemClock, TokenFormat, UserRecord,
};
use turnpike_model::rest::CLI_CLIENT_ID;
use turnpike_model::security::{
    ApiAuthSpec, ApiKeySpec, IntrospectionSpec, IssuerSpec, SecuritySpec,
};
use turnpike_model::ResourceSpec;
use turnpike_store::{Api, Resource, Store, StoreError};

use crate::error::{ApiError, FieldError};
use crate::scopes::Scope;
use crate::AppState;

/// The client id gateways introspect opaque tokens with; its secret is the gateway token.
pub const GATEWAY_CLIENT_ID: &str = "turnpike-gateway";

/// The built-in public client of the web portals: authorization code with PKCE (the
/// login page), refresh_token; REST-API tokens like [`CLI_CLIENT_ID`]'s.
pub const UI_CLIENT_ID: &str = turnpike_keymanager::PORTAL_CLIENT_ID;

/// `aud` of REST-API tokens; gateways accept only `turnpike`.
pub const REST_AUDIENCE: &str = "turnpike-control-plane";

/// Lifetimes of REST-API tokens (WSO2's defaults: one hour, one day).
const CLI_ACCESS_TTL: Duration = Duration::from_secs(3600);
const CLI_REFRESH_TTL: Duration = Duration::from_secs(86_400);

/// The running key manager and the URL gateways reach it at.
pub struct Security {
    pub km: KeyManager,
    /// The control plane's public URL: the tokens' `iss` and the introspection base.
    pub public_url: String,
}

/// The SQL client store plus the built-in clients.
struct Clients {
    store: Store,
    gateway: ClientRecord,
    cli: ClientRecord,
    ui: ClientRecord,
}

#[async_trait]
impl ClientStore for Clients {
    async fn client(&self, client_id: &str) -> Result<Option<ClientRecord>, KmError> {
        match client_id {
            GATEWAY_CLIENT_ID => Ok(Some(self.gateway.clone())),
            CLI_CLIENT_ID => Ok(Some(self.cli.clone())),
            UI_CLIENT_ID => Ok(Some(self.ui.clone())),
            _ => self.store.client(client_id).await,
        }
    }
    async fn user(&self, username: &str) -> Result<Option<UserRecord>, KmError> {
        ClientStore::user(&self.store, username).await
    }
    /// Through the CLI client a user delegates what their roles allow; through an
    /// application's client, whatever that application may ask for.
    async fn delegable_scopes(
        &self,
        client: &ClientRecord,
        user: &UserRecord,
    ) -> Result<Option<Vec<String>>, KmError> {
        if client.client_id != CLI_CLIENT_ID && client.client_id != UI_CLIENT_ID {
            return Ok(user.scopes.clone());
        }
        let roles = self
            .store
            .user(&user.username)
            .await
            .map(|u| u.roles)
            .unwrap_or_default();
        Ok(Some(crate::scopes::for_roles(&roles)))
    }
    async fn api_exists(&self, path: &str) -> Result<bool, KmError> {
        self.store.api_exists(path).await
    }
    async fn registration_policy(&self) -> Result<Option<RegistrationPolicy>, KmError> {
        registration_policy(&self.store)
            .await
            .map_err(|e| KmError::new(e.to_string()))
    }
    async fn metadata_document_policy(&self) -> Result<Option<MetadataDocumentPolicy>, KmError> {
        metadata_document_policy(&self.store)
            .await
            .map_err(|e| KmError::new(e.to_string()))
    }
    async fn register_client(
        &self,
        reg: &Registration,
        max_clients: u64,
    ) -> Result<Option<ClientRecord>, KmError> {
        self.store.register_client(reg, max_clients).await
    }
}

fn builtin_client(client_id: &str, secret_hash: String) -> ClientRecord {
    ClientRecord {
        client_id: client_id.into(),
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
        can_introspect: false,
        sandbox: false,
        redirect_uris: Vec::new(),
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
    enable_with_clock(state, public_url, Arc::new(SystemClock)).await
}

/// [`enable`] with an injected clock (tests move time to expire tokens).
pub async fn enable_with_clock(
    state: &AppState,
    public_url: &str,
    clock: Arc<dyn Clock>,
) -> Result<KeyManager, EnableError> {
    let store = state.inner.store.clone();
    let token = state.inner.config.gateway_token.clone();
    let secret_hash = tokio::task::spawn_blocking(move || turnpike_keymanager::hash_secret(&token))
        .await
        .map_err(|e| EnableError::Hash(e.to_string()))?
        .map_err(|e| EnableError::Hash(e.to_string()))?;
    let gateway = ClientRecord {
        can_introspect: true,
        ..builtin_client(GATEWAY_CLIENT_ID, secret_hash)
    };
    let cli = ClientRecord {
        grant_types: vec![GrantType::Password, GrantType::RefreshToken],
        scopes: Scope::ALL.iter().map(|s| s.as_str().to_string()).collect(),
        access_token_ttl: CLI_ACCESS_TTL,
        refresh_token_ttl: CLI_REFRESH_TTL,
        audience: vec![REST_AUDIENCE.into()],
        ..builtin_client(CLI_CLIENT_ID, String::new())
    };
    let ui = ClientRecord {
        grant_types: vec![GrantType::RefreshToken],
        client_id: UI_CLIENT_ID.into(),
        ..cli.clone()
    };
    let public_url = public_url.trim_end_matches('/').to_string();
    let shared = Arc::new(store.clone());
    let mut config = KeyManagerConfig::new(public_url.clone());
    config.public_clients = vec![CLI_CLIENT_ID.into(), UI_CLIENT_ID.into()];
    config.authorize_clients = vec![AuthorizeClient {
        client_id: UI_CLIENT_ID.into(),
        redirect_uris: ui_redirect_uris(&public_url),
    }];
    let km = KeyManager::with_guard(
        config,
        Stores {
            clients: Arc::new(Clients {
                store: store.clone(),
                gateway,
                cli,
                ui,
            }),
            tokens: shared.clone(),
            keys: shared,
        },
        clock,
        state.inner.guard.clone(),
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

/// Where the login page may send the portals back: `/callback` on the public URL and,
/// for a loopback URL, on the same port under both `127.0.0.1` and `localhost` (RFC
/// 8252 §7.3: a browser may use either name).
fn ui_redirect_uris(public_url: &str) -> Vec<String> {
    let mut uris = vec![format!("{public_url}/callback")];
    for (a, b) in [("127.0.0.1", "localhost"), ("localhost", "127.0.0.1")] {
        if let Some(port) = public_url.strip_prefix(&format!("http://{a}:")) {
            uris.push(format!("http://{b}:{port}/callback"));
        }
    }
    uris
}

/// Makes a new key the signer and publishes a snapshot at once, so every gateway trusts
/// the new key before a token signed with it can reach it; the old key stays in the JWKS
/// until the tokens it signed have expired. Returns the new key and all keys.
pub async fn rotate_signing_key(state: &AppState, who: &str) -> Result<Vec<KeyInfo>, ApiError> {
    let sec = state
        .inner
        .security
        .get()
        .ok_or_else(|| ApiError::not_found("key manager"))?;
    let kid = sec.km.rotate_keys().await.map_err(|e| {
        tracing::error!(error = %e, "control plane: rotating the signing key");
        ApiError::internal()
    })?;
    state
        .inner
        .store
        .bump_version(who, &format!("signing key rotated: {kid}"))
        .await?;
    tracing::info!(%kid, "signing key rotated");
    Ok(sec.km.keys())
}

/// The snapshot's `security:` section without its subscriptions (the snapshot builder
/// adds those from its index). `resource_audiences`: some API publishes resource
/// metadata or checks audiences ([`binds_resources`]).
pub async fn spec(
    store: &Store,
    sec: &Security,
    gateway_token: &str,
    resource_audiences: bool,
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
            // Tokens asked for with `resource` (RFC 8707) carry that API's URI as `aud`;
            // set once some API asks, so other deployments' snapshots stay as they were.
            resource_audiences,
        }],
        api_keys,
        basic_users: Vec::new(),
        // Subscriptions travel in buckets (`crate::snapshot::subs`), not through here.
        subscriptions: Vec::new(),
        revoked,
        revoked_applications: store.unusable_applications().await?,
        introspection: Some(IntrospectionSpec {
            endpoint: format!("{}/oauth2/introspect", sec.public_url),
            client_id: GATEWAY_CLIENT_ID.into(),
            client_secret: gateway_token.to_string(),
        }),
    })
}

/// Whether an API's stored `auth:` (compact JSON) publishes resource metadata or
/// checks audiences: then the key manager's issuer admits resource-bound tokens
/// (`resource_audiences`, docs/security.md "Agents"). Until some API does, the snapshot
/// stays as before and such tokens, whose `aud` is not `turnpike`, pass nowhere.
pub fn binds_resources(stored_auth: &str) -> bool {
    stored_auth.contains("\"resource_metadata\":true")
        || stored_auth.contains("\"audience_check\":true")
}

/// The API's stored `auth:`; `None` is the default (OAuth2 and a subscription).
pub async fn stored_auth(store: &Store, api_id: &str) -> Result<Option<ApiAuthSpec>, ApiError> {
    store
        .api_security(api_id)
        .await?
        .map(|json| parse_stored(api_id, &json))
        .transpose()
}

fn parse_stored(api_id: &str, json: &str) -> Result<ApiAuthSpec, ApiError> {
    serde_json::from_str(json).map_err(|e| {
        tracing::error!(api = %api_id, error = %e, "control plane: corrupt API security");
        ApiError::internal()
    })
}

/// Field errors when resources name scopes but the API is open: gateways refuse a
/// snapshot with scopes on an API without `auth:`, so the control plane refuses first.
pub fn scopes_need_auth(resources: &[Resource], auth: Option<&ApiAuthSpec>) -> Vec<FieldError> {
    if !auth.is_some_and(ApiAuthSpec::is_open) {
        return Vec::new();
    }
    resources
        .iter()
        .enumerate()
        .filter(|(_, r)| !r.scopes.is_empty())
        .map(|(i, _)| FieldError {
            field: format!("resources[{i}].scopes"),
            message: "scopes need a secured API: the API's security is \"none\"".into(),
        })
        .collect()
}

/// An API's resources as the snapshot carries them, scopes included; an API without
/// resources is one `/*` resource for every method.
pub fn resource_specs(api: &Api) -> Vec<ResourceSpec> {
    if api.resources.is_empty() {
        return vec![ResourceSpec {
            path: "/*".into(),
            methods: turnpike_model::rest::METHODS.map(String::from).to_vec(),
            scopes: Vec::new(),
            auth: None,
            throttling: None,
            mediation: None,
            cache: None,
        }];
    }
    api.resources
        .iter()
        .map(|r| ResourceSpec {
            path: r.path.clone(),
            methods: r.methods.clone(),
            scopes: r.scopes.clone(),
            auth: (r.auth.as_deref() == Some("none"))
                .then_some(turnpike_model::security::ResourceAuth::Open),
            throttling: r.throttling_policy.clone(),
            // Checked by compiling when it was stored.
            mediation: r
                .mediation
                .as_ref()
                .and_then(|m| serde_json::from_value(m.clone()).ok()),
            cache: r
                .cache
                .as_ref()
                .and_then(|c| serde_json::from_value(c.clone()).ok()),
        })
        .collect()
}

/// The setting of the dynamic client registration policy
/// (`rest/client_registration.rs`).
pub(crate) const REGISTRATION_KEY: &str = "client_registration";

/// The stored setting with defaults filled in (the token's hash included).
pub(crate) fn registration_setting(v: Option<serde_json::Value>) -> serde_json::Value {
    let d = RegistrationPolicy::default();
    let mut out = serde_json::json!({
        "enabled": false,
        "initialAccessTokenSha256": serde_json::Value::Null,
        "owner": d.owner,
        "applicationTier": d.application_tier,
        "grantTypes": d.grant_types,
        "scopes": d.scopes,
        "maxClients": d.max_clients,
        "perMinute": d.per_minute,
    });
    if let (Some(serde_json::Value::Object(set)), Some(o)) = (v, out.as_object_mut()) {
        o.extend(set);
    }
    out
}

fn strings(v: &serde_json::Value) -> Vec<String> {
    v.as_array()
        .map(|a| {
            a.iter()
                .filter_map(|s| s.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

/// The policy in force, `None` while registration is off (what the key manager asks).
pub(crate) async fn registration_policy(
    store: &Store,
) -> Result<Option<RegistrationPolicy>, StoreError> {
    let v = registration_setting(store.setting(REGISTRATION_KEY).await?);
    if v["enabled"] != true {
        return Ok(None);
    }
    let d = RegistrationPolicy::default();
    Ok(Some(RegistrationPolicy {
        initial_access_token_sha256: v["initialAccessTokenSha256"].as_str().map(str::to_owned),
        owner: v["owner"].as_str().map_or(d.owner, str::to_owned),
        application_tier: v["applicationTier"]
            .as_str()
            .map_or(d.application_tier, str::to_owned),
        grant_types: strings(&v["grantTypes"]),
        scopes: strings(&v["scopes"]),
        max_clients: v["maxClients"].as_u64().unwrap_or(d.max_clients),
        per_minute: v["perMinute"]
            .as_u64()
            .and_then(|n| u32::try_from(n).ok())
            .unwrap_or(d.per_minute),
    }))
}

/// The client ID metadata documents setting (`/admin/v1/settings/client-id-metadata-documents`).
pub(crate) const METADATA_DOCUMENTS_KEY: &str = "client_id_metadata_documents";

/// The stored setting with defaults filled in.
pub(crate) fn metadata_documents_setting(v: Option<serde_json::Value>) -> serde_json::Value {
    let d = MetadataDocumentPolicy::default();
    let mut out = serde_json::json!({
        "enabled": false,
        "allowedHosts": d.allowed_hosts,
        "allowPrivateAddresses": d.allow_private_addresses,
        "owner": d.owner,
        "applicationTier": d.application_tier,
        "scopes": d.scopes,
        "maxClients": d.max_clients,
    });
    if let (Some(serde_json::Value::Object(set)), Some(o)) = (v, out.as_object_mut()) {
        o.extend(set);
    }
    out
}

/// The policy in force, `None` while documents are off (what the key manager asks).
pub(crate) async fn metadata_document_policy(
    store: &Store,
) -> Result<Option<MetadataDocumentPolicy>, StoreError> {
    let v = metadata_documents_setting(store.setting(METADATA_DOCUMENTS_KEY).await?);
    if v["enabled"] != true {
        return Ok(None);
    }
    let d = MetadataDocumentPolicy::default();
    Ok(Some(MetadataDocumentPolicy {
        allowed_hosts: strings(&v["allowedHosts"]),
        allow_private_addresses: v["allowPrivateAddresses"] == true,
        owner: v["owner"].as_str().map_or(d.owner, str::to_owned),
        application_tier: v["applicationTier"]
            .as_str()
            .map_or(d.application_tier, str::to_owned),
        scopes: strings(&v["scopes"]),
        max_clients: v["maxClients"].as_u64().unwrap_or(d.max_clients),
    }))
}
