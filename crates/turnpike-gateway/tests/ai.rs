//! LLM APIs (issue 30, item 2) through a real gateway and a provider on 127.0.0.1:0
//! that answers in the shapes OpenAI's and Anthropic's documentation record: the
//! Anthropic front over an OpenAI provider (tools both ways, the provider's key in
//! place of the client's, the model routed), the OpenAI front over an Anthropic
//! provider streamed (each chunk out before the provider produces the next; the usage
//! of the last event in `ctx.ext` when the exchange completes), and refusals (the
//! gateway's 401, an unknown model, a provider's error) in each front's own shape.
//! The official SDKs against `turnpike echo --llm`: crates/turnpike/tests/ai_e2e.rs.

mod support;

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use arc_swap::ArcSwap;
use bytes::Bytes;
use http_body_util::{BodyExt, Full, StreamBody};
use hyper::body::{Frame, Incoming};
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use serde_json::{json, Value};
use support::*;
use tokio::net::TcpListener;
use tokio::sync::mpsc;
use turnpike_config::Snapshot;
use turnpike_gateway::{Completion, Observer, RequestCtx};
use turnpike_policy::ai::{TokenEstimate, TokenUsage};

const WAIT: Duration = Duration::from_secs(10);
const KEY: &str = "client-key-1";
/// sha256("client-key-1")
const KEY_SHA: &str = "64dbdc38ede19b85cac8beccc15d52debb1a30e42c2fa15716ce95ac0913ad09";

/// What the provider was sent: path, headers, body.
type Seen = (String, http::HeaderMap, Value);

/// A provider: records each request; answers a streamed one with the events the test
/// sends through the sender it is given, a whole one with `whole(path)`, and a model
/// named `broken` with a 400 in the provider's own shape.
async fn provider() -> (
    SocketAddr,
    mpsc::UnboundedReceiver<Seen>,
    mpsc::UnboundedReceiver<mpsc::Sender<Bytes>>,
) {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    let (seen_tx, seen) = mpsc::unbounded_channel();
    let (streams_tx, streams) = mpsc::unbounded_channel();
    tokio::spawn(async move {
        while let Ok((s, _)) = listener.accept().await {
            let (seen_tx, streams_tx) = (seen_tx.clone(), streams_tx.clone());
            let svc = service_fn(move |req: Request<Incoming>| {
                let (seen_tx, streams_tx) = (seen_tx.clone(), streams_tx.clone());
                async move {
                    let (parts, body) = req.into_parts();
                    let bytes = body
                        .collect()
                        .await
                        .map(|b| b.to_bytes())
                        .unwrap_or_default();
                    let v: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
                    let path = parts.uri.path().to_owned();
                    let _ = seen_tx.send((path.clone(), parts.headers, v.clone()));
                    Ok::<_, Infallible>(answer(&path, &v, &streams_tx))
                }
            });
            tokio::spawn(async move {
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(s), svc)
                    .await;
            });
        }
    });
    (addr, seen, streams)
}

type Answer = Response<
    http_body_util::Either<
        Full<Bytes>,
        StreamBody<futures_util::stream::BoxStream<'static, Result<Frame<Bytes>, Infallible>>>,
    >,
>;

