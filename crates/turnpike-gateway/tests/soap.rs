//! SOAP APIs end to end over real sockets, against the bench kit's SOAP echo service
//! (`turnpike echo --soap`, SOAP 1.1 and 1.2): pass-through with envelope checks,
//! `?wsdl`, gateway errors as SOAP Faults, hostile XML (entities, depth, the attribute
//! bomb, duplicate attributes) refused with nothing forwarded;
//! SOAP-to-REST calls in both SOAP versions, bad JSON, and back-end Faults as errors.

mod support;

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use serde_json::{json, Value};
use support::{client, gateway};

const ECHO_WSDL: &str = include_str!("../../../bench/soap/echo.wsdl");
const SOAP12_ONLY: &str = include_str!(
    "../../turnpike-soap/tests/data/wsdl/cxf-hello-world-soap12/hello_world_soap12.wsdl"
);

async fn soap_echo() -> SocketAddr {
    turnpike_bench::echo::spawn(turnpike_bench::echo::EchoConfig {
        soap: true,
        ..Default::default()
    })
    .await
    .expect("echo starts")
}

/// An upstream that counts the requests it gets (and answers 200).
async fn counting() -> (SocketAddr, Arc<AtomicUsize>) {
    let hits = Arc::new(AtomicUsize::new(0));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    let h = hits.clone();
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                return;
            };
            let h = h.clone();
            tokio::spawn(async move {
                let svc = hyper::service::service_fn(move |_req| {
                    h.fetch_add(1, Ordering::SeqCst);
                    async {
                        Ok::<_, std::convert::Infallible>(hyper::Response::new(
                            http_body_util::Full::new(bytes::Bytes::new()),
                        ))
                    }
                });
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(hyper_util::rt::TokioIo::new(stream), svc)
                    .await;
            });
        }
    });
    (addr, hits)
}

fn soap_api(name: &str, endpoint: &str, ty: &str, port: &str, wsdl: &str, extra: &str) -> String {
    let wsdl = Value::String(wsdl.to_owned()).to_string();
    format!(
        "  - name: {name}\n    context: /{name}\n    version: v1\n    endpoints: [\"{endpoint}\"]\n{extra}    soap: {{ type: {ty}, port: {port}, wsdl: {wsdl} }}\n"
    )
}

fn envelope(version: u8, text: &str) -> String {
    let ns = if version == 11 {
        "http://schemas.xmlsoap.org/soap/envelope/"
    } else {
        "http://www.w3.org/2003/05/soap-envelope"
    };
    format!("<s:Envelope xmlns:s=\"{ns}\"><s:Body><e:echo xmlns:e=\"urn:tp:echo\"><e:p>{text}</e:p></e:echo></s:Body></s:Envelope>")
}

fn content_type(version: u8) -> &'static str {
    if version == 11 {
        "text/xml; charset=utf-8"
    } else {
        "application/soap+xml; charset=utf-8; action=\"urn:tp:echo#echo\""
    }
}

#[tokio::test]
async fn soap_to_rest_calls_the_soap_service_in_both_versions() {
    let echo = soap_echo().await;
    let ep = format!("http://{echo}/soap");
    let gw = gateway(&format!(
        "apis:\n{}{}",
        soap_api("rest12", &ep, "SOAP_TO_REST", "Echo12", ECHO_WSDL, ""),
        soap_api("rest11", &ep, "SOAP_TO_REST", "Echo11", ECHO_WSDL, "")
    ))
    .await;
    let c = client();
    for api in ["rest12", "rest11"] {
        let r = c
            .post(gw.url(&format!("/{api}/v1/echo")))
            .header("content-type", "application/json")
            .body(json!({"p": "<a & b> \"c\""}).to_string())
            .send()
            .await
            .expect("send");
        assert_eq!(r.status(), 200, "{api}");
        assert_eq!(r.headers()["content-type"], "application/json");
        let v: Value = serde_json::from_str(&r.text().await.expect("text")).expect("json");
        assert_eq!(v, json!({"p": "<a & b> \"c\""}), "{api}");
    }
    let r = c
        .post(gw.url("/rest12/v1/echo"))
        .header("content-type", "application/json")
        .body(json!({"q": 1}).to_string())
        .send()
        .await
        .expect("send");
    assert_eq!(r.status(), 400);
    let v: Value = serde_json::from_str(&r.text().await.expect("text")).expect("json");
    assert_eq!(v["code"], "bad_request");
    assert!(
        v["message"]
            .as_str()
            .is_some_and(|m| m.contains("q: unknown property")),
        "{v}"
    );
    let r = c
        .post(gw.url("/rest12/v1/echo"))
        .body("{not json")
        .send()
        .await
        .expect("send");
    assert_eq!(r.status(), 400);
    let r = c
        .post(gw.url("/rest12/v1/nope"))
        .header("content-type", "application/json")
        .body(json!({}).to_string())
        .send()
        .await
        .expect("send");
    assert_eq!(r.status(), 404);
    // A Fault from the back end: a JSON error with its code and string.
    for (api, code) in [("rest12", "Receiver"), ("rest11", "Server")] {
        let r = c
            .post(gw.url(&format!("/{api}/v1/echo?fault=1")))
            .header("content-type", "application/json")
            .body(json!({"p": "broken"}).to_string())
            .send()
            .await
            .expect("send");
        assert_eq!(r.status(), 502, "{api}");
        let v: Value = serde_json::from_str(&r.text().await.expect("text")).expect("json");
        assert_eq!(
            (
                v["code"].as_str(),
                v["fault_code"].as_str(),
                v["message"].as_str()
            ),
            (Some("soap_fault_server"), Some(code), Some("broken")),
            "{v}"
        );
        assert!(v["request_id"].is_string());
    }
}

