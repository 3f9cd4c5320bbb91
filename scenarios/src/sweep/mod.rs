//! Parameter sweeps: a `[sweep]` table turns one scenario file into many (`docs/sweeps.md`).
//!
//! ```toml
//! [sweep]
//! mode = "grid"          # or "zip"; default grid
//! seeds = 3              # replications: seed = the point's scenario.seed + 0, 1, 2
//! [sweep.params]
//! "fabric.kind" = ["infiniband", "rocev2"]
//! "workload.0.size" = ["64KiB", "1MiB"]   # a number indexes an array of tables ([[workload]])
//! ```
//!
//! A point is made by editing the parsed TOML document (the `[sweep]` table removed, each
//! swept path set to one of its values), so every point is a complete scenario that goes
//! through the ordinary loader and checks ([`crate::build::load_str`],
//! [`crate::runner::validate_loaded`]). Errors found in a point are reported at the sweep
//! entry that made it (or at the base scenario's field), prefixed with the point:
//! `file:line:col: sweep point 3 (fabric.kind = "x", topology.k = 4): fabric.kind: ...`.
//!
//! - [`run`]: `fabricsim sweep`: points as child processes, concurrency and time limits,
//!   Ctrl-C, resume.
//! - [`table`]: `sweep.csv`, `sweep_summary.csv` and the terminal table.
//! - [`stats`]: mean and Student-t 95% confidence interval.
//! - [`slurm`]: the job-array script for `fabricsim sweep --slurm`.

pub mod command;
pub mod run;
pub mod slurm;
pub mod stats;
pub mod table;

use crate::build::load_str;
use crate::diag::{ScenarioError, semantic_error};
use crate::locate::span_of;
use crate::runner::{self, RunError};
use serde::Deserialize;
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::ops::Range;
use std::path::{Path, PathBuf};
use toml::Spanned;

/// Most points one sweep may have (the product of the value lists in `grid` mode).
pub const MAX_SWEEP_POINTS: usize = 10_000;
/// Most replications (`sweep.seeds`).
pub const MAX_SWEEP_SEEDS: u32 = 1_000;
/// Most runs (points x seeds) one sweep may have.
pub const MAX_SWEEP_RUNS: usize = 100_000;
/// Most point errors printed when a sweep does not validate (the rest are counted).
pub const MAX_REPORTED_ERRORS: usize = 10;

/// How the value lists combine into points.
#[derive(Clone, Copy, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    /// The cartesian product; the first parameter varies slowest.
    #[default]
    Grid,
    /// Point i takes the i-th value of every list (all lists the same length).
    Zip,
}

impl Mode {
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Grid => "grid",
            Mode::Zip => "zip",
        }
    }
}

/// The file seen only for its `[sweep]` table (every other key is the scenario's business).
#[derive(Deserialize)]
struct Doc {
    sweep: Option<Spanned<SweepSpec>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SweepSpec {
    #[serde(default)]
    mode: Mode,
    #[serde(default = "one_seed")]
    seeds: Spanned<u32>,
    #[serde(default)]
    params: BTreeMap<Spanned<String>, Spanned<Vec<Spanned<toml::Value>>>>,
}

fn one_seed() -> Spanned<u32> {
    Spanned::new(0..0, 1)
}

/// One step of a sweep path: a table key or an array index.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Seg {
    Key(String),
    Index(usize),
}

/// A swept parameter: its path and values, with where they are written.
#[derive(Clone, Debug)]
pub struct Param {
    /// As written in `[sweep.params]`, e.g. `workload.0.size`.
    pub path: String,
    segs: Vec<Seg>,
    pub values: Vec<toml::Value>,
    key_span: Range<usize>,
    value_spans: Vec<Range<usize>>,
}

impl Param {
    /// The path as the loader names fields: `workload[0].size`.
    fn loader_path(&self) -> String {
        let mut out = String::new();
        for s in &self.segs {
            match s {
                Seg::Key(k) => {
                    if !out.is_empty() {
                        out.push('.');
                    }
                    out.push_str(k);
                }
                Seg::Index(i) => out.push_str(&format!("[{i}]")),
            }
        }
        out
    }
}

