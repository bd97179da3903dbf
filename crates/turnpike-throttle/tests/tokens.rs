//! Token budgets through the throttle kinds' own hooks, without sockets: a file's
//! `tokens:` compiled as a gateway compiles it (`prepare`, then the `throttle` and
//! `token_budget` kinds' builds), a request context carrying what the AI policy leaves
//! in `ctx.ext` (the call's `TokenEstimate` before it, its `TokenUsage` after), time
//! from a manual clock. Holds and refusals before the call, charges after it (also
//! past the limit), the `RateLimit` headers in tokens beside the request ones, windows
//! rolling, budgets per model and per end user, and a configuration that is wrong in
//! every way reported at once.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::{request, response, HeaderMap, HeaderValue, Method, StatusCode};
use turnpike_model::GatewayFile;
use turnpike_policy::ai::{TokenEstimate, TokenUsage};
use turnpike_policy::{
    Authenticated, BuildCx, Completion, CredentialKind, ErrorKind, Flow, Identity, Policy,
    PolicyKind, Principal, RequestCtx, Runtime, Scratch, Step, Timings, UpstreamTarget,
};
use turnpike_throttle::policy::{prepare, Throttle, TokenBudget};
use turnpike_throttle::{ManualClock, UnixNanos};

/// 2024-01-01T00:00:00Z: a minute boundary.
const T0: u64 = 1_704_067_200;

const FILE: &str = r#"
throttling:
  subscription_tiers:
    - name: AiGold
      quota: { requests: 100, per: minute }
      tokens:
        - { total: 1000, per: minute }
        - { prompt: 5000, per: day }
    - name: PerModel
      tokens:
        - { completion: 300, per: minute, by: [model] }
    - name: PerUser
      tokens:
        - { total: 500, per: hour, by: [user, "header:x-team"] }
apis:
  - name: llm
    context: /llm
    version: v1
    auth: { api_key: true }
    endpoints: ["http://127.0.0.1:9"]
    ai:
      providers: [ { name: p, kind: openai, url: "http://127.0.0.1:9/v1" } ]
      models: [ { name: m, provider: p } ]
  - name: secured-rest
    context: /srest
    version: v1
    auth: { api_key: true }
    endpoints: ["http://127.0.0.1:9"]
  - name: rest
    context: /rest
    version: v1
    throttling: 10KPerMin
    endpoints: ["http://127.0.0.1:9"]
"#;

/// One API's throttle and budget policies over a shared runtime and clock.
struct Llm {
    throttle: Arc<dyn Policy>,
    budget: Option<Arc<dyn Policy>>,
}

fn compile(yaml: &str, api: usize, clock: &ManualClock) -> Llm {
    let file: GatewayFile = serde_yaml::from_str(yaml).expect("the file parses");
    let runtime = Runtime::default().with_clock(Arc::new(clock.clone()));
    let (mut scratch, mut problems) = (Scratch::default(), vec![]);
    prepare(&file, &runtime, None, &mut scratch, &mut problems);
    assert!(problems.is_empty(), "{problems:?}");
    let mut cx = BuildCx {
        api,
        at: format!("apis[{api}].throttling"),
        problems: &mut problems,
        runtime: &runtime,
        file: &file,
        scratch: &mut scratch,
    };
    let throttle = Throttle::build(&(), &mut cx).expect("the API is throttled");
    let budget = TokenBudget::build(&(), &mut cx);
    Llm { throttle, budget }
}

/// A call of `app` (end user `user`) subscribed at `tier`, with `estimate` in `ext`.
fn call(app: &str, user: &str, tier: &str, estimate: Option<TokenEstimate>) -> RequestCtx {
    let uri: http::Uri = "/llm/v1/chat/completions".parse().expect("uri");
    let client: SocketAddr = "127.0.0.1:5000".parse().expect("addr");
    let mut ctx = RequestCtx::new(
        HeaderValue::from_static("req-1"),
        client,
        false,
        UpstreamTarget::suffix(uri, 7),
    );
    let principal = Principal {
        application_id: Some(app.into()),
        ..Principal::default()
    };
    ctx.auth = Some(Authenticated {
        identity: Arc::new(Identity {
            kind: CredentialKind::ApiKey,
            subject: user.into(),
            expires_at: None,
            token_id: None,
            principal: Arc::new(principal),
        }),
        subscription_tier: Some(tier.into()),
    });
    if let Some(e) = estimate {
        ctx.ext.insert(e);
    }
    ctx
}

