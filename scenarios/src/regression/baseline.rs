//! Baseline files: the metrics of a run that a team trusts, as reviewable TOML.
//!
//! ```toml
//! # fabricsim baseline of scenario "quickstart" (docs/regression.md).
//! # Written by `fabricsim bless`; re-bless instead of editing by hand.
//! format = "fabricsim.baseline/1"
//! scenario = "quickstart"
//! seed = 1
//! scenario_sha256 = "5d0c..."
//!
//! [metrics]
//! "counters.link_hops" = 16619
//! "fct_ns.p99" = 131793.0
//! "hotspots.1" = "edge2.1 -> agg2.1 (port 45)"
//! ```
//!
//! One metric per line, in natural name order, floats in shortest round-trip form: the same
//! run always writes the same bytes, and a behaviour change shows up as a line diff.

use super::inputs::Inputs;
use super::metrics::{Metrics, Value, float_text};
use std::fmt::Write as _;
use std::path::Path;

/// Format tag of baseline files; bumped when the format changes incompatibly.
pub const BASELINE_FORMAT: &str = "fabricsim.baseline/1";
/// Largest baseline file read (16 MiB).
pub const MAX_BASELINE_BYTES: u64 = 16 << 20;

/// A baseline.
#[derive(Clone, Debug, PartialEq)]
pub struct Baseline {
    /// `scenario.name` of the blessed run.
    pub scenario: String,
    /// The seed of the blessed run.
    pub seed: u64,
    /// Fingerprint of the resolved scenario without `[check]` and seed
    /// ([`super::scenario_fingerprint`]); tells whether the scenario changed since.
    pub scenario_sha256: String,
    pub metrics: Metrics,
    /// The resolved scenario's inputs (`[inputs]`), so that `check` can say which input
    /// changed; `None` in a baseline blessed before baselines held them.
    pub inputs: Option<Inputs>,
}

/// Why a baseline could not be read. Every message names the file.
#[derive(Debug, Clone, PartialEq)]
pub enum BaselineError {
    Missing { path: String },
    Unreadable { path: String, message: String },
    Corrupt { path: String, message: String },
    Format { path: String, found: String },
}

impl std::fmt::Display for BaselineError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BaselineError::Missing { path } => write!(f, "{path}: no baseline file"),
            BaselineError::Unreadable { path, message } => write!(f, "{path}: cannot read the baseline: {message}"),
            BaselineError::Corrupt { path, message } => write!(f, "{path}: not a valid baseline: {message}"),
            BaselineError::Format { path, found } => write!(
                f,
                "{path}: baseline format \"{found}\" is not the one this fabricsim reads (\"{BASELINE_FORMAT}\")"
            ),
        }
    }
}

impl Baseline {
    /// The file's text (see the module documentation).
    pub fn to_toml(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(
            s,
            "# fabricsim baseline of scenario {} (docs/regression.md).",
            toml_str(&self.scenario)
        );
        let _ = writeln!(
            s,
            "# Written by `fabricsim bless`; re-bless instead of editing by hand."
        );
        let _ = writeln!(s, "format = {}", toml_str(BASELINE_FORMAT));
        let _ = writeln!(s, "scenario = {}", toml_str(&self.scenario));
        // TOML integers are i64: a larger seed is written as a string.
        match i64::try_from(self.seed) {
            Ok(seed) => {
                let _ = writeln!(s, "seed = {seed}");
            }
            Err(_) => {
                let _ = writeln!(s, "seed = \"{}\"", self.seed);
            }
        }
        let _ = writeln!(s, "scenario_sha256 = {}", toml_str(&self.scenario_sha256));
        let _ = writeln!(s, "\n[metrics]");
        for (name, v) in self.metrics.iter() {
            let text = match v {
                Value::Int(i) => i.to_string(),
                Value::Float(x) => float_text(*x),
                Value::Bool(b) => b.to_string(),
                Value::Text(t) => toml_str(t),
            };
            let _ = writeln!(s, "{} = {text}", toml_str(name));
        }
        if let Some(inputs) = &self.inputs {
            // Last, so that a change of metrics and a change of inputs touch apart lines.
            let _ = writeln!(
                s,
                "\n# The resolved scenario's inputs (`check` shows those that changed)."
            );
            let _ = writeln!(s, "[inputs]");
            for (key, value) in inputs.iter() {
                let _ = writeln!(s, "{} = {value}", toml_str(key));
            }
        }
        s
    }

