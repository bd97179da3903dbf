//! The MCP audit trail and the tools report on SQLite and a real PostgreSQL: audit
//! records go in through the gateways' ingest endpoint (gateway token), beside rollups;
//! the Admin and Publisher endpoints list them newest first with every filter and
//! paging; a shipment a gateway could not have made is refused whole; records past
//! their retention are deleted by the analytics compaction; `top?by=tool` and
//! `by=tool_application` count tool calls only (not REST resources, not the endpoint's
//! own `mcp` messages).

mod support;

use http::{Method, StatusCode};
use serde_json::{json, Value};
use support::{control_plane, Cp, TOKEN};
use turnpike_analytics::rollup::{roll_up, MINUTE};
use turnpike_analytics::{AuditRecord, Event, Latency, Outcome};
use turnpike_store::testing::TestDbs;
use turnpike_store::AnalyticsRetention;

/// 2026-11-23T20:00:00Z.
const T0: i64 = 1_795_464_000;

fn record(i: i64, tool: &str, app: Option<&str>, outcome: &str) -> AuditRecord {
    AuditRecord {
        time_ms: (T0 + i) * 1000,
        request_id: format!("r{i}"),
        gateway: "gw-1".into(),
        api_name: "Echo".into(),
        api_context: "/echo".into(),
        api_version: "v1".into(),
        tool: tool.into(),
        application_id: app.map(str::to_string),
        application_name: app.map(|a| format!("name-{a}")),
        subject: Some("sub".into()),
        session_id: Some("0123456789abcdef0123456789abcdef".into()),
        arguments: format!("{{\"n\":{i},\"password\":\"[REDACTED]\"}}"),
        truncated: i == 3,
        outcome: outcome.into(),
        code: (outcome != "ok").then(|| "-32602".to_string()),
        status: 200,
        latency_us: 1_000 + i as u64,
    }
}

async fn ship(cp: &Cp, body: Value) -> (StatusCode, Value) {
    let r = cp
        .call(
            Method::POST,
            "/api/am/gateway/v1/analytics",
            None,
            Some(body),
            &[("authorization", &format!("Bearer {TOKEN}"))],
        )
        .await;
    (r.status, r.json)
}

/// The `list` of a page's `tool` and `requestId`s, in order.
fn ids(page: &Value) -> Vec<String> {
    page["list"]
        .as_array()
        .map(|l| {
            l.iter()
                .map(|i| i["requestId"].as_str().unwrap_or("").to_string())
                .collect()
        })
        .unwrap_or_default()
}

async fn records_are_listed_filtered_paged_and_expire(url: String) {
    let cp = control_plane(&url).await;
    let api = cp
        .create_api("/echo", "v1", "http://127.0.0.1:9", false)
        .await;
    let records = vec![
        record(1, "getPet", Some("a1"), "ok"),
        record(2, "getPet", Some("a2"), "tool_error"),
        record(3, "addPet", Some("a1"), "ok"),
        record(4, "addPet", None, "refused"),
    ];
    let (code, body) = ship(&cp, json!({ "audits": records })).await;
    assert_eq!(code, StatusCode::ACCEPTED, "{body}");
    assert_eq!(body["audits"], 4);

    let all = cp.get("/api/am/admin/v1/mcp-audit", "admin").await;
    assert_eq!(all.status, StatusCode::OK, "{}", all.json);
    assert_eq!(ids(&all.json), ["r4", "r3", "r2", "r1"], "newest first");
    assert_eq!(all.json["pagination"]["total"], 4);
    let r1 = &all.json["list"][3];
    assert_eq!(r1["tool"], "getPet");
    assert_eq!(r1["applicationName"], "name-a1");
    assert_eq!(r1["subject"], "sub");
    assert_eq!(r1["arguments"], "{\"n\":1,\"password\":\"[REDACTED]\"}");
    assert_eq!(r1["timestamp"], (T0 + 1) * 1000);
    assert_eq!(r1["latencyUs"], 1001);
    assert_eq!(all.json["list"][1]["truncated"], true);
    assert_eq!(all.json["list"][0]["applicationId"], Value::Null);
    assert_eq!(all.json["list"][0]["code"], "-32602");

    let q = |query: &str| format!("/api/am/admin/v1/mcp-audit?{query}");
    for (query, want) in [
        ("tool=getPet", vec!["r2", "r1"]),
        ("applicationId=a1", vec!["r3", "r1"]),
        ("outcome=refused", vec!["r4"]),
        (&format!("from={}&to={}", T0 + 2, T0 + 4), vec!["r3", "r2"]),
        (
            "apiContext=/echo&apiVersion=v1&limit=1&offset=1",
            vec!["r3"],
        ),
        (&format!("apiId={api}&tool=addPet"), vec!["r4", "r3"]),
        ("apiContext=/other&apiVersion=v1", vec![]),
    ] {
        let r = cp.get(&q(query), "admin").await;
        assert_eq!(r.status, StatusCode::OK, "{query}: {}", r.json);
        assert_eq!(ids(&r.json), want, "{query}");
    }
    let bad = cp.get(&q("outcome=maybe&from=yesterday"), "admin").await;
    assert_eq!(bad.status, StatusCode::BAD_REQUEST);
    assert_eq!(bad.fields(), ["from", "outcome"], "{}", bad.json);
    // Admins only; the Publisher reads one API's.
    let denied = cp.get("/api/am/admin/v1/mcp-audit", "sub").await;
    assert_eq!(denied.status, StatusCode::FORBIDDEN);
    let publisher = format!("/api/am/publisher/v1/apis/{api}/mcp-audit?outcome=ok");
    let r = cp.get(&publisher, "pub").await;
    assert_eq!(ids(&r.json), ["r3", "r1"], "{}", r.json);

    // A shipment a gateway could not have made is refused whole (this harness's body
    // limit, 64 KiB, keeps the arguments' and the count's caps out of reach here).
    let long = record(9, &"x".repeat(2_000), None, "ok");
    let bad_outcome = record(10, "x", None, "perhaps");
    for bad in [vec![long], vec![record(11, "x", None, "ok"), bad_outcome]] {
        let (code, body) = ship(&cp, json!({ "audits": bad })).await;
        assert_eq!(code, StatusCode::BAD_REQUEST, "{body}");
    }
    let r = cp.get("/api/am/admin/v1/mcp-audit", "admin").await;
    assert_eq!(r.json["pagination"]["total"], 4, "nothing of them stored");

    // Retention: a day later with one day kept, the records are gone.
    let retention = AnalyticsRetention {
        mcp_audit: std::time::Duration::from_secs(86_400),
        ..AnalyticsRetention::default()
    };
    let store = cp.state.store();
    let kept = store
        .compact_analytics(T0 + 3_600, &retention)
        .await
        .expect("compaction");
    assert_eq!(kept.audit_deleted, 0);
    let done = store
        .compact_analytics(T0 + 2 * 86_400, &retention)
        .await
        .expect("compaction");
    assert_eq!(done.audit_deleted, 4);
    let r = cp.get("/api/am/admin/v1/mcp-audit", "admin").await;
    assert_eq!(r.json["list"], json!([]));
}

