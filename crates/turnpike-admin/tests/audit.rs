//! The audit log over real sockets, on SQLite and on a real PostgreSQL: writes made through
//! the REST APIs by different users come back newest first with who, what, when and the
//! version each made; filters by user, text and time, paging; admins only; bad bounds 400.

mod km_support;

use http::Method;
use km_support::{control_plane, control_plane_on_postgres, Auth, Cp};
use serde_json::{json, Value};

const LOG: &str = "/api/am/admin/v1/audit-log";

async fn entries(cp: &Cp, query: &str) -> Value {
    cp.ok(
        Method::GET,
        &format!("{LOG}{query}"),
        Auth::Basic("admin"),
        None,
    )
    .await
}

fn actions(v: &Value) -> Vec<(String, String)> {
    v["list"]
        .as_array()
        .expect("list")
        .iter()
        .map(|e| {
            (
                e["user"].as_str().unwrap_or("").to_string(),
                e["action"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect()
}

async fn records_every_write(cp: Cp) {
    let before = entries(&cp, "?limit=1").await;
    let start = before["list"][0]["version"].as_i64().unwrap_or(0);
    let t0 = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock")
        .as_secs();

    let api = cp
        .ok(
            Method::POST,
            "/api/am/publisher/v1/apis",
            Auth::Basic("pub"),
            Some(json!({"name": "Audited", "context": "/audited", "version": "v1",
                "endpoints": ["http://127.0.0.1:9"], "resources": [{"path": "/*", "methods": ["GET"]}]})),
        )
        .await;
    let id = api["id"].as_str().expect("id").to_string();
    cp.ok(
        Method::POST,
        "/api/am/admin/v1/throttling/policies/subscription",
        Auth::Basic("admin"),
        Some(json!({"name": "Audit10", "requestCount": 10, "unitSeconds": 60})),
    )
    .await;
    cp.ok(
        Method::DELETE,
        &format!("/api/am/publisher/v1/apis/{id}"),
        Auth::Basic("pub"),
        None,
    )
    .await;
    // A refused write changes nothing and logs nothing.
    let refused = cp
        .call(
            Method::POST,
            "/api/am/publisher/v1/apis",
            Auth::Basic("pub"),
            Some(json!({"name": "", "context": "nope"})),
        )
        .await;
    assert_eq!(refused.status, 400);

    let all = entries(&cp, "").await;
    let newest: Vec<(String, String)> = actions(&all).into_iter().take(3).collect();
    assert_eq!(newest.len(), 3, "{all}");
    assert_eq!(newest[0].0, "pub");
    assert_eq!(newest[0].1, "delete API /audited v1");
    assert_eq!(newest[1].0, "admin");
    assert!(newest[1].1.contains("Audit10"), "{newest:?}");
    assert_eq!(newest[2].0, "pub");
    assert_eq!(newest[2].1, "create API /audited v1");
    let first = &all["list"][0];
    assert_eq!(
        first["version"].as_i64(),
        Some(start + 3),
        "one version per write"
    );
    assert_eq!(first["previousVersion"].as_i64(), Some(start + 2));
    assert!(first["time"].as_str().is_some_and(|t| t.ends_with('Z')));
    assert!(first["timestamp"]
        .as_i64()
        .is_some_and(|t| t >= t0 as i64 * 1000));

    // Filters: by user, by text, by time; paging.
    let by_admin = entries(&cp, "?user=admin").await;
    assert!(actions(&by_admin).iter().all(|(u, _)| u == "admin"));
    assert!(actions(&by_admin)
        .iter()
        .any(|(_, a)| a.contains("Audit10")));
    let by_text = entries(&cp, "?q=audit10").await;
    assert_eq!(by_text["count"], 1, "{by_text}");
    let total = all["count"].as_i64().expect("count");
    let future = entries(&cp, &format!("?from={}", t0 + 3600)).await;
    assert_eq!(future["count"], 0, "{future}");
    let window = entries(&cp, &format!("?from={}&to={}", t0 - 3600, t0 + 3600)).await;
    assert_eq!(window["count"].as_i64(), Some(total));
    let past = entries(&cp, &format!("?to={}", t0 - 3600)).await;
    assert_eq!(past["count"], 0);
    let page2 = entries(&cp, "?limit=1&offset=1").await;
    assert_eq!(page2["list"].as_array().map(Vec::len), Some(1));
    assert_eq!(
        page2["list"][0]["action"],
        "create subscription tier Audit10"
    );

    // Admins only; bad bounds are named.
    let r = cp.call(Method::GET, LOG, Auth::Basic("pub"), None).await;
    assert_eq!(r.status, 403);
    let r = cp.call(Method::GET, LOG, Auth::None, None).await;
    assert_eq!(r.status, 401);
    let r = cp
        .call(
            Method::GET,
            &format!("{LOG}?from=yesterday"),
            Auth::Basic("admin"),
            None,
        )
        .await;
    assert_eq!(
        (r.status, r.json["errors"][0]["field"].as_str()),
        (400, Some("from")),
        "{}",
        r.json
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_audit_log_records_every_write_on_sqlite() {
    records_every_write(control_plane(false).await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_audit_log_records_every_write_on_postgres() {
    records_every_write(control_plane_on_postgres().await).await;
}
