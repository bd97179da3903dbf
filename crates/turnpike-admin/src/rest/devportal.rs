//! `/api/am/devportal/v1`: the developer portal. Lists and searches the APIs subscribers
//! may see (published, prototyped, deprecated), their definitions; applications owned by
//! the caller; subscriptions with a tier. Any authenticated user (bearer tokens need
//! `apim:subscribe`: the [`Portal`] extractor); the catalogue (APIs and their
//! definitions) also to anonymous callers while anonymous browsing is on
//! ([`PortalReader`]); applications and subscriptions are scoped
//! to their owner (admins see all): [`OwnApp`] for `/applications/{id}/...`.

use std::collections::HashMap;

use axum::extract::{FromRequestParts, Path, State};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use http::{HeaderMap, StatusCode};
use turnpike_store::{Api, Application, LifecycleState};

use crate::auth::{Caller, Portal};
use crate::error::{ApiError, ApiResult, FieldError};
use crate::http::{if_match, read, read_modify_write, written, JsonBody, Paged};
use crate::rest::portal_settings::PortalReader;
use crate::validate::Fields;
use crate::AppState;

pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/apis", get(list_apis))
        .route("/apis/{id}", get(get_api))
        .route("/apis/{id}/swagger", get(definition))
        .route("/applications", get(list_apps).post(create_app))
        .route(
            "/applications/{id}",
            get(get_app)
                .put(update_app)
                .patch(patch_app)
                .delete(delete_app),
        )
        .route("/subscriptions", get(list_subs).post(subscribe))
        .route("/subscriptions/{id}", get(get_sub).delete(unsubscribe))
}

pub(crate) async fn visible_api(s: &AppState, id: &str) -> ApiResult<Api> {
    let api = s.inner.store.get_api(id).await?;
    if !api.lifecycle_status.is_visible() {
        return Err(ApiError::not_found(format!("API {id}")));
    }
    Ok(api)
}

/// The query's filter, its states narrowed to those developers see (none left: none
/// match).
pub(crate) fn visible_filter(q: &HashMap<String, String>) -> ApiResult<turnpike_store::ApiFilter> {
    let mut filter = crate::rest::publisher::filter_from(q)?;
    let visible = [
        LifecycleState::Published,
        LifecycleState::Prototyped,
        LifecycleState::Deprecated,
    ];
    filter.states = if filter.states.is_empty() {
        visible.to_vec()
    } else {
        filter
            .states
            .into_iter()
            .filter(|s| visible.contains(s))
            .collect()
    };
    Ok(filter)
}

async fn list_apis(
    State(s): State<AppState>,
    _caller: PortalReader,
    pg: Paged,
    headers: HeaderMap,
) -> ApiResult<Response> {
    let filter = visible_filter(&pg.q)?;
    let apis = if filter.states.is_empty() {
        turnpike_store::Page {
            total: 0,
            items: Vec::new(),
        }
    } else {
        s.inner
            .store
            .list_apis(&filter, pg.limit, pg.offset)
            .await?
    };
    let envs = crate::rest::environments::list(&s).await?;
    let page = turnpike_store::Page {
        total: apis.total,
        items: apis.items.iter().map(|a| portal_json(&envs, a)).collect(),
    };
    Ok(pg.respond(&headers, page))
}

/// An API as subscribers see it: its gateway URLs per environment (`endpointURLs`), not
/// its back end's, and none of the publisher's gateway settings (transformations may hold
/// the back end's credentials, hosts and timeouts are the operator's) but the deprecation
/// notice and, for a GraphQL API, its schema, operations and per-tier limits.
fn portal_json(envs: &serde_json::Value, api: &Api) -> serde_json::Value {
    let mut v = serde_json::to_value(api).unwrap_or_default();
    if let Some(o) = v.as_object_mut() {
        o.remove("endpoints");
        o.remove("sandboxEndpoints");
        for (field, _) in turnpike_model::rest::OPTION_FIELDS {
            if field != "deprecation" && field != "graphql" {
                o.remove(field);
            }
        }
        o.remove(turnpike_model::rest::cors::FIELD);
        o.remove(turnpike_model::rest::cache::FIELD);
        if let Some(g) = o.get_mut("graphql").and_then(|g| g.as_object_mut()) {
            g.retain(|k, _| matches!(k.as_str(), "schema" | "operations" | "limits" | "tiers"));
        }
        o.insert(
            "endpointURLs".into(),
            crate::rest::environments::endpoint_urls(envs, api),
        );
    }
    v
}

