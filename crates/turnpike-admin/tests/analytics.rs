//! The analytics REST API on SQLite and a real PostgreSQL: a gateway's batches go in
//! through the ingest endpoint (gateway token), and the Admin, Publisher (per API) and
//! DevPortal (per own application) reports answer with the counts, breakdowns and
//! percentiles computed from the same events here; compaction into hour and day rows
//! changes none of the answers.

mod support;

use http::{Method, StatusCode};
use serde_json::{json, Value};
use support::{control_plane, Cp, TOKEN};
use turnpike_analytics::hist::{bucket_high, bucket_of, rank};
use turnpike_analytics::rollup::{roll_up, MINUTE};
use turnpike_analytics::{Event, Latency, Outcome};
use turnpike_store::testing::TestDbs;
use turnpike_store::AnalyticsRetention;

/// 2026-11-23T20:00:00Z: the window starts on an hour.
const T0: i64 = 1_795_464_000;

fn event(i: u64, app: &str, time_s: i64) -> Event {
    let (status, outcome, reason, upstream) = match i % 7 {
        0 => (429, Outcome::Throttled, Some("Gold"), None),
        1 => (401, Outcome::AuthFailed, Some("invalid_token"), None),
        2 => (
            502,
            Outcome::BackendError,
            Some("upstream_unavailable"),
            None,
        ),
        _ => (200, Outcome::Served, None, Some(200)),
    };
    let up_us = upstream.map_or(0, |_| 1_000 + i * 997 % 50_000);
    let before = 50 + i * 13 % 400;
    let after = 20 + i * 7 % 300;
    Event {
        time_ms: time_s * 1000 + (i as i64 % 1000),
        time: String::new(),
        request_id: format!("r{i}"),
        gateway: "gw-1".into(),
        outcome,
        reason: reason.map(str::to_string),
        error_code: None,
        api_name: Some("Echo".into()),
        api_context: Some("/echo".into()),
        api_version: Some("v1".into()),
        resource: Some(if i.is_multiple_of(2) { "/a" } else { "/b" }.into()),
        method: "GET".into(),
        application_id: Some(app.into()),
        application_name: Some(format!("name-{app}")),
        subscriber: None,
        key_type: Some("PRODUCTION".into()),
        status,
        upstream_status: upstream,
        bytes_in: i,
        bytes_out: 100 + i,
        latency: Latency {
            before_us: before,
            upstream_us: up_us,
            after_us: after,
            total_us: before + up_us + after,
        },
        snapshot_version: 3,
        client_ip: None,
        trace_id: None,
        ai: None,
    }
}

fn p(values: &mut [u64], q: f64) -> Value {
    values.sort_unstable();
    match values.len() {
        0 => Value::Null,
        n => bucket_high(bucket_of(values[(rank(q, n as u64) - 1) as usize])).into(),
    }
}

async fn ingest(cp: &Cp, events: &[Event], token: &str) -> StatusCode {
    cp.call(
        Method::POST,
        "/api/am/gateway/v1/analytics",
        None,
        Some(json!({ "events": events })),
        &[("authorization", &format!("Bearer {token}"))],
    )
    .await
    .status
}

/// What a gateway ships: the events' minute rollups.
async fn ingest_rollups(cp: &Cp, events: &[Event]) -> (StatusCode, Value) {
    let rows = roll_up(events, MINUTE);
    let r = cp
        .call(
            Method::POST,
            "/api/am/gateway/v1/analytics",
            None,
            Some(json!({ "rollups": rows })),
            &[("authorization", &format!("Bearer {TOKEN}"))],
        )
        .await;
    (r.status, r.json)
}

async fn app(cp: &Cp, user: &str, name: &str) -> String {
    let r = cp
        .post(
            "/api/am/devportal/v1/applications",
            user,
            json!({"name": name, "throttlingPolicy": "Unlimited"}),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.json);
    r.json["id"].as_str().expect("id").to_string()
}

