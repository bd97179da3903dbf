//! The throttle policy: after auth, it reads the caller (the `Identity` the auth policy
//! put in the request context, and its subscription's tier) or, for an unauthenticated
//! request, the client IP, asks the snapshot's `Throttler` (lock-free counters that
//! outlive reloads, no Redis round trip), and either refuses with the error table's 429
//! (`Retry-After`, the rate-limit headers, and the `policy` and `retry_after` fields) or
//! lets the request through and adds the rate-limit headers to the response. A bandwidth
//! quota also counts the response: the bytes sent are charged when the exchange
//! completes (`on_complete`), a hook only an API whose throttler has one asks for.
//!
//! `build.rs` compiles the file's `throttling:` section once per file ([`prepare`]);
//! `tokens.rs` is the token budget kind of LLM APIs, whose `RateLimit` headers this
//! policy writes beside the request quota's.

mod build;
mod shared;
mod tokens;

use std::sync::Arc;

use http::{request, response, HeaderMap};
use turnpike_model::clock::Clock;
use turnpike_policy::{
    BuildCx, Completion, GatewayError, Hooks, Policy, PolicyKind, RequestCtx, Stage, Step,
};

pub use build::{condition_claims, counters, prepare, ApiThrottle, ResourcePolicy, Throttled};
pub use shared::Tokens;
pub use tokens::TokenBudget;

use shared::{request_facts, throttled, RequestLookup};

use crate::Decision;

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
        let identity = ctx.identity().map(|i| &**i);
        let lookup = RequestLookup {
            headers: &req.headers,
            query: req.uri.query(),
            claims: identity.map(|i| &i.claims),
        };
        let facts = request_facts(t, ctx, req, &lookup);
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
        let t = &*self.t;
        if let Some(d) = ctx.throttle.as_ref() {
            t.throttler.write_headers(d, t.headers, &mut resp.headers);
        }
        // Only an API with token budgets looks: the others pay one branch.
        if t.counts_tokens {
            if let Some(Tokens(d)) = ctx.ext.get::<Tokens>() {
                t.throttler
                    .write_token_headers(d, t.headers, &mut resp.headers);
            }
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

/// The 429: a table error carrying the throttler's headers and fields.
#[cold]
fn refusal(t: &ApiThrottle, d: &Decision) -> GatewayError {
    let throttler = &t.throttler;
    if let Some(rule) = d.rule {
        tracing::debug!(api = %t.api_id, rule = throttler.rule_label(rule), "throttled");
    }
    let mut h = HeaderMap::new();
    throttler.write_headers(d, t.headers, &mut h);
    let policy = d.rule.map_or("", |id| throttler.policy_name(id));
    throttled(h, throttler.message(d), policy, crate::retry_after_secs(d))
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
    use crate::Lookup;
    use http::HeaderMap;
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
