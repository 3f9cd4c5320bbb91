//! The `[check]` section of a scenario: which metrics `fabricsim check` compares and with
//! what tolerance. Everything is optional; the default compares every metric exactly.
//!
//! ```toml
//! [check]
//! metrics = ["fct_ns", "groups.*.fct_ns", "packets.dropped"]   # default: all
//! ignore = ["hotspots"]
//! tolerance."fct_ns.p99" = { relative = 0.02 }                 # 2 %
//! tolerance."packets.dropped" = { absolute = 10 }
//! tolerance."*_gbps" = { relative = 0.01, absolute = 0.5 }     # the larger of the two
//! tolerance."run.outcome" = { exact = true }
//! ```
//!
//! Patterns: `*` matches any run of characters (dots included), `?` one character; a pattern
//! also matches every metric below it (`fct_ns` matches `fct_ns.p99`). When several
//! tolerance patterns match a metric, the one with the most literal characters wins (so an
//! exact metric name beats any glob); ties go to the pattern that sorts first.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt;

/// Longest pattern accepted, in bytes.
pub const MAX_PATTERN_BYTES: usize = 256;

/// `[check]`.
#[derive(Clone, Debug, Default, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct CheckSpec {
    /// Metrics compared (patterns); empty: every metric.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub metrics: Vec<Pattern>,
    /// Metrics never compared (patterns), applied after `metrics`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ignore: Vec<Pattern>,
    /// Tolerance per metric pattern; metrics no pattern matches are compared exactly.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub tolerance: BTreeMap<Pattern, Tolerance>,
}

impl CheckSpec {
    /// True for an absent or empty `[check]` (left out of `scenario.resolved.toml`).
    pub fn is_default(&self) -> bool {
        *self == CheckSpec::default()
    }

    /// Whether `metric` is compared: selected by `metrics` (or `metrics` is empty) and not
    /// matched by `ignore`.
    pub fn selects(&self, metric: &str) -> bool {
        (self.metrics.is_empty() || self.metrics.iter().any(|p| p.matches(metric)))
            && !self.ignore.iter().any(|p| p.matches(metric))
    }

    /// The tolerance for `metric` and the pattern it came from (`None`: the default, exact).
    pub fn tolerance_for(&self, metric: &str) -> (Tolerance, Option<&Pattern>) {
        let mut best: Option<(&Pattern, &Tolerance)> = None;
        for (p, t) in &self.tolerance {
            if p.matches(metric) && best.is_none_or(|(b, _)| p.specificity() > b.specificity()) {
                best = Some((p, t));
            }
        }
        match best {
            Some((p, t)) => (*t, Some(p)),
            None => (Tolerance::EXACT, None),
        }
    }

    /// Patterns of `metrics`, `ignore` and `tolerance` that match none of `names`, each with
    /// the key it appears under (likely typos).
    pub fn unmatched(&self, names: &[&str]) -> Vec<String> {
        let mut out = Vec::new();
        let lists = [
            ("metrics", self.metrics.iter().collect::<Vec<_>>()),
            ("ignore", self.ignore.iter().collect()),
        ];
        for (key, list) in lists {
            for p in list {
                if !names.iter().any(|n| p.matches(n)) {
                    out.push(format!("check.{key}: \"{p}\""));
                }
            }
        }
        for p in self.tolerance.keys() {
            if !names.iter().any(|n| p.matches(n)) {
                out.push(format!("check.tolerance: \"{p}\""));
            }
        }
        out
    }
}

/// A metric name pattern (see the module documentation).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Deserialize, Serialize)]
#[serde(try_from = "String", into = "String")]
pub struct Pattern(String);

impl TryFrom<String> for Pattern {
    type Error = String;
    fn try_from(s: String) -> Result<Self, String> {
        if s.is_empty() {
            return Err("a metric pattern cannot be empty".into());
        }
        if s.len() > MAX_PATTERN_BYTES {
            return Err(format!("a metric pattern is at most {MAX_PATTERN_BYTES} bytes long"));
        }
        Ok(Pattern(s))
    }
}

impl From<Pattern> for String {
    fn from(p: Pattern) -> String {
        p.0
    }
}

