//! `/api/am/admin/v1`: throttling tiers (subscription, application, advanced) (users and
//! applications: `users.rs`), the gateways that follow this control plane, and the key manager's
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
use crate::error::{ApiError, ApiResult};
use crate::http::{
    body_etag, if_match, json_with_etag, read_modify_write, revision_etag, with_etag, JsonBody,
};
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
            get(get_tier)
                .put(update_tier)
                .patch(patch_tier)
                .delete(delete_tier),
        )
        .route("/gateways", get(gateways))
        .route("/keys", get(list_keys))
        .route("/keys/rotate", post(rotate_keys))
}

/// `/api/am/publisher/v1/throttling-policies/{kind}`: the tiers a publisher offers on an
/// API (WSO2's `throttling-policies/subscription`), read-only, for API viewers.
pub fn publisher_routes() -> Router<AppState> {
    Router::new().route("/throttling-policies/{kind}", get(publisher_tiers))
}

/// `/api/am/devportal/v1/throttling-policies/{kind}`: the tiers with their limits
/// (requests, burst, token budgets), for subscribers choosing one (WSO2's DevPortal
/// `throttling-policies/{policyLevel}`).
pub fn devportal_routes() -> Router<AppState> {
    Router::new().route("/throttling-policies/{kind}", get(devportal_tiers))
}

async fn devportal_tiers(
    State(s): State<AppState>,
    _caller: crate::auth::Portal,
    Path(k): Path<String>,
    headers: HeaderMap,
) -> ApiResult<Response> {
    tier_list(&s, &k, &headers).await
}

async fn publisher_tiers(
    State(s): State<AppState>,
    _caller: crate::auth::ApiViewer,
    Path(k): Path<String>,
    headers: HeaderMap,
) -> ApiResult<Response> {
    tier_list(&s, &k, &headers).await
}

/// The tiers of family `k`, with an ETag.
async fn tier_list(s: &AppState, k: &str, headers: &HeaderMap) -> ApiResult<Response> {
    let tiers = s.inner.store.list_tiers(kind(k)?).await?;
    let body = json!({"count": tiers.len(), "list": tiers});
    Ok(json_with_etag(headers, body_etag(&body), &body))
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
    tier_list(&s, &k, &headers).await
}

/// A tier from a body; fields it leaves out keep `current`'s values (a `PUT`) or take
/// their defaults. `requestCount` or `dataAmount` (bytes) per `unitSeconds` (neither:
/// unlimited); subscription tiers add `burst` (`{"requests", "per": "second"|"minute"}`)
/// and `stopOnQuota` (false: a billing tier, over-quota requests pass flagged);
/// advanced policies add `conditionalGroups` (the declarative file's groups:
/// `{"name", "conditions": [{"type": "ip"|"header"|"query"|"claim", ...}], "limit"}`);
/// every family may add `tokenLimits`, an LLM API's token budgets (the file's
/// `tokens:`: `[{"total"|"prompt"|"completion": N, "per", "every", "by"}]`).
pub(crate) fn tier_body(
    v: &serde_json::Value,
    kind: TierKind,
    name: Option<&str>,
    current: Option<&Tier>,
) -> ApiResult<Tier> {
    let mut f = Fields::new(v, "");
    f.ignore(&["kind", "revision"]);
    let body_name = f.string("name", name.is_none(), 100);
    if let (Some(n), Some(b)) = (name, body_name.as_deref()) {
        if n != b {
            f.err("name", "must match the name in the path");
        }
    }
    let description = f
        .text("description", 1000)
        .or_else(|| current.map(|c| c.description.clone()))
        .unwrap_or_default();
    let given = |k: &str| v.get(k).is_some_and(|x| !x.is_null());
    let keep_limit = !given("requestCount") && !given("dataAmount");
    let mut options = current.map(|c| c.options.clone()).unwrap_or_default();
    let request_count = f
        .integer("requestCount", 1, i64::MAX / 2)
        .or_else(|| current.filter(|_| keep_limit).and_then(|c| c.request_count));
    match f.integer("dataAmount", 1, i64::MAX / 2) {
        Some(bytes) => {
            if given("requestCount") {
                f.err("dataAmount", "give requestCount or dataAmount, not both");
            }
            options.insert("dataAmount".into(), json!(bytes));
        }
        None if !keep_limit => {
            options.remove("dataAmount");
        }
        None => {}
    }
    let request_count = if options.contains_key("dataAmount") {
        None
    } else {
        request_count
    };
    let unit_seconds = f
        .integer("unitSeconds", 1, 366 * 86_400)
        .or_else(|| current.map(|c| c.unit_seconds))
        .unwrap_or(60);
    tier_extras(&mut f, kind, &mut options);
    token_limits(&mut f, &mut options);
    f.finish_unknown();
    f.into_result()?;
    Ok(Tier {
        kind,
        name: name.map(str::to_string).or(body_name).unwrap_or_default(),
        description,
        request_count,
        unit_seconds,
        options,
        revision: 0,
    })
}

