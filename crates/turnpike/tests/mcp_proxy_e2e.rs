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

use std::process::Command;

use serde_json::{json, Value};
use support::{post_json as post, Proc, TempDir};

const KEY: &str = "agent-key-1";

/// The Python SDK's server as the remote: (process, its URL). Each tool it runs is
/// appended to `log`.
fn remote(name: &str, log: &std::path::Path) -> (Proc, String) {
    remote_over(name, log, "streamable_http")
}

/// The remote over `transport` (`sse`: the legacy HTTP+SSE transport).
fn remote_over(name: &str, log: &std::path::Path, transport: &str) -> (Proc, String) {
    support::mcp_remote(name, log, transport)
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

/// A session opened by hand (`key`: the `apikey: ...` header): the answer's head and
/// body, and the session id it issued.
fn initialize(url: &str, key: &str) -> (String, String, String) {
    let init = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"curl","version":"1"}}}"#;
    let (status, head, body) = post(url, &[key], init);
    assert_eq!(status, 200, "{body}");
    let session = head
        .lines()
        .find_map(|l| l.strip_prefix("mcp-session-id:"))
        .map(|s| s.trim().to_owned())
        .expect("initialize issues a session");
    (head, body, session)
}

/// The Python SDK's client running `steps` (tests/py/mcp_steps.py) as `key`.
fn steps(url: &str, key: &str, steps: Value) -> Value {
    support::mcp_steps(url, key, &steps)
}

