//! The response cache through the Publisher REST API: `cacheConfiguration` stored and
//! checked as the gateways compile it (every bad field named), carried into the gateway
//! snapshot as the API's `cache` policy, and `POST /apis/{id}/cache/purge` appending a
//! purge (rising ids, bounded) that the snapshot carries to every gateway.

mod support;

use http::{Method, StatusCode};
use serde_json::{json, Value};
use support::{control_plane, Cp};
use turnpike_store::testing::TestDbs;

const APIS: &str = "/api/am/publisher/v1/apis";

async fn snapshot_cache(cp: &Cp, context: &str) -> Value {
    let snap = cp.snapshot().await;
    let apis = snap.json["apis"].as_array().cloned().unwrap_or_default();
    let api = apis
        .iter()
        .find(|a| a["context"] == context)
        .unwrap_or_else(|| panic!("{context} in the snapshot: {}", snap.json));
    let policies = api["policies"].as_array().cloned().unwrap_or_default();
    policies
        .iter()
        .find_map(|p| p.get("cache").cloned())
        .unwrap_or(Value::Null)
}

#[tokio::test]
async fn cache_settings_and_purges_reach_the_snapshot() {
    let dbs = TestDbs::sqlite();
    let cp = control_plane(&dbs.fresh_url().await).await;
    let config = json!({"ttl": "30s", "tag_header": "Cache-Tag", "key": {"headers": ["accept"]}});
    // Stored as the file's form serializes it.
    let stored = json!({"ttl": "30s", "tag_header": "Cache-Tag",
        "key": {"headers": ["accept"], "query": true, "consumer": true}});
    let r = cp
        .post(
            APIS,
            "pub",
            json!({
                "name": "Cached", "context": "/cached", "version": "v1",
                "endpoints": ["http://127.0.0.1:9"],
                "resources": [{"path": "/*", "methods": ["GET"]}],
                "policies": ["Gold"],
                "cacheConfiguration": config
            }),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.json);
    assert_eq!(r.json["cacheConfiguration"], stored);
    let id = r.json["id"].as_str().expect("id").to_owned();
    let r = cp.lifecycle(&id, "Publish").await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.json);
    assert_eq!(snapshot_cache(&cp, "/cached").await, stored);

    let purge = format!("{APIS}/{id}/cache/purge");
    let r = cp.post(&purge, "pub", json!({"tag": "t1"})).await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{}", r.json);
    let first = r.json["id"].as_u64().expect("purge id");
    let r = cp.post(&purge, "pub", json!({"prefix": "/orders/"})).await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{}", r.json);
    assert!(r.json["id"].as_u64().expect("id") > first, "ids rise");
    let r = cp.post(&purge, "pub", json!({})).await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{}", r.json);

    let shipped = snapshot_cache(&cp, "/cached").await;
    let purges = shipped["purges"].as_array().cloned().unwrap_or_default();
    let kinds: Vec<(Value, Value)> = purges
        .iter()
        .map(|p| (p["prefix"].clone(), p["tag"].clone()))
        .collect();
    assert_eq!(
        kinds,
        [
            (Value::Null, json!("t1")),
            (json!("/orders/"), Value::Null),
            (Value::Null, Value::Null)
        ]
    );
    assert_eq!(shipped["ttl"], "30s", "the settings stay");

    // A subscriber may not purge; bad bodies name their field.
    let r = cp.post(&purge, "sub", json!({})).await;
    assert_eq!(r.status, StatusCode::FORBIDDEN, "{}", r.json);
    let r = cp.post(&purge, "pub", json!({"prefix": "orders"})).await;
    assert_eq!(
        (r.status, r.fields()),
        (StatusCode::BAD_REQUEST, vec!["prefix".to_string()])
    );
    let r = cp
        .post(&purge, "pub", json!({"prefix": "/a", "tag": "b"}))
        .await;
    assert_eq!(
        (r.status, r.fields()),
        (StatusCode::BAD_REQUEST, vec!["tag".to_string()])
    );
    let r = cp.post(&purge, "pub", json!({"everything": true})).await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "{}", r.json);
}

#[tokio::test]
async fn a_bad_cache_configuration_names_its_field_and_an_api_without_one_has_nothing_to_purge() {
    let dbs = TestDbs::sqlite();
    let cp = control_plane(&dbs.fresh_url().await).await;
    let id = cp
        .create_api("/plain", "v1", "http://127.0.0.1:9", false)
        .await;
    let api = format!("{APIS}/{id}");
    let bad = |config: Value| json!({ "cacheConfiguration": config });
    for (config, field) in [
        (json!({"ttl": "soon"}), "cacheConfiguration.ttl"),
        (
            json!({"max_entry_size": "2MiB", "max_size": "1MiB"}),
            "cacheConfiguration.max_entry_size",
        ),
        (json!({"tll": "60s"}), "cacheConfiguration"),
    ] {
        let r = cp
            .call(
                Method::PUT,
                &api,
                Some("pub"),
                Some(bad(config.clone())),
                &[],
            )
            .await;
        assert_eq!(r.status, StatusCode::BAD_REQUEST, "{config}: {}", r.json);
        assert_eq!(r.fields(), [field], "{config}: {}", r.json);
    }
    let r = cp
        .post(&format!("{api}/cache/purge"), "pub", json!({}))
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "{}", r.json);
    assert_eq!(r.fields(), ["cacheConfiguration"]);
    let r = cp
        .post(&format!("{APIS}/nope/cache/purge"), "pub", json!({}))
        .await;
    assert_eq!(r.status, StatusCode::NOT_FOUND, "{}", r.json);
}
