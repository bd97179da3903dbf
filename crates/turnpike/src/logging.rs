//! Process logging: the `tracing` subscriber the binary installs. Text for people (ANSI
//! colour only when stderr is a terminal, so redirected logs stay plain) or one JSON object
//! per line for collectors (`--log-format json`).

use std::io::IsTerminal;

/// How log lines are written to stderr.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    /// Human-readable lines; coloured only on a terminal.
    Text,
    /// One JSON object per line (`timestamp`, `level`, `target`, `fields`, span context).
    Json,
}

/// Installs the global subscriber with `filter` (EnvFilter syntax) writing to stderr.
pub fn init(filter: &str, format: LogFormat) -> anyhow::Result<()> {
    let filter = tracing_subscriber::EnvFilter::try_new(filter)?;
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    match format {
        LogFormat::Text => builder
            .with_ansi(std::io::stderr().is_terminal())
            .try_init(),
        LogFormat::Json => builder.json().with_ansi(false).try_init(),
    }
    .map_err(|e| anyhow::anyhow!("log setup: {e}"))
}
