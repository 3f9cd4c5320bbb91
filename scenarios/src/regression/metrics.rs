//! The metrics of a run: `summary.json` flattened into named values (`fct_ns.p99`,
//! `groups.web.completed`, `counters.link_hops`, `hotspots.1`).
//!
//! Extraction is generic: every number, boolean and string of the summary becomes a metric
//! named by its path, so a section or counter added to the summary is checked without a change
//! here. The exceptions:
//! - `schema` and `scenario` (name, seed, description, hash) are not metrics;
//! - `run.events` is left out: it counts the engine's work, not the fabric's behaviour (an
//!   optimisation that saves events changes it);
//! - `groups` are keyed by group name (`groups.<name>.<field>`), not by position;
//! - `hotspots` become the ranking: `hotspots.<rank>` = `"<node> -> <peer> (port <id>)"`, rank
//!   from 1 (the figures of each port are in `ports.csv` and the counters);
//! - `null` (e.g. a percentile of an empty histogram) is no metric.
//!
//! Other arrays are keyed by position from 1.

use std::cmp::Ordering;
use std::collections::BTreeMap;
use std::fmt;

/// Longest metric path followed into the summary (guards against absurd nesting).
const MAX_DEPTH: usize = 16;

/// One metric's value.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    Int(i64),
    Float(f64),
    Bool(bool),
    Text(String),
}

impl Value {
    /// The value as a number, if it is one.
    pub fn as_f64(&self) -> Option<f64> {
        match self {
            Value::Int(i) => Some(*i as f64),
            Value::Float(f) => Some(*f),
            _ => None,
        }
    }
}

impl fmt::Display for Value {
    /// As written in a baseline (floats in Rust's shortest round-trip form).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Int(i) => write!(f, "{i}"),
            Value::Float(x) => f.write_str(&float_text(*x)),
            Value::Bool(b) => write!(f, "{b}"),
            Value::Text(s) => f.write_str(s),
        }
    }
}

/// A float as TOML text: shortest round-trip digits, always with a `.` or exponent so that it
/// reads back as a float; `nan`, `inf`, `-inf` as TOML spells them.
pub fn float_text(x: f64) -> String {
    if x.is_nan() {
        "nan".into()
    } else if x.is_infinite() {
        if x > 0.0 { "inf".into() } else { "-inf".into() }
    } else {
        format!("{x:?}")
    }
}

/// A metric name, ordered naturally: dotted segments compared in turn, all-digit segments as
/// numbers (`hotspots.2` before `hotspots.10`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MetricName(pub String);

impl Ord for MetricName {
    fn cmp(&self, other: &Self) -> Ordering {
        natural_cmp(&self.0, &other.0)
    }
}

/// The natural order of metric names (see [`MetricName`]).
pub fn natural_cmp(a: &str, b: &str) -> Ordering {
    let mut a = a.split('.');
    let mut b = b.split('.');
    loop {
        match (a.next(), b.next()) {
            (None, None) => return Ordering::Equal,
            (None, Some(_)) => return Ordering::Less,
            (Some(_), None) => return Ordering::Greater,
            (Some(x), Some(y)) => {
                let digits = |s: &str| !s.is_empty() && s.bytes().all(|c| c.is_ascii_digit());
                let o = if digits(x) && digits(y) {
                    let (x, y) = (x.trim_start_matches('0'), y.trim_start_matches('0'));
                    x.len().cmp(&y.len()).then_with(|| x.cmp(y))
                } else {
                    Ordering::Equal
                }
                .then_with(|| x.cmp(y));
                if o != Ordering::Equal {
                    return o;
                }
            }
        }
    }
}

