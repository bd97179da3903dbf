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
//! echo and gateway. A plan's `auth`, `tokens`, `protocol` and `pin` say how the gateway
//! cells are sent (a pool of bench-issuer JWTs by default, HTTPS or HTTP/2 on request) and
//! where each process runs; a plan's `target` replaces the gateway by any running one,
//! its token source giving the secured scenarios' credential (`setup.rs`). The processes
//! are `stack.rs`'s.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::pin::{self, Pinning};
use crate::plan::{Plan, RunKey, Scenario, Via};
use crate::run::{execute, RunArgs, RunResult};
use crate::setup::{Auth, Pin};
pub use crate::stack::{gateway_config, gateway_config_with, BENCH_API_KEY, TRANSFORMATION_JQ};
use crate::stack::{start_echo, start_gateway, GatewayOpts, Proc};
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
    /// Published reference results to draw beside the measured rows (`seed-3.0`, …;
    /// repeatable): see `turnpike bench report --compare`.
    #[arg(long)]
    pub compare: Vec<String>,
}

/// `DIR/results.json`: the plan, the machine and every run.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct MatrixResults {
    pub plan: Plan,
    pub machine: Machine,
    /// How the gateway was reached ("started", a URL, or "none: why").
    pub gateway: String,
    /// Transport, credential and core sets (results of older kits have none).
    #[serde(default)]
    pub setup: Setup,
    pub cells: Vec<Cell>,
}

/// How the gateway cells were sent, for the report.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct Setup {
    pub protocol: String,
    pub credential: String,
    pub pinning: Pinning,
    /// A target gateway's URL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
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

impl Setup {
    /// The transport, or what older results imply.
    pub fn protocol_or_default(&self) -> &str {
        match self.protocol.as_str() {
            "" => "HTTP/1.1 (not recorded)",
            p => p,
        }
    }

    /// The credential, or that older results did not record it.
    pub fn credential_or_default(&self) -> &str {
        match self.credential.as_str() {
            "" => "credential not recorded",
            c => c,
        }
    }
}

