//! Issue 30 item 1's providers end to end: the real binary as the gateway and as the
//! provider (`turnpike echo --llm`, which also speaks Gemini's `generateContent` and
//! Bedrock's Converse with AWS event-stream frames, and takes Azure's deployment paths
//! and Mistral's OpenAI-compatible API), driven by the official Python SDKs
//! (tests/py/ai_providers.py): for each of Gemini, Mistral, Bedrock and Azure, a chat
//! call, a streamed one, a tool round trip through the OpenAI front and a message, a
//! streamed message and a tool use through the Anthropic front, each translated both
//! ways; what the provider received (its path, query, key header or SigV4 signature,
//! body shape) read back from the echo; a provider's errors in each front's shape.

mod support;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::Value;
use support::{get, start, start_file_gateway, TempDir};

const KEY: &str = "ai-demo-key-123";
const KEY_SHA: &str = "07d57a391962697fc4028c9b30c0cba4323664d7636b99ba0c1faa8206b6bcc8";
/// The provider key echo requires; Bedrock's access key id is it too.
const PROVIDER_KEY: &str = "provider-key-9";

fn config(echo: &str, dir: &std::path::Path) -> String {
    let key = dir.join("provider.key");
    std::fs::write(&key, PROVIDER_KEY).expect("write key");
    let secret = dir.join("aws.secret");
    std::fs::write(&secret, "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY").expect("write secret");
    let (key, secret) = (key.display(), secret.display());
    format!(
        r#"
security:
  api_keys:
    - {{ sha256: "{KEY_SHA}", application: app, subscriber: alice }}
  subscriptions:
    - {{ api: /ai/v1, application: app, state: ACTIVE, tier: Plenty }}
    - {{ api: /bedrock/v1, application: app, state: ACTIVE, tier: Plenty }}
throttling:
  subscription_tiers:
    - {{ name: Plenty, quota: {{ requests: 100000, per: minute }} }}
apis:
  - name: ai
    context: /ai
    version: v1
    auth: {{ oauth2: false, api_key: true }}
    ai:
      providers:
        - {{ name: gem, kind: gemini, url: "http://{echo}", key: "file:{key}" }}
        - {{ name: mis, kind: mistral, url: "http://{echo}", key: "file:{key}" }}
        - {{ name: bed, kind: bedrock, url: "http://{echo}", region: us-east-1,
             key_id: "file:{key}", key: "file:{secret}" }}
        - {{ name: az, kind: azure, url: "http://{echo}", key: "file:{key}", api_version: "2024-10-21" }}
      models:
        - {{ name: gemini-2.0-flash, provider: gem }}
        - {{ name: gemini-broken, provider: gem, model: error-400 }}
        - {{ name: mistral-small, provider: mis, model: mistral-small-latest }}
        - {{ name: bedrock-haiku, provider: bed, model: "anthropic.claude-3-haiku-20240307-v1:0" }}
        - {{ name: bedrock-broken, provider: bed, model: error-429 }}
        - {{ name: azure-4o, provider: az, model: my-deployment }}
  # Bedrock's own API passed through, signed.
  - name: bedrock
    context: /bedrock
    version: v1
    auth: {{ oauth2: false, api_key: true }}
    ai:
      passthrough: true
      providers:
        - {{ name: bed, kind: bedrock, url: "http://{echo}", region: eu-west-1,
             key_id: "file:{key}", key: "file:{secret}" }}
"#
    )
}