fn parts(headers: &[(&str, &str)]) -> request::Parts {
    let mut b = http::Request::builder()
        .method(Method::POST)
        .uri("/llm/v1/chat/completions");
    for (k, v) in headers {
        b = b.header(*k, *v);
    }
    b.body(()).expect("request").into_parts().0
}

fn estimate(prompt: u64, max_completion: u64) -> Option<TokenEstimate> {
    Some(TokenEstimate {
        prompt,
        max_completion,
    })
}

fn usage(prompt: u64, completion: u64) -> TokenUsage {
    TokenUsage {
        prompt,
        completion,
        total: prompt + completion,
        ..TokenUsage::default()
    }
}

/// What the request side of the two policies said: `Ok` (went on) or the error.
enum Outcome {
    Passed,
    Refused(turnpike_policy::GatewayError),
}

impl Llm {
    /// Runs the request hooks as the chain does: headers, then the body (`body` is
    /// the JSON the client sent).
    fn request(&self, ctx: &mut RequestCtx, req: &mut request::Parts, body: &str) -> Outcome {
        if let Step::Done(Err(e)) = self.throttle.on_request_headers(ctx, req) {
            return Outcome::Refused(e);
        }
        let Some(budget) = &self.budget else {
            return Outcome::Passed;
        };
        let mut body = Bytes::from(body.to_owned());
        let outcome = match budget.on_request_body(ctx, req, &mut body) {
            Step::Done(Ok(Flow::Continue)) => Outcome::Passed,
            Step::Done(Err(e)) => Outcome::Refused(e),
            _ => panic!("the budget answers at once and never responds itself"),
        };
        outcome
    }

    /// The response's headers as the throttle policy writes them.
    fn response_headers(&self, ctx: &mut RequestCtx) -> HeaderMap {
        let (mut resp, ()) = http::Response::new(()).into_parts();
        self.throttle
            .on_response_headers(ctx, &mut resp)
            .expect("no error");
        resp.headers
    }

    /// The 429's headers: the error's own, then the throttle policy's hook over them
    /// (as the gateway runs response hooks of the policies before the refusing one).
    fn refusal_headers(
        &self,
        ctx: &mut RequestCtx,
        e: &turnpike_policy::GatewayError,
    ) -> HeaderMap {
        let (mut resp, ()): (response::Parts, ()) = http::Response::new(()).into_parts();
        resp.status = StatusCode::TOO_MANY_REQUESTS;
        if let Some(h) = &e.headers {
            resp.headers.extend(h.as_ref().clone());
        }
        self.throttle
            .on_response_headers(ctx, &mut resp)
            .expect("no error");
        resp.headers
    }

    /// The call ended, having used `used` (`None`: no usage reported).
    fn complete(&self, ctx: &mut RequestCtx, used: Option<TokenUsage>) {
        if let Some(u) = used {
            ctx.ext.insert(u);
        }
        let done = Completion {
            status: StatusCode::OK,
            error: None,
            aborted: false,
            timings: Timings::default(),
            bytes_in: 0,
            bytes_out: 0,
            method: Method::POST,
            upstream_status: Some(StatusCode::OK),
            api: None,
            started: Instant::now(),
        };
        if let Some(b) = &self.budget {
            b.on_complete(ctx, &done);
        }
        self.throttle.on_complete(ctx, &done);
    }

    /// One whole call: its outcome, and when it passed, its response headers (the
    /// call then uses `used`).
    fn round(
        &self,
        ctx: &mut RequestCtx,
        body: &str,
        used: TokenUsage,
        headers: &[(&str, &str)],
    ) -> Result<HeaderMap, turnpike_policy::GatewayError> {
        let mut req = parts(headers);
        match self.request(ctx, &mut req, body) {
            Outcome::Passed => {
                let h = self.response_headers(ctx);
                self.complete(ctx, Some(used));
                Ok(h)
            }
            Outcome::Refused(e) => {
                self.complete(ctx, None);
                Err(e)
            }
        }
    }
}

fn values(h: &HeaderMap, name: &str) -> Vec<String> {
    h.get_all(name)
        .iter()
        .map(|v| v.to_str().expect("ascii").to_owned())
        .collect()
}

