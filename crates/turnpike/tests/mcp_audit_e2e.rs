//! The audit trail of MCP tool calls, end to end with the real binary: an API published
//! through the control plane with `mcp: {audit: ...}`, a gateway following it (analytics
//! shipped every 0.3 s), an application's API key, and the official MCP Python SDK
//! (tests/py/mcp_audit.py) calling tools. Asserted through the Admin and Publisher REST
//! endpoints: a call's `password` (nested in its body, a secret-looking key) and its
//! `note` (the section's own rule) are `[REDACTED]`; a call over the section's size cap
//! is cut and marked; an unknown tool is recorded as refused with `-32602`; each record
//! names the API, the tool, the application, its owner and the MCP session; filters and
//! paging work; `/metrics` counts the records written.

mod support;

use std::process::Command;

use serde_json::{json, Value};
use support::TempDir;

const TOKEN: &str = "mcp-audit-e2e-gateway-token";
const PASSWORD: &str = "mcp-audit-e2e-admin-password";

const OPENAPI: &str = r#"openapi: 3.0.3
info: { title: Notes, version: v1 }
paths:
  /notes:
    post:
      operationId: saveNote
      requestBody:
        required: true
        content:
          application/json:
            schema:
              type: object
              properties:
                user: { type: string }
                password: { type: string }
                note: { type: string }
      responses: { "200": { description: saved } }
"#;

/// `method path` on the control plane as `admin`: the status and the JSON answer.
fn call(cp: &str, method: &str, path: &str, body: Option<Value>) -> (u16, Value) {
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
    (
        code.trim().parse().unwrap_or(0),
        serde_json::from_str(body).unwrap_or(Value::Null),
    )
}

/// As [`call`], a 2xx asserted.
fn admin(cp: &str, method: &str, path: &str, body: Option<Value>) -> Value {
    let (code, v) = call(cp, method, path, body);
    assert!((200..300).contains(&code), "{method} {path}: {code} {v}");
    v
}

/// An API with an audited MCP server, an application subscribed to it and its API key:
/// (API id, application id, key).
fn publish(cp: &str, echo: &str) -> (String, String, String) {
    let id = publish_api(
        cp,
        json!({"name": "notes", "context": "/notes", "version": "v1",
            "endpoints": [format!("http://{echo}")],
            "resources": [{"path": "/notes", "methods": ["POST"]}],
            "mcp": {"openapi": OPENAPI,
                    "audit": {"redact": ["note"], "max_argument_bytes": 256}}}),
    );
    let (app_id, key) = subscribed_key(cp, &[&id]);
    (id, app_id, key)
}

/// `api` created, secured by API keys and subscriptions, and published: its id.
fn publish_api(cp: &str, api: Value) -> String {
    let api = admin(cp, "POST", "/api/am/publisher/v1/apis", Some(api));
    let id = api["id"].as_str().expect("id").to_owned();
    let security = json!({"api_key": true, "subscription": true});
    admin(
        cp,
        "PUT",
        &format!("/api/am/publisher/v1/apis/{id}/security"),
        Some(security),
    );
    let publish = format!("/api/am/publisher/v1/apis/change-lifecycle?apiId={id}&action=Publish");
    admin(cp, "POST", &publish, None);
    id
}

/// An application subscribed to `apis` and its API key: (application id, key).
fn subscribed_key(cp: &str, apis: &[&str]) -> (String, String) {
    let app = admin(
        cp,
        "POST",
        "/api/am/devportal/v1/applications",
        Some(json!({"name": "agent-app"})),
    );
    let app_id = app["id"].as_str().expect("app id").to_owned();
    for id in apis {
        admin(
            cp,
            "POST",
            "/api/am/devportal/v1/subscriptions",
            Some(json!({"applicationId": app_id, "apiId": id, "throttlingPolicy": "Unlimited"})),
        );
    }
    let key = admin(
        cp,
        "POST",
        &format!("/api/am/devportal/v1/applications/{app_id}/api-keys"),
        Some(json!({"name": "agent"})),
    );
    let key = key["apikey"]
        .as_str()
        .expect("the key, shown once")
        .to_owned();
    (app_id, key)
}

