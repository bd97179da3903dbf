//! An API's documents (markdown): publishers attach, change and remove them
//! (`/api/am/publisher/v1/apis/{id}/documents`), the DevPortal lists and serves those of
//! the APIs it shows (`/api/am/devportal/v1/apis/{id}/documents`; `.../content` as
//! `text/markdown`), to anonymous visitors too while anonymous browsing is on (a
//! document is part of the API's public page).

use axum::extract::{Path, State};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use http::StatusCode;
use serde_json::Value;
use turnpike_store::ApiDocument;

use crate::auth::{ApiCreator, ApiViewer};
use crate::error::{ApiError, ApiResult};
use crate::http::{all, JsonBody};
use crate::rest::portal_settings::PortalReader;
use crate::validate::Fields;
use crate::AppState;

pub fn publisher_routes() -> Router<AppState> {
    Router::new()
        .route("/apis/{id}/documents", get(list).post(create))
        .route(
            "/apis/{id}/documents/{doc}",
            get(read).put(update).delete(remove),
        )
}

pub fn devportal_routes() -> Router<AppState> {
    Router::new()
        .route("/apis/{id}/documents", get(portal_list))
        .route("/apis/{id}/documents/{doc}", get(portal_read))
        .route("/apis/{id}/documents/{doc}/content", get(portal_content))
}

/// (name, summary, content); fields left out keep `current`'s values.
fn fields(v: &Value, current: Option<&ApiDocument>) -> ApiResult<(String, String, String)> {
    let mut f = Fields::new(v, "");
    f.ignore(&["id", "apiId", "revision", "createdTime"]);
    let name = f
        .string("name", current.is_none(), 200)
        .or_else(|| current.map(|c| c.name.clone()));
    let summary = f
        .text("summary", 1000)
        .or_else(|| current.map(|c| c.summary.clone()))
        .unwrap_or_default();
    let content = f
        .text("content", 1_000_000)
        .or_else(|| current.map(|c| c.content.clone()))
        .unwrap_or_default();
    f.finish_unknown();
    f.into_result()?;
    Ok((name.unwrap_or_default(), summary, content))
}

async fn list(
    State(s): State<AppState>,
    _c: ApiViewer,
    Path(id): Path<String>,
) -> ApiResult<Response> {
    s.inner.store.get_api(&id).await?;
    Ok(all(&s.inner.store.api_documents(&id).await?))
}

async fn create(
    State(s): State<AppState>,
    ApiCreator(caller): ApiCreator,
    Path(id): Path<String>,
    JsonBody(v): JsonBody,
) -> ApiResult<Response> {
    let (name, summary, content) = fields(&v, None)?;
    s.inner.store.get_api(&id).await?;
    let mut tx = s.inner.store.begin_write().await?;
    let d = tx
        .create_api_document(&id, &name, &summary, &content)
        .await?;
    tx.commit(&caller.name, &format!("document {name:?} of API {id}"))
        .await?;
    Ok((StatusCode::CREATED, axum::Json(d)).into_response())
}

async fn read(
    State(s): State<AppState>,
    _c: ApiViewer,
    Path((id, doc)): Path<(String, String)>,
) -> ApiResult<Response> {
    Ok(axum::Json(s.inner.store.api_document(&id, &doc).await?).into_response())
}

async fn update(
    State(s): State<AppState>,
    ApiCreator(caller): ApiCreator,
    Path((id, doc)): Path<(String, String)>,
    JsonBody(v): JsonBody,
) -> ApiResult<Response> {
    // Read inside the write transaction (under the writer lock): fields the body leaves
    // out keep their values even when another update runs at the same time.
    let mut tx = s.inner.store.begin_write().await?;
    let current = tx.document(&id, &doc).await?;
    let (name, summary, content) = fields(&v, Some(&current))?;
    let d = tx
        .update_api_document(&id, &doc, &name, &summary, &content)
        .await?;
    tx.commit(&caller.name, &format!("document {name:?} of API {id}"))
        .await?;
    Ok(axum::Json(d).into_response())
}

async fn remove(
    State(s): State<AppState>,
    ApiCreator(caller): ApiCreator,
    Path((id, doc)): Path<(String, String)>,
) -> ApiResult<Response> {
    let mut tx = s.inner.store.begin_write().await?;
    tx.delete_api_document(&id, &doc).await?;
    tx.commit(&caller.name, &format!("delete document {doc} of API {id}"))
        .await?;
    Ok(StatusCode::NO_CONTENT.into_response())
}

async fn visible(s: &AppState, id: &str) -> ApiResult<()> {
    let api = s.inner.store.get_api(id).await?;
    if !api.lifecycle_status.is_visible() {
        return Err(ApiError::not_found(format!("API {id}")));
    }
    Ok(())
}

async fn portal_list(
    State(s): State<AppState>,
    _c: PortalReader,
    Path(id): Path<String>,
) -> ApiResult<Response> {
    visible(&s, &id).await?;
    Ok(all(&s.inner.store.api_documents(&id).await?))
}

async fn portal_read(
    State(s): State<AppState>,
    _c: PortalReader,
    Path((id, doc)): Path<(String, String)>,
) -> ApiResult<Response> {
    visible(&s, &id).await?;
    Ok(axum::Json(s.inner.store.api_document(&id, &doc).await?).into_response())
}

async fn portal_content(
    State(s): State<AppState>,
    _c: PortalReader,
    Path((id, doc)): Path<(String, String)>,
) -> ApiResult<Response> {
    visible(&s, &id).await?;
    let d = s.inner.store.api_document(&id, &doc).await?;
    Ok((
        [(http::header::CONTENT_TYPE, "text/markdown; charset=utf-8")],
        d.content,
    )
        .into_response())
}
