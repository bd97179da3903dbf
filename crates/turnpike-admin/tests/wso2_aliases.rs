//! WSO2's field names through a control plane on a real socket: a subscription tier
//! created with WSO2's Admin API body (`policyName`, `defaultLimit`, `rateLimitCount`,
//! `stopOnQuotaReach`) reads back in our fields with the same meaning; a bandwidth tier's
//! `dataUnit` becomes bytes; a limit that cannot be read is refused naming the field; a
//! user created with `username` can log in.

mod km_support;

use http::Method;
use km_support::{control_plane, control_plane_on_postgres, Auth, Cp};
use serde_json::json;

const TIERS: &str = "/api/am/admin/v1/throttling/policies/subscription";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wso2_tier_and_user_bodies_are_understood_on_sqlite() {
    wso2_bodies(control_plane(false).await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wso2_tier_and_user_bodies_are_understood_on_postgres() {
    wso2_bodies(control_plane_on_postgres().await).await;
}

async fn wso2_bodies(cp: Cp) {
    let created = cp
        .call(
            Method::POST,
            TIERS,
            Auth::Basic("admin"),
            Some(json!({
                "policyName": "Gold2", "displayName": "Gold 2", "description": "from WSO2",
                "defaultLimit": {"type": "REQUESTCOUNTLIMIT",
                    "requestCount": {"timeUnit": "min", "unitTime": 1, "requestCount": 5000}},
                "rateLimitCount": 100, "rateLimitTimeUnit": "sec",
                "stopOnQuotaReach": false, "billingPlan": "COMMERCIAL"
            })),
        )
        .await;
    assert_eq!(created.status, 201, "{}", created.json);
    let t = &created.json;
    assert_eq!(t["name"], "Gold2", "{t}");
    assert_eq!(t["requestCount"], 5000, "{t}");
    assert_eq!(t["unitSeconds"], 60, "{t}");
    assert_eq!(t["burst"], json!({"requests": 100, "per": "second"}), "{t}");
    assert_eq!(t["stopOnQuota"], false, "{t}");

    let data = cp
        .call(
            Method::POST,
            TIERS,
            Auth::Basic("admin"),
            Some(json!({"policyName": "Data", "defaultLimit": {"type": "BANDWIDTHLIMIT",
                "bandwidth": {"timeUnit": "hour", "unitTime": 1, "dataAmount": 2, "dataUnit": "MB"}}})),
        )
        .await;
    assert_eq!(data.status, 201, "{}", data.json);
    assert_eq!(data.json["dataAmount"], 2 << 20, "{}", data.json);
    assert_eq!(data.json["unitSeconds"], 3600, "{}", data.json);

    let bad = cp
        .call(
            Method::POST,
            TIERS,
            Auth::Basic("admin"),
            Some(json!({"policyName": "Bad", "defaultLimit": {"requestCount": {"timeUnit": "fortnight", "requestCount": 1}}})),
        )
        .await;
    assert_eq!(bad.status, 400, "{}", bad.json);
    assert_eq!(
        bad.json["errors"][0]["field"], "defaultLimit",
        "{}",
        bad.json
    );

    let user = cp
        .call(
            Method::POST,
            "/api/am/admin/v1/users",
            Auth::Basic("admin"),
            Some(json!({"username": "carol", "password": km_support::PASSWORD, "roles": ["subscriber"]})),
        )
        .await;
    assert_eq!(user.status, 201, "{}", user.json);
    assert_eq!(user.json["name"], "carol");
    let me = cp
        .call(
            Method::GET,
            "/api/am/devportal/v1/applications",
            Auth::Basic("carol"),
            None,
        )
        .await;
    assert_eq!(me.status, 200, "carol logs in: {}", me.json);
}
