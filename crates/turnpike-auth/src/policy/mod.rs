//! The auth policy kind: the resource's `auth: none`, the credential (JWT, opaque token,
//! API key, HTTP Basic, through this crate's [`Authenticator`](crate::Authenticator)),
//! the subscription, the resource's
//! scopes; then the credential is stripped (an API key sent in the query leaves the
//! upstream query) and the back-end JWT added. A client's own header of the back-end
//! JWT's name is dropped from every request, signed or not (open resources too). What it learns goes into
//! [`RequestCtx::auth`] for the policies after it (throttling, analytics).
//!
//! An API with open operations (GraphQL `auth: none`) lets a request with no credential
//! at all go on marked [`Anonymous`]; the GraphQL policy then admits only open operations.
//!
//! JWTs (cached or not) and API keys are answered synchronously ([`Step::Done`]); only
//! opaque-token introspection and basic credentials not yet verified take the boxed
//! async path, so a secured API's common request costs no allocation here. Failures
//! leave through the one error table with a `WWW-Authenticate` challenge on 401.

use std::borrow::Cow;
use std::sync::Arc;

use http::header::WWW_AUTHENTICATE;
use http::request::Parts;
use turnpike_policy::http::query_param;
use turnpike_policy::{
    Anonymous, Authenticated, BuildCx, ErrorKind, Flow, GatewayError, HookResult, Hooks, Identity,
    Policy, PolicyKind, RequestCtx, Stage, Step,
};

use crate::authenticator::{strip_credentials, Check};
use crate::authz::ScopeRequirement;
use crate::error::AuthError;

mod resource;
mod security;

pub use resource::{is_mcp_path, ResourceMeta, MCP_PREFIX, WELL_KNOWN_PRM};
pub use security::{prepare, ApiSecurity, ResourceRule, Secured, SharedSecurity};

/// Authenticates and authorises each request of a secured API.
pub struct AuthPolicy {
    sec: Arc<ApiSecurity>,
}

impl AuthPolicy {
    /// What this API's requests must show (its authenticator, subscriptions, resource
    /// rules): read by the gateway's stale-snapshot refusal and its cache metrics.
    #[inline]
    pub fn security(&self) -> &ApiSecurity {
        &self.sec
    }

    /// This API's RFC 9728 metadata document (its MCP endpoint's with `mcp`) for a
    /// request that reached the gateway like `req` did; `None` unless the API publishes
    /// it (`auth.resource_metadata`).
    pub fn resource_metadata(&self, https: bool, req: &Parts, mcp: bool) -> Option<String> {
        self.sec.resource.document(https, req, mcp)
    }
}

impl Policy for AuthPolicy {
    fn name(&self) -> &'static str {
        "auth"
    }

    fn hooks(&self) -> Hooks {
        Hooks::REQUEST_HEADERS
    }

    fn on_request_headers<'a>(&'a self, ctx: &'a mut RequestCtx, req: &'a mut Parts) -> Step<'a> {
        let Some(authn) = &self.sec.authenticator else {
            return Step::CONTINUE;
        };
        if let Some(signer) = &self.sec.backend_jwt {
            // The back end trusts this header as the gateway's word: whatever a client
            // sent under its name goes, on open resources and anonymous operations too.
            // A signed request gets the gateway's own value in `admit`.
            req.headers.remove(signer.header_name());
        }
        let scopes = match self.sec.resource_rule(&req.method, ctx.upstream.path()) {
            Some(ResourceRule::Open) => return Step::CONTINUE,
            Some(ResourceRule::Scopes(s)) => Some(s),
            None => None,
        };
        match authn.check(req) {
            Check::Done(Err(AuthError::Missing)) if self.sec.anonymous_operations => {
                ctx.ext.insert(Anonymous);
                Step::CONTINUE
            }
            Check::Done(r) => Step::Done(self.admit(ctx, req, r, scopes)),
            // Cold: boxed so the introspection/argon2 future is not part of every
            // request's.
            Check::Pending(p) => Step::Pending(Box::pin(async move {
                let r = authn.resolve(p).await;
                self.admit(ctx, req, r, scopes)
            })),
        }
    }
}