fn answer(path: &str, v: &Value, streams: &mpsc::UnboundedSender<mpsc::Sender<Bytes>>) -> Answer {
    use futures_util::StreamExt;
    use http_body_util::Either;
    let json = |status: u16, body: Value| {
        Response::builder()
            .status(status)
            .header("content-type", "application/json")
            .body(Either::Left(Full::new(Bytes::from(body.to_string()))))
            .expect("response")
    };
    if v["model"] == "broken" {
        return match path {
            "/v1/messages" => json(
                400,
                json!({"type": "error", "error": {"type": "invalid_request_error", "message": "broken model"}}),
            ),
            _ => json(
                400,
                json!({"error": {"message": "broken model", "type": "invalid_request_error", "param": null, "code": "model_broken"}}),
            ),
        };
    }
    if v["stream"] == true {
        let (tx, events) = mpsc::channel::<Bytes>(1);
        let _ = streams.send(tx);
        let frames = futures_util::stream::unfold(events, |mut events| async move {
            let e = events.recv().await?;
            Some((Ok::<_, Infallible>(Frame::data(e)), events))
        })
        .boxed();
        return Response::builder()
            .header("content-type", "text/event-stream")
            .body(Either::Right(StreamBody::new(frames)))
            .expect("response");
    }
    match path {
        // platform.openai.com, Chat Completions: a function call.
        "/v1/chat/completions" => json(
            200,
            json!({
            "id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": v["model"],
            "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {"role": "assistant", "content": null,
                "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "weather", "arguments": "{\"city\":\"Oslo\"}"}}]}}],
            "usage": {"prompt_tokens": 21, "completion_tokens": 9, "total_tokens": 30}}),
        ),
        _ => json(
            404,
            json!({"error": {"message": "no such path", "type": "invalid_request_error"}}),
        ),
    }
}

/// Tells the test the usage and estimate each exchange ended with.
struct Usage(mpsc::UnboundedSender<(Option<TokenUsage>, Option<TokenEstimate>, u16)>);

impl Observer for Usage {
    fn name(&self) -> &'static str {
        "usage"
    }
    fn on_complete(&self, ctx: &RequestCtx, done: &Completion) {
        let _ = self.0.send((
            ctx.ext.get::<TokenUsage>().cloned(),
            ctx.ext.get::<TokenEstimate>().copied(),
            done.status.as_u16(),
        ));
    }
}

struct Setup {
    gw: TestGateway,
    seen: mpsc::UnboundedReceiver<Seen>,
    streams: mpsc::UnboundedReceiver<mpsc::Sender<Bytes>>,
    usage: mpsc::UnboundedReceiver<(Option<TokenUsage>, Option<TokenEstimate>, u16)>,
    _key_file: tempfile::NamedTempFile,
}

/// A gateway with one AI API at /llm/v1 over the provider, which speaks `kind`.
async fn setup(kind: &str) -> Setup {
    let (addr, seen, streams) = provider().await;
    let key_file = tempfile::NamedTempFile::new().expect("key file");
    std::fs::write(key_file.path(), "sk-provider-secret\n").expect("write key");
    let yaml = format!(
        r#"
security:
  api_keys:
    - {{ sha256: "{sha}", application: app1, subscriber: u1 }}
apis:
  - name: llm
    context: /llm
    version: v1
    auth: {{ oauth2: false, api_key: true, subscription: false }}
    ai:
      providers:
        - {{ name: p1, kind: {kind}, url: "http://{addr}/v1", key: "file:{key}" }}
      models:
        - {{ name: gpt-4o-mini, provider: p1, model: provider-model }}
        - {{ name: claude-sonnet-4-5, provider: p1, model: provider-model }}
        - {{ name: broken, provider: p1 }}
"#,
        sha = KEY_SHA,
        key = key_file.path().display(),
    );
    let snap = Snapshot::from_yaml(&yaml, "test").expect("valid AI config");
    let (tx, usage) = mpsc::unbounded_channel();
    let snaps = Arc::new(ArcSwap::from_pointee(snap));
    let gw = gateway_built(snaps, |_| {}, |b| b.observer(Arc::new(Usage(tx)))).await;
    Setup {
        gw,
        seen,
        streams,
        usage,
        _key_file: key_file,
    }
}

async fn next<T>(rx: &mut mpsc::UnboundedReceiver<T>) -> T {
    tokio::time::timeout(WAIT, rx.recv())
        .await
        .ok()
        .flatten()
        .expect("in time")
}

