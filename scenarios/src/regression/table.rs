//! The text `fabricsim check` prints: one block per scenario with the inputs that changed and
//! a table of the metrics that moved, and the table layout and number formatting shared with
//! `fabricsim diff`.

use super::compare::{Comparison, Counts};
use super::fold::{Entry, fold};
use super::inputs::InputChange;
use super::metrics::Value;
use std::fmt::Write as _;

/// A number for people: up to 7 significant digits, no trailing zeros (`131793`, `0.7648212`,
/// `1.5e-9` below 1e-6, `2.3e+20` above 1e15).
pub fn num(x: f64) -> String {
    num_sig(x, 7)
}

/// `x` with at most `sig` significant digits (see [`num`]).
pub fn num_sig(x: f64, sig: usize) -> String {
    if !x.is_finite() {
        return super::metrics::float_text(x);
    }
    if x == 0.0 {
        return "0".into();
    }
    let mag = x.abs().log10().floor() as i32;
    if !(-6..=15).contains(&mag) {
        let s = format!("{:.*e}", sig.saturating_sub(1), x);
        let (mantissa, exp) = s.split_once('e').unwrap_or((&s, "0"));
        let mantissa = if mantissa.contains('.') {
            mantissa.trim_end_matches('0').trim_end_matches('.')
        } else {
            mantissa
        };
        return format!("{mantissa}e{exp}");
    }
    let decimals = (sig as i32 - 1 - mag).max(0) as usize;
    let s = format!("{x:.decimals$}");
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_owned()
    } else {
        s
    }
}

/// One line of a [`write_table`]: cells under the header, or a line of its own (indented
/// under the row above, not counted in the column widths).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Line {
    Cells(Vec<String>),
    Text(String),
}

/// Writes an aligned table after `indent`: the first column left-aligned, the others
/// right-aligned, but the last left-aligned and unpadded when `last_left`.
pub fn write_table(o: &mut String, indent: &str, header: &[&str], lines: &[Line], last_left: bool) {
    let n = header.len();
    let mut width: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for l in lines {
        if let Line::Cells(cells) = l {
            for (w, cell) in width.iter_mut().zip(cells) {
                *w = (*w).max(cell.chars().count());
            }
        }
    }
    let row = |o: &mut String, cells: &[&str]| {
        let mut l = String::from(indent);
        for (i, cell) in cells.iter().enumerate().take(n) {
            let pad = width[i] - cell.chars().count();
            if i == 0 || (i == n - 1 && last_left) {
                l.push_str(cell);
                l.push_str(&" ".repeat(pad));
            } else {
                l.push_str(&" ".repeat(pad));
                l.push_str(cell);
            }
            if i + 1 < n {
                l.push_str("  ");
            }
        }
        let _ = writeln!(o, "{}", l.trim_end());
    };
    row(o, header);
    for l in lines {
        match l {
            Line::Cells(cells) => row(o, &cells.iter().map(String::as_str).collect::<Vec<_>>()),
            Line::Text(t) => {
                let _ = writeln!(o, "{indent}  {t}");
            }
        }
    }
}

/// A value in a table cell (`-` when absent).
pub fn cell(v: &Option<Value>) -> String {
    v.as_ref().map_or_else(|| "-".to_owned(), Value::to_string)
}

/// `10 entries`, `1 entry`.
pub fn entries(n: usize) -> String {
    format!("{n} {}", if n == 1 { "entry" } else { "entries" })
}

/// Table lines for `entries`: metric (or list pattern), the two values (or entry counts),
/// the change, then the cells `tail` gives; a folded list adds a line with its largest change.
pub fn entry_lines(entries: &[Entry<'_>], tail: &dyn Fn(&Entry<'_>) -> Vec<String>) -> Vec<Line> {
    let mut lines = Vec::new();
    for e in entries {
        let mut cells = match e {
            Entry::Metric(r) => vec![r.metric.clone(), cell(&r.baseline), cell(&r.now), r.change()],
            Entry::List(l) => vec![
                l.pattern(),
                self::entries(l.entries_baseline),
                self::entries(l.entries_now),
                l.change(),
            ],
        };
        cells.extend(tail(e));
        lines.push(Line::Cells(cells));
        if let Entry::List(l) = e {
            lines.push(Line::Text(l.largest_text()));
        }
    }
    lines
}

/// The check table's lines: one per moved metric or folded list, largest change first, with
/// the tolerance and the verdict.
fn check_lines(c: &Comparison) -> Vec<Line> {
    entry_lines(&fold(c), &|e| match e {
        Entry::Metric(r) => vec![r.tolerance.to_string(), r.verdict.as_str().to_owned()],
        Entry::List(l) => vec![
            l.tolerance().map_or_else(|| "mixed".to_owned(), |t| t.to_string()),
            l.verdict().as_str().to_owned(),
        ],
    })
}

