//! The response stream hook (issue 30, item 1) through a real gateway and a real SSE
//! back end on 127.0.0.1:0: a policy's `ResponseStream` sees each chunk as it passes and
//! the client gets each rewritten event before the back end produces the next; a chunk
//! it holds (half an event) goes out only once the event is whole; what it gives on the
//! end goes out last; what it learnt is in `ctx.ext` when `on_complete` runs; a client
//! that goes away mid-stream closes the upstream connection. A policy's own answer whose
//! body comes later (`StreamedAnswer`) goes out chunk by chunk and settles the same way.

mod support;

use std::sync::Arc;
use std::time::Duration;

use arc_swap::ArcSwap;
use bytes::{Bytes, BytesMut};
use http::response;
use support::*;
use tokio::sync::mpsc;
use turnpike_config::Snapshot;
use turnpike_gateway::{Completion, GatewayError, Hooks, Policy, RequestCtx, ResponseStream};

const WAIT: Duration = Duration::from_secs(10);

/// What the stream learnt: how many events it relayed.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Relayed(usize);

/// Renames each whole event's `tick` to `TOCK`, holding a partial event until its end
/// (`\n\n`); says `event: done` at the end; tells `on_complete` what it relayed.
struct Renamer {
    seen: mpsc::UnboundedSender<(Option<Relayed>, bool)>,
}

struct RenameStream {
    held: BytesMut,
    events: usize,
}

impl ResponseStream for RenameStream {
    fn on_chunk(&mut self, chunk: Bytes) -> Result<Bytes, GatewayError> {
        self.held.extend_from_slice(&chunk);
        let Some(end) = self.held.windows(2).rposition(|w| w == b"\n\n") else {
            return Ok(Bytes::new());
        };
        let whole = self.held.split_to(end + 2);
        let text = String::from_utf8_lossy(&whole);
        self.events += text.matches("\n\n").count();
        Ok(Bytes::from(text.replace("tick", "TOCK")))
    }

    fn on_end(&mut self) -> Result<Option<Bytes>, GatewayError> {
        Ok(Some(Bytes::from_static(b"event: done\ndata: {}\n\n")))
    }

    fn settle(&mut self, ext: &mut http::Extensions) {
        ext.insert(Relayed(self.events));
    }
}

impl Policy for Renamer {
    fn name(&self) -> &'static str {
        "renamer"
    }
    fn hooks(&self) -> Hooks {
        Hooks::RESPONSE_STREAM | Hooks::COMPLETE
    }
    fn response_stream(
        &self,
        _ctx: &mut RequestCtx,
        resp: &response::Parts,
    ) -> Option<Box<dyn ResponseStream>> {
        turnpike_policy::http::is_stream(&resp.headers).then(|| {
            Box::new(RenameStream {
                held: BytesMut::new(),
                events: 0,
            }) as Box<dyn ResponseStream>
        })
    }
    fn on_complete(&self, ctx: &RequestCtx, done: &Completion) {
        let _ = self
            .seen
            .send((ctx.ext.get::<Relayed>().copied(), done.aborted));
    }
}

async fn renaming_gateway(
    up: std::net::SocketAddr,
) -> (
    TestGateway,
    mpsc::UnboundedReceiver<(Option<Relayed>, bool)>,
) {
    let yaml = config(&[api("sse", &[http(up)], "")]);
    let mut snap = Snapshot::from_yaml(&yaml, "test").expect("valid test config");
    let (tx, seen) = mpsc::unbounded_channel();
    let renamer: Arc<dyn Policy> = Arc::new(Renamer { seen: tx });
    for api in snap.apis.iter_mut() {
        let api = Arc::get_mut(api).expect("a fresh snapshot owns its APIs");
        api.chain = api.chain.appended(renamer.clone());
    }
    let gw = gateway_built(Arc::new(ArcSwap::from_pointee(snap)), |_| {}, |b| b).await;
    (gw, seen)
}

/// Reads until `want` arrived; returns what came.
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

#[tokio::test]
async fn a_stream_policy_rewrites_each_event_as_it_passes() {
    let (up, mut streams) = sse_upstream().await;
    let (gw, mut seen) = renaming_gateway(up).await;
    let mut resp = client()
        .get(gw.url("/sse/v1/events"))
        .send()
        .await
        .expect("send");
    assert_eq!(resp.status(), 200);
    assert!(resp.headers().get("content-length").is_none());
    let events = tokio::time::timeout(WAIT, streams.recv()).await;
    let events = events.ok().flatten().expect("the back end got the request");
    let mut got = String::new();
    for i in 0..3 {
        // Each event is produced only once the previous one came out rewritten.
        let event = format!("event: tick\ndata: {{\"n\":{i}}}\n\n");
        events.send(Bytes::from(event)).await.expect("stream open");
        read_until(
            &mut resp,
            &mut got,
            &format!("event: TOCK\ndata: {{\"n\":{i}}}\n\n"),
        )
        .await;
    }
    // Half an event is held; the client sees it whole once its end came.
    events
        .send(Bytes::from_static(b"event: tick\nda"))
        .await
        .expect("stream open");
    let early = tokio::time::timeout(Duration::from_millis(300), resp.chunk()).await;
    assert!(early.is_err(), "half an event went out: {early:?}");
    events
        .send(Bytes::from_static(b"ta: {\"n\":3}\n\n"))
        .await
        .expect("stream open");
    read_until(&mut resp, &mut got, "event: TOCK\ndata: {\"n\":3}\n\n").await;
    drop(events);
    let rest = tokio::time::timeout(WAIT, resp.bytes()).await;
    let rest = rest.expect("the stream ends").expect("cleanly");
    assert_eq!(
        rest, "event: done\ndata: {}\n\n",
        "the end's own chunk, last"
    );
    assert!(!got.contains("tick"), "{got}");
    let done = tokio::time::timeout(WAIT, seen.recv()).await;
    assert_eq!(
        done.ok().flatten(),
        Some((Some(Relayed(4)), false)),
        "what the stream learnt is in ctx.ext for on_complete"
    );
}

