//! The key manager's dynamic client registration policy (RFC 7591, docs/security.md
//! "Dynamic client registration"): `GET` / `PUT /api/am/admin/v1/settings/client-registration`
//! with `{"enabled", "initialAccessToken" (write-only: "" clears it, opening
//! registration; GET says `initialAccessTokenSet`), "owner", "applicationTier",
//! "grantTypes", "scopes", "maxClients", "perMinute"}`. Off until an admin turns it on.
//! Stored as one setting (the token as its SHA-256 only); the key manager reads it on
//! each registration (`crate::security::registration_policy`), so a change applies at
//! once, on every control plane.

use axum::extract::State;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use serde_json::Value;
use turnpike_keymanager::RegistrationPolicy;
use turnpike_store::TierKind;

use crate::auth::Admin;
use crate::error::ApiResult;
use crate::http::JsonBody;
use crate::security::{registration_setting as stored, REGISTRATION_KEY as KEY};
use crate::validate::{check_scope, Fields};
use crate::AppState;

const GRANTS: [&str; 3] = ["authorization_code", "refresh_token", "client_credentials"];

pub fn admin_routes() -> Router<AppState> {
    Router::new().route(
        "/settings/client-registration",
        get(get_settings).put(put_settings),
    )
}

/// The REST view: the token's hash never leaves.
fn view(mut v: Value) -> Value {
    let set = !v["initialAccessTokenSha256"].is_null();
    if let Some(o) = v.as_object_mut() {
        o.remove("initialAccessTokenSha256");
        o.insert("initialAccessTokenSet".into(), set.into());
    }
    v
}

async fn get_settings(State(s): State<AppState>, _c: Admin) -> ApiResult<Response> {
    let v = stored(s.inner.store.setting(KEY).await?);
    Ok(axum::Json(view(v)).into_response())
}

/// What registered clients become, in a PUT: `owner`, `applicationTier`, `scopes`,
/// `maxClients` (each optional: the current value stays; never empty), checked into
/// `changes`. Shared by the client ID metadata documents' settings.
pub(crate) async fn client_owner_fields(
    s: &AppState,
    f: &mut Fields<'_>,
    changes: &mut serde_json::Map<String, Value>,
) {
    if let Some(o) = f.string("owner", false, 100) {
        if o.is_empty() || s.inner.store.user(&o).await.is_err() {
            f.err("owner", "no such user");
        }
        changes.insert("owner".into(), o.into());
    }
    if let Some(t) = f.string("applicationTier", false, 100) {
        if t.is_empty()
            || s.inner
                .store
                .get_tier(TierKind::Application, &t)
                .await
                .is_err()
        {
            f.err("applicationTier", "no such application tier");
        }
        changes.insert("applicationTier".into(), t.into());
    }
    if let Some(sc) = f.strings("scopes", 100, check_scope) {
        changes.insert("scopes".into(), sc.into());
    }
    if let Some(n) = f.integer("maxClients", 1, 100_000) {
        changes.insert("maxClients".into(), n.into());
    }
}

async fn put_settings(
    State(s): State<AppState>,
    Admin(caller): Admin,
    JsonBody(body): JsonBody,
) -> ApiResult<Response> {
    let mut f = Fields::new(&body, "");
    let mut changes = serde_json::Map::new();
    if let Some(b) = f.boolean("enabled") {
        changes.insert("enabled".into(), b.into());
    }
    if let Some(t) = f.string("initialAccessToken", false, 512) {
        let hash = match t.is_empty() {
            true => Value::Null,
            false if t.len() < 32 => {
                f.err("initialAccessToken", "use at least 32 characters");
                Value::Null
            }
            false => RegistrationPolicy::token_sha256(&t).into(),
        };
        changes.insert("initialAccessTokenSha256".into(), hash);
    }
    client_owner_fields(&s, &mut f, &mut changes).await;
    let grant = |g: &str| (!GRANTS.contains(&g)).then(|| format!("one of {GRANTS:?}"));
    if let Some(g) = f.strings("grantTypes", 3, grant) {
        changes.insert("grantTypes".into(), g.into());
    }
    if let Some(n) = f.integer("perMinute", 1, 10_000) {
        changes.insert("perMinute".into(), n.into());
    }
    f.finish_unknown();
    f.into_result()?;
    let v = merge_setting(
        &s,
        KEY,
        stored,
        changes,
        &caller.name,
        "client registration",
    )
    .await?;
    Ok(axum::Json(view(v)).into_response())
}

/// Writes `changes` over the stored setting `key` (its defaults filled in by
/// `with_defaults`), read inside the write transaction so a concurrent change is not
/// undone; the setting as stored.
pub(crate) async fn merge_setting(
    s: &AppState,
    key: &str,
    with_defaults: fn(Option<Value>) -> Value,
    changes: serde_json::Map<String, Value>,
    user: &str,
    what: &str,
) -> ApiResult<Value> {
    let mut tx = s.inner.store.begin_write().await?;
    let mut v = with_defaults(tx.setting(key).await?);
    if let Some(o) = v.as_object_mut() {
        o.extend(changes);
    }
    tx.set_setting(key, &v).await?;
    tx.commit(user, &format!("{what} settings")).await?;
    Ok(v)
}
