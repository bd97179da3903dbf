//! Each policy kind and condition, told as small stories over a hand-driven clock.

use std::borrow::Cow;
use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

use turnpike_throttle::*;

/// 2024-01-01T00:00:00Z: aligned to every window length.
const T0: UnixNanos = UnixNanos::from_secs(1_704_067_200);

fn ip(s: &str) -> IpAddr {
    s.parse().unwrap_or(IpAddr::from([0, 0, 0, 0]))
}

fn build(spec: &ThrottleSpec) -> Throttler {
    Throttler::build(spec, CounterStore::new(StoreConfig::default())).expect("valid spec")
}

fn sub(name: &str, n: u64, per: TimeUnit) -> SubscriptionTier {
    SubscriptionTier {
        name: name.into(),
        description: None,
        quota: Some(Limit::requests(n, per)),
        burst: None,
        tokens: Vec::new(),
        models: Vec::new(),
        stop_on_quota: true,
    }
}

fn app_req<'a>(api: &'a str, app: &'a str, user: &'a str, tier: &'a str) -> RequestFacts<'a> {
    RequestFacts {
        application_id: Some(app),
        user: Some(user),
        subscription_tier: Some(tier),
        ..RequestFacts::new(api, ip("10.0.0.1"))
    }
}

fn admitted(t: &Throttler, f: &RequestFacts<'_>, now: UnixNanos, n: usize) -> usize {
    (0..n).filter(|_| t.check(f, now).allowed).count()
}

#[derive(Default)]
struct Map(
    HashMap<&'static str, &'static str>,
    HashMap<&'static str, &'static str>,
);

impl Lookup for Map {
    fn header(&self, n: &str) -> Option<&str> {
        self.0.get(n).copied()
    }
    fn query(&self, n: &str) -> Option<Cow<'_, str>> {
        self.1.get(n).copied().map(Cow::Borrowed)
    }
    fn claim(&self, n: &str) -> Option<&str> {
        self.1.get(n).copied()
    }
}

#[test]
fn subscription_quota_is_shared_by_the_users_of_one_app_on_one_api() {
    let t = build(&ThrottleSpec {
        subscription_tiers: vec![sub("Tiny", 3, TimeUnit::Minute)],
        ..Default::default()
    });
    assert!(
        t.check(&app_req("pets", "app1", "alice", "Tiny"), T0)
            .allowed
    );
    assert!(t.check(&app_req("pets", "app1", "bob", "Tiny"), T0).allowed);
    assert!(
        t.check(&app_req("pets", "app1", "carol", "Tiny"), T0)
            .allowed
    );
    let d = t.check(&app_req("pets", "app1", "alice", "Tiny"), T0);
    assert!(!d.allowed);
    assert_eq!(t.policy_name(d.rule.expect("rule")), "Tiny");
    assert_eq!(d.retry_after, Some(Duration::from_secs(60)));
    // Another application, or the same application on another API: its own quota.
    assert!(
        t.check(&app_req("pets", "app2", "alice", "Tiny"), T0)
            .allowed
    );
    assert!(
        t.check(&app_req("shop", "app1", "alice", "Tiny"), T0)
            .allowed
    );
}

#[test]
fn application_tier_counts_per_app_and_user_across_apis() {
    let t = build(&ThrottleSpec::wso2_defaults());
    let f = |api, user| RequestFacts {
        application_tier: Some("10PerMin"),
        ..app_req(api, "app1", user, "Unlimited")
    };
    assert_eq!(admitted(&t, &f("pets", "alice"), T0, 6), 6);
    // The same user on another API draws from the same application quota.
    assert_eq!(admitted(&t, &f("shop", "alice"), T0, 6), 4);
    // Another user of the same application has their own.
    assert_eq!(admitted(&t, &f("pets", "bob"), T0, 12), 10);
    let d = t.check(&f("shop", "alice"), T0);
    assert_eq!(t.policy_name(d.rule.expect("rule")), "10PerMin");
}

