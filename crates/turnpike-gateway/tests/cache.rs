//! The response cache through a real gateway on 127.0.0.1:0, in front of a back end
//! that counts its calls and answers each path its own way: hits and misses, `Vary`,
//! `no-store`/`private`/`Set-Cookie` never served from the cache, two applications
//! never sharing an answer, request collapsing, stale answers (while revalidating and
//! in place of a failure), a snapshot swap keeping the store.

mod cache_support;
mod support;

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use cache_support::*;
use support::*;
use turnpike_config::Snapshot;

#[tokio::test]
async fn second_get_is_a_hit_with_age_and_no_second_upstream_call() {
    let r = rig("").await;
    let first = r.get("/x", KEY_A, &[]).await;
    assert_eq!((first.status, first.x_cache.as_str()), (200, "MISS"));
    let second = r.get("/x", KEY_A, &[]).await;
    assert_eq!(second.x_cache, "HIT");
    assert!(second.age.is_some(), "a hit carries Age");
    assert_eq!(second.body, first.body);
    assert_eq!(r.backend.calls("/x"), 1);
    // The stored head is the miss's (the first hit builds its map, the next reuse it),
    // but for what every answer is stamped with anew.
    let head = |g: &Got| {
        let mut h = g.headers.clone();
        for stamped in ["x-cache", "age", "x-request-id"] {
            h.remove(stamped);
        }
        h
    };
    assert_eq!(head(&second), head(&first));
    assert_eq!(second.headers["content-type"], "text/plain");
    assert_eq!(head(&r.get("/x", KEY_A, &[]).await), head(&first));
    // The query is part of the key.
    assert_eq!(r.get("/x?page=2", KEY_A, &[]).await.x_cache, "MISS");
}

#[tokio::test]
async fn with_min_uses_a_keys_answer_is_stored_from_its_nth_request_on() {
    let r = rig("          min_uses: 3\n").await;
    let usage = || {
        let snap = r.gw.snapshots().load();
        let cache = snap.apis[0].chain.find::<turnpike_cache::ResponseCache>();
        cache.expect("the cache policy is built").store().usage().0
    };
    for i in 1..=2 {
        let got = r.get("/x", KEY_A, &[]).await;
        assert_eq!(
            (got.status, got.x_cache.as_str(), got.age),
            (200, "MISS", None),
            "request {i}"
        );
        assert_eq!(usage(), 0, "request {i} stored nothing");
    }
    assert_eq!(r.get("/x", KEY_A, &[]).await.x_cache, "MISS", "the third");
    assert_eq!(usage(), 1, "the third request's answer is stored");
    let hit = r.get("/x", KEY_A, &[]).await;
    assert_eq!(hit.x_cache, "HIT");
    assert!(hit.body.starts_with("/x call 3 "), "{}", hit.body);
    assert_eq!(r.backend.calls("/x"), 3);
    // Each key counts its own requests.
    assert_eq!(r.get("/y", KEY_A, &[]).await.x_cache, "MISS");
    assert_eq!(r.get("/y", KEY_A, &[]).await.x_cache, "MISS");
    assert_eq!(usage(), 1, "/y asked twice: not stored yet");
}

#[tokio::test]
async fn private_no_store_and_set_cookie_are_never_served_from_the_cache() {
    let r = rig("").await;
    for path in ["/private", "/nostore", "/cookie"] {
        for _ in 0..3 {
            let got = r.get(path, KEY_A, &[]).await;
            assert_eq!(got.x_cache, "MISS", "{path}");
        }
        assert_eq!(r.backend.calls(path), 3, "{path} went upstream every time");
    }
}