impl AuthPolicy {
    /// Checks the subscription and scopes of a verified caller, strips the credential.
    fn admit(
        &self,
        ctx: &mut RequestCtx,
        req: &mut Parts,
        identity: Result<Arc<Identity>, AuthError>,
        scopes: Option<&ScopeRequirement>,
    ) -> HookResult {
        let sec = &*self.sec;
        let https = ctx.https;
        // A bearer refusal of an API published as a protected resource says where its
        // metadata is (RFC 9728 §5.1).
        let refused = |g: GatewayError| sec.resource.challenge(g, scopes, https, req);
        let identity = identity
            .and_then(|id| {
                if !id.resources.is_empty() || sec.resource.audience_check {
                    sec.resource.check_audience(&id, https, req)?;
                }
                Ok(id)
            })
            .map_err(|e| match e {
                // Name every scheme the API takes, not only Bearer.
                AuthError::Missing => {
                    let mut g = refuse(e);
                    if let Some(c) = sec.authenticator.as_ref().and_then(|a| a.challenge()) {
                        g = g.with_header(WWW_AUTHENTICATE, c);
                    }
                    refused(g)
                }
                e => refused(refuse(e)),
            })?;
        let subscription = sec.subscription(&identity).map_err(refuse)?;
        if let Some(s) = scopes {
            s.check(&identity).map_err(|e| refused(refuse(e)))?;
        }
        strip_credentials(req, sec.api_key_location.as_ref());
        if let Some(q) = sec
            .api_key_location
            .as_ref()
            .and_then(|l| l.query.as_deref())
        {
            strip_query_param(ctx, q);
        }
        if let Some(signer) = &sec.backend_jwt {
            let value = signer
                .header_value(&identity)
                .map_err(|e| GatewayError::with_source(ErrorKind::Internal, e))?;
            req.headers.insert(signer.header_name().clone(), value);
        }
        ctx.auth = Some(Authenticated {
            identity,
            subscription_tier: subscription.map(|s| s.tier.clone()),
        });
        Ok(Flow::Continue)
    }
}

/// Maps an auth failure onto the gateway's table, with its challenge.
pub fn refuse(e: AuthError) -> GatewayError {
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
    if let Some(challenge) = e.www_authenticate() {
        g = g.with_header(WWW_AUTHENTICATE, challenge);
    }
    g.detail = detail.map(Cow::Borrowed);
    g.source = Some(Box::new(e));
    g
}

/// Drops an API key sent as a query parameter so the upstream never sees it.
fn strip_query_param(ctx: &mut RequestCtx, name: &str) {
    let Some(query) = ctx.upstream.query() else {
        return;
    };
    let Some(kept) = without_param(query, name) else {
        return;
    };
    // The rest of a query the client sent through a valid URI stays valid.
    let _ = ctx.upstream.set_query(Some(&kept));
}

/// The query without `name`, re-encoded; `None` when `name` is absent. Names are
/// compared decoded, as the authenticator read the key ([`query_param`]).
fn without_param(query: &str, name: &str) -> Option<String> {
    query_param(query, name)?;
    let kept: Vec<(Cow<'_, str>, Cow<'_, str>)> = turnpike_policy::http::query_pairs(query)
        .filter(|(k, _)| k != name)
        .collect();
    Some(
        form_urlencoded::Serializer::new(String::new())
            .extend_pairs(kept)
            .finish(),
    )
}

/// The auth kind: `auth:` with the file's `security:` (problems reported where the
/// section is compiled, [`prepare`]).
pub struct Auth;

impl PolicyKind for Auth {
    const NAME: &'static str = "auth";
    type Spec = ();

    fn stage(_: &()) -> Stage {
        Stage::Auth
    }

    fn build(_: &(), cx: &mut BuildCx<'_>) -> Option<Arc<dyn Policy>> {
        let sec = cx.scratch.get::<Secured>()?.of(cx.api)?;
        sec.authenticator.as_ref()?;
        Some(Arc::new(AuthPolicy { sec: sec.clone() }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn query_key_is_stripped_others_kept() {
        assert_eq!(
            without_param("apikey=s3cret&x=1&y=a%20b", "apikey").as_deref(),
            Some("x=1&y=a+b")
        );
        assert_eq!(without_param("x=1", "apikey"), None);
        assert_eq!(without_param("apikey=1", "apikey").as_deref(), Some(""));
    }

    #[test]
    fn refusals_use_the_table_and_challenge() {
        let e = refuse(AuthError::Expired);
        assert_eq!(e.kind.spec().status, 401);
        assert!(e.header(&WWW_AUTHENTICATE).is_some());
        let e = refuse(AuthError::Malformed("the bearer token is malformed"));
        assert_eq!(e.kind.spec().status, 401);
        assert_eq!(e.kind.spec().code, "malformed_credentials");
        let e = refuse(AuthError::NotSubscribed);
        assert_eq!(e.kind.spec().status, 403);
        assert!(e.header(&WWW_AUTHENTICATE).is_none());
    }
}
