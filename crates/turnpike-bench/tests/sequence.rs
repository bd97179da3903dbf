//! `{seq}` in `--url`: every request of a run carries a value no other request carried
//! (closed loop on the kit's own HTTP/1.1, open loop, hyper's HTTP/1.1 and h2c), in the
//! place of the placeholder; a placeholder outside the path and query is refused before
//! any load. A small server on 127.0.0.1:0 records every request's path and query.

use std::collections::HashSet;
use std::convert::Infallible;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http::{Request, Response};
use http_body_util::Full;
use hyper::body::Incoming;
use turnpike_bench::run::{execute, RunArgs};

mod support;

type Seen = Arc<Mutex<Vec<String>>>;

async fn server() -> (std::net::SocketAddr, Seen) {
    let seen: Seen = Arc::default();
    let s = seen.clone();
    let addr = support::serve(move |req: Request<Incoming>| {
        let s = s.clone();
        async move {
            let pq = req.uri().path_and_query().map_or("", |p| p.as_str());
            if let Ok(mut v) = s.lock() {
                v.push(pq.to_owned());
            }
            Ok::<_, Infallible>(Response::new(Full::new(Bytes::from_static(b"ok"))))
        }
    })
    .await;
    (addr, seen)
}

fn args(url: String) -> RunArgs {
    let mut a = RunArgs::closed(url, 3, Duration::from_millis(300), Duration::ZERO);
    a.threads = Some(2);
    a
}

/// Every path the server saw is `/items/<value>/detail?size=50`, each value new.
fn assert_each_unique(seen: &Seen, answered: u64) {
    let paths = seen.lock().expect("lock").clone();
    assert!(answered > 10, "only {answered} requests answered");
    assert!(
        paths.len() as u64 >= answered,
        "{} seen, {answered} answered",
        paths.len()
    );
    let mut values = HashSet::new();
    for p in &paths {
        let value = p
            .strip_prefix("/items/")
            .and_then(|r| r.strip_suffix("/detail?size=50"))
            .unwrap_or_else(|| panic!("unexpected path {p}"));
        let (run, n) = value
            .split_once('-')
            .unwrap_or_else(|| panic!("value {value}"));
        assert!(
            !run.is_empty() && run.bytes().all(|b| b.is_ascii_digit()) && n.parse::<u64>().is_ok(),
            "value {value}"
        );
        assert!(values.insert(value.to_owned()), "{value} sent twice");
    }
}

/// Runs `change(args)` against a new server: no errors, every value its own.
async fn run_unique(change: impl FnOnce(&mut RunArgs)) {
    let (addr, seen) = server().await;
    let mut a = args(format!("http://{addr}/items/{{seq}}/detail?size=50"));
    change(&mut a);
    let r = execute(&a).await.expect("run");
    assert_eq!(r.summary.errors, 0, "{a:?}: {:?}", r.summary);
    assert_each_unique(&seen, r.summary.samples);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_request_of_a_closed_loop_has_its_own_value() {
    run_unique(|_| {}).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_request_of_an_open_loop_has_its_own_value() {
    run_unique(|a| {
        a.users = None;
        a.rate = Some(300.0);
        a.connections = 3;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hyper_clients_put_the_value_in_the_uri_too() {
    for http2 in [false, true] {
        run_unique(|a| {
            a.http2 = http2;
            a.hyper_h1 = !http2;
        })
        .await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_placeholder_in_the_host_is_refused_before_any_load() {
    let (addr, seen) = server().await;
    let err = execute(&args(format!("http://{{seq}}.{addr}/x")))
        .await
        .expect_err("refused");
    assert!(err.to_string().contains("path or query"), "{err}");
    assert!(seen.lock().expect("lock").is_empty());
}