    /// Parses a baseline's text; `path` is for messages only.
    pub fn parse(path: &str, text: &str) -> Result<Baseline, BaselineError> {
        let corrupt = |message: String| BaselineError::Corrupt {
            path: path.to_owned(),
            message,
        };
        let table: toml::Table = toml::from_str(text).map_err(|e| corrupt(one_line(&e.to_string())))?;
        let format = match table.get("format") {
            Some(toml::Value::String(f)) => f.clone(),
            Some(_) => return Err(corrupt("`format` is not a string".into())),
            None => return Err(corrupt("no `format` key: not a fabricsim baseline".into())),
        };
        if format != BASELINE_FORMAT {
            return Err(BaselineError::Format {
                path: path.to_owned(),
                found: format,
            });
        }
        let string = |key: &str| match table.get(key) {
            Some(toml::Value::String(s)) => Ok(s.clone()),
            _ => Err(corrupt(format!("`{key}` is missing or not a string"))),
        };
        let seed = match table.get("seed") {
            Some(toml::Value::Integer(i)) if *i >= 0 => *i as u64,
            Some(toml::Value::String(s)) if s.parse::<u64>().is_ok() => s.parse::<u64>().unwrap_or_default(),
            _ => return Err(corrupt("`seed` is missing or not an integer >= 0".into())),
        };
        for key in table.keys() {
            if !["format", "scenario", "seed", "scenario_sha256", "metrics", "inputs"].contains(&key.as_str()) {
                return Err(corrupt(format!("unknown key `{key}`")));
            }
        }
        let Some(toml::Value::Table(entries)) = table.get("metrics") else {
            return Err(corrupt("no [metrics] table".into()));
        };
        let mut metrics = Metrics::default();
        for (name, v) in entries {
            let value = match v {
                toml::Value::Integer(i) => Value::Int(*i),
                toml::Value::Float(x) if !x.is_finite() => {
                    // No run writes one (summary.json has no such numbers), and within any
                    // tolerance of an infinity every value would pass.
                    return Err(corrupt(format!(
                        "metric \"{}\" is {}, not a finite number: a check against it could not fail",
                        crate::diag::short_quote(name),
                        crate::wording::float_text(*x)
                    )));
                }
                toml::Value::Float(x) => Value::Float(*x),
                toml::Value::Boolean(b) => Value::Bool(*b),
                toml::Value::String(s) => Value::Text(s.clone()),
                other => {
                    return Err(corrupt(format!(
                        "metric \"{name}\": expected a number, boolean or string, got a {}",
                        other.type_str()
                    )));
                }
            };
            metrics.insert(name.clone(), value);
        }
        let inputs = match table.get("inputs") {
            None => None,
            // Keys are quoted paths (`"fabric.buffer.size"`); a table there would be a
            // hand-edited path, read as the same path.
            Some(toml::Value::Table(t)) => Some(Inputs::of_table(t)),
            Some(_) => return Err(corrupt("`inputs` is not a table".into())),
        };
        Ok(Baseline {
            scenario: string("scenario")?,
            seed,
            scenario_sha256: string("scenario_sha256")?,
            metrics,
            inputs,
        })
    }

    /// Reads the baseline at `path`.
    pub fn read(path: &Path) -> Result<Baseline, BaselineError> {
        let shown = path.display().to_string();
        let unreadable = |message: String| BaselineError::Unreadable {
            path: shown.clone(),
            message,
        };
        use crate::files::FileError;
        let bytes = match crate::files::read_limited(path, MAX_BASELINE_BYTES) {
            Ok(b) => b,
            Err(FileError::NotFound) => return Err(BaselineError::Missing { path: shown }),
            Err(e) => return Err(unreadable(e.to_string())),
        };
        let text = String::from_utf8(bytes).map_err(|_| BaselineError::Corrupt {
            path: shown.clone(),
            message: "not UTF-8 text".into(),
        })?;
        Baseline::parse(&shown, &text)
    }
}

/// A TOML basic string.
pub fn toml_str(s: &str) -> String {
    let mut o = String::with_capacity(s.len() + 2);
    o.push('"');
    for c in s.chars() {
        match c {
            '"' => o.push_str("\\\""),
            '\\' => o.push_str("\\\\"),
            '\n' => o.push_str("\\n"),
            '\t' => o.push_str("\\t"),
            '\r' => o.push_str("\\r"),
            c if c.is_control() => {
                let _ = write!(o, "\\u{:04X}", c as u32);
            }
            c => o.push(c),
        }
    }
    o.push('"');
    o
}

