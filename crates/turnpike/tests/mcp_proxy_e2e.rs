//! A remote MCP server proxied as an API, end to end: the remote is the official Python
//! SDK's own server (tests/py/mcp_remote.py, Streamable HTTP answering POSTs with
//! Server-Sent Events) on 127.0.0.1:0, the gateway serves examples/mcp-proxy.yaml with
//! its endpoint pointed there, and the client is the official Python SDK's Streamable
//! HTTP client (tests/py/mcp_proxy_client.py). Asserted: the SDK initialises through the
//! gateway (the remote's own server info), lists only the allowed tools under their new
//! names, its calls reach the remote (a renamed one by its remote name), the remote's
//! SSE answers are relayed (a log event before the result), a denied tool and a
//! renamed tool's remote name are refused before the remote hears of them, the remote's
//! session id never reaches the client, and a caller without a key gets 401. Then the
//! transport by hand: sessions required, the server stream (GET) relayed, ended by
//! DELETE (the remote's too).

mod support;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

use serde_json::{json, Value};
use support::{post_json as post, Proc, TempDir};

const KEY: &str = "agent-key-1";

/// The Python SDK's server as the remote: (process, its URL). Each tool it runs is
/// appended to `log`.
fn remote(name: &str, log: &std::path::Path) -> (Proc, String) {
    let mut child = Command::new("python3")
        .arg(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/py/mcp_remote.py"
        ))
        .args([name, log.to_str().expect("utf-8")])
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("python3 runs (scripts/install-test-deps.sh installs the mcp SDK)");
    let stdout = child.stdout.take().expect("stdout");
    let mut lines = BufReader::new(stdout).lines();
    let url = loop {
        let line = lines
            .next()
            .expect("the remote printed its URL")
            .expect("read stdout");
        if let Some(u) = line.strip_prefix("remote mcp on ") {
            break u.trim().to_owned();
        }
    };
    std::thread::spawn(move || for _ in lines {});
    (Proc(child), url)
}

/// examples/mcp-proxy.yaml with its endpoint at `remote`, served on port 0.
fn gateway(dir: &TempDir, remote: &str) -> (Proc, String) {
    let example = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../examples/mcp-proxy.yaml"
    ))
    .expect("examples/mcp-proxy.yaml");
    let yaml = example.replace("http://127.0.0.1:8000/mcp", remote);
    assert_ne!(yaml, example, "the example names its endpoint");
    let file = dir.path().join("mcp-proxy.yaml");
    std::fs::write(&file, yaml).expect("write");
    let data = dir.path().join("data");
    support::start(
        &[
            "gateway",
            "--config",
            file.to_str().expect("utf-8"),
            "--http-port",
            "0",
            "--https-port",
            "off",
            "--data-dir",
            data.to_str().expect("utf-8"),
        ],
        "gateway listening on http://",
    )
}

fn ran(log: &std::path::Path) -> Vec<String> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

#[test]
fn the_python_sdk_reaches_a_remote_mcp_server_through_the_gateway_filtered_and_renamed() {
    let dir = TempDir::new();
    let log = dir.path().join("remote.log");
    let (_remote, remote_url) = remote("weather", &log);
    let (_gw, gw) = gateway(&dir, &remote_url);
    let url = format!("http://{gw}/mcp/weather/v1");
    let out = Command::new("python3")
        .arg(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/py/mcp_proxy_client.py"
        ))
        .args([&url, KEY])
        .output()
        .expect("python3 runs");
    assert!(
        out.status.success(),
        "mcp_proxy_client.py failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r: Value = serde_json::from_slice(&out.stdout).expect("json from the script");

    assert_eq!(r["server"], "weather", "the remote's own initialize answer");
    assert_eq!(
        r["tools"],
        json!({
            "sum": "Adds two integers (the remote's add).",
            "echo": "Says the text back, logging first (two events on one stream).",
            "session": "The Mcp-Session-Id this server sees.",
        }),
        "allowed tools only, renamed and described as the section says"
    );
    assert_eq!(r["sum"], json!({"is_error": false, "text": "42"}));
    assert_eq!(r["echo"], json!({"is_error": false, "text": "weather: hi"}));
    assert_eq!(
        r["logs"],
        json!(["weather echoes hi"]),
        "the event before the result"
    );
    let sse = r["content_types"]
        .as_array()
        .expect("content types")
        .iter()
        .filter(|c| c.as_str().unwrap_or("").starts_with("text/event-stream"))
        .count();
    assert!(sse >= 4, "the remote's SSE answers relayed as SSE: {r}");
    // The client saw only the gateway's session id; the remote saw only its own.
    let ids: Vec<&str> = r["session_ids"]
        .as_array()
        .expect("ids")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(!ids.is_empty());
    assert!(ids.iter().all(|id| id.len() == 32), "{ids:?}");
    let remote_session = r["remote_session"].as_str().unwrap_or("");
    assert!(!remote_session.is_empty(), "the remote had a session");
    assert!(!ids.contains(&remote_session), "{ids:?} {remote_session}");
    // `secret` is denied, `add` is only callable as `sum`: refused before the remote.
    assert_eq!(r["refused"], json!([-32602, -32602]));
    assert_eq!(ran(&log), ["add", "echo", "session"]);
    assert_eq!(r["anonymous_status"], 401);
}

