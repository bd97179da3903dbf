//! `turnpike bench matrix`: runs a plan's cells. For each back-end delay it starts
//! `turnpike echo --delay-ms D` and `turnpike gateway` (a temporary YAML config routing
//! `/echo/v1` to that echo) as child processes of the current executable, then for each
//! users level and size runs the direct-to-back-end baselines and the scenarios through the
//! gateway (sampling the gateway's RSS and CPU). Results go to `DIR/results.json` after every
//! run, so an interrupted matrix still leaves a report; the report is written at the end.
//! Against a remote deployment, `--echo-url` and `--gateway-url` replace the child processes
//! (delays then travel as the echo's `?delay_ms=` control). A plan with the `graphql`
//! scenario also gets `turnpike echo --graphql` and, in the gateway, a secured GRAPHQL API
//! over it (`/starwars/v1`, the bundled Star Wars schema); its cells need the matrix's own
//! echo and gateway.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use tokio::io::AsyncBufReadExt;
use tokio::process::{Child, Command};

use crate::plan::{Plan, RunKey, Scenario, Via};
use crate::run::{execute, RunArgs, RunResult};
use crate::BenchError;

/// Arguments of `turnpike bench matrix`.
#[derive(Debug, Clone, clap::Args)]
pub struct MatrixArgs {
    /// A bundled plan (quick, seed-2.6, seed-3.0, coldfusion) or a plan YAML file.
    #[arg(long, default_value = "quick")]
    pub plan: String,
    /// Output directory (results.json, then the report).
    #[arg(long)]
    pub out: PathBuf,
    /// The `turnpike` binary to start echo and gateway from (default: this executable).
    #[arg(long)]
    pub turnpike: Option<PathBuf>,
    /// Use this running echo back end (base URL) instead of starting one.
    #[arg(long)]
    pub echo_url: Option<String>,
    /// Use this running gateway: the base URL of an API that proxies to the echo back end
    /// (e.g. http://gw:8280/echo/v1).
    #[arg(long, conflicts_with = "no_gateway")]
    pub gateway_url: Option<String>,
    /// With --gateway-url on this machine: the gateway's pid, to sample RSS and CPU.
    #[arg(long)]
    pub gateway_pid: Option<u32>,
    /// Accept any TLS certificate (self-signed gateways).
    #[arg(long)]
    pub insecure: bool,
    /// Run the direct baselines only.
    #[arg(long)]
    pub no_gateway: bool,
    /// Generator threads (default: one per core).
    #[arg(long)]
    pub threads: Option<usize>,
    /// Latency objectives for the capacity answer, e.g. avg=100ms, p99=500ms.
    #[arg(long, default_values_t = ["avg=100ms".to_string()])]
    pub slo: Vec<String>,
    /// Describes the machine in the report (e.g. "2 vCPU VM").
    #[arg(long)]
    pub label: Option<String>,
}

/// `DIR/results.json`: the plan, the machine and every run.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct MatrixResults {
    pub plan: Plan,
    pub machine: Machine,
    /// How the gateway was reached ("started", a URL, or "none: why").
    pub gateway: String,
    pub cells: Vec<Cell>,
}

/// One run of the matrix (or a skipped one).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Cell {
    pub via: Via,
    pub scenario: Option<Scenario>,
    pub method: String,
    pub users: usize,
    pub size: usize,
    pub delay_ms: u64,
    /// WSO2's query (1-3) of a GraphQL cell.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub graphql_query: Option<u8>,
    /// Why the run did not happen.
    pub skipped: Option<String>,
    pub result: Option<RunResult>,
}

/// What the report says about the hardware.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct Machine {
    pub label: String,
    pub cpus: usize,
    pub cpu_model: String,
    pub memory_mb: u64,
}

