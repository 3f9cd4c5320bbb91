//! The `fabricsim` binary: logging set-up around [`scenarios::cli::run`].

use std::io::IsTerminal;
use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    // The log level comes from `--log` (parsed again by the CLI) or `RUST_LOG`.
    let level = args
        .iter()
        .position(|a| a == "--log")
        .and_then(|i| args.get(i + 1))
        .and_then(|s| s.to_str())
        .unwrap_or("warn")
        .to_string();
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .or_else(|_| tracing_subscriber::EnvFilter::try_new(&level))
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .init();
    // Ctrl-C and SIGTERM end a simulation as a budget does and never leave half-written
    // results (scenarios/src/interrupt.rs).
    if let Err(e) = scenarios::interrupt::install() {
        tracing::warn!("cannot handle SIGINT/SIGTERM: {e}");
    }
    let fancy = std::io::stderr().is_terminal();
    let code = scenarios::cli::run(args, &mut std::io::stdout(), &mut std::io::stderr(), fancy);
    ExitCode::from(code as u8)
}
