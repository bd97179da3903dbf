//! `turnpike echo --graphql` over a real socket: WSO2's canned answers by `query-number`,
//! data shaped to the query over POST JSON, POST application/graphql and GET, and
//! GraphQL errors for invalid queries.

use std::net::SocketAddr;
use std::sync::Arc;

use bytes::Bytes;
use http::{Request, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http1;
use hyper_util::rt::TokioIo;
use serde_json::Value;
use turnpike_bench::echo::{spawn, EchoConfig};
use turnpike_bench::graphql_echo::{GraphqlBackend, CANNED, QUERIES};

async fn backend() -> SocketAddr {
    let gql = GraphqlBackend::new(None).expect("bundled schema");
    spawn(EchoConfig {
        graphql: Some(Arc::new(gql)),
        ..EchoConfig::default()
    })
    .await
    .expect("spawn")
}

async fn call(addr: SocketAddr, r: Request<Full<Bytes>>) -> (StatusCode, Option<String>, Bytes) {
    let stream = tokio::net::TcpStream::connect(addr).await.expect("connect");
    let (mut s, conn) = http1::handshake(TokioIo::new(stream))
        .await
        .expect("handshake");
    tokio::spawn(conn);
    let resp = s.send_request(r).await.expect("response");
    let status = resp.status();
    let ct = resp
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    (
        status,
        ct,
        resp.into_body().collect().await.expect("body").to_bytes(),
    )
}

fn post(ct: &str, body: String, number: Option<&str>) -> Request<Full<Bytes>> {
    let mut b = Request::post("/graphql")
        .header("host", "echo")
        .header("content-type", ct);
    if let Some(n) = number {
        b = b.header("query-number", n);
    }
    b.body(Full::new(Bytes::from(body))).expect("request")
}

#[tokio::test]
async fn query_number_header_gets_wso2s_canned_response() {
    let addr = backend().await;
    for n in 1..=3 {
        let body =
            serde_json::json!({ "operationName": null, "query": QUERIES[n - 1] }).to_string();
        let (status, ct, got) =
            call(addr, post("application/json", body, Some(&n.to_string()))).await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(ct.as_deref(), Some("application/json"));
        assert_eq!(&got[..], CANNED[n - 1].as_bytes());
    }
}

#[tokio::test]
async fn data_is_shaped_to_the_query() {
    let addr = backend().await;
    let q = r#"query { hero { __typename name friends { id } } allHumans(first: 2) { name starships { length } } search(text: "x") { ... on Droid { primaryFunction } } }"#;
    let body = serde_json::json!({ "query": q }).to_string();
    let (status, _, got) = call(addr, post("application/json", body, None)).await;
    assert_eq!(status, StatusCode::OK);
    let v: Value = serde_json::from_slice(&got).expect("json");
    let data = &v["data"];
    assert!(data["hero"]["name"].is_string(), "{v}");
    assert!(data["hero"]["__typename"].is_string(), "{v}");
    assert_eq!(data["hero"]["friends"].as_array().map(Vec::len), Some(3));
    assert_eq!(data["allHumans"].as_array().map(Vec::len), Some(2));
    assert!(
        data["allHumans"][0]["starships"][0]["length"].is_number(),
        "{v}"
    );
    assert!(data["search"][0]["primaryFunction"].is_string(), "{v}");
    assert!(data["hero"].get("id").is_none(), "only what was asked: {v}");
}

#[tokio::test]
async fn application_graphql_and_get_are_answered_too() {
    let addr = backend().await;
    let (_, _, got) = call(
        addr,
        post(
            "application/graphql",
            "{ droid(id: 1) { name } }".into(),
            None,
        ),
    )
    .await;
    let v: Value = serde_json::from_slice(&got).expect("json");
    assert!(v["data"]["droid"]["name"].is_string(), "{v}");
    let get = Request::get("/graphql?query=%7Bhuman(id%3A1)%7Bmass%7D%7D")
        .header("host", "echo")
        .body(Full::new(Bytes::new()))
        .expect("request");
    let (_, _, got) = call(addr, get).await;
    let v: Value = serde_json::from_slice(&got).expect("json");
    assert!(v["data"]["human"]["mass"].is_number(), "{v}");
}

#[tokio::test]
async fn invalid_queries_get_graphql_errors() {
    let addr = backend().await;
    let body = serde_json::json!({ "query": "{ hero { name wings } }" }).to_string();
    let (_, _, got) = call(addr, post("application/json", body, None)).await;
    let v: Value = serde_json::from_slice(&got).expect("json");
    assert!(
        v["errors"][0]["message"]
            .as_str()
            .is_some_and(|m| m.contains("wings")),
        "{v}"
    );
    assert!(v.get("data").is_none());
}

/// `bench run --graphql 3` against `echo --graphql`: every request gets Query 3's canned
/// 27 KB answer (received bytes per request prove the header and body were sent).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bench_run_sends_wso2s_query_with_its_number() {
    use std::time::Duration;
    use turnpike_bench::run::{execute, RunArgs};
    let addr = backend().await;
    let mut args = RunArgs::closed(
        format!("http://{addr}/graphql"),
        2,
        Duration::from_millis(500),
        Duration::ZERO,
    );
    args.threads = Some(1);
    args.graphql = Some(3);
    let s = execute(&args).await.expect("run").summary;
    assert_eq!(s.errors, 0, "{s:?}");
    assert!(s.samples > 0);
    let per_request = s.received_kbps * 1024.0 * s.duration_s / s.samples as f64;
    assert!(
        per_request > CANNED[2].len() as f64,
        "{per_request} bytes a response"
    );
}
