//! The auth step of the request path, run after routing and before the policy chain:
//! the API's lifecycle, the resource's `auth: none`, the credential (JWT, opaque token,
//! API key, HTTP Basic through `turnpike-auth`), the subscription, the resource's
//! scopes; then the credential is stripped and the back-end JWT added. What it learns
//! goes into [`RequestCtx::auth`](crate::policy::RequestCtx) for the throttle policy.
//!
//! JWTs (cached or not) and API keys are answered synchronously; only opaque-token
//! introspection and basic credentials not yet verified take the boxed async path, so a
//! secured API's common request costs no allocation here. Failures leave through the
//! gateway's one error table (`error.rs`) with a `WWW-Authenticate` challenge on 401.

use std::borrow::Cow;

use http::request::Parts;
use http::uri::PathAndQuery;
use http::Uri;
use turnpike_auth::{strip_credentials, AuthError, Check};
use turnpike_config::{ApiSecurity, LifecycleBlock, ResourceRule};

use crate::error::{ErrorKind, GatewayError};
use crate::policy::Authenticated;

/// Authenticates and authorises one request to a secured (or blocked) API. `Ok(None)`:
/// the request goes on unauthenticated (open API or open resource).
pub(crate) async fn enforce<'a>(
    sec: &'a ApiSecurity,
    parts: &mut Parts,
    upstream_path: &str,
) -> Result<Option<Authenticated<'a>>, GatewayError> {
    if let Some(block) = sec.lifecycle {
        return Err(GatewayError::new(match block {
            LifecycleBlock::Blocked => ErrorKind::ApiBlocked,
            LifecycleBlock::NotPublished => ErrorKind::ApiNotPublished,
        }));
    }
    let Some(authn) = &sec.authenticator else {
        return Ok(None);
    };
    let scopes = match sec.resource_rule(&parts.method, upstream_path) {
        Some(ResourceRule::Open) => return Ok(None),
        Some(ResourceRule::Scopes(s)) => Some(s),
        None => None,
    };
    let identity = match authn.check(parts) {
        Check::Done(r) => r,
        // Cold: boxed so the introspection/argon2 future is not part of every request's.
        Check::Pending(p) => Box::pin(authn.resolve(p)).await,
    }
    .map_err(|e| match e {
        // Name every scheme the API takes, not only Bearer.
        AuthError::Missing => {
            let mut g = refuse(e);
            g.www_authenticate = authn.challenge().or(g.www_authenticate);
            g
        }
        e => refuse(e),
    })?;
    let subscription = sec.subscription(&identity).map_err(refuse)?;
    if let Some(s) = scopes {
        s.check(&identity).map_err(refuse)?;
    }
    strip_credentials(parts, sec.api_key_location.as_ref());
    if let Some(q) = sec
        .api_key_location
        .as_ref()
        .and_then(|l| l.query.as_deref())
    {
        strip_query_param(parts, q);
    }
    if let Some(signer) = &sec.backend_jwt {
        let value = signer
            .header_value(&identity)
            .map_err(|e| GatewayError::with_source(ErrorKind::Internal, e))?;
        parts.headers.insert(signer.header_name().clone(), value);
    }
    Ok(Some(Authenticated {
        identity,
        subscription,
    }))
}

/// Maps an auth failure onto the gateway's table, with its challenge.
pub(crate) fn refuse(e: AuthError) -> GatewayError {
    let kind = match &e {
        AuthError::Missing => ErrorKind::MissingCredentials,
        AuthError::Malformed(_) => ErrorKind::MalformedCredentials,
        AuthError::InvalidToken(_) => ErrorKind::InvalidToken,
        AuthError::Expired => ErrorKind::ExpiredToken,
        AuthError::Revoked => ErrorKind::RevokedToken,
        AuthError::InvalidApiKey => ErrorKind::InvalidApiKey,
        AuthError::InvalidBasic => ErrorKind::InvalidCredentials,
        AuthError::Unavailable => ErrorKind::AuthUnavailable,
        AuthError::NotSubscribed => ErrorKind::NotSubscribed,
        AuthError::SubscriptionBlocked => ErrorKind::SubscriptionBlocked,
        AuthError::SubscriptionOnHold => ErrorKind::SubscriptionOnHold,
        AuthError::InsufficientScope(_) => ErrorKind::InsufficientScope,
    };
    let detail = match &e {
        AuthError::Malformed(m) | AuthError::InvalidToken(m) => Some(*m),
        _ => None,
    };
    let mut g = GatewayError::new(kind);
    g.www_authenticate = e.www_authenticate();
    g.detail = detail;
    g.source = Some(Box::new(e));
    g
}

/// Drops an API key sent as a query parameter so the upstream never sees it.
fn strip_query_param(parts: &mut Parts, name: &str) {
    let Some(query) = parts.uri.query() else {
        return;
    };
    let present = form_urlencoded::parse(query.as_bytes()).any(|(k, _)| k == name);
    if !present {
        return;
    }
    let kept: Vec<(Cow<'_, str>, Cow<'_, str>)> = form_urlencoded::parse(query.as_bytes())
        .filter(|(k, _)| k != name)
        .collect();
    let mut pq = parts.uri.path().to_owned();
    if !kept.is_empty() {
        pq.push('?');
        pq.push_str(
            &form_urlencoded::Serializer::new(String::new())
                .extend_pairs(kept)
                .finish(),
        );
    }
    let mut uri = parts.uri.clone().into_parts();
    if let Ok(pq) = PathAndQuery::try_from(pq) {
        uri.path_and_query = Some(pq);
        if let Ok(u) = Uri::from_parts(uri) {
            parts.uri = u;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn query_key_is_stripped_others_kept() {
        let (mut parts, ()) = http::Request::get("/pets/1?apikey=s3cret&x=1&y=a%20b")
            .body(())
            .unwrap_or_default()
            .into_parts();
        strip_query_param(&mut parts, "apikey");
        assert_eq!(parts.uri.path(), "/pets/1");
        assert_eq!(parts.uri.query(), Some("x=1&y=a+b"));
        strip_query_param(&mut parts, "x");
        strip_query_param(&mut parts, "y");
        assert_eq!(parts.uri.to_string(), "/pets/1");
    }

    #[test]
    fn refusals_use_the_table_and_challenge() {
        let e = refuse(AuthError::Expired);
        assert_eq!(e.kind.spec().status, 401);
        assert!(e.www_authenticate.is_some());
        let e = refuse(AuthError::Malformed("the bearer token is malformed"));
        assert_eq!(e.kind.spec().status, 401);
        assert_eq!(e.kind.spec().code, "malformed_credentials");
        let e = refuse(AuthError::NotSubscribed);
        assert_eq!(e.kind.spec().status, 403);
        assert!(e.www_authenticate.is_none());
    }
}
