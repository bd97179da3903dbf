//! Chain stories through a real gateway and real upstreams on 127.0.0.1:0: `on_complete`
//! runs once for every outcome (200, a policy's 401, 502, 404 without an API, a client
//! that goes away: 499 with `aborted`), request and response bodies rewritten by a body
//! policy with and without `Content-Length` (requests sent chunked, upstreams answering
//! chunked) over both upstream clients (the in-task HTTP/1.1 client for small bodies,
//! hyper's for large ones), and a path and query rewrite.

mod support;

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use arc_swap::ArcSwap;
use bytes::Bytes;
use http::{request, response};
use support::*;
use turnpike_config::Snapshot;
use turnpike_gateway::{
    Completion, ErrorKind, Flow, GatewayError, Hooks, Observer, Policy, RequestCtx, Step,
};

type Seen = Arc<Mutex<Vec<(u16, bool, Option<ErrorKind>, u64)>>>;

/// Records each completion: status, aborted, error row, bytes out; in an API's chain
/// (a policy) or for the whole gateway (an observer).
struct Recorder(Seen);

impl Recorder {
    fn record(&self, done: &Completion) {
        if let Ok(mut v) = self.0.lock() {
            v.push((
                done.status.as_u16(),
                done.aborted,
                done.error,
                done.bytes_out,
            ));
        }
    }
}

impl Policy for Recorder {
    fn name(&self) -> &'static str {
        "recorder"
    }
    fn hooks(&self) -> Hooks {
        Hooks::COMPLETE
    }
    fn on_complete(&self, _ctx: &RequestCtx, done: &Completion) {
        self.record(done);
    }
}

impl Observer for Recorder {
    fn name(&self) -> &'static str {
        "recorder"
    }
    fn on_complete(&self, _ctx: &RequestCtx, done: &Completion) {
        self.record(done);
    }
}

/// Refuses requests carrying `x-deny` with the table's 401.
struct Deny;

impl Policy for Deny {
    fn name(&self) -> &'static str {
        "deny"
    }
    fn hooks(&self) -> Hooks {
        Hooks::REQUEST_HEADERS
    }
    fn on_request_headers<'a>(
        &'a self,
        _ctx: &'a mut RequestCtx,
        req: &'a mut request::Parts,
    ) -> Step<'a> {
        if req.headers.contains_key("x-deny") {
            return GatewayError::new(ErrorKind::MissingCredentials).into();
        }
        Step::CONTINUE
    }
}

/// Starts a gateway over `yaml` whose first API's chain gets `extra` appended, with
/// `observer` told about every request.
async fn gateway_with_policies(
    yaml: &str,
    extra: Vec<Arc<dyn Policy>>,
    observer: Option<Arc<dyn Observer>>,
) -> (TestGateway, Arc<ArcSwap<Snapshot>>) {
    let mut snap = Snapshot::from_yaml(yaml, "test").expect("valid test config");
    for api in snap.apis.iter_mut() {
        let api = Arc::get_mut(api).expect("a fresh snapshot owns its APIs");
        for p in &extra {
            api.chain = api.chain.appended(p.clone());
        }
    }
    let snaps = Arc::new(ArcSwap::from_pointee(snap));
    let gw = gateway_built(
        snaps.clone(),
        |_| {},
        |b| match observer {
            Some(o) => b.observer(o),
            None => b,
        },
    )
    .await;
    (gw, snaps)
}

/// A raw HTTP/1.1 upstream: reads a request (head, then a `Content-Length` body), answers
/// `status` without `Content-Length`: `chunks` chunks of `piece` bytes (chunk k is the
/// letter `a + k % 26` repeated), `gap` apart, and closes; stops when the gateway hangs up.
async fn chunked_upstream(status: u16, chunks: usize, piece: usize, gap: Duration) -> SocketAddr {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(async move {
        while let Ok((mut s, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut buf = Vec::new();
                let mut chunk = [0u8; 16 * 1024];
                let body_start = loop {
                    if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                        break i + 4;
                    }
                    match s.read(&mut chunk).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => buf.extend_from_slice(&chunk[..n]),
                    }
                };
                let head = String::from_utf8_lossy(&buf[..body_start]).to_ascii_lowercase();
                let length: usize = head
                    .lines()
                    .find_map(|l| l.strip_prefix("content-length:"))
                    .and_then(|v| v.trim().parse().ok())
                    .unwrap_or(0);
                let mut have = buf.len() - body_start;
                while have < length {
                    match s.read(&mut chunk).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => have += n,
                    }
                }
                let head = format!(
                    "HTTP/1.1 {status} X\r\ncontent-type: text/plain\r\ntransfer-encoding: chunked\r\nconnection: close\r\n\r\n"
                );
                if s.write_all(head.as_bytes()).await.is_err() {
                    return;
                }
                for k in 0..chunks {
                    let mut c = format!("{piece:x}\r\n").into_bytes();
                    c.extend(std::iter::repeat_n(b'a' + (k % 26) as u8, piece));
                    c.extend_from_slice(b"\r\n");
                    if s.write_all(&c).await.is_err() {
                        return;
                    }
                    tokio::time::sleep(gap).await;
                }
                let _ = s.write_all(b"0\r\n\r\n").await;
            });
        }
    });
    addr
}