#[test]
fn tool_calls_are_audited_with_their_arguments_redacted_and_cut() {
    let dir = TempDir::new();
    let (_echo, echo) = support::start(&["echo", "--port", "0"], "echo listening on http://");
    let (_cp, cp) = support::sqlite_control_plane(dir.path(), "cp.db", TOKEN, PASSWORD);
    let cp_url = format!("http://{cp}");
    let extra = ["--gateway-id", "gw-audit", "--analytics-interval", "0.3"];
    let (_gw, gw, mgmt) = support::follower(&dir.path().join("gw"), &cp_url, TOKEN, "0", &extra);
    let (api_id, app_id, key) = publish(&cp, &echo);
    let url = format!("http://{gw}/mcp/notes/v1");
    let init = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"curl","version":"1"}}}"#;
    let header = format!("apikey: {key}");
    support::wait_until("the MCP endpoint is live with the key", || {
        support::post_json(&url, &[&header], init).0 == 200
    });

    let out = Command::new("python3")
        .arg(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/py/mcp_audit.py"
        ))
        .args([&url, &key])
        .output()
        .expect("python3 runs (scripts/install-test-deps.sh installs the mcp SDK)");
    assert!(
        out.status.success(),
        "mcp_audit.py failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r: Value = serde_json::from_slice(&out.stdout).expect("json from the script");
    assert_eq!(r["login"]["is_error"], false, "{r}");
    assert_eq!(r["big"]["is_error"], false, "{r}");
    assert_eq!(r["unknown"], -32602, "{r}");

    // The gateway ships the records with its analytics: poll until all three arrived.
    let list = format!("/api/am/admin/v1/mcp-audit?apiId={api_id}");
    let mut page = Value::Null;
    support::wait_until("three audit records", || {
        page = admin(&cp, "GET", &list, None);
        page["count"] == 3 || page["pagination"]["total"] == 3
    });
    let items = page["list"].as_array().expect("list");
    let by_tool = |tool: &str, needle: &str| -> Value {
        items
            .iter()
            .find(|i| i["tool"] == tool && i["arguments"].as_str().unwrap_or("").contains(needle))
            .cloned()
            .unwrap_or_else(|| panic!("no {tool} record with {needle}: {page}"))
    };

    let login = by_tool("saveNote", "ann");
    let args: Value =
        serde_json::from_str(login["arguments"].as_str().expect("text")).expect("JSON arguments");
    assert_eq!(
        args,
        json!({"body": {"user": "ann", "password": "[REDACTED]", "note": "[REDACTED]"}})
    );
    assert_eq!(login["truncated"], false);
    assert_eq!(login["outcome"], "ok");
    assert_eq!(login["status"], 200);
    assert_eq!(login["apiName"], "notes");
    assert_eq!(
        (&login["apiContext"], &login["apiVersion"]),
        (&json!("/notes"), &json!("v1"))
    );
    assert_eq!(login["applicationId"], app_id.as_str());
    assert_eq!(login["applicationName"], "agent-app");
    assert_eq!(login["subject"], "admin");
    assert_eq!(login["gateway"], "gw-audit");
    let session = login["sessionId"].as_str().expect("a session id");
    assert!(
        session.len() == 32 && session.bytes().all(|b| b.is_ascii_hexdigit()),
        "{session}"
    );
    assert!(
        login["latencyUs"].as_u64().is_some_and(|us| us > 0),
        "{login}"
    );

    let big = by_tool("saveNote", "bob");
    let text = big["arguments"].as_str().expect("text");
    assert_eq!(big["truncated"], true, "{big}");
    assert!(text.ends_with("...[TRUNCATED]"), "{text}");
    assert!(text.len() <= 256 + "...[TRUNCATED]".len(), "{}", text.len());
    assert_eq!(big["sessionId"], session, "one session for the SDK's calls");

    let unknown = by_tool("noSuchTool", "password");
    assert_eq!(unknown["outcome"], "refused");
    assert_eq!(unknown["code"], "-32602");
    assert_eq!(unknown["arguments"], r#"{"password":"[REDACTED]"}"#);

    // Filters and paging; the Publisher's view of the API.
    let refused = admin(&cp, "GET", &format!("{list}&outcome=refused"), None);
    assert_eq!(
        refused["list"].as_array().map(Vec::len),
        Some(1),
        "{refused}"
    );
    let tool = admin(&cp, "GET", &format!("{list}&tool=saveNote&limit=1"), None);
    assert_eq!(tool["list"].as_array().map(Vec::len), Some(1), "{tool}");
    assert_eq!(tool["pagination"]["total"], 2, "{tool}");
    let none = admin(&cp, "GET", &format!("{list}&applicationId=other"), None);
    assert_eq!(none["list"], json!([]), "{none}");
    let publisher = admin(
        &cp,
        "GET",
        &format!("/api/am/publisher/v1/apis/{api_id}/mcp-audit?outcome=ok"),
        None,
    );
    assert_eq!(publisher["pagination"]["total"], 2, "{publisher}");
    let (code, bad) = call(&cp, "GET", &format!("{list}&outcome=maybe"), None);
    assert_eq!(code, 400, "{bad}");

    // The gateway counted what it wrote.
    let (_, metrics) = support::get(&format!("http://{mgmt}/metrics"));
    assert!(
        metrics.contains("turnpike_mcp_audit_records_total{result=\"written\"} 3"),
        "{metrics}"
    );
    assert!(
        metrics.contains("turnpike_mcp_audit_records_total{result=\"dropped\"} 0"),
        "{metrics}"
    );
}

/// The Python SDK's client running `steps` (tests/py/mcp_steps.py) as `key`.
fn steps(url: &str, key: &str, steps: Value) -> Value {
    support::mcp_steps(url, key, &steps)
}

/// A proxied remote server's tool calls are audited as an API's own: two Python SDK
/// servers (tests/py/mcp_remote.py), one proxied alone (its tools renamed and
/// filtered) and both multiplexed behind a second API, each API with `audit:`. Every
/// `tools/call` through either is one record naming the tool as the agent called it:
/// a result `ok`, the remote's `isError` and its JSON-RPC error (`-32001`) as
/// `tool_error`, a hidden or unknown tool `refused` (`-32602`); the arguments redacted
/// by the section's rules and the secret-looking keys, the secrets stored nowhere; a
/// streamed answer (progress events before the result) settled too; a legacy
/// (HTTP+SSE) remote's calls likewise.
#[test]
fn a_proxied_servers_tool_calls_are_audited() {
    let dir = TempDir::new();
    let (weather_log, git_log) = (dir.path().join("weather.log"), dir.path().join("git.log"));
    let (_weather, weather) = support::mcp_remote("weather", &weather_log, "streamable_http");
    let (_git, git) = support::mcp_remote("git", &git_log, "streamable_http");
    let (_cp, cp) = support::sqlite_control_plane(dir.path(), "cp.db", TOKEN, PASSWORD);
    let extra = ["--gateway-id", "gw-audit", "--analytics-interval", "0.3"];
    let cp_url = format!("http://{cp}");
    let (_gw, gw, _) = support::follower(&dir.path().join("gw"), &cp_url, TOKEN, "0", &extra);
    let single = publish_api(
        &cp,
        json!({"name": "weather", "context": "/weather", "version": "v1",
            "endpoints": [weather],
            "mcp": {"upstream": "streamable_http",
                    "tools": [{"tool": "add", "name": "sum"}, {"tool": "fail"}, {"tool": "login"}],
                    "audit": {"redact": ["/b"]}}}),
    );
    let hub = publish_api(
        &cp,
        json!({"name": "hub", "context": "/hub", "version": "v1", "endpoints": [],
            "mcp": {"upstream": "streamable_http",
                    "servers": [{"name": "weather", "url": weather}, {"name": "git", "url": git}],
                    "audit": {"redact": ["text"]}}}),
    );
    let (_old, old_url) = support::mcp_remote("old", &dir.path().join("old.log"), "sse");
    let legacy = publish_api(
        &cp,
        json!({"name": "old", "context": "/old", "version": "v1", "endpoints": [old_url],
            "mcp": {"upstream": "sse", "audit": {}}}),
    );
    let (app_id, key) = subscribed_key(&cp, &[&single, &hub, &legacy]);
    let header = format!("apikey: {key}");
    let init = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"curl","version":"1"}}}"#;
    for api in ["weather", "hub", "old"] {
        let url = format!("http://{gw}/mcp/{api}/v1");
        support::wait_until("the MCP endpoint is live with the key", || {
            support::post_json(&url, &[&header], init).0 == 200
        });
    }

    let gate = dir.path().join("gate");
    let r = steps(
        &format!("http://{gw}/mcp/weather/v1"),
        &key,
        json!([
            ["call", "sum", {"a": 1, "b": 2}],
            ["call", "fail", {"how": "tool"}],
            ["call", "fail", {"how": "protocol"}],
            ["call", "login", {"user": "ann", "password": "pw-never-stored"}],
            ["call", "add", {"a": 1, "b": 2}],
        ]),
    );
    let calls = r["calls"].as_array().expect("calls");
    assert_eq!(calls[0]["text"], "3", "{r}");
    assert_eq!(calls[1]["is_error"], true, "{r}");
    assert_eq!(calls[2], json!({"error": -32001}), "{r}");
    assert_eq!(calls[4], json!({"error": -32602}), "renamed: {r}");
    let r = steps(
        &format!("http://{gw}/mcp/hub/v1"),
        &key,
        json!([
            ["call", "weather__echo", {"text": "text-never-stored"}],
            ["call", "git__fail", {"how": "protocol"}],
            ["progress", "weather__progress", {"gate": gate}],
            ["call", "nope__add", {"a": 1, "b": 2}],
        ]),
    );
    let calls = r["calls"].as_array().expect("calls");
    assert_eq!(calls[0]["text"], "weather: text-never-stored", "{r}");
    assert_eq!(calls[2]["text"], "the gate opened", "{r}");
    let old_gate = dir.path().join("old-gate");
    let r = steps(
        &format!("http://{gw}/mcp/old/v1"),
        &key,
        json!([
            ["call", "fail", {"how": "tool"}],
            ["progress", "progress", {"gate": old_gate}],
        ]),
    );
    assert_eq!(r["calls"][1]["text"], "the gate opened", "{r}");

    let records = |api: &str, n: u64| -> Vec<Value> {
        let list = format!("/api/am/admin/v1/mcp-audit?apiId={api}");
        let mut page = Value::Null;
        support::wait_until("every audit record", || {
            page = admin(&cp, "GET", &list, None);
            page["pagination"]["total"] == n
        });
        let text = page.to_string();
        assert!(
            !text.contains("never-stored"),
            "a redacted argument is stored nowhere: {text}"
        );
        page["list"].as_array().expect("list").clone()
    };
    let find = |items: &[Value], tool: &str, needle: &str| -> Value {
        items
            .iter()
            .find(|i| i["tool"] == tool && i["arguments"].as_str().unwrap_or("").contains(needle))
            .cloned()
            .unwrap_or_else(|| panic!("no {tool} record with {needle}: {items:?}"))
    };
    let outcome = |v: &Value| (v["outcome"].clone(), v["code"].clone());

    let items = records(&single, 5);
    let sum = find(&items, "sum", "");
    assert_eq!(sum["arguments"], r#"{"a":1,"b":"[REDACTED]"}"#);
    assert_eq!(outcome(&sum), (json!("ok"), Value::Null));
    assert_eq!(sum["status"], 200);
    assert_eq!(sum["applicationId"], app_id.as_str());
    assert_eq!(sum["apiName"], "weather");
    assert!(sum["latencyUs"].as_u64().is_some_and(|us| us > 0), "{sum}");
    let session = sum["sessionId"].as_str().expect("the gateway's session");
    assert_eq!(session.len(), 32, "{session}");
    let failed = find(&items, "fail", "tool");
    assert_eq!(outcome(&failed), (json!("tool_error"), Value::Null));
    let refused_by_remote = find(&items, "fail", "protocol");
    assert_eq!(
        outcome(&refused_by_remote),
        (json!("tool_error"), json!("-32001"))
    );
    let login = find(&items, "login", "ann");
    assert_eq!(
        login["arguments"],
        r#"{"password":"[REDACTED]","user":"ann"}"#
    );
    let hidden = find(&items, "add", "");
    assert_eq!(outcome(&hidden), (json!("refused"), json!("-32602")));

    let items = records(&hub, 4);
    let echo = find(&items, "weather__echo", "");
    assert_eq!(echo["arguments"], r#"{"text":"[REDACTED]"}"#);
    assert_eq!(outcome(&echo), (json!("ok"), Value::Null));
    assert_eq!(echo["apiName"], "hub");
    let git = find(&items, "git__fail", "");
    assert_eq!(outcome(&git), (json!("tool_error"), json!("-32001")));
    let progress = find(&items, "weather__progress", "gate");
    assert_eq!(outcome(&progress), (json!("ok"), Value::Null));
    let unknown = find(&items, "nope__add", "");
    assert_eq!(outcome(&unknown), (json!("refused"), json!("-32602")));
    let items = records(&legacy, 2);
    let failed = find(&items, "fail", "tool");
    assert_eq!(outcome(&failed), (json!("tool_error"), Value::Null));
    assert_eq!(failed["apiName"], "old");
    let progress = find(&items, "progress", "old-gate");
    assert_eq!(outcome(&progress), (json!("ok"), Value::Null));
    assert_eq!(
        std::fs::read_to_string(&weather_log).unwrap_or_default(),
        "add\nfail\nfail\nlogin\necho\nprogress\n",
        "the hidden and unknown tools never reached a remote"
    );
    assert_eq!(
        std::fs::read_to_string(&git_log).unwrap_or_default(),
        "fail\n"
    );
}
