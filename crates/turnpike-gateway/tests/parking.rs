//! Parked connections over real sockets (`park.rs`): an idle HTTP/1.1 keep-alive
//! connection gives up hyper's buffers and serves its next request as before; a request
//! in flight, a response the client is slow to read, and a request head split by a pause
//! all survive; the header-read deadline holds across parks (a client dribbling a head
//! still gets 408); a parked connection closes at the header-read timeout and at once on
//! a drain.

mod support;

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use support::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpSocket, TcpStream};

const PARK: Duration = Duration::from_millis(100);

async fn parking_gateway(
    up: SocketAddr,
    tweak: impl FnOnce(&mut turnpike_gateway::ServerSettings),
) -> TestGateway {
    gateway_with(&config(&[api("p", &[http(up)], "")]), |s| {
        s.park_after = PARK;
        tweak(s);
    })
    .await
}

/// Reads one response (head and a `Content-Length` body): (head, body).
async fn response(s: &mut TcpStream) -> (String, Vec<u8>) {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 16 * 1024];
    let head_end = loop {
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
        let n = tokio::time::timeout(Duration::from_secs(10), s.read(&mut chunk))
            .await
            .expect("a response in time")
            .expect("read");
        assert!(
            n > 0,
            "closed before a whole head: {:?}",
            String::from_utf8_lossy(&buf)
        );
        buf.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
    let len: usize = head
        .lines()
        .find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.eq_ignore_ascii_case("content-length")
                .then(|| v.trim().parse().ok())?
        })
        .unwrap_or(0);
    let mut body = buf[head_end..].to_vec();
    while body.len() < len {
        let n = tokio::time::timeout(Duration::from_secs(10), s.read(&mut chunk))
            .await
            .expect("the body in time")
            .expect("read");
        assert!(n > 0, "closed after {} of {len} body bytes", body.len());
        body.extend_from_slice(&chunk[..n]);
    }
    (head, body)
}

async fn get(s: &mut TcpStream, path: &str) -> (String, Vec<u8>) {
    let req = format!("GET {path} HTTP/1.1\r\nHost: t\r\n\r\n");
    s.write_all(req.as_bytes()).await.expect("write");
    response(s).await
}

