//! Opaque tokens: introspection at a live key manager, the caches (positive, negative,
//! bounded by `exp` and by the 15-minute default), single-flight under a burst, and
//! basic auth's pending path.

mod support;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use axum::extract::State;
use support::*;
use turnpike_auth::*;

fn introspector(endpoint: &str, clock: Arc<dyn Clock>) -> Introspector {
    let cfg = IntrospectionConfig::new(endpoint.parse().expect("uri"), "gateway", SECRET);
    Introspector::new(cfg, clock).expect("introspector")
}

#[derive(Clone)]
struct Mock {
    calls: Arc<AtomicUsize>,
    gate: tokio::sync::watch::Receiver<bool>,
    now: u64,
}

async fn mock_introspect(State(m): State<Mock>, body: String) -> axum::Json<serde_json::Value> {
    m.calls.fetch_add(1, Ordering::SeqCst);
    let mut gate = m.gate.clone();
    let _ = gate.wait_for(|open| *open).await;
    let token = form_urlencoded::parse(body.as_bytes())
        .find(|(k, _)| k == "token")
        .map(|(_, v)| v.into_owned())
        .unwrap_or_default();
    let exp = match token.as_str() {
        "short" => m.now + 5,
        _ => m.now + 3600,
    };
    axum::Json(match token.as_str() {
        "bad" => serde_json::json!({"active": false}),
        _ => serde_json::json!({
            "active": true, "sub": "u1", "client_id": "c1", "application": "app-x",
            "scope": "read", "exp": exp, "jti": format!("jti-{token}"),
        }),
    })
}

/// A counting introspection endpoint that answers only once `gate` is opened.
async fn start_mock(
    now: u64,
    open: bool,
) -> (String, Arc<AtomicUsize>, tokio::sync::watch::Sender<bool>) {
    let (tx, rx) = tokio::sync::watch::channel(open);
    let calls = Arc::new(AtomicUsize::new(0));
    let app = axum::Router::new()
        .route("/introspect", axum::routing::post(mock_introspect))
        .with_state(Mock {
            calls: calls.clone(),
            gate: rx,
            now,
        });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let url = format!("http://{}/introspect", listener.local_addr().expect("addr"));
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    (url, calls, tx)
}

