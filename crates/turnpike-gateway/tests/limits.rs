//! Connection caps over real sockets: past the global cap a new connection gets a JSON
//! `503 too_many_connections` and is closed; past the per-IP cap, `429
//! too_many_client_connections`; a place freed by a closed connection is taken again.

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