#[tokio::test]
async fn soap_pass_through_checks_envelopes_and_serves_the_wsdl() {
    let echo = soap_echo().await;
    let ep = format!("http://{echo}/soap");
    let gw = gateway(&format!(
        "apis:\n{}",
        soap_api("soap", &ep, "SOAP", "Echo12", ECHO_WSDL, "")
    ))
    .await;
    let c = client();
    for v in [12u8, 11] {
        let r = c
            .post(gw.url("/soap/v1"))
            .header("content-type", content_type(v))
            .header("soapaction", "\"urn:tp:echo#echo\"")
            .body(envelope(v, "hello"))
            .send()
            .await
            .expect("send");
        assert_eq!(r.status(), 200, "SOAP {v}");
        let text = r.text().await.expect("text");
        assert!(
            text.contains("<e:p>hello</e:p>") && text.contains("echoResponse"),
            "{text}"
        );
    }
    let r = c.get(gw.url("/soap/v1?wsdl")).send().await.expect("send");
    assert_eq!(r.status(), 200);
    let text = r.text().await.expect("text");
    assert_eq!(
        text.matches(&format!("location=\"http://{}/soap/v1\"", gw.http))
            .count(),
        2,
        "{text}"
    );
    // Not an envelope: a SOAP 1.2 Fault (the binding's version), 400.
    let r = c
        .post(gw.url("/soap/v1"))
        .header("content-type", content_type(12))
        .body("<notsoap/>")
        .send()
        .await
        .expect("send");
    assert_eq!(r.status(), 400);
    assert!(r.headers()["content-type"]
        .to_str()
        .unwrap_or_default()
        .starts_with("application/soap+xml"));
    let text = r.text().await.expect("text");
    assert!(
        text.contains("<soapenv:Value>soapenv:Sender</soapenv:Value>")
            && text.contains("<turnpike:code>bad_request</turnpike:code>"),
        "{text}"
    );
    // An envelope for no operation of the port.
    let other = "<s:Envelope xmlns:s=\"http://schemas.xmlsoap.org/soap/envelope/\"><s:Body><x:other xmlns:x=\"urn:x\"/></s:Body></s:Envelope>";
    let r = c
        .post(gw.url("/soap/v1"))
        .header("content-type", content_type(11))
        .body(other)
        .send()
        .await
        .expect("send");
    assert_eq!(r.status(), 400);
    let text = r.text().await.expect("text");
    assert!(
        text.contains("<faultcode>soapenv:Client</faultcode>") && text.contains("no operation"),
        "{text}"
    );
}

