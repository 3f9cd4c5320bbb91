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
    use super::*;

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
