//! The `fabricsim` binary: [`scenarios::cli::main`] (logging set-up around
//! [`scenarios::cli::run`]).

fn main() -> std::process::ExitCode {
    scenarios::cli::main()
}
