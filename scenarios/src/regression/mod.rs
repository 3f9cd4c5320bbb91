//! Regression checks of fabric behaviour: baselines, `fabricsim check` and `fabricsim bless`
//! (`docs/regression.md` is the user's guide).
//!
//! A *baseline* is the metrics of a run that a team trusts, one TOML file per scenario. `check`
//! runs a scenario (or reads a results directory), flattens its `summary.json` into metrics,
//! compares them with the baseline under the scenario's `[check]` section and reports every
//! metric that moved. `bless` writes the baseline from a run, on purpose.
//!
//! - [`metrics`]: `summary.json` -> named values.
//! - [`baseline`]: the baseline file (read, write, errors).
//! - [`spec`]: the `[check]` section (selection and tolerances).
//! - [`compare`](mod@compare): metrics vs baseline -> rows with verdicts.
//! - [`inputs`]: the resolved scenario as keyed inputs, and which of them changed.
//! - [`fold`]: rows ordered by the size of their change, lists folded into one row.
//! - [`table`]: the printed table; [`junit`]: JUnit XML.
//! - [`diff`]: `fabricsim diff RUN_A RUN_B`, the same comparison between two results
//!   directories.
//!
//! Where baselines live: `<dir>/<stem>.baseline.toml`, `<stem>` being the scenario file's name
//! without `.toml` and `<dir>` the `--baseline` directory or, by default, `baselines/` beside
//! the scenario's directory (`scenarios/catalogue/quickstart.toml` ->
//! `scenarios/baselines/quickstart.baseline.toml`).

pub mod baseline;
pub mod compare;
pub mod diff;
pub mod fold;
pub mod inputs;
pub mod junit;
pub mod metrics;
pub mod spec;
pub mod table;

pub use baseline::{BASELINE_FORMAT, Baseline, BaselineError};
pub use compare::{Comparison, Row, Verdict, compare};
pub use inputs::{InputChange, Inputs};
pub use metrics::{Metrics, RunIdentity, Value};
pub use spec::{CheckSpec, Pattern, Tolerance};

use crate::build::load;
use crate::runner::{self, RunError, RunOptions};
use crate::schema::Scenario;
use sha2::{Digest, Sha256};
use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// Name of the default baseline directory (beside the scenario's directory).
pub const BASELINE_DIR: &str = "baselines";
/// Suffix of a baseline file after the scenario's stem.
pub const BASELINE_SUFFIX: &str = ".baseline.toml";
/// Largest `summary.json` read from a results directory (256 MiB).
pub const MAX_SUMMARY_BYTES: u64 = 256 << 20;

/// How `check` and `bless` obtain results and where baselines are.
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// Directory of baseline files; default `baselines/` beside the scenario's directory.
    pub baseline_dir: Option<PathBuf>,
    /// Read this results directory instead of running the scenario (one scenario only).
    pub from_results: Option<PathBuf>,
    /// Keep the results of each run in `<dir>/<stem>` (default: a temporary directory,
    /// removed afterwards).
    pub results_dir: Option<PathBuf>,
    /// Progress lines on stderr during long runs.
    pub progress: bool,
}

/// Why a scenario could not be checked or blessed.
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
pub enum CheckError {
    /// The scenario is invalid (exit 2) or its run failed (exit 1).
    #[error(transparent)]
    #[diagnostic(transparent)]
    Run(#[from] RunError),
    /// Missing, unreadable, corrupt or old-format baseline (exit 2).
    #[error("{error}; {hint}")]
    Baseline { error: BaselineError, hint: String },
    /// A results directory that cannot be read as one (exit 2).
    #[error("{path}: {message}")]
    Results { path: String, message: String },
    /// The run cannot serve as a baseline (exit 1).
    #[error("{file}: cannot bless: {message}")]
    NotBlessable { file: String, message: String },
    /// A baseline file cannot be written (exit 1).
    #[error("cannot write the baseline {path}: {message}")]
    Write { path: String, message: String },
}

impl CheckError {
    /// 2 for bad input (scenario, baseline, results directory), 1 for a failed run or write.
    pub fn exit_code(&self) -> i32 {
        match self {
            CheckError::Run(e) => crate::cli::exit_code(e),
            CheckError::Baseline { .. } | CheckError::Results { .. } => 2,
            CheckError::NotBlessable { .. } | CheckError::Write { .. } => 1,
        }
    }
}

/// The scenario file's stem (`quickstart` for `a/quickstart.toml`).
pub fn stem(scenario: &Path) -> String {
    scenario
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "scenario".into())
}