/// `yaml` served on port 0.
fn gateway_of(dir: &TempDir, yaml: &str) -> (Proc, String) {
    let file = dir.path().join("gateway.yaml");
    std::fs::write(&file, yaml).expect("write");
    support::start_file_gateway(&file, &dir.path().join("data"), &[])
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
    let (head, body, session) = initialize(&url, &key);
    assert!(head.contains("content-type: text/event-stream"), "{head}");
    assert!(body.contains(r#""serverInfo":{"name":"weather""#), "{body}");
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

const READER: &str = "reader-key";
const ADMIN: &str = "admin-key";

/// Two applications (`reader` with `weather:read`, `admin-app` with `weather:admin` too),
/// a two-calls-a-minute policy, and `mcp` (the section, indented for an API entry).
fn governed(endpoints: &str, mcp: &str) -> String {
    format!(
        r#"
security:
  api_keys:
    - sha256: "ec4408df15da46b328f6f3246fa723d0aa6cb0f0a0dd9c4626080ab1b02aa3b2"  # reader-key
      application: reader
      subscriber: alice
      scopes: [weather:read]
    - sha256: "69a5265506c94c77b787a7d7377b7685a0eff82e33920a71e7ee22cd6154953e"  # admin-key
      application: admin-app
      subscriber: bob
      scopes: [weather:read, weather:admin]
  subscriptions:
    - {{ api: /tools/v1, application: reader, state: ACTIVE, tier: Unlimited }}
    - {{ api: /tools/v1, application: admin-app, state: ACTIVE, tier: Unlimited }}
throttling:
  advanced_policies:
    - {{ name: TwoPerMin, default_limit: {{ requests: 2, per: minute }} }}
apis:
  - name: tools
    context: /tools
    version: v1
    {endpoints}
    auth: {{ api_key: true, subscription: true }}
    mcp:
      upstream: streamable_http
{mcp}"#
    )
}

/// A proxied server's tools governed by their shown names: `sum` (the remote's `add`)
/// two calls a minute per application, the third a tool error with the throttler's
/// headers; `echo` only for a caller with `weather:admin` (403 `insufficient_scope`
/// otherwise); refused calls never reach the remote.
#[test]
fn a_proxied_servers_tools_have_their_own_scopes_and_limits() {
    let dir = TempDir::new();
    let log = dir.path().join("remote.log");
    let (_remote, remote_url) = remote("weather", &log);
    let mcp = r#"      tools:
        - { tool: add, name: sum, throttling: TwoPerMin }
        - { tool: echo, scopes: [weather:admin] }
"#;
    let yaml = governed(&format!("endpoints: [\"{remote_url}\"]"), mcp);
    let (_gw, gw) = gateway_of(&dir, &yaml);
    let url = format!("http://{gw}/mcp/tools/v1");
    let sum = json!(["call", "sum", {"a": 1, "b": 2}]);
    let r = steps(&url, READER, json!([sum, sum, sum]));
    let calls = r["calls"].as_array().expect("calls");
    assert_eq!(calls[0]["text"], "3", "{r}");
    assert_eq!(calls[1]["is_error"], false, "{r}");
    assert_eq!(calls[2]["is_error"], true, "the third in a minute: {r}");
    assert_eq!(calls[2]["structured"]["code"], "throttled", "{r}");
    assert_eq!(calls[2]["structured"]["policy"], "TwoPerMin", "{r}");

    // Another application counts on its own and holds the scope.
    let echo = json!(["call", "echo", {"text": "hi"}]);
    let r = steps(&url, ADMIN, json!([sum, echo]));
    assert_eq!(r["calls"][0]["text"], "3", "{r}");
    assert_eq!(r["calls"][1]["text"], "weather: hi", "{r}");

    // By hand: the refusals' HTTP answers.
    let key = format!("apikey: {READER}");
    let (_, _, session) = initialize(&url, &key);
    let sid = format!("mcp-session-id: {session}");
    let call = |name: &str| {
        let m = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
            "params": {"name": name, "arguments": {"a": 1, "b": 2, "text": "x"}}});
        post(&url, &[&key, &sid], &m.to_string())
    };
    let (status, head, body) = call("echo");
    assert_eq!(status, 403, "{body}");
    assert!(body.contains(r#""code":"insufficient_scope""#), "{body}");
    assert!(
        head.contains(r#"error="insufficient_scope", scope="weather:admin""#),
        "{head}"
    );
    let (status, head, body) = call("sum");
    assert_eq!(status, 200, "{body}");
    assert!(body.contains(r#""isError":true"#), "{body}");
    assert!(
        head.contains("retry-after:") && head.contains("ratelimit:"),
        "{head}"
    );
    assert_eq!(
        ran(&log),
        ["add", "add", "add", "echo"],
        "refusals stay here"
    );
}

/// Several remotes behind one endpoint: two Python SDK servers (`weather`, `git`) and
/// one that is down. The SDK client lists every live server's tools as
/// `<server>__<tool>` (each server filtered as its entry says; the dead one left out),
/// calls one of each (routed by prefix, the remote's session used), a tool's limit
/// counts by its prefixed name; then by hand: `ping` answered here, `DELETE` ends the
/// session.
#[test]
fn several_remote_servers_are_multiplexed_behind_one_endpoint() {
    let dir = TempDir::new();
    let (weather_log, git_log) = (dir.path().join("weather.log"), dir.path().join("git.log"));
    let (_weather, weather_url) = remote("weather", &weather_log);
    let (_git, git_url) = remote("git", &git_log);
    let down = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        format!("http://{}/mcp", l.local_addr().expect("addr"))
    };
    let mcp = format!(
        r#"      servers:
        - name: weather
          url: "{weather_url}"
          tools: [{{ tool: add, throttling: TwoPerMin }}, {{ tool: echo }}]
        - name: down
          url: "{down}"
        - name: git
          url: "{git_url}"
          deny_tools: [secret]
"#
    );
    let (_gw, gw) = gateway_of(&dir, &governed("", &mcp));
    let url = format!("http://{gw}/mcp/tools/v1");
    let add = json!(["call", "weather__add", {"a": 20, "b": 22}]);
    let r = steps(
        &url,
        READER,
        json!([
            ["list"],
            ["call", "weather__echo", {"text": "hi"}],
            ["call", "git__echo", {"text": "hi"}],
            ["call", "git__session", {}],
            add, add, add,
            ["call", "git__secret", {}],
            ["call", "weather__session", {}],
            ["call", "down__add", {"a": 1, "b": 1}],
            ["call", "add", {"a": 1, "b": 1}],
        ]),
    );
    assert_eq!(r["server"], "tools", "the endpoint is the API: {r}");
    assert_eq!(
        r["tools"],
        json!([
            "git__add",
            "git__announce",
            "git__echo",
            "git__fail",
            "git__login",
            "git__progress",
            "git__session",
            "weather__add",
            "weather__echo"
        ])
    );
    let calls = r["calls"].as_array().expect("calls");
    assert_eq!(calls[0]["text"], "weather: hi", "{r}");
    assert_eq!(calls[1]["text"], "git: hi", "{r}");
    let git_session = calls[2]["text"].as_str().unwrap_or("");
    assert!(!git_session.is_empty(), "git's own session: {r}");
    assert_eq!(calls[3]["text"], "42", "{r}");
    assert_eq!(calls[4]["is_error"], false, "{r}");
    assert_eq!(calls[5]["structured"]["code"], "throttled", "{r}");
    assert_eq!(
        calls[6..],
        [
            json!({"error": -32602}),
            json!({"error": -32602}),
            json!({"error": -32602}),
            json!({"error": -32602})
        ],
        "denied, not allowed, a server left out, no prefix: {r}"
    );
    assert_eq!(ran(&weather_log), ["echo", "add", "add"]);
    assert_eq!(ran(&git_log), ["echo", "session"]);

    let key = format!("apikey: {READER}");
    let (_, body, session) = initialize(&url, &key);
    assert!(body.contains(r#""serverInfo":{"name":"tools""#), "{body}");
    assert!(!body.contains(git_session), "never a remote's id: {body}");
    let sid = format!("mcp-session-id: {session}");
    let status = |method: &str| {
        let out = Command::new("curl")
            .args(["-s", "-o", "/dev/null", "-w", "%{http_code}", "-X", method])
            .args(["-H", &key, "-H", &sid, &url])
            .output()
            .expect("curl");
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let list = r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#;
    let (code, _, body) = post(&url, &[&key, &sid], list);
    assert_eq!(code, 200, "{body}");
    assert!(body.contains("git__echo"), "{body}");
    let ping = r#"{"jsonrpc":"2.0","id":3,"method":"ping"}"#;
    assert_eq!(
        post(&url, &[&key, &sid], ping).2,
        r#"{"jsonrpc":"2.0","id":3,"result":{}}"#
    );
    assert_eq!(status("DELETE"), "204");
    assert_eq!(post(&url, &[&key, &sid], list).0, 404, "ended");
}

/// A legacy HTTP+SSE remote (the Python SDK's server, `transport="sse"`) behind a
/// Streamable HTTP endpoint: the SDK's client initialises, lists the filtered tools and
/// calls them (answers taken off the remote's event stream), a call's progress reaches
/// it before the result (the gate, as for a multiplexed call), a denied tool refused;
/// `DELETE` ends the session.
#[test]
fn a_legacy_sse_remote_is_served_over_streamable_http() {
    let dir = TempDir::new();
    let log = dir.path().join("remote.log");
    let (_remote, remote_url) = remote_over("weather", &log, "sse");
    let mcp = r#"      tools:
        - { tool: add, name: sum, throttling: TwoPerMin }
        - { tool: echo }
        - { tool: progress }
"#;
    let yaml = governed(&format!("endpoints: [\"{remote_url}\"]"), mcp)
        .replace("upstream: streamable_http", "upstream: sse");
    let gate = dir.path().join("gate");
    let (_gw, gw) = gateway_of(&dir, &yaml);
    let url = format!("http://{gw}/mcp/tools/v1");
    let r = steps(
        &url,
        READER,
        json!([
            ["list"],
            ["call", "sum", {"a": 40, "b": 2}],
            ["call", "echo", {"text": "hi"}],
            ["call", "secret", {}],
            ["progress", "progress", {"gate": gate}],
        ]),
    );
    assert_eq!(r["tools"], json!(["echo", "progress", "sum"]), "{r}");
    assert_eq!(r["calls"][0]["text"], "42", "{r}");
    assert_eq!(r["calls"][1]["text"], "weather: hi", "{r}");
    assert_eq!(r["calls"][2], json!({"error": -32602}), "{r}");
    assert_eq!(r["calls"][3]["text"], "the gate opened", "{r}");
    assert_eq!(
        r["calls"][3]["order"],
        json!(["progress 1", "progress 2", "result"]),
        "{r}"
    );
    assert_eq!(ran(&log), ["add", "echo", "progress"]);

    let key = format!("apikey: {READER}");
    let (head, body, session) = initialize(&url, &key);
    assert!(head.contains("content-type: application/json"), "{head}");
    assert!(body.contains(r#""protocolVersion":"#), "{body}");
    let sid = format!("mcp-session-id: {session}");
    let out = Command::new("curl")
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
    assert_eq!(String::from_utf8_lossy(&out.stdout), "204");
    let list = r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#;
    assert_eq!(post(&url, &[&key, &sid], list).0, 404, "ended");
}

/// Two Python SDK servers multiplexed as `weather` and `git` (git's `secret` denied),
/// served on port 0: (remotes, gateway, endpoint URL, weather's log).
fn multiplexed(dir: &TempDir) -> ([Proc; 2], Proc, String, std::path::PathBuf) {
    let (weather_log, git_log) = (dir.path().join("weather.log"), dir.path().join("git.log"));
    let (weather, weather_url) = remote("weather", &weather_log);
    let (git, git_url) = remote("git", &git_log);
    let mcp = format!(
        r#"      servers:
        - {{ name: weather, url: "{weather_url}" }}
        - {{ name: git, url: "{git_url}", deny_tools: [secret] }}
"#
    );
    let (gw, addr) = gateway_of(dir, &governed("", &mcp));
    let url = format!("http://{addr}/mcp/tools/v1");
    ([weather, git], gw, url, weather_log)
}

/// A multiplexed call's events are relayed as they arrive: the remote's tool reports
/// progress, then waits for a file the client creates only once that progress reached
/// it (the gate), then answers. Were the answer relayed whole, the gate would stay
/// shut and the tool would say so; the client sees the progress before the result.
#[test]
fn a_multiplexed_calls_progress_reaches_the_client_before_its_result() {
    let dir = TempDir::new();
    let (_remotes, _gw, url, log) = multiplexed(&dir);
    let gate = dir.path().join("gate");
    let r = steps(
        &url,
        READER,
        json!([
            ["progress", "weather__progress", {"gate": gate}],
            ["call", "git__echo", {"text": "after"}],
        ]),
    );
    let call = &r["calls"][0];
    assert_eq!(call["text"], "the gate opened", "{r}");
    assert_eq!(
        call["order"],
        json!(["progress 1", "progress 2", "result"]),
        "{r}"
    );
    assert_eq!(
        r["calls"][1]["text"], "git: after",
        "the session goes on: {r}"
    );
    assert_eq!(ran(&log), ["progress"]);

    // By hand: the answer is the remote's event stream, ids and events as they were.
    let key = format!("apikey: {READER}");
    let (_, _, session) = initialize(&url, &key);
    let sid = format!("mcp-session-id: {session}");
    let call = r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"weather__echo","arguments":{"text":"raw"}}}"#;
    let (status, head, body) = post(&url, &[&key, &sid], call);
    assert_eq!(status, 200, "{body}");
    assert!(head.contains("content-type: text/event-stream"), "{head}");
    let log_event = body.find("weather echoes raw").expect("the log event");
    let result = body.find(r#""id":7"#).expect("the result event");
    assert!(log_event < result, "{body}");
}

/// The official TypeScript SDK's client (tools/mcp-node/mux-client.mjs) through the
/// multiplexer: lists the prefixed tools of both servers, calls one of each, gets a
/// tool's progress before its result (the gate, as above), is refused a denied tool.
#[test]
fn the_typescript_sdk_reaches_multiplexed_remotes_through_the_gateway() {
    let dir = TempDir::new();
    let (_remotes, _gw, url, _) = multiplexed(&dir);
    let gate = dir.path().join("gate");
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tools/mcp-node/mux-client.mjs"
    );
    let out = Command::new("node")
        .args([script, &url, READER, gate.to_str().expect("utf-8")])
        .output()
        .expect("node runs (scripts/install-test-deps.sh installs tools/mcp-node)");
    assert!(
        out.status.success(),
        "mux-client.mjs failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r: Value = serde_json::from_slice(&out.stdout).expect("json from the script");
    assert_eq!(r["server"], "tools", "the endpoint is the API: {r}");
    let tools = r["tools"].as_array().expect("tools");
    for t in [
        "weather__add",
        "weather__secret",
        "git__echo",
        "git__progress",
    ] {
        assert!(tools.contains(&json!(t)), "{t}: {r}");
    }
    assert!(!tools.contains(&json!("git__secret")), "denied: {r}");
    assert_eq!(r["add"], json!({"isError": false, "text": "42"}));
    assert_eq!(r["echo"], json!({"isError": false, "text": "git: hi"}));
    assert_eq!(r["progress"]["text"], "the gate opened", "{r}");
    assert_eq!(
        r["progress"]["order"],
        json!(["progress 1", "progress 2", "result"]),
        "{r}"
    );
    assert_eq!(r["denied"], -32602, "{r}");
}

/// The servers' own streams merged: a `GET` opens each server's stream in the session
/// and relays their events as one stream (without the servers' own `id:`s); a
/// notification each remote sends outside any call (a tool calls
/// `send_tool_list_changed`) reaches the client on it.
#[test]
fn a_multiplexed_get_merges_the_servers_own_streams() {
    let dir = TempDir::new();
    let (_remotes, _gw, url, _) = multiplexed(&dir);
    let key = format!("apikey: {READER}");
    let (_, _, session) = initialize(&url, &key);
    let sid = format!("mcp-session-id: {session}");
    let (head, body) = (dir.path().join("head"), dir.path().join("body"));
    let get = Command::new("curl")
        .args(["-s", "-N", "--max-time", "30"])
        .arg("-D")
        .arg(&head)
        .arg("-o")
        .arg(&body)
        .args([
            "-H",
            &key,
            "-H",
            &sid,
            "-H",
            "accept: text/event-stream",
            &url,
        ])
        .spawn()
        .expect("curl");
    let _get = Proc(get);
    let read = |p: &std::path::Path| std::fs::read_to_string(p).unwrap_or_default();
    support::wait_until("the merged stream's head", || read(&head).contains(" 200"));
    assert!(
        read(&head).contains("content-type: text/event-stream"),
        "{}",
        read(&head)
    );
    for tool in ["weather__announce", "git__announce"] {
        let m = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
            "params": {"name": tool, "arguments": {}}});
        let (status, _, answer) = post(&url, &[&key, &sid], &m.to_string());
        assert_eq!(status, 200, "{answer}");
        assert!(answer.contains("announced"), "{answer}");
    }
    support::wait_until("both servers' notifications on the merged stream", || {
        read(&body)
            .matches("notifications/tools/list_changed")
            .count()
            == 2
    });
    assert!(
        !read(&body).lines().any(|l| l.starts_with("id:")),
        "{}",
        read(&body)
    );
}
