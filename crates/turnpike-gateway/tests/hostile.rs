//! The hostile-input suite: malformed, ambiguous and smuggling-shaped HTTP/1.1 written
//! byte for byte on raw sockets, and HTTP/2 requests a lenient proxy would mishandle.
//! Each case asserts both sides: what the client gets (status, JSON error code) and what
//! reached the back end (a recording upstream keeps every request it was sent). A request
//! that must be refused must reach nothing; one that is allowed must arrive exactly once,
//! as sent.

mod support;

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::{TokioExecutor, TokioIo};
use support::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// One request as the back end saw it.
#[derive(Debug, Clone)]
#[allow(dead_code)] // printed in failure messages
struct Seen {
    method: String,
    path: String,
    hosts: Vec<String>,
    body: Vec<u8>,
}

/// An upstream that records every request and answers `200 ok`.
async fn recorder() -> (SocketAddr, Arc<Mutex<Vec<Seen>>>) {
    let seen: Arc<Mutex<Vec<Seen>>> = Arc::default();
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    let log = seen.clone();
    tokio::spawn(async move {
        while let Ok((s, _)) = listener.accept().await {
            let log = log.clone();
            tokio::spawn(async move {
                let svc = service_fn(move |req: Request<Incoming>| {
                    let log = log.clone();
                    async move {
                        let (parts, body) = req.into_parts();
                        // An aborted body is an aborted request, not one that arrived.
                        let Ok(body) = body.collect().await.map(|b| b.to_bytes().to_vec()) else {
                            return Ok(Response::new(Full::new(Bytes::from_static(b"aborted"))));
                        };
                        let hosts = parts
                            .headers
                            .get_all("host")
                            .iter()
                            .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
                            .collect();
                        if let Ok(mut l) = log.lock() {
                            l.push(Seen {
                                method: parts.method.to_string(),
                                path: parts.uri.to_string(),
                                hosts,
                                body,
                            });
                        }
                        Ok::<_, Infallible>(Response::new(Full::new(Bytes::from_static(b"ok"))))
                    }
                });
                let _ = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new())
                    .serve_connection(TokioIo::new(s), svc)
                    .await;
            });
        }
    });
    (addr, seen)
}

struct Rig {
    gw: TestGateway,
    seen: Arc<Mutex<Vec<Seen>>>,
}

impl Rig {
    async fn new() -> Rig {
        let (up, seen) = recorder().await;
        let extra = "    max_body_size: 1KiB\n";
        let gw = gateway(&config(&[api("h", &[http(up)], extra)])).await;
        Rig { gw, seen }
    }

    fn seen(&self) -> Vec<Seen> {
        self.seen.lock().map(|l| l.clone()).unwrap_or_default()
    }

    fn forget(&self) {
        if let Ok(mut l) = self.seen.lock() {
            l.clear();
        }
    }

    /// Writes `raw` on a new connection, half-closes (as `curl` and many scripts do once
    /// they sent everything), and reads until the gateway closes.
    async fn raw(&self, raw: &[u8]) -> String {
        let mut s = TcpStream::connect(self.gw.http).await.expect("connect");
        s.write_all(raw).await.expect("write");
        let _ = s.shutdown().await;
        let mut buf = Vec::new();
        let read = tokio::time::timeout(Duration::from_secs(10), s.read_to_end(&mut buf)).await;
        assert!(
            read.is_ok(),
            "no answer and no close for {:?}",
            String::from_utf8_lossy(raw)
        );
        String::from_utf8_lossy(&buf).into_owned()
    }
}

fn status(answer: &str) -> u16 {
    answer
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0)
}

fn statuses(answer: &str) -> Vec<u16> {
    answer
        .match_indices("HTTP/1.1 ")
        .filter_map(|(i, _)| answer[i + 9..].get(..3)?.parse().ok())
        .collect()
}

fn code(answer: &str) -> String {
    let body = answer.split_once("\r\n\r\n").map_or("", |(_, b)| b);
    serde_json::from_str::<serde_json::Value>(body)
        .ok()
        .and_then(|v| v["code"].as_str().map(str::to_owned))
        .unwrap_or_default()
}

