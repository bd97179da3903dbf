//! WebSockets through a real gateway on 127.0.0.1:0 in front of the real `turnpike
//! echo` (its `/ws` frame echo, and `--graphql` subscriptions in both subprotocols):
//! byte pass-through on a plain API (also after park sweeps went by), an upstream's
//! refusal relayed, a credential checked at the upgrade (401 JSON, nothing upgraded), or
//! carried by `connection_init` when the upgrade has none (4401 without a good one),
//! subscriptions relayed message by message with each `subscribe` / `start` analysed
//! (a scope the key lacks and an invalid query get an `error` for their id and are not
//! forwarded; the socket stays open), hostile messages (malformed JSON: 4400; over the
//! cap: 1009), a drain that closes an open upgraded connection, and an upgrade over the
//! HTTPS listener.

mod support;

use std::net::SocketAddr;
use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use serde_json::{json, Value};
use support::*;
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::{Error as WsError, Message};
use tokio_tungstenite::WebSocketStream;

/// The key "turnpike-bench-key" (its SHA-256) with the scope `read`.
const KEY_SHA: &str = "28a1d26071724d185aafe4153ee11aa474c2ca077f7bdd89ec182fdc06bcb1ef";
const KEY: &str = "turnpike-bench-key";
const SUB: &str = "subscription { reviewAdded(episode: JEDI) { stars commentary } }";

type Ws = WebSocketStream<TcpStream>;

/// A GraphQL API at /sw/v1 secured by the bench key; `reviewAdded` needs `scope`.
fn secured_gql(upstream: SocketAddr, scope: &str) -> String {
    let schema: String = STARWARS.lines().map(|l| format!("        {l}\n")).collect();
    let api = api(
        "sw",
        &[format!("http://{upstream}/graphql")],
        &format!(
            "    auth: {{ oauth2: false, api_key: true }}\n    graphql:\n      schema: |\n{schema}      operations:\n        - {{ name: reviewAdded, type: subscription, scopes: [{scope}] }}\n"
        ),
    );
    format!(
        "security:\n  api_keys:\n    - {{ sha256: \"{KEY_SHA}\", application: app-1, subscriber: alice, scopes: [read] }}\n  subscriptions:\n    - {{ api: /sw/v1, application: app-1, state: ACTIVE, tier: Unlimited }}\n{}",
        config(&[api])
    )
}

