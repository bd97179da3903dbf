//! Mediation through a real gateway and real upstreams on 127.0.0.1:0: header, query and
//! path operations (API level and a resource's own); jq on request and response bodies
//! sent with Content-Length and chunked, both ways; the program's inputs (path
//! parameters, query, headers, method, status, the caller's identity); the type cases a
//! text template gets wrong; other content passed or refused; a failing program, the
//! deadline, the output and input caps; hostile XML and JSON refused with nothing sent
//! upstream; the gateway's own errors left alone.

mod support;

use std::time::Duration;

use bytes::Bytes;
use serde_json::{json, Value};
use support::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// An API at `/{name}/v1` with `mediation` (YAML indented for the API's `mediation:`).
fn mediated(name: &str, upstream: std::net::SocketAddr, mediation: &str) -> String {
    api(
        name,
        &[http(upstream)],
        &format!("    mediation:\n{mediation}"),
    )
}

/// An upstream that answers every request with `body` in two chunks (no Content-Length)
/// and the given content type.
async fn chunked_upstream(content_type: &'static str, body: &'static str) -> std::net::SocketAddr {
    let l = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = l.local_addr().expect("addr");
    tokio::spawn(async move {
        loop {
            let Ok((mut s, _)) = l.accept().await else {
                return;
            };
            tokio::spawn(async move {
                let mut buf = vec![0u8; 65536];
                let mut seen = Vec::new();
                loop {
                    let Ok(n) = s.read(&mut buf).await else {
                        return;
                    };
                    if n == 0 {
                        return;
                    }
                    seen.extend_from_slice(&buf[..n]);
                    if seen.windows(4).any(|w| w == b"\r\n\r\n") {
                        break;
                    }
                }
                let (a, b) = body.split_at(body.len() / 2);
                let resp = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: {content_type}\r\ntransfer-encoding: chunked\r\n\r\n{:x}\r\n{a}\r\n{:x}\r\n{b}\r\n0\r\n\r\n",
                    a.len(),
                    b.len()
                );
                let _ = s.write_all(resp.as_bytes()).await;
                let _ = s.shutdown().await;
            });
        }
    });
    addr
}

/// A body in two chunks: reqwest sends it with `Transfer-Encoding: chunked`.
fn chunked(a: &'static str, b: &'static str) -> reqwest::Body {
    let chunks: Vec<Result<Bytes, std::io::Error>> = vec![
        Ok(Bytes::from_static(a.as_bytes())),
        Ok(Bytes::from_static(b.as_bytes())),
    ];
    reqwest::Body::wrap_stream(futures_util::stream::iter(chunks))
}

async fn post_json(url: String, body: impl Into<reqwest::Body>) -> reqwest::Response {
    client()
        .post(url)
        .header("content-type", "application/json")
        .body(body)
        .send()
        .await
        .expect("send")
}