async fn reports_match_the_events(url: String) {
    let cp = control_plane(&url).await;
    let api = cp
        .create_api("/echo", "v1", "http://127.0.0.1:9", false)
        .await;
    let (a1, a2) = (app(&cp, "sub", "one").await, app(&cp, "sub2", "two").await);
    // 70 events of app one over two hours, 20 of app two in the first hour.
    let mut events: Vec<Event> = (0..70)
        .map(|i| event(i, &a1, T0 + (i as i64) * 100))
        .collect();
    events.extend((70..90).map(|i| event(i, &a2, T0 + 60 + (i as i64 - 70) * 30)));
    assert_eq!(
        ingest(&cp, &events[..40], "wrong").await,
        StatusCode::UNAUTHORIZED
    );
    assert_eq!(
        ingest(&cp, &events[..40], TOKEN).await,
        StatusCode::ACCEPTED
    );
    // The rest as a gateway ships them: rollup rows it summed itself.
    let (code, body) = ingest_rollups(&cp, &events[40..]).await;
    assert_eq!(code, StatusCode::ACCEPTED, "{body}");
    assert_eq!(body["rollupRequests"], 50, "{body}");
    let rows = roll_up(&events[40..42], MINUTE);
    let mut hour = serde_json::to_value(&rows[0]).expect("row");
    hour["period"] = json!(3600);
    let mut lying = serde_json::to_value(&rows[0]).expect("row");
    lying["requests"] = json!(1_000);
    let mut odd = serde_json::to_value(&rows[0]).expect("row");
    odd["bucket"] = json!(T0 + 7);
    let mut bad_hist = serde_json::to_value(&rows[0]).expect("row");
    bad_hist["lat_total"] = json!("9999:1");
    for (what, row) in [
        ("hour", hour),
        ("lying", lying),
        ("odd", odd),
        ("hist", bad_hist),
    ] {
        let r = cp
            .call(
                Method::POST,
                "/api/am/gateway/v1/analytics",
                None,
                Some(json!({ "rollups": [row] })),
                &[("authorization", &format!("Bearer {TOKEN}"))],
            )
            .await;
        assert_eq!(r.status, StatusCode::BAD_REQUEST, "{what}: {}", r.json);
        assert_eq!(r.json["code"], "bad_request", "{what}: {}", r.json);
    }
    let bad = cp
        .call(
            Method::POST,
            "/api/am/gateway/v1/analytics",
            None,
            Some(json!({"events": [{"nope": 1}]})),
            &[("authorization", &format!("Bearer {TOKEN}"))],
        )
        .await;
    assert_eq!(bad.status, StatusCode::BAD_REQUEST, "{}", bad.json);

    let window = format!("from={T0}&to={}", T0 + 2 * 3600);
    let admin =
        |report: &str, extra: &str| format!("/api/am/admin/v1/analytics/{report}?{window}{extra}");

    // Totals and latency percentiles over everything.
    let summary = cp.get(&admin("summary", ""), "admin").await;
    assert_eq!(summary.status, StatusCode::OK, "{}", summary.json);
    let t = &summary.json["totals"];
    assert_eq!(t["requests"], 90);
    let errors = events.iter().filter(|e| e.status >= 400).count();
    assert_eq!(t["errors"], errors);
    let throttled = events
        .iter()
        .filter(|e| e.outcome == Outcome::Throttled)
        .count();
    assert_eq!(t["throttled"], throttled);
    assert_eq!(
        t["bytesOut"],
        events.iter().map(|e| e.bytes_out).sum::<u64>()
    );
    let lat = &summary.json["latency"];
    for (name, q) in [("p50Us", 0.5), ("p95Us", 0.95), ("p99Us", 0.99)] {
        let mut total: Vec<u64> = events.iter().map(|e| e.latency.total_us).collect();
        let mut gw: Vec<u64> = events.iter().map(|e| e.latency.gateway_us()).collect();
        let mut back: Vec<u64> = events
            .iter()
            .filter(|e| e.upstream_status.is_some())
            .map(|e| e.latency.upstream_us)
            .collect();
        assert_eq!(lat["total"][name], p(&mut total, q), "total {name}");
        assert_eq!(lat["gateway"][name], p(&mut gw, q), "gateway {name}");
        assert_eq!(lat["backend"][name], p(&mut back, q), "backend {name}");
    }

    // Publisher: traffic per hour of the one API.
    let traffic = cp
        .get(
            &format!("/api/am/publisher/v1/apis/{api}/analytics/traffic?{window}&interval=3600"),
            "pub",
        )
        .await;
    assert_eq!(traffic.status, StatusCode::OK, "{}", traffic.json);
    let points = traffic.json["points"].as_array().expect("points").clone();
    let first_hour = events
        .iter()
        .filter(|e| e.time_ms / 1000 < T0 + 3600)
        .count();
    assert_eq!(points.len(), 2);
    assert_eq!(points[0]["timestamp"], T0);
    assert_eq!(points[0]["requests"], first_hour);
    assert_eq!(points[1]["requests"], 90 - first_hour);

    // Top applications, then resources.
    let top = cp.get(&admin("top", "&by=application"), "admin").await;
    let list = top.json["list"].as_array().expect("list");
    assert_eq!(list[0]["applicationId"], a1.as_str());
    assert_eq!(list[0]["requests"], 70);
    assert_eq!(
        list[1]["applicationName"], "two",
        "the store's name, not the event's"
    );
    let top = cp.get(&admin("top", "&by=resource&limit=1"), "admin").await;
    assert_eq!(top.json["list"].as_array().map(Vec::len), Some(1));
    assert_eq!(top.json["list"][0]["resource"], "/a");

    // Error and throttle breakdowns.
    let errs = cp.get(&admin("errors", ""), "admin").await;
    let find = |outcome: &str| {
        errs.json["list"]
            .as_array()
            .and_then(|l| l.iter().find(|e| e["outcome"] == outcome).cloned())
            .unwrap_or(Value::Null)
    };
    let backend = events
        .iter()
        .filter(|e| e.outcome == Outcome::BackendError)
        .count();
    assert_eq!(find("backend_error")["requests"], backend);
    assert_eq!(find("backend_error")["reason"], "upstream_unavailable");
    assert_eq!(find("auth_failed")["statusClass"], "4xx");
    let thr = cp.get(&admin("throttling", ""), "admin").await;
    let sum: u64 = thr.json["list"]
        .as_array()
        .map(|l| l.iter().filter_map(|e| e["requests"].as_u64()).sum())
        .unwrap_or(0);
    assert_eq!(sum, throttled as u64);
    assert_eq!(thr.json["list"][0]["policy"], "Gold");

    // DevPortal: the owner sees its application only; another subscriber gets 404.
    let own = cp
        .get(
            &format!("/api/am/devportal/v1/applications/{a2}/analytics/summary?{window}"),
            "sub2",
        )
        .await;
    assert_eq!(own.status, StatusCode::OK, "{}", own.json);
    assert_eq!(own.json["totals"]["requests"], 20);
    let other = cp
        .get(
            &format!("/api/am/devportal/v1/applications/{a1}/analytics/summary?{window}"),
            "sub2",
        )
        .await;
    assert_eq!(other.status, StatusCode::NOT_FOUND);
    // Scoped: a subscriber may not read the Admin API's analytics.
    assert_eq!(
        cp.get(&admin("summary", ""), "sub").await.status,
        StatusCode::FORBIDDEN
    );

    // Bad queries.
    let r = cp
        .get("/api/am/admin/v1/analytics/summary?from=10&to=5", "admin")
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    let r = cp.get(&admin("nope", ""), "admin").await;
    assert_eq!(r.status, StatusCode::NOT_FOUND);
    let r = cp.get(&admin("traffic", "&interval=1"), "admin").await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);

    // Compaction into hours, then days: the same answers.
    let store = cp.state.store();
    let retention = AnalyticsRetention {
        minutes: std::time::Duration::from_secs(60),
        hours: std::time::Duration::from_secs(3600),
        ..AnalyticsRetention::default()
    };
    let done = store
        .compact_analytics(T0 + 3 * 3600, &retention)
        .await
        .expect("compaction");
    assert!(done.minutes_moved > 0, "{done:?}");
    let hours = cp.get(&admin("summary", ""), "admin").await;
    assert_eq!(hours.json["totals"], summary.json["totals"]);
    assert_eq!(hours.json["latency"], summary.json["latency"]);
    let done = store
        .compact_analytics(T0 + 3 * 86_400, &retention)
        .await
        .expect("compaction");
    assert!(done.hours_moved > 0, "{done:?}");
    // A day row starts at midnight: widen the window to the day.
    let day = T0 - T0.rem_euclid(86_400);
    let days = cp
        .get(
            &format!(
                "/api/am/admin/v1/analytics/summary?from={day}&to={}",
                day + 86_400
            ),
            "admin",
        )
        .await;
    assert_eq!(days.json["totals"], summary.json["totals"]);
    assert_eq!(days.json["latency"], summary.json["latency"]);
}

