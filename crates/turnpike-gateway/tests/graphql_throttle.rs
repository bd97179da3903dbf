//! Per-operation throttling on a GraphQL API through a real gateway on 127.0.0.1:0 in
//! front of `turnpike echo --graphql`: an operation with a 3-per-minute policy is
//! refused at its 4th call with 429, a GraphQL `errors[]` body and the RateLimit and
//! Retry-After headers, while another operation of the same API still passes; a query
//! mixing the throttled and an unthrottled operation is refused whole once over (and
//! debits nothing of the other throttled operation it calls); with an API-level policy
//! too, both count (the API's first, in the throttle step, then the operation's); an
//! unknown policy name is a compile problem with its path.

mod support;

use std::net::SocketAddr;

use serde_json::{json, Value};
use support::*;

/// A file with a `ThreePerMin` and a `FivePerMin` advanced policy and one GraphQL API
/// `name` whose `hero` query counts on ThreePerMin and `droid` on `droid_policy`.
fn file(name: &str, upstream: SocketAddr, droid_policy: &str) -> String {
    let schema: String = STARWARS.lines().map(|l| format!("        {l}\n")).collect();
    let extra = format!(
        "    graphql:\n      schema: |\n{schema}      operations:\n        \
         - {{ name: hero, type: query, throttling: ThreePerMin }}\n        \
         - {{ name: droid, type: query, throttling: {droid_policy} }}\n"
    );
    format!(
        "throttling:\n  advanced_policies:\n    - name: ThreePerMin\n      \
         default_limit: {{ requests: 3, per: minute }}\n    - name: FivePerMin\n      \
         default_limit: {{ requests: 5, per: minute }}\n{}",
        config(&[api(name, &[format!("http://{upstream}/graphql")], &extra)])
    )
}

async fn post(gw: &TestGateway, path: &str, query: &str) -> reqwest::Response {
    client()
        .post(gw.url(path))
        .header("content-type", "application/json")
        .body(json!({ "query": query }).to_string())
        .send()
        .await
        .expect("send")
}

async fn status(gw: &TestGateway, path: &str, query: &str) -> (u16, Value) {
    let resp = post(gw, path, query).await;
    let s = resp.status().as_u16();
    let body = resp.bytes().await.expect("body");
    (s, serde_json::from_slice(&body).unwrap_or(Value::Null))
}

#[tokio::test]
async fn the_fourth_call_of_a_3_per_minute_operation_is_refused_the_others_pass() {
    let up = graphql_echo().await;
    let gw = gateway(&file("swa", up, "Unlimited")).await;
    for i in 0..3 {
        let (s, v) = status(&gw, "/swa/v1/graphql", "{ hero { name } }").await;
        assert_eq!(s, 200, "call {i}: {v}");
        assert!(v["data"]["hero"].is_object(), "forwarded: {v}");
    }
    let resp = post(&gw, "/swa/v1/graphql", "{\n  hero { name }\n}").await;
    assert_eq!(resp.status().as_u16(), 429);
    let h = resp.headers().clone();
    assert!(
        h["ratelimit-policy"]
            .to_str()
            .unwrap_or("")
            .contains("q=3;w=60"),
        "{h:?}"
    );
    assert!(
        h["ratelimit"].to_str().unwrap_or("").contains(";r=0;"),
        "{h:?}"
    );
    let retry: u64 = h["retry-after"]
        .to_str()
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    assert!((1..=60).contains(&retry), "{h:?}");
    assert_eq!(h["content-type"], "application/json");
    let v: Value = serde_json::from_slice(&resp.bytes().await.expect("body")).expect("json");
    assert_eq!(v["errors"][0]["extensions"]["code"], "THROTTLED", "{v}");
    assert!(v.get("data").is_none(), "not forwarded: {v}");
    let message = v["errors"][0]["message"].as_str().unwrap_or("");
    assert!(
        message.contains("`hero`") && message.contains("ThreePerMin"),
        "{v}"
    );
    assert_eq!(
        v["errors"][0]["locations"][0],
        json!({"line": 2, "column": 3}),
        "{v}"
    );

    // Another operation of the same API still passes, and so does the same query as
    // often as it likes on another API's counter.
    for _ in 0..5 {
        let (s, v) = status(&gw, "/swa/v1/graphql", "{ droid(id: 1) { name } }").await;
        assert_eq!(s, 200, "{v}");
    }
}

