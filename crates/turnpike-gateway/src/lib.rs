//! The data plane. Owns the listeners (HTTP, HTTPS), the request path (route, policies,
//! upstream proxy), and the one `ArcSwap<Snapshot>` a request loads once. Must not depend
//! on a store or the control plane: it only ever sees snapshots.

/// Command-line arguments of `turnpike gateway`.
#[derive(Debug, Clone, clap::Args)]
pub struct GatewayArgs {
    /// Declarative API file (DB-less mode).
    #[arg(long, env = "TURNPIKE_CONFIG")]
    pub config: std::path::PathBuf,
    /// Plain HTTP port.
    #[arg(long, env = "TURNPIKE_HTTP_PORT", default_value_t = 8280)]
    pub http_port: u16,
}

/// Runs the gateway until SIGTERM/SIGINT.
pub async fn run(args: GatewayArgs) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let _ = args;
    Err("not implemented yet".into())
}
