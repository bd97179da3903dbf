//! `turnpike bench run`: one load test from the command line (or from the matrix, which
//! fills the same [`RunArgs`]). Turns arguments into a [`LoadSpec`], obtains tokens, runs the
//! generator beside the `--pid` sampler, and prints the statistics as text or JSON.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::header::HeaderName;
use http::{HeaderValue, Method, Uri};
use serde::{Deserialize, Serialize};

use crate::client::{self, RequestTemplate, Target};
use crate::load::{self, LoadSpec, Mode};
use crate::procstat::{self, Resources};
use crate::stats::{Summary, Window};
use crate::tokens::HeaderTemplate;
use crate::BenchError;

/// Arguments of `turnpike bench run`.
#[derive(Debug, Clone, clap::Args)]
pub struct RunArgs {
    /// Target URL (http:// or https://). `{seq}` in its path or query becomes a value
    /// unique to each request of the run (e.g. `?n={seq}`: every request a new cache key).
    #[arg(long)]
    pub url: String,
    /// Closed loop: concurrent users, each on its own keep-alive connection.
    #[arg(long, conflicts_with = "rate")]
    pub users: Option<usize>,
    /// Open loop: requests per second, latency measured from each request's due time.
    #[arg(long)]
    pub rate: Option<f64>,
    /// Open loop: connections serving the rate.
    #[arg(long, default_value_t = 100)]
    pub connections: usize,
    /// Measurement time after the warm-up (e.g. 30s, 2m, 500ms).
    #[arg(long, default_value = "10s", value_parser = parse_duration)]
    pub duration: Duration,
    /// Warm-up time whose samples are discarded.
    #[arg(long, default_value = "2s", value_parser = parse_duration)]
    pub warmup: Duration,
    /// Request body size in bytes (a JSON document); implies POST unless --method is given.
    #[arg(long)]
    pub size: Option<usize>,
    /// Send a SOAP envelope (`1.1` or `1.2`) for the echo's SOAP service of --size bytes
    /// instead of a JSON document, with the version's Content-Type and action.
    #[arg(long, value_parser = parse_soap_version)]
    pub soap: Option<u8>,
    /// Send WSO2's GraphQL query N (1, 2 or 3: 1, 4 or 9 operations) as its load test
    /// does: POST `{"operationName":null,"query":...}` with a `query-number: N` header
    /// (what `turnpike echo --graphql` answers with the canned response N).
    #[arg(long, value_parser = clap::value_parser!(u8).range(1..=3), conflicts_with_all = ["size", "soap"])]
    pub graphql: Option<u8>,
    /// Send this file's bytes as every request's body, as they are (curl's
    /// `--data-binary @FILE`); implies POST unless --method is given. Its Content-Type
    /// is a --header's to give.
    #[arg(long, conflicts_with_all = ["size", "soap", "graphql"])]
    pub body_file: Option<PathBuf>,
    /// HTTP method (default GET, or POST with --size).
    #[arg(long)]
    pub method: Option<String>,
    /// Extra header, `Name: value` (repeatable).
    #[arg(long = "header", short = 'H')]
    pub headers: Vec<String>,
    /// HTTP/2 (h2c for http://, ALPN h2 for https://).
    #[arg(long)]
    pub http2: bool,
    /// Accept any TLS certificate.
    #[arg(long)]
    pub insecure: bool,
    /// OAuth2 token endpoint: one token by client credentials, sent on every request.
    #[arg(long, requires_all = ["client_id", "client_secret"], conflicts_with = "tokens")]
    pub token_url: Option<String>,
    #[arg(long, env = "TURNPIKE_BENCH_CLIENT_ID")]
    pub client_id: Option<String>,
    #[arg(long, env = "TURNPIKE_BENCH_CLIENT_SECRET", hide_env_values = true)]
    pub client_secret: Option<String>,
    /// With --token-url: this many grants, each a distinct token, cycled over requests.
    #[arg(long, default_value_t = 1)]
    pub token_count: usize,
    /// File of access tokens, one a line, cycled over requests.
    #[arg(long)]
    pub tokens: Option<PathBuf>,
    /// How a token is sent: `Name: …{token}…` (e.g. `apikey: {token}`).
    #[arg(long, default_value = "Authorization: Bearer {token}")]
    pub token_header: String,
    /// Tokens given by the caller (the matrix), used before --tokens and --token-url.
    #[arg(skip)]
    pub token_pool: Option<Arc<[String]>>,
    /// Generator threads (default: one per core).
    #[arg(long)]
    pub threads: Option<usize>,
    /// Per-request timeout.
    #[arg(long, default_value = "30s", value_parser = parse_duration)]
    pub timeout: Duration,
    /// Sample this process's RSS and CPU %, and the load average, while measuring.
    #[arg(long)]
    pub pid: Option<u32>,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
    /// Also write the JSON result to this file.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Write the measured samples to this file in JMeter's CSV results format (JTL).
    #[arg(long)]
    pub jtl: Option<PathBuf>,
    /// Most samples the JTL keeps (the first ones measured; memory is ~40 B a sample).
    #[arg(long, default_value_t = 1_000_000, value_parser = clap::value_parser!(u64).range(1..=20_000_000))]
    pub jtl_max: u64,
    /// The JTL's sample label (default: `METHOD /path`).
    #[arg(long)]
    pub label: Option<String>,
    /// HTTP/1.1 through hyper's client instead of the kit's own (to compare the two).
    #[arg(long, hide = true)]
    pub hyper_h1: bool,
    /// Closed-loop HTTP/1.1 on the tokio runtime instead of the epoll loop (to compare).
    #[arg(long, hide = true)]
    pub tokio_h1: bool,
    /// Closed loops over plain HTTP/1.1: after a response, poll without sleeping for up to
    /// this many microseconds before blocking, so a generator with a core of its own never
    /// waits for that core to wake up. Only with a core of its own: on a core shared with
    /// the server the spin takes the server's time.
    #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(u64).range(0..=10_000))]
    pub spin_us: u64,
}