async fn get_api(
    State(s): State<AppState>,
    _c: PortalReader,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> ApiResult<Response> {
    let api = visible_api(&s, &id).await?;
    let envs = crate::rest::environments::list(&s).await?;
    let body = portal_json(&envs, &api);
    Ok(crate::http::json_with_etag(
        &headers,
        crate::http::body_etag(&body),
        &body,
    ))
}

async fn definition(
    State(s): State<AppState>,
    _c: PortalReader,
    Path(id): Path<String>,
) -> ApiResult<Response> {
    let api = visible_api(&s, &id).await?;
    let envs = crate::rest::environments::list(&s).await?;
    Ok(crate::rest::publisher::definition_with_servers(
        &api,
        crate::rest::environments::servers(&envs, &api),
    ))
}

/// The caller's application, or 404 (not 403: do not reveal others' ids).
async fn own_app(s: &AppState, caller: &Caller, id: &str) -> ApiResult<Application> {
    let app = s.inner.store.get_application(id).await?;
    if app.owner != caller.name && !caller.is_admin() {
        return Err(ApiError::not_found(format!("application {id}")));
    }
    Ok(app)
}

/// The application named by the path's `{id}` when the caller owns it (admins: any),
/// else 404: what every `/applications/{id}/...` handler starts with.
pub(crate) struct OwnApp {
    pub caller: Caller,
    pub app: Application,
}

impl FromRequestParts<AppState> for OwnApp {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut http::request::Parts, s: &AppState) -> ApiResult<Self> {
        let Portal(caller) = Portal::from_request_parts(parts, s).await?;
        let Path(params) = Path::<HashMap<String, String>>::from_request_parts(parts, s)
            .await
            .map_err(|_| ApiError::not_found("application"))?;
        let id = params
            .get("id")
            .ok_or_else(|| ApiError::not_found("application"))?;
        let app = own_app(s, &caller, id).await?;
        Ok(OwnApp { caller, app })
    }
}

/// A subscription of one of the caller's applications; someone else's is "not found".
async fn own_subscription(
    s: &AppState,
    caller: &Caller,
    id: &str,
) -> ApiResult<turnpike_store::Subscription> {
    let sub = s.inner.store.get_subscription(id).await?;
    own_app(s, caller, &sub.application_id)
        .await
        .map_err(|_| ApiError::not_found(format!("subscription {id}")))?;
    Ok(sub)
}

/// The subscription named by the path's `{id}` when it belongs to one of the caller's
/// applications, else 404.
pub(crate) struct OwnSubscription {
    pub caller: Caller,
    pub sub: turnpike_store::Subscription,
}

impl FromRequestParts<AppState> for OwnSubscription {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut http::request::Parts, s: &AppState) -> ApiResult<Self> {
        let Portal(caller) = Portal::from_request_parts(parts, s).await?;
        let Path(id) = Path::<String>::from_request_parts(parts, s)
            .await
            .map_err(|_| ApiError::not_found("subscription"))?;
        let sub = own_subscription(s, &caller, &id).await?;
        Ok(OwnSubscription { caller, sub })
    }
}

