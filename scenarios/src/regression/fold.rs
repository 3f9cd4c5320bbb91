//! What a reviewer reads first: the moved metrics ordered by the size of their change, and
//! the rows of a list (the hotspot ranking, the pause tree, the congestion tree, the
//! per-collective table: any metric family with an all-digit segment) folded into one row.
//!
//! - Order: largest relative change first ([`Row::magnitude`]); a change without a relative
//!   size (text, booleans, from zero, added, gone) counts as infinitely large. Equal sizes go
//!   by name, in natural order, so the same comparison always prints the same way.
//! - A list is the name up to its first all-digit segment (`pause_tree` for
//!   `pause_tree.3.paused_ns`), an entry is that segment (`3`). A list in which metrics of two
//!   or more entries moved becomes one [`ListRow`]: how many entries moved, were added or
//!   removed, and its largest change. A list in which one entry moved keeps its metrics' own
//!   rows (there is nothing to fold, and each field of it is worth a row).

use super::compare::{Comparison, ListEntries, Row, Verdict, by_size};
use super::metrics::natural_cmp;
use super::spec::Tolerance;
use std::collections::BTreeMap;

/// The list `metric` belongs to and its entry in it: `("pause_tree", "3")` for
/// `pause_tree.3.paused_ns`, `("hotspots", "1")` for `hotspots.1`; `None` for a metric
/// with no all-digit segment after the first.
pub fn list_of(metric: &str) -> Option<(&str, &str)> {
    let mut start = 0;
    for seg in metric.split('.') {
        if start > 0 && !seg.is_empty() && seg.bytes().all(|c| c.is_ascii_digit()) {
            return Some((&metric[..start - 1], seg));
        }
        start += seg.len() + 1;
    }
    None
}

/// The moved metrics of one list, folded.
#[derive(Clone, Debug, PartialEq)]
pub struct ListRow<'a> {
    /// The list's name (`pause_tree`).
    pub list: String,
    /// Its metrics that moved, largest change first (of two or more entries).
    pub rows: Vec<&'a Row>,
    /// Entries in the baseline and in the run (selected metrics only).
    pub entries_baseline: usize,
    pub entries_now: usize,
    /// Entries with a moved metric that are on both sides.
    pub moved: usize,
    /// Entries that are in the run only.
    pub added: usize,
    /// Entries that are in the baseline only.
    pub removed: usize,
}

impl ListRow<'_> {
    /// The largest change in the list.
    pub fn largest(&self) -> &Row {
        self.rows[0]
    }

    /// `pause_tree.*`: the list as a `[check]` pattern.
    pub fn pattern(&self) -> String {
        format!("{}.*", self.list)
    }

    /// The worst verdict of its metrics (`FAIL`, then `MISSING`, `ok`, `new`).
    pub fn verdict(&self) -> Verdict {
        let rank = |v: Verdict| match v {
            Verdict::Fail => 3,
            Verdict::Missing => 2,
            Verdict::Within => 1,
            Verdict::New => 0,
        };
        self.rows
            .iter()
            .map(|r| r.verdict)
            .max_by_key(|v| rank(*v))
            .unwrap_or(Verdict::Within)
    }

    /// The tolerance its metrics share, or `None` when they differ.
    pub fn tolerance(&self) -> Option<Tolerance> {
        let t = self.largest().tolerance;
        self.rows.iter().all(|r| r.tolerance == t).then_some(t)
    }

    /// `3 entries moved, 1 added, 1 removed` (the parts that are not zero).
    pub fn change(&self) -> String {
        let mut parts = Vec::new();
        if self.moved > 0 {
            parts.push(format!("{} moved", self.moved));
        }
        if self.added > 0 {
            parts.push(format!("{} added", self.added));
        }
        if self.removed > 0 {
            parts.push(format!("{} removed", self.removed));
        }
        let entries = if self.moved + self.added + self.removed == 1 {
            "entry"
        } else {
            "entries"
        };
        match parts.split_first_mut() {
            Some((first, _)) => {
                // "3 entries moved, 1 added": the noun once, after the first count.
                let (n, verb) = first.split_once(' ').unwrap_or((first.as_str(), ""));
                *first = format!("{n} {entries} {verb}");
                parts.join(", ")
            }
            None => String::new(),
        }
    }

    /// `largest: pause_tree.2.paused_ns 1200 -> 2400, +1200 (+100%)`.
    pub fn largest_text(&self) -> String {
        let r = self.largest();
        let v = |x: &Option<super::metrics::Value>| x.as_ref().map_or_else(|| "-".to_owned(), value_text);
        format!(
            "largest: {} {} -> {}, {}",
            r.metric,
            v(&r.baseline),
            v(&r.now),
            r.change()
        )
    }
}

/// A value in running text: text quoted, so that `a -> b` inside a hotspot name reads apart
/// from the arrow between two values.
fn value_text(v: &super::metrics::Value) -> String {
    match v {
        super::metrics::Value::Text(t) => format!("\"{t}\""),
        v => v.to_string(),
    }
}

