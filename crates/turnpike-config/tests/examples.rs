//! Every documented example file in `examples/` compiles.

use std::path::Path;

use turnpike_config::Snapshot;

#[test]
fn every_example_file_compiles() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples");
    let entries = match std::fs::read_dir(&dir) {
        Ok(e) => e,
        Err(e) => panic!("cannot read {}: {e}", dir.display()),
    };
    let mut seen = Vec::new();
    for entry in entries.flatten() {
        let path = entry.path();
        let is_yaml = path.extension().is_some_and(|e| e == "yaml" || e == "yml");
        if !is_yaml {
            continue;
        }
        match Snapshot::load(&path) {
            Ok(s) => assert!(!s.apis.is_empty(), "{} declares no API", path.display()),
            Err(e) => panic!("{} does not compile:\n{e}", path.display()),
        }
        seen.push(entry.file_name());
    }
    for required in ["echo.yaml", "gateway.yaml"] {
        assert!(
            seen.iter().any(|n| n == required),
            "examples/{required} is missing"
        );
    }
}

/// The routing that examples/gateway.yaml's comments promise.
#[test]
fn gateway_example_routes_as_its_comments_say() {
    use http::Method;
    use turnpike_config::RouteResult;
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/gateway.yaml");
    let s = match Snapshot::load(&path) {
        Ok(s) => s,
        Err(e) => panic!("{e}"),
    };
    let to = |host: Option<&str>, m: Method, p: &str| match s.route(host, &m, p) {
        RouteResult::Matched {
            api, upstream_path, ..
        } => format!("{} {upstream_path}", api.version),
        RouteResult::MethodNotAllowed { allow, .. } => format!("405 {allow:?}"),
        RouteResult::NotFoundIn { .. } | RouteResult::NotFound => "404".into(),
    };
    let h = Some("API.example.com:8280");
    assert_eq!(to(h, Method::GET, "/pets/v2/7"), "v2 /7");
    assert_eq!(to(h, Method::GET, "/pets/7"), "v2 /7");
    assert_eq!(to(h, Method::GET, "/pets/v1/7"), "v1 /7");
    assert_eq!(to(h, Method::HEAD, "/pets/v2/7/photos"), "v2 /7/photos");
    assert_eq!(
        to(h, Method::POST, "/pets/v2/7"),
        "405 \"GET, HEAD, PUT, DELETE\""
    );
    assert_eq!(to(h, Method::PATCH, "/pets/v2/files/a/b"), "v2 /files/a/b");
    assert_eq!(to(None, Method::GET, "/pets/v2/7"), "404");
    assert_eq!(to(None, Method::GET, "/pets/v1/7"), "v1 /7");
    let v2 = s.apis.iter().find(|a| a.version == "v2");
    assert_eq!(
        v2.map(|a| a.endpoints[0].base_path.as_str()),
        Some("/backend")
    );
}

/// examples/mcp.yaml: the API's MCP endpoint is `/mcp{context}/{version}`, for POST and
/// DELETE, beside its REST resources; its chain has the `mcp` policy with both tools.
#[test]
fn mcp_example_routes_its_endpoint_beside_its_resources() {
    use http::Method;
    use turnpike_config::RouteResult;
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/mcp.yaml");
    let s = match Snapshot::load(&path) {
        Ok(s) => s,
        Err(e) => panic!("{e}"),
    };
    let to = |m: Method, p: &str| match s.route(None, &m, p) {
        RouteResult::Matched {
            api, upstream_path, ..
        } => format!("{} {upstream_path}", api.name),
        RouteResult::MethodNotAllowed { allow, .. } => format!("405 {allow:?}"),
        RouteResult::NotFoundIn { .. } | RouteResult::NotFound => "404".into(),
    };
    assert_eq!(to(Method::POST, "/mcp/pets/v1"), "pets /");
    assert_eq!(to(Method::DELETE, "/mcp/pets/v1"), "pets /");
    assert_eq!(to(Method::GET, "/mcp/pets/v1"), "405 \"POST, DELETE\"");
    assert_eq!(to(Method::POST, "/mcp/pets/v1/x"), "404");
    assert_eq!(to(Method::GET, "/pets/v1/pets/7"), "pets /pets/7");
    let mcp = s.apis[0]
        .chain
        .find::<turnpike_mcp::McpPolicy>()
        .expect("the mcp policy");
    assert_eq!(mcp.tool_names().collect::<Vec<_>>(), ["getPet", "addPet"]);
}

/// examples/mcp-proxy.yaml: a proxied remote MCP server's API has no resources; its MCP
/// endpoint also takes `GET` (the remote's server stream, relayed).
#[test]
fn mcp_proxy_example_routes_its_endpoint_with_the_server_stream() {
    use http::Method;
    use turnpike_config::RouteResult;
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/mcp-proxy.yaml");
    let s = match Snapshot::load(&path) {
        Ok(s) => s,
        Err(e) => panic!("{e}"),
    };
    for m in [Method::POST, Method::GET, Method::DELETE] {
        assert!(
            matches!(
                s.route(None, &m, "/mcp/weather/v1"),
                RouteResult::Matched { .. }
            ),
            "{m}"
        );
    }
    assert!(matches!(
        s.route(None, &Method::PUT, "/mcp/weather/v1"),
        RouteResult::MethodNotAllowed { .. }
    ));
    assert_eq!(s.apis[0].endpoints[0].base_path, "/mcp");
}
