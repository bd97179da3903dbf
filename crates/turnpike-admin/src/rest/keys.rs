//! Credentials for applications and API security settings. DevPortal
//! (`/api/am/devportal/v1/applications/{id}/...`): generate an application's OAuth2 keys
//! (consumer key and secret; the secret is shown once and stored as argon2), regenerate
//! the secret, delete the keys, create/list/revoke API keys (shown once, stored as
//! SHA-256). Publisher (`/api/am/publisher/v1/apis/{apiId}/security`): which credentials
//! an API accepts (`turnpike_model::security::ApiAuthSpec`; `"none"` opens it).

use axum::extract::{Path, State};
use axum::response::{IntoResponse, Response};
use axum::routing::{delete, get, post};
use axum::{Json, Router};
use http::StatusCode;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use turnpike_keymanager::{GrantType, TokenFormat};
use turnpike_model::security::ApiAuthSpec;
use turnpike_store::{ApiKey, OAuthClient, OAuthClientInput};

use crate::auth::{ApiCreator, ApiViewer};
use crate::error::{ApiError, ApiResult};
use crate::http::{all, JsonBody};
use crate::rest::devportal::OwnApp;
use crate::validate::{check_scope, Fields};
use crate::AppState;

pub fn devportal_routes() -> Router<AppState> {
    Router::new()
        .route("/applications/{id}/generate-keys", post(generate_keys))
        .route("/applications/{id}/keys", get(list_keys))
        .route(
            "/applications/{id}/keys/{key_type}",
            delete(delete_keys).put(update_keys),
        )
        .route(
            "/applications/{id}/keys/{key_type}/regenerate-secret",
            post(regenerate_secret),
        )
        .route(
            "/applications/{id}/api-keys",
            get(list_api_keys).post(create_api_key),
        )
        .route(
            "/applications/{id}/api-keys/{key_id}",
            delete(revoke_api_key),
        )
}

pub fn publisher_routes() -> Router<AppState> {
    Router::new().route("/apis/{id}/security", get(get_security).put(put_security))
}

const KEY_TYPES: [&str; 2] = ["PRODUCTION", "SANDBOX"];
const GRANTS: [&str; 3] = ["client_credentials", "password", "refresh_token"];

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn client_json(c: &OAuthClient) -> Value {
    json!({
        "consumerKey": c.client_id,
        "keyType": c.key_type,
        "tokenType": match c.token_format { TokenFormat::Jwt => "JWT", TokenFormat::Opaque => "OPAQUE" },
        "grantTypes": c.grant_types.iter().map(|g| match g {
            GrantType::ClientCredentials => "client_credentials",
            GrantType::Password => "password",
            GrantType::RefreshToken => "refresh_token",
        }).collect::<Vec<_>>(),
        "scopes": c.scopes,
        "accessTokenTtl": c.access_ttl_s,
        "refreshTokenTtl": c.refresh_ttl_s,
        "createdTime": c.created_time,
        "callbackUrl": c.redirect_uris().first(),
        "redirectUris": c.redirect_uris(),
    })
}

fn key_type(s: &str) -> ApiResult<String> {
    KEY_TYPES
        .contains(&s)
        .then(|| s.to_string())
        .ok_or_else(|| ApiError::not_found(format!("key type {s}")))
}

/// The body's `keyType` (PRODUCTION when absent), checked.
fn key_type_field(f: &mut Fields<'_>) -> String {
    let kt = f
        .string("keyType", false, 20)
        .unwrap_or_else(|| "PRODUCTION".into());
    if !KEY_TYPES.contains(&kt.as_str()) {
        f.err("keyType", format!("must be one of {KEY_TYPES:?}"));
    }
    kt
}

/// A credential's description plus the secret itself, shown this once.
fn shown_once(status: StatusCode, mut body: Value, field: &str, secret: String) -> Response {
    body[field] = json!(secret);
    (status, Json(body)).into_response()
}

async fn hash(secret: String) -> ApiResult<String> {
    tokio::task::spawn_blocking(move || turnpike_keymanager::hash_secret(&secret))
        .await
        .map_err(|_| ApiError::internal())?
        .map_err(|_| ApiError::internal())
}