fn taken(seen: &Seen) -> Vec<(u16, bool, Option<ErrorKind>, u64)> {
    std::mem::take(&mut *seen.lock().expect("lock"))
}

/// Waits until `n` completions were recorded (they run when the body ends, which can be
/// just after the client has read it).
async fn settle(seen: &Seen, n: usize) {
    for _ in 0..200 {
        if seen.lock().expect("lock").len() >= n {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test]
async fn on_complete_runs_once_for_every_outcome() {
    let up = echo().await;
    let hold = holding().await;
    let yaml = config(&[
        api("ok", &[http(up)], ""),
        api("down", &[http(refused_addr())], ""),
        api("slow", &[http(hold.addr)], ""),
    ]);
    let per_api = Seen::default();
    let all = Seen::default();
    let (gw, _) = gateway_with_policies(
        &yaml,
        vec![Arc::new(Deny), Arc::new(Recorder(per_api.clone()))],
        Some(Arc::new(Recorder(all.clone()))),
    )
    .await;
    let c = client();

    let r = c
        .post(gw.url("/ok/v1/x"))
        .body("hello")
        .send()
        .await
        .expect("send");
    assert_eq!(r.status(), 200);
    assert_eq!(r.text().await.expect("body"), "hello");
    settle(&per_api, 1).await;
    assert_eq!(taken(&per_api), [(200, false, None, 5)]);

    let r = c
        .get(gw.url("/ok/v1/x"))
        .header("x-deny", "1")
        .send()
        .await
        .expect("send");
    assert_eq!(r.status(), 401);
    let len = r.bytes().await.expect("body").len() as u64;
    settle(&per_api, 1).await;
    assert_eq!(
        taken(&per_api),
        [(401, false, Some(ErrorKind::MissingCredentials), len)]
    );

    let r = c.get(gw.url("/down/v1/x")).send().await.expect("send");
    assert_eq!(r.status(), 502);
    let _ = r.bytes().await;
    settle(&per_api, 1).await;
    let got = taken(&per_api);
    assert_eq!(got.len(), 1, "{got:?}");
    assert_eq!(got[0].0, 502);
    assert_eq!(got[0].2, Some(ErrorKind::UpstreamConnectFailed));

    // No API: only the gateway's observers hear of it.
    let r = c.get(gw.url("/nothing/here")).send().await.expect("send");
    assert_eq!(r.status(), 404);
    let _ = r.bytes().await;
    settle(&all, 4).await;
    let got: Vec<u16> = taken(&all).iter().map(|s| s.0).collect();
    assert_eq!(got, [200, 401, 502, 404]);
    assert!(taken(&per_api).is_empty());

    // No body on the wire (HEAD; a 204 alike): hyper never polls it, which is no abort.
    let r = c.head(gw.url("/ok/v1/x")).send().await.expect("send");
    assert_eq!(r.status(), 200);
    settle(&per_api, 1).await;
    assert_eq!(taken(&per_api), [(200, false, None, 0)]);
    settle(&all, 1).await;
    assert_eq!(taken(&all).len(), 1);

    // The client goes away while the upstream holds the request.
    let mut hold = hold;
    let url = gw.url("/slow/v1/x");
    let pending = tokio::spawn(async move { client().get(url).send().await });
    hold.arrivals
        .recv()
        .await
        .expect("the request reached the upstream");
    pending.abort();
    let _ = pending.await;
    // Reported once: 499 and aborted when the gateway sees the client leave; the
    // gateway accepts half-closed connections (a client may shut its write side and
    // wait), so a close while the upstream holds the request may only show when the
    // answer is written, and a small answer can go to the closed socket unnoticed (200).
    // A client leaving mid-response is always seen: the next test.
    settle(&per_api, 1).await;
    hold.release.notify_waiters();
    settle(&per_api, 1).await;
    let got = taken(&per_api);
    assert_eq!(got.len(), 1, "{got:?}");
    assert!(
        (got[0].0 == 499 && got[0].1) || (got[0].0 == 200 && !got[0].1),
        "{got:?}"
    );
    settle(&all, 1).await;
    assert_eq!(taken(&all).len(), 1);
}

#[tokio::test]
async fn a_client_gone_mid_response_is_reported_once_as_499() {
    // A 503 the upstream streams slowly: the client reads the head and a chunk, leaves.
    let up = chunked_upstream(503, 400, 1024, Duration::from_millis(5)).await;
    let per_api = Seen::default();
    let (gw, _) = gateway_with_policies(
        &config(&[api("s", &[http(up)], "")]),
        vec![Arc::new(Recorder(per_api.clone()))],
        None,
    )
    .await;
    let mut r = client().get(gw.url("/s/v1/x")).send().await.expect("send");
    assert_eq!(r.status(), 503);
    assert!(r.chunk().await.expect("a chunk").is_some());
    drop(r);
    settle(&per_api, 1).await;
    let got = taken(&per_api);
    assert_eq!(got.len(), 1, "{got:?}");
    let (status, aborted, error, bytes_out) = got[0];
    assert_eq!((status, aborted, error), (499, true, None), "{got:?}");
    assert!((1024..400 * 1024).contains(&bytes_out), "{got:?}");
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(taken(&per_api).is_empty(), "reported once");
}

/// Upper-cases request bodies (and says how it saw them), reverses response bodies.
struct Bodies;

impl Policy for Bodies {
    fn name(&self) -> &'static str {
        "bodies"
    }
    fn hooks(&self) -> Hooks {
        Hooks::REQUEST_BODY | Hooks::RESPONSE_BODY
    }
    fn on_request_body<'a>(
        &'a self,
        _ctx: &'a mut RequestCtx,
        _req: &'a mut request::Parts,
        body: &'a mut Bytes,
    ) -> Step<'a> {
        let mut up = body.to_ascii_uppercase();
        up.extend_from_slice(b"!");
        *body = Bytes::from(up);
        Step::CONTINUE
    }
    fn on_response_body(
        &self,
        _ctx: &mut RequestCtx,
        _resp: &mut response::Parts,
        body: &mut Bytes,
    ) -> Result<(), GatewayError> {
        let mut v = body.to_vec();
        v.reverse();
        *body = Bytes::from(v);
        Ok(())
    }
}