const CHAT: &str = r#"{"model":"gpt-4o-mini","messages":[{"role":"user","content":"hi"}]}"#;

#[test]
fn an_estimate_the_budget_cannot_hold_is_refused_before_the_call() {
    let clock = ManualClock::at_secs(T0);
    let llm = compile(FILE, 0, &clock);
    // 100 prompt + 300 max_tokens held (400 of 1000): passes, the headers say 600 left.
    let mut ctx = call("app1", "alice", "AiGold", estimate(100, 300));
    let h = llm
        .round(&mut ctx, CHAT, usage(100, 50), &[])
        .expect("passes");
    let policies = values(&h, "ratelimit-policy");
    assert_eq!(
        policies,
        [
            "\"sub:AiGold\";q=100;w=60",
            "\"sub:AiGold/tokens-per-minute\";q=1000;w=60"
        ],
        "the request quota's and the token budget's, side by side"
    );
    assert_eq!(
        values(&h, "ratelimit"),
        [
            "\"sub:AiGold\";r=99;t=60",
            "\"sub:AiGold/tokens-per-minute\";r=600;t=60"
        ]
    );
    // It used 150: 850 left. An estimate of 900 does not fit: 429 before the call.
    let mut ctx = call("app1", "alice", "AiGold", estimate(100, 800));
    let Err(e) = llm.round(&mut ctx, CHAT, usage(0, 0), &[]) else {
        panic!("an estimate of 900 with 850 left must be refused");
    };
    assert_eq!(e.kind, ErrorKind::Throttled);
    let detail = e.detail.as_deref().unwrap_or("");
    assert!(
        detail.contains("AiGold") && detail.contains("850 left"),
        "{detail}"
    );
    assert_eq!(ctx.throttled_by.as_deref(), Some("AiGold"));
    let h = llm.refusal_headers(&mut ctx, &e);
    assert_eq!(values(&h, "retry-after"), ["60"]);
    assert!(
        values(&h, "ratelimit").contains(&"\"sub:AiGold/tokens-per-minute\";r=850;t=60".to_owned()),
        "{h:?}"
    );
    // The refused call held nothing: 850 still fit.
    let mut ctx = call("app1", "alice", "AiGold", estimate(50, 800));
    assert!(llm.round(&mut ctx, CHAT, usage(50, 800), &[]).is_ok());
    // Another application's subscription has its own budget.
    let mut ctx = call("app2", "bob", "AiGold", estimate(100, 800));
    assert!(llm.round(&mut ctx, CHAT, usage(1, 1), &[]).is_ok());
}

#[test]
fn usage_past_the_budget_is_charged_and_refuses_until_the_window_rolls() {
    let clock = ManualClock::at_secs(T0 + 30);
    let llm = compile(FILE, 0, &clock);
    // A stream asked for 100 + 200 and used 1500 (a provider past max_tokens, or an
    // estimate short of the truth): charged whole, the window is now past its limit.
    let mut ctx = call("app1", "alice", "AiGold", estimate(100, 200));
    assert!(llm.round(&mut ctx, CHAT, usage(100, 1400), &[]).is_ok());
    // Even a one-token call is refused now, until the minute ends.
    let mut ctx = call("app1", "alice", "AiGold", estimate(1, 0));
    let e = llm
        .round(&mut ctx, CHAT, usage(1, 0), &[])
        .expect_err("over");
    assert_eq!(
        e.fields
            .iter()
            .find(|(k, _)| *k == "retry_after")
            .map(|(_, v)| v.clone()),
        Some(30u64.into())
    );
    clock.advance(Duration::from_secs(30));
    let mut ctx = call("app1", "alice", "AiGold", estimate(100, 800));
    let h = llm
        .round(&mut ctx, CHAT, usage(10, 10), &[])
        .expect("a new window");
    assert!(
        values(&h, "ratelimit").contains(&"\"sub:AiGold/tokens-per-minute\";r=100;t=60".to_owned())
    );
}

