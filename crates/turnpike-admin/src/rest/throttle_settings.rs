//! Throttling settings that belong to no tier, the declarative file's
//! `throttling.unauthenticated_tier` and `throttling.headers`: `GET` / `PUT
//! /api/am/admin/v1/settings/throttling` with `{"unauthenticatedTier": "Bronze" | null,
//! "rateLimitHeaders": "ietf" | "legacy" | "both" | "none"}`. Every snapshot carries them
//! (`crate::snapshot::throttling`), `export` writes them and `apply` sets them.

use axum::extract::State;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use serde_json::{json, Value};
use turnpike_model::throttling::{HeaderStyle, ThrottleSpec};
use turnpike_store::Store;

use crate::auth::Admin;
use crate::error::{ApiError, ApiResult, FieldError};
use crate::http::JsonBody;
use crate::snapshot::throttling::{apply_to, throttling_spec, SETTINGS_KEY};
use crate::validate::Fields;
use crate::AppState;

pub fn admin_routes() -> Router<AppState> {
    Router::new().route("/settings/throttling", get(get_settings).put(put_settings))
}

fn style_name(h: HeaderStyle) -> Value {
    serde_json::to_value(h).unwrap_or(Value::Null)
}

/// The stored settings as the REST body (defaults filled in).
pub(crate) async fn current(store: &Store) -> ApiResult<Value> {
    let mut spec = ThrottleSpec::default();
    apply_to(store, &mut spec).await?;
    Ok(json!({
        "unauthenticatedTier": spec.unauthenticated_tier,
        "rateLimitHeaders": style_name(spec.headers),
    }))
}

async fn get_settings(State(s): State<AppState>, _c: Admin) -> ApiResult<Response> {
    Ok(axum::Json(current(&s.inner.store).await?).into_response())
}

async fn put_settings(
    State(s): State<AppState>,
    Admin(caller): Admin,
    JsonBody(v): JsonBody,
) -> ApiResult<Response> {
    let mut f = Fields::new(&v, "");
    let tier = match v.get("unauthenticatedTier") {
        None | Some(Value::Null) => None,
        Some(_) => f.string("unauthenticatedTier", false, 100),
    };
    let headers = match f.string("rateLimitHeaders", false, 10) {
        None => HeaderStyle::default(),
        Some(h) => match serde_json::from_value::<HeaderStyle>(json!(h)) {
            Ok(style) => style,
            Err(_) => {
                f.err("rateLimitHeaders", "must be ietf, legacy, both or none");
                HeaderStyle::default()
            }
        },
    };
    f.finish_unknown();
    f.into_result()?;
    // The tier must be one the gateways know: checked by compiling the throttling
    // section as it would be sent.
    let mut spec = throttling_spec(&s.inner.store).await?;
    spec.unauthenticated_tier = tier.clone();
    spec.headers = headers;
    let file = turnpike_model::GatewayFile {
        throttling: spec,
        ..Default::default()
    };
    if let Err(e) = turnpike_config::check(file, 0) {
        let errors: Vec<FieldError> = e
            .problems()
            .iter()
            .map(|p| FieldError {
                field: if p.path.contains("unauthenticated_tier") {
                    "unauthenticatedTier".into()
                } else {
                    p.path.clone()
                },
                message: p.message.clone(),
            })
            .collect();
        return Err(ApiError::invalid(errors));
    }
    let value = json!({"unauthenticatedTier": tier, "rateLimitHeaders": style_name(headers)});
    let mut tx = s.inner.store.begin_write().await?;
    tx.set_setting(SETTINGS_KEY, &value).await?;
    tx.commit(&caller.name, "throttling settings").await?;
    Ok(axum::Json(value).into_response())
}
