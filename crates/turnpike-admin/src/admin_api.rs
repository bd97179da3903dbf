//! `/api/am/admin/v1`: throttling tiers (subscription, application, advanced), users and
//! their roles, the gateways that follow this control plane, and the key manager's
//! signing keys (list, rotate). Admin role (`apim:admin` for bearer tokens).

use std::collections::HashMap;

use axum::extract::{Path, Query, State};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use http::{HeaderMap, StatusCode};
use serde_json::json;
use turnpike_store::{Tier, TierKind};

use crate::auth::Admin;
use crate::error::{ApiError, ApiResult, FieldError};
use crate::http::{body_etag, if_match, json_with_etag, revision_etag, with_etag, JsonBody};
use crate::validate::Fields;
use crate::AppState;

pub fn routes() -> Router<AppState> {
    Router::new()
        .route(
            "/throttling/policies/{kind}",
            get(list_tiers).post(create_tier),
        )
        .route(
            "/throttling/policies/{kind}/{name}",
            get(get_tier).put(update_tier).delete(delete_tier),
        )
        .route("/users", get(list_users).post(create_user))
        .route("/users/{name}", get(get_user).delete(delete_user))
        .route("/gateways", get(gateways))
        .route("/keys", get(list_keys))
        .route("/keys/rotate", post(rotate_keys))
}

fn kind(s: &str) -> ApiResult<TierKind> {
    TierKind::parse(s).ok_or_else(|| {
        ApiError::not_found(format!(
            "tier family {s:?} (subscription, application, advanced)"
        ))
    })
}

async fn list_tiers(
    State(s): State<AppState>,
    _caller: Admin,
    Path(k): Path<String>,
    headers: HeaderMap,
) -> ApiResult<Response> {
    let tiers = s.inner.store.list_tiers(kind(&k)?).await?;
    let body = json!({"count": tiers.len(), "list": tiers});
    Ok(json_with_etag(&headers, body_etag(&body), &body))
}

fn tier_body(v: &serde_json::Value, kind: TierKind, name: Option<&str>) -> ApiResult<Tier> {
    let mut f = Fields::new(v, "");
    f.ignore(&["kind", "revision"]);
    let body_name = f.string("name", name.is_none(), 100);
    if let (Some(n), Some(b)) = (name, body_name.as_deref()) {
        if n != b {
            f.err("name", "must match the name in the path");
        }
    }
    let description = f.text("description", 1000).unwrap_or_default();
    let request_count = f.integer("requestCount", 1, i64::MAX / 2);
    let unit_seconds = f.integer("unitSeconds", 1, 366 * 86_400).unwrap_or(60);
    f.finish_unknown();
    f.into_result()?;
    Ok(Tier {
        kind,
        name: name.map(str::to_string).or(body_name).unwrap_or_default(),
        description,
        request_count,
        unit_seconds,
        revision: 0,
    })
}

async fn create_tier(
    State(s): State<AppState>,
    Admin(caller): Admin,
    Path(k): Path<String>,
    JsonBody(v): JsonBody,
) -> ApiResult<Response> {
    let t = tier_body(&v, kind(&k)?, None)?;
    let mut tx = s.inner.store.begin_write().await?;
    let t = tx.create_tier(&t).await?;
    tx.commit(&caller.name, &format!("create {k} tier {}", t.name))
        .await?;
    Ok(with_etag(
        StatusCode::CREATED,
        revision_etag(&t.name, t.revision),
        &t,
    ))
}

async fn get_tier(
    State(s): State<AppState>,
    _caller: Admin,
    Path((k, name)): Path<(String, String)>,
    headers: HeaderMap,
) -> ApiResult<Response> {
    let t = s.inner.store.get_tier(kind(&k)?, &name).await?;
    Ok(json_with_etag(
        &headers,
        revision_etag(&t.name, t.revision),
        &t,
    ))
}

async fn update_tier(
    State(s): State<AppState>,
    Admin(caller): Admin,
    Path((k, name)): Path<(String, String)>,
    headers: HeaderMap,
    JsonBody(v): JsonBody,
) -> ApiResult<Response> {
    let expected = if_match(&headers, &name)?;
    let t = tier_body(&v, kind(&k)?, Some(&name))?;
    let mut tx = s.inner.store.begin_write().await?;
    let t = tx.update_tier(&t, expected).await?;
    tx.commit(&caller.name, &format!("update {k} tier {name}"))
        .await?;
    Ok(with_etag(
        StatusCode::OK,
        revision_etag(&t.name, t.revision),
        &t,
    ))
}