#[tokio::test]
async fn a_body_policy_rewrites_both_bodies_over_both_upstream_clients() {
    let up = echo().await;
    let (gw, _) = gateway_with_policies(
        &config(&[api("b", &[http(up)], "")]),
        vec![Arc::new(Bodies)],
        None,
    )
    .await;
    let c = client();
    // 10 bytes go through the in-task client, 40 KiB through hyper's (above its 16 KiB).
    for size in [10usize, 40 * 1024] {
        let text: String = (0..size).map(|i| (b'a' + (i % 26) as u8) as char).collect();
        let mut want: Vec<u8> = text.to_ascii_uppercase().into_bytes();
        want.push(b'!');
        want.reverse();
        // With Content-Length.
        let r = c
            .post(gw.url("/b/v1/x"))
            .body(text.clone())
            .send()
            .await
            .expect("send");
        assert_eq!(r.status(), 200, "size {size}");
        assert_eq!(
            r.headers()["content-length"].to_str().ok(),
            Some(want.len().to_string().as_str())
        );
        assert_eq!(
            r.bytes().await.expect("body").as_ref(),
            &want[..],
            "size {size}"
        );
        // Chunked (a stream of unknown length).
        let chunks: Vec<Result<Bytes, std::io::Error>> = text
            .as_bytes()
            .chunks(4096)
            .map(|c| Ok(Bytes::copy_from_slice(c)))
            .collect();
        let body = reqwest::Body::wrap_stream(futures_util::stream::iter(chunks));
        let r = c
            .post(gw.url("/b/v1/x"))
            .body(body)
            .send()
            .await
            .expect("send");
        assert_eq!(r.status(), 200, "chunked size {size}");
        assert!(r.headers().get("transfer-encoding").is_none());
        assert_eq!(
            r.bytes().await.expect("body").as_ref(),
            &want[..],
            "chunked {size}"
        );
    }
}

