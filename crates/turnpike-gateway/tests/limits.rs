//! Connection caps over real sockets: past the global cap a new connection gets a JSON
//! `503 too_many_connections` and is closed; past the per-IP cap, `429
//! too_many_client_connections`; a place freed by a closed connection is taken again.
//! Upstream side: one endpoint never gets more than `max_upstream_connections`; a
//! request past it waits for a connection to come back, and gets `503 upstream_busy`
//! when none does within the API's connect timeout.

mod support;

use std::time::{Duration, Instant};

use support::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Sends one GET on a new connection and returns everything read until the close.
async fn one_request(addr: std::net::SocketAddr, path: &str) -> String {
    let mut s = TcpStream::connect(addr).await.expect("connect");
    let req = format!("GET {path} HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n");
    s.write_all(req.as_bytes()).await.expect("write");
    let mut buf = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(10), s.read_to_end(&mut buf)).await;
    assert!(read.is_ok(), "the gateway must answer or close");
    String::from_utf8_lossy(&buf).into_owned()
}

/// Opens a connection that completes one keep-alive request and stays open.
async fn held(addr: std::net::SocketAddr, path: &str) -> TcpStream {
    let mut s = TcpStream::connect(addr).await.expect("connect");
    let req = format!("GET {path} HTTP/1.1\r\nHost: t\r\n\r\n");
    s.write_all(req.as_bytes()).await.expect("write");
    let mut buf = [0u8; 4096];
    let n = s.read(&mut buf).await.expect("read");
    assert!(
        buf[..n].starts_with(b"HTTP/1.1 200"),
        "{:?}",
        String::from_utf8_lossy(&buf[..n])
    );
    s
}

fn body_code(answer: &str) -> serde_json::Value {
    let body = answer.split_once("\r\n\r\n").map_or("", |(_, b)| b);
    let v: serde_json::Value = serde_json::from_str(body).unwrap_or_default();
    v["code"].clone()
}

#[tokio::test]
async fn past_the_global_cap_a_connection_gets_503_and_a_freed_place_is_reused() {
    let up = echo().await;
    let gw = gateway_with(&config(&[api("c", &[http(up)], "")]), |s| {
        s.max_connections = 2;
    })
    .await;
    let a = held(gw.http, "/c/v1/a").await;
    let _b = held(gw.http, "/c/v1/b").await;
    let refused = one_request(gw.http, "/c/v1/c").await;
    assert!(refused.starts_with("HTTP/1.1 503"), "{refused}");
    assert_eq!(body_code(&refused), "too_many_connections", "{refused}");
    assert!(refused.to_ascii_lowercase().contains("retry-after: 1"));

    drop(a);
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let answer = one_request(gw.http, "/c/v1/d").await;
        if answer.starts_with("HTTP/1.1 200") {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the freed place never came back: {answer}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The outside test opened 20,000 connections past the cap: only the first 256 refusals
/// at a time were answered, the rest closed or reset. Every refusal gets its 503, even
/// while a thousand refused clients keep their sockets open.
#[tokio::test]
async fn every_connection_past_the_cap_gets_the_503_not_only_the_first_256() {
    const REFUSED: usize = 1_000;
    turnpike_gateway::raise_fd_limit();
    let up = echo().await;
    let gw = gateway_with(&config(&[api("c", &[http(up)], "")]), |s| {
        s.max_connections = 1;
    })
    .await;
    let _held = held(gw.http, "/c/v1/a").await;
    let mut clients = Vec::with_capacity(REFUSED);
    for _ in 0..REFUSED {
        let addr = gw.http;
        clients.push(tokio::spawn(async move {
            let mut s = TcpStream::connect(addr).await.expect("connect");
            let _ = s
                .write_all(b"GET /c/v1/x HTTP/1.1\r\nHost: t\r\n\r\n")
                .await;
            let mut buf = Vec::new();
            let _ = tokio::time::timeout(Duration::from_secs(10), s.read_to_end(&mut buf)).await;
            // Kept open until every client read: the refused sockets all wait at once.
            (s, String::from_utf8_lossy(&buf).into_owned())
        }));
    }
    let mut answered = 0;
    let mut sockets = Vec::with_capacity(REFUSED);
    let mut other = None;
    for c in clients {
        let (s, answer) = c.await.expect("client task");
        sockets.push(s);
        if answer.starts_with("HTTP/1.1 503") && body_code(&answer) == "too_many_connections" {
            answered += 1;
        } else {
            other.get_or_insert(answer);
        }
    }
    assert_eq!(answered, REFUSED, "first other answer: {other:?}");
}

#[tokio::test]
async fn past_the_per_ip_cap_a_connection_gets_429() {
    let up = echo().await;
    let gw = gateway_with(&config(&[api("c", &[http(up)], "")]), |s| {
        s.max_connections_per_ip = 1;
    })
    .await;
    let _a = held(gw.http, "/c/v1/a").await;
    let refused = one_request(gw.http, "/c/v1/b").await;
    assert!(refused.starts_with("HTTP/1.1 429"), "{refused}");
    assert_eq!(body_code(&refused), "too_many_client_connections");
}

#[tokio::test]
async fn an_endpoint_gets_at_most_its_connection_cap_then_503_upstream_busy() {
    let mut up = holding().await;
    let extra = "    timeouts: { connect: 400ms, response: 20s }\n";
    let gw = gateway_with(&config(&[api("u", &[http(up.addr)], extra)]), |s| {
        s.max_upstream_connections = 2;
    })
    .await;
    let c = client();
    let send = |path: &'static str| {
        let c = c.clone();
        let url = gw.url(path);
        tokio::spawn(async move { c.get(url).send().await.map(|r| r.status().as_u16()) })
    };
    let first = send("/u/v1/a");
    let second = send("/u/v1/b");
    for _ in 0..2 {
        tokio::time::timeout(Duration::from_secs(10), up.arrivals.recv())
            .await
            .expect("both reach the upstream");
    }
    // Both connections busy: the third waits the connect timeout, then 503.
    let resp = c.get(gw.url("/u/v1/c")).send().await.expect("answer");
    assert_eq!(resp.status(), 503);
    let body = error_body(resp).await;
    assert_eq!(body["code"], "upstream_busy", "{body}");
    assert!(
        up.arrivals.try_recv().is_err(),
        "a third connection reached the upstream"
    );

    // A waiting request takes the first connection that comes back.
    let third = send("/u/v1/d");
    tokio::time::sleep(Duration::from_millis(100)).await;
    up.release.notify_waiters();
    assert_eq!(first.await.expect("join").expect("first"), 200);
    assert_eq!(second.await.expect("join").expect("second"), 200);
    tokio::time::timeout(Duration::from_secs(10), up.arrivals.recv())
        .await
        .expect("the waiting request reaches the upstream");
    tokio::time::sleep(Duration::from_millis(100)).await;
    up.release.notify_waiters();
    assert_eq!(third.await.expect("join").expect("third"), 200);
}
