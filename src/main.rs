//! The `sextant` binary: logging and tracing set-up, then the CLI.

use clap::Parser;

fn main() -> anyhow::Result<()> {
    sextant::app::cap_allocator_arenas();
    // SAFETY: no thread has been started yet (telemetry starts its export thread below);
    // libgit2 keeps these in plain globals.
    unsafe {
        sextant::index::git::set_network_timeouts(
            std::time::Duration::from_secs(30),
            std::time::Duration::from_secs(60),
        )?;
    }
    let cli = sextant::cli::Cli::parse();
    let telemetry = sextant::telemetry::init(cli.global.log_format, "warn")?;
    tracing::debug!(?cli, "starting");
    let outcome = sextant::cli::run(cli);
    // Flushes the spans of the last requests before the process exits.
    drop(telemetry);
    outcome?;
    Ok(())
}
