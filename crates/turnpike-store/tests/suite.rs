//! The store's suite, run once against SQLite and once against a real PostgreSQL that the
//! harness starts: CRUD, uniqueness, default versions, lifecycle, revisions, hostile
//! strings, rollback, and the version counter.

use turnpike_store::testing::TestDbs;
use turnpike_store::*;

async fn open(url: String) -> Store {
    Store::open_with(&url, PasswordParams::insecure_fast())
        .await
        .unwrap_or_else(|e| panic!("open {url}: {e}"))
}

fn input(context: &str, version: &str) -> ApiInput {
    ApiInput {
        name: "Pets".into(),
        context: context.into(),
        version: version.into(),
        is_default: false,
        api_type: "HTTP".into(),
        description: String::new(),
        endpoints: vec!["http://127.0.0.1:9000".into()],
        sandbox_endpoints: Vec::new(),
        resources: vec![Resource {
            path: "/*".into(),
            methods: vec!["GET".into()],
            scopes: Vec::new(),
            ..Default::default()
        }],
        tiers: vec!["Gold".into(), "Unlimited".into()],
        definition: None,
        options: Default::default(),
    }
}

async fn create(store: &Store, i: &ApiInput) -> Api {
    let mut tx = store.begin_write().await.expect("begin");
    let api = tx.create_api(i, "alice").await.expect("create");
    tx.commit("alice", "create").await.expect("commit");
    api
}

async fn seeds_default_tiers(url: String) {
    let s = open(url).await;
    let names = |v: Vec<Tier>| v.into_iter().map(|t| t.name).collect::<Vec<_>>();
    let sub = names(s.list_tiers(TierKind::Subscription).await.expect("tiers"));
    assert_eq!(
        sub,
        ["Bronze", "Gold", "Silver", "Unauthenticated", "Unlimited"]
    );
    let gold = s
        .get_tier(TierKind::Subscription, "Gold")
        .await
        .expect("gold");
    assert_eq!((gold.request_count, gold.unit_seconds), (Some(5000), 60));
    let app = names(s.list_tiers(TierKind::Application).await.expect("tiers"));
    assert_eq!(app, ["10PerMin", "20PerMin", "50PerMin", "Unlimited"]);
    let adv = names(s.list_tiers(TierKind::Advanced).await.expect("tiers"));
    assert_eq!(adv, ["10KPerMin", "20KPerMin", "50KPerMin", "Unlimited"]);
}

async fn create_get_list_and_duplicate(url: String) {
    let s = open(url).await;
    let a = create(&s, &input("/pets", "v1")).await;
    assert_eq!(a.lifecycle_status, LifecycleState::Created);
    assert_eq!(s.get_api(&a.id).await.expect("get"), a);
    let mut tx = s.begin_write().await.expect("begin");
    let err = tx
        .create_api(&input("/pets", "v1"), "bob")
        .await
        .expect_err("dup");
    assert!(matches!(err, StoreError::Conflict(_)), "{err}");
    drop(tx);
    create(&s, &input("/pets", "v2")).await;
    let page = s
        .list_apis(&ApiFilter::default(), 1, 1)
        .await
        .expect("list");
    assert_eq!(page.total, 2);
    assert_eq!(page.items[0].version, "v2");
}

async fn one_default_version_per_context(url: String) {
    let s = open(url).await;
    let mut i = input("/pets", "v1");
    i.is_default = true;
    let v1 = create(&s, &i).await;
    i.version = "v2".into();
    let v2 = create(&s, &i).await;
    assert!(!s.get_api(&v1.id).await.expect("v1").is_default_version);
    assert!(s.get_api(&v2.id).await.expect("v2").is_default_version);
}

