//! The `fabricsim` command line, as a library function so that end-to-end tests run exactly
//! what the binary runs (arguments in, exit code and output text out).
//!
//! Exit status: 0 on success (results written; also a run ended by `run.end_time` or a budget),
//! 3 when the run ended `deadlocked` (results written, `crate::outcome`), 2 when the scenario is invalid (the error names file, line,
//! column and field) or `--out` names a directory fabricsim may not replace, 130 when
//! interrupted by SIGINT/SIGTERM, 1 for any other failure (e.g. the results directory cannot
//! be written).
//! `check` exits 1 when a metric moved beyond its tolerance, and 2 when a scenario, baseline or
//! results directory is bad (`docs/regression.md`). `diff` exits 0 whatever differs, and 2 when
//! a directory is not a results directory.
#![allow(
    rustdoc::invalid_html_tags,
    rustdoc::broken_intra_doc_links,
    reason = "the argument docs below are clap's --help text, written for a terminal: `<scenario name>` and `[sweep]` are what the user sees"
)]

use crate::regression::{self, CheckError, junit};
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
        /// Split the fabric by pod into this many partitions, one thread each (1 to 64), or
        /// `auto`: one per core as far as the fabric splits, one thread where it cannot; every
        /// result is the same as on one thread (docs/cli.md, "Several threads").
        #[arg(long, value_name = "N|auto", default_value = "1", value_parser = parse_threads)]
        threads: runner::Threads,
        /// Also draw the plots into <results>/plots/ (as `fabricsim plot`).
        #[arg(long)]
        plots: bool,
        /// File format of the plots (with --plots): SVG, PNG (the SVG rasterized) or both.
        #[arg(long, value_enum, default_value_t, requires = "plots")]
        plot_format: crate::plots::PlotFormat,
    },
    /// Draw the plots of a finished run, or of a sweep, into DIR/plots/ (SVG and/or PNG).
    Plot {
        /// A results directory written by `fabricsim run`, or a sweep's output directory.
        dir: PathBuf,
        /// File format of the plots: SVG, PNG (the SVG rasterized) or both.
        #[arg(long, value_enum, default_value_t)]
        plot_format: crate::plots::PlotFormat,
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
    /// Run scenarios and compare their metrics with their baselines.
    Check {
        /// Scenario files (TOML).
        #[arg(required = true)]
        scenarios: Vec<PathBuf>,
        /// Directory of baseline files (default: `baselines/` beside each scenario's directory).
        #[arg(long, value_name = "DIR")]
        baseline: Option<PathBuf>,
        /// Also write the results as JUnit XML to FILE.
        #[arg(long, value_name = "FILE")]
        junit: Option<PathBuf>,
        /// Keep each run's results directory in DIR/<scenario stem> (default: not kept).
        #[arg(long, value_name = "DIR", conflicts_with = "from_results")]
        results: Option<PathBuf>,
        /// Compare this results directory (from `fabricsim run`) instead of running the scenario.
        #[arg(long, value_name = "DIR")]
        from_results: Option<PathBuf>,
        /// No progress lines on stderr.
        #[arg(long, short)]
        quiet: bool,
    },
    /// Compare two results directories (from `fabricsim run`): the inputs that differ, then the
    /// metrics that differ, largest change first. Exits 0 whatever differs.
    Diff {
        /// The first results directory (A, the reference).
        run_a: PathBuf,
        /// The second results directory (B).
        run_b: PathBuf,
        /// List every metric, one row each (unchanged ones too, last), lists not folded.
        #[arg(long)]
        all: bool,
        /// Print the comparison as JSON (schema `fabricsim.diff/1`, docs/cli.md).
        #[arg(long)]
        json: bool,
    },
    /// Run every point of a sweep file (a scenario with a [sweep] table) as child processes,
    /// then tabulate the results (docs/sweeps.md).
    Sweep {
        /// The sweep file (TOML).
        file: PathBuf,
        /// Output directory (default: results/<scenario name>-sweep); a rerun resumes.
        #[arg(long, value_name = "DIR")]
        out: Option<PathBuf>,
        /// Most points running at once (default: the available parallelism).
        #[arg(long, short, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
        jobs: Option<u32>,
        /// Kill a run still going after SECS seconds of wall time and mark it `timeout`.
        #[arg(long, value_name = "SECS", value_parser = crate::sweep::command::parse_secs)]
        timeout: Option<std::time::Duration>,
        /// Only gather the results already in the output directory into the tables.
        #[arg(long, conflicts_with = "slurm")]
        collect: bool,
        /// Write a Slurm job array (one task per point) and submit it with sbatch.
        #[arg(long)]
        slurm: bool,
        /// With --slurm: most array tasks running at once (`--array=...%N`).
        #[arg(long, value_name = "N", requires = "slurm", value_parser = clap::value_parser!(u32).range(1..))]
        array_throttle: Option<u32>,
        /// No progress lines on stderr.
        #[arg(long, short)]
        quiet: bool,
    },
    /// Run a study (a manifest and directories of scenarios, e.g.
    /// studies/selection-guide/study.toml) end to end and write its Markdown report.
    Study {
        /// The study's manifest (study.toml).
        manifest: PathBuf,
        /// Run the full-size scenarios (full/) instead of the reduced ones (ci/).
        #[arg(long)]
        full: bool,
        /// Results root (default: results/<study>-ci or -full); each run in DIR/<stem>.
        #[arg(long, value_name = "DIR")]
        out: Option<PathBuf>,
        /// Write the report here instead of the manifest's `study.doc`.
        #[arg(long, value_name = "FILE", conflicts_with = "no_doc")]
        doc: Option<PathBuf>,
        /// Write no report file (the report is still printed and kept in DIR/report.md).
        #[arg(long)]
        no_doc: bool,
        /// Runs at once (default 1).
        #[arg(long, short, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
        jobs: Option<u32>,
        /// No progress lines on stderr.
        #[arg(long, short)]
        quiet: bool,
    },
    /// Run scenarios and write their metrics as their baselines.
    Bless {
        /// Scenario files (TOML).
        #[arg(required = true)]
        scenarios: Vec<PathBuf>,
        /// Directory of baseline files (default: `baselines/` beside each scenario's directory).
        #[arg(long, value_name = "DIR")]
        baseline: Option<PathBuf>,
        /// Keep each run's results directory in DIR/<scenario stem> (default: not kept).
        #[arg(long, value_name = "DIR", conflicts_with = "from_results")]
        results: Option<PathBuf>,
        /// Bless this results directory (from `fabricsim run`) instead of running the scenario.
        #[arg(long, value_name = "DIR")]
        from_results: Option<PathBuf>,
        /// No progress lines on stderr.
        #[arg(long, short)]
        quiet: bool,
    },
}