impl PartialOrd for MetricName {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// Named metric values, in natural name order.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Metrics(pub BTreeMap<MetricName, Value>);

impl Metrics {
    pub fn get(&self, name: &str) -> Option<&Value> {
        self.0.get(&MetricName(name.to_owned()))
    }
    pub fn insert(&mut self, name: impl Into<String>, v: Value) {
        self.0.insert(MetricName(name.into()), v);
    }
    pub fn len(&self) -> usize {
        self.0.len()
    }
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
    pub fn iter(&self) -> impl Iterator<Item = (&str, &Value)> {
        self.0.iter().map(|(k, v)| (k.0.as_str(), v))
    }
}

impl<K: Into<String>> FromIterator<(K, Value)> for Metrics {
    fn from_iter<I: IntoIterator<Item = (K, Value)>>(it: I) -> Self {
        let mut m = Metrics::default();
        for (k, v) in it {
            m.insert(k, v);
        }
        m
    }
}

/// What a run's `summary.json` says about the run itself (not metrics).
#[derive(Clone, Debug, PartialEq)]
pub struct RunIdentity {
    pub name: String,
    pub seed: u64,
    pub outcome: String,
}

/// The metrics of a summary (the JSON value of `summary.json`), and the run's identity.
/// Errors name what is missing or malformed.
pub fn from_summary(summary: &serde_json::Value) -> Result<(Metrics, RunIdentity), String> {
    let top = summary.as_object().ok_or("summary.json is not a JSON object")?;
    let schema = top.get("schema").and_then(|s| s.as_str()).unwrap_or("");
    if !schema.starts_with("fabricsim.summary/") {
        return Err(format!(
            "not a fabricsim summary (schema \"{schema}\", expected \"{}\")",
            crate::report::SUMMARY_SCHEMA
        ));
    }
    let ident = RunIdentity {
        name: summary
            .pointer("/scenario/name")
            .and_then(|v| v.as_str())
            .ok_or("summary.json has no scenario.name")?
            .to_owned(),
        seed: summary
            .pointer("/scenario/seed")
            .and_then(|v| v.as_u64())
            .ok_or("summary.json has no scenario.seed")?,
        outcome: summary
            .pointer("/run/outcome")
            .and_then(|v| v.as_str())
            .ok_or("summary.json has no run.outcome")?
            .to_owned(),
    };
    let mut m = Metrics::default();
    for (key, v) in top {
        match key.as_str() {
            "schema" | "scenario" => {}
            "hotspots" => {
                let rows = v.as_array().ok_or("summary.json hotspots is not an array")?;
                for (i, h) in rows.iter().enumerate() {
                    let field = |f: &str| {
                        h.get(f)
                            .map(|x| x.as_str().map_or_else(|| x.to_string(), str::to_owned))
                    };
                    let (Some(node), Some(peer)) = (field("node"), field("peer")) else {
                        return Err(format!("summary.json hotspots[{i}] has no node or peer"));
                    };
                    let port = field("port").unwrap_or_else(|| "?".into());
                    m.insert(
                        format!("hotspots.{}", i + 1),
                        Value::Text(format!("{node} -> {peer} (port {port})")),
                    );
                }
            }
            "groups" => {
                let groups = v.as_array().ok_or("summary.json groups is not an array")?;
                let name_of = |g: &serde_json::Value| g.get("name").and_then(|n| n.as_str()).map(str::to_owned);
                let mut seen: BTreeMap<String, usize> = BTreeMap::new();
                for g in groups {
                    *seen.entry(name_of(g).unwrap_or_default()).or_default() += 1;
                }
                for (i, g) in groups.iter().enumerate() {
                    // Unnamed or duplicated names are told apart by position.
                    let name = match name_of(g) {
                        Some(n) if seen[&n] == 1 => n,
                        Some(n) => format!("{n}#{i}"),
                        None => format!("#{i}"),
                    };
                    let obj = g.as_object().ok_or("summary.json groups holds a non-object")?;
                    for (k, x) in obj {
                        if k != "name" {
                            flatten(&format!("groups.{name}.{k}"), x, &mut m, 2);
                        }
                    }
                }
            }
            "run" => {
                let obj = v.as_object().ok_or("summary.json run is not an object")?;
                for (k, x) in obj {
                    if k != "events" {
                        flatten(&format!("run.{k}"), x, &mut m, 1);
                    }
                }
            }
            _ => flatten(key, v, &mut m, 0),
        }
    }
    Ok((m, ident))
}

fn flatten(path: &str, v: &serde_json::Value, m: &mut Metrics, depth: usize) {
    use serde_json::Value as J;
    if depth > MAX_DEPTH {
        return;
    }
    match v {
        J::Null => {}
        J::Bool(b) => m.insert(path, Value::Bool(*b)),
        J::Number(n) => {
            let value = match (n.as_i64(), n.as_f64()) {
                (Some(i), _) => Value::Int(i),
                (None, Some(f)) => Value::Float(f),
                (None, None) => Value::Text(n.to_string()),
            };
            m.insert(path, value);
        }
        J::String(s) => m.insert(path, Value::Text(s.clone())),
        J::Array(a) => {
            for (i, x) in a.iter().enumerate() {
                flatten(&format!("{path}.{}", i + 1), x, m, depth + 1);
            }
        }
        J::Object(o) => {
            for (k, x) in o {
                flatten(&format!("{path}.{k}"), x, m, depth + 1);
            }
        }
    }
}

/// Parses JSON text like `serde_json::from_str`, but reads every number from its decimal text
/// with Rust's correctly rounded parser, so that a float written by `summary.json` reads back
/// as exactly the same `f64` (serde_json's default parser may be one unit in the last place
/// off, and a re-blessed baseline would then show a spurious diff).
pub fn parse_json_exact(text: &str) -> Result<serde_json::Value, String> {
    // Syntax first, with serde_json's messages.
    serde_json::from_str::<serde::de::IgnoredAny>(text).map_err(|e| e.to_string())?;
    let mut p = JsonParser {
        s: text.as_bytes(),
        i: 0,
        text,
    };
    let v = p.value(0)?;
    Ok(v)
}

/// Recursive descent over JSON already known to be valid.
struct JsonParser<'a> {
    s: &'a [u8],
    i: usize,
    text: &'a str,
}

