//! A run's inputs: every value of its resolved scenario (every default filled in), by key,
//! so that a reviewer sees *which* input changed (`fabric.buffer.size = "512KiB" -> "1MiB"`),
//! not only that the scenario's hash did.
//!
//! Keys are the paths of the resolved scenario's TOML, the way scenario errors name fields:
//! dotted tables, arrays of tables by position from 0 (`workload[0].kind`,
//! `workload[1].flows[2].dst`). An array of plain values is one input (`[0, 3]`), and so is an
//! array of more than [`MAX_SPLIT`] tables (a generated list of 200 flows is one input, not
//! 800: a baseline stays readable, and a change of it still shows). The `[check]`
//! section is no input (it says how to compare, not what to run). Values are TOML text, so a
//! baseline stores them as written (`[inputs]`, `docs/regression.md`).

use super::baseline::toml_str;
use super::metrics::float_text;
use std::cmp::Ordering;
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// Longest key path followed into a scenario (guards against absurd nesting).
const MAX_DEPTH: usize = 32;
/// Most tables of an array that are inputs of their own (`workload[0]` ... `workload[31]`).
pub const MAX_SPLIT: usize = 32;

/// Input values by key, as TOML text.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Inputs(pub BTreeMap<String, String>);

impl Inputs {
    /// The inputs of a resolved scenario, as `scenario.resolved.toml` holds it; `None` when it
    /// cannot be written as TOML (a seed beyond 2^63, which TOML integers cannot hold).
    pub fn of_scenario(sc: &crate::schema::Scenario) -> Option<Inputs> {
        toml::Table::try_from(sc).ok().map(|t| Inputs::of_table(&t))
    }

    /// The inputs of a resolved scenario's TOML table (its `[check]` left out).
    pub fn of_table(t: &toml::Table) -> Inputs {
        let mut out = Inputs::default();
        for (k, v) in t {
            if k != "check" {
                flatten(k, v, &mut out.0, 0);
            }
        }
        out
    }

    /// Keys and values in natural key order (`workload[2]` before `workload[10]`).
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        let mut v: Vec<(&str, &str)> = self.0.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        v.sort_by(|a, b| key_cmp(a.0, b.0));
        v.into_iter()
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

fn flatten(key: &str, v: &toml::Value, out: &mut BTreeMap<String, String>, depth: usize) {
    if depth > MAX_DEPTH {
        return;
    }
    match v {
        toml::Value::Table(t) => {
            for (k, x) in t {
                flatten(&format!("{key}.{k}"), x, out, depth + 1);
            }
        }
        toml::Value::Array(a) if a.len() <= MAX_SPLIT && a.iter().any(|x| matches!(x, toml::Value::Table(_))) => {
            for (i, x) in a.iter().enumerate() {
                flatten(&format!("{key}[{i}]"), x, out, depth + 1);
            }
        }
        v => {
            out.insert(key.to_owned(), value_text(v));
        }
    }
}

/// A TOML value as TOML text, the same for the same value whichever way it was read:
/// integers as integers, floats in shortest round-trip form, strings as basic strings.
pub fn value_text(v: &toml::Value) -> String {
    match v {
        toml::Value::String(s) => toml_str(s),
        toml::Value::Integer(i) => i.to_string(),
        toml::Value::Float(x) => float_text(*x),
        toml::Value::Boolean(b) => b.to_string(),
        toml::Value::Datetime(d) => d.to_string(),
        toml::Value::Array(a) => {
            let items: Vec<String> = a.iter().map(value_text).collect();
            format!("[{}]", items.join(", "))
        }
        toml::Value::Table(t) => {
            let items: Vec<String> = t
                .iter()
                .map(|(k, x)| format!("{} = {}", toml_str(k), value_text(x)))
                .collect();
            format!("{{ {} }}", items.join(", "))
        }
    }
}

/// Natural order of input keys: runs of digits compared as numbers.
pub fn key_cmp(a: &str, b: &str) -> Ordering {
    let (mut x, mut y) = (a.as_bytes(), b.as_bytes());
    loop {
        match (x.first(), y.first()) {
            (None, None) => return a.cmp(b),
            (None, Some(_)) => return Ordering::Less,
            (Some(_), None) => return Ordering::Greater,
            (Some(c), Some(d)) if c.is_ascii_digit() && d.is_ascii_digit() => {
                let n = x.iter().take_while(|c| c.is_ascii_digit()).count();
                let m = y.iter().take_while(|c| c.is_ascii_digit()).count();
                let (p, q) = (&x[..n], &y[..m]);
                let trim = |s: &'_ [u8]| -> usize { s.iter().take_while(|&&c| c == b'0').count() };
                let (p, q) = (&p[trim(p)..], &q[trim(q)..]);
                let o = p.len().cmp(&q.len()).then_with(|| p.cmp(q));
                if o != Ordering::Equal {
                    return o;
                }
                (x, y) = (&x[n..], &y[m..]);
            }
            (Some(c), Some(d)) => {
                if c != d {
                    return c.cmp(d);
                }
                (x, y) = (&x[1..], &y[1..]);
            }
        }
    }
}

/// One input that differs between two runs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InputChange {
    pub key: String,
    /// The value in the first run (the baseline), `None` when the key is absent there.
    pub old: Option<String>,
    /// The value in the second run (now), `None` when the key is absent there.
    pub new: Option<String>,
}

