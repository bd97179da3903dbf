//! `POST /apis/{id}/mediation/try`: runs a transformation for one of the publisher's APIs
//! on a sample request or response and answers what it became, without deploying
//! anything. The body names the transformation (`mediation`, as in the declarative
//! file: API level, and per resource under `resources`; what it leaves out is the
//! stored API's own), the sample (`method`, `path`
//! below the API's context and version, `query`, `headers`, `body` as a JSON value or a
//! string) and, for the response side, the upstream's `status`. Compile problems are
//! 400 `validation_failed` listing every field; a run that fails is 422
//! `mediation_failed` with the policy's name and the reason (line and column included
//! for a program that does not compile).

use axum::extract::{Path, State};
use axum::response::{IntoResponse, Response};
use http::StatusCode;
use serde::Deserialize;
use serde_json::{json, Value};
use turnpike_config::MediationPolicy;
use turnpike_model::mediation::MediationSpec;
use turnpike_model::{ApiSpec, GatewayFile, ResourceSpec};

use crate::auth::ApiViewer;
use crate::error::{ApiError, ApiResult, FieldError};
use crate::http::JsonBody;
use crate::AppState;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct TryBody {
    mediation: Option<MediationSpec>,
    /// Resource-level transformations, by the API's resource path.
    #[serde(default)]
    resources: Vec<ResourceMediation>,
    #[serde(default = "post")]
    method: String,
    #[serde(default = "root")]
    path: String,
    query: Option<String>,
    #[serde(default)]
    headers: std::collections::BTreeMap<String, String>,
    #[serde(default)]
    body: Option<Value>,
    status: Option<u16>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ResourceMediation {
    path: String,
    mediation: MediationSpec,
}

fn post() -> String {
    "POST".into()
}

fn root() -> String {
    "/".into()
}

pub(crate) async fn try_mediation(
    State(s): State<AppState>,
    _caller: ApiViewer,
    Path(id): Path<String>,
    JsonBody(v): JsonBody,
) -> ApiResult<Response> {
    let api = s.inner.store.get_api(&id).await?;
    let req: TryBody =
        serde_json::from_value(v).map_err(|e| ApiError::bad_request(e.to_string()))?;
    let mut resources: Vec<ResourceSpec> = crate::security::resource_specs(&api);
    for r in &req.resources {
        match resources.iter_mut().find(|x| x.path == r.path) {
            Some(x) => x.mediation = Some(r.mediation.clone()),
            None => {
                return Err(ApiError::invalid(vec![FieldError {
                    field: "resources".into(),
                    message: format!("the API has no resource {:?}", r.path),
                }]))
            }
        }
    }
    let file = GatewayFile {
        apis: vec![ApiSpec {
            name: api.name.clone(),
            context: api.context.clone(),
            version: api.version.clone(),
            endpoints: vec!["http://127.0.0.1:9".into()],
            resources,
            // The body's transformation, else the stored one.
            mediation: req.mediation.clone().or_else(|| {
                api.options
                    .get("mediation")
                    .and_then(|m| serde_json::from_value(m.clone()).ok())
            }),
            ..ApiSpec::default()
        }],
        ..GatewayFile::default()
    };
    let snap = match turnpike_config::check(file, 0) {
        Ok(snap) => snap,
        Err(turnpike_config::ConfigError::Problems(p)) => {
            let errors = p
                .list
                .into_iter()
                .map(|p| FieldError {
                    field: p
                        .path
                        .strip_prefix("apis[0].")
                        .unwrap_or(&p.path)
                        .to_owned(),
                    message: p.message,
                })
                .collect();
            return Err(ApiError::invalid(errors));
        }
        Err(e) => return Err(ApiError::bad_request(e.to_string())),
    };
    let policy = snap
        .apis
        .first()
        .and_then(|a| a.chain.find::<MediationPolicy>());
    let Some(m) = policy.map(MediationPolicy::mediation) else {
        return Err(ApiError::bad_request("give a mediation to try"));
    };
    let mut headers = http::HeaderMap::new();
    let mut errs = Vec::new();
    for (k, v) in &req.headers {
        match (
            http::HeaderName::from_bytes(k.as_bytes()),
            http::HeaderValue::from_str(v),
        ) {
            (Ok(k), Ok(v)) => {
                headers.append(k, v);
            }
            _ => errs.push(FieldError {
                field: format!("headers.{k}"),
                message: "not a valid header".into(),
            }),
        }
    }
    let body = match &req.body {
        None => Vec::new(),
        Some(Value::String(s)) => s.clone().into_bytes(),
        Some(v) => {
            if !headers.contains_key(http::header::CONTENT_TYPE) {
                headers.insert(
                    http::header::CONTENT_TYPE,
                    http::HeaderValue::from_static("application/json"),
                );
            }
            v.to_string().into_bytes()
        }
    };
    let method = http::Method::from_bytes(req.method.as_bytes()).map_err(|_| {
        ApiError::invalid(vec![FieldError {
            field: "method".into(),
            message: "not an HTTP method".into(),
        }])
    })?;
    if !errs.is_empty() {
        return Err(ApiError::invalid(errs));
    }
    let sample = turnpike_config::MediationSample {
        method,
        path: req.path.clone(),
        query: req.query.clone(),
        headers,
        body,
        status: req.status,
    };
    match m.try_run(sample) {
        Ok(t) => {
            let headers: serde_json::Map<String, Value> = t
                .headers
                .iter()
                .map(|(k, v)| {
                    (
                        k.to_string(),
                        Value::String(String::from_utf8_lossy(v.as_bytes()).into_owned()),
                    )
                })
                .collect();
            let body = match serde_json::from_slice::<Value>(&t.body) {
                Ok(v) if !t.body.is_empty() => v,
                _ => Value::String(String::from_utf8_lossy(&t.body).into_owned()),
            };
            Ok(axum::Json(json!({
                "policy": t.policy,
                "path": t.path,
                "query": t.query,
                "headers": headers,
                "body": body,
            }))
            .into_response())
        }
        Err((policy, e)) => {
            let mut err = ApiError::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                "mediation_failed",
                format!("transformation {policy:?} failed: {e}"),
            );
            err.errors.push(FieldError {
                field: "policy".into(),
                message: policy,
            });
            Err(err)
        }
    }
}
