//! OAuth 2.1 for agents end to end with the real binary (`turnpike control-plane`, `turnpike
//! gateway --control-plane`, `turnpike echo`) and an independent client (authlib, with
//! `requests` as the browser: tests/py/agent_oauth.py): the gateway's 401 names the API's
//! RFC 9728 metadata, which names the key manager; its RFC 8414 metadata names the RFC
//! 7591 registration endpoint (only once an admin turned registration on); the agent
//! registers, the registered application is subscribed, the user consents to the named
//! resource, the PKCE code is exchanged with the RFC 8707 resource, and the token (`aud`:
//! that API alone) is accepted there and refused with `invalid_token` by another API.

mod support;

use std::path::Path;
use std::process::Command;

use serde_json::{json, Value};
use support::{Stack, TempDir};

const TOKEN: &str = "agents-e2e-gateway-token";
const PASSWORD: &str = "agents-e2e-admin-password";

fn curl(method: &str, url: &str, body: Option<&Value>) -> (u16, Value) {
    let mut cmd = Command::new("curl");
    cmd.args(["-s", "-o", "-", "-w", "\n%{http_code}", "-X", method, url]);
    cmd.args(["-u", &format!("admin:{PASSWORD}")]);
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

fn rest(method: &str, cp: &str, path: &str, body: Value) -> Value {
    let body = (!body.is_null()).then_some(&body);
    let (code, v) = curl(method, &format!("http://{cp}{path}"), body);
    assert!((200..300).contains(&code), "{method} {path}: {code} {v}");
    v
}

/// A published API on the echo back end with `auth` as its security and `extra` fields
/// (e.g. an `mcp` section); returns its id.
fn publish_with(
    cp: &str,
    echo: &str,
    name: &str,
    scopes: &[&str],
    auth: Value,
    extra: Value,
) -> String {
    let mut body = json!({"name": name, "context": format!("/{name}"), "version": "v1",
        "endpoints": [format!("http://{echo}")],
        "resources": [{"path": "/menu", "methods": ["GET"], "scopes": scopes}]});
    if let (Some(b), Some(e)) = (body.as_object_mut(), extra.as_object()) {
        b.extend(e.clone());
    }
    let api = rest("POST", cp, "/api/am/publisher/v1/apis", body);
    let id = api["id"].as_str().expect("id").to_owned();
    rest(
        "PUT",
        cp,
        &format!("/api/am/publisher/v1/apis/{id}/security"),
        auth,
    );
    rest(
        "POST",
        cp,
        &format!("/api/am/publisher/v1/apis/change-lifecycle?apiId={id}&action=Publish"),
        Value::Null,
    );
    id
}

fn publish(cp: &str, echo: &str, name: &str, scopes: &[&str], auth: Value) -> String {
    publish_with(cp, echo, name, scopes, auth, json!({}))
}

/// Turns dynamic client registration on: open, owned by `admin`, scope `read`.
fn open_registration(cp: &str) -> Value {
    rest(
        "PUT",
        cp,
        "/api/am/admin/v1/settings/client-registration",
        json!({"enabled": true, "owner": "admin", "scopes": ["read"], "maxClients": 10}),
    )
}

/// Debian's interpreter, where apt puts python3-authlib (a pyenv `python3` may shadow it).
fn python() -> &'static str {
    if Path::new("/usr/bin/python3").exists() {
        "/usr/bin/python3"
    } else {
        "python3"
    }
}

