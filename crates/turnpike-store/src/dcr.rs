//! The key manager's agent-facing writes and reads: a dynamically registered client
//! (RFC 7591) stored as a new application of the registration policy's owner plus its
//! OAuth2 client, in one write transaction that first counts the owner's applications
//! (the cap), and whether a resource path (RFC 8707) names an API.

use std::time::Duration;

use turnpike_keymanager::{ClientRecord, Registration, TokenFormat};

use crate::oauth::OAuthClientInput;
use crate::{Store, StoreError};

/// Lifetimes of a registered client's tokens (the DevPortal's defaults).
const ACCESS_TTL_S: i64 = 3600;
const REFRESH_TTL_S: i64 = 86_400;

/// The API whose `{context}/{version}` is `path`, or (an MCP endpoint,
/// `/mcp/{context}/{version}`, docs/mcp.md) whose path follows `/mcp`.
pub(crate) async fn api_exists(store: &Store, path: &str) -> Result<bool, StoreError> {
    let mcp = path.strip_prefix("/mcp").unwrap_or(path);
    let n: i64 = sqlx::query_scalar(
        "SELECT COUNT(*) FROM apis WHERE (context || '/' || version) IN ($1, $2) AND state <> 'RETIRED'",
    )
    .bind(path)
    .bind(mcp)
    .fetch_one(store.pool())
    .await?;
    Ok(n > 0)
}

/// One transaction: count the owner's applications, create the application and its
/// client. `None` when the owner already has `max` applications.
pub(crate) async fn register(
    store: &Store,
    reg: &Registration,
    max: u64,
) -> Result<Option<ClientRecord>, StoreError> {
    let mut tx = store.begin_write().await?;
    let owned: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM applications WHERE owner = $1")
        .bind(&reg.owner)
        .fetch_one(tx.conn())
        .await?;
    if u64::try_from(owned).unwrap_or(u64::MAX) >= max {
        return Ok(None);
    }
    let description = "registered by an agent (RFC 7591 dynamic client registration)";
    let app = tx
        .create_application(&reg.owner, &reg.name, &reg.tier, description)
        .await?;
    let input = OAuthClientInput {
        key_type: turnpike_keymanager::key_type_name(false).into(),
        secret_hash: reg.secret_hash.clone(),
        grant_types: reg.grant_types.clone(),
        scopes: reg.scopes.clone(),
        token_format: TokenFormat::Jwt,
        access_ttl_s: ACCESS_TTL_S,
        refresh_ttl_s: REFRESH_TTL_S,
        audience: Vec::new(),
        callback_url: Some(reg.redirect_uris.join(" ")).filter(|u| !u.is_empty()),
    };
    tx.create_oauth_client(&app.id, &reg.client_id, &input)
        .await?;
    let summary = format!(
        "client {} registered as application {}",
        reg.client_id, app.id
    );
    tx.commit(&reg.owner, &summary).await?;
    Ok(Some(ClientRecord {
        client_id: reg.client_id.clone(),
        secret_hash: reg.secret_hash.clone(),
        application_id: app.id,
        application_name: reg.name.clone(),
        owner: reg.owner.clone(),
        grant_types: reg.grant_types.clone(),
        scopes: reg.scopes.clone(),
        token_format: TokenFormat::Jwt,
        access_token_ttl: Duration::from_secs(ACCESS_TTL_S as u64),
        refresh_token_ttl: Duration::from_secs(REFRESH_TTL_S as u64),
        audience: Vec::new(),
        can_introspect: false,
        sandbox: false,
        redirect_uris: reg.redirect_uris.clone(),
    }))
}
