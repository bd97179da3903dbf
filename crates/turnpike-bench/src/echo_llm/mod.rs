//! `turnpike echo --llm`: a deterministic LLM provider for tests and the bench kit, so
//! neither needs a real one. Speaks the OpenAI API (`POST /v1/chat/completions`,
//! `/v1/completions`, `/v1/embeddings`, `GET /v1/models[/{id}]`) and the Anthropic Messages
//! API (`POST /v1/messages`, `/v1/messages/count_tokens`), matched by path suffix so the
//! `/v1` prefix, a base path or Azure's `/openai/deployments/{model}/...` all work.
//! Answers are derived from the prompt (`answer.rs`), usage counts are exact for what is
//! sent (`turnpike-tokens`), streams are paced (`paced.rs`).
//!
//! Per-request controls in headers (they override the server's flags):
//! - `x-echo-error: NNN`, or the model name `error-NNN`: fail with that status in the
//!   front's error shape (`retry-after: 1` on 429);
//! - `x-echo-first-token-ms: N`, `x-echo-tokens-per-second: F`: the stream's pace;
//! - `x-echo-cached-tokens: N`: report N prompt tokens as read from a provider cache;
//! - `x-echo-usage: omit`: no usage in OpenAI answers (to test a gateway's own count).
//!
//! `turnpike_bench::echo::spawn_llm` serves it on 127.0.0.1:0 for tests.
//!
//! `GET /_echo/stats` counts requests and streams (started, finished, cancelled by the
//! client going away); `GET /_echo/last` shows the last request (method, path, headers,
//! JSON body), for tests of what a gateway sent upstream.

mod answer;
mod anthropic;
mod bedrock;
mod embeddings;
mod gemini;
mod openai;
mod paced;
mod parse;

use std::convert::Infallible;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use http::{header, HeaderMap, HeaderValue, Method, Request, Response, StatusCode};
use http_body_util::{BodyExt, Either, Full, Limited};
use hyper::body::Incoming;
use serde_json::{json, Value};

use self::answer::Call;
pub(crate) use self::paced::PacedBody;
use self::paced::{Pace, StreamStats};
use self::parse::Failure;

/// Largest request body read.
const MAX_BODY: usize = 8 << 20;

/// What `echo --llm` does; every request may override the pace with headers.
#[derive(Debug, Clone, Default)]
pub struct LlmConfig {
    /// Streaming pace, tokens per second; 0 streams as fast as the connection takes them.
    pub tokens_per_second: f64,
    /// Delay before the first token (and before a non-streamed answer's generation).
    pub first_token: Duration,
    /// The API key required (Bearer, `x-api-key` or `api-key`); none: no check.
    pub key: Option<String>,
}

/// Shared by every connection of one server.
pub(crate) struct State {
    cfg: Arc<LlmConfig>,
    seq: AtomicU64,
    stats: Arc<StreamStats>,
    last: Mutex<Option<Arc<Value>>>,
}

impl State {
    pub(crate) fn new(cfg: Arc<LlmConfig>) -> State {
        State {
            cfg,
            seq: AtomicU64::new(0),
            stats: Arc::default(),
            last: Mutex::new(None),
        }
    }
}

pub(crate) type LlmBody = Either<Full<Bytes>, PacedBody>;

/// Which API a path belongs to: it decides the error shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Front {
    OpenAi,
    Anthropic,
    Gemini,
    Bedrock,
}

#[derive(Debug, PartialEq, Eq)]
enum Route {
    Chat,
    Completions,
    Embeddings,
    Models,
    Model(String),
    Messages,
    CountTokens,
    /// Gemini's `models/{m}:generateContent` (`stream`: `:streamGenerateContent`).
    Gemini {
        stream: bool,
    },
    /// Bedrock's `/model/{id}/converse` (`stream`: `/converse-stream`).
    Converse {
        stream: bool,
    },
    /// Gemini's `models/{m}:embedContent` (`batch`: `:batchEmbedContents`).
    GeminiEmbed {
        batch: bool,
    },
    /// Bedrock's `InvokeModel` (`/model/{id}/invoke`): embeddings models only.
    Invoke,
    Stats,
    Last,
    NotFound,
}

