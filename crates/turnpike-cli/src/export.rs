//! `turnpike export`: the control plane's configuration as the declarative file
//! `turnpike apply` takes back (`GET /api/am/admin/v1/export`, an admin's call), written
//! to a file or stdout. What it holds is the endpoint's doc: crates/turnpike-admin's
//! `rest/export.rs`.

use bytes::Bytes;
use http_body_util::{BodyExt, Full};

use crate::apply::{BoxError, Connection};

/// Command-line arguments of `turnpike export`.
#[derive(Debug, Clone, clap::Args)]
pub struct ExportArgs {
    #[command(flatten)]
    pub connection: Connection,
    /// Where to write the file; `-` (the default) is stdout.
    #[arg(short = 'o', long, default_value = "-")]
    pub out: std::path::PathBuf,
    /// JSON instead of YAML.
    #[arg(long)]
    pub json: bool,
}

/// Fetches the file; the body as the control plane sent it.
pub async fn fetch(args: &ExportArgs) -> Result<Bytes, BoxError> {
    let auth = args.connection.auth_header()?;
    let accept = if args.json {
        "application/json"
    } else {
        "application/yaml"
    };
    let req = http::Request::get(format!("{}/api/am/admin/v1/export", args.connection.base()))
        .header("authorization", auth)
        .header("accept", accept)
        .body(Full::<Bytes>::default())?;
    let client = args.connection.tls.client()?;
    let resp = crate::http::send(&client, req).await?;
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
