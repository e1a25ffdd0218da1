//! The `saseval-gen` binary: parses the command line, sets up logging, runs, and maps errors to
//! the exit codes of the Contract (README.md). All the work lives in the library.

use clap::Parser;
use saseval_gen::{app, cli::Cli, ui::Printer};
use std::process::ExitCode;

fn main() -> ExitCode {
    let cli = Cli::parse();
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .with_writer(std::io::stderr)
        .with_target(false)
        .init();
    let printer = Printer { quiet: cli.quiet };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            printer.warn(format!("cannot start the async runtime: {e}"));
            return ExitCode::from(saseval_gen::exit::RUNTIME);
        }
    };
    match runtime.block_on(app::run(cli, &printer)) {
        Ok(code) => code,
        Err(err) => {
            printer.error(&err);
            ExitCode::from(err.code())
        }
    }
}
