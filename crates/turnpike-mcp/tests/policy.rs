//! The MCP policy alone, without sockets: built from an API's `mcp:` section by its
//! kind, then its hooks run on a request context as the gateway would (early body,
//! request headers, response headers and body), on the runtime's injected clock.

use std::net::SocketAddr;
use std::sync::Arc;

use bytes::Bytes;
use http::{HeaderValue, Method, Request, Response, StatusCode, Uri};
use serde_json::{json, Value};
use turnpike_mcp::{Mcp, McpPolicy};
use turnpike_model::clock::ManualClock;
use turnpike_model::GatewayFile;
use turnpike_policy::{
    BuildCx, Flow, Policy, PolicyKind, Problem, RequestCtx, Runtime, Scratch, UpstreamTarget,
};

const FILE: &str = r##"
apis:
  - name: pets
    context: /pets
    version: v1
    endpoints: ["http://127.0.0.1:1"]
    resources:
      - { path: "/pets/{id}", methods: [GET, DELETE] }
      - { path: /pets, methods: [POST] }
    mcp:
      session_idle: 60s
      max_sessions: 2
"##;

fn build(yaml: &str, runtime: &Runtime) -> (Option<Arc<dyn Policy>>, Vec<Problem>) {
    let file: GatewayFile = serde_yaml::from_str(yaml).expect("yaml");
    let mut problems = Vec::new();
    let mut scratch = Scratch::default();
    let spec = file.apis[0].mcp.clone().expect("mcp section");
    let mut cx = BuildCx {
        api: 0,
        at: "apis[0].mcp".into(),
        problems: &mut problems,
        runtime,
        file: &file,
        scratch: &mut scratch,
    };
    let p = Mcp::build(&spec, &mut cx);
    (p, problems)
}

fn ctx() -> RequestCtx {
    let uri: Uri = "/mcp/pets/v1".parse().expect("uri");
    let mut c = RequestCtx::new(
        HeaderValue::from_static("rid"),
        SocketAddr::from(([127, 0, 0, 1], 1)),
        false,
        UpstreamTarget::suffix(uri, "/mcp/pets/v1".len()),
    );
    c.resource = Some(Arc::from(turnpike_model::mcp::ENDPOINT_RESOURCE));
    c
}

/// Runs the request side of one message; the answer, or `None` when it goes upstream.
async fn send(
    p: &dyn Policy,
    c: &mut RequestCtx,
    session: Option<&str>,
    msg: Value,
) -> (Option<Response<Bytes>>, http::request::Parts, Bytes) {
    let mut b = Request::builder()
        .method(Method::POST)
        .uri("/mcp/pets/v1")
        .header("content-type", "application/json")
        .header("accept-encoding", "gzip, br");
    if let Some(s) = session {
        b = b.header("mcp-session-id", s);
    }
    let (mut parts, ()) = b.body(()).expect("request").into_parts();
    let mut body = Bytes::from(msg.to_string());
    assert!(p.wants_early_body(c, &parts));
    p.on_early_body(c, &mut parts, &mut body)
        .resolve()
        .await
        .expect("early body");
    match p
        .on_request_headers(c, &mut parts)
        .resolve()
        .await
        .expect("headers")
    {
        Flow::Respond(r) => (Some(r), parts, body),
        Flow::Continue => (None, parts, body),
    }
}

fn json_of(r: &Response<Bytes>) -> Value {
    serde_json::from_slice(r.body()).expect("json answer")
}

async fn initialize(p: &dyn Policy) -> String {
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2099-01-01", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}});
    let (r, _, _) = send(p, &mut ctx(), None, init).await;
    let r = r.expect("answered");
    assert_eq!(r.status(), StatusCode::OK);
    assert_eq!(
        json_of(&r)["result"]["protocolVersion"],
        "2025-11-25",
        "an unknown version gets the newest"
    );
    r.headers()["mcp-session-id"]
        .to_str()
        .expect("ascii")
        .to_owned()
}