/// A value as a table cell: strings bare, everything else in TOML syntax.
pub fn cell(v: &toml::Value) -> String {
    match v {
        toml::Value::String(s) => s.clone(),
        v => v.to_string(),
    }
}

/// A parsed sweep file.
#[derive(Clone, Debug)]
pub struct Sweep {
    /// The path as given, for messages.
    pub file: String,
    /// Directory relative paths of the scenario are resolved against.
    pub dir: PathBuf,
    pub text: String,
    /// The scenario without its `[sweep]` table.
    base: toml::Table,
    pub mode: Mode,
    pub seeds: u32,
    /// In the order written.
    pub params: Vec<Param>,
    n_points: usize,
}

/// Refuses a sweep file where one scenario is expected (`fabricsim run`, `topo`, `check`, ...).
pub fn refuse_sweep(file: &str, text: &str) -> Result<(), ScenarioError> {
    let Ok(root) = toml::de::DeTable::parse(text) else {
        return Ok(()); // the loader reports the syntax error
    };
    match root.get_ref().iter().find(|(k, _)| k.get_ref().as_ref() == "sweep") {
        None => Ok(()),
        Some((k, _)) => Err(semantic_error(
            file,
            text,
            Some(k.span()),
            "sweep",
            "this file is a sweep (it has a [sweep] table), not one scenario: run its points with \
             `fabricsim sweep FILE`; `fabricsim validate FILE` checks them all",
        )),
    }
}

/// Reads `path`; `None` if it is a plain scenario (no `[sweep]` table).
pub fn read(path: &Path) -> Result<Option<Sweep>, ScenarioError> {
    let text = crate::diag::read_scenario_file(path)?;
    let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
    Sweep::parse(path.display().to_string(), dir, text)
}

/// Whether `path` reads as a sweep file (a readable TOML file with a `[sweep]` table).
pub fn is_sweep_file(path: &Path) -> bool {
    matches!(read(path), Ok(Some(_)))
}

