//! Gateway environments: where subscribers reach the APIs (`{"name", "httpUrl",
//! "httpsUrl"}`, set with `PUT /api/am/admin/v1/settings/environments`; one `Default`
//! environment on the default ports until then). The DevPortal shows each API's gateway
//! URLs per environment (`endpointURLs`, WSO2's field) instead of its back end's, and
//! serves its OpenAPI definition with those URLs as `servers`.

use axum::extract::State;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use serde_json::{json, Value};
use turnpike_store::Api;

use crate::auth::Admin;
use crate::error::ApiResult;
use crate::http::JsonBody;
use crate::validate::Fields;
use crate::AppState;

const KEY: &str = "environments";

pub fn admin_routes() -> Router<AppState> {
    Router::new().route("/settings/environments", get(get_envs).put(put_envs))
}

fn default_envs() -> Value {
    json!([{"name": "Default", "httpUrl": "http://127.0.0.1:8280", "httpsUrl": "https://127.0.0.1:8243"}])
}

/// The configured environments.
pub async fn list(s: &AppState) -> ApiResult<Value> {
    Ok(s.inner
        .store
        .setting(KEY)
        .await?
        .unwrap_or_else(default_envs))
}

/// Sets the Default environment to the URLs a gateway started alongside the control plane
/// really listens on (`turnpike up`), unless an admin configured environments already.
pub async fn default_to(
    s: &AppState,
    http: Option<String>,
    https: Option<String>,
) -> ApiResult<()> {
    if s.inner.store.setting(KEY).await?.is_some() {
        return Ok(());
    }
    let mut env = json!({"name": "Default"});
    if let Some(u) = http {
        env["httpUrl"] = json!(u);
    }
    if let Some(u) = https {
        env["httpsUrl"] = json!(u);
    }
    let mut tx = s.inner.store.begin_write().await?;
    tx.set_setting(KEY, &json!([env])).await?;
    tx.commit("system", "gateway environments of turnpike up")
        .await?;
    Ok(())
}

async fn get_envs(State(s): State<AppState>, _c: Admin) -> ApiResult<Response> {
    Ok(axum::Json(json!({"environments": list(&s).await?})).into_response())
}

async fn put_envs(
    State(s): State<AppState>,
    Admin(caller): Admin,
    JsonBody(v): JsonBody,
) -> ApiResult<Response> {
    let mut f = Fields::new(&v, "");
    let items = f.array("environments").cloned().unwrap_or_default();
    if v.get("environments").is_none() {
        f.err("environments", "is required");
    }
    let mut out = Vec::new();
    for (i, e) in items.iter().enumerate() {
        let mut ef = Fields::new(e, &format!("environments[{i}]"));
        let name = ef.string("name", true, 100);
        let mut env = json!({"name": name});
        for k in ["httpUrl", "httpsUrl"] {
            if let Some(u) = ef.string(k, false, 500) {
                let scheme = if k == "httpUrl" {
                    "http://"
                } else {
                    "https://"
                };
                if crate::service::api_body::check_endpoint(&u).is_some() || !u.starts_with(scheme)
                {
                    ef.err(k, format!("must be a {scheme} URL without a query"));
                }
                env[k] = json!(u.trim_end_matches('/'));
            }
        }
        ef.finish_unknown();
        f.errors.append(&mut ef.errors);
        out.push(env);
    }
    f.finish_unknown();
    f.into_result()?;
    let value = Value::Array(out);
    let mut tx = s.inner.store.begin_write().await?;
    tx.set_setting(KEY, &value).await?;
    tx.commit(&caller.name, "gateway environments").await?;
    Ok(axum::Json(json!({"environments": value})).into_response())
}

/// WSO2's `endpointURLs` of an API: per environment, its URLs at the gateway (and the
/// version-less ones for the default version).
pub fn endpoint_urls(envs: &Value, api: &Api) -> Value {
    let path = turnpike_model::api_id(&api.context, &api.version);
    let urls = |suffix: &str, env: &Value| {
        let mut u = json!({});
        for (k, field) in [("http", "httpUrl"), ("https", "httpsUrl")] {
            if let Some(base) = env[field].as_str() {
                u[k] = json!(format!("{base}{suffix}"));
            }
        }
        u
    };
    let list: Vec<Value> = envs
        .as_array()
        .into_iter()
        .flatten()
        .map(|env| {
            let mut e = json!({"environmentName": env["name"], "URLs": urls(&path, env)});
            if api.is_default_version {
                e["defaultVersionURLs"] = urls(&api.context, env);
            }
            e
        })
        .collect();
    Value::Array(list)
}

/// The gateway URLs as OpenAPI `servers` (https first).
pub fn servers(envs: &Value, api: &Api) -> Value {
    let mut out = Vec::new();
    for e in endpoint_urls(envs, api).as_array().into_iter().flatten() {
        for k in ["https", "http"] {
            if let Some(u) = e["URLs"][k].as_str() {
                out.push(json!({"url": u, "description": e["environmentName"]}));
            }
        }
    }
    Value::Array(out)
}
