//! Running the control plane as a server: `turnpike control-plane` arguments, opening the
//! store, creating the first admin, binding port 9400, and stopping cleanly.

use std::net::SocketAddr;
use std::time::Duration;

use tokio::sync::oneshot;
use turnpike_store::Store;

use crate::{AdminConfig, AppState};

/// Command-line arguments of `turnpike control-plane`.
#[derive(Debug, Clone, clap::Args)]
pub struct ControlPlaneArgs {
    /// `sqlite://PATH` (created if missing) or `postgres://USER@HOST:PORT/DB`.
    #[arg(
        long,
        env = "TURNPIKE_DATABASE",
        default_value = "sqlite://./data/turnpike.db"
    )]
    pub database: String,
    /// Address to listen on.
    #[arg(long, env = "TURNPIKE_CP_BIND", default_value = "127.0.0.1")]
    pub bind: std::net::IpAddr,
    /// REST port (0 for any free port).
    #[arg(long, env = "TURNPIKE_CP_PORT", default_value_t = 9400)]
    pub port: u16,
    /// Token gateways present to fetch snapshots; generated and printed when absent.
    #[arg(long, env = "TURNPIKE_GATEWAY_TOKEN")]
    pub gateway_token: Option<String>,
    /// Password of the first admin (only used when the store has no user yet).
    #[arg(long, env = "TURNPIKE_ADMIN_PASSWORD", hide_env_values = true)]
    pub admin_password: Option<String>,
    /// The control plane's public URL: `iss` of the tokens its key manager issues, and
    /// where gateways introspect opaque tokens. Default `http://BIND:PORT` as bound.
    #[arg(long, env = "TURNPIKE_CP_PUBLIC_URL")]
    pub public_url: Option<String>,
    /// How long analytics rollups are kept at each resolution (docs/analytics.md).
    #[command(flatten)]
    pub analytics: crate::rest::analytics::RetentionArgs,
    /// Seconds a gateway may lag (behind the newest version, or silent past its next
    /// poll) before `/gateways` and `/metrics` count it as lagging.
    #[arg(long, env = "TURNPIKE_GATEWAY_MAX_LAG", default_value_t = 30.0)]
    pub gateway_max_lag: f64,
    /// Largest body of an import request (OpenAPI, WSDL, GraphQL, or a zip of one) and of a
    /// document an import fetches by URL, in bytes, or with a KiB/MiB suffix (`32MiB`).
    /// Other requests keep the 2 MiB limit.
    #[arg(long, env = "TURNPIKE_MAX_IMPORT_SIZE", default_value = "16MiB", value_parser = parse_size)]
    pub max_import_size: usize,
    /// HTTPS (docs/operations.md "TLS").
    #[command(flatten)]
    pub tls: crate::tls::CpTlsArgs,
}

/// Most an import may be set to take: the whole description is held in memory.
const MAX_IMPORT_SIZE: usize = 1 << 30;

/// A size in bytes: digits, optionally followed by `KiB` or `MiB` (1 B to 1 GiB).
fn parse_size(text: &str) -> Result<usize, String> {
    let t = text.trim();
    let (digits, unit) = match t.find(|c: char| !c.is_ascii_digit()) {
        Some(i) => t.split_at(i),
        None => (t, ""),
    };
    let scale = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kib" | "kb" => 1 << 10,
        "m" | "mib" | "mb" => 1 << 20,
        other => return Err(format!("unknown unit {other:?} (bytes, KiB or MiB)")),
    };
    digits
        .parse::<usize>()
        .ok()
        .and_then(|n| n.checked_mul(scale))
        .filter(|n| (1..=MAX_IMPORT_SIZE).contains(n))
        .ok_or_else(|| format!("{text:?}: a size from 1 byte to 1024MiB"))
}

/// A running control plane.
pub struct Running {
    pub addr: SocketAddr,
    /// `http://ADDR` or `https://ADDR`: where gateways and clients reach it.
    pub url: String,
    pub state: AppState,
    /// The admin password when this start created the admin with a generated one
    /// (`None` when the operator chose it: it is never printed back).
    pub created_admin_password: Option<String>,
    pub gateway_token: String,
    stop: oneshot::Sender<()>,
    join: tokio::task::JoinHandle<std::io::Result<()>>,
    compaction: tokio::task::JoinHandle<()>,
    maintenance: tokio::task::JoinHandle<()>,
}

impl Running {
    /// Stops accepting, lets in-flight requests finish, closes the store.
    pub async fn stop(self) {
        self.state.begin_shutdown();
        self.compaction.abort();
        self.maintenance.abort();
        let _ = self.stop.send(());
        let _ = self.join.await;
        // Another control plane takes the derived-state jobs over at once.
        self.state.store().resign().await;
        self.state.store().close().await;
    }
}

