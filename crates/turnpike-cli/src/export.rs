//! `turnpike export`: the control plane's configuration as the declarative file
//! `turnpike apply` takes back (`GET /api/am/admin/v1/export`, an admin's call), written
//! to a file or stdout. What it holds is the endpoint's doc: crates/turnpike-admin's
//! `rest/export.rs`.

use bytes::Bytes;
use http_body_util::{BodyExt, Empty};
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;

use crate::apply::{auth_header, BoxError};

/// Command-line arguments of `turnpike export`.
#[derive(Debug, Clone, clap::Args)]
pub struct ExportArgs {
    /// Control plane base URL.
    #[arg(
        long,
        env = "TURNPIKE_CONTROL_PLANE",
        default_value = "http://127.0.0.1:9400"
    )]
    pub control_plane: String,
    /// A user with the admin role.
    #[arg(long, env = "TURNPIKE_USER", default_value = "admin")]
    pub user: String,
    /// Password (prefer the environment variable).
    #[arg(long, env = "TURNPIKE_PASSWORD", hide_env_values = true)]
    pub password: Option<String>,
    /// A REST-API bearer token instead of a password.
    #[arg(long, env = "TURNPIKE_TOKEN", hide_env_values = true)]
    pub token: Option<String>,
    /// Where to write the file; `-` (the default) is stdout.
    #[arg(short = 'o', long, default_value = "-")]
    pub out: std::path::PathBuf,
    /// JSON instead of YAML.
    #[arg(long)]
    pub json: bool,
}

/// Fetches the file; the body as the control plane sent it.
pub async fn fetch(args: &ExportArgs) -> Result<Bytes, BoxError> {
    let auth = auth_header(&args.user, args.password.as_deref(), args.token.as_deref())?;
    let accept = if args.json {
        "application/json"
    } else {
        "application/yaml"
    };
    let req = http::Request::get(format!(
        "{}/api/am/admin/v1/export",
        args.control_plane.trim_end_matches('/')
    ))
    .header("authorization", auth)
    .header("accept", accept)
    .body(Empty::<Bytes>::new())?;
    let client = Client::builder(TokioExecutor::new()).build_http();
    let resp = client.request(req).await?;
    let status = resp.status();
    let body = resp.into_body().collect().await?.to_bytes();
    if !status.is_success() {
        return Err(format!("export: HTTP {status}: {}", String::from_utf8_lossy(&body)).into());
    }
    Ok(body)
}

pub async fn run(args: ExportArgs) -> Result<(), BoxError> {
    let body = fetch(&args).await?;
    if args.out.as_os_str() == "-" {
        use std::io::Write;
        std::io::stdout().write_all(&body)?;
    } else {
        std::fs::write(&args.out, &body)
            .map_err(|e| format!("writing {}: {e}", args.out.display()))?;
    }
    Ok(())
}