#[tokio::test]
async fn two_applications_never_share_a_response_unless_it_is_public() {
    let r = rig("").await;
    let a = r.get("/mine", KEY_A, &[("x-caller", "a")]).await;
    let b = r.get("/mine", KEY_B, &[("x-caller", "b")]).await;
    assert_eq!((a.x_cache.as_str(), b.x_cache.as_str()), ("MISS", "MISS"));
    assert!(b.body.ends_with("caller b"), "{}", b.body);
    assert_eq!(r.get("/mine", KEY_B, &[]).await.body, b.body, "b's own hit");
    assert_eq!(r.get("/mine", KEY_A, &[]).await.body, a.body, "a's own hit");
    assert_eq!(r.backend.calls("/mine"), 2);
    // A `public` answer is one entry for every caller.
    assert_eq!(r.get("/public", KEY_A, &[]).await.x_cache, "MISS");
    assert_eq!(r.get("/public", KEY_B, &[]).await.x_cache, "HIT");
    assert_eq!(r.backend.calls("/public"), 1);
}

#[tokio::test]
async fn vary_keeps_one_answer_per_header_value() {
    let r = rig("").await;
    let en = [("accept-language", "en")];
    let fr = [("accept-language", "fr")];
    assert_eq!(r.get("/vary", KEY_A, &en).await.x_cache, "MISS");
    assert_eq!(r.get("/vary", KEY_A, &fr).await.x_cache, "MISS");
    let (en2, fr2) = (
        r.get("/vary", KEY_A, &en).await,
        r.get("/vary", KEY_A, &fr).await,
    );
    assert_eq!((en2.x_cache.as_str(), fr2.x_cache.as_str()), ("HIT", "HIT"));
    assert!(en2.body.contains("lang en") && fr2.body.contains("lang fr"));
    assert_eq!(r.backend.calls("/vary"), 2);
}

#[tokio::test]
async fn methods_not_cached_are_bypassed() {
    let r = rig("").await;
    for _ in 0..2 {
        let resp = r
            .client
            .post(r.gw.url("/cached/v1/x"))
            .header("apikey", KEY_A)
            .send()
            .await
            .expect("post");
        assert_eq!(resp.headers()["x-cache"], "BYPASS");
    }
    assert_eq!(r.backend.calls("/x"), 2);
}

#[tokio::test]
async fn a_hundred_concurrent_misses_make_one_upstream_call() {
    let r = Arc::new(rig("").await);
    let tasks: Vec<_> = (0..100)
        .map(|_| {
            let r = r.clone();
            tokio::spawn(async move { r.get("/slow", KEY_A, &[]).await })
        })
        .collect();
    let mut labels: HashMap<String, usize> = HashMap::new();
    for t in tasks {
        let got = t.await.expect("task");
        assert_eq!(got.status, 200);
        *labels.entry(got.x_cache).or_default() += 1;
    }
    assert_eq!(r.backend.calls("/slow"), 1, "labels: {labels:?}");
    assert_eq!(labels.get("MISS"), Some(&1), "{labels:?}");
    assert_eq!(labels.get("HIT"), Some(&99), "{labels:?}");
}

#[tokio::test]
async fn stale_answers_while_revalidating_and_when_the_back_end_fails() {
    let r = rig("").await;
    assert_eq!(r.get("/short", KEY_A, &[]).await.x_cache, "MISS");
    assert_eq!(r.get("/short", KEY_A, &[]).await.x_cache, "HIT");
    tokio::time::sleep(Duration::from_millis(2100)).await;
    // Stale, within stale-while-revalidate (10 s): one request refreshes it.
    assert_eq!(r.get("/short", KEY_A, &[]).await.x_cache, "MISS");
    assert_eq!(r.backend.calls("/short"), 2);
    tokio::time::sleep(Duration::from_millis(2100)).await;
    r.backend.failing.store(true, Ordering::SeqCst);
    let got = r.get("/short", KEY_A, &[]).await;
    assert_eq!(
        (got.status, got.x_cache.as_str()),
        (200, "STALE"),
        "{}",
        got.body
    );
    assert!(got.body.contains("call 2"), "{}", got.body);
    assert!(got.age.is_some_and(|a| a >= 2));
}