#[tokio::test]
async fn a_client_gone_mid_stream_closes_the_upstream_connection() {
    let (up, mut streams) = sse_upstream().await;
    let (gw, mut seen) = renaming_gateway(up).await;
    let mut resp = client()
        .get(gw.url("/sse/v1/events"))
        .send()
        .await
        .expect("send");
    let events = tokio::time::timeout(WAIT, streams.recv()).await;
    let events = events.ok().flatten().expect("the back end got the request");
    events
        .send(Bytes::from_static(b"event: tick\ndata: 1\n\n"))
        .await
        .expect("stream open");
    let mut got = String::new();
    read_until(&mut resp, &mut got, "event: TOCK\ndata: 1\n\n").await;
    drop(resp);
    // The provider goes on producing; the next write to the client fails, the gateway
    // drops the upstream connection, and the provider's next write fails in turn (its
    // body dropped, its sender closed): the generation is cancelled.
    let closed = tokio::time::timeout(WAIT, async {
        while events
            .send(Bytes::from_static(b"event: tick\ndata: more\n\n"))
            .await
            .is_ok()
        {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    assert!(
        closed.is_ok(),
        "the upstream still streams to a client gone"
    );
    let done = tokio::time::timeout(WAIT, seen.recv()).await;
    let (relayed, aborted) = done.ok().flatten().expect("on_complete ran");
    assert!(aborted, "reported as a client gone");
    assert!(relayed.is_some_and(|Relayed(n)| n >= 1), "{relayed:?}");
}

/// A policy answering itself with a body that comes later (`StreamedAnswer`, a
/// multiplexed MCP endpoint's relay): chunks handed over by the test through a channel.
struct Streamer {
    chunks: std::sync::Mutex<Option<mpsc::Receiver<Bytes>>>,
    seen: mpsc::UnboundedSender<Option<Relayed>>,
}

/// The streamed answer's body: counts what it handed out, settles the count.
struct Chunks {
    rx: mpsc::Receiver<Bytes>,
    n: usize,
}

impl turnpike_policy::AnswerBody for Chunks {
    fn poll_chunk(
        &mut self,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<Bytes, GatewayError>>> {
        self.rx.poll_recv(cx).map(|c| {
            self.n += usize::from(c.is_some());
            c.map(Ok)
        })
    }

    fn settle(&mut self, ext: &mut http::Extensions) {
        ext.insert(Relayed(self.n));
    }
}

impl Policy for Streamer {
    fn name(&self) -> &'static str {
        "streamer"
    }
    fn hooks(&self) -> Hooks {
        Hooks::REQUEST_HEADERS | Hooks::COMPLETE
    }
    fn on_request_headers<'a>(
        &'a self,
        _ctx: &'a mut RequestCtx,
        _req: &'a mut http::request::Parts,
    ) -> turnpike_policy::Step<'a> {
        let rx = self
            .chunks
            .lock()
            .expect("lock")
            .take()
            .expect("one request");
        let mut resp = http::Response::new(Bytes::new());
        resp.headers_mut().insert(
            http::header::CONTENT_TYPE,
            http::HeaderValue::from_static("text/event-stream"),
        );
        turnpike_policy::StreamedAnswer::attach(&mut resp, Box::new(Chunks { rx, n: 0 }));
        turnpike_policy::Step::Done(Ok(turnpike_policy::Flow::Respond(resp)))
    }
    fn on_complete(&self, ctx: &RequestCtx, _done: &Completion) {
        let _ = self.seen.send(ctx.ext.get::<Relayed>().copied());
    }
}

#[tokio::test]
async fn a_policys_streamed_answer_goes_out_chunk_by_chunk_and_settles() {
    let (up, _streams) = sse_upstream().await;
    let yaml = config(&[api("sse", &[http(up)], "")]);
    let mut snap = Snapshot::from_yaml(&yaml, "test").expect("valid test config");
    let (chunks, rx) = mpsc::channel(1);
    let (tx, mut seen) = mpsc::unbounded_channel();
    let streamer: Arc<dyn Policy> = Arc::new(Streamer {
        chunks: std::sync::Mutex::new(Some(rx)),
        seen: tx,
    });
    for api in snap.apis.iter_mut() {
        let api = Arc::get_mut(api).expect("a fresh snapshot owns its APIs");
        api.chain = api.chain.appended(streamer.clone());
    }
    let gw = gateway_built(Arc::new(ArcSwap::from_pointee(snap)), |_| {}, |b| b).await;
    let mut resp = client()
        .get(gw.url("/sse/v1/events"))
        .send()
        .await
        .expect("send");
    assert_eq!(resp.status(), 200, "the head went out before any chunk");
    assert!(resp.headers().get("content-length").is_none());
    let mut got = String::new();
    for i in 0..2 {
        // Each chunk is handed over only once the previous one reached the client.
        let event = format!("data: {i}\n\n");
        chunks.send(Bytes::from(event.clone())).await.expect("open");
        read_until(&mut resp, &mut got, &event).await;
    }
    drop(chunks);
    let rest = tokio::time::timeout(WAIT, resp.bytes()).await;
    assert_eq!(rest.expect("ends").expect("cleanly"), "", "nothing more");
    let done = tokio::time::timeout(WAIT, seen.recv()).await;
    assert_eq!(
        done.ok().flatten(),
        Some(Some(Relayed(2))),
        "what the answer's body settled is in ctx.ext for on_complete"
    );
}
