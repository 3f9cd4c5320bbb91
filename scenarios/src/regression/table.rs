//! The text `fabricsim check` prints: one block per scenario with a table of the metrics that
//! moved, and number formatting shared with the rest of the module.

use super::compare::{Comparison, Verdict};
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

/// The block printed for one compared scenario. `head` is its first line (name, files);
/// `notes` go under it.
pub fn render(head: &str, notes: &[String], c: &Comparison) -> String {
    let mut o = String::new();
    let _ = writeln!(o, "{head}");
    for n in notes {
        let _ = writeln!(o, "  note: {n}");
    }
    if !c.rows.is_empty() {
        let header = ["metric", "baseline", "now", "change", "tolerance", "verdict"];
        let cells: Vec<[String; 6]> = c
            .rows
            .iter()
            .map(|r| {
                let v =
                    |x: &Option<super::metrics::Value>| x.as_ref().map_or_else(|| "-".to_owned(), |v| v.to_string());
                [
                    r.metric.clone(),
                    v(&r.baseline),
                    v(&r.now),
                    r.change(),
                    r.tolerance.to_string(),
                    r.verdict.as_str().to_owned(),
                ]
            })
            .collect();
        let mut width = header.map(|h| h.chars().count());
        for row in &cells {
            for (w, cell) in width.iter_mut().zip(row) {
                *w = (*w).max(cell.chars().count());
            }
        }
        let line = |o: &mut String, row: &[&str]| {
            let mut l = String::from("  ");
            for (i, cell) in row.iter().enumerate() {
                let pad = width[i] - cell.chars().count();
                // Metric names left-aligned, figures right-aligned, the last column unpadded.
                match i {
                    0 => {
                        l.push_str(cell);
                        l.push_str(&" ".repeat(pad));
                    }
                    5 => l.push_str(cell),
                    _ => {
                        l.push_str(&" ".repeat(pad));
                        l.push_str(cell);
                    }
                }
                if i < 5 {
                    l.push_str("  ");
                }
            }
            let _ = writeln!(o, "{}", l.trim_end());
        };
        line(&mut o, &header);
        for row in &cells {
            line(&mut o, &row.each_ref().map(String::as_str));
        }
    }
    let failed = c.failures().count();
    let moved = c
        .rows
        .iter()
        .filter(|r| r.baseline.is_some() && r.now.is_some())
        .count();
    let new = c.rows.iter().filter(|r| r.verdict == Verdict::New).count();
    let mut tail = format!("{} metrics compared, {moved} moved", c.compared);
    if failed > 0 {
        let _ = write!(tail, ", {failed} beyond tolerance or missing");
    }
    if new > 0 {
        let _ = write!(tail, ", {new} new (not in the baseline)");
    }
    if c.skipped > 0 {
        let _ = write!(tail, ", {} left out by [check]", c.skipped);
    }
    let _ = writeln!(o, "  {}: {tail}", if c.passed() { "PASS" } else { "FAIL" });
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
