//! AI APIs through the Publisher and Admin REST APIs (docs/ai-gateway.md, "Through the
//! control plane"): an API whose `ai` section names providers with different URLs and a
//! model with weighted targets needs no `endpoints`, is stored as given, read back and
//! published; a bad route or fallback value is a 400 naming every field at once; a
//! subscription tier takes the `models` its subscribers may call.

mod support;

use http::StatusCode;
use serde_json::json;
use support::control_plane;
use turnpike_store::testing::TestDbs;

const APIS: &str = "/api/am/publisher/v1/apis";

#[tokio::test]
async fn an_ai_api_with_weighted_targets_is_stored_published_and_checked() {
    let dbs = TestDbs::sqlite();
    let cp = control_plane(&dbs.fresh_url().await).await;
    let ai = json!({
        "providers": [
            {"name": "openai", "kind": "openai", "url": "https://api.openai.com/v1", "key": "env:OPENAI_API_KEY"},
            {"name": "claude", "kind": "anthropic", "url": "https://api.anthropic.com/v1", "key": "file:/run/secrets/anthropic"}
        ],
        "models": [
            {"name": "fast", "targets": [{"provider": "openai", "model": "gpt-4o-mini", "weight": 3}, {"provider": "claude", "model": "claude-haiku-4-5", "weight": 0}]},
            {"name": "gpt-4o", "provider": "openai"}
        ],
        "fallback": {"retries": 1, "suspend_after": 2, "suspend_for": "10s"}
    });
    let body = json!({"name": "llm", "context": "/llm", "version": "v1", "ai": ai});
    let r = cp.post(APIS, "pub", body).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.json);
    let id = r.json["id"].as_str().expect("id").to_owned();
    let r = cp.get(&format!("{APIS}/{id}"), "pub").await;
    assert_eq!(r.json["ai"], ai, "{}", r.json);
    let r = cp.lifecycle(&id, "Publish").await;
    assert_eq!(
        r.status,
        StatusCode::OK,
        "an AI API publishes without endpoints: {}",
        r.json
    );

    let bad = json!({"name": "b", "context": "/b", "version": "v1", "ai": {
        "providers": [{"name": "p", "kind": "openai", "url": "http://127.0.0.1:9/v1"}],
        "models": [
            {"name": "both", "provider": "p", "targets": [{"provider": "p"}]},
            {"name": "x", "targets": [{"provider": "nobody"}, {"provider": "p", "weight": 101}]}
        ],
        "fallback": {"max_attempts": 0}
    }});
    let r = cp.post(APIS, "pub", bad).await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "{}", r.json);
    let f = r.fields();
    for want in [
        "ai.models[0]",
        "ai.models[1].targets[0].provider",
        "ai.models[1].targets[1].weight",
        "ai.fallback.max_attempts",
    ] {
        assert!(
            f.iter().any(|x| x == want),
            "{want} not in {f:?}: {}",
            r.json
        );
    }
}

#[tokio::test]
async fn a_subscription_tier_lists_its_models() {
    let dbs = TestDbs::sqlite();
    let cp = control_plane(&dbs.fresh_url().await).await;
    let tiers = "/api/am/admin/v1/throttling/policies/subscription";
    let body = json!({"name": "Starter", "requestCount": 100, "unitSeconds": 60, "models": ["fast", "gpt-4o"]});
    let r = cp.post(tiers, "admin", body).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.json);
    let r = cp.get(&format!("{tiers}/Starter"), "admin").await;
    assert_eq!(r.json["models"], json!(["fast", "gpt-4o"]), "{}", r.json);
    let bad = json!({"name": "Bad", "requestCount": 100, "unitSeconds": 60, "models": [""]});
    let r = cp.post(tiers, "admin", bad).await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "{}", r.json);
    assert_eq!(r.fields(), ["models"], "{}", r.json);
}