impl JsonParser<'_> {
    fn ws(&mut self) {
        while self.i < self.s.len() && matches!(self.s[self.i], b' ' | b'\t' | b'\n' | b'\r') {
            self.i += 1;
        }
    }

    fn value(&mut self, depth: usize) -> Result<serde_json::Value, String> {
        use serde_json::Value as J;
        if depth > 128 {
            return Err("JSON nested too deeply".into());
        }
        self.ws();
        let Some(&c) = self.s.get(self.i) else {
            return Err("unexpected end of JSON".into());
        };
        match c {
            b'{' => {
                self.i += 1;
                let mut m = serde_json::Map::new();
                loop {
                    self.ws();
                    match self.s.get(self.i) {
                        Some(b'}') => {
                            self.i += 1;
                            return Ok(J::Object(m));
                        }
                        Some(b',') => self.i += 1,
                        _ => {
                            let key = match self.value(depth + 1)? {
                                J::String(k) => k,
                                _ => return Err("JSON object key is not a string".into()),
                            };
                            self.ws();
                            self.i += 1; // ':'
                            let v = self.value(depth + 1)?;
                            m.insert(key, v);
                        }
                    }
                }
            }
            b'[' => {
                self.i += 1;
                let mut a = Vec::new();
                loop {
                    self.ws();
                    match self.s.get(self.i) {
                        Some(b']') => {
                            self.i += 1;
                            return Ok(J::Array(a));
                        }
                        Some(b',') => self.i += 1,
                        _ => a.push(self.value(depth + 1)?),
                    }
                }
            }
            b'"' => {
                let start = self.i;
                self.i += 1;
                while self.i < self.s.len() && self.s[self.i] != b'"' {
                    self.i += if self.s[self.i] == b'\\' { 2 } else { 1 };
                }
                self.i += 1;
                serde_json::from_str::<String>(&self.text[start..self.i.min(self.s.len())])
                    .map(J::String)
                    .map_err(|e| e.to_string())
            }
            b't' | b'f' | b'n' => {
                let (word, v) = match c {
                    b't' => ("true", J::Bool(true)),
                    b'f' => ("false", J::Bool(false)),
                    _ => ("null", J::Null),
                };
                self.i += word.len();
                Ok(v)
            }
            _ => {
                let start = self.i;
                while self.i < self.s.len() && matches!(self.s[self.i], b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9')
                {
                    self.i += 1;
                }
                let t = &self.text[start..self.i];
                let bad = || format!("bad JSON number {t}");
                if !t.contains(['.', 'e', 'E']) {
                    if let Ok(i) = t.parse::<i64>() {
                        return Ok(J::from(i));
                    }
                    if let Ok(u) = t.parse::<u64>() {
                        return Ok(J::from(u));
                    }
                }
                let f: f64 = t.parse().map_err(|_| bad())?;
                serde_json::Number::from_f64(f).map(J::Number).ok_or_else(bad)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn natural_order() {
        let mut names: Vec<MetricName> = [
            "hotspots.10",
            "hotspots.2",
            "fct_ns.p99",
            "fct_ns.p50",
            "hotspots.1",
            "a",
        ]
        .iter()
        .map(|s| MetricName(s.to_string()))
        .collect();
        names.sort();
        let got: Vec<&str> = names.iter().map(|n| n.0.as_str()).collect();
        assert_eq!(
            got,
            [
                "a",
                "fct_ns.p50",
                "fct_ns.p99",
                "hotspots.1",
                "hotspots.2",
                "hotspots.10"
            ]
        );
    }

    #[test]
    fn floats_read_back_as_floats() {
        for x in [0.0, 1.0, 173527.0, 0.1, 1e20, 1.5e-7, 76.48212345678901] {
            let t = float_text(x);
            assert!(t.contains('.') || t.contains('e'), "{t}");
            let back: f64 = t.parse().unwrap();
            assert_eq!(back.to_bits(), x.to_bits());
        }
        assert_eq!(float_text(f64::NAN), "nan");
        assert_eq!(float_text(f64::NEG_INFINITY), "-inf");
    }

    #[test]
    fn summary_is_flattened() {
        let s = serde_json::json!({
            "schema": "fabricsim.summary/1",
            "scenario": {"name": "x", "seed": 4, "description": "", "resolved_sha256": "ab"},
            "run": {"outcome": "drained", "complete": true, "sim_time_ns": 12.5, "events": 99, "link_hops": 7},
            "fct_ns": {"count": 0, "p50": null},
            "hotspots": [{"port": 3, "node": "leaf0", "peer": "spine1", "drops": 2}],
            "groups": [{"name": "a", "class": 0, "fct_ns": {"p99": 1.5}}, {"name": "b", "completed": 1}],
            "counters": {"pause_frames": 5},
            "future": [1, 2]
        });
        let (m, id) = from_summary(&s).unwrap();
        assert_eq!(
            id,
            RunIdentity {
                name: "x".into(),
                seed: 4,
                outcome: "drained".into()
            }
        );
        let names: Vec<&str> = m.iter().map(|(k, _)| k).collect();
        assert_eq!(
            names,
            [
                "counters.pause_frames",
                "fct_ns.count",
                "future.1",
                "future.2",
                "groups.a.class",
                "groups.a.fct_ns.p99",
                "groups.b.completed",
                "hotspots.1",
                "run.complete",
                "run.link_hops",
                "run.outcome",
                "run.sim_time_ns",
            ]
        );
        assert_eq!(
            m.get("hotspots.1"),
            Some(&Value::Text("leaf0 -> spine1 (port 3)".into()))
        );
        assert_eq!(m.get("run.sim_time_ns"), Some(&Value::Float(12.5)));
        assert_eq!(m.get("counters.pause_frames"), Some(&Value::Int(5)));
    }

    #[test]
    fn duplicate_group_names_are_told_apart() {
        let s = serde_json::json!({
            "schema": "fabricsim.summary/1",
            "scenario": {"name": "x", "seed": 1},
            "run": {"outcome": "drained"},
            "groups": [{"name": "a", "flows": 1}, {"name": "a", "flows": 2}]
        });
        let (m, _) = from_summary(&s).unwrap();
        assert_eq!(m.get("groups.a#0.flows"), Some(&Value::Int(1)));
        assert_eq!(m.get("groups.a#1.flows"), Some(&Value::Int(2)));
    }

    #[test]
    fn json_floats_are_read_exactly() {
        // Values whose 17-digit decimal serde_json's default parser may round differently.
        let mut xs = vec![
            0.1 + 0.2,
            65.73169571121457,
            0.6573169571121458,
            1e-300,
            123456789.12345679,
        ];
        let mut x = 0.123456789_f64;
        for _ in 0..2000 {
            x = (x * 1103.515245 + 0.12345).fract() * 1e6;
            xs.push(x);
            xs.push(x / 7.0e9);
        }
        let v = serde_json::json!({"a": xs, "b": {"s": "q\"\\u{e9}\n", "t": true, "n": null, "i": -3, "u": u64::MAX}});
        let text = serde_json::to_string_pretty(&v).unwrap();
        let back = parse_json_exact(&text).unwrap();
        assert_eq!(back, v);
        for (a, b) in back["a"].as_array().unwrap().iter().zip(&xs) {
            assert_eq!(a.as_f64().unwrap().to_bits(), b.to_bits());
        }
        assert!(parse_json_exact("{ not json").is_err());
        assert!(parse_json_exact("[1, 2").is_err());
    }

    #[test]
    fn not_a_summary() {
        assert!(from_summary(&serde_json::json!([])).is_err());
        let e = from_summary(&serde_json::json!({"schema": "other/1"})).unwrap_err();
        assert!(e.contains("not a fabricsim summary"), "{e}");
        let e = from_summary(&serde_json::json!({"schema": "fabricsim.summary/1"})).unwrap_err();
        assert!(e.contains("scenario.name"), "{e}");
    }
}