/// The `fabricsim` binary's `main`: logging set-up around [`run`] with the process's
/// arguments, stdout and stderr. (A function, so that the integration-test crate can build
/// the same binary: `fabricsim sweep` runs its points as children of the current binary.)
pub fn main() -> std::process::ExitCode {
    use std::io::IsTerminal;
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
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"))
        // usvg (PNG plots) warns of the SVG it is handed, not of the user's input: plotters'
        // one-point polylines, which no viewer draws either.
        .add_directive("usvg=error".parse().expect("a valid directive"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .init();
    // Ctrl-C and SIGTERM end a simulation as a budget does and never leave half-written
    // results (scenarios/src/interrupt.rs).
    if let Err(e) = crate::interrupt::install() {
        tracing::warn!("cannot handle SIGINT/SIGTERM: {e}");
    }
    let fancy = std::io::stderr().is_terminal();
    let code = run(args, &mut std::io::stdout(), &mut std::io::stderr(), fancy);
    std::process::ExitCode::from(code as u8)
}

/// Exit status for an error: 2 for an invalid scenario or `--out`, 130 when interrupted, 1
/// otherwise.
pub fn exit_code(e: &RunError) -> i32 {
    e.exit_code()
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
    let check_fail = |e: CheckError, err: &mut dyn Write| match e {
        CheckError::Run(e) => fail(e, err),
        e => {
            let _ = writeln!(err, "error: {e}");
            e.exit_code()
        }
    };
    match cli.cmd {
        Cmd::Run {
            file,
            out: out_dir,
            seed,
            quiet,
            threads,
            plots,
            plot_format,
        } => {
            let opts = RunOptions {
                out_dir,
                seed,
                progress: !quiet,
                threads,
                ..RunOptions::default()
            };
            match runner::run_file(&file, &opts) {
                Ok(r) => {
                    let _ = write!(out, "{}", crate::report::terminal_table(&r.summary));
                    if let Some(c) = &r.summary.collectives {
                        let _ = write!(out, "{}", crate::collective_report::table(c));
                    }
                    if let Some(s) = &r.summary.collective_stages {
                        let _ = write!(out, "{}", crate::collective_stages::table(s));
                    }
                    if let Some(t) = r.summary.trace.as_ref().filter(|t| t.truncated) {
                        let _ = writeln!(
                            out,
                            "\nWARNING: trace.json holds {} of {} collective instances: the limit of {} events cut it",
                            t.instances_written, t.instances, t.limit
                        );
                    }
                    if let Some(t) = &r.summary.training {
                        let _ = write!(out, "{}", crate::training_report::table(t));
                    }
                    let _ = writeln!(out, "\nresults in {}", r.out_dir.display());
                    if plots {
                        match crate::plots::plot_dir(&r.out_dir, plot_format) {
                            Ok(files) => {
                                let _ = writeln!(
                                    out,
                                    "plots: {} files in {}",
                                    files.len(),
                                    r.out_dir.join("plots").display()
                                );
                            }
                            Err(e) => {
                                let _ = writeln!(err, "error: {e}");
                                return 1;
                            }
                        }
                    }
                    crate::outcome::Outcome::parse(r.summary.run.outcome).map_or(0, crate::outcome::Outcome::exit_code)
                }
                Err(e) => fail(e, err),
            }
        }
        Cmd::Plot { dir, plot_format } => match crate::plots::plot_dir(&dir, plot_format) {
            Ok(files) => {
                for f in &files {
                    let _ = writeln!(out, "{}", f.display());
                }
                0
            }
            Err(e) => {
                let _ = writeln!(err, "error: {e}");
                1
            }
        },
        Cmd::Validate { file } if crate::sweep::is_sweep_file(&file) => {
            crate::sweep::command::validate(&file, out, err, fancy)
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
            Ok((loaded, built)) => {
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
                let _ = writeln!(
                    out,
                    "route table {} KiB (towards {} of {} leaf switches: those the flows reach)",
                    built.routes.memory_bytes() / 1024,
                    built.routes.n_routed_leaves(),
                    built.routes.n_leaves()
                );
                // RoCEv1: the spanning tree, its blocked ports, and dashed links in the DOT.
                let tree = match loaded.spanning_tree(t) {
                    Ok(tree) => tree,
                    Err(e) => return fail(e.into(), err),
                };
                let blocked = tree.as_ref().map(|st| st.blocked_links()).unwrap_or_default();
                if let Some(st) = &tree {
                    let _ = write!(out, "{}", st.describe(t));
                }
                let text = fabrics::topology::dot::to_dot_blocked(t, &blocked);
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
        Cmd::Study {
            manifest,
            full,
            out: out_dir,
            doc,
            no_doc,
            jobs,
            quiet,
        } => {
            let opts = crate::study::StudyOptions {
                full,
                out: out_dir,
                doc,
                no_doc,
                jobs: jobs.map_or(1, |j| j as usize),
                quiet,
            };
            match crate::study::run_study(&manifest, &opts) {
                Ok(md) => {
                    let _ = out.write_all(md.as_bytes());
                    0
                }
                Err(e) => {
                    let _ = writeln!(err, "error: {e}");
                    e.exit_code()
                }
            }
        }
        Cmd::Sweep {
            file,
            out: out_dir,
            jobs,
            timeout,
            collect,
            slurm,
            array_throttle,
            quiet,
        } => {
            let args = crate::sweep::command::SweepArgs {
                file,
                out: out_dir,
                jobs: jobs.map(|j| j as usize),
                timeout,
                quiet,
                collect,
                slurm,
                array_throttle,
            };
            crate::sweep::command::sweep(&args, out, err, fancy)
        }
        Cmd::Check {
            scenarios,
            baseline,
            junit,
            results,
            from_results,
            quiet,
        } => {
            let Some(opts) =
                regression_options(baseline, from_results, results, quiet, scenarios.len(), "compares", err)
            else {
                return 2;
            };
            check(&scenarios, &opts, junit.as_deref(), out, err, &check_fail)
        }
        Cmd::Diff {
            run_a,
            run_b,
            all,
            json,
        } => match regression::diff::diff_dirs(&run_a, &run_b) {
            Ok(d) => {
                let text = if json {
                    regression::diff::render_json(&d, all)
                } else {
                    regression::diff::render_text(&d, all)
                };
                let _ = out.write_all(text.as_bytes());
                0
            }
            Err(e) => check_fail(e, err),
        },
        Cmd::Bless {
            scenarios,
            baseline,
            results,
            from_results,
            quiet,
        } => {
            let Some(opts) =
                regression_options(baseline, from_results, results, quiet, scenarios.len(), "blesses", err)
            else {
                return 2;
            };
            let mut code = 0;
            for sc in &scenarios {
                match regression::bless_one(sc, &opts) {
                    Ok(b) => {
                        use regression::Previous;
                        let what = match (b.written, b.previous) {
                            (false, _) => "unchanged".to_string(),
                            (true, Previous::None) => "new".to_string(),
                            (true, Previous::Unreadable) => "replaced an unreadable baseline".to_string(),
                            (true, Previous::Changed(0)) => "rewritten, no metric changed".to_string(),
                            (true, Previous::Changed(1)) => "updated, 1 metric changed".to_string(),
                            (true, Previous::Changed(n)) => format!("updated, {n} metrics changed"),
                        };
                        let _ = writeln!(
                            out,
                            "blessed {}: {} ({} metrics; {what})",
                            sc.display(),
                            b.baseline_path.display(),
                            b.metrics
                        );
                    }
                    Err(e) => code = code.max(check_fail(e, err)),
                }
            }
            code
        }
    }
}

/// `fabricsim check`: checks every scenario (an error in one does not stop the others), prints
/// a block per scenario and a closing line, writes JUnit XML if asked; returns the exit status:
/// 2 if any input was bad, else 1 if any metric regressed or a run failed, else 0.
/// The options shared by `check` and `bless`; `None` (after printing why) when
/// `--from-results` is given with other than exactly one scenario.
/// `--threads`: a whole number from 1 to 64, or `auto`.
fn parse_threads(s: &str) -> Result<runner::Threads, String> {
    if s == "auto" {
        return Ok(runner::Threads::Auto);
    }
    match s.parse::<u32>() {
        Ok(n) if (1..=fabrics::engine::MAX_PARTITIONS as u32).contains(&n) => Ok(runner::Threads::Exactly(n)),
        _ => Err(format!(
            "expected a whole number from 1 to {} or `auto`, got `{s}`",
            fabrics::engine::MAX_PARTITIONS
        )),
    }
}

fn regression_options(
    baseline: Option<PathBuf>,
    from_results: Option<PathBuf>,
    results: Option<PathBuf>,
    quiet: bool,
    n_scenarios: usize,
    verb: &str,
    err: &mut dyn Write,
) -> Option<regression::Options> {
    if from_results.is_some() && n_scenarios != 1 {
        let _ = writeln!(
            err,
            "error: --from-results {verb} one results directory: give exactly one scenario"
        );
        return None;
    }
    Some(regression::Options {
        baseline_dir: baseline,
        from_results,
        results_dir: results,
        progress: !quiet,
    })
}

fn check(
    scenarios: &[PathBuf],
    opts: &regression::Options,
    junit_path: Option<&std::path::Path>,
    out: &mut dyn Write,
    err: &mut dyn Write,
    check_fail: &dyn Fn(CheckError, &mut dyn Write) -> i32,
) -> i32 {
    let mut code = 0;
    let mut cases = Vec::new();
    let mut failed: Vec<&PathBuf> = Vec::new();
    let (mut passed, mut errors) = (0, 0);
    for sc in scenarios {
        let name = regression::stem(sc);
        match regression::check_one(sc, opts) {
            Ok(c) => {
                let head = format!("{name}: {} vs {}", sc.display(), c.baseline_path.display());
                let block = regression::table::render(&head, &c.notes, &c.inputs, &c.comparison);
                let _ = write!(out, "{block}");
                let outcome = if c.comparison.passed() {
                    passed += 1;
                    junit::CaseOutcome::Passed
                } else {
                    code = code.max(1);
                    failed.push(sc);
                    let names: Vec<&str> = c.comparison.failures().map(|r| r.metric.as_str()).collect();
                    let mut message = format!("{} metric(s) beyond tolerance or missing: ", names.len());
                    message.push_str(&names.iter().take(200).copied().collect::<Vec<_>>().join(", "));
                    if names.len() > 200 {
                        message.push_str(", ...");
                    }
                    junit::CaseOutcome::Failed { message }
                };
                cases.push(junit::Case {
                    name,
                    file: sc.display().to_string(),
                    time_s: c.observed.wall_s,
                    outcome,
                    output: block,
                });
            }
            Err(e) => {
                errors += 1;
                let message = e.to_string();
                let _ = writeln!(out, "{name}: {}: ERROR (see stderr)", sc.display());
                code = code.max(check_fail(e, err));
                cases.push(junit::Case {
                    name,
                    file: sc.display().to_string(),
                    time_s: None,
                    outcome: junit::CaseOutcome::Error { message },
                    output: String::new(),
                });
            }
        }
    }
    let _ = writeln!(
        out,
        "\nchecked {} scenario(s): {passed} passed, {} failed, {errors} error(s)",
        scenarios.len(),
        failed.len()
    );
    if !failed.is_empty() {
        let files: Vec<String> = failed.iter().map(|p| p.display().to_string()).collect();
        let mut bless = format!("fabricsim bless {}", files.join(" "));
        if let Some(d) = &opts.baseline_dir {
            bless.push_str(&format!(" --baseline {}", d.display()));
        }
        let _ = writeln!(
            out,
            "if the changes are intended, accept them as the new baselines with: {bless}"
        );
    }
    if let Some(path) = junit_path {
        let xml = junit::to_xml("fabricsim check", &cases);
        if let Err(e) = junit::write_atomically(path, xml.as_bytes()) {
            let _ = writeln!(err, "error: cannot write JUnit XML to {}: {e}", path.display());
            code = code.max(1);
        }
    }
    code
}
