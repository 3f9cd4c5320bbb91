//! `fabricsim diff RUN_A RUN_B`: what differs between two results directories written by
//! `fabricsim run`, for a reviewer: the inputs that differ (keys of the resolved scenarios),
//! then the metrics that differ, largest relative change first, lists folded into one row
//! (the same extraction, comparison and folding as `fabricsim check`, with every metric
//! compared exactly up to float noise). A difference is no failure: the command exits 0, and 2
//! when a directory is not a results directory.

use super::compare::{Comparison, Counts, Verdict, compare};
use super::fold::{Entry, fold, unfolded};
use super::inputs::{self, InputChange};
use super::metrics::{Metrics, Value, natural_cmp};
use super::table::{Line, entry_lines, write_table};
use super::{CheckError, CheckSpec, Observed, read_results};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// Two runs compared.
#[derive(Clone, Debug)]
pub struct RunDiff {
    pub a: PathBuf,
    pub b: PathBuf,
    pub run_a: Observed,
    pub run_b: Observed,
    /// The inputs that differ from A to B; `None` when a run's inputs are not known (no
    /// readable `scenario.resolved.toml`).
    pub inputs: Option<Vec<InputChange>>,
    /// A as the baseline, B as now, every metric compared exactly.
    pub comparison: Comparison,
}

impl RunDiff {
    /// Neither an input nor a metric differs.
    pub fn identical(&self) -> bool {
        self.comparison.rows.is_empty() && self.inputs.as_ref().is_some_and(Vec::is_empty)
    }
}

/// Reads `dir` as a results directory: it must carry fabricsim's marker
/// ([`crate::results_dir::MARKER`]); errors name the directory.
fn read_run(dir: &Path) -> Result<Observed, CheckError> {
    let refuse = |message: String| CheckError::Results {
        path: dir.display().to_string(),
        message,
    };
    let hint = "give a directory written by `fabricsim run SCENARIO --out DIR`";
    match std::fs::metadata(dir) {
        Err(_) => return Err(refuse(format!("no such directory; {hint}"))),
        Ok(m) if !m.is_dir() => return Err(refuse(format!("not a directory; {hint}"))),
        Ok(_) => {}
    }
    if !crate::results_dir::has_marker(dir) {
        return Err(refuse(format!(
            "not a fabricsim results directory (it has no {} file); {hint}",
            crate::results_dir::MARKER
        )));
    }
    read_results(dir)
}

/// Compares the results directories `a` and `b`.
pub fn diff_dirs(a: &Path, b: &Path) -> Result<RunDiff, CheckError> {
    let run_a = read_run(a)?;
    let run_b = read_run(b)?;
    let inputs = match (&run_a.inputs, &run_b.inputs) {
        (Some(x), Some(y)) => Some(inputs::diff(x, y)),
        _ => None,
    };
    let comparison = compare(&run_a.metrics, &run_b.metrics, &CheckSpec::default());
    Ok(RunDiff {
        a: a.to_path_buf(),
        b: b.to_path_buf(),
        run_a,
        run_b,
        inputs,
        comparison,
    })
}

/// `76 metrics: 62 unchanged, 12 differ, 1 only in A, 1 only in B`: the counts add up.
pub fn summary(k: &Counts) -> String {
    format!(
        "{} metrics: {} unchanged, {} differ, {} only in A, {} only in B",
        k.total,
        k.unchanged,
        k.within + k.beyond,
        k.gone,
        k.new
    )
}

/// The metrics present on both sides with equal values, in name order.
fn unchanged<'a>(a: &'a Metrics, c: &Comparison) -> Vec<(&'a str, &'a Value)> {
    let moved: std::collections::BTreeSet<&str> = c.rows.iter().map(|r| r.metric.as_str()).collect();
    let mut v: Vec<(&str, &Value)> = a.iter().filter(|(k, _)| !moved.contains(k)).collect();
    v.sort_by(|x, y| natural_cmp(x.0, y.0));
    v
}

