//! `turnpike apply -f apis.yaml --control-plane URL --user U` (or `TURNPIKE_TOKEN`, a
//! REST-API bearer token): reconciles a declarative API file (the DB-less format,
//! `turnpike_model::GatewayFile`) against a control plane, like decK or apictl. The file
//! goes whole to `POST /api/am/publisher/v1/apply`, which checks it and applies it in ONE
//! store transaction (crates/turnpike-admin's `service/apply.rs`: tiers, throttling
//! settings, each API created or updated by context + version, secured and published;
//! with `--prune`, live APIs the file no longer lists are demoted to CREATED;
//! applications ensured with their subscriptions, keys checked by reference): any
//! problem, listed all at once, leaves the control plane as it was. Idempotent: a second
//! run changes nothing. Prints one line per change; `--dry-run` is the same run rolled
//! back, so it prints the lines and errors the real run would.

use base64::Engine;
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use serde_json::Value;

pub(crate) type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// Where the control plane is and who calls it (`turnpike apply`, `turnpike export`).
#[derive(Debug, Clone, clap::Args)]
pub struct Connection {
    /// Control plane base URL.
    #[arg(
        long,
        env = "TURNPIKE_CONTROL_PLANE",
        default_value = "http://127.0.0.1:9400"
    )]
    pub control_plane: String,
    /// User name (the publisher role for `apply`, admin for `export`).
    #[arg(long, env = "TURNPIKE_USER", default_value = "admin")]
    pub user: String,
    /// Password (prefer the environment variable).
    #[arg(long, env = "TURNPIKE_PASSWORD", hide_env_values = true)]
    pub password: Option<String>,
    /// A REST-API bearer token instead of a password (`turnpike login`; `apply` needs
    /// `apim:api_view apim:api_create apim:api_publish`).
    #[arg(long, env = "TURNPIKE_TOKEN", hide_env_values = true)]
    pub token: Option<String>,
    /// How an `https://` control plane is verified.
    #[command(flatten)]
    pub tls: crate::http::TlsArgs,
}

impl Connection {
    /// The base URL without a trailing `/`.
    pub(crate) fn base(&self) -> String {
        self.control_plane.trim_end_matches('/').to_string()
    }

    /// The `Authorization` value: the bearer token, else Basic with the password.
    pub(crate) fn auth_header(&self) -> Result<String, BoxError> {
        match (&self.token, &self.password) {
            (Some(t), _) => Ok(format!("Bearer {t}")),
            (None, Some(p)) => Ok(format!(
                "Basic {}",
                base64::engine::general_purpose::STANDARD.encode(format!("{}:{p}", self.user))
            )),
            (None, None) => Err("set TURNPIKE_PASSWORD (or --password) or TURNPIKE_TOKEN".into()),
        }
    }
}

/// Command-line arguments of `turnpike apply`.
#[derive(Debug, Clone, clap::Args)]
pub struct ApplyArgs {
    /// The declarative file (YAML or JSON).
    #[arg(short = 'f', long)]
    pub file: std::path::PathBuf,
    #[command(flatten)]
    pub connection: Connection,
    /// Demote live APIs the file does not list.
    #[arg(long)]
    pub prune: bool,
    /// Print what would change without changing it.
    #[arg(long)]
    pub dry_run: bool,
}

/// Runs the reconciliation; a refusal is the error.
pub async fn run(args: ApplyArgs) -> Result<(), BoxError> {
    reconcile(args).await.map(|_| ())
}

/// [`run`], returning the number of changes made (or, with `--dry-run`, that a run
/// would make).
pub async fn reconcile(args: ApplyArgs) -> Result<usize, BoxError> {
    let name = args.file.display().to_string();
    let text = std::fs::read_to_string(&args.file).map_err(|e| format!("{name}: {e}"))?;
    let query = match (args.dry_run, args.prune) {
        (false, false) => "",
        (true, false) => "?dryRun=true",
        (false, true) => "?prune=true",
        (true, true) => "?dryRun=true&prune=true",
    };
    let req = http::Request::post(format!(
        "{}/api/am/publisher/v1/apply{query}",
        args.connection.base()
    ))
    .header("authorization", args.connection.auth_header()?)
    .header("content-type", "application/yaml")
    .body(Full::new(Bytes::from(text)))?;
    let client = args.connection.tls.client()?;
    let resp = crate::http::send(&client, req).await?;
    let status = resp.status();
    let body = resp.into_body().collect().await?.to_bytes();
    let v: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    if !status.is_success() {
        return Err(refusal(&name, status, &v, &body).into());
    }
    for line in v["changes"].as_array().into_iter().flatten() {
        println!("{}", line.as_str().unwrap_or_default());
    }
    for warning in v["warnings"].as_array().into_iter().flatten() {
        eprintln!("warning: {}", warning.as_str().unwrap_or_default());
    }
    let changes = v["count"].as_u64().unwrap_or_default() as usize;
    println!(
        "{changes} change(s){}",
        if args.dry_run { " (dry run)" } else { "" }
    );
    Ok(changes)
}

/// The error of a refused file: every problem the control plane listed, one a line.
fn refusal(name: &str, status: http::StatusCode, v: &Value, body: &[u8]) -> String {
    let problems: Vec<String> = v["errors"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|e| {
            let field = e["field"].as_str().unwrap_or_default();
            let message = e["message"].as_str().unwrap_or_default();
            match field.is_empty() {
                true => message.to_string(),
                false => format!("{field}: {message}"),
            }
        })
        .collect();
    if problems.is_empty() {
        let message = v["message"]
            .as_str()
            .map(str::to_owned)
            .unwrap_or_else(|| String::from_utf8_lossy(body).into_owned());
        return format!("{name}: HTTP {status}: {message}; nothing was applied");
    }
    let mut msg = format!(
        "{name}: {} problem(s), nothing was applied:",
        problems.len()
    );
    for p in problems {
        msg.push_str("\n  ");
        msg.push_str(&p);
    }
    msg
}
