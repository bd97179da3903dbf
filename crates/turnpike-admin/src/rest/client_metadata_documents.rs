//! The key manager's client ID metadata documents policy (docs/security.md "Client ID
//! metadata documents"): `GET` / `PUT /api/am/admin/v1/settings/client-id-metadata-documents`
//! with `{"enabled", "allowedHosts" (exact or `*.example.com`; empty: any public host),
//! "allowPrivateAddresses" (loopback, private and link-local addresses and plain http to
//! loopback: tests and labs only), "owner", "applicationTier", "scopes", "maxClients"}`.
//! Off until an admin turns it on. Stored as one setting; the key manager reads it on each
//! authorization request of a URL client (`crate::security`), so a change applies at once.

use axum::extract::State;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;

use crate::auth::Admin;
use crate::error::ApiResult;
use crate::http::JsonBody;
use crate::rest::client_registration::{client_owner_fields, merge_setting};
use crate::security::{metadata_documents_setting as setting, METADATA_DOCUMENTS_KEY as KEY};
use crate::validate::Fields;
use crate::AppState;

const MAX_HOSTS: usize = 100;

pub fn admin_routes() -> Router<AppState> {
    Router::new().route(
        "/settings/client-id-metadata-documents",
        get(get_settings).put(put_settings),
    )
}

/// A host name, or `*.` and one: letters, digits, `-` and `.`, at most 253.
fn check_host(h: &str) -> Option<String> {
    let name = h.strip_prefix("*.").unwrap_or(h);
    let ok = !name.is_empty()
        && name.len() <= 253
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'.');
    (!ok).then(|| "a host name, or *. and one".into())
}

async fn get_settings(State(s): State<AppState>, _c: Admin) -> ApiResult<Response> {
    Ok(axum::Json(setting(s.inner.store.setting(KEY).await?)).into_response())
}

async fn put_settings(
    State(s): State<AppState>,
    Admin(caller): Admin,
    JsonBody(body): JsonBody,
) -> ApiResult<Response> {
    let mut f = Fields::new(&body, "");
    let mut changes = serde_json::Map::new();
    for field in ["enabled", "allowPrivateAddresses"] {
        if let Some(b) = f.boolean(field) {
            changes.insert(field.into(), b.into());
        }
    }
    if let Some(h) = f.strings("allowedHosts", MAX_HOSTS, check_host) {
        let lower: Vec<String> = h.iter().map(|h| h.to_ascii_lowercase()).collect();
        changes.insert("allowedHosts".into(), lower.into());
    }
    client_owner_fields(&s, &mut f, &mut changes).await;
    f.finish_unknown();
    f.into_result()?;
    let what = "client ID metadata documents";
    let v = merge_setting(&s, KEY, setting, changes, &caller.name, what).await?;
    Ok(axum::Json(v).into_response())
}
