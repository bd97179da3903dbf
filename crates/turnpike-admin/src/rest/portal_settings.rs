//! The Developer Portal's public catalogue: whether callers without credentials may list
//! and read the visible APIs (`anonymousBrowsing`, on by default as in WSO2's portal; an
//! admin turns it off at `/api/am/admin/v1/settings/devportal`), the public summary a
//! visitor's page reads (`/api/am/devportal/v1/settings`), and the [`PortalReader`]
//! extractor the catalogue's read handlers take. Credentials that are sent are always
//! checked: a bad token is a 401 even while anonymous browsing is on.

use axum::extract::{FromRequestParts, State};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use http::request::Parts;
use serde_json::{json, Value};

use crate::auth::{Admin, Caller, Portal};
use crate::error::{ApiError, ApiResult};
use crate::http::JsonBody;
use crate::validate::Fields;
use crate::AppState;

const KEY: &str = "devportal";

pub fn admin_routes() -> Router<AppState> {
    Router::new().route("/settings/devportal", get(get_settings).put(put_settings))
}

/// `GET /api/am/devportal/v1/settings`, without credentials: what a visitor's page needs
/// to know before signing in (may it browse, may it sign up). A 401 there would make
/// browsers ask for a Basic password, so the page asks this instead of probing.
pub fn devportal_routes() -> Router<AppState> {
    Router::new().route("/settings", get(public_settings))
}

async fn public_settings(State(s): State<AppState>) -> ApiResult<Response> {
    let signup = crate::rest::users::signup_settings(&s).await?;
    Ok(axum::Json(json!({
        "anonymousBrowsing": settings(&s).await?["anonymousBrowsing"] == true,
        "selfSignup": signup["enabled"] == true,
    }))
    .into_response())
}

async fn settings(s: &AppState) -> ApiResult<Value> {
    Ok(s.inner
        .store
        .setting(KEY)
        .await?
        .unwrap_or_else(|| json!({"anonymousBrowsing": true})))
}

async fn get_settings(State(s): State<AppState>, _caller: Admin) -> ApiResult<Response> {
    Ok(axum::Json(settings(&s).await?).into_response())
}

async fn put_settings(
    State(s): State<AppState>,
    Admin(caller): Admin,
    JsonBody(v): JsonBody,
) -> ApiResult<Response> {
    let mut f = Fields::new(&v, "");
    let anonymous = f.boolean("anonymousBrowsing");
    f.finish_unknown();
    f.into_result()?;
    // Read inside the write transaction, so a concurrent change is not undone.
    let mut tx = s.inner.store.begin_write().await?;
    let current = tx
        .setting(KEY)
        .await?
        .is_none_or(|c| c["anonymousBrowsing"] == true);
    let value = json!({ "anonymousBrowsing": anonymous.unwrap_or(current) });
    tx.set_setting(KEY, &value).await?;
    tx.commit(&caller.name, "developer portal settings").await?;
    Ok(axum::Json(value).into_response())
}

/// A reader of the public catalogue: a signed-in user with `apim:subscribe`, or nobody
/// (`None`) when the request carries no credentials and anonymous browsing is on.
pub struct PortalReader(#[allow(dead_code)] pub Option<Caller>);

impl FromRequestParts<AppState> for PortalReader {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        if parts.headers.contains_key(http::header::AUTHORIZATION) {
            let Portal(caller) = Portal::from_request_parts(parts, state).await?;
            return Ok(PortalReader(Some(caller)));
        }
        if settings(state).await?["anonymousBrowsing"] == true {
            Ok(PortalReader(None))
        } else {
            Err(ApiError::unauthorized())
        }
    }
}