impl Machine {
    pub fn detect(label: Option<String>) -> Machine {
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
        let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        let cpu_model = cpuinfo
            .lines()
            .find_map(|l| l.strip_prefix("model name"))
            .and_then(|l| l.split_once(':'))
            .map(|(_, m)| m.trim().to_owned())
            .unwrap_or_else(|| "unknown".into());
        let memory_mb = std::fs::read_to_string("/proc/meminfo")
            .unwrap_or_default()
            .lines()
            .find_map(|l| l.strip_prefix("MemTotal:"))
            .and_then(|v| v.split_whitespace().next()?.parse::<u64>().ok())
            .map_or(0, |kb| kb / 1024);
        Machine {
            label: label.unwrap_or_else(|| format!("{cpus} vCPU machine")),
            cpus,
            cpu_model,
            memory_mb,
        }
    }
}

/// A child process killed when dropped.
struct Proc {
    child: Child,
    name: &'static str,
}

impl Proc {
    fn pid(&self) -> Option<u32> {
        self.child.id()
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        if let Err(e) = self.child.start_kill() {
            tracing::debug!(name = self.name, error = %e, "child already gone");
        }
    }
}

/// Starts `turnpike echo --soap --port 0 --delay-ms D` (`--graphql` instead of `--soap`
/// when `graphql`) and reads its address from stdout.
async fn start_echo(
    exe: &Path,
    delay_ms: u64,
    graphql: bool,
) -> Result<(Proc, String), BenchError> {
    let kind = if graphql { "--graphql" } else { "--soap" };
    let mut child = Command::new(exe)
        .args(["--log", "warn", "echo", kind, "--port", "0", "--delay-ms"])
        .arg(delay_ms.to_string())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| BenchError::Io(format!("starting {} echo: {e}", exe.display())))?;
    let stdout = child
        .stdout
        .take()
        .ok_or_else(|| BenchError::Io("echo: no stdout".into()))?;
    let proc = Proc {
        child,
        name: "echo",
    };
    let mut lines = tokio::io::BufReader::new(stdout).lines();
    let line = tokio::time::timeout(Duration::from_secs(10), lines.next_line())
        .await
        .map_err(|_| BenchError::Io("echo did not report its address within 10 s".into()))?
        .map_err(|e| BenchError::Io(format!("echo stdout: {e}")))?
        .ok_or_else(|| BenchError::Io("echo exited before listening".into()))?;
    let url = line
        .strip_prefix("echo listening on ")
        .ok_or_else(|| BenchError::Io(format!("unexpected echo output: {line}")))?
        .to_owned();
    Ok((proc, url))
}

fn free_port() -> Result<u16, BenchError> {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .map_err(|e| BenchError::Io(format!("finding a free port: {e}")))
}

/// The API key the secured scenarios send (its SHA-256 is in [`gateway_config`]).
pub const BENCH_API_KEY: &str = "turnpike-bench-key";

/// The jq program of the transformation scenario: the seeds' "Mediation API" rewrites
/// the echoed JSON payload (WSO2 with a PayloadFactory, here on the parsed value).
pub const TRANSFORMATION_JQ: &str = "{data: {payload: .p, length: (.p | length)}}";

/// The gateway config for one echo back end: `/echo/v1` (open, the passthrough
/// scenarios) and `/secured/v1` (an API key and a subscription): `/secured/v1/mediation`
/// rewrites the request body with [`TRANSFORMATION_JQ`] (transformation), any other
/// path of it is proxied as is (secured-passthrough); `/soap/v1` is the echo's SOAP
/// service as a SOAP pass-through API and `/soaprest/v1` the same service published as
/// REST (both from the WSDL `turnpike echo --soap` serves).
pub fn gateway_config(echo_url: &str) -> String {
    gateway_config_with(echo_url, None)
}

