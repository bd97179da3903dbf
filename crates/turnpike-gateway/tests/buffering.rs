//! Request buffering (issue 25 item 11): a body is read at the gateway, up to the API's
//! buffer size, before any upstream connection is taken, so slow clients hold none of
//! the back end's connections; a stalled one gets 408 without the back end ever seeing
//! a connection. Over raw sockets, against a back end that counts what it accepted.

mod support;

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use support::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// `POST path` with a `len`-byte body sent a byte every `every`; the gateway's answer.
async fn slow_post(gw: SocketAddr, path: &str, len: usize, every: Duration) -> String {
    let mut s = TcpStream::connect(gw).await.expect("connect");
    let head = format!(
        "POST {path} HTTP/1.1\r\nHost: a\r\nContent-Length: {len}\r\nConnection: close\r\n\r\n"
    );
    s.write_all(head.as_bytes()).await.expect("head");
    for _ in 0..len {
        tokio::time::sleep(every).await;
        if s.write_all(b"x").await.is_err() {
            break; // answered (408) before the end
        }
    }
    let mut buf = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(30), s.read_to_end(&mut buf)).await;
    String::from_utf8_lossy(&buf).into_owned()
}

fn status(answer: &str) -> u16 {
    answer
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0)
}

fn two_apis(up: SocketAddr) -> String {
    config(&[
        api("buffered", &[http(up)], ""),
        api(
            "streamed",
            &[http(up)],
            "    request_buffering: { enabled: false }\n",
        ),
    ])
}

/// 20 POSTs sending a byte every 100 ms (2 s each), all at once.
fn twenty_slow(gw: SocketAddr, path: &'static str) -> Vec<tokio::task::JoinHandle<String>> {
    (0..20)
        .map(|_| tokio::spawn(slow_post(gw, path, 20, Duration::from_millis(100))))
        .collect()
}

#[tokio::test]
async fn twenty_slow_posts_hold_no_back_end_connection_while_buffered() {
    let up = counting().await;
    let gw = gateway(&two_apis(up.addr)).await;
    let slow = twenty_slow(gw.http, "/buffered/v1/upload");
    tokio::time::sleep(Duration::from_millis(1200)).await;
    assert_eq!(
        up.accepted(),
        0,
        "bodies half sent: the back end has seen no connection"
    );
    for t in slow {
        let answer = t.await.expect("task");
        assert_eq!(status(&answer), 200, "{answer}");
        assert!(
            answer.ends_with("\r\n\r\n20"),
            "the whole body arrived: {answer}"
        );
    }
    assert!((1..=20).contains(&up.accepted()), "{}", up.accepted());

    // The same clients on an API that streams: one back-end connection each, held for
    // as long as the client takes (what every API did before buffering).
    let slow = twenty_slow(gw.http, "/streamed/v1/upload");
    tokio::time::sleep(Duration::from_millis(1200)).await;
    assert!(
        up.active() >= 15,
        "streamed slow bodies each hold a back-end connection: {}",
        up.active()
    );
    for t in slow {
        assert_eq!(status(&t.await.expect("task")), 200);
    }
}

#[tokio::test]
async fn a_stalled_or_too_slow_body_gets_408_and_the_back_end_never_sees_a_connection() {
    let up = counting().await;
    let yaml = config(&[
        api("stall", &[http(up.addr)], ""),
        api(
            "deadline",
            &[http(up.addr)],
            "    request_buffering: { timeout: 500ms }\n",
        ),
    ]);
    let gw = gateway_with(&yaml, |s| s.body_read_timeout = Duration::from_millis(300)).await;
    // 10 of 100 bytes, then nothing: the body-read timeout.
    let mut s = TcpStream::connect(gw.http).await.expect("connect");
    s.write_all(b"POST /stall/v1/x HTTP/1.1\r\nHost: a\r\nContent-Length: 100\r\n\r\n0123456789")
        .await
        .expect("write");
    let mut buf = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(10), s.read_to_end(&mut buf)).await;
    let answer = String::from_utf8_lossy(&buf);
    assert_eq!(status(&answer), 408, "{answer}");
    assert!(answer.contains("\"code\":\"request_timeout\""), "{answer}");
    // A byte every 100 ms never stalls 300 ms, but 100 bytes take longer than the
    // buffering timeout.
    let answer = slow_post(gw.http, "/deadline/v1/x", 100, Duration::from_millis(100)).await;
    assert_eq!(status(&answer), 408, "{answer}");
    assert!(answer.contains("not received in time"), "{answer}");
    assert_eq!(up.accepted(), 0);
}

