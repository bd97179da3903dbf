//! The cache kind's build: every bad setting named at once under its document path, a
//! good spec built into a policy whose store lives in the runtime (so a second build of
//! the same API, as after a snapshot swap, finds the same store).

use std::sync::Arc;

use turnpike_cache::{Cache, CacheStores, ResponseCache};
use turnpike_model::policy::{CacheKeySpec, CacheSpec, PolicySpec};
use turnpike_model::{ApiSpec, GatewayFile, Quantity};
use turnpike_policy::{BuildCx, Policy, PolicyKind, Problem, Runtime, Scratch, Stage};

fn file(spec: &CacheSpec) -> GatewayFile {
    GatewayFile {
        apis: vec![ApiSpec {
            name: "a".into(),
            context: "/a".into(),
            version: "v1".into(),
            endpoints: vec!["http://127.0.0.1:9".into()],
            policies: vec![PolicySpec {
                cache: Some(spec.clone()),
                ..PolicySpec::default()
            }],
            ..ApiSpec::default()
        }],
        ..GatewayFile::default()
    }
}

fn build(spec: &CacheSpec, runtime: &Runtime) -> (Option<Arc<dyn Policy>>, Vec<Problem>) {
    let file = file(spec);
    let (mut problems, mut scratch) = (Vec::new(), Scratch::default());
    let mut cx = BuildCx {
        api: 0,
        at: "apis[0].policies[0].cache".into(),
        problems: &mut problems,
        runtime,
        file: &file,
        scratch: &mut scratch,
    };
    let built = Cache::build(spec, &mut cx);
    (built, problems)
}

fn text(s: &str) -> Option<Quantity> {
    Some(Quantity::Text(s.into()))
}

#[test]
fn every_bad_setting_is_reported_at_once_with_its_path() {
    let spec = CacheSpec {
        ttl: text("soon"),
        methods: vec!["get".into()],
        statuses: vec![99],
        key: CacheKeySpec {
            headers: vec!["bad header".into()],
            ..CacheKeySpec::default()
        },
        max_entry_size: text("2MiB"),
        max_size: text("1MiB"),
        stale_if_error: text("400d"),
        lock_timeout: text("10m"),
        tag_header: Some("".into()),
        min_uses: Some(0),
        ..CacheSpec::default()
    };
    let (built, problems) = build(&spec, &Runtime::default());
    assert!(built.is_none());
    let paths: Vec<&str> = problems.iter().map(|p| p.path.as_str()).collect();
    let at = |f: &str| format!("apis[0].policies[0].cache{f}");
    for field in [
        ".ttl",
        ".methods[0]",
        ".statuses[0]",
        ".key.headers[0]",
        ".max_entry_size",
        ".stale_if_error",
        ".lock_timeout",
        ".tag_header",
        ".min_uses",
    ] {
        assert!(
            paths.contains(&at(field).as_str()),
            "{field} missing from {paths:?}"
        );
    }
}

#[test]
fn min_uses_is_capped() {
    let spec = |n| CacheSpec {
        min_uses: Some(n),
        ..CacheSpec::default()
    };
    assert!(build(&spec(64), &Runtime::default()).1.is_empty());
    let (built, problems) = build(&spec(65), &Runtime::default());
    assert!(built.is_none());
    assert_eq!(problems[0].path, "apis[0].policies[0].cache.min_uses");
}

#[test]
fn a_size_is_required_to_be_bounded() {
    let spec = CacheSpec {
        max_size: text("unlimited"),
        ..CacheSpec::default()
    };
    let (built, problems) = build(&spec, &Runtime::default());
    assert!(built.is_none());
    assert_eq!(problems[0].path, "apis[0].policies[0].cache.max_size");
}

#[test]
fn a_rebuild_on_the_same_runtime_keeps_the_store_and_runs_after_throttling() {
    let spec = CacheSpec::default();
    let runtime = Runtime::default();
    let (first, problems) = build(&spec, &runtime);
    assert!(problems.is_empty(), "{problems:?}");
    let (second, _) = build(&spec, &runtime);
    let store = |p: &Option<Arc<dyn Policy>>| {
        let p = p.as_ref().expect("built");
        let any: &dyn std::any::Any = &**p;
        any.downcast_ref::<ResponseCache>()
            .expect("a ResponseCache")
            .store()
            .clone()
    };
    assert!(Arc::ptr_eq(&store(&first), &store(&second)));
    assert!(runtime
        .get::<CacheStores>()
        .and_then(|s| s.get("/a/v1"))
        .is_some());
    assert!(Cache::stage(&spec) > Stage::Throttle);
}
