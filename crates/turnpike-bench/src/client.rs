//! The generator's HTTP client: one connection per user (HTTP/1.1 keep-alive or HTTP/2,
//! plain or TLS), a request template built once. HTTP/1.1 requests are written as bytes
//! by the generator's own client (`h1`: the wire form rendered once, a token line spliced
//! in per request); HTTP/2 goes through hyper, the template cloned per request (reference
//! counts, not copies). Response bodies are counted, never collected. Also fetches one
//! OAuth2 token by client credentials. Owns no scheduling: see `load`.

use std::net::SocketAddr;
use std::sync::Arc;

use bytes::Bytes;
use http::header::{HeaderName, AUTHORIZATION, CONTENT_TYPE, HOST};
use http::{HeaderMap, HeaderValue, Method, Request, Uri};
use http_body_util::{BodyExt, Full};
use hyper::client::conn::{http1, http2};
use hyper_util::rt::{TokioExecutor, TokioIo};
use rustls::pki_types::ServerName;
use tokio::net::TcpStream;

use crate::h1::{H1Conn, H1Error, Io};
use crate::sequence::Sequence;
use crate::BenchError;

/// Where requests go: resolved once.
#[derive(Clone)]
pub struct Target {
    pub addr: SocketAddr,
    pub tls: Option<(tokio_rustls::TlsConnector, ServerName<'static>)>,
    pub http2: bool,
    /// HTTP/1.1 through hyper's client instead of the kit's own (`--hyper-h1`: the
    /// generator as it was before issue 32, kept to compare the two on one binary).
    pub hyper_h1: bool,
    /// HTTP/1.1 closed loops on the tokio runtime instead of the epoll loop (`--tokio-h1`,
    /// to compare the two on one binary).
    pub tokio_h1: bool,
    /// The epoll loop's busy poll before blocking (`--spin-us`; zero: none).
    pub spin: std::time::Duration,
}

impl std::fmt::Debug for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Target")
            .field("addr", &self.addr)
            .field("tls", &self.tls.is_some())
            .field("http2", &self.http2)
            .finish()
    }
}

/// Why a request got no response.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error("connect: {0}")]
    Io(#[from] std::io::Error),
    #[error("http: {0}")]
    Http(#[from] hyper::Error),
    #[error("http/1.1: {0}")]
    H1(#[from] H1Error),
}

impl Target {
    /// Resolves `uri`'s authority; `insecure` accepts any server certificate.
    pub async fn resolve(uri: &Uri, http2: bool, insecure: bool) -> Result<Self, BenchError> {
        let host = uri
            .host()
            .ok_or_else(|| BenchError::Usage(format!("URL has no host: {uri}")))?;
        let https = match uri.scheme_str() {
            Some("http") => false,
            Some("https") => true,
            _ => {
                return Err(BenchError::Usage(format!(
                    "URL must be http:// or https://: {uri}"
                )))
            }
        };
        let port = uri.port_u16().unwrap_or(if https { 443 } else { 80 });
        let addr = tokio::net::lookup_host((host.trim_matches(['[', ']']), port))
            .await
            .map_err(|e| BenchError::Connect(format!("resolving {host}: {e}")))?
            .next()
            .ok_or_else(|| BenchError::Connect(format!("{host} resolves to no address")))?;
        let tls = if https {
            let name = ServerName::try_from(host.trim_matches(['[', ']']).to_owned())
                .map_err(|e| BenchError::Usage(format!("bad TLS server name {host}: {e}")))?;
            Some((tls_connector(insecure, http2)?, name))
        } else {
            None
        };
        Ok(Target {
            addr,
            tls,
            http2,
            hyper_h1: false,
            tokio_h1: false,
            spin: std::time::Duration::ZERO,
        })
    }

    /// The address when requests are plain HTTP/1.1 through the kit's own client on the
    /// epoll loop (`epoll`): no TLS, no HTTP/2, neither hyper nor tokio asked for.
    pub fn plain_h1(&self) -> Option<SocketAddr> {
        let plain = self.tls.is_none() && !self.http2 && !self.hyper_h1 && !self.tokio_h1;
        plain.then_some(self.addr)
    }

    /// Opens one connection; an HTTP/2 driver task runs on the current `LocalSet`.
    pub async fn connect(&self) -> Result<Conn, ClientError> {
        let io = self.stream().await?;
        if self.http2 {
            let (sender, conn) = http2::handshake(TokioExecutor::new(), TokioIo::new(io)).await?;
            tokio::task::spawn_local(conn);
            Ok(Conn::H2(sender))
        } else if self.hyper_h1 {
            let (sender, conn) = http1::handshake(TokioIo::new(io)).await?;
            tokio::task::spawn_local(conn);
            Ok(Conn::HyperH1(sender))
        } else {
            Ok(Conn::H1(H1Conn::new(io)))
        }
    }

    /// A TCP connection, under TLS for https.
    async fn stream(&self) -> Result<Box<dyn Io>, std::io::Error> {
        let tcp = TcpStream::connect(self.addr).await?;
        let _ = tcp.set_nodelay(true);
        Ok(match &self.tls {
            None => Box::new(tcp),
            Some((connector, name)) => Box::new(connector.connect(name.clone(), tcp).await?),
        })
    }
}

fn tls_connector(insecure: bool, http2: bool) -> Result<tokio_rustls::TlsConnector, BenchError> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| BenchError::Usage(format!("TLS setup: {e}")))?;
    let mut config = if insecure {
        builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(danger::AcceptAny))
            .with_no_client_auth()
    } else {
        let roots =
            rustls::RootCertStore::from_iter(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
        builder.with_root_certificates(roots).with_no_client_auth()
    };
    config.alpn_protocols = if http2 {
        vec![b"h2".to_vec()]
    } else {
        vec![b"http/1.1".to_vec()]
    };
    Ok(tokio_rustls::TlsConnector::from(Arc::new(config)))
}