/// One application is one row, named, whatever its events carried (API-key events carry
/// no name): a rename shows in every report, a deleted application keeps its history
/// under the last name its events carried.
async fn one_application_one_named_row(url: String) {
    let cp = control_plane(&url).await;
    let api = cp
        .create_api("/echo", "v1", "http://127.0.0.1:9", false)
        .await;
    let (shop, gone) = (
        app(&cp, "sub", "shop-web").await,
        app(&cp, "sub", "gone-app").await,
    );
    let served = |i: u64, app: &str, named: Option<&str>| {
        let mut e = event(3 + i * 7, app, T0 + i as i64 * 61);
        e.application_name = named.map(str::to_owned);
        e
    };
    let mut events: Vec<Event> = (0..3).map(|i| served(i, &shop, Some("shop-web"))).collect();
    events.extend((3..5).map(|i| served(i, &shop, None)));
    events.push(served(5, &gone, Some("gone-app")));
    events.push(served(6, &gone, None));
    assert_eq!(ingest_rollups(&cp, &events).await.0, StatusCode::ACCEPTED);
    let path = format!("/api/am/devportal/v1/applications/{gone}");
    let r = cp.call(Method::DELETE, &path, Some("sub"), None, &[]).await;
    assert!(r.status.is_success(), "{}", r.json);
    let path = format!("/api/am/devportal/v1/applications/{shop}");
    let r = cp
        .call(
            Method::PATCH,
            &path,
            Some("sub"),
            Some(json!({"name": "shop-web-2"})),
            &[],
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.json);

    let window = format!("from={T0}&to={}", T0 + 3600);
    let reports = [
        format!("/api/am/admin/v1/analytics/top?{window}&by=application"),
        format!("/api/am/publisher/v1/apis/{api}/analytics/top?{window}&by=application"),
    ];
    for report in &reports {
        let r = cp.get(report, "admin").await;
        assert_eq!(r.status, StatusCode::OK, "{}", r.json);
        let rows: Vec<(String, String, u64)> = r.json["list"]
            .as_array()
            .expect("list")
            .iter()
            .map(|v| {
                (
                    v["applicationId"].as_str().unwrap_or_default().to_owned(),
                    v["applicationName"].as_str().unwrap_or_default().to_owned(),
                    v["requests"].as_u64().unwrap_or(0),
                )
            })
            .collect();
        assert_eq!(
            rows,
            [
                (shop.clone(), "shop-web-2".to_owned(), 5),
                (gone.clone(), "gone-app".to_owned(), 2)
            ],
            "{report}: {}",
            r.json
        );
    }
}

