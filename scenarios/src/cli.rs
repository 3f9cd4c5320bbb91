//! The `fabricsim` command line, as a library function so that end-to-end tests run exactly
//! what the binary runs (arguments in, exit code and output text out).
//!
//! Exit status: 0 on success, 2 when the scenario is invalid (the error names file, line,
//! column and field), 1 for any other failure (e.g. the results directory cannot be written).

use crate::runner::{self, RunError, RunOptions};
use clap::{Parser, Subcommand};
use std::ffi::OsString;
use std::io::Write;
use std::path::PathBuf;

#[derive(Parser)]
#[command(
    name = "fabricsim",
    version,
    about = "Packet-level simulator of GPU-cluster interconnects"
)]
pub struct Cli {
    /// Log level (error, warn, info, debug, trace); `RUST_LOG` overrides it.
    #[arg(long, global = true, default_value = "warn")]
    pub log: String,
    #[command(subcommand)]
    pub cmd: Cmd,
}

#[derive(Subcommand)]
pub enum Cmd {
    /// Run a scenario and write its results directory.
    Run {
        /// The scenario file (TOML).
        file: PathBuf,
        /// Results directory (default: results/<scenario name>).
        #[arg(long)]
        out: Option<PathBuf>,
        /// Override the scenario's seed.
        #[arg(long)]
        seed: Option<u64>,
        /// No progress lines on stderr.
        #[arg(long, short)]
        quiet: bool,
    },
    /// Check a scenario without running it.
    Validate {
        /// The scenario file (TOML).
        file: PathBuf,
    },
    /// Print a scenario's topology summary, and write it as Graphviz DOT.
    Topo {
        /// The scenario file (TOML).
        file: PathBuf,
        /// Write the DOT export here (default: print it to stdout after the summary).
        #[arg(long)]
        dot: Option<PathBuf>,
    },
}

/// Exit status for an error: 2 for an invalid scenario, 1 otherwise.
pub fn exit_code(e: &RunError) -> i32 {
    match e {
        RunError::Scenario(_) => 2,
        _ => 1,
    }
}

/// Runs the command line `args` (program name first), writing to `out` and `err`;
/// returns the exit status. Rendering of errors: the fancy miette report when `fancy`,
/// else the one-line `file:line:col: field: message` form.
pub fn run(args: impl IntoIterator<Item = OsString>, out: &mut dyn Write, err: &mut dyn Write, fancy: bool) -> i32 {
    let cli = match Cli::try_parse_from(args) {
        Ok(c) => c,
        Err(e) => {
            // --help and --version go to stdout (exit 0); usage errors to stderr (exit 2).
            if e.use_stderr() {
                let _ = write!(err, "{}", e.render());
                return 2;
            }
            let _ = write!(out, "{}", e.render());
            return 0;
        }
    };
    let fail = |e: RunError, err: &mut dyn Write| {
        let code = exit_code(&e);
        if fancy {
            let _ = writeln!(err, "{:?}", miette::Report::new(e));
        } else {
            let _ = writeln!(err, "error: {e}");
        }
        code
    };
    match cli.cmd {
        Cmd::Run {
            file,
            out: out_dir,
            seed,
            quiet,
        } => {
            let opts = RunOptions {
                out_dir,
                seed,
                progress: !quiet,
            };
            match runner::run_file(&file, &opts) {
                Ok(r) => {
                    let _ = write!(out, "{}", crate::report::terminal_table(&r.summary));
                    if let Some(c) = &r.summary.collectives {
                        let _ = write!(out, "{}", crate::collective_report::table(c));
                    }
                    let _ = writeln!(out, "\nresults in {}", r.out_dir.display());
                    0
                }
                Err(e) => fail(e, err),
            }
        }
        Cmd::Validate { file } => match runner::validate(&file) {
            Ok((loaded, built)) => {
                let _ = writeln!(
                    out,
                    "{}: ok ({}; {} flows)",
                    loaded.file,
                    built.topology.description,
                    built.flows.len()
                );
                0
            }
            Err(e) => fail(e, err),
        },
        Cmd::Topo { file, dot } => match runner::validate(&file) {
            Ok((_, built)) => {
                let t = &built.topology;
                let _ = writeln!(out, "{}", t.description);
                let _ = writeln!(
                    out,
                    "hosts {}, switches {}, links {}",
                    t.n_hosts(),
                    t.n_switches(),
                    t.n_links()
                );
                let _ = writeln!(
                    out,
                    "bisection bandwidth {:.3} Gb/s",
                    t.bisection_bandwidth_bps() as f64 / 1e9
                );
                let _ = writeln!(out, "route table {} KiB", built.routes.memory_bytes() / 1024);
                let text = fabrics::topology::dot::to_dot(t);
                match dot {
                    Some(path) => {
                        if let Err(e) = std::fs::write(&path, text) {
                            let _ = writeln!(err, "error: cannot write {}: {e}", path.display());
                            return 1;
                        }
                        let _ = writeln!(out, "DOT written to {}", path.display());
                    }
                    None => {
                        let _ = write!(out, "{text}");
                    }
                }
                0
            }
            Err(e) => fail(e, err),
        },
    }
}
