//! What the throttle kinds share on the request side: the request as the throttler
//! sees it ([`request_facts`], with the lookup conditions and `by` keys read), the
//! error table's 429 ([`throttled`]) and the token budgets' decision in `ctx.ext`
//! ([`Tokens`]).

use std::borrow::Cow;

use http::{request, HeaderMap};
use turnpike_policy::http::{content_length, query_param};
use turnpike_policy::{Claims, ErrorKind, GatewayError, Identity, RequestCtx};

use super::build::ApiThrottle;
use crate::{Lookup, RequestFacts};

/// The token budgets' decision for one call ([`TokenBudget`]'s), in `ctx.ext`: the
/// throttle policy writes its `RateLimit` headers beside the request quota's, being the
/// one writer of those headers (its response hook runs on the budget's 429 too, as on
/// every response of a policy after it in the chain).
#[derive(Clone, Debug)]
pub struct Tokens(pub crate::TokenDecision);

/// Headers, the raw query string and the token claims the snapshot's conditions read
/// (kept in the identity at verification): conditional groups look here.
pub(crate) struct RequestLookup<'a> {
    pub(crate) headers: &'a HeaderMap,
    pub(crate) query: Option<&'a str>,
    pub(crate) claims: Option<&'a Claims>,
}

impl Lookup for RequestLookup<'_> {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    fn query(&self, name: &str) -> Option<Cow<'_, str>> {
        query_param(self.query?, name)
    }

    fn claim(&self, name: &str) -> Option<&str> {
        self.claims?.get(name)
    }
}

/// The request as the throttler sees it: the caller (the identity auth left in `ctx`),
/// its tiers, the API's and the matched resource's policies, the client address.
pub(crate) fn request_facts<'a>(
    t: &'a ApiThrottle,
    ctx: &'a RequestCtx,
    req: &'a request::Parts,
    lookup: &'a RequestLookup<'a>,
) -> RequestFacts<'a> {
    let identity = ctx.identity().map(|i| &**i);
    let application = identity.and_then(|i| i.application_id.as_deref());
    let resource = t.resource_policy(&req.method, ctx.upstream.path());
    RequestFacts {
        api_id: &t.api_id,
        resource: resource.map(|r| &*r.key),
        application_id: application,
        user: identity.map(end_user),
        // An authenticated caller without a subscription (an API that does not
        // require one) counts on its application tier only.
        subscription_tier: ctx.subscription_tier(),
        application_tier: application.and_then(|a| t.application_tier(a)),
        api_policy: t.api_policy.as_deref(),
        resource_policy: resource.map(|r| &*r.policy),
        client_ip: ctx.client.ip(),
        // No usable length (absent, bad or conflicting) charges nothing on the way in.
        bytes: content_length(&req.headers).ok().flatten().unwrap_or(0),
        lookup,
    }
}

/// The end user an application tier counts: the credential's subject, except for a token
/// a client got for itself (client credentials: its `sub` is the client id, RFC 9068
/// §2.2), which counts as the application's owner, the end user of the application's
/// API keys too (WSO2's rule): one application's key and token share one quota.
fn end_user(i: &Identity) -> &str {
    match (
        i.principal.client_id.as_deref(),
        i.principal.subscriber.as_deref(),
    ) {
        (Some(client), Some(owner)) if client == &*i.subject => owner,
        _ => &i.subject,
    }
}

/// The error table's 429 with `headers`, `message` and the `policy` and `retry_after`
/// fields (a request quota's refusal and a token budget's alike).
pub(crate) fn throttled(
    headers: HeaderMap,
    message: String,
    policy: &str,
    retry_after: u64,
) -> GatewayError {
    let mut e = GatewayError::new(ErrorKind::Throttled);
    e.headers = Some(Box::new(headers));
    e.detail = Some(Cow::Owned(message));
    e.fields.push(("policy", policy.into()));
    e.fields.push(("retry_after", retry_after.into()));
    e
}