/// Opens the store (creating a SQLite file's directory), ensures an admin, and serves.
pub async fn start(
    args: &ControlPlaneArgs,
) -> Result<Running, Box<dyn std::error::Error + Send + Sync>> {
    if let Some(path) = args.database.strip_prefix("sqlite://") {
        let path = path.split('?').next().unwrap_or(path);
        if let Some(dir) = std::path::Path::new(path)
            .parent()
            .filter(|d| !d.as_os_str().is_empty())
        {
            std::fs::create_dir_all(dir)?;
        }
    }
    let store = Store::open(&args.database).await?;
    let gateway_token = args
        .gateway_token
        .clone()
        .unwrap_or_else(crate::random_secret);
    let state = AppState::new(
        store,
        AdminConfig {
            gateway_token: gateway_token.clone(),
            long_poll: Duration::from_secs(30),
            max_lag: max_lag(args.gateway_max_lag)?,
            import_limit: args.max_import_size,
            ..AdminConfig::default()
        },
    );
    // Only a generated password is handed back (to be shown once): one the operator
    // chose (TURNPIKE_ADMIN_PASSWORD) is never printed or logged.
    let preset = args
        .admin_password
        .as_deref()
        .is_some_and(|p| !p.is_empty());
    let created_admin_password = crate::ensure_admin(&state, args.admin_password.clone())
        .await
        .map_err(|e| format!("creating the admin: {}", e.message))?
        .filter(|_| !preset);
    let tls = args.tls.server_tls()?;
    let listener = tokio::net::TcpListener::bind((args.bind, args.port)).await?;
    let addr = listener.local_addr()?;
    let scheme = if tls.is_some() { "https" } else { "http" };
    let url = format!("{scheme}://{addr}");
    let public_url = args.public_url.clone().unwrap_or_else(|| url.clone());
    crate::security::enable(&state, &public_url).await?;
    let (stop, rx) = oneshot::channel::<()>();
    let compaction =
        crate::rest::analytics::spawn_compaction(state.store().clone(), args.analytics.retention());
    let maintenance = spawn_maintenance(state.store().clone());
    let shutdown = async move {
        let _ = rx.await;
    };
    let join = match tls {
        Some(tls) => {
            let served = turnpike_tls::server_config(&tls)?;
            tokio::spawn(crate::serve_tls(
                listener,
                served.config,
                state.clone(),
                shutdown,
            ))
        }
        None => tokio::spawn(crate::serve(listener, state.clone(), shutdown)),
    };
    tracing::info!(%addr, database = %turnpike_store::redact_url(&args.database), "control plane listening");
    Ok(Running {
        addr,
        url,
        state,
        created_admin_password,
        gateway_token,
        stop,
        join,
        compaction,
        maintenance,
    })
}

fn max_lag(secs: f64) -> Result<Duration, String> {
    if secs.is_finite() && secs > 0.0 && secs <= 86_400.0 * 365.0 {
        Ok(Duration::from_secs_f64(secs))
    } else {
        Err(format!(
            "--gateway-max-lag {secs}: seconds, more than 0 and at most a year"
        ))
    }
}

/// How often the leader prunes derived state.
const MAINTENANCE_EVERY: Duration = Duration::from_secs(60);

/// Prunes the subscription log, old manifests and forgotten gateways every minute,
/// in whichever control plane leads (`turnpike_store::Store::maintain`).
fn spawn_maintenance(store: Store) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        loop {
            tokio::time::sleep(MAINTENANCE_EVERY).await;
            match store.maintain().await {
                Ok(Some(done)) => tracing::debug!(?done, "control plane: maintenance"),
                Ok(None) => tracing::debug!("control plane: maintenance left to the leader"),
                Err(e) => tracing::warn!(error = %e, "control plane: maintenance failed"),
            }
        }
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn sizes_read_with_units_and_bounds() {
        assert_eq!(super::parse_size("16MiB"), Ok(16 << 20));
        assert_eq!(super::parse_size("512 KiB"), Ok(512 << 10));
        assert_eq!(super::parse_size("3000000"), Ok(3_000_000));
        assert_eq!(
            super::parse_size("16MiB").ok(),
            Some(crate::DEFAULT_IMPORT_LIMIT)
        );
        for bad in ["0", "2GiB", "1025MiB", "x", "-1", "99999999999999999999999"] {
            assert!(super::parse_size(bad).is_err(), "{bad}");
        }
    }
}