/// [`gateway_config`], plus, with `graphql` (a `turnpike echo --graphql` URL and the
/// JWK of the bench issuer, [`crate::bench_token`]), the `graphql` scenario's API:
/// `/starwars/v1`, secured with JWT as the seed's tests were (the bench issuer trusted,
/// an Unlimited subscription for the bench application), the bundled Star Wars schema
/// with the limits bench/graphql.sh uses (depth 15, complexity 5000: WSO2's three
/// queries pass).
pub fn gateway_config_with(echo_url: &str, graphql: Option<(&str, &serde_json::Value)>) -> String {
    // A JSON string is a valid YAML double-quoted scalar: the WSDL goes inline.
    let wsdl = serde_json::Value::String(crate::echo_soap::WSDL.to_owned()).to_string();
    let issuers = match graphql {
        Some((_, jwk)) => format!(
            "\n  issuers:\n    - {{ issuer: \"{}\", audiences: [{}], jwks: {{ \"keys\": [{jwk}] }} }}",
            crate::bench_token::ISSUER,
            crate::bench_token::AUDIENCE,
        ),
        None => String::new(),
    };
    let (graphql_sub, graphql_api) = match graphql.map(|(url, _)| url) {
        Some(url) => {
            let schema = serde_json::Value::String(crate::graphql_echo::STARWARS_SCHEMA.to_owned())
                .to_string();
            (
                "\n    - { api: /starwars/v1, application: bench, state: ACTIVE, tier: Unlimited }",
                format!(
                    r#"  - name: starwars
    context: /starwars
    version: v1
    endpoints: ["{url}"]
    auth: {{ oauth2: true }}
    resources:
      - {{ path: "/*", methods: [GET, POST] }}
    graphql:
      limits: {{ max_depth: 15, max_complexity: 5000 }}
      schema: {schema}
"#
                ),
            )
        }
        None => ("", String::new()),
    };
    format!(
        r#"# Written by `turnpike bench matrix`.
security:{issuers}
  api_keys:
    # SHA-256 of "{BENCH_API_KEY}"
    - {{ sha256: "28a1d26071724d185aafe4153ee11aa474c2ca077f7bdd89ec182fdc06bcb1ef", application: bench, subscriber: bench }}
  subscriptions:
    - {{ api: /secured/v1, application: bench, state: ACTIVE, tier: Unlimited }}{graphql_sub}
apis:
  - name: echo
    context: /echo
    version: v1
    default: true
    endpoints: ["{echo_url}"]
    resources:
      - {{ path: "/*", methods: [GET, POST, PUT, DELETE] }}
  - name: secured
    context: /secured
    version: v1
    endpoints: ["{echo_url}"]
    auth: {{ oauth2: false, api_key: true }}
    resources:
      - path: /mediation
        methods: [POST]
        mediation:
          request:
            name: seed-mediation
            body: {{ jq: "{TRANSFORMATION_JQ}" }}
      - {{ path: "/*", methods: [GET, POST, PUT, DELETE] }}
  - name: soap
    context: /soap
    version: v1
    endpoints: ["{echo_url}/soap"]
    soap: {{ type: SOAP, port: Echo12, wsdl: {wsdl} }}
  - name: soaprest
    context: /soaprest
    version: v1
    endpoints: ["{echo_url}/soap"]
    soap: {{ type: SOAP_TO_REST, port: Echo12, wsdl: {wsdl} }}
{graphql_api}"#
    )
}

/// The base URL a scenario goes through: the secured scenarios use `/secured/v1` next
/// to the echo API (`/secured/v1/mediation` for the rewrite), found from the echo API's
/// URL; `None` when that URL does not end in `/echo/v1`.
fn scenario_base(echo_api: &str, scenario: Option<Scenario>) -> Option<String> {
    let sibling = |api: &str| {
        echo_api
            .trim_end_matches('/')
            .strip_suffix("/echo/v1")
            .map(|root| format!("{root}{api}"))
    };
    match scenario {
        Some(Scenario::Transformation) => sibling("/secured/v1/mediation"),
        Some(Scenario::SecuredPassthrough) => sibling("/secured/v1"),
        Some(Scenario::SoapProxy) => sibling("/soap/v1"),
        Some(Scenario::SoapToRest) => sibling("/soaprest/v1/echo"),
        Some(Scenario::Graphql) => sibling("/starwars/v1/graphql"),
        _ => Some(echo_api.to_owned()),
    }
}