mod danger {
    //! `--insecure`: accept any certificate (self-signed test gateways).
    use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
    use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
    use rustls::{DigitallySignedStruct, SignatureScheme};

    #[derive(Debug)]
    pub struct AcceptAny;

    impl ServerCertVerifier for AcceptAny {
        fn verify_server_cert(
            &self,
            _: &CertificateDer<'_>,
            _: &[CertificateDer<'_>],
            _: &ServerName<'_>,
            _: &[u8],
            _: UnixTime,
        ) -> Result<ServerCertVerified, rustls::Error> {
            Ok(ServerCertVerified::assertion())
        }
        fn verify_tls12_signature(
            &self,
            _: &[u8],
            _: &CertificateDer<'_>,
            _: &DigitallySignedStruct,
        ) -> Result<HandshakeSignatureValid, rustls::Error> {
            Ok(HandshakeSignatureValid::assertion())
        }
        fn verify_tls13_signature(
            &self,
            _: &[u8],
            _: &CertificateDer<'_>,
            _: &DigitallySignedStruct,
        ) -> Result<HandshakeSignatureValid, rustls::Error> {
            Ok(HandshakeSignatureValid::assertion())
        }
        fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
            rustls::crypto::ring::default_provider()
                .signature_verification_algorithms
                .supported_schemes()
        }
    }
}

/// One user's connection.
pub enum Conn {
    H1(H1Conn),
    HyperH1(http1::SendRequest<Full<Bytes>>),
    H2(http2::SendRequest<Full<Bytes>>),
}

/// What one exchange measured: status, bytes sent, bytes received.
pub type Exchanged = (u16, u64, u64);

impl Conn {
    pub fn is_closed(&self) -> bool {
        match self {
            Conn::H1(c) => c.is_closed(),
            Conn::HyperH1(s) => s.is_closed(),
            Conn::H2(s) => s.is_closed(),
        }
    }

    /// Sends the template's `n`th request and reads the whole response, counting bytes
    /// (HTTP/2: the head's bytes estimated from its fields).
    pub async fn exchange(
        &mut self,
        template: &RequestTemplate,
        n: usize,
    ) -> Result<Exchanged, ClientError> {
        match self {
            Conn::H1(c) => {
                let sent = c.send(|out| template.write_h1(n, out)).await?;
                let (status, received) = c.receive(template.method == Method::HEAD).await?;
                Ok((status, sent, received))
            }
            Conn::HyperH1(s) => {
                s.ready().await?;
                let resp = s.send_request(template.build(n)).await?;
                let (status, received) = count_response(resp).await?;
                Ok((status, template.sent_estimate, received))
            }
            Conn::H2(s) => {
                s.ready().await?;
                let resp = s.send_request(template.build(n)).await?;
                let (status, received) = count_response(resp).await?;
                Ok((status, template.sent_estimate, received))
            }
        }
    }
}