fn route(method: &Method, path: &str) -> (Front, Route) {
    let path = path.trim_end_matches('/');
    let post = method == Method::POST;
    let get = method == Method::GET;
    let r = match () {
        _ if get && path == "/_echo/stats" => Route::Stats,
        _ if get && path == "/_echo/last" => Route::Last,
        _ if post && path.ends_with(":generateContent") => Route::Gemini { stream: false },
        _ if post && path.ends_with(":streamGenerateContent") => Route::Gemini { stream: true },
        _ if post && path.ends_with(":embedContent") => Route::GeminiEmbed { batch: false },
        _ if post && path.ends_with(":batchEmbedContents") => Route::GeminiEmbed { batch: true },
        _ if post && path.ends_with("/invoke") => Route::Invoke,
        _ if post && path.ends_with("/converse") => Route::Converse { stream: false },
        _ if post && path.ends_with("/converse-stream") => Route::Converse { stream: true },
        _ if post && path.ends_with("/messages/count_tokens") => Route::CountTokens,
        _ if post && path.ends_with("/messages") => Route::Messages,
        _ if post && path.ends_with("/chat/completions") => Route::Chat,
        _ if post && path.ends_with("/completions") => Route::Completions,
        _ if post && path.ends_with("/embeddings") => Route::Embeddings,
        _ if get && path.ends_with("/models") => Route::Models,
        _ if get && path.contains("/models/") => match path.rsplit_once("/models/") {
            Some((_, id)) => Route::Model(id.to_owned()),
            None => Route::NotFound,
        },
        _ => Route::NotFound,
    };
    let front = match r {
        Route::Messages | Route::CountTokens => Front::Anthropic,
        Route::Gemini { .. } | Route::GeminiEmbed { .. } => Front::Gemini,
        Route::Converse { .. } | Route::Invoke => Front::Bedrock,
        _ => Front::OpenAi,
    };
    (front, r)
}

/// Per-request overrides read from `x-echo-*` headers.
#[derive(Debug)]
struct Controls {
    error: Option<StatusCode>,
    pace: Pace,
    cached: u64,
    omit_usage: bool,
}

fn header_num<T: std::str::FromStr>(h: &HeaderMap, name: &str) -> Result<Option<T>, Failure> {
    match h.get(name) {
        None => Ok(None),
        Some(v) => v
            .to_str()
            .ok()
            .and_then(|s| s.trim().parse().ok())
            .map(Some)
            .ok_or_else(|| Failure::bad(name, "not a number")),
    }
}

fn error_status(code: u16, what: &str) -> Result<StatusCode, Failure> {
    StatusCode::from_u16(code)
        .ok()
        .filter(|s| s.is_client_error() || s.is_server_error())
        .ok_or_else(|| Failure::bad(what, format!("{code} is not an error status (400-599)")))
}

fn controls(h: &HeaderMap, cfg: &LlmConfig) -> Result<Controls, Failure> {
    let error = match header_num::<u16>(h, "x-echo-error")? {
        Some(code) => Some(error_status(code, "x-echo-error")?),
        None => None,
    };
    let first = header_num::<u64>(h, "x-echo-first-token-ms")?.map(Duration::from_millis);
    let tps = header_num::<f64>(h, "x-echo-tokens-per-second")?;
    Ok(Controls {
        error,
        pace: Pace::new(
            first.unwrap_or(cfg.first_token),
            tps.unwrap_or(cfg.tokens_per_second),
        ),
        cached: header_num(h, "x-echo-cached-tokens")?.unwrap_or(0),
        omit_usage: h.get("x-echo-usage").is_some_and(|v| v == "omit"),
    })
}

fn authorized(h: &HeaderMap, key: &str) -> bool {
    let bearer = h
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "));
    let plain = |name: &str| h.get(name).and_then(|v| v.to_str().ok());
    // A SigV4-signed request: its credential's access key id.
    let signed = h
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("AWS4-HMAC-SHA256 Credential="))
        .and_then(|v| v.split('/').next());
    [
        bearer,
        plain("x-api-key"),
        plain("api-key"),
        plain("x-goog-api-key"),
        signed,
    ]
    .into_iter()
    .flatten()
    .any(|k| k == key)
}

pub(crate) async fn handle(
    req: Request<Incoming>,
    state: Arc<State>,
) -> Result<Response<LlmBody>, Infallible> {
    let (front, route) = route(req.method(), req.uri().path());
    let id = format!("echo{:012}", state.seq.fetch_add(1, Ordering::Relaxed));
    let resp = match serve(req, &state, route, &id).await {
        Ok(resp) => resp,
        Err(f) => failure(front, &f, &id),
    };
    Ok(resp)
}