async fn delete_tier(
    State(s): State<AppState>,
    Admin(caller): Admin,
    Path((k, name)): Path<(String, String)>,
) -> ApiResult<Response> {
    let mut tx = s.inner.store.begin_write().await?;
    tx.delete_tier(kind(&k)?, &name).await?;
    tx.commit(&caller.name, &format!("delete {k} tier {name}"))
        .await?;
    Ok(StatusCode::NO_CONTENT.into_response())
}

async fn list_users(
    State(s): State<AppState>,
    _caller: Admin,
    headers: HeaderMap,
) -> ApiResult<Response> {
    let users = s.inner.store.list_users().await?;
    let body = json!({"count": users.len(), "list": users});
    Ok(json_with_etag(&headers, body_etag(&body), &body))
}

async fn create_user(
    State(s): State<AppState>,
    Admin(caller): Admin,
    JsonBody(v): JsonBody,
) -> ApiResult<Response> {
    let mut f = Fields::new(&v, "");
    let name = f.string("name", true, 100);
    if name.as_deref().is_some_and(|n| n.contains(':')) {
        f.err("name", "must not contain ':' (HTTP Basic separator)");
    }
    let password = f.string("password", true, 1000);
    if password.as_deref().is_some_and(|p| p.chars().count() < 8) {
        f.err("password", "must be at least 8 characters");
    }
    let roles = f.strings("roles", 3, |r| {
        (!turnpike_store::ROLES.contains(&r))
            .then(|| format!("must be one of {:?}", turnpike_store::ROLES))
    });
    if roles.as_ref().is_some_and(|r| r.is_empty()) {
        f.err("roles", "must name at least one role");
    }
    if v.get("roles").is_none() {
        f.err("roles", "is required");
    }
    f.finish_unknown();
    f.into_result()?;
    let (Some(name), Some(password), Some(roles)) = (name, password, roles) else {
        return Err(ApiError::invalid(vec![FieldError {
            field: "".into(),
            message: "incomplete user".into(),
        }]));
    };
    create_user_with(&s, &caller.name, &name, &password, &roles).await?;
    let user = s.inner.store.user(&name).await?;
    Ok((StatusCode::CREATED, axum::Json(user)).into_response())
}

/// Creates a user (hashing off the async workers) and forgets cached logins.
pub async fn create_user_with(
    s: &AppState,
    actor: &str,
    name: &str,
    password: &str,
    roles: &[String],
) -> ApiResult<()> {
    let hash = s.inner.store.hash_password(password).await?;
    let mut tx = s.inner.store.begin_write().await?;
    tx.create_user(name, &hash, roles).await?;
    tx.commit(actor, &format!("create user {name}")).await?;
    s.inner.auth_cache.clear();
    Ok(())
}

async fn get_user(
    State(s): State<AppState>,
    _caller: Admin,
    Path(name): Path<String>,
) -> ApiResult<Response> {
    Ok(axum::Json(s.inner.store.user(&name).await?).into_response())
}

async fn delete_user(
    State(s): State<AppState>,
    Admin(caller): Admin,
    Path(name): Path<String>,
) -> ApiResult<Response> {
    if name == caller.name {
        return Err(ApiError::conflict("you cannot delete yourself"));
    }
    let mut tx = s.inner.store.begin_write().await?;
    tx.delete_user(&name).await?;
    tx.commit(&caller.name, &format!("delete user {name}"))
        .await?;
    s.inner.auth_cache.clear();
    Ok(StatusCode::NO_CONTENT.into_response())
}

async fn gateways(
    State(s): State<AppState>,
    _caller: Admin,
    Query(_q): Query<HashMap<String, String>>,
) -> ApiResult<Response> {
    let version = *s.inner.store.watch_version().borrow();
    let list = s.inner.gateways.list(version);
    Ok(
        axum::Json(json!({"controlPlaneVersion": version, "count": list.len(), "list": list}))
            .into_response(),
    )
}

fn keys_body(keys: &[turnpike_keymanager::KeyInfo]) -> serde_json::Value {
    let active = keys.iter().find(|k| k.active).map(|k| k.kid.clone());
    json!({"activeKid": active, "count": keys.len(), "list": keys})
}

/// The signing keys: the active one and the retired ones still in the JWKS.
async fn list_keys(State(s): State<AppState>, _caller: Admin) -> ApiResult<Response> {
    let sec = s
        .inner
        .security
        .get()
        .ok_or_else(|| ApiError::not_found("key manager"))?;
    Ok(axum::Json(keys_body(&sec.km.keys())).into_response())
}

/// A new signing key, live on every gateway with the snapshot this publishes.
async fn rotate_keys(State(s): State<AppState>, Admin(caller): Admin) -> ApiResult<Response> {
    let keys = crate::security::rotate_signing_key(&s, &caller.name).await?;
    Ok((StatusCode::CREATED, axum::Json(keys_body(&keys))).into_response())
}