/// Whether a scenario sends the bench API key.
fn is_secured(scenario: Option<Scenario>) -> bool {
    matches!(
        scenario,
        Some(Scenario::Transformation | Scenario::SecuredPassthrough | Scenario::Graphql)
    )
}

/// Starts `turnpike gateway` routing /echo/v1 to `echo_url` (and /starwars/v1 to
/// `graphql_url`); waits until it answers.
async fn start_gateway(
    exe: &Path,
    echo_url: &str,
    graphql_url: Option<&str>,
    dir: &Path,
    tag: &str,
) -> Result<(Proc, String), String> {
    let config = dir.join(format!("gateway-{tag}.yaml"));
    let issuer = match graphql_url {
        Some(_) => Some(crate::bench_token::issuer().map_err(|e| e.to_string())?),
        None => None,
    };
    let graphql = graphql_url.zip(issuer.map(|i| &i.jwk));
    std::fs::write(&config, gateway_config_with(echo_url, graphql))
        .map_err(|e| format!("writing {}: {e}", config.display()))?;
    let log_path = dir.join(format!("gateway-{tag}.log"));
    let log = std::fs::File::create(&log_path)
        .map_err(|e| format!("creating {}: {e}", log_path.display()))?;
    let port = free_port().map_err(|e| e.to_string())?;
    let child = Command::new(exe)
        .args(["--log", "warn", "gateway", "--config"])
        .arg(&config)
        .args(["--http-port", &port.to_string(), "--https-port", "off"])
        .stdout(Stdio::null())
        .stderr(log)
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| format!("starting {} gateway: {e}", exe.display()))?;
    let mut proc = Proc {
        child,
        name: "gateway",
    };
    let base = format!("http://127.0.0.1:{port}/echo/v1");
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if let Ok(Some(status)) = proc.child.try_wait() {
            let log = std::fs::read_to_string(&log_path).unwrap_or_default();
            let tail: String = log.lines().rev().take(5).collect::<Vec<_>>().join(" | ");
            return Err(format!("gateway exited ({status}): {tail}"));
        }
        if probe(&format!("{base}/ready")).await == Some(200) {
            return Ok((proc, base));
        }
        if Instant::now() > deadline {
            return Err(format!(
                "gateway did not answer 200 on {base}/ready within 20 s (log: {})",
                log_path.display()
            ));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// One GET; the status, or None when nothing answered.
async fn probe(url: &str) -> Option<u16> {
    let uri: http::Uri = url.parse().ok()?;
    let target = crate::client::Target::resolve(&uri, false, true)
        .await
        .ok()?;
    let req = crate::client::RequestTemplate::new(
        http::Method::GET,
        &uri,
        false,
        vec![],
        bytes::Bytes::new(),
        vec![],
    )
    .ok()?;
    let local = tokio::task::LocalSet::new();
    local
        .run_until(async {
            let mut conn = target.connect().await.ok()?;
            let fut = conn.exchange(req.build(0));
            tokio::time::timeout(Duration::from_secs(2), fut)
                .await
                .ok()?
                .ok()
                .map(|(s, _)| s)
        })
        .await
}

/// The URL and SOAP version of a run: SOAP runs go to the echo's SOAP service (direct,
/// a SOAP 1.2 envelope), the SOAP pass-through API (the envelope) or the SOAP-to-REST
/// resource (JSON; `base` is already their URL); the others to [`run_url`].
fn soap_target(base: &str, key: &RunKey, delay_in_query: bool) -> (String, Option<u8>) {
    if key.method != "SOAP" {
        return (run_url(base, key, delay_in_query), None);
    }
    let base = base.trim_end_matches('/');
    let (url, soap) = match (key.target, key.scenario) {
        (Via::Direct, _) => (format!("{base}/soap"), Some(12)),
        (Via::Gateway, Some(Scenario::SoapToRest)) => (base.to_owned(), None),
        (Via::Gateway, _) => (base.to_owned(), Some(12)),
    };
    match (delay_in_query, key.delay_ms) {
        (true, d) if d > 0 => (format!("{url}?delay_ms={d}"), soap),
        _ => (url, soap),
    }
}

/// The URL of one run: `base/bench`, with GET's size and, for an external echo, the delay
/// as query controls.
fn run_url(base: &str, key: &RunKey, delay_in_query: bool) -> String {
    let mut url = format!("{}/bench", base.trim_end_matches('/'));
    let mut q = Vec::new();
    if key.method == "GET" {
        q.push(format!("size={}", key.size));
    }
    if delay_in_query && key.delay_ms > 0 {
        q.push(format!("delay_ms={}", key.delay_ms));
    }
    if !q.is_empty() {
        url.push('?');
        url.push_str(&q.join("&"));
    }
    url
}

fn fmt_secs(d: Duration) -> String {
    let s = d.as_secs();
    format!("{}:{:02}", s / 60, s % 60)
}

/// `turnpike bench matrix`.
pub async fn run(args: MatrixArgs) -> Result<(), BenchError> {
    let plan = Plan::load(&args.plan)?;
    let warmup = plan.warmup().map_err(BenchError::Usage)?;
    let duration = plan.duration().map_err(BenchError::Usage)?;
    std::fs::create_dir_all(&args.out)
        .map_err(|e| BenchError::Io(format!("creating {}: {e}", args.out.display())))?;
    let exe = match &args.turnpike {
        Some(p) => p.clone(),
        None => std::env::current_exe()
            .map_err(|e| BenchError::Io(format!("finding this executable: {e}")))?,
    };
    let total = plan
        .runs()
        .iter()
        .filter(|k| k.scenario.is_none_or(|s| s.skip_reason().is_none()))
        .count();
    let mut results = MatrixResults {
        plan: plan.clone(),
        machine: Machine::detect(args.label.clone()),
        gateway: String::new(),
        cells: Vec::new(),
    };
    let started = Instant::now();
    let mut done = 0usize;
    let per_run = warmup + duration;
    for &delay in &plan.delays_ms {
        // Children live until the end of this delay's runs.
        let (_echo, echo_base, delay_in_query) = match &args.echo_url {
            Some(url) => (None, url.trim_end_matches('/').to_owned(), true),
            None => {
                let (p, url) = start_echo(&exe, delay, false).await?;
                (Some(p), url, false)
            }
        };
        let wants_graphql = plan.scenarios.contains(&Scenario::Graphql);
        let (_graphql_echo, graphql_base) = match (&args.echo_url, wants_graphql) {
            (None, true) => {
                let (p, url) = start_echo(&exe, delay, true).await?;
                (Some(p), Some(format!("{url}/graphql")))
            }
            _ => (None, None),
        };
        let (_gw, gateway): (Option<Proc>, Result<(String, Option<u32>), String>) = if args
            .no_gateway
        {
            (None, Err("--no-gateway given".into()))
        } else if let Some(url) = &args.gateway_url {
            (
                None,
                Ok((url.trim_end_matches('/').to_owned(), args.gateway_pid)),
            )
        } else {
            let tag = format!("delay-{delay}");
            match start_gateway(&exe, &echo_base, graphql_base.as_deref(), &args.out, &tag).await {
                Ok((p, base)) => {
                    let pid = p.pid();
                    (Some(p), Ok((base, pid)))
                }
                Err(e) => {
                    eprintln!("gateway unavailable for delay {delay} ms: {e}");
                    (None, Err(format!("gateway unavailable: {e}")))
                }
            }
        };
        results.gateway = match (&gateway, &args.gateway_url) {
            (Ok(_), Some(url)) => url.clone(),
            (Ok(_), None) => "started by the matrix".into(),
            (Err(e), _) => format!("none: {e}"),
        };
        for key in plan.runs_for_delay(delay) {
            let mut cell = Cell {
                via: key.target,
                scenario: key.scenario,
                method: key.method.to_owned(),
                users: key.users,
                size: key.size,
                delay_ms: key.delay_ms,
                graphql_query: key.graphql_query,
                skipped: None,
                result: None,
            };
            if let Some(why) = graphql_unreachable(&key, &args, graphql_base.is_some()) {
                cell.skipped = Some(why.to_owned());
                results.cells.push(cell);
                done += 1;
                continue;
            }
            let (base, pid) = match (
                key.target,
                key.scenario.and_then(|s| s.skip_reason()),
                &gateway,
            ) {
                (_, Some(reason), _) => {
                    cell.skipped = Some(reason.to_owned());
                    results.cells.push(cell);
                    continue;
                }
                (Via::Direct, None, _) => match (key.graphql_query, &graphql_base) {
                    (Some(_), Some(g)) => (g.clone(), None),
                    _ => (echo_base.clone(), None),
                },
                (Via::Gateway, None, Ok((base, pid))) => match scenario_base(base, key.scenario) {
                    Some(b) => (b, *pid),
                    None => {
                        cell.skipped = Some(format!(
                            "needs a gateway URL ending in /echo/v1 to find /secured/v1 (got {base})"
                        ));
                        results.cells.push(cell);
                        done += 1;
                        continue;
                    }
                },
                (Via::Gateway, None, Err(e)) => {
                    cell.skipped = Some(e.clone());
                    results.cells.push(cell);
                    done += 1;
                    continue;
                }
            };
            let (url, soap) = match key.graphql_query {
                // WSO2's query N POSTed to the base URL itself.
                Some(_) => (base.clone(), None),
                None => soap_target(&base, &key, delay_in_query),
            };
            let mut run_args = RunArgs::closed(url, key.users, duration, warmup);
            run_args.method = Some(
                if soap.is_some() || matches!(key.method, "SOAP" | "GRAPHQL") {
                    "POST"
                } else {
                    key.method
                }
                .to_owned(),
            );
            run_args.soap = soap;
            run_args.graphql = key.graphql_query;
            run_args.size =
                (key.method != "GET" && key.graphql_query.is_none()).then_some(key.size);
            run_args.threads = args.threads;
            run_args.pid = pid;
            run_args.insecure = args.insecure;
            run_args.timeout = Duration::from_secs(60);
            if key.target == Via::Gateway && is_secured(key.scenario) {
                // The GraphQL API takes the bench JWT (its issuer was made when the
                // gateway started), the others the bench API key.
                let credential = match key.scenario {
                    Some(Scenario::Graphql) => crate::bench_token::issuer()
                        .map_or_else(|e| format!("x-bench-token-error: {e}"), |i| i.header()),
                    _ => format!("apikey: {BENCH_API_KEY}"),
                };
                run_args.headers = vec![credential];
            }
            let label = format!(
                "{} {}{} users={} size={} delay={}ms",
                match key.target {
                    Via::Direct => "direct",
                    Via::Gateway => "gateway",
                },
                key.scenario.map_or(key.method, |s| s.name()),
                key.graphql_query
                    .map_or(String::new(), |q| format!(" q{q}")),
                key.users,
                key.size,
                key.delay_ms
            );
            match execute(&run_args).await {
                Ok(r) => {
                    done += 1;
                    let s = &r.summary;
                    let left = total.saturating_sub(done) as u32;
                    let avg_run = started.elapsed() / done.max(1) as u32;
                    eprintln!(
                        "[{done:>3}/{total}] {} elapsed, ETA {}  {label}: {:.0} req/s avg {:.2} ms p99 {:.2} ms err {:.2}%",
                        fmt_secs(started.elapsed()),
                        fmt_secs(avg_run.max(per_run) * left),
                        s.throughput_rps,
                        s.avg_ms,
                        s.p99_ms,
                        s.error_pct
                    );
                    cell.result = Some(r);
                }
                Err(e) => {
                    done += 1;
                    eprintln!("[{done:>3}/{total}] {label}: failed: {e}");
                    cell.skipped = Some(format!("run failed: {e}"));
                }
            }
            results.cells.push(cell);
            save(&args.out, &results)?;
        }
    }
    save(&args.out, &results)?;
    for line in transformation_ratios(&results)
        .into_iter()
        .chain(crate::report::graphql::ratio_lines(&results))
    {
        eprintln!("{line}");
    }
    let slos = crate::report::parse_slos(&args.slo)?;
    let index = crate::report::write(&args.out, &slos)?;
    eprintln!(
        "matrix done in {}: report at {}",
        fmt_secs(started.elapsed()),
        index.display()
    );
    Ok(())
}

/// One line per cell that ran both: Transformation / Passthrough throughput on the same
/// secured API (the seeds' Mediation API / Echo API ratio), measured in this run.
pub fn transformation_ratios(results: &MatrixResults) -> Vec<String> {
    let rps = |scenario: Scenario, c: &Cell| {
        results
            .cells
            .iter()
            .find(|o| {
                o.scenario == Some(scenario)
                    && (o.users, o.size, o.delay_ms) == (c.users, c.size, c.delay_ms)
            })
            .and_then(|o| o.result.as_ref())
            .map(|r| r.summary.throughput_rps)
    };
    results
        .cells
        .iter()
        .filter(|c| c.scenario == Some(Scenario::Transformation))
        .filter_map(|c| {
            let t = rps(Scenario::Transformation, c)?;
            let p = rps(Scenario::SecuredPassthrough, c)?;
            Some(format!(
                "transformation / secured-passthrough users={} size={} delay={}ms: {t:.0} / {p:.0} req/s = {:.2}x",
                c.users,
                c.size,
                c.delay_ms,
                if p > 0.0 { t / p } else { 0.0 }
            ))
        })
        .collect()
}

/// Why a GraphQL run cannot happen here: its back end is the matrix's own `turnpike echo
/// --graphql`, which a remote echo or gateway does not know. `None` for other runs.
fn graphql_unreachable(key: &RunKey, args: &MatrixArgs, have_echo: bool) -> Option<&'static str> {
    key.graphql_query?;
    if !have_echo {
        return Some("the graphql scenario needs the matrix's own `turnpike echo --graphql` (not with --echo-url)");
    }
    if key.target == Via::Gateway && args.gateway_url.is_some() {
        return Some("the graphql scenario needs the matrix's own gateway (its /starwars/v1 API), not --gateway-url");
    }
    None
}

