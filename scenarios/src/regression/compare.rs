//! Comparison of a run's metrics with a baseline, under a `[check]` spec.

use super::metrics::{MetricName, Metrics, Value, natural_cmp};
use super::spec::{CheckSpec, Tolerance};
use std::collections::{BTreeMap, BTreeSet};

/// Two floats closer than this, relative to the larger, are equal: the last-bit noise of
/// reading a decimal back, not a change of behaviour.
pub const FLOAT_NOISE: f64 = 1e-12;

/// The verdict on one metric.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Moved, within its tolerance.
    Within,
    /// Moved beyond its tolerance (or a text or boolean changed, or the type changed).
    Fail,
    /// In the run, not in the baseline (not a failure: bless to record it).
    New,
    /// In the baseline, not in the run: a failure.
    Missing,
}

impl Verdict {
    pub fn is_failure(self) -> bool {
        matches!(self, Verdict::Fail | Verdict::Missing)
    }
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Within => "ok",
            Verdict::Fail => "FAIL",
            Verdict::New => "new",
            Verdict::Missing => "MISSING",
        }
    }
}

/// One metric that moved.
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    pub metric: String,
    pub baseline: Option<Value>,
    pub now: Option<Value>,
    pub tolerance: Tolerance,
    pub verdict: Verdict,
}

impl Row {
    /// `+8207 (+6.23%)`, `-3`, `changed`, `gone`, `added`.
    pub fn change(&self) -> String {
        use super::table::num;
        match (&self.baseline, &self.now) {
            (Some(b), Some(n)) => match (b, n, b.as_f64(), n.as_f64()) {
                (Value::Int(x), Value::Int(y), _, _) => {
                    let d = *y as i128 - *x as i128;
                    let rel = (*x != 0).then(|| d as f64 / (*x as f64).abs() * 100.0);
                    with_rel(format!("{d:+}"), rel)
                }
                (_, _, Some(x), Some(y)) => {
                    let d = y - x;
                    let sign = if d >= 0.0 { "+" } else { "" };
                    let rel = (x != 0.0).then(|| d / x.abs() * 100.0);
                    with_rel(format!("{sign}{}", num(d)), rel)
                }
                _ => "changed".into(),
            },
            (Some(_), None) => "gone".into(),
            (None, Some(_)) => "added".into(),
            (None, None) => String::new(),
        }
    }

    /// (now - baseline) / |baseline| for two numbers with a non-zero baseline; `None` for
    /// text, booleans, a change of type, a zero baseline, or a side absent.
    pub fn relative(&self) -> Option<f64> {
        let (b, n) = (self.baseline.as_ref()?, self.now.as_ref()?);
        let d = match (b, n) {
            (Value::Int(x), Value::Int(y)) => (*y as i128 - *x as i128) as f64,
            _ => n.as_f64()? - b.as_f64()?,
        };
        let x = b.as_f64()?;
        (x != 0.0).then(|| d / x.abs())
    }

    /// The size of the change, for ordering rows largest first: |[`Row::relative`]|, and
    /// infinite for a change that has no relative size (text, booleans, type, from zero, a
    /// metric added or gone) or whose size is not a number.
    pub fn magnitude(&self) -> f64 {
        match self.relative() {
            Some(r) if !r.is_nan() => r.abs(),
            _ => f64::INFINITY,
        }
    }
}

/// Orders rows by the size of their change, largest first; equal sizes by metric name
/// (natural order). A stable total order: the same rows always print in the same order.
pub fn by_size(a: &Row, b: &Row) -> std::cmp::Ordering {
    b.magnitude()
        .total_cmp(&a.magnitude())
        .then_with(|| natural_cmp(&a.metric, &b.metric))
}

fn with_rel(abs: String, rel: Option<f64>) -> String {
    match rel {
        Some(r) => {
            let sign = if r >= 0.0 { "+" } else { "" };
            format!("{abs} ({sign}{}%)", super::table::num_sig(r, 3))
        }
        None => abs,
    }
}

/// The outcome of comparing one run with its baseline.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Comparison {
    /// Metrics that moved (or appeared or disappeared), in name order ([`super::fold`]
    /// orders them by the size of the change).
    pub rows: Vec<Row>,
    /// Metrics compared (selected by `[check]` and present on both sides).
    pub compared: usize,
    /// Metrics left out by `[check]`.
    pub skipped: usize,
    /// `[check]` patterns that match no metric.
    pub unmatched_patterns: Vec<String>,
    /// The entries of each list-like metric family compared (`hotspots` -> ranks), on
    /// each side: what [`super::fold`] needs to tell a moved entry from an added one.
    pub lists: BTreeMap<String, ListEntries>,
}

