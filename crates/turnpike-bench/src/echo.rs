//! `turnpike echo`: the seeds' back end. Echoes any request body (streamed, never buffered)
//! and its Content-Type for any method and path, after an optional non-blocking delay, or
//! serves a fixed-size body to bodiless requests. Serves HTTP/1.1 (keep-alive) and h2c on
//! one port. Owns nothing else: no routing, no state besides its [`EchoConfig`].
//!
//! Per-request controls in the query string (they override the server's settings, so one
//! back end can serve many test cases):
//! - `delay_ms=N`: wait N ms before answering;
//! - `status=NNN`: answer with this status code (100-999 rejected with 400);
//! - `size=N`: a bodiless request gets N bytes (capped at 64 MiB).
//!
//! Unparseable control values are answered with 400 and a plain-text reason.
//!
//! WebSockets (`echo_ws.rs`): frames echoed on any path ending in `/ws`; with
//! `--graphql`, subscriptions over `graphql-transport-ws` and `graphql-ws`.
//!
//! With `--llm` it is a deterministic LLM provider instead (`echo_llm/`): the OpenAI and
//! Anthropic APIs, streamed or not, on the same listener.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::{header, HeaderValue, Request, Response, StatusCode};
use http_body_util::{Either, Full};
use hyper::body::{Body as _, Incoming};
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use tokio::net::TcpListener;

/// Largest body a `size=` query may ask for.
const MAX_QUERY_SIZE: usize = 64 << 20;

/// Command-line arguments of `turnpike echo`.
#[derive(Debug, Clone, clap::Args)]
pub struct EchoArgs {
    /// Port to listen on (0 picks a free one and prints it).
    #[arg(long, default_value_t = 9000)]
    pub port: u16,
    /// Address to bind.
    #[arg(long, default_value = "127.0.0.1")]
    pub bind: std::net::IpAddr,
    /// Back-end delay ("sleep time") before each answer, in milliseconds.
    #[arg(long, default_value_t = 0)]
    pub delay_ms: u64,
    /// Body size served to bodiless requests (GET), in bytes.
    #[arg(long)]
    pub size: Option<usize>,
    /// Worker threads of the runtime (default: one per core).
    #[arg(long)]
    pub threads: Option<usize>,
    /// Serve only HTTP/2 with prior knowledge (h2c); by default HTTP/1.1 and h2c are both
    /// served on the same port.
    #[arg(long)]
    pub h2c: bool,
    /// Also serve the SOAP echo service (document/literal, SOAP 1.1 and 1.2) to requests
    /// with a SOAP Content-Type, and its WSDL at `?wsdl`.
    #[arg(long)]
    pub soap: bool,
    /// Answer GraphQL instead of echoing: WSO2's canned Star Wars responses for a
    /// `query-number: N` header, otherwise data shaped to the query.
    #[arg(long)]
    pub graphql: bool,
    /// Schema (SDL file) for `--graphql`; the bundled Star Wars schema by default.
    #[arg(long, requires = "graphql")]
    pub graphql_schema: Option<std::path::PathBuf>,
    /// Be a deterministic LLM provider instead of echoing: the OpenAI API
    /// (`/v1/chat/completions`, `/v1/completions`, `/v1/embeddings`, `/v1/models`) and
    /// Anthropic's Messages API (`/v1/messages`), streamed or not, with exact token usage.
    #[arg(long, conflicts_with_all = ["graphql", "soap"])]
    pub llm: bool,
    /// `--llm`: tokens per second of a streamed answer (0: as fast as the client reads).
    #[arg(long, default_value_t = 0.0, requires = "llm")]
    pub llm_tokens_per_second: f64,
    /// `--llm`: delay before an answer's first token, in milliseconds.
    #[arg(long, default_value_t = 0, requires = "llm")]
    pub llm_first_token_ms: u64,
    /// `--llm`: the API key clients must send (`Authorization: Bearer`, `x-api-key` or
    /// `api-key`); without it any key or none is accepted.
    #[arg(long, env = "TURNPIKE_ECHO_LLM_KEY", requires = "llm")]
    pub llm_key: Option<String>,
}

