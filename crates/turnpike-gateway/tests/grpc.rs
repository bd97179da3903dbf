//! gRPC pass-through (issue 27, item 4): a tonic client speaking HTTP/2 to the gateway
//! (TLS, ALPN h2) calls a tonic server behind an `upstream_protocol: h2c` endpoint. A
//! unary call, a server-streaming call whose status comes in trailers after the
//! messages, and error statuses (trailers-only and after messages) all arrive as the
//! server sent them.

mod support;

use std::convert::Infallible;
use std::net::SocketAddr;
use std::pin::Pin;

use bytes::{Buf, BufMut};
use futures_util::Stream;
use http::uri::PathAndQuery;
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo};
use support::*;
use tokio::net::TcpListener;
use tonic::codec::{Codec, DecodeBuf, Decoder, EncodeBuf, Encoder};
use tonic::{Code, Request, Response, Status};

/// Messages as raw bytes: the test needs no protobuf schema, only gRPC's framing.
#[derive(Clone, Copy, Default)]
struct Raw;

impl Codec for Raw {
    type Encode = Vec<u8>;
    type Decode = Vec<u8>;
    type Encoder = Raw;
    type Decoder = Raw;
    fn encoder(&mut self) -> Raw {
        Raw
    }
    fn decoder(&mut self) -> Raw {
        Raw
    }
}

impl Encoder for Raw {
    type Item = Vec<u8>;
    type Error = Status;
    fn encode(&mut self, item: Vec<u8>, dst: &mut EncodeBuf<'_>) -> Result<(), Status> {
        dst.put_slice(&item);
        Ok(())
    }
}

impl Decoder for Raw {
    type Item = Vec<u8>;
    type Error = Status;
    fn decode(&mut self, src: &mut DecodeBuf<'_>) -> Result<Option<Vec<u8>>, Status> {
        Ok(Some(src.copy_to_bytes(src.remaining()).to_vec()))
    }
}

type Fut<T> = Pin<Box<dyn std::future::Future<Output = Result<T, Status>> + Send>>;
type Messages = Pin<Box<dyn Stream<Item = Result<Vec<u8>, Status>> + Send>>;

/// `Say`: answers "hello, <name>"; `Fail`: `permission_denied`.
struct Unary(&'static str);

impl tonic::server::UnaryService<Vec<u8>> for Unary {
    type Response = Vec<u8>;
    type Future = Fut<Response<Vec<u8>>>;
    fn call(&mut self, req: Request<Vec<u8>>) -> Self::Future {
        let method = self.0;
        Box::pin(async move {
            if method == "Fail" {
                return Err(Status::permission_denied("not for you"));
            }
            let te = req
                .metadata()
                .get("te")
                .map(|v| v.to_str().unwrap_or("?").to_owned());
            let mut out = b"hello, ".to_vec();
            out.extend_from_slice(req.get_ref());
            let mut resp = Response::new(out);
            if let Some(te) = te.and_then(|t| t.parse().ok()) {
                resp.metadata_mut().insert("x-seen-te", te);
            }
            Ok(resp)
        })
    }
}

/// `Count`: as many messages as the request's one byte says, at most 3; asked for more,
/// the status after the third is `out_of_range`.
struct Count;

impl tonic::server::ServerStreamingService<Vec<u8>> for Count {
    type Response = Vec<u8>;
    type ResponseStream = Messages;
    type Future = Fut<Response<Messages>>;
    fn call(&mut self, req: Request<Vec<u8>>) -> Self::Future {
        let n = req.get_ref().first().copied().unwrap_or(0);
        Box::pin(async move {
            let mut items: Vec<Result<Vec<u8>, Status>> =
                (0..n.min(3)).map(|i| Ok(vec![b'0' + i])).collect();
            if n > 3 {
                items.push(Err(Status::out_of_range("at most 3")));
            }
            Ok(Response::new(
                Box::pin(futures_util::stream::iter(items)) as Messages
            ))
        })
    }
}

/// A tonic server on 127.0.0.1:0 speaking HTTP/2 with prior knowledge.
async fn grpc_server() -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(async move {
        while let Ok((s, _)) = listener.accept().await {
            let svc = service_fn(|req: http::Request<Incoming>| async move {
                let req = req.map(tonic::body::Body::new);
                let mut grpc = tonic::server::Grpc::new(Raw);
                let resp = match req.uri().path() {
                    "/test.Echo/Say" => grpc.unary(Unary("Say"), req).await,
                    "/test.Echo/Fail" => grpc.unary(Unary("Fail"), req).await,
                    "/test.Echo/Count" => grpc.server_streaming(Count, req).await,
                    _ => Status::unimplemented("no such method").into_http(),
                };
                Ok::<_, Infallible>(resp)
            });
            tokio::spawn(async move {
                let _ = hyper::server::conn::http2::Builder::new(TokioExecutor::new())
                    .serve_connection(TokioIo::new(s), svc)
                    .await;
            });
        }
    });
    addr
}

