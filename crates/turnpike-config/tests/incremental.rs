//! Compiling only what changed (`compile_changes`): an API whose entry, subscriptions and
//! file-wide inputs did not move keeps its `Arc<CompiledApi>`; a changed API gets a new
//! one with its new chain; a file-wide change recompiles everything; and over random
//! sequences of changes the result routes and chains exactly as a full compile of the
//! same file does.

use std::sync::Arc;

use http::Method;
use proptest::prelude::*;
use serde_json::json;
use turnpike_auth::policy::AuthPolicy;
use turnpike_config::{
    compile_changes, ApiEntry, GatewayFile, PolicyRuntime, RouteResult, Snapshot, Subscription,
    Subscriptions,
};
use turnpike_model::fnv::fnv64;
use turnpike_model::ApiSpec;
use turnpike_policy::{CredentialKind, Identity, KeyType, Principal};

/// One API as a follower holds it: id, spec, entry hash (FNV of its JSON, as the wire).
struct Held {
    id: String,
    spec: ApiSpec,
    hash: u64,
}

fn held(spec: ApiSpec) -> Held {
    let hash = fnv64(&serde_json::to_vec(&spec).expect("json"));
    Held {
        id: format!("{}/{}", spec.context, spec.version),
        spec,
        hash,
    }
}

fn api(i: usize, extra: serde_json::Value) -> ApiSpec {
    let mut v = json!({
        "name": format!("api{i}"), "context": format!("/a{i}"), "version": "v1",
        "endpoints": [format!("http://127.0.0.1:{}", 9000 + i)],
        "resources": [{"path": "/*", "methods": ["GET"]}]
    });
    if let (Some(m), Some(e)) = (v.as_object_mut(), extra.as_object()) {
        m.extend(e.clone());
    }
    serde_json::from_value(v).expect("api spec")
}

fn secured(i: usize) -> ApiSpec {
    api(
        i,
        json!({"auth": {"api_key": true, "oauth2": false, "subscription": true}}),
    )
}

fn entries(apis: &[Held]) -> Vec<ApiEntry<'_>> {
    let mut e: Vec<ApiEntry<'_>> = apis
        .iter()
        .map(|h| ApiEntry {
            id: &h.id,
            spec: &h.spec,
            hash: h.hash,
        })
        .collect();
    e.sort_by(|a, b| a.id.cmp(b.id));
    e
}

fn wide(throttling: Option<&str>) -> (GatewayFile, u64) {
    let mut f = GatewayFile::default();
    f.throttling.unauthenticated_tier = throttling.map(str::to_owned);
    let h = fnv64(&serde_json::to_vec(&f).expect("json"));
    (f, h)
}

fn step(
    prev: &Snapshot,
    apis: &[Held],
    throttling: Option<&str>,
    subs: &Arc<Subscriptions>,
    rt: &PolicyRuntime,
) -> Snapshot {
    let (file, h) = wide(throttling);
    compile_changes(
        prev,
        file,
        h,
        &entries(apis),
        prev.version + 1,
        rt,
        subs.clone(),
    )
    .expect("compiles")
}

/// What a full compile of the same file gives.
fn full(apis: &[Held], throttling: Option<&str>, subs: &Arc<Subscriptions>) -> Snapshot {
    let (mut file, _) = wide(throttling);
    let mut sorted: Vec<&Held> = apis.iter().collect();
    sorted.sort_by(|a, b| a.id.cmp(&b.id));
    file.apis = sorted.iter().map(|h| h.spec.clone()).collect();
    turnpike_config::compile_reusing(file, 1, &PolicyRuntime::new(), subs.clone())
        .expect("full compile")
}

fn find<'a>(s: &'a Snapshot, name: &str) -> &'a Arc<turnpike_config::CompiledApi> {
    s.apis.iter().find(|a| a.name == name).expect("api")
}

fn sub(api: &str, app: &str, state: turnpike_model::SubscriptionState) -> Subscription {
    Subscription {
        api_id: api.into(),
        application_id: app.into(),
        state,
        tier: "Gold".into(),
    }
}

#[test]
fn a_change_to_one_api_reuses_every_other_compiled_api() {
    let rt = PolicyRuntime::new();
    let subs = Arc::new(Subscriptions::default());
    let mut apis: Vec<Held> = (0..20).map(|i| held(api(i, json!({})))).collect();
    let first = step(&Snapshot::default(), &apis, None, &subs, &rt);
    assert_eq!(first.compiled_apis(), 20);
    apis[3] = held(api(3, json!({"endpoints": ["http://127.0.0.1:1234"]})));
    let second = step(&first, &apis, None, &subs, &rt);
    assert_eq!(second.compiled_apis(), 1);
    for i in (0..20).filter(|i| *i != 3) {
        let name = format!("api{i}");
        assert!(
            Arc::ptr_eq(find(&first, &name), find(&second, &name)),
            "{name}"
        );
    }
    let changed = find(&second, "api3");
    assert!(!Arc::ptr_eq(find(&first, "api3"), changed));
    assert_eq!(changed.endpoints[0].url, "http://127.0.0.1:1234");
    match second.route(None, &Method::GET, "/a3/v1/x") {
        RouteResult::Matched { api, .. } => assert!(Arc::ptr_eq(api, changed)),
        other => panic!("{other:?}"),
    }
    // A removed API is gone from the router; an added one is routed.
    apis.remove(5);
    apis.push(held(api(77, json!({}))));
    let third = step(&second, &apis, None, &subs, &rt);
    assert_eq!(third.compiled_apis(), 1);
    assert!(matches!(
        third.route(None, &Method::GET, "/a5/v1/x"),
        RouteResult::NotFound
    ));
    assert!(matches!(
        third.route(None, &Method::GET, "/a77/v1/x"),
        RouteResult::Matched { .. }
    ));
}

