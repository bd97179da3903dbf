//! RFC 6749 §5.2 error responses (also used by RFC 7009 and RFC 7662): one enum, one
//! `IntoResponse`. Descriptions are fixed strings chosen here, never echoes of secrets;
//! server-side detail is logged, not returned.

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::Serialize;

/// Every way an OAuth2 endpoint refuses a request.
#[derive(Debug, thiserror::Error)]
pub enum OAuthError {
    #[error("invalid_request: {0}")]
    InvalidRequest(&'static str),
    /// Client authentication failed: 401 with a `WWW-Authenticate: Basic` challenge.
    #[error("invalid_client")]
    InvalidClient,
    /// Too many failed client (or user) authentications: 429 with `Retry-After`.
    #[error("too many failed attempts")]
    TooManyAttempts { retry_after: u64 },
    #[error("invalid_grant: {0}")]
    InvalidGrant(&'static str),
    #[error("unauthorized_client: {0}")]
    UnauthorizedClient(&'static str),
    #[error("unsupported_grant_type")]
    UnsupportedGrantType,
    #[error("invalid_scope: {0}")]
    InvalidScope(String),
    /// RFC 8707 §2: the `resource` is malformed or names no API.
    #[error("invalid_target: {0}")]
    InvalidTarget(&'static str),
    #[error("unsupported_token_type")]
    UnsupportedTokenType,
    /// The store is down or full: 503 `temporarily_unavailable` with `Retry-After`.
    #[error("temporarily_unavailable: {0}")]
    Unavailable(String),
    /// A store or signing failure: logged with its cause, answered as `server_error`.
    #[error("server_error: {0}")]
    Server(String),
}

#[derive(Serialize)]
struct Body<'a> {
    error: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    error_description: Option<&'a str>,
}

impl OAuthError {
    /// The RFC error code and the HTTP status.
    pub fn code_and_status(&self) -> (&'static str, StatusCode) {
        match self {
            Self::InvalidRequest(_) => ("invalid_request", StatusCode::BAD_REQUEST),
            Self::InvalidClient => ("invalid_client", StatusCode::UNAUTHORIZED),
            Self::TooManyAttempts { .. } => ("invalid_client", StatusCode::TOO_MANY_REQUESTS),
            Self::InvalidGrant(_) => ("invalid_grant", StatusCode::BAD_REQUEST),
            Self::UnauthorizedClient(_) => ("unauthorized_client", StatusCode::BAD_REQUEST),
            Self::UnsupportedGrantType => ("unsupported_grant_type", StatusCode::BAD_REQUEST),
            Self::InvalidScope(_) => ("invalid_scope", StatusCode::BAD_REQUEST),
            Self::InvalidTarget(_) => ("invalid_target", StatusCode::BAD_REQUEST),
            Self::UnsupportedTokenType => ("unsupported_token_type", StatusCode::BAD_REQUEST),
            Self::Server(_) => ("server_error", StatusCode::INTERNAL_SERVER_ERROR),
            Self::Unavailable(_) => ("temporarily_unavailable", StatusCode::SERVICE_UNAVAILABLE),
        }
    }

    fn description(&self) -> Option<&str> {
        match self {
            Self::InvalidRequest(d)
            | Self::InvalidGrant(d)
            | Self::UnauthorizedClient(d)
            | Self::InvalidTarget(d) => Some(d),
            Self::InvalidClient => Some("client authentication failed"),
            Self::TooManyAttempts { .. } => {
                Some("too many failed authentication attempts; retry later")
            }
            Self::InvalidScope(d) => Some(d),
            Self::UnsupportedGrantType => {
                Some("supported: client_credentials, password, refresh_token, authorization_code")
            }
            Self::UnsupportedTokenType => None,
            Self::Server(_) => Some("internal error"),
            Self::Unavailable(_) => {
                Some("the authorization server's store is unavailable; retry shortly")
            }
        }
    }
}

impl From<crate::store::StoreError> for OAuthError {
    fn from(e: crate::store::StoreError) -> Self {
        match e.unavailable {
            true => Self::Unavailable(e.to_string()),
            false => Self::Server(e.to_string()),
        }
    }
}

impl From<crate::keys::KeyError> for OAuthError {
    fn from(e: crate::keys::KeyError) -> Self {
        Self::Server(e.to_string())
    }
}

/// `Cache-Control: no-store` and `Pragma: no-cache` (RFC 6749 §5.1) on every answer.
pub(crate) fn no_store(resp: &mut Response) {
    let h = resp.headers_mut();
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    h.insert(header::PRAGMA, HeaderValue::from_static("no-cache"));
}

impl IntoResponse for OAuthError {
    fn into_response(self) -> Response {
        if let Self::Server(detail) | Self::Unavailable(detail) = &self {
            tracing::error!(error = %detail, "oauth2 endpoint failed");
        }
        let (code, status) = self.code_and_status();
        let body = Body {
            error: code,
            error_description: self.description(),
        };
        let mut resp = (status, axum::Json(body)).into_response();
        no_store(&mut resp);
        match &self {
            Self::InvalidClient => {
                resp.headers_mut().insert(
                    header::WWW_AUTHENTICATE,
                    HeaderValue::from_static("Basic realm=\"turnpike\", charset=\"UTF-8\""),
                );
            }
            Self::TooManyAttempts { retry_after } => {
                if let Ok(v) = HeaderValue::from_str(&retry_after.to_string()) {
                    resp.headers_mut().insert(header::RETRY_AFTER, v);
                }
            }
            Self::Unavailable(_) => {
                resp.headers_mut()
                    .insert(header::RETRY_AFTER, HeaderValue::from_static("5"));
            }
            _ => {}
        }
        resp
    }
}
