//! The throttle policy: after auth, it reads the caller (the `Identity` the auth policy
//! put in the request context, and its subscription's tier) or, for an unauthenticated
//! request, the client IP, asks the snapshot's `Throttler` (lock-free counters that
//! outlive reloads, no Redis round trip), and either refuses with the error table's 429
//! (`Retry-After`, the rate-limit headers, and the `policy` and `retry_after` fields) or
//! lets the request through and adds the rate-limit headers to the response. A bandwidth
//! quota also counts the response: the bytes sent are charged when the exchange
//! completes (`on_complete`), a hook only an API whose throttler has one asks for.
//!
//! `build.rs` compiles the file's `throttling:` section once per file ([`prepare`]).

mod build;

use std::borrow::Cow;
use std::sync::Arc;

use http::{request, response, HeaderMap};
use turnpike_model::clock::Clock;
use turnpike_policy::http::{content_length, query_param};
use turnpike_policy::{
    Authenticated, BuildCx, Claims, Completion, ErrorKind, GatewayError, Hooks, Identity, Policy,
    PolicyKind, RequestCtx, Stage, Step,
};

pub use build::{
    condition_claims, counters, prepare, ApiThrottle, ResourcePolicy, SharedThrottle, Throttled,
};

use crate::{Decision, Lookup, RequestFacts};

/// The throttle step of a throttled API's chain. Counters live in the runtime's
/// `CounterStore` ([`counters`]), the compiled policies in `ApiThrottle`.
pub struct ThrottlePolicy {
    t: Arc<ApiThrottle>,
    clock: Arc<dyn Clock>,
    hooks: Hooks,
}

impl ThrottlePolicy {
    /// What the policy compiled for its API (its throttler, ids and resource policies).
    pub fn api(&self) -> &ApiThrottle {
        &self.t
    }
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

    fn query(&self, name: &str) -> Option<Cow<'_, str>> {
        query_param(self.query?, name)
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
        self.hooks
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
        // No usable length (absent, bad or conflicting) charges nothing on the way in.
        let bytes = content_length(&req.headers).ok().flatten().unwrap_or(0);
        let facts = RequestFacts {
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
            bytes,
            lookup: &lookup,
        };
        let decision = t.throttler.check(&facts, self.clock.now());
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
        }
        Ok(())
    }

    /// Bandwidth quotas count responses too (as WSO2 does): the bytes sent are charged
    /// when the exchange completes, so the caller's next request over the quota is
    /// refused.
    fn on_complete(&self, ctx: &RequestCtx, done: &Completion) {
        if let Some(d) = ctx.throttle.as_ref().filter(|d| !d.charges.is_empty()) {
            let now = self.clock.now();
            self.t
                .throttler
                .charge_bytes(&d.charges, done.bytes_out, now);
        }
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
    let retry_after = crate::retry_after_secs(d);
    e.headers = Some(Box::new(h));
    e.detail = Some(Cow::Owned(throttler.message(d)));
    let policy = d.rule.map_or("", |id| throttler.policy_name(id));
    e.fields.push(("policy", policy.into()));
    e.fields.push(("retry_after", retry_after.into()));
    e
}

/// The throttle kind: `throttling:` of the API and its resources (problems reported
/// where the file's section is compiled, [`prepare`]).
pub struct Throttle;

impl PolicyKind for Throttle {
    const NAME: &'static str = "throttle";
    type Spec = ();

    fn stage(_: &()) -> Stage {
        Stage::Throttle
    }