impl Sweep {
    /// Parses the `[sweep]` table of `text` (named `file`); `None` if there is none.
    pub fn parse(file: String, dir: PathBuf, text: String) -> Result<Option<Sweep>, ScenarioError> {
        let doc: Doc = crate::diag::parse_toml(&file, &text)?;
        let Some(spec) = doc.sweep else { return Ok(None) };
        let sweep_span = spec.span();
        let spec = spec.into_inner();
        let err = |span: Range<usize>, field: &str, msg: String| semantic_error(&file, &text, Some(span), field, msg);
        let mut base: toml::Table =
            toml::from_str(&text).map_err(|e| err(0..0, "", format!("cannot read the scenario: {e}")))?;
        base.remove("sweep");

        let seeds = *spec.seeds.get_ref();
        if !(1..=MAX_SWEEP_SEEDS).contains(&seeds) {
            return Err(err(
                spec.seeds.span(),
                "sweep.seeds",
                format!("expected 1..={MAX_SWEEP_SEEDS} replications, got {seeds}"),
            ));
        }
        let mut entries: Vec<_> = spec.params.into_iter().collect();
        entries.sort_by_key(|(k, _)| k.span().start);
        let mut params: Vec<Param> = Vec::with_capacity(entries.len());
        for (key, values) in entries {
            let key_span = key.span();
            let list_span = values.span();
            let path = key.into_inner();
            let field = format!("sweep.params.\"{path}\"");
            let segs = parse_path(&path).map_err(|m| err(key_span.clone(), &field, m))?;
            let values = values.into_inner();
            if values.is_empty() {
                return Err(err(list_span, &field, "expected a non-empty list of values".into()));
            }
            if let Some(other) = params
                .iter()
                .find(|p| is_prefix(&p.segs, &segs) || is_prefix(&segs, &p.segs))
            {
                return Err(err(
                    key_span,
                    &field,
                    format!("overlaps `{}`: a swept path may not lie inside another", other.path),
                ));
            }
            if spec.mode == Mode::Zip
                && let Some(first) = params.first()
                && first.values.len() != values.len()
            {
                return Err(err(
                    list_span,
                    &field,
                    format!(
                        "zip mode needs lists of one length: {} values here, {} for `{}`",
                        values.len(),
                        first.values.len(),
                        first.path
                    ),
                ));
            }
            params.push(Param {
                path,
                segs,
                value_spans: values.iter().map(Spanned::span).collect(),
                values: values.into_iter().map(Spanned::into_inner).collect(),
                key_span,
            });
        }
        let n_points = match spec.mode {
            Mode::Zip => params.first().map_or(1, |p| p.values.len()),
            Mode::Grid => params
                .iter()
                .try_fold(1usize, |n, p| n.checked_mul(p.values.len()))
                .unwrap_or(usize::MAX),
        };
        if n_points > MAX_SWEEP_POINTS {
            return Err(err(
                sweep_span,
                "sweep",
                format!("the sweep has {n_points} points; the limit is {MAX_SWEEP_POINTS} (MAX_SWEEP_POINTS)"),
            ));
        }
        let n_runs = n_points * seeds as usize;
        if n_runs > MAX_SWEEP_RUNS {
            return Err(err(
                sweep_span,
                "sweep",
                format!(
                    "the sweep has {n_points} points x {seeds} seeds = {n_runs} runs; the limit is {MAX_SWEEP_RUNS} (MAX_SWEEP_RUNS)"
                ),
            ));
        }
        Ok(Some(Sweep {
            file,
            dir,
            text,
            base,
            mode: spec.mode,
            seeds,
            params,
            n_points,
        }))
    }

    pub fn n_points(&self) -> usize {
        self.n_points
    }

    /// The scenario's name (`scenario.name`), if the base has one.
    pub fn name(&self) -> Option<&str> {
        self.base.get("scenario")?.get("name")?.as_str()
    }

    /// For point `index`, the index of each parameter's value.
    pub fn assignment(&self, index: usize) -> Vec<usize> {
        assert!(index < self.n_points, "point {index} of {}", self.n_points);
        match self.mode {
            Mode::Zip => vec![index; self.params.len()],
            Mode::Grid => {
                // Mixed radix, the last parameter fastest.
                let mut rest = index;
                let mut out = vec![0; self.params.len()];
                for (slot, p) in out.iter_mut().zip(&self.params).rev() {
                    *slot = rest % p.values.len();
                    rest /= p.values.len();
                }
                out
            }
        }
    }

    /// The values of point `index`, one per parameter.
    pub fn values(&self, index: usize) -> Vec<&toml::Value> {
        self.assignment(index)
            .into_iter()
            .zip(&self.params)
            .map(|(i, p)| &p.values[i])
            .collect()
    }

    /// `fabric.kind = "rocev2", topology.k = 4`: what point `index` sets.
    pub fn label(&self, index: usize) -> String {
        let parts: Vec<String> = self
            .values(index)
            .into_iter()
            .zip(&self.params)
            .map(|(v, p)| format!("{} = {v}", p.path))
            .collect();
        if parts.is_empty() {
            "the base scenario".into()
        } else {
            parts.join(", ")
        }
    }

    /// Point `index` as a scenario file; on error, the parameter that could not be set.
    pub fn point_text(&self, index: usize) -> Result<String, (usize, String)> {
        let mut root = toml::Value::Table(self.base.clone());
        for (p, (param, v)) in self.params.iter().zip(self.values(index)).enumerate() {
            set_path(&mut root, &param.segs, v.clone(), "").map_err(|m| (p, m))?;
        }
        absolute_cdf_paths(&mut root, &self.dir);
        toml::to_string(&root).map_err(|e| (0, format!("cannot write the point: {e}")))
    }

