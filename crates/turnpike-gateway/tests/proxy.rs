//! The proxy path through real sockets: routing, errors, headers, bodies, upstream
//! failures and failover.

mod support;

use std::time::Duration;

use futures_util::StreamExt;
use support::*;

#[tokio::test]
async fn routes_by_version_default_version_and_template() {
    let up = inspect("one").await;
    let yaml = format!(
        "apis:\n  - name: pets\n    context: /pets\n    version: v2\n    default: true\n    \
         endpoints: [\"{}/base\"]\n    resources:\n      \
         - {{ path: \"/items/{{id}}\", methods: [GET] }}\n",
        http(up)
    );
    let gw = gateway(&yaml).await;
    let c = client();
    for path in ["/pets/v2/items/7?x=1", "/pets/items/7?x=1"] {
        let r = c.get(gw.url(path)).send().await.expect("send");
        assert_eq!(r.status(), 200, "{path}");
        let v: serde_json::Value = json_of(r).await;
        assert_eq!(v["path"], "/base/items/7?x=1", "{path}");
    }
    // The template takes exactly one segment.
    let r = c
        .get(gw.url("/pets/v2/items/7/8"))
        .send()
        .await
        .expect("send");
    assert_eq!(r.status(), 404);
}

#[tokio::test]
async fn not_found_and_method_not_allowed_are_json_with_allow() {
    let up = inspect("one").await;
    let yaml = format!(
        "apis:\n  - name: a\n    context: /a\n    version: v1\n    endpoints: [\"{}\"]\n    \
         resources:\n      - {{ path: \"/r\", methods: [GET, POST] }}\n",
        http(up)
    );
    let gw = gateway(&yaml).await;
    let c = client();
    let r = c.get(gw.url("/nope")).send().await.expect("send");
    assert_eq!(r.status(), 404);
    let rid = r.headers()["x-request-id"].to_str().expect("id").to_owned();
    let v = error_body(r).await;
    assert_eq!(v["code"], "not_found");
    assert_eq!(v["request_id"], rid);

    let r = c.delete(gw.url("/a/v1/r")).send().await.expect("send");
    assert_eq!(r.status(), 405);
    let allow = r.headers()["allow"].to_str().expect("allow").to_owned();
    assert!(allow.contains("GET") && allow.contains("POST"), "{allow}");
    assert_eq!(error_body(r).await["code"], "method_not_allowed");
}

#[tokio::test]
async fn hop_by_hop_removed_and_forwarded_headers_added() {
    let up = inspect("one").await;
    let gw = gateway(&config(&[api("h", &[http(up)], "")])).await;
    let r = client()
        .get(gw.url("/h/v1/x"))
        .header("connection", "keep-alive, x-drop-me")
        .header("x-drop-me", "1")
        .header("te", "trailers")
        .header("proxy-authorization", "Basic Zm9vOmJhcg==")
        .header("x-forwarded-for", "10.1.2.3")
        .header("x-request-id", "client-chosen-42")
        .header("x-kept", "yes")
        .send()
        .await
        .expect("send");
    assert_eq!(r.status(), 200);
    assert_eq!(r.headers()["x-request-id"], "client-chosen-42");
    for h in ["keep-alive", "x-upstream-secret"] {
        assert!(r.headers().get(h).is_none(), "response kept {h}");
    }
    let v: serde_json::Value = json_of(r).await;
    let h = &v["headers"];
    for gone in ["x-drop-me", "te", "proxy-authorization"] {
        assert!(h.get(gone).is_none(), "request kept {gone}: {h}");
    }
    assert_eq!(h["x-kept"], "yes");
    // The client is no trusted proxy: its list is replaced by the peer (forwarding.rs).
    assert_eq!(h["x-forwarded-for"], "127.0.0.1");
    assert_eq!(h["x-forwarded-proto"], "http");
    assert_eq!(h["x-forwarded-host"], gw.http.to_string());
    assert_eq!(h["x-request-id"], "client-chosen-42");
    assert_eq!(h["host"], up.to_string());
}

#[tokio::test]
async fn request_ids_are_generated_unique_and_sent_both_ways() {
    let up = inspect("one").await;
    let gw = gateway(&config(&[api("h", &[http(up)], "")])).await;
    let c = client();
    let mut seen = std::collections::HashSet::new();
    for _ in 0..5 {
        let r = c.get(gw.url("/h/v1/x")).send().await.expect("send");
        let id = r.headers()["x-request-id"].to_str().expect("id").to_owned();
        let v: serde_json::Value = json_of(r).await;
        assert_eq!(v["headers"]["x-request-id"], id.as_str());
        assert!(seen.insert(id));
    }
}

