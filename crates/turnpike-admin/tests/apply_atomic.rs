//! `POST /api/am/publisher/v1/apply` on SQLite and on a real PostgreSQL: a whole file is
//! one transaction. A file whose second API the control plane refuses (its context is
//! held by another API the file does not list) leaves the store as it was: the first
//! API, the file's tier, nothing is written and the version does not move; the dry run
//! answers the same refusal. A good file's dry run lists what the real run then does
//! and writes nothing; the real run bumps the version once.

mod support;

use axum::body::Body;
use http::{Method, Request, StatusCode};
use serde_json::{json, Value};
use support::{basic, control_plane, Cp, Resp};
use turnpike_store::testing::TestDbs;

const APPLY: &str = "/api/am/publisher/v1/apply";

/// A file with a subscription tier and two APIs; the second at `second_context`.
fn file(second_context: &str) -> String {
    format!(
        r#"
throttling:
  subscription_tiers:
    - {{ name: FileTier, quota: {{ requests: 10, per: minute }} }}
apis:
  - name: first
    context: /first
    version: v1
    endpoints: ["http://127.0.0.1:9"]
    resources: [ {{ path: "/*", methods: [GET] }} ]
  - name: second
    context: {second_context}
    version: v2
    endpoints: ["http://127.0.0.1:9"]
    resources: [ {{ path: "/*", methods: [GET] }} ]
"#
    )
}

async fn apply(cp: &Cp, user: &str, yaml: &str, query: &str) -> Resp {
    let req = Request::builder()
        .method(Method::POST)
        .uri(format!("{APPLY}{query}"))
        .header("authorization", basic(user))
        .header("content-type", "application/yaml")
        .body(Body::from(yaml.to_owned()))
        .expect("request");
    cp.raw(req).await
}

async fn version(cp: &Cp) -> u64 {
    cp.state.store().current_version().await.expect("version")
}

/// The (context, version, lifecycle state) of every API.
async fn apis(cp: &Cp) -> Vec<(String, String, String)> {
    let r = cp.get("/api/am/publisher/v1/apis", "admin").await;
    assert_eq!(r.status, StatusCode::OK);
    r.json["list"]
        .as_array()
        .expect("list")
        .iter()
        .map(|a| {
            let s = |k: &str| a[k].as_str().unwrap_or_default().to_owned();
            (s("context"), s("version"), s("lifecycleStatus"))
        })
        .collect()
}

async fn a_refused_second_api_leaves_the_store_unchanged(url: String) {
    let cp = control_plane(&url).await;
    cp.create_api("/taken", "v1", "http://127.0.0.1:9", false)
        .await;
    let before = (version(&cp).await, apis(&cp).await);

    let real = apply(&cp, "admin", &file("/taken"), "").await;
    assert_eq!(real.status, StatusCode::BAD_REQUEST, "{}", real.json);
    assert_eq!(real.fields(), ["apis[1].context"], "{}", real.json);
    assert!(
        real.json["errors"][0]["message"]
            .as_str()
            .is_some_and(|m| m.contains("\"Echo\"")),
        "names the API holding the context: {}",
        real.json
    );
    assert_eq!(
        (version(&cp).await, apis(&cp).await),
        before,
        "the first API was rolled back"
    );
    let tier = cp
        .get(
            "/api/am/admin/v1/throttling/policies/subscription/FileTier",
            "admin",
        )
        .await;
    assert_eq!(tier.status, StatusCode::NOT_FOUND, "the file's tier too");

    let dry = apply(&cp, "admin", &file("/taken"), "?dryRun=true").await;
    assert_eq!(dry.status, real.status);
    assert_eq!(dry.json["errors"], real.json["errors"], "the same refusal");
    assert_eq!((version(&cp).await, apis(&cp).await), before);
}

async fn a_dry_run_lists_the_real_runs_changes_and_writes_nothing(url: String) {
    let cp = control_plane(&url).await;
    let v0 = version(&cp).await;
    let dry = apply(&cp, "admin", &file("/second"), "?dryRun=true").await;
    assert_eq!(dry.status, StatusCode::OK, "{}", dry.json);
    let want: Value = json!([
        "create  subscription tier FileTier",
        "create  /first v1",
        "secure  /first v1",
        "publish /first v1",
        "create  /second v2",
        "secure  /second v2",
        "publish /second v2",
    ]);
    assert_eq!(dry.json["changes"], want);
    assert_eq!(dry.json["count"], 7);
    assert_eq!(dry.json["version"], Value::Null);
    assert_eq!(version(&cp).await, v0, "a dry run writes nothing");
    assert!(apis(&cp).await.is_empty());

    let real = apply(&cp, "admin", &file("/second"), "").await;
    assert_eq!(real.status, StatusCode::OK, "{}", real.json);
    assert_eq!(real.json["changes"], want, "what the dry run said");
    assert_eq!(version(&cp).await, v0 + 1, "one transaction, one version");
    assert_eq!(real.json["version"], v0 + 1);
    assert_eq!(
        apis(&cp).await,
        [
            ("/first".into(), "v1".into(), "PUBLISHED".into()),
            ("/second".into(), "v2".into(), "PUBLISHED".into())
        ]
    );

    let again = apply(&cp, "admin", &file("/second"), "").await;
    assert_eq!(again.json["count"], 0, "{}", again.json);
    assert_eq!(version(&cp).await, v0 + 1, "nothing to change, no version");
}

async fn tiers_need_the_admin_role_and_bad_input_is_a_clear_400(url: String) {
    let cp = control_plane(&url).await;
    let r = apply(&cp, "pub", &file("/second"), "").await;
    assert_eq!(r.status, StatusCode::FORBIDDEN, "{}", r.json);
    let apis_only = "apis:\n  - { name: p, context: /p, version: v1, endpoints: ['http://127.0.0.1:9'], resources: [ { path: '/*', methods: [GET] } ] }\n";
    let r = apply(&cp, "pub", apis_only, "").await;
    assert_eq!(
        r.status,
        StatusCode::OK,
        "a publisher applies APIs: {}",
        r.json
    );
    let r = apply(&cp, "sub", apis_only, "").await;
    assert_eq!(r.status, StatusCode::FORBIDDEN);
    let r = apply(&cp, "admin", "apis: [ { nme: x } ]", "").await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    assert_eq!(r.json["code"], "bad_request", "{}", r.json);
    let r = apply(&cp, "admin", apis_only, "?dryRun=maybe").await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
}

const CASES: &[(&str, turnpike_store::testing::Case)] = turnpike_store::cases![
    a_refused_second_api_leaves_the_store_unchanged,
    a_dry_run_lists_the_real_runs_changes_and_writes_nothing,
    tiers_need_the_admin_role_and_bad_input_is_a_clear_400,
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn apply_on_sqlite() {
    TestDbs::sqlite().run(CASES).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn apply_on_postgres() {
    TestDbs::postgres().run(CASES).await;
}
