//! `turnpike bench llm`: concurrent streamed LLM calls against an OpenAI-compatible
//! `/chat/completions` or an Anthropic `/messages` URL (`turnpike echo --llm` directly, or
//! an AI API through a gateway), reporting time to first token (request sent to the first
//! response body byte) and output tokens per second, so "what a gateway adds to TTFT at p99
//! under 100 concurrent streams" is one command run twice. Tokens are the provider's own
//! count (the stream's usage), not a guess from chunks.

use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use hdrhistogram::Histogram;
use http::{HeaderName, HeaderValue, Request, Uri};
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http1;
use hyper_util::rt::TokioIo;
use serde::Serialize;
use serde_json::{json, Value};

use crate::run::parse_duration;
use crate::BenchError;

/// Arguments of `turnpike bench llm`.
#[derive(Debug, Clone, clap::Args)]
pub struct LlmArgs {
    /// `http://host:port/.../chat/completions` (OpenAI) or `.../messages` (Anthropic).
    #[arg(long)]
    pub url: String,
    /// Concurrent streams, each on its own keep-alive connection.
    #[arg(long, default_value_t = 100)]
    pub streams: usize,
    /// Measurement time after the warm-up.
    #[arg(long, default_value = "10s", value_parser = parse_duration)]
    pub duration: Duration,
    /// Warm-up time whose streams are not counted.
    #[arg(long, default_value = "2s", value_parser = parse_duration)]
    pub warmup: Duration,
    /// Spread the streams' first calls evenly over this time (0: all at once). Streams
    /// of one length that start together stay in step (each burst of N calls queues
    /// behind itself); a real client population is not synchronised. Keep it under the
    /// warm-up so every stream runs in the window.
    #[arg(long, default_value = "0s", value_parser = parse_duration)]
    pub ramp: Duration,
    #[arg(long, default_value = "gpt-4o-mini")]
    pub model: String,
    /// The user message (`turnpike echo --llm` answers `lorem N` with N tokens).
    #[arg(long, default_value = "lorem 100")]
    pub prompt: String,
    #[arg(long, default_value_t = 1024)]
    pub max_tokens: u64,
    /// Sent as `Authorization: Bearer` and `x-api-key`.
    #[arg(long, env = "TURNPIKE_BENCH_LLM_KEY", hide_env_values = true)]
    pub api_key: Option<String>,
    /// Extra header, `Name: value` (repeatable).
    #[arg(long = "header", short = 'H')]
    pub headers: Vec<String>,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

/// What a run measured.
#[derive(Debug, Clone, Serialize)]
pub struct LlmResult {
    pub streams: usize,
    pub completed: u64,
    /// Streams that ended inside the window, over the window.
    pub calls_per_second: f64,
    pub errors: u64,
    pub ttft_p50_ms: f64,
    pub ttft_p90_ms: f64,
    pub ttft_p99_ms: f64,
    pub ttft_max_ms: f64,
    /// Output tokens of the window's completed streams over the window.
    pub tokens_per_second: f64,
    /// The median stream's output tokens over its time from first byte to last.
    pub stream_tokens_per_second_p50: f64,
}

/// One stream's measurements.
struct Sample {
    ttft_us: u64,
    tokens: u64,
    streaming: Duration,
}

/// The request every stream sends, built once.
struct Template {
    uri: Uri,
    body: Bytes,
    headers: Vec<(HeaderName, HeaderValue)>,
}

fn template(a: &LlmArgs) -> Result<Template, BenchError> {
    let uri: Uri = a
        .url
        .parse()
        .map_err(|e| BenchError::Usage(format!("--url: {e}")))?;
    let anthropic = uri.path().trim_end_matches('/').ends_with("/messages");
    let messages = json!([{"role": "user", "content": a.prompt}]);
    let body = if anthropic {
        json!({"model": a.model, "max_tokens": a.max_tokens, "stream": true, "messages": messages})
    } else {
        json!({"model": a.model, "max_tokens": a.max_tokens, "stream": true,
               "stream_options": {"include_usage": true}, "messages": messages})
    };
    let mut headers = vec![(
        http::header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    )];
    if anthropic {
        headers.push((
            HeaderName::from_static("anthropic-version"),
            HeaderValue::from_static("2023-06-01"),
        ));
    }
    if let Some(k) = &a.api_key {
        let bad = |e| BenchError::Usage(format!("--api-key: {e}"));
        headers.push((
            http::header::AUTHORIZATION,
            HeaderValue::from_str(&format!("Bearer {k}")).map_err(bad)?,
        ));
        headers.push((
            HeaderName::from_static("x-api-key"),
            HeaderValue::from_str(k).map_err(bad)?,
        ));
    }
    for h in &a.headers {
        let (n, v) = h
            .split_once(':')
            .ok_or_else(|| BenchError::Usage(format!("--header {h:?}: expected `Name: value`")))?;
        let n = HeaderName::try_from(n.trim())
            .map_err(|e| BenchError::Usage(format!("--header {h:?}: {e}")))?;
        let v = HeaderValue::try_from(v.trim())
            .map_err(|e| BenchError::Usage(format!("--header {h:?}: {e}")))?;
        headers.push((n, v));
    }
    Ok(Template {
        uri,
        body: Bytes::from(body.to_string()),
        headers,
    })
}

/// Output tokens reported in one SSE event's data, if any: OpenAI's usage chunk or
/// Anthropic's `message_delta`.
fn usage_tokens(data: &str) -> Option<u64> {
    let v: Value = serde_json::from_str(data).ok()?;
    v.pointer("/usage/completion_tokens")
        .or_else(|| {
            v.pointer("/usage/output_tokens")
                .filter(|_| v["type"] == "message_delta")
        })
        .and_then(Value::as_u64)
}

/// One streamed call on `sender`: its TTFT, tokens and streaming time, or `None` when it
/// failed or answered an error status.
async fn one(sender: &mut http1::SendRequest<Full<Bytes>>, t: &Template) -> Option<Sample> {
    let path = t.uri.path_and_query().map_or("/", |p| p.as_str());
    let mut req = Request::post(path).body(Full::new(t.body.clone())).ok()?;
    if let Some(host) = t.uri.authority() {
        req.headers_mut().insert(
            http::header::HOST,
            HeaderValue::from_str(host.as_str()).ok()?,
        );
    }
    req.headers_mut().extend(t.headers.iter().cloned());
    sender.ready().await.ok()?;
    let sent = Instant::now();
    let resp = sender.send_request(req).await.ok()?;
    if !resp.status().is_success() {
        let _ = resp.into_body().collect().await;
        return None;
    }
    let mut body = resp.into_body();
    let (mut first, mut text, mut tokens) = (None, Vec::new(), 0);
    while let Some(frame) = body.frame().await {
        let Some(data) = frame.ok()?.into_data().ok() else {
            continue;
        };
        first.get_or_insert_with(Instant::now);
        text.extend_from_slice(&data);
    }
    let end = Instant::now();
    for line in String::from_utf8_lossy(&text).lines() {
        if let Some(n) = line.strip_prefix("data: ").and_then(usage_tokens) {
            tokens = n;
        }
    }
    let first = first?;
    Some(Sample {
        ttft_us: u64::try_from(first.duration_since(sent).as_micros()).unwrap_or(u64::MAX),
        tokens,
        streaming: end.duration_since(first),
    })
}

/// One stream's loop until `end`: the samples that started after `measure_from`.
async fn stream_loop(
    t: Arc<Template>,
    first: Instant,
    measure_from: Instant,
    end: Instant,
) -> (Vec<Sample>, u64) {
    tokio::time::sleep_until(first.into()).await;
    let (mut samples, mut errors) = (Vec::new(), 0);
    let addr = t
        .uri
        .authority()
        .map(|a| a.as_str().to_owned())
        .unwrap_or_default();
    let mut sender = None;
    while Instant::now() < end {
        if sender
            .as_ref()
            .is_none_or(|s: &http1::SendRequest<Full<Bytes>>| s.is_closed())
        {
            sender = connect(&addr).await;
        }
        let Some(s) = sender.as_mut() else {
            errors += 1;
            tokio::time::sleep(Duration::from_millis(10)).await;
            continue;
        };
        let started = Instant::now();
        match one(s, &t).await {
            Some(sample) if started >= measure_from && Instant::now() <= end => {
                samples.push(sample)
            }
            Some(_) => {}
            None => {
                errors += u64::from(started >= measure_from);
                sender = None;
            }
        }
    }
    (samples, errors)
}

async fn connect(addr: &str) -> Option<http1::SendRequest<Full<Bytes>>> {
    let tcp = tokio::net::TcpStream::connect(addr).await.ok()?;
    let _ = tcp.set_nodelay(true);
    let (sender, conn) = http1::handshake(TokioIo::new(tcp)).await.ok()?;
    tokio::spawn(conn);
    Some(sender)
}

/// Runs the streams and summarises them.
pub async fn execute(a: &LlmArgs) -> Result<LlmResult, BenchError> {
    if a.streams == 0 || a.streams > 100_000 {
        return Err(BenchError::Usage("--streams must be 1..=100000".into()));
    }
    let t = Arc::new(template(a)?);
    let start = Instant::now();
    let (measure_from, end) = (start + a.warmup, start + a.warmup + a.duration);
    let step = a.ramp / u32::try_from(a.streams).unwrap_or(u32::MAX);
    let tasks: Vec<_> = (0..a.streams)
        .map(|i| {
            let first = start + step * u32::try_from(i).unwrap_or(u32::MAX);
            tokio::spawn(stream_loop(t.clone(), first, measure_from, end))
        })
        .collect();
    let mut samples = Vec::new();
    let mut errors = 0;
    for task in tasks {
        let (s, e) = task
            .await
            .map_err(|e| BenchError::Io(format!("stream task: {e}")))?;
        samples.extend(s);
        errors += e;
    }
    Ok(summarise(a.streams, &samples, errors, a.duration))
}

fn summarise(streams: usize, samples: &[Sample], errors: u64, window: Duration) -> LlmResult {
    let mut ttft = Histogram::<u64>::new_with_bounds(1, 600_000_000, 3)
        .expect("constant histogram bounds are valid");
    let mut rates: Vec<f64> = Vec::with_capacity(samples.len());
    let mut tokens = 0;
    for s in samples {
        let _ = ttft.record(s.ttft_us.clamp(1, 600_000_000));
        tokens += s.tokens;
        if s.streaming > Duration::ZERO && s.tokens > 0 {
            rates.push(s.tokens as f64 / s.streaming.as_secs_f64());
        }
    }
    rates.sort_by(f64::total_cmp);
    let ms = |q: f64| {
        if samples.is_empty() {
            0.0
        } else {
            ttft.value_at_quantile(q) as f64 / 1000.0
        }
    };
    LlmResult {
        streams,
        completed: samples.len() as u64,
        calls_per_second: samples.len() as f64 / window.as_secs_f64().max(1e-9),
        errors,
        ttft_p50_ms: ms(0.5),
        ttft_p90_ms: ms(0.9),
        ttft_p99_ms: ms(0.99),
        ttft_max_ms: if samples.is_empty() {
            0.0
        } else {
            ttft.max() as f64 / 1000.0
        },
        tokens_per_second: tokens as f64 / window.as_secs_f64().max(1e-9),
        stream_tokens_per_second_p50: rates.get(rates.len() / 2).copied().unwrap_or(0.0),
    }
}

/// Runs `turnpike bench llm` and prints the result.
pub async fn run(a: LlmArgs) -> Result<(), BenchError> {
    let r = execute(&a).await?;
    if a.json {
        println!("{}", serde_json::to_string_pretty(&r).unwrap_or_default());
    } else {
        println!(
            "streams {}  completed {}  errors {}\nTTFT ms  p50 {:.2}  p90 {:.2}  p99 {:.2}  max {:.2}\ntokens/s {:.0} (all streams)  {:.0} (median stream)",
            r.streams, r.completed, r.errors, r.ttft_p50_ms, r.ttft_p90_ms, r.ttft_p99_ms,
            r.ttft_max_ms, r.tokens_per_second, r.stream_tokens_per_second_p50
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn usage_is_read_from_either_front() {
        assert_eq!(
            usage_tokens(r#"{"choices":[],"usage":{"completion_tokens":7}}"#),
            Some(7)
        );
        assert_eq!(
            usage_tokens(r#"{"type":"message_delta","usage":{"output_tokens":9}}"#),
            Some(9)
        );
        assert_eq!(
            usage_tokens(r#"{"type":"message_start","message":{},"usage":{"output_tokens":1}}"#),
            None
        );
        assert_eq!(usage_tokens("[DONE]"), None);
    }
}