#[tokio::test]
async fn header_query_and_path_operations_reach_the_upstream() {
    let up = inspect("up").await;
    let yaml = config(&[api(
        "shop",
        &[http(up)],
        "    mediation:\n      request:\n        headers: { remove: [x-drop], rename: { x-old: x-new }, set: { x-set: s }, add: { x-add: a, x-keep: never }, append: { x-app: two } }\n        query: { remove: [secret], rename: { q: search }, set: { v: \"2\" } }\n      response:\n        headers: { remove: [x-upstream-secret], set: { x-mediated: \"yes\" } }\n",
    )
    .replace(
        "    resources:\n      - { path: \"/*\", methods: [\"*\"] }\n",
        "    resources:\n      - path: /orders/{id}\n        methods: [GET]\n        mediation:\n          request:\n            path: /v2/order/{id}/detail\n            headers: { set: { x-resource: \"yes\" } }\n      - { path: \"/*\", methods: [\"*\"] }\n",
    )]);
    let gw = gateway(&yaml).await;
    let c = client();
    let r = c
        .get(gw.url("/shop/v1/items?q=shoes&secret=1&keep=%C3%BC"))
        .header("x-drop", "1")
        .header("x-old", "o")
        .header("x-set", "before")
        .header("x-keep", "mine")
        .header("x-app", "one")
        .send()
        .await
        .expect("send");
    assert_eq!(r.status(), 200);
    assert_eq!(r.headers()["x-mediated"], "yes");
    assert!(r.headers().get("x-upstream-secret").is_none());
    let v = json_of(r).await;
    assert_eq!(v["path"], "/items?search=shoes&keep=%C3%BC&v=2");
    let h = &v["headers"];
    assert!(h.get("x-drop").is_none() && h.get("x-old").is_none(), "{h}");
    assert_eq!(h["x-new"], "o");
    assert_eq!(h["x-set"], "s");
    assert_eq!(h["x-add"], "a");
    assert_eq!(h["x-keep"], "mine", "add leaves a present header alone");
    assert_eq!(h["x-app"], "one, two");

    // The resource's request transformation replaces the API's (its path parameter goes
    // into the new path); the API's response transformation still applies.
    let r = c
        .get(gw.url("/shop/v1/orders/4%202?secret=1"))
        .header("x-drop", "1")
        .send()
        .await
        .expect("send");
    assert_eq!(r.headers()["x-mediated"], "yes");
    let v = json_of(r).await;
    assert_eq!(v["path"], "/v2/order/4%202/detail?secret=1");
    assert_eq!(v["headers"]["x-resource"], "yes");
    assert_eq!(
        v["headers"]["x-drop"], "1",
        "the API's request ops did not run"
    );
}

#[tokio::test]
async fn bodies_are_rewritten_with_content_length_and_chunked_both_ways() {
    let up = echo().await;
    let yaml = config(&[mediated(
        "m",
        up,
        "      request:\n        body: { jq: '{wrapped: ., m: $method, q: $query.x, h: $headers[\"x-h\"]}' }\n      response:\n        headers: { set: { x-mediated: \"1\" } }\n        body: { jq: '{status: $status, method: $method, got: .}' }\n",
    )]);
    let gw = gateway(&yaml).await;
    let c = client();
    // The type cases: one-element arrays, strings holding JSON, empty arrays and
    // objects, numbers (integers past 2^53, fractions, exponents), unicode, null.
    let sent = json!({
        "one": [1], "nested_one": [{"a": [true]}], "text": "{\"not\": \"json\"}",
        "array_text": "[1,2]", "empty": [], "empty_obj": {}, "int": 9007199254740993_i64,
        "neg": -42, "frac": 1.5, "exp": 1e-7, "u": "Zoë 日本 🚀 \u{0007}", "none": null
    });
    // Content-Length.
    let r = c
        .post(gw.url("/m/v1/x?x=7"))
        .header("content-type", "application/json; charset=utf-8")
        .header("x-h", "hv")
        .body(sent.to_string())
        .send()
        .await
        .expect("send");
    assert_eq!(r.status(), 200);
    assert_eq!(r.headers()["x-mediated"], "1");
    let len: usize = r.headers()["content-length"]
        .to_str()
        .expect("ascii")
        .parse()
        .expect("a number");
    let text = r.text().await.expect("body");
    assert_eq!(len, text.len(), "Content-Length matches the rewritten body");
    let v: Value = serde_json::from_str(&text).expect("json");
    assert_eq!(
        v,
        json!({"status": 200, "method": "POST", "got": {"wrapped": sent, "m": "POST", "q": "7", "h": "hv"}})
    );
    assert_eq!(v["got"]["wrapped"]["int"].as_i64(), Some(9007199254740993));

    // Chunked request (no Content-Length).
    let r = post_json(gw.url("/m/v1/x"), chunked("{\"one\":", "[\"x\"]}")).await;
    assert_eq!(r.status(), 200);
    let v = json_of(r).await;
    assert_eq!(v["got"]["wrapped"], json!({"one": ["x"]}));
    assert_eq!(v["got"]["q"], Value::Null);

    // The upstream receives the rewritten body with a Content-Length, never chunked.
    let seen = inspect("seen").await;
    let yaml = config(&[mediated(
        "i",
        seen,
        "      request:\n        body: { jq: '{n: (.list | length)}' }\n",
    )]);
    gw.swap(&yaml);
    let r = post_json(gw.url("/i/v1/x"), chunked("{\"list\":[1,", "2,3]}")).await;
    let v = json_of(r).await;
    assert_eq!(v["body_len"], "{\"n\":3}".len());
    assert_eq!(v["headers"]["content-length"], "7");
    assert!(v["headers"].get("transfer-encoding").is_none(), "{v}");

    // A chunked response is rewritten too, and leaves with a Content-Length.
    let up = chunked_upstream("application/json", "{\"list\":[\"only\"],\"n\":10}").await;
    let yaml = config(&[mediated(
        "c",
        up,
        "      response:\n        body: { jq: '{items: .list, count: (.list | length), n: .n}' }\n",
    )]);
    gw.swap(&yaml);
    let r = c.get(gw.url("/c/v1/x")).send().await.expect("send");
    assert_eq!(r.status(), 200);
    assert!(r.headers().get("content-length").is_some());
    assert!(r.headers().get("transfer-encoding").is_none());
    assert_eq!(
        json_of(r).await,
        json!({"items": ["only"], "count": 1, "n": 10})
    );
}