async fn every_lifecycle_transition(url: String) {
    let s = open(url).await;
    let mut n = 0;
    for from in LifecycleState::ALL {
        for action in LifecycleAction::ALL {
            n += 1;
            let a = create(&s, &input("/lc", &format!("v{n}"))).await;
            force_state(&s, &a.id, from).await;
            let mut tx = s.begin_write().await.expect("begin");
            let r = tx.change_lifecycle(&a.id, action, None).await;
            match (from.apply(action), r) {
                (Some(to), Ok(api)) => assert_eq!(api.lifecycle_status, to),
                (None, Err(StoreError::Conflict(_))) => {}
                (want, got) => panic!("{from:?} --{action:?}--> want {want:?}, got {got:?}"),
            }
        }
    }
}

/// Drives an API to `state` along allowed transitions.
async fn force_state(s: &Store, id: &str, state: LifecycleState) {
    use LifecycleAction as A;
    let path: &[A] = match state {
        LifecycleState::Created => &[],
        LifecycleState::Prototyped => &[A::DeployAsPrototype],
        LifecycleState::Published => &[A::Publish],
        LifecycleState::Blocked => &[A::Publish, A::Block],
        LifecycleState::Deprecated => &[A::Publish, A::Deprecate],
        LifecycleState::Retired => &[A::Publish, A::Deprecate, A::Retire],
    };
    for a in path {
        let mut tx = s.begin_write().await.expect("begin");
        tx.change_lifecycle(id, *a, None).await.expect("transition");
        tx.commit("t", "lc").await.expect("commit");
    }
}

async fn revisions_and_if_match(url: String) {
    let s = open(url).await;
    let a = create(&s, &input("/pets", "v1")).await;
    let mut tx = s.begin_write().await.expect("begin");
    let mut i = input("/pets", "v1");
    i.description = "new".into();
    let b = tx
        .update_api(&a.id, &i, Some(a.revision))
        .await
        .expect("update");
    assert_eq!(b.revision, a.revision + 1);
    let err = tx
        .update_api(&a.id, &i, Some(a.revision))
        .await
        .expect_err("stale");
    assert!(matches!(err, StoreError::PreconditionFailed));
}

async fn hostile_strings_round_trip(url: String) {
    let s = open(url).await;
    let mut i = input("/x", "v1");
    i.name = "Robert'); DROP TABLE apis;-- \u{1F600} ünïcødé \" \\ % _".into();
    i.description = "' OR '1'='1 \u{0}".replace('\u{0}', "") + "日本語";
    let a = create(&s, &i).await;
    let got = s.get_api(&a.id).await.expect("get");
    assert_eq!(got.name, i.name);
    assert_eq!(got.description, i.description);
    let f = ApiFilter {
        query: Some("%".into()),
        ..Default::default()
    };
    assert_eq!(s.list_apis(&f, 10, 0).await.expect("list").total, 1);
    let f = ApiFilter {
        query: Some("nomatch%".into()),
        ..Default::default()
    };
    assert_eq!(s.list_apis(&f, 10, 0).await.expect("list").total, 0);
}

async fn rollback_leaves_nothing_and_version_unchanged(url: String) {
    let s = open(url).await;
    let v0 = s.current_version().await.expect("v");
    {
        let mut tx = s.begin_write().await.expect("begin");
        tx.create_api(&input("/a", "v1"), "x")
            .await
            .expect("create");
        // dropped without commit
    }
    assert_eq!(
        s.list_apis(&ApiFilter::default(), 10, 0)
            .await
            .expect("l")
            .total,
        0
    );
    assert_eq!(s.current_version().await.expect("v"), v0);
    let mut rx = s.watch_version();
    create(&s, &input("/a", "v1")).await;
    assert_eq!(s.current_version().await.expect("v"), v0 + 1);
    assert_eq!(*rx.borrow_and_update(), v0 + 1);
}