/// AI calls' events carry tokens and a time to first token: the `ai` report sums them
/// by model and application and prices them with the built-in table and the Admin API's
/// edits; other requests are left out.
async fn ai_tokens_cost_and_ttft(url: String) {
    let cp = control_plane(&url).await;
    let ai = |i: u64, app: &str, model: &str, ttft_ms: u64| {
        let mut e = event(3 + i * 7, app, T0 + i as i64 * 61);
        e.ai = Some(turnpike_analytics::AiUsage {
            provider: "openai".into(),
            model: model.into(),
            prompt_tokens: 1_000_000,
            completion_tokens: 500_000,
            cached_tokens: 200_000,
            total_tokens: 1_500_000,
            ttft_us: Some(ttft_ms * 1000),
            ..Default::default()
        });
        e
    };
    let events = vec![
        ai(0, "app-a", "gpt-4o-mini-2024-07-18", 40),
        ai(1, "app-b", "gpt-4o-mini", 60),
        ai(2, "app-b", "home-made", 80),
        event(3, "app-b", T0 + 200),
    ];
    assert_eq!(ingest_rollups(&cp, &events).await.0, StatusCode::ACCEPTED);
    let window = format!("from={T0}&to={}", T0 + 3600);
    let r = cp
        .get(&format!("/api/am/admin/v1/analytics/ai?{window}"), "admin")
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.json);
    let t = &r.json["totals"];
    assert_eq!(
        (t["requests"].as_u64(), t["totalTokens"].as_u64()),
        (Some(3), Some(4_500_000))
    );
    assert_eq!(t["timeToFirstToken"]["count"], 3);
    // gpt-4o-mini: 800k input x $0.15 + 200k cached x $0.075 + 500k output x $0.60 per 1M.
    let mini = 0.12 + 0.015 + 0.3;
    let cost = t["costUsd"].as_f64().unwrap_or(-1.0);
    assert!((cost - 2.0 * mini).abs() < 1e-9, "{}", r.json);
    assert_eq!(r.json["unpricedModels"], json!(["home-made"]));
    let models: Vec<&str> = r.json["groups"]
        .as_array()
        .expect("groups")
        .iter()
        .filter_map(|g| g["model"].as_str())
        .collect();
    assert_eq!(
        models.len(),
        3,
        "dated names are their own rows: {models:?}"
    );

    let edit = json!({"inputPerMillion": 1.0, "outputPerMillion": 2.0});
    let put = cp
        .call(
            Method::PUT,
            "/api/am/admin/v1/ai-prices/home-made",
            Some("admin"),
            Some(edit),
            &[],
        )
        .await;
    assert_eq!(put.status, StatusCode::OK, "{}", put.json);
    assert_eq!(put.json["cachedInputPerMillion"], 1.0);
    let bad = json!({"inputPerMillion": -1, "outputPerMillion": "x", "colour": 1});
    let refused = cp
        .call(
            Method::PUT,
            "/api/am/admin/v1/ai-prices/m",
            Some("admin"),
            Some(bad),
            &[],
        )
        .await;
    assert_eq!(refused.status, StatusCode::BAD_REQUEST, "{}", refused.json);
    let listed = cp.get("/api/am/admin/v1/ai-prices", "admin").await;
    let sources: Vec<(&str, &str)> = listed.json["list"]
        .as_array()
        .expect("list")
        .iter()
        .filter_map(|p| Some((p["model"].as_str()?, p["source"].as_str()?)))
        .filter(|(m, _)| *m == "home-made" || *m == "gpt-4o-mini")
        .collect();
    assert_eq!(
        sources,
        [("gpt-4o-mini", "built-in"), ("home-made", "edited")]
    );
    let r = cp
        .get(
            &format!("/api/am/admin/v1/analytics/ai?{window}&by=application"),
            "admin",
        )
        .await;
    // home-made: 1M input (cached at the input price) x $1 + 500k output x $2.
    let cost = r.json["totals"]["costUsd"].as_f64().unwrap_or(-1.0);
    assert!((cost - (2.0 * mini + 2.0)).abs() < 1e-9, "{}", r.json);
    assert_eq!(r.json["unpricedModels"], json!([]));
    assert_eq!(r.json["groups"][0]["applicationId"], "app-b");
    let del = cp
        .call(
            Method::DELETE,
            "/api/am/admin/v1/ai-prices/home-made",
            Some("admin"),
            None,
            &[],
        )
        .await;
    assert_eq!(del.status, StatusCode::NO_CONTENT);
    let again = cp
        .call(
            Method::DELETE,
            "/api/am/admin/v1/ai-prices/home-made",
            Some("admin"),
            None,
            &[],
        )
        .await;
    assert_eq!(again.status, StatusCode::NOT_FOUND);
}

const CASES: &[(&str, turnpike_store::testing::Case)] = turnpike_store::cases![
    reports_match_the_events,
    one_application_one_named_row,
    ai_tokens_cost_and_ttft
];

#[tokio::test]
async fn sqlite() {
    TestDbs::sqlite().run(CASES).await;
}

#[tokio::test]
async fn postgres() {
    TestDbs::postgres().run(CASES).await;
}