/// The OpenAI front's calls to one provider, and what the provider was sent.
fn check_openai(model: &str, v: &Value) {
    let chat = &v["chat"];
    assert!(
        chat["content"]
            .as_str()
            .is_some_and(|c| c.contains("Say hello")),
        "{model}: {chat}"
    );
    assert_eq!(chat["finish"], "stop", "{model}: {chat}");
    assert!(
        chat["prompt"].as_u64() > Some(0) && chat["completion"].as_u64() > Some(0),
        "{model}: {chat}"
    );
    let s = &v["stream"];
    assert!(s["chunks"].as_u64() >= Some(3), "{model}: {s}");
    assert!(
        s["text"].as_str().is_some_and(|t| t.contains("Say hello")),
        "{model}: {s}"
    );
    // Mistral puts the usage in its last chunk unasked and refuses `stream_options`,
    // which the gateway leaves out; the echo playing it speaks OpenAI's rule (no usage
    // unasked), so only the others' usage chunk is checked here.
    if model != "mistral-small" {
        assert!(
            s["total"].as_u64() > Some(0),
            "{model}: the usage chunk: {s}"
        );
    }
    let t = &v["tool_call"];
    assert_eq!(t["finish"], "tool_calls", "{model}: {t}");
    assert_eq!(t["calls"][0]["name"], "get_weather", "{model}: {t}");
    let args: Value = serde_json::from_str(t["calls"][0]["arguments"].as_str().unwrap_or(""))
        .expect("JSON arguments");
    assert!(args["city"].is_string(), "{model}: {t}");
    let r = &v["tool_result"]["content"];
    assert!(
        r.as_str().is_some_and(|c| c.contains("snow, -3 C")),
        "{model}: the tool's result reached the provider: {r}"
    );
}

fn check_anthropic(model: &str, v: &Value) {
    let m = &v["message"];
    assert!(
        m["text"].as_str().is_some_and(|t| t.contains("Say hello")),
        "{model}: {m}"
    );
    assert_eq!(m["stop"], "end_turn", "{model}: {m}");
    assert!(
        m["input"].as_u64() > Some(0) && m["output"].as_u64() > Some(0),
        "{model}: {m}"
    );
    let s = &v["stream"];
    assert_eq!(s["stop"], "end_turn", "{model}: {s}");
    // (Mistral's stream usage: see check_openai.)
    if model != "mistral-small" {
        assert!(s["output"].as_u64() > Some(0), "{model}: {s}");
    }
    for k in [
        "message_start",
        "content_block_start",
        "content_block_delta",
        "content_block_stop",
        "message_delta",
        "message_stop",
    ] {
        assert!(
            s["kinds"].to_string().contains(k),
            "{model}: {k} missing: {s}"
        );
    }
    let t = &v["tool_use"];
    assert_eq!(t["stop"], "tool_use", "{model}: {t}");
    assert_eq!(t["uses"][0]["name"], "get_weather", "{model}: {t}");
    assert!(t["uses"][0]["input"]["city"].is_string(), "{model}: {t}");
}