#[tokio::test]
async fn a_body_policy_frames_a_chunked_upstream_response_over_both_clients() {
    // No Content-Length from the upstream: the rewritten body gets one.
    let up = chunked_upstream(200, 30, 1000, Duration::ZERO).await;
    let (gw, _) = gateway_with_policies(
        &config(&[api("c", &[http(up)], "")]),
        vec![Arc::new(Bodies)],
        None,
    )
    .await;
    let mut want: Vec<u8> = (0..30u8).flat_map(|k| [b'a' + k % 26; 1000]).collect();
    want.reverse();
    // The request body's size picks the upstream client (in-task below 16 KiB).
    for size in [10usize, 40 * 1024] {
        let r = client()
            .post(gw.url("/c/v1/x"))
            .body(vec![b'q'; size])
            .send()
            .await
            .expect("send");
        assert_eq!(r.status(), 200, "size {size}");
        assert!(r.headers().get("transfer-encoding").is_none());
        assert_eq!(
            r.headers()["content-length"].to_str().ok(),
            Some("30000"),
            "size {size}"
        );
        assert_eq!(r.bytes().await.expect("body").as_ref(), &want[..]);
    }
}

/// Asks for the request body only.
struct ReadsRequests;

impl Policy for ReadsRequests {
    fn name(&self) -> &'static str {
        "reads_requests"
    }
    fn hooks(&self) -> Hooks {
        Hooks::REQUEST_BODY
    }
}

#[tokio::test]
async fn a_request_body_above_the_limit_is_413_before_the_upstream() {
    let up = inspect("u").await;
    let yaml = config(&[api("b", &[http(up)], "    max_body_size: 100\n")]);
    let (gw, _) = gateway_with_policies(&yaml, vec![Arc::new(ReadsRequests)], None).await;
    let chunks: Vec<Result<Bytes, std::io::Error>> = vec![
        Ok(Bytes::from(vec![b'x'; 80])),
        Ok(Bytes::from(vec![b'x'; 80])),
    ];
    let body = reqwest::Body::wrap_stream(futures_util::stream::iter(chunks));
    let r = client()
        .post(gw.url("/b/v1/x"))
        .body(body)
        .send()
        .await
        .expect("send");
    assert_eq!(r.status(), 413);
    assert_eq!(error_body(r).await["code"], "body_too_large");
}

/// Moves the request under `/v2` and replaces the query.
struct Rewrite;

impl Policy for Rewrite {
    fn name(&self) -> &'static str {
        "rewrite"
    }
    fn hooks(&self) -> Hooks {
        Hooks::REQUEST_HEADERS
    }
    fn on_request_headers<'a>(
        &'a self,
        ctx: &'a mut RequestCtx,
        _req: &'a mut request::Parts,
    ) -> Step<'a> {
        let path = format!("/v2{}", ctx.upstream.path());
        let r = ctx
            .upstream
            .set_path(&path)
            .and_then(|()| ctx.upstream.set_query(Some("q=new")))
            .map(|()| Flow::Continue)
            .map_err(|e| GatewayError::with_source(ErrorKind::Internal, e));
        Step::Done(r)
    }
}

#[tokio::test]
async fn a_policy_rewrites_the_upstream_path_on_both_clients() {
    let up = inspect("u").await;
    let (gw, _) = gateway_with_policies(
        &config(&[api("p", &[http(up)], "")]),
        vec![Arc::new(Rewrite)],
        None,
    )
    .await;
    let c = client();
    for body in [String::new(), "x".repeat(40 * 1024)] {
        let r = c
            .post(gw.url("/p/v1/pets/1?q=old"))
            .body(body.clone())
            .send()
            .await
            .expect("send");
        assert_eq!(r.status(), 200);
        let v = json_of(r).await;
        assert_eq!(v["path"], "/v2/pets/1?q=new", "body {}", body.len());
        assert_eq!(v["body_len"], body.len());
    }
}