#[tokio::test]
async fn while_one_request_refreshes_a_stale_answer_the_others_get_it_stale() {
    let r = Arc::new(rig("").await);
    assert_eq!(r.get("/shortslow", KEY_A, &[]).await.x_cache, "MISS");
    tokio::time::sleep(Duration::from_millis(2100)).await;
    // The refresh takes 300 ms upstream; the requests arriving meanwhile do not wait.
    let leader = {
        let r = r.clone();
        tokio::spawn(async move { r.get("/shortslow", KEY_A, &[]).await })
    };
    tokio::time::sleep(Duration::from_millis(100)).await;
    let during = r.get("/shortslow", KEY_A, &[]).await;
    assert_eq!(during.x_cache, "STALE");
    assert!(during.body.contains("call 1"), "{}", during.body);
    let refreshed = leader.await.expect("leader");
    assert_eq!(refreshed.x_cache, "MISS");
    assert!(refreshed.body.contains("call 2"), "{}", refreshed.body);
    assert_eq!(r.get("/shortslow", KEY_A, &[]).await.x_cache, "HIT");
    assert_eq!(r.backend.calls("/shortslow"), 2);
}

#[tokio::test]
async fn stale_if_error_covers_a_back_end_that_refuses_connections() {
    let r = rig("").await;
    let first = r.get("/y", KEY_A, &[]).await;
    assert_eq!(first.x_cache, "MISS");
    // The same API on the same runtime, now pointing at a closed port.
    let down = yaml(refused_addr(), "");
    let snap = Snapshot::from_yaml_with(&down, "test", &r.runtime).expect("valid");
    r.gw.snapshots().store(Arc::new(snap));
    // The swap kept the store: still a hit.
    assert_eq!(r.get("/y", KEY_A, &[]).await.x_cache, "HIT");
    // Still fresh: the client asks to revalidate, the back end is down.
    let got = r.get("/y", KEY_A, &[("cache-control", "no-cache")]).await;
    assert_eq!(
        (got.status, got.x_cache.as_str()),
        (200, "STALE"),
        "{}",
        got.body
    );
    assert_eq!(got.body, first.body);
}

#[tokio::test]
async fn the_store_holds_one_entry_per_key_and_counts_its_bytes() {
    let r = rig("").await;
    let _ = r.get("/x", KEY_A, &[]).await;
    let _ = r.get("/x", KEY_A, &[]).await;
    let snap = r.gw.snapshots().load();
    let api = snap
        .apis
        .iter()
        .find(|a| a.label.context.as_ref() == "/cached");
    let cache = api.and_then(|a| a.chain.find::<turnpike_cache::ResponseCache>());
    let (entries, bytes) = cache.expect("the cache policy is built").store().usage();
    assert_eq!(entries, 1);
    assert!(bytes > 0);
}

#[tokio::test]
async fn a_purge_in_the_snapshot_reaches_every_gateway_once() {
    let backend = Backend::default();
    let addr = backend.start().await;
    let (one, two) = (
        rig_on(backend.clone(), addr, "").await,
        rig_on(backend.clone(), addr, "").await,
    );
    for gw in [&one, &two] {
        for path in ["/x", "/p/a", "/tagged"] {
            assert_eq!(gw.get(path, KEY_A, &[]).await.x_cache, "MISS");
            assert_eq!(gw.get(path, KEY_A, &[]).await.x_cache, "HIT");
        }
    }
    // A purge by tag, then one by prefix, as the control plane ships them.
    let purges = "          purges: [ { id: 1, tag: t2 }, { id: 2, prefix: /p/ } ]\n";
    for gw in [&one, &two] {
        gw.swap(addr, purges);
        assert_eq!(gw.get("/tagged", KEY_A, &[]).await.x_cache, "MISS");
        assert_eq!(gw.get("/p/a", KEY_A, &[]).await.x_cache, "MISS");
        assert_eq!(gw.get("/x", KEY_A, &[]).await.x_cache, "HIT", "untouched");
    }
    // The same snapshot again (a reload): the purges were applied, not again.
    for gw in [&one, &two] {
        gw.swap(addr, purges);
        assert_eq!(gw.get("/p/a", KEY_A, &[]).await.x_cache, "HIT");
    }
    // A purge of everything.
    let all = "          purges: [ { id: 1, tag: t2 }, { id: 2, prefix: /p/ }, { id: 3 } ]\n";
    for gw in [&one, &two] {
        gw.swap(addr, all);
        assert_eq!(gw.get("/x", KEY_A, &[]).await.x_cache, "MISS");
    }
    assert_eq!(backend.calls("/x"), 4, "two gateways, each filled twice");
}