#[tokio::test]
async fn path_parameters_are_a_program_input() {
    let up = echo().await;
    let yaml = config(&[api("p", &[http(up)], "").replace(
        "    resources:\n      - { path: \"/*\", methods: [\"*\"] }\n",
        "    resources:\n      - path: /stores/{store}/orders/{id}\n        methods: [POST]\n        mediation:\n          request:\n            body: { jq: '{store: $path.store, id: ($path.id | tonumber), order: .}' }\n      - { path: \"/*\", methods: [\"*\"] }\n",
    )]);
    let gw = gateway(&yaml).await;
    let r = post_json(gw.url("/p/v1/stores/north/orders/17"), "[]").await;
    assert_eq!(
        json_of(r).await,
        json!({"store": "north", "id": 17, "order": []})
    );
    // Another resource of the API has no transformation: the body goes as sent.
    let r = post_json(gw.url("/p/v1/other"), "[1]").await;
    assert_eq!(r.text().await.expect("body"), "[1]");
}

#[tokio::test]
async fn the_callers_identity_is_a_program_input() {
    let up = echo().await;
    let yaml = format!(
        "security:\n  api_keys:\n    - {{ sha256: \"28a1d26071724d185aafe4153ee11aa474c2ca077f7bdd89ec182fdc06bcb1ef\", application: app-1, application_name: Mobile, subscriber: alice, scopes: [orders] }}\n  subscriptions:\n    - {{ api: /id/v1, application: app-1, state: ACTIVE, tier: Unlimited }}\n{}",
        config(&[mediated(
            "id",
            up,
            "      request:\n        body: { jq: '{app: $identity.app, name: $identity.app_name, who: $identity.subscriber, scopes: $identity.scopes, body: .}' }\n",
        )
        .replace("    resources:", "    auth: { oauth2: false, api_key: true }\n    resources:")])
    );
    let gw = gateway(&yaml).await;
    let r = client()
        .post(gw.url("/id/v1/x"))
        .header("apikey", "turnpike-bench-key")
        .header("content-type", "application/json")
        .body("{\"a\":1}")
        .send()
        .await
        .expect("send");
    assert_eq!(r.status(), 200);
    assert_eq!(
        json_of(r).await,
        json!({"app": "app-1", "name": "Mobile", "who": "alice", "scopes": ["orders"], "body": {"a": 1}})
    );
    // An unauthenticated call is refused before the transformation runs.
    let r = post_json(gw.url("/id/v1/x"), "{}").await;
    assert_eq!(r.status(), 401);
    assert_eq!(error_body(r).await["code"], "missing_credentials");
}