/// Cases refused before anything reaches the back end: (name, bytes, statuses allowed).
const REFUSED: &[(&str, &[u8], &[u16])] = &[
    (
        "HTTP/1.1 without Host",
        b"GET /h/v1/x HTTP/1.1\r\n\r\n",
        &[400],
    ),
    (
        "two Host headers",
        b"GET /h/v1/x HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n",
        &[400],
    ),
    (
        "origin-form CONNECT",
        b"CONNECT /h/v1/x HTTP/1.1\r\nHost: a\r\n\r\n",
        &[400],
    ),
    (
        "authority-form CONNECT",
        b"CONNECT 127.0.0.1:22 HTTP/1.1\r\nHost: 127.0.0.1:22\r\n\r\n",
        &[400],
    ),
    (
        "two different Content-Length",
        b"POST /h/v1/x HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\nContent-Length: 5\r\n\r\nabcde",
        &[400],
    ),
    (
        "Content-Length list",
        b"POST /h/v1/x HTTP/1.1\r\nHost: a\r\nContent-Length: 3, 5\r\n\r\nabcde",
        &[400],
    ),
    (
        "negative Content-Length",
        b"POST /h/v1/x HTTP/1.1\r\nHost: a\r\nContent-Length: -1\r\n\r\n",
        &[400],
    ),
    (
        "space before the colon",
        b"POST /h/v1/x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding : chunked\r\n\r\n0\r\n\r\n",
        &[400],
    ),
    (
        "obsolete line folding",
        b"GET /h/v1/x HTTP/1.1\r\nHost: a\r\nX-A: 1\r\n  folded\r\n\r\n",
        &[400],
    ),
    (
        "unknown transfer coding",
        b"POST /h/v1/x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: xchunked\r\n\r\n0\r\n\r\n",
        &[400, 501],
    ),
    (
        "chunked not last",
        b"POST /h/v1/x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked, identity\r\n\r\n0\r\n\r\n",
        &[400, 501],
    ),
    (
        "bad chunk size",
        b"POST /h/v1/x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nabc\r\n0\r\n\r\n",
        &[400],
    ),
    (
        "NUL in a header value",
        b"GET /h/v1/x HTTP/1.1\r\nHost: a\r\nX-A: a\0b\r\n\r\n",
        &[400],
    ),
    (
        "bare LF in a header value",
        b"GET /h/v1/x HTTP/1.1\r\nHost: a\r\nX-A: a\rb\r\n\r\n",
        &[400],
    ),
    (
        "space in the request target",
        b"GET /h/v1/a b HTTP/1.1\r\nHost: a\r\n\r\n",
        &[400],
    ),
    (
        "bad method token",
        b"G(T /h/v1/x HTTP/1.1\r\nHost: a\r\n\r\n",
        &[400],
    ),
    ("HTTP/2 preface on the plain port", b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", &[400, 505]),
    ("unknown version", b"GET /h/v1/x HTTP/3.7\r\nHost: a\r\n\r\n", &[400, 505]),
];

#[tokio::test]
async fn malformed_and_ambiguous_requests_reach_nothing() {
    let rig = Rig::new().await;
    for (name, raw, allowed) in REFUSED {
        rig.forget();
        let answer = rig.raw(raw).await;
        let got = status(&answer);
        // hyper closes some malformed connections without an answer: refused all the same.
        assert!(
            got == 0 || allowed.contains(&got),
            "{name}: got {got}, want one of {allowed:?}\n{answer}"
        );
        assert!(
            rig.seen().is_empty(),
            "{name}: reached the back end: {:?}",
            rig.seen()
        );
    }
}

#[tokio::test]
async fn refusals_of_our_own_carry_the_json_error() {
    let rig = Rig::new().await;
    for raw in [
        &b"GET /h/v1/x HTTP/1.1\r\n\r\n"[..],
        b"GET /h/v1/x HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n",
        b"CONNECT /h/v1/x HTTP/1.1\r\nHost: a\r\n\r\n",
    ] {
        let answer = rig.raw(raw).await;
        assert_eq!(status(&answer), 400, "{answer}");
        assert_eq!(code(&answer), "bad_request", "{answer}");
    }
}

/// Path forms that back ends read as another path (issue 25 item 1): `;` parameters,
/// trailing dots and spaces, double encoding, overlong and fullwidth UTF-8, control
/// characters. Each is 400 `invalid_path` on an API with the default `paths:`, and
/// nothing reaches the back end.
#[tokio::test]
async fn path_forms_back_ends_disagree_on_are_invalid_paths() {
    let rig = Rig::new().await;
    for path in [
        &b"/h/v1/admin;/x"[..],
        b"/h/v1/admin;jsessionid=x/x",
        b"/h/v1/admin;a=b;c=d/x",
        b"/h/v1/x;v=1",
        b"/h/v1/admin%3Bx/x",
        b"/h/v1/admin./x",
        b"/h/v1/admin%2E/x",
        b"/h/v1/admin%20/x",
        b"/h/v1/admin%09/x",
        b"/h/v1/a%0D%0Ab",
        b"/h/v1/x%252f..%252fadmin",
        b"/h/v1/x/%252e%252e/admin",
        b"/h/v1/x%C0%AF..%C0%AFadmin",
        b"/h/v1/x%E0%80%AF",
        b"/h/v1/%C3",
        b"/h/v1/%EF%BD%81dmin",
        "/h/v1/ａｄｍｉｎ".as_bytes(),
        b"/h/v1/a%E2%88%95b",
    ] {
        rig.forget();
        let name = String::from_utf8_lossy(path);
        let mut raw = b"GET ".to_vec();
        raw.extend_from_slice(path);
        raw.extend_from_slice(b" HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n");
        let answer = rig.raw(&raw).await;
        assert_eq!(
            (status(&answer), code(&answer).as_str()),
            (400, "invalid_path"),
            "{name}: {answer}"
        );
        assert!(rig.seen().is_empty(), "{name}: reached the back end");
    }
    // A space inside a segment and an encoded '%' before text are data, not refused.
    let answer = rig
        .raw(b"GET /h/v1/a%20b/50%25off HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n")
        .await;
    assert_eq!(status(&answer), 200, "{answer}");
    assert_eq!(
        rig.seen().first().map(|s| s.path.as_str()),
        Some("/a%20b/50%25off")
    );
}

#[tokio::test]
async fn smuggling_shapes_deliver_at_most_what_the_client_framed() {
    let rig = Rig::new().await;
    // Content-Length and chunked together: chunked wins (RFC 9112 6.3) or the request is
    // refused; either way the hidden request is never forwarded as a second request.
    let answer = rig
        .raw(
            b"POST /h/v1/a HTTP/1.1\r\nHost: a\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n\
              0\r\n\r\nGET /h/v1/smuggled HTTP/1.1\r\nHost: a\r\n\r\n",
        )
        .await;
    let seen = rig.seen();
    let paths: Vec<&str> = seen.iter().map(|s| s.path.as_str()).collect();
    if statuses(&answer).first() == Some(&400) {
        assert!(seen.is_empty(), "refused, yet forwarded: {seen:?}");
    } else {
        // Framed by chunked: an empty POST; with both lengths present the connection is
        // closed after it (RFC 9112 6.3), so what followed is never read as a request.
        assert_eq!(paths, ["/a"], "{answer}");
        assert!(seen[0].body.is_empty(), "{seen:?}");
    }
    // Pipelined requests on one connection: both answered in order, both forwarded once.
    rig.forget();
    let answer = rig
        .raw(b"GET /h/v1/one HTTP/1.1\r\nHost: a\r\n\r\nGET /h/v1/two HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n")
        .await;
    assert_eq!(statuses(&answer), vec![200, 200], "{answer}");
    let paths: Vec<String> = rig.seen().into_iter().map(|s| s.path).collect();
    assert_eq!(paths, ["/one", "/two"]);
}

#[tokio::test]
async fn what_is_forwarded_is_what_was_framed() {
    let rig = Rig::new().await;
    // Chunked with a trailer and extensions: the body arrives whole, once.
    let answer = rig
        .raw(
            b"POST /h/v1/c HTTP/1.1\r\nHost: example.test\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n\
              3;ext=1\r\nabc\r\n2\r\nde\r\n0\r\nX-Trailer: t\r\n\r\n",
        )
        .await;
    assert_eq!(status(&answer), 200, "{answer}");
    let seen = rig.seen();
    assert_eq!(seen.len(), 1, "{seen:?}");
    assert_eq!(seen[0].body, b"abcde");
    // The upstream gets the endpoint's Host, once, never the client's second opinion.
    assert_eq!(seen[0].hosts.len(), 1, "{seen:?}");
    // HTTP/1.0 without Host is allowed and forwarded once.
    rig.forget();
    let answer = rig.raw(b"GET /h/v1/old HTTP/1.0\r\n\r\n").await;
    assert_eq!(status(&answer), 200, "{answer}");
    assert_eq!(rig.seen().len(), 1);
    // Over the API's body limit with a declared length: 413 and nothing forwarded.
    rig.forget();
    let mut big = b"POST /h/v1/big HTTP/1.1\r\nHost: a\r\nContent-Length: 2048\r\n\r\n".to_vec();
    big.extend(std::iter::repeat_n(b'x', 2048));
    let answer = rig.raw(&big).await;
    assert_eq!(status(&answer), 413, "{answer}");
    assert_eq!(code(&answer), "body_too_large");
    assert!(rig.seen().is_empty(), "{:?}", rig.seen().len());
}

#[tokio::test]
async fn oversized_heads_get_431_and_reach_nothing() {
    let rig = Rig::new().await;
    let mut raw = b"GET /h/v1/x HTTP/1.1\r\nHost: a\r\nX-Big: ".to_vec();
    raw.extend(std::iter::repeat_n(b'a', 100 * 1024));
    raw.extend_from_slice(b"\r\n\r\n");
    let answer = rig.raw(&raw).await;
    assert!(matches!(status(&answer), 0 | 431), "{answer}");
    assert!(rig.seen().is_empty());
}

/// HTTP/2 over TLS (ALPN), through reqwest's HTTP/2 client.
fn h2_client(gw: &TestGateway) -> reqwest::Client {
    let pem = std::fs::read(gw.dir.path().join("tls/cert.pem")).expect("generated cert");
    let cert = reqwest::Certificate::from_pem(&pem).expect("pem");
    reqwest::Client::builder()
        .no_proxy()
        .use_rustls_tls()
        .add_root_certificate(cert)
        .resolve("localhost", gw.https)
        .http2_prior_knowledge()
        .build()
        .expect("client")
}

#[tokio::test]
async fn http2_requests_are_framed_and_refused_like_http1() {
    let rig = Rig::new().await;
    let c = h2_client(&rig.gw);
    let base = format!("https://localhost:{}", rig.gw.https.port());
    // A plain request: forwarded once, with one Host.
    let r = c
        .post(format!("{base}/h/v1/h2"))
        .body("hello")
        .send()
        .await
        .expect("send");
    assert_eq!(r.version(), reqwest::Version::HTTP_2);
    assert_eq!(r.status(), 200);
    let seen = rig.seen();
    assert_eq!(seen.len(), 1);
    assert_eq!(
        (seen[0].path.as_str(), &seen[0].body[..]),
        ("/h2", &b"hello"[..])
    );
    assert_eq!(seen[0].hosts.len(), 1);
    // A second Host header beside :authority: refused, nothing forwarded.
    rig.forget();
    let r = c
        .get(format!("{base}/h/v1/x"))
        .header("host", "a.test")
        .header("host", "b.test")
        .send()
        .await
        .expect("send");
    assert_eq!(r.status(), 400);
    assert!(rig.seen().is_empty());
    // A body over the limit, streamed without a length: refused, never forwarded whole.
    rig.forget();
    let chunks: Vec<Result<Bytes, std::io::Error>> =
        (0..8).map(|_| Ok(Bytes::from(vec![b'x'; 512]))).collect();
    let body = reqwest::Body::wrap_stream(futures_util::stream::iter(chunks));
    let _ = c
        .post(format!("{base}/h/v1/stream"))
        .body(body)
        .send()
        .await;
    assert!(
        rig.seen().iter().all(|s| s.body.len() <= 1024),
        "{:?}",
        rig.seen().len()
    );
}

/// RFC 9112 §6.1: hyper decodes the chunked framing of `gzip, chunked` and would leave
/// the gzip coding to no one (the body went upstream as plain chunked bytes); a server
/// answers 501 to a coding it does not understand. `chunked` applied twice is malformed.
#[tokio::test]
async fn a_transfer_coding_other_than_chunked_is_refused_before_the_back_end() {
    let rig = Rig::new().await;
    let body = "\r\n\r\n3\r\nabc\r\n0\r\n\r\n";
    for (te, want, want_code) in [
        ("gzip, chunked", 501, "unsupported_transfer_coding"),
        ("deflate,chunked", 501, "unsupported_transfer_coding"),
        ("chunked, chunked", 400, "bad_request"),
    ] {
        rig.forget();
        let raw = format!("POST /h/v1/te HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: {te}{body}");
        let answer = rig.raw(raw.as_bytes()).await;
        assert_eq!(status(&answer), want, "{te}: {answer}");
        assert_eq!(code(&answer), want_code, "{te}: {answer}");
        assert!(rig.seen().is_empty(), "{te} reached the back end");
    }
    // The coding split over two header lines is the same list.
    rig.forget();
    let answer = rig
        .raw(format!("POST /h/v1/te HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip\r\nTransfer-Encoding: chunked{body}").as_bytes())
        .await;
    assert_eq!(status(&answer), 501, "{answer}");
    assert!(rig.seen().is_empty());
    // Plain chunked still arrives once, whole.
    rig.forget();
    let answer = rig
        .raw(
            format!("POST /h/v1/te HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked{body}")
                .as_bytes(),
        )
        .await;
    assert_eq!(status(&answer), 200, "{answer}");
    assert_eq!(rig.seen().len(), 1);
    assert_eq!(rig.seen()[0].body, b"abc");
}

/// RFC 9112 §3.2.2: with an absolute-form target the server MUST ignore `Host` and
/// route by the target's authority.
#[tokio::test]
async fn an_absolute_form_target_routes_by_its_authority_not_the_host_header() {
    let (up, seen) = recorder().await;
    let gw = gateway(&config(&[api("t", &[http(up)], "    host: a.example\n")])).await;
    let send = |raw: &'static [u8]| {
        let addr = gw.http;
        async move {
            let mut s = TcpStream::connect(addr).await.expect("connect");
            s.write_all(raw).await.expect("write");
            let mut buf = Vec::new();
            let _ = tokio::time::timeout(Duration::from_secs(10), s.read_to_end(&mut buf)).await;
            String::from_utf8_lossy(&buf).into_owned()
        }
    };
    let answer = send(
        b"GET http://a.example/t/v1/x HTTP/1.1\r\nHost: b.example\r\nConnection: close\r\n\r\n",
    )
    .await;
    assert_eq!(status(&answer), 200, "{answer}");
    let answer = send(
        b"GET http://b.example/t/v1/x HTTP/1.1\r\nHost: a.example\r\nConnection: close\r\n\r\n",
    )
    .await;
    assert_eq!(status(&answer), 404, "{answer}");
    let paths: Vec<String> = seen
        .lock()
        .map(|l| l.iter().map(|s| s.path.clone()).collect())
        .unwrap_or_default();
    assert_eq!(paths, ["/x"], "only the request for a.example arrives");
}

/// RFC 9113 §8.3.1: an HTTP/2 `host` that names another host than `:authority` is
/// malformed: 400, and nothing is forwarded.
#[tokio::test]
async fn an_h2_host_header_that_differs_from_authority_is_refused() {
    let rig = Rig::new().await;
    let c = h2_client(&rig.gw);
    let base = format!("https://localhost:{}", rig.gw.https.port());
    let r = c
        .get(format!("{base}/h/v1/x"))
        .header("host", "other.example")
        .send()
        .await
        .expect("send");
    assert_eq!(r.version(), reqwest::Version::HTTP_2);
    assert_eq!(r.status(), 400);
    assert_eq!(error_body(r).await["code"], "bad_request");
    assert!(rig.seen().is_empty(), "{:?}", rig.seen());
    let r = c
        .get(format!("{base}/h/v1/x"))
        .header("host", format!("localhost:{}", rig.gw.https.port()))
        .send()
        .await
        .expect("send");
    assert_eq!(r.status(), 200);
}