#[tokio::test]
async fn the_example_as_written_answers_plain_gets_miss_then_hit() {
    let r = rig("").await;
    let first = r.get("/x", "", &[]).await;
    assert_eq!((first.status, first.x_cache.as_str()), (200, "MISS"));
    let second = r.get("/x", "", &[]).await;
    assert_eq!((second.status, second.x_cache.as_str()), (200, "HIT"));
    assert!(second.age.is_some(), "a hit carries Age");
    assert_eq!(r.backend.calls("/x"), 1);
}

/// On the open example, callers are told apart by the credentials they send anyway.
#[tokio::test]
async fn on_the_open_example_different_credentials_never_share_an_answer() {
    let r = rig("").await;
    let callers: [(&str, &[(&str, &str)]); 5] = [
        ("none", &[]),
        ("bearer-a", &[("authorization", "Bearer a")]),
        ("bearer-b", &[("authorization", "Bearer b")]),
        ("basic", &[("authorization", "Basic dTpw")]),
        ("key-b", &[("apikey", KEY_B)]),
    ];
    for (who, creds) in callers {
        let mut headers = creds.to_vec();
        headers.push(("x-caller", who));
        let got = r.get("/mine", "", &headers).await;
        assert_eq!(got.x_cache, "MISS", "{who} is not served another's answer");
        assert!(got.body.ends_with(&format!("caller {who}")), "{}", got.body);
    }
    for (who, creds) in callers {
        let got = r.get("/mine", "", creds).await;
        assert_eq!(got.x_cache, "HIT", "{who}'s own answer");
        assert!(got.body.ends_with(&format!("caller {who}")), "{}", got.body);
    }
    assert_eq!(r.backend.calls("/mine"), callers.len());
    // A `public` answer is stored once, for every caller.
    assert_eq!(r.get("/public", "", callers[1].1).await.x_cache, "MISS");
    assert_eq!(r.get("/public", "", callers[2].1).await.x_cache, "HIT");
    assert_eq!(r.get("/public", "", &[]).await.x_cache, "HIT");
}

/// The example with authentication on: the application and subject are the key's
/// consumer part, whatever credential each sends.
#[tokio::test]
async fn authenticated_applications_never_share_an_answer() {
    const SECURED: &str = r#"security:
  api_keys:
    - { sha256: "c677bcffa7f6bf5c0a8d5a285939be66390a26716ae3ec865d023c19a13a3662", application: app-a, subscriber: alice }
    - { sha256: "7b81d2e92a39c6390258ce629b8103cc7d1bfe06716c30205d83212e5ef10b1a", application: app-b, subscriber: bob }
  subscriptions:
    - { api: /cached/v1, application: app-a, state: ACTIVE, tier: Unlimited }
    - { api: /cached/v1, application: app-b, state: ACTIVE, tier: Unlimited }
"#;
    let backend = Backend::default();
    let addr = backend.start().await;
    let text = yaml(addr, "").replace(
        "    auth: none\n",
        "    auth: { oauth2: false, api_key: true }\n",
    );
    let r = rig_of(backend, &format!("{SECURED}{text}")).await;
    assert_eq!(r.get("/mine", "", &[]).await.status, 401, "auth is on");
    let a = r.get("/mine", KEY_A, &[("x-caller", "a")]).await;
    let b = r.get("/mine", KEY_B, &[("x-caller", "b")]).await;
    assert_eq!((a.x_cache.as_str(), b.x_cache.as_str()), ("MISS", "MISS"));
    assert_eq!(r.get("/mine", KEY_A, &[]).await.body, a.body, "a's own hit");
    assert_eq!(r.get("/mine", KEY_B, &[]).await.body, b.body, "b's own hit");
    assert_eq!(r.backend.calls("/mine"), 2);
}

