//! Users and applications as an admin manages them (`/api/am/admin/v1/users`,
//! `/api/am/admin/v1/applications`), self sign-up (`/api/am/devportal/v1/self-signup`,
//! off unless `/api/am/admin/v1/settings/self-signup` turns it on, optionally with
//! approval), and a user's own password (`/api/am/devportal/v1/me`).
//!
//! What makes these security operations: disabling or deleting a user, or disabling an
//! application, is one committed write, and the next snapshot lists the applications
//! that may no longer act (`security.revoked_applications`), so every gateway refuses
//! the tokens and keys they already hold; the key manager stops minting for them at
//! once (its client lookup skips them). The last active admin cannot be deleted,
//! disabled or demoted.

use axum::extract::{Path, State};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post, put};
use axum::Router;
use http::{HeaderMap, StatusCode};
use serde_json::{json, Value};
use turnpike_keymanager::PeerIp;
use turnpike_store::{AccountStatus, WriteTx};

use crate::auth::{Admin, Portal};
use crate::error::{ApiError, ApiResult, FieldError};
use crate::http::{body_etag, if_match, json_with_etag, read, written, JsonBody, Paged};
use crate::validate::Fields;
use crate::AppState;

pub fn admin_routes() -> Router<AppState> {
    Router::new()
        .route("/users", get(list_users).post(create_user))
        .route(
            "/users/{name}",
            get(get_user).patch(patch_user).delete(delete_user),
        )
        .route("/users/{name}/password", put(reset_password))
        .route("/applications", get(list_apps))
        .route("/applications/{id}", get(get_app).patch(patch_app))
        .route(
            "/settings/self-signup",
            get(get_signup_settings).put(put_signup_settings),
        )
}

pub fn devportal_routes() -> Router<AppState> {
    Router::new()
        .route("/me/change-password", post(change_password))
        .route("/self-signup", post(self_signup))
}

const SIGNUP: &str = "selfSignup";

/// Self sign-up: off unless an admin turns it on; with `approval`, new users wait
/// (`PENDING`, no sign-in) until an admin sets them `ACTIVE`.
pub(crate) async fn signup_settings(s: &AppState) -> ApiResult<Value> {
    Ok(s.inner
        .store
        .setting(SIGNUP)
        .await?
        .unwrap_or_else(|| json!({"enabled": false, "approval": false})))
}

async fn get_signup_settings(State(s): State<AppState>, _caller: Admin) -> ApiResult<Response> {
    Ok(axum::Json(signup_settings(&s).await?).into_response())
}

async fn put_signup_settings(
    State(s): State<AppState>,
    Admin(caller): Admin,
    JsonBody(v): JsonBody,
) -> ApiResult<Response> {
    let mut f = Fields::new(&v, "");
    let enabled = f.boolean("enabled");
    let approval = f.boolean("approval");
    f.finish_unknown();
    f.into_result()?;
    // Read inside the write transaction: a concurrent PUT of the other field stays.
    let mut tx = s.inner.store.begin_write().await?;
    let current = tx.setting(SIGNUP).await?.unwrap_or(Value::Null);
    let value = json!({
        "enabled": enabled.unwrap_or(current["enabled"] == true),
        "approval": approval.unwrap_or(current["approval"] == true),
    });
    tx.set_setting(SIGNUP, &value).await?;
    tx.commit(&caller.name, "self sign-up settings").await?;
    Ok(axum::Json(value).into_response())
}

/// `POST /api/am/devportal/v1/self-signup` without credentials: a new subscriber
/// (`{"name", "password"}`), `ACTIVE` or, with approval on, `PENDING`.
async fn self_signup(State(s): State<AppState>, JsonBody(mut v): JsonBody) -> ApiResult<Response> {
    crate::import::wso2_aliases::user(&mut v);
    let settings = signup_settings(&s).await?;
    if settings["enabled"] != true {
        return Err(ApiError::new(
            StatusCode::FORBIDDEN,
            "self_signup_disabled",
            "self sign-up is off; ask an admin for an account",
        ));
    }
    let mut f = Fields::new(&v, "");
    let name = user_name_field(&mut f);
    let password = password_field(&mut f, "password");
    f.finish_unknown();
    f.into_result()?;
    let (Some(name), Some(password)) = (name, password) else {
        return Err(ApiError::bad_request("incomplete user"));
    };
    let status = if settings["approval"] == true {
        AccountStatus::Pending
    } else {
        AccountStatus::Active
    };
    let hash = s.inner.store.hash_password(&password).await?;
    let mut tx = s.inner.store.begin_write().await?;
    tx.create_user_with_status(&name, &hash, &["subscriber".to_string()], status)
        .await?;
    tx.commit(&name, &format!("self sign-up of {name}")).await?;
    s.inner.auth_cache.clear();
    let user = s.inner.store.user(&name).await?;
    Ok((StatusCode::CREATED, axum::Json(user)).into_response())
}

