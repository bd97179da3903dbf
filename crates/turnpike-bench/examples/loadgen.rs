//! `turnpike bench run` as a small standalone binary: builds in a fraction of the time of
//! the whole `turnpike` binary, for A/B measurements of the generator itself
//! (`cargo run --release -p turnpike-bench --example loadgen -- --url URL --users 100`).

use clap::Parser;

#[derive(Parser)]
struct Cli {
    #[command(flatten)]
    run: turnpike_bench::run::RunArgs,
}

fn main() -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let cli = Cli::parse();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    rt.block_on(turnpike_bench::run::run(cli.run))?;
    Ok(())
}
