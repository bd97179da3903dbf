//! Tests of the in-task HTTP/1.1 client against scripted upstream sockets.

use super::*;
use http_body_util::BodyExt;
use tokio::io::AsyncReadExt;
use tokio::net::{TcpListener, TcpStream};

use crate::upstream::pool::Upstreams;

fn up(path: &str) -> UpstreamPath<'_> {
    UpstreamPath {
        base: "",
        path,
        query: None,
        forwarded: None,
    }
}

fn fwd() -> crate::headers::Forwarded<'static> {
    static IP: HeaderValue = HeaderValue::from_static("10.1.2.3");
    crate::headers::Forwarded {
        client_ip: &IP,
        https: false,
    }
}

#[test]
fn head_without_forwarded_headers_gets_all_three_like_the_map() {
    let mut parts = http::Request::get("http://api.example/x")
        .body(())
        .expect("req")
        .into_parts()
        .0;
    parts
        .headers
        .insert(HOST, HeaderValue::from_static("client.example"));
    let f = fwd();
    let path = UpstreamPath {
        base: "",
        path: "/x",
        query: None,
        forwarded: Some(&f),
    };
    let host = HeaderValue::from_static("up:80");
    let mut direct = Vec::new();
    encode_head(
        &mut direct,
        &parts,
        &host,
        &path,
        &ReqFraming::None,
        SizeHint::default(),
    );
    // The same request through the header map (hyper's client path), encoded without.
    let mut mapped = parts.clone();
    f.apply(&mut mapped.headers, &mapped.uri);
    let path = UpstreamPath {
        forwarded: None,
        ..path
    };
    let mut via_map = Vec::new();
    encode_head(
        &mut via_map,
        &mapped,
        &host,
        &path,
        &ReqFraming::None,
        SizeHint::default(),
    );
    assert_eq!(
        String::from_utf8(direct).expect("utf8"),
        String::from_utf8(via_map).expect("utf8")
    );
}

#[test]
fn head_carries_forwarded_headers_like_the_header_map_rules() {
    let mut parts = http::Request::post("http://api.example/x")
        .header("x-forwarded-for", "1.1.1.1")
        .header("x-forwarded-for", "2.2.2.2")
        .header("x-forwarded-proto", "https")
        .header("content-length", "0")
        .body(())
        .expect("req")
        .into_parts()
        .0;
    parts
        .headers
        .insert(HOST, HeaderValue::from_static("client.example"));
    let f = fwd();
    let mut out = Vec::new();
    let path = UpstreamPath {
        base: "/base",
        path: "/x",
        query: Some("a=1"),
        forwarded: Some(&f),
    };
    let host = HeaderValue::from_static("up:80");
    encode_head(
        &mut out,
        &parts,
        &host,
        &path,
        &ReqFraming::Length,
        SizeHint::default(),
    );
    let head = String::from_utf8(out).expect("utf8");
    assert!(
        head.starts_with("POST /base/x?a=1 HTTP/1.1\r\nhost: up:80\r\n"),
        "{head}"
    );
    assert!(
        head.contains("x-forwarded-for: 1.1.1.1, 10.1.2.3\r\n"),
        "{head}"
    );
    assert!(!head.contains("2.2.2.2"), "{head}");
    assert!(head.contains("x-forwarded-proto: https\r\n"), "{head}");
    assert!(!head.contains("x-forwarded-proto: http\r\n"), "{head}");
    // The host the request was routed by: an absolute-form target's, not `Host`
    // (RFC 9112 §3.2.2).
    assert!(head.contains("x-forwarded-host: api.example\r\n"), "{head}");
    assert!(head.ends_with("content-length: 0\r\n\r\n") || head.ends_with("\r\n\r\n"));
}

/// Reads one request head (and no body) from a scripted upstream socket.
async fn read_request(s: &mut TcpStream) -> String {
    let mut got = Vec::new();
    let mut b = [0u8; 1024];
    while !got.windows(4).any(|w| w == b"\r\n\r\n") {
        let n = s.read(&mut b).await.expect("read");
        assert!(n > 0, "client closed");
        got.extend_from_slice(&b[..n]);
    }
    String::from_utf8(got).expect("utf8")
}

async fn get(pool: &Arc<EndpointPool>, path: &str) -> (Response<DirectBody>, Bytes) {
    let conn = pool
        .checkout_direct(std::time::Duration::from_secs(5))
        .await
        .expect("connect");
    let (parts, ()) = http::Request::get(path).body(()).expect("req").into_parts();
    let resp = exchange(
        pool.clone(),
        conn,
        &parts,
        &mut ClientBody::empty(),
        up(path),
    )
    .await
    .expect("exchange");
    let (head, body) = resp.into_parts();
    let bytes = body.collect().await.expect("body").to_bytes();
    (
        Response::from_parts(head, DirectBody::empty_for_test()),
        bytes,
    )
}