async fn serve(
    req: Request<Incoming>,
    state: &State,
    route: Route,
    id: &str,
) -> Result<Response<LlmBody>, Failure> {
    if let Some(answer) = test_route(&req, state, &route, id) {
        return answer;
    }
    if let Some(key) = &state.cfg.key {
        if !authorized(req.headers(), key) {
            let msg = "Incorrect API key provided (echo --llm-key)";
            return Err(Failure::status(StatusCode::UNAUTHORIZED, msg));
        }
    }
    let controls = controls(req.headers(), &state.cfg)?;
    if let Some(status) = controls.error {
        return Err(Failure::status(
            status,
            format!("error {} on demand (x-echo-error)", status.as_u16()),
        ));
    }
    match &route {
        Route::Models => return Ok(json_response(StatusCode::OK, &openai::models_json(), id)),
        Route::Model(m) => return Ok(json_response(StatusCode::OK, &openai::model_json(m), id)),
        _ => {}
    }
    let (path, body) = read_json(req, state).await?;
    let model = model_of(&body, &path)?;
    if let Some(code) = model
        .strip_prefix("error-")
        .and_then(|c| c.parse::<u16>().ok())
    {
        let status = error_status(code, "model")?;
        return Err(Failure::status(
            status,
            format!("error {code} on demand (model {model})"),
        ));
    }
    let call = Call {
        id: id.to_owned(),
        created: SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs()),
        model,
        cached: controls.cached,
        omit_usage: controls.omit_usage,
    };
    generate(route, &body, call, controls.pace, state).await
}

/// The routes that need no key: the test endpoints, and a 404.
fn test_route(
    req: &Request<Incoming>,
    state: &State,
    route: &Route,
    id: &str,
) -> Option<Result<Response<LlmBody>, Failure>> {
    match route {
        Route::Stats => Some(Ok(json_response(StatusCode::OK, &stats(state), id))),
        Route::Last => {
            let last = state.last.lock().map(|l| l.clone()).unwrap_or_default();
            let last = last.map_or(Value::Null, |v| (*v).clone());
            Some(Ok(json_response(StatusCode::OK, &last, id)))
        }
        Route::NotFound => {
            let msg = format!("Unknown request URL: {} {}", req.method(), req.uri().path());
            Some(Err(Failure::status(StatusCode::NOT_FOUND, msg)))
        }
        _ => None,
    }
}

/// Answers a generation route.
async fn generate(
    route: Route,
    body: &Value,
    call: Call,
    pace: Pace,
    state: &State,
) -> Result<Response<LlmBody>, Failure> {
    if let Route::Gemini { stream } | Route::Converse { stream } = route {
        return foreign(&route, body, call, stream, pace, state).await;
    }
    let model = call.model.clone();
    let (front, prompt, stream, include_usage) = match route {
        Route::Embeddings => {
            let out = embeddings::embeddings(body, &model)?;
            return Ok(json_response(StatusCode::OK, &out, &call.id));
        }
        Route::GeminiEmbed { batch } => {
            let out = embeddings::gemini(body, &model, batch)?;
            return Ok(json_response(StatusCode::OK, &out, &call.id));
        }
        Route::Invoke => {
            let out = embeddings::bedrock(body, &model)?;
            return Ok(json_response(StatusCode::OK, &out, &call.id));
        }
        Route::CountTokens => {
            let r = anthropic::parse(body, model, true)?;
            return Ok(json_response(
                StatusCode::OK,
                &anthropic::count_json(&r.prompt),
                &call.id,
            ));
        }
        Route::Messages => {
            let r = anthropic::parse(body, model, false)?;
            (Front::Anthropic, r.prompt, r.stream, true)
        }
        Route::Completions => {
            let r = openai::parse_completion(body, model)?;
            (Front::OpenAi, r.prompt, r.stream, r.include_usage)
        }
        _ => {
            let r = openai::parse_chat(body, model)?;
            (Front::OpenAi, r.prompt, r.stream, r.include_usage)
        }
    };
    let a = answer::answer(&prompt);
    let chat = route == Route::Chat;
    if stream {
        let events = match front {
            Front::Anthropic => anthropic::message_events(&call, &a),
            Front::OpenAi if chat => openai::chat_events(&call, &a, include_usage),
            _ => openai::completion_events(&call, &a, include_usage),
        };
        let body = PacedBody::new(events, pace, state.stats.clone());
        return Ok(sse_response(body, &call.id));
    }
    tokio::time::sleep(pace.due(a.completion_tokens)).await;
    let out = match front {
        Front::Anthropic => anthropic::message_json(&call, &a),
        Front::OpenAi if chat => openai::chat_json(&call, &a),
        _ => openai::completion_json(&call, &a),
    };
    Ok(json_response(StatusCode::OK, &out, &call.id))
}

