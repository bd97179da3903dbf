//! Concurrent edits of one record keep every change: two PATCHes of different fields
//! sent at once, many rounds, on SQLite and on a real PostgreSQL (read-modify-write as a
//! revision compare-and-swap that reruns on a lost race). If-Match still means 412.

mod km_support;

use http::Method;
use km_support::{control_plane, control_plane_on_postgres, Auth, Cp};
use serde_json::json;

const ROUNDS: usize = 25;

async fn patch(cp: &Cp, path: &str, body: serde_json::Value) -> km_support::Resp {
    cp.call(Method::PATCH, path, Auth::Basic("pub"), Some(body))
        .await
}

async fn both_patches_land(cp: &Cp) {
    let api = cp
        .ok(
            Method::POST,
            "/api/am/publisher/v1/apis",
            Auth::Basic("pub"),
            Some(json!({"name": "Pets", "context": "/pets", "version": "v1",
                        "endpoints": ["http://127.0.0.1:9"], "policies": ["Unlimited"]})),
        )
        .await;
    let id = api["id"].as_str().expect("id");
    let path = format!("/api/am/publisher/v1/apis/{id}");
    let mut lost = Vec::new();
    for round in 0..ROUNDS {
        let description = format!("description {round}");
        let tag = format!("tag-{round}");
        let (a, b) = tokio::join!(
            patch(cp, &path, json!({"description": description})),
            patch(cp, &path, json!({"tags": [tag]})),
        );
        assert_eq!((a.status, b.status), (200, 200), "{} {}", a.json, b.json);
        let now = cp.ok(Method::GET, &path, Auth::Basic("pub"), None).await;
        if now["description"] != description.as_str() || now["tags"] != json!([tag]) {
            lost.push(round);
        }
    }
    assert!(
        lost.is_empty(),
        "changes lost in rounds {lost:?} of {ROUNDS}"
    );
    // A client's If-Match is still a precondition, not retried away.
    let stale = cp
        .put_if_match(
            &path,
            &format!("\"{}-1\"", &id[..8]),
            json!({"description": "stale"}),
        )
        .await;
    assert_eq!(stale.status, 412, "{}", stale.json);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_patches_keep_both_changes_on_sqlite() {
    both_patches_land(&control_plane(false).await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_patches_keep_both_changes_on_postgres() {
    both_patches_land(&control_plane_on_postgres().await).await;
}