/// `76 metrics: 70 unchanged, 2 moved within tolerance, 3 beyond tolerance, 1 new, 0 gone`
/// (and `, N left out by [check]` when some were): the counts add up to the first.
pub fn summary(k: &Counts) -> String {
    let mut s = format!(
        "{} metrics: {} unchanged, {} moved within tolerance, {} beyond tolerance, {} new, {} gone",
        k.total, k.unchanged, k.within, k.beyond, k.new, k.gone
    );
    if k.skipped > 0 {
        let _ = write!(s, ", {} left out by [check]", k.skipped);
    }
    s
}

/// The block printed for one compared scenario. `head` is its first line (name, files);
/// `notes` go under it, then the inputs that changed since the baseline, then the table of
/// moved metrics (largest change first, lists folded) and the verdict with the counts.
pub fn render(head: &str, notes: &[String], inputs: &[InputChange], c: &Comparison) -> String {
    let mut o = String::new();
    let _ = writeln!(o, "{head}");
    for n in notes {
        let _ = writeln!(o, "  note: {n}");
    }
    if !inputs.is_empty() {
        let _ = writeln!(
            o,
            "  inputs that changed since the baseline ({}; ~ changed, + added, - removed):",
            inputs.len()
        );
        o.push_str(&super::inputs::render(inputs, "    "));
    }
    if !c.rows.is_empty() {
        let header = ["metric", "baseline", "now", "change", "tolerance", "verdict"];
        write_table(&mut o, "  ", &header, &check_lines(c), true);
    }
    let verdict = if c.passed() { "PASS" } else { "FAIL" };
    let _ = writeln!(o, "  {verdict}: {}", summary(&c.counts()));
    o
}

#[cfg(test)]
mod tests {
    use super::super::compare::compare;
    use super::super::metrics::Metrics;
    use super::super::spec::CheckSpec;
    use super::*;

    #[test]
    fn a_block_names_the_inputs_then_the_largest_moves_with_lists_folded() {
        let t = |s: &str| Value::Text(s.into());
        let base: Metrics = [
            ("fct_ns.p99", Value::Float(100.0)),
            ("packets.dropped", Value::Int(10)),
            ("hotspots.1", t("a -> b (port 1)")),
            ("hotspots.2", t("c -> d (port 2)")),
            ("hotspots.3", t("e -> f (port 3)")),
            ("topology.hosts", Value::Int(16)),
            ("run.outcome", t("drained")),
        ]
        .into_iter()
        .collect();
        let mut now = base.clone();
        now.insert("fct_ns.p99", Value::Float(140.0));
        now.insert("packets.dropped", Value::Int(11));
        now.insert("hotspots.1", t("c -> d (port 2)"));
        now.insert("hotspots.2", t("a -> b (port 1)"));
        now.insert("counters.pause_frames", Value::Int(4));
        let spec: CheckSpec = toml::from_str("ignore = [\"topology\"]\ntolerance.fct_ns = { relative = 0.5 }").unwrap();
        let c = compare(&base, &now, &spec);
        let inputs = [InputChange {
            key: "fabric.buffer.size".into(),
            old: Some("\"512KiB\"".into()),
            new: Some("\"1MiB\"".into()),
        }];
        let block = render("q: q.toml vs q.baseline.toml", &["a note".into()], &inputs, &c);
        let lines: Vec<&str> = block.lines().collect();
        assert_eq!(lines[1], "  note: a note", "{block}");
        assert_eq!(lines[3], "    ~ fabric.buffer.size = \"512KiB\" -> \"1MiB\"", "{block}");
        assert!(lines[4].starts_with("  metric "), "{block}");
        let first = |l: &str| l.split_whitespace().next().unwrap_or("").to_owned();
        let order: Vec<String> = lines[5..lines.len() - 1].iter().map(|l| first(l)).collect();
        // No relative size first (by name), then +40 %, then +10 %.
        assert_eq!(
            order,
            [
                "counters.pause_frames",
                "hotspots.*",
                "largest:",
                "fct_ns.p99",
                "packets.dropped"
            ],
            "{block}"
        );
        assert!(
            lines[6].contains("3 entries") && lines[6].contains("2 entries moved"),
            "{block}"
        );
        assert!(lines[6].trim_end().ends_with("FAIL"), "{block}");
        assert!(
            lines[8].trim_end().ends_with("ok"),
            "fct_ns.p99 is within 50 %: {block}"
        );
        assert_eq!(
            lines[lines.len() - 1],
            "  FAIL: 8 metrics: 2 unchanged, 1 moved within tolerance, 3 beyond tolerance, 1 new, 0 gone, 1 left out by [check]",
            "{block}"
        );
    }

    #[test]
    fn numbers() {
        assert_eq!(num(131793.0), "131793");
        assert_eq!(num(173527.123), "173527.1");
        assert_eq!(num(0.76482123456), "0.7648212");
        assert_eq!(num(-3.0), "-3");
        assert_eq!(num(0.0), "0");
        assert_eq!(num(1.5e-9), "1.5e-9");
        assert_eq!(num(2.5e20), "2.5e20");
        assert_eq!(num_sig(6.2345, 3), "6.23");
        assert_eq!(num_sig(0.000123456, 3), "0.000123");
    }
}
