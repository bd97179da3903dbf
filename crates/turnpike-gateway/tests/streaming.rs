//! Long responses through the gateway (issue 27, item 4): Server-Sent Events pass event
//! by event (each arrives before the back end produces the next), also through a policy
//! that reads response bodies and past the API's response timeout; only the read-idle
//! guard ends a silent stream; analytics still count the bytes at the end. h2c endpoints
//! multiplex requests over one HTTP/2 connection.

mod support;

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use arc_swap::ArcSwap;
use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::{TokioExecutor, TokioIo};
use support::*;
use tokio::net::TcpListener;
use tokio::sync::mpsc;
use turnpike_config::Snapshot;
use turnpike_gateway::{Completion, Observer, RequestCtx};

const WAIT: Duration = Duration::from_secs(10);

/// Tells the test each completed exchange's bytes out and whether it was cut short.
struct Ended(mpsc::UnboundedSender<(u64, bool)>);

impl Observer for Ended {
    fn name(&self) -> &'static str {
        "ended"
    }
    fn on_complete(&self, _ctx: &RequestCtx, done: &Completion) {
        let _ = self.0.send((done.bytes_out, done.aborted));
    }
}

async fn observed_gateway(yaml: &str) -> (TestGateway, mpsc::UnboundedReceiver<(u64, bool)>) {
    let snap = Snapshot::from_yaml(yaml, "test").expect("valid test config");
    let (tx, ended) = mpsc::unbounded_channel();
    let snaps = Arc::new(ArcSwap::from_pointee(snap));
    let gw = gateway_built(snaps, |_| {}, |b| b.observer(Arc::new(Ended(tx)))).await;
    (gw, ended)
}

/// Reads the response until `want` has arrived (what came before it included).
async fn read_until(resp: &mut reqwest::Response, got: &mut String, want: &str) {
    let arrived = tokio::time::timeout(WAIT, async {
        while !got.contains(want) {
            match resp.chunk().await.expect("stream intact") {
                Some(c) => got.push_str(&String::from_utf8_lossy(&c)),
                None => panic!("the stream ended before {want:?}: {got:?}"),
            }
        }
    })
    .await;
    assert!(arrived.is_ok(), "{want:?} did not come through: {got:?}");
}