#[test]
fn sessions_are_the_gateways_and_end_at_the_remote_too() {
    let dir = TempDir::new();
    let log = dir.path().join("remote.log");
    let (_remote, remote_url) = remote("weather", &log);
    let (_gw, gw) = gateway(&dir, &remote_url);
    let url = format!("http://{gw}/mcp/weather/v1");
    let key = format!("apikey: {KEY}");
    let init = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"curl","version":"1"}}}"#;
    let (status, head, body) = post(&url, &[&key], init);
    assert_eq!(status, 200, "{body}");
    assert!(head.contains("content-type: text/event-stream"), "{head}");
    assert!(body.contains(r#""serverInfo":{"name":"weather""#), "{body}");
    let session = head
        .lines()
        .find_map(|l| l.strip_prefix("mcp-session-id:"))
        .map(|s| s.trim().to_owned())
        .expect("initialize issues a session");
    assert_eq!(session.len(), 32, "the gateway's own id");
    let sid = format!("mcp-session-id: {session}");
    let list = r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#;

    assert_eq!(post(&url, &[&key], list).0, 400, "no session id");
    let other = "mcp-session-id: 0123456789abcdef0123456789abcdef";
    assert_eq!(post(&url, &[&key, other], list).0, 404, "unknown session");
    let (status, head, body) = post(&url, &[&key, &sid], list);
    assert_eq!(status, 200, "{body}");
    assert!(
        !head.contains("mcp-session-id"),
        "never the remote's: {head}"
    );
    assert!(
        body.contains(r#""name":"sum""#) && !body.contains("secret"),
        "{body}"
    );

    // The server stream: opened at the remote in its session, relayed as it streams.
    let stream = Command::new("curl")
        .args(["-s", "-D", "-", "-o", "/dev/null", "--max-time", "2"])
        .args([
            "-H",
            &key,
            "-H",
            &sid,
            "-H",
            "accept: text/event-stream",
            &url,
        ])
        .output()
        .expect("curl");
    let stream_head = String::from_utf8_lossy(&stream.stdout).to_ascii_lowercase();
    assert!(stream_head.starts_with("http/1.1 200"), "{stream_head}");
    assert!(
        stream_head.contains("content-type: text/event-stream"),
        "{stream_head}"
    );
    assert!(!stream_head.contains("mcp-session-id"), "{stream_head}");

    let delete = Command::new("curl")
        .args([
            "-s",
            "-o",
            "/dev/null",
            "-w",
            "%{http_code}",
            "-X",
            "DELETE",
        ])
        .args(["-H", &key, "-H", &sid, &url])
        .output()
        .expect("curl");
    let code = String::from_utf8_lossy(&delete.stdout).into_owned();
    assert!(
        code.starts_with('2'),
        "the remote ended its session: {code}"
    );
    assert_eq!(post(&url, &[&key, &sid], list).0, 404, "ended");
}

/// The official TypeScript SDK's client (tools/mcp-node/proxy-client.mjs) through the
/// proxy: lists the filtered tools, calls a renamed one, is refused a denied one, ends
/// its session.
#[test]
fn the_typescript_sdk_reaches_the_remote_through_the_proxy() {
    let dir = TempDir::new();
    let log = dir.path().join("remote.log");
    let (_remote, remote_url) = remote("weather", &log);
    let (_gw, gw) = gateway(&dir, &remote_url);
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tools/mcp-node/proxy-client.mjs"
    );
    let out = Command::new("node")
        .args([script, &format!("http://{gw}/mcp/weather/v1"), KEY])
        .output()
        .expect("node runs (scripts/install-test-deps.sh installs tools/mcp-node)");
    assert!(
        out.status.success(),
        "proxy-client.mjs failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r: Value = serde_json::from_slice(&out.stdout).expect("json from the script");
    assert_eq!(r["session"].as_str().map(str::len), Some(32));
    assert_eq!(r["tools"], json!(["echo", "session", "sum"]));
    assert_eq!(r["sum"], json!({"isError": false, "text": "42"}));
    assert_eq!(r["denied"], -32602);
    assert_eq!(ran(&log), ["add"]);
}