/// A password's rules (same for creation, reset and change).
fn password_field(f: &mut Fields<'_>, name: &'static str) -> Option<String> {
    let p = f.string(name, true, 1000);
    if p.as_deref().is_some_and(|p| p.chars().count() < 8) {
        f.err(name, "must be at least 8 characters");
    }
    p
}

fn roles_field(f: &mut Fields<'_>, v: &Value, required: bool) -> Option<Vec<String>> {
    // A role named twice is the role once.
    let roles = f
        .strings("roles", 3, |r| {
            (!turnpike_store::ROLES.contains(&r))
                .then(|| format!("must be one of {:?}", turnpike_store::ROLES))
        })
        .map(|mut r| {
            r.sort();
            r.dedup();
            r
        });
    if roles.as_ref().is_some_and(|r| r.is_empty()) {
        f.err("roles", "must name at least one role");
    }
    if required && v.get("roles").is_none() {
        f.err("roles", "is required");
    }
    roles
}

pub(crate) fn user_name_field(f: &mut Fields<'_>) -> Option<String> {
    let name = f.string("name", true, 100);
    if name.as_deref().is_some_and(|n| n.contains(':')) {
        f.err("name", "must not contain ':' (HTTP Basic separator)");
    }
    name
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
    JsonBody(mut v): JsonBody,
) -> ApiResult<Response> {
    crate::import::wso2_aliases::user(&mut v);
    let mut f = Fields::new(&v, "");
    f.ignore(&["status", "createdTime"]);
    let name = user_name_field(&mut f);
    let password = password_field(&mut f, "password");
    let roles = roles_field(&mut f, &v, true);
    f.finish_unknown();
    f.into_result()?;
    let (Some(name), Some(password), Some(roles)) = (name, password, roles) else {
        return Err(ApiError::bad_request("incomplete user"));
    };
    crate::create_user_with(&s, &caller.name, &name, &password, &roles).await?;
    let user = s.inner.store.user(&name).await?;
    Ok((StatusCode::CREATED, axum::Json(user)).into_response())
}

async fn get_user(
    State(s): State<AppState>,
    _caller: Admin,
    Path(name): Path<String>,
) -> ApiResult<Response> {
    Ok(axum::Json(s.inner.store.user(&name).await?).into_response())
}

/// 409 when `name` is an active admin and no other active admin would remain.
async fn keep_an_admin(
    s: &AppState,
    tx: &mut WriteTx<'_>,
    name: &str,
    what: &str,
) -> ApiResult<()> {
    let user = s.inner.store.user(name).await?;
    let is_active_admin =
        user.status == AccountStatus::Active && user.roles.iter().any(|r| r == "admin");
    if is_active_admin && tx.other_active_admins(name).await? == 0 {
        return Err(ApiError::conflict(format!(
            "{name} is the last active admin: {what} would leave nobody to administer the control plane"
        )));
    }
    Ok(())
}

/// JSON Merge Patch (RFC 7396) of a user: `roles` (replaces the list) and `status`
/// (`ACTIVE`, `DISABLED`; `ACTIVE` also approves a `PENDING` sign-up).
async fn patch_user(
    State(s): State<AppState>,
    Admin(caller): Admin,
    Path(name): Path<String>,
    JsonBody(v): JsonBody,
) -> ApiResult<Response> {
    let mut f = Fields::new(&v, "");
    f.ignore(&["name", "createdTime"]);
    let roles = roles_field(&mut f, &v, false);
    let status = f.string("status", false, 20);
    let status = match status.as_deref().map(AccountStatus::parse) {
        None => None,
        Some(Some(st @ (AccountStatus::Active | AccountStatus::Disabled))) => Some(st),
        Some(_) => {
            f.err("status", "must be ACTIVE or DISABLED");
            None
        }
    };
    if v.get("name")
        .is_some_and(|n| n.as_str() != Some(name.as_str()))
    {
        f.err("name", "cannot be changed");
    }
    f.finish_unknown();
    f.into_result()?;
    let mut tx = s.inner.store.begin_write().await?;
    let demoted = roles
        .as_ref()
        .is_some_and(|r| !r.iter().any(|r| r == "admin"));
    if demoted || status == Some(AccountStatus::Disabled) {
        keep_an_admin(&s, &mut tx, &name, "this change").await?;
    }
    if let Some(r) = &roles {
        tx.set_user_roles(&name, r).await?;
    }
    if let Some(st) = status {
        tx.set_user_status(&name, st).await?;
    }
    tx.commit(&caller.name, &format!("update user {name}"))
        .await?;
    s.inner.auth_cache.clear();
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
    keep_an_admin(&s, &mut tx, &name, "deleting them").await?;
    tx.delete_user(&name).await?;
    tx.commit(&caller.name, &format!("delete user {name}"))
        .await?;
    s.inner.auth_cache.clear();
    Ok(StatusCode::NO_CONTENT.into_response())
}

