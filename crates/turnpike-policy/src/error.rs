//! The one gateway error and the one table that maps its kinds to an HTTP status and a
//! stable JSON code. Every rejection on the request path (routing, limits, auth,
//! throttling, upstream failures, and any policy's refusal) becomes a [`GatewayError`]
//! and leaves through [`GatewayError::into_response`] with the body
//! `{"code","message","request_id"}` (plus the error's own `fields`, e.g. the 429's
//! `policy` and `retry_after`). Internal detail (the `source`) goes to logs, never to
//! clients.

use std::borrow::Cow;
use std::time::Duration;

use bytes::Bytes;
use http::header::{HeaderName, HeaderValue, CONTENT_TYPE};
use http::{HeaderMap, Response, StatusCode};

use crate::log_limit::LogLimit;

/// Who caused an error: decides the log level.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Blame {
    /// The client sent something we refuse (4xx).
    Client,
    /// The upstream failed or was too slow (502/504).
    Upstream,
    /// A bug or a resource problem in the gateway itself (500/503).
    Internal,
}

/// Every way a request can fail. Add new kinds here and a row in [`ErrorKind::spec`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorKind {
    NotFound,
    MethodNotAllowed,
    BodyTooLarge,
    BadRequest,
    /// The path is refused by the normaliser (encoded separator, `..` above the root).
    InvalidPath,
    UpstreamConnectTimeout,
    UpstreamResponseTimeout,
    UpstreamConnectFailed,
    UpstreamReset,
    UpstreamProtocol,
    NoEndpoint,
    /// A throttling policy refused the request (the error carries `Retry-After`, the
    /// rate-limit headers and the `policy` and `retry_after` fields).
    Throttled,
    /// The upstream's response body is larger than a body policy may buffer.
    UpstreamBodyTooLarge,
    /// A CORS request from an origin, or asking for a method or header, the API does
    /// not allow.
    CorsRejected,
    /// A SOAP back end answered a SOAP-to-REST call with a `Client`/`Sender` Fault.
    SoapFaultClient,
    /// A SOAP back end answered a SOAP-to-REST call with any other Fault.
    SoapFaultServer,
    /// The gateway holds its maximum of client connections (`--max-connections`).
    TooManyConnections,
    /// This client IP holds its maximum (`--max-connections-per-ip`).
    TooManyClientConnections,
    Internal,
    /// The client did not send its request head, or its body, in time (the
    /// header-read and body-read timeouts).
    RequestTimeout,
    /// hyper's own answer to a request head larger than `--max-header-bytes`.
    HeadersTooLarge,
    /// hyper's own answer to a request target too long to parse.
    UriTooLong,
    /// The endpoint holds its maximum of upstream connections (`max_connections` of the
    /// API's endpoints) and none was freed within the connect timeout.
    UpstreamBusy,
    // Security (policies/auth.rs maps turnpike-auth's errors onto these rows).
    MissingCredentials,
    MalformedCredentials,
    InvalidToken,
    ExpiredToken,
    RevokedToken,
    InvalidApiKey,
    InvalidCredentials,
    AuthUnavailable,
    NotSubscribed,
    SubscriptionBlocked,
    SubscriptionOnHold,
    InsufficientScope,
    ApiBlocked,
    ApiNotPublished,
    // Mediation (turnpike-config's mediation policy).
    /// A transformation's program failed, ran past its deadline or wrote too much; the
    /// error names the policy (`policy` field), the program's detail goes to logs.
    MediationFailed,
    /// The body's content type is not what the API's transformation reads, and the
    /// transformation refuses other content.
    UnsupportedMediaType,
    /// An HTTP/1.1 request body in a transfer coding other than plain `chunked` (RFC
    /// 9112 §6.1: a server answers 501 to a coding it does not understand; forwarding
    /// it as `chunked` would hand the back end bytes it is not told how to read).
    UnsupportedTransferCoding,
    /// No snapshot loaded yet (a follower that has not reached its control plane and has
    /// none saved on disk): answered instead of 404, with `Retry-After`, so a missing
    /// configuration is never mistaken for a deleted API.
    NotReady,
    /// The snapshot is older than `--max-snapshot-age` (the control plane unreachable
    /// meanwhile): it can no longer vouch that a credential is still good.
    SnapshotStale,
    /// A SANDBOX key called an API that has no `sandbox_endpoints`.
    SandboxNotConfigured,
    /// Every endpoint of the API is suspended (circuit open) or failing its health
    /// check: answered at once rather than waiting on a back end known to be down.
    EndpointsSuspended,
    /// An LLM API's caller asked for a model its subscription tier does not list
    /// (`models:` of the tier, docs/ai-gateway.md).
    ModelNotAllowed,
    // AI guardrails (turnpike-ai guard.rs; docs/ai-gateway.md).
    /// A prompt matches a deny pattern of its AI API, or none of its allow patterns.
    AiPromptDenied,
    /// A prompt carries personal data its AI API refuses (or more than it can mask).
    AiPiiDetected,
    /// A request asks for more completion tokens than its AI API allows.
    AiMaxTokensExceeded,
    /// The external guard service refused the prompt.
    AiGuardRefused,
    /// The external guard service gave no verdict and the API fails closed.
    AiGuardUnavailable,
    /// A provider's structured answer does not meet the request's JSON schema.
    AiAnswerInvalid,
}

