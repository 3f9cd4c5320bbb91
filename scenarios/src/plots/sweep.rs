//! Plots of a sweep's output directory (`fabricsim sweep`, `fabricsim plot SWEEP_DIR`), drawn
//! from its `sweep.json` (the parameters and their values, in the order written) and
//! `sweep_summary.csv` (mean and 95% half-width over the seeds per point): one line chart per
//! headline metric (`sweep::table::HEADLINE` but `outcome`, and every `busbw_GBps.*` column)
//! that has a value at some point, `DIR/plots/<metric>.svg`.
//!
//! x is the first swept parameter: a numeric axis when all its values read as numbers, or all as
//! sizes, rates or times (`units.rs`), with a tick at each value labelled as written (log scale
//! when the values are positive and span a factor of 100 or more); otherwise one position per
//! value, in the order written. One series per value of the second parameter (per combination
//! of the second and later ones) in `grid` mode; a single series with one parameter or in `zip`
//! mode. With more than one seed, a bar at each point spans the 95% confidence interval.

use super::chart::{Chart, Series, line_chart};
use super::{PlotError, Table, perr, read};
use crate::units::{RateSpec, SizeSpec, TimeSpec};
use std::path::Path;

/// Values of a numeric axis spanning at least this factor are drawn on a log scale.
const LOG_SPAN: f64 = 100.0;

/// Whether `dir` is a sweep's output directory (it has the sweep manifest).
pub fn is_sweep_dir(dir: &Path) -> bool {
    dir.join(crate::sweep::run::MANIFEST).is_file()
}

/// A swept parameter as the manifest lists it.
struct Param {
    path: String,
    values: Vec<String>,
}

/// The values as numbers (bytes, Gb/s, ns for units), if they all read as one kind.
fn numeric(values: &[String]) -> Option<Vec<f64>> {
    fn all<T>(v: &[String], f: impl Fn(&str) -> Option<T>) -> Option<Vec<T>> {
        v.iter().map(|s| f(s.trim())).collect()
    }
    if let Some(x) = all(values, |s| s.parse::<f64>().ok().filter(|x| x.is_finite())) {
        return Some(x);
    }
    if let Some(x) = all(values, |s| s.parse::<SizeSpec>().ok().map(|v| v.get().0 as f64)) {
        return Some(x);
    }
    if let Some(x) = all(values, |s| s.parse::<RateSpec>().ok().map(|v| v.get().0 as f64 / 1e9)) {
        return Some(x);
    }
    all(values, |s| {
        s.parse::<TimeSpec>().ok().map(|v| v.get().ps() as f64 / 1e3)
    })
}

/// The headline metrics among the summary's columns (names without `.mean`).
fn metrics(t: &Table) -> Vec<String> {
    t.header
        .iter()
        .filter_map(|h| h.strip_suffix(".mean"))
        .filter(|m| (*m != "outcome" && crate::sweep::table::HEADLINE.contains(m)) || m.starts_with("busbw_GBps."))
        .map(str::to_owned)
        .collect()
}

/// A file name for a metric: characters other than letters, digits, `.`, `-`, `_` become `_`.
fn file_name(metric: &str) -> String {
    let safe: String = metric
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_') {
                c
            } else {
                '_'
            }
        })
        .collect();
    format!("{safe}.svg")
}

