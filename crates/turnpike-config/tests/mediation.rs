//! `mediation:` in the file: valid transforms compile and are found per resource with
//! their path parameters; every bad field is named with its line and column.

use http::Method;
use turnpike_config::{
    ApiMediation, CompiledApi, ConfigError, Location, MediationPolicy, Snapshot,
};

/// The API's compiled transforms, as its chain's mediation policy holds them.
fn mediation(api: &CompiledApi) -> Option<&ApiMediation> {
    api.chain
        .find::<MediationPolicy>()
        .map(MediationPolicy::mediation)
}

const GOOD: &str = r#"apis:
  - name: shop
    context: /shop
    version: v1
    endpoints: ["http://127.0.0.1:9000"]
    mediation:
      request:
        headers: { set: { x-api: shop } }
        body: { jq: "{order: .}" }
    resources:
      - path: /orders/{id}/items/{item}
        methods: [POST]
        mediation:
          request:
            name: rewrite-items
            path: /v2/items/{item}
            body: { jq: "{id: $path.id, item: $path.item}" }
      - { path: "/*", methods: [GET, POST] }
"#;

#[test]
fn resource_transforms_replace_the_apis_and_see_path_parameters() {
    let snap = Snapshot::from_yaml(GOOD, "good.yaml").expect("compiles");
    let api = &snap.apis[0];
    let m = mediation(api).expect("mediation compiled");
    let sel = m.select(&Method::POST, "/orders/7/items/x%20y");
    let req = sel.request.expect("a request transform");
    assert_eq!(&*req.name, "rewrite-items");
    assert_eq!(sel.params, vec![("id", "7"), ("item", "x%20y")]);
    assert!(sel.response.is_none());
    let sel = m.select(&Method::GET, "/other");
    assert_eq!(&*sel.request.expect("the API's").name, "shop/request");
    assert!(sel.params.is_empty());
}

#[test]
fn apis_without_mediation_carry_none() {
    let yaml = GOOD
        .split("    mediation:")
        .next()
        .expect("head")
        .to_owned()
        + "    resources:\n      - { path: \"/*\", methods: [GET] }\n";
    let snap = Snapshot::from_yaml(&yaml, "plain.yaml").expect("compiles");
    assert!(mediation(&snap.apis[0]).is_none());
    assert!(
        snap.apis[0].chain.names().all(|n| n != "mediation"),
        "an API without mediation has no mediation step"
    );
}

#[test]
fn the_mediation_step_runs_last_and_buffers_only_what_it_reads() {
    use turnpike_policy::Hooks;
    let snap = Snapshot::from_yaml(GOOD, "good.yaml").expect("compiles");
    let chain = &snap.apis[0].chain;
    assert_eq!(chain.names().last(), Some("mediation"));
    assert!(chain.hooks().contains(Hooks::REQUEST_BODY));
    assert!(!chain.hooks().contains(Hooks::RESPONSE_BODY));
    // Header operations only: no body is buffered in either direction.
    let heads = "apis:\n  - name: h\n    context: /h\n    version: v1\n    endpoints: [\"http://127.0.0.1:9\"]\n    mediation:\n      request: { headers: { set: { x-a: b } } }\n      response: { headers: { remove: [server] } }\n    resources:\n      - { path: \"/*\", methods: [GET] }\n";
    let snap = Snapshot::from_yaml(heads, "heads.yaml").expect("compiles");
    let hooks = snap.apis[0].chain.hooks();
    assert!(hooks.contains(Hooks::REQUEST_HEADERS) && hooks.contains(Hooks::RESPONSE_HEADERS));
    assert!(!hooks.contains(Hooks::REQUEST_BODY) && !hooks.contains(Hooks::RESPONSE_BODY));
}

fn problems(yaml: &str) -> Vec<String> {
    match Snapshot::from_yaml(yaml, "bad.yaml") {
        Ok(_) => panic!("file was accepted:\n{yaml}"),
        Err(ConfigError::Problems(p)) => p
            .list
            .iter()
            .map(|p| match p.location {
                Some(Location { line, column }) => {
                    format!("{line}:{column} {}: {}", p.path, p.message)
                }
                None => format!("?:? {}: {}", p.path, p.message),
            })
            .collect(),
        Err(e) => panic!("unexpected error {e}"),
    }
}

#[test]
fn every_bad_field_is_named_at_once() {
    let yaml = r#"apis:
  - name: shop
    context: /shop
    version: v1
    endpoints: ["http://127.0.0.1:9000"]
    mediation:
      request:
        headers: { set: { content-length: "1" } }
        body: { jq: "{a: .b", deadline: "soon" }
      response:
        query: { set: { a: b } }
        body: { payload_factory: "<payloadFactory media-type=\"xml\"><format/></payloadFactory>" }
    resources:
      - path: /orders/{id}
        methods: [POST]
        mediation:
          request: { path: "/v2/{nope}" }
"#;
    let p = problems(yaml);
    let want = [
        "apis[0].mediation.request.body.deadline",
        "apis[0].mediation.request.headers.set.content-length",
        "apis[0].mediation.request.body.jq",
        "apis[0].mediation.response.query",
        "apis[0].mediation.response.body.payload_factory",
        "apis[0].resources[0].mediation.request.path",
    ];
    for w in want {
        assert!(
            p.iter().any(|l| l.contains(&format!(" {w}: "))),
            "missing {w}: {p:#?}"
        );
    }
    assert!(
        p.iter().all(|l| !l.starts_with("?:?")),
        "every problem has a position: {p:#?}"
    );
}

#[test]
fn try_run_applies_a_transform_to_a_sample() {
    let snap = Snapshot::from_yaml(GOOD, "good.yaml").expect("compiles");
    let m = mediation(&snap.apis[0]).expect("mediation");
    let mut headers = http::HeaderMap::new();
    headers.insert(
        "content-type",
        http::HeaderValue::from_static("application/json"),
    );
    let out = m
        .try_run(turnpike_config::MediationSample {
            method: Method::POST,
            path: "/orders/7/items/x".into(),
            query: None,
            headers,
            body: br#"{"q": 1}"#.to_vec(),
            status: None,
        })
        .expect("runs");
    assert_eq!(out.policy.as_deref(), Some("rewrite-items"));
    assert_eq!(out.path, "/v2/items/x");
    assert_eq!(out.body, br#"{"id":"7","item":"x"}"#.to_vec());
}
