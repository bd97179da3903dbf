//! The throttle policy: after auth, it reads the caller (the `Identity` the auth policy
//! put in the request context, and its subscription's tier) or, for an unauthenticated
//! request, the client IP, asks the snapshot's `Throttler` (lock-free counters that
//! outlive reloads, no Redis round trip), and either refuses with the error table's 429
//! (`Retry-After`, the rate-limit headers, and the `policy` and `retry_after` fields) or
//! lets the request through and adds the rate-limit headers to the response.

use std::borrow::Cow;
use std::sync::Arc;

use http::header::CONTENT_LENGTH;
use http::{request, response, HeaderMap};
use turnpike_auth::Claims;
use turnpike_policy::{
    Authenticated, BuildCx, ErrorKind, GatewayError, Hooks, OnBodyEnd, Policy, PolicyKind,
    RequestCtx, Stage, Step,
};
use turnpike_throttle::{Clock, Decision, Lookup, RequestFacts, SystemClock, Throttler};

use crate::throttling::ApiThrottle;

/// The throttle step of a throttled API's chain. Counters live in the process's
/// `CounterStore` (`PolicyRuntime.throttle`), the compiled policies in `ApiThrottle`.
pub(crate) struct ThrottlePolicy {
    pub(crate) t: Arc<ApiThrottle>,
}

/// Headers, the raw query string and the token claims the snapshot's conditions read
/// (kept in the identity at verification): conditional groups look here.
struct RequestLookup<'a> {
    headers: &'a HeaderMap,
    query: Option<&'a str>,
    claims: Option<&'a Claims>,
}

impl Lookup for RequestLookup<'_> {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    fn query(&self, name: &str) -> Option<&str> {
        self.query?.split('&').find_map(|pair| {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            (k == name).then_some(v)
        })
    }

    fn claim(&self, name: &str) -> Option<&str> {
        self.claims?.get(name)
    }
}

impl Policy for ThrottlePolicy {
    fn name(&self) -> &'static str {
        "throttle"
    }

    fn hooks(&self) -> Hooks {
        Hooks::REQUEST_HEADERS | Hooks::RESPONSE_HEADERS
    }

    fn on_request_headers<'a>(
        &'a self,
        ctx: &'a mut RequestCtx,
        req: &'a mut request::Parts,
    ) -> Step<'a> {
        let t = &*self.t;
        let identity = ctx.auth.as_ref().map(|a: &Authenticated| &*a.identity);
        let application = identity.and_then(|i| i.application_id.as_deref());
        let resource = t.resource_policy(&req.method, ctx.upstream.path());
        let lookup = RequestLookup {
            headers: &req.headers,
            query: req.uri.query(),
            claims: identity.map(|i| &i.claims),
        };
        let bytes = req
            .headers
            .get(CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse().ok())
            .unwrap_or(0);
        let facts = RequestFacts {
            api_id: &t.api_id,
            resource: resource.map(|r| &*r.key),
            application_id: application,
            user: identity.map(|i| &*i.subject),
            // An authenticated caller without a subscription (an API that does not
            // require one) counts on its application tier only.
            subscription_tier: ctx.subscription_tier(),
            application_tier: application.and_then(|a| t.application_tier(a)),
            api_policy: t.api_policy.as_deref(),
            resource_policy: resource.map(|r| &*r.policy),
            client_ip: ctx.client.ip(),
            bytes,
            lookup: &lookup,
        };
        let decision = t.throttler.check(&facts, SystemClock.now());
        if !decision.allowed {
            let e = refusal(t, &decision);
            ctx.throttled_by = decision
                .rule
                .map(|id| Arc::from(t.throttler.policy_name(id)));
            return Step::Done(Err(e));
        }
        if decision.rule.is_some() {
            ctx.throttle = Some(decision);
        }
        Step::CONTINUE
    }

    fn on_response_headers(
        &self,
        ctx: &mut RequestCtx,
        resp: &mut response::Parts,
    ) -> Result<(), GatewayError> {
        if let Some(d) = ctx.throttle.as_ref() {
            let t = &*self.t;
            t.throttler.write_headers(d, t.headers, &mut resp.headers);
            if !d.charges.is_empty() {
                charge_response(&t.throttler, d, resp);
            }
        }
        Ok(())
    }
}

/// Bandwidth quotas count responses too (as WSO2 does): the response's `Content-Length`
/// is charged when its head arrives, so the caller's next request over the quota is
/// refused; a response without one (chunked) is charged the bytes sent when its body
/// ends.
fn charge_response(throttler: &Arc<Throttler>, d: &Decision, resp: &mut response::Parts) {
    let len = resp
        .headers
        .get(CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    match len {
        Some(n) => throttler.charge_bytes(&d.charges, n, SystemClock.now()),
        None => {
            let (throttler, charges) = (throttler.clone(), d.charges);
            resp.extensions.insert(OnBodyEnd(Arc::new(move |n| {
                throttler.charge_bytes(&charges, n, SystemClock.now());
            })));
        }
    }
}

/// The 429: a table error carrying the throttler's headers and fields.
#[cold]
fn refusal(t: &ApiThrottle, d: &Decision) -> GatewayError {
    let throttler = &t.throttler;
    if let Some(rule) = d.rule {
        tracing::debug!(api = %t.api_id, rule = throttler.rule_label(rule), "throttled");
    }
    let mut e = GatewayError::new(ErrorKind::Throttled);
    let mut h = HeaderMap::new();
    throttler.write_headers(d, t.headers, &mut h);
    let retry_after = turnpike_throttle::retry_after_secs(d);
    e.headers = Some(Box::new(h));
    e.detail = Some(Cow::Owned(throttler.message(d)));
    let policy = d.rule.map_or("", |id| throttler.policy_name(id));
    e.fields.push(("policy", policy.into()));
    e.fields.push(("retry_after", retry_after.into()));
    e
}

/// Every API's compiled throttling (indexed like `file.apis`), prepared once per file.
pub(crate) struct Throttled(pub(crate) Vec<Option<Arc<ApiThrottle>>>);

/// The throttle kind: `throttling:` of the API and its resources (problems reported
/// where the file's section is compiled, `throttling::compile`).
pub(crate) struct Throttle;

impl PolicyKind for Throttle {
    const NAME: &'static str = "throttle";
    type Spec = ();

    fn stage(_: &()) -> Stage {
        Stage::Throttle
    }

    fn build(_: &(), cx: &mut BuildCx<'_>) -> Option<Arc<dyn Policy>> {
        let t = cx.scratch.get::<Throttled>()?.0.get(cx.api)?.as_ref()?;
        Some(Arc::new(ThrottlePolicy { t: t.clone() }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn query_lookup_finds_the_first_pair() {
        let h = HeaderMap::new();
        let l = RequestLookup {
            headers: &h,
            query: Some("a=1&plan=gold&plan=x&flag"),
            claims: None,
        };
        assert_eq!(l.query("plan"), Some("gold"));
        assert_eq!(l.query("flag"), Some(""));
        assert_eq!(l.query("missing"), None);
    }
}