/// The baseline file of `scenario`: `<baseline_dir>/<stem>.baseline.toml`, the directory
/// defaulting to `baselines/` beside the scenario's directory (`a/b/x.toml` ->
/// `a/baselines/x.baseline.toml`; `x.toml` -> `../baselines/x.baseline.toml`).
pub fn baseline_path(scenario: &Path, baseline_dir: Option<&Path>) -> PathBuf {
    let file = format!("{}{BASELINE_SUFFIX}", stem(scenario));
    if let Some(d) = baseline_dir {
        return d.join(file);
    }
    let mut dir = scenario.parent().map(Path::to_path_buf).unwrap_or_default();
    // `dir/..`, written without `..` when the last component is a plain name.
    match dir.components().next_back() {
        Some(Component::Normal(_)) => {
            dir.pop();
        }
        _ => dir.push(".."),
    }
    dir.join(BASELINE_DIR).join(file)
}

/// SHA-256 (hex) of the resolved scenario without its `[check]` section and seed: tells
/// whether a run's scenario (every default filled in) is the one a baseline was blessed from.
pub fn scenario_fingerprint(sc: &Scenario) -> String {
    let mut sc = sc.clone();
    sc.check = CheckSpec::default();
    sc.scenario.seed = 0;
    let text = toml::to_string(&sc).unwrap_or_default();
    Sha256::digest(text.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The `fabricsim bless` command line that (re)creates the baseline of `scenario`.
pub fn bless_command(scenario: &Path, opts: &Options) -> String {
    let mut c = format!("fabricsim bless {}", scenario.display());
    if let Some(d) = &opts.baseline_dir {
        c.push_str(&format!(" --baseline {}", d.display()));
    }
    c
}

/// A run's metrics and identity, from a fresh run or a results directory.
#[derive(Clone, Debug)]
pub struct Observed {
    pub metrics: Metrics,
    pub ident: RunIdentity,
    /// [`scenario_fingerprint`] of the scenario that was run, when known.
    pub fingerprint: Option<String>,
    /// The inputs of the scenario that was run, when known.
    pub inputs: Option<Inputs>,
    /// Wall-clock seconds of the run, when one was made.
    pub wall_s: Option<f64>,
    /// Where the results are (kept), if anywhere.
    pub results_dir: Option<PathBuf>,
}

/// Runs `scenario` (or reads `opts.from_results`) and extracts its metrics.
pub fn observe(scenario: &Path, opts: &Options) -> Result<Observed, CheckError> {
    if let Some(dir) = &opts.from_results {
        return read_results(dir);
    }
    let loaded = load(scenario).map_err(RunError::from)?;
    let tmp;
    let out_dir = match &opts.results_dir {
        Some(d) => d.join(stem(scenario)),
        None => {
            tmp = TempDir::new().map_err(|e| RunError::Output {
                path: std::env::temp_dir().display().to_string(),
                message: e.to_string(),
            })?;
            tmp.0.join(stem(scenario))
        }
    };
    let run_opts = RunOptions {
        out_dir: Some(out_dir.clone()),
        seed: None,
        progress: opts.progress,
        ..RunOptions::default()
    };
    let out = runner::run_file(scenario, &run_opts)?;
    if out.summary.run.outcome == crate::report::OUTCOME_INTERRUPTED {
        // Partial results are neither compared nor blessed.
        return Err(RunError::Interrupted(format!("results in {}", out.out_dir.display())).into());
    }
    let json = serde_json::to_value(&out.summary).map_err(|e| RunError::Engine {
        file: loaded.file.clone(),
        message: format!("cannot convert the summary: {e}"),
    })?;
    let (metrics, ident) = metrics::from_summary(&json).map_err(|m| RunError::Engine {
        file: loaded.file.clone(),
        message: m,
    })?;
    Ok(Observed {
        metrics,
        ident,
        fingerprint: Some(scenario_fingerprint(&out.resolved)),
        inputs: Inputs::of_scenario(&out.resolved),
        wall_s: Some(out.report.wall_elapsed.as_secs_f64()),
        results_dir: opts.results_dir.as_ref().map(|_| out_dir),
    })
}

/// Reads a results directory written by `fabricsim run` (its `summary.json`, and
/// `scenario.resolved.toml` for the fingerprint when present).
pub fn read_results(dir: &Path) -> Result<Observed, CheckError> {
    let err = |path: &Path, message: String| CheckError::Results {
        path: path.display().to_string(),
        message,
    };
    if !dir.is_dir() {
        return Err(err(dir, "not a results directory (no such directory)".into()));
    }
    let summary_path = dir.join("summary.json");
    let text = crate::files::read_text_limited(&summary_path, MAX_SUMMARY_BYTES).map_err(|e| {
        let hint = if e == crate::files::FileError::NotFound {
            " (is this a results directory?)"
        } else {
            ""
        };
        err(&summary_path, format!("cannot read: {e}{hint}"))
    })?;
    let json = metrics::parse_json_exact(&text).map_err(|e| err(&summary_path, format!("not valid JSON: {e}")))?;
    let (metrics, ident) = metrics::from_summary(&json).map_err(|m| err(&summary_path, m))?;
    let resolved = dir.join("scenario.resolved.toml");
    let resolved_text = crate::files::read_text_limited(&resolved, crate::diag::MAX_SCENARIO_BYTES).ok();
    let fingerprint = resolved_text
        .as_deref()
        .and_then(|t| crate::diag::parse_toml::<Scenario>(&resolved.display().to_string(), t).ok())
        .map(|sc| scenario_fingerprint(&sc));
    // The inputs from the TOML as written, not through today's schema: results of another
    // fabricsim version still show their inputs.
    let inputs = resolved_text
        .as_deref()
        .and_then(|t| toml::from_str::<toml::Table>(t).ok())
        .map(|t| Inputs::of_table(&t));
    Ok(Observed {
        metrics,
        ident,
        fingerprint,
        inputs,
        wall_s: None,
        results_dir: Some(dir.to_path_buf()),
    })
}

/// One scenario checked against its baseline.
#[derive(Clone, Debug)]
pub struct Checked {
    /// The scenario file's stem.
    pub name: String,
    pub baseline_path: PathBuf,
    pub comparison: Comparison,
    /// Things to know when reading the table (seed or scenario differs, partial run ...).
    pub notes: Vec<String>,
    /// The inputs that changed since the baseline was blessed (empty when none did, or when
    /// the baseline or the run does not know its inputs).
    pub inputs: Vec<InputChange>,
    pub observed: Observed,
}

/// Checks one scenario: reads its baseline and `[check]`, runs it (or reads the results
/// directory) and compares.
pub fn check_one(scenario: &Path, opts: &Options) -> Result<Checked, CheckError> {
    let loaded = load(scenario).map_err(RunError::from)?;
    let path = baseline_path(scenario, opts.baseline_dir.as_deref());
    let base = Baseline::read(&path).map_err(|error| {
        let verb = if matches!(error, BaselineError::Missing { .. }) {
            "create"
        } else {
            "re-create"
        };
        CheckError::Baseline {
            error,
            hint: format!("{verb} it with `{}`", bless_command(scenario, opts)),
        }
    })?;
    let observed = observe(scenario, opts)?;
    let comparison = compare(&base.metrics, &observed.metrics, &loaded.scenario.check);
    let mut notes = Vec::new();
    let id = &observed.ident;
    if id.name != base.scenario {
        notes.push(format!(
            "the results are of scenario \"{}\", the baseline of \"{}\"",
            id.name, base.scenario
        ));
    }
    if id.seed != base.seed {
        notes.push(format!(
            "seed {} differs from the baseline's seed {}: the metrics are expected to differ",
            id.seed, base.seed
        ));
    }
    let input_changes = match (&base.inputs, &observed.inputs) {
        (Some(old), Some(new)) => inputs::diff(old, new),
        _ => Vec::new(),
    };
    if let Some(f) = &observed.fingerprint
        && !base.scenario_sha256.is_empty()
        && *f != base.scenario_sha256
    {
        let mut note =
            String::from("the resolved scenario differs from the one blessed (a value in it, or a default, changed)");
        if base.inputs.is_none() {
            note.push_str(
                "; which inputs changed is not known: the baseline was blessed before baselines recorded them",
            );
        }
        notes.push(note);
    }
    if id.outcome == "wall_clock_budget" {
        notes.push("the run stopped on its wall-clock budget: its results depend on the machine's speed".into());
    }
    for p in &comparison.unmatched_patterns {
        notes.push(format!("{p} matches no metric"));
    }
    if let Some(d) = &observed.results_dir {
        notes.push(format!("results in {}", d.display()));
    }
    Ok(Checked {
        name: stem(scenario),
        baseline_path: path,
        comparison,
        notes,
        inputs: input_changes,
        observed,
    })
}

/// One scenario blessed.
#[derive(Clone, Debug)]
pub struct Blessed {
    pub baseline_path: PathBuf,
    pub metrics: usize,
    /// What was there before.
    pub previous: Previous,
    /// False when the file already held exactly these bytes.
    pub written: bool,
}

/// The baseline file a bless replaced.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Previous {
    /// There was no file.
    None,
    /// There was a file that is not a readable baseline of this format.
    Unreadable,
    /// A baseline in which this many metrics differ from the new one.
    Changed(usize),
}

/// Runs `scenario` (or reads `opts.from_results`) and writes its baseline.
pub fn bless_one(scenario: &Path, opts: &Options) -> Result<Blessed, CheckError> {
    let loaded = load(scenario).map_err(RunError::from)?;
    let observed = observe(scenario, opts)?;
    if observed.ident.outcome == "wall_clock_budget" {
        return Err(CheckError::NotBlessable {
            file: loaded.file.clone(),
            message: "the run stopped on its wall-clock budget (`run.wall_clock_s`), so its results depend on the \
                      machine's speed; raise the budget or shorten the run"
                .into(),
        });
    }
    let path = baseline_path(scenario, opts.baseline_dir.as_deref());
    let new = Baseline {
        scenario: observed.ident.name.clone(),
        seed: observed.ident.seed,
        scenario_sha256: observed
            .fingerprint
            .clone()
            .unwrap_or_else(|| scenario_fingerprint(&loaded.scenario)),
        metrics: observed.metrics,
        inputs: observed.inputs,
    };
    let text = new.to_toml();
    let old_bytes = std::fs::read(&path).ok();
    let previous = match &old_bytes {
        None => Previous::None,
        Some(b) => std::str::from_utf8(b)
            .ok()
            .and_then(|t| Baseline::parse(&path.display().to_string(), t).ok())
            .map_or(Previous::Unreadable, |old| {
                Previous::Changed(compare(&old.metrics, &new.metrics, &CheckSpec::default()).rows.len())
            }),
    };
    let written = old_bytes.as_deref() != Some(text.as_bytes());
    if written {
        junit::write_atomically(&path, text.as_bytes()).map_err(|e| CheckError::Write {
            path: path.display().to_string(),
            message: e.to_string(),
        })?;
    }
    Ok(Blessed {
        baseline_path: path,
        metrics: new.metrics.len(),
        previous,
        written,
    })
}

/// A temporary directory for runs whose results are not kept; removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new() -> std::io::Result<TempDir> {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let p = std::env::temp_dir().join(format!("fabricsim-check-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p)?;
        Ok(TempDir(p))
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_baseline_location() {
        let p = |s: &str| baseline_path(Path::new(s), None);
        assert_eq!(
            p("scenarios/catalogue/quickstart.toml"),
            Path::new("scenarios/baselines/quickstart.baseline.toml")
        );
        assert_eq!(p("quickstart.toml"), Path::new("../baselines/quickstart.baseline.toml"));
        assert_eq!(
            p("./quickstart.toml"),
            Path::new("./../baselines/quickstart.baseline.toml")
        );
        assert_eq!(p("/a/b/x.toml"), Path::new("/a/baselines/x.baseline.toml"));
        assert_eq!(p("../x.toml"), Path::new("../../baselines/x.baseline.toml"));
        assert_eq!(
            baseline_path(Path::new("a/x.toml"), Some(Path::new("bl"))),
            Path::new("bl/x.baseline.toml")
        );
    }
}