async fn count_response(
    resp: http::Response<hyper::body::Incoming>,
) -> Result<(u16, u64), hyper::Error> {
    let status = resp.status().as_u16();
    let mut received = 17 + head_len(resp.headers());
    let mut body = resp.into_body();
    while let Some(frame) = body.frame().await {
        if let Some(data) = frame?.data_ref() {
            received += data.len() as u64;
        }
    }
    Ok((status, received))
}

fn head_len(h: &HeaderMap) -> u64 {
    h.iter()
        .map(|(k, v)| (k.as_str().len() + v.len() + 4) as u64)
        .sum::<u64>()
        + 2
}

/// The request every user sends, built once.
#[derive(Debug, Clone)]
pub struct RequestTemplate {
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
    /// Credential values cycled over requests (empty: none), sent as `token_header`.
    tokens: Arc<[HeaderValue]>,
    token_header: HeaderName,
    sent_estimate: u64,
    /// HTTP/1.1 wire form around the token line: request line and headers, then the
    /// framing header, the blank line and the body.
    h1_head: Bytes,
    h1_tail: Bytes,
    /// `{seq}` in the URL: each request's own value, and where it goes.
    sequence: Option<Placed>,
}

/// A [`Sequence`]'s place in the request: a byte offset in `h1_head`, and the request
/// URI's text split where the value goes (for hyper's clients).
#[derive(Debug, Clone)]
struct Placed {
    values: Sequence,
    head_at: usize,
    uri_text: Arc<str>,
    uri_at: usize,
}

impl RequestTemplate {
    /// `uri` is absolute; HTTP/1 requests carry its path in origin form and a Host header.
    pub fn new(
        method: Method,
        uri: &Uri,
        http2: bool,
        headers: Vec<(HeaderName, HeaderValue)>,
        body: Bytes,
        tokens: Vec<HeaderValue>,
    ) -> Result<Self, BenchError> {
        let mut map = HeaderMap::new();
        let path = uri.path_and_query().map(|p| p.as_str()).unwrap_or("/");
        let req_uri = if http2 {
            uri.clone()
        } else {
            let authority = uri
                .authority()
                .ok_or_else(|| BenchError::Usage(format!("URL has no host: {uri}")))?;
            map.insert(
                HOST,
                HeaderValue::from_str(authority.as_str())
                    .map_err(|e| BenchError::Usage(format!("bad host: {e}")))?,
            );
            path.parse()
                .map_err(|e| BenchError::Usage(format!("bad path {path}: {e}")))?
        };
        if !body.is_empty() {
            map.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        }
        for (k, v) in headers {
            map.insert(k, v);
        }
        let token_len = tokens.first().map(|t| t.len() as u64 + 17).unwrap_or(0);
        let sent_estimate = (method.as_str().len() + path.len() + 12) as u64
            + head_len(&map)
            + token_len
            + body.len() as u64
            + if body.is_empty() { 0 } else { 20 };
        let (h1_head, h1_tail) = h1_wire(&method, path, &map, &body);
        Ok(RequestTemplate {
            method,
            uri: req_uri,
            headers: map,
            body,
            tokens: tokens.into(),
            token_header: AUTHORIZATION,
            sent_estimate,
            h1_head,
            h1_tail,
            sequence: None,
        })
    }

    /// Every request gets a value of its own at byte `at` of the URL's path and query
    /// (where `{seq}` was: [`crate::sequence::split`]).
    pub fn with_sequence(mut self, at: usize) -> Self {
        let values = Sequence::default();
        let pq_len = self.uri.path_and_query().map_or(0, |p| p.as_str().len());
        let uri_text: Arc<str> = self.uri.to_string().into();
        self.sent_estimate += values.typical_len();
        self.sequence = Some(Placed {
            head_at: self.method.as_str().len() + 1 + at,
            uri_at: uri_text.len() - pq_len + at,
            uri_text,
            values,
        });
        self
    }