#[test]
fn per_application_and_per_subscription_combine() {
    // WSO2's worked example: two users of App1 (app tier 20/min) on a 20/min
    // subscription share the subscription: together 20, not 40.
    let mut spec = ThrottleSpec::wso2_defaults();
    spec.subscription_tiers
        .push(sub("Twenty", 20, TimeUnit::Minute));
    let t = build(&spec);
    let f = |user| RequestFacts {
        application_tier: Some("20PerMin"),
        ..app_req("pets", "app1", user, "Twenty")
    };
    let a = admitted(&t, &f("alice"), T0, 10);
    let b = admitted(&t, &f("bob"), T0, 30);
    assert_eq!((a, b), (10, 10));
}

#[test]
fn a_refusal_gives_back_what_other_levels_took() {
    let mut spec = ThrottleSpec::wso2_defaults();
    spec.subscription_tiers
        .push(sub("Five", 5, TimeUnit::Minute));
    let t = build(&spec);
    let alice = RequestFacts {
        application_tier: Some("10PerMin"),
        ..app_req("pets", "app1", "alice", "Five")
    };
    // Alice spends her 10 app requests on another API first...
    let other = RequestFacts {
        api_id: "shop",
        subscription_tier: Some("Unlimited"),
        ..alice
    };
    assert_eq!(admitted(&t, &other, T0, 10), 10);
    // ...so her refusals on pets (app tier) must not eat pets' subscription quota.
    assert_eq!(admitted(&t, &alice, T0, 5), 0);
    let bob = RequestFacts {
        user: Some("bob"),
        ..alice
    };
    assert_eq!(admitted(&t, &bob, T0, 10), 5);
}

#[test]
fn burst_limit_stops_a_spike_before_the_quota() {
    let t = build(&ThrottleSpec {
        subscription_tiers: vec![SubscriptionTier {
            burst: Some(BurstLimit {
                requests: 2,
                per: BurstUnit::Second,
            }),
            ..sub("Spiky", 5, TimeUnit::Minute)
        }],
        ..Default::default()
    });
    let f = app_req("pets", "app1", "alice", "Spiky");
    assert_eq!(admitted(&t, &f, T0, 5), 2);
    let d = t.check(&f, T0);
    assert_eq!(t.rule_label(d.rule.expect("rule")), "sub:Spiky/burst");
    assert_eq!(d.retry_after, Some(Duration::from_millis(500)));
    // GCRA: one more every 500 ms.
    assert_eq!(admitted(&t, &f, T0.plus(Duration::from_millis(500)), 3), 1);
    assert_eq!(admitted(&t, &f, T0.plus(Duration::from_secs(2)), 3), 2);
    // Now the minute quota (5) is what stops it.
    let d = t.check(&f, T0.plus(Duration::from_secs(4)));
    assert!(!d.allowed);
    assert_eq!(t.rule_label(d.rule.expect("rule")), "sub:Spiky");
    assert_eq!(d.retry_after, Some(Duration::from_secs(56)));
}

#[test]
fn quota_windows_roll_over_on_their_boundary() {
    let t = build(&ThrottleSpec {
        subscription_tiers: vec![sub("Hourly", 2, TimeUnit::Hour)],
        ..Default::default()
    });
    let f = app_req("pets", "app1", "alice", "Hourly");
    let late = T0.plus(Duration::from_secs(3599));
    assert_eq!(admitted(&t, &f, late, 3), 2);
    let d = t.check(&f, late);
    assert_eq!(d.reset, Duration::from_secs(1));
    let next = T0.plus(Duration::from_secs(3600));
    let d = t.check(&f, next);
    assert!(d.allowed);
    assert_eq!(
        (d.limit, d.remaining, d.reset),
        (2, 1, Duration::from_secs(3600))
    );
}

