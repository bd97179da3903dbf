//! An API as an MCP server, end to end with the real binary and the official MCP Python
//! SDK's Streamable HTTP client (tests/py/mcp_client.py): `turnpike gateway --config`
//! on examples/mcp.yaml (its endpoint pointed at a recording back end on port 0).
//! Asserted: the SDK initialises, lists the example's two tools with their JSON Schema
//! inputs, pings, and its calls reach the back end as the operations' REST requests
//! (path parameter percent-encoded, query, JSON body) through the API's chain; a 404
//! answer is an `isError` result; unknown tools and bad arguments are JSON-RPC errors; a
//! caller without a key gets 401 and an unsubscribed one 403. Then the transport's
//! rules by hand: sessions required, ended by DELETE, GET 405, batches refused.

mod support;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::process::Command;

use serde_json::{json, Value};
use support::{post_json as post, TempDir};

const KEY: &str = "agent-key-1";
const STRANGER: &str = "stranger-key-2";

/// A back end on 127.0.0.1:0 answering each request with what it received, as JSON
/// (`404` for a path naming `missing`).
fn recording_backend() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().expect("addr").to_string();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            std::thread::spawn(move || serve(stream));
        }
    });
    addr
}

fn serve(stream: std::net::TcpStream) {
    let mut reader = BufReader::new(stream.try_clone().expect("clone"));
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        let mut parts = line.split_whitespace();
        let (method, target) = (
            parts.next().unwrap_or("").to_owned(),
            parts.next().unwrap_or("").to_owned(),
        );
        let (mut length, mut content_type) = (0usize, String::new());
        loop {
            let mut h = String::new();
            if reader.read_line(&mut h).unwrap_or(0) == 0 || h == "\r\n" {
                break;
            }
            let (name, value) = h.split_once(':').unwrap_or(("", ""));
            match name.to_ascii_lowercase().as_str() {
                "content-length" => length = value.trim().parse().unwrap_or(0),
                "content-type" => content_type = value.trim().to_owned(),
                _ => {}
            }
        }
        let mut body = vec![0; length];
        if reader.read_exact(&mut body).is_err() {
            return;
        }
        let status = if target.contains("missing") {
            "404 Not Found"
        } else {
            "200 OK"
        };
        let answer = json!({
            "method": method,
            "target": target,
            "content_type": content_type,
            "body": String::from_utf8_lossy(&body),
        })
        .to_string();
        let head = format!(
            "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
            answer.len()
        );
        let mut w = &stream;
        if w.write_all(head.as_bytes())
            .and_then(|_| w.write_all(answer.as_bytes()))
            .is_err()
        {
            return;
        }
    }
}

/// examples/mcp.yaml with its endpoint at `backend`, served by a gateway on port 0 with
/// per-resource metrics: (process, gateway address, metrics address).
fn gateway(dir: &TempDir, backend: &str) -> (support::Proc, String, String) {
    let example = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../examples/mcp.yaml"
    ))
    .expect("examples/mcp.yaml");
    let yaml = example.replace("http://127.0.0.1:8080", &format!("http://{backend}"));
    assert_ne!(yaml, example, "the example names its endpoint");
    let file = dir.path().join("mcp.yaml");
    std::fs::write(&file, yaml).expect("write");
    let data = dir.path().join("data");
    let (proc, found) = support::start_printing(
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
            "--metrics-addr",
            "127.0.0.1:0",
            "--metrics-per-resource",
        ],
        &[],
        &["gateway metrics on http://", "gateway listening on http://"],
    );
    let metrics = found[0].trim_end_matches("/metrics").to_owned();
    (proc, found[1].clone(), metrics)
}

#[test]
fn the_python_sdk_lists_and_calls_an_apis_operations_as_tools() {
    let dir = TempDir::new();
    let backend = recording_backend();
    let (_gw, gw, _metrics) = gateway(&dir, &backend);
    let url = format!("http://{gw}/mcp/pets/v1");
    let out = Command::new("python3")
        .arg(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/py/mcp_client.py"
        ))
        .args([&url, KEY, STRANGER])
        .output()
        .expect("python3 runs (scripts/install-test-deps.sh installs the mcp SDK)");
    assert!(
        out.status.success(),
        "mcp_client.py failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r: Value = serde_json::from_slice(&out.stdout).expect("json from the script");

    assert_eq!(r["server"], "pets");
    assert_eq!(r["tools_capability"], true);
    let tools = r["tools"].as_object().expect("tools");
    assert_eq!(tools.len(), 2, "{tools:?}");
    assert_eq!(tools["getPet"]["description"], "Look a pet up by its id.");
    let get_schema = &tools["getPet"]["schema"];
    assert_eq!(get_schema["required"], json!(["petId"]));
    assert_eq!(get_schema["properties"]["fields"]["type"], "string");
    let add_schema = &tools["addPet"]["schema"];
    assert_eq!(
        add_schema["properties"]["body"]["required"],
        json!(["name"]),
        "$ref inlined"
    );

    // The calls reached the back end as the operations' REST requests.
    let get = &r["get"];
    assert_eq!(get["is_error"], false);
    assert_eq!(get["structured"]["method"], "GET");
    assert_eq!(
        get["structured"]["target"],
        "/pets/a%20b%2Fc?fields=name%26tag"
    );
    let add = &r["add"]["structured"];
    assert_eq!(
        (add["method"].as_str(), add["target"].as_str()),
        (Some("POST"), Some("/pets"))
    );
    assert_eq!(add["content_type"], "application/json");
    assert_eq!(
        serde_json::from_str::<Value>(add["body"].as_str().unwrap_or("")).ok(),
        Some(json!({"name": "Rex"}))
    );
    assert_eq!(r["missing"]["is_error"], true, "{}", r["missing"]);
    assert!(r["missing"]["text"]
        .as_str()
        .unwrap_or("")
        .starts_with("HTTP 404"));
    // Unknown tool, missing and unknown arguments: Invalid params.
    assert_eq!(r["bad_calls"], json!([-32602, -32602, -32602]));

    assert_ne!(r["anonymous"], "initialized");
    assert_eq!(r["anonymous_status"], 401);
    assert_eq!(r["stranger_status"], 403);
}

