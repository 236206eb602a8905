//! The `sextant` binary: logging set-up and the CLI.

use clap::Parser;
use tracing_subscriber::EnvFilter;

fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(
            EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("warn")),
        )
        .with_writer(std::io::stderr)
        .init();
    let cli = sextant::cli::Cli::parse();
    tracing::debug!(?cli, "starting");
    sextant::cli::run(cli)?;
    Ok(())
}