/// The OAuth2 settings of a generate-keys or update-keys body; fields left out keep
/// `current`'s values (an update) or take their defaults.
fn client_settings(
    v: &Value,
    key_type: String,
    current: Option<&OAuthClient>,
) -> ApiResult<OAuthClientInput> {
    let mut f = Fields::new(v, "");
    f.ignore(&["consumerKey", "consumerSecret", "createdTime"]);
    let kt = match current {
        Some(_) => {
            f.ignore(&["keyType"]);
            key_type
        }
        None => key_type_field(&mut f),
    };
    let grants = f
        .strings("grantTypes", 3, |g| {
            (!GRANTS.contains(&g)).then(|| format!("must be one of {GRANTS:?}"))
        })
        .map(|g| g.iter().filter_map(|g| GrantType::parse(g)).collect())
        .or_else(|| current.map(|c| c.grant_types.clone()))
        .unwrap_or_else(|| GRANTS.iter().filter_map(|g| GrantType::parse(g)).collect());
    let token_format = match f.string("tokenType", false, 10).as_deref() {
        None => current.map_or(TokenFormat::Jwt, |c| c.token_format),
        Some("JWT") => TokenFormat::Jwt,
        Some("OPAQUE") => TokenFormat::Opaque,
        Some(_) => {
            f.err("tokenType", "must be JWT or OPAQUE");
            TokenFormat::Jwt
        }
    };
    let scopes = f
        .strings("scopes", 100, check_scope)
        .or_else(|| current.map(|c| c.scopes.clone()))
        .unwrap_or_default();
    let access = f
        .integer("accessTokenTtl", 1, 86_400)
        .or_else(|| current.map(|c| c.access_ttl_s))
        .unwrap_or(3600);
    let refresh = f
        .integer("refreshTokenTtl", 1, 90 * 86_400)
        .or_else(|| current.map(|c| c.refresh_ttl_s))
        .unwrap_or(86_400);
    let callback =
        redirect_uris(&mut f).unwrap_or_else(|| current.and_then(|c| c.callback_url.clone()));
    f.finish_unknown();
    f.into_result()?;
    Ok(OAuthClientInput {
        key_type: kt,
        secret_hash: String::new(),
        grant_types: grants,
        scopes,
        token_format,
        access_ttl_s: access,
        refresh_ttl_s: refresh,
        audience: Vec::new(),
        callback_url: callback,
    })
}

/// The most redirect URIs one key pair registers.
const MAX_REDIRECT_URIS: usize = 20;

/// Why `uri` cannot be a redirect URI (RFC 6749 §3.1.2: absolute, no fragment).
fn check_redirect_uri(uri: &str) -> Option<String> {
    if uri.len() > 2000 || uri.contains(char::is_whitespace) || uri.contains('#') {
        return Some(
            "must be an absolute http:// or https:// URL without spaces or fragment".into(),
        );
    }
    crate::service::api_body::check_endpoint(uri)
        .map(|_| "must be an absolute http:// or https:// URL".into())
}

/// `redirectUris` (or WSO2's single `callbackUrl`) as the stored space-separated list;
/// an empty list clears them. `None` when the body names neither.
fn redirect_uris(f: &mut Fields<'_>) -> Option<Option<String>> {
    let list = match f.strings("redirectUris", MAX_REDIRECT_URIS, check_redirect_uri) {
        Some(list) => {
            // A body read back from GET carries both; the list wins.
            f.ignore(&["callbackUrl"]);
            Some(list)
        }
        None => f.string("callbackUrl", false, 2000).map(|u| {
            if let Some(why) = check_redirect_uri(&u) {
                f.err("callbackUrl", why);
            }
            vec![u]
        }),
    }?;
    Some(Some(list.join(" ")).filter(|s| !s.is_empty()))
}

async fn generate_keys(
    State(s): State<AppState>,
    OwnApp { caller, app }: OwnApp,
    JsonBody(v): JsonBody,
) -> ApiResult<Response> {
    let mut input = client_settings(&v, String::new(), None)?;
    let secret = turnpike_keymanager::random_token();
    input.secret_hash = hash(secret.clone()).await?;
    let client_id = turnpike_store::new_id();
    let mut tx = s.inner.store.begin_write().await?;
    let c = tx.create_oauth_client(&app.id, &client_id, &input).await?;
    tx.commit(
        &caller.name,
        &format!("generate keys for application {}", app.id),
    )
    .await?;
    Ok(shown_once(
        StatusCode::CREATED,
        client_json(&c),
        "consumerSecret",
        secret,
    ))
}

/// Changes the keys of a type in place: grant types, scopes, token type, lifetimes,
/// callback URL; the consumer key and secret stay (fields left out keep their values).
async fn update_keys(
    State(s): State<AppState>,
    OwnApp { caller, app }: OwnApp,
    Path((_, kt)): Path<(String, String)>,
    JsonBody(v): JsonBody,
) -> ApiResult<Response> {
    let kt = key_type(&kt)?;
    // Read inside the write transaction (under the writer lock): settings the body
    // leaves out keep their values even when another update runs at the same time.
    let mut tx = s.inner.store.begin_write().await?;
    let current = tx.oauth_client_of(&app.id, &kt).await?;
    let input = client_settings(&v, kt.clone(), Some(&current))?;
    let c = tx.update_oauth_client(&app.id, &input).await?;
    tx.commit(&caller.name, &format!("update {kt} keys of {}", app.id))
        .await?;
    Ok(Json(client_json(&c)).into_response())
}

async fn list_keys(State(s): State<AppState>, OwnApp { app, .. }: OwnApp) -> ApiResult<Response> {
    let clients = s.inner.store.oauth_clients(&app.id).await?;
    Ok(all(&clients.iter().map(client_json).collect::<Vec<_>>()))
}