#[tokio::test]
async fn other_content_is_passed_or_refused_as_configured() {
    let up = echo().await;
    let yaml = config(&[
        mediated(
            "pass",
            up,
            "      request:\n        body: { jq: '{x: .}' }\n",
        ),
        mediated(
            "strict",
            up,
            "      request:\n        body: { jq: '{x: .}', other_content: refuse }\n",
        ),
        mediated(
            "resp",
            up,
            "      response:\n        body: { jq: '{x: .}', other_content: refuse }\n",
        ),
    ]);
    let gw = gateway(&yaml).await;
    let c = client();
    let send = |path: &str, ct: &'static str, body: &'static str| {
        c.post(gw.url(path))
            .header("content-type", ct)
            .body(body)
            .send()
    };
    let r = send("/pass/v1/x", "text/plain", "plain {text}")
        .await
        .expect("send");
    assert_eq!(r.status(), 200);
    assert_eq!(r.text().await.expect("text"), "plain {text}");
    // A JSON body the client encoded is not read either (gzip bytes are not JSON).
    let r = c
        .post(gw.url("/pass/v1/x"))
        .header("content-type", "application/json")
        .header("content-encoding", "gzip")
        .body(vec![0x1f_u8, 0x8b, 0x08, 0x00])
        .send()
        .await
        .expect("send");
    assert_eq!(r.status(), 200);
    assert_eq!(
        r.bytes().await.expect("body").as_ref(),
        [0x1f, 0x8b, 0x08, 0x00]
    );

    let r = send("/strict/v1/x", "text/plain", "plain")
        .await
        .expect("send");
    assert_eq!(r.status(), 415);
    let e = error_body(r).await;
    assert_eq!(e["code"], "unsupported_media_type");
    assert_eq!(e["policy"], "strict/request");
    assert!(e["request_id"].is_string());
    // Refused on the response side: the upstream's answer is what the step cannot read.
    let r = send("/resp/v1/x", "text/plain", "plain")
        .await
        .expect("send");
    assert_eq!(r.status(), 502);
    assert_eq!(error_body(r).await["code"], "upstream_protocol_error");
    let r = send("/resp/v1/x", "application/json", "[1]")
        .await
        .expect("send");
    assert_eq!(json_of(r).await, json!({"x": [1]}));
}

#[tokio::test]
async fn failures_are_mediation_failed_naming_the_policy_and_send_nothing() {
    let mut hold = holding().await;
    let yaml = config(&[
        mediated(
            "err",
            hold.addr,
            "      request:\n        name: strict-orders\n        body: { jq: 'if .total < 0 then error(\"negative total\") else . end' }\n",
        ),
        mediated(
            "slow",
            hold.addr,
            "      request:\n        body: { jq: 'last(range(1e12))', deadline: 20ms }\n",
        ),
        mediated(
            "big",
            hold.addr,
            "      request:\n        body: { jq: '[range(100000)]', max_output: 1KiB }\n",
        ),
        mediated(
            "many",
            hold.addr,
            "      request:\n        body: { jq: '.[]' }\n",
        ),
        mediated("badjson", hold.addr, "      request:\n        body: { jq: '.' }\n"),
        mediated(
            "small",
            hold.addr,
            "      request:\n        body: { jq: '.', max_input: 64B }\n",
        ),
    ]);
    let gw = gateway(&yaml).await;
    let big = "[".to_owned() + &"1,".repeat(100) + "1]";
    let deep = "[".repeat(10_000) + &"]".repeat(10_000);
    let cases: Vec<(&str, String, u16, &str)> = vec![
        ("err", "{\"total\":-1}".into(), 500, "mediation_failed"),
        ("slow", "{}".into(), 500, "mediation_failed"),
        ("big", "{}".into(), 500, "mediation_failed"),
        ("many", "[1,2]".into(), 500, "mediation_failed"),
        ("badjson", "{\"a\":".into(), 400, "bad_request"),
        ("badjson", deep, 400, "bad_request"),
        ("small", big.clone(), 413, "body_too_large"),
    ];
    for (api, body, status, code) in cases {
        let started = std::time::Instant::now();
        let r = post_json(gw.url(&format!("/{api}/v1/x")), body).await;
        assert_eq!(r.status(), status, "{api}");
        let e = error_body(r).await;
        assert_eq!(e["code"], code, "{api}: {e}");
        if status == 500 {
            assert!(e["policy"].is_string(), "{api}: {e}");
        }
        if api == "err" {
            assert_eq!(e["policy"], "strict-orders", "{e}");
            let m = e["message"].as_str().unwrap_or("");
            assert!(m.contains("strict-orders"), "{e}");
            assert!(
                !m.contains("negative"),
                "the program's detail stays in logs: {e}"
            );
        }
        if api == "slow" {
            assert!(
                e["message"].as_str().unwrap_or("").contains("deadline"),
                "{e}"
            );
            assert!(
                started.elapsed() < Duration::from_secs(5),
                "the deadline stopped it"
            );
        }
    }
    // Above max_input, chunked (no Content-Length to refuse early): read, then refused.
    let r = post_json(
        gw.url("/small/v1/x"),
        chunked(
            "[1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1",
            ",1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1]",
        ),
    )
    .await;
    assert_eq!(r.status(), 413);
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert!(
        hold.arrivals.try_recv().is_err(),
        "nothing reached the upstream"
    );
    // A body that passes every check does reach it.
    let r = tokio::spawn(post_json(gw.url("/err/v1/x"), "{\"total\":1}"));
    tokio::time::timeout(Duration::from_secs(10), hold.arrivals.recv())
        .await
        .expect("the upstream is called")
        .expect("arrival");
    hold.release.notify_one();
    assert_eq!(r.await.expect("joined").status(), 200);
}

