//! `turnpike echo`: echoes any request body and its Content-Type, after an optional
//! non-blocking delay, or serves a fixed-size body.

/// Command-line arguments of `turnpike echo`.
#[derive(Debug, Clone, clap::Args)]
pub struct EchoArgs {
    #[arg(long, default_value_t = 9000)]
    pub port: u16,
}

pub async fn run(args: EchoArgs) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let _ = args;
    Err("not implemented yet".into())
}
