//! `POST /api/am/publisher/v1/apply[?dryRun=true][&prune=true]`: a whole declarative file
//! (the DB-less format, YAML or JSON) applied in one transaction (`crate::service::apply`).
//! Answers `{"dryRun", "changes": ["create  /pets v1", ...], "count", "version",
//! "warnings"}`; a
//! file with problems gets 400 listing every one (`apis[1].context`, ...) and nothing is
//! written. API creator and publisher roles; a file with a throttling section needs the
//! admin role too (tiers are the Admin API's), and so does one with applications.

use std::collections::HashMap;

use axum::extract::{Query, State};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::Router;
use serde_json::json;
use turnpike_model::GatewayFile;

use crate::auth::ApiCreator;
use crate::error::{ApiError, ApiResult};
use crate::import::source::RawBody;
use crate::scopes::Scope;
use crate::service::apply::Options;
use crate::AppState;

pub(crate) fn routes() -> Router<AppState> {
    Router::new().route("/apply", post(apply))
}

/// A `true`/`false` query flag (absent: false).
fn flag(q: &HashMap<String, String>, name: &str) -> ApiResult<bool> {
    match q.get(name).map(String::as_str) {
        None | Some("false") => Ok(false),
        Some("true") | Some("") => Ok(true),
        Some(v) => Err(ApiError::bad_request(format!(
            "{name} must be true or false, not {v:?}"
        ))),
    }
}

/// The file comes as YAML or JSON (JSON is YAML); anything else is a 415.
fn declarative_media_type(headers: &axum::http::HeaderMap) -> ApiResult<()> {
    let mime = headers
        .get(axum::http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .map(|v| v.trim().to_ascii_lowercase())
        .unwrap_or_default();
    if [
        "application/json",
        "application/yaml",
        "application/x-yaml",
        "text/yaml",
        "text/x-yaml",
    ]
    .contains(&mime.as_str())
    {
        return Ok(());
    }
    Err(ApiError::new(
        axum::http::StatusCode::UNSUPPORTED_MEDIA_TYPE,
        "unsupported_media_type",
        "send the file as application/yaml or application/json",
    ))
}

async fn apply(
    State(s): State<AppState>,
    ApiCreator(caller): ApiCreator,
    Query(q): Query<HashMap<String, String>>,
    headers: axum::http::HeaderMap,
    RawBody(body): RawBody,
) -> ApiResult<Response> {
    caller.require(Scope::ApiPublish)?;
    declarative_media_type(&headers)?;
    let opts = Options {
        dry_run: flag(&q, "dryRun")?,
        prune: flag(&q, "prune")?,
    };
    let text = std::str::from_utf8(&body)
        .map_err(|_| ApiError::bad_request("the file must be UTF-8 text"))?;
    // A file nested past any real one is refused before the parser spends time on it.
    turnpike_config::check_depth(text).map_err(|e| ApiError::bad_request(format!("file: {e}")))?;
    let file: GatewayFile =
        serde_yaml::from_str(text).map_err(|e| ApiError::bad_request(format!("file: {e}")))?;
    // Tiers are the Admin API's; other users' applications too.
    if !file.throttling.is_empty() || !file.applications.is_empty() {
        caller.require(Scope::Admin)?;
    }
    let out = crate::service::apply::apply(&s, &caller, &file, opts).await?;
    let body = json!({
        "dryRun": opts.dry_run,
        "count": out.changes.len(),
        "changes": out.changes,
        "version": out.version,
        "warnings": out.warnings,
    });
    Ok(axum::Json(body).into_response())
}