/// A TOML error message on one line.
fn one_line(m: &str) -> String {
    m.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join("; ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Baseline {
        let mut m = Metrics::default();
        m.insert("fct_ns.p99", Value::Float(131793.0));
        m.insert("packets.dropped", Value::Int(394));
        m.insert("run.complete", Value::Bool(true));
        m.insert("hotspots.10", Value::Text("a \"quoted\" \\ name\u{1}".into()));
        m.insert("hotspots.2", Value::Text("edge2.1 -> agg2.1 (port 45)".into()));
        m.insert("throughput.x", Value::Float(0.1 + 0.2));
        Baseline {
            scenario: "quick\"start".into(),
            seed: u64::MAX,
            scenario_sha256: "ab".into(),
            metrics: m,
            inputs: Some(Inputs(
                [
                    ("fabric.buffer.size", "\"512KiB\""),
                    ("workload[10].ranks", "[0, 3]"),
                    ("workload[2].rate", "0.5"),
                ]
                .map(|(k, v)| (k.to_owned(), v.to_owned()))
                .into(),
            )),
        }
    }

    #[test]
    fn round_trip_is_exact() {
        let b = sample();
        let text = b.to_toml();
        assert_eq!(Baseline::parse("b.toml", &text).unwrap(), b, "{text}");
        // hotspots.2 is written before hotspots.10.
        assert!(
            text.find("hotspots.2").unwrap() < text.find("hotspots.10").unwrap(),
            "{text}"
        );
        assert!(text.contains("\"throughput.x\" = 0.30000000000000004\n"), "{text}");
        // The inputs come last, in natural key order.
        assert!(
            text.find("[metrics]").unwrap() < text.find("[inputs]").unwrap(),
            "{text}"
        );
        assert!(
            text.find("workload[2].rate").unwrap() < text.find("workload[10].ranks").unwrap(),
            "{text}"
        );
        // A baseline without inputs (blessed before they were kept) reads as such.
        let old = Baseline { inputs: None, ..b };
        let old_text = old.to_toml();
        assert!(!old_text.contains("inputs"), "{old_text}");
        assert_eq!(Baseline::parse("b.toml", &old_text).unwrap(), old);
    }

    #[test]
    fn errors_name_the_file() {
        let e = Baseline::parse("b.toml", "format = \"fabricsim.baseline/0\"\n").unwrap_err();
        assert!(matches!(e, BaselineError::Format { .. }), "{e}");
        assert!(
            e.to_string()
                .starts_with("b.toml: baseline format \"fabricsim.baseline/0\""),
            "{e}"
        );
        for (text, want) in [
            ("this is not toml", "not a valid baseline"),
            ("x = 1", "no `format` key"),
            ("format = 3", "not a string"),
            (
                "format = \"fabricsim.baseline/1\"\nscenario = \"a\"\nseed = 1\nscenario_sha256 = \"\"",
                "no [metrics]",
            ),
            (
                "format = \"fabricsim.baseline/1\"\nscenario = \"a\"\nseed = 1\nscenario_sha256 = \"\"\n[metrics]\nx = [1]",
                "metric \"x\"",
            ),
            ("format = \"fabricsim.baseline/1\"\nseed = -1\n[metrics]", "`seed`"),
            (
                "format = \"fabricsim.baseline/1\"\nextra = 1\nseed = 1\n[metrics]",
                "unknown key `extra`",
            ),
        ] {
            let e = Baseline::parse("b.toml", text).unwrap_err().to_string();
            assert!(e.starts_with("b.toml: "), "{e}");
            assert!(e.contains(want), "{text}: {e}");
        }
    }

    #[test]
    fn non_finite_metrics_are_refused_naming_the_metric() {
        let head = "format = \"fabricsim.baseline/1\"\nscenario = \"a\"\nseed = 1\nscenario_sha256 = \"\"\n[metrics]\n";
        for v in ["inf", "-inf", "nan", "+inf"] {
            let text = format!("{head}\"fct_ns.p99\" = {v}\n\"packets.dropped\" = 3\n");
            let e = Baseline::parse("b.toml", &text).unwrap_err().to_string();
            assert!(
                e.starts_with("b.toml: not a valid baseline: metric \"fct_ns.p99\" is "),
                "{e}"
            );
            assert!(e.contains("not a finite number"), "{e}");
        }
    }

    #[test]
    fn read_reports_missing_and_directories() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("none.baseline.toml");
        assert!(matches!(Baseline::read(&missing), Err(BaselineError::Missing { .. })));
        let e = Baseline::read(dir.path()).unwrap_err();
        assert!(e.to_string().contains("is a directory"), "{e}");
        let bin = dir.path().join("bin.baseline.toml");
        std::fs::write(&bin, [0xff, 0xfe, 0]).unwrap();
        assert!(Baseline::read(&bin).unwrap_err().to_string().contains("not UTF-8"));
    }
}
