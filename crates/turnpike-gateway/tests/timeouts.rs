//! The client's side of time and size, over raw sockets (issue 11, defect 9): a request
//! head or body that does not arrive in time is the client's `408 request_timeout`
//! (never the upstream's 504); hyper's own refusals (400, 431) carry the error table's
//! JSON body; a chunked body over the API's limit is a 413 even when the upstream
//! answered before reading it.

mod support;

use std::convert::Infallible;
use std::net::SocketAddr;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use support::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

fn status(answer: &str) -> u16 {
    answer
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0)
}

fn body_json(answer: &str) -> serde_json::Value {
    let body = answer.split_once("\r\n\r\n").map_or("", |(_, b)| b);
    serde_json::from_str(body).unwrap_or_else(|e| panic!("not JSON ({e}): {answer}"))
}

/// Reads until the gateway closes (at most `limit`).
async fn read_all(s: &mut TcpStream, limit: Duration) -> String {
    let mut buf = Vec::new();
    let read = tokio::time::timeout(limit, s.read_to_end(&mut buf)).await;
    assert!(
        read.is_ok(),
        "no close within {limit:?}: {:?}",
        String::from_utf8_lossy(&buf)
    );
    String::from_utf8_lossy(&buf).into_owned()
}

async fn timed_gateway(extra: &str, up: SocketAddr) -> TestGateway {
    gateway_with(&config(&[api("t", &[http(up)], extra)]), |s| {
        s.header_read_timeout = Duration::from_millis(800);
        s.body_read_timeout = Duration::from_millis(800);
    })
    .await
}

#[tokio::test]
async fn a_stalled_body_is_a_408_not_an_upstream_504() {
    let up = inspect("up").await;
    let gw = timed_gateway("", up).await;
    let mut s = TcpStream::connect(gw.http).await.expect("connect");
    s.write_all(b"POST /t/v1/x HTTP/1.1\r\nHost: a\r\nContent-Length: 10\r\n\r\nabc")
        .await
        .expect("write");
    let answer = read_all(&mut s, Duration::from_secs(10)).await;
    assert_eq!(status(&answer), 408, "{answer}");
    assert_eq!(body_json(&answer)["code"], "request_timeout", "{answer}");
    assert!(
        answer.to_ascii_lowercase().contains("x-request-id:"),
        "{answer}"
    );
}

#[tokio::test]
async fn a_body_trickling_past_the_response_timeout_is_the_clients_408() {
    let up = inspect("up").await;
    // Each byte comes well within the body-read timeout, but the whole body takes
    // longer than the API's response timeout: the client is slow, not the upstream.
    // (Streamed: a buffered body never reaches the upstream exchange, buffering.rs.)
    let gw = timed_gateway(
        "    timeouts: { response: 600ms }\n    request_buffering: { enabled: false }\n",
        up,
    )
    .await;
    let mut s = TcpStream::connect(gw.http).await.expect("connect");
    s.write_all(b"POST /t/v1/x HTTP/1.1\r\nHost: a\r\nContent-Length: 12\r\n\r\n")
        .await
        .expect("write");
    let writer = async {
        for _ in 0..12 {
            tokio::time::sleep(Duration::from_millis(150)).await;
            if s.write_all(b"x").await.is_err() {
                break;
            }
        }
    };
    tokio::time::timeout(Duration::from_secs(5), writer)
        .await
        .expect("writes");
    let answer = read_all(&mut s, Duration::from_secs(10)).await;
    assert_eq!(status(&answer), 408, "{answer}");
    assert_eq!(body_json(&answer)["code"], "request_timeout", "{answer}");
}