    /// An error in point `index`: at `span` of the sweep file, prefixed with the point.
    fn point_error(&self, index: usize, span: Option<Range<usize>>, message: &str) -> ScenarioError {
        let label = self.label(index);
        semantic_error(
            &self.file,
            &self.text,
            span,
            "",
            format!("sweep point {index} ({label}): {message}"),
        )
    }

    /// The loader's error `e` in point `index`, placed in the sweep file: at the swept value
    /// (or key, for an unknown key) when the field is swept, else at the base's field.
    fn relocate(&self, index: usize, e: &ScenarioError) -> ScenarioError {
        let field = e.field().unwrap_or("");
        let assignment = self.assignment(index);
        // "unknown field `kk`" is reported at the enclosing table (`topology`).
        let unknown = e
            .message()
            .strip_prefix("unknown field `")
            .and_then(|m| m.split('`').next())
            .map(|k| {
                if field.is_empty() || field == "(top level)" {
                    k.to_string()
                } else {
                    format!("{field}.{k}")
                }
            });
        let swept = self.params.iter().enumerate().find(|(_, p)| {
            let lp = p.loader_path();
            unknown.as_deref() == Some(lp.as_str())
                || field == lp
                || field.starts_with(&format!("{lp}."))
                || field.starts_with(&format!("{lp}["))
        });
        // A tagged table (`fabric.buffer = { kind = ..., size = ... }`) reports its values'
        // errors at the table: blame the swept value inside it that the message quotes.
        let swept = swept.or_else(|| {
            self.params.iter().enumerate().find(|(i, p)| {
                let lp = p.loader_path();
                let quoted = format!("{}", p.values[assignment[*i]]);
                !field.is_empty() && lp.starts_with(&format!("{field}.")) && e.message().contains(&quoted)
            })
        });
        let span = match swept {
            Some((_, p)) if unknown.is_some() => Some(p.key_span.clone()),
            Some((i, p)) => Some(p.value_spans[assignment[i]].clone()),
            None if field.is_empty() => None,
            None => span_of(&self.text, field),
        };
        let message = match e.field() {
            Some(f) => format!("{f}: {}", e.message()),
            None => e.message().to_string(),
        };
        self.point_error(index, span, &message)
    }

    /// Builds and checks point `index` and hashes its resolved scenario for every seed.
    pub fn validate_point(&self, index: usize) -> Result<PointPlan, ScenarioError> {
        let text = self.point_text(index).map_err(|(p, m)| {
            let param = &self.params[p];
            self.point_error(index, Some(param.key_span.clone()), &format!("{}: {m}", param.path))
        })?;
        let loaded =
            load_str(self.file.clone(), self.dir.clone(), text.clone()).map_err(|e| self.relocate(index, &e))?;
        let (loaded, built) = runner::validate_loaded(loaded).map_err(|e| match e {
            RunError::Scenario(e) => self.relocate(index, &e),
            RunError::Engine { message, .. }
            | RunError::Output { message, .. }
            | RunError::OutDir { message, .. }
            | RunError::BuildBudget { message, .. }
            | RunError::Threads { message, .. } => self.point_error(index, None, &message),
            RunError::Interrupted(m) => self.point_error(index, None, &format!("interrupted {m}")),
        })?;
        let base_seed = loaded.scenario.scenario.seed;
        let mut runs = Vec::with_capacity(self.seeds as usize);
        for r in 0..self.seeds {
            let seed = base_seed.checked_add(u64::from(r)).ok_or_else(|| {
                self.point_error(
                    index,
                    span_of(&self.text, "sweep.seeds"),
                    &format!("scenario.seed {base_seed} + replica {r} is beyond 2^64 - 1"),
                )
            })?;
            let resolved = loaded.clone().with_seed(Some(seed)).resolved(&built);
            let resolved = toml::to_string(&resolved)
                .map_err(|e| self.point_error(index, None, &format!("cannot write the resolved scenario: {e}")))?;
            runs.push(RunPlan {
                seed,
                resolved_sha256: hex_sha256(resolved.as_bytes()),
            });
        }
        Ok(PointPlan {
            index,
            text,
            description: format!("{}; {} flows", built.topology.description, built.flows.len()),
            runs,
            wall_clock_s: loaded.scenario.run.wall_clock_s,
        })
    }