impl RunArgs {
    /// Arguments for a closed-loop run of `users` at `url`, everything else default.
    pub fn closed(url: String, users: usize, duration: Duration, warmup: Duration) -> Self {
        RunArgs {
            url,
            users: Some(users),
            rate: None,
            connections: 100,
            duration,
            warmup,
            size: None,
            soap: None,
            graphql: None,
            body_file: None,
            method: None,
            headers: Vec::new(),
            http2: false,
            insecure: false,
            token_url: None,
            client_id: None,
            client_secret: None,
            token_count: 1,
            tokens: None,
            token_header: crate::setup::default_header(),
            token_pool: None,
            threads: None,
            timeout: Duration::from_secs(30),
            pid: None,
            json: false,
            out: None,
            jtl: None,
            jtl_max: 1_000_000,
            label: None,
            hyper_h1: false,
            tokio_h1: false,
            spin_us: 0,
        }
    }
}

/// A run's result: what was asked and what was measured.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct RunResult {
    pub url: String,
    pub method: String,
    /// "closed" or "open".
    pub mode: String,
    pub users: Option<usize>,
    pub rate: Option<f64>,
    pub size: usize,
    pub threads: usize,
    pub warmup_s: f64,
    pub summary: Summary,
    pub resources: Option<Resources>,
}

/// `10s`, `500ms`, `2m`, `1h`, or plain seconds.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let s = s.trim();
    let (num, unit) = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .map(|i| s.split_at(i))
        .unwrap_or((s, "s"));
    let n: f64 = num
        .parse()
        .map_err(|_| format!("not a duration: {s:?} (use 500ms, 10s, 2m)"))?;
    let secs = match unit {
        "ms" => n / 1000.0,
        "s" => n,
        "m" => n * 60.0,
        "h" => n * 3600.0,
        _ => return Err(format!("unknown unit in {s:?} (use ms, s, m or h)")),
    };
    Duration::try_from_secs_f64(secs).map_err(|_| format!("duration out of range: {s:?}"))
}

/// The bytes of `--body-file`, read once before the run.
fn body_file(path: Option<&std::path::Path>) -> Result<Bytes, BenchError> {
    let Some(path) = path else {
        return Ok(Bytes::new());
    };
    std::fs::read(path)
        .map(Bytes::from)
        .map_err(|e| BenchError::Usage(format!("--body-file {}: {e}", path.display())))
}

fn parse_soap_version(v: &str) -> Result<u8, String> {
    match v {
        "1.1" | "11" => Ok(11),
        "1.2" | "12" => Ok(12),
        _ => Err(format!("SOAP version must be 1.1 or 1.2, not {v:?}")),
    }
}

fn parse_header(h: &str) -> Result<(HeaderName, HeaderValue), BenchError> {
    let (k, v) = h
        .split_once(':')
        .ok_or_else(|| BenchError::Usage(format!("header must be `Name: value`: {h:?}")))?;
    let k = HeaderName::try_from(k.trim())
        .map_err(|_| BenchError::Usage(format!("bad header name in {h:?}")))?;
    let v = HeaderValue::from_str(v.trim())
        .map_err(|_| BenchError::Usage(format!("bad header value in {h:?}")))?;
    Ok((k, v))
}

