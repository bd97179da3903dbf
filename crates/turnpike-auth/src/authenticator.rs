//! [`Authenticator`]: one per API (or resource), built from the snapshot. It reads the
//! credential from the request head (Bearer JWT or opaque token, HTTP Basic, API key in a
//! header or query parameter) and hands it to the right validator. Everything that can
//! be answered from memory (JWTs, API keys, cache hits) is answered synchronously by
//! [`Authenticator::check`]; only cache misses of opaque tokens and basic credentials
//! return [`Check::Pending`] for the async [`Authenticator::resolve`].

use std::sync::Arc;

use http::header::{HeaderName, AUTHORIZATION};
use http::request::Parts;
use turnpike_policy::http::query_param;
use turnpike_policy::Identity;

use crate::apikey::ApiKeyValidator;
use crate::basic::{decode_basic, BasicValidator};
use crate::cache::TokenKey;
use crate::error::AuthError;
use crate::introspect::Introspector;
use crate::jwt::{JwtValidator, Revocations};

/// Where an API key is read from.
#[derive(Debug, Clone)]
pub struct ApiKeyLocation {
    pub header: Option<HeaderName>,
    pub query: Option<String>,
}

impl Default for ApiKeyLocation {
    fn default() -> Self {
        Self {
            header: Some(HeaderName::from_static("apikey")),
            query: None,
        }
    }
}

/// The validators an API accepts; `None` means that method is off.
#[derive(Default)]
pub struct Authenticator {
    pub jwt: Option<Arc<JwtValidator>>,
    pub introspector: Option<Arc<Introspector>>,
    pub api_keys: Option<(ApiKeyLocation, Arc<ApiKeyValidator>)>,
    pub basic: Option<Arc<BasicValidator>>,
    pub revocations: Arc<Revocations>,
}

/// A credential that needs I/O (introspection) or CPU off the executor (argon2).
pub enum Pending {
    Opaque(String),
    Basic(String, String),
}

/// The synchronous answer.
pub enum Check {
    Done(Result<Arc<Identity>, AuthError>),
    Pending(Pending),
}

/// RFC 6750 b64token: the only characters a bearer token may have.
fn is_b64token(t: &str) -> bool {
    let body = t.trim_end_matches('=');
    !body.is_empty()
        && body
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-._~+/".contains(&b))
}

impl Authenticator {
    /// Authenticates from the request head.
    pub async fn authenticate(&self, parts: &Parts) -> Result<Arc<Identity>, AuthError> {
        match self.check(parts) {
            Check::Done(r) => r,
            Check::Pending(p) => self.resolve(p).await,
        }
    }

    /// Answers from memory when it can.
    pub fn check(&self, parts: &Parts) -> Check {
        let mut values = parts.headers.get_all(AUTHORIZATION).iter();
        if let Some(value) = values.next() {
            if values.next().is_some() {
                return Check::Done(Err(AuthError::Malformed(
                    "more than one Authorization header",
                )));
            }
            // UTF-8 validation is vectorised (`to_str` walks byte by byte); a bearer
            // token is checked against the b64token alphabet unless it is a cache hit.
            let Ok(value) = std::str::from_utf8(value.as_bytes()) else {
                return Check::Done(Err(AuthError::Malformed(
                    "the Authorization header is not ASCII",
                )));
            };
            let (scheme, rest) = value.split_once(' ').unwrap_or((value, ""));
            let rest = rest.trim();
            if scheme.eq_ignore_ascii_case("bearer") && self.accepts_bearer() {
                return self.bearer(rest);
            }
            if scheme.eq_ignore_ascii_case("basic") {
                if let Some(basic) = &self.basic {
                    return match decode_basic(rest) {
                        Ok((u, p)) => match basic.peek(&u, &p) {
                            Some(r) => Check::Done(r),
                            None => Check::Pending(Pending::Basic(u, p)),
                        },
                        Err(e) => Check::Done(Err(e)),
                    };
                }
            }
            if self.api_keys.is_none() {
                return Check::Done(Err(AuthError::Malformed(
                    "unsupported authorization scheme",
                )));
            }
        }
        if let Some((loc, keys)) = &self.api_keys {
            let from_header = loc
                .header
                .as_ref()
                .and_then(|h| parts.headers.get(h))
                .map(|v| v.to_str().map(|s| std::borrow::Cow::Borrowed(s.trim())));
            let presented = match from_header {
                Some(Ok(v)) => Some(v),
                Some(Err(_)) => return Check::Done(Err(AuthError::InvalidApiKey)),
                None => loc
                    .query
                    .as_deref()
                    .and_then(|name| query_param(parts.uri.query()?, name)),
            };
            if let Some(k) = presented.filter(|k| !k.is_empty()) {
                return Check::Done(keys.validate(&k));
            }
        }
        Check::Done(Err(AuthError::Missing))
    }

