//! What a client may not tell the back end (issue 25 item 10): forwarding headers from a
//! peer that is not a trusted proxy, URL overrides, and a back-end JWT the gateway did
//! not sign. Each test reads what reached a back end that records the request.

mod support;

use support::*;

/// Headers a client sends to pass for a proxy or to re-route a servlet / IIS back end.
const FORGED: [(&str, &str); 9] = [
    ("x-forwarded-for", "6.6.6.6"),
    ("x-forwarded-host", "evil.example"),
    ("x-forwarded-proto", "https"),
    ("x-forwarded-prefix", "/admin"),
    ("x-forwarded-port", "443"),
    ("forwarded", "for=6.6.6.6;proto=https;host=evil.example"),
    ("x-real-ip", "6.6.6.6"),
    ("x-original-url", "/admin/users"),
    ("x-rewrite-url", "/admin/users"),
];

/// What the recording back end saw, for a GET (the in-task HTTP/1.1 client) and a 20 KiB
/// chunked POST (hyper's client: the headers go through the map).
async fn seen_by_backend(gw: &TestGateway) -> Vec<serde_json::Value> {
    let c = client();
    let mut seen = Vec::new();
    for big in [false, true] {
        let mut rb = if big {
            let chunks = futures_chunks(20 * 1024);
            c.post(gw.url("/f/v1/x"))
                .body(reqwest::Body::wrap_stream(chunks))
        } else {
            c.get(gw.url("/f/v1/x"))
        };
        for (k, v) in FORGED {
            rb = rb.header(k, v);
        }
        let r = rb.send().await.expect("send");
        assert_eq!(r.status(), 200);
        seen.push(json_of(r).await["headers"].clone());
    }
    seen
}

/// A body of `n` bytes in two chunks, without a Content-Length.
fn futures_chunks(
    n: usize,
) -> impl futures_util::Stream<Item = Result<Vec<u8>, std::io::Error>> + Send + 'static {
    futures_util::stream::iter([Ok(vec![b'a'; n / 2]), Ok(vec![b'b'; n - n / 2])])
}

#[tokio::test]
async fn an_untrusted_clients_forwarding_headers_and_url_overrides_never_reach_the_back_end() {
    let up = inspect("one").await;
    let gw = gateway(&config(&[api("f", &[http(up)], "")])).await;
    for h in seen_by_backend(&gw).await {
        // The list starts at the peer the gateway saw; the forged entry is gone.
        assert_eq!(h["x-forwarded-for"], "127.0.0.1", "{h}");
        assert_eq!(h["x-forwarded-proto"], "http", "{h}");
        assert_eq!(h["x-forwarded-host"], gw.http.to_string(), "{h}");
        for gone in [
            "x-forwarded-prefix",
            "x-forwarded-port",
            "forwarded",
            "x-real-ip",
            "x-original-url",
            "x-rewrite-url",
        ] {
            assert!(h.get(gone).is_none(), "{gone} reached the back end: {h}");
        }
    }
}

#[tokio::test]
async fn a_trusted_proxys_forwarding_headers_are_kept_url_overrides_are_not() {
    let up = inspect("one").await;
    let yaml = config(&[api("f", &[http(up)], "")]);
    let gw = gateway_with(&yaml, |s| {
        s.trusted_proxies =
            turnpike_gateway::TrustedProxies::parse("10.0.0.0/8, 127.0.0.1/32").expect("list");
    })
    .await;
    for h in seen_by_backend(&gw).await {
        assert_eq!(h["x-forwarded-for"], "6.6.6.6, 127.0.0.1", "{h}");
        assert_eq!(h["x-forwarded-proto"], "https", "{h}");
        assert_eq!(h["x-forwarded-host"], "evil.example", "{h}");
        assert_eq!(h["x-forwarded-prefix"], "/admin", "{h}");
        assert_eq!(h["x-real-ip"], "6.6.6.6", "{h}");
        assert!(h.get("forwarded").is_some(), "{h}");
        for gone in ["x-original-url", "x-rewrite-url"] {
            assert!(h.get(gone).is_none(), "{gone} reached the back end: {h}");
        }
    }
}

/// `turnpike-bench-key`'s SHA-256, as the other gateway tests' API key.
const KEY_SHA256: &str = "28a1d26071724d185aafe4153ee11aa474c2ca077f7bdd89ec182fdc06bcb1ef";

#[tokio::test]
async fn a_back_end_jwt_the_gateway_did_not_sign_never_reaches_the_back_end() {
    let up = inspect("one").await;
    let secured = |name: &str, backend_jwt: &str| {
        format!(
            "  - name: {name}\n    context: /{name}\n    version: v1\n    endpoints: [\"{}\"]\n    \
             auth: {{ oauth2: false, api_key: true, backend_jwt: {backend_jwt} }}\n    resources:\n      \
             - {{ path: /open, methods: [GET], auth: none }}\n      - {{ path: \"/*\", methods: [GET] }}\n",
            http(up)
        )
    };
    let yaml = format!(
        "security:\n  api_keys:\n    - {{ sha256: \"{KEY_SHA256}\", application: app-1, subscriber: alice }}\n  \
         subscriptions:\n    - {{ api: /s/v1, application: app-1, state: ACTIVE, tier: Unlimited }}\n    \
         - {{ api: /c/v1, application: app-1, state: ACTIVE, tier: Unlimited }}\n{}",
        config(&[secured("s", "{}"), secured("c", "{ header: X-Caller }")])
    );
    let gw = gateway(&yaml).await;
    let forged = "eyJhbGciOiJub25lIn0.eyJzdWIiOiJhZG1pbiJ9.";
    let c = client();
    for (path, header) in [("/s/v1", "x-jwt-assertion"), ("/c/v1", "x-caller")] {
        // An open resource: nothing is signed, and the client's value must not pass.
        let r = c
            .get(gw.url(&format!("{path}/open")))
            .header(header, forged)
            .send()
            .await
            .expect("send");
        assert_eq!(r.status(), 200);
        let h = json_of(r).await["headers"].clone();
        assert!(h.get(header).is_none(), "forged {header} forwarded: {h}");
        // A secured resource: the gateway's own signed token replaces it.
        let r = c
            .get(gw.url(&format!("{path}/data")))
            .header("apikey", "turnpike-bench-key")
            .header(header, forged)
            .send()
            .await
            .expect("send");
        assert_eq!(r.status(), 200);
        let h = json_of(r).await["headers"].clone();
        let sent = h[header].as_str().unwrap_or_default();
        assert!(
            sent != forged && sent.split('.').count() == 3 && !sent.contains(','),
            "{header}: {sent}"
        );
    }
}