/// One row of a report: a metric, or a folded list.
#[derive(Clone, Debug, PartialEq)]
pub enum Entry<'a> {
    Metric(&'a Row),
    List(ListRow<'a>),
}

impl Entry<'_> {
    /// The size of its (largest) change: see [`Row::magnitude`].
    pub fn magnitude(&self) -> f64 {
        match self {
            Entry::Metric(r) => r.magnitude(),
            Entry::List(l) => l.largest().magnitude(),
        }
    }

    /// The name it sorts by among equal sizes: the metric, or the list.
    pub fn name(&self) -> &str {
        match self {
            Entry::Metric(r) => &r.metric,
            Entry::List(l) => &l.list,
        }
    }
}

/// The rows of `c` as a reviewer reads them: lists folded, largest change first.
pub fn fold(c: &Comparison) -> Vec<Entry<'_>> {
    fold_rows(&c.rows, &c.lists)
}

/// [`fold`] over `rows`, given the entries of each list on each side.
pub fn fold_rows<'a>(rows: &'a [Row], lists: &BTreeMap<String, ListEntries>) -> Vec<Entry<'a>> {
    let mut by_list: BTreeMap<&str, Vec<&'a Row>> = BTreeMap::new();
    let mut out = Vec::new();
    for r in rows {
        match list_of(&r.metric) {
            Some((list, _)) => by_list.entry(list).or_default().push(r),
            None => out.push(Entry::Metric(r)),
        }
    }
    for (list, mut members) in by_list {
        let mut entries: Vec<&str> = members
            .iter()
            .filter_map(|r| list_of(&r.metric).map(|(_, e)| e))
            .collect();
        entries.sort_unstable();
        entries.dedup();
        if entries.len() < 2 {
            out.extend(members.into_iter().map(Entry::Metric));
            continue;
        }
        members.sort_by(|a, b| by_size(a, b));
        let empty = ListEntries::default();
        let sides = lists.get(list).unwrap_or(&empty);
        let (mut moved, mut added, mut removed) = (0, 0, 0);
        for e in entries {
            match (sides.baseline.contains(e), sides.now.contains(e)) {
                (false, _) => added += 1,
                (true, false) => removed += 1,
                (true, true) => moved += 1,
            }
        }
        out.push(Entry::List(ListRow {
            list: list.to_owned(),
            rows: members,
            entries_baseline: sides.baseline.len(),
            entries_now: sides.now.len(),
            moved,
            added,
            removed,
        }));
    }
    sort(&mut out);
    out
}

/// Every row as its own entry, largest change first (no folding).
pub fn unfolded(rows: &[Row]) -> Vec<Entry<'_>> {
    let mut out: Vec<Entry<'_>> = rows.iter().map(Entry::Metric).collect();
    sort(&mut out);
    out
}