    /// Validates every point, on up to `threads` threads; all errors, in point order.
    pub fn expand(&self, threads: usize) -> Result<Vec<PointPlan>, Invalid> {
        use std::sync::atomic::{AtomicUsize, Ordering};
        let next = AtomicUsize::new(0);
        let threads = threads.clamp(1, self.n_points.max(1));
        let mut results: Vec<(usize, Result<PointPlan, ScenarioError>)> = std::thread::scope(|s| {
            let workers: Vec<_> = (0..threads)
                .map(|_| {
                    s.spawn(|| {
                        let mut mine = Vec::new();
                        loop {
                            let i = next.fetch_add(1, Ordering::Relaxed);
                            if i >= self.n_points {
                                return mine;
                            }
                            mine.push((i, self.validate_point(i)));
                        }
                    })
                })
                .collect();
            workers
                .into_iter()
                .flat_map(|w| w.join().expect("a validation thread panicked"))
                .collect()
        });
        results.sort_by_key(|(i, _)| *i);
        let mut plans = Vec::with_capacity(results.len());
        let mut errors = Vec::new();
        let mut n_failed = 0;
        for (_, r) in results {
            match r {
                Ok(p) => plans.push(p),
                Err(e) => {
                    n_failed += 1;
                    if errors.len() < MAX_REPORTED_ERRORS {
                        errors.push(e);
                    }
                }
            }
        }
        if n_failed > 0 {
            return Err(Invalid {
                errors,
                n_failed,
                n_points: self.n_points,
            });
        }
        Ok(plans)
    }
}

/// Points that did not validate: the first [`MAX_REPORTED_ERRORS`] errors and the count.
#[derive(Debug)]
pub struct Invalid {
    pub errors: Vec<ScenarioError>,
    pub n_failed: usize,
    pub n_points: usize,
}

/// A point that validated: its scenario file and one run per seed.
#[derive(Clone, Debug)]
pub struct PointPlan {
    pub index: usize,
    /// The point's scenario file (the base with the swept values set).
    pub text: String,
    /// Topology and flow count, for `fabricsim validate`.
    pub description: String,
    pub runs: Vec<RunPlan>,
    /// The point's `run.wall_clock_s` (the Slurm time limit is made from it).
    pub wall_clock_s: u64,
}

/// One replication of a point.
#[derive(Clone, Debug)]
pub struct RunPlan {
    pub seed: u64,
    /// SHA-256 of the run's `scenario.resolved.toml`, as `fabricsim run` writes it into
    /// `summary.json` (`scenario.resolved_sha256`): resume compares the two.
    pub resolved_sha256: String,
}

pub(crate) fn hex_sha256(bytes: &[u8]) -> String {
    Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect()
}

fn parse_path(path: &str) -> Result<Vec<Seg>, String> {
    let mut segs = Vec::new();
    for part in path.split('.') {
        if part.is_empty() {
            return Err(format!(
                "invalid sweep path `{path}`: expected keys separated by dots, e.g. `fabric.kind` or `workload.0.size`"
            ));
        }
        match part.parse::<usize>() {
            Ok(i) if part.bytes().all(|b| b.is_ascii_digit()) => segs.push(Seg::Index(i)),
            _ => segs.push(Seg::Key(part.to_string())),
        }
    }
    match segs.first() {
        Some(Seg::Key(k)) if k == "sweep" => Err("the [sweep] table itself cannot be swept".into()),
        Some(Seg::Index(_)) => Err(format!("invalid sweep path `{path}`: it must start with a key")),
        _ => Ok(segs),
    }
}

