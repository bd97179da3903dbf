//! The matrix's own processes: `turnpike echo` (the back end) and `turnpike gateway` (a
//! temporary YAML config: [`gateway_config_with`]) started as children of the current
//! executable, each under its core set (`taskset -c`, `pin.rs`), killed when dropped. The
//! gateway serves plain HTTP (its readiness probe) and, for a plan whose `protocol` is
//! `https` or `h2`, HTTPS with the self-signed pair it generates in its data directory.
//! The secured API takes the plan's credential: ES256 JWTs of the bench issuer
//! (`bench_token.rs`, trusted through its JWK) or the bench API key.

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use tokio::io::AsyncBufReadExt;
use tokio::process::Child;

use crate::pin::Pinning;
use crate::setup::Auth;
use crate::BenchError;

/// A child process killed when dropped.
pub struct Proc {
    child: Child,
    name: &'static str,
}

impl Proc {
    pub fn pid(&self) -> Option<u32> {
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
pub async fn start_echo(
    exe: &Path,
    delay_ms: u64,
    graphql: bool,
    cpus: Option<&str>,
) -> Result<(Proc, String), BenchError> {
    let kind = if graphql { "--graphql" } else { "--soap" };
    let mut child = Pinning::command(cpus, exe)
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

pub fn free_port() -> Result<u16, BenchError> {
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
/// scenarios) and `/secured/v1` (an API key and a subscription; with [`Auth::Jwt`]
/// through [`gateway_config_with`], the bench issuer's JWTs): `/secured/v1/mediation`
/// rewrites the request body with [`TRANSFORMATION_JQ`] (transformation), any other
/// path of it is proxied as is (secured-passthrough); `/soap/v1` is the echo's SOAP
/// service as a SOAP pass-through API and `/soaprest/v1` the same service published as
/// REST (both from the WSDL `turnpike echo --soap` serves).
pub fn gateway_config(echo_url: &str) -> String {
    gateway_config_with(echo_url, None, Auth::ApiKey)
}

/// [`gateway_config`], plus, with `graphql` (a `turnpike echo --graphql` URL and the
/// JWK of the bench issuer, [`crate::bench_token`]), the `graphql` scenario's API:
/// `/starwars/v1`, secured with JWT as the seed's tests were (the bench issuer trusted,
/// an Unlimited subscription for the bench application), the bundled Star Wars schema
/// with the limits bench/graphql.sh uses (depth 15, complexity 5000: WSO2's three
/// queries pass).
pub fn gateway_config_with(
    echo_url: &str,
    graphql: Option<(&str, &serde_json::Value)>,
    auth: Auth,
) -> String {
    // A JSON string is a valid YAML double-quoted scalar: the WSDL goes inline.
    let wsdl = serde_json::Value::String(crate::echo_soap::WSDL.to_owned()).to_string();
    let jwk = match (graphql, auth) {
        (Some((_, jwk)), _) => Some(jwk.clone()),
        (None, Auth::Jwt) => crate::bench_token::issuer().ok().map(|i| i.jwk.clone()),
        (None, Auth::ApiKey) => None,
    };
    let secured_auth = match auth {
        Auth::Jwt => "{ oauth2: true }",
        Auth::ApiKey => "{ oauth2: false, api_key: true }",
    };
    let issuers = match jwk {
        Some(jwk) => format!(
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
    - {{ api: /limited/v1, application: bench, state: ACTIVE, tier: BenchLimit }}
throttling:
  # Counts every request of secured-rate-limited; too high to refuse any.
  subscription_tiers:
    - {{ name: BenchLimit, quota: {{ requests: 1000000000, per: minute }} }}
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
    auth: {secured_auth}
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
{graphql_api}  - name: limited
    context: /limited
    version: v1
    endpoints: ["{echo_url}"]
    auth: {secured_auth}
    resources:
      - {{ path: "/*", methods: [GET, POST, PUT, DELETE] }}
"#
    )
}

/// How the matrix's gateway is started.
pub struct GatewayOpts<'a> {
    pub auth: Auth,
    /// Also listen on HTTPS (the self-signed pair); the base returned is then HTTPS.
    pub tls: bool,
    pub cpus: Option<&'a str>,
}

/// Starts `turnpike gateway` routing /echo/v1 to `echo_url` (and /starwars/v1 to
/// `graphql_url`); waits until it answers on plain HTTP; returns the echo API's base
/// (HTTPS with `opts.tls`).
pub async fn start_gateway(
    exe: &Path,
    echo_url: &str,
    graphql_url: Option<&str>,
    dir: &Path,
    tag: &str,
    opts: &GatewayOpts<'_>,
) -> Result<(Proc, String), String> {
    let config = dir.join(format!("gateway-{tag}.yaml"));
    let issuer = match (graphql_url, opts.auth) {
        (None, Auth::ApiKey) => None,
        _ => Some(crate::bench_token::issuer().map_err(|e| e.to_string())?),
    };
    let graphql = graphql_url.zip(issuer.map(|i| &i.jwk));
    std::fs::write(&config, gateway_config_with(echo_url, graphql, opts.auth))
        .map_err(|e| format!("writing {}: {e}", config.display()))?;
    let log_path = dir.join(format!("gateway-{tag}.log"));
    let log = std::fs::File::create(&log_path)
        .map_err(|e| format!("creating {}: {e}", log_path.display()))?;
    let port = free_port().map_err(|e| e.to_string())?;
    let https = match opts.tls {
        true => free_port().map_err(|e| e.to_string())?.to_string(),
        false => "off".to_owned(),
    };
    let child = Pinning::command(opts.cpus, exe)
        .args(["--log", "warn", "gateway", "--config"])
        .arg(&config)
        .args(["--http-port", &port.to_string(), "--https-port", &https])
        .arg("--data-dir")
        .arg(dir.join(format!("gateway-{tag}-data")))
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
            return Ok(match opts.tls {
                true => (proc, format!("https://127.0.0.1:{https}/echo/v1")),
                false => (proc, base),
            });
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
pub async fn probe(url: &str) -> Option<u16> {
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
            let fut = conn.exchange(&req, 0);
            tokio::time::timeout(Duration::from_secs(2), fut)
                .await
                .ok()?
                .ok()
                .map(|(s, _, _)| s)
        })
        .await
}
