//! The bench kit: `turnpike echo` (the seeds' back end; `--llm`: a test LLM provider),
//! `turnpike bench run|matrix|report`.
//! Owns load generation and its statistics; depends on no other Turnpike crate at run time
//! but `turnpike-tokens` (the exact usage of `echo --llm`; the matrix starts the
//! `turnpike` binary as a process).

pub mod bench_token;
pub mod client;
pub mod due;
pub mod echo;
pub mod echo_llm;
pub mod echo_soap;
pub mod echo_ws;
pub mod epoll;
pub mod graphql_echo;
pub mod h1;
pub mod jtl;
pub mod llm;
pub mod load;
pub mod matrix;
pub mod pin;
pub mod plan;
pub mod procstat;
pub mod reference;
pub mod report;
pub mod run;
pub mod sequence;
pub mod setup;
pub mod stack;
pub mod stats;
pub mod tokens;

/// Why a bench command failed.
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    /// Bad arguments or input files.
    #[error("{0}")]
    Usage(String),
    /// The target could not be resolved or reached before the run.
    #[error("{0}")]
    Connect(String),
    /// No token could be obtained.
    #[error("token: {0}")]
    Token(String),
    /// Local I/O, threads, processes.
    #[error("{0}")]
    Io(String),
}

/// Arguments of `turnpike bench`.
#[derive(Debug, Clone, clap::Args)]
pub struct BenchArgs {
    #[command(subcommand)]
    pub command: BenchCommand,
}

/// The `turnpike bench` subcommands.
// Parsed once per process: the size of the largest arguments costs nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, clap::Subcommand)]
pub enum BenchCommand {
    /// Run one load test and print its statistics.
    Run(run::RunArgs),
    /// Run a plan's scenarios x users x sizes x delays with direct baselines, then report.
    Matrix(matrix::MatrixArgs),
    /// (Re)build the report of a matrix output directory.
    Report(report::ReportArgs),
    /// Concurrent streamed LLM calls: time to first token and tokens per second.
    Llm(llm::LlmArgs),
}

/// Runs `turnpike bench …`.
pub async fn run(args: BenchArgs) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    match args.command {
        BenchCommand::Run(a) => run::run(a).await?,
        BenchCommand::Matrix(a) => matrix::run(a).await?,
        // A JTL's report is jtl's (report's tables are a leaf jtl uses: no cycle).
        BenchCommand::Report(a) => match &a.from_jtl {
            Some(path) => print!("{}", jtl::markdown(&jtl::summaries(path)?)),
            None => report::run(a).await?,
        },
        BenchCommand::Llm(a) => llm::run(a).await?,
    }
    Ok(())
}