/// A Gemini or Converse call: parsed, answered whole or streamed in its own framing.
async fn foreign(
    route: &Route,
    body: &Value,
    call: Call,
    stream: bool,
    pace: Pace,
    state: &State,
) -> Result<Response<LlmBody>, Failure> {
    let gemini = matches!(route, Route::Gemini { .. });
    let prompt = if gemini {
        gemini::parse(body, call.model.clone())?
    } else {
        bedrock::parse(body, call.model.clone())?
    };
    let a = answer::answer(&prompt);
    if stream {
        let (events, kind) = if gemini {
            (
                gemini::answer_events(&call, &a),
                "text/event-stream; charset=utf-8",
            )
        } else {
            (
                bedrock::answer_frames(&call, &a),
                "application/vnd.amazon.eventstream",
            )
        };
        let body = PacedBody::new(events, pace, state.stats.clone());
        let mut resp = sse_response(body, &call.id);
        resp.headers_mut()
            .insert(header::CONTENT_TYPE, HeaderValue::from_static(kind));
        return Ok(resp);
    }
    tokio::time::sleep(pace.due(a.completion_tokens)).await;
    let out = if gemini {
        gemini::answer_json(&call, &a)
    } else {
        bedrock::answer_json(&call, &a)
    };
    Ok(json_response(StatusCode::OK, &out, &call.id))
}

/// Reads the body (capped) as JSON and records the request for `/_echo/last`.
async fn read_json(req: Request<Incoming>, state: &State) -> Result<(String, Value), Failure> {
    let (parts, body) = req.into_parts();
    let bytes = match Limited::new(body, MAX_BODY).collect().await {
        Ok(b) => b.to_bytes(),
        Err(_) => {
            let msg = format!("request body unreadable or over {MAX_BODY} bytes");
            return Err(Failure::status(StatusCode::PAYLOAD_TOO_LARGE, msg));
        }
    };
    let body: Value = serde_json::from_slice(&bytes)
        .map_err(|e| Failure::status(StatusCode::BAD_REQUEST, format!("invalid JSON body: {e}")))?;
    if !body.is_object() {
        return Err(Failure::status(
            StatusCode::BAD_REQUEST,
            "the body must be a JSON object",
        ));
    }
    let headers: serde_json::Map<String, Value> = parts
        .headers
        .iter()
        .map(|(k, v)| {
            (
                k.as_str().to_owned(),
                json!(String::from_utf8_lossy(v.as_bytes())),
            )
        })
        .collect();
    let path = parts.uri.path().to_owned();
    let record = json!({"method": parts.method.as_str(), "path": path, "query": parts.uri.query(),
                        "headers": headers, "body": body});
    if let Ok(mut last) = state.last.lock() {
        *last = Some(Arc::new(record));
    }
    Ok((path, body))
}

/// The body's `model`, or the one the path names: an Azure deployment's, Gemini's
/// `models/{m}:...`, Bedrock's `/model/{id}/...` (`%3A` read as `:`).
fn model_of(body: &Value, path: &str) -> Result<String, Failure> {
    if let Some(m) = body.get("model").filter(|m| !m.is_null()) {
        return match m.as_str() {
            Some(s) if !s.is_empty() => Ok(s.to_owned()),
            _ => Err(Failure::bad("model", "must be a non-empty string")),
        };
    }
    let deployment = path
        .split_once("/deployments/")
        .and_then(|(_, rest)| rest.split('/').next());
    let gemini = path
        .rsplit_once("/models/")
        .and_then(|(_, rest)| rest.split(':').next());
    let bedrock = path
        .split_once("/model/")
        .and_then(|(_, rest)| rest.split('/').next())
        .map(|m| m.replace("%3A", ":").replace("%3a", ":"));
    deployment
        .or(gemini)
        .map(str::to_owned)
        .or(bedrock)
        .filter(|d| !d.is_empty())
        .ok_or_else(|| Failure::bad("model", "Field required"))
}