#[tokio::test]
async fn gateway_errors_are_soap_faults_of_the_request_version() {
    let (up, _) = counting().await;
    let refused = support::refused_addr();
    let gw = gateway(&format!(
        "apis:\n{}{}{}",
        soap_api(
            "down",
            &format!("http://{refused}"),
            "SOAP",
            "Echo12",
            ECHO_WSDL,
            ""
        ),
        soap_api(
            "keyed",
            &format!("http://{up}"),
            "SOAP",
            "Echo12",
            ECHO_WSDL,
            "    auth: { api_key: true, subscription: false }\n"
        ),
        soap_api(
            "blocked",
            &format!("http://{up}"),
            "SOAP",
            "Echo11",
            ECHO_WSDL,
            "    lifecycle: BLOCKED\n"
        ),
    ))
    .await;
    let c = client();
    let call = |api: &str, v: u8| {
        c.post(gw.url(&format!("/{api}/v1")))
            .header("content-type", content_type(v))
            .body(envelope(v, "x"))
            .send()
    };
    let r = call("down", 11).await.expect("send");
    assert_eq!(r.status(), 502);
    let text = r.text().await.expect("text");
    assert!(
        text.contains("<faultcode>soapenv:Server</faultcode>")
            && text.contains("<turnpike:status>502</turnpike:status>"),
        "{text}"
    );
    let r = call("keyed", 12).await.expect("send");
    assert_eq!(r.status(), 401);
    let text = r.text().await.expect("text");
    assert!(
        text.contains("soapenv:Sender") && text.contains("<turnpike:status>401</turnpike:status>"),
        "{text}"
    );
    let r = call("blocked", 11).await.expect("send");
    assert_eq!(r.status(), 403);
    let text = r.text().await.expect("text");
    assert!(
        text.contains("<faultcode>soapenv:Client</faultcode>") && text.contains("api_blocked"),
        "{text}"
    );
}

#[tokio::test]
async fn hostile_xml_is_refused_and_nothing_is_forwarded() {
    let (up, hits) = counting().await;
    let gw = gateway(&format!(
        "apis:\n{}{}",
        soap_api(
            "soap",
            &format!("http://{up}"),
            "SOAP",
            "Echo12",
            ECHO_WSDL,
            "    max_body_size: 1MiB\n"
        ),
        soap_api(
            "only12",
            &format!("http://{up}"),
            "SOAP",
            "SoapPort",
            SOAP12_ONLY,
            ""
        )
    ))
    .await;
    let c = client();
    let laughs = "<?xml version=\"1.0\"?><!DOCTYPE l [<!ENTITY a \"aaaaaaaaaa\"><!ENTITY b \"&a;&a;&a;&a;&a;&a;&a;&a;\">]><s:Envelope xmlns:s=\"http://www.w3.org/2003/05/soap-envelope\"><s:Body>&b;</s:Body></s:Envelope>".to_owned();
    let xxe = "<!DOCTYPE s [<!ENTITY x SYSTEM \"file:///etc/passwd\">]><s:Envelope xmlns:s=\"http://www.w3.org/2003/05/soap-envelope\"><s:Body>&x;</s:Body></s:Envelope>".to_owned();
    let deep = format!(
        "<s:Envelope xmlns:s=\"http://www.w3.org/2003/05/soap-envelope\"><s:Body>{}{}</s:Body></s:Envelope>",
        "<a>".repeat(5000),
        "</a>".repeat(5000)
    );
    let oversize = envelope(12, &"a".repeat(2 << 20));
    for (what, body, status) in [
        ("laughs", laughs, 400),
        ("xxe", xxe, 400),
        ("deep", deep, 400),
        ("oversize", oversize, 413),
    ] {
        let r = c
            .post(gw.url("/soap/v1"))
            .header("content-type", content_type(12))
            .body(body)
            .send()
            .await
            .expect("send");
        assert_eq!(r.status(), status, "{what}");
        let text = r.text().await.expect("text");
        assert!(text.contains("soapenv:Fault"), "{what}: {text}");
    }
    // A SOAP 1.1 envelope to a SOAP 1.2-only binding.
    let r = c
        .post(gw.url("/only12/v1"))
        .header("content-type", content_type(11))
        .body(envelope(11, "x"))
        .send()
        .await
        .expect("send");
    assert_eq!(r.status(), 400);
    let text = r.text().await.expect("text");
    assert!(text.contains("SOAP 1.1 envelope"), "{text}");
    assert_eq!(
        hits.load(Ordering::SeqCst),
        0,
        "nothing reached the upstream"
    );
}

/// One element with `n` attributes inside an echo envelope (issue 25: 64,000 of them,
/// 693 KB, cost the gateway 7-9 s of CPU in a quadratic duplicate check).
fn attribute_bomb(n: usize) -> String {
    let attrs: String = (0..n).map(|i| format!(" a{i}=\"{i}\"")).collect();
    envelope(12, &format!("<e:x{attrs}/>"))
}