/// What the echo server does; shared read-only by every connection.
#[derive(Debug, Clone, Default)]
pub struct EchoConfig {
    /// Delay before each answer (tokio timer, no thread blocked).
    pub delay: Duration,
    /// Body size for bodiless requests; `None` answers them with an empty body.
    pub size: Option<usize>,
    /// Serve only HTTP/2 (prior knowledge).
    pub h2c_only: bool,
    /// Serve the SOAP echo service too (see [`crate::echo_soap`]).
    pub soap: bool,
    /// Answer GraphQL requests (`turnpike echo --graphql`).
    pub graphql: Option<Arc<crate::graphql_echo::GraphqlBackend>>,
    /// Be an LLM provider (`turnpike echo --llm`, see [`crate::echo_llm`]).
    pub llm: Option<Arc<crate::echo_llm::LlmConfig>>,
}

impl From<&EchoArgs> for EchoConfig {
    fn from(args: &EchoArgs) -> Self {
        EchoConfig {
            delay: Duration::from_millis(args.delay_ms),
            size: args.size,
            h2c_only: args.h2c,
            soap: args.soap,
            graphql: None,
            llm: args.llm.then(|| {
                Arc::new(crate::echo_llm::LlmConfig {
                    tokens_per_second: args.llm_tokens_per_second,
                    first_token: Duration::from_millis(args.llm_first_token_ms),
                    key: args.llm_key.clone(),
                })
            }),
        }
    }
}

/// Runs `turnpike echo` until the process is stopped.
pub async fn run(args: EchoArgs) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let listener = TcpListener::bind((args.bind, args.port)).await?;
    let addr = listener.local_addr()?;
    // Printed on stdout so scripts (and the matrix) can read the port when --port 0.
    let mut cfg = EchoConfig::from(&args);
    if args.graphql {
        let sdl = match &args.graphql_schema {
            Some(path) => Some(std::fs::read_to_string(path)?),
            None => None,
        };
        cfg.graphql = Some(Arc::new(crate::graphql_echo::GraphqlBackend::new(
            sdl.as_deref(),
        )?));
    }
    println!("echo listening on http://{addr}");
    tracing::info!(%addr, delay_ms = args.delay_ms, size = ?args.size, graphql = args.graphql, llm = args.llm, "echo back end started");
    serve(listener, cfg).await?;
    Ok(())
}

/// Binds 127.0.0.1:0, serves in a background task, and returns the bound address.
pub async fn spawn(cfg: EchoConfig) -> std::io::Result<SocketAddr> {
    let listener = TcpListener::bind(("127.0.0.1", 0)).await?;
    let addr = listener.local_addr()?;
    tokio::spawn(async move {
        if let Err(e) = serve(listener, cfg).await {
            tracing::error!(error = %e, "echo server stopped");
        }
    });
    Ok(addr)
}

/// Serves `echo --llm` on 127.0.0.1:0 in a background task; returns the address.
pub async fn spawn_llm(cfg: crate::echo_llm::LlmConfig) -> std::io::Result<SocketAddr> {
    spawn(EchoConfig {
        llm: Some(Arc::new(cfg)),
        ..EchoConfig::default()
    })
    .await
}

/// Serves connections accepted on `listener` forever.
pub async fn serve(listener: TcpListener, cfg: EchoConfig) -> std::io::Result<()> {
    let mut builder = auto::Builder::new(TokioExecutor::new());
    builder.http1().keep_alive(true);
    builder.http2().max_concurrent_streams(10_000);
    if cfg.h2c_only {
        builder = builder.http2_only();
    }
    let builder = Arc::new(builder);
    if let Some(llm) = cfg.llm.clone() {
        let state = Arc::new(crate::echo_llm::State::new(llm));
        return accept(listener, builder, move |req| {
            crate::echo_llm::handle(req, state.clone())
        })
        .await;
    }
    let state = Arc::new(State::new(cfg));
    accept(listener, builder, move |req| handle(req, state.clone())).await
}