#[tokio::test]
async fn chunked_and_interim_responses_then_reuse_then_reconnect_after_close() {
    let l = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let authority: http::uri::Authority = l
        .local_addr()
        .expect("addr")
        .to_string()
        .parse()
        .expect("authority");
    let server = tokio::spawn(async move {
        let (mut s, _) = l.accept().await.expect("accept");
        let head = read_request(&mut s).await;
        assert!(head.starts_with("GET /a HTTP/1.1\r\nhost: "), "{head}");
        s.write_all(
            b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n\
              3;x=y\r\nabc\r\n2\r\nde\r\n0\r\nx-trailer: 1\r\n\r\n",
        )
        .await
        .expect("write");
        // Same connection: kept alive and reused.
        let head = read_request(&mut s).await;
        assert!(head.starts_with("GET /b "), "{head}");
        s.write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\nconnection: close\r\n\r\nok")
            .await
            .expect("write");
        drop(s);
        // The closed connection is not reused: a new one comes.
        let (mut s, _) = l.accept().await.expect("accept again");
        let head = read_request(&mut s).await;
        assert!(head.starts_with("GET /c "), "{head}");
        s.write_all(b"HTTP/1.0 200 OK\r\n\r\nuntil-eof")
            .await
            .expect("write");
    });
    let pool = Upstreams::new().pool(false, &authority);
    let (r, body) = get(&pool, "/a").await;
    assert_eq!(r.status(), 200);
    assert_eq!(&body[..], b"abcde");
    let (_, body) = get(&pool, "/b").await;
    assert_eq!(&body[..], b"ok");
    let (r, body) = get(&pool, "/c").await;
    assert_eq!(r.version(), Version::HTTP_10);
    assert_eq!(&body[..], b"until-eof");
    server.await.expect("server");
}

#[tokio::test]
async fn garbage_and_early_close_are_errors() {
    let l = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let authority: http::uri::Authority = l
        .local_addr()
        .expect("addr")
        .to_string()
        .parse()
        .expect("authority");
    tokio::spawn(async move {
        let (mut s, _) = l.accept().await.expect("accept");
        read_request(&mut s).await;
        s.write_all(b"NOT HTTP\r\n\r\n").await.expect("write");
        // A status above 599 (which `http` would accept): found by fuzz_upstream.rs.
        let (mut s, _) = l.accept().await.expect("accept");
        read_request(&mut s).await;
        s.write_all(b"HTTP/1.1 604 Odd\r\ncontent-length: 0\r\n\r\n")
            .await
            .expect("write");
        let (mut s, _) = l.accept().await.expect("accept");
        read_request(&mut s).await;
    });
    let pool = Upstreams::new().pool(false, &authority);
    for kind in [
        ErrorKind::UpstreamProtocol,
        ErrorKind::UpstreamProtocol,
        ErrorKind::UpstreamReset,
    ] {
        let conn = pool
            .checkout_direct(std::time::Duration::from_secs(5))
            .await
            .expect("connect");
        let (parts, ()) = http::Request::get("/").body(()).expect("req").into_parts();
        let e = exchange(
            pool.clone(),
            conn,
            &parts,
            &mut ClientBody::empty(),
            up("/"),
        )
        .await
        .err()
        .expect("an error");
        assert_eq!(e.kind, kind);
    }
}

fn framing(headers: &[(&'static str, &'static str)]) -> BodyFraming {
    let mut h = HeaderMap::new();
    for (k, v) in headers {
        h.append(*k, HeaderValue::from_static(v));
    }
    body_framing(StatusCode::OK, false, &h).unwrap_or(BodyFraming::Eof)
}

#[test]
fn framing_follows_the_headers() {
    assert_eq!(framing(&[("content-length", "5")]), BodyFraming::Length(5));
    assert_eq!(
        framing(&[("transfer-encoding", "gzip, chunked")]),
        BodyFraming::Chunked(Chunk::Size)
    );
    assert_eq!(framing(&[]), BodyFraming::Eof);
    let mut h = HeaderMap::new();
    h.append(CONTENT_LENGTH, HeaderValue::from_static("1"));
    h.append(CONTENT_LENGTH, HeaderValue::from_static("2"));
    assert!(body_framing(StatusCode::OK, false, &h).is_err());
}

#[test]
fn keep_alive_by_version_and_connection() {
    let mut h = HeaderMap::new();
    assert!(keeps_alive(Version::HTTP_11, &h));
    assert!(!keeps_alive(Version::HTTP_10, &h));
    h.insert(CONNECTION, HeaderValue::from_static("Close"));
    assert!(!keeps_alive(Version::HTTP_11, &h));
}