/// One row of the table: status, stable code, default client message, blame.
pub struct KindSpec {
    pub status: StatusCode,
    pub code: &'static str,
    pub message: &'static str,
    pub blame: Blame,
}

impl ErrorKind {
    /// THE table. Codes are stable API: clients match on them.
    pub const fn spec(self) -> KindSpec {
        use Blame::{Client, Upstream};
        use ErrorKind::*;
        const fn row(
            status: StatusCode,
            code: &'static str,
            message: &'static str,
            blame: Blame,
        ) -> KindSpec {
            KindSpec {
                status,
                code,
                message,
                blame,
            }
        }
        match self {
            NotFound => row(
                StatusCode::NOT_FOUND,
                "not_found",
                "no API matches this request",
                Client,
            ),
            MethodNotAllowed => row(
                StatusCode::METHOD_NOT_ALLOWED,
                "method_not_allowed",
                "the resource does not accept this method",
                Client,
            ),
            BodyTooLarge => row(
                StatusCode::PAYLOAD_TOO_LARGE,
                "body_too_large",
                "the request body exceeds this API's limit",
                Client,
            ),
            BadRequest => row(
                StatusCode::BAD_REQUEST,
                "bad_request",
                "the request is malformed",
                Client,
            ),
            InvalidPath => row(
                StatusCode::BAD_REQUEST,
                "invalid_path",
                "the request path is not accepted (a ';', an encoded slash, backslash or ';', '..' above the root, a segment ending in '.' or a space, a control character, a double-encoded, broken, overlong or fullwidth escape)",
                Client,
            ),
            UpstreamConnectTimeout => row(
                StatusCode::GATEWAY_TIMEOUT,
                "upstream_connect_timeout",
                "connecting to the upstream timed out",
                Upstream,
            ),
            UpstreamResponseTimeout => row(
                StatusCode::GATEWAY_TIMEOUT,
                "upstream_timeout",
                "the upstream did not answer in time",
                Upstream,
            ),
            UpstreamConnectFailed => row(
                StatusCode::BAD_GATEWAY,
                "upstream_unavailable",
                "the upstream refused the connection",
                Upstream,
            ),
            UpstreamReset => row(
                StatusCode::BAD_GATEWAY,
                "upstream_reset",
                "the upstream closed the connection",
                Upstream,
            ),
            UpstreamProtocol => row(
                StatusCode::BAD_GATEWAY,
                "upstream_protocol_error",
                "the upstream sent an invalid response",
                Upstream,
            ),
            NoEndpoint => row(
                StatusCode::BAD_GATEWAY,
                "no_endpoint",
                "the API has no usable endpoint",
                Blame::Internal,
            ),
            Throttled => row(
                StatusCode::TOO_MANY_REQUESTS,
                "throttled",
                "a throttling policy refused the request",
                Client,
            ),
            UpstreamBodyTooLarge => row(
                StatusCode::BAD_GATEWAY,
                "upstream_body_too_large",
                "the upstream's response body exceeds this API's limit",
                Upstream,
            ),
            CorsRejected => row(
                StatusCode::FORBIDDEN,
                "cors_rejected",
                "this cross-origin request is not allowed",
                Client,
            ),
            SoapFaultClient => row(
                StatusCode::BAD_REQUEST,
                "soap_fault_client",
                "the SOAP service refused the request",
                Client,
            ),
            SoapFaultServer => row(
                StatusCode::BAD_GATEWAY,
                "soap_fault_server",
                "the SOAP service failed",
                Upstream,
            ),
            TooManyConnections => row(
                StatusCode::SERVICE_UNAVAILABLE,
                "too_many_connections",
                "the gateway holds its maximum of connections; retry shortly",
                Blame::Internal,
            ),
            TooManyClientConnections => row(
                StatusCode::TOO_MANY_REQUESTS,
                "too_many_client_connections",
                "this client holds its maximum of connections; reuse one or close some",
                Client,
            ),
            Internal => row(
                StatusCode::INTERNAL_SERVER_ERROR,
                "internal_error",
                "internal gateway error",
                Blame::Internal,
            ),
            RequestTimeout => row(
                StatusCode::REQUEST_TIMEOUT,
                "request_timeout",
                "the request was not received in time",
                Client,
            ),
            HeadersTooLarge => row(
                StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
                "headers_too_large",
                "the request head is larger than this gateway accepts",
                Client,
            ),
            UriTooLong => row(
                StatusCode::URI_TOO_LONG,
                "uri_too_long",
                "the request target is longer than this gateway accepts",
                Client,
            ),
            UpstreamBusy => row(
                StatusCode::SERVICE_UNAVAILABLE,
                "upstream_busy",
                "the upstream's connection limit is reached; retry shortly",
                Upstream,
            ),
            MissingCredentials => row(
                StatusCode::UNAUTHORIZED,
                "missing_credentials",
                "this API requires credentials",
                Client,
            ),
            // 401 rather than RFC 6750's 400: a client that sends a broken header
            // should be told to authenticate, and gets the challenge with it.
            MalformedCredentials => row(
                StatusCode::UNAUTHORIZED,
                "malformed_credentials",
                "the Authorization header is malformed",
                Client,
            ),
            InvalidToken => row(
                StatusCode::UNAUTHORIZED,
                "invalid_token",
                "the access token is not valid",
                Client,
            ),
            ExpiredToken => row(
                StatusCode::UNAUTHORIZED,
                "expired_token",
                "the access token has expired",
                Client,
            ),
            RevokedToken => row(
                StatusCode::UNAUTHORIZED,
                "revoked_token",
                "the access token has been revoked",
                Client,
            ),
            InvalidApiKey => row(
                StatusCode::UNAUTHORIZED,
                "invalid_api_key",
                "the API key is not valid",
                Client,
            ),
            InvalidCredentials => row(
                StatusCode::UNAUTHORIZED,
                "invalid_credentials",
                "invalid username or password",
                Client,
            ),
            AuthUnavailable => row(
                StatusCode::SERVICE_UNAVAILABLE,
                "auth_unavailable",
                "token validation is temporarily unavailable",
                Blame::Internal,
            ),
            NotSubscribed => row(
                StatusCode::FORBIDDEN,
                "not_subscribed",
                "the application is not subscribed to this API",
                Client,
            ),
            SubscriptionBlocked => row(
                StatusCode::FORBIDDEN,
                "subscription_blocked",
                "the subscription to this API is blocked",
                Client,
            ),
            SubscriptionOnHold => row(
                StatusCode::FORBIDDEN,
                "subscription_on_hold",
                "the subscription to this API is on hold",
                Client,
            ),
            InsufficientScope => row(
                StatusCode::FORBIDDEN,
                "insufficient_scope",
                "the credential lacks a scope this resource requires",
                Client,
            ),
            ApiBlocked => row(
                StatusCode::FORBIDDEN,
                "api_blocked",
                "this API is blocked",
                Client,
            ),
            ApiNotPublished => row(
                StatusCode::FORBIDDEN,
                "api_not_published",
                "this API is not published",
                Client,
            ),
            MediationFailed => row(
                StatusCode::INTERNAL_SERVER_ERROR,
                "mediation_failed",
                "a transformation of this API failed",
                Blame::Internal,
            ),
            UnsupportedMediaType => row(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                "unsupported_media_type",
                "this API does not accept a body of this content type",
                Client,
            ),
            UnsupportedTransferCoding => row(
                StatusCode::NOT_IMPLEMENTED,
                "unsupported_transfer_coding",
                "the only transfer coding accepted is chunked",
                Client,
            ),
            NotReady => row(
                StatusCode::SERVICE_UNAVAILABLE,
                "not_ready",
                "the gateway has no configuration yet; retry shortly",
                Blame::Internal,
            ),
            SnapshotStale => row(
                StatusCode::SERVICE_UNAVAILABLE,
                "snapshot_stale",
                "the gateway cannot reach its control plane to vouch for credentials; retry later",
                Blame::Internal,
            ),
            SandboxNotConfigured => row(
                StatusCode::FORBIDDEN,
                "sandbox_not_configured",
                "this API has no sandbox endpoint; use a production key",
                Client,
            ),
            EndpointsSuspended => row(
                StatusCode::SERVICE_UNAVAILABLE,
                "endpoints_suspended",
                "every endpoint of this API is suspended or unhealthy; retry shortly",
                Upstream,
            ),
            ModelNotAllowed => row(
                StatusCode::FORBIDDEN,
                "model_not_allowed",
                "your subscription's tier does not allow this model",
                Client,
            ),
            AiPromptDenied => row(
                StatusCode::BAD_REQUEST,
                "ai_prompt_denied",
                "the prompt is not allowed by this API's guardrails",
                Client,
            ),
            AiPiiDetected => row(
                StatusCode::BAD_REQUEST,
                "ai_pii_detected",
                "the prompt carries personal data this API refuses",
                Client,
            ),
            AiMaxTokensExceeded => row(
                StatusCode::BAD_REQUEST,
                "ai_max_tokens_exceeded",
                "the request asks for more tokens than this API allows",
                Client,
            ),
            AiGuardRefused => row(
                StatusCode::BAD_REQUEST,
                "ai_guard_refused",
                "the guard service refused the prompt",
                Client,
            ),
            AiGuardUnavailable => row(
                StatusCode::SERVICE_UNAVAILABLE,
                "ai_guard_unavailable",
                "the guard service could not be asked; retry shortly",
                Upstream,
            ),
            AiAnswerInvalid => row(
                StatusCode::BAD_GATEWAY,
                "ai_answer_invalid",
                "the model's answer does not meet the requested schema",
                Upstream,
            ),
        }
    }
}