    /// The `WWW-Authenticate` value for a request that brought no credential: every
    /// scheme this API accepts (RFC 7235 §4.1: several challenges in one value), so a
    /// client of an API-key API learns it needs a key, not only a bearer token. Built
    /// on that error path only.
    pub fn challenge(&self) -> Option<http::HeaderValue> {
        let mut out = Vec::new();
        if self.accepts_bearer() {
            out.push("Bearer realm=\"turnpike\"".to_owned());
        }
        if let Some((loc, _)) = &self.api_keys {
            let mut c = "ApiKey realm=\"turnpike\"".to_owned();
            if let Some(h) = &loc.header {
                c.push_str(&format!(", header=\"{h}\""));
            }
            if let Some(q) = &loc.query {
                c.push_str(&format!(", query=\"{}\"", q.replace(['"', '\\'], "")));
            }
            out.push(c);
        }
        if self.basic.is_some() {
            out.push("Basic realm=\"turnpike\", charset=\"UTF-8\"".to_owned());
        }
        http::HeaderValue::from_str(&out.join(", ")).ok()
    }

    fn accepts_bearer(&self) -> bool {
        self.jwt.is_some() || self.introspector.is_some()
    }

    fn bearer(&self, token: &str) -> Check {
        // The common case first: a token seen before is answered by its digest alone
        // (the cached identity was built from these exact bytes after every check).
        let key = TokenKey::of(token);
        if let Some(r) = self.jwt.as_ref().and_then(|j| j.cached(&key)) {
            return Check::Done(r);
        }
        if let Some(r) = self
            .introspector
            .as_ref()
            .and_then(|i| i.peek_key(&key, &self.revocations))
        {
            return Check::Done(r);
        }
        if !is_b64token(token) {
            return Check::Done(Err(AuthError::Malformed("the bearer token is malformed")));
        }
        if token.bytes().filter(|b| *b == b'.').count() == 2 {
            return Check::Done(match &self.jwt {
                Some(jwt) => jwt.verify_and_cache(token, key),
                None => Err(AuthError::InvalidToken("JWTs are not accepted by this API")),
            });
        }
        match &self.introspector {
            Some(_) => Check::Pending(Pending::Opaque(token.to_owned())),
            None => Check::Done(Err(AuthError::InvalidToken(
                "opaque tokens are not accepted by this API",
            ))),
        }
    }

    /// Finishes a pending check.
    pub async fn resolve(&self, pending: Pending) -> Result<Arc<Identity>, AuthError> {
        match pending {
            Pending::Opaque(token) => match &self.introspector {
                Some(i) => i.validate(&token, &self.revocations).await,
                None => Err(AuthError::InvalidToken(
                    "opaque tokens are not accepted by this API",
                )),
            },
            Pending::Basic(u, p) => match &self.basic {
                Some(b) => b.validate(&u, &p).await,
                None => Err(AuthError::Missing),
            },
        }
    }
}

/// Removes the caller's credential from a request before it goes upstream (the
/// back end must not see the client's token, key or password).
pub fn strip_credentials(parts: &mut Parts, api_key: Option<&ApiKeyLocation>) {
    parts.headers.remove(AUTHORIZATION);
    if let Some(h) = api_key.and_then(|l| l.header.as_ref()) {
        parts.headers.remove(h);
    }
}
