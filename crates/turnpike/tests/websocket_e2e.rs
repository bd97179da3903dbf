//! End to end with the real binary: `turnpike echo --graphql` and `turnpike gateway
//! --config` as processes; a GraphQL subscription over WebSocket through the gateway
//! (graphql-transport-ws) gets the back end's events and `complete`, an invalid one an
//! `error` message; SIGTERM then closes the open socket (1001) and the gateway exits 0.

mod support;

use std::net::TcpStream;
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use support::{start, start_printing, TempDir};
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::{self, Message};

const STARWARS: &str = include_str!("../../../bench/graphql/starwars/starwars-schema.graphql");

type Ws = tungstenite::WebSocket<TcpStream>;

fn read_json(ws: &mut Ws) -> Value {
    loop {
        match ws.read().expect("a message") {
            Message::Text(t) => return serde_json::from_str(t.as_str()).expect("JSON"),
            Message::Ping(_) | Message::Pong(_) => continue,
            other => panic!("unexpected {other:?}"),
        }
    }
}

fn send(ws: &mut Ws, v: Value) {
    ws.send(Message::text(v.to_string())).expect("send");
}

#[test]
fn a_subscription_through_the_binary_and_sigterm_closes_the_socket() {
    let dir = TempDir::new();
    let (_echo, echo_addr) = start(
        &["echo", "--port", "0", "--graphql"],
        "echo listening on http://",
    );
    let schema: String = STARWARS.lines().map(|l| format!("        {l}\n")).collect();
    let yaml = format!(
        "apis:\n  - name: sw\n    context: /sw\n    version: v1\n    default: true\n    \
         endpoints: [\"http://{echo_addr}/graphql\"]\n    graphql:\n      schema: |\n{schema}    \
         resources:\n      - {{ path: \"/*\", methods: [GET, POST] }}\n"
    );
    let cfg = dir.path().join("apis.yaml");
    std::fs::write(&cfg, yaml).expect("write config");
    let data = dir.path().join("data");
    let (mut gw, found) = start_printing(
        &[
            "gateway",
            "--config",
            cfg.to_str().expect("utf-8 path"),
            "--http-port",
            "0",
            "--https-port",
            "off",
            "--data-dir",
            data.to_str().expect("utf-8 path"),
        ],
        &[("TURNPIKE_DRAIN_DELAY", "0")],
        &["gateway listening on http://"],
    );
    let gw_addr = found[0].clone();

    let mut req = format!("ws://{gw_addr}/sw/v1/graphql")
        .into_client_request()
        .expect("request");
    req.headers_mut().insert(
        "sec-websocket-protocol",
        "graphql-transport-ws".parse().expect("value"),
    );
    let tcp = TcpStream::connect(&gw_addr).expect("connect");
    tcp.set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    let (mut ws, resp) = tungstenite::client(req, tcp).expect("upgraded");
    assert_eq!(
        resp.headers()["sec-websocket-protocol"],
        "graphql-transport-ws"
    );
    send(&mut ws, json!({ "type": "connection_init" }));
    assert_eq!(read_json(&mut ws)["type"], "connection_ack");
    let sub = "subscription { reviewAdded { stars commentary } }";
    send(
        &mut ws,
        json!({ "id": "1", "type": "subscribe", "payload": { "query": sub } }),
    );
    for n in 1..=3 {
        let m = read_json(&mut ws);
        assert_eq!(m["type"], "next", "{m}");
        assert_eq!(m["payload"]["data"]["reviewAdded"]["stars"], n, "{m}");
    }
    assert_eq!(read_json(&mut ws)["type"], "complete");
    send(
        &mut ws,
        json!({ "id": "2", "type": "subscribe", "payload": { "query": "subscription { nope }" } }),
    );
    let m = read_json(&mut ws);
    assert_eq!(
        (m["id"].as_str(), m["type"].as_str()),
        (Some("2"), Some("error")),
        "{m}"
    );
    assert_eq!(
        m["payload"][0]["extensions"]["code"],
        "GRAPHQL_VALIDATION_FAILED"
    );

    let pid = gw.0.id().to_string();
    let killed = Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .expect("kill");
    assert!(killed.success());
    let code = loop {
        match ws.read() {
            Ok(Message::Close(f)) => break f.map(|f| f.code),
            Ok(_) => continue,
            Err(_) => break None,
        }
    };
    assert_eq!(code, Some(CloseCode::Away), "the drain closes the socket");
    let deadline = Instant::now() + Duration::from_secs(20);
    let status = loop {
        if let Some(s) = gw.0.try_wait().expect("wait") {
            break s;
        }
        assert!(Instant::now() < deadline, "gateway did not stop on SIGTERM");
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(status.success(), "exit status {status:?}");
}