async fn applications_and_subscriptions(url: String) {
    let s = open(url).await;
    let a = create(&s, &input("/pets", "v1")).await;
    let mut tx = s.begin_write().await.expect("begin");
    let app = tx
        .create_application("sub", "app1", "10PerMin", "")
        .await
        .expect("app");
    let err = tx
        .subscribe(&app.id, &a.id, "Gold")
        .await
        .expect_err("created API");
    assert!(matches!(err, StoreError::Conflict(_)));
    tx.change_lifecycle(&a.id, LifecycleAction::Publish, None)
        .await
        .expect("publish");
    let err = tx
        .subscribe(&app.id, &a.id, "Silver")
        .await
        .expect_err("not offered");
    assert!(matches!(err, StoreError::Conflict(_)));
    let sub = tx
        .subscribe(&app.id, &a.id, "Gold")
        .await
        .expect("subscribe");
    assert_eq!(sub.status, SubscriptionState::Active);
    tx.commit("t", "subscribe").await.expect("commit");
    // PostgreSQL aborts a transaction on a constraint violation: one tx per failed write.
    let mut tx = s.begin_write().await.expect("begin");
    let err = tx
        .subscribe(&app.id, &a.id, "Gold")
        .await
        .expect_err("twice");
    assert!(matches!(err, StoreError::Conflict(_)));
    drop(tx);
    let mut tx = s.begin_write().await.expect("begin");
    let err = tx
        .delete_api(&a.id, None)
        .await
        .expect_err("has subscriptions");
    assert!(matches!(err, StoreError::Conflict(_)));
    let b = tx
        .set_subscription_state(&sub.id, SubscriptionState::Blocked, None)
        .await
        .expect("block");
    assert_eq!(b.status, SubscriptionState::Blocked);
    tx.unsubscribe(&sub.id).await.expect("unsubscribe");
    tx.delete_api(&a.id, None).await.expect("delete");
    tx.commit("t", "apps").await.expect("commit");
}

/// The counter the snapshot builder keys its subscription cache on moves with every
/// subscription write and with nothing else.
async fn subscription_changes_follow_subscription_writes(url: String) {
    let s = open(url).await;
    let changes = |s: Store| async move { s.subscription_changes().await.expect("changes") };
    let a = create(&s, &input("/subs", "v1")).await;
    let mut tx = s.begin_write().await.expect("begin");
    tx.change_lifecycle(&a.id, LifecycleAction::Publish, None)
        .await
        .expect("publish");
    let app = tx
        .create_application("sub", "counted", "10PerMin", "")
        .await
        .expect("app");
    tx.commit("t", "publish").await.expect("commit");
    let c0 = changes(s.clone()).await;
    let pos0 = s.subscription_log_position().await.expect("position");
    let mut tx = s.begin_write().await.expect("begin");
    let sub = tx.subscribe(&app.id, &a.id, "Gold").await.expect("sub");
    drop(tx);
    assert_eq!(
        changes(s.clone()).await,
        c0,
        "a rolled-back subscribe moved it"
    );
    assert!(s.all_subscriptions().await.expect("all").is_empty());
    let mut tx = s.begin_write().await.expect("begin");
    let sub2 = tx.subscribe(&app.id, &a.id, "Gold").await.expect("sub");
    tx.commit("t", "subscribe").await.expect("commit");
    let c1 = changes(s.clone()).await;
    assert!(c1 > c0, "subscribe did not move it");
    let rows = s.all_subscriptions().await.expect("all");
    assert_eq!(rows.len(), 1);
    assert_eq!(
        (rows[0].api_id.as_str(), rows[0].application_id.as_str()),
        (a.id.as_str(), app.id.as_str())
    );
    assert_eq!(
        (rows[0].state.as_str(), rows[0].tier.as_str()),
        ("ACTIVE", "Gold")
    );
    // The log names the API once, however many rows changed.
    let (pos1, apis) = s.subscription_log_since(pos0, 100).await.expect("log");
    assert!(pos1 > pos0);
    assert_eq!(apis, Some(vec![a.id.clone()]));
    assert_eq!(
        s.subscriptions_of(std::slice::from_ref(&a.id))
            .await
            .expect("rows")
            .len(),
        1
    );
    // Other writes leave it alone.
    create(&s, &input("/other", "v1")).await;
    assert_eq!(
        s.subscription_log_since(pos1, 100).await.expect("log"),
        (pos1, Some(Vec::new()))
    );
    assert_eq!(changes(s.clone()).await, c1, "an API write moved it");
    let mut tx = s.begin_write().await.expect("begin");
    tx.set_subscription_state(&sub2.id, SubscriptionState::Blocked, None)
        .await
        .expect("block");
    tx.commit("t", "block").await.expect("commit");
    let c2 = changes(s.clone()).await;
    assert!(c2 > c1, "a state change did not move it");
    assert_eq!(
        s.all_subscriptions().await.expect("all")[0].state,
        "BLOCKED"
    );
    let mut tx = s.begin_write().await.expect("begin");
    tx.delete_application(&app.id).await.expect("delete app");
    tx.commit("t", "delete").await.expect("commit");
    assert!(
        changes(s.clone()).await > c2,
        "deleting the application did not move it"
    );
    assert!(s.all_subscriptions().await.expect("all").is_empty());
    let (pos2, apis) = s.subscription_log_since(pos1, 100).await.expect("log");
    assert_eq!(apis, Some(vec![a.id.clone()]), "block and delete");
    assert_eq!(
        s.subscription_log_since(pos1, 1).await.expect("log").1,
        None
    );
    assert!(pos2 > pos1);
    // Pruning all but the newest entry: a reader at or after the watermark reads on, an
    // older one is told to reread everything.
    assert!(s.prune_subscription_log(1).await.expect("prune") > 0);
    assert_eq!(
        s.subscription_log_since(pos2, 100).await.expect("log"),
        (pos2, Some(Vec::new()))
    );
    assert_eq!(
        s.subscription_log_since(pos1, 100).await.expect("log"),
        (pos2, None),
        "a position before the pruned entries must reread everything"
    );
    let _ = sub;
}