fn event(i: u64, resource: &str, app: &str, status: u16) -> Event {
    Event {
        time_ms: T0 * 1000 + i as i64,
        time: String::new(),
        request_id: format!("e{i}"),
        gateway: "gw-1".into(),
        outcome: if status < 400 {
            Outcome::Served
        } else {
            Outcome::AuthFailed
        },
        reason: None,
        error_code: None,
        api_name: Some("Echo".into()),
        api_context: Some("/echo".into()),
        api_version: Some("v1".into()),
        resource: Some(resource.into()),
        method: "POST".into(),
        application_id: Some(app.into()),
        application_name: Some(format!("name-{app}")),
        subscriber: None,
        key_type: None,
        status,
        upstream_status: None,
        bytes_in: 0,
        bytes_out: 0,
        latency: Latency {
            before_us: 100,
            upstream_us: 1_000 * i,
            after_us: 0,
            total_us: 100 + 1_000 * i,
        },
        snapshot_version: 1,
        client_ip: None,
        trace_id: None,
        ai: None,
    }
}

async fn the_tools_report_counts_tool_calls_only(url: String) {
    let cp = control_plane(&url).await;
    let api = cp
        .create_api("/echo", "v1", "http://127.0.0.1:9", false)
        .await;
    let events = vec![
        event(1, "getPet", "a1", 200),
        event(2, "getPet", "a1", 200),
        event(3, "getPet", "a2", 401),
        event(4, "addPet", "a1", 200),
        event(5, "mcp", "a1", 200),
        event(6, "/pets/{id}", "a1", 200),
    ];
    let (code, body) = ship(&cp, json!({ "rollups": roll_up(&events, MINUTE) })).await;
    assert_eq!(code, StatusCode::ACCEPTED, "{body}");
    let window = format!("from={T0}&to={}", T0 + 60);
    let path = |by: &str| format!("/api/am/publisher/v1/apis/{api}/analytics/top?by={by}&{window}");
    let r = cp.get(&path("tool"), "pub").await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.json);
    let list = r.json["list"].as_array().expect("list").clone();
    let rows: Vec<(Value, Value, Value)> = list
        .iter()
        .map(|t| {
            (
                t["tool"].clone(),
                t["requests"].clone(),
                t["errors"].clone(),
            )
        })
        .collect();
    assert_eq!(
        rows,
        [
            (json!("getPet"), json!(3), json!(1)),
            (json!("addPet"), json!(1), json!(0))
        ]
    );
    let p = &list[0]["latency"]["total"];
    assert_eq!(p["count"], 3);
    for q in ["p50Us", "p95Us", "p99Us"] {
        assert!(p[q].as_u64().is_some_and(|us| us >= 1_100), "{q}: {p}");
    }
    let r = cp.get(&path("tool_application"), "pub").await;
    let rows: Vec<(Value, Value, Value)> = r.json["list"]
        .as_array()
        .expect("list")
        .iter()
        .map(|t| {
            (
                t["tool"].clone(),
                t["applicationId"].clone(),
                t["requests"].clone(),
            )
        })
        .collect();
    assert_eq!(
        rows,
        [
            (json!("getPet"), json!("a1"), json!(2)),
            (json!("addPet"), json!("a1"), json!(1)),
            (json!("getPet"), json!("a2"), json!(1))
        ]
    );
    let bad = cp.get(&path("tools"), "pub").await;
    assert_eq!(bad.status, StatusCode::BAD_REQUEST);
}

const CASES: &[(&str, turnpike_store::testing::Case)] = turnpike_store::cases![
    records_are_listed_filtered_paged_and_expire,
    the_tools_report_counts_tool_calls_only
];

#[tokio::test]
async fn sqlite() {
    TestDbs::sqlite().run(CASES).await;
}

#[tokio::test]
async fn postgres() {
    TestDbs::postgres().run(CASES).await;
}