fn stats(state: &State) -> Value {
    let s = &state.stats;
    json!({
        "requests": state.seq.load(Ordering::Relaxed),
        "streams": {
            "started": s.started.load(Ordering::Relaxed),
            "finished": s.finished.load(Ordering::Relaxed),
            "cancelled": s.cancelled.load(Ordering::Relaxed),
        }
    })
}

fn with_ids(mut resp: Response<LlmBody>, id: &str) -> Response<LlmBody> {
    if let Ok(v) = HeaderValue::from_str(&format!("req_{id}")) {
        resp.headers_mut().insert("x-request-id", v.clone());
        resp.headers_mut().insert("request-id", v);
    }
    resp
}

fn json_response(status: StatusCode, body: &Value, id: &str) -> Response<LlmBody> {
    let mut resp = Response::new(Either::Left(Full::new(Bytes::from(body.to_string()))));
    *resp.status_mut() = status;
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    with_ids(resp, id)
}

fn sse_response(body: PacedBody, id: &str) -> Response<LlmBody> {
    let mut resp = Response::new(Either::Right(body));
    let h = resp.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream; charset=utf-8"),
    );
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    with_ids(resp, id)
}

/// A failure in the front's own error shape.
fn failure(front: Front, f: &Failure, id: &str) -> Response<LlmBody> {
    let mut amzn = None;
    let body = match front {
        Front::OpenAi => openai::error_json(f),
        Front::Anthropic => anthropic::error_json(f, &format!("req_{id}")),
        Front::Gemini => gemini::error_json(f),
        Front::Bedrock => {
            let (b, kind) = bedrock::error_json(f);
            amzn = Some(kind);
            b
        }
    };
    let mut resp = json_response(f.status, &body, id);
    if let Some(kind) = amzn {
        resp.headers_mut()
            .insert("x-amzn-errortype", HeaderValue::from_static(kind));
    }
    if f.status == StatusCode::TOO_MANY_REQUESTS {
        resp.headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
    }
    resp
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routes_match_with_and_without_v1_and_under_a_base_path() {
        let post = Method::POST;
        for p in [
            "/v1/chat/completions",
            "/chat/completions",
            "/openai/deployments/d/chat/completions",
        ] {
            assert_eq!(route(&post, p), (Front::OpenAi, Route::Chat), "{p}");
        }
        assert_eq!(route(&post, "/v1/completions").1, Route::Completions);
        assert_eq!(
            route(&post, "/messages"),
            (Front::Anthropic, Route::Messages)
        );
        assert_eq!(
            route(&post, "/v1/messages/count_tokens").1,
            Route::CountTokens
        );
        assert_eq!(route(&Method::GET, "/v1/models").1, Route::Models);
        assert_eq!(
            route(&Method::GET, "/v1/models/gpt-4o").1,
            Route::Model("gpt-4o".into())
        );
        assert_eq!(
            route(&Method::GET, "/v1/chat/completions").1,
            Route::NotFound
        );
    }

    #[test]
    fn keys_are_read_from_each_providers_header() {
        let mut h = HeaderMap::new();
        assert!(!authorized(&h, "k"));
        h.insert("x-api-key", HeaderValue::from_static("k"));
        assert!(authorized(&h, "k"));
        let mut h = HeaderMap::new();
        h.insert(header::AUTHORIZATION, HeaderValue::from_static("Bearer k"));
        assert!(authorized(&h, "k"));
        assert!(!authorized(&h, "other"));
    }

    #[test]
    fn azure_deployments_name_the_model() {
        let m = model_of(&json!({}), "/openai/deployments/gpt-4o/chat/completions");
        assert_eq!(m.expect("model"), "gpt-4o");
        let m = model_of(
            &json!({}),
            "/v1beta/models/gemini-2.0-flash:generateContent",
        );
        assert_eq!(m.expect("model"), "gemini-2.0-flash");
        let m = model_of(&json!({}), "/model/anthropic.claude-v2%3A1/converse-stream");
        assert_eq!(m.expect("model"), "anthropic.claude-v2:1");
        assert!(model_of(&json!({}), "/v1/chat/completions").is_err());
    }
}
