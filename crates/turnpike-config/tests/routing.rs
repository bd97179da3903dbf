//! Every routing rule, through the public `Snapshot::route`.

use http::Method;
use turnpike_config::{RouteResult, Snapshot};

fn snapshot(yaml: &str) -> Snapshot {
    match Snapshot::from_yaml(yaml, "test.yaml") {
        Ok(s) => s,
        Err(e) => panic!("test file refused:\n{e}"),
    }
}

/// "api-name upstream-path", "405 Allow", or "404".
fn route(s: &Snapshot, host: Option<&str>, method: Method, path: &str) -> String {
    match s.route(host, &method, path) {
        RouteResult::Matched {
            api, upstream_path, ..
        } => format!("{} {upstream_path}", api.name),
        RouteResult::MethodNotAllowed { allow, .. } => {
            format!("405 {}", allow.to_str().unwrap_or("?"))
        }
        RouteResult::NotFoundIn { api, upstream_path } => {
            format!("404 in {} {upstream_path}", api.name)
        }
        RouteResult::NotFound => "404".to_owned(),
    }
}

const ECHO: &str = r#"
apis:
  - name: echo
    context: /echo
    version: v1
    default: true
    endpoints: ["http://127.0.0.1:9000"]
    resources:
      - { path: "/*", methods: [GET, POST, PUT, DELETE] }
"#;

#[test]
fn the_documented_minimal_file_routes_versioned_and_default() {
    let s = snapshot(ECHO);
    assert_eq!(
        route(&s, None, Method::GET, "/echo/v1/anything"),
        "echo /anything"
    );
    assert_eq!(
        route(&s, None, Method::POST, "/echo/v1/a/b/c"),
        "echo /a/b/c"
    );
    assert_eq!(
        route(&s, None, Method::GET, "/echo/anything"),
        "echo /anything"
    );
    assert_eq!(route(&s, None, Method::GET, "/echo/v1"), "echo /");
    assert_eq!(route(&s, None, Method::GET, "/echo/v1/"), "echo /");
    assert_eq!(route(&s, None, Method::GET, "/echo"), "echo /");
    assert_eq!(route(&s, None, Method::GET, "/echo/"), "echo /");
}

#[test]
fn the_query_is_not_part_of_the_upstream_path() {
    let s = snapshot(ECHO);
    assert_eq!(
        route(&s, None, Method::GET, "/echo/v1/x?a=1&b=/"),
        "echo /x"
    );
    assert_eq!(route(&s, None, Method::GET, "/echo/v1?a"), "echo /");
}

#[test]
fn unknown_paths_are_not_found() {
    let s = snapshot(ECHO);
    for p in [
        "/",
        "",
        "/ech",
        "/echoes",
        "/echo1/v1",
        "/other/v1/x",
        "*",
        "echo/v1",
    ] {
        assert_eq!(route(&s, None, Method::GET, p), "404", "{p:?}");
    }
}

#[test]
fn a_method_not_listed_gets_405_with_allow() {
    let s = snapshot(ECHO);
    assert_eq!(
        route(&s, None, Method::PATCH, "/echo/v1/x"),
        "405 GET, HEAD, POST, PUT, DELETE"
    );
    assert_eq!(route(&s, None, Method::HEAD, "/echo/v1/x"), "echo /x");
}

const PETS: &str = r#"
apis:
  - name: pets-v1
    context: /pets
    version: v1
    endpoints: ["http://127.0.0.1:9000"]
    resources:
      - { path: "/", methods: [GET] }
      - { path: "/{id}", methods: [GET, DELETE] }
      - { path: "/{id}", methods: [PUT] }
      - { path: "/{id}/photos", methods: [POST] }
      - { path: "/mine", methods: [GET] }
      - { path: "/files/*", methods: ["*"] }
  - name: pets-v2
    context: /pets
    version: v2
    default: true
    endpoints: ["http://127.0.0.1:9000"]
    resources:
      - { path: "/{id}", methods: [GET] }
"#;

#[test]
fn templates_match_whole_segments() {
    let s = snapshot(PETS);
    assert_eq!(route(&s, None, Method::GET, "/pets/v1/42"), "pets-v1 /42");
    assert_eq!(
        route(&s, None, Method::POST, "/pets/v1/42/photos"),
        "pets-v1 /42/photos"
    );
    assert_eq!(route(&s, None, Method::GET, "/pets/v1/42/photos/1"), "404");
    assert_eq!(route(&s, None, Method::GET, "/pets/v1/42/other"), "404");
    assert_eq!(route(&s, None, Method::GET, "/pets/v1/"), "pets-v1 /");
    assert_eq!(route(&s, None, Method::GET, "/pets/v1"), "pets-v1 /");
}

