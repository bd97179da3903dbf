//! `turnpike apply` and `GET /api/am/admin/v1/export` round trip, from a control plane on
//! SQLite to one on a real PostgreSQL (both serving on `127.0.0.1:0` with their key
//! managers): a file using every field of examples/gateway.yaml (tiers with a burst, the
//! unauthenticated tier and header style, a GraphQL section, a mediation section,
//! bandwidth and billing, an advanced policy with conditional groups named by an API and
//! a resource, host, load balancing, body limit, request buffering, timeouts (read_idle too),
//! the upstream protocol, path options, a response cache (and resources' own),
//! scopes, an `auth: none`
//! resource, `auth:` of an API, `mediation:` of an API and of a resource) is applied to
//! the first; its export is applied to the
//! second; both export the same file and gateways receive the same APIs and policies.
//! `--dry-run` counts exactly what the run then does, and a second run changes nothing.

use std::net::SocketAddr;
use std::time::Duration;

use serde_json::{json, Value};
use turnpike_admin::{AdminConfig, AppState};
use turnpike_cli::apply::{reconcile, ApplyArgs};
use turnpike_store::testing::TestDbs;
use turnpike_store::{PasswordParams, Store};

const FILE: &str = r#"
format_version: 1
throttling:
  subscription_tiers:
    - name: Platinum
      quota: { requests: 20000, per: minute }
      burst: { requests: 500, per: second }
    - name: Metered
      quota: { bytes: 1073741824, per: day }
      stop_on_quota: false
  application_tiers:
    - { name: 100PerMin, quota: { requests: 100, per: minute } }
  advanced_policies:
    - name: PetsPolicy
      default_limit: { requests: 1000, per: minute }
      groups:
        - name: mobile
          conditions: [ { type: header, name: User-Agent, value: "PetsApp/*" } ]
          limit: { requests: 300, per: minute }
        - conditions: [ { type: ip, ip: 10.0.0.0/8, invert: true } ]
          limit: { requests: 50, per: minute, every: 5 }
  unauthenticated_tier: Platinum
  headers: both
apis:
  - name: pets
    context: /pets
    version: v2
    default: true
    host: api.example.com
    endpoints: ["http://10.0.0.5:8080/backend", "http://10.0.0.6:8080/backend"]
    load_balancing: failover
    max_body_size: 10MiB
    request_buffering: { size: 256KiB, timeout: 20s }
    timeouts: { connect: 5s, response: 60s, read_idle: 90s }
    upstream_protocol: h2c
    throttling: PetsPolicy
    subscription_tiers: [Platinum, Unlimited]
    auth: { oauth2: true, api_key: true, subscription: false }
    mediation:
      request:
        headers: { set: { x-source: gateway } }
        body: { jq: "{pet: ., by: $identity.app}", deadline: 50ms }
      response:
        body: { jq: "del(.internal)" }
    resources:
      - { path: /, methods: [GET, POST] }
      - path: "/{id}"
        methods: [GET, PUT, DELETE]
        scopes: ["pets:write"]
        mediation:
          request: { name: legacy-put, path: "/v0/pet/{id}" }
      - { path: "/{id}/photos", methods: [GET, POST], throttling: 10KPerMin }
      - { path: /health, methods: [GET], auth: none }
      - { path: "/files/*", methods: ["*"] }
  - name: pets
    context: /pets
    version: v1
    endpoints: ["http://10.0.0.7:8080"]
    paths: { matrix_parameters: strip, case_insensitive: true }
    resources:
      - { path: "/*", methods: [GET] }
      - { path: "/live/*", methods: [GET], cache: false }
      - { path: "/slow/*", methods: [GET], cache: { ttl: 5m, key: { query: false } } }
    policies:
      - cache: { ttl: 30s, key: { headers: [accept] }, tag_header: Cache-Tag }
    mediation:
      request:
        headers: { set: { x-source: gateway } }
        body: { jq: '{order: .}' }
  - name: heroes
    context: /heroes
    version: v1
    endpoints: ["http://10.0.0.8:8080/graphql"]
    resources:
      - { path: "/*", methods: [GET, POST] }
    graphql:
      schema: "type Query { hero(first: Int): [String] }"
      limits: { max_depth: 5, max_complexity: 50 }
      operations:
        - { name: hero, type: query, scopes: ["heroes:read"] }
applications:
  - name: pets-app
    owner: admin
    tier: 100PerMin
    description: the pets front end
    subscriptions:
      - { context: /heroes, version: v1, tier: Unlimited }
      - { context: /pets, version: v2, tier: Platinum }