#[tokio::test]
async fn a_body_past_the_buffer_size_streams_its_rest_and_a_chunked_one_gets_a_length() {
    let up = inspect("one").await;
    let gw = gateway(&config(&[api(
        "b",
        &[http(up)],
        "    request_buffering: { size: 1KiB }\n",
    )]))
    .await;
    let c = client();
    let chunks = |n: usize| {
        let parts: Vec<Result<Vec<u8>, std::io::Error>> =
            (0..n).map(|_| Ok(vec![b'z'; 4096])).collect();
        reqwest::Body::wrap_stream(futures_util::stream::iter(parts))
    };
    // 100 KiB, declared and chunked: the first KiB buffered, the rest streamed.
    for body in [reqwest::Body::from(vec![b'y'; 100 * 1024]), chunks(25)] {
        let r = c
            .post(gw.url("/b/v1/x"))
            .body(body)
            .send()
            .await
            .expect("send");
        assert_eq!(r.status(), 200);
        assert_eq!(json_of(r).await["body_len"], 100 * 1024);
    }
    // Under the buffer size, a chunked body is read whole and sent with its length.
    let small: Vec<Result<&'static [u8], std::io::Error>> = vec![Ok(b"he"), Ok(b"llo")];
    let r = c
        .post(gw.url("/b/v1/x"))
        .body(reqwest::Body::wrap_stream(futures_util::stream::iter(
            small,
        )))
        .send()
        .await
        .expect("send");
    let v = json_of(r).await;
    assert_eq!(v["body_len"], 5, "{v}");
    assert_eq!(v["headers"]["content-length"], "5", "{v}");
    assert!(v["headers"].get("transfer-encoding").is_none(), "{v}");
}

#[tokio::test]
async fn past_the_gateways_buffer_budget_a_body_streams_as_before() {
    let up = counting().await;
    // 100 bytes for all buffers together: a 300-byte slow body outgrows it.
    let gw = gateway_with(&config(&[api("b", &[http(up.addr)], "")]), |s| {
        s.request_buffer_bytes = 100;
    })
    .await;
    // The client's bytes sent so far, beside it: the back end must be reached before
    // the last (a loaded machine stretches the client's pace; this waits on the client,
    // not on a clock).
    let sent = Arc::new(AtomicUsize::new(0));
    let slow = tokio::spawn({
        let sent = sent.clone();
        async move {
            let mut s = TcpStream::connect(gw.http).await.expect("connect");
            let head = "POST /b/v1/x HTTP/1.1\r\nHost: a\r\nContent-Length: 300\r\nConnection: close\r\n\r\n";
            s.write_all(head.as_bytes()).await.expect("head");
            for _ in 0..300 {
                tokio::time::sleep(Duration::from_millis(5)).await;
                s.write_all(b"x").await.expect("a byte");
                sent.fetch_add(1, Ordering::SeqCst);
            }
            let mut buf = Vec::new();
            let _ = tokio::time::timeout(Duration::from_secs(30), s.read_to_end(&mut buf)).await;
            String::from_utf8_lossy(&buf).into_owned()
        }
    });
    while up.active() == 0 && sent.load(Ordering::SeqCst) < 300 {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let at = sent.load(Ordering::SeqCst);
    assert!(
        up.active() == 1 && at < 300,
        "the body streams to the back end once the budget is spent (reached after {at} of 300 bytes)"
    );
    let answer = slow.await.expect("task");
    assert_eq!(status(&answer), 200, "{answer}");
    assert!(answer.ends_with("\r\n\r\n300"), "{answer}");
}