async fn regenerate_secret(
    State(s): State<AppState>,
    OwnApp { caller, app }: OwnApp,
    Path((_, kt)): Path<(String, String)>,
) -> ApiResult<Response> {
    let kt = key_type(&kt)?;
    let secret = turnpike_keymanager::random_token();
    let h = hash(secret.clone()).await?;
    let mut tx = s.inner.store.begin_write().await?;
    let c = tx.set_client_secret(&app.id, &kt, &h).await?;
    tx.commit(&caller.name, &format!("regenerate secret of {}", app.id))
        .await?;
    Ok(shown_once(
        StatusCode::OK,
        client_json(&c),
        "consumerSecret",
        secret,
    ))
}

async fn delete_keys(
    State(s): State<AppState>,
    OwnApp { caller, app }: OwnApp,
    Path((_, kt)): Path<(String, String)>,
) -> ApiResult<Response> {
    let kt = key_type(&kt)?;
    let mut tx = s.inner.store.begin_write().await?;
    tx.delete_oauth_client(&app.id, &kt).await?;
    tx.commit(&caller.name, &format!("delete {kt} keys of {}", app.id))
        .await?;
    Ok(StatusCode::NO_CONTENT.into_response())
}

fn api_key_json(k: &ApiKey) -> Value {
    json!({
        "id": k.id,
        "name": k.name,
        "keyType": k.key_type,
        "scopes": k.scopes,
        "createdTime": k.created_time,
        "expiresAt": k.expires_at,
    })
}

async fn create_api_key(
    State(s): State<AppState>,
    OwnApp { caller, app }: OwnApp,
    JsonBody(v): JsonBody,
) -> ApiResult<Response> {
    let mut f = Fields::new(&v, "");
    let name = f
        .string("name", false, 100)
        .unwrap_or_else(|| "default".into());
    let kt = key_type_field(&mut f);
    let scopes = f.strings("scopes", 100, check_scope).unwrap_or_default();
    let validity = f.integer("validityPeriod", 1, 10 * 365 * 86_400);
    f.finish_unknown();
    f.into_result()?;
    let key = format!("tpk_{}", turnpike_keymanager::random_token());
    let digest = hex(&Sha256::digest(key.as_bytes()));
    let expires = validity.map(|v| turnpike_store::now_ms() / 1000 + v);
    let mut tx = s.inner.store.begin_write().await?;
    let k = tx
        .create_api_key(&app.id, &name, &kt, &digest, &scopes, expires)
        .await?;
    tx.commit(&caller.name, &format!("create API key for {}", app.id))
        .await?;
    Ok(shown_once(
        StatusCode::CREATED,
        api_key_json(&k),
        "apikey",
        key,
    ))
}

async fn list_api_keys(
    State(s): State<AppState>,
    OwnApp { app, .. }: OwnApp,
) -> ApiResult<Response> {
    let keys = s.inner.store.api_keys(&app.id).await?;
    Ok(all(&keys.iter().map(api_key_json).collect::<Vec<_>>()))
}

async fn revoke_api_key(
    State(s): State<AppState>,
    OwnApp { caller, app }: OwnApp,
    Path((_, key_id)): Path<(String, String)>,
) -> ApiResult<Response> {
    let mut tx = s.inner.store.begin_write().await?;
    tx.delete_api_key(&app.id, &key_id).await?;
    tx.commit(&caller.name, &format!("revoke API key of {}", app.id))
        .await?;
    Ok(StatusCode::NO_CONTENT.into_response())
}

async fn get_security(
    State(s): State<AppState>,
    _caller: ApiViewer,
    Path(id): Path<String>,
) -> ApiResult<Response> {
    let api = s.inner.store.get_api(&id).await?;
    let spec = crate::security::stored_auth(&s.inner.store, &api.id)
        .await?
        .unwrap_or_default();
    Ok(Json(json!(spec)).into_response())
}

/// Body: `"none"`, or `{"oauth2": bool, "api_key": bool, "api_key_header": ..., "basic":
/// bool, "subscription": bool}`; `null` restores the default.
async fn put_security(
    State(s): State<AppState>,
    ApiCreator(caller): ApiCreator,
    Path(id): Path<String>,
    JsonBody(v): JsonBody,
) -> ApiResult<Response> {
    let api = s.inner.store.get_api(&id).await?;
    let spec: Option<ApiAuthSpec> = if v.is_null() {
        None
    } else {
        Some(serde_json::from_value(v).map_err(|e| ApiError::bad_request(e.to_string()))?)
    };
    let conflicts = crate::security::scopes_need_auth(&api.resources, spec.as_ref());
    if !conflicts.is_empty() {
        return Err(ApiError::invalid(conflicts));
    }
    let stored = spec
        .as_ref()
        .map(serde_json::to_string)
        .transpose()
        .map_err(|_| ApiError::internal())?;
    let mut tx = s.inner.store.begin_write().await?;
    tx.set_api_security(&api.id, stored.as_deref()).await?;
    tx.commit(&caller.name, &format!("set security of API {}", api.id))
        .await?;
    Ok(Json(json!(spec.unwrap_or_default())).into_response())
}