#[test]
fn every_time_unit_and_bandwidth_quota() {
    for (unit, secs) in [
        (TimeUnit::Second, 1),
        (TimeUnit::Minute, 60),
        (TimeUnit::Day, 86_400),
        (TimeUnit::Month, 2_592_000),
    ] {
        let t = build(&ThrottleSpec {
            subscription_tiers: vec![sub("T", 1, unit)],
            ..Default::default()
        });
        let f = app_req("pets", "app1", "alice", "T");
        // Windows are aligned to the epoch; T0 is on a day boundary, not a 30-day one.
        let into = T0.as_nanos() / 1_000_000_000 % secs;
        assert!(t.check(&f, T0).allowed);
        let d = t.check(&f, T0);
        assert!(!d.allowed);
        assert_eq!(d.reset, Duration::from_secs(secs - into), "{unit:?}");
        assert!(t.check(&f, T0.plus(d.reset)).allowed, "{unit:?}");
    }
    let t = build(&ThrottleSpec {
        subscription_tiers: vec![SubscriptionTier {
            quota: Some(Limit::bytes(1000, TimeUnit::Minute)),
            ..sub("Bytes", 0, TimeUnit::Minute)
        }],
        ..Default::default()
    });
    let f = RequestFacts {
        bytes: 400,
        ..app_req("pets", "app1", "alice", "Bytes")
    };
    assert_eq!(admitted(&t, &f, T0, 3), 2);
    let d = t.check(&f, T0);
    assert_eq!((d.limit, d.remaining), (1000, 200));
    assert!(t.message(&d).contains("bytes"));
}

#[test]
fn response_bytes_charged_to_a_bandwidth_quota_refuse_the_next_request() {
    let t = build(&ThrottleSpec {
        subscription_tiers: vec![SubscriptionTier {
            quota: Some(Limit::bytes(1000, TimeUnit::Minute)),
            ..sub("Bytes", 0, TimeUnit::Minute)
        }],
        ..Default::default()
    });
    let get = app_req("pets", "app1", "alice", "Bytes");
    let d = t.check(&get, T0);
    assert!(d.allowed);
    assert!(!d.charges.is_empty(), "a bandwidth quota admitted it");
    // A 600-byte response, then another: over the limit, charged anyway.
    t.charge_bytes(&d.charges, 600, T0);
    let d = t.check(&get, T0);
    assert_eq!((d.allowed, d.remaining), (true, 400));
    t.charge_bytes(&d.charges, 600, T0);
    let d = t.check(&get, T0);
    assert!(!d.allowed, "1200 of 1000 bytes used: refused");
    assert!(d.charges.is_empty(), "a refusal charges nothing");
    // The next window starts empty.
    assert!(t.check(&get, T0.plus(Duration::from_secs(60))).allowed);
    // A request-count tier has nothing to charge.
    let t = build(&ThrottleSpec {
        subscription_tiers: vec![sub("Count", 5, TimeUnit::Minute)],
        ..Default::default()
    });
    let d = t.check(&app_req("pets", "app1", "alice", "Count"), T0);
    assert!(d.allowed && d.charges.is_empty());
}

#[test]
fn billing_tier_allows_over_quota_and_flags() {
    let t = build(&ThrottleSpec {
        subscription_tiers: vec![SubscriptionTier {
            stop_on_quota: false,
            ..sub("Billed", 2, TimeUnit::Minute)
        }],
        ..Default::default()
    });
    let f = app_req("pets", "app1", "alice", "Billed");
    let ds: Vec<_> = (0..4).map(|_| t.check(&f, T0)).collect();
    assert!(ds.iter().all(|d| d.allowed));
    assert_eq!(
        ds.iter().map(|d| d.flagged).collect::<Vec<_>>(),
        [false, false, true, true]
    );
    let stats = t.store().stats();
    let billed = stats
        .iter()
        .find(|(n, _)| n == "sub:Billed")
        .map(|(_, s)| s.clone());
    let billed = billed.expect("stats");
    assert_eq!((billed.allowed.get(), billed.flagged.get()), (2, 2));
}

