//! The control plane when its database cannot serve, through a real socket: a full disk
//! (SQLite capped at its current size) answers writes 503 `store_full` with
//! `Retry-After`, keeps reads working, fails `/ready`, and writes recover by themselves
//! once space is back (no connection left poisoned mid-transaction); PostgreSQL stopped
//! fails REST calls fast with 503 `store_unavailable` while JWKS and discovery are still
//! served, and everything recovers when it starts again, without a restart.

mod km_support;

use std::time::{Duration, Instant};

use http::Method;
use km_support::{control_plane, control_plane_on_postgres, Auth, Cp, Resp};
use serde_json::{json, Value};
use turnpike_store::testing::TestDbs;

fn api(n: usize) -> Value {
    json!({"name": format!("Api{n}"), "context": format!("/a{n}"), "version": "v1",
           "endpoints": ["http://127.0.0.1:9"], "policies": ["Unlimited"],
           "description": "x".repeat(9_000)})
}

async fn create(cp: &Cp, n: usize) -> Resp {
    cp.call(
        Method::POST,
        "/api/am/publisher/v1/apis",
        Auth::Basic("pub"),
        Some(api(n)),
    )
    .await
}

fn assert_outage(r: &Resp, code: &str) {
    assert_eq!(r.status, 503, "{}", r.json);
    assert_eq!(r.json["code"], code, "{}", r.json);
    assert_eq!(r.headers["retry-after"], "5");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_disk_answers_503_and_writes_recover_when_space_is_back() {
    let cp = control_plane(false).await;
    assert_eq!(create(&cp, 0).await.status, 201);
    cp.state
        .store()
        .cap_pages_for_tests(Some(0))
        .await
        .expect("cap");
    // Enough failed writes to pass through every pooled connection.
    let mut full = 0;
    for n in 1..=12 {
        let r = create(&cp, n).await;
        if r.status != 201 {
            assert_outage(&r, "store_full");
            full += 1;
        }
    }
    assert!(full >= 8, "only {full} of 12 writes hit the full disk");
    let ready = cp.call(Method::GET, "/ready", Auth::None, None).await;
    assert_outage(&ready, "store_full");
    let reads = cp
        .call(
            Method::GET,
            "/api/am/publisher/v1/apis",
            Auth::Basic("pub"),
            None,
        )
        .await;
    assert_eq!(reads.status, 200, "reads keep working: {}", reads.json);

    cp.state
        .store()
        .cap_pages_for_tests(None)
        .await
        .expect("uncap");
    for n in 13..=24 {
        let r = create(&cp, n).await;
        assert_eq!(r.status, 201, "write {n} after space came back: {}", r.json);
    }
    let ready = cp.call(Method::GET, "/ready", Auth::None, None).await;
    assert_eq!(ready.status, 200, "{}", ready.json);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_down_fails_fast_with_503_and_recovers_without_a_restart() {
    let cp = control_plane_on_postgres().await;
    let TestDbs::Postgres { server, .. } = &cp.dbs else {
        panic!("not PostgreSQL");
    };
    assert_eq!(create(&cp, 0).await.status, 201);
    assert_eq!(
        cp.call(Method::GET, "/ready", Auth::None, None)
            .await
            .status,
        200
    );
    server.stop();

    let started = Instant::now();
    let r = cp
        .call(
            Method::GET,
            "/api/am/publisher/v1/apis",
            Auth::Basic("pub"),
            None,
        )
        .await;
    let took = started.elapsed();
    assert_outage(&r, "store_unavailable");
    eprintln!("REST read with PostgreSQL down answered 503 in {took:?}");
    assert!(took < Duration::from_secs(10), "took {took:?}");
    let started = Instant::now();
    assert_outage(&create(&cp, 1).await, "store_unavailable");
    eprintln!(
        "REST write with PostgreSQL down answered 503 in {:?}",
        started.elapsed()
    );
    // The token endpoint says the same in OAuth2 terms.
    let started = Instant::now();
    let token = cp
        .token_form(
            &[
                ("grant_type", "password"),
                ("client_id", "turnpike-cli"),
                ("username", "pub"),
                ("password", km_support::PASSWORD),
            ],
            None,
        )
        .await;
    assert_eq!(token.status, 503, "{}", token.json);
    assert_eq!(token.json["error"], "temporarily_unavailable");
    assert_eq!(token.headers["retry-after"], "5");
    eprintln!(
        "password grant with PostgreSQL down answered 503 in {:?}",
        started.elapsed()
    );
    // What lives in memory is still served.
    for path in ["/oauth2/jwks", "/.well-known/openid-configuration"] {
        let r = cp.call(Method::GET, path, Auth::None, None).await;
        assert_eq!(r.status, 200, "{path}: {}", r.json);
    }
    assert_outage(
        &cp.call(Method::GET, "/ready", Auth::None, None).await,
        "store_unavailable",
    );

    server.start_again();
    let started = Instant::now();
    loop {
        let r = create(&cp, 2).await;
        if r.status == 201 {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "no recovery: {}",
            r.json
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    eprintln!("recovered {:?} after PostgreSQL started", started.elapsed());
    let r = cp
        .call(
            Method::GET,
            "/api/am/publisher/v1/apis",
            Auth::Basic("pub"),
            None,
        )
        .await;
    assert_eq!(r.status, 200);
    assert_eq!(
        cp.call(Method::GET, "/ready", Auth::None, None)
            .await
            .status,
        200
    );
}
