//! The portals' view of an API's MCP server (docs/mcp.md "Portals"): the Publisher's
//! `GET /apis/{id}/mcp-tools` proposes the imported OpenAPI document's operations as
//! tools before the API is exposed and shows the section's selection and renames after;
//! the DevPortal's `GET /mcp-servers` lists only visible APIs with an `mcp:` section,
//! their endpoint URLs and the selected tools.

mod support;

use http::{Method, StatusCode};
use serde_json::{json, Value};
use support::control_plane;
use turnpike_store::testing::TestDbs;

const APIS: &str = "/api/am/publisher/v1/apis";
const SERVERS: &str = "/api/am/devportal/v1/mcp-servers";

const DOC: &str = "openapi: 3.0.1
info: {title: Petstore, version: '1.0'}
servers: [{url: 'http://127.0.0.1:9/base'}]
paths:
  /pets/{id}:
    get:
      operationId: getPet
      summary: One pet
      parameters: [{name: id, in: path, required: true, schema: {type: integer}}]
  /pets:
    post:
      summary: Add a pet
      requestBody: {required: true, content: {application/json: {schema: {type: object}}}}
";

/// The tools' names, sorted (the document's paths are read in key order).
fn names(tools: &Value, selected_only: bool) -> Vec<String> {
    let mut out: Vec<String> = tools
        .as_array()
        .into_iter()
        .flatten()
        .filter(|t| !selected_only || t["selected"] == true)
        .map(|t| t["tool"]["name"].as_str().unwrap_or_default().to_owned())
        .collect();
    out.sort();
    out
}

/// The candidate of this operation.
fn of<'a>(tools: &'a Value, operation: &str) -> &'a Value {
    tools
        .as_array()
        .into_iter()
        .flatten()
        .find(|t| t["operation"] == operation)
        .unwrap_or(&Value::Null)
}

#[tokio::test]
async fn publisher_reviews_the_tools_and_developers_see_the_servers() {
    let dbs = TestDbs::sqlite();
    let cp = control_plane(&dbs.fresh_url().await).await;
    let r = cp
        .post(
            &format!("{APIS}/import-openapi"),
            "pub",
            json!({"definition": DOC, "additionalProperties": {"context": "/store", "version": "v1"}}),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.json);
    let id = r.json["id"].as_str().expect("id").to_owned();
    let tools_path = format!("{APIS}/{id}/mcp-tools");

    // Not exposed: the stored document's operations, all proposed, the document given.
    let r = cp.get(&tools_path, "pub").await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.json);
    assert_eq!(r.json["exposed"], false);
    assert_eq!(r.json["endpoint"], "/mcp/store/v1");
    assert_eq!(r.json["source"], "openapi");
    assert_eq!(r.json["openapi"], DOC);
    assert_eq!(names(&r.json["tools"], true), ["getPet", "post_pets"]);
    assert_eq!(
        of(&r.json["tools"], "POST /pets")["tool"]["name"],
        "post_pets"
    );
    let get = of(&r.json["tools"], "getPet");
    assert_eq!(get["tool"]["inputSchema"]["required"], json!(["id"]));

    // Exposed with one tool renamed: the other is listed, not selected.
    let mcp = json!({"openapi": DOC, "tools": [{"operation": "getPet", "name": "fetch_pet", "description": "Reads a pet"}]});
    let r = cp
        .call(
            Method::PATCH,
            &format!("{APIS}/{id}"),
            Some("pub"),
            Some(json!({"mcp": mcp})),
            &[],
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.json);
    let r = cp.get(&tools_path, "pub").await;
    assert_eq!(r.json["exposed"], true);
    assert!(r.json.get("openapi").is_none(), "{}", r.json);
    assert_eq!(names(&r.json["tools"], false), ["fetch_pet", "post_pets"]);
    assert_eq!(names(&r.json["tools"], true), ["fetch_pet"]);
    let get = of(&r.json["tools"], "getPet");
    assert_eq!(
        (&get["defaultName"], &get["selected"]),
        (&json!("getPet"), &json!(true))
    );
    assert_eq!(get["tool"]["description"], "Reads a pet");
    assert_eq!(r.json["problems"], json!([]));
    let r = cp.get(&format!("{APIS}/nope/mcp-tools"), "pub").await;
    assert_eq!(r.status, StatusCode::NOT_FOUND);
    let r = cp.get(&tools_path, "sub").await;
    assert_eq!(
        r.status,
        StatusCode::FORBIDDEN,
        "a subscriber is no publisher"
    );

    // The DevPortal lists it once published; an API without mcp: is no MCP server.
    let r = cp.get(SERVERS, "sub").await;
    assert_eq!(
        (r.status, r.json["count"].clone()),
        (StatusCode::OK, json!(0)),
        "{}",
        r.json
    );
    assert_eq!(cp.lifecycle(&id, "Publish").await.status, StatusCode::OK);
    let plain = cp
        .create_api("/plain", "v1", "http://127.0.0.1:9", false)
        .await;
    assert_eq!(cp.lifecycle(&plain, "Publish").await.status, StatusCode::OK);
    let r = cp.get(SERVERS, "sub").await;
    assert_eq!(r.json["count"], 1, "{}", r.json);
    let s = &r.json["list"][0];
    assert_eq!(
        (&s["apiId"], &s["endpoint"]),
        (&json!(id), &json!("/mcp/store/v1"))
    );
    let tools: Vec<&str> = s["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert_eq!(tools, ["fetch_pet"]);
    assert!(s["endpointURLs"].is_array(), "{s}");
    let r = cp
        .get(&format!("{SERVERS}?query=nothing-like-it"), "sub")
        .await;
    assert_eq!(r.json["count"], 0);
}