impl fmt::Display for Pattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl Pattern {
    /// A pattern from text; panics on an invalid one (for tests and constants).
    pub fn new(s: &str) -> Self {
        Pattern::try_from(s.to_owned()).expect("a valid pattern")
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Whether the pattern matches `metric` or one of its dotted prefixes.
    pub fn matches(&self, metric: &str) -> bool {
        let pat: Vec<char> = self.0.chars().collect();
        let name: Vec<char> = metric.chars().collect();
        glob(&pat, &name) || (0..name.len()).any(|i| name[i] == '.' && glob(&pat, &name[..i]))
    }

    /// Literal (non-wildcard) characters: the more, the more specific.
    pub fn specificity(&self) -> usize {
        self.0.chars().filter(|&c| c != '*' && c != '?').count()
    }
}

/// Glob match of `text` against `pat` (`*` any run, `?` one character), in
/// O(len(pat) x len(text)) at worst.
fn glob(pat: &[char], text: &[char]) -> bool {
    let (mut p, mut t) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while t < text.len() {
        if p < pat.len() && pat[p] != '*' && (pat[p] == '?' || pat[p] == text[t]) {
            p += 1;
            t += 1;
        } else if p < pat.len() && pat[p] == '*' {
            star = Some((p, t));
            p += 1;
        } else if let Some((sp, st)) = star {
            p = sp + 1;
            t = st + 1;
            star = Some((sp, st + 1));
        } else {
            return false;
        }
    }
    pat[p..].iter().all(|&c| c == '*')
}

/// How far a number may move from its baseline and still pass: by at most the larger of
/// `absolute` and `relative x |baseline|`. Both `None`: exact. Text and booleans are always
/// compared exactly.
#[derive(Clone, Copy, Debug, PartialEq, Deserialize, Serialize)]
#[serde(try_from = "RawTolerance", into = "RawTolerance")]
pub struct Tolerance {
    pub absolute: Option<f64>,
    pub relative: Option<f64>,
}

impl Tolerance {
    /// No movement allowed (the default for every metric).
    pub const EXACT: Tolerance = Tolerance {
        absolute: None,
        relative: None,
    };

    pub fn is_exact(&self) -> bool {
        self.absolute.is_none() && self.relative.is_none()
    }

    /// Largest allowed |now - baseline|.
    pub fn allowed(&self, baseline: f64) -> f64 {
        let a = self.absolute.unwrap_or(0.0);
        let r = self.relative.unwrap_or(0.0) * baseline.abs();
        a.max(r)
    }
}

impl fmt::Display for Tolerance {
    /// `exact`, `±10`, `±2%`, `±10 or 2%`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.absolute, self.relative) {
            (None, None) => f.write_str("exact"),
            (Some(a), None) => write!(f, "±{}", super::table::num(a)),
            (None, Some(r)) => write!(f, "±{}%", super::table::num(r * 100.0)),
            (Some(a), Some(r)) => write!(f, "±{} or {}%", super::table::num(a), super::table::num(r * 100.0)),
        }
    }
}

/// A tolerance as written: `{ exact = true }`, `{ absolute = X }`, `{ relative = X }` or both.
#[derive(Clone, Copy, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
struct RawTolerance {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    exact: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    absolute: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    relative: Option<f64>,
}

impl TryFrom<RawTolerance> for Tolerance {
    type Error = String;
    fn try_from(r: RawTolerance) -> Result<Self, String> {
        for (name, v) in [("absolute", r.absolute), ("relative", r.relative)] {
            if let Some(x) = v
                && !(x.is_finite() && x >= 0.0)
            {
                return Err(format!("`{name}` must be a finite number >= 0, got {x}"));
            }
        }
        let numeric = r.absolute.is_some() || r.relative.is_some();
        match r.exact {
            Some(true) if numeric => Err("`exact = true` cannot be combined with `absolute` or `relative`".into()),
            Some(false) => Err("`exact = false` says nothing: give `absolute` and/or `relative` instead".into()),
            None if !numeric => Err("expected `exact = true`, `absolute = X` and/or `relative = X`".into()),
            _ => Ok(Tolerance {
                absolute: r.absolute,
                relative: r.relative,
            }),
        }
    }
}