/// The credential header and its values, from the caller's pool, a file or
/// `--token-count` client-credentials grants; none without a token source.
async fn tokens(args: &RunArgs) -> Result<Option<(HeaderName, Vec<HeaderValue>)>, BenchError> {
    let raw: Vec<String> = if let Some(pool) = &args.token_pool {
        pool.to_vec()
    } else if let Some(path) = &args.tokens {
        crate::tokens::from_file(path)?
    } else if let Some(url) = &args.token_url {
        let id = args.client_id.as_deref().unwrap_or_default();
        let secret = args.client_secret.as_deref().unwrap_or_default();
        crate::tokens::client_credentials(url, id, secret, args.token_count, args.insecure).await?
    } else {
        return Ok(None);
    };
    let template = HeaderTemplate::parse(&args.token_header)?;
    Ok(Some((template.name.clone(), template.values(&raw)?)))
}

/// Builds the load from `args` (everything checked before any load is sent).
async fn spec(args: &RunArgs) -> Result<LoadSpec, BenchError> {
    let url = crate::sequence::split(&args.url)?;
    let uri: Uri = url
        .url
        .parse()
        .map_err(|e| BenchError::Usage(format!("bad --url {}: {e}", args.url)))?;
    let mode = match (args.users, args.rate) {
        (_, Some(rate)) if rate > 0.0 && rate.is_finite() && args.connections > 0 => Mode::Open {
            rate,
            connections: args.connections,
        },
        (_, Some(_)) => {
            return Err(BenchError::Usage(
                "--rate must be above 0 with at least one connection".into(),
            ))
        }
        (Some(users), None) if users > 0 => Mode::Closed { users },
        _ => return Err(BenchError::Usage("give --users N (> 0) or --rate R".into())),
    };
    if args.duration.is_zero() {
        return Err(BenchError::Usage("--duration must be above 0".into()));
    }
    let body = match (args.size, args.soap, args.graphql) {
        _ if args.body_file.is_some() => body_file(args.body_file.as_deref())?,
        (_, _, Some(n)) => crate::graphql_echo::request_body(n),
        (Some(n), Some(v), None) => crate::echo_soap::envelope_payload(v, n),
        (Some(n), None, None) => client::json_payload(n),
        (None, _, None) => Default::default(),
    };
    let method = match &args.method {
        Some(m) => Method::from_bytes(m.to_ascii_uppercase().as_bytes())
            .map_err(|_| BenchError::Usage(format!("bad --method {m}")))?,
        None if args.size.is_some() || args.graphql.is_some() || args.body_file.is_some() => {
            Method::POST
        }
        None => Method::GET,
    };
    let mut headers = args
        .headers
        .iter()
        .map(|h| parse_header(h))
        .collect::<Result<Vec<_>, _>>()?;
    if let Some(v) = args.soap {
        let ct = HeaderValue::from_static(crate::echo_soap::content_type(v));
        headers.insert(0, (http::header::CONTENT_TYPE, ct));
        if v == 11 {
            let action = HeaderValue::from_static("\"urn:tp:echo#echo\"");
            headers.insert(0, (HeaderName::from_static("soapaction"), action));
        }
    }
    if let Some(n) = args.graphql {
        headers.insert(
            0,
            (
                http::header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            ),
        );
        headers.insert(
            0,
            (
                HeaderName::from_static("query-number"),
                HeaderValue::from(u16::from(n)),
            ),
        );
    }
    let tokens = tokens(args).await?;
    let mut target = Target::resolve(&uri, args.http2, args.insecure).await?;
    target.hyper_h1 = args.hyper_h1;
    target.tokio_h1 = args.tokio_h1;
    target.spin = Duration::from_micros(args.spin_us);
    let request = match tokens {
        Some((name, values)) => {
            RequestTemplate::new(method, &uri, args.http2, headers, body, values)?
                .with_token_header(name)
        }
        None => RequestTemplate::new(method, &uri, args.http2, headers, body, Vec::new())?,
    };
    let request = match url.at {
        Some(at) => request.with_sequence(at),
        None => request,
    };
    let threads = args
        .threads
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    Ok(LoadSpec {
        target,
        request,
        mode,
        window: Window {
            warmup: args.warmup,
            duration: args.duration,
        },
        threads,
        timeout: args.timeout,
        jtl_cap: if args.jtl.is_some() {
            args.jtl_max as usize
        } else {
            0
        },
    })
}

