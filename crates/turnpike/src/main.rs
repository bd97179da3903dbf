//! The `turnpike` binary: subcommands only. Each subcommand's arguments and behaviour
//! live in the crate that owns it.

use clap::{Parser, Subcommand};

mod cp;
mod logging;
mod mediation_try;
mod ops;

// The global allocator (mimalloc) comes with turnpike-alloc.
use turnpike_alloc as _;

/// Called when a runtime thread goes idle: once per release epoch (the gateway moves it
/// when idle connections were parked and their buffers freed), hands the thread's free
/// pages back to the OS (see turnpike-alloc).
fn return_freed_memory() {
    use std::cell::Cell;
    thread_local!(static SEEN: Cell<u64> = const { Cell::new(0) });
    let epoch = turnpike_gateway::memory_release_epoch();
    if SEEN.with(|s| s.replace(epoch)) != epoch {
        turnpike_alloc::return_free_memory();
    }
}

#[derive(Parser)]
#[command(name = "turnpike", version, about = "Turnpike API manager")]
struct Cli {
    /// Log filter (tracing EnvFilter syntax), e.g. `info` or `turnpike_gateway=debug`.
    #[arg(long, global = true, env = "TURNPIKE_LOG", default_value = "info")]
    log: String,
    /// Log line format on stderr: `text` (colour only on a terminal) or `json` (one
    /// object per line).
    #[arg(
        long,
        global = true,
        env = "TURNPIKE_LOG_FORMAT",
        value_enum,
        default_value = "text"
    )]
    log_format: logging::LogFormat,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run a gateway (data plane): DB-less with --config FILE, or following a control
    /// plane with --control-plane URL --gateway-token T.
    Gateway(turnpike_gateway::GatewayArgs),
    /// Run the echo back end used by the bench kit.
    Echo(turnpike_bench::echo::EchoArgs),
    /// Load tests: `run` one, a scenario `matrix`, a `report` with charts.
    Bench(turnpike_bench::BenchArgs),
    /// Run the control plane (REST APIs on 9400, snapshots for gateways).
    ControlPlane(cp::ControlPlaneCmd),
    /// All in one process: control plane, gateway and an echo demo API (SQLite in ./data).
    Up(cp::UpArgs),
    /// Reconcile a declarative API file against a control plane.
    Apply(turnpike_cli::apply::ApplyArgs),
    /// The cluster's gateways: `cluster status` shows each one's version and lag.
    #[command(subcommand)]
    Cluster(turnpike_cli::cluster::ClusterCommand),
    /// Print a REST-API bearer token (password grant, client turnpike-cli).
    Login(turnpike_cli::login::LoginArgs),
    /// Run an API's transformation from a file on a sample, without deploying it.
    MediationTry(mediation_try::TryArgs),
    /// Apply the database's pending migrations; `--check` only says what they are.
    Migrate(ops::MigrateArgs),
    /// A consistent copy of the control plane's database, taken while it runs.
    Backup(ops::BackupArgs),
    /// Replace the control plane's database with a backup (control planes stopped).
    Restore(ops::RestoreArgs),
    /// Write the configuration as a declarative file `turnpike apply` takes back.
    Export(turnpike_cli::export::ExportArgs),
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    logging::init(&cli.log, cli.log_format)?;
    // One gateway worker: a current-thread runtime (no work stealing, no cross-thread
    // wake-ups), which is what a proxy pinned to one core wants.
    let workers = match &cli.command {
        Command::Gateway(args) => args.workers,
        Command::Up(args) => args.gateway.workers,
        _ => None,
    };
    let mut builder = if workers == Some(1) {
        tokio::runtime::Builder::new_current_thread()
    } else {
        tokio::runtime::Builder::new_multi_thread()
    };
    if let Command::Echo(turnpike_bench::echo::EchoArgs {
        threads: Some(n), ..
    }) = &cli.command
    {
        builder.worker_threads(*n);
    }
    if let Some(n) = workers.filter(|n| *n > 1) {
        builder.worker_threads(n);
    }
    // Parked connections' freed memory goes back to the OS: from the sweep's thread, and
    // on a multi-threaded runtime from every worker when it goes idle.
    turnpike_gateway::set_memory_release(turnpike_alloc::return_free_memory);
    if workers != Some(1) {
        builder.on_thread_park(return_freed_memory);
    }
    let runtime = builder.enable_all().build()?;
    runtime
        .block_on(async {
            match cli.command {
                Command::Gateway(args) if !args.control_plane.is_empty() => cp::follow(args).await,
                Command::Gateway(args) => turnpike_gateway::run(args).await,
                Command::Echo(args) => turnpike_bench::echo::run(args).await,
                Command::Bench(args) => turnpike_bench::run(args).await,
                Command::ControlPlane(args) => cp::control_plane(args).await,
                Command::Up(args) => cp::up(args).await,
                Command::Apply(args) => turnpike_cli::apply::run(args).await,
                Command::Login(args) => turnpike_cli::login::run(args).await,
                Command::Cluster(cmd) => turnpike_cli::cluster::run(cmd).await,
                Command::MediationTry(args) => mediation_try::run(args).map_err(Into::into),
                Command::Migrate(args) => ops::migrate(args).await,
                Command::Backup(args) => ops::backup(args).await,
                Command::Restore(args) => ops::restore(args).await,
                Command::Export(args) => turnpike_cli::export::run(args).await,
            }
        })
        .map_err(|e| anyhow::anyhow!(e))
}