#[test]
fn a_hold_becomes_the_usage_and_a_call_that_never_ran_costs_nothing() {
    let clock = ManualClock::at_secs(T0);
    let llm = compile(FILE, 0, &clock);
    // Held 900 (100 + 800), used 30: 970 left afterwards.
    let mut ctx = call("app1", "alice", "AiGold", estimate(100, 800));
    assert!(llm.round(&mut ctx, CHAT, usage(20, 10), &[]).is_ok());
    // Held 900 again, then the provider failed (no usage): given back whole.
    let mut ctx = call("app1", "alice", "AiGold", estimate(100, 800));
    let mut req = parts(&[]);
    assert!(matches!(
        llm.request(&mut ctx, &mut req, CHAT),
        Outcome::Passed
    ));
    // While it is in flight its hold counts: a second call of 100 does not fit.
    let mut other = call("app1", "alice", "AiGold", estimate(50, 50));
    assert!(llm.round(&mut other, CHAT, usage(1, 1), &[]).is_err());
    llm.complete(&mut ctx, None);
    let mut ctx = call("app1", "alice", "AiGold", estimate(100, 800));
    let h = llm.round(&mut ctx, CHAT, usage(0, 0), &[]).expect("passes");
    assert!(
        values(&h, "ratelimit").contains(&"\"sub:AiGold/tokens-per-minute\";r=70;t=60".to_owned()),
        "{h:?}"
    );
}

#[test]
fn a_window_that_rolls_during_the_call_gets_the_whole_usage() {
    let clock = ManualClock::at_secs(T0 + 59);
    let llm = compile(FILE, 0, &clock);
    let mut ctx = call("app1", "alice", "AiGold", estimate(100, 800));
    let mut req = parts(&[]);
    assert!(matches!(
        llm.request(&mut ctx, &mut req, CHAT),
        Outcome::Passed
    ));
    clock.advance(Duration::from_secs(2));
    llm.complete(&mut ctx, Some(usage(400, 500)));
    // The new minute holds the 900 used: 100 left, a call of 200 is refused.
    let mut ctx = call("app1", "alice", "AiGold", estimate(100, 100));
    assert!(llm.round(&mut ctx, CHAT, usage(1, 1), &[]).is_err());
}

#[test]
fn prompt_and_completion_budgets_count_their_part() {
    let clock = ManualClock::at_secs(T0);
    let llm = compile(FILE, 0, &clock);
    // The daily prompt budget (5000): 4 minutes of 1000-prompt calls fit, the 6th not.
    for minute in 0..5 {
        clock.set(UnixNanos::from_secs(T0 + 60 * minute));
        let mut ctx = call("app1", "alice", "AiGold", estimate(990, 0));
        assert!(
            llm.round(&mut ctx, CHAT, usage(990, 0), &[]).is_ok(),
            "minute {minute}"
        );
    }
    clock.set(UnixNanos::from_secs(T0 + 300));
    let mut ctx = call("app1", "alice", "AiGold", estimate(100, 0));
    let e = llm
        .round(&mut ctx, CHAT, usage(1, 0), &[])
        .expect_err("the day's prompts");
    assert!(
        e.detail.as_deref().unwrap_or("").contains("prompt-tokens"),
        "{:?}",
        e.detail
    );
    // The completion budget counts max_tokens only: a long prompt passes.
    let mut ctx = call("app1", "alice", "PerModel", estimate(10_000, 300));
    assert!(llm.round(&mut ctx, CHAT, usage(10_000, 300), &[]).is_ok());
    let mut ctx = call("app1", "alice", "PerModel", estimate(1, 1));
    assert!(
        llm.round(&mut ctx, CHAT, usage(1, 1), &[]).is_err(),
        "300 completion tokens spent"
    );
}

#[test]
fn budgets_count_per_model_and_per_end_user_when_asked() {
    let clock = ManualClock::at_secs(T0);
    let llm = compile(FILE, 0, &clock);
    let mini = CHAT;
    let big = r#"{"model":"gpt-4o","messages":[]}"#;
    let mut ctx = call("app1", "alice", "PerModel", estimate(0, 300));
    assert!(llm.round(&mut ctx, mini, usage(0, 300), &[]).is_ok());
    let mut ctx = call("app1", "alice", "PerModel", estimate(0, 300));
    assert!(
        llm.round(&mut ctx, big, usage(0, 300), &[]).is_ok(),
        "another model's budget"
    );
    let mut ctx = call("app1", "alice", "PerModel", estimate(0, 1));
    assert!(llm.round(&mut ctx, mini, usage(0, 1), &[]).is_err());
    // Per end user and team header: alice's and bob's 500 are separate, and so are teams.
    let team = |t: &'static str| [("x-team", t)];
    let mut ctx = call("app1", "alice", "PerUser", estimate(100, 400));
    assert!(llm
        .round(&mut ctx, mini, usage(100, 400), &team("red"))
        .is_ok());
    let mut ctx = call("app1", "alice", "PerUser", estimate(1, 0));
    assert!(llm
        .round(&mut ctx, mini, usage(1, 0), &team("red"))
        .is_err());
    let mut ctx = call("app1", "alice", "PerUser", estimate(100, 400));
    assert!(llm
        .round(&mut ctx, mini, usage(1, 0), &team("blue"))
        .is_ok());
    let mut ctx = call("app1", "bob", "PerUser", estimate(100, 400));
    assert!(llm.round(&mut ctx, mini, usage(1, 0), &team("red")).is_ok());
}

