//! Request and response helpers shared by every handler: a JSON body extractor whose
//! rejections are our JSON errors, pagination parameters, ETags (If-None-Match → 304) and
//! If-Match parsing.

use std::hash::{Hash, Hasher};

use axum::extract::{FromRequest, Request};
use axum::response::{IntoResponse, Response};
use http::{HeaderMap, HeaderValue, StatusCode};
use serde::Serialize;
use serde_json::Value;

use crate::error::{ApiError, FieldError};
use crate::AppState;

/// A JSON body as a `serde_json::Value`; malformed JSON, a wrong content type or an
/// oversized body become 400, 415 and 413 JSON errors.
pub struct JsonBody(pub Value);

impl FromRequest<AppState> for JsonBody {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &AppState) -> Result<Self, ApiError> {
        use axum::extract::rejection::JsonRejection;
        match axum::Json::<Value>::from_request(req, state).await {
            Ok(axum::Json(v)) => Ok(JsonBody(v)),
            Err(JsonRejection::MissingJsonContentType(_)) => Err(ApiError::new(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                "unsupported_media_type",
                "send Content-Type: application/json",
            )),
            Err(JsonRejection::BytesRejection(e))
                if e.status() == StatusCode::PAYLOAD_TOO_LARGE =>
            {
                Err(ApiError::new(
                    StatusCode::PAYLOAD_TOO_LARGE,
                    "payload_too_large",
                    "request body too large",
                ))
            }
            Err(e) => Err(ApiError::new(
                StatusCode::BAD_REQUEST,
                "malformed_json",
                format!("malformed JSON body: {}", e.body_text()),
            )),
        }
    }
}

/// `limit` and `offset` from the query string, validated.
pub fn pagination(q: &std::collections::HashMap<String, String>) -> Result<(i64, i64), ApiError> {
    let mut errors = Vec::new();
    let mut num = |name: &str, default: i64, max: i64| match q.get(name) {
        None => default,
        Some(s) => match s.parse::<i64>() {
            Ok(n) if (0..=max).contains(&n) => n,
            _ => {
                errors.push(FieldError {
                    field: name.to_string(),
                    message: format!("must be an integer in 0..={max}"),
                });
                default
            }
        },
    };
    let limit = num("limit", 25, 1000);
    let offset = num("offset", 0, i64::MAX / 2);
    if errors.is_empty() {
        Ok((limit, offset))
    } else {
        Err(ApiError::invalid(errors))
    }
}

/// The WSO2-shaped list envelope.
#[derive(Serialize)]
pub struct ListBody<T: Serialize> {
    pub count: usize,
    pub list: Vec<T>,
    pub pagination: PaginationBody,
}

#[derive(Serialize)]
pub struct PaginationBody {
    pub offset: i64,
    pub limit: i64,
    pub total: i64,
}

pub fn list<T: Serialize>(page: turnpike_store::Page<T>, limit: i64, offset: i64) -> ListBody<T> {
    ListBody {
        count: page.items.len(),
        list: page.items,
        pagination: PaginationBody {
            offset,
            limit,
            total: page.total,
        },
    }
}

fn if_none_match(headers: &HeaderMap, etag: &str) -> bool {
    headers
        .get(http::header::IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.split(',').any(|t| t.trim() == etag || t.trim() == "*"))
}

/// 200 with the body and an ETag, or 304 when If-None-Match already has it.
pub fn json_with_etag<T: Serialize>(headers: &HeaderMap, etag: String, body: &T) -> Response {
    let tag = HeaderValue::from_str(&etag).unwrap_or(HeaderValue::from_static("\"0\""));
    if if_none_match(headers, &etag) {
        return (StatusCode::NOT_MODIFIED, [(http::header::ETAG, tag)]).into_response();
    }
    (
        StatusCode::OK,
        [(http::header::ETAG, tag)],
        axum::Json(body),
    )
        .into_response()
}

/// ETag of a record by its revision.
pub fn revision_etag(id: &str, revision: i64) -> String {
    format!("\"{}-{revision}\"", id_prefix(id))
}

/// The first 8 characters of a record's id or name (an ETag's prefix); names may be any
/// UTF-8, so the cut is at a character boundary.
fn id_prefix(id: &str) -> &str {
    match id.char_indices().nth(8) {
        Some((at, _)) => &id[..at],
        None => id,
    }
}

/// ETag of a list: a hash of its JSON.
pub fn body_etag<T: Serialize>(body: &T) -> String {
    let bytes = serde_json::to_vec(body).unwrap_or_default();
    let mut h = std::collections::hash_map::DefaultHasher::new();
    bytes.hash(&mut h);
    format!("\"{:016x}\"", h.finish())
}

