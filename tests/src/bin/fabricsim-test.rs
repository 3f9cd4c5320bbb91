//! The `fabricsim` binary, built inside the test crate: Cargo gives an integration test the
//! path of its own package's binaries only (`CARGO_BIN_EXE_<name>`), and `fabricsim sweep`
//! runs its points as child processes of the current binary, so `tests/tests/sweep.rs` runs
//! this one. Same code as `scenarios/src/main.rs`, the allocator included.

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    scenarios::cli::main()
}
