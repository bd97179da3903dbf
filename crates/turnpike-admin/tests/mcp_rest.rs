//! An API exposed as an MCP server through the Publisher REST API (docs/mcp.md): the
//! `mcp` section is stored as given, read back and compiled as the gateways would; a bad
//! section is a 400 naming every field at once.

mod support;

use http::StatusCode;
use serde_json::json;
use support::control_plane;
use turnpike_store::testing::TestDbs;

const APIS: &str = "/api/am/publisher/v1/apis";

#[tokio::test]
async fn the_mcp_section_is_stored_checked_and_read_back() {
    let dbs = TestDbs::sqlite();
    let cp = control_plane(&dbs.fresh_url().await).await;
    let mcp = json!({
        "tools": [{"operation": "GET /pets/{id}", "name": "get_pet", "description": "One pet"}],
        "session_idle": "10m",
    });
    let body = json!({
        "name": "m", "context": "/m", "version": "v1",
        "endpoints": ["http://127.0.0.1:9001"],
        "resources": [{"path": "/pets/{id}", "methods": ["GET"]}, {"path": "/pets", "methods": ["POST"]}],
        "mcp": mcp,
    });
    let r = cp.post(APIS, "pub", body).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.json);
    let id = r.json["id"].as_str().expect("id").to_owned();
    let r = cp.get(&format!("{APIS}/{id}"), "pub").await;
    assert_eq!(r.json["mcp"], mcp, "{}", r.json);

    let bad = json!({
        "name": "b", "context": "/b", "version": "v1",
        "endpoints": ["http://127.0.0.1:9001"],
        "resources": [{"path": "/pets", "methods": ["GET"]}],
        "mcp": {"max_sessions": 0, "tools": [{"operation": "nope"}]},
    });
    let r = cp.post(APIS, "pub", bad).await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "{}", r.json);
    let f = r.fields();
    for want in ["mcp.max_sessions", "mcp.tools[0].operation"] {
        assert!(
            f.iter().any(|x| x == want),
            "{want} not in {f:?}: {}",
            r.json
        );
    }
    let r = cp
        .post(
            APIS,
            "pub",
            json!({"name": "c", "context": "/c", "version": "v1",
        "endpoints": ["http://127.0.0.1:9001"], "mcp": "yes"}),
        )
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "{}", r.json);
    assert_eq!(r.fields(), ["mcp"]);
}
