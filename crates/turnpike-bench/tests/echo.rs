//! The echo back end over real sockets: body and Content-Type echo, fixed-size bodies,
//! query controls, delayed requests running concurrently, and h2c.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::{Request, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper::client::conn::{http1, http2};
use hyper_util::rt::{TokioExecutor, TokioIo};
use turnpike_bench::echo::{spawn, EchoConfig};

type Sender = http1::SendRequest<Full<Bytes>>;

async fn h1(addr: SocketAddr) -> Sender {
    let stream = tokio::net::TcpStream::connect(addr).await.expect("connect");
    let (sender, conn) = http1::handshake(TokioIo::new(stream))
        .await
        .expect("handshake");
    tokio::spawn(conn);
    sender
}

fn req(method: &str, uri: &str, ct: Option<&str>, body: &'static [u8]) -> Request<Full<Bytes>> {
    let mut b = Request::builder()
        .method(method)
        .uri(uri)
        .header("host", "echo");
    if let Some(ct) = ct {
        b = b.header("content-type", ct);
    }
    b.body(Full::new(Bytes::from_static(body)))
        .expect("request")
}

async fn send(s: &mut Sender, r: Request<Full<Bytes>>) -> (StatusCode, Option<String>, Bytes) {
    s.ready().await.expect("ready");
    let resp = s.send_request(r).await.expect("response");
    let status = resp.status();
    let ct = resp
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let body = resp.into_body().collect().await.expect("body").to_bytes();
    (status, ct, body)
}

#[tokio::test]
async fn echoes_body_and_content_type_for_any_method_and_path_on_one_connection() {
    let addr = spawn(EchoConfig::default()).await.expect("spawn");
    let mut s = h1(addr).await;
    for (method, path) in [("POST", "/a"), ("PUT", "/b/c?x=1"), ("DELETE", "/")] {
        let (status, ct, body) = send(
            &mut s,
            req(method, path, Some("application/json"), b"{\"k\":1}"),
        )
        .await;
        assert_eq!(status, StatusCode::OK, "{method} {path}");
        assert_eq!(ct.as_deref(), Some("application/json"));
        assert_eq!(&body[..], b"{\"k\":1}");
    }
}

#[tokio::test]
async fn bodiless_request_gets_the_configured_size_and_query_overrides_it() {
    let cfg = EchoConfig {
        size: Some(1024),
        ..EchoConfig::default()
    };
    let addr = spawn(cfg).await.expect("spawn");
    let mut s = h1(addr).await;
    let (status, _, body) = send(&mut s, req("GET", "/x", None, b"")).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body.len(), 1024);
    let (_, _, body) = send(&mut s, req("GET", "/x?size=10", None, b"")).await;
    assert_eq!(body.len(), 10);
    // A request with a body is echoed, not replaced.
    let (_, _, body) = send(&mut s, req("POST", "/x", None, b"hello")).await;
    assert_eq!(&body[..], b"hello");
}

#[tokio::test]
async fn status_control_sets_the_status_and_bad_controls_get_400() {
    let addr = spawn(EchoConfig::default()).await.expect("spawn");
    let mut s = h1(addr).await;
    let (status, _, _) = send(&mut s, req("GET", "/?status=503", None, b"")).await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
    let (status, _, body) = send(&mut s, req("GET", "/?delay_ms=soon", None, b"")).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(String::from_utf8_lossy(&body).contains("delay_ms"));
}

/// 200 requests each delayed 200 ms on a current-thread runtime: if the delay blocked a
/// thread they would take 40 s; concurrently they take about 200 ms. The bound (10 s) is
/// loose so a loaded machine cannot make it flaky, yet 4x under serial time.
#[tokio::test(flavor = "current_thread")]
async fn delayed_requests_run_concurrently() {
    let cfg = EchoConfig {
        delay: Duration::from_millis(200),
        ..EchoConfig::default()
    };
    let addr = spawn(cfg).await.expect("spawn");
    let start = Instant::now();
    let mut tasks = Vec::new();
    for _ in 0..200 {
        tasks.push(tokio::spawn(async move {
            let mut s = h1(addr).await;
            send(&mut s, req("POST", "/", None, b"x")).await
        }));
    }
    for t in tasks {
        let (status, _, body) = t.await.expect("join");
        assert_eq!(status, StatusCode::OK);
        assert_eq!(&body[..], b"x");
    }
    let took = start.elapsed();
    assert!(
        took >= Duration::from_millis(200),
        "delay not applied: {took:?}"
    );
    assert!(
        took < Duration::from_secs(10),
        "delays were serialised: {took:?}"
    );
}