/// `burst`, `stopOnQuota` and `models` (subscription tiers), `conditionalGroups`
/// (advanced policies), checked against the declarative file's types.
fn tier_extras(f: &mut Fields<'_>, kind: TierKind, options: &mut turnpike_store::Options) {
    use turnpike_model::throttling::{BurstLimit, ConditionGroup};
    let fields: [(&'static str, TierKind); 4] = [
        ("burst", TierKind::Subscription),
        ("stopOnQuota", TierKind::Subscription),
        ("models", TierKind::Subscription),
        ("conditionalGroups", TierKind::Advanced),
    ];
    for (field, only) in fields {
        let Some(value) = f.value(field) else {
            continue;
        };
        if kind != only {
            f.err(field, format!("only {} tiers have it", only.as_str()));
            continue;
        }
        let checked = match field {
            "burst" => json_as::<BurstLimit>(value),
            "stopOnQuota" => json_as::<bool>(value),
            "models" => allowed_models(value),
            _ => json_as::<Vec<ConditionGroup>>(value),
        };
        match checked {
            Ok(()) => {
                options.insert(field.into(), value.clone());
            }
            Err(e) => f.err(field, e),
        }
    }
}

/// Whether `value` reads as a `T`, or why not.
fn json_as<T: serde::de::DeserializeOwned>(value: &serde_json::Value) -> Result<(), String> {
    serde_json::from_value::<T>(value.clone())
        .map(|_| ())
        .map_err(|e| e.to_string())
}

/// A tier's `models`: at most 1000 names of 1 to 256 bytes.
fn allowed_models(value: &serde_json::Value) -> Result<(), String> {
    let names = serde_json::from_value::<Vec<String>>(value.clone()).map_err(|e| e.to_string())?;
    if names.len() > 1000 || names.iter().any(|n| n.is_empty() || n.len() > 256) {
        return Err("at most 1000 model names, each 1 to 256 bytes".into());
    }
    Ok(())
}

/// `tokenLimits`: checked as the file's `tokens:` is (every problem named with its
/// entry, `tokenLimits[1]`); `[]` removes them (left out, a `PUT` keeps them).
fn token_limits(f: &mut Fields<'_>, options: &mut turnpike_store::Options) {
    use turnpike_model::throttling::TokenLimit;
    let Some(value) = f.value("tokenLimits") else {
        return;
    };
    let limits = match serde_json::from_value::<Vec<TokenLimit>>(value.clone()) {
        Ok(l) => l,
        Err(e) => return f.err("tokenLimits", e.to_string()),
    };
    let problems = turnpike_throttle::token_limit_problems(&limits);
    for p in &problems {
        // `tokens[1]: ...` as the REST field `tokenLimits[1]`.
        let (at, message) = p.split_once(": ").unwrap_or(("tokens", p));
        f.err(&at.replacen("tokens", "tokenLimits", 1), message);
    }
    if !problems.is_empty() {
        return;
    }
    match limits.is_empty() {
        true => options.remove("tokenLimits"),
        false => options.insert("tokenLimits".into(), value.clone()),
    };
}

async fn create_tier(
    State(s): State<AppState>,
    Admin(caller): Admin,
    Path(k): Path<String>,
    JsonBody(mut v): JsonBody,
) -> ApiResult<Response> {
    crate::import::wso2_aliases::tier(&mut v);
    let t = tier_body(&v, kind(&k)?, None, None)?;
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
    JsonBody(mut v): JsonBody,
) -> ApiResult<Response> {
    crate::import::wso2_aliases::tier(&mut v);
    let if_match = if_match(&headers, &name)?;
    let family = kind(&k)?;
    let (s, caller, name, v) = (&s, &caller, &name, &v);
    read_modify_write(if_match, move || async move {
        let current = s.inner.store.get_tier(family, name).await?;
        let expected = if_match.or(Some(current.revision));
        let t = tier_body(v, family, Some(name), Some(&current))?;
        store_tier(s, &caller.name, t, expected).await
    })
    .await
}

/// A JSON Merge Patch of a tier (`null` restores a default: `requestCount: null` makes
/// it unlimited).
async fn patch_tier(
    State(s): State<AppState>,
    Admin(caller): Admin,
    Path((k, name)): Path<(String, String)>,
    headers: HeaderMap,
    JsonBody(mut patch): JsonBody,
) -> ApiResult<Response> {
    crate::import::wso2_aliases::tier(&mut patch);
    let if_match = if_match(&headers, &name)?;
    let family = kind(&k)?;
    let (s, caller, name, patch) = (&s, &caller, &name, &patch);
    read_modify_write(if_match, move || async move {
        let current = s.inner.store.get_tier(family, name).await?;
        let expected = if_match.or(Some(current.revision));
        let mut body = serde_json::to_value(&current).map_err(|_| ApiError::internal())?;
        crate::merge::merge_patch(&mut body, patch);
        let t = tier_body(&body, family, Some(name), None)?;
        store_tier(s, &caller.name, t, expected).await
    })
    .await
}

async fn store_tier(
    s: &AppState,
    actor: &str,
    t: Tier,
    expected: Option<i64>,
) -> ApiResult<Response> {
    let mut tx = s.inner.store.begin_write().await?;
    let t = tx.update_tier(&t, expected).await?;
    tx.commit(
        actor,
        &format!("update {} tier {}", t.kind.as_str(), t.name),
    )
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

async fn gateways(
    State(s): State<AppState>,
    _caller: Admin,
    Query(q): Query<HashMap<String, String>>,
) -> ApiResult<Response> {
    use crate::snapshot::convergence;
    let max_lag = match q.get("maxLag") {
        None => convergence::default_max_lag(&s),
        Some(v) => v
            .parse::<f64>()
            .ok()
            .filter(|x| x.is_finite() && (0.0..=86_400.0 * 365.0).contains(x))
            .map(std::time::Duration::from_secs_f64)
            .ok_or_else(|| ApiError::bad_request("maxLag is seconds, 0 to one year"))?,
    };
    let (version, list) = convergence::views(&s, max_lag).await?;
    let lagging = list.iter().filter(|g| g.lagging).count();
    Ok(axum::Json(json!({
        "controlPlaneVersion": version,
        "maxLagMs": max_lag.as_millis() as u64,
        "lagging": lagging,
        "count": list.len(),
        "list": list
    }))
    .into_response())
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
