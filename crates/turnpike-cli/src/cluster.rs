//! `turnpike cluster status --control-plane URL [--max-lag SECONDS]`: every gateway the
//! control planes know (they share one database, any of them answers), the version each
//! serves, its lag and last contact, from the Admin API's `/gateways`. Exits non-zero
//! when any gateway lags past the threshold (behind the newest version, or silent past
//! its next poll: a stopped gateway), so a deploy script or a probe can wait on it.

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use serde_json::Value;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// `turnpike cluster ...`
#[derive(Debug, Clone, clap::Subcommand)]
pub enum ClusterCommand {
    /// Every gateway with its version, lag and last contact; non-zero exit past --max-lag.
    Status(StatusArgs),
}

/// Command-line arguments of `turnpike cluster status`.
#[derive(Debug, Clone, clap::Args)]
pub struct StatusArgs {
    /// Any control plane (they share one database); the user needs the admin role
    /// (a token needs `apim:admin`).
    #[command(flatten)]
    pub connection: crate::apply::Connection,
    /// Seconds a gateway may lag before it counts as lagging (and the exit is non-zero).
    #[arg(long, default_value_t = 30.0)]
    pub max_lag: f64,
    /// Print the Admin API's JSON instead of a table.
    #[arg(long)]
    pub json: bool,
}

pub async fn run(cmd: ClusterCommand) -> Result<(), BoxError> {
    match cmd {
        ClusterCommand::Status(args) => status(args).await,
    }
}

async fn status(args: StatusArgs) -> Result<(), BoxError> {
    if !(args.max_lag.is_finite() && args.max_lag >= 0.0) {
        return Err("--max-lag is seconds, 0 or more".into());
    }
    let auth = args.connection.auth_header()?;
    let url = format!(
        "{}/api/am/admin/v1/gateways?maxLag={}",
        args.connection.base(),
        args.max_lag
    );
    let req = http::Request::get(&url)
        .header("authorization", auth)
        .body(Full::<Bytes>::default())?;
    let client = args.connection.tls.client()?;
    let resp = crate::http::send(&client, req).await?;
    let code = resp.status();
    let body = resp.into_body().collect().await?.to_bytes();
    let v: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    if !code.is_success() {
        return Err(format!("{url}: HTTP {code}: {v}").into());
    }
    if args.json {
        println!("{v:#}");
    } else {
        print!("{}", table(&v));
    }
    let lagging = v["lagging"].as_u64().unwrap_or(0);
    if lagging > 0 {
        return Err(format!(
            "{lagging} of {} gateways lag more than {} s",
            v["count"].as_u64().unwrap_or(0),
            args.max_lag
        )
        .into());
    }
    Ok(())
}

/// The gateways as aligned text, one line each.
fn table(v: &Value) -> String {
    let mut out = format!(
        "control plane version {}\n",
        v["controlPlaneVersion"].as_u64().unwrap_or(0)
    );
    let list = v["list"].as_array().cloned().unwrap_or_default();
    if list.is_empty() {
        out.push_str("no gateway has polled this cluster\n");
        return out;
    }
    out.push_str(&format!(
        "{:<24} {:>8} {:>7} {:>10} {:>12} {:>9}  {:<8} {}\n",
        "GATEWAY", "VERSION", "BEHIND", "LAG", "LAST SEEN", "APPLY", "STATE", "CONTROL PLANE"
    ));
    let ms = |x: &Value| match x.as_u64() {
        Some(n) => format!("{:.1}s", n as f64 / 1000.0),
        None => "-".into(),
    };
    for g in &list {
        let state = if g["lagging"].as_bool() == Some(true) {
            "LAGGING"
        } else {
            "ok"
        };
        out.push_str(&format!(
            "{:<24} {:>8} {:>7} {:>10} {:>12} {:>9}  {:<8} {}\n",
            g["id"].as_str().unwrap_or(""),
            g["servingVersion"].as_u64().unwrap_or(0),
            g["versionsBehind"].as_u64().unwrap_or(0),
            ms(&g["lagMs"]),
            ms(&g["lastSeenMsAgo"]),
            match g["applyMs"].as_u64() {
                Some(n) => format!("{n}ms"),
                None => "-".into(),
            },
            state,
            g["controlPlane"].as_str().unwrap_or(""),
        ));
        out.push_str(&endpoints_not_active(g));
    }
    out
}

/// One indented line per endpoint the gateway reported not `active` (suspended,
/// probing, unhealthy): what an operator looks for first.
fn endpoints_not_active(g: &Value) -> String {
    let mut out = String::new();
    let list = g["endpoints"].as_array().map_or(&[][..], Vec::as_slice);
    for e in list.iter().filter(|e| e["state"] != "active") {
        out.push_str(&format!(
            "  endpoint {:<10} {} ({}) {} [{}]\n",
            e["state"].as_str().unwrap_or(""),
            e["id"].as_str().unwrap_or(""),
            e["api"].as_str().unwrap_or(""),
            e["endpoint"].as_str().unwrap_or(""),
            e["pool"].as_str().unwrap_or(""),
        ));
    }
    out
}