impl Cell {
    /// A cell for `key`, not run yet.
    fn of(key: &RunKey) -> Cell {
        Cell {
            via: key.target,
            scenario: key.scenario,
            method: key.method.to_owned(),
            users: key.users,
            size: key.size,
            delay_ms: key.delay_ms,
            graphql_query: key.graphql_query,
            skipped: None,
            result: None,
        }
    }
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

/// The base URL a scenario goes through: the secured scenarios use `/secured/v1` next
/// to the echo API (`/secured/v1/mediation` for the rewrite), found from the echo API's
/// URL (`Scenario::default_path`); `None` when that URL does not end in `/echo/v1`.
fn scenario_base(echo_api: &str, scenario: Option<Scenario>) -> Option<String> {
    match scenario.map(Scenario::default_path) {
        None | Some("/echo/v1") => Some(echo_api.to_owned()),
        Some(path) => echo_api
            .trim_end_matches('/')
            .strip_suffix("/echo/v1")
            .map(|root| format!("{root}{path}")),
    }
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

/// A credential of the secured scenarios: the header template and the tokens it is
/// filled with (cycled over requests).
#[derive(Debug, Clone)]
struct Credential {
    header: String,
    tokens: Arc<[String]>,
    /// For the report.
    describe: String,
}

/// The bench issuer's `n` JWTs, sent as `Authorization: Bearer`.
fn bench_jwts(n: usize) -> Result<Credential, BenchError> {
    let tokens = crate::bench_token::issuer()?.pool(n)?;
    Ok(Credential {
        header: crate::setup::default_header(),
        tokens: tokens.into(),
        describe: format!("JWT (ES256, bench issuer), {n} distinct token(s)"),
    })
}

/// The secured scenarios' credential: a target's token source, else the plan's `auth`
/// against the matrix's own gateway (a `--gateway-url` gateway gets the bench API key:
/// it cannot know this process's issuer key).
async fn credential(plan: &Plan, args: &MatrixArgs) -> Result<Option<Credential>, BenchError> {
    if let Some(t) = &plan.target {
        let Some(src) = &t.token else {
            return Ok(None);
        };
        let tokens = src
            .resolve(plan.tokens, t.insecure || args.insecure)
            .await?;
        let describe = format!("{} token(s) sent as `{}`", tokens.len(), src.header);
        return Ok(Some(Credential {
            header: src.header.clone(),
            tokens: tokens.into(),
            describe,
        }));
    }
    match (plan.auth, &args.gateway_url) {
        (Auth::Jwt, None) => bench_jwts(plan.tokens).map(Some),
        _ => Ok(Some(Credential {
            header: "apikey: {token}".into(),
            tokens: vec![BENCH_API_KEY.to_owned()].into(),
            describe: "API key (`apikey` header)".into(),
        })),
    }
}

/// Where a delay's gateway runs go.
struct GatewayAt {
    /// The echo API's base (`…/echo/v1`).
    echo_api: String,
    target: Option<crate::setup::Target>,
    pid: Option<u32>,
    insecure: bool,
}

impl GatewayAt {
    fn url(&self, s: Scenario) -> Option<String> {
        match &self.target {
            Some(t) => Some(t.scenario_url(s.name(), s.default_path())),
            None => scenario_base(&self.echo_api, Some(s)),
        }
    }
}

/// The processes and URLs of one back-end delay (children live as long as it).
struct Stage {
    _procs: Vec<Proc>,
    echo_base: String,
    delay_in_query: bool,
    graphql_base: Option<String>,
    gateway: Result<GatewayAt, String>,
}

/// What every run of a matrix shares, fixed before the first.
struct Session {
    plan: Plan,
    args: MatrixArgs,
    exe: PathBuf,
    warmup: Duration,
    duration: Duration,
    pinning: Pinning,
    credential: Option<Credential>,
    /// The GraphQL API's JWTs (it is JWT-secured whatever `auth` says).
    graphql_jwt: Option<Credential>,
}

impl Session {
    async fn new(args: MatrixArgs) -> Result<Session, BenchError> {
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
        let cpus = pin::allowed();
        if let Pin::Sets(sets) = &plan.pin {
            let errors = pin::check(sets, &cpus);
            if !errors.is_empty() {
                return Err(BenchError::Usage(errors.join("; ")));
            }
        }
        let own_gateway = plan.target.is_none() && args.gateway_url.is_none() && !args.no_gateway;
        let mut pinning = pin::plan(&plan.pin, &cpus, own_gateway);
        let own_backend =
            args.echo_url.is_none() && plan.target.as_ref().is_none_or(|t| t.backend.is_none());
        if !own_backend {
            // A back end the matrix did not start is not its to pin.
            pinning.backend = None;
        }
        let pinning = pin::apply(pinning);
        let credential = credential(&plan, &args).await?;
        let graphql_jwt = match plan.scenarios.contains(&Scenario::Graphql) {
            true => Some(bench_jwts(plan.tokens)?),
            false => None,
        };
        Ok(Session {
            plan,
            args,
            exe,
            warmup,
            duration,
            pinning,
            credential,
            graphql_jwt,
        })
    }

    fn setup(&self) -> Setup {
        Setup {
            protocol: self.plan.protocol.name().to_owned(),
            credential: self
                .credential
                .as_ref()
                .map_or("none".to_owned(), |c| c.describe.clone()),
            pinning: self.pinning.clone(),
            target: self.plan.target.as_ref().map(|t| t.url.clone()),
        }
    }

    /// Starts (or finds) the back ends and the gateway of one delay.
    async fn stage(&self, delay: u64) -> Result<Stage, BenchError> {
        let mut procs = Vec::new();
        let backend = self
            .plan
            .target
            .as_ref()
            .and_then(|t| t.backend.clone())
            .or_else(|| self.args.echo_url.clone());
        let cpus = self.pinning.backend.as_deref();
        let (echo_base, delay_in_query) = match &backend {
            Some(url) => (url.trim_end_matches('/').to_owned(), true),
            None => {
                let (p, url) = start_echo(&self.exe, delay, false, cpus).await?;
                procs.push(p);
                (url, false)
            }
        };
        let graphql_base = match (&backend, self.graphql_jwt.is_some()) {
            (None, true) => {
                let (p, url) = start_echo(&self.exe, delay, true, cpus).await?;
                procs.push(p);
                Some(format!("{url}/graphql"))
            }
            _ => None,
        };
        let gateway = self
            .gateway(delay, &echo_base, graphql_base.as_deref(), &mut procs)
            .await;
        Ok(Stage {
            _procs: procs,
            echo_base,
            delay_in_query,
            graphql_base,
            gateway,
        })
    }

    async fn gateway(
        &self,
        delay: u64,
        echo_base: &str,
        graphql_base: Option<&str>,
        procs: &mut Vec<Proc>,
    ) -> Result<GatewayAt, String> {
        let insecure = self.args.insecure;
        if self.args.no_gateway {
            return Err("--no-gateway given".into());
        }
        if let Some(t) = &self.plan.target {
            return Ok(GatewayAt {
                echo_api: t.scenario_url("passthrough", "/echo/v1"),
                pid: t.pid.or(self.args.gateway_pid),
                insecure: t.insecure || insecure,
                target: Some(t.clone()),
            });
        }
        if let Some(url) = &self.args.gateway_url {
            return Ok(GatewayAt {
                echo_api: url.trim_end_matches('/').to_owned(),
                target: None,
                pid: self.args.gateway_pid,
                insecure,
            });
        }
        let opts = GatewayOpts {
            auth: self.plan.auth,
            tls: self.plan.protocol.tls(),
            cpus: self.pinning.gateway.as_deref(),
        };
        let tag = format!("delay-{delay}");
        match start_gateway(
            &self.exe,
            echo_base,
            graphql_base,
            &self.args.out,
            &tag,
            &opts,
        )
        .await
        {
            Ok((p, base)) => {
                let pid = p.pid();
                procs.push(p);
                // The gateway's own self-signed pair.
                Ok(GatewayAt {
                    echo_api: base,
                    target: None,
                    pid,
                    insecure: true,
                })
            }
            Err(e) => {
                eprintln!("gateway unavailable for delay {delay} ms: {e}");
                Err(format!("gateway unavailable: {e}"))
            }
        }
    }

    /// The arguments of one run, or why it cannot run.
    fn run_args(&self, stage: &Stage, key: &RunKey) -> Result<RunArgs, String> {
        let foreign = self.args.gateway_url.is_some() || self.plan.target.is_some();
        if let Some(why) = graphql_unreachable(key, foreign, stage.graphql_base.is_some()) {
            return Err(why.to_owned());
        }
        if let Some(reason) = key.scenario.and_then(|s| s.skip_reason()) {
            return Err(reason.to_owned());
        }
        let (base, gateway) = match (key.target, key.scenario) {
            (Via::Gateway, Some(s)) => {
                let g = stage.gateway.as_ref().map_err(Clone::clone)?;
                let url = g.url(s).ok_or_else(|| {
                    format!(
                        "needs a gateway URL ending in /echo/v1 to find /secured/v1 (got {})",
                        g.echo_api
                    )
                })?;
                (url, Some(g))
            }
            _ => match (key.graphql_query, &stage.graphql_base) {
                (Some(_), Some(g)) => (g.clone(), None),
                _ => (stage.echo_base.clone(), None),
            },
        };
        let (url, soap) = match key.graphql_query {
            // WSO2's query N POSTed to the base URL itself.
            Some(_) => (base, None),
            None => soap_target(&base, key, stage.delay_in_query),
        };
        let mut a = RunArgs::closed(url, key.users, self.duration, self.warmup);
        let post = soap.is_some() || matches!(key.method, "SOAP" | "GRAPHQL");
        a.method = Some(if post { "POST" } else { key.method }.to_owned());
        a.soap = soap;
        a.graphql = key.graphql_query;
        a.size = (key.method != "GET" && key.graphql_query.is_none()).then_some(key.size);
        a.threads = self.args.threads;
        a.insecure = self.args.insecure;
        a.timeout = Duration::from_secs(60);
        if let Some(g) = gateway {
            a.pid = g.pid;
            a.insecure |= g.insecure;
            a.http2 = self.plan.protocol.http2();
            let credential = match key.scenario {
                Some(Scenario::Graphql) => self.graphql_jwt.as_ref(),
                Some(s) if s.is_secured() => self.credential.as_ref(),
                _ => None,
            };
            if let Some(c) = credential {
                a.token_header = c.header.clone();
                a.token_pool = Some(c.tokens.clone());
            }
        }
        Ok(a)
    }
}

/// `direct POST users=… size=… delay=…ms` for the progress lines.
fn label(key: &RunKey) -> String {
    format!(
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
    )
}

/// `turnpike bench matrix`.
pub async fn run(args: MatrixArgs) -> Result<(), BenchError> {
    let session = Session::new(args).await?;
    let plan = &session.plan;
    let total = plan
        .runs()
        .iter()
        .filter(|k| k.scenario.is_none_or(|s| s.skip_reason().is_none()))
        .count();
    let mut results = MatrixResults {
        plan: plan.clone(),
        machine: Machine::detect(session.args.label.clone()),
        gateway: String::new(),
        setup: session.setup(),
        cells: Vec::new(),
    };
    eprintln!(
        "matrix: {} to the gateway, {}; {}",
        results.setup.protocol,
        results.setup.credential,
        results.setup.pinning.describe()
    );
    let started = Instant::now();
    let mut done = 0usize;
    let per_run = session.warmup + session.duration;
    for &delay in &plan.delays_ms {
        let stage = session.stage(delay).await?;
        results.gateway = match (&stage.gateway, &plan.target, &session.args.gateway_url) {
            (Ok(_), Some(t), _) => t.url.clone(),
            (Ok(_), None, Some(url)) => url.clone(),
            (Ok(_), None, None) => "started by the matrix".into(),
            (Err(e), _, _) => format!("none: {e}"),
        };
        for key in plan.runs_for_delay(delay) {
            let mut cell = Cell::of(&key);
            done += 1;
            match session.run_args(&stage, &key) {
                Err(why) => cell.skipped = Some(why),
                Ok(run_args) => match execute(&run_args).await {
                    Ok(r) => {
                        let s = &r.summary;
                        let left = total.saturating_sub(done) as u32;
                        let avg_run = started.elapsed() / done.max(1) as u32;
                        eprintln!(
                            "[{done:>3}/{total}] {} elapsed, ETA {}  {}: {:.0} req/s avg {:.2} ms p99 {:.2} ms err {:.2}%",
                            fmt_secs(started.elapsed()),
                            fmt_secs(avg_run.max(per_run) * left),
                            label(&key),
                            s.throughput_rps,
                            s.avg_ms,
                            s.p99_ms,
                            s.error_pct
                        );
                        cell.result = Some(r);
                    }
                    Err(e) => {
                        eprintln!("[{done:>3}/{total}] {}: failed: {e}", label(&key));
                        cell.skipped = Some(format!("run failed: {e}"));
                    }
                },
            }
            results.cells.push(cell);
            save(&session.args.out, &results)?;
        }
    }
    save(&session.args.out, &results)?;
    for line in transformation_ratios(&results)
        .into_iter()
        .chain(crate::report::graphql::ratio_lines(&results))
    {
        eprintln!("{line}");
    }
    let slos = crate::report::parse_slos(&session.args.slo)?;
    let index = crate::report::write_compared(&session.args.out, &slos, &session.args.compare)?;
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
/// --graphql`, which a remote echo or gateway (`foreign`) does not know. `None` for other
/// runs.
fn graphql_unreachable(key: &RunKey, foreign: bool, have_echo: bool) -> Option<&'static str> {
    key.graphql_query?;
    if !have_echo {
        return Some("the graphql scenario needs the matrix's own `turnpike echo --graphql` (not with --echo-url or a target's backend)");
    }
    if key.target == Via::Gateway && foreign {
        return Some("the graphql scenario needs the matrix's own gateway (its /starwars/v1 API), not --gateway-url or a target");
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
        assert!(Scenario::Graphql.is_secured());
        assert!(Scenario::Transformation.is_secured());
        assert!(!Scenario::Passthrough.is_secured());
    }

    #[test]
    fn the_graphql_api_is_added_only_with_a_graphql_back_end() {
        let plain = gateway_config("http://127.0.0.1:9000");
        assert!(!plain.contains("/starwars"));
        let jwk = serde_json::json!({"kty": "EC", "crv": "P-256", "x": "AA", "y": "AA"});
        let c = gateway_config_with(
            "http://127.0.0.1:9000",
            Some(("http://127.0.0.1:9001/graphql", &jwk)),
            Auth::ApiKey,
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