async fn set_password(s: &AppState, actor: &str, name: &str, password: &str) -> ApiResult<()> {
    let hash = s.inner.store.hash_password(password).await?;
    let mut tx = s.inner.store.begin_write().await?;
    tx.set_user_password(name, &hash).await?;
    tx.commit(actor, &format!("set the password of {name}"))
        .await?;
    s.inner.auth_cache.clear();
    Ok(())
}

/// An admin sets a user's password (`{"password"}`).
async fn reset_password(
    State(s): State<AppState>,
    Admin(caller): Admin,
    Path(name): Path<String>,
    JsonBody(v): JsonBody,
) -> ApiResult<Response> {
    let mut f = Fields::new(&v, "");
    let password = password_field(&mut f, "password");
    f.finish_unknown();
    f.into_result()?;
    s.inner.store.user(&name).await?;
    set_password(&s, &caller.name, &name, &password.unwrap_or_default()).await?;
    Ok(StatusCode::NO_CONTENT.into_response())
}

/// A user changes their own password (`{"currentPassword", "newPassword"}`, as WSO2's
/// `/me/change-password`).
async fn change_password(
    State(s): State<AppState>,
    Portal(caller): Portal,
    PeerIp(ip): PeerIp,
    JsonBody(v): JsonBody,
) -> ApiResult<Response> {
    let mut f = Fields::new(&v, "");
    let current = f.string("currentPassword", true, 1000);
    let new = password_field(&mut f, "newPassword");
    f.finish_unknown();
    f.into_result()?;
    let current = current.unwrap_or_default();
    // A stolen token must not become a way to guess the password.
    let ok = crate::auth::guarded_password(&s, &caller.name, &current, ip)
        .await?
        .is_some();
    if !ok {
        return Err(ApiError::invalid(vec![FieldError {
            field: "currentPassword".into(),
            message: "does not match".into(),
        }]));
    }
    set_password(&s, &caller.name, &caller.name, &new.unwrap_or_default()).await?;
    Ok(StatusCode::NO_CONTENT.into_response())
}

/// Every user's applications, by name, for admins: `owner` keeps one user's, `query`
/// those whose name or owner contains it; `limit` / `offset` page.
async fn list_apps(
    State(s): State<AppState>,
    _caller: Admin,
    pg: Paged,
    headers: HeaderMap,
) -> ApiResult<Response> {
    let query = pg.q.get("query").map(String::as_str);
    if query.is_some_and(|t| t.chars().count() > 200) {
        return Err(ApiError::invalid(vec![FieldError {
            field: "query".into(),
            message: "at most 200 characters".into(),
        }]));
    }
    let apps = s
        .inner
        .store
        .list_applications(
            pg.q.get("owner").map(String::as_str),
            query,
            pg.limit,
            pg.offset,
        )
        .await?;
    Ok(pg.respond(&headers, apps))
}

async fn get_app(
    State(s): State<AppState>,
    _caller: Admin,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> ApiResult<Response> {
    Ok(read(&headers, &s.inner.store.get_application(&id).await?))
}

/// JSON Merge Patch of an application by an admin: `status` (`ACTIVE`, `DISABLED`).
async fn patch_app(
    State(s): State<AppState>,
    Admin(caller): Admin,
    Path(id): Path<String>,
    headers: HeaderMap,
    JsonBody(v): JsonBody,
) -> ApiResult<Response> {
    let expected = if_match(&headers, &id)?;
    let mut f = Fields::new(&v, "");
    let status = match f.string("status", true, 20).as_deref() {
        Some("ACTIVE") => Some(AccountStatus::Active),
        Some("DISABLED") => Some(AccountStatus::Disabled),
        Some(_) => {
            f.err("status", "must be ACTIVE or DISABLED");
            None
        }
        None => None,
    };
    f.finish_unknown();
    f.into_result()?;
    let Some(status) = status else {
        return Err(ApiError::bad_request("status is required"));
    };
    let mut tx = s.inner.store.begin_write().await?;
    let app = tx.set_application_status(&id, status, expected).await?;
    tx.commit(
        &caller.name,
        &format!("application {id} -> {}", status.as_str()),
    )
    .await?;
    Ok(written(StatusCode::OK, &app))
}