#[test]
fn a_call_without_an_estimate_is_not_checked_but_its_usage_is_charged() {
    let clock = ManualClock::at_secs(T0);
    let llm = compile(FILE, 0, &clock);
    let mut ctx = call("app1", "alice", "AiGold", None);
    assert!(llm.round(&mut ctx, "", usage(600, 0), &[]).is_ok());
    let mut ctx = call("app1", "alice", "AiGold", estimate(300, 200));
    assert!(
        llm.round(&mut ctx, CHAT, usage(1, 1), &[]).is_err(),
        "600 charged: 400 left"
    );
}

#[test]
fn an_api_no_budget_reaches_gets_no_budget_policy() {
    let clock = ManualClock::at_secs(T0);
    // A secured API that is not an LLM API, under tiers that count tokens: nothing
    // there estimates or reports tokens.
    assert!(compile(FILE, 1, &clock).budget.is_none());
    // The open API under an advanced policy without tokens.
    assert!(compile(FILE, 2, &clock).budget.is_none());
    // A file without any token budget: not even its secured APIs.
    let none = r#"
throttling:
  subscription_tiers: [ { name: Plain, quota: { requests: 10, per: minute } } ]
apis:
  - name: llm
    context: /llm
    version: v1
    auth: { api_key: true }
    endpoints: ["http://127.0.0.1:9"]
"#;
    assert!(compile(none, 0, &clock).budget.is_none());
}

#[test]
fn every_bad_token_limit_is_reported_at_once_with_its_place() {
    let yaml = r#"
throttling:
  subscription_tiers:
    - name: Bad
      tokens:
        - { total: 10, prompt: 5, per: minute }
        - { completion: 0, per: hour }
        - { total: 10, per: minute, by: [model, "header:", colour] }
    - name: Twice
      tokens:
        - { total: 10, per: minute }
        - { total: 20, per: minute }
  advanced_policies:
    - name: Many
      tokens:
        - { total: 1, per: second }
        - { total: 1, per: minute }
        - { total: 1, per: hour }
        - { total: 1, per: day }
        - { total: 1, per: month }
apis: []
"#;
    let file: GatewayFile = serde_yaml::from_str(yaml).expect("the file parses");
    let (runtime, mut scratch, mut problems) = (Runtime::default(), Scratch::default(), vec![]);
    prepare(&file, &runtime, None, &mut scratch, &mut problems);
    let found: Vec<String> = problems
        .iter()
        .map(|p| format!("{}: {}", p.path, p.message))
        .collect();
    let has = |at: &str, what: &str| found.iter().any(|p| p.starts_with(at) && p.contains(what));
    assert!(
        has(
            "throttling.subscription_tiers[0]",
            "tokens[0]: a token limit needs exactly one of"
        ),
        "{found:#?}"
    );
    assert!(
        has(
            "throttling.subscription_tiers[0]",
            "tokens[1]: the count and `every` must be at least 1"
        ),
        "{found:#?}"
    );
    assert!(
        has(
            "throttling.subscription_tiers[0]",
            "tokens[2].by: unknown token key \"header:\""
        ),
        "{found:#?}"
    );
    assert!(
        has(
            "throttling.subscription_tiers[0]",
            "tokens[2].by: unknown token key \"colour\""
        ),
        "{found:#?}"
    );
    assert!(
        has(
            "throttling.subscription_tiers[1]",
            "tokens[1]: a second tokens limit per minute"
        ),
        "{found:#?}"
    );
    assert!(
        has(
            "throttling.advanced_policies[0]",
            "at most 4 token limits (found 5)"
        ),
        "{found:#?}"
    );
    assert_eq!(found.len(), 6, "{found:#?}");
}
