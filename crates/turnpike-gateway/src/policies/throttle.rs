//! The throttle policy: after auth, it reads the caller (the `Identity` the auth step
//! put in the request context, `RequestCtx::identity`, and its subscription's tier) or, for an unauthenticated
//! request, the client IP, asks the snapshot's `Throttler` (lock-free counters that
//! outlive reloads, no Redis round trip), and either answers 429 with `Retry-After`, the
//! rate-limit headers and a JSON error naming the policy, or lets the request through
//! and adds the rate-limit headers to the upstream's response.
//!
//! The 429's status and code come from the gateway's error table
//! (`ErrorKind::Throttled`); the body adds `policy` and `retry_after`.

use std::sync::Arc;

use http::header::{CONTENT_LENGTH, CONTENT_TYPE};
use http::{request, response, HeaderMap, HeaderValue, Response};
use turnpike_auth::Claims;
use turnpike_config::{ApiThrottle, CompiledApi};
use turnpike_throttle::{Clock, Decision, Lookup, RequestFacts, SystemClock, Throttler};

use crate::body::{GatewayBody, OnBodyEnd};
use crate::error::{ErrorKind, GatewayError};
use crate::policy::{Flow, Policy, RequestCtx};

/// The throttle step of the chain. Stateless: counters live in the process's
/// `CounterStore` (`PolicyRuntime.throttle`), policies in the snapshot.
#[derive(Debug, Default)]
pub struct ThrottlePolicy;

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

/// The request path below `/{context}/{version}` (or `/{context}` for a default version).
fn upstream_path<'p>(api: &CompiledApi, path: &'p str) -> &'p str {
    let Some(rest) = path.strip_prefix(api.context.as_str()) else {
        return path;
    };
    let versioned = rest
        .strip_prefix('/')
        .and_then(|r| r.strip_prefix(api.version.as_str()))
        .filter(|r| r.is_empty() || r.starts_with('/'));
    match versioned.unwrap_or(rest) {
        "" => "/",
        p => p,
    }
}

impl Policy for ThrottlePolicy {
    fn name(&self) -> &'static str {
        "throttle"
    }

    fn on_request_headers(
        &self,
        ctx: &mut RequestCtx<'_>,
        req: &mut request::Parts,
    ) -> Result<Flow, GatewayError> {
        let Some(t) = ctx.api.throttle.as_ref() else {
            return Ok(Flow::Continue);
        };
        let identity = ctx.identity().map(|i| &**i);
        let application = identity.and_then(|i| i.application_id.as_deref());
        let subscription_tier = ctx.subscription().map(|s| s.tier.as_str());
        let resource = t.resource_policy(&req.method, upstream_path(ctx.api, req.uri.path()));
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
            subscription_tier,
            application_tier: application.and_then(|a| t.application_tier(a)),
            api_policy: t.api_policy.as_deref(),
            resource_policy: resource.map(|r| &*r.policy),
            client_ip: ctx.client.ip(),
            bytes,
            lookup: &lookup,
        };
        let decision = t.throttler.check(&facts, SystemClock.now());
        if !decision.allowed {
            return Ok(Flow::Respond(refusal(&t.throttler, t, &decision, ctx)));
        }
        if decision.rule.is_some() {
            ctx.throttle = Some(decision);
        }
        Ok(Flow::Continue)
    }

    fn on_response_headers(
        &self,
        ctx: &mut RequestCtx<'_>,
        resp: &mut response::Parts,
    ) -> Result<(), GatewayError> {
        if let (Some(t), Some(d)) = (ctx.api.throttle.as_ref(), ctx.throttle.as_ref()) {
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

/// The 429: status and code from the error table, the throttler's body and headers.
fn refusal(
    throttler: &Throttler,
    t: &ApiThrottle,
    d: &Decision,
    ctx: &RequestCtx<'_>,
) -> Response<GatewayBody> {
    let spec = ErrorKind::Throttled.spec();
    let rid = ctx.request_id.to_str().unwrap_or("");
    if let Some(rule) = d.rule {
        tracing::debug!(api = %t.api_id, rule = throttler.rule_label(rule), "throttled");
    }
    let mut resp = Response::new(GatewayBody::full(throttler.error_body(d, rid)));
    *resp.status_mut() = spec.status;
    let h = resp.headers_mut();
    h.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    throttler.write_headers(d, t.headers, h);
    resp
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
