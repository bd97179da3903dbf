//! `GET /api/am/admin/v1/export`: the environment as a declarative file (the DB-less
//! format `turnpike apply` reads): every live API as gateways receive it (gateway
//! settings, resources with scopes, `auth: none` and advanced policies, each API's
//! `auth:` when the key manager runs, the tiers it offers), every throttling policy, and
//! every application with its subscriptions and its keys BY REFERENCE (consumer key ids,
//! API key names; never a secret or a hash). Users, revocations and tokens are left out.
//! YAML, or JSON when the client asks for `application/json`.

use std::collections::HashMap;

use axum::extract::State;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use http::HeaderMap;
use turnpike_model::applications::{ApplicationSpec, KeyRef, SubscriptionRef};
use turnpike_model::GatewayFile;
use turnpike_store::Store;

use crate::auth::Admin;
use crate::error::{ApiError, ApiResult};
use crate::service::apply::MAX_APPLICATIONS;
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
    let mut exported = HashMap::new();
    for api in store.apis_by_ids(&ids).await? {
        exported.insert(api.id.clone(), (api.context.clone(), api.version.clone()));
        let auth = match secured {
            true => store.api_security(&api.id).await?,
            false => None,
        };
        let spec =
            crate::snapshot::index::entry_spec(&api, secured, auth.as_deref()).map_err(|e| {
                tracing::error!(error = %e, "control plane: export");
                ApiError::internal()
            })?;
        let mut spec = spec;
        // The default offer (what an API created without a list gets) is left implicit.
        if api.policies != ["Unlimited"] {
            spec.subscription_tiers = api.policies.clone();
        }
        apis.push(spec);
    }
    apis.sort_by(|a, b| (&a.context, &a.version).cmp(&(&b.context, &b.version)));
    let mut throttling = crate::snapshot::throttling::throttling_spec(store).await?;
    throttling.applications.clear();
    Ok(GatewayFile {
        format_version: Some(1),
        apis,
        throttling,
        applications: applications(store, &exported).await?,
        ..Default::default()
    })
}

/// Every application (by owner, then name) with its subscriptions to the exported APIs
/// (`apis`: id to context and version) and its keys by reference.
async fn applications(
    store: &Store,
    apis: &HashMap<String, (String, String)>,
) -> ApiResult<Vec<ApplicationSpec>> {
    let cap = MAX_APPLICATIONS as i64;
    let page = store.list_applications(None, None, cap, 0).await?;
    if page.total > cap {
        return Err(ApiError::bad_request(format!(
            "{} applications; an export holds at most {cap}",
            page.total
        )));
    }
    let mut out = Vec::new();
    for app in page.items {
        let subs = store
            .list_subscriptions(Some(app.id.as_str()), None, cap, 0)
            .await?;
        let mut subscriptions: Vec<SubscriptionRef> = subs
            .items
            .into_iter()
            .filter_map(|sub| {
                let (context, version) = apis.get(&sub.api_id)?.clone();
                Some(SubscriptionRef {
                    context,
                    version,
                    tier: sub.throttling_policy,
                })
            })
            .collect();
        subscriptions.sort_by(|a, b| (&a.context, &a.version).cmp(&(&b.context, &b.version)));
        let clients = store.oauth_clients(&app.id).await?;
        let mut keys: Vec<KeyRef> = clients
            .into_iter()
            .map(|c| KeyRef {
                key_type: c.key_type,
                consumer_key: Some(c.client_id),
                api_key: None,
            })
            .collect();
        keys.extend(store.api_keys(&app.id).await?.into_iter().map(|k| KeyRef {
            key_type: k.key_type,
            consumer_key: None,
            api_key: Some(k.name),
        }));
        out.push(ApplicationSpec {
            name: app.name,
            owner: app.owner,
            tier: Some(app.throttling_policy),
            description: app.description,
            subscriptions,
            keys,
        });
    }
    out.sort_by(|a, b| (&a.owner, &a.name).cmp(&(&b.owner, &b.name)));
    Ok(out)
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