#[tokio::test]
async fn a_head_cut_short_gets_408_json_and_an_idle_connection_just_closes() {
    let up = inspect("up").await;
    let gw = timed_gateway("", up).await;
    let mut s = TcpStream::connect(gw.http).await.expect("connect");
    s.write_all(b"GET /t/v1/x HTTP/1.1\r\nHost: a\r\nX-Slow: ")
        .await
        .expect("write");
    let answer = read_all(&mut s, Duration::from_secs(10)).await;
    assert_eq!(status(&answer), 408, "{answer}");
    assert_eq!(body_json(&answer)["code"], "request_timeout", "{answer}");

    // A connection that never started a request is closed without an answer.
    let mut idle = TcpStream::connect(gw.http).await.expect("connect");
    let answer = read_all(&mut idle, Duration::from_secs(10)).await;
    assert_eq!(answer, "", "an idle connection gets no answer");
}

#[tokio::test]
async fn hypers_own_refusals_carry_the_json_error() {
    let up = inspect("up").await;
    let gw = timed_gateway("", up).await;
    let mut big = b"GET /t/v1/x HTTP/1.1\r\nHost: a\r\nX-Big: ".to_vec();
    big.extend(std::iter::repeat_n(b'a', 80 * 1024));
    big.extend_from_slice(b"\r\n\r\n");
    for (raw, want, code) in [
        (
            &b"G(T /t/v1/x HTTP/1.1\r\nHost: a\r\n\r\n"[..],
            400,
            "bad_request",
        ),
        (
            b"GET /t/v1/x HTTP/1.1\r\nHost: a\r\nX-A: a\0b\r\n\r\n",
            400,
            "bad_request",
        ),
        (&big, 431, "headers_too_large"),
    ] {
        let mut s = TcpStream::connect(gw.http).await.expect("connect");
        // The head may be refused before all of it is written: ignore a reset.
        let _ = s.write_all(raw).await;
        let answer = read_all(&mut s, Duration::from_secs(10)).await;
        assert_eq!(status(&answer), want, "{answer}");
        let v = body_json(&answer);
        assert_eq!(v["code"], code, "{answer}");
        assert!(
            v["request_id"].as_str().is_some_and(|r| !r.is_empty()),
            "{answer}"
        );
    }
}

/// An upstream that answers `200` as soon as the head arrives, reading the body after.
async fn answers_early() -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(async move {
        while let Ok((s, _)) = listener.accept().await {
            tokio::spawn(async move {
                let svc = service_fn(|req: Request<Incoming>| async move {
                    // Drain the body in the background; answer at once.
                    tokio::spawn(http_body_util::BodyExt::collect(req.into_body()));
                    Ok::<_, Infallible>(Response::new(Full::new(Bytes::from_static(b"early"))))
                });
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(s), svc)
                    .await;
            });
        }
    });
    addr
}

#[tokio::test]
async fn a_chunked_body_over_the_limit_is_a_413_even_when_the_upstream_answered_early() {
    let up = answers_early().await;
    // Streamed, so the upstream can answer before the body's end.
    let gw = timed_gateway(
        "    max_body_size: 1KiB\n    request_buffering: { enabled: false }\n",
        up,
    )
    .await;
    let mut s = TcpStream::connect(gw.http).await.expect("connect");
    s.write_all(b"POST /t/v1/x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n")
        .await
        .expect("write");
    // 4 KiB in 512-byte chunks, with pauses so the upstream's answer comes first.
    for _ in 0..8 {
        let mut chunk = b"200\r\n".to_vec();
        chunk.extend(std::iter::repeat_n(b'x', 512));
        chunk.extend_from_slice(b"\r\n");
        if s.write_all(&chunk).await.is_err() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let _ = s.write_all(b"0\r\n\r\n").await;
    let answer = read_all(&mut s, Duration::from_secs(10)).await;
    assert_eq!(status(&answer), 413, "{answer}");
    assert_eq!(body_json(&answer)["code"], "body_too_large", "{answer}");

    // Under the limit, the early answer passes.
    let mut s = TcpStream::connect(gw.http).await.expect("connect");
    s.write_all(
        b"POST /t/v1/x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
    )
    .await
    .expect("write");
    let answer = read_all(&mut s, Duration::from_secs(10)).await;
    assert_eq!(status(&answer), 200, "{answer}");
    assert!(answer.ends_with("early"), "{answer}");
}