fn sort(entries: &mut [Entry<'_>]) {
    entries.sort_by(|a, b| {
        b.magnitude()
            .total_cmp(&a.magnitude())
            .then_with(|| natural_cmp(a.name(), b.name()))
    });
}

#[cfg(test)]
mod tests {
    use super::super::compare::compare;
    use super::super::metrics::{Metrics, Value};
    use super::super::spec::CheckSpec;
    use super::*;

    fn metrics(v: &[(&str, Value)]) -> Metrics {
        v.iter().map(|(k, x)| (*k, x.clone())).collect()
    }

    fn names<'a>(entries: &'a [Entry<'a>]) -> Vec<&'a str> {
        entries.iter().map(Entry::name).collect()
    }

    #[test]
    fn lists_are_named_by_their_first_digit_segment() {
        assert_eq!(list_of("hotspots.1"), Some(("hotspots", "1")));
        assert_eq!(list_of("pause_tree.12.paused_ns"), Some(("pause_tree", "12")));
        assert_eq!(list_of("slowdown.by_size.3.p99"), Some(("slowdown.by_size", "3")));
        assert_eq!(list_of("collectives.1.x.2.y"), Some(("collectives", "1")));
        assert_eq!(list_of("fct_ns.p99"), None);
        assert_eq!(list_of("groups.web#1.fct_ns.p99"), None);
        assert_eq!(list_of("7.x"), None, "a leading number names no list");
        assert_eq!(list_of("a..b"), None);
    }

    #[test]
    fn rows_go_largest_change_first_and_ties_by_name() {
        let base = metrics(&[
            ("a", Value::Float(100.0)),
            ("b", Value::Int(10)),
            ("c", Value::Float(-50.0)),
            ("d", Value::Int(0)),
            ("e", Value::Text("x".into())),
            ("f", Value::Int(100)),
            ("g", Value::Int(100)),
        ]);
        let now = metrics(&[
            ("a", Value::Float(101.0)),  // +1 %
            ("b", Value::Int(15)),       // +50 %
            ("c", Value::Float(-100.0)), // -100 %
            ("d", Value::Int(3)),        // from zero: no relative size
            ("e", Value::Text("y".into())),
            ("f", Value::Int(90)),  // -10 %
            ("g", Value::Int(110)), // +10 %: same size as f, after it by name
        ]);
        let c = compare(&base, &now, &CheckSpec::default());
        let folded = fold(&c);
        assert_eq!(names(&folded), ["d", "e", "c", "b", "f", "g", "a"]);
        // The order does not depend on the order the rows came in.
        let mut rev = c.rows.clone();
        rev.reverse();
        assert_eq!(names(&fold_rows(&rev, &c.lists)), names(&folded));
    }

    #[test]
    fn a_list_with_several_moves_is_one_row_counting_entries() {
        let mut base = Metrics::default();
        let mut now = Metrics::default();
        for i in 1..=5 {
            base.insert(format!("pause_tree.{i}.depth"), Value::Int(1));
            base.insert(format!("pause_tree.{i}.paused_ns"), Value::Int(1000));
            now.insert(format!("pause_tree.{i}.depth"), Value::Int(1));
        }
        // Entry 1 moved by +10 %, entry 2 by +300 % (two fields), entry 5 gone, entry 6 new.
        now.insert("pause_tree.1.paused_ns", Value::Int(1100));
        now.insert("pause_tree.2.paused_ns", Value::Int(4000));
        now.insert("pause_tree.2.depth", Value::Int(2));
        now.insert("pause_tree.3.paused_ns", Value::Int(1000));
        now.insert("pause_tree.4.paused_ns", Value::Int(1000));
        now.0
            .remove(&super::super::metrics::MetricName("pause_tree.5.depth".into()));
        now.insert("pause_tree.6.depth", Value::Int(3));
        now.insert("pause_tree.6.paused_ns", Value::Int(10));
        // A list in which one entry moved keeps its rows.
        base.insert("hotspots.1", Value::Text("a -> b (port 1)".into()));
        now.insert("hotspots.1", Value::Text("c -> d (port 2)".into()));
        base.insert("collectives.1.op", Value::Text("allreduce".into()));
        now.insert("collectives.1.op", Value::Text("allgather".into()));
        base.insert("collectives.1.busbw_GBps", Value::Float(100.0));
        now.insert("collectives.1.busbw_GBps", Value::Float(50.0));
        base.insert("fct_ns.p99", Value::Float(100.0));
        now.insert("fct_ns.p99", Value::Float(120.0));
        let c = compare(&base, &now, &CheckSpec::default());
        let folded = fold(&c);
        assert_eq!(
            names(&folded),
            [
                "collectives.1.op",
                "hotspots.1",
                "pause_tree",
                "collectives.1.busbw_GBps",
                "fct_ns.p99"
            ]
        );
        let Entry::List(l) = &folded[2] else {
            panic!("{folded:?}")
        };
        assert_eq!((l.moved, l.added, l.removed), (2, 1, 1));
        assert_eq!((l.entries_baseline, l.entries_now), (5, 5));
        assert_eq!(l.rows.len(), 7);
        assert_eq!(l.change(), "2 entries moved, 1 added, 1 removed");
        assert_eq!(l.verdict(), Verdict::Fail);
        assert_eq!(l.pattern(), "pause_tree.*");
        // Added and gone rows have no relative size: they are the largest.
        assert_eq!(l.largest().metric, "pause_tree.5.depth");
        assert_eq!(l.rows[4].metric, "pause_tree.2.paused_ns");
        assert_eq!(l.rows[4].change(), "+3000 (+300%)", "then the largest relative move");
        // Unfolded, every row stands alone, still in order of size.
        let flat = unfolded(&c.rows);
        assert_eq!(flat.len(), c.rows.len());
        assert_eq!(flat.last().map(Entry::name), Some("pause_tree.1.paused_ns"));
    }

    #[test]
    fn a_list_row_says_its_largest_change() {
        let base = metrics(&[
            ("hotspots.1", Value::Text("a -> b (port 1)".into())),
            ("hotspots.2", Value::Text("c -> d (port 2)".into())),
        ]);
        let now = metrics(&[
            ("hotspots.1", Value::Text("c -> d (port 2)".into())),
            ("hotspots.2", Value::Text("a -> b (port 1)".into())),
        ]);
        let c = compare(&base, &now, &CheckSpec::default());
        let folded = fold(&c);
        let Entry::List(l) = &folded[0] else {
            panic!("{folded:?}")
        };
        assert_eq!(l.change(), "2 entries moved");
        assert_eq!(
            l.largest_text(),
            "largest: hotspots.1 \"a -> b (port 1)\" -> \"c -> d (port 2)\", changed"
        );
        assert_eq!(l.tolerance(), Some(Tolerance::EXACT));
    }
}
