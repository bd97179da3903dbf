//! Per-resource cache settings through the Publisher REST API: a resource's
//! `cacheConfiguration` (`false`, `true`, or settings over the API's) stored in the
//! file's form, carried into the snapshot as the resource's `cache`, changed by a
//! PATCH; bad settings refused with the resource's REST field named.

mod support;

use http::{Method, StatusCode};
use serde_json::{json, Value};
use support::{control_plane, Cp};
use turnpike_store::testing::TestDbs;

const APIS: &str = "/api/am/publisher/v1/apis";

/// The resources of `context` as gateways receive them.
async fn shipped_resources(cp: &Cp, context: &str) -> Value {
    let snap = cp.snapshot().await;
    let apis = snap.json["apis"].as_array().cloned().unwrap_or_default();
    apis.iter()
        .find(|a| a["context"] == context)
        .map(|a| a["resources"].clone())
        .unwrap_or_else(|| panic!("{context} in the snapshot: {}", snap.json))
}

#[tokio::test]
async fn resource_cache_settings_round_trip_to_the_snapshot() {
    let dbs = TestDbs::sqlite();
    let cp = control_plane(&dbs.fresh_url().await).await;
    let resources = json!([
        {"path": "/items/*", "methods": ["GET"]},
        {"path": "/live/*", "methods": ["GET"], "cacheConfiguration": false},
        {"path": "/slow/*", "methods": ["GET"], "cacheConfiguration": {"ttl": "5m", "statuses": [200]}},
        {"path": "/all/*", "methods": ["GET"], "cacheConfiguration": true}
    ]);
    let r = cp
        .post(
            APIS,
            "pub",
            json!({
                "name": "Shop", "context": "/shop", "version": "v1",
                "endpoints": ["http://127.0.0.1:9"], "resources": resources,
                "policies": ["Gold"], "cacheConfiguration": {"ttl": "60s"}
            }),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.json);
    assert_eq!(r.json["resources"], resources, "stored as sent");
    let id = r.json["id"].as_str().expect("id").to_owned();
    let r = cp.get(&format!("{APIS}/{id}"), "pub").await;
    assert_eq!(r.json["resources"], resources, "read back as sent");
    let r = cp.lifecycle(&id, "Publish").await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.json);
    let shipped = shipped_resources(&cp, "/shop").await;
    let caches: Vec<&Value> = (0..4).map(|i| &shipped[i]["cache"]).collect();
    assert_eq!(
        caches,
        [
            &Value::Null,
            &json!(false),
            &json!({"ttl": "5m", "statuses": [200]}),
            &json!(true)
        ],
        "{shipped}"
    );

    // A PATCH switches the slow resource off.
    let mut patched = resources.clone();
    patched[2]["cacheConfiguration"] = json!(false);
    let r = cp
        .call(
            Method::PATCH,
            &format!("{APIS}/{id}"),
            Some("pub"),
            Some(json!({ "resources": patched })),
            &[],
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.json);
    let shipped = shipped_resources(&cp, "/shop").await;
    assert_eq!(shipped[2]["cache"], json!(false), "{shipped}");
}

#[tokio::test]
async fn bad_resource_cache_settings_name_the_resources_field() {
    let dbs = TestDbs::sqlite();
    let cp = control_plane(&dbs.fresh_url().await).await;
    let id = cp
        .create_api("/plain", "v1", "http://127.0.0.1:9", false)
        .await;
    let api = format!("{APIS}/{id}");
    for (config, field) in [
        (
            json!({"ttl": "soon"}),
            "resources[0].cacheConfiguration.ttl",
        ),
        (
            json!({"max_size": "1MiB"}),
            "resources[0].cacheConfiguration.max_size",
        ),
        (json!({"tll": "5s"}), "resources[0].cacheConfiguration"),
        (json!(3), "resources[0].cacheConfiguration"),
    ] {
        let body = json!({"resources": [
            {"path": "/*", "methods": ["GET"], "cacheConfiguration": config}
        ]});
        let r = cp
            .call(Method::PUT, &api, Some("pub"), Some(body), &[])
            .await;
        assert_eq!(r.status, StatusCode::BAD_REQUEST, "{config}: {}", r.json);
        assert_eq!(r.fields(), [field], "{config}: {}", r.json);
    }
}
