//! [`AuthError`]: why a request was refused, with its HTTP status, stable JSON code and
//! `WWW-Authenticate` challenge (RFC 6750 §3 for bearer tokens). The gateway turns it
//! into its `{"code","message","request_id"}` body; messages never contain credentials.

use http::{HeaderValue, StatusCode};

/// Every authentication and authorisation refusal.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AuthError {
    /// No credential where the API requires one.
    #[error("missing credentials")]
    Missing,
    /// The `Authorization` header (or API key) is not well formed.
    #[error("malformed credentials: {0}")]
    Malformed(&'static str),
    /// Bad signature, unknown key or issuer, wrong audience, not yet valid, unknown token.
    #[error("invalid token: {0}")]
    InvalidToken(&'static str),
    #[error("token expired")]
    Expired,
    #[error("token revoked")]
    Revoked,
    #[error("invalid API key")]
    InvalidApiKey,
    #[error("invalid username or password")]
    InvalidBasic,
    /// The introspection endpoint could not be reached or answered garbage.
    #[error("token validation unavailable")]
    Unavailable,
    /// The application has no subscription to this API.
    #[error("application not subscribed")]
    NotSubscribed,
    #[error("subscription blocked")]
    SubscriptionBlocked,
    #[error("subscription on hold")]
    SubscriptionOnHold,
    /// The token lacks a scope the resource requires (the `String` lists what would do).
    #[error("insufficient scope")]
    InsufficientScope(String),
}

impl AuthError {
    pub fn status(&self) -> StatusCode {
        match self {
            Self::Malformed(_) => StatusCode::BAD_REQUEST,
            Self::Missing
            | Self::InvalidToken(_)
            | Self::Expired
            | Self::Revoked
            | Self::InvalidApiKey
            | Self::InvalidBasic => StatusCode::UNAUTHORIZED,
            Self::Unavailable => StatusCode::SERVICE_UNAVAILABLE,
            Self::NotSubscribed
            | Self::SubscriptionBlocked
            | Self::SubscriptionOnHold
            | Self::InsufficientScope(_) => StatusCode::FORBIDDEN,
        }
    }

    /// Stable JSON code: clients match on it.
    pub fn code(&self) -> &'static str {
        match self {
            Self::Missing => "missing_credentials",
            Self::Malformed(_) => "malformed_credentials",
            Self::InvalidToken(_) => "invalid_token",
            Self::Expired => "expired_token",
            Self::Revoked => "revoked_token",
            Self::InvalidApiKey => "invalid_api_key",
            Self::InvalidBasic => "invalid_credentials",
            Self::Unavailable => "auth_unavailable",
            Self::NotSubscribed => "not_subscribed",
            Self::SubscriptionBlocked => "subscription_blocked",
            Self::SubscriptionOnHold => "subscription_on_hold",
            Self::InsufficientScope(_) => "insufficient_scope",
        }
    }

    /// Client-facing message.
    pub fn message(&self) -> &'static str {
        match self {
            Self::Missing => "this API requires credentials",
            Self::Malformed(m) | Self::InvalidToken(m) => m,
            Self::Expired => "the access token has expired",
            Self::Revoked => "the access token has been revoked",
            Self::InvalidApiKey => "the API key is not valid",
            Self::InvalidBasic => "invalid username or password",
            Self::Unavailable => "token validation is temporarily unavailable",
            Self::NotSubscribed => "the application is not subscribed to this API",
            Self::SubscriptionBlocked => "the subscription to this API is blocked",
            Self::SubscriptionOnHold => "the subscription to this API is on hold",
            Self::InsufficientScope(_) => "the access token lacks a required scope",
        }
    }

    pub fn retryable(&self) -> bool {
        matches!(self, Self::Unavailable)
    }

    /// The `WWW-Authenticate` value for 401s and for `insufficient_scope`.
    pub fn www_authenticate(&self) -> Option<HeaderValue> {
        let value = match self {
            Self::Missing => "Bearer realm=\"turnpike\"".to_owned(),
            Self::Malformed(m) => {
                format!("Bearer realm=\"turnpike\", error=\"invalid_request\", error_description=\"{m}\"")
            }
            Self::InvalidToken(_) | Self::Expired | Self::Revoked => format!(
                "Bearer realm=\"turnpike\", error=\"invalid_token\", error_description=\"{}\"",
                self.message()
            ),
            Self::InvalidApiKey => "ApiKey realm=\"turnpike\"".to_owned(),
            Self::InvalidBasic => "Basic realm=\"turnpike\", charset=\"UTF-8\"".to_owned(),
            Self::InsufficientScope(scope) => format!(
                "Bearer realm=\"turnpike\", error=\"insufficient_scope\", scope=\"{}\"",
                scope.replace(['"', '\\'], "")
            ),
            _ => return None,
        };
        HeaderValue::from_str(&value).ok()
    }

    /// The JSON body the gateway sends, given its request id.
    pub fn json_body(&self, request_id: &str) -> String {
        serde_json::json!({
            "code": self.code(),
            "message": self.message(),
            "request_id": request_id,
        })
        .to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bearer_errors_carry_rfc6750_challenges() {
        let v = AuthError::Expired.www_authenticate().unwrap();
        assert!(v.to_str().unwrap().contains("error=\"invalid_token\""));
        assert_eq!(AuthError::Expired.status(), StatusCode::UNAUTHORIZED);
        let v = AuthError::InsufficientScope("write".into())
            .www_authenticate()
            .unwrap();
        assert!(v.to_str().unwrap().contains("scope=\"write\""));
        assert_eq!(AuthError::NotSubscribed.status(), StatusCode::FORBIDDEN);
        assert!(AuthError::NotSubscribed.www_authenticate().is_none());
    }
}
