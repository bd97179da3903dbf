//! Token budgets through a real gateway and a real upstream on 127.0.0.1:0. The AI
//! kind's part (reading the call's estimate from the body, its usage from the answer)
//! is played by a small stand-in policy put at the front of the chain (`Estimator`:
//! `max_tokens` and a prompt of one token per 4 bytes, usage from the test's `use`
//! field), so these stories test the budget's side of the seam: a call whose estimate
//! does not fit is refused 429 before the upstream is called, with `RateLimit` headers
//! in tokens and the error table's body; usage past the budget is charged and refuses
//! the next call; a call that never reached the upstream costs nothing.

mod support;

use std::sync::atomic::Ordering;
use std::sync::Arc;

use bytes::Bytes;
use http::{request, response};
use support::*;
use turnpike_config::Snapshot;
use turnpike_gateway::{GatewayError, Hooks, Policy, RequestCtx, Step};
use turnpike_policy::ai::{TokenEstimate, TokenUsage};

/// Stands in for the AI kind: the estimate from the body before the call, the usage
/// (the body's `use`) when the answer's head arrives.
struct Estimator;

#[derive(Clone, Copy)]
struct WillUse(u64);

impl Policy for Estimator {
    fn name(&self) -> &'static str {
        "estimator"
    }

    fn hooks(&self) -> Hooks {
        Hooks::REQUEST_BODY | Hooks::RESPONSE_HEADERS
    }

    fn on_request_body<'a>(
        &'a self,
        ctx: &'a mut RequestCtx,
        _req: &'a mut request::Parts,
        body: &'a mut Bytes,
    ) -> Step<'a> {
        let v: serde_json::Value = serde_json::from_slice(body).unwrap_or_default();
        ctx.ext.insert(TokenEstimate {
            prompt: body.len() as u64 / 4,
            max_completion: v["max_tokens"].as_u64().unwrap_or(0),
        });
        ctx.ext.insert(WillUse(v["use"].as_u64().unwrap_or(0)));
        Step::CONTINUE
    }

    fn on_response_headers(
        &self,
        ctx: &mut RequestCtx,
        resp: &mut response::Parts,
    ) -> Result<(), GatewayError> {
        if let (true, Some(WillUse(n))) = (resp.status.is_success(), ctx.ext.get::<WillUse>()) {
            let usage = TokenUsage {
                completion: *n,
                total: *n,
                ..TokenUsage::default()
            };
            ctx.ext.insert(usage);
        }
        Ok(())
    }
}

fn yaml(upstream: &str) -> String {
    format!(
        "throttling:\n  advanced_policies:\n    - name: AiBudget\n      tokens:\n        \
         - {{ total: 1000, per: hour }}\n\
         apis:\n  - name: llm\n    context: /llm\n    version: v1\n    \
         throttling: AiBudget\n    endpoints: [\"{upstream}\"]\n    \
         resources: [ {{ path: \"/*\", methods: [\"*\"] }} ]\n"
    )
}

/// Every field line of header `name`.
fn members(r: &reqwest::Response, name: &str) -> Vec<String> {
    r.headers()
        .get_all(name)
        .iter()
        .map(|v| v.to_str().expect("ascii").to_owned())
        .collect()
}

/// The token budget's member of header `name`.
fn token_member(r: &reqwest::Response, name: &str) -> String {
    let all = members(r, name);
    all.iter()
        .find(|m| m.starts_with("\"adv:AiBudget"))
        .unwrap_or_else(|| panic!("no token member in {all:?}"))
        .clone()
}

#[tokio::test]
async fn a_call_over_the_token_budget_is_refused_before_the_upstream() {
    let upstream = numbered().await;
    let mut snap = Snapshot::from_yaml(&yaml(&http(upstream.addr)), "test").expect("valid");
    for api in snap.apis.iter_mut() {
        let api = Arc::get_mut(api).expect("a fresh snapshot owns its APIs");
        assert!(
            api.chain.names().any(|n| n == "token_budget"),
            "{:?}",
            api.chain
        );
        api.chain = api.chain.prepended(Arc::new(Estimator));
    }
    let gw = gateway_built(
        Arc::new(arc_swap::ArcSwap::from_pointee(snap)),
        |_| {},
        |b| b,
    )
    .await;
    let c = client();
    let url = gw.url("/llm/v1/chat/completions");
    let send = |body: &'static str| c.post(&url).body(body).send();

    // 40 bytes: a prompt of 10, max_tokens 300: held 310 of 1000; it uses 700.
    let r = send(r#"{"max_tokens":300,"use":700,"p":"abcde"}"#)
        .await
        .expect("call");
    assert_eq!(r.status(), 200);
    // Beside the request quota's (the Unauthenticated tier, per client IP).
    assert_eq!(
        members(&r, "ratelimit-policy"),
        [
            "\"sub:Unauthenticated\";q=500;w=60",
            "\"adv:AiBudget/tokens-per-hour\";q=1000;w=3600"
        ]
    );
    let rl = token_member(&r, "ratelimit");
    assert!(
        rl.starts_with("\"adv:AiBudget/tokens-per-hour\";r=690;t="),
        "{rl}"
    );
    let _ = r.bytes().await;

    // 300 left: a call asking for 400 more is refused, and the upstream never sees it.
    let calls = upstream.calls.load(Ordering::SeqCst);
    let r = send(r#"{"max_tokens":400,"use":10,"p":"abcde"}"#)
        .await
        .expect("call");
    assert_eq!(r.status(), 429);
    assert!(r.headers().contains_key("retry-after"));
    let rl = token_member(&r, "ratelimit");
    assert!(
        rl.starts_with("\"adv:AiBudget/tokens-per-hour\";r=300;t="),
        "{rl}"
    );
    let body = error_body(r).await;
    assert_eq!(body["code"], "throttled");
    assert_eq!(body["policy"], "AiBudget");
    assert!(
        body["message"].as_str().unwrap_or("").contains("tokens"),
        "{body}"
    );
    assert_eq!(
        upstream.calls.load(Ordering::SeqCst),
        calls,
        "refused before the upstream"
    );

    // What fits still passes, and its usage past the budget (600 > 300) is charged...
    let r = send(r#"{"max_tokens":200,"use":600,"p":"abcde"}"#)
        .await
        .expect("call");
    assert_eq!(r.status(), 200);
    let _ = r.bytes().await;
    // ...so that even the smallest call is refused until the hour ends.
    let r = send(r#"{"max_tokens":1}"#).await.expect("call");
    assert_eq!(r.status(), 429);
    let rl = token_member(&r, "ratelimit");
    assert!(
        rl.starts_with("\"adv:AiBudget/tokens-per-hour\";r=0;t="),
        "{rl}"
    );
}