/// The revision an If-Match header demands: `None` when absent or `*`; 412 when it names
/// something else than a revision ETag of this record.
pub fn if_match(headers: &HeaderMap, id: &str) -> Result<Option<i64>, ApiError> {
    let Some(v) = headers.get(http::header::IF_MATCH) else {
        return Ok(None);
    };
    let v = v.to_str().unwrap_or("").trim();
    if v == "*" {
        return Ok(None);
    }
    let prefix = format!("\"{}-", id_prefix(id));
    v.strip_prefix(prefix.as_str())
        .and_then(|r| r.strip_suffix('"'))
        .and_then(|r| r.parse::<i64>().ok())
        .map(Some)
        .ok_or_else(|| turnpike_store::StoreError::PreconditionFailed.into())
}

/// 200 JSON with a revision ETag (responses to writes).
pub fn with_etag<T: Serialize>(status: StatusCode, etag: String, body: &T) -> Response {
    let tag = HeaderValue::from_str(&etag).unwrap_or(HeaderValue::from_static("\"0\""));
    (status, [(http::header::ETAG, tag)], axum::Json(body)).into_response()
}

/// A stored record with a revision, and so an ETag.
pub trait Revisioned: Serialize {
    fn etag(&self) -> String;
}

macro_rules! revisioned {
    ($($t:ty => $id:ident),* $(,)?) => {$(
        impl Revisioned for $t {
            fn etag(&self) -> String {
                revision_etag(&self.$id, self.revision)
            }
        }
    )*};
}

revisioned!(
    turnpike_store::Api => id,
    turnpike_store::Application => id,
    turnpike_store::Subscription => id,
    turnpike_store::Tier => name,
);

/// A record read: 200 with its ETag, or 304 when If-None-Match has it.
pub fn read<T: Revisioned>(headers: &HeaderMap, record: &T) -> Response {
    json_with_etag(headers, record.etag(), record)
}

/// A record written: `status` with the record and its new ETag.
pub fn written<T: Revisioned>(status: StatusCode, record: &T) -> Response {
    with_etag(status, record.etag(), record)
}

/// A list request: the query string with `limit` and `offset` validated (400 listing
/// both when bad). What every list handler starts with.
pub struct Paged {
    pub q: std::collections::HashMap<String, String>,
    pub limit: i64,
    pub offset: i64,
}

impl<S: Send + Sync> axum::extract::FromRequestParts<S> for Paged {
    type Rejection = ApiError;

    async fn from_request_parts(
        parts: &mut http::request::Parts,
        state: &S,
    ) -> Result<Self, ApiError> {
        let axum::extract::Query(q) = axum::extract::Query::<
            std::collections::HashMap<String, String>,
        >::from_request_parts(parts, state)
        .await
        .map_err(|e| ApiError::bad_request(e.body_text()))?;
        let (limit, offset) = pagination(&q)?;
        Ok(Paged { q, limit, offset })
    }
}

impl Paged {
    /// One page in the list envelope, with an ETag of the whole body.
    pub fn respond<T: Serialize>(
        &self,
        headers: &HeaderMap,
        page: turnpike_store::Page<T>,
    ) -> Response {
        let body = list(page, self.limit, self.offset);
        json_with_etag(headers, body_etag(&body), &body)
    }
}

/// A whole collection in the `{"count", "list"}` envelope (no paging).
pub fn all<T: Serialize>(items: &[T]) -> Response {
    axum::Json(serde_json::json!({"count": items.len(), "list": items})).into_response()
}

/// Most runs of a read-modify-write that keeps losing the race to concurrent writers.
const RMW_ATTEMPTS: usize = 8;

/// A read-modify-write without lost updates (a revision compare-and-swap). `attempt`
/// reads the record, applies the change and writes it only if the revision is still
/// `if_match.unwrap_or(the revision it read)`. With the client's If-Match a mismatch is
/// the client's 412; without one, a concurrent write moved the revision between this
/// read and this write, and the attempt reruns on the fresh record, so both changes
/// stay (two PATCHes of different fields sent at once both land).
pub async fn read_modify_write<T, F, Fut>(
    if_match: Option<i64>,
    mut attempt: F,
) -> Result<T, ApiError>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, ApiError>>,
{
    for _ in 0..RMW_ATTEMPTS {
        match attempt().await {
            Err(e) if if_match.is_none() && e.status == StatusCode::PRECONDITION_FAILED => {}
            other => return other,
        }
    }
    Err(ApiError::conflict(
        "the resource kept changing while this change was applied; retry",
    ))
}