/// A failed request: its kind, and for logs only, the cause.
#[derive(Debug, thiserror::Error)]
#[error("{}: {}", .kind.spec().code, .kind.spec().message)]
pub struct GatewayError {
    pub kind: ErrorKind,
    /// A more precise client message than the table's.
    pub detail: Option<Cow<'static, str>>,
    /// Headers the response carries besides `Content-Type`: `Allow` on 405, the
    /// `WWW-Authenticate` challenge on 401, `Retry-After` and `RateLimit` on 429 (boxed:
    /// the error stays small on the paths that return it).
    pub headers: Option<Box<HeaderMap>>,
    /// Members the JSON body carries after `request_id` (the 429's `policy`).
    pub fields: Vec<(&'static str, serde_json::Value)>,
    #[source]
    pub source: Option<Box<dyn std::error::Error + Send + Sync>>,
}

impl GatewayError {
    pub fn new(kind: ErrorKind) -> Self {
        GatewayError {
            kind,
            detail: None,
            headers: None,
            fields: Vec::new(),
            source: None,
        }
    }

    pub fn with_source(
        kind: ErrorKind,
        source: impl Into<Box<dyn std::error::Error + Send + Sync>>,
    ) -> Self {
        GatewayError {
            kind,
            detail: None,
            headers: None,
            fields: Vec::new(),
            source: Some(source.into()),
        }
    }