#[test]
fn unlimited_applies_no_limit_and_no_headers() {
    let t = build(&ThrottleSpec::wso2_defaults());
    let f = RequestFacts {
        application_tier: Some("Unlimited"),
        api_policy: Some("Unlimited"),
        ..app_req("pets", "app1", "alice", "Unlimited")
    };
    let d = t.check(&f, T0);
    assert!(d.allowed && d.rule.is_none());
    let mut h = http::HeaderMap::new();
    t.write_headers(&d, HeaderStyle::Both, &mut h);
    assert!(h.is_empty());
    assert_eq!(t.unknown_policy_total(), 0);
}

#[test]
fn unauthenticated_tier_counts_per_client_ip() {
    let mut spec = ThrottleSpec::wso2_defaults();
    spec.subscription_tiers
        .retain(|t| t.name != UNAUTHENTICATED);
    spec.subscription_tiers
        .push(sub(UNAUTHENTICATED, 2, TimeUnit::Minute));
    let t = build(&spec);
    let a = RequestFacts::new("pets", ip("192.0.2.1"));
    let b = RequestFacts::new("pets", ip("192.0.2.2"));
    assert_eq!(admitted(&t, &a, T0, 3), 2);
    assert_eq!(admitted(&t, &b, T0, 3), 2);
    let d = t.check(&a, T0);
    assert_eq!(t.policy_name(d.rule.expect("rule")), UNAUTHENTICATED);
}

fn advanced(groups: Vec<ConditionGroup>) -> Throttler {
    build(&ThrottleSpec {
        advanced_policies: vec![AdvancedPolicy {
            name: "Adv".into(),
            description: None,
            default_limit: Some(Limit::requests(100, TimeUnit::Minute)),
            groups,
            tokens: Vec::new(),
        }],
        ..Default::default()
    })
}

fn group(name: &str, n: u64, conditions: Vec<Condition>) -> ConditionGroup {
    ConditionGroup {
        name: Some(name.into()),
        conditions,
        limit: Limit::requests(n, TimeUnit::Minute),
    }
}

fn adv_req<'a>(from: &str, lookup: &'a dyn Lookup) -> RequestFacts<'a> {
    RequestFacts {
        api_policy: Some("Adv"),
        application_id: Some("app1"),
        lookup,
        ..RequestFacts::new("pets", ip(from))
    }
}

#[test]
fn advanced_default_limit_is_shared_by_all_callers_of_the_api() {
    let t = build(&ThrottleSpec {
        advanced_policies: vec![AdvancedPolicy::per_minute("Two", 2)],
        ..Default::default()
    });
    let none = NoLookup;
    let f = |app| RequestFacts {
        api_policy: Some("Two"),
        application_id: Some(app),
        lookup: &none,
        ..RequestFacts::new("pets", ip("10.0.0.1"))
    };
    assert!(t.check(&f("a"), T0).allowed);
    assert!(t.check(&f("b"), T0).allowed);
    assert!(!t.check(&f("c"), T0).allowed);
    // At resource level the count is per resource.
    let r = |res| RequestFacts {
        api_policy: None,
        resource_policy: Some("Two"),
        resource: Some(res),
        ..f("a")
    };
    assert_eq!(admitted(&t, &r("GET /a"), T0, 3), 2);
    assert_eq!(admitted(&t, &r("GET /b"), T0, 3), 2);
}

#[test]
fn ip_cidr_and_range_conditions() {
    let t = advanced(vec![
        group(
            "lan",
            1,
            vec![Condition::Ip {
                ip: "10.0.0.0/8".into(),
                invert: false,
            }],
        ),
        group(
            "range",
            2,
            vec![Condition::Ip {
                ip: "192.0.2.10-192.0.2.20".into(),
                invert: false,
            }],
        ),
    ]);
    let none = NoLookup;
    assert_eq!(admitted(&t, &adv_req("10.9.9.9", &none), T0, 3), 1);
    assert_eq!(admitted(&t, &adv_req("192.0.2.15", &none), T0, 3), 2);
    // No group matches: the default limit.
    assert_eq!(admitted(&t, &adv_req("203.0.113.1", &none), T0, 3), 3);
}

