//! examples/ai.yaml end to end (issue 30's contract): the real binary as the gateway and
//! as the provider (`turnpike echo --llm`, OpenAI-compatible), and the official Python
//! SDKs (tests/py/ai_sdks.py): OpenAI's with `base_url` at the API and the example's key
//! as its bearer key, Anthropic's against the Anthropic front with the key as its
//! `x-api-key`. Each completes a call and a streamed call whose chunks arrive one by one,
//! a tool round trip (the Anthropic front's over an OpenAI provider is translated both
//! ways), and sees refusals in its own error shape; then the OpenAI SDK spends the
//! example tier's tokens until a call is refused 429 with token RateLimit headers.

mod support;

use std::process::Command;

use serde_json::Value;
use support::{ai_example as example, start, start_file_gateway, TempDir};

#[test]
fn the_official_sdks_call_both_fronts_of_the_example() {
    let dir = TempDir::new();
    // A paced provider (50 tokens a second), as a real one streams.
    let (_echo, echo) = start(
        &[
            "echo",
            "--llm",
            "--llm-tokens-per-second",
            "50",
            "--port",
            "0",
        ],
        "echo listening on http://",
    );
    let (yaml, key) = example(&echo);
    let cfg = dir.path().join("ai.yaml");
    std::fs::write(&cfg, yaml).expect("write config");
    let (_gw, gw) = start_file_gateway(&cfg, dir.path(), &[]);
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/py/ai_sdks.py");
    let out = Command::new("python3")
        .args([script, &format!("http://{gw}"), &key])
        .output()
        .expect("python3 runs");
    assert!(
        out.status.success(),
        "ai_sdks.py failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).expect("the script's JSON");

    let chat = &v["openai_chat"];
    assert!(
        chat["content"].as_str().is_some_and(|c| !c.is_empty()),
        "{chat}"
    );
    assert_eq!(chat["finish"], "stop", "{chat}");
    assert!(
        chat["prompt"].as_u64() > Some(0) && chat["completion"].as_u64() > Some(0),
        "{chat}"
    );

    let s = &v["openai_stream"];
    assert!(s["chunks"].as_u64() >= Some(3), "{s}");
    // Each chunk is its own event to the SDK. That each leaves the gateway before the
    // provider produces the next is asserted where the test holds the provider's pen
    // (crates/turnpike-gateway/tests/ai.rs, response_stream.rs): the SDK's HTTP client
    // reads in blocks, so arrival times seen here say more about it than the gateway.

    let a = &v["anthropic_message"];
    assert!(a["text"].as_str().is_some_and(|t| !t.is_empty()), "{a}");
    assert_eq!(a["stop"], "end_turn", "{a}");
    assert!(
        a["input"].as_u64() > Some(0) && a["output"].as_u64() > Some(0),
        "{a}"
    );

    let s = &v["anthropic_stream"];
    assert!(s["deltas"].as_u64() >= Some(2), "{s}");
    assert_eq!(s["stop"], "end_turn", "{s}");
    let kinds = s["kinds"].to_string();
    for k in [
        "message_start",
        "content_block_start",
        "content_block_delta",
        "content_block_stop",
        "message_delta",
        "message_stop",
    ] {
        assert!(kinds.contains(k), "{k} missing: {kinds}");
    }

    let t = &v["openai_tool_call"];
    assert_eq!(t["finish"], "tool_calls", "{t}");
    assert_eq!(t["calls"][0]["name"], "get_weather", "{t}");
    assert!(v["openai_tool_result"]["content"].as_str().is_some(), "{v}");
    let t = &v["anthropic_tool_use"];
    assert_eq!(t["stop"], "tool_use", "{t}");
    assert_eq!(t["uses"][0]["name"], "get_weather", "{t}");
    assert!(t["uses"][0]["input"].is_object(), "{t}");
    assert!(v["anthropic_tool_result"]["text"].as_str().is_some(), "{v}");

    let e = &v["openai_error"];
    assert_eq!(e["status"], 404, "{e}");
    assert!(
        e["body"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("no-such-model")),
        "{e}"
    );
    let e = &v["anthropic_error"];
    assert_eq!(e["status"], 401, "{e}");
    assert_eq!(e["class"], "AuthenticationError", "{e}");
    assert_eq!(e["body"]["error"]["type"], "authentication_error", "{e}");

    let e = &v["openai_provider_error"];
    assert_eq!(e["status"], 503, "{e}");
    assert!(e["body"]["message"].is_string(), "OpenAI's shape: {e}");
    let e = &v["anthropic_provider_error"];
    assert_eq!(e["status"], 400, "{e}");
    assert_eq!(e["class"], "BadRequestError", "{e}");
    assert_eq!(e["body"]["type"], "error", "Anthropic's shape: {e}");
    assert_eq!(e["body"]["error"]["type"], "invalid_request_error", "{e}");

    // The contract's last line: once the tier's tokens are spent, the next call gets
    // 429 with RateLimit headers counting tokens.
    let b = &v["openai_budget"];
    assert_eq!(b["status"], 429, "never refused: {v}");
    assert!(b["spent"].as_array().is_some_and(|s| !s.is_empty()), "{b}");
    assert!(b["retry_after"].is_string(), "{b}");
    let policy = b["policy"].to_string();
    assert!(
        policy.contains("tokens-per-minute") && policy.contains("q=3000"),
        "{b}"
    );
    assert!(
        b["ratelimit"].to_string().contains("tokens-per-minute"),
        "{b}"
    );
    assert!(
        b["body"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("tokens")),
        "OpenAI's shape: {b}"
    );
}
