//! The control plane's one error type and its JSON body:
//! `{"code", "message", "request_id", "errors": [{"field", "message"}]}`. Every handler
//! returns it; store errors map here, internal detail goes to the log only.

use axum::response::{IntoResponse, Response};
use http::StatusCode;
use serde::Serialize;
use turnpike_store::{Outage, StoreError};

/// One invalid field.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FieldError {
    pub field: String,
    pub message: String,
}

/// An error response.
#[derive(Debug)]
pub struct ApiError {
    pub status: StatusCode,
    pub code: &'static str,
    pub message: String,
    pub errors: Vec<FieldError>,
    /// A `WWW-Authenticate` value; a 401 without one gets the Basic and Bearer challenges.
    pub challenge: Option<String>,
    /// Seconds for `Retry-After` (429 and 503).
    pub retry_after: Option<u64>,
}

/// Marks a response that failed because the store could not serve (`crate::rest::ready`
/// counts it against readiness).
#[derive(Debug, Clone, Copy)]
pub struct StoreOutage(pub Outage);

/// How long a client should wait after a store outage before retrying.
const OUTAGE_RETRY_AFTER: u64 = 5;

impl ApiError {
    pub fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> Self {
        ApiError {
            status,
            code,
            message: message.into(),
            errors: Vec::new(),
            challenge: None,
            retry_after: None,
        }
    }

    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, "bad_request", message)
    }

    pub fn invalid(errors: Vec<FieldError>) -> Self {
        let n = errors.len();
        ApiError {
            status: StatusCode::BAD_REQUEST,
            code: "validation_failed",
            message: format!("{n} invalid field(s)"),
            errors,
            challenge: None,
            retry_after: None,
        }
    }

    pub fn unauthorized() -> Self {
        Self::new(
            StatusCode::UNAUTHORIZED,
            "unauthorized",
            "authentication required (HTTP Basic or a bearer token)",
        )
    }

    /// A bearer token that is malformed, badly signed, expired, revoked or meant for
    /// another audience (RFC 6750 §3.1 `invalid_token`).
    pub fn invalid_token(why: &str) -> Self {
        let mut e = Self::new(StatusCode::UNAUTHORIZED, "invalid_token", why);
        e.challenge = Some(format!(
            "Bearer realm=\"turnpike\", error=\"invalid_token\", error_description=\"{why}\""
        ));
        e
    }

    /// A valid bearer token without the operation's scope (RFC 6750 §3.1).
    pub fn insufficient_scope(scope: &str) -> Self {
        let mut e = Self::new(
            StatusCode::FORBIDDEN,
            "insufficient_scope",
            format!("this operation needs a token with the {scope} scope"),
        );
        e.challenge = Some(format!(
            "Bearer realm=\"turnpike\", error=\"insufficient_scope\", scope=\"{scope}\""
        ));
        e
    }

    pub fn forbidden(role: &str) -> Self {
        Self::new(
            StatusCode::FORBIDDEN,
            "forbidden",
            format!("this operation needs the {role} role"),
        )
    }

    pub fn not_found(what: impl Into<String>) -> Self {
        Self::new(
            StatusCode::NOT_FOUND,
            "not_found",
            format!("{} not found", what.into()),
        )
    }

    pub fn conflict(message: impl Into<String>) -> Self {
        Self::new(StatusCode::CONFLICT, "conflict", message)
    }

    /// Too many failed password checks for this account from this address (the
    /// brute-force guard): nothing is checked until `retry_after` seconds have passed.
    pub fn too_many_attempts(retry_after: u64) -> Self {
        let mut e = Self::new(
            StatusCode::TOO_MANY_REQUESTS,
            "too_many_attempts",
            "too many failed sign-in attempts; retry later",
        );
        e.retry_after = Some(retry_after);
        e
    }

    /// The store cannot serve now (503 with `Retry-After`): its disk is full, or the
    /// database is down, unreachable or read-only.
    pub fn store_outage(outage: Outage) -> Self {
        let (code, message) = match outage {
            Outage::Full => (
                "store_full",
                "the control plane's database is out of space; reads still work, writes resume once space is freed",
            ),
            Outage::Unavailable => (
                "store_unavailable",
                "the control plane's database is unavailable; retry shortly",
            ),
        };
        let mut e = Self::new(StatusCode::SERVICE_UNAVAILABLE, code, message);
        e.retry_after = Some(OUTAGE_RETRY_AFTER);
        e
    }

    pub fn internal() -> Self {
        Self::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "internal",
            "internal error; see the control plane's log",
        )
    }
}

impl From<StoreError> for ApiError {
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::NotFound(what) => ApiError::not_found(what),
            StoreError::Conflict(m) => ApiError::conflict(m),
            StoreError::PreconditionFailed => ApiError::new(
                StatusCode::PRECONDITION_FAILED,
                "precondition_failed",
                "the resource changed since it was read: fetch it again (new ETag) and retry",
            ),
            other => match other.outage() {
                Some(outage) => {
                    tracing::error!(error = %other, "control plane: store outage");
                    ApiError::store_outage(outage)
                }
                None => {
                    tracing::error!(error = %other, "control plane: store error");
                    ApiError::internal()
                }
            },
        }
    }
}

#[derive(Serialize)]
struct Body<'a> {
    code: &'a str,
    message: &'a str,
    request_id: String,
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    errors: &'a [FieldError],
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let request_id = turnpike_store::new_id();
        if self.status.is_server_error() && self.code != "shutting_down" {
            tracing::error!(%request_id, code = self.code, message = %self.message, "control plane: request failed");
        } else {
            tracing::debug!(%request_id, code = self.code, status = self.status.as_u16(), message = %self.message, "control plane: request refused");
        }
        let body = Body {
            code: self.code,
            message: &self.message,
            request_id,
            errors: &self.errors,
        };
        let mut resp = (self.status, axum::Json(body)).into_response();
        match self.code {
            "store_full" => resp.extensions_mut().insert(StoreOutage(Outage::Full)),
            "store_unavailable" => resp
                .extensions_mut()
                .insert(StoreOutage(Outage::Unavailable)),
            _ => None,
        };
        let h = resp.headers_mut();
        if let Some(secs) = self.retry_after {
            h.insert(http::header::RETRY_AFTER, http::HeaderValue::from(secs));
        }
        match self.challenge.as_deref().map(http::HeaderValue::from_str) {
            Some(Ok(v)) => {
                h.insert(http::header::WWW_AUTHENTICATE, v);
            }
            _ if self.status == StatusCode::UNAUTHORIZED => {
                for c in ["Basic realm=\"turnpike\"", "Bearer realm=\"turnpike\""] {
                    h.append(
                        http::header::WWW_AUTHENTICATE,
                        http::HeaderValue::from_static(c),
                    );
                }
            }
            _ => {}
        }
        resp
    }
}

pub type ApiResult<T> = Result<T, ApiError>;
