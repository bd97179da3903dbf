//! `/api/am/publisher/v1`: APIs (create, import OpenAPI 3, update, delete, copy as a new
//! version), lifecycle changes along WSO2's table, definitions, and the subscriptions of an
//! API (block / unblock). Needs the publisher role (admin implies it).

use std::collections::HashMap;

use axum::extract::{Path, Query, State};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use http::{HeaderMap, StatusCode};
use serde_json::{json, Value};
use turnpike_store::{ApiFilter, LifecycleAction, LifecycleState, SubscriptionState};

use crate::auth::{ApiCreator, ApiPublisher, ApiViewer, Caller, SubscriptionBlocker};
use crate::error::{ApiError, ApiResult, FieldError};
use crate::http::{if_match, read, read_modify_write, written, JsonBody, Paged};
use crate::service::api::{insert_api, patch_once, store_update, validated};
use crate::service::api_body::parse_api;
use crate::AppState;

pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/apis", get(list_apis).post(create_api))
        .route("/apis/copy-api", post(copy_api))
        .route("/apis/change-lifecycle", post(change_lifecycle))
        .route(
            "/apis/{id}",
            get(get_api)
                .put(update_api)
                .patch(patch_api)
                .delete(delete_api),
        )
        .route("/apis/{id}/lifecycle-state", get(lifecycle_state))
        .route("/apis/{id}/swagger", get(definition))
        .route(
            "/apis/{id}/mediation/try",
            post(crate::rest::mediation_try::try_mediation),
        )
        .route("/apis/{id}/cache/purge", post(purge_cache))
        .route("/subscriptions", get(list_subscriptions))
        .route(
            "/subscriptions/block-subscription",
            post(block_subscription),
        )
        .route(
            "/subscriptions/unblock-subscription",
            post(unblock_subscription),
        )
        .merge(crate::import::routes())
}

pub(crate) fn filter_from(q: &HashMap<String, String>) -> ApiResult<ApiFilter> {
    let mut states = Vec::new();
    if let Some(s) = q.get("state") {
        for part in s.split(',') {
            states.push(LifecycleState::parse(part).ok_or_else(|| {
                ApiError::invalid(vec![FieldError {
                    field: "state".into(),
                    message: format!("unknown state {part:?}"),
                }])
            })?);
        }
    }
    Ok(ApiFilter {
        query: q.get("query").cloned(),
        name: q.get("name").cloned(),
        context: q.get("context").cloned(),
        states,
    })
}

async fn list_apis(
    State(s): State<AppState>,
    _caller: ApiViewer,
    pg: Paged,
    headers: HeaderMap,
) -> ApiResult<Response> {
    let apis = s
        .inner
        .store
        .list_apis(&filter_from(&pg.q)?, pg.limit, pg.offset)
        .await?;
    Ok(pg.respond(&headers, apis))
}

async fn create_api(
    State(s): State<AppState>,
    ApiCreator(caller): ApiCreator,
    JsonBody(v): JsonBody,
) -> ApiResult<Response> {
    let input = validated(&s, &v, None).await?;
    insert_api(&s, &caller, &input, "create").await
}

async fn get_api(
    State(s): State<AppState>,
    _caller: ApiViewer,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> ApiResult<Response> {
    let api = s.inner.store.get_api(&id).await?;
    Ok(read(&headers, &api))
}

/// `PUT`: the body replaces the fields it names; fields it leaves out keep their values
/// (WSO2 clients send the whole API; a partial body resets nothing).
async fn update_api(
    State(s): State<AppState>,
    ApiCreator(caller): ApiCreator,
    Path(id): Path<String>,
    headers: HeaderMap,
    JsonBody(v): JsonBody,
) -> ApiResult<Response> {
    let if_match = if_match(&headers, &id)?;
    let (s, caller, id, v) = (&s, &caller, &id, &v);
    read_modify_write(if_match, move || async move {
        let current = s.inner.store.get_api(id).await?;
        let expected = if_match.or(Some(current.revision));
        store_update(s, caller, current, expected, v).await
    })
    .await
}

/// `PATCH`: a JSON Merge Patch (RFC 7396) of the API's JSON (`null` removes a field,
/// which then takes its default), validated as a whole.
async fn patch_api(
    State(s): State<AppState>,
    ApiCreator(caller): ApiCreator,
    Path(id): Path<String>,
    headers: HeaderMap,
    JsonBody(patch): JsonBody,
) -> ApiResult<Response> {
    let if_match = if_match(&headers, &id)?;
    let (s, caller, id, patch) = (&s, &caller, &id, &patch);
    read_modify_write(if_match, move || async move {
        let current = s.inner.store.get_api(id).await?;
        let expected = if_match.or(Some(current.revision));
        patch_once(s, caller, current, expected, patch).await
    })
    .await
}

async fn delete_api(
    State(s): State<AppState>,
    ApiCreator(caller): ApiCreator,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> ApiResult<Response> {
    let expected = if_match(&headers, &id)?;
    let mut tx = s.inner.store.begin_write().await?;
    let api = tx.delete_api(&id, expected).await?;
    tx.commit(
        &caller.name,
        &format!("delete API {} {}", api.context, api.version),
    )
    .await?;
    Ok(StatusCode::NO_CONTENT.into_response())
}

fn required_query<'a>(q: &'a HashMap<String, String>, names: &[&str]) -> ApiResult<Vec<&'a str>> {
    let mut errors = Vec::new();
    let mut out = Vec::new();
    for n in names {
        match q.get(*n).map(String::as_str).filter(|v| !v.is_empty()) {
            Some(v) => out.push(v),
            None => errors.push(FieldError {
                field: n.to_string(),
                message: "query parameter is required".into(),
            }),
        }
    }
    if errors.is_empty() {
        Ok(out)
    } else {
        Err(ApiError::invalid(errors))
    }
}

