//! The Developer Portal's try-it relay: `POST /api/am/devportal/v1/applications/{id}/try-it`
//! sends one request to the gateway on behalf of one of the caller's applications, with
//! a fresh access token of that application's OAuth2 client (one minute), and answers
//! with what the gateway said (status, headers, body, time). Same origin as the portal,
//! so the browser needs no CORS, and the key is always applied. The gateway URL is the
//! one `crate::ui` holds; only the path is the caller's, never the host.

use std::time::{Duration, Instant};

use axum::extract::State;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Json, Router};
use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use serde_json::{json, Value};
use turnpike_model::rest::METHODS;

use crate::error::{ApiError, ApiResult};
use crate::http::JsonBody;
use crate::rest::devportal::OwnApp;
use crate::validate::Fields;
use crate::AppState;

/// Lifetime of the token minted for one try.
const TOKEN_TTL: Duration = Duration::from_secs(60);
const TIMEOUT: Duration = Duration::from_secs(30);
/// Largest response body relayed back.
const MAX_BODY: usize = 1024 * 1024;
/// Headers the caller may not set: the relay owns them.
const RESERVED: [&str; 7] = [
    "authorization",
    "host",
    "content-length",
    "connection",
    "transfer-encoding",
    "cookie",
    "upgrade",
];

pub(crate) fn routes() -> Router<AppState> {
    Router::new().route("/applications/{id}/try-it", post(try_it))
}

struct TryRequest {
    key_type: String,
    method: String,
    path: String,
    headers: Vec<(String, String)>,
    body: Option<String>,
}

fn parse(v: &Value) -> ApiResult<TryRequest> {
    let mut f = Fields::new(v, "");
    let key_type = f
        .string("keyType", false, 10)
        .unwrap_or_else(|| "PRODUCTION".into());
    if key_type != "PRODUCTION" && key_type != "SANDBOX" {
        f.err("keyType", "must be PRODUCTION or SANDBOX");
    }
    let method = f.string("method", true, 10).unwrap_or_default();
    if !method.is_empty() && !METHODS.contains(&method.as_str()) {
        f.err("method", format!("must be one of {METHODS:?}"));
    }
    let path = f.string("path", true, 4096).unwrap_or_default();
    if !path.is_empty() && (!path.starts_with('/') || path.starts_with("//")) {
        f.err("path", "must be a path on the gateway, starting with one /");
    }
    let body = f.text("body", MAX_BODY);
    let mut headers = Vec::new();
    match v.get("headers") {
        None | Some(Value::Null) => {}
        Some(Value::Object(map)) if map.len() <= 50 => {
            for (k, val) in map {
                let ok_name = http::HeaderName::from_bytes(k.as_bytes()).is_ok();
                match val.as_str() {
                    Some(s) if ok_name && http::HeaderValue::from_str(s).is_ok() => {
                        if RESERVED.contains(&k.to_ascii_lowercase().as_str()) {
                            f.err("headers", format!("{k} is set by the relay"));
                        } else {
                            headers.push((k.clone(), s.to_string()));
                        }
                    }
                    _ => f.err("headers", format!("{k}: not a valid header")),
                }
            }
        }
        Some(_) => f.err("headers", "must be an object of at most 50 string values"),
    }
    f.ignore(&["headers"]);
    f.finish_unknown();
    f.into_result()?;
    Ok(TryRequest {
        key_type,
        method,
        path,
        headers,
        body,
    })
}

async fn try_it(
    State(s): State<AppState>,
    OwnApp { app, .. }: OwnApp,
    JsonBody(v): JsonBody,
) -> ApiResult<Response> {
    let req = parse(&v)?;
    let gateway = crate::ui::gateway_url(&s).ok_or_else(|| {
        ApiError::new(
            http::StatusCode::SERVICE_UNAVAILABLE,
            "no_gateway",
            "this control plane has no gateway URL for try-it (--gateway-url)",
        )
    })?;
    let client = s
        .inner
        .store
        .oauth_clients(&app.id)
        .await?
        .into_iter()
        .find(|c| c.key_type == req.key_type)
        .ok_or_else(|| {
            ApiError::conflict(format!(
                "the application has no {} keys: generate them first",
                req.key_type
            ))
        })?;
    let sec = s
        .inner
        .security
        .get()
        .ok_or_else(|| ApiError::not_found("key manager"))?;
    let token = sec
        .km
        .mint_client_token(&client.client_id, TOKEN_TTL)
        .await
        .map_err(|e| {
            tracing::error!(error = %e, "try-it: minting a token");
            ApiError::internal()
        })?;
    let mut builder = http::Request::builder()
        .method(req.method.as_str())
        .uri(format!("{gateway}{}", req.path))
        .header(http::header::AUTHORIZATION, format!("Bearer {token}"));
    for (k, v) in &req.headers {
        builder = builder.header(k.as_str(), v.as_str());
    }
    let outgoing = builder
        .body(Full::new(Bytes::from(req.body.unwrap_or_default())))
        .map_err(|e| ApiError::bad_request(format!("cannot build the request: {e}")))?;
    let started = Instant::now();
    let http = Client::builder(TokioExecutor::new()).build_http();
    let unreachable = |e: String| {
        tracing::info!(error = %e, "try-it: gateway unreachable");
        ApiError::new(
            http::StatusCode::BAD_GATEWAY,
            "gateway_unreachable",
            format!("the gateway did not answer: {e}"),
        )
    };
    let resp = tokio::time::timeout(TIMEOUT, http.request(outgoing))
        .await
        .map_err(|_| unreachable("timed out".into()))?
        .map_err(|e| unreachable(e.to_string()))?;
    let status = resp.status().as_u16();
    let headers: Vec<(String, String)> = resp
        .headers()
        .iter()
        .map(|(k, v)| (k.to_string(), String::from_utf8_lossy(v.as_bytes()).into()))
        .collect();
    let (body, truncated) = match Limited::new(resp.into_body(), MAX_BODY).collect().await {
        Ok(b) => (b.to_bytes(), false),
        Err(_) => (Bytes::new(), true),
    };
    let time_ms = started.elapsed().as_secs_f64() * 1000.0;
    Ok(Json(json!({
        "status": status,
        "headers": headers,
        "body": String::from_utf8_lossy(&body),
        "timeMs": (time_ms * 10.0).round() / 10.0,
        "truncated": truncated,
    }))
    .into_response())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_name_a_path_never_a_host_or_the_token() {
        let ok = parse(&json!({"method": "GET", "path": "/demo/v1/x?y=1"})).expect("valid");
        assert_eq!(ok.key_type, "PRODUCTION");
        for bad in [
            json!({"method": "GET", "path": "http://evil/"}),
            json!({"method": "GET", "path": "//evil/x"}),
            json!({"method": "TRACE", "path": "/x"}),
            json!({"method": "GET", "path": "/x", "headers": {"Authorization": "Bearer t"}}),
            json!({"method": "GET", "path": "/x", "headers": {"X-A": 1}}),
            json!({"method": "GET", "path": "/x", "extra": true}),
        ] {
            assert!(parse(&bad).is_err(), "{bad}");
        }
    }
}