#[tokio::test]
async fn a_call_becomes_its_operation_and_its_answer_a_tool_result() {
    let runtime = Runtime::default();
    let (p, problems) = build(FILE, &runtime);
    assert!(problems.is_empty(), "{problems:?}");
    let p = p.expect("built");
    let mcp = (&*p as &dyn std::any::Any)
        .downcast_ref::<McpPolicy>()
        .expect("McpPolicy");
    assert_eq!(
        mcp.tool_names().collect::<Vec<_>>(),
        ["get_pets_id", "delete_pets_id", "post_pets"]
    );
    let sid = initialize(&*p).await;

    let mut c = ctx();
    let call = json!({"jsonrpc": "2.0", "id": "c1", "method": "tools/call",
        "params": {"name": "get_pets_id", "arguments": {"id": "7/../x"}}});
    let (r, parts, body) = send(&*p, &mut c, Some(&sid), call).await;
    assert!(r.is_none(), "goes upstream");
    assert_eq!(parts.method, Method::GET);
    assert_eq!(c.upstream.path(), "/pets/7%2F..%2Fx");
    assert_eq!(
        c.resource.as_deref(),
        Some("get_pets_id"),
        "analytics names the tool"
    );
    assert!(body.is_empty() && !parts.headers.contains_key("mcp-session-id"));
    assert_eq!(
        parts
            .headers
            .get_all("accept-encoding")
            .iter()
            .collect::<Vec<_>>(),
        ["identity"],
        "the answer is read back: not encoded"
    );

    let mut resp = Response::builder()
        .status(404)
        .header("content-type", "application/json")
        .header("etag", "\"1\"")
        .body(())
        .expect("resp")
        .into_parts()
        .0;
    p.on_response_headers(&mut c, &mut resp).expect("head");
    assert_eq!(resp.status, StatusCode::OK);
    assert!(!resp.headers.contains_key("etag"));
    assert!(p.wants_response_body(&c, &resp));
    let mut out = Bytes::from_static(br#"{"error":"no pet"}"#);
    p.on_response_body(&mut c, &mut resp, &mut out)
        .expect("body");
    let v: Value = serde_json::from_slice(&out).expect("json");
    assert_eq!(v["id"], "c1");
    assert_eq!(v["result"]["isError"], true);
    assert_eq!(
        v["result"]["content"][0]["text"],
        "HTTP 404 Not Found: {\"error\":\"no pet\"}"
    );
}

#[tokio::test]
async fn protocol_errors_are_json_rpc_errors() {
    let runtime = Runtime::default();
    let p = build(FILE, &runtime).0.expect("built");
    let sid = initialize(&*p).await;
    let cases = [
        (
            json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "nope"}}),
            -32602,
        ),
        (
            json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "get_pets_id", "arguments": {}}}),
            -32602,
        ),
        (
            json!({"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {"name": "get_pets_id", "arguments": {"id": ".."}}}),
            -32602,
        ),
        (
            json!({"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {"name": "post_pets", "arguments": {"id": 1}}}),
            -32602,
        ),
        (
            json!({"jsonrpc": "2.0", "id": 6, "method": "prompts/list"}),
            -32601,
        ),
    ];
    for (msg, code) in cases {
        let (r, _, _) = send(&*p, &mut ctx(), Some(&sid), msg.clone()).await;
        let r = r.expect("answered here");
        assert_eq!(json_of(&r)["error"]["code"], code, "{msg}");
        assert_eq!(json_of(&r)["id"], msg["id"]);
    }
}

#[tokio::test]
async fn sessions_are_capped_and_expire_on_the_injected_clock() {
    let clock = Arc::new(ManualClock::at_secs(1_000));
    let runtime = Runtime::default().with_clock(clock.clone());
    let p = build(FILE, &runtime).0.expect("built");
    let list = json!({"jsonrpc": "2.0", "id": 9, "method": "tools/list"});
    let a = initialize(&*p).await;
    let _b = initialize(&*p).await;
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}});
    let (r, _, _) = send(&*p, &mut ctx(), None, init.clone()).await;
    assert_eq!(
        r.expect("answer").status(),
        StatusCode::SERVICE_UNAVAILABLE,
        "max_sessions: 2"
    );
    clock.advance(std::time::Duration::from_secs(30));
    let (r, _, _) = send(&*p, &mut ctx(), Some(&a), list.clone()).await;
    assert_eq!(
        r.expect("answer").status(),
        StatusCode::OK,
        "a used at 1030"
    );
    clock.advance(std::time::Duration::from_secs(45));
    // b idled 75 s > 60 s: a new session takes its place.
    let (r, _, _) = send(&*p, &mut ctx(), None, init).await;
    assert_eq!(r.expect("answer").status(), StatusCode::OK);
    clock.advance(std::time::Duration::from_secs(61));
    let (r, _, _) = send(&*p, &mut ctx(), Some(&a), list).await;
    assert_eq!(
        r.expect("answer").status(),
        StatusCode::NOT_FOUND,
        "a expired"
    );
}