#[tokio::test]
async fn the_attribute_bomb_is_refused_as_a_fault_and_large_envelopes_still_pass() {
    let (up, hits) = counting().await;
    let gw = gateway(&format!(
        "apis:\n{}",
        soap_api(
            "soap",
            &format!("http://{up}"),
            "SOAP",
            "Echo12",
            ECHO_WSDL,
            "    max_body_size: 2MiB\n"
        )
    ))
    .await;
    let c = client();
    let post = |body: String| {
        c.post(gw.url("/soap/v1"))
            .header("content-type", content_type(12))
            .body(body)
            .send()
    };
    let bomb = attribute_bomb(64_000);
    assert!(bomb.len() > 690_000);
    let dup: String = (0..40).map(|i| format!(" a{i}=''")).collect();
    for (what, body, says) in [
        ("bomb", bomb, "more than 256 attributes"),
        ("257", attribute_bomb(257), "more than 256 attributes"),
        (
            "duplicate",
            envelope(12, &format!("<e:x{dup} a7=''/>")),
            "duplicate attribute",
        ),
    ] {
        let r = post(body).await.expect("send");
        assert_eq!(r.status(), 400, "{what}");
        let text = r.text().await.expect("text");
        assert!(
            text.contains("soapenv:Sender") && text.contains(says),
            "{what}: {text}"
        );
    }
    assert_eq!(hits.load(Ordering::SeqCst), 0, "nothing was forwarded");
    // At the cap, and a large envelope (read off the runtime's workers), go through.
    let r = post(attribute_bomb(256)).await.expect("send");
    assert_eq!(r.status(), 200);
    let r = post(envelope(12, &"x".repeat(300_000)))
        .await
        .expect("send");
    assert_eq!(r.status(), 200);
    let r = post(envelope(12, &format!("{}<", "x".repeat(300_000))))
        .await
        .expect("send");
    assert_eq!(
        r.status(),
        400,
        "a large malformed envelope is refused as well"
    );
    assert_eq!(hits.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn soap_to_rest_get_operations_take_their_input_from_the_query() {
    let echo = soap_echo().await;
    let wsdl = Value::String(ECHO_WSDL.to_owned()).to_string();
    let gw = gateway(&format!(
        "apis:\n  - name: q\n    context: /q\n    version: v1\n    endpoints: [\"http://{echo}/soap\"]\n    soap: {{ type: SOAP_TO_REST, port: Echo12, get_operations: [echo], wsdl: {wsdl} }}\n"
    ))
    .await;
    let c = client();
    let r = c
        .get(gw.url("/q/v1/echo?p=a%26b%3Cc"))
        .send()
        .await
        .expect("send");
    assert_eq!(r.status(), 200);
    let v: Value = serde_json::from_str(&r.text().await.expect("text")).expect("json");
    assert_eq!(v, json!({"p": "a&b<c"}));
    // The resource is GET only; a missing required parameter is the mapper's 400.
    let r = c
        .post(gw.url("/q/v1/echo"))
        .body("{}")
        .send()
        .await
        .expect("send");
    assert_eq!(r.status(), 405);
    let r = c.get(gw.url("/q/v1/echo")).send().await.expect("send");
    assert_eq!(r.status(), 400);
}

/// An upstream that answers every request with a chunked SOAP response whose first
/// chunk goes out at once and whose end waits for `release`.
async fn half_sent() -> (SocketAddr, Arc<tokio::sync::Notify>) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let release = Arc::new(tokio::sync::Notify::new());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    let r = release.clone();
    tokio::spawn(async move {
        while let Ok((mut s, _)) = listener.accept().await {
            let r = r.clone();
            tokio::spawn(async move {
                // Read the request head and its small body (one read is enough here).
                let mut buf = vec![0u8; 64 * 1024];
                let _ = s.read(&mut buf).await;
                let first =
                    "<s:Envelope xmlns:s=\"http://www.w3.org/2003/05/soap-envelope\"><s:Body>";
                let head = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: application/soap+xml\r\ntransfer-encoding: chunked\r\n\r\n{:x}\r\n{first}\r\n",
                    first.len()
                );
                let _ = s.write_all(head.as_bytes()).await;
                r.notified().await;
                let rest = "</s:Body></s:Envelope>";
                let tail = format!("{:x}\r\n{rest}\r\n0\r\n\r\n", rest.len());
                let _ = s.write_all(tail.as_bytes()).await;
            });
        }
    });
    (addr, release)
}