async fn users_and_passwords(url: String) {
    let s = open(url).await;
    let h = s.hash_password("s3cret").await.expect("hash");
    let mut tx = s.begin_write().await.expect("begin");
    tx.create_user("ann", &h, &["publisher".into()])
        .await
        .expect("user");
    let err = tx.create_user("ann", &h, &[]).await.expect_err("dup");
    assert!(matches!(err, StoreError::Conflict(_)));
    drop(tx);
    let mut tx = s.begin_write().await.expect("begin");
    tx.create_user("ann", &h, &["publisher".into()])
        .await
        .expect("user");
    tx.commit("t", "users").await.expect("commit");
    assert_eq!(
        s.verify_password("ann", "s3cret").await.expect("verify"),
        Some(vec!["publisher".to_string()])
    );
    assert_eq!(
        s.verify_password("ann", "wrong").await.expect("verify"),
        None
    );
    assert_eq!(
        s.verify_password("nobody", "x").await.expect("verify"),
        None
    );
}

async fn new_version_copies(url: String) {
    let s = open(url).await;
    let a = create(&s, &input("/pets", "v1")).await;
    let mut tx = s.begin_write().await.expect("begin");
    let b = tx
        .new_version(&a.id, "v2", true, "bob")
        .await
        .expect("copy");
    assert_eq!(
        (b.resources.clone(), b.endpoints.clone()),
        (a.resources, a.endpoints)
    );
    assert_eq!(b.lifecycle_status, LifecycleState::Created);
    assert!(b.is_default_version);
    let err = tx
        .new_version(&a.id, "v2", false, "bob")
        .await
        .expect_err("dup");
    assert!(matches!(err, StoreError::Conflict(_)));
}

async fn reopen_keeps_data_and_version(url: String) {
    let s = open(url.clone()).await;
    create(&s, &input("/pets", "v1")).await;
    let v = s.current_version().await.expect("v");
    s.close().await;
    let s = open(url).await;
    assert_eq!(s.current_version().await.expect("v"), v);
    assert_eq!(
        s.list_apis(&ApiFilter::default(), 10, 0)
            .await
            .expect("l")
            .total,
        1
    );
}

