//! `--body-file`: every request carries the file's bytes as they are, POST unless a
//! method is given, in closed and open loops. A small server on 127.0.0.1:0 records
//! what each request brought.

use std::collections::BTreeSet;
use std::convert::Infallible;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http::{Request, Response};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use turnpike_bench::run::{execute, RunArgs};

mod support;

/// (method, content-type, body) of every request the server saw.
type Seen = Arc<Mutex<BTreeSet<(String, String, Vec<u8>)>>>;

async fn handle(req: Request<Incoming>, seen: Seen) -> Result<Response<Full<Bytes>>, Infallible> {
    let method = req.method().to_string();
    let content_type = req
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_owned();
    let body = req
        .into_body()
        .collect()
        .await
        .map(|b| b.to_bytes().to_vec())
        .unwrap_or_default();
    if let Ok(mut s) = seen.lock() {
        s.insert((method, content_type, body));
    }
    Ok(Response::new(Full::new(Bytes::from_static(b"ok"))))
}

async fn server() -> (String, Seen) {
    let seen: Seen = Arc::default();
    let s = seen.clone();
    let addr = support::serve(move |req| handle(req, s.clone())).await;
    (format!("http://{addr}/mcp"), seen)
}

const CALL: &[u8] = br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"getPet","arguments":{"petId":7}}}"#;

fn args(url: String, file: std::path::PathBuf) -> RunArgs {
    let mut a = RunArgs::closed(url, 2, Duration::from_millis(300), Duration::ZERO);
    a.threads = Some(1);
    a.body_file = Some(file);
    a.headers = vec!["Content-Type: application/json".into()];
    a
}

fn body_file() -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().expect("tmp");
    let file = dir.path().join("call.json");
    std::fs::write(&file, CALL).expect("body");
    (dir, file)
}

fn expected(method: &str) -> BTreeSet<(String, String, Vec<u8>)> {
    BTreeSet::from([(method.into(), "application/json".into(), CALL.to_vec())])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_request_of_a_closed_loop_posts_the_files_bytes() {
    let (url, seen) = server().await;
    let (_dir, file) = body_file();
    let r = execute(&args(url, file)).await.expect("run");
    assert!(
        r.summary.samples > 0 && r.summary.errors == 0,
        "{:?}",
        r.summary
    );
    assert_eq!(r.method, "POST");
    assert_eq!(*seen.lock().expect("lock"), expected("POST"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_open_loop_with_a_method_sends_the_same_bytes_with_it() {
    let (url, seen) = server().await;
    let (_dir, file) = body_file();
    let mut a = args(url, file);
    a.users = None;
    a.rate = Some(200.0);
    a.connections = 2;
    a.method = Some("put".into());
    let r = execute(&a).await.expect("run");
    assert!(
        r.summary.samples > 0 && r.summary.errors == 0,
        "{:?}",
        r.summary
    );
    assert_eq!(*seen.lock().expect("lock"), expected("PUT"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_file_is_refused_before_any_load() {
    let (url, seen) = server().await;
    let dir = tempfile::tempdir().expect("tmp");
    let missing = dir.path().join("nope.json");
    let err = execute(&args(url, missing.clone()))
        .await
        .expect_err("refused");
    assert!(
        err.to_string().contains(&missing.display().to_string()),
        "{err}"
    );
    assert!(seen.lock().expect("lock").is_empty());
}