/// A tonic client reaching the gateway's HTTPS listener with ALPN h2.
async fn grpc_client(gw: &TestGateway) -> tonic::client::Grpc<tonic::transport::Channel> {
    let addr = gw.https;
    let cert = gw.dir.path().join("tls").join("cert.pem");
    let connector = tower::service_fn(move |_: http::Uri| {
        let cert = cert.clone();
        async move { Ok::<_, std::io::Error>(TokioIo::new(tls_to(addr, &cert, b"h2").await)) }
    });
    let channel = tonic::transport::Endpoint::from_static("http://localhost")
        .connect_with_connector(connector)
        .await
        .expect("channel");
    tonic::client::Grpc::new(channel)
}

async fn unary(
    c: &mut tonic::client::Grpc<tonic::transport::Channel>,
    method: &'static str,
    msg: &[u8],
) -> Result<Response<Vec<u8>>, Status> {
    c.ready().await.expect("ready");
    let path = PathAndQuery::from_static(method);
    c.unary(Request::new(msg.to_vec()), path, Raw).await
}

/// Calls `Count` asking for `n`; the messages and how the stream ended.
async fn count(
    c: &mut tonic::client::Grpc<tonic::transport::Channel>,
    n: u8,
) -> (
    Vec<Vec<u8>>,
    Result<Option<tonic::metadata::MetadataMap>, Status>,
) {
    c.ready().await.expect("ready");
    let path = PathAndQuery::from_static("/grpc/v1/test.Echo/Count");
    let resp = c.server_streaming(Request::new(vec![n]), path, Raw).await;
    let mut stream = resp.expect("the call starts").into_inner();
    let mut got = Vec::new();
    loop {
        match stream.message().await {
            Ok(Some(m)) => got.push(m),
            Ok(None) => return (got, stream.trailers().await),
            Err(status) => return (got, Err(status)),
        }
    }
}

async fn gateway_to(server: SocketAddr) -> TestGateway {
    // The API's context is the gRPC path's first segments: `/grpc/v1/test.Echo/Say`
    // goes upstream as `/test.Echo/Say`, routed like any API.
    let extra = "    upstream_protocol: h2c\n    default: false\n";
    let yaml = config(&[api("grpc", &[http(server)], extra)])
        .replace("    default: true\n    endpoints", "    endpoints");
    gateway(&yaml).await
}

#[tokio::test]
async fn unary_calls_and_their_error_status_pass_through() {
    let gw = gateway_to(grpc_server().await).await;
    let mut c = grpc_client(&gw).await;
    let ok = unary(&mut c, "/grpc/v1/test.Echo/Say", b"turnpike").await;
    let ok = ok.expect("an OK status");
    assert_eq!(ok.get_ref(), b"hello, turnpike");
    // The client's `te: trailers` reached the server.
    assert_eq!(
        ok.metadata().get("x-seen-te").map(|v| v.to_str().ok()),
        Some(Some("trailers"))
    );
    let err = unary(&mut c, "/grpc/v1/test.Echo/Fail", b"x").await;
    let err = err.expect_err("the server's status");
    assert_eq!(err.code(), Code::PermissionDenied);
    assert_eq!(err.message(), "not for you");
}

#[tokio::test]
async fn server_streams_keep_their_trailers() {
    let gw = gateway_to(grpc_server().await).await;
    let mut c = grpc_client(&gw).await;
    let (got, end) = count(&mut c, 3).await;
    assert_eq!(got, vec![b"0".to_vec(), b"1".to_vec(), b"2".to_vec()]);
    let trailers = end.expect("an OK status").expect("trailers");
    assert_eq!(
        trailers.get("grpc-status").map(|v| v.to_str().ok()),
        Some(Some("0"))
    );
    // A status after messages can only come in trailers.
    let (got, end) = count(&mut c, 5).await;
    assert_eq!(got.len(), 3);
    let status = end.expect_err("out of range");
    assert_eq!(status.code(), Code::OutOfRange);
    assert_eq!(status.message(), "at most 3");
}