/// Accepts connections forever, each served by `svc` on its own task.
async fn accept<F, Fut, B>(
    listener: TcpListener,
    builder: Arc<auto::Builder<TokioExecutor>>,
    svc: F,
) -> std::io::Result<()>
where
    F: Fn(Request<Incoming>) -> Fut + Clone + Send + Sync + 'static,
    Fut: std::future::Future<Output = Result<Response<B>, Infallible>> + Send + 'static,
    B: hyper::body::Body<Data = Bytes> + Send + 'static,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    loop {
        let (stream, _) = match listener.accept().await {
            Ok(conn) => conn,
            Err(e) => {
                // EMFILE and friends: back off instead of spinning or dying.
                tracing::warn!(error = %e, "accept failed");
                tokio::time::sleep(Duration::from_millis(10)).await;
                continue;
            }
        };
        let _ = stream.set_nodelay(true);
        let builder = builder.clone();
        let svc = svc.clone();
        tokio::spawn(async move {
            // Client resets and closes are normal in load tests: nothing to report.
            let _ = builder
                .serve_connection_with_upgrades(TokioIo::new(stream), service_fn(svc))
                .await;
        });
    }
}

struct State {
    cfg: EchoConfig,
    /// The `--size` body, built once and cloned (a reference count) per request.
    fixed: Option<Bytes>,
}

impl State {
    fn new(cfg: EchoConfig) -> Self {
        let fixed = cfg.size.map(payload);
        State { cfg, fixed }
    }
}

/// A body of `n` printable bytes.
fn payload(n: usize) -> Bytes {
    Bytes::from((0..n).map(|i| b'a' + (i % 26) as u8).collect::<Vec<u8>>())
}

type EchoBody = Either<Incoming, Full<Bytes>>;

/// Per-request overrides read from the query string.
#[derive(Debug, Default, PartialEq)]
struct Controls {
    delay: Option<Duration>,
    status: Option<StatusCode>,
    size: Option<usize>,
}

fn parse_controls(query: Option<&str>) -> Result<Controls, String> {
    let mut c = Controls::default();
    let Some(query) = query else { return Ok(c) };
    for pair in query.split('&') {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        match k {
            "delay_ms" => {
                let ms: u64 = v
                    .parse()
                    .map_err(|_| format!("delay_ms: not a number: {v:?}"))?;
                c.delay = Some(Duration::from_millis(ms));
            }
            "status" => {
                let code: u16 = v
                    .parse()
                    .map_err(|_| format!("status: not a number: {v:?}"))?;
                let status = StatusCode::from_u16(code)
                    .ok()
                    .filter(|s| !s.is_informational())
                    .ok_or_else(|| format!("status: not a final status code: {code}"))?;
                c.status = Some(status);
            }
            "size" => {
                let n: usize = v
                    .parse()
                    .map_err(|_| format!("size: not a number: {v:?}"))?;
                if n > MAX_QUERY_SIZE {
                    return Err(format!("size: {n} is over the limit of {MAX_QUERY_SIZE}"));
                }
                c.size = Some(n);
            }
            _ => {}
        }
    }
    Ok(c)
}

async fn handle(
    req: Request<Incoming>,
    state: Arc<State>,
) -> Result<Response<EchoBody>, Infallible> {
    if crate::echo_ws::is_upgrade(&req) {
        let resp = crate::echo_ws::upgrade(req, state.cfg.graphql.as_ref());
        return Ok(resp.map(|b| Either::Right(Full::new(b))));
    }
    let controls = match parse_controls(req.uri().query()) {
        Ok(c) => c,
        Err(msg) => {
            let mut resp = Response::new(Either::Right(Full::new(Bytes::from(msg))));
            *resp.status_mut() = StatusCode::BAD_REQUEST;
            return Ok(resp);
        }
    };
    let delay = controls.delay.unwrap_or(state.cfg.delay);
    if !delay.is_zero() {
        tokio::time::sleep(delay).await;
    }
    if let Some(gql) = &state.cfg.graphql {
        let mut resp = graphql(gql, req).await;
        if let Some(status) = controls.status {
            *resp.status_mut() = status;
        }
        return Ok(resp);
    }
    if state.cfg.soap {
        if let Some(version) = crate::echo_soap::version_of(req.headers().get(header::CONTENT_TYPE))
        {
            let resp = crate::echo_soap::respond(req, version).await;
            return Ok(resp.map(|b| Either::Right(Full::new(b))));
        }
        if crate::echo_soap::wants_wsdl(&req) {
            let resp = crate::echo_soap::wsdl_response(&req);
            return Ok(resp.map(|b| Either::Right(Full::new(b))));
        }
    }
    Ok(plain(req, controls, &state))
}