#[tokio::test]
async fn a_failing_response_program_is_a_500_and_upstream_errors_stay_the_gateways() {
    let up = echo().await;
    let yaml = config(&[
        mediated(
            "r",
            up,
            "      response:\n        name: shape\n        body: { jq: '.items | map(.id)' }\n",
        ),
        mediated(
            "down",
            refused_addr(),
            "      response:\n        body: { jq: '{wrapped: .}' }\n        headers: { set: { x-m: \"1\" } }\n",
        ),
    ]);
    let gw = gateway(&yaml).await;
    let r = post_json(gw.url("/r/v1/x"), "{\"items\":[{\"id\":1},{\"id\":2}]}").await;
    assert_eq!(json_of(r).await, json!([1, 2]));
    let r = post_json(gw.url("/r/v1/x"), "{\"items\":3}").await;
    assert_eq!(r.status(), 500);
    let e = error_body(r).await;
    assert_eq!(e["code"], "mediation_failed");
    assert_eq!(e["policy"], "shape");
    // The gateway's own error is not fed to the response program.
    let r = client()
        .get(gw.url("/down/v1/x"))
        .send()
        .await
        .expect("send");
    assert_eq!(r.status(), 502);
    assert!(r.headers().get("x-m").is_none());
    assert_eq!(error_body(r).await["code"], "upstream_unavailable");
}