#[test]
fn a_bad_section_names_every_problem() {
    let runtime = Runtime::default();
    let yaml = FILE.replace(
        "      session_idle: 60s\n      max_sessions: 2\n",
        "      session_idle: soon\n      max_sessions: 0\n      tools:\n        - { operation: nope }\n        - { operation: \"GET /pets/{id}\", name: \"bad name\" }\n",
    );
    let (p, problems) = build(&yaml, &runtime);
    assert!(p.is_none());
    let paths: Vec<String> = problems.iter().map(|p| p.to_string()).collect();
    for want in [
        "apis[0].mcp.max_sessions",
        "apis[0].mcp.session_idle",
        "apis[0].mcp.tools[0].operation",
        "bad name",
    ] {
        assert!(
            paths.iter().any(|p| p.contains(want)),
            "{want} in {paths:?}"
        );
    }
}

#[tokio::test]
async fn rest_requests_of_the_api_pass_untouched() {
    let runtime = Runtime::default();
    let p = build(FILE, &runtime).0.expect("built");
    let mut c = ctx();
    c.resource = Some(Arc::from("/pets/{id}"));
    let (mut parts, ()) = Request::builder()
        .uri("/pets/v1/pets/1")
        .body(())
        .expect("req")
        .into_parts();
    assert!(!p.wants_early_body(&c, &parts));
    assert!(matches!(
        p.on_request_headers(&mut c, &mut parts).resolve().await,
        Ok(Flow::Continue)
    ));
    let mut resp = Response::new(()).into_parts().0;
    p.on_response_headers(&mut c, &mut resp).expect("head");
    assert!(!p.wants_response_body(&c, &resp));
}

const PROXY: &str = r##"
apis:
  - name: remote
    context: /remote
    version: v1
    endpoints: ["http://127.0.0.1:1/mcp"]
    mcp:
      upstream: streamable_http
      tools:
        - { tool: add, name: sum }
        - { tool: echo }
      deny_tools: [secret]
"##;

/// A proxied server's session: the gateway's own id to the client, the remote's on
/// every forwarded message, forgotten with the remote's.
#[tokio::test]
async fn a_proxy_maps_its_sessions_to_the_remotes() {
    let runtime = Runtime::default();
    let p = build(PROXY, &runtime).0.expect("built");
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}});
    let mut c = ctx();
    let (r, _, body) = send(&*p, &mut c, None, init.clone()).await;
    assert!(r.is_none(), "initialize is forwarded");
    assert_eq!(serde_json::from_slice::<Value>(&body).ok(), Some(init));
    assert_eq!(c.upstream.path(), "", "the endpoint's URL as written");
    let mut head = Response::new(()).into_parts().0;
    head.headers
        .insert("mcp-session-id", HeaderValue::from_static("remote-1"));
    p.on_response_headers(&mut c, &mut head).expect("head");
    let ours = head.headers["mcp-session-id"]
        .to_str()
        .expect("ascii")
        .to_owned();
    assert_eq!(ours.len(), 32, "the gateway's own id, never the remote's");

    let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"});
    let mut c = ctx();
    let (r, parts, _) = send(&*p, &mut c, Some(&ours), list.clone()).await;
    assert!(r.is_none());
    assert_eq!(parts.headers["mcp-session-id"], "remote-1");
    let mut head = Response::new(()).into_parts().0;
    head.headers
        .insert("content-type", HeaderValue::from_static("application/json"));
    p.on_response_headers(&mut c, &mut head).expect("head");
    assert!(p.wants_response_body(&c, &head), "a tool list is filtered");
    let mut body = Bytes::from(
        json!({"jsonrpc": "2.0", "id": 2, "result": {"tools": [
            {"name": "add"}, {"name": "echo"}, {"name": "secret"}, {"name": "other"}]}})
        .to_string(),
    );
    p.on_response_body(&mut c, &mut head, &mut body)
        .expect("body");
    let names: Vec<Value> = serde_json::from_slice::<Value>(&body).expect("json")["result"]
        ["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .map(|t| t["name"].clone())
        .collect();
    assert_eq!(names, [json!("sum"), json!("echo")]);

    // The remote forgot its session: so does the gateway.
    let mut c = ctx();
    let (r, _, _) = send(&*p, &mut c, Some(&ours), list.clone()).await;
    assert!(r.is_none());
    let mut head = Response::new(()).into_parts().0;
    head.status = StatusCode::NOT_FOUND;
    p.on_response_headers(&mut c, &mut head).expect("head");
    let (r, _, _) = send(&*p, &mut ctx(), Some(&ours), list).await;
    assert_eq!(r.map(|r| r.status()), Some(StatusCode::NOT_FOUND));
}