    /// Adds a response header (`Allow`, `WWW-Authenticate`, ...).
    pub fn with_header(mut self, name: HeaderName, value: HeaderValue) -> Self {
        self.headers
            .get_or_insert_with(Default::default)
            .insert(name, value);
        self
    }

    /// A header the response will carry.
    pub fn header(&self, name: &HeaderName) -> Option<&HeaderValue> {
        self.headers.as_ref().and_then(|h| h.get(name))
    }

    pub fn blame(&self) -> Blame {
        self.kind.spec().blame
    }

    /// The table's stable code of this error (also the metrics' `code` label).
    pub fn code(&self) -> &'static str {
        self.kind.spec().code
    }

    /// Turns the error into the client response: status from the table, JSON body,
    /// the challenge, `Allow` and the error's own headers. The response carries its
    /// [`ErrorKind`] in its extensions, so a response hook can tell the gateway's own
    /// answers from the upstream's (a response transformation leaves them alone).
    pub fn into_response(self, request_id: &HeaderValue) -> Response<Bytes> {
        let spec = self.kind.spec();
        // An upstream down under load fails every request: one line per second per
        // blame, with the count of those left out (`left_out`), not one per request.
        static UPSTREAM: LogLimit = LogLimit::new(Duration::from_secs(1));
        static INTERNAL: LogLimit = LogLimit::new(Duration::from_secs(1));
        match self.blame() {
            Blame::Client => {
                tracing::debug!(code = spec.code, error = ?self.source, "request refused")
            }
            Blame::Upstream => {
                if let Some(left_out) = UPSTREAM.allow() {
                    tracing::warn!(code = spec.code, error = ?self.source, left_out, "upstream failure")
                }
            }
            Blame::Internal => {
                if let Some(left_out) = INTERNAL.allow() {
                    tracing::error!(code = spec.code, error = ?self.source, left_out, "gateway failure")
                }
            }
        }
        let body = if self.detail.is_none() && self.fields.is_empty() {
            json_body(spec.code, spec.message, request_id.as_bytes())
        } else {
            rich_body(&self, request_id.as_bytes())
        };
        let mut resp = Response::new(body);
        *resp.status_mut() = spec.status;
        let h = resp.headers_mut();
        if let Some(extra) = self.headers {
            *h = *extra;
        }
        h.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        resp.extensions_mut().insert(self.kind);
        resp
    }
}