"#;

const TOKEN: &str = "roundtrip-gateway-token";

struct Cp {
    state: AppState,
    addr: SocketAddr,
    _stop: tokio::sync::oneshot::Sender<()>,
}

async fn serve(url: &str) -> Cp {
    let store = Store::open_with(url, PasswordParams::insecure_fast())
        .await
        .expect("store");
    let state = AppState::new(
        store,
        AdminConfig {
            gateway_token: TOKEN.into(),
            long_poll: Duration::from_secs(1),
            body_limit: 1 << 20,
            ..AdminConfig::default()
        },
    );
    turnpike_admin::create_user_with(&state, "test", "admin", "password1", &["admin".into()])
        .await
        .expect("admin");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    turnpike_admin::security::enable(&state, &format!("http://{addr}"))
        .await
        .expect("key manager");
    let (stop, rx) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(turnpike_admin::serve(listener, state.clone(), async move {
        let _ = rx.await;
    }));
    Cp {
        state,
        addr,
        _stop: stop,
    }
}

async fn apply(cp: &Cp, file: &std::path::Path, dry_run: bool) -> usize {
    reconcile(ApplyArgs {
        file: file.to_path_buf(),
        connection: turnpike_cli::apply::Connection {
            control_plane: format!("http://{}", cp.addr),
            user: "admin".into(),
            password: Some("password1".into()),
            token: None,
            tls: Default::default(),
        },
        prune: false,
        dry_run,
    })
    .await
    .unwrap_or_else(|e| panic!("apply to {}: {e}", cp.addr))
}

async fn get(cp: &Cp, path: &str, auth: &str, accept: &str) -> (u16, String) {
    let out = tokio::process::Command::new("curl")
        .args(["-s", "-w", "\n%{http_code}", "-H", auth, "-H"])
        .arg(format!("accept: {accept}"))
        .arg(format!("http://{}{path}", cp.addr))
        .output()
        .await
        .expect("curl");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let (body, code) = text.rsplit_once('\n').unwrap_or(("", "0"));
    (code.trim().parse().unwrap_or(0), body.to_string())
}

async fn export(cp: &Cp) -> Value {
    let (code, body) = get(
        cp,
        "/api/am/admin/v1/export",
        "authorization: Basic YWRtaW46cGFzc3dvcmQx",
        "application/json",
    )
    .await;
    assert_eq!(code, 200, "{body}");
    serde_json::from_str(&body).expect("json")
}

/// What gateways receive, without what belongs to one environment (keys, issuers,
/// revocations, application tiers).
async fn served(cp: &Cp) -> Value {
    let (code, body) = get(
        cp,
        "/api/am/gateway/v1/snapshot",
        &format!("authorization: Bearer {TOKEN}"),
        "application/json",
    )
    .await;
    assert_eq!(code, 200, "{body}");
    let mut v: Value = serde_json::from_str(&body).expect("json");
    v["throttling"]
        .as_object_mut()
        .map(|t| t.remove("applications"));
    json!({"apis": v["apis"], "throttling": v["throttling"]})
}

async fn post(cp: &Cp, path: &str, body: Value) -> (u16, Value) {
    let out = tokio::process::Command::new("curl")
        .args(["-s", "-w", "\n%{http_code}", "-u", "admin:password1"])
        .args(["-H", "content-type: application/json", "-d"])
        .arg(body.to_string())
        .arg(format!("http://{}{path}", cp.addr))
        .output()
        .await
        .expect("curl");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let (body, code) = text.rsplit_once('\n').unwrap_or(("", "0"));
    let v = serde_json::from_str(body).unwrap_or(Value::Null);
    (code.trim().parse().unwrap_or(0), v)
}