#[tokio::test]
async fn a_proxy_refuses_hidden_tools_and_renames_calls_back() {
    let runtime = Runtime::default();
    let p = build(PROXY, &runtime).0.expect("built");
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}});
    let mut c = ctx();
    send(&*p, &mut c, None, init).await;
    let mut head = Response::new(()).into_parts().0;
    p.on_response_headers(&mut c, &mut head).expect("head");
    let ours = head.headers["mcp-session-id"]
        .to_str()
        .expect("ascii")
        .to_owned();
    let call = |name: &str| {
        json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
            "params": {"name": name, "arguments": {"a": 1}}})
    };
    for hidden in ["secret", "add", "other"] {
        let (r, _, _) = send(&*p, &mut ctx(), Some(&ours), call(hidden)).await;
        let r = r.expect("refused before the remote");
        assert_eq!(r.status(), StatusCode::OK);
        assert_eq!(json_of(&r)["error"]["code"], -32602, "{hidden}");
    }
    let (r, parts, body) = send(&*p, &mut ctx(), Some(&ours), call("sum")).await;
    assert!(r.is_none());
    assert!(
        !parts.headers.contains_key("mcp-session-id"),
        "the remote gave none"
    );
    let sent: Value = serde_json::from_slice(&body).expect("json");
    assert_eq!(
        sent["params"],
        json!({"name": "add", "arguments": {"a": 1}})
    );
}

#[test]
fn a_bad_proxy_section_names_every_problem() {
    let runtime = Runtime::default();
    let yaml = PROXY
        .replace(
            "deny_tools: [secret]",
            "deny_tools: [echo]\n      openapi: \"{}\"",
        )
        .replace("name: sum", "name: \"bad name\"");
    let (p, problems) = build(&yaml, &runtime);
    assert!(p.is_none());
    let paths: Vec<String> = problems.iter().map(|p| p.to_string()).collect();
    for want in [
        "apis[0].mcp.openapi",
        "apis[0].mcp.tools[0].name",
        "apis[0].mcp.tools[1].tool",
    ] {
        assert!(
            paths.iter().any(|p| p.contains(want)),
            "{want} in {paths:?}"
        );
    }
    let (p, problems) = build(
        &FILE.replace("max_sessions: 2", "max_sessions: 2\n      deny_tools: [x]"),
        &runtime,
    );
    assert!(p.is_none());
    assert!(
        problems[0].to_string().contains("apis[0].mcp.deny_tools"),
        "{problems:?}"
    );
}