#[tokio::test]
async fn the_anthropic_front_calls_an_openai_provider_with_tools_both_ways() {
    let mut s = setup("openai").await;
    let resp = client()
        .post(s.gw.url("/llm/v1/messages"))
        .header("x-api-key", KEY)
        .header("anthropic-version", "2023-06-01")
        .header("content-type", "application/json")
        .body(json!({
            "model": "claude-sonnet-4-5", "max_tokens": 100, "system": "Be brief.",
            "tools": [{"name": "weather", "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}}}],
            "messages": [{"role": "user", "content": "Weather in Oslo?"}],
        }).to_string())
        .send()
        .await
        .expect("send");
    assert_eq!(resp.status(), 200);
    let msg = json_of(resp).await;
    assert_eq!(msg["type"], "message");
    assert_eq!(msg["stop_reason"], "tool_use");
    assert_eq!(
        msg["content"][0],
        json!({"type": "tool_use", "id": "call_1", "name": "weather", "input": {"city": "Oslo"}})
    );
    assert_eq!(msg["usage"]["input_tokens"], 21);
    let (path, headers, sent) = next(&mut s.seen).await;
    assert_eq!(path, "/v1/chat/completions");
    assert_eq!(headers["authorization"], "Bearer sk-provider-secret");
    assert!(
        headers.get("x-api-key").is_none() && headers.get("apikey").is_none(),
        "{headers:?}"
    );
    assert_eq!(sent["model"], "provider-model");
    assert_eq!(
        sent["messages"][0],
        json!({"role": "system", "content": "Be brief."})
    );
    assert_eq!(sent["tools"][0]["function"]["name"], "weather");
    let (usage, estimate, status) = next(&mut s.usage).await;
    assert_eq!(status, 200);
    let usage = usage.expect("usage in ctx.ext");
    assert_eq!(
        (usage.prompt, usage.completion, usage.total, usage.estimated),
        (21, 9, 30, false)
    );
    assert_eq!(usage.provider.as_deref(), Some("p1"));
    assert_eq!(estimate.map(|e| e.max_completion), Some(100));

    // The tool's result goes back as a `tool` message.
    let resp = client()
        .post(s.gw.url("/llm/v1/messages"))
        .header("x-api-key", KEY)
        .header("content-type", "application/json")
        .body(json!({
            "model": "claude-sonnet-4-5", "max_tokens": 100,
            "messages": [
                {"role": "user", "content": "Weather in Oslo?"},
                {"role": "assistant", "content": [{"type": "tool_use", "id": "call_1", "name": "weather", "input": {"city": "Oslo"}}]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "call_1", "content": "snow"}]},
            ],
        }).to_string())
        .send()
        .await
        .expect("send");
    assert_eq!(resp.status(), 200);
    let (_, _, sent) = next(&mut s.seen).await;
    assert_eq!(sent["messages"][1]["tool_calls"][0]["id"], "call_1");
    assert_eq!(
        sent["messages"][2],
        json!({"role": "tool", "tool_call_id": "call_1", "content": "snow"})
    );
}