#[test]
fn gemini_mistral_bedrock_and_azure_through_both_fronts() {
    let dir = TempDir::new();
    let (_echo, echo) = start(
        &[
            "echo",
            "--llm",
            "--llm-key",
            PROVIDER_KEY,
            "--llm-tokens-per-second",
            "500",
            "--port",
            "0",
        ],
        "echo listening on http://",
    );
    let cfg = dir.path().join("ai.yaml");
    std::fs::write(&cfg, config(&echo, dir.path())).expect("write config");
    let (_gw, gw) = start_file_gateway(&cfg, dir.path(), &[]);
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/py/ai_providers.py");
    let out = Command::new("python3")
        .args([
            script,
            &format!("http://{gw}"),
            KEY,
            &format!("http://{echo}"),
        ])
        .output()
        .expect("python3 runs");
    assert!(
        out.status.success(),
        "ai_providers.py failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).expect("the script's JSON");

    for model in [
        "gemini-2.0-flash",
        "mistral-small",
        "bedrock-haiku",
        "azure-4o",
    ] {
        check_openai(model, &v[model]["openai"]);
        check_anthropic(model, &v[model]["anthropic"]);
    }

    // What each provider was sent.
    let g = &v["gemini-2.0-flash"]["openai"];
    let sent = &g["chat_sent"];
    assert_eq!(
        sent["path"], "/models/gemini-2.0-flash:generateContent",
        "{sent}"
    );
    assert_eq!(sent["headers"]["x-goog-api-key"], PROVIDER_KEY, "{sent}");
    assert!(
        sent["headers"].get("authorization").is_none(),
        "the client's key is not forwarded: {sent}"
    );
    assert_eq!(
        sent["body"]["systemInstruction"]["parts"][0]["text"], "Be brief.",
        "{sent}"
    );
    assert_eq!(sent["body"]["contents"][0]["role"], "user", "{sent}");
    assert_eq!(
        g["stream_sent"]["path"],
        "/models/gemini-2.0-flash:streamGenerateContent"
    );
    assert_eq!(g["stream_sent"]["query"], "alt=sse");
    let decl = &g["tool_sent"]["body"]["tools"][0]["functionDeclarations"][0];
    assert_eq!(decl["name"], "get_weather", "{decl}");
    assert!(
        decl["parameters"].get("additionalProperties").is_none(),
        "{decl}"
    );
    let fr = &g["tool_result_sent"]["body"]["contents"][2]["parts"][0]["functionResponse"];
    assert_eq!(fr["name"], "get_weather", "{fr}");

    let m = &v["mistral-small"]["openai"];
    assert_eq!(m["chat_sent"]["path"], "/chat/completions");
    assert_eq!(m["chat_sent"]["body"]["model"], "mistral-small-latest");
    assert_eq!(
        m["chat_sent"]["headers"]["authorization"],
        format!("Bearer {PROVIDER_KEY}")
    );
    assert!(
        m["stream_sent"]["body"].get("stream_options").is_none(),
        "Mistral takes none: {m}"
    );

    let b = &v["bedrock-haiku"]["openai"];
    let sent = &b["chat_sent"];
    assert_eq!(
        sent["path"], "/model/anthropic.claude-3-haiku-20240307-v1%3A0/converse",
        "{sent}"
    );
    let auth = sent["headers"]["authorization"].as_str().unwrap_or("");
    assert!(
        auth.starts_with(&format!("AWS4-HMAC-SHA256 Credential={PROVIDER_KEY}/")),
        "{sent}"
    );
    assert!(
        auth.contains("/us-east-1/bedrock/aws4_request, SignedHeaders=host;x-amz-date, Signature="),
        "{sent}"
    );
    assert!(
        sent["headers"]["x-amz-date"]
            .as_str()
            .is_some_and(|d| d.len() == 16 && d.ends_with('Z')),
        "{sent}"
    );
    assert_eq!(sent["body"]["system"][0]["text"], "Be brief.", "{sent}");
    assert_eq!(sent["body"]["inferenceConfig"]["maxTokens"], 32, "{sent}");
    assert!(b["stream_sent"]["path"]
        .as_str()
        .is_some_and(|p| p.ends_with("/converse-stream")));
    let spec = &b["tool_sent"]["body"]["toolConfig"]["tools"][0]["toolSpec"];
    assert_eq!(spec["name"], "get_weather", "{spec}");

    let a = &v["azure-4o"]["openai"];
    assert_eq!(
        a["chat_sent"]["path"],
        "/deployments/my-deployment/chat/completions"
    );
    assert_eq!(a["chat_sent"]["query"], "api-version=2024-10-21");
    assert_eq!(a["chat_sent"]["headers"]["api-key"], PROVIDER_KEY);
    assert!(
        a["chat_sent"]["headers"].get("authorization").is_none(),
        "{a}"
    );

    // A provider's errors, in each front's shape.
    let e = &v["gemini-broken"];
    assert_eq!(e["openai"]["status"], 400, "{e}");
    assert_eq!(
        e["openai"]["body"]["type"], "invalid_request_error",
        "OpenAI's shape: {e}"
    );
    assert!(
        e["openai"]["body"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("error 400")),
        "{e}"
    );
    assert_eq!(e["anthropic"]["class"], "BadRequestError", "{e}");
    assert_eq!(
        e["anthropic"]["body"]["error"]["type"], "invalid_request_error",
        "{e}"
    );
    let e = &v["bedrock-broken"];
    assert_eq!(e["openai"]["status"], 429, "{e}");
    assert_eq!(e["openai"]["body"]["type"], "rate_limit_error", "{e}");
    assert_eq!(
        e["anthropic"]["body"]["type"], "error",
        "Anthropic's shape: {e}"
    );
    assert_eq!(
        e["anthropic"]["body"]["error"]["type"], "rate_limit_error",
        "{e}"
    );
}

/// Bedrock's native Converse path through a pass-through API: the client's body as
/// sent, the request signed (SigV4) for the provider's region.
#[test]
fn bedrock_pass_through_is_signed() {
    let dir = TempDir::new();
    let (_echo, echo) = start(
        &["echo", "--llm", "--llm-key", PROVIDER_KEY, "--port", "0"],
        "echo listening on http://",
    );
    let cfg = dir.path().join("ai.yaml");
    std::fs::write(&cfg, config(&echo, dir.path())).expect("write config");
    let (_gw, gw) = start_file_gateway(&cfg, dir.path(), &[]);
    let body = r#"{"messages":[{"role":"user","content":[{"text":"native hello"}]}],"inferenceConfig":{"maxTokens":9}}"#;
    let mut s = TcpStream::connect(&gw).expect("connect");
    write!(
        s,
        "POST /bedrock/v1/model/m1/converse HTTP/1.1\r\nhost: gw\r\napikey: {KEY}\r\ncontent-type: application/json\r\nconnection: close\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    )
    .expect("send");
    let mut answer = String::new();
    s.read_to_string(&mut answer).expect("answer");
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert!(
        answer.contains("native hello"),
        "Converse's own answer: {answer}"
    );
    let (_, last) = get(&format!("http://{echo}/_echo/last"));
    let last: Value = serde_json::from_str(&last).expect("JSON");
    assert_eq!(last["path"], "/model/m1/converse", "{last}");
    assert_eq!(last["body"]["inferenceConfig"]["maxTokens"], 9, "{last}");
    let auth = last["headers"]["authorization"].as_str().unwrap_or("");
    assert!(
        auth.starts_with(&format!("AWS4-HMAC-SHA256 Credential={PROVIDER_KEY}/"))
            && auth.contains("/eu-west-1/bedrock/aws4_request"),
        "{last}"
    );
    assert!(
        last["headers"].get("apikey").is_none(),
        "the client's key stays: {last}"
    );
}

/// echo's stream counters.
fn streams(echo: &str) -> Value {
    let (status, body) = get(&format!("http://{echo}/_echo/stats"));
    assert_eq!(status, 200, "{body}");
    serde_json::from_str::<Value>(&body).expect("stats JSON")["streams"].clone()
}

/// A client that reads the first streamed bytes of a long answer and hangs up: the
/// provider's stream is cancelled (its connection closed) within moments, not left to
/// run the minutes its answer would take; once for a relayed stream (Mistral, OpenAI's
/// wire) and once for a translated one (Bedrock's event-stream frames).
#[test]
fn a_client_that_hangs_up_cancels_the_providers_stream() {
    let dir = TempDir::new();
    let (_echo, echo) = start(
        &[
            "echo",
            "--llm",
            "--llm-key",
            PROVIDER_KEY,
            "--llm-tokens-per-second",
            "50",
            "--port",
            "0",
        ],
        "echo listening on http://",
    );
    let cfg = dir.path().join("ai.yaml");
    std::fs::write(&cfg, config(&echo, dir.path())).expect("write config");
    let (_gw, gw) = start_file_gateway(&cfg, dir.path(), &[]);
    for (i, model) in ["mistral-small", "bedrock-haiku"].into_iter().enumerate() {
        let body = format!(
            r#"{{"model":"{model}","stream":true,"messages":[{{"role":"user","content":"lorem 5000"}}]}}"#
        );
        let mut s = TcpStream::connect(&gw).expect("connect");
        s.set_read_timeout(Some(Duration::from_secs(10)))
            .expect("timeout");
        write!(
            s,
            "POST /ai/v1/chat/completions HTTP/1.1\r\nhost: gw\r\napikey: {KEY}\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
            body.len()
        )
        .expect("send");
        let mut got = Vec::new();
        let mut buf = [0u8; 4096];
        while !String::from_utf8_lossy(&got).contains("data: {") {
            let n = s.read(&mut buf).expect("the stream's first events");
            assert!(n > 0, "closed early: {}", String::from_utf8_lossy(&got));
            got.extend_from_slice(&buf[..n]);
        }
        assert!(
            String::from_utf8_lossy(&got).starts_with("HTTP/1.1 200"),
            "{}",
            String::from_utf8_lossy(&got)
        );
        let before = streams(&echo);
        assert_eq!(before["cancelled"], i, "{before}");
        drop(s);
        let hung_up = Instant::now();
        while streams(&echo)["cancelled"] != i + 1 {
            assert!(
                hung_up.elapsed() < Duration::from_secs(3),
                "{model}: the provider's stream still runs: {}",
                streams(&echo)
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        assert_eq!(
            streams(&echo)["finished"],
            0,
            "{model}: no stream ran to its end"
        );
    }
}
