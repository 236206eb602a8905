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
    // SAFETY: no thread has been started yet; libgit2 keeps these in plain globals.
    unsafe {
        sextant::index::git::set_network_timeouts(
            std::time::Duration::from_secs(30),
            std::time::Duration::from_secs(60),
        )?;
    }
    let cli = sextant::cli::Cli::parse();
    tracing::debug!(?cli, "starting");
    sextant::cli::run(cli)?;
    Ok(())
}