/// Every figure of the sweep in `dir` as (file name, SVG text); none for a sweep without
/// parameters.
pub fn figures(dir: &Path) -> Result<Vec<(String, String)>, PlotError> {
    let mpath = dir.join(crate::sweep::run::MANIFEST);
    let text = read(dir, crate::sweep::run::MANIFEST)?.ok_or_else(|| perr(&mpath, "missing"))?;
    let manifest: serde_json::Value = serde_json::from_str(&text).map_err(|e| perr(&mpath, e.to_string()))?;
    let bad = |what: &str| perr(&mpath, format!("not a sweep manifest: {what}"));
    let params: Vec<Param> = manifest["params"]
        .as_array()
        .ok_or_else(|| bad("no params"))?
        .iter()
        .map(|p| {
            Some(Param {
                path: p["path"].as_str()?.to_owned(),
                values: p["values"]
                    .as_array()?
                    .iter()
                    .map(|v| v.as_str().map(str::to_owned))
                    .collect::<Option<_>>()?,
            })
        })
        .collect::<Option<_>>()
        .ok_or_else(|| bad("a parameter without path or values"))?;
    let seeds = manifest["seeds"].as_u64().ok_or_else(|| bad("no seeds"))?;
    let grid = manifest["mode"].as_str() == Some("grid");
    let Some(first) = params.first() else {
        return Ok(Vec::new());
    };
    let Some((path, t)) = super::table(dir, "sweep_summary.csv")? else {
        return Err(perr(
            &dir.join("sweep_summary.csv"),
            "missing: the sweep has not written its tables",
        ));
    };
    let pcols: Vec<usize> = params.iter().map(|p| t.col(&path, &p.path)).collect::<Result<_, _>>()?;

    // x: a number per value of the first parameter, or its position.
    let num = numeric(&first.values);
    let x_of = |cell: &str| -> Option<f64> {
        let i = first.values.iter().position(|v| v == cell)?;
        Some(num.as_ref().map_or(i as f64, |n| n[i]))
    };
    let x_log = num.as_ref().is_some_and(|x| {
        let (lo, hi) = x.iter().fold((f64::MAX, f64::MIN), |(a, b), &v| (a.min(v), b.max(v)));
        lo > 0.0 && hi >= LOG_SPAN * lo
    });
    let ticks: Vec<(f64, String)> = first
        .values
        .iter()
        .filter_map(|v| Some((x_of(v)?, v.clone())))
        .collect();
    let x_label = if x_log {
        format!("{} (log scale)", first.path)
    } else {
        first.path.clone()
    };

    // Series: the values of the other parameters (grid), in order of first appearance.
    let series_key = |row: &[String]| -> String {
        if !grid {
            return String::new();
        }
        params[1..]
            .iter()
            .zip(&pcols[1..])
            .map(|(p, &c)| format!("{} = {}", p.path, row.get(c).map_or("", String::as_str)))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let mut keys: Vec<String> = Vec::new();
    for r in &t.rows {
        let k = series_key(r);
        if !keys.contains(&k) {
            keys.push(k);
        }
    }

    let mut out = Vec::new();
    for m in metrics(&t) {
        let (mc, cc) = (t.col(&path, &format!("{m}.mean"))?, t.col(&path, &format!("{m}.ci95"))?);
        let series: Vec<Series> = keys
            .iter()
            .map(|k| {
                let rows = t.rows.iter().filter(|r| series_key(r) == *k);
                let mut points = Vec::new();
                let mut bars = Vec::new();
                for r in rows {
                    let (Some(x), Some(y)) = (r.get(pcols[0]).and_then(|c| x_of(c)), Table::num(r, mc)) else {
                        continue;
                    };
                    points.push((x, y));
                    if let Some(h) = Table::num(r, cc) {
                        bars.push((x, y - h, y + h));
                    }
                }
                points.sort_by(|a, b| a.0.total_cmp(&b.0));
                Series {
                    name: k.clone(),
                    points,
                    bars,
                }
            })
            .collect();
        if series.iter().all(|s| s.points.is_empty()) {
            continue;
        }
        let title = if seeds > 1 {
            format!("{m} vs {} (mean of {seeds} seeds, 95% CI)", first.path)
        } else {
            format!("{m} vs {}", first.path)
        };
        let c = Chart {
            title: &title,
            x_label: &x_label,
            y_label: &m,
            x_log,
            y_range: None,
            x_ticks: Some(ticks.clone()),
        };
        let svg = line_chart(&c, &series).map_err(|e| perr(&path, e))?;
        out.push((file_name(&m), svg));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_read_as_numbers_in_one_unit_or_not_at_all() {
        let v = |s: &[&str]| s.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        assert_eq!(numeric(&v(&["4", "8.5"])), Some(vec![4.0, 8.5]));
        assert_eq!(numeric(&v(&["64KiB", "1MiB"])), Some(vec![65536.0, 1048576.0]));
        assert_eq!(numeric(&v(&["100Gbps", "400Gbps"])), Some(vec![100.0, 400.0]));
        assert_eq!(numeric(&v(&["500ns", "1us"])), Some(vec![500.0, 1000.0]));
        assert_eq!(numeric(&v(&["64KiB", "1us"])), None);
        assert_eq!(numeric(&v(&["infiniband", "rocev2"])), None);
        assert_eq!(file_name("busbw_GBps.a r.1024"), "busbw_GBps.a_r.1024.svg");
    }
}