/// The entry indices of one list (`"3"` for `pause_tree.3.paused_ns`) in the baseline and
/// in the run.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ListEntries {
    pub baseline: BTreeSet<String>,
    pub now: BTreeSet<String>,
}

/// What became of every metric of a comparison; the counts add up to `total`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    /// Every metric on either side.
    pub total: usize,
    pub unchanged: usize,
    /// Moved within tolerance (verdict `ok`).
    pub within: usize,
    /// Moved beyond tolerance, or text, boolean or type changed (verdict `FAIL`).
    pub beyond: usize,
    /// In the run only.
    pub new: usize,
    /// In the baseline only (verdict `MISSING`).
    pub gone: usize,
    /// Left out by `[check]`.
    pub skipped: usize,
}

impl Comparison {
    pub fn failures(&self) -> impl Iterator<Item = &Row> {
        self.rows.iter().filter(|r| r.verdict.is_failure())
    }
    pub fn passed(&self) -> bool {
        self.failures().next().is_none()
    }
    /// How many metrics were unchanged, moved, new, gone or left out.
    pub fn counts(&self) -> Counts {
        let n = |v: Verdict| self.rows.iter().filter(|r| r.verdict == v).count();
        let (within, beyond) = (n(Verdict::Within), n(Verdict::Fail));
        let (new, gone) = (n(Verdict::New), n(Verdict::Missing));
        Counts {
            total: self.compared + new + gone + self.skipped,
            unchanged: self.compared - within - beyond,
            within,
            beyond,
            new,
            gone,
            skipped: self.skipped,
        }
    }
}

/// Compares `now` with `baseline` under `spec`.
pub fn compare(baseline: &Metrics, now: &Metrics, spec: &CheckSpec) -> Comparison {
    let names: BTreeSet<&MetricName> = baseline.0.keys().chain(now.0.keys()).collect();
    let all: Vec<&str> = names.iter().map(|n| n.0.as_str()).collect();
    let mut c = Comparison {
        unmatched_patterns: spec.unmatched(&all),
        ..Comparison::default()
    };
    for name in names {
        let metric = name.0.as_str();
        if !spec.selects(metric) {
            c.skipped += 1;
            continue;
        }
        let (tolerance, _) = spec.tolerance_for(metric);
        let (b, n) = (baseline.0.get(name), now.0.get(name));
        if let Some((list, entry)) = super::fold::list_of(metric) {
            let e = c.lists.entry(list.to_owned()).or_default();
            if b.is_some() {
                e.baseline.insert(entry.to_owned());
            }
            if n.is_some() {
                e.now.insert(entry.to_owned());
            }
        }
        let verdict = match (b, n) {
            (Some(b), Some(n)) => {
                c.compared += 1;
                match judge(b, n, &tolerance) {
                    None => continue,
                    Some(v) => v,
                }
            }
            (Some(_), None) => Verdict::Missing,
            (None, Some(_)) => Verdict::New,
            (None, None) => continue,
        };
        c.rows.push(Row {
            metric: metric.to_owned(),
            baseline: b.cloned(),
            now: n.cloned(),
            tolerance,
            verdict,
        });
    }
    c
}