#[test]
fn a_changed_api_gets_its_new_chain() {
    let rt = PolicyRuntime::new();
    let subs = Arc::new(Subscriptions::default());
    let mut apis: Vec<Held> = (0..5).map(|i| held(api(i, json!({})))).collect();
    let first = step(&Snapshot::default(), &apis, None, &subs, &rt);
    let names = |s: &Snapshot, n: &str| find(s, n).chain.names().collect::<Vec<_>>();
    assert!(!names(&first, "api2").contains(&"lifecycle"));
    apis[2] = held(api(2, json!({"lifecycle": "BLOCKED"})));
    let second = step(&first, &apis, None, &subs, &rt);
    assert!(names(&second, "api2").contains(&"lifecycle"));
    assert_eq!(
        names(&second, "api2"),
        names(&full(&apis, None, &subs), "api2")
    );
}

#[test]
fn a_file_wide_change_recompiles_every_api() {
    let rt = PolicyRuntime::new();
    let subs = Arc::new(Subscriptions::default());
    let apis: Vec<Held> = (0..10).map(|i| held(api(i, json!({})))).collect();
    let first = step(&Snapshot::default(), &apis, None, &subs, &rt);
    let second = step(&first, &apis, Some("Bronze"), &subs, &rt);
    assert_eq!(second.compiled_apis(), 10);
    for (a, b) in first.apis.iter().zip(&second.apis) {
        assert!(!Arc::ptr_eq(a, b), "{} was reused", a.name);
    }
    // Open APIs are now throttled by the unauthenticated tier, as a full compile says.
    let kinds = |s: &Snapshot| find(s, "api1").chain.names().collect::<Vec<_>>();
    assert_eq!(kinds(&second), kinds(&full(&apis, Some("Bronze"), &subs)));
    assert!(kinds(&second).contains(&"throttle"));
    // Nothing changed: everything reused.
    let third = step(&second, &apis, Some("Bronze"), &subs, &rt);
    assert_eq!(third.compiled_apis(), 0);
}

fn caller(app: &str) -> Identity {
    Identity {
        kind: CredentialKind::ApiKey,
        subject: "s".into(),
        expires_at: None,
        token_id: None,
        principal: Arc::new(Principal {
            application_id: Some(app.into()),
            key_type: KeyType::Production,
            ..Default::default()
        }),
    }
}

/// The auth policy holds its API's subscriptions: a change to API 1's recompiles API 1
/// only, and API 1's new chain sees it.
#[test]
fn a_subscription_change_recompiles_only_the_api_it_names() {
    use turnpike_model::SubscriptionState::{Active, Blocked};
    let rt = PolicyRuntime::new();
    let apis: Vec<Held> = (0..4).map(|i| held(secured(i))).collect();
    let subs = Arc::new(Subscriptions::new(
        (0..4).map(|i| sub(&format!("/a{i}/v1"), "app", Active)),
    ));
    let first = step(&Snapshot::default(), &apis, None, &subs, &rt);
    let changed = Arc::new(subs.with_changes([], [sub("/a1/v1", "app", Blocked)]));
    let second = step(&first, &apis, None, &changed, &rt);
    assert_eq!(second.compiled_apis(), 1);
    assert!(Arc::ptr_eq(find(&first, "api0"), find(&second, "api0")));
    assert!(!Arc::ptr_eq(find(&first, "api1"), find(&second, "api1")));
    let check = |s: &Snapshot, n: &str| {
        let auth = find(s, n).chain.find::<AuthPolicy>().expect("auth policy");
        auth.security().subscription(&caller("app")).is_ok()
    };
    assert!(check(&first, "api1"));
    assert!(!check(&second, "api1"), "the new chain sees the block");
    assert!(check(&second, "api0"));
}

/// One random change to the held APIs.
#[derive(Debug, Clone)]
enum Change {
    Endpoint(usize, u16),
    Remove(usize),
    Add(usize),
    Secure(usize),
    Block(usize),
    Default(usize),
    Resource(usize),
    Throttling(bool),
}