/// The body of an error with a precise message or extra fields (cold: a refusal).
#[cold]
fn rich_body(e: &GatewayError, request_id: &[u8]) -> Bytes {
    let spec = e.kind.spec();
    let mut m = serde_json::Map::with_capacity(3 + e.fields.len());
    m.insert("code".into(), spec.code.into());
    m.insert(
        "message".into(),
        e.detail.as_deref().unwrap_or(spec.message).into(),
    );
    m.insert(
        "request_id".into(),
        String::from_utf8_lossy(request_id).into_owned().into(),
    );
    for (k, v) in &e.fields {
        m.insert((*k).into(), v.clone());
    }
    Bytes::from(serde_json::Value::Object(m).to_string())
}

/// `{"code":"..","message":"..","request_id":".."}`. Codes are static ASCII without
/// quotes; a message with a quote, backslash or control character and the request id
/// (a client may have chosen it) are escaped.
pub fn json_body(code: &str, message: &str, request_id: &[u8]) -> Bytes {
    let rid = String::from_utf8_lossy(request_id);
    let rid = serde_json::Value::String(rid.into_owned()).to_string();
    let mut s = String::with_capacity(48 + code.len() + message.len() + rid.len());
    s.push_str("{\"code\":\"");
    s.push_str(code);
    s.push_str("\",\"message\":");
    if message.bytes().any(|b| b == b'"' || b == b'\\' || b < 0x20) {
        s.push_str(&serde_json::Value::String(message.to_owned()).to_string());
    } else {
        s.push('"');
        s.push_str(message);
        s.push('"');
    }
    s.push_str(",\"request_id\":");
    s.push_str(&rid);
    s.push('}');
    Bytes::from(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn body_is_valid_json_even_with_hostile_request_id() {
        let b = json_body("not_found", "nope", b"a\"b\\c");
        let v: serde_json::Value = serde_json::from_slice(&b).expect("json");
        assert_eq!(v["code"], "not_found");
        assert_eq!(v["request_id"], "a\"b\\c");
    }

    #[test]
    fn body_is_valid_json_with_a_message_that_needs_escaping() {
        let b = json_body("invalid_path", "a '\\' and a \"quote\"", b"r");
        let v: serde_json::Value = serde_json::from_slice(&b).expect("json");
        assert_eq!(v["message"], "a '\\' and a \"quote\"");
    }

    #[test]
    fn table_statuses() {
        assert_eq!(ErrorKind::BodyTooLarge.spec().status, 413);
        assert_eq!(ErrorKind::UpstreamResponseTimeout.spec().status, 504);
        assert_eq!(ErrorKind::UpstreamConnectTimeout.spec().status, 504);
        assert_eq!(ErrorKind::UpstreamConnectFailed.spec().status, 502);
        assert_eq!(ErrorKind::UpstreamReset.spec().status, 502);
        assert_eq!(ErrorKind::MediationFailed.spec().status, 500);
        assert_eq!(ErrorKind::UnsupportedMediaType.spec().status, 415);
        assert_eq!(ErrorKind::UnsupportedTransferCoding.spec().status, 501);
    }

    #[test]
    fn fields_and_headers_join_the_body_and_head() {
        let mut e = GatewayError::new(ErrorKind::Throttled);
        e.detail = Some(Cow::Owned("throttled by \"Gold\"".into()));
        e.fields.push(("retry_after", 3.into()));
        let mut h = HeaderMap::new();
        h.insert("retry-after", HeaderValue::from_static("3"));
        e.headers = Some(Box::new(h));
        let r = e.into_response(&HeaderValue::from_static("rid"));
        assert_eq!(r.status(), 429);
        assert_eq!(r.headers()["retry-after"], "3");
        assert_eq!(r.headers()[CONTENT_TYPE], "application/json");
        let v: serde_json::Value = serde_json::from_slice(r.body()).expect("json");
        assert_eq!(v["code"], "throttled");
        assert_eq!(v["message"], "throttled by \"Gold\"");
        assert_eq!(v["retry_after"], 3);
        assert_eq!(v["request_id"], "rid");
        assert_eq!(
            r.extensions().get::<ErrorKind>(),
            Some(&ErrorKind::Throttled)
        );
    }
}