/// The report as text. `all`: every metric, one row each (no folding), the unchanged ones
/// last with `=`.
pub fn render_text(d: &RunDiff, all: bool) -> String {
    let mut o = String::new();
    let _ = writeln!(o, "A: {}", d.a.display());
    let _ = writeln!(o, "B: {}", d.b.display());
    let c = &d.comparison;
    let k = c.counts();
    if d.identical() && !all {
        let _ = writeln!(
            o,
            "no differences: the same inputs ({}), and all {} metrics equal",
            d.run_a.inputs.as_ref().map_or(0, |i| i.len()),
            k.total
        );
        return o;
    }
    match &d.inputs {
        None => {
            let which = if d.run_a.inputs.is_none() { &d.a } else { &d.b };
            let _ = writeln!(
                o,
                "inputs: not compared ({} has no readable scenario.resolved.toml)",
                which.display()
            );
        }
        Some(ch) if ch.is_empty() => {
            let _ = writeln!(o, "inputs: the same");
        }
        Some(ch) => {
            let _ = writeln!(
                o,
                "inputs that differ ({}; ~ changed, + only in B, - only in A):",
                ch.len()
            );
            o.push_str(&inputs::render(ch, "  "));
        }
    }
    if c.rows.is_empty() && !all {
        let _ = writeln!(o, "metrics: all {} equal", k.total);
        return o;
    }
    let _ = writeln!(o, "metrics that differ, largest change first:");
    let folded = if all { unfolded(&c.rows) } else { fold(c) };
    let mut lines = entry_lines(&folded, &|_| Vec::new());
    if all {
        for (name, v) in unchanged(&d.run_a.metrics, c) {
            let same = v.to_string();
            lines.push(Line::Cells(vec![name.to_owned(), same.clone(), same, "=".into()]));
        }
    }
    write_table(&mut o, "  ", &["metric", "A", "B", "change"], &lines, false);
    let _ = writeln!(o, "{}", summary(&k));
    o
}

/// A metric's value as JSON (a non-finite float as its text: JSON has no infinity).
fn json_value(v: &Option<Value>) -> serde_json::Value {
    use serde_json::Value as J;
    match v {
        None => J::Null,
        Some(Value::Int(i)) => J::from(*i),
        Some(Value::Float(x)) => serde_json::Number::from_f64(*x).map_or_else(|| J::from(x.to_string()), J::Number),
        Some(Value::Bool(b)) => J::Bool(*b),
        Some(Value::Text(t)) => J::from(t.as_str()),
    }
}

/// The report as JSON (`docs/cli.md`): the inputs that differ, every metric that differs
/// (unfolded, largest change first, each with its list), the folded lists, the counts. `all`:
/// the unchanged metrics too, last.
pub fn render_json(d: &RunDiff, all: bool) -> String {
    use serde_json::json;
    let c = &d.comparison;
    let k = c.counts();
    let inputs = d.inputs.as_ref().map(|ch| {
        ch.iter()
            .map(|i| json!({"key": i.key, "a": i.old, "b": i.new}))
            .collect::<Vec<_>>()
    });
    let mut metrics: Vec<serde_json::Value> = unfolded(&c.rows)
        .iter()
        .filter_map(|e| match e {
            Entry::Metric(r) => Some(r),
            Entry::List(_) => None,
        })
        .map(|r| {
            let status = match r.verdict {
                Verdict::New => "only_b",
                Verdict::Missing => "only_a",
                _ => "differs",
            };
            json!({
                "metric": r.metric,
                "a": json_value(&r.baseline),
                "b": json_value(&r.now),
                "status": status,
                "change": r.change(),
                "relative": r.relative().filter(|x| x.is_finite()),
                "list": super::fold::list_of(&r.metric).map(|(l, _)| l),
            })
        })
        .collect();
    if all {
        for (name, v) in unchanged(&d.run_a.metrics, c) {
            let v = Some(v.clone());
            metrics.push(json!({
                "metric": name, "a": json_value(&v), "b": json_value(&v), "status": "equal",
                "change": "", "relative": 0.0, "list": super::fold::list_of(name).map(|(l, _)| l),
            }));
        }
    }
    let lists: Vec<serde_json::Value> = fold(c)
        .iter()
        .filter_map(|e| match e {
            Entry::List(l) => Some(json!({
                "list": l.list,
                "entries_a": l.entries_baseline,
                "entries_b": l.entries_now,
                "moved": l.moved,
                "added": l.added,
                "removed": l.removed,
                "largest": l.largest().metric,
                "largest_change": l.largest().change(),
            })),
            Entry::Metric(_) => None,
        })
        .collect();
    let doc = json!({
        "schema": "fabricsim.diff/1",
        "a": d.a.display().to_string(),
        "b": d.b.display().to_string(),
        "identical": d.identical(),
        "inputs": inputs,
        "metrics": metrics,
        "lists": lists,
        "counts": {
            "metrics": k.total,
            "unchanged": k.unchanged,
            "differ": k.within + k.beyond,
            "only_a": k.gone,
            "only_b": k.new,
        },
    });
    let mut s = serde_json::to_string_pretty(&doc).unwrap_or_default();
    s.push('\n');
    s
}
