//! The `fabricsim sweep` command and `fabricsim validate` of a sweep file (the CLI hooks in
//! `cli.rs` call these).

use super::run::{self, Options};
use super::table::{self, RunRecord, Status};
use super::{PointPlan, Sweep};
use crate::diag::ScenarioError;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// `fabricsim sweep` arguments.
#[derive(Clone, Debug, Default)]
pub struct SweepArgs {
    pub file: PathBuf,
    pub out: Option<PathBuf>,
    pub jobs: Option<usize>,
    pub timeout: Option<Duration>,
    pub quiet: bool,
    /// Only gather existing results into the tables.
    pub collect: bool,
    /// Write (and submit) a Slurm job array instead of running.
    pub slurm: bool,
    pub array_throttle: Option<u32>,
}

/// Parses `--timeout SECS`: a positive number of seconds (decimals allowed).
pub fn parse_secs(s: &str) -> Result<Duration, String> {
    match s.parse::<f64>() {
        Ok(x) if x.is_finite() && x > 0.0 && x < 1e9 => Ok(Duration::from_secs_f64(x)),
        _ => Err(format!("expected a positive number of seconds, got `{s}`")),
    }
}

fn render(e: &ScenarioError, fancy: bool, err: &mut dyn Write) {
    if fancy {
        let mut text = String::new();
        let handler = miette::GraphicalReportHandler::new();
        if handler.render_report(&mut text, e).is_ok() {
            let _ = write!(err, "{text}");
            return;
        }
    }
    let _ = writeln!(err, "error: {e}");
}

/// Reads and validates every point; prints the errors and returns `Err(2)` if any.
fn plan(file: &Path, threads: usize, fancy: bool, err: &mut dyn Write) -> Result<(Sweep, Vec<PointPlan>), i32> {
    let sweep = match super::read(file) {
        Ok(Some(s)) => s,
        Ok(None) => {
            let _ = writeln!(
                err,
                "error: {}: no [sweep] table: this is one scenario, run it with `fabricsim run {}`",
                file.display(),
                file.display()
            );
            return Err(2);
        }
        Err(e) => {
            render(&e, fancy, err);
            return Err(2);
        }
    };
    match sweep.expand(threads) {
        Ok(plans) => Ok((sweep, plans)),
        Err(inv) => {
            for e in &inv.errors {
                render(e, fancy, err);
            }
            let shown = if inv.errors.len() < inv.n_failed {
                format!(" (the first {} shown)", inv.errors.len())
            } else {
                String::new()
            };
            let _ = writeln!(
                err,
                "error: {}: {} of {} sweep point(s) are invalid{shown}; nothing was run",
                sweep.file, inv.n_failed, inv.n_points
            );
            Err(2)
        }
    }
}

fn parallelism() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// Most points listed by `fabricsim validate` of a sweep.
const MAX_LISTED_POINTS: usize = 50;

/// `fabricsim validate FILE` of a sweep file: validates every point; returns the exit status.
pub fn validate(file: &Path, out: &mut dyn Write, err: &mut dyn Write, fancy: bool) -> i32 {
    let (sweep, plans) = match plan(file, parallelism(), fancy, err) {
        Ok(p) => p,
        Err(code) => return code,
    };
    let _ = writeln!(
        out,
        "{}: ok (sweep, {}: {} point(s) x {} seed(s) = {} run(s))",
        sweep.file,
        sweep.mode.as_str(),
        sweep.n_points(),
        sweep.seeds,
        sweep.n_points() * sweep.seeds as usize
    );
    for p in plans.iter().take(MAX_LISTED_POINTS) {
        let _ = writeln!(out, "  point {} ({}): {}", p.index, sweep.label(p.index), p.description);
    }
    if plans.len() > MAX_LISTED_POINTS {
        let _ = writeln!(out, "  ... and {} more", plans.len() - MAX_LISTED_POINTS);
    }
    0
}

