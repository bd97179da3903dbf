//! Token budgets (issue 30 item 3) through a real gateway, the real AI kind and the
//! deterministic provider `turnpike echo --llm` on 127.0.0.1:0: the AI policy estimates
//! each call before it is sent (a prompt of one token per 4 bytes, plus `max_tokens`)
//! and reads the provider's usage from its answer; the budget holds the estimate,
//! refuses 429 before the provider is called when it cannot fit (with `RateLimit`
//! headers in tokens, the body in the OpenAI front's shape), and charges the real usage,
//! which may take the window below what was held.

mod support;

use serde_json::{json, Value};
use support::*;
use turnpike_bench::echo::spawn_llm;
use turnpike_bench::echo_llm::LlmConfig;

fn yaml(provider: &str) -> String {
    format!(
        "throttling:\n  advanced_policies:\n    - name: AiBudget\n      tokens:\n        \
         - {{ total: 1000, per: hour }}\n\
         apis:\n  - name: llm\n    context: /llm\n    version: v1\n    \
         throttling: AiBudget\n    \
         ai:\n      providers:\n        - {{ name: echo, kind: openai, url: \"{provider}/v1\" }}\n      \
         models:\n        - {{ name: m, provider: echo }}\n"
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

/// What the token budget's `RateLimit` member says is left.
fn tokens_left(r: &reqwest::Response) -> i64 {
    let all = members(r, "ratelimit");
    let m = all
        .iter()
        .find(|m| m.starts_with("\"adv:AiBudget/tokens-per-hour\""))
        .unwrap_or_else(|| panic!("no token member in {all:?}"));
    let r = m
        .split(';')
        .find_map(|p| p.strip_prefix("r="))
        .unwrap_or_else(|| panic!("no r= in {m}"));
    r.parse().expect("a number")
}

/// Posts `body` as JSON (without reqwest's `json` feature, which this crate's tests do
/// not turn on).
async fn post(c: &reqwest::Client, url: &str, body: &Value) -> reqwest::Response {
    c.post(url)
        .header("content-type", "application/json")
        .body(body.to_string())
        .send()
        .await
        .expect("call")
}

async fn json(r: reqwest::Response) -> Value {
    serde_json::from_slice(&r.bytes().await.expect("body")).expect("json")
}

fn chat(content: &str, max_tokens: u64) -> Value {
    json!({"model": "m", "max_tokens": max_tokens,
           "messages": [{"role": "user", "content": content}]})
}

/// The last request the provider received (its `/_echo/last`).
async fn provider_last(c: &reqwest::Client, provider: &str) -> String {
    let r = c
        .get(format!("{provider}/_echo/last"))
        .send()
        .await
        .expect("echo");
    r.text().await.expect("text")
}

#[tokio::test]
async fn a_call_over_the_token_budget_is_refused_before_the_provider() {
    let echo = spawn_llm(LlmConfig::default()).await.expect("echo --llm");
    let provider = http(echo);
    let gw = gateway(&yaml(&provider)).await;
    let c = client();
    let url = gw.url("/llm/v1/chat/completions");

    // A call that fits: charged its real usage, as the provider reported it.
    let r = post(&c, &url, &chat("lorem 200", 300)).await;
    assert_eq!(r.status(), 200);
    assert!(
        members(&r, "ratelimit-policy")
            .contains(&"\"adv:AiBudget/tokens-per-hour\";q=1000;w=3600".to_owned()),
        "{:?}",
        members(&r, "ratelimit-policy")
    );
    let answer: Value = json(r).await;
    let used = answer["usage"]["total_tokens"].as_i64().expect("usage");
    assert!(used > 200, "{answer}");

    // The next call's head says what the first one left; one asking for more than that
    // is refused 429 in the OpenAI front's shape, and the provider never sees it.
    let r = post(&c, &url, &chat("lorem 1", 1)).await;
    assert_eq!(r.status(), 200);
    let after_two = {
        let body: Value = json(r).await;
        1000 - used - body["usage"]["total_tokens"].as_i64().expect("usage")
    };
    let r = post(&c, &url, &chat("the refused call", after_two as u64 + 10)).await;
    assert_eq!(r.status(), 429);
    assert!(r.headers().contains_key("retry-after"));
    assert_eq!(tokens_left(&r), after_two);
    let body: Value = json(r).await;
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap_or("")
            .contains("tokens"),
        "{body}"
    );
    assert!(
        !provider_last(&c, &provider)
            .await
            .contains("the refused call"),
        "refused before the provider"
    );

    // A call whose estimate fits but whose real prompt is twice the estimate ("a a a..."
    // is a token per 2 bytes) is charged in full: the window goes to nothing, and even
    // the smallest call is refused until the hour ends.
    let words = "a ".repeat(after_two as usize * 2 - 100);
    let r = post(&c, &url, &chat(&words, 1)).await;
    assert_eq!(r.status(), 200);
    let body: Value = json(r).await;
    assert!(
        body["usage"]["prompt_tokens"].as_i64().expect("usage") > after_two,
        "{body}"
    );
    let r = post(&c, &url, &chat("x", 1)).await;
    assert_eq!(r.status(), 429);
    assert_eq!(tokens_left(&r), 0);
}

/// A secured REST API whose subscription tier counts tokens gets no token budget
/// policy (nothing there estimates or reports tokens), so it buffers no request body.
#[tokio::test]
async fn an_api_that_is_not_an_llm_api_gets_no_token_budget() {
    let upstream = numbered().await;
    let yaml = format!(
        "security:\n  api_keys:\n    - {{ sha256: \"{sha}\", application: app, subscriber: alice }}\n  \
         subscriptions:\n    - {{ api: /rest/v1, application: app, state: ACTIVE, tier: Gold }}\n\
         throttling:\n  subscription_tiers:\n    - name: Gold\n      quota: {{ requests: 100, per: minute }}\n      \
         tokens: [ {{ total: 1000, per: hour }} ]\n\
         apis:\n  - name: rest\n    context: /rest\n    version: v1\n    endpoints: [\"{up}\"]\n    \
         auth: {{ oauth2: false, api_key: true }}\n    \
         resources: [ {{ path: \"/*\", methods: [\"*\"] }} ]\n",
        sha = "64dbdc38ede19b85cac8beccc15d52debb1a30e42c2fa15716ce95ac0913ad09",
        up = http(upstream.addr)
    );
    let gw = gateway(&yaml).await;
    let snap = gw.snapshots().load();
    let api = snap.apis.first().expect("one API");
    assert!(
        api.chain.names().any(|n| n == "throttle"),
        "the tier's request quota still applies: {:?}",
        api.chain
    );
    assert!(
        !api.chain.names().any(|n| n == "token_budget"),
        "{:?}",
        api.chain
    );
}