async fn copy_api(
    State(s): State<AppState>,
    ApiCreator(caller): ApiCreator,
    Query(q): Query<HashMap<String, String>>,
) -> ApiResult<Response> {
    let v = required_query(&q, &["apiId", "newVersion"])?;
    let (id, version) = (v[0], v[1]);
    let probe = json!({"name": "x", "context": "/x", "version": version});
    let (_, pf) = parse_api(&probe, None);
    if !pf.errors.is_empty() {
        return Err(ApiError::invalid(vec![FieldError {
            field: "newVersion".into(),
            message: pf.errors[0].message.clone(),
        }]));
    }
    let is_default = match q.get("defaultVersion").map(String::as_str) {
        None | Some("false") => false,
        Some("true") => true,
        Some(_) => {
            return Err(ApiError::invalid(vec![FieldError {
                field: "defaultVersion".into(),
                message: "must be true or false".into(),
            }]))
        }
    };
    // The new version is secured as the old one is (resource scopes travel with the
    // resources); read before the write so the copy commits in one transaction.
    let auth = s.inner.store.api_security(id).await?;
    let mut tx = s.inner.store.begin_write().await?;
    let api = tx
        .new_version(id, version, is_default, &caller.name)
        .await?;
    if auth.is_some() {
        tx.set_api_security(&api.id, auth.as_deref()).await?;
    }
    tx.commit(
        &caller.name,
        &format!("new version {} {}", api.context, api.version),
    )
    .await?;
    Ok(written(StatusCode::CREATED, &api))
}

async fn change_lifecycle(
    State(s): State<AppState>,
    ApiPublisher(caller): ApiPublisher,
    Query(q): Query<HashMap<String, String>>,
    headers: HeaderMap,
) -> ApiResult<Response> {
    let v = required_query(&q, &["apiId", "action"])?;
    let (id, action) = (v[0], v[1]);
    let action = LifecycleAction::parse(action).ok_or_else(|| {
        let names: Vec<&str> = LifecycleAction::ALL.iter().map(|a| a.as_str()).collect();
        ApiError::invalid(vec![FieldError {
            field: "action".into(),
            message: format!("must be one of {names:?}"),
        }])
    })?;
    let expected = if_match(&headers, id)?;
    let mut tx = s.inner.store.begin_write().await?;
    let api = tx.change_lifecycle(id, action, expected).await?;
    tx.commit(
        &caller.name,
        &format!("{} API {} {}", action.as_str(), api.context, api.version),
    )
    .await?;
    Ok(written(StatusCode::OK, &api))
}

async fn lifecycle_state(
    State(s): State<AppState>,
    _caller: ApiViewer,
    Path(id): Path<String>,
) -> ApiResult<Response> {
    let api = s.inner.store.get_api(&id).await?;
    let actions: Vec<&str> = api
        .lifecycle_status
        .allowed_actions()
        .into_iter()
        .map(|a| a.as_str())
        .collect();
    Ok(
        axum::Json(json!({"state": api.lifecycle_status, "availableTransitions": actions}))
            .into_response(),
    )
}

pub(crate) fn definition_response(api: &turnpike_store::Api) -> Response {
    if let Some(doc) = crate::import::wsdl::openapi_of(api) {
        return axum::Json(doc).into_response();
    }
    match &api.definition {
        Some(text) => match serde_json::from_str::<Value>(text) {
            Ok(v) => axum::Json(v).into_response(),
            Err(_) => (
                [(http::header::CONTENT_TYPE, "application/yaml")],
                text.clone(),
            )
                .into_response(),
        },
        None => axum::Json(crate::import::openapi::generate(api)).into_response(),
    }
}

/// The definition as JSON with `servers` replaced (the DevPortal's gateway URLs).
pub(crate) fn definition_with_servers(api: &turnpike_store::Api, servers: Value) -> Response {
    axum::Json(definition_value(api, servers)).into_response()
}