/// Each event is produced only once the previous one came out of the gateway: a gateway
/// that buffered would hold the first and the test would time out.
async fn events_pass_one_by_one(extra: &str) {
    let (up, mut streams) = sse_upstream().await;
    let extra = format!("    timeouts: {{ response: 300ms, read_idle: 5s }}\n{extra}");
    let (gw, mut ended) = observed_gateway(&config(&[api("sse", &[http(up)], &extra)])).await;
    let mut resp = client()
        .get(gw.url("/sse/v1/events"))
        .header("accept", "text/event-stream")
        .send()
        .await
        .expect("send");
    assert_eq!(resp.status(), 200);
    assert_eq!(resp.headers()["content-type"], "text/event-stream");
    let events = tokio::time::timeout(WAIT, streams.recv()).await;
    let events = events.ok().flatten().expect("the back end got the request");
    let mut got = String::new();
    let mut sent = 0;
    for i in 0..4 {
        if i == 3 {
            // Longer than the API's response timeout: it bounds the wait for the head,
            // not the life of the stream.
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
        let event = format!("id: {i}\nevent: tick\ndata: {{\"n\":{i}}}\n\n");
        sent += event.len();
        events.send(Bytes::from(event)).await.expect("stream open");
        read_until(&mut resp, &mut got, &format!("data: {{\"n\":{i}}}\n\n")).await;
    }
    drop(events);
    let rest = tokio::time::timeout(WAIT, resp.bytes()).await;
    assert!(rest.expect("the stream ends").expect("cleanly").is_empty());
    assert_eq!(got.len(), sent, "every byte, unchanged: {got:?}");
    let done = tokio::time::timeout(WAIT, ended.recv()).await;
    assert_eq!(done.ok().flatten(), Some((sent as u64, false)));
}

#[tokio::test]
async fn server_sent_events_pass_one_by_one() {
    events_pass_one_by_one("").await;
}

#[tokio::test]
async fn a_policy_that_reads_response_bodies_does_not_hold_events() {
    // A jq response transform reads whole bodies; an event stream is not one it waits for.
    let jq = "    mediation:\n      response:\n        body: { jq: '{wrapped: .}' }\n";
    events_pass_one_by_one(jq).await;
}

#[tokio::test]
async fn read_idle_ends_a_silent_stream() {
    let (up, mut streams) = sse_upstream().await;
    let extra = "    timeouts: { read_idle: 300ms }\n";
    let (gw, mut ended) = observed_gateway(&config(&[api("quiet", &[http(up)], extra)])).await;
    let mut resp = client()
        .get(gw.url("/quiet/v1/events"))
        .send()
        .await
        .expect("send");
    assert_eq!(resp.status(), 200);
    let events = tokio::time::timeout(WAIT, streams.recv()).await;
    let events = events.ok().flatten().expect("the back end got the request");
    let first = "data: first\n\n";
    events.send(Bytes::from(first)).await.expect("stream open");
    let mut got = String::new();
    read_until(&mut resp, &mut got, first).await;
    // The back end keeps the stream open and says nothing: the guard cuts it, and the
    // client sees a broken stream rather than a clean end.
    let cut = tokio::time::timeout(WAIT, resp.chunk()).await;
    assert!(cut.expect("cut within the wait").is_err());
    let done = tokio::time::timeout(WAIT, ended.recv()).await;
    assert_eq!(done.ok().flatten().map(|d| d.0), Some(first.len() as u64));
    drop(events);
}

#[test]
fn h2c_needs_plain_http_endpoints_and_read_idle_a_duration() {
    let yaml = config(&[api(
        "bad",
        &["https://127.0.0.1:9".into()],
        "    upstream_protocol: h2c\n    timeouts: { read_idle: 0s }\n",
    )]);
    let Err(err) = Snapshot::from_yaml(&yaml, "test") else {
        panic!("an h2c API with an https:// endpoint compiled");
    };
    let text = err.to_string();
    assert!(text.contains("apis[0].endpoints[0]"), "{text}");
    assert!(text.contains("h2c needs an http:// endpoint"), "{text}");
    assert!(text.contains("apis[0].timeouts.read_idle"), "{text}");
}

/// An HTTP/2-only (prior knowledge) back end that counts its connections and answers
/// with the protocol version it saw.
async fn h2c_upstream() -> (SocketAddr, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    let accepted = Arc::new(AtomicUsize::new(0));
    let count = accepted.clone();
    tokio::spawn(async move {
        while let Ok((s, _)) = listener.accept().await {
            count.fetch_add(1, Ordering::SeqCst);
            let svc = service_fn(|req: Request<Incoming>| async move {
                let body = format!("{:?} {}", req.version(), req.uri().path());
                Ok::<_, Infallible>(Response::new(Full::new(Bytes::from(body))))
            });
            tokio::spawn(async move {
                let _ = hyper::server::conn::http2::Builder::new(TokioExecutor::new())
                    .serve_connection(TokioIo::new(s), svc)
                    .await;
            });
        }
    });
    (addr, accepted)
}

#[tokio::test]
async fn h2c_endpoints_multiplex_requests_over_one_connection() {
    let (up, accepted) = h2c_upstream().await;
    let gw = gateway(&config(&[api(
        "h2c",
        &[http(up)],
        "    upstream_protocol: h2c\n",
    )]))
    .await;
    let c = client();
    let calls = (0..20).map(|i| {
        let c = c.clone();
        let url = gw.url(&format!("/h2c/v1/item/{i}"));
        async move {
            let r = c.get(url).send().await.expect("send");
            (r.status().as_u16(), r.text().await.expect("body"))
        }
    });
    let answers = futures_util::future::join_all(calls).await;
    for (i, (status, body)) in answers.into_iter().enumerate() {
        assert_eq!(status, 200, "{body}");
        assert_eq!(body, format!("HTTP/2.0 /item/{i}"));
    }
    assert_eq!(
        accepted.load(Ordering::SeqCst),
        1,
        "one multiplexed connection"
    );
}