/// Opens a WebSocket to `path` on the gateway with `headers`.
async fn open(
    gw: &TestGateway,
    path: &str,
    headers: &[(&'static str, &str)],
) -> Result<(Ws, http::Response<Option<Vec<u8>>>), WsError> {
    let mut req = format!("ws://{}{path}", gw.http)
        .into_client_request()
        .expect("request");
    for (k, v) in headers {
        req.headers_mut()
            .insert(*k, v.parse().expect("header value"));
    }
    let tcp = TcpStream::connect(gw.http).await.expect("connect");
    tokio_tungstenite::client_async(req, tcp).await
}

/// A `graphql-transport-ws` socket on /sw/v1/graphql with the bench key, acknowledged.
async fn acked(gw: &TestGateway) -> Ws {
    let (mut ws, _) = open(
        gw,
        "/sw/v1/graphql",
        &[
            ("sec-websocket-protocol", "graphql-transport-ws"),
            ("apikey", KEY),
        ],
    )
    .await
    .expect("upgraded");
    send_json(&mut ws, json!({ "type": "connection_init" })).await;
    assert_eq!(next_json(&mut ws).await["type"], "connection_ack");
    ws
}

async fn next_json(ws: &mut Ws) -> Value {
    loop {
        let m = tokio::time::timeout(Duration::from_secs(10), ws.next())
            .await
            .expect("a message in time")
            .expect("socket open")
            .expect("a message");
        match m {
            Message::Text(t) => return serde_json::from_str(t.as_str()).expect("JSON message"),
            Message::Ping(_) | Message::Pong(_) => continue,
            other => panic!("unexpected message {other:?}"),
        }
    }
}

async fn send_json(ws: &mut Ws, v: Value) {
    ws.send(Message::text(v.to_string())).await.expect("send");
}

/// The close code the gateway ends the socket with.
async fn close_code(ws: &mut Ws) -> Option<CloseCode> {
    loop {
        let m = tokio::time::timeout(Duration::from_secs(10), ws.next())
            .await
            .expect("closed in time");
        match m {
            Some(Ok(Message::Close(f))) => return f.map(|f| f.code),
            Some(Ok(_)) => continue,
            Some(Err(_)) | None => return None,
        }
    }
}

#[tokio::test]
async fn a_plain_api_relays_frames_both_ways_and_is_never_parked() {
    let up = echo().await;
    let gw = gateway_with(&config(&[api("e", &[http(up)], "")]), |s| {
        s.park_after = Duration::from_millis(50);
    })
    .await;
    let (mut ws, resp) = open(&gw, "/e/v1/ws", &[]).await.expect("upgraded");
    assert_eq!(resp.status(), 101);
    assert!(resp.headers().contains_key("x-request-id"));
    ws.send(Message::text("hello")).await.expect("send");
    let m = ws.next().await.expect("open").expect("message");
    assert_eq!(m, Message::text("hello"));
    // Sweeps go by: the upgraded socket is not parked and keeps relaying.
    tokio::time::sleep(Duration::from_millis(400)).await;
    assert_eq!(
        gw.handle.connections.parked(),
        0,
        "an upgraded socket parked"
    );
    assert_eq!(gw.handle.connections.open(), 1);
    assert_eq!(gw.handle.connections.upgraded(), 1);
    ws.send(Message::binary(vec![1u8, 2, 3]))
        .await
        .expect("send");
    let m = ws.next().await.expect("open").expect("message");
    assert_eq!(m, Message::binary(vec![1u8, 2, 3]));
    ws.close(None).await.expect("close");
    for _ in 0..100 {
        if gw.handle.connections.upgraded() == 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(
        gw.handle.connections.upgraded(),
        0,
        "the relay ended with the close"
    );
    // The back end refuses an upgrade elsewhere: its answer is relayed.
    match open(&gw, "/e/v1/elsewhere", &[]).await {
        Err(WsError::Http(resp)) => assert_eq!(resp.status(), 404),
        other => panic!("expected the upstream's 404, got {other:?}"),
    }
}

#[tokio::test]
async fn a_bad_or_missing_header_credential_is_refused_at_the_upgrade_with_the_tables_401() {
    let up = graphql_echo().await;
    let gw = gateway(&secured_gql(up, "read")).await;
    let proto = ("sec-websocket-protocol", "graphql-transport-ws");
    match open(&gw, "/sw/v1/graphql", &[proto, ("apikey", "wrong")]).await {
        Err(WsError::Http(resp)) => {
            assert_eq!(resp.status(), 401);
            let body: Value =
                serde_json::from_slice(resp.body().as_deref().unwrap_or_default()).expect("json");
            assert!(body["code"].is_string(), "{body}");
            assert!(body["request_id"].is_string(), "{body}");
        }
        other => panic!("expected 401, got {other:?}"),
    }
    // A plain API has no connection_init: no credential is the upgrade's 401.
    let echo = echo().await;
    let plain = api(
        "e",
        &[http(echo)],
        "    auth: { oauth2: false, api_key: true }\n",
    );
    let yaml = format!(
        "security:\n  api_keys:\n    - {{ sha256: \"{KEY_SHA}\", application: app-1, subscriber: alice, scopes: [read] }}\n  subscriptions:\n    - {{ api: /e/v1, application: app-1, state: ACTIVE, tier: Unlimited }}\n{}",
        config(&[plain])
    );
    let gw = gateway(&yaml).await;
    match open(&gw, "/e/v1/ws", &[]).await {
        Err(WsError::Http(resp)) => {
            assert_eq!(resp.status(), 401);
            let body: Value =
                serde_json::from_slice(resp.body().as_deref().unwrap_or_default()).expect("json");
            assert_eq!(body["code"], "missing_credentials", "{body}");
        }
        other => panic!("expected 401, got {other:?}"),
    }
    let (mut ws, _) = open(&gw, "/e/v1/ws", &[("apikey", KEY)])
        .await
        .expect("upgraded with the key");
    ws.send(Message::text("keyed")).await.expect("send");
    assert_eq!(
        ws.next().await.expect("open").expect("message"),
        Message::text("keyed")
    );
}

#[tokio::test]
async fn without_a_header_credential_connection_init_carries_it() {
    let up = graphql_echo().await;
    let gw = gateway(&secured_gql(up, "read")).await;
    let proto = [("sec-websocket-protocol", "graphql-transport-ws")];
    // No credential anywhere: 4401.
    let (mut ws, resp) = open(&gw, "/sw/v1/graphql", &proto).await.expect("upgraded");
    assert_eq!(
        resp.headers()["sec-websocket-protocol"],
        "graphql-transport-ws"
    );
    send_json(&mut ws, json!({ "type": "connection_init", "payload": {} })).await;
    assert_eq!(close_code(&mut ws).await, Some(CloseCode::Library(4401)));
    // A bad one: 4401.
    let (mut ws, _) = open(&gw, "/sw/v1/graphql", &proto).await.expect("upgraded");
    send_json(
        &mut ws,
        json!({ "type": "connection_init", "payload": { "apikey": "wrong" } }),
    )
    .await;
    assert_eq!(close_code(&mut ws).await, Some(CloseCode::Library(4401)));
    // A subscribe before connection_init: 4401.
    let (mut ws, _) = open(&gw, "/sw/v1/graphql", &proto).await.expect("upgraded");
    send_json(
        &mut ws,
        json!({ "id": "1", "type": "subscribe", "payload": { "query": SUB } }),
    )
    .await;
    assert_eq!(close_code(&mut ws).await, Some(CloseCode::Library(4401)));
    // The key in the payload: admitted, and the subscription goes through.
    let (mut ws, _) = open(&gw, "/sw/v1/graphql", &proto).await.expect("upgraded");
    send_json(
        &mut ws,
        json!({ "type": "connection_init", "payload": { "apikey": KEY } }),
    )
    .await;
    assert_eq!(next_json(&mut ws).await["type"], "connection_ack");
    send_json(
        &mut ws,
        json!({ "id": "1", "type": "subscribe", "payload": { "query": SUB } }),
    )
    .await;
    for n in 1..=3 {
        let m = next_json(&mut ws).await;
        assert_eq!(m["payload"]["data"]["reviewAdded"]["stars"], n, "{m}");
    }
    assert_eq!(next_json(&mut ws).await["type"], "complete");
}

#[tokio::test]
async fn connection_init_credentials_are_held_to_the_operations_scopes() {
    let up = graphql_echo().await;
    let gw = gateway(&secured_gql(up, "admin")).await;
    let proto = [("sec-websocket-protocol", "graphql-ws")];
    let (mut ws, _) = open(&gw, "/sw/v1/graphql", &proto).await.expect("upgraded");
    send_json(
        &mut ws,
        json!({ "type": "connection_init", "payload": { "apikey": KEY } }),
    )
    .await;
    assert_eq!(next_json(&mut ws).await["type"], "connection_ack");
    send_json(
        &mut ws,
        json!({ "id": "1", "type": "start", "payload": { "query": SUB } }),
    )
    .await;
    let m = next_json(&mut ws).await;
    assert_eq!(
        (m["id"].as_str(), m["type"].as_str()),
        (Some("1"), Some("error")),
        "{m}"
    );
    assert_eq!(
        m["payload"]["extensions"]["code"], "FIELD_NOT_ALLOWED",
        "{m}"
    );
}

#[tokio::test]
async fn a_subscription_over_graphql_transport_ws_gets_the_back_ends_events() {
    let up = graphql_echo().await;
    let gw = gateway(&secured_gql(up, "read")).await;
    let (mut ws, resp) = open(
        &gw,
        "/sw/v1/graphql",
        &[
            ("sec-websocket-protocol", "graphql-transport-ws"),
            ("apikey", KEY),
        ],
    )
    .await
    .expect("upgraded");
    assert_eq!(
        resp.headers()["sec-websocket-protocol"],
        "graphql-transport-ws"
    );
    send_json(&mut ws, json!({ "type": "connection_init" })).await;
    assert_eq!(next_json(&mut ws).await["type"], "connection_ack");
    send_json(&mut ws, json!({ "type": "ping" })).await;
    assert_eq!(next_json(&mut ws).await["type"], "pong");
    send_json(
        &mut ws,
        json!({ "id": "1", "type": "subscribe", "payload": { "query": SUB } }),
    )
    .await;
    for n in 1..=3 {
        let m = next_json(&mut ws).await;
        assert_eq!(
            (m["id"].as_str(), m["type"].as_str()),
            (Some("1"), Some("next")),
            "{m}"
        );
        assert_eq!(m["payload"]["data"]["reviewAdded"]["stars"], n, "{m}");
        assert!(
            m["payload"]["data"]["reviewAdded"]["commentary"].is_string(),
            "{m}"
        );
    }
    let m = next_json(&mut ws).await;
    assert_eq!(
        (m["id"].as_str(), m["type"].as_str()),
        (Some("1"), Some("complete"))
    );
    // A query over the socket is analysed and forwarded too.
    send_json(
        &mut ws,
        json!({ "id": "q", "type": "subscribe", "payload": { "query": "{ hero { name } }" } }),
    )
    .await;
    let m = next_json(&mut ws).await;
    assert!(m["payload"]["data"]["hero"]["name"].is_string(), "{m}");
}

#[tokio::test]
async fn a_subscription_over_the_legacy_graphql_ws_gets_data_then_complete() {
    let up = graphql_echo().await;
    let gw = gateway(&secured_gql(up, "read")).await;
    let (mut ws, resp) = open(
        &gw,
        "/sw/v1/graphql",
        &[("sec-websocket-protocol", "graphql-ws"), ("apikey", KEY)],
    )
    .await
    .expect("upgraded");
    assert_eq!(resp.headers()["sec-websocket-protocol"], "graphql-ws");
    send_json(&mut ws, json!({ "type": "connection_init", "payload": {} })).await;
    assert_eq!(next_json(&mut ws).await["type"], "connection_ack");
    send_json(
        &mut ws,
        json!({ "id": "1", "type": "start", "payload": { "query": SUB } }),
    )
    .await;
    for n in 1..=3 {
        let m = next_json(&mut ws).await;
        assert_eq!(m["type"], "data", "{m}");
        assert_eq!(m["payload"]["data"]["reviewAdded"]["stars"], n, "{m}");
    }
    assert_eq!(next_json(&mut ws).await["type"], "complete");
    // A refused start: the legacy error shape (one error object), not forwarded.
    send_json(
        &mut ws,
        json!({ "id": "2", "type": "start", "payload": { "query": "subscription { nope }" } }),
    )
    .await;
    let m = next_json(&mut ws).await;
    assert_eq!(
        (m["id"].as_str(), m["type"].as_str()),
        (Some("2"), Some("error")),
        "{m}"
    );
    assert!(
        m["payload"]["message"]
            .as_str()
            .is_some_and(|s| s.contains("nope")),
        "{m}"
    );
}

#[tokio::test]
async fn refused_subscriptions_get_an_error_and_never_reach_the_back_end() {
    let up = graphql_echo().await;
    // reviewAdded needs `admin`; the key has only `read`.
    let gw = gateway(&secured_gql(up, "admin")).await;
    let mut ws = acked(&gw).await;
    send_json(
        &mut ws,
        json!({ "id": "s", "type": "subscribe", "payload": { "query": SUB } }),
    )
    .await;
    let m = next_json(&mut ws).await;
    assert_eq!(
        (m["id"].as_str(), m["type"].as_str()),
        (Some("s"), Some("error")),
        "{m}"
    );
    assert_eq!(
        m["payload"][0]["extensions"]["code"], "FIELD_NOT_ALLOWED",
        "{m}"
    );
    assert!(
        m["payload"][0]["message"]
            .as_str()
            .is_some_and(|s| s.contains("admin")),
        "{m}"
    );

    // An invalid query: the validation message, not forwarded.
    send_json(
        &mut ws,
        json!({ "id": "v", "type": "subscribe", "payload": { "query": "subscription { reviewAdded { strs } }" } }),
    )
    .await;
    let m = next_json(&mut ws).await;
    assert_eq!(
        (m["id"].as_str(), m["type"].as_str()),
        (Some("v"), Some("error")),
        "{m}"
    );
    assert_eq!(
        m["payload"][0]["extensions"]["code"], "GRAPHQL_VALIDATION_FAILED",
        "{m}"
    );
    let named = m["payload"].as_array().is_some_and(|errors| {
        errors
            .iter()
            .any(|e| e["message"].as_str().is_some_and(|s| s.contains("`strs`")))
    });
    assert!(named, "{m}");

    // The socket stays open: an allowed operation goes through, and nothing came back
    // for the refused ids (the back end answers every operation it sees, in order).
    send_json(
        &mut ws,
        json!({ "id": "ok", "type": "subscribe", "payload": { "query": "{ hero { name } }" } }),
    )
    .await;
    let m = next_json(&mut ws).await;
    assert_eq!(
        (m["id"].as_str(), m["type"].as_str()),
        (Some("ok"), Some("next")),
        "{m}"
    );
    assert_eq!(next_json(&mut ws).await["type"], "complete");
}

#[tokio::test]
async fn hostile_messages_close_with_4400_and_1009() {
    let up = graphql_echo().await;
    let gw = gateway(&secured_gql(up, "read")).await;
    let headers = [
        ("sec-websocket-protocol", "graphql-transport-ws"),
        ("apikey", KEY),
    ];
    let (mut ws, _) = open(&gw, "/sw/v1/graphql", &headers)
        .await
        .expect("upgraded");
    ws.send(Message::text("{ not json")).await.expect("send");
    assert_eq!(close_code(&mut ws).await, Some(CloseCode::Library(4400)));

    let (mut ws, _) = open(&gw, "/sw/v1/graphql", &headers)
        .await
        .expect("upgraded");
    let big = format!(
        "{{\"type\":\"subscribe\",\"id\":\"1\",\"payload\":{{\"query\":\"{}\"}}}}",
        "x".repeat(2 << 20)
    );
    let _ = ws.send(Message::text(big)).await;
    assert_eq!(close_code(&mut ws).await, Some(CloseCode::Size));
}

#[tokio::test]
async fn a_drain_closes_an_open_upgraded_connection() {
    let up = echo().await;
    let gw = gateway_with(&config(&[api("e", &[http(up)], "")]), |s| {
        s.drain_timeout = Duration::from_secs(120);
    })
    .await;
    let (mut ws, _) = open(&gw, "/e/v1/ws", &[]).await.expect("upgraded");
    ws.send(Message::text("before")).await.expect("send");
    assert_eq!(
        ws.next().await.expect("open").expect("message"),
        Message::text("before")
    );
    let TestGateway { handle, dir, .. } = gw;
    let stopped = tokio::time::timeout(Duration::from_secs(10), handle.shutdown()).await;
    assert!(
        matches!(stopped, Ok(Ok(()))),
        "the drain waited on the socket"
    );
    drop(dir);
    // The client sees its socket end.
    let end = tokio::time::timeout(Duration::from_secs(5), ws.next())
        .await
        .expect("closed in time");
    assert!(
        !matches!(end, Some(Ok(Message::Text(_) | Message::Binary(_)))),
        "{end:?}"
    );
}

#[tokio::test]
async fn a_drain_closes_a_graphql_socket_with_1001() {
    let up = graphql_echo().await;
    let gw = gateway(&secured_gql(up, "read")).await;
    let mut ws = acked(&gw).await;
    let TestGateway { handle, .. } = gw;
    let stop = tokio::spawn(handle.shutdown());
    assert_eq!(close_code(&mut ws).await, Some(CloseCode::Away));
    let stopped = tokio::time::timeout(Duration::from_secs(10), stop).await;
    assert!(matches!(stopped, Ok(Ok(Ok(())))), "drained");
}

#[tokio::test]
async fn a_websocket_over_the_https_listener_is_relayed() {
    let up = echo().await;
    let gw = gateway(&config(&[api("e", &[http(up)], "")])).await;
    let tls = tls_connect(&gw, b"http/1.1").await;
    let req = format!("wss://localhost:{}/e/v1/ws", gw.https.port())
        .into_client_request()
        .expect("request");
    let (mut ws, resp) = tokio_tungstenite::client_async(req, tls)
        .await
        .expect("upgraded");
    assert_eq!(resp.status(), 101);
    ws.send(Message::text("over tls")).await.expect("send");
    assert_eq!(
        ws.next().await.expect("open").expect("message"),
        Message::text("over tls")
    );
    assert_eq!(gw.handle.connections.upgraded(), 1);
}

/// An address on 127.0.0.1 where nothing listens (bound, then released).
fn closed_addr() -> SocketAddr {
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    l.local_addr().expect("addr")
}

/// The key "sandbox-key" (its SHA-256), a SANDBOX key.
const SANDBOX_KEY_SHA: &str = "db6bcf6a2a36ee93dafa7dfcdc40973da39f2e2843e4c6f76e08aefc767b0caa";

#[tokio::test]
async fn upgrades_skip_suspended_endpoints_and_go_to_the_sandbox_pool() {
    let (up, dead) = (echo().await, closed_addr());
    let keyed = "    auth: { oauth2: false, api_key: true }\n";
    let resilience = "    load_balancing: failover\n    resilience:\n      suspension: { on: [connect_failure], initial_duration: 1m }\n";
    let mut subs = String::new();
    for api in ["/r/v1", "/s/v1", "/n/v1"] {
        for app in ["app-1", "app-2"] {
            subs += &format!(
                "    - {{ api: {api}, application: {app}, state: ACTIVE, tier: Unlimited }}\n"
            );
        }
    }
    let yaml = format!(
        "security:\n  api_keys:\n    - {{ sha256: \"{KEY_SHA}\", application: app-1, subscriber: alice }}\n    - {{ sha256: \"{SANDBOX_KEY_SHA}\", application: app-2, subscriber: alice, sandbox: true }}\n  subscriptions:\n{subs}{}",
        config(&[
            api("r", &[http(dead), http(up)], &format!("{keyed}{resilience}")),
            api("s", &[http(dead)], &format!("{keyed}    sandbox_endpoints: [\"{}\"]\n", http(up))),
            api("n", &[http(up)], keyed),
        ])
    );
    let gw = gateway(&yaml).await;
    let health = |i: usize| {
        let snap = gw.snapshots().load();
        let api = snap.apis.iter().find(|a| a.context == "/r").expect("api r");
        api.endpoints[i].state.as_ref().map(|s| s.health())
    };
    // The dead endpoint is refused once, suspended, and the upgrade goes to the other.
    for _ in 0..3 {
        let (mut ws, _) = open(&gw, "/r/v1/ws", &[("apikey", KEY)])
            .await
            .expect("upgraded");
        ws.send(Message::text("hi")).await.expect("send");
        assert_eq!(
            ws.next().await.expect("open").expect("message"),
            Message::text("hi")
        );
    }
    assert_eq!(
        health(0),
        Some(turnpike_config::endpoint_state::EndpointHealth::Suspended)
    );
    // A SANDBOX key's upgrade goes to the sandbox endpoint; a production key's to the
    // (dead) production one.
    let (mut ws, _) = open(&gw, "/s/v1/ws", &[("apikey", "sandbox-key")])
        .await
        .expect("upgraded");
    ws.send(Message::text("sb")).await.expect("send");
    assert_eq!(
        ws.next().await.expect("open").expect("message"),
        Message::text("sb")
    );
    match open(&gw, "/s/v1/ws", &[("apikey", KEY)]).await {
        Err(WsError::Http(r)) => assert_eq!(r.status(), 502),
        other => panic!("a production upgrade to a dead endpoint: {other:?}"),
    }
    // No sandbox endpoints: 403 sandbox_not_configured, nothing upgraded.
    match open(&gw, "/n/v1/ws", &[("apikey", "sandbox-key")]).await {
        Err(WsError::Http(r)) => {
            assert_eq!(r.status(), 403);
            let body: Value = serde_json::from_slice(r.body().as_deref().unwrap_or_default())
                .expect("JSON error");
            assert_eq!(body["code"], "sandbox_not_configured");
        }
        other => panic!("a sandbox upgrade without sandbox endpoints: {other:?}"),
    }
}
