//! Endpoint resilience through the Publisher REST API (docs/resilience.md, "Through the
//! control plane"): endpoint objects and the `resilience` section are stored as given and
//! read back; what the gateways would refuse is a 400 naming every field at once.

mod support;

use http::StatusCode;
use serde_json::json;
use support::control_plane;
use turnpike_store::testing::TestDbs;

const APIS: &str = "/api/am/publisher/v1/apis";

#[tokio::test]
async fn endpoint_objects_and_resilience_are_stored_checked_and_read_back() {
    let dbs = TestDbs::sqlite();
    let cp = control_plane(&dbs.fresh_url().await).await;
    let resilience = json!({
        "suspension": {"on": ["connect_failure", "5xx"], "initial_duration": "5s", "progression_factor": 2},
        "circuit_breaker": {"consecutive_failures": 2},
        "health_check": {"path": "/health", "interval": "5s"}
    });
    let body = json!({
        "name": "r", "context": "/r", "version": "v1",
        "endpoints": ["http://127.0.0.1:9001", {"url": "http://127.0.0.1:9002", "weight": 3, "timeouts": {"connect": "2s", "read": "10s"}}],
        "sandboxEndpoints": [{"url": "http://127.0.0.1:9003", "weight": 0}],
        "loadBalancing": "weighted_round_robin",
        "resilience": resilience,
    });
    let r = cp.post(APIS, "pub", body.clone()).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.json);
    let id = r.json["id"].as_str().expect("id").to_owned();
    let r = cp.get(&format!("{APIS}/{id}"), "pub").await;
    assert_eq!(r.json["endpoints"], body["endpoints"], "{}", r.json);
    assert_eq!(r.json["sandboxEndpoints"], body["sandboxEndpoints"]);
    assert_eq!(r.json["loadBalancing"], "weighted_round_robin");
    assert_eq!(r.json["resilience"], resilience);

    // Every problem at once: a shape, a weight, a window, a duration.
    let bad = json!({
        "name": "b", "context": "/b", "version": "v1",
        "endpoints": [{"url": "http://127.0.0.1:1", "bogus": 1}, {"url": "http://127.0.0.1:2", "weight": 500}],
        "loadBalancing": "random",
    });
    let r = cp.post(APIS, "pub", bad).await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    let mut f = r.fields();
    f.sort();
    assert_eq!(f, ["endpoints[0]", "loadBalancing"], "{}", r.json);
    let bad = json!({
        "name": "b", "context": "/b", "version": "v1",
        "endpoints": ["http://127.0.0.1:1", {"url": "http://127.0.0.1:2", "weight": 500}],
        "resilience": {"circuit_breaker": {"window": 5000}, "suspension": {"initial_duration": "soon"}},
    });
    let r = cp.post(APIS, "pub", bad).await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    let f = r.fields();
    for want in [
        "endpoints[1].weight",
        "resilience.circuit_breaker.window",
        "resilience.suspension.initial_duration",
    ] {
        assert!(
            f.iter().any(|x| x == want),
            "{want} not in {f:?}: {}",
            r.json
        );
    }
}