/// Reads until `want` arrived.
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
async fn the_openai_front_streams_an_anthropic_provider_chunk_by_chunk() {
    let mut s = setup("anthropic").await;
    let mut resp = client()
        .post(s.gw.url("/llm/v1/chat/completions"))
        .header("authorization", format!("Bearer {KEY}"))
        .header("content-type", "application/json")
        .body(
            json!({"model": "gpt-4o-mini", "stream": true, "max_tokens": 50,
                      "messages": [{"role": "user", "content": "Hi"}]})
            .to_string(),
        )
        .send()
        .await
        .expect("send");
    assert_eq!(resp.status(), 200);
    let (path, headers, sent) = next(&mut s.seen).await;
    assert_eq!(path, "/v1/messages");
    assert_eq!(headers["x-api-key"], "sk-provider-secret");
    assert_eq!(headers["anthropic-version"], "2023-06-01");
    assert!(headers.get("authorization").is_none());
    assert_eq!(
        (sent["max_tokens"].as_u64(), sent["stream"].as_bool()),
        (Some(50), Some(true))
    );
    let events = next(&mut s.streams).await;
    // docs.anthropic.com, "Streaming Messages": each event produced only once the
    // previous one came out translated.
    let script = [
        (
            r#"{"type":"message_start","message":{"id":"msg_1","model":"provider-model","usage":{"input_tokens":12,"output_tokens":1}}}"#,
            "\"role\":\"assistant\"",
        ),
        (
            r#"{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}"#,
            "",
        ),
        (
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hel"}}"#,
            "\"content\":\"Hel\"",
        ),
        (
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"lo"}}"#,
            "\"content\":\"lo\"",
        ),
        (
            r#"{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":2}}"#,
            "\"finish_reason\":\"stop\"",
        ),
        (r#"{"type":"message_stop"}"#, "data: [DONE]"),
    ];
    let mut got = String::new();
    for (data, want) in script {
        let name = serde_json::from_str::<Value>(data).expect("json")["type"]
            .as_str()
            .expect("type")
            .to_owned();
        events
            .send(Bytes::from(format!("event: {name}\ndata: {data}\n\n")))
            .await
            .expect("open");
        if !want.is_empty() {
            read_until(&mut resp, &mut got, want).await;
        }
    }
    drop(events);
    let _ = tokio::time::timeout(WAIT, resp.bytes()).await;
    assert!(got.contains("chat.completion.chunk"), "{got}");
    assert!(
        !got.contains("\"usage\""),
        "the usage chunk was not asked for: {got}"
    );
    let (usage, _, status) = next(&mut s.usage).await;
    assert_eq!(status, 200);
    let usage = usage.expect("usage settled before on_complete");
    assert_eq!(
        (usage.prompt, usage.completion, usage.estimated),
        (12, 2, false)
    );
}

#[tokio::test]
async fn refusals_and_provider_errors_take_the_fronts_shape() {
    let s = setup("openai").await;
    let no_key = client()
        .post(s.gw.url("/llm/v1/messages"))
        .header("content-type", "application/json")
        .body(json!({"model": "claude-sonnet-4-5", "max_tokens": 5, "messages": []}).to_string())
        .send()
        .await
        .expect("send");
    assert_eq!(no_key.status(), 401);
    let e = json_of(no_key).await;
    assert_eq!(
        (e["type"].as_str(), e["error"]["type"].as_str()),
        (Some("error"), Some("authentication_error")),
        "{e}"
    );
    let no_key = client()
        .post(s.gw.url("/llm/v1/chat/completions"))
        .header("content-type", "application/json")
        .body(json!({"model": "gpt-4o-mini", "messages": []}).to_string())
        .send()
        .await
        .expect("send");
    assert_eq!(no_key.status(), 401);
    let e = json_of(no_key).await;
    assert_eq!(e["error"]["type"], "authentication_error", "{e}");
    let unknown = client()
        .post(s.gw.url("/llm/v1/chat/completions"))
        .header("apikey", KEY)
        .header("content-type", "application/json")
        .body(json!({"model": "gpt-9", "messages": []}).to_string())
        .send()
        .await
        .expect("send");
    assert_eq!(unknown.status(), 404);
    let e = json_of(unknown).await;
    assert!(
        e["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("gpt-9")),
        "{e}"
    );
    let deep = format!(
        "{{\"model\":\"gpt-4o-mini\",\"messages\":[{}]}}",
        "[".repeat(40) + &"]".repeat(40)
    );
    let refused = client()
        .post(s.gw.url("/llm/v1/chat/completions"))
        .header("apikey", KEY)
        .header("content-type", "application/json")
        .body(deep)
        .send()
        .await
        .expect("send");
    assert_eq!(refused.status(), 400);
    assert_eq!(
        json_of(refused).await["error"]["type"],
        "invalid_request_error"
    );
    // The provider's own error, crossed over to the Anthropic front.
    let broken = client()
        .post(s.gw.url("/llm/v1/messages"))
        .header("x-api-key", KEY)
        .header("content-type", "application/json")
        .body(json!({"model": "broken", "max_tokens": 5, "messages": [{"role": "user", "content": "x"}]}).to_string())
        .send()
        .await
        .expect("send");
    assert_eq!(broken.status(), 400);
    let e = json_of(broken).await;
    assert_eq!(
        e,
        json!({"type": "error", "error": {"type": "invalid_request_error", "message": "broken model"}})
    );
}
