//! `GET /api/am/admin/v1/export`: the environment as a declarative file (the DB-less
//! format `turnpike apply` reads): every live API as gateways receive it (gateway
//! settings, resources with scopes, `auth: none` and advanced policies, each API's
//! `auth:` when the key manager runs) and every throttling policy. What belongs to one
//! environment's users is left out: applications and their tiers, subscriptions, keys,
//! revocations. YAML, or JSON when the client asks for `application/json`.

use axum::extract::State;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use http::HeaderMap;
use turnpike_model::GatewayFile;

use crate::auth::Admin;
use crate::error::{ApiError, ApiResult};
use crate::AppState;

pub fn routes() -> Router<AppState> {
    Router::new().route("/export", get(export))
}

/// The file (APIs sorted by context, then version).
pub async fn file(s: &AppState) -> ApiResult<GatewayFile> {
    let store = &s.inner.store;
    let ids: Vec<String> = store
        .live_api_revisions()
        .await?
        .into_iter()
        .map(|(id, _)| id)
        .collect();
    let secured = s.inner.security.get().is_some();
    let mut apis = Vec::new();
    for api in store.apis_by_ids(&ids).await? {
        let auth = match secured {
            true => store.api_security(&api.id).await?,
            false => None,
        };
        let spec =
            crate::snapshot::index::entry_spec(&api, secured, auth.as_deref()).map_err(|e| {
                tracing::error!(error = %e, "control plane: export");
                ApiError::internal()
            })?;
        apis.push(spec);
    }
    apis.sort_by(|a, b| (&a.context, &a.version).cmp(&(&b.context, &b.version)));
    let mut throttling = crate::snapshot::throttling::throttling_spec(store).await?;
    throttling.applications.clear();
    Ok(GatewayFile {
        format_version: Some(1),
        apis,
        throttling,
        ..Default::default()
    })
}

async fn export(
    State(s): State<AppState>,
    _caller: Admin,
    headers: HeaderMap,
) -> ApiResult<Response> {
    let file = file(&s).await?;
    let json = headers
        .get(http::header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|a| a.contains("application/json"));
    if json {
        return Ok(axum::Json(file).into_response());
    }
    let text = serde_yaml::to_string(&file).map_err(|_| ApiError::internal())?;
    Ok(([(http::header::CONTENT_TYPE, "application/yaml")], text).into_response())
}
