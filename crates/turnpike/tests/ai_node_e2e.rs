//! The official OpenAI Node SDK (tools/openai-node, pinned, installed by
//! scripts/install-test-deps.sh) through examples/ai.yaml against `turnpike echo --llm`:
//! a chat call, a streamed chat call whose chunks the SDK yields one by one (one a
//! token, and the usage chunk asked for), a tool call and its result, and an unknown
//! model refused in OpenAI's error shape.

mod support;

use std::path::Path;
use std::process::Command;

use serde_json::Value;
use support::{ai_example, start, start_file_gateway, TempDir};

#[test]
fn the_openai_node_sdk_chats_streams_and_calls_tools() {
    let dir = TempDir::new();
    // A paced provider (100 tokens a second), as a real one streams.
    let (_echo, echo) = start(
        &[
            "echo",
            "--llm",
            "--llm-tokens-per-second",
            "100",
            "--port",
            "0",
        ],
        "echo listening on http://",
    );
    let (text, key) = ai_example(&echo);
    let cfg = dir.path().join("ai.yaml");
    std::fs::write(&cfg, text).expect("write config");
    let (_gw, gw) = start_file_gateway(&cfg, dir.path(), &[]);
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let script = root.join("tools/openai-node/chat.mjs");
    let out = Command::new("node")
        .arg(&script)
        .args([&format!("http://{gw}/ai/v1"), &key, "gpt-4o-mini"])
        .output()
        .expect("node runs (scripts/install-test-deps.sh installs tools/openai-node)");
    assert!(
        out.status.success(),
        "chat.mjs failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).expect("the script's JSON");

    let chat = &v["chat"];
    assert!(
        chat["content"]
            .as_str()
            .is_some_and(|c| c.contains("Say hello")),
        "{chat}"
    );
    assert_eq!(chat["finish"], "stop", "{chat}");
    assert!(
        chat["prompt"].as_u64() > Some(0) && chat["completion"].as_u64() > Some(0),
        "{chat}"
    );

    let s = &v["stream"];
    assert_eq!(s["pieces"], 12, "one chunk a token: {s}");
    assert!(s["total"].as_u64() > Some(12), "the usage chunk: {s}");
    // When they arrive says more about a freshly started Node process (its first stream
    // is yielded in bursts while it compiles) than about the gateway: that each event
    // leaves the gateway as the provider sends it is asserted where the test holds the
    // provider's pen (crates/turnpike-gateway/tests/ai.rs, response_stream.rs).

    let t = &v["tool_call"];
    assert_eq!(t["finish"], "tool_calls", "{t}");
    assert_eq!(t["name"], "get_weather", "{t}");
    assert!(t["arguments"]["city"].is_string(), "{t}");
    let r = &v["tool_result"]["content"];
    assert!(r.as_str().is_some_and(|c| c.contains("snow, -3 C")), "{r}");

    let e = &v["error"];
    assert_eq!(e["status"], 404, "{e}");
    assert_eq!(e["type"], "not_found_error", "{e}");
    assert!(
        e["message"]
            .as_str()
            .is_some_and(|m| m.contains("no-such-model")),
        "{e}"
    );
}