#[tokio::test]
async fn soap_pass_through_streams_the_back_end_response() {
    let (up, release) = half_sent().await;
    let gw = gateway(&format!(
        "apis:\n{}",
        soap_api(
            "soap",
            &format!("http://{up}"),
            "SOAP",
            "Echo12",
            ECHO_WSDL,
            ""
        )
    ))
    .await;
    let mut r = client()
        .post(gw.url("/soap/v1"))
        .header("content-type", content_type(12))
        .body(envelope(12, "x"))
        .send()
        .await
        .expect("send");
    assert_eq!(r.status(), 200);
    // The first chunk arrives while the back end still holds the end of its body: the
    // gateway did not wait for the whole response (a buffering gateway never would).
    let first = tokio::time::timeout(std::time::Duration::from_secs(10), r.chunk())
        .await
        .expect("the first bytes came before the back end finished")
        .expect("chunk")
        .expect("some bytes");
    assert!(first.starts_with(b"<s:Envelope"), "{first:?}");
    release.notify_one();
    let mut rest = Vec::new();
    while let Some(c) = r.chunk().await.expect("chunk") {
        rest.extend_from_slice(&c);
    }
    assert!(rest.ends_with(b"</s:Envelope>"), "{rest:?}");
}

#[tokio::test]
async fn not_found_and_method_not_allowed_are_soap_faults() {
    let (up, hits) = counting().await;
    let gw = gateway(&format!(
        "apis:\n{}{}",
        soap_api("soap", &format!("http://{up}"), "SOAP", "Echo12", ECHO_WSDL, ""),
        soap_api(
            "ops",
            &format!("http://{up}"),
            "SOAP",
            "Echo11",
            ECHO_WSDL,
            "    resources:\n      - { path: \"/\", methods: [POST] }\n      - { path: \"/orders/{id}\", methods: [POST] }\n"
        ),
    ))
    .await;
    let c = client();
    // (method, path, status, SOAP version of the binding, the error code)
    let cases = [
        ("PUT", "/soap/v1", 405, 12, "method_not_allowed"),
        ("DELETE", "/soap/v1/x", 405, 12, "method_not_allowed"),
        ("PUT", "/ops/v1", 405, 11, "method_not_allowed"),
        ("POST", "/ops/v1/nothing/here", 404, 11, "not_found"),
        ("POST", "/ops/v1/orders", 404, 11, "not_found"),
        ("GET", "/ops/v1/x?wsdl", 404, 11, "not_found"),
    ];
    for (method, path, status, version, code) in cases {
        let r = c
            .request(method.parse().expect("method"), gw.url(path))
            .header("content-type", content_type(version))
            .body(envelope(version, "x"))
            .send()
            .await
            .expect("send");
        assert_eq!(r.status(), status, "{method} {path}");
        let ct = r.headers()["content-type"]
            .to_str()
            .unwrap_or_default()
            .to_owned();
        let text = r.text().await.expect("text");
        let (media, fault_code) = if version == 11 {
            ("text/xml", "<faultcode>soapenv:Client</faultcode>")
        } else {
            (
                "application/soap+xml",
                "<soapenv:Value>soapenv:Sender</soapenv:Value>",
            )
        };
        assert!(ct.starts_with(media), "{method} {path}: {ct}");
        assert!(
            text.contains(fault_code)
                && text.contains(&format!("<turnpike:code>{code}</turnpike:code>"))
                && text.contains(&format!("<turnpike:status>{status}</turnpike:status>")),
            "{method} {path}: {text}"
        );
    }
    // The declared resources still work, and a path outside every API stays the
    // gateway's JSON 404.
    let r = c
        .post(gw.url("/ops/v1/orders/7"))
        .header("content-type", content_type(11))
        .body(envelope(11, "x"))
        .send()
        .await
        .expect("send");
    assert_eq!(r.status(), 200);
    let r = c.post(gw.url("/nowhere/v1")).send().await.expect("send");
    assert_eq!(r.status(), 404);
    assert_eq!(support::error_body(r).await["code"], "not_found");
    assert_eq!(
        hits.load(Ordering::SeqCst),
        1,
        "only the declared resource was forwarded"
    );
}