#[test]
fn a_bad_multiplexed_section_names_every_problem() {
    let runtime = Runtime::default();
    let servers = r#"upstream: streamable_http
      servers:
        - { name: weather, url: "http://127.0.0.1:1/mcp" }
        - { name: "git__x", url: "ftp://x/mcp" }
        - { name: weather, url: "http://127.0.0.1:2/mcp", tools: [{ tool: a, name: "b c" }] }"#;
    let yaml = PROXY.replace("upstream: streamable_http", servers);
    let (p, problems) = build(&yaml, &runtime);
    assert!(p.is_none());
    let paths: Vec<String> = problems.iter().map(|p| p.to_string()).collect();
    for want in [
        "apis[0].mcp.tools",
        "apis[0].mcp.servers[1].name",
        "apis[0].mcp.servers[1].url",
        "apis[0].mcp.servers[2].name",
        "apis[0].mcp.servers[2].tools[0].name",
    ] {
        assert!(
            paths.iter().any(|p| p.contains(want)),
            "{want} in {paths:?}"
        );
    }
    let good = r#"upstream: streamable_http
      servers:
        - { name: weather, url: "http://127.0.0.1:1/mcp" }
        - { name: git, url: "https://git.example/mcp", deny_tools: [rm] }"#;
    let yaml = PROXY
        .replace("upstream: streamable_http", good)
        .replace("      tools:\n        - { tool: add, name: sum }\n        - { tool: echo }\n      deny_tools: [secret]\n", "");
    let (p, problems) = build(&yaml, &runtime);
    assert!(
        problems[0].to_string().contains("apis[0].mcp.upstream"),
        "no endpoints beside servers: {problems:?}"
    );
    assert!(p.is_none());
    let yaml = yaml.replace("    endpoints: [\"http://127.0.0.1:1/mcp\"]\n", "");
    let (p, problems) = build(&yaml, &runtime);
    assert!(problems.is_empty(), "{problems:?}");
    assert!(p.is_some());
    // The legacy transport alone: the API's one endpoint is the remote.
    let legacy = PROXY.replace("upstream: streamable_http", "upstream: sse");
    let (p, problems) = build(&legacy, &runtime);
    assert!(problems.is_empty() && p.is_some(), "{problems:?}");
}