/// Waits until the gateway counts `n` parked connections (or fails after 5 s).
async fn until_parked(gw: &TestGateway, n: usize) {
    let t0 = Instant::now();
    while gw.handle.connections.parked() != n {
        assert!(
            t0.elapsed() < Duration::from_secs(5),
            "parked: {} (want {n})",
            gw.handle.connections.parked()
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Bytes arriving before `within`, or `None` when the peer closed.
async fn closed_within(s: &mut TcpStream, within: Duration) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    let read = tokio::time::timeout(within, s.read_to_end(&mut out)).await;
    read.ok().map(|_| out)
}

#[tokio::test]
async fn an_idle_connection_is_parked_and_serves_its_next_request() {
    let up = inspect("up").await;
    let gw = parking_gateway(up, |_| {}).await;
    let mut s = TcpStream::connect(gw.http).await.expect("connect");
    // A new connection waits for its first bytes parked.
    until_parked(&gw, 1).await;
    let (head, _) = get(&mut s, "/p/v1/one").await;
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    // Idle for a whole period: parked again (hyper's connection is gone).
    until_parked(&gw, 1).await;
    for i in 0..3 {
        let (head, body) = get(&mut s, &format!("/p/v1/again{i}")).await;
        assert!(head.starts_with("HTTP/1.1 200"), "{head}");
        let seen: serde_json::Value = serde_json::from_slice(&body).expect("json");
        assert_eq!(seen["path"], format!("/again{i}"));
        until_parked(&gw, 1).await;
    }
    assert_eq!(gw.handle.connections.open(), 1, "one connection all along");
}

#[tokio::test]
async fn a_request_in_flight_is_not_parked() {
    let up = echo_delayed(Duration::from_millis(800)).await;
    let gw = parking_gateway(up, |_| {}).await;
    let mut s = TcpStream::connect(gw.http).await.expect("connect");
    s.write_all(b"GET /p/v1/slow HTTP/1.1\r\nHost: t\r\n\r\n")
        .await
        .expect("write");
    tokio::time::sleep(Duration::from_millis(50)).await;
    let t0 = Instant::now();
    while t0.elapsed() < Duration::from_millis(500) {
        assert_eq!(
            gw.handle.connections.parked(),
            0,
            "parked with a request in flight"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let (head, _) = response(&mut s).await;
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
}

#[tokio::test]
async fn a_response_the_client_is_slow_to_read_arrives_whole() {
    let up = echo().await;
    let gw = parking_gateway(up, |_| {}).await;
    // A small receive window: most of the answer waits in the gateway while we pause.
    let sock = TcpSocket::new_v4().expect("socket");
    sock.set_recv_buffer_size(4096).expect("rcvbuf");
    let mut s = sock.connect(gw.http).await.expect("connect");
    for size in [100_000usize, 2_000_000] {
        let req = format!("GET /p/v1/big?size={size} HTTP/1.1\r\nHost: t\r\n\r\n");
        s.write_all(req.as_bytes()).await.expect("write");
        tokio::time::sleep(PARK * 8).await;
        let (head, body) = response(&mut s).await;
        assert!(head.starts_with("HTTP/1.1 200"), "{head}");
        assert_eq!(body.len(), size, "the whole body after a pause");
    }
}

#[tokio::test]
async fn a_request_head_split_by_a_park_is_completed() {
    let up = inspect("up").await;
    let gw = parking_gateway(up, |_| {}).await;
    let mut s = TcpStream::connect(gw.http).await.expect("connect");
    s.write_all(b"GET /p/v1/split HTTP/1.1\r\nHost: t\r\nX-First: 1\r\n")
        .await
        .expect("write");
    tokio::time::sleep(PARK * 2).await;
    until_parked(&gw, 1).await;
    s.write_all(b"X-Second: 2\r\n\r\n").await.expect("write");
    let (head, body) = response(&mut s).await;
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    let seen: serde_json::Value = serde_json::from_slice(&body).expect("json");
    assert_eq!(seen["path"], "/split");
    assert_eq!(seen["headers"]["x-first"], "1");
    assert_eq!(seen["headers"]["x-second"], "2");
}

#[tokio::test]
async fn a_head_dribbled_across_parks_still_gets_408_at_the_header_read_timeout() {
    let up = echo().await;
    let gw = parking_gateway(up, |s| s.header_read_timeout = Duration::from_secs(1)).await;
    let mut s = TcpStream::connect(gw.http).await.expect("connect");
    let t0 = Instant::now();
    s.write_all(b"GET /p/v1/slow HTTP/1.1\r\nX-Slow: ")
        .await
        .expect("write");
    // One byte every three periods: parked between bytes, never a whole head.
    let mut answer = Vec::new();
    while t0.elapsed() < Duration::from_secs(6) {
        tokio::time::sleep(PARK * 3).await;
        if s.write_all(b"a").await.is_err() {
            break;
        }
        let mut buf = [0u8; 4096];
        if let Ok(Ok(n)) = tokio::time::timeout(Duration::from_millis(1), s.read(&mut buf)).await {
            answer.extend_from_slice(&buf[..n]);
            if n == 0 || answer.windows(4).any(|w| w == b"\r\n\r\n") {
                break;
            }
        }
    }
    if let Some(rest) = closed_within(&mut s, Duration::from_secs(2)).await {
        answer.extend_from_slice(&rest);
    }
    let answer = String::from_utf8_lossy(&answer);
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer:?}");
    assert!(
        t0.elapsed() < Duration::from_millis(2500),
        "408 after {:?}: the deadline did not hold across parks",
        t0.elapsed()
    );
}

#[tokio::test]
async fn a_parked_connection_closes_at_the_header_read_timeout() {
    let up = echo().await;
    let gw = parking_gateway(up, |s| s.header_read_timeout = Duration::from_secs(1)).await;
    let mut s = TcpStream::connect(gw.http).await.expect("connect");
    let (head, _) = get(&mut s, "/p/v1/x").await;
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    until_parked(&gw, 1).await;
    let rest = closed_within(&mut s, Duration::from_secs(3)).await;
    assert_eq!(
        rest.as_deref(),
        Some(&b""[..]),
        "an idle connection just closes"
    );
    until_parked(&gw, 0).await;
}

#[tokio::test]
async fn a_drain_closes_parked_connections_at_once() {
    let up = echo().await;
    let gw = parking_gateway(up, |s| s.drain_timeout = Duration::from_secs(30)).await;
    let mut s = TcpStream::connect(gw.http).await.expect("connect");
    let (head, _) = get(&mut s, "/p/v1/x").await;
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    until_parked(&gw, 1).await;
    let t0 = Instant::now();
    tokio::time::timeout(Duration::from_secs(5), gw.handle.shutdown())
        .await
        .expect("the drain does not wait for parked connections")
        .expect("clean shutdown");
    assert!(t0.elapsed() < Duration::from_secs(5));
    assert_eq!(
        closed_within(&mut s, Duration::from_secs(2))
            .await
            .as_deref(),
        Some(&b""[..])
    );
}

#[tokio::test]
async fn without_parking_connections_are_never_parked() {
    let up = echo().await;
    let gw = parking_gateway(up, |s| s.park_after = Duration::ZERO).await;
    let mut s = TcpStream::connect(gw.http).await.expect("connect");
    let (head, _) = get(&mut s, "/p/v1/x").await;
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    tokio::time::sleep(PARK * 5).await;
    assert_eq!(gw.handle.connections.parked(), 0);
    let (head, _) = get(&mut s, "/p/v1/y").await;
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
}
