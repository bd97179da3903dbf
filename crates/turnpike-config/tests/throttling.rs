//! The `throttling:` section and the policy references of APIs and resources: WSO2's
//! defaults are usable by name, unknown names and bad limits are refused with their
//! line and column, only APIs that ask for throttling get it, resource policies are
//! found by path and method, and counters outlive a recompile on the same runtime.

use std::net::{IpAddr, Ipv4Addr};

use http::Method;
use turnpike_config::{ConfigError, PolicyRuntime, Snapshot};
use turnpike_throttle::policy::{ApiThrottle, ThrottlePolicy};
use turnpike_throttle::{RequestFacts, UnixNanos};

fn compile(yaml: &str, rt: &PolicyRuntime) -> Result<Snapshot, ConfigError> {
    Snapshot::from_yaml_with(yaml, "t.yaml", rt)
}

/// "line:col path: message" of every problem.
fn problems(yaml: &str) -> Vec<String> {
    match compile(yaml, &PolicyRuntime::new()) {
        Ok(_) => panic!("accepted:\n{yaml}"),
        Err(e) => e.problems().iter().map(|p| p.to_string()).collect(),
    }
}

const APIS: &str = "apis:
  - name: open
    context: /open
    version: v1
    endpoints: [\"http://127.0.0.1:9000\"]
    resources: [ { path: \"/*\", methods: [GET] } ]
  - name: limited
    context: /limited
    version: v1
    throttling: 10KPerMin
    endpoints: [\"http://127.0.0.1:9000\"]
    resources:
      - { path: \"/*\", methods: [GET] }
      - { path: \"/orders/{id}\", methods: [POST], throttling: Tiny }
";

const SECTION: &str = "throttling:
  advanced_policies:
    - name: Tiny
      default_limit: { requests: 2, per: minute }
";

/// API `i`'s compiled throttling, read from its chain.
fn throttle(snap: &Snapshot, i: usize) -> Option<&ApiThrottle> {
    snap.apis[i]
        .chain
        .find::<ThrottlePolicy>()
        .map(ThrottlePolicy::api)
}

#[test]
fn defaults_by_name_and_only_referencing_apis_are_throttled() {
    let snap = compile(&format!("{SECTION}{APIS}"), &PolicyRuntime::new()).expect("valid");
    assert!(throttle(&snap, 0).is_none(), "an open API pays nothing");
    let t = throttle(&snap, 1).expect("throttled");
    assert_eq!(&*t.api_id, "/limited/v1");
    assert_eq!(t.api_policy.as_deref(), Some("10KPerMin"));
    let r = t
        .resource_policy(&Method::POST, "/orders/7")
        .expect("resource policy");
    assert_eq!((&*r.key, &*r.policy), ("/orders/{id}", "Tiny"));
    assert!(t.resource_policy(&Method::GET, "/orders/7").is_none());
}

#[test]
fn unknown_policy_names_are_refused_where_they_are_written() {
    let p = problems(&APIS.replace("10KPerMin", "Platinum"));
    assert_eq!(p.len(), 2, "{p:#?}");
    assert!(
        p[0].starts_with(
            "line 10, column 17: apis[1].throttling: no advanced policy named \"Platinum\""
        ),
        "{p:#?}"
    );
    assert!(p[1].contains("apis[1].resources[1].throttling"), "{p:#?}");
}

#[test]
fn bad_limits_name_the_policy() {
    let yaml = format!(
        "{}{APIS}",
        SECTION.replace(
            "{ requests: 2, per: minute }",
            "{ requests: 2, bytes: 3, per: minute }"
        )
    );
    let p = problems(&yaml);
    assert_eq!(p.len(), 1, "{p:#?}");
    assert!(p[0].contains("throttling.advanced_policies[0]"), "{p:#?}");
    assert!(
        p[0].contains("exactly one of `requests` and `bytes`"),
        "{p:#?}"
    );
    assert!(p[0].starts_with("line 3, column 7:"), "{p:#?}");
}

#[test]
fn counters_survive_a_recompile_on_the_same_runtime() {
    let rt = PolicyRuntime::new();
    let yaml = format!("{SECTION}{APIS}");
    let now = UnixNanos::from_secs(1_000_020);
    let ip = IpAddr::V4(Ipv4Addr::LOCALHOST);
    let take = |snap: &Snapshot| {
        let t = throttle(snap, 1).expect("throttled");
        let f = RequestFacts {
            resource: Some("/orders/{id}"),
            resource_policy: Some("Tiny"),
            ..RequestFacts::new(&t.api_id, ip)
        };
        t.throttler.check(&f, now).allowed
    };
    let first = compile(&yaml, &rt).expect("valid");
    assert!(take(&first) && take(&first));
    let second = compile(&yaml, &rt).expect("valid");
    assert!(!take(&second), "the third request of the window is refused");
}