fn is_prefix(a: &[Seg], b: &[Seg]) -> bool {
    a.len() <= b.len() && a.iter().zip(b).all(|(x, y)| x == y)
}

fn type_name(v: &toml::Value) -> &'static str {
    v.type_str()
}

/// Sets the value at `segs` under `node` (`walked`: the path so far, for messages). Missing
/// tables on the way are created; array indices must exist.
fn set_path(node: &mut toml::Value, segs: &[Seg], value: toml::Value, walked: &str) -> Result<(), String> {
    let Some((first, rest)) = segs.split_first() else {
        *node = value;
        return Ok(());
    };
    let here = |s: &Seg| match s {
        Seg::Key(k) if walked.is_empty() => k.clone(),
        Seg::Key(k) => format!("{walked}.{k}"),
        Seg::Index(i) => format!("{walked}.{i}"),
    };
    let name = if walked.is_empty() { "the scenario" } else { walked };
    match first {
        Seg::Key(k) => {
            let ty = type_name(node);
            let toml::Value::Table(t) = node else {
                return Err(format!("`{name}` is a {ty}, not a table: it has no key `{k}`"));
            };
            if !t.contains_key(k) {
                if let Some(Seg::Index(i)) = rest.first() {
                    return Err(format!(
                        "the scenario has no `{}`, so no entry {i} in it (a number in a sweep path indexes an \
                         existing array, such as the [[workload]] entries)",
                        here(first)
                    ));
                }
                t.insert(k.clone(), toml::Value::Table(toml::Table::new()));
            }
            let child = t.get_mut(k).expect("inserted above");
            set_path(child, rest, value, &here(first))
        }
        Seg::Index(i) => {
            let ty = type_name(node);
            let toml::Value::Array(a) = node else {
                return Err(format!(
                    "`{name}` is a {ty}, not an array: a number in a sweep path indexes an array (such as the \
                     [[workload]] entries)"
                ));
            };
            let n = a.len();
            let Some(child) = a.get_mut(*i) else {
                return Err(format!(
                    "`{name}` has {n} entries (0..={}), so no entry {i}",
                    n.saturating_sub(1)
                ));
            };
            set_path(child, rest, value, &here(first))
        }
    }
}