fn curl_status(args: &[&str]) -> u16 {
    let out = Command::new("curl")
        .args(["-s", "-o", "/dev/null", "-w", "%{http_code}"])
        .args(args)
        .output()
        .expect("curl");
    String::from_utf8_lossy(&out.stdout)
        .trim()
        .parse()
        .unwrap_or(0)
}

#[test]
fn sessions_are_issued_required_and_ended() {
    let dir = TempDir::new();
    let backend = recording_backend();
    let (_gw, gw, metrics) = gateway(&dir, &backend);
    let url = format!("http://{gw}/mcp/pets/v1");
    let key = format!("apikey: {KEY}");
    let init = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"curl","version":"1"}}}"#;
    let (status, head, body) = post(&url, &[&key], init);
    assert_eq!(status, 200, "{body}");
    let v: Value = serde_json::from_str(&body).expect("json");
    assert_eq!(v["result"]["protocolVersion"], "2025-06-18");
    let session = head
        .lines()
        .find_map(|l| l.strip_prefix("mcp-session-id:"))
        .map(|s| s.trim().to_owned())
        .expect("initialize issues a session");
    let sid = format!("mcp-session-id: {session}");
    let list = r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#;

    assert_eq!(post(&url, &[&key], list).0, 400, "no session id");
    assert_eq!(
        post(
            &url,
            &[&key, "mcp-session-id: 0123456789abcdef0123456789abcdef"],
            list
        )
        .0,
        404
    );
    assert_eq!(
        post(&url, &[&format!("apikey: {STRANGER}"), &sid], list).0,
        403,
        "auth first"
    );
    let (status, _, body) = post(
        &url,
        &[&key, &sid, "mcp-protocol-version: 2025-06-18"],
        list,
    );
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        post(
            &url,
            &[&key, &sid, "mcp-protocol-version: 1999-01-01"],
            list
        )
        .0,
        400
    );
    let note = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
    assert_eq!(post(&url, &[&key, &sid], note).0, 202);
    assert_eq!(
        post(&url, &[&key, &sid], &format!("[{list}]")).0,
        400,
        "no batches"
    );
    assert_eq!(post(&url, &[&key, &sid], "{not json").0, 400);
    let (status, _, body) = post(
        &url,
        &[&key, &sid],
        r#"{"jsonrpc":"2.0","id":3,"method":"resources/list"}"#,
    );
    assert_eq!(status, 200);
    assert_eq!(
        serde_json::from_str::<Value>(&body).expect("json")["error"]["code"],
        -32601
    );
    // A call is counted under its tool's name (per-tool metrics and analytics).
    let call = r#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"getPet","arguments":{"petId":"9"}}}"#;
    let (status, _, body) = post(&url, &[&key, &sid], call);
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        serde_json::from_str::<Value>(&body).expect("json")["result"]["structuredContent"]
            ["target"],
        "/pets/9"
    );
    let (status, text) = support::get(&format!("http://{metrics}/metrics"));
    assert_eq!(status, 200);
    assert!(
        text.lines()
            .any(|l| l.starts_with("turnpike_http_resource_requests_total{")
                && l.contains("resource=\"getPet\",class=\"2xx\"")
                && l.ends_with(" 1")),
        "{text}"
    );

    assert_eq!(
        curl_status(&["-H", &key, &url]),
        405,
        "no server stream: GET is 405"
    );
    assert_eq!(
        curl_status(&["-X", "DELETE", "-H", &key, "-H", &sid, &url]),
        204
    );
    assert_eq!(post(&url, &[&key, &sid], list).0, 404, "an ended session");
    // The API's REST resources still answer as before.
    let (status, body) = support::get(&format!("http://{gw}/pets/v1/pets/7"));
    assert_eq!(status, 401, "{body}");
    assert_eq!(
        curl_status(&["-H", &key, &format!("http://{gw}/pets/v1/pets/7")]),
        200
    );
}