    /// Appends the `n`th request's HTTP/1.1 bytes to `out`.
    pub fn write_h1(&self, n: usize, out: &mut Vec<u8>) {
        match &self.sequence {
            Some(p) => {
                out.extend_from_slice(&self.h1_head[..p.head_at]);
                p.values.write_next(out);
                out.extend_from_slice(&self.h1_head[p.head_at..]);
            }
            None => out.extend_from_slice(&self.h1_head),
        }
        if !self.tokens.is_empty() {
            let token = &self.tokens[n % self.tokens.len()];
            out.extend_from_slice(self.token_header.as_str().as_bytes());
            out.extend_from_slice(b": ");
            out.extend_from_slice(token.as_bytes());
            out.extend_from_slice(b"\r\n");
        }
        out.extend_from_slice(&self.h1_tail);
    }

    /// Sends the tokens in `name` (e.g. `apikey`) instead of `Authorization`.
    pub fn with_token_header(mut self, name: HeaderName) -> Self {
        let old = self.token_header.as_str().len() as u64;
        if !self.tokens.is_empty() {
            self.sent_estimate = self.sent_estimate - old + name.as_str().len() as u64;
        }
        self.token_header = name;
        self
    }

    /// The `n`th request (n picks the token).
    pub fn build(&self, n: usize) -> Request<Full<Bytes>> {
        let mut req = Request::new(Full::new(self.body.clone()));
        *req.method_mut() = self.method.clone();
        *req.uri_mut() = self.uri_of_next();
        *req.headers_mut() = self.headers.clone();
        if !self.tokens.is_empty() {
            let token = self.tokens[n % self.tokens.len()].clone();
            req.headers_mut().insert(self.token_header.clone(), token);
        }
        req
    }

    /// The request URI, with the next value of its sequence if it has one.
    fn uri_of_next(&self) -> Uri {
        let Some(p) = &self.sequence else {
            return self.uri.clone();
        };
        let text = p.uri_text.as_bytes();
        let mut out = Vec::with_capacity(text.len() + 24);
        out.extend_from_slice(&text[..p.uri_at]);
        p.values.write_next(&mut out);
        out.extend_from_slice(&text[p.uri_at..]);
        // Digits and a dash inside a valid URI's path or query keep it valid.
        Uri::try_from(out).unwrap_or_else(|_| self.uri.clone())
    }

    pub fn method(&self) -> &Method {
        &self.method
    }

    /// Approximate bytes on the wire per request (HTTP/1 framing).
    pub fn sent_estimate(&self) -> u64 {
        self.sent_estimate
    }
}

/// The HTTP/1.1 request around the token line, framed as hyper frames it (a length for a
/// body, and `content-length: 0` for an empty POST, PUT or PATCH).
fn h1_wire(method: &Method, path: &str, headers: &HeaderMap, body: &Bytes) -> (Bytes, Bytes) {
    let mut head = Vec::with_capacity(256);
    for part in [method.as_str(), " ", path, " HTTP/1.1\r\n"] {
        head.extend_from_slice(part.as_bytes());
    }
    for (k, v) in headers {
        head.extend_from_slice(k.as_str().as_bytes());
        head.extend_from_slice(b": ");
        head.extend_from_slice(v.as_bytes());
        head.extend_from_slice(b"\r\n");
    }
    let mut tail = Vec::with_capacity(body.len() + 32);
    let wants_length = matches!(*method, Method::POST | Method::PUT | Method::PATCH);
    if !headers.contains_key(http::header::CONTENT_LENGTH) && (!body.is_empty() || wants_length) {
        tail.extend_from_slice(format!("content-length: {}\r\n", body.len()).as_bytes());
    }
    tail.extend_from_slice(b"\r\n");
    tail.extend_from_slice(body);
    (head.into(), tail.into())
}

/// A JSON body of exactly `n` bytes (`{"p":"aaa…"}`), or `n` letters when too short for that.
pub fn json_payload(n: usize) -> Bytes {
    if n < 8 {
        return Bytes::from(vec![b'a'; n]);
    }
    let mut v = Vec::with_capacity(n);
    v.extend_from_slice(b"{\"p\":\"");
    v.resize(n - 2, b'a');
    v.extend_from_slice(b"\"}");
    Bytes::from(v)
}