/// The default output directory: `results/<scenario name>-sweep`.
fn default_out(sweep: &Sweep) -> PathBuf {
    let name = crate::runner::sanitize(sweep.name().unwrap_or(""));
    Path::new("results").join(format!("{name}-sweep"))
}

/// Writes the tables, prints the terminal table and the runs that did not succeed.
fn finish(sweep: &Sweep, records: &[RunRecord], out_dir: &Path, out: &mut dyn Write, err: &mut dyn Write) -> i32 {
    let t = table::tables(sweep, records);
    if let Err(e) = table::write(out_dir, &t) {
        let _ = writeln!(
            err,
            "error: cannot write the sweep tables to {}: {e}",
            out_dir.display()
        );
        return 1;
    }
    let _ = write!(out, "{}", t.terminal);
    let bad: Vec<&RunRecord> = records
        .iter()
        .filter(|r| !matches!(r.status, Status::Ok | Status::Partial))
        .collect();
    if !bad.is_empty() {
        let _ = writeln!(out, "\n{} run(s) without results:", bad.len());
        for r in bad.iter().take(20) {
            let pdir = run::point_dir(out_dir, r.point, sweep.n_points());
            let _ = writeln!(
                out,
                "  point {} seed {}: {} (log: {})",
                r.point,
                r.seed,
                r.status.as_str(),
                pdir.join(format!("seed-{}.log", r.seed)).display()
            );
        }
    }
    let _ = writeln!(
        out,
        "\nresults in {} (sweep.csv, sweep_summary.csv, sweep_timing.csv)",
        out_dir.display()
    );
    match crate::plots::plot_dir(out_dir, crate::plots::PlotFormat::Svg) {
        Ok(files) => {
            let _ = writeln!(
                out,
                "plots: {} files in {}",
                files.len(),
                out_dir.join("plots").display()
            );
            0
        }
        Err(e) => {
            let _ = writeln!(err, "error: sweep plots: {e}");
            1
        }
    }
}

/// `fabricsim sweep`: returns the exit status (0 all runs have results, 1 a run failed or
/// timed out, 2 an invalid sweep, 130 cancelled).
pub fn sweep(args: &SweepArgs, out: &mut dyn Write, err: &mut dyn Write, fancy: bool) -> i32 {
    let jobs = args.jobs.unwrap_or_else(parallelism).max(1);
    let (sweep, plans) = match plan(&args.file, jobs, fancy, err) {
        Ok(p) => p,
        Err(code) => return code,
    };
    let out_dir = args.out.clone().unwrap_or_else(|| default_out(&sweep));
    if args.slurm {
        return super::slurm::command(&sweep, &plans, &out_dir, args, out, err);
    }
    if args.collect {
        if let Err(e) = run::prepare(&sweep, &plans, &out_dir) {
            let _ = writeln!(err, "error: sweep: {e}");
            return 1;
        }
        let records = run::collect(&sweep, &plans, &out_dir);
        let code = finish(&sweep, &records, &out_dir, out, err);
        let complete = records.iter().all(|r| r.status != Status::Missing);
        return if code != 0 || !complete { 1 } else { 0 };
    }
    let exe = match std::env::current_exe() {
        Ok(e) => e,
        Err(e) => {
            let _ = writeln!(err, "error: sweep: cannot find the fabricsim binary to run points: {e}");
            return 1;
        }
    };
    let opts = Options {
        out_dir: out_dir.clone(),
        jobs,
        timeout: args.timeout,
        progress: !args.quiet,
        exe,
    };
    let outcome = match run::run(&sweep, &plans, &opts, err) {
        Ok(o) => o,
        Err(e) => {
            let _ = writeln!(err, "error: sweep: {e}");
            return 1;
        }
    };
    let code = finish(&sweep, &outcome.records, &out_dir, out, err);
    code.max(outcome.exit_code())
}