#[tokio::test]
async fn cors_preflight_is_answered_before_the_other_steps_and_errors_carry_its_headers() {
    let up = echo().await;
    let cors = "    lifecycle: BLOCKED\n    policies:\n      - cors:\n          \
                allow_origins: [\"https://app.example\"]\n          \
                allow_methods: [GET, POST]\n          max_age: 10m\n";
    let gw = gateway(&config(&[api("c", &[http(up)], cors)])).await;
    let c = client();
    // The preflight is answered although the API refuses every call (lifecycle).
    let r = c
        .request(reqwest::Method::OPTIONS, gw.url("/c/v1/x"))
        .header("origin", "https://app.example")
        .header("access-control-request-method", "POST")
        .header("access-control-request-headers", "Content-Type")
        .send()
        .await
        .expect("send");
    assert_eq!(r.status(), 204);
    let h = r.headers();
    assert_eq!(h["access-control-allow-origin"], "https://app.example");
    assert_eq!(h["access-control-allow-methods"], "GET, POST");
    assert_eq!(h["access-control-max-age"], "600");
    assert_eq!(h["vary"], "Origin");
    // A method or an origin not allowed: 403 cors_rejected.
    for (origin, method) in [
        ("https://app.example", "DELETE"),
        ("https://evil.example", "GET"),
    ] {
        let r = c
            .request(reqwest::Method::OPTIONS, gw.url("/c/v1/x"))
            .header("origin", origin)
            .header("access-control-request-method", method)
            .send()
            .await
            .expect("send");
        assert_eq!(r.status(), 403);
        assert_eq!(error_body(r).await["code"], "cors_rejected");
    }
    // The lifecycle's 403 carries the CORS headers for an allowed origin.
    let r = c
        .get(gw.url("/c/v1/x"))
        .header("origin", "https://app.example")
        .send()
        .await
        .expect("send");
    assert_eq!(r.status(), 403);
    assert_eq!(
        r.headers()["access-control-allow-origin"],
        "https://app.example"
    );
    assert_eq!(error_body(r).await["code"], "api_blocked");
    // Another origin: no CORS headers.
    let r = c
        .get(gw.url("/c/v1/x"))
        .header("origin", "https://evil.example")
        .send()
        .await
        .expect("send");
    assert!(r.headers().get("access-control-allow-origin").is_none());
}

#[test]
fn a_bad_cors_spec_is_a_config_error_with_its_path() {
    let cors = "    policies:\n      - cors:\n          \
                allow_origins: [\"*\", \"https://x.example/path\"]\n          \
                allow_credentials: true\n";
    let yaml = config(&[api("c", &["http://127.0.0.1:9".into()], cors)]);
    let err = Snapshot::from_yaml(&yaml, "test")
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(
        err.contains("apis[0].policies[0].cors.allow_origins[1]"),
        "{err}"
    );
    assert!(
        err.contains("apis[0].policies[0].cors.allow_credentials"),
        "{err}"
    );
}

#[tokio::test]
async fn a_deprecated_api_announces_its_deprecation_and_sunset_on_every_response() {
    let up = echo().await;
    let yaml = config(&[
        api(
            "old",
            &[http(up)],
            "    lifecycle: DEPRECATED\n    deprecation: { since: 2026-06-30, sunset: \"2026-12-31T12:00:00Z\", link: \"https://dev.example/old\" }\n",
        ),
        api(
            "closed",
            &[http(up)],
            "    lifecycle: DEPRECATED\n    auth: { api_key: true }\n",
        ),
        api("new", &[http(up)], ""),
    ]);
    let (gw, _) = gateway_with_policies(&yaml, Vec::new(), None).await;
    let c = client();
    let r = c.get(gw.url("/old/v1/x")).send().await.expect("send");
    assert_eq!(r.status(), 200);
    let h = r.headers();
    // RFC 9745: a structured-field date; RFC 8594: an HTTP-date.
    assert_eq!(h["deprecation"], "@1782777600");
    assert_eq!(h["sunset"], "Thu, 31 Dec 2026 12:00:00 GMT");
    assert_eq!(h["link"], "<https://dev.example/old>; rel=\"deprecation\"");
    // Without dates: deprecated since it was loaded; the gateway's own errors say it too.
    let r = c.get(gw.url("/closed/v1/x")).send().await.expect("send");
    assert_eq!(r.status(), 401);
    let since = r.headers()["deprecation"]
        .to_str()
        .expect("ascii")
        .to_owned();
    let secs: u64 = since
        .strip_prefix('@')
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("{since}"));
    assert!(secs > 1_700_000_000, "{since}");
    assert!(r.headers().get("sunset").is_none());
    let r = c.get(gw.url("/new/v1/x")).send().await.expect("send");
    assert!(r.headers().get("deprecation").is_none());
}

#[test]
fn a_bad_deprecation_date_is_a_config_error_with_its_path() {
    let yaml = config(&[api(
        "old",
        &["http://127.0.0.1:9".into()],
        "    lifecycle: DEPRECATED\n    deprecation: { sunset: next-year }\n",
    )]);
    let e = Snapshot::from_yaml(&yaml, "test")
        .map(|_| ())
        .expect_err("refused")
        .to_string();
    assert!(e.contains("apis[0].deprecation.sunset"), "{e}");
}