#[tokio::test]
async fn the_attribute_bomb_is_refused_as_a_problem_and_large_xml_still_converts() {
    let mut hold = holding().await;
    let yaml = config(&[mediated(
        "x",
        hold.addr,
        "      request:\n        body: { input: xml, output: json }\n",
    )]);
    let gw = gateway(&yaml).await;
    let c = client();
    let attrs = |n: usize| -> String { (0..n).map(|i| format!(" a{i}=\"{i}\"")).collect() };
    let bomb = format!("<order{}/>", attrs(64_000));
    assert!(bomb.len() > 690_000);
    for (what, body, says) in [
        ("bomb", bomb, "more than 256 attributes"),
        (
            "257",
            format!("<order{}/>", attrs(257)),
            "more than 256 attributes",
        ),
        (
            "duplicate",
            format!("<order{} a9=\"x\"/>", attrs(30)),
            "duplicate attribute",
        ),
    ] {
        let r = c
            .post(gw.url("/x/v1/x"))
            .header("content-type", "application/xml")
            .body(body)
            .send()
            .await
            .expect("send");
        assert_eq!(r.status(), 400, "{what}");
        let e = error_body(r).await;
        assert_eq!(e["code"], "bad_request", "{what}");
        let message = e["message"].as_str().unwrap_or_default();
        assert!(message.contains(says), "{what}: {e}");
    }
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert!(
        hold.arrivals.try_recv().is_err(),
        "nothing reached the upstream"
    );

    // A body above the offload threshold is converted off the workers, the same way.
    let seen = echo().await;
    gw.swap(&config(&[mediated(
        "x",
        seen,
        "      request:\n        body: { input: xml, output: json }\n",
    )]));
    let items: String = (0..20_000).map(|i| format!("<item>{i}</item>")).collect();
    let r = c
        .post(gw.url("/x/v1/x"))
        .header("content-type", "application/xml")
        .body(format!("<order id=\"7\"{}>{items}</order>", attrs(255)))
        .send()
        .await
        .expect("send");
    assert_eq!(r.status(), 200);
    let v = json_of(r).await;
    assert_eq!(v["order"]["@id"], "7");
    assert_eq!(v["order"]["@a254"], "254");
    assert_eq!(v["order"]["item"].as_array().map(Vec::len), Some(20_000));
    assert_eq!(v["order"]["item"][19_999], "19999");
    let r = c
        .post(gw.url("/x/v1/x"))
        .header("content-type", "application/xml")
        .body(format!("<order>{items}<order>"))
        .send()
        .await
        .expect("send");
    assert_eq!(r.status(), 400, "a large malformed body is refused as well");
}

#[tokio::test]
async fn hostile_xml_is_refused_before_the_upstream() {
    let mut hold = holding().await;
    let yaml = config(&[mediated(
        "x",
        hold.addr,
        "      request:\n        body: { input: xml, output: json }\n",
    )]);
    let gw = gateway(&yaml).await;
    let c = client();
    let deep = format!("{}{}", "<a>".repeat(10_000), "</a>".repeat(10_000));
    let bodies = [
        // Entity expansion ("billion laughs").
        r#"<?xml version="1.0"?><!DOCTYPE l [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;"><!ENTITY c "&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;">]><l>&c;</l>"#.to_owned(),
        // External entity.
        r#"<!DOCTYPE foo [<!ENTITY xxe SYSTEM "file:///etc/passwd">]><foo>&xxe;</foo>"#.to_owned(),
        // An entity that was never declared.
        "<foo>&xxe;</foo>".to_owned(),
        deep,
        "<a><b></a>".to_owned(),
    ];
    for body in bodies {
        let r = c
            .post(gw.url("/x/v1/x"))
            .header("content-type", "application/xml")
            .body(body.clone())
            .send()
            .await
            .expect("send");
        assert_eq!(r.status(), 400, "{}", &body[..body.len().min(40)]);
        let e = error_body(r).await;
        assert_eq!(e["code"], "bad_request");
        assert!(
            !e["message"].as_str().unwrap_or("").contains("root:"),
            "{e}"
        );
    }
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert!(
        hold.arrivals.try_recv().is_err(),
        "nothing reached the upstream"
    );

    // A good document is converted: one element stays a value unless declared an array,
    // a declared array with no element is [], text is never re-read as JSON.
    let up = echo().await;
    let yaml = config(&[mediated(
        "x",
        up,
        "      request:\n        body: { input: xml, output: json, xml_arrays: [/order/item, /order/gift] }\n      response:\n        body: { input: json, output: xml, xml_root: echoed }\n",
    )]);
    gw.swap(&yaml);
    let r = c
        .post(gw.url("/x/v1/x"))
        .header("content-type", "text/xml")
        .body("<order id=\"7\"><item>a</item><note>{\"x\":1}</note><n>12</n></order>")
        .send()
        .await
        .expect("send");
    assert_eq!(r.status(), 200);
    assert_eq!(r.headers()["content-type"], "application/xml");
    let xml = r.text().await.expect("body");
    // `xml_root` names the document element; an empty array writes nothing.
    assert_eq!(
        xml,
        "<echoed><order id=\"7\"><item>a</item><note>{\"x\":1}</note><n>12</n></order></echoed>"
    );

    // The request side alone (no response step): the upstream got JSON.
    let seen = echo().await;
    let yaml = config(&[mediated(
        "x",
        seen,
        "      request:\n        body: { input: xml, output: json, xml_arrays: [/order/item, /order/gift] }\n",
    )]);
    gw.swap(&yaml);
    let r = c
        .post(gw.url("/x/v1/x"))
        .header("content-type", "application/xml")
        .body("<order id=\"7\"><item>a</item><note>{\"x\":1}</note><n>12</n></order>")
        .send()
        .await
        .expect("send");
    assert_eq!(r.headers()["content-type"], "application/json");
    assert_eq!(
        json_of(r).await,
        json!({"order": {"@id": "7", "item": ["a"], "note": "{\"x\":1}", "n": "12", "gift": []}})
    );
}

