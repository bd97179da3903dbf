//! Secured targets: one token by OAuth2 client credentials, or a pool of tokens cycled
//! over requests, each sent as `Authorization: Bearer …`. A small server on 127.0.0.1:0
//! plays both the token endpoint and the API.

use std::collections::BTreeSet;
use std::convert::Infallible;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http::{Request, Response, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use turnpike_bench::run::{execute, RunArgs};

mod support;

type Seen = Arc<Mutex<BTreeSet<String>>>;

async fn handle(req: Request<Incoming>, seen: Seen) -> Result<Response<Full<Bytes>>, Infallible> {
    let auth = req
        .headers()
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_owned();
    let reply = |status: StatusCode, body: &'static str| {
        let mut r = Response::new(Full::new(Bytes::from_static(body.as_bytes())));
        *r.status_mut() = status;
        Ok(r)
    };
    if req.uri().path() == "/token" {
        let body = req
            .into_body()
            .collect()
            .await
            .map(|b| b.to_bytes())
            .unwrap_or_default();
        // base64("bench:s3cret") = YmVuY2g6czNjcmV0
        if auth == "Basic YmVuY2g6czNjcmV0" && &body[..] == b"grant_type=client_credentials" {
            return reply(
                StatusCode::OK,
                r#"{"access_token":"tok-cc","token_type":"Bearer"}"#,
            );
        }
        return reply(StatusCode::UNAUTHORIZED, r#"{"error":"invalid_client"}"#);
    }
    if let Some(token) = auth.strip_prefix("Bearer ") {
        if let Ok(mut s) = seen.lock() {
            s.insert(token.to_owned());
        }
        return reply(StatusCode::OK, "ok");
    }
    reply(StatusCode::UNAUTHORIZED, "no token")
}

async fn server() -> (String, Seen) {
    let seen: Seen = Arc::default();
    let s = seen.clone();
    let addr = support::serve(move |req| handle(req, s.clone())).await;
    (format!("http://{addr}"), seen)
}

fn args(base: &str) -> RunArgs {
    let mut a = RunArgs::closed(
        format!("{base}/api"),
        2,
        Duration::from_millis(300),
        Duration::ZERO,
    );
    a.threads = Some(1);
    a
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_credentials_token_is_sent_on_every_request() {
    let (base, seen) = server().await;
    let mut a = args(&base);
    a.token_url = Some(format!("{base}/token"));
    a.client_id = Some("bench".into());
    a.client_secret = Some("s3cret".into());
    let r = execute(&a).await.expect("run");
    assert!(
        r.summary.samples > 0 && r.summary.errors == 0,
        "{:?}",
        r.summary
    );
    let seen = seen.lock().expect("lock").clone();
    assert_eq!(seen, BTreeSet::from(["tok-cc".to_owned()]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wrong_client_secret_fails_before_any_load() {
    let (base, seen) = server().await;
    let mut a = args(&base);
    a.token_url = Some(format!("{base}/token"));
    a.client_id = Some("bench".into());
    a.client_secret = Some("wrong".into());
    let err = execute(&a).await.expect_err("refused");
    assert!(err.to_string().contains("401"), "{err}");
    assert!(seen.lock().expect("lock").is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn token_pool_is_cycled() {
    let (base, seen) = server().await;
    let dir = tempfile::tempdir().expect("tmp");
    let file = dir.path().join("tokens.txt");
    std::fs::write(&file, "t1\nt2\n\nt3\n").expect("tokens");
    let mut a = args(&base);
    a.tokens = Some(file);
    let r = execute(&a).await.expect("run");
    assert!(r.summary.samples >= 3 && r.summary.errors == 0);
    let seen = seen.lock().expect("lock").clone();
    assert_eq!(
        seen,
        BTreeSet::from(["t1".into(), "t2".into(), "t3".into()])
    );
}