/// (name, application tier, description) of a body; fields it leaves out keep the
/// values of `current` (a `PUT`), or take their defaults (a new application).
fn app_fields(
    v: &serde_json::Value,
    current: Option<&Application>,
) -> ApiResult<(String, String, String)> {
    let mut f = Fields::new(v, "");
    f.ignore(&["id", "owner", "revision", "createdTime", "status"]);
    let name = f
        .string("name", current.is_none(), 100)
        .or_else(|| current.map(|c| c.name.clone()));
    let tier = f
        .string("throttlingPolicy", false, 100)
        .or_else(|| current.map(|c| c.throttling_policy.clone()))
        .unwrap_or_else(|| "Unlimited".into());
    let desc = f
        .text("description", 10_000)
        .or_else(|| current.map(|c| c.description.clone()))
        .unwrap_or_default();
    if let (Some(c), Some(st)) = (current, v.get("status")) {
        if st != &serde_json::json!(c.status) {
            f.err("status", "is read-only here (admins disable applications)");
        }
    }
    f.finish_unknown();
    f.into_result()?;
    Ok((name.unwrap_or_default(), tier, desc))
}

async fn list_apps(
    State(s): State<AppState>,
    Portal(caller): Portal,
    pg: Paged,
    headers: HeaderMap,
) -> ApiResult<Response> {
    let apps = s
        .inner
        .store
        .list_applications(Some(&caller.name), None, pg.limit, pg.offset)
        .await?;
    Ok(pg.respond(&headers, apps))
}

fn tier_error(e: turnpike_store::StoreError) -> ApiError {
    match e {
        turnpike_store::StoreError::NotFound(m) if m.contains("tier") => {
            ApiError::invalid(vec![FieldError {
                field: "throttlingPolicy".into(),
                message: format!("{m} does not exist"),
            }])
        }
        other => other.into(),
    }
}

async fn create_app(
    State(s): State<AppState>,
    Portal(caller): Portal,
    JsonBody(v): JsonBody,
) -> ApiResult<Response> {
    let (name, tier, desc) = app_fields(&v, None)?;
    let mut tx = s.inner.store.begin_write().await?;
    let app = tx
        .create_application(&caller.name, &name, &tier, &desc)
        .await
        .map_err(tier_error)?;
    tx.commit(&caller.name, &format!("create application {}", app.id))
        .await?;
    Ok(written(StatusCode::CREATED, &app))
}

async fn get_app(OwnApp { app, .. }: OwnApp, headers: HeaderMap) -> ApiResult<Response> {
    Ok(read(&headers, &app))
}

/// `PUT`: fields the body leaves out keep their values.
async fn update_app(
    State(s): State<AppState>,
    OwnApp { caller, app }: OwnApp,
    headers: HeaderMap,
    JsonBody(v): JsonBody,
) -> ApiResult<Response> {
    let if_match = if_match(&headers, &app.id)?;
    let (s, caller, id, v) = (&s, &caller, &app.id, &v);
    read_modify_write(if_match, move || async move {
        let app = s.inner.store.get_application(id).await?;
        let fields = app_fields(v, Some(&app))?;
        store_app(s, caller, &app, if_match, fields).await
    })
    .await
}

/// `PATCH`: a JSON Merge Patch of the application (`null` restores a default).
async fn patch_app(
    State(s): State<AppState>,
    OwnApp { caller, app }: OwnApp,
    headers: HeaderMap,
    JsonBody(patch): JsonBody,
) -> ApiResult<Response> {
    let if_match = if_match(&headers, &app.id)?;
    let (s, caller, id, patch) = (&s, &caller, &app.id, &patch);
    read_modify_write(if_match, move || async move {
        let app = s.inner.store.get_application(id).await?;
        let mut body = serde_json::to_value(&app).map_err(|_| ApiError::internal())?;
        if patch
            .get("status")
            .is_some_and(|st| Some(st) != body.get("status"))
        {
            return Err(ApiError::invalid(vec![FieldError {
                field: "status".into(),
                message: "is read-only here (admins disable applications)".into(),
            }]));
        }
        crate::merge::merge_patch(&mut body, patch);
        let fields = app_fields(&body, None)?;
        store_app(s, caller, &app, if_match, fields).await
    })
    .await
}