#[tokio::test]
async fn opaque_tokens_are_introspected_at_the_keymanager_and_cached() {
    let km = start_km().await;
    let token = km.token("opaque1", Some("read")).await;
    assert!(!token.contains('.'));
    let revocations = Arc::new(Revocations::default());
    let intro = Arc::new(introspector(
        &format!("{}/oauth2/introspect", km.base),
        Arc::new(SystemClock),
    ));
    let auth = Authenticator {
        introspector: Some(intro.clone()),
        revocations: revocations.clone(),
        ..Default::default()
    };
    assert!(
        matches!(auth.check(&bearer(&token)), Check::Pending(_)),
        "first sight needs a call"
    );
    let id = auth.authenticate(&bearer(&token)).await.expect("active");
    assert_eq!(id.kind, CredentialKind::Opaque);
    assert_eq!(id.application_id.as_deref(), Some("app-opaque1"));
    assert_eq!(id.scopes, vec!["read"]);
    assert!(
        matches!(auth.check(&bearer(&token)), Check::Done(Ok(_))),
        "then served from memory"
    );
    // Revoked at the key manager: the cached entry is refused once the list arrives.
    let jti = id.token_id.clone().expect("jti");
    revocations.replace([String::from(jti)]);
    assert_eq!(
        auth.authenticate(&bearer(&token)).await.err(),
        Some(AuthError::Revoked)
    );
    // Unknown tokens are inactive (and negatively cached).
    let err = auth.authenticate(&bearer("not-a-real-token")).await.err();
    assert_eq!(
        err,
        Some(AuthError::InvalidToken("the token is not active"))
    );
    assert!(matches!(
        auth.check(&bearer("not-a-real-token")),
        Check::Done(Err(_))
    ));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_burst_of_one_unknown_token_makes_one_call() {
    let (url, calls, gate) = start_mock(now(), false).await;
    let intro = Arc::new(introspector(&url, Arc::new(SystemClock)));
    let revocations = Arc::new(Revocations::default());
    let started = Arc::new(AtomicUsize::new(0));
    let mut tasks = Vec::new();
    for _ in 0..100 {
        let (intro, revocations, started) = (intro.clone(), revocations.clone(), started.clone());
        tasks.push(tokio::spawn(async move {
            started.fetch_add(1, Ordering::SeqCst);
            intro.validate("burst-token", &revocations).await
        }));
    }
    // Hold the answer until every request has asked and the one call has arrived.
    while started.load(Ordering::SeqCst) < 100 || calls.load(Ordering::SeqCst) < 1 {
        tokio::task::yield_now().await;
    }
    gate.send_replace(true);
    let mut ids = Vec::new();
    for t in tasks {
        ids.push(t.await.expect("join").expect("active"));
    }
    assert_eq!(
        calls.load(Ordering::SeqCst),
        1,
        "one introspection for 100 requests"
    );
    assert!(ids.iter().all(|id| Arc::ptr_eq(id, &ids[0])));
    assert!(intro.validate("burst-token", &revocations).await.is_ok());
    assert_eq!(
        calls.load(Ordering::SeqCst),
        1,
        "later requests hit the cache"
    );
    assert_eq!(intro.in_flight(), 0);
}

#[tokio::test]
async fn an_abandoned_call_leaves_no_flight_behind() {
    let (url, calls, gate) = start_mock(now(), false).await;
    let intro = Arc::new(introspector(&url, Arc::new(SystemClock)));
    let revocations = Arc::new(Revocations::default());
    let task = {
        let (intro, revocations) = (intro.clone(), revocations.clone());
        tokio::spawn(async move { intro.validate("gone", &revocations).await })
    };
    while calls.load(Ordering::SeqCst) < 1 {
        tokio::task::yield_now().await;
    }
    assert_eq!(intro.in_flight(), 1);
    task.abort();
    let _ = task.await;
    assert_eq!(
        intro.in_flight(),
        0,
        "the client went away: the flight is dropped"
    );
    gate.send_replace(true);
}

#[tokio::test]
async fn inactive_tokens_are_negatively_cached() {
    let (url, calls, _gate) = start_mock(now(), true).await;
    let intro = introspector(&url, Arc::new(SystemClock));
    let revocations = Revocations::default();
    for _ in 0..5 {
        assert!(matches!(
            intro.validate("bad", &revocations).await,
            Err(AuthError::InvalidToken(_))
        ));
    }
    assert_eq!(calls.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn cache_entries_never_outlive_the_token_or_fifteen_minutes() {
    let start = now();
    let (url, calls, _gate) = start_mock(start, true).await;
    let clock = Arc::new(ManualClock::at_secs(start));
    let intro = introspector(&url, clock.clone());
    let revocations = Revocations::default();
    intro.validate("short", &revocations).await.expect("active");
    intro.validate("long", &revocations).await.expect("active");
    assert_eq!(calls.load(Ordering::SeqCst), 2);
    clock.advance(std::time::Duration::from_secs(6));
    assert!(
        intro.peek("short", &revocations).is_none(),
        "expired with the token"
    );
    assert!(intro.peek("long", &revocations).is_some());
    clock.advance(std::time::Duration::from_secs(15 * 60));
    assert!(
        intro.peek("long", &revocations).is_none(),
        "15-minute default TTL"
    );
}

#[tokio::test]
async fn an_unreachable_introspection_endpoint_is_503_and_not_cached() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let url = format!("http://{}/introspect", listener.local_addr().expect("addr"));
    drop(listener);
    let intro = introspector(&url, Arc::new(SystemClock));
    let revocations = Revocations::default();
    let err = intro.validate("t", &revocations).await.expect_err("down");
    assert_eq!(
        (err.status().as_u16(), err.code()),
        (503, "auth_unavailable")
    );
    assert!(intro.peek("t", &revocations).is_none());
}

#[tokio::test]
async fn basic_auth_is_pending_once_then_answered_from_cache() {
    use argon2::password_hash::{PasswordHasher, SaltString};
    let params = argon2::Params::new(8, 1, 1, None).expect("params");
    let argon = argon2::Argon2::new(argon2::Algorithm::Argon2id, argon2::Version::V0x13, params);
    let salt = SaltString::generate(&mut rand::rngs::OsRng);
    let phc = argon.hash_password(b"pw", &salt).expect("hash").to_string();
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    let basic = BasicValidator::new(
        [BasicUser {
            username: "bob".into(),
            password_hash: phc,
            scopes: vec![],
            application_id: Some("app-b".into()),
        }],
        Arc::new(TokenCache::new(16 << 20, clock.clone())),
        60,
        clock,
    );
    let auth = Authenticator {
        basic: Some(Arc::new(basic)),
        ..Default::default()
    };
    let good = head("/x", &[("authorization", "Basic Ym9iOnB3")]);
    assert!(matches!(auth.check(&good), Check::Pending(_)));
    assert_eq!(&*auth.authenticate(&good).await.expect("ok").subject, "bob");
    assert!(matches!(auth.check(&good), Check::Done(Ok(_))));
    let bad = head("/x", &[("authorization", "Basic Ym9iOng=")]);
    assert_eq!(
        auth.authenticate(&bad).await.err(),
        Some(AuthError::InvalidBasic)
    );
    let err = auth
        .authenticate(&head("/x", &[("authorization", "Basic %%%")]))
        .await
        .err();
    assert_eq!(err.map(|e| e.code()), Some("malformed_credentials"));
}