    fn build(_: &(), cx: &mut BuildCx<'_>) -> Option<Arc<dyn Policy>> {
        let t = cx.scratch.get::<Throttled>()?.api(cx.api)?;
        let mut hooks = Hooks::REQUEST_HEADERS | Hooks::RESPONSE_HEADERS;
        // Only a bandwidth quota needs the bytes sent: other APIs pay nothing at the end.
        if t.throttler.has_bandwidth_quota() {
            hooks = hooks | Hooks::COMPLETE;
        }
        Some(Arc::new(ThrottlePolicy {
            t: t.clone(),
            clock: cx.runtime.clock().clone(),
            hooks,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use turnpike_model::GatewayFile;
    use turnpike_policy::{Runtime, Scratch};

    /// The hooks of the throttle policy of a file whose one policy has `limit`.
    fn hooks_of(limit: &str) -> Hooks {
        let yaml = format!(
            "throttling:\n  advanced_policies:\n    - name: Mine\n      \
             default_limit: {{ {limit}: 3000, per: minute }}\n\
             apis:\n  - name: a\n    context: /a\n    version: v1\n    \
             throttling: Mine\n    endpoints: [\"http://127.0.0.1:9\"]\n"
        );
        let file: GatewayFile = serde_yaml::from_str(&yaml).expect("the file parses");
        let (runtime, mut scratch, mut problems) = (Runtime::default(), Scratch::default(), vec![]);
        prepare(&file, &runtime, None, &mut scratch, &mut problems);
        assert!(problems.is_empty(), "{problems:?}");
        let mut cx = BuildCx {
            api: 0,
            at: "apis[0].throttling".into(),
            problems: &mut problems,
            runtime: &runtime,
            file: &file,
            scratch: &mut scratch,
        };
        Throttle::build(&(), &mut cx).expect("throttled").hooks()
    }

    #[test]
    fn only_a_bandwidth_quota_asks_for_the_end_of_the_exchange() {
        assert!(hooks_of("bytes").contains(Hooks::COMPLETE));
        let requests = hooks_of("requests");
        assert!(!requests.contains(Hooks::COMPLETE));
        assert!(requests.contains(Hooks::REQUEST_HEADERS | Hooks::RESPONSE_HEADERS));
    }

    /// Whether an open API's chain gets a throttle policy under `throttling` (YAML).
    fn open_api_throttled(throttling: &str) -> bool {
        let yaml = format!(
            "{throttling}apis:\n  - name: a\n    context: /a\n    version: v1\n    \
             endpoints: [\"http://127.0.0.1:9\"]\n"
        );
        let file: GatewayFile = serde_yaml::from_str(&yaml).expect("the file parses");
        let (runtime, mut scratch, mut problems) = (Runtime::default(), Scratch::default(), vec![]);
        prepare(&file, &runtime, None, &mut scratch, &mut problems);
        assert!(problems.is_empty(), "{problems:?}");
        let mut cx = BuildCx {
            api: 0,
            at: "apis[0]".into(),
            problems: &mut problems,
            runtime: &runtime,
            file: &file,
            scratch: &mut scratch,
        };
        Throttle::build(&(), &mut cx).is_some()
    }

    /// An open API pays for throttling only when the file names an unauthenticated tier:
    /// without one (or with `Unlimited`) its chain holds no throttle policy at all.
    #[test]
    fn open_apis_are_throttled_only_under_a_named_unauthenticated_tier() {
        assert!(!open_api_throttled(""));
        assert!(!open_api_throttled("throttling:\n  headers: ietf\n"));
        assert!(!open_api_throttled(
            "throttling:\n  unauthenticated_tier: Unlimited\n"
        ));
        assert!(open_api_throttled(
            "throttling:\n  unauthenticated_tier: Unauthenticated\n"
        ));
    }

    #[test]
    fn query_lookup_finds_the_first_pair() {
        let h = HeaderMap::new();
        let l = RequestLookup {
            headers: &h,
            query: Some("a=1&plan=gold&plan=x&flag"),
            claims: None,
        };
        assert_eq!(l.query("plan").as_deref(), Some("gold"));
        assert_eq!(l.query("flag").as_deref(), Some(""));
        assert_eq!(l.query("missing"), None);
    }

    /// One meaning of a query value: conditions compare it decoded (the raw
    /// `gold%20plan` or `gold+plan` never equals the `gold plan` a policy names).
    #[test]
    fn query_lookup_decodes_the_value() {
        let h = HeaderMap::new();
        for query in ["plan=gold%20plan", "plan=gold+plan", "pl%61n=gold+plan"] {
            let l = RequestLookup {
                headers: &h,
                query: Some(query),
                claims: None,
            };
            assert_eq!(l.query("plan").as_deref(), Some("gold plan"), "{query}");
        }
    }
}