/// The tool error a 404 answer becomes, run through the response hooks.
fn answer(p: &dyn Policy, c: &mut RequestCtx, status: u16) {
    let mut resp = Response::builder()
        .status(status)
        .header("content-type", "application/json")
        .body(())
        .expect("resp")
        .into_parts()
        .0;
    p.on_response_headers(c, &mut resp).expect("head");
    let mut out = Bytes::from_static(br#"{"ok":true}"#);
    p.on_response_body(c, &mut resp, &mut out).expect("body");
}

#[tokio::test]
async fn an_audited_call_leaves_its_redacted_record_and_how_it_ended() {
    use turnpike_policy::mcp::{ToolCallAudit, ToolOutcome};
    let runtime = Runtime::default();
    let yaml = FILE.replace(
        "      max_sessions: 2\n",
        "      max_sessions: 2\n      audit: { redact: [/body/name], max_argument_bytes: 100 }\n",
    );
    let (p, problems) = build(&yaml, &runtime);
    assert!(problems.is_empty(), "{problems:?}");
    let p = p.expect("built");
    let sid = initialize(&*p).await;
    let call = |id: &str, name: &str, args: Value| {
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": name, "arguments": args}})
    };
    let audit = |c: &RequestCtx| c.ext.get::<ToolCallAudit>().cloned().expect("a record");

    // Redacted: the rule's pointer and a secret-looking key; answered 200: `ok`.
    let mut c = ctx();
    let args = json!({"body": {"name": "rex", "api_key": "k", "kind": "dog"}});
    let (r, _, _) = send(&*p, &mut c, Some(&sid), call("1", "post_pets", args)).await;
    assert!(r.is_none(), "goes upstream");
    answer(&*p, &mut c, 200);
    let a = audit(&c);
    assert_eq!(&*a.tool, "post_pets");
    assert_eq!(a.session.as_deref(), Some(sid.as_str()));
    let kept: Value = serde_json::from_str(&a.arguments).expect("JSON");
    assert_eq!(
        kept,
        json!({"body": {"name": "[REDACTED]", "api_key": "[REDACTED]", "kind": "dog"}})
    );
    assert!(!a.truncated);
    assert_eq!(a.outcome, ToolOutcome::Ok);

    // Over the cap: cut and marked; a 404 answer is a tool error.
    let mut c = ctx();
    let args = json!({"id": "x".repeat(200)});
    send(&*p, &mut c, Some(&sid), call("2", "get_pets_id", args)).await;
    answer(&*p, &mut c, 404);
    let a = audit(&c);
    assert!(
        a.truncated && a.arguments.ends_with("...[TRUNCATED]"),
        "{a:?}"
    );
    assert!(a.arguments.len() <= 100 + "...[TRUNCATED]".len());
    assert_eq!(a.outcome, ToolOutcome::ToolError { code: None });

    // An unknown tool: refused with the JSON-RPC error's number.
    let mut c = ctx();
    let (r, _, _) = send(&*p, &mut c, Some(&sid), call("3", "nope", json!({}))).await;
    assert!(r.is_some());
    assert_eq!(
        audit(&c).outcome,
        ToolOutcome::Refused {
            code: "-32602".into()
        }
    );

    // A message that is not a tool call, and an API without `audit:`, leave none.
    let mut c = ctx();
    let list = json!({"jsonrpc": "2.0", "id": 4, "method": "tools/list"});
    send(&*p, &mut c, Some(&sid), list).await;
    assert!(c.ext.get::<ToolCallAudit>().is_none());
    let plain = build(FILE, &runtime).0.expect("built");
    let sid = initialize(&*plain).await;
    let mut c = ctx();
    let args = json!({"body": {"password": "p"}});
    send(&*plain, &mut c, Some(&sid), call("5", "post_pets", args)).await;
    assert!(c.ext.get::<ToolCallAudit>().is_none());
}

#[test]
fn a_bad_audit_section_names_its_fields() {
    let runtime = Runtime::default();
    let yaml = FILE.replace(
        "      max_sessions: 2\n",
        "      max_sessions: 2\n      audit: { redact: [\"\"], max_argument_bytes: 1MiB }\n",
    );
    let (p, problems) = build(&yaml, &runtime);
    assert!(p.is_none());
    let paths: Vec<String> = problems.iter().map(|p| p.to_string()).collect();
    for want in [
        "apis[0].mcp.audit.redact[0]",
        "apis[0].mcp.audit.max_argument_bytes",
    ] {
        assert!(
            paths.iter().any(|p| p.contains(want)),
            "{want} in {paths:?}"
        );
    }
}

/// One tool call's hooks, early body to the wrapped answer, as the gateway runs them
/// (every hook of this policy answers at once: no await).
#[inline(never)]
fn call_hooks(p: &dyn Policy, sid: &HeaderValue, message: &Bytes, answer: &Bytes) -> usize {
    let mut c = ctx();
    let (mut parts, ()) = Request::builder()
        .method(Method::POST)
        .uri("/mcp/pets/v1")
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("accept-encoding", "identity")
        .header("mcp-session-id", sid)
        .header("mcp-protocol-version", "2025-06-18")
        .body(())
        .expect("request")
        .into_parts();
    let mut body = message.clone();
    let done =
        |s: turnpike_policy::Step<'_>| matches!(s, turnpike_policy::Step::Done(Ok(Flow::Continue)));
    assert!(done(p.on_early_body(&mut c, &mut parts, &mut body)));
    assert!(done(p.on_request_headers(&mut c, &mut parts)));
    let mut resp = Response::builder()
        .status(200)
        .header("content-type", "application/json")
        .header("content-length", answer.len())
        .body(())
        .expect("resp")
        .into_parts()
        .0;
    p.on_response_headers(&mut c, &mut resp).expect("head");
    let mut out = answer.clone();
    p.on_response_body(&mut c, &mut resp, &mut out)
        .expect("body");
    out.len()
}

/// Not a check: a tool call's hooks run many times on the benchmark's shape
/// (bench/mcp-cases.sh's POST), for an instruction profile of this crate's part of a
/// call without a gateway (`valgrind --tool=callgrind --toggle-collect=policy::call_hooks
/// TESTBIN --ignored --exact a_call_s_hooks_profiled`, with a ci-bench build of this
/// test; bench/mcp-callgrind.sh is the measure of record).
#[tokio::test]
#[ignore = "a profiling harness, not a check"]
async fn a_call_s_hooks_profiled() {
    let runtime = Runtime::default();
    let p = build(FILE, &runtime).0.expect("built");
    let sid = HeaderValue::from_str(&initialize(&*p).await).expect("id");
    let message = Bytes::from_static(
        br#"{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "post_pets", "arguments": {"body": {"name": "Rex", "tag": "dog"}}}}"#,
    );
    let answer = Bytes::from_static(br#"{"name": "Rex", "tag": "dog"}"#);
    let mut n = 0;
    for _ in 0..1000 {
        n += call_hooks(&*p, &sid, &message, &answer);
    }
    assert!(n > 0);
}