/// Stores the fields if the application is still at `if_match` (or, without one, at the
/// revision `app` was read at).
async fn store_app(
    s: &AppState,
    caller: &Caller,
    app: &Application,
    if_match: Option<i64>,
    (name, tier, desc): (String, String, String),
) -> ApiResult<Response> {
    let expected = if_match.or(Some(app.revision));
    let mut tx = s.inner.store.begin_write().await?;
    let app = tx
        .update_application(&app.id, &name, &tier, &desc, expected)
        .await
        .map_err(tier_error)?;
    tx.commit(&caller.name, &format!("update application {}", app.id))
        .await?;
    Ok(written(StatusCode::OK, &app))
}

async fn delete_app(
    State(s): State<AppState>,
    OwnApp { caller, app }: OwnApp,
) -> ApiResult<Response> {
    let mut tx = s.inner.store.begin_write().await?;
    tx.delete_application(&app.id).await?;
    tx.commit(&caller.name, &format!("delete application {}", app.id))
        .await?;
    Ok(StatusCode::NO_CONTENT.into_response())
}

async fn list_subs(
    State(s): State<AppState>,
    Portal(caller): Portal,
    pg: Paged,
    headers: HeaderMap,
) -> ApiResult<Response> {
    let Some(app_id) = pg.q.get("applicationId") else {
        return Err(ApiError::invalid(vec![FieldError {
            field: "applicationId".into(),
            message: "query parameter is required".into(),
        }]));
    };
    own_app(&s, &caller, app_id).await?;
    let api_id = pg.q.get("apiId").map(String::as_str);
    let subs = s
        .inner
        .store
        .list_subscriptions(Some(app_id), api_id, pg.limit, pg.offset)
        .await?;
    Ok(pg.respond(&headers, subs))
}

async fn subscribe(
    State(s): State<AppState>,
    Portal(caller): Portal,
    JsonBody(v): JsonBody,
) -> ApiResult<Response> {
    let mut f = Fields::new(&v, "");
    f.ignore(&["id", "status", "revision", "createdTime"]);
    let app_id = f.string("applicationId", true, 64);
    let api_id = f.string("apiId", true, 64);
    let tier = f.string("throttlingPolicy", true, 100);
    f.finish_unknown();
    f.into_result()?;
    let (Some(app_id), Some(api_id), Some(tier)) = (app_id, api_id, tier) else {
        return Err(ApiError::bad_request(
            "applicationId, apiId and throttlingPolicy are required",
        ));
    };
    own_app(&s, &caller, &app_id).await?;
    visible_api(&s, &api_id).await?;
    let mut tx = s.inner.store.begin_write().await?;
    let sub = tx.subscribe(&app_id, &api_id, &tier).await?;
    tx.commit(&caller.name, &format!("subscribe {app_id} to {api_id}"))
        .await?;
    Ok(written(StatusCode::CREATED, &sub))
}

async fn get_sub(
    OwnSubscription { sub, .. }: OwnSubscription,
    headers: HeaderMap,
) -> ApiResult<Response> {
    Ok(read(&headers, &sub))
}

async fn unsubscribe(
    State(s): State<AppState>,
    OwnSubscription { caller, sub }: OwnSubscription,
    headers: HeaderMap,
) -> ApiResult<Response> {
    if let Some(r) = if_match(&headers, &sub.id)? {
        if r != sub.revision {
            return Err(turnpike_store::StoreError::PreconditionFailed.into());
        }
    }
    let mut tx = s.inner.store.begin_write().await?;
    tx.unsubscribe(&sub.id).await?;
    tx.commit(&caller.name, &format!("unsubscribe {}", sub.id))
        .await?;
    Ok(StatusCode::NO_CONTENT.into_response())
}