/// The inputs that differ from `old` to `new`, in natural key order.
pub fn diff(old: &Inputs, new: &Inputs) -> Vec<InputChange> {
    let mut keys: Vec<&String> = old.0.keys().chain(new.0.keys()).collect();
    keys.sort_by(|a, b| key_cmp(a, b));
    keys.dedup();
    keys.into_iter()
        .filter_map(|k| {
            let (o, n) = (old.0.get(k), new.0.get(k));
            (o != n).then(|| InputChange {
                key: k.clone(),
                old: o.cloned(),
                new: n.cloned(),
            })
        })
        .collect()
}

/// Longest value shown in a change line; a longer one is cut with `...`.
const MAX_SHOWN: usize = 120;

fn shown(v: &str) -> String {
    if v.chars().count() <= MAX_SHOWN {
        return v.to_owned();
    }
    let cut: String = v.chars().take(MAX_SHOWN).collect();
    format!("{cut}...")
}

/// The changes as lines, unified-diff style: `~ key = old -> new`, `+ key = new`,
/// `- key = old`, each after `indent`.
pub fn render(changes: &[InputChange], indent: &str) -> String {
    let mut o = String::new();
    for c in changes {
        let _ = match (&c.old, &c.new) {
            (Some(a), Some(b)) => writeln!(o, "{indent}~ {} = {} -> {}", c.key, shown(a), shown(b)),
            (None, Some(b)) => writeln!(o, "{indent}+ {} = {}", c.key, shown(b)),
            (Some(a), None) => writeln!(o, "{indent}- {} = {}", c.key, shown(a)),
            (None, None) => Ok(()),
        };
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    fn inputs(text: &str) -> Inputs {
        Inputs::of_table(&toml::from_str(text).unwrap())
    }

    #[test]
    fn keys_are_paths_like_scenario_errors_name_fields() {
        let i = inputs(
            r#"
            scenario = { name = "q", seed = 1 }
            fabric = { kind = "ethernet", buffer = { kind = "per_port_tail_drop", size = "512KiB" }, ports = [0, 3] }
            check = { ignore = ["hotspots"] }
            [[workload]]
            kind = "incast"
            [[workload]]
            kind = "explicit"
            flows = [{ src = 0, dst = 1 }, { src = 2, dst = 3 }]
            "#,
        );
        let keys: Vec<&str> = i.iter().map(|(k, _)| k).collect();
        assert_eq!(
            keys,
            [
                "fabric.buffer.kind",
                "fabric.buffer.size",
                "fabric.kind",
                "fabric.ports",
                "scenario.name",
                "scenario.seed",
                "workload[0].kind",
                "workload[1].flows[0].dst",
                "workload[1].flows[0].src",
                "workload[1].flows[1].dst",
                "workload[1].flows[1].src",
                "workload[1].kind",
            ]
        );
        assert_eq!(i.0["fabric.buffer.size"], "\"512KiB\"");
        assert_eq!(i.0["fabric.ports"], "[0, 3]");
    }

    #[test]
    fn a_long_array_of_tables_is_one_input() {
        let flows: Vec<String> = (0..=MAX_SPLIT).map(|i| format!("{{ src = {i}, dst = 0 }}")).collect();
        let i = inputs(&format!("[[workload]]\nflows = [{}]", flows.join(", ")));
        assert_eq!(i.len(), 1, "{i:?}");
        assert!(
            i.0["workload[0].flows"].starts_with("[{ \"dst\" = 0, \"src\" = 0 }, "),
            "{i:?}"
        );
    }

    #[test]
    fn diff_names_changed_added_and_removed_keys() {
        let a = inputs("x = { size = \"512KiB\", rate = 0.5 }\ny = 1\nw = [{ a = 1 }]");
        let b = inputs("x = { size = \"1MiB\", rate = 0.5 }\nz = true\nw = [{ a = 1 }, { a = 2 }]");
        let d = diff(&a, &b);
        let text = render(&d, "  ");
        assert_eq!(
            text,
            "  + w[1].a = 2\n  ~ x.size = \"512KiB\" -> \"1MiB\"\n  - y = 1\n  + z = true\n"
        );
        assert!(diff(&a, &a).is_empty());
    }

    #[test]
    fn values_read_back_as_the_same_text() {
        for text in [
            "1",
            "0.30000000000000004",
            "\"a \\\"b\\\"\"",
            "[1, 2.5, \"x\"]",
            "true",
            "1e20",
        ] {
            let t: toml::Table = toml::from_str(&format!("v = {text}")).unwrap();
            let once = value_text(&t["v"]);
            let again: toml::Table = toml::from_str(&format!("v = {once}")).unwrap();
            assert_eq!(value_text(&again["v"]), once, "{text}");
        }
    }

    #[test]
    fn natural_key_order() {
        let mut k = vec!["w[10].a", "w[2].a", "w[2]", "a.b9", "a.b10"];
        k.sort_by(|a, b| key_cmp(a, b));
        assert_eq!(k, ["a.b9", "a.b10", "w[2]", "w[2].a", "w[10].a"]);
    }
}