/// `None` when the values are equal; else whether the move is within `tol`.
fn judge(b: &Value, n: &Value, tol: &Tolerance) -> Option<Verdict> {
    if b == n {
        return None;
    }
    let (Some(x), Some(y)) = (b.as_f64(), n.as_f64()) else {
        // Text, booleans or a change of type: compared exactly.
        return Some(Verdict::Fail);
    };
    if !x.is_finite() || !y.is_finite() {
        // An infinity is within any tolerance of anything: compared exactly (and they differ).
        return Some(Verdict::Fail);
    }
    let diff = match (b, n) {
        (Value::Int(i), Value::Int(j)) => (*j as i128 - *i as i128).unsigned_abs() as f64,
        _ => (y - x).abs(),
    };
    if diff <= FLOAT_NOISE * x.abs().max(y.abs()) && !matches!((b, n), (Value::Int(_), Value::Int(_))) {
        return None;
    }
    if x.is_nan() || y.is_nan() {
        return Some(Verdict::Fail);
    }
    Some(if diff <= tol.allowed(x) {
        Verdict::Within
    } else {
        Verdict::Fail
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn metrics(v: &[(&str, Value)]) -> Metrics {
        let mut m = Metrics::default();
        for (k, x) in v {
            m.insert(*k, x.clone());
        }
        m
    }

    #[test]
    fn moved_metrics_are_named_with_their_verdict() {
        let base = metrics(&[
            ("a.count", Value::Int(10)),
            ("a.p99", Value::Float(100.0)),
            ("a.p50", Value::Float(50.0)),
            ("gone", Value::Int(1)),
            ("outcome", Value::Text("drained".into())),
            ("same", Value::Float(0.1 + 0.2)),
        ]);
        let now = metrics(&[
            ("a.count", Value::Int(11)),
            ("a.p99", Value::Float(101.0)),
            ("a.p50", Value::Float(50.0 * (1.0 + 1e-15))),
            ("added", Value::Int(0)),
            ("outcome", Value::Text("finished".into())),
            ("same", Value::Float(0.3)),
        ]);
        let spec: CheckSpec = toml::from_str("tolerance.\"a.p99\" = { relative = 0.02 }").unwrap();
        let c = compare(&base, &now, &spec);
        let got: Vec<(&str, Verdict)> = c.rows.iter().map(|r| (r.metric.as_str(), r.verdict)).collect();
        assert_eq!(
            got,
            [
                ("a.count", Verdict::Fail),
                ("a.p99", Verdict::Within),
                ("added", Verdict::New),
                ("gone", Verdict::Missing),
                ("outcome", Verdict::Fail),
            ]
        );
        assert_eq!(c.compared, 5);
        assert!(!c.passed());
        assert_eq!(c.rows[0].change(), "+1 (+10%)");
        assert_eq!(c.rows[1].change(), "+1 (+1%)");
        assert_eq!(c.rows[4].change(), "changed");
    }

    #[test]
    fn ignored_metrics_are_skipped_and_new_ones_do_not_fail() {
        let base = metrics(&[("hotspots.1", Value::Text("a".into()))]);
        let now = metrics(&[("hotspots.1", Value::Text("b".into())), ("counters.x", Value::Int(3))]);
        let spec: CheckSpec = toml::from_str("ignore = [\"hotspots\"]").unwrap();
        let c = compare(&base, &now, &spec);
        assert!(c.passed(), "{c:?}");
        assert_eq!(c.skipped, 1);
        assert_eq!(c.rows.len(), 1);
        assert_eq!(c.rows[0].verdict, Verdict::New);
    }

    #[test]
    fn integers_are_exact_even_when_huge() {
        let base = metrics(&[("x", Value::Int(i64::MAX - 1))]);
        let now = metrics(&[("x", Value::Int(i64::MAX))]);
        let c = compare(&base, &now, &CheckSpec::default());
        assert_eq!(c.rows.len(), 1);
        assert_eq!(c.rows[0].verdict, Verdict::Fail);
    }

    #[test]
    fn non_finite_values_are_compared_exactly() {
        for inf in [f64::INFINITY, f64::NEG_INFINITY, f64::NAN] {
            let base = metrics(&[("fct_ns.p99", Value::Float(inf))]);
            let now = metrics(&[("fct_ns.p99", Value::Float(131793.0))]);
            let spec: CheckSpec = toml::from_str("tolerance.fct_ns = { relative = 0.5 }").unwrap();
            for (b, n) in [(&base, &now), (&now, &base)] {
                let c = compare(b, n, &spec);
                assert_eq!(c.rows.len(), 1, "{inf}");
                assert_eq!(c.rows[0].verdict, Verdict::Fail, "{inf}");
            }
        }
        let same = metrics(&[("x", Value::Float(f64::INFINITY))]);
        assert!(compare(&same, &same, &CheckSpec::default()).passed());
    }

    #[test]
    fn absolute_tolerance_and_zero_baseline() {
        let base = metrics(&[("drops", Value::Int(0))]);
        let now = metrics(&[("drops", Value::Int(5))]);
        let spec: CheckSpec = toml::from_str("tolerance.drops = { absolute = 5 }").unwrap();
        let c = compare(&base, &now, &spec);
        assert_eq!(c.rows[0].verdict, Verdict::Within);
        assert_eq!(c.rows[0].change(), "+5");
        let spec: CheckSpec = toml::from_str("tolerance.drops = { relative = 10.0 }").unwrap();
        assert_eq!(compare(&base, &now, &spec).rows[0].verdict, Verdict::Fail);
    }
}