/// Sandbox endpoints round-trip through create, update and new versions (an API written
/// before migration 9 reading none is `tests/upgrade.rs`'s: every migration from every
/// earlier schema with rows in it).
async fn sandbox_endpoints_migrate_and_round_trip(url: String) {
    let s = open(url).await;
    let mut i = input("/pets", "v1");
    i.sandbox_endpoints = vec!["http://127.0.0.1:9001".into()];
    let a = create(&s, &i).await;
    assert_eq!(
        s.get_api(&a.id).await.expect("get").sandbox_endpoints,
        i.sandbox_endpoints
    );
    i.sandbox_endpoints = vec!["http://127.0.0.1:9002".into(), "https://sb.example".into()];
    let mut tx = s.begin_write().await.expect("begin");
    tx.update_api(&a.id, &i, None).await.expect("update");
    let b = tx
        .new_version(&a.id, "v2", false, "bob")
        .await
        .expect("copy");
    tx.commit("alice", "update").await.expect("commit");
    assert_eq!(
        b.sandbox_endpoints, i.sandbox_endpoints,
        "a new version copies them"
    );
}

/// AI calls' rollups keep provider, model, tokens and time to first token through the
/// store, and the price table's edits are set, replaced, listed and deleted.
async fn ai_rollups_and_prices_round_trip(url: String) {
    use turnpike_analytics::prices::Price;
    use turnpike_analytics::rollup::{Counted, Row, Tokens, MINUTE};
    use turnpike_analytics::{Latency, Outcome, Rollup, RollupKey};
    let s = open(url).await;
    let mut sums = Rollup::default();
    sums.count(&Counted {
        status: 200,
        outcome: Outcome::Served,
        bytes_in: 1,
        bytes_out: 2,
        latency: Latency::default(),
        upstream_answered: true,
        tokens: Some(Tokens {
            prompt: 70,
            completion: 30,
            cached: 20,
            ttft_us: Some(25_000),
        }),
    });
    let row = Row {
        bucket: 1_700_000_040,
        period: MINUTE,
        key: RollupKey {
            provider: "openai".into(),
            model: "gpt-4o-mini".into(),
            status_class: 2,
            ..RollupKey::default()
        },
        sums,
    };
    s.insert_rollups(std::slice::from_ref(&row))
        .await
        .expect("insert");
    let filter = turnpike_store::RollupFilter {
        from: 1_700_000_000,
        to: 1_700_000_100,
        ..Default::default()
    };
    let read = s.rollups(&filter).await.expect("read");
    assert_eq!(read, vec![row]);
    assert_eq!(read[0].sums.ttft.count(), 1);

    let p = Price {
        input: 150_000,
        output: 600_000,
        cached_input: 75_000,
    };
    s.put_ai_price("gpt-4o-mini", p, 1).await.expect("put");
    s.put_ai_price("home-made", p, 1).await.expect("put");
    let cheaper = Price { input: 1, ..p };
    s.put_ai_price("gpt-4o-mini", cheaper, 2)
        .await
        .expect("replace");
    let all = s.ai_prices().await.expect("list");
    assert_eq!(
        all,
        vec![
            (String::from("gpt-4o-mini"), cheaper),
            (String::from("home-made"), p)
        ]
    );
    assert!(s.delete_ai_price("home-made").await.expect("delete"));
    assert!(!s.delete_ai_price("home-made").await.expect("delete again"));
    assert_eq!(s.ai_prices().await.expect("list").len(), 1);
}

const CASES: &[(&str, turnpike_store::testing::Case)] = turnpike_store::cases![
    seeds_default_tiers,
    create_get_list_and_duplicate,
    one_default_version_per_context,
    every_lifecycle_transition,
    revisions_and_if_match,
    hostile_strings_round_trip,
    rollback_leaves_nothing_and_version_unchanged,
    applications_and_subscriptions,
    subscription_changes_follow_subscription_writes,
    users_and_passwords,
    new_version_copies,
    reopen_keeps_data_and_version,
    sandbox_endpoints_migrate_and_round_trip,
    ai_rollups_and_prices_round_trip,
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn store_suite_on_sqlite() {
    TestDbs::sqlite().run(CASES).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn store_suite_on_postgres() {
    TestDbs::postgres().run(CASES).await;
}