fn change() -> impl Strategy<Value = Change> {
    prop_oneof![
        (0..12usize, 1u16..60000).prop_map(|(i, p)| Change::Endpoint(i, p)),
        (0..12usize).prop_map(Change::Remove),
        (0..24usize).prop_map(Change::Add),
        (0..12usize).prop_map(Change::Secure),
        (0..12usize).prop_map(Change::Block),
        (0..12usize).prop_map(Change::Default),
        (0..12usize).prop_map(Change::Resource),
        any::<bool>().prop_map(Change::Throttling),
    ]
}

fn apply(apis: &mut Vec<Held>, throttling: &mut Option<&'static str>, c: &Change) {
    let n = apis.len().max(1);
    let set = |apis: &mut Vec<Held>, i: usize, extra: serde_json::Value| {
        if let Some(h) = apis.get_mut(i % n) {
            let mut v = serde_json::to_value(&h.spec).expect("json");
            if let (Some(m), Some(e)) = (v.as_object_mut(), extra.as_object()) {
                m.extend(e.clone());
            }
            *h = held(serde_json::from_value(v).expect("spec"));
        }
    };
    match *c {
        Change::Endpoint(i, p) => set(
            apis,
            i,
            json!({"endpoints": [format!("http://127.0.0.1:{p}")]}),
        ),
        Change::Remove(i) if !apis.is_empty() => {
            apis.remove(i % n);
        }
        Change::Remove(_) => {}
        Change::Add(i) if !apis.iter().any(|h| h.spec.name == format!("api{i}")) => {
            apis.push(held(api(i, json!({}))));
        }
        Change::Add(_) => {}
        Change::Secure(i) => set(apis, i, json!({"auth": {"api_key": true, "oauth2": false}})),
        Change::Block(i) => set(apis, i, json!({"lifecycle": "BLOCKED"})),
        Change::Default(i) => set(apis, i, json!({"default": true})),
        Change::Resource(i) => set(
            apis,
            i,
            json!({"resources": [{"path": "/r/{id}", "methods": ["GET", "POST"]}]}),
        ),
        Change::Throttling(on) => *throttling = on.then_some("Bronze"),
    }
}

/// Each API's routing and chain kinds for a few paths.
fn fingerprint(s: &Snapshot, apis: &[Held]) -> Vec<String> {
    let mut out = Vec::new();
    for h in apis {
        let (ctx, v) = (&h.spec.context, &h.spec.version);
        for path in [
            format!("{ctx}/{v}/x"),
            format!("{ctx}/{v}/r/1"),
            format!("{ctx}/r/1"),
        ] {
            for m in [Method::GET, Method::POST] {
                let seen = match s.route(None, &m, &path) {
                    RouteResult::Matched {
                        api,
                        resource,
                        upstream_path,
                    } => format!(
                        "{} {resource} {upstream_path} {:?} {:?}",
                        api.name,
                        api.chain.names().collect::<Vec<_>>(),
                        api.endpoints.iter().map(|e| &e.url).collect::<Vec<_>>()
                    ),
                    RouteResult::MethodNotAllowed { api, allow, .. } => {
                        format!("405 {} {allow:?}", api.name)
                    }
                    RouteResult::NotFoundIn { api, .. } => format!("404 in {}", api.name),
                    RouteResult::NotFound => "404".into(),
                };
                out.push(format!("{m} {path}: {seen}"));
            }
        }
    }
    out
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]
    /// After every change, the incremental snapshot routes and chains as a full compile
    /// of the same file, and refuses what a full compile refuses.
    #[test]
    fn random_changes_compile_as_a_full_compile_does(changes in prop::collection::vec(change(), 1..12)) {
        let rt = PolicyRuntime::new();
        let subs = Arc::new(Subscriptions::default());
        let mut apis: Vec<Held> = (0..8).map(|i| held(api(i, json!({})))).collect();
        let mut throttling = None;
        let mut served = step(&Snapshot::default(), &apis, throttling, &subs, &rt);
        for c in &changes {
            apply(&mut apis, &mut throttling, c);
            let (file, h) = wide(throttling);
            let next = compile_changes(&served, file, h, &entries(&apis), served.version + 1, &rt, subs.clone());
            let (mut whole, _) = wide(throttling);
            let mut sorted: Vec<&Held> = apis.iter().collect();
            sorted.sort_by(|a, b| a.id.cmp(&b.id));
            whole.apis = sorted.iter().map(|h| h.spec.clone()).collect();
            let reference = turnpike_config::compile_reusing(whole, 1, &PolicyRuntime::new(), subs.clone());
            match (next, reference) {
                (Ok(next), Ok(reference)) => {
                    prop_assert_eq!(next.apis.len(), reference.apis.len());
                    prop_assert_eq!(fingerprint(&next, &apis), fingerprint(&reference, &apis));
                    served = next;
                }
                (Err(_), Err(_)) => {
                    // Refused both ways; the follower keeps serving what it served.
                }
                (next, reference) => prop_assert!(false, "incremental {:?} vs full {:?}", next.err(), reference.err()),
            }
        }
    }
}