/// The plain echo: the request body back, or a fixed-size body to bodiless requests.
fn plain(req: Request<Incoming>, controls: Controls, state: &State) -> Response<EchoBody> {
    let content_type = req.headers().get(header::CONTENT_TYPE).cloned();
    let body = req.into_body();
    let mut resp = if body.is_end_stream() {
        let fixed = match controls.size {
            Some(n) => payload(n),
            None => state.fixed.clone().unwrap_or_default(),
        };
        let mut resp = Response::new(Either::Right(Full::new(fixed)));
        let ct = content_type.unwrap_or(HeaderValue::from_static("text/plain"));
        resp.headers_mut().insert(header::CONTENT_TYPE, ct);
        resp
    } else {
        let mut resp = Response::new(Either::Left(body));
        if let Some(ct) = content_type {
            resp.headers_mut().insert(header::CONTENT_TYPE, ct);
        }
        resp
    };
    if let Some(status) = controls.status {
        *resp.status_mut() = status;
    }
    resp
}

/// Largest GraphQL request body read.
const MAX_GRAPHQL_BODY: usize = 1 << 20;

async fn graphql(
    gql: &crate::graphql_echo::GraphqlBackend,
    req: Request<Incoming>,
) -> Response<EchoBody> {
    use http_body_util::BodyExt;
    let (parts, body) = req.into_parts();
    let content_type = parts.headers.get(header::CONTENT_TYPE).cloned();
    let canned = parts
        .headers
        .get("query-number")
        .and_then(|n| gql.canned(n.as_bytes()));
    let bytes = match http_body_util::Limited::new(body, MAX_GRAPHQL_BODY)
        .collect()
        .await
    {
        Ok(b) => b.to_bytes(),
        Err(_) => {
            let mut resp = Response::new(Either::Right(Full::new(Bytes::from_static(
                b"request body unreadable or over 1 MiB",
            ))));
            *resp.status_mut() = StatusCode::BAD_REQUEST;
            return resp;
        }
    };
    let answer = match canned {
        Some(c) => c,
        None => gql.answer(
            parts.method.as_str(),
            content_type.as_ref().and_then(|c| c.to_str().ok()),
            parts.uri.query(),
            &bytes,
        ),
    };
    let mut resp = Response::new(Either::Right(Full::new(answer)));
    let ct = content_type.unwrap_or(HeaderValue::from_static("application/json"));
    resp.headers_mut().insert(header::CONTENT_TYPE, ct);
    resp
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn controls_parse_known_keys_and_ignore_others() {
        let c = parse_controls(Some("delay_ms=30&x=1&status=503&size=10")).expect("valid");
        assert_eq!(
            c,
            Controls {
                delay: Some(Duration::from_millis(30)),
                status: Some(StatusCode::SERVICE_UNAVAILABLE),
                size: Some(10)
            }
        );
        assert_eq!(parse_controls(None).expect("none"), Controls::default());
    }

    #[test]
    fn controls_refuse_bad_values() {
        assert!(parse_controls(Some("delay_ms=abc")).is_err());
        assert!(parse_controls(Some("status=100")).is_err());
        assert!(parse_controls(Some("status=1000")).is_err());
        assert!(parse_controls(Some("size=999999999999")).is_err());
    }

    #[test]
    fn payload_has_requested_length() {
        assert_eq!(payload(0).len(), 0);
        assert_eq!(payload(1000).len(), 1000);
    }
}