#[test]
fn literal_segments_win_over_parameters() {
    let s = snapshot(PETS);
    assert_eq!(
        route(&s, None, Method::GET, "/pets/v1/mine"),
        "pets-v1 /mine"
    );
    assert_eq!(
        route(&s, None, Method::POST, "/pets/v1/mine"),
        "405 GET, HEAD"
    );
}

#[test]
fn resources_with_the_same_template_merge_their_methods() {
    let s = snapshot(PETS);
    assert_eq!(route(&s, None, Method::PUT, "/pets/v1/7"), "pets-v1 /7");
    assert_eq!(
        route(&s, None, Method::POST, "/pets/v1/7"),
        "405 GET, HEAD, PUT, DELETE"
    );
}

#[test]
fn trailing_wildcard_matches_its_prefix_and_below_for_any_method() {
    let s = snapshot(PETS);
    let custom = Method::from_bytes(b"PROPFIND").unwrap_or(Method::GET);
    assert_eq!(
        route(&s, None, custom, "/pets/v1/files/a/b"),
        "pets-v1 /files/a/b"
    );
    assert_eq!(
        route(&s, None, Method::PATCH, "/pets/v1/files"),
        "pets-v1 /files"
    );
    assert_eq!(
        route(&s, None, Method::PATCH, "/pets/v1/files/"),
        "pets-v1 /files/"
    );
    assert_eq!(
        route(&s, None, Method::GET, "/pets/v1/filesx"),
        "pets-v1 /filesx"
    );
}

#[test]
fn the_default_version_is_served_without_its_version_segment() {
    let s = snapshot(PETS);
    assert_eq!(route(&s, None, Method::GET, "/pets/9"), "pets-v2 /9");
    assert_eq!(route(&s, None, Method::GET, "/pets/v2/9"), "pets-v2 /9");
    // The versioned path of another version wins over the default's {id}.
    assert_eq!(route(&s, None, Method::GET, "/pets/v1/9"), "pets-v1 /9");
}

const HOSTS: &str = r#"
apis:
  - name: any
    context: /a
    version: v1
    endpoints: ["http://127.0.0.1:9000"]
    resources: [{ path: "/*", methods: [GET] }]
  - name: exact
    host: api.example.com
    context: /a
    version: v1
    endpoints: ["http://127.0.0.1:9000"]
    resources: [{ path: "/x", methods: [POST] }]
  - name: wild
    host: "*.example.com"
    context: /a
    version: v1
    endpoints: ["http://127.0.0.1:9000"]
    resources: [{ path: "/*", methods: [GET] }]
"#;

#[test]
fn host_match_exact_then_wildcard_then_any() {
    let s = snapshot(HOSTS);
    assert_eq!(
        route(&s, Some("api.example.com"), Method::POST, "/a/v1/x"),
        "exact /x"
    );
    assert_eq!(
        route(&s, Some("API.Example.com:8280"), Method::POST, "/a/v1/x"),
        "exact /x"
    );
    assert_eq!(
        route(&s, Some("api.example.com."), Method::POST, "/a/v1/x"),
        "exact /x"
    );
    // Exact host has the path but not the method: its 405 stands.
    assert_eq!(
        route(&s, Some("api.example.com"), Method::GET, "/a/v1/x"),
        "405 POST"
    );
    // A path the exact host does not serve falls through to the wildcard.
    assert_eq!(
        route(&s, Some("api.example.com"), Method::GET, "/a/v1/y"),
        "wild /y"
    );
    assert_eq!(
        route(&s, Some("b.c.example.com"), Method::GET, "/a/v1/y"),
        "wild /y"
    );
    // The apex is not a subdomain of itself.
    assert_eq!(
        route(&s, Some("example.com"), Method::GET, "/a/v1/y"),
        "any /y"
    );
    assert_eq!(
        route(&s, Some("other.org"), Method::GET, "/a/v1/y"),
        "any /y"
    );
    assert_eq!(route(&s, None, Method::GET, "/a/v1/y"), "any /y");
    assert_eq!(
        route(&s, Some("bad host::"), Method::GET, "/a/v1/y"),
        "any /y"
    );
}

#[test]
fn an_api_limited_to_a_host_is_not_served_elsewhere() {
    let s = snapshot(
        r#"
apis:
  - name: only
    host: api.example.com
    context: /a
    version: v1
    endpoints: ["http://127.0.0.1:9000"]
    resources: [{ path: "/*", methods: [GET] }]
"#,
    );
    assert_eq!(
        route(&s, Some("api.example.com"), Method::GET, "/a/v1/y"),
        "only /y"
    );
    assert_eq!(route(&s, Some("evil.com"), Method::GET, "/a/v1/y"), "404");
    assert_eq!(route(&s, None, Method::GET, "/a/v1/y"), "404");
}