/// Gives the applied application a consumer key and an API key; the export then names
/// both by reference (the consumer key's id, the API key's name) and holds no secret.
async fn with_keys(cp: &Cp, before: Value) -> Value {
    let app = &before["applications"][0];
    assert_eq!(app["name"], "pets-app", "{before}");
    assert_eq!(app["tier"], "100PerMin");
    assert_eq!(
        app["subscriptions"],
        json!([{"context": "/heroes", "version": "v1", "tier": "Unlimited"},
               {"context": "/pets", "version": "v2", "tier": "Platinum"}])
    );
    let (_, apps) = get(
        cp,
        "/api/am/devportal/v1/applications",
        "authorization: Basic YWRtaW46cGFzc3dvcmQx",
        "application/json",
    )
    .await;
    let apps: Value = serde_json::from_str(&apps).expect("json");
    let listed = &apps["list"][0];
    let id = listed["applicationId"]
        .as_str()
        .or(listed["id"].as_str())
        .expect("application id");
    let base = format!("/api/am/devportal/v1/applications/{id}");
    let (code, keys) = post(
        cp,
        &format!("{base}/generate-keys"),
        json!({"keyType": "PRODUCTION"}),
    )
    .await;
    assert!(code < 300, "{code} {keys}");
    let (code, api_key) = post(cp, &format!("{base}/api-keys"), json!({"name": "ci-smoke"})).await;
    assert!(code < 300, "{code} {api_key}");
    let exported = export(cp).await;
    let consumer_key = keys["consumerKey"].as_str().expect("consumer key");
    assert_eq!(
        exported["applications"][0]["keys"],
        json!([{"type": "PRODUCTION", "consumer_key": consumer_key},
               {"type": "PRODUCTION", "api_key": "ci-smoke"}])
    );
    let text = exported.to_string();
    for secret in [
        keys["consumerSecret"].as_str(),
        api_key["apikey"].as_str(),
        api_key["key"].as_str(),
    ]
    .into_iter()
    .flatten()
    {
        assert!(!text.contains(secret), "no secret in an export");
    }
    exported
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn export_apply_round_trip_from_sqlite_to_postgres() {
    let dir = tempfile::tempdir().expect("dir");
    let sqlite = TestDbs::sqlite();
    let pg = TestDbs::postgres();
    let first = serve(&sqlite.fresh_url().await).await;
    let second = serve(&pg.fresh_url().await).await;

    let path = dir.path().join("gateway.yaml");
    std::fs::write(&path, FILE).expect("write");
    let planned = apply(&first, &path, true).await;
    let made = apply(&first, &path, false).await;
    assert_eq!(planned, made, "--dry-run counts what the run does");
    // 4 tiers; the throttling settings; 2 APIs x (create, secure, publish): neither keeps
    // the default security; the open GraphQL API: create, secure (open), publish; the
    // application and its 2 subscriptions.
    assert_eq!(made, 4 + 1 + 3 * 3 + 3);
    assert_eq!(
        apply(&first, &path, false).await,
        0,
        "a second run changes nothing"
    );

    let exported = export(&first).await;
    let heroes = &exported["apis"][0];
    assert_eq!(
        heroes["graphql"]["limits"]["max_complexity"], 50,
        "{heroes}"
    );
    assert_eq!(
        heroes["graphql"]["operations"][0]["scopes"][0],
        "heroes:read"
    );
    let pets_v1 = &exported["apis"][1];
    assert_eq!(pets_v1["mediation"]["request"]["body"]["jq"], "{order: .}");
    assert_eq!(
        pets_v1["policies"],
        json!([{"cache": {"ttl": "30s", "tag_header": "Cache-Tag",
            "key": {"headers": ["accept"], "query": true, "consumer": true}}}]),
        "the response cache survives apply and export"
    );
    assert_eq!(
        (
            &pets_v1["resources"][1]["cache"],
            &pets_v1["resources"][2]["cache"]
        ),
        (
            &json!(false),
            &json!({"ttl": "5m", "key": {"query": false, "consumer": true}})
        ),
        "resources' own caches survive apply and export: {pets_v1}"
    );
    assert_eq!(
        pets_v1["paths"],
        json!({"matrix_parameters": "strip", "case_insensitive": true})
    );
    let pets = &exported["apis"][2];
    assert_eq!(pets["version"], "v2", "{exported}");
    for (field, want) in [
        ("host", json!("api.example.com")),
        ("load_balancing", json!("failover")),
        ("max_body_size", json!("10MiB")),
        (
            "timeouts",
            json!({"connect": "5s", "response": "60s", "read_idle": "90s"}),
        ),
        ("upstream_protocol", json!("h2c")),
        (
            "request_buffering",
            json!({"size": "256KiB", "timeout": "20s"}),
        ),
        ("throttling", json!("PetsPolicy")),
        (
            "auth",
            json!({"oauth2": true, "api_key": true, "basic": false, "subscription": false}),
        ),
    ] {
        assert_eq!(pets[field], want, "{field} in {pets}");
    }
    assert_eq!(
        pets["mediation"],
        json!({
            "request": {"headers": {"set": {"x-source": "gateway"}}, "body": {"jq": "{pet: ., by: $identity.app}", "deadline": "50ms"}},
            "response": {"body": {"jq": "del(.internal)"}}
        })
    );
    let res = &pets["resources"];
    assert_eq!(res[1]["scopes"], json!(["pets:write"]));
    assert_eq!(
        res[1]["mediation"],
        json!({"request": {"name": "legacy-put", "path": "/v0/pet/{id}"}})
    );
    assert_eq!(res[2]["throttling"], "10KPerMin");
    assert_eq!(res[3]["auth"], "none", "an open resource stays open: {res}");
    let th = &exported["throttling"];
    assert_eq!(th["unauthenticated_tier"], "Platinum", "{th}");
    assert_eq!(th["headers"], "both", "{th}");
    let tier = |family: &str, name: &str| {
        th[family]
            .as_array()
            .and_then(|a| a.iter().find(|t| t["name"] == name).cloned())
            .unwrap_or_else(|| panic!("{family} {name} in {th}"))
    };
    assert_eq!(
        tier("subscription_tiers", "Platinum")["burst"],
        json!({"requests": 500, "per": "second"})
    );
    let metered = tier("subscription_tiers", "Metered");
    assert_eq!(
        metered["quota"],
        json!({"bytes": 1073741824u64, "per": "day"})
    );
    assert_eq!(metered["stop_on_quota"], false);
    let policy = tier("advanced_policies", "PetsPolicy");
    assert_eq!(policy["groups"][0]["conditions"][0]["value"], "PetsApp/*");
    assert_eq!(
        policy["groups"][1]["limit"],
        json!({"requests": 50, "per": "minute", "every": 5})
    );

    assert_eq!(pets["subscription_tiers"], json!(["Platinum", "Unlimited"]));
    let exported = with_keys(&first, exported).await;

    // The export applied elsewhere: the same file (but the keys, which apply never
    // invents), the same snapshot content.
    let export_path = dir.path().join("exported.json");
    std::fs::write(&export_path, exported.to_string()).expect("write");
    let planned = apply(&second, &export_path, true).await;
    assert_eq!(apply(&second, &export_path, false).await, planned);
    assert_eq!(apply(&second, &export_path, false).await, 0);
    let mut keyless = exported.clone();
    keyless["applications"][0]
        .as_object_mut()
        .map(|a| a.remove("keys"));
    assert_eq!(export(&second).await, keyless);
    assert_eq!(served(&second).await, served(&first).await);
    assert_eq!(
        apply(&first, &export_path, false).await,
        0,
        "the export is what the first holds"
    );
    drop((first.state, second.state));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn throttling_settings_are_checked_and_reach_the_snapshot() {
    let sqlite = TestDbs::sqlite();
    let cp = serve(&sqlite.fresh_url().await).await;
    let put = |body: &'static str| {
        let addr = cp.addr;
        async move {
            let out = tokio::process::Command::new("curl")
                .args(["-s", "-w", "\n%{http_code}", "-X", "PUT", "-H"])
                .arg("authorization: Basic YWRtaW46cGFzc3dvcmQx")
                .args(["-H", "content-type: application/json", "-d", body])
                .arg(format!("http://{addr}/api/am/admin/v1/settings/throttling"))
                .output()
                .await
                .expect("curl");
            let text = String::from_utf8_lossy(&out.stdout).into_owned();
            let (body, code) = text.rsplit_once('\n').unwrap_or(("", "0"));
            let v: Value = serde_json::from_str(body).unwrap_or(Value::Null);
            (code.trim().parse::<u16>().unwrap_or(0), v)
        }
    };
    let (code, v) = put(r#"{"unauthenticatedTier": "NoSuchTier"}"#).await;
    assert_eq!(code, 400, "{v}");
    assert_eq!(v["errors"][0]["field"], "unauthenticatedTier", "{v}");
    let (code, v) = put(r#"{"rateLimitHeaders": "loud"}"#).await;
    assert_eq!(code, 400, "{v}");
    assert_eq!(v["errors"][0]["field"], "rateLimitHeaders", "{v}");
    let (code, v) = put(r#"{"unauthenticatedTier": "Bronze", "rateLimitHeaders": "legacy"}"#).await;
    assert_eq!(code, 200, "{v}");
    let th = &served(&cp).await["throttling"];
    assert_eq!(th["unauthenticated_tier"], "Bronze", "{th}");
    assert_eq!(th["headers"], "legacy", "{th}");
    drop(cp.state);
}