#[tokio::test]
async fn the_bench_transformation_scenario_rewrites_on_the_secured_api() {
    let up = echo().await;
    let gw = gateway(&turnpike_bench::matrix::gateway_config(&http(up))).await;
    let payload = turnpike_bench::client::json_payload(50);
    let send = |path: &str, key: Option<&str>| {
        let mut rb = client()
            .post(gw.url(path))
            .header("content-type", "application/json")
            .body(payload.clone());
        if let Some(k) = key {
            rb = rb.header("apikey", k);
        }
        rb.send()
    };
    let key = turnpike_bench::matrix::BENCH_API_KEY;
    let r = send("/secured/v1/mediation", Some(key))
        .await
        .expect("send");
    assert_eq!(r.status(), 200);
    let p: Value = serde_json::from_slice(&payload).expect("json payload");
    let len = p["p"].as_str().map_or(0, str::len);
    assert_eq!(
        json_of(r).await,
        json!({"data": {"payload": p["p"], "length": len}})
    );
    // The same secured API without the rewrite echoes the payload as sent.
    let r = send("/secured/v1/bench", Some(key)).await.expect("send");
    assert_eq!(r.bytes().await.expect("body"), payload);
    let r = send("/secured/v1/mediation", None).await.expect("send");
    assert_eq!(r.status(), 401);
}

/// A serving gateway's runtime hands a large body's transform to the blocking pool: the
/// mediation policy took the runtime's offload when it was built.
#[tokio::test]
async fn a_large_body_is_transformed_off_the_workers() {
    let seen = echo().await;
    let offload = std::sync::Arc::new(turnpike_gateway::TokioOffload::default());
    let runtime = turnpike_config::PolicyRuntime::with_offload(offload.clone());
    let yaml = config(&[mediated(
        "x",
        seen,
        "      request:\n        body: { input: xml, output: json }\n",
    )]);
    let snap = turnpike_config::Snapshot::from_yaml_with(&yaml, "test", &runtime).expect("valid");
    let gw = gateway_serving(snap, |_| {}).await;
    let c = client();
    let small = c
        .post(gw.url("/x/v1/x"))
        .header("content-type", "application/xml")
        .body("<order id=\"7\"/>")
        .send()
        .await
        .expect("send");
    assert_eq!(small.status(), 200);
    assert_eq!(offload.offloaded(), 0, "a small body is read inline");
    let items: String = (0..20_000).map(|i| format!("<item>{i}</item>")).collect();
    let r = c
        .post(gw.url("/x/v1/x"))
        .header("content-type", "application/xml")
        .body(format!("<order id=\"7\">{items}</order>"))
        .send()
        .await
        .expect("send");
    assert_eq!(r.status(), 200);
    assert_eq!(json_of(r).await["order"]["@id"], "7");
    assert_eq!(
        offload.offloaded(),
        1,
        "the large body went to the blocking pool"
    );
}