/// RSS of this process in KiB.
fn rss_kib() -> u64 {
    let s = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    s.lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

#[tokio::test]
async fn a_100_mib_body_streams_both_ways_without_being_held() {
    const TOTAL: usize = 100 * 1024 * 1024;
    const CHUNK: usize = 64 * 1024;
    let up = echo().await;
    let gw = gateway(&config(&[api(
        "e",
        &[http(up)],
        "    max_body_size: unlimited\n",
    )]))
    .await;
    let before = rss_kib();
    let chunk = bytes::Bytes::from(vec![b'x'; CHUNK]);
    let stream = futures_util::stream::iter(0..TOTAL / CHUNK)
        .map(move |_| Ok::<_, std::io::Error>(chunk.clone()));
    let r = client()
        .post(gw.url("/e/v1/upload"))
        .body(reqwest::Body::wrap_stream(stream))
        .send()
        .await
        .expect("send");
    assert_eq!(r.status(), 200);
    let mut got = 0usize;
    let mut peak = 0u64;
    let mut body = r.bytes_stream();
    while let Some(c) = body.next().await {
        got += c.expect("chunk").len();
        peak = peak.max(rss_kib());
    }
    assert_eq!(got, TOTAL);
    let grew_mib = peak.saturating_sub(before) / 1024;
    assert!(
        grew_mib < 40,
        "RSS grew by {grew_mib} MiB while streaming 100 MiB"
    );
}

#[tokio::test]
async fn body_limit_by_content_length_and_while_streaming() {
    let up = inspect("one").await;
    let gw = gateway(&config(&[api(
        "l",
        &[http(up)],
        "    max_body_size: 1KiB\n",
    )]))
    .await;
    let c = client();
    let r = c
        .post(gw.url("/l/v1/x"))
        .body(vec![b'a'; 1024])
        .send()
        .await
        .expect("send");
    assert_eq!(r.status(), 200, "a body at the limit passes");

    let r = c
        .post(gw.url("/l/v1/x"))
        .body(vec![b'a'; 2048])
        .send()
        .await
        .expect("send");
    assert_eq!(r.status(), 413);
    assert_eq!(error_body(r).await["code"], "body_too_large");

    // No Content-Length (chunked): counted while streaming.
    let chunks = futures_util::stream::iter(0..4)
        .map(|_| Ok::<_, std::io::Error>(bytes::Bytes::from(vec![b'b'; 512])));
    let r = c
        .post(gw.url("/l/v1/x"))
        .body(reqwest::Body::wrap_stream(chunks))
        .send()
        .await
        .expect("send");
    assert_eq!(r.status(), 413);
    assert_eq!(error_body(r).await["code"], "body_too_large");
}

#[tokio::test]
async fn slow_upstream_gives_504_and_refused_gives_502() {
    let slow = echo_delayed(Duration::from_secs(5)).await;
    let yaml = config(&[
        api(
            "slow",
            &[http(slow)],
            "    timeouts: { connect: 1s, response: 200ms }\n",
        ),
        api("down", &[http(refused_addr())], ""),
    ]);
    let gw = gateway(&yaml).await;
    let c = client();
    let r = c.get(gw.url("/slow/v1/x")).send().await.expect("send");
    assert_eq!(r.status(), 504);
    assert_eq!(error_body(r).await["code"], "upstream_timeout");

    let r = c.get(gw.url("/down/v1/x")).send().await.expect("send");
    assert_eq!(r.status(), 502);
    let v = error_body(r).await;
    assert_eq!(v["code"], "upstream_unavailable");
    assert!(v["request_id"].as_str().is_some_and(|s| !s.is_empty()));
}

#[tokio::test]
async fn round_robin_and_failover_to_the_next_endpoint() {
    let a = inspect("a").await;
    let b = inspect("b").await;
    let gw = gateway(&config(&[
        api("rr", &[http(a), http(b)], ""),
        api("fo", &[http(refused_addr()), http(b)], ""),
    ]))
    .await;
    let c = client();
    let mut names = std::collections::HashMap::new();
    for _ in 0..10 {
        let r = c.get(gw.url("/rr/v1/x")).send().await.expect("send");
        let v = json_of(r).await;
        *names
            .entry(v["upstream"].as_str().unwrap_or("").to_owned())
            .or_insert(0) += 1;
    }
    assert!(names.get("a").is_some_and(|n| *n >= 2), "{names:?}");
    assert!(names.get("b").is_some_and(|n| *n >= 2), "{names:?}");

    for _ in 0..6 {
        let r = c.get(gw.url("/fo/v1/x")).send().await.expect("send");
        assert_eq!(r.status(), 200, "failover hides the dead endpoint");
        let v: serde_json::Value = json_of(r).await;
        assert_eq!(v["upstream"], "b");
    }
}

#[tokio::test]
async fn oversize_request_head_is_refused() {
    let up = echo().await;
    let gw = gateway_with(&config(&[api("e", &[http(up)], "")]), |s| {
        s.max_header_bytes = 8 * 1024
    })
    .await;
    let r = client()
        .get(gw.url("/e/v1/x"))
        .header("x-big", "v".repeat(32 * 1024))
        .send()
        .await
        .expect("send");
    assert_eq!(r.status(), 431);
}
