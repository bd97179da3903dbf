//! Golden test of chain assembly: which policies each kind of API gets, in which order,
//! and which problems a file with one error per kind reports (paths and order). Every
//! way into a chain (the `soap:` section, deprecation, `policies:`, lifecycle,
//! `max_body_size`, `auth:` with the file's `security:`, `throttling:`, `mcp:`, the cache
//! of `policies:`, `mediation:`,
//! `graphql:`) appears once, so a refactor of the chain builder cannot reorder them
//! unnoticed.

use turnpike_config::{ConfigError, GatewayFile, Snapshot};

/// The echo service's WSDL (one operation, SOAP 1.1 and 1.2 ports), as a YAML string.
fn wsdl() -> String {
    serde_json::Value::String(include_str!("../../../bench/soap/echo.wsdl").to_owned()).to_string()
}

const SCHEMA: &str = "type Query { hero: String, droid(id: Int): String }";

fn file() -> String {
    let wsdl = wsdl();
    format!(
        r#"
security:
  api_keys:
    - {{ sha256: "a52782e3a2d4dd2f95f640b9abfb3b2a6b8e722c65f55be830f6e5f619f7f873", application: app, subscriber: alice }}
  subscriptions:
    - {{ api: /rest/v1, application: app, state: ACTIVE, tier: Gold }}
throttling:
  advanced_policies:
    - name: Tiny
      default_limit: {{ requests: 2, per: minute }}
apis:
  - name: pass
    context: /pass
    version: v1
    endpoints: ["http://127.0.0.1:9000"]
    soap: {{ type: SOAP, port: Echo11, wsdl: {wsdl} }}
  - name: rest
    context: /rest
    version: v1
    endpoints: ["http://127.0.0.1:9000"]
    lifecycle: BLOCKED
    deprecation: {{ sunset: "2030-01-01T00:00:00Z" }}
    policies:
      - cors: {{ allow_origins: ["https://a.example"] }}
      - cache: {{ ttl: 30s }}
    max_body_size: 1MB
    auth: {{ api_key: true, oauth2: false }}
    throttling: Tiny
    mcp: {{ max_sessions: 3 }}
    mediation:
      request: {{ headers: {{ set: {{ x-api: rest }} }} }}
    resources:
      - {{ path: "/*", methods: [GET, POST] }}
  - name: mapped
    context: /mapped
    version: v1
    endpoints: ["http://127.0.0.1:9000"]
    soap: {{ type: SOAP_TO_REST, port: Echo11, wsdl: {wsdl} }}
    mediation:
      response: {{ headers: {{ set: {{ x-api: mapped }} }} }}
  - name: graph
    context: /graph
    version: v1
    endpoints: ["http://127.0.0.1:9000"]
    graphql:
      schema: "{SCHEMA}"
      operations:
        - {{ name: hero, type: query, throttling: Tiny }}
    resources:
      - {{ path: "/graphql", methods: [POST] }}
"#
    )
}

#[test]
fn each_api_gets_its_policies_in_the_documented_order() {
    let snap = Snapshot::from_yaml(&file(), "chain.yaml").expect("compiles");
    let names: Vec<(&str, Vec<&str>)> = snap
        .apis
        .iter()
        .map(|a| (a.name.as_str(), a.chain.names().collect()))
        .collect();
    assert_eq!(
        names,
        vec![
            // Every API has a body limit: `max_body_size` defaults to 10 MB.
            ("pass", vec!["soap", "body_limit"]),
            (
                "rest",
                vec![
                    "deprecation",
                    "cors",
                    "lifecycle",
                    "body_limit",
                    "auth",
                    "throttle",
                    "mcp",
                    "cache",
                    "mediation",
                ]
            ),
            ("mapped", vec!["body_limit", "mediation", "soap_to_rest"]),
            ("graph", vec!["body_limit", "graphql"]),
        ]
    );
}

/// A file with one error in each kind's section, each problem's path in report order.
fn bad_file() -> String {
    file()
        .replace("port: Echo11, wsdl", "port: NoSuchPort, wsdl")
        .replace("sunset: \"2030-01-01T00:00:00Z\"", "sunset: tomorrow")
        .replace(
            "allow_origins: [\"https://a.example\"]",
            "allow_origins: []",
        )
        .replace("ttl: 30s", "ttl: soon")
        .replace("lifecycle: BLOCKED", "lifecycle: SIDEWAYS")
        .replace("max_body_size: 1MB", "max_body_size: lots")
        .replace(
            "auth: { api_key: true, oauth2: false }",
            "auth: { api_key_header: \"\" }",
        )
        .replace(
            "throttling: Tiny\n    mcp",
            "throttling: NoSuchPolicy\n    mcp",
        )
        .replace("x-api: rest", "content-length: \"1\"")
        .replace("throttling: Tiny }", "throttling: Missing }")
        .replace("hero: String", "hero: Nope")
}

/// Each problem's path, as `from_yaml` reports them (by line, then in build order).
fn yaml_paths(yaml: &str) -> Vec<String> {
    match Snapshot::from_yaml(yaml, "bad.yaml") {
        Ok(_) => panic!("accepted"),
        Err(ConfigError::Problems(p)) => p.list.iter().map(|p| p.path.clone()).collect(),
        Err(e) => panic!("unexpected error {e}"),
    }
}

/// Each problem's path in the order the compiler found them (a file that arrives as
/// data has no lines to sort by).
fn build_order(yaml: &str) -> Vec<String> {
    let file: GatewayFile = serde_yaml::from_str(yaml).expect("the file parses");
    match turnpike_config::compile(file, 1) {
        Ok(_) => panic!("accepted"),
        Err(e) => e.problems().iter().map(|p| p.path.clone()).collect(),
    }
}

#[test]
fn a_file_with_one_error_per_kind_reports_each_in_build_order() {
    let bad = bad_file();
    assert_eq!(
        yaml_paths(&bad),
        [
            "apis[0].resources",
            "apis[0].soap",
            "apis[1].lifecycle",
            "apis[1].deprecation.sunset",
            "apis[1].policies[0].cors.allow_origins",
            "apis[1].policies[1].cache.ttl",
            "apis[1].max_body_size",
            "apis[1].auth.api_key_header",
            "apis[1].throttling",
            "apis[1].mediation.request.headers.set.content-length",
            "apis[2].resources",
            "apis[2].soap",
            "apis[3].graphql.schema",
            "apis[3].graphql.operations[0].throttling",
        ]
    );
    // Kind by kind over every API (soap, security, throttling, mediation), then each
    // API's deprecation, `policies:` and GraphQL, then the values validation checks.
    assert_eq!(
        build_order(&bad),
        [
            "apis[0].soap",
            "apis[2].soap",
            "apis[1].lifecycle",
            "apis[1].auth.api_key_header",
            "apis[1].throttling",
            "apis[3].graphql.operations[0].throttling",
            "apis[1].mediation.request.headers.set.content-length",
            "apis[1].deprecation.sunset",
            "apis[1].policies[0].cors.allow_origins",
            "apis[1].policies[1].cache.ttl",
            "apis[3].graphql.schema",
            "apis[0].resources",
            "apis[1].max_body_size",
            "apis[2].resources",
        ]
    );
}
