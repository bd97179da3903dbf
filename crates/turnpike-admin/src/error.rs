//! The control plane's one error type and its JSON body:
//! `{"code", "message", "request_id", "errors": [{"field", "message"}]}`. Every handler
//! returns it; store errors map here, internal detail goes to the log only.

use axum::response::{IntoResponse, Response};
use http::StatusCode;
use serde::Serialize;
use turnpike_store::StoreError;

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
}

impl ApiError {
    pub fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> Self {
        ApiError {
            status,
            code,
            message: message.into(),
            errors: Vec::new(),
            challenge: None,
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
            other => {
                tracing::error!(error = %other, "control plane: store error");
                ApiError::internal()
            }
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
        let h = resp.headers_mut();
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