impl From<Tolerance> for RawTolerance {
    fn from(t: Tolerance) -> Self {
        RawTolerance {
            exact: t.is_exact().then_some(true),
            absolute: t.absolute,
            relative: t.relative,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn glob_and_prefix_matching() {
        let m = |p: &str, n: &str| Pattern::new(p).matches(n);
        assert!(m("fct_ns.p99", "fct_ns.p99"));
        assert!(!m("fct_ns.p99", "fct_ns.p999"));
        assert!(m("fct_ns", "fct_ns.p99"), "a pattern matches what is below it");
        assert!(!m("fct", "fct_ns.p99"), "only at a dot");
        assert!(m("*", "anything.at.all"));
        assert!(m("*.p99", "groups.a.fct_ns.p99"));
        assert!(m("groups.*.fct_ns", "groups.web.fct_ns.p50"));
        assert!(m("fct_ns.p9?", "fct_ns.p90"));
        assert!(!m("fct_ns.p9?", "fct_ns.p5"));
        assert!(m("*_gbps", "throughput.delivered_gbps"));
        assert!(m("a*b*c", "aXXbYYc"));
        assert!(!m("a*b*c", "aXXbYY"));
        assert!(m("**", ""));
    }

    #[test]
    fn the_most_specific_tolerance_wins() {
        let spec: CheckSpec = toml::from_str(
            r#"
            tolerance."*" = { relative = 0.5 }
            tolerance."fct_ns" = { relative = 0.1 }
            tolerance."fct_ns.p99" = { absolute = 3 }
            "#,
        )
        .unwrap();
        let tol = |m: &str| spec.tolerance_for(m).0;
        assert_eq!(tol("fct_ns.p99").absolute, Some(3.0));
        assert_eq!(tol("fct_ns.p50").relative, Some(0.1));
        assert_eq!(tol("packets.dropped").relative, Some(0.5));
        assert!(CheckSpec::default().tolerance_for("x").0.is_exact());
    }

    #[test]
    fn selection_and_ignore() {
        let spec: CheckSpec = toml::from_str(
            r#"metrics = ["fct_ns", "packets"]
ignore = ["packets.in_network"]"#,
        )
        .unwrap();
        assert!(spec.selects("fct_ns.p50"));
        assert!(spec.selects("packets.dropped"));
        assert!(!spec.selects("packets.in_network"));
        assert!(!spec.selects("hotspots.1"));
        assert!(CheckSpec::default().selects("hotspots.1"));
        assert_eq!(
            spec.unmatched(&["fct_ns.p50"]),
            ["check.metrics: \"packets\"", "check.ignore: \"packets.in_network\""]
        );
    }

    #[test]
    fn bad_tolerances_are_refused() {
        for (text, want) in [
            ("tolerance.x = { relative = -1 }", "finite number >= 0"),
            ("tolerance.x = { absolute = nan }", "finite number >= 0"),
            ("tolerance.x = { exact = true, relative = 0.1 }", "cannot be combined"),
            ("tolerance.x = { exact = false }", "says nothing"),
            ("tolerance.x = {}", "expected `exact = true`"),
            ("tolerance.x = { percent = 3 }", "unknown field"),
            ("tolerance.\"\" = { exact = true }", "cannot be empty"),
            ("mertics = []", "unknown field"),
        ] {
            let e = toml::from_str::<CheckSpec>(text).unwrap_err().to_string();
            assert!(e.contains(want), "{text}: {e}");
        }
    }

    #[test]
    fn tolerance_display_and_allowance() {
        let t = |a, r| Tolerance {
            absolute: a,
            relative: r,
        };
        assert_eq!(Tolerance::EXACT.to_string(), "exact");
        assert_eq!(t(Some(10.0), None).to_string(), "±10");
        assert_eq!(t(None, Some(0.05)).to_string(), "±5%");
        assert_eq!(t(Some(2.0), Some(0.01)).to_string(), "±2 or 1%");
        assert_eq!(t(Some(2.0), Some(0.01)).allowed(1000.0), 10.0);
        assert_eq!(t(Some(2.0), Some(0.01)).allowed(-10.0), 2.0);
    }

    #[test]
    fn round_trips_through_toml() {
        let text = r#"ignore = ["hotspots"]

[tolerance]
"fct_ns.p99" = { relative = 0.02 }
"run.outcome" = { exact = true }
"#;
        let spec: CheckSpec = toml::from_str(text).unwrap();
        let again: CheckSpec = toml::from_str(&toml::to_string(&spec).unwrap()).unwrap();
        assert_eq!(spec, again);
    }
}