/// The official TypeScript SDK's client (tools/mcp-node/client.mjs, installed by
/// scripts/install-test-deps.sh) connects, lists, calls and ends its session.
#[test]
fn the_typescript_sdk_lists_and_calls_tools() {
    let dir = TempDir::new();
    let backend = recording_backend();
    let (_gw, gw, _metrics) = gateway(&dir, &backend);
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tools/mcp-node/client.mjs"
    );
    let out = Command::new("node")
        .args([script, &format!("http://{gw}/mcp/pets/v1"), KEY])
        .output()
        .expect("node runs (scripts/install-test-deps.sh installs tools/mcp-node)");
    assert!(
        out.status.success(),
        "client.mjs failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r: Value = serde_json::from_slice(&out.stdout).expect("json from the script");
    assert_eq!(r["session"], true);
    assert_eq!(r["tools"], json!(["getPet", "addPet"]));
    assert_eq!(r["get"]["isError"], false);
    assert_eq!(r["get"]["structured"]["target"], "/pets/42");
}

const CP_TOKEN: &str = "mcp-e2e-gateway-token";
const PASSWORD: &str = "mcp-e2e-admin-password";

/// `method path` on the control plane as `admin`: the JSON answer (a 2xx asserted).
fn admin(cp: &str, method: &str, path: &str, body: Option<Value>) -> Value {
    let mut cmd = Command::new("curl");
    cmd.args(["-s", "-o", "-", "-w", "\n%{http_code}", "-X", method])
        .args(["-u", &format!("admin:{PASSWORD}")])
        .arg(format!("http://{cp}{path}"));
    if let Some(b) = body {
        cmd.args(["-H", "content-type: application/json", "-d", &b.to_string()]);
    }
    let out = cmd.output().expect("curl runs");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let (body, code) = text.rsplit_once('\n').unwrap_or(("", "0"));
    let code: u16 = code.trim().parse().unwrap_or(0);
    assert!((200..300).contains(&code), "{method} {path}: {code} {body}");
    serde_json::from_str(body).unwrap_or(Value::Null)
}

/// The contract's OAuth half: an API published through the control plane with an `mcp`
/// section and bearer tokens: the MCP endpoint's 401 names its RFC 9728 metadata, which
/// names the key manager; the official SDK's OAuth client (tests/py/mcp_oauth.py)
/// registers, is consented, gets a token bound to the MCP endpoint and lists the tools.
#[test]
fn an_agent_gets_a_token_for_the_mcp_endpoint_through_oauth_and_lists_tools() {
    let dir = TempDir::new();
    let support::Stack {
        _procs,
        echo,
        cp,
        gw,
    } = support::cp_stack(&dir, CP_TOKEN, PASSWORD);
    let api = admin(
        &cp,
        "POST",
        "/api/am/publisher/v1/apis",
        Some(json!({"name": "menu", "context": "/menu", "version": "v1",
            "endpoints": [format!("http://{echo}")],
            "resources": [{"path": "/items", "methods": ["GET"]}],
            "mcp": {"instructions": "The menu."}})),
    );
    let id = api["id"].as_str().expect("id").to_owned();
    let security = json!({"oauth2": true, "subscription": true, "audience_check": true});
    admin(
        &cp,
        "PUT",
        &format!("/api/am/publisher/v1/apis/{id}/security"),
        Some(security),
    );
    let publish = format!("/api/am/publisher/v1/apis/change-lifecycle?apiId={id}&action=Publish");
    admin(&cp, "POST", &publish, None);
    admin(
        &cp,
        "PUT",
        "/api/am/admin/v1/settings/client-registration",
        Some(json!({"enabled": true, "owner": "admin", "maxClients": 10})),
    );
    let url = format!("http://{gw}/mcp/menu/v1");
    let init = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"curl","version":"1"}}}"#;
    support::wait_until("the MCP endpoint is live", || {
        post(&url, &[], init).0 == 401
    });
    let (_, head, _) = post(&url, &[], init);
    let metadata = format!("http://{gw}/.well-known/oauth-protected-resource/mcp/menu/v1");
    assert!(
        head.contains(&format!("resource_metadata=\"{metadata}\"")),
        "{head}"
    );
    let (status, doc) = support::get(&metadata);
    assert_eq!(status, 200, "{doc}");
    let doc: Value = serde_json::from_str(&doc).expect("metadata");
    assert_eq!(doc["resource"], url);
    assert_eq!(
        doc["authorization_servers"],
        json!([format!("http://{cp}")])
    );

    let out = Command::new("python3")
        .arg(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/py/mcp_oauth.py"
        ))
        .args([&url, &format!("http://{cp}"), &id, "admin", PASSWORD])
        .output()
        .expect("python3 runs");
    assert!(
        out.status.success(),
        "mcp_oauth.py failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r: Value = serde_json::from_slice(&out.stdout).expect("json from the script");
    assert_eq!(r["tools"], json!(["get_items"]), "{r}");
    assert_eq!(r["resource_asked"], json!([url]), "{r}");
    assert_eq!(r["aud"], json!([url]), "{r}");
}