#[test]
fn multi_segment_contexts_and_endpoint_details_are_compiled() {
    let s = snapshot(
        r#"
apis:
  - name: shop
    context: /shop/orders
    version: "2.1"
    endpoints: ["https://orders.internal:8443/api/", "http://10.0.0.2"]
    load_balancing: failover
    max_body_size: 1MiB
    timeouts: { connect: 250ms, response: 2m }
    resources: [{ path: "/{id}", methods: [GET] }]
"#,
    );
    assert_eq!(
        route(&s, None, Method::GET, "/shop/orders/2.1/17"),
        "shop /17"
    );
    let api = &s.apis[0];
    assert_eq!(api.endpoints[0].base_path, "/api");
    assert_eq!(api.endpoints[0].scheme.as_str(), "https");
    assert_eq!(api.endpoints[1].authority.as_str(), "10.0.0.2");
    assert_eq!(api.load_balancing, turnpike_config::LoadBalancing::Failover);
    assert_eq!(api.max_body_bytes, Some(1 << 20));
    assert_eq!(api.connect_timeout, std::time::Duration::from_millis(250));
    assert_eq!(api.response_timeout, std::time::Duration::from_secs(120));
}

#[test]
fn defaults_apply_when_fields_are_omitted() {
    let s = snapshot(ECHO);
    let api = &s.apis[0];
    assert_eq!(
        api.max_body_bytes,
        Some(turnpike_config::DEFAULT_MAX_BODY_BYTES)
    );
    assert_eq!(
        api.connect_timeout,
        turnpike_config::DEFAULT_CONNECT_TIMEOUT
    );
    assert_eq!(
        api.response_timeout,
        turnpike_config::DEFAULT_RESPONSE_TIMEOUT
    );
    assert_eq!(
        api.load_balancing,
        turnpike_config::LoadBalancing::RoundRobin
    );
    assert!(api.default_version);
    assert_eq!(api.host, None);
}

#[test]
fn an_empty_file_routes_nothing() {
    for text in ["", "# nothing yet\n", "apis: []\n"] {
        let s = snapshot(text);
        assert!(s.apis.is_empty());
        assert_eq!(route(&s, None, Method::GET, "/echo/v1"), "404");
    }
}

#[test]
fn compile_takes_the_model_as_data() {
    let file: turnpike_config::GatewayFile = match serde_yaml::from_str(ECHO) {
        Ok(f) => f,
        Err(e) => panic!("{e}"),
    };
    let json = serde_json::to_string(&file).unwrap_or_default();
    let back: turnpike_config::GatewayFile = match serde_json::from_str(&json) {
        Ok(f) => f,
        Err(e) => panic!("{e}"),
    };
    let s = match turnpike_config::compile(back, 7) {
        Ok(s) => s,
        Err(e) => panic!("{e}"),
    };
    assert_eq!(s.version, 7);
    assert_eq!(route(&s, None, Method::GET, "/echo/x"), "echo /x");
}

#[test]
fn a_soap_pass_through_api_owns_the_paths_no_resource_serves() {
    let wsdl = serde_json::Value::String(include_str!("../../../bench/soap/echo.wsdl").to_owned());
    let s = snapshot(&format!(
        r#"
apis:
  - name: ops
    context: /ops
    version: v1
    endpoints: ["http://127.0.0.1:9000"]
    resources:
      - {{ path: "/", methods: [POST] }}
      - {{ path: "/{{id}}", methods: [POST] }}
      - {{ path: "/orders/{{id}}", methods: [POST] }}
    soap: {{ type: SOAP, port: Echo11, wsdl: {wsdl} }}
  - name: inner
    context: /ops/v1/inner
    version: v2
    endpoints: ["http://127.0.0.1:9000"]
    resources:
      - {{ path: "/a", methods: [GET] }}
  - name: plain
    context: /plain
    version: v1
    endpoints: ["http://127.0.0.1:9000"]
    resources:
      - {{ path: "/a", methods: [GET] }}
"#
    ));
    assert_eq!(route(&s, None, Method::POST, "/ops/v1"), "ops /");
    assert_eq!(route(&s, None, Method::POST, "/ops/v1/7"), "ops /7");
    assert_eq!(
        route(&s, None, Method::POST, "/ops/v1/orders/7"),
        "ops /orders/7"
    );
    assert_eq!(route(&s, None, Method::PUT, "/ops/v1/7"), "405 POST");
    assert_eq!(
        route(&s, None, Method::POST, "/ops/v1/orders/7/x"),
        "404 in ops /orders/7/x"
    );
    assert_eq!(
        route(&s, None, Method::GET, "/ops/v1/a/b?wsdl"),
        "404 in ops /a/b"
    );
    // Declared routes of other APIs below the prefix still win; APIs that do not own
    // their paths keep the gateway's 404.
    assert_eq!(
        route(&s, None, Method::GET, "/ops/v1/inner/v2/a"),
        "inner /a"
    );
    assert_eq!(route(&s, None, Method::GET, "/plain/v1/b"), "404");
    assert_eq!(route(&s, None, Method::GET, "/elsewhere"), "404");
}