/// The document the DevPortal serves: the definition, `servers` the gateway URLs.
pub(crate) fn definition_value(api: &turnpike_store::Api, servers: Value) -> Value {
    let mut doc = match &api.definition {
        Some(text) => serde_yaml::from_str::<Value>(text)
            .unwrap_or_else(|_| crate::import::openapi::generate(api)),
        None => crate::import::openapi::generate(api),
    };
    if let Some(o) = doc.as_object_mut() {
        o.insert("servers".into(), servers);
    }
    doc
}

async fn definition(
    State(s): State<AppState>,
    _caller: ApiViewer,
    Path(id): Path<String>,
) -> ApiResult<Response> {
    let api = s.inner.store.get_api(&id).await?;
    Ok(definition_response(&api))
}

async fn list_subscriptions(
    State(s): State<AppState>,
    _caller: ApiViewer,
    pg: Paged,
    headers: HeaderMap,
) -> ApiResult<Response> {
    let subs = s
        .inner
        .store
        .list_subscriptions(
            None,
            pg.q.get("apiId").map(String::as_str),
            pg.limit,
            pg.offset,
        )
        .await?;
    // Each row names its application (a publisher knows applications by name).
    let ids: Vec<&str> = subs
        .items
        .iter()
        .map(|x| x.application_id.as_str())
        .collect();
    let names = s.inner.store.application_names(&ids).await?;
    let mut items = Vec::with_capacity(subs.items.len());
    for x in &subs.items {
        let mut v = serde_json::to_value(x).map_err(|_| ApiError::internal())?;
        v["applicationName"] = json!(names.get(&x.application_id));
        items.push(v);
    }
    Ok(pg.respond(
        &headers,
        turnpike_store::Page {
            total: subs.total,
            items,
        },
    ))
}

async fn set_sub_state(
    s: &AppState,
    caller: &Caller,
    id: &str,
    state: SubscriptionState,
    headers: &HeaderMap,
) -> ApiResult<Response> {
    let expected = if_match(headers, id)?;
    let mut tx = s.inner.store.begin_write().await?;
    let sub = tx.set_subscription_state(id, state, expected).await?;
    tx.commit(
        &caller.name,
        &format!("subscription {id} -> {}", state.as_str()),
    )
    .await?;
    Ok(written(StatusCode::OK, &sub))
}

async fn block_subscription(
    State(s): State<AppState>,
    SubscriptionBlocker(caller): SubscriptionBlocker,
    Query(q): Query<HashMap<String, String>>,
    headers: HeaderMap,
) -> ApiResult<Response> {
    let v = required_query(&q, &["subscriptionId", "blockState"])?;
    let state = match v[1] {
        "BLOCKED" => SubscriptionState::Blocked,
        "PROD_ONLY_BLOCKED" => SubscriptionState::ProdOnlyBlocked,
        _ => {
            return Err(ApiError::invalid(vec![FieldError {
                field: "blockState".into(),
                message: "must be BLOCKED or PROD_ONLY_BLOCKED".into(),
            }]))
        }
    };
    set_sub_state(&s, &caller, v[0], state, &headers).await
}

async fn unblock_subscription(
    State(s): State<AppState>,
    SubscriptionBlocker(caller): SubscriptionBlocker,
    Query(q): Query<HashMap<String, String>>,
    headers: HeaderMap,
) -> ApiResult<Response> {
    let v = required_query(&q, &["subscriptionId"])?;
    set_sub_state(&s, &caller, v[0], SubscriptionState::Active, &headers).await
}

/// `POST /apis/{id}/cache/purge` (`{}`, `{"prefix": "/orders/"}` or `{"tag": "t"}`):
/// appends the purge to the API's `cacheConfiguration`, so it reaches every gateway with
/// the next snapshot (each applies it once). 202: the purge, with its id.
async fn purge_cache(
    State(s): State<AppState>,
    ApiCreator(caller): ApiCreator,
    Path(id): Path<String>,
    JsonBody(v): JsonBody,
) -> ApiResult<Response> {
    use crate::service::cache_body::{purge_of, with_purge};
    let (prefix, tag) = purge_of(&v)?;
    let (s, caller, id) = (&s, &caller, &id);
    let (prefix, tag) = (&prefix, &tag);
    let done = read_modify_write(None, move || async move {
        let current = s.inner.store.get_api(id).await?;
        let stored = current.options.get(turnpike_model::rest::cache::FIELD);
        let (config, purge) = with_purge(stored, prefix.clone(), tag.clone(), now_ms())?;
        let expected = Some(current.revision);
        let patch = json!({ turnpike_model::rest::cache::FIELD: config });
        patch_once(s, caller, current, expected, &patch).await?;
        Ok((StatusCode::ACCEPTED, axum::Json(json!(purge))).into_response())
    })
    .await?;
    Ok(done)
}

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}