/// Fetches one access token by the OAuth2 client-credentials grant; returns the
/// `Authorization` header value (`Bearer …`).
pub async fn client_credentials(
    token_url: &Uri,
    client_id: &str,
    client_secret: &str,
    insecure: bool,
) -> Result<HeaderValue, BenchError> {
    let target = Target::resolve(token_url, false, insecure).await?;
    let local = tokio::task::LocalSet::new();
    let basic = format!(
        "Basic {}",
        base64(format!("{client_id}:{client_secret}").as_bytes())
    );
    let basic = HeaderValue::from_str(&basic)
        .map_err(|e| BenchError::Usage(format!("bad client credentials: {e}")))?;
    let template = RequestTemplate::new(
        Method::POST,
        token_url,
        false,
        vec![(
            CONTENT_TYPE,
            HeaderValue::from_static("application/x-www-form-urlencoded"),
        )],
        Bytes::from_static(b"grant_type=client_credentials"),
        vec![basic],
    )?;
    let body = local
        .run_until(async {
            let io = target
                .stream()
                .await
                .map_err(|e| BenchError::Connect(format!("token endpoint: {e}")))?;
            let (mut sender, conn) = http1::handshake(TokioIo::new(io))
                .await
                .map_err(|e| BenchError::Connect(format!("token endpoint: {e}")))?;
            tokio::task::spawn_local(conn);
            let resp = sender
                .send_request(template.build(0))
                .await
                .map_err(|e| BenchError::Connect(format!("token endpoint: {e}")))?;
            let status = resp.status();
            let body = resp
                .into_body()
                .collect()
                .await
                .map_err(|e| BenchError::Connect(format!("token endpoint: {e}")))?
                .to_bytes();
            if !status.is_success() {
                return Err(BenchError::Token(format!(
                    "token endpoint answered {status}: {}",
                    String::from_utf8_lossy(&body)
                )));
            }
            Ok(body)
        })
        .await?;
    let json: serde_json::Value = serde_json::from_slice(&body)
        .map_err(|e| BenchError::Token(format!("token response is not JSON: {e}")))?;
    let token = json
        .get("access_token")
        .and_then(|t| t.as_str())
        .ok_or_else(|| BenchError::Token("token response has no access_token".into()))?;
    bearer(token)
}

/// `Bearer TOKEN` as a header value.
pub fn bearer(token: &str) -> Result<HeaderValue, BenchError> {
    HeaderValue::from_str(&format!("Bearer {}", token.trim()))
        .map_err(|_| BenchError::Token("token has characters not allowed in a header".into()))
}

fn base64(input: &[u8]) -> String {
    const T: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(input.len().div_ceil(3) * 4);
    for chunk in input.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(T[((n >> (18 - 6 * i)) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_matches_rfc4648_vectors() {
        for (i, o) in [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg=="),
        ] {
            assert_eq!(base64(i.as_bytes()), o);
        }
    }

    #[test]
    fn json_payload_has_exact_size_and_is_json() {
        for n in [8, 50, 1024, 102_400] {
            let p = json_payload(n);
            assert_eq!(p.len(), n);
            assert!(serde_json::from_slice::<serde_json::Value>(&p).is_ok());
        }
        assert_eq!(json_payload(3).len(), 3);
    }

    #[test]
    fn template_uses_origin_form_and_host_for_http1_and_cycles_tokens() {
        let uri: Uri = "http://example.test:8080/a/b?x=1".parse().expect("uri");
        let tokens = vec![bearer("t1").expect("t1"), bearer("t2").expect("t2")];
        let t = RequestTemplate::new(Method::GET, &uri, false, vec![], Bytes::new(), tokens)
            .expect("template");
        let r0 = t.build(0);
        assert_eq!(r0.uri(), "/a/b?x=1");
        assert_eq!(r0.headers()[HOST], "example.test:8080");
        assert_eq!(r0.headers()[AUTHORIZATION], "Bearer t1");
        assert_eq!(t.build(1).headers()[AUTHORIZATION], "Bearer t2");
        assert_eq!(t.build(2).headers()[AUTHORIZATION], "Bearer t1");
    }
}