#[test]
fn inverted_ip_with_zero_makes_an_allow_list() {
    let t = advanced(vec![group(
        "allow-list",
        0,
        vec![Condition::Ip {
            ip: "10.0.0.0/8".into(),
            invert: true,
        }],
    )]);
    let none = NoLookup;
    assert_eq!(admitted(&t, &adv_req("10.1.2.3", &none), T0, 3), 3);
    let d = t.check(&adv_req("8.8.8.8", &none), T0);
    assert!(!d.allowed);
    assert_eq!(
        t.rule_label(d.rule.expect("rule")),
        "adv:Adv/group:allow-list"
    );
}

#[test]
fn header_query_and_claim_conditions() {
    let t = advanced(vec![
        group(
            "mobile",
            1,
            vec![Condition::Header {
                name: "User-Agent".into(),
                value: "mobile/*".into(),
                invert: false,
            }],
        ),
        group(
            "bulk",
            2,
            vec![Condition::Query {
                name: "mode".into(),
                value: "bulk".into(),
                invert: false,
            }],
        ),
        group(
            "gold-claim",
            3,
            vec![Condition::Claim {
                name: "plan".into(),
                value: "free".into(),
                invert: false,
            }],
        ),
    ]);
    let mut m = Map::default();
    m.0.insert("user-agent", "mobile/1.2");
    assert_eq!(admitted(&t, &adv_req("1.1.1.1", &m), T0, 3), 1);
    let mut q = Map::default();
    q.1.insert("mode", "bulk");
    assert_eq!(admitted(&t, &adv_req("1.1.1.1", &q), T0, 5), 2);
    let mut c = Map::default();
    c.1.insert("plan", "free");
    // `plan=free` answers both query and claim here; the claim group (3) is not the
    // lowest, so the query group, already spent, refuses.
    assert_eq!(admitted(&t, &adv_req("1.1.1.1", &c), T0, 5), 3);
    let mut other = Map::default();
    other.0.insert("user-agent", "desktop");
    assert!(t.check(&adv_req("1.1.1.1", &other), T0).allowed);
}

#[test]
fn when_several_groups_match_the_lowest_limit_applies() {
    let t = advanced(vec![
        group(
            "high",
            50,
            vec![Condition::Ip {
                ip: "0.0.0.0/0".into(),
                invert: false,
            }],
        ),
        group(
            "low",
            2,
            vec![Condition::Header {
                name: "x-tenant".into(),
                value: "acme".into(),
                invert: false,
            }],
        ),
    ]);
    let mut m = Map::default();
    m.0.insert("x-tenant", "acme");
    assert_eq!(admitted(&t, &adv_req("1.1.1.1", &m), T0, 10), 2);
    let d = t.check(&adv_req("1.1.1.1", &m), T0);
    assert_eq!(t.rule_label(d.rule.expect("rule")), "adv:Adv/group:low");
}

#[test]
fn a_new_throttler_over_the_same_store_keeps_the_counts() {
    let store = CounterStore::new(StoreConfig::default());
    let spec = ThrottleSpec {
        subscription_tiers: vec![sub("Tiny", 3, TimeUnit::Minute)],
        ..Default::default()
    };
    let f = app_req("pets", "app1", "alice", "Tiny");
    let a = Throttler::build(&spec, store.clone()).expect("spec");
    assert_eq!(admitted(&a, &f, T0, 2), 2);
    // A reload that raises the limit keeps the window's count.
    let mut raised = spec.clone();
    raised.subscription_tiers[0].quota = Some(Limit::requests(4, TimeUnit::Minute));
    let b = Throttler::build(&raised, store).expect("spec");
    assert_eq!(admitted(&b, &f, T0, 5), 2);
}

