//! `turnpike echo --llm` over real sockets: the official Python SDKs (`openai`,
//! `anthropic`: tests/py/llm_*.py) chat, stream chunk by chunk, call tools and get their
//! own exception classes; raw HTTP checks each provider's SSE framing, exact usage,
//! errors in each front's shape, caps, and the stream counters a cancelled stream moves.

use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

use bytes::Bytes;
use http::{Request, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::client::conn::http1;
use hyper_util::rt::TokioIo;
use serde_json::{json, Value};
use turnpike_bench::echo::spawn_llm as spawn;
use turnpike_bench::echo_llm::LlmConfig;
use turnpike_tokens::Encoding;

const KEY: &str = "sk-echo-test";

async fn server() -> SocketAddr {
    let cfg = LlmConfig {
        key: Some(KEY.into()),
        ..LlmConfig::default()
    };
    spawn(cfg).await.expect("spawn echo --llm")
}

/// Runs tests/py/SCRIPT against the server and returns the JSON it prints.
async fn sdk(script: &str, addr: SocketAddr) -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/py")
        .join(script);
    let out = tokio::process::Command::new("python3")
        .arg(&path)
        .args([&format!("http://{addr}"), KEY])
        .output()
        .await
        .expect("python3 runs (scripts/install-test-deps.sh installs the SDKs)");
    assert!(
        out.status.success(),
        "{script} failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("JSON from the script")
}

fn count(text: &str) -> u64 {
    Encoding::O200kBase.count(text)
}

/// A chat prompt of one user message, by the echo's rule: priming, message, role, text.
fn one_message_prompt(text: &str) -> u64 {
    3 + 3 + count("user") + count(text)
}

fn joined(pieces: &Value) -> String {
    let pieces = pieces.as_array().expect("pieces");
    pieces.iter().map(|p| p.as_str().expect("piece")).collect()
}

/// The last piece arrived well after the first: the stream was not buffered.
fn assert_streamed(times: &Value) {
    let times: Vec<f64> = times
        .as_array()
        .expect("times")
        .iter()
        .filter_map(Value::as_f64)
        .collect();
    let spread = times.last().expect("pieces") - times[0];
    // 20 tokens at 50/s: the server sends the last 380 ms after the first.
    assert!(
        spread >= 200.0,
        "pieces arrived within {spread} ms: {times:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_openai_sdk_chats_streams_calls_tools_and_raises_its_errors() {
    let r = sdk("llm_openai.py", server().await).await;

    let text = "Hello, echo! Grüße 🚀";
    assert_eq!(r["chat"]["content"], text);
    assert_eq!(r["chat"]["finish"], "stop");
    assert_eq!(r["chat"]["model"], "gpt-4o-mini");
    let u = &r["chat"]["usage"];
    assert_eq!(u["completion_tokens"], count(text));
    assert_eq!(u["prompt_tokens"], one_message_prompt(text));
    assert_eq!(u["total_tokens"], count(text) + one_message_prompt(text));

    assert_eq!(r["cut"]["finish"], "length");
    assert_eq!(r["cut"]["completion_tokens"], 10);
    assert_eq!(count(r["cut"]["content"].as_str().expect("cut")), 10);

    let s = &r["stream"];
    assert_eq!(
        s["pieces"].as_array().expect("pieces").len(),
        20,
        "one chunk per token"
    );
    assert_eq!(count(&joined(&s["pieces"])), 20);
    assert_eq!(s["usage"]["completion_tokens"], 20);
    assert_eq!(s["usage"]["prompt_tokens"], one_message_prompt("lorem 20"));
    assert_eq!(s["finish"], "stop");
    assert_streamed(&s["times_ms"]);

    let t = &r["tools"];
    assert_eq!(t["finish"], "tool_calls");
    assert_eq!(t["name"], "get_weather");
    assert_eq!(t["arguments"], json!({"city": "test", "days": 1}));
    assert_eq!(t["streamed_arguments"], t["arguments"]);
    assert_eq!(t["answer"], "The tool returned: 18 degrees and sunny");

    let e = &r["errors"];
    assert_eq!(e["error-429"]["class"], "RateLimitError");
    assert_eq!(e["error-429"]["code"], "rate_limit_exceeded");
    assert_eq!(e["error-429"]["retry_after"], "1");
    assert_eq!(e["error-500"]["class"], "InternalServerError");
    assert_eq!(e["error-500"]["type"], "server_error");
    assert_eq!(e["error-400"]["class"], "BadRequestError");
    assert_eq!(e["wrong-key"]["class"], "AuthenticationError");
    assert_eq!(e["wrong-key"]["code"], "invalid_api_key");

    let em = &r["embeddings"];
    assert_eq!(em["n"], 3);
    assert_eq!(em["dims"], 1536);
    assert_eq!(em["short_dims"], 64);
    assert!(em["same"].as_f64().expect("cosine") > 0.999, "{em}");
    assert!(em["other"].as_f64().expect("cosine") < 0.3, "{em}");

    assert_eq!(r["completion"]["finish"], "length");
    assert_eq!(r["completion"]["usage"]["completion_tokens"], 5);
    assert_eq!(r["completion"]["usage"]["prompt_tokens"], count("lorem 30"));
    let models = r["models"].as_array().expect("models");
    assert!(models.contains(&json!("gpt-4o-mini")) && models.contains(&json!("claude-sonnet-4-5")));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_anthropic_sdk_chats_streams_calls_tools_and_raises_its_errors() {
    let r = sdk("llm_anthropic.py", server().await).await;

    let text = "Hello, Claude echo!";
    assert_eq!(r["chat"]["text"], text);
    assert_eq!(r["chat"]["stop"], "end_turn");
    let prompt = one_message_prompt(text) + 3 + count("system") + count("Be brief.");
    assert_eq!(r["chat"]["usage"]["input_tokens"], prompt);
    assert_eq!(r["chat"]["usage"]["output_tokens"], count(text));
    assert_eq!(r["count_tokens"], prompt);

    assert_eq!(r["cut"]["stop"], "max_tokens");
    assert_eq!(r["cut"]["output_tokens"], 7);

    let s = &r["stream"];
    assert_eq!(s["pieces"].as_array().expect("pieces").len(), 20);
    assert_eq!(count(&joined(&s["pieces"])), 20);
    assert_eq!(s["usage"]["output_tokens"], 20);
    // x-echo-cached-tokens: 3 of the prompt's tokens were read from the cache, which
    // Anthropic reports beside input_tokens, not in it.
    assert_eq!(s["usage"]["cache_read_input_tokens"], 3);
    assert_eq!(
        s["usage"]["input_tokens"],
        one_message_prompt("lorem 20") - 3
    );
    assert_eq!(s["stop"], "end_turn");
    assert_streamed(&s["times_ms"]);

    let events: Vec<&str> = r["events"]
        .as_array()
        .expect("events")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    // (The SDK passes no `ping` on: the raw framing test below sees it.)
    assert_eq!(&events[..2], ["message_start", "content_block_start"]);
    assert!(events[2..events.len() - 3]
        .iter()
        .all(|e| *e == "content_block_delta"));
    assert_eq!(
        &events[events.len() - 3..],
        ["content_block_stop", "message_delta", "message_stop"]
    );

    let t = &r["tools"];
    assert_eq!(t["stop"], "tool_use");
    assert_eq!(t["name"], "get_weather");
    assert_eq!(t["input"], json!({"city": "test", "unit": "celsius"}));
    assert_eq!(t["streamed_input"], t["input"]);
    assert_eq!(t["answer"], "The tool returned: 18 degrees and sunny");

    let e = &r["errors"];
    assert_eq!(e["error-429"]["class"], "RateLimitError");
    assert_eq!(e["error-429"]["type"], "rate_limit_error");
    assert_eq!(e["error-429"]["retry_after"], "1");
    assert_eq!(e["error-529"]["class"], "OverloadedError");
    assert_eq!(e["error-529"]["type"], "overloaded_error");
    assert_eq!(e["error-500"]["type"], "api_error");
    assert_eq!(e["bad"]["type"], "invalid_request_error");
    assert_eq!(e["wrong-key"]["class"], "AuthenticationError");
    assert_eq!(e["wrong-key"]["type"], "authentication_error");
}

type Sender = http1::SendRequest<Full<Bytes>>;

async fn connect(addr: SocketAddr) -> Sender {
    let stream = tokio::net::TcpStream::connect(addr).await.expect("connect");
    let (sender, conn) = http1::handshake(TokioIo::new(stream))
        .await
        .expect("handshake");
    tokio::spawn(conn);
    sender
}

async fn send(
    s: &mut Sender,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: Bytes,
) -> http::Response<Incoming> {
    let mut b = Request::builder()
        .method(method)
        .uri(path)
        .header("host", "echo");
    for (k, v) in headers {
        b = b.header(*k, *v);
    }
    s.ready().await.expect("ready");
    s.send_request(b.body(Full::new(body)).expect("request"))
        .await
        .expect("response")
}

async fn call(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &Value,
) -> (StatusCode, http::HeaderMap, Bytes) {
    let mut s = connect(addr).await;
    let body = if body.is_null() {
        Bytes::new()
    } else {
        Bytes::from(body.to_string())
    };
    let resp = send(&mut s, method, path, headers, body).await;
    let (parts, body) = resp.into_parts();
    (
        parts.status,
        parts.headers,
        body.collect().await.expect("body").to_bytes(),
    )
}

fn json_of(b: &Bytes) -> Value {
    serde_json::from_slice(b).expect("JSON body")
}

#[tokio::test]
async fn openai_streams_are_data_lines_ending_with_done_and_a_usage_chunk() {
    let addr = spawn(LlmConfig::default()).await.expect("spawn");
    let body = json!({"model": "gpt-4o", "stream": true, "stream_options": {"include_usage": true},
                      "messages": [{"role": "user", "content": "Hello world"}]});
    let (status, headers, raw) = call(addr, "POST", "/chat/completions", &[], &body).await;
    assert_eq!(status, StatusCode::OK);
    assert!(headers["content-type"]
        .to_str()
        .expect("ct")
        .starts_with("text/event-stream"));
    let text = String::from_utf8(raw.to_vec()).expect("utf-8");
    let events: Vec<&str> = text.split("\n\n").filter(|e| !e.is_empty()).collect();
    assert!(
        events
            .iter()
            .all(|e| e.starts_with("data: ") && !e.contains('\n')),
        "{text}"
    );
    assert_eq!(events.last(), Some(&"data: [DONE]"));
    let chunks: Vec<Value> = events[..events.len() - 1]
        .iter()
        .map(|e| serde_json::from_str(&e[6..]).expect("chunk"))
        .collect();
    assert_eq!(chunks[0]["choices"][0]["delta"]["role"], "assistant");
    let content: String = chunks
        .iter()
        .filter_map(|c| c["choices"][0]["delta"]["content"].as_str())
        .collect();
    assert_eq!(content, "Hello world");
    let (usage, rest) = chunks.split_last().expect("chunks");
    assert_eq!(usage["choices"], json!([]));
    assert_eq!(usage["usage"]["completion_tokens"], count("Hello world"));
    assert!(rest
        .iter()
        .all(|c| c["usage"].is_null() && c["object"] == "chat.completion.chunk"));
    assert_eq!(
        rest.last().expect("finish")["choices"][0]["finish_reason"],
        "stop"
    );
}

#[tokio::test]
async fn anthropic_streams_name_each_event_and_carry_usage_in_message_delta() {
    let addr = spawn(LlmConfig::default()).await.expect("spawn");
    let body = json!({"model": "claude-haiku-4-5", "max_tokens": 64, "stream": true,
                      "messages": [{"role": "user", "content": [{"type": "text", "text": "Hi there"}]}]});
    let (status, _, raw) = call(addr, "POST", "/v1/messages", &[], &body).await;
    assert_eq!(status, StatusCode::OK);
    let text = String::from_utf8(raw.to_vec()).expect("utf-8");
    let mut names = Vec::new();
    let mut datas = Vec::new();
    for e in text.split("\n\n").filter(|e| !e.is_empty()) {
        let (name, data) = e.split_once('\n').expect("event and data lines");
        let name = name.strip_prefix("event: ").expect("event line");
        let data: Value =
            serde_json::from_str(data.strip_prefix("data: ").expect("data line")).expect("json");
        assert_eq!(data["type"], name, "the data's type is the event's name");
        names.push(name.to_owned());
        datas.push(data);
    }
    let pieces = Encoding::O200kBase.pieces("Hi there").len();
    let mut expected = vec!["message_start", "content_block_start", "ping"];
    expected.extend(std::iter::repeat_n("content_block_delta", pieces));
    expected.extend(["content_block_stop", "message_delta", "message_stop"]);
    assert_eq!(names, expected);
    assert_eq!(
        datas[0]["message"]["usage"]["input_tokens"],
        one_message_prompt("Hi there")
    );
    let delta = &datas[datas.len() - 2];
    assert_eq!(delta["delta"]["stop_reason"], "end_turn");
    assert_eq!(delta["usage"]["output_tokens"], count("Hi there"));
}

#[tokio::test]
async fn errors_come_in_each_fronts_shape_and_caps_hold() {
    let addr = spawn(LlmConfig::default()).await.expect("spawn");
    let msgs = json!([{"role": "user", "content": "x"}]);
    let chat = json!({"model": "error-429", "messages": msgs});
    let (status, headers, body) = call(addr, "POST", "/v1/chat/completions", &[], &chat).await;
    assert_eq!(status, StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(headers["retry-after"], "1");
    assert_eq!(json_of(&body)["error"]["code"], "rate_limit_exceeded");

    let msg = json!({"model": "claude-sonnet-4-5", "max_tokens": 5, "messages": msgs});
    let (status, _, body) = call(
        addr,
        "POST",
        "/v1/messages",
        &[("x-echo-error", "503")],
        &msg,
    )
    .await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(json_of(&body)["type"], "error");
    assert_eq!(json_of(&body)["error"]["type"], "api_error");

    let many =
        json!({"model": "gpt-4o", "messages": vec![json!({"role": "user", "content": "x"}); 2049]});
    let (status, _, body) = call(addr, "POST", "/v1/chat/completions", &[], &many).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(json_of(&body)["error"]["param"], "messages");

    let no_max = json!({"model": "claude-sonnet-4-5", "messages": msgs});
    let (status, _, body) = call(addr, "POST", "/v1/messages", &[], &no_max).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(json_of(&body)["error"]["type"], "invalid_request_error");

    let mut s = connect(addr).await;
    let resp = send(
        &mut s,
        "POST",
        "/v1/chat/completions",
        &[],
        Bytes::from_static(b"{not json"),
    )
    .await;
    assert_eq!(resp.status(), StatusCode::BAD_REQUEST);
    let big = Bytes::from(vec![b' '; (8 << 20) + 1]);
    let mut s = connect(addr).await;
    let resp = send(&mut s, "POST", "/v1/embeddings", &[], big).await;
    assert_eq!(resp.status(), StatusCode::PAYLOAD_TOO_LARGE);

    let (status, _, body) = call(addr, "GET", "/v1/nothing", &[], &Value::Null).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert!(json_of(&body)["error"]["message"]
        .as_str()
        .expect("message")
        .contains("/v1/nothing"));
}

async fn stats(addr: SocketAddr) -> Value {
    json_of(&call(addr, "GET", "/_echo/stats", &[], &Value::Null).await.2)
}

#[tokio::test]
async fn a_client_leaving_mid_stream_is_counted_and_the_last_request_is_shown() {
    let addr = spawn(LlmConfig::default()).await.expect("spawn");
    let slow = json!({"model": "gpt-4o", "stream": true,
                      "messages": [{"role": "user", "content": "lorem 200"}]});
    let mut s = connect(addr).await;
    let resp = send(
        &mut s,
        "POST",
        "/v1/chat/completions",
        &[("x-echo-tokens-per-second", "20")],
        Bytes::from(slow.to_string()),
    )
    .await;
    let mut body = resp.into_body();
    let first = body.frame().await.expect("a frame").expect("data");
    assert!(first.data_ref().is_some_and(|d| d.starts_with(b"data: ")));
    drop(body);
    drop(s);
    let mut cancelled = Value::Null;
    for _ in 0..200 {
        cancelled = stats(addr).await["streams"]["cancelled"].clone();
        if cancelled == 1 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(cancelled, 1, "the dropped stream stopped generating");

    let quick =
        json!({"model": "gpt-4o", "stream": true, "messages": [{"role": "user", "content": "hi"}]});
    call(addr, "POST", "/v1/chat/completions", &[], &quick).await;
    let st = stats(addr).await;
    assert_eq!(
        st["streams"],
        json!({"started": 2, "finished": 1, "cancelled": 1})
    );

    let last = json_of(&call(addr, "GET", "/_echo/last", &[], &Value::Null).await.2);
    assert_eq!(last["path"], "/v1/chat/completions");
    assert_eq!(last["body"]["messages"][0]["content"], "hi");
    assert_eq!(last["headers"]["host"], "echo");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bench_llm_measures_ttft_and_tokens_against_the_echo() {
    let addr = spawn(LlmConfig {
        first_token: Duration::from_millis(20),
        ..LlmConfig::default()
    })
    .await
    .expect("spawn");
    for path in ["/v1/chat/completions", "/v1/messages"] {
        let args = turnpike_bench::llm::LlmArgs {
            url: format!("http://{addr}{path}"),
            streams: 4,
            duration: Duration::from_millis(600),
            warmup: Duration::from_millis(100),
            ramp: Duration::from_millis(40),
            model: "gpt-4o-mini".into(),
            prompt: "lorem 100".into(),
            max_tokens: 1024,
            api_key: None,
            headers: vec![],
            json: false,
        };
        let r = turnpike_bench::llm::execute(&args).await.expect("run");
        assert_eq!(r.errors, 0, "{path}: {r:?}");
        assert!(r.completed >= 4, "{path}: {r:?}");
        // The echo holds every stream's first byte 20 ms.
        assert!(r.ttft_p50_ms >= 19.0, "{path}: {r:?}");
        let per_stream = r.tokens_per_second * 0.6 / r.completed as f64;
        assert!(
            (per_stream - 100.0).abs() < 0.01,
            "{path}: 100 tokens a stream: {r:?}"
        );
    }
}