fn save(dir: &Path, results: &MatrixResults) -> Result<(), BenchError> {
    let path = dir.join("results.json");
    let json = serde_json::to_string_pretty(results)
        .map_err(|e| BenchError::Io(format!("encoding results: {e}")))?;
    std::fs::write(&path, json)
        .map_err(|e| BenchError::Io(format!("writing {}: {e}", path.display())))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(method: &'static str, delay_ms: u64) -> RunKey {
        RunKey {
            target: Via::Direct,
            scenario: None,
            method,
            users: 1,
            size: 50,
            delay_ms,
            graphql_query: None,
        }
    }

    #[test]
    fn run_urls_carry_get_size_and_external_delay() {
        assert_eq!(
            run_url("http://e:1/", &key("POST", 30), false),
            "http://e:1/bench"
        );
        assert_eq!(
            run_url("http://e:1", &key("GET", 30), false),
            "http://e:1/bench?size=50"
        );
        assert_eq!(
            run_url("http://e:1", &key("GET", 30), true),
            "http://e:1/bench?size=50&delay_ms=30"
        );
    }

    #[test]
    fn secured_scenarios_go_to_the_secured_api() {
        assert_eq!(
            scenario_base("http://g:1/echo/v1", Some(Scenario::Transformation)).as_deref(),
            Some("http://g:1/secured/v1/mediation")
        );
        assert_eq!(
            scenario_base("http://g:1/echo/v1/", Some(Scenario::SecuredPassthrough)).as_deref(),
            Some("http://g:1/secured/v1")
        );
        assert_eq!(
            scenario_base("http://g:1/echo/v1", Some(Scenario::Passthrough)).as_deref(),
            Some("http://g:1/echo/v1")
        );
        assert_eq!(
            scenario_base("http://g:1/x", Some(Scenario::Transformation)),
            None
        );
        assert_eq!(
            scenario_base("http://g:1/echo/v1", Some(Scenario::SoapToRest)).as_deref(),
            Some("http://g:1/soaprest/v1/echo")
        );
        let mut k = key("SOAP", 0);
        assert_eq!(
            soap_target("http://e:1", &k, false),
            ("http://e:1/soap".into(), Some(12))
        );
        k.target = Via::Gateway;
        k.scenario = Some(Scenario::SoapProxy);
        assert_eq!(
            soap_target("http://g:2/soap/v1", &k, false),
            ("http://g:2/soap/v1".into(), Some(12))
        );
        k.scenario = Some(Scenario::SoapToRest);
        assert_eq!(
            soap_target("http://g:2/soaprest/v1/echo", &k, true),
            ("http://g:2/soaprest/v1/echo".into(), None)
        );
        let c = gateway_config("http://127.0.0.1:9000");
        let file: serde_yaml::Value = serde_yaml::from_str(&c).expect("yaml");
        let wsdl = file["apis"][3]["soap"]["wsdl"]
            .as_str()
            .expect("inline wsdl");
        assert_eq!(wsdl, crate::echo_soap::WSDL);
        assert_eq!(
            scenario_base("http://g:1/echo/v1", Some(Scenario::Graphql)).as_deref(),
            Some("http://g:1/starwars/v1/graphql")
        );
        assert!(is_secured(Some(Scenario::Graphql)));
        assert!(is_secured(Some(Scenario::Transformation)));
        assert!(!is_secured(Some(Scenario::Passthrough)));
    }

    #[test]
    fn the_graphql_api_is_added_only_with_a_graphql_back_end() {
        let plain = gateway_config("http://127.0.0.1:9000");
        assert!(!plain.contains("/starwars"));
        let jwk = serde_json::json!({"kty": "EC", "crv": "P-256", "x": "AA", "y": "AA"});
        let c = gateway_config_with(
            "http://127.0.0.1:9000",
            Some(("http://127.0.0.1:9001/graphql", &jwk)),
        );
        let file: serde_yaml::Value = serde_yaml::from_str(&c).expect("yaml");
        let api = &file["apis"][4];
        assert_eq!(api["context"].as_str(), Some("/starwars"));
        assert_eq!(
            api["graphql"]["schema"].as_str(),
            Some(crate::graphql_echo::STARWARS_SCHEMA)
        );
        assert_eq!(
            file["security"]["subscriptions"][1]["api"].as_str(),
            Some("/starwars/v1")
        );
        assert_eq!(api["auth"]["oauth2"].as_bool(), Some(true));
        let issuer = &file["security"]["issuers"][0];
        assert_eq!(issuer["issuer"].as_str(), Some(crate::bench_token::ISSUER));
        assert_eq!(issuer["jwks"]["keys"][0]["crv"].as_str(), Some("P-256"));
    }

    #[test]
    fn gateway_config_is_the_documented_echo_api() {
        let c = gateway_config("http://127.0.0.1:9000");
        assert!(
            c.contains("context: /echo") && c.contains("endpoints: [\"http://127.0.0.1:9000\"]")
        );
    }
}