#[tokio::test]
async fn serves_h2c_with_prior_knowledge() {
    let addr = spawn(EchoConfig::default()).await.expect("spawn");
    let stream = tokio::net::TcpStream::connect(addr).await.expect("connect");
    let (mut s, conn) = http2::handshake(TokioExecutor::new(), TokioIo::new(stream))
        .await
        .expect("h2 handshake");
    tokio::spawn(conn);
    let r = Request::builder()
        .method("POST")
        .uri(format!("http://{addr}/h2"))
        .header("content-type", "text/xml")
        .body(Full::new(Bytes::from_static(b"<a/>")))
        .expect("request");
    let resp = s.send_request(r).await.expect("response");
    assert_eq!(resp.version(), http::Version::HTTP_2);
    assert_eq!(resp.headers()["content-type"], "text/xml");
    let body = resp.into_body().collect().await.expect("body").to_bytes();
    assert_eq!(&body[..], b"<a/>");
}

#[tokio::test]
async fn soap_echo_answers_in_the_request_version_serves_its_wsdl_and_faults() {
    use turnpike_bench::echo_soap::{content_type, envelope_payload};
    let cfg = EchoConfig {
        soap: true,
        ..EchoConfig::default()
    };
    let addr = spawn(cfg).await.expect("spawn");
    let mut s = h1(addr).await;
    for v in [11u8, 12] {
        let body: &'static [u8] = Box::leak(envelope_payload(v, 5000).to_vec().into_boxed_slice());
        let (status, ct, resp) =
            send(&mut s, req("POST", "/soap", Some(content_type(v)), body)).await;
        assert_eq!(status, StatusCode::OK);
        let media = if v == 11 {
            "text/xml"
        } else {
            "application/soap+xml"
        };
        assert!(
            ct.as_deref().is_some_and(|c| c.starts_with(media)),
            "{ct:?}"
        );
        let text = std::str::from_utf8(&resp).expect("utf8");
        assert!(text.contains("echoResponse"), "{text}");
        assert!(
            resp.len().abs_diff(5000) < 100,
            "response size follows the request: {}",
            resp.len()
        );
    }
    let (status, _, resp) = send(&mut s, req("GET", "/soap?wsdl", None, b"")).await;
    assert_eq!(status, StatusCode::OK);
    let wsdl = std::str::from_utf8(&resp).expect("utf8");
    assert!(wsdl.contains("location=\"http://echo/soap\""), "{wsdl}");
    let bad =
        b"<s:Envelope xmlns:s=\"http://www.w3.org/2003/05/soap-envelope\"><s:Body/></s:Envelope>";
    let (status, _, resp) = send(&mut s, req("POST", "/soap", Some(content_type(12)), bad)).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(std::str::from_utf8(&resp)
        .expect("utf8")
        .contains("s:Sender"));
    let body: &'static [u8] = Box::leak(envelope_payload(11, 200).to_vec().into_boxed_slice());
    let (status, _, resp) = send(
        &mut s,
        req("POST", "/soap?fault=1", Some(content_type(11)), body),
    )
    .await;
    assert_eq!(status, StatusCode::INTERNAL_SERVER_ERROR);
    assert!(std::str::from_utf8(&resp)
        .expect("utf8")
        .contains("<faultcode>s:Server</faultcode>"));
    // JSON still gets the plain echo.
    let (status, _, resp) = send(&mut s, req("POST", "/x", Some("application/json"), b"{}")).await;
    assert_eq!((status, &resp[..]), (StatusCode::OK, &b"{}"[..]));
}