#[tokio::test]
async fn a_query_mixing_a_throttled_and_an_open_operation_is_refused_whole() {
    let up = graphql_echo().await;
    let gw = gateway(&file("swb", up, "FivePerMin")).await;
    let mixed = "{ hero { name } human(id: 1) { name } }";
    for _ in 0..3 {
        assert_eq!(status(&gw, "/swb/v1/graphql", mixed).await.0, 200);
    }
    let (s, v) = status(&gw, "/swb/v1/graphql", mixed).await;
    assert_eq!(s, 429, "{v}");
    assert_eq!(v["errors"][0]["extensions"]["code"], "THROTTLED", "{v}");
    assert!(v.get("data").is_none(), "nothing of it forwarded: {v}");
    // The unthrottled operation alone still passes.
    assert_eq!(
        status(&gw, "/swb/v1/graphql", "{ human(id: 1) { name } }")
            .await
            .0,
        200
    );
    // hero and droid (5 per minute) together: refused on hero, and droid's count is
    // given back: droid alone still has all 5 calls.
    let both = "{ hero { name } droid(id: 1) { name } }";
    for _ in 0..3 {
        assert_eq!(status(&gw, "/swb/v1/graphql", both).await.0, 429);
    }
    for i in 0..5 {
        let (s, v) = status(&gw, "/swb/v1/graphql", "{ droid(id: 1) { name } }").await;
        assert_eq!(s, 200, "droid call {i}: {v}");
    }
    assert_eq!(
        status(&gw, "/swb/v1/graphql", "{ droid(id: 1) { name } }")
            .await
            .0,
        429
    );
}

#[tokio::test]
async fn an_api_level_policy_and_an_operations_policy_both_count() {
    let up = graphql_echo().await;
    // The API itself: 5 per minute (FivePerMin), hero 3 (ThreePerMin).
    let yaml = file("swd", up, "Unlimited").replace(
        "    graphql:\n",
        "    throttling: FivePerMin\n    graphql:\n",
    );
    let gw = gateway(&yaml).await;
    for _ in 0..3 {
        assert_eq!(
            status(&gw, "/swd/v1/graphql", "{ hero { name } }").await.0,
            200
        );
    }
    let (s, v) = status(&gw, "/swd/v1/graphql", "{ hero { name } }").await;
    assert_eq!(
        (s, v["errors"][0]["extensions"]["code"].as_str()),
        (429, Some("THROTTLED")),
        "{v}"
    );
    // The API-level count took that refused request too (it ran first): one droid left.
    assert_eq!(
        status(&gw, "/swd/v1/graphql", "{ droid(id: 1) { name } }")
            .await
            .0,
        200
    );
    let (s, v) = status(&gw, "/swd/v1/graphql", "{ droid(id: 1) { name } }").await;
    assert_eq!(s, 429, "{v}");
    assert_eq!(v["code"], "throttled", "the gateway's table error: {v}");
    assert_eq!(v["policy"], "FivePerMin", "{v}");
}

#[test]
fn an_unknown_policy_name_is_a_compile_problem_with_its_path() {
    let up: SocketAddr = "127.0.0.1:9".parse().expect("addr");
    let yaml = file("swc", up, "NoSuchPolicy");
    let err = turnpike_config::Snapshot::from_yaml(&yaml, "t.yaml").expect_err("refused");
    let problems: Vec<String> = err.problems().iter().map(|p| p.to_string()).collect();
    assert!(
        problems
            .iter()
            .any(|p| p.contains("apis[0].graphql.operations[1].throttling")
                && p.contains("NoSuchPolicy")),
        "{problems:?}"
    );
}
