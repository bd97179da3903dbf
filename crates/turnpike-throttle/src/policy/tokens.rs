//! The token budget policy of an LLM API: the last step of its chain
//! ([`Stage::Budget`]), so that its request-body hook runs after the AI policy's, which
//! leaves the call's [`TokenEstimate`] in `ctx.ext`. It holds the estimate in every
//! budget that applies (or refuses the call with the error table's 429 before any
//! provider is called), and when the exchange completes turns the holds into the
//! [`TokenUsage`] the AI policy left (a stream that crossed its budget half-way has
//! finished and is charged whole). The `RateLimit` headers in tokens are written by the
//! throttle policy, from the decision this one leaves in `ctx.ext` ([`Tokens`]).
//!
//! Only an API some token budget can reach gets this policy (`ApiThrottle::counts_tokens`).

use std::borrow::Cow;
use std::sync::Arc;

use bytes::Bytes;
use http::header::{HeaderValue, RETRY_AFTER};
use http::{request, HeaderMap};
use turnpike_model::clock::Clock;
use turnpike_policy::ai::{TokenEstimate, TokenUsage};
use turnpike_policy::{BuildCx, Completion, Hooks, Policy, PolicyKind, RequestCtx, Stage, Step};

use super::build::{ApiThrottle, Throttled};
use super::shared::{request_facts, throttled, RequestLookup, Tokens};

/// The token budget kind (no spec of its own: the `throttling:` section's `tokens:`).
pub struct TokenBudget;

impl PolicyKind for TokenBudget {
    const NAME: &'static str = "token_budget";
    type Spec = ();

    fn stage(_: &()) -> Stage {
        Stage::Budget
    }

    fn build(_: &(), cx: &mut BuildCx<'_>) -> Option<Arc<dyn Policy>> {
        let t = cx.scratch.get::<Throttled>()?.api(cx.api)?;
        if !t.counts_tokens {
            return None;
        }
        Some(Arc::new(TokenBudgetPolicy {
            by_model: t.throttler.tokens_by_model(),
            t: t.clone(),
            clock: cx.runtime.clock().clone(),
        }))
    }
}

/// The budget step of one API's chain.
pub struct TokenBudgetPolicy {
    t: Arc<ApiThrottle>,
    clock: Arc<dyn Clock>,
    /// Some budget is counted per model: the request's `model` is read.
    by_model: bool,
}

impl Policy for TokenBudgetPolicy {
    fn name(&self) -> &'static str {
        "token_budget"
    }

    fn hooks(&self) -> Hooks {
        Hooks::REQUEST_BODY | Hooks::COMPLETE
    }

    fn on_request_body<'a>(
        &'a self,
        ctx: &'a mut RequestCtx,
        req: &'a mut request::Parts,
        body: &'a mut Bytes,
    ) -> Step<'a> {
        let t = &*self.t;
        let estimate = ctx.ext.get::<TokenEstimate>().copied();
        let model = if self.by_model { model_of(body) } else { None };
        let identity = ctx.identity().map(|i| &**i);
        let lookup = RequestLookup {
            headers: &req.headers,
            query: req.uri.query(),
            claims: identity.map(|i| &i.claims),
        };
        let facts = request_facts(t, ctx, req, &lookup);
        let now = self.clock.now();
        let d = t
            .throttler
            .check_tokens(&facts, model.as_deref(), estimate.as_ref(), now);
        if !d.allowed {
            return Step::Done(Err(self.refusal(ctx, d)));
        }
        if d.rule.is_some() {
            ctx.ext.insert(Tokens(d));
        }
        Step::CONTINUE
    }

    /// The call ended (answered, streamed to its end, failed or abandoned): its holds
    /// become what it used (nothing when no usage was reported: it never reached a
    /// provider).
    fn on_complete(&self, ctx: &RequestCtx, _done: &Completion) {
        if let Some(Tokens(d)) = ctx.ext.get::<Tokens>() {
            let usage = ctx.ext.get::<TokenUsage>();
            self.t.throttler.settle_tokens(d, usage, self.clock.now());
        }
    }
}

impl TokenBudgetPolicy {
    /// The 429 (the throttle policy, before this one in the chain, adds the
    /// `RateLimit` headers of both the request quota and this budget to it).
    #[cold]
    fn refusal(
        &self,
        ctx: &mut RequestCtx,
        d: crate::TokenDecision,
    ) -> turnpike_policy::GatewayError {
        let throttler = &self.t.throttler;
        let policy = d.rule.map_or("", |id| throttler.policy_name(id));
        if let Some(rule) = d.rule {
            tracing::debug!(api = %self.t.api_id, rule = throttler.rule_label(rule), "token budget exhausted");
        }
        ctx.throttled_by = Some(Arc::from(policy));
        let retry = crate::headers::ceil_secs(d.retry_after.unwrap_or_default()).max(1);
        let mut h = HeaderMap::new();
        h.insert(RETRY_AFTER, HeaderValue::from(retry));
        let e = throttled(h, throttler.token_message(&d), policy, retry);
        ctx.ext.insert(Tokens(d));
        e
    }
}

/// The `model` a request body names (OpenAI's and Anthropic's fronts both have one);
/// `None` for a body that is not such a JSON object.
fn model_of(body: &[u8]) -> Option<Cow<'_, str>> {
    #[derive(serde::Deserialize)]
    struct Named<'a> {
        #[serde(borrow, default)]
        model: Option<Cow<'a, str>>,
    }
    // An object only (serde would also read a struct from an array's first element).
    let first = body.iter().find(|b| !b.is_ascii_whitespace())?;
    if *first != b'{' {
        return None;
    }
    serde_json::from_slice::<Named<'_>>(body).ok()?.model
}

#[cfg(test)]
mod tests {
    use super::model_of;

    #[test]
    fn the_model_is_read_from_a_json_body_only() {
        let m = |b: &str| model_of(b.as_bytes()).map(|c| c.into_owned());
        assert_eq!(
            m(r#"{"model":"gpt-4o-mini","messages":[]}"#).as_deref(),
            Some("gpt-4o-mini")
        );
        assert_eq!(
            m(r#"{"messages":[],"model":"a\"b"}"#).as_deref(),
            Some("a\"b")
        );
        assert_eq!(m(r#"{"messages":[]}"#), None);
        assert_eq!(m("not json"), None);
        assert_eq!(m(r#"["model"]"#), None);
    }
}