#[test]
fn an_agent_discovers_registers_and_calls_with_an_audience_bound_token() {
    let dir = TempDir::new();
    let Stack {
        _procs,
        echo,
        cp,
        gw,
    } = support::cp_stack(&dir, TOKEN, PASSWORD);
    let agents = json!({"oauth2": true, "subscription": true,
        "resource_metadata": true, "audience_check": true});
    let pizza = publish(&cp, &echo, "pizza", &["read"], agents);
    publish(
        &cp,
        &echo,
        "other",
        &[],
        json!({"oauth2": true, "subscription": false, "resource_metadata": true}),
    );
    support::wait_until("the APIs are live", || {
        support::get(&format!("http://{gw}/other/v1/menu")).0 == 401
            && support::get(&format!("http://{gw}/pizza/v1/menu")).0 == 401
    });

    // Registration is off until an admin turns it on: no endpoint in the metadata, 404.
    let meta = support::get(&format!(
        "http://{cp}/.well-known/oauth-authorization-server"
    ));
    let meta: Value = serde_json::from_str(&meta.1).expect("metadata");
    assert!(meta.get("registration_endpoint").is_none(), "{meta}");
    let (status, body) = curl(
        "POST",
        &format!("http://{cp}/oauth2/register"),
        Some(&json!({"redirect_uris": ["http://127.0.0.1:1/cb"]})),
    );
    assert_eq!(status, 404, "{body}");
    let settings = open_registration(&cp);
    assert_eq!(settings["initialAccessTokenSet"], false, "{settings}");
    // An API that publishes no metadata has none.
    assert_eq!(
        support::get(&format!(
            "http://{gw}/.well-known/oauth-protected-resource/nope/v1"
        ))
        .0,
        404
    );

    let out = Command::new(python())
        .arg(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/py/agent_oauth.py"
        ))
        .args([
            &format!("http://{gw}"),
            "/pizza/v1/menu",
            "/other/v1/menu",
            &format!("http://{cp}"),
            &pizza,
            "admin",
            PASSWORD,
        ])
        .output()
        .expect("python3 runs (scripts/install-test-deps.sh installs python3-authlib)");
    assert!(
        out.status.success(),
        "agent_oauth.py failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r: Value = serde_json::from_slice(&out.stdout).expect("json from the script");

    let resource = format!("http://{gw}/pizza/v1");
    let un = &r["unauthenticated"];
    assert_eq!(un["status"], 401, "{r}");
    assert_eq!(
        un["challenge"]["resource_metadata"],
        format!("http://{gw}/.well-known/oauth-protected-resource/pizza/v1")
    );
    assert_eq!(un["challenge"]["scope"], "read", "{r}");
    let prm = &r["prm"];
    assert_eq!(prm["status"], 200, "{r}");
    assert_eq!(prm["cors"], "*");
    assert_eq!(prm["doc"]["resource"], resource);
    assert_eq!(
        prm["doc"]["authorization_servers"],
        json!([format!("http://{cp}")])
    );
    assert_eq!(prm["doc"]["scopes_supported"], json!(["read"]));
    assert_eq!(prm["doc"]["bearer_methods_supported"], json!(["header"]));
    assert_eq!(
        r["registration_endpoint"],
        format!("http://{cp}/oauth2/register")
    );
    assert_eq!(r["registration"]["status"], 201, "{r}");
    assert_eq!(r["subscription_status"], 201, "{r}");
    assert_eq!(r["consent"]["status"], 200, "{r}");
    assert_eq!(r["consent"]["names_resource"], true, "{r}");
    assert_eq!(r["consent"]["names_client"], true, "{r}");
    assert_eq!(r["claims"]["aud"], json!([resource]), "{r}");
    assert_eq!(r["claims"]["scope"], "read");
    assert_eq!(r["claims"]["subscriber"], "admin");
    assert_eq!(r["claims"]["username"], "admin");
    assert_eq!(r["call"], 200, "{r}");
    let other = &r["other"];
    assert_eq!(other["status"], 401, "{r}");
    assert_eq!(other["code"], "invalid_token", "{r}");
    assert_eq!(
        other["challenge"]["resource_metadata"],
        format!("http://{gw}/.well-known/oauth-protected-resource/other/v1")
    );
    assert_eq!(other["challenge"]["error"], "invalid_token");
}

/// The official MCP Python SDK's OAuth client (tests/py/mcp_oauth.py) through the same
/// discovery, registration, consent and PKCE against an API's MCP endpoint, then
/// initialize and tools/list with the audience-bound token.
#[test]
fn the_mcp_sdk_signs_in_through_discovery_and_registration() {
    let dir = TempDir::new();
    let Stack {
        _procs,
        echo,
        cp,
        gw,
    } = support::cp_stack(&dir, TOKEN, PASSWORD);
    let agents = json!({"oauth2": true, "subscription": true,
        "resource_metadata": true, "audience_check": true});
    let id = publish_with(&cp, &echo, "tools", &[], agents, json!({"mcp": {}}));
    let endpoint = format!("http://{gw}/mcp/tools/v1");
    support::wait_until("the MCP endpoint is live", || {
        Command::new("curl")
            .args(["-s", "-o", "/dev/null", "-w", "%{http_code}", "-X", "POST"])
            .args([
                "-H",
                "content-type: application/json",
                "-d",
                "{}",
                &endpoint,
            ])
            .output()
            .is_ok_and(|o| o.stdout == b"401")
    });
    open_registration(&cp);
    let out = Command::new("python3")
        .arg(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/py/mcp_oauth.py"
        ))
        .args([&endpoint, &format!("http://{cp}"), &id, "admin", PASSWORD])
        .output()
        .expect("python3 runs (tools/python/requirements.txt: mcp)");
    assert!(
        out.status.success(),
        "mcp_oauth.py failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r: Value = serde_json::from_slice(&out.stdout).expect("json from the script");
    assert_eq!(r["resource_asked"], json!([endpoint]), "{r}");
    assert_eq!(r["consent_page"], true, "{r}");
    assert_eq!(r["subscription_status"], 201, "{r}");
    assert_eq!(r["aud"], json!([endpoint]), "{r}");
    assert!(r["tools"].as_array().is_some_and(|t| !t.is_empty()), "{r}");
}