/// Runs one load test as `args` describe.
pub async fn execute(args: &RunArgs) -> Result<RunResult, BenchError> {
    let spec = Arc::new(spec(args).await?);
    if let Some(pid) = args.pid {
        if !procstat::available(pid) {
            return Err(BenchError::Usage(format!(
                "--pid {pid}: no such process in /proc"
            )));
        }
    }
    let sampler = args.pid.map(|pid| {
        tokio::spawn(procstat::sample(
            pid,
            args.warmup,
            args.duration,
            Duration::from_millis(500),
        ))
    });
    let load_spec = spec.clone();
    let (rec, started) = tokio::task::spawn_blocking(move || load::run_blocking(load_spec))
        .await
        .map_err(|e| BenchError::Io(format!("generator: {e}")))??;
    let resources = match sampler {
        Some(task) => task.await.ok(),
        None => None,
    };
    let (mode, users, rate) = match spec.mode {
        Mode::Closed { users } => ("closed", Some(users), None),
        Mode::Open { rate, connections } => ("open", Some(connections), Some(rate)),
    };
    if let Some(path) = &args.jtl {
        write_jtl(args, &spec, users.unwrap_or(0), &rec, started, path)?;
    }
    Ok(RunResult {
        url: args.url.clone(),
        method: spec.request.method().to_string(),
        mode: mode.into(),
        users,
        rate,
        size: args.size.unwrap_or(0),
        threads: spec.threads,
        warmup_s: args.warmup.as_secs_f64(),
        summary: rec.summary(),
        resources,
    })
}

fn write_jtl(
    args: &RunArgs,
    spec: &LoadSpec,
    threads: usize,
    rec: &crate::stats::Recorder,
    started: std::time::SystemTime,
    path: &std::path::Path,
) -> Result<(), BenchError> {
    // The URL's path and query as given (a `{seq}` kept as written).
    let path_only = args
        .url
        .split_once("://")
        .and_then(|(_, rest)| rest.find('/').map(|i| rest[i..].to_owned()))
        .unwrap_or_else(|| "/".into());
    let label = args
        .label
        .clone()
        .unwrap_or_else(|| format!("{} {path_only}", spec.request.method()));
    let run = crate::jtl::JtlRun {
        label: &label,
        url: &args.url,
        threads,
        started,
    };
    crate::jtl::write(path, &run, rec.samples())?;
    if rec.samples_dropped() > 0 {
        eprintln!(
            "{}: kept the first {} samples, {} more not written (--jtl-max)",
            path.display(),
            rec.samples().len(),
            rec.samples_dropped()
        );
    }
    Ok(())
}

/// `turnpike bench run`.
pub async fn run(args: RunArgs) -> Result<(), BenchError> {
    let result = execute(&args).await?;
    let json = serde_json::to_string_pretty(&result)
        .map_err(|e| BenchError::Io(format!("encoding JSON: {e}")))?;
    if let Some(path) = &args.out {
        std::fs::write(path, &json)
            .map_err(|e| BenchError::Io(format!("writing {}: {e}", path.display())))?;
    }
    if args.json {
        println!("{json}");
    } else {
        print!("{}", text(&result));
    }
    Ok(())
}

/// The human-readable report of one run.
pub fn text(r: &RunResult) -> String {
    let load = match (r.mode.as_str(), r.rate) {
        ("open", Some(rate)) => format!(
            "open loop {rate} req/s on {} connections",
            r.users.unwrap_or(0)
        ),
        _ => format!("{} users (closed loop)", r.users.unwrap_or(0)),
    };
    let mut s = format!(
        "{} {}  {load}, {} B body, {} threads, warm-up {:.1}s, measured {:.1}s\n",
        r.method, r.url, r.size, r.threads, r.warmup_s, r.summary.duration_s
    );
    s.push_str(&r.summary.to_text());
    if let Some(res) = &r.resources {
        s.push_str(&format!(
            "target pid {} RSS avg {:.1} MB max {:.1} MB, CPU {:.1} % ({:.2} s), load avg {:.2} (max {:.2})\n",
            res.pid, res.rss_avg_mb, res.rss_max_mb, res.cpu_pct, res.cpu_seconds, res.loadavg_avg, res.loadavg_max
        ));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_parse_with_units() {
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("10s"), Ok(Duration::from_secs(10)));
        assert_eq!(parse_duration("2m"), Ok(Duration::from_secs(120)));
        assert_eq!(parse_duration("3"), Ok(Duration::from_secs(3)));
        assert!(parse_duration("10 parsecs").is_err());
        assert!(parse_duration("x").is_err());
    }

    #[test]
    fn headers_parse_and_bad_ones_are_refused() {
        let (k, v) = parse_header("X-Test:  a b ").expect("header");
        assert_eq!((k.as_str(), v.to_str().ok()), ("x-test", Some("a b")));
        assert!(parse_header("no colon").is_err());
        assert!(parse_header("bad name: v").is_err());
    }
}