/// Makes relative `cdf` paths of workloads absolute (against `dir`), so a point file works
/// from the sweep's output directory.
fn absolute_cdf_paths(root: &mut toml::Value, dir: &Path) {
    let Some(toml::Value::Array(ws)) = root.get_mut("workload") else {
        return;
    };
    for w in ws {
        if let Some(toml::Value::String(cdf)) = w.get_mut("cdf")
            && Path::new(cdf.as_str()).is_relative()
        {
            let p = dir.join(cdf.as_str());
            let abs = std::path::absolute(&p).unwrap_or(p);
            *cdf = abs.display().to_string();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const BASE: &str = r#"[scenario]
name = "t"
seed = 7

[topology]
kind = "fat_tree"
k = 4
host_link = { rate = "100Gbps" }
fabric_link = { rate = "100Gbps" }

[[workload]]
kind = "permutation"
size = "64KiB"
"#;

    fn sweep(extra: &str) -> Result<Option<Sweep>, ScenarioError> {
        Sweep::parse("s.toml".into(), PathBuf::new(), format!("{BASE}{extra}"))
    }

    fn ok(extra: &str) -> Sweep {
        sweep(extra).unwrap().expect("a sweep")
    }

    fn err(extra: &str) -> String {
        match sweep(extra) {
            Ok(_) => panic!("should fail: {extra}"),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn no_sweep_table_is_none() {
        assert!(sweep("").unwrap().is_none());
    }

    #[test]
    fn grid_is_cartesian_first_parameter_slowest() {
        let s = ok(
            "[sweep]\nseeds = 2\n[sweep.params]\n\"topology.k\" = [4, 6]\n\"workload.0.size\" = [\"1KiB\", \"2KiB\", \"3KiB\"]\n",
        );
        assert_eq!(s.n_points(), 6);
        assert_eq!(s.seeds, 2);
        let all: Vec<Vec<usize>> = (0..6).map(|i| s.assignment(i)).collect();
        assert_eq!(all, [[0, 0], [0, 1], [0, 2], [1, 0], [1, 1], [1, 2]]);
        assert_eq!(s.label(4), "topology.k = 6, workload.0.size = \"2KiB\"");
    }

    #[test]
    fn params_keep_file_order() {
        // BTreeMap order would put "a..." first; the file order is kept.
        let s = ok("[sweep.params]\n\"workload.0.size\" = [\"1KiB\"]\n\"fabric.mtu\" = [\"4KiB\"]\n");
        let paths: Vec<&str> = s.params.iter().map(|p| p.path.as_str()).collect();
        assert_eq!(paths, ["workload.0.size", "fabric.mtu"]);
    }

    #[test]
    fn zip_pairs_values() {
        let s = ok(
            "[sweep]\nmode = \"zip\"\n[sweep.params]\n\"topology.k\" = [4, 6]\n\"workload.0.size\" = [\"1KiB\", \"2KiB\"]\n",
        );
        assert_eq!(s.n_points(), 2);
        assert_eq!(s.assignment(1), [1, 1]);
        let e =
            err("[sweep]\nmode = \"zip\"\n[sweep.params]\n\"topology.k\" = [4, 6]\n\"workload.0.size\" = [\"1KiB\"]\n");
        assert!(
            e.contains("zip mode needs lists of one length: 1 values here, 2 for `topology.k`"),
            "{e}"
        );
        assert!(e.starts_with("s.toml:18:21: sweep.params.\"workload.0.size\": "), "{e}");
    }

    #[test]
    fn point_text_sets_values_and_drops_the_sweep() {
        let s = ok("[sweep.params]\n\"topology.k\" = [4, 6]\n\"fabric.switch_latency\" = [\"1us\"]\n");
        let t: toml::Table = toml::from_str(&s.point_text(1).unwrap()).unwrap();
        assert!(!t.contains_key("sweep"));
        assert_eq!(t["topology"]["k"].as_integer(), Some(6));
        // A missing table on the way is created.
        assert_eq!(t["fabric"]["switch_latency"].as_str(), Some("1us"));
        assert_eq!(t["workload"][0]["size"].as_str(), Some("64KiB"));
    }

    #[test]
    fn no_params_is_one_point() {
        let s = ok("[sweep]\nseeds = 3\n");
        assert_eq!(s.n_points(), 1);
        assert_eq!(s.label(0), "the base scenario");
    }

    #[test]
    fn limits() {
        let big: Vec<String> = (0..101).map(|i| i.to_string()).collect();
        let list = format!("[{}]", big.join(", "));
        let e = err(&format!(
            "[sweep.params]\n\"topology.k\" = {list}\n\"scenario.seed\" = {list}\n"
        ));
        assert!(e.contains("the sweep has 10201 points; the limit is 10000"), "{e}");
        let e = err("[sweep]\nseeds = 0\n");
        assert!(e.contains("sweep.seeds: expected 1..=1000 replications, got 0"), "{e}");
        let e = err(
            "[sweep]\nseeds = 1000\n[sweep.params]\n\"topology.k\" = [2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30, 32, 34, 36, 38, 40, 42, 44, 46, 48, 50, 52, 54, 56, 58, 60, 62, 64, 66, 68, 70, 72, 74, 76, 78, 80, 82, 84, 86, 88, 90, 92, 94, 96, 98, 100, 102, 104, 106, 108, 110, 112, 114, 116, 118, 120, 122, 124, 126, 128, 130, 132, 134, 136, 138, 140, 142, 144, 146, 148, 150, 152, 154, 156, 158, 160, 162, 164, 166, 168, 170, 172, 174, 176, 178, 180, 182, 184, 186, 188, 190, 192, 194, 196, 198, 200, 202]\n",
        );
        assert!(e.contains("= 101000 runs; the limit is 100000"), "{e}");
    }

    #[test]
    fn bad_tables_and_paths() {
        let e = err("[sweep]\nmod = \"grid\"\n");
        assert!(e.contains("sweep.mod: unknown field `mod`"), "{e}");
        let e = err("[sweep]\nmode = \"cartesian\"\n");
        assert!(e.contains("sweep.mode: unknown variant `cartesian`"), "{e}");
        let e = err("[sweep.params]\n\"topology..k\" = [4]\n");
        assert!(e.contains("invalid sweep path `topology..k`"), "{e}");
        let e = err("[sweep.params]\n\"topology.k\" = []\n");
        assert!(e.contains("expected a non-empty list of values"), "{e}");
        let e = err("[sweep.params]\n\"topology\" = [4]\n\"topology.k\" = [4]\n");
        assert!(e.contains("overlaps `topology`"), "{e}");
        let e = err("[sweep.params]\n\"sweep.seeds\" = [4]\n");
        assert!(e.contains("cannot be swept"), "{e}");
        let e = err("[sweep.params]\n\"topology.k\" = 4\n");
        assert!(e.contains("found the integer 4; expected an array"), "{e}");
    }

    #[test]
    fn set_path_errors() {
        let s = ok("[sweep.params]\n\"workload.3.size\" = [\"1KiB\"]\n\"topology.k.x\" = [1]\n");
        let (p, m) = s.point_text(0).unwrap_err();
        assert_eq!(p, 0);
        assert_eq!(m, "`workload` has 1 entries (0..=0), so no entry 3");
        let s = ok("[sweep.params]\n\"topology.k.x\" = [1]\n");
        assert_eq!(
            s.point_text(0).unwrap_err().1,
            "`topology.k` is a integer, not a table: it has no key `x`"
        );
        let s = ok("[sweep.params]\n\"flows.0.size\" = [1]\n");
        assert!(
            s.point_text(0)
                .unwrap_err()
                .1
                .starts_with("the scenario has no `flows`, so no entry 0")
        );
    }

    #[test]
    fn refuses_a_sweep_as_a_scenario() {
        let text = format!("{BASE}[sweep]\nseeds = 2\n");
        let e = refuse_sweep("s.toml", &text).unwrap_err().to_string();
        assert!(e.starts_with("s.toml:14:2: sweep: this file is a sweep"), "{e}");
        assert!(refuse_sweep("s.toml", BASE).is_ok());
    }

    #[test]
    fn point_errors_point_at_the_swept_value() {
        let s = ok("[sweep.params]\n\"topology.k\" = [4, 5]\n");
        assert!(s.validate_point(0).is_ok());
        let e = s.validate_point(1).unwrap_err().to_string();
        assert_eq!(
            e,
            "s.toml:15:20: sweep point 1 (topology.k = 5): topology.k: fat-tree k must be even and at least 2 (got k=5)"
        );
        let s = ok("[sweep.params]\n\"topology.kk\" = [4]\n");
        let e = s.validate_point(0).unwrap_err().to_string();
        assert!(
            e.starts_with("s.toml:15:1: sweep point 0 (topology.kk = 4): topology: unknown field `kk`"),
            "{e}"
        );
        let inv = s.expand(2).unwrap_err();
        assert_eq!((inv.n_failed, inv.n_points, inv.errors.len()), (1, 1, 1));
    }

    #[test]
    fn seeds_count_from_the_scenario_seed() {
        let s = ok("[sweep]\nseeds = 3\n");
        let p = s.validate_point(0).unwrap();
        let seeds: Vec<u64> = p.runs.iter().map(|r| r.seed).collect();
        assert_eq!(seeds, [7, 8, 9]);
        assert_ne!(p.runs[0].resolved_sha256, p.runs[1].resolved_sha256);
    }
}