#[tokio::test]
async fn a_stale_answer_with_a_validator_is_revalidated_and_a_304_refreshes_it() {
    let r = rig("").await;
    for (path, validator) in [("/etag", "etag"), ("/lastmod", "last-modified")] {
        let first = r.get(path, KEY_A, &[]).await;
        assert_eq!(
            (first.status, first.x_cache.as_str()),
            (200, "MISS"),
            "{path}"
        );
        // `no-cache` / `max-age=0`: stored, never reused without asking the back end.
        let second = r.get(path, KEY_A, &[]).await;
        assert_eq!(
            (second.status, second.x_cache.as_str()),
            (200, "REVALIDATED"),
            "{path}"
        );
        assert_eq!(
            second.body, first.body,
            "{path}: the stored body, not the 304's"
        );
        assert!(second.headers.contains_key(validator), "{path}");
        let refreshed = second
            .headers
            .get("x-refreshed")
            .and_then(|v| v.to_str().ok());
        assert_eq!(
            refreshed,
            Some("call 2"),
            "{path}: the 304's headers update the stored head"
        );
        assert_eq!(r.backend.calls(path), 2, "{path}");
        assert_eq!(r.backend.calls(&format!("{path}?conditional")), 1, "{path}");
        // The refreshed head is what the next revalidation starts from.
        let third = r.get(path, KEY_A, &[]).await;
        assert_eq!(third.x_cache, "REVALIDATED", "{path}");
        assert_eq!(third.body, first.body, "{path}");
        assert_eq!(r.backend.calls(&format!("{path}?conditional")), 2, "{path}");
    }
    // Another caller has no stored answer of its own: a plain MISS, no conditional.
    assert_eq!(r.get("/etag", KEY_B, &[]).await.x_cache, "MISS");
    assert_eq!(r.backend.calls("/etag?conditional"), 2);
}

#[tokio::test]
async fn a_clients_own_conditional_request_gets_the_back_ends_304() {
    let r = rig("").await;
    assert_eq!(r.get("/etag", KEY_A, &[]).await.x_cache, "MISS");
    let own = r.get("/etag", KEY_A, &[("if-none-match", "\"v1\"")]).await;
    assert_eq!((own.status, own.x_cache.as_str()), (304, "MISS"));
    assert!(own.body.is_empty());
    // The stored answer is untouched: the next plain GET revalidates it.
    assert_eq!(r.get("/etag", KEY_A, &[]).await.x_cache, "REVALIDATED");
}

#[tokio::test]
async fn a_plain_answers_age_counts_against_the_ttl() {
    // No caching headers: judged without the RFC library (rfc.rs `is_plain`), which
    // must still count the `Age` the answer arrived with: 60 s TTL - 59 s = 1 s fresh.
    let r = rig("").await;
    assert_eq!(r.get("/aged", KEY_A, &[]).await.x_cache, "MISS");
    let hit = r.get("/aged", KEY_A, &[]).await;
    assert_eq!(hit.x_cache, "HIT");
    assert!(hit.age.is_some_and(|a| a >= 59), "{:?}", hit.age);
    tokio::time::sleep(Duration::from_millis(1100)).await;
    assert_eq!(r.get("/aged", KEY_A, &[]).await.x_cache, "MISS");
    assert_eq!(r.backend.calls("/aged"), 2);
}