#[test]
fn headers_and_error_body_name_the_policy() {
    let t = build(&ThrottleSpec {
        subscription_tiers: vec![sub("Tiny", 2, TimeUnit::Minute)],
        ..Default::default()
    });
    let f = app_req("pets", "app1", "alice", "Tiny");
    let now = T0.plus(Duration::from_millis(20_500));
    let d = t.check(&f, now);
    let mut h = http::HeaderMap::new();
    t.write_headers(&d, HeaderStyle::Both, &mut h);
    assert_eq!(h["ratelimit-policy"], "\"sub:Tiny\";q=2;w=60");
    assert_eq!(h["ratelimit"], "\"sub:Tiny\";r=1;t=40");
    assert_eq!(h["ratelimit-limit"], "2");
    assert_eq!(h["ratelimit-remaining"], "1");
    assert_eq!(h["ratelimit-reset"], "40");
    assert!(h.get("retry-after").is_none());
    t.check(&f, now);
    let d = t.check(&f, now);
    assert!(!d.allowed);
    let mut h = http::HeaderMap::new();
    t.write_headers(&d, HeaderStyle::Ietf, &mut h);
    assert_eq!(h["retry-after"], "40");
    assert_eq!(h["ratelimit"], "\"sub:Tiny\";r=0;t=40");
    let rule = d.rule.expect("a rule refused");
    assert_eq!(t.policy_name(rule), "Tiny");
    assert_eq!(turnpike_throttle::retry_after_secs(&d), 40);
    assert!(t.message(&d).contains("Tiny"), "{}", t.message(&d));
}

#[test]
fn yaml_policies_parse_and_bad_ones_are_all_reported() {
    let yaml = r#"
subscription_tiers:
  - name: Gold
    quota: { requests: 5000, per: minute }
    burst: { requests: 100, per: second }
  - name: Metered
    quota: { bytes: 1048576, per: hour }
    stop_on_quota: false
application_tiers:
  - { name: 10PerMin, quota: { requests: 10, per: minute } }
advanced_policies:
  - name: Partners
    default_limit: { requests: 1000, per: minute, every: 5 }
    groups:
      - name: blocked-outside
        conditions: [ { type: ip, ip: 10.0.0.0/8, invert: true } ]
        limit: { requests: 0, per: minute }
"#;
    let spec: ThrottleSpec = serde_yaml::from_str(yaml).expect("yaml");
    assert!(Throttler::build(
        &spec.clone().over_wso2_defaults(),
        CounterStore::new(StoreConfig::default())
    )
    .is_ok());
    assert!(
        serde_yaml::from_str::<ThrottleSpec>("subscription_tiers: [{name: X, qouta: {}}]").is_err()
    );
    let bad = r#"
subscription_tiers:
  - { name: A, quota: { requests: 1, bytes: 2, per: second } }
  - { name: A, burst: { requests: 0, per: second } }
advanced_policies:
  - name: P
    groups: [ { conditions: [ { type: ip, ip: "300.1.1.1" } ], limit: { requests: 1, per: day, every: 0 } } ]
unauthenticated_tier: Nobody
"#;
    let spec: ThrottleSpec = serde_yaml::from_str(bad).expect("yaml");
    let err =
        Throttler::build(&spec, CounterStore::new(StoreConfig::default())).expect_err("invalid");
    assert_eq!(err.len(), 6, "{:?}", err);
}

#[test]
fn wso2_defaults_are_the_known_tiers() {
    let t = build(&ThrottleSpec::wso2_defaults());
    for (tier, n) in [("Gold", 5000), ("Silver", 2000), ("Bronze", 1000)] {
        let f = app_req("pets", "app1", "alice", tier);
        let d = t.check(&f, T0);
        assert_eq!((d.limit, d.remaining), (n, n - 1), "{tier}");
    }
    let d = t.check(&RequestFacts::new("pets", ip("1.2.3.4")), T0);
    assert_eq!(d.limit, 500);
    for (p, n) in [
        ("10KPerMin", 10_000),
        ("20KPerMin", 20_000),
        ("50KPerMin", 50_000),
    ] {
        let f = RequestFacts {
            api_policy: Some(p),
            subscription_tier: Some("Unlimited"),
            ..app_req("pets", "app1", "alice", "Unlimited")
        };
        assert_eq!(t.check(&f, T0).limit, n);
    }
    assert!(t.has_application_tier("50PerMin") && t.has_subscription_tier("Unlimited"));
    let _: Arc<CounterStore> = t.store().clone();
}
