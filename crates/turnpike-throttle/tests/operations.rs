//! `Throttler::check_operations`: a GraphQL request's operations, each on its own
//! counter per API and operation; a refusal gives back what the other operations took.

use turnpike_throttle::*;

/// 2024-01-01T00:00:00Z: aligned to every window length.
const T0: UnixNanos = UnixNanos::from_secs(1_704_067_200);

fn throttler() -> Throttler {
    let spec = ThrottleSpec {
        advanced_policies: vec![
            AdvancedPolicy::per_minute("Two", 2),
            AdvancedPolicy::per_minute("Three", 3),
        ],
        ..ThrottleSpec::default()
    };
    Throttler::build(&spec, CounterStore::new(StoreConfig::default())).expect("valid spec")
}

fn facts(api: &str) -> RequestFacts<'_> {
    RequestFacts::new(api, std::net::IpAddr::from([10, 0, 0, 1]))
}

#[test]
fn each_operation_counts_on_its_own_and_a_refusal_debits_none() {
    let t = throttler();
    let f = facts("/sw/v1");
    let both = [("query:hero", "Two"), ("query:droid", "Three")];
    for left in [1, 0] {
        let (d, refused) = t.check_operations(&f, &both, T0);
        assert!(d.allowed && refused.is_none());
        assert_eq!(
            (d.limit, d.remaining),
            (2, left),
            "the least left is hero's"
        );
    }
    let (d, refused) = t.check_operations(&f, &both, T0);
    assert!(!d.allowed, "hero's 2 per minute are spent");
    assert_eq!(refused, Some(0));
    assert_eq!(t.policy_name(d.rule.expect("rule")), "Two");
    assert!(d.retry_after.is_some());
    // droid took 2 of 3: the refused request gave its take back, so one more passes.
    let droid = [("query:droid", "Three")];
    assert!(t.check_operations(&f, &droid, T0).0.allowed);
    assert!(!t.check_operations(&f, &droid, T0).0.allowed);
    // Another API's operation of the same name has its own counter.
    assert!(
        t.check_operations(&facts("/other/v1"), &droid, T0)
            .0
            .allowed
    );
    // The next window starts afresh.
    let later = UnixNanos::from_secs(1_704_067_200 + 60);
    assert!(t.check_operations(&f, &both, later).0.allowed);
}

#[test]
fn no_operations_means_no_limit() {
    let (d, _) = throttler().check_operations(&facts("/sw/v1"), &[], T0);
    assert!(d.allowed);
    assert_eq!(d.rule, None);
}
