//! FCT slowdown: each flow's completion time over its ideal (the flow alone on its own path,
//! `fabrics::engine::IdealPath`), per flow in `flows.csv`, and in `summary.json` `slowdown`
//! as median/p95/p99 over all flows, per flow-size bucket and per workload group, with the
//! terminal's slowdown-by-size and per-group tables.
//!
//! Buckets: the user's edges (`[output] slowdown_size_edges`) or, by default, the HPCC
//! paper's (its `fct_analysis.py`): completed flows sorted by size, cut into buckets of about
//! 5% of them each; a bucket closes once it holds its 5% and the next flow is larger, so equal
//! sizes never straddle two buckets. Percentiles are nearest-rank over the exact values.

use fabrics::engine::{Fabric, FlowRecord, IdealPath};
use serde::Serialize;
use std::fmt::Write as _;

/// Path and ideal FCT of every flow, by engine flow id (`None`: not routable to its
/// destination, which the loader refuses, so only ever for a broken fabric).
pub fn ideals(fabric: &Fabric) -> Vec<Option<IdealPath>> {
    (0..fabric.flows().len() as u32).map(|f| fabric.flow_ideal(f)).collect()
}

/// Slowdown of a completed, non-empty flow: FCT over its ideal FCT. Not floored at 1: the
/// ideal is the engine's own timing without other traffic, so a value below 1 is a finding.
pub fn slowdown(r: &FlowRecord, ideal: Option<&IdealPath>) -> Option<f64> {
    let fct = r.fct_ps()?;
    let ideal = ideal?.ideal_fct_ps;
    (r.size_bytes > 0 && ideal > 0).then(|| fct as f64 / ideal as f64)
}

/// Median, p95, p99 and max of a set of slowdowns (all `null` when it is empty).
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct SlowdownStats {
    /// Completed non-empty flows counted.
    pub flows: u64,
    pub p50: Option<f64>,
    pub p95: Option<f64>,
    pub p99: Option<f64>,
    pub max: Option<f64>,
}

impl SlowdownStats {
    /// The statistics of `v` (any order).
    pub fn of(mut v: Vec<f64>) -> Self {
        v.sort_by(f64::total_cmp);
        let q = |q: f64| {
            let rank = ((q * v.len() as f64).ceil() as usize).clamp(1, v.len().max(1));
            v.get(rank - 1).copied()
        };
        SlowdownStats {
            flows: v.len() as u64,
            p50: q(0.5),
            p95: q(0.95),
            p99: q(0.99),
            max: v.last().copied(),
        }
    }
}

/// One flow-size bucket: flows with `size_above_bytes < size <= size_max_bytes`.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct SizeBucket {
    pub size_above_bytes: u64,
    /// `null`: no upper bound (the bucket above the last user edge).
    pub size_max_bytes: Option<u64>,
    #[serde(flatten)]
    pub slowdown: SlowdownStats,
}

/// `summary.json` `slowdown`.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct SlowdownSummary {
    /// How the buckets were cut: `hpcc_5pct` (default) or `edges` (`slowdown_size_edges`).
    pub buckets: &'static str,
    pub all: SlowdownStats,
    pub by_size: Vec<SizeBucket>,
}

/// (size, slowdown) of every completed non-empty flow, in flow order.
fn sized(fabric: &Fabric, ideals: &[Option<IdealPath>]) -> Vec<(u64, f64)> {
    fabric
        .flow_records()
        .iter()
        .filter_map(|r| slowdown(r, ideals[r.id as usize].as_ref()).map(|s| (r.size_bytes, s)))
        .collect()
}

/// The slowdown section. `edges`: the user's bucket edges in bytes (strictly increasing).
pub fn summary(fabric: &Fabric, ideals: &[Option<IdealPath>], edges: Option<&[u64]>) -> SlowdownSummary {
    let mut flows = sized(fabric, ideals);
    flows.sort_by(|a, b| a.0.cmp(&b.0).then(a.1.total_cmp(&b.1)));
    let all = SlowdownStats::of(flows.iter().map(|f| f.1).collect());
    let (buckets, by_size) = match edges {
        Some(e) => ("edges", edge_buckets(&flows, e)),
        None => ("hpcc_5pct", hpcc_buckets(&flows)),
    };
    SlowdownSummary { buckets, all, by_size }
}

/// Buckets `(0, e0], (e0, e1], ..., (e_last, inf)`; `flows` sorted by size.
fn edge_buckets(flows: &[(u64, f64)], edges: &[u64]) -> Vec<SizeBucket> {
    let mut out = Vec::with_capacity(edges.len() + 1);
    let mut lo = 0u64;
    let mut i = 0;
    for hi in edges.iter().copied().map(Some).chain([None]) {
        let start = i;
        while i < flows.len() && hi.is_none_or(|h| flows[i].0 <= h) {
            i += 1;
        }
        out.push(SizeBucket {
            size_above_bytes: lo,
            size_max_bytes: hi,
            slowdown: SlowdownStats::of(flows[start..i].iter().map(|f| f.1).collect()),
        });
        lo = hi.unwrap_or(lo);
    }
    out
}

/// Buckets of about 5% of the flows each; `flows` sorted by size.
fn hpcc_buckets(flows: &[(u64, f64)]) -> Vec<SizeBucket> {
    let per = flows.len().div_ceil(20).max(1);
    let mut out = Vec::new();
    let (mut start, mut lo) = (0, 0u64);
    for i in 0..flows.len() {
        let last = i + 1 == flows.len();
        if last || (i + 1 - start >= per && flows[i + 1].0 > flows[i].0) {
            out.push(SizeBucket {
                size_above_bytes: lo,
                size_max_bytes: Some(flows[i].0),
                slowdown: SlowdownStats::of(flows[start..=i].iter().map(|f| f.1).collect()),
            });
            (start, lo) = (i + 1, flows[i].0);
        }
    }
    out
}

/// Checks user bucket edges: at least one, each above 0, strictly increasing.
pub fn check_edges(edges: &[u64]) -> Result<(), String> {
    if edges.is_empty() {
        return Err("expected at least one flow-size edge, e.g. [\"10kB\", \"100kB\", \"1MB\"]".into());
    }
    if edges[0] == 0 {
        return Err("a flow-size edge must be above 0 B".into());
    }
    if let Some(w) = edges.windows(2).find(|w| w[1] <= w[0]) {
        return Err(format!(
            "flow-size edges must increase strictly; {} B is followed by {} B",
            w[0], w[1]
        ));
    }
    Ok(())
}

/// Slowdown statistics of the flows of each workload group, by group index.
pub fn per_group(fabric: &Fabric, ideals: &[Option<IdealPath>], n_groups: usize) -> Vec<SlowdownStats> {
    let flows = fabric.flows();
    let mut v: Vec<Vec<f64>> = vec![Vec::new(); n_groups];
    for r in fabric.flow_records() {
        if let Some(s) = slowdown(r, ideals[r.id as usize].as_ref()) {
            let g = flows[r.id as usize].group as usize;
            if g < n_groups {
                v[g].push(s);
            }
        }
    }
    v.into_iter().map(SlowdownStats::of).collect()
}

/// The four `flows.csv` columns of flow `r` (after a comma each): ideal FCT in ns, slowdown,
/// bottleneck rate in Gb/s, path (egress port ids, source NIC first, space-separated).
pub fn flow_cells(r: &FlowRecord, ideal: Option<&IdealPath>) -> String {
    let Some(p) = ideal else {
        return ",,,,".into();
    };
    let path: Vec<String> = p.ports.iter().map(u32::to_string).collect();
    format!(
        ",{:.3},{},{},{}",
        p.ideal_fct_ps as f64 / 1e3,
        slowdown(r, ideal).map(|s| format!("{s:.6}")).unwrap_or_default(),
        p.bottleneck.as_gbps_f64(),
        path.join(" ")
    )
}

/// The names of the [`flow_cells`] columns.
pub const FLOW_COLUMNS: &str = ",ideal_fct_ns,slowdown,bottleneck_gbps,path";

fn cell(v: Option<f64>) -> String {
    v.map_or_else(|| "-".into(), |x| format!("{x:.2}"))
}

/// A bucket's size range for the terminal, e.g. `<= 4KiB`, `4KiB-16KiB`, `> 1MB`.
fn size_range(b: &SizeBucket) -> String {
    let s = |v: u64| crate::units::SizeSpec::from_bytes(v).to_string();
    match (b.size_above_bytes, b.size_max_bytes) {
        (0, Some(hi)) => format!("<= {}", s(hi)),
        (lo, Some(hi)) => format!("{}-{}", s(lo), s(hi)),
        (lo, None) => format!("> {}", s(lo)),
    }
}

/// The terminal's slowdown-by-size table (empty when no flow completed).
pub fn terminal_table(s: &SlowdownSummary) -> String {
    let mut o = String::new();
    if s.all.flows == 0 {
        return o;
    }
    let _ = writeln!(o, "FCT slowdown by flow size (FCT / FCT alone on its path)");
    let _ = writeln!(
        o,
        "  {:<22}{:>8}{:>10}{:>10}{:>10}",
        "size", "flows", "p50", "p95", "p99"
    );
    let rows = s.by_size.iter().map(|b| (size_range(b), &b.slowdown));
    for (name, st) in rows.chain([("all".to_string(), &s.all)]) {
        let _ = writeln!(
            o,
            "  {:<22}{:>8}{:>10}{:>10}{:>10}",
            name,
            st.flows,
            cell(st.p50),
            cell(st.p95),
            cell(st.p99)
        );
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_percentiles() {
        let s = SlowdownStats::of((1..=100).rev().map(f64::from).collect());
        assert_eq!(
            (s.p50, s.p95, s.p99, s.max),
            (Some(50.0), Some(95.0), Some(99.0), Some(100.0))
        );
        let e = SlowdownStats::of(Vec::new());
        assert_eq!((e.flows, e.p50, e.max), (0, None, None));
    }

    #[test]
    fn user_edges_cut_by_size_with_an_open_last_bucket() {
        let flows = [(10, 1.0), (100, 2.0), (101, 3.0), (5000, 4.0)];
        let b = edge_buckets(&flows, &[100, 1000]);
        let counts: Vec<u64> = b.iter().map(|b| b.slowdown.flows).collect();
        assert_eq!(counts, [2, 1, 1]);
        assert_eq!((b[1].size_above_bytes, b[1].size_max_bytes), (100, Some(1000)));
        assert_eq!(b[2].size_max_bytes, None);
        assert_eq!(size_range(&b[0]), "<= 100B");
        assert_eq!(size_range(&b[2]), "> 1kB");
    }

    #[test]
    fn hpcc_buckets_hold_five_percent_and_never_split_a_size() {
        // 40 flows: 2 per bucket, but sizes 3 appear 5 times and stay together.
        let mut flows: Vec<(u64, f64)> = (0..35).map(|i| (100 + i, 1.0)).collect();
        flows.extend((0..5).map(|_| (3, 2.0)));
        flows.sort_by_key(|a| a.0);
        let b = hpcc_buckets(&flows);
        assert_eq!(b[0].slowdown.flows, 5);
        assert_eq!(b[0].size_max_bytes, Some(3));
        assert!(
            b[1..]
                .iter()
                .all(|b| b.slowdown.flows == 2 || b.size_max_bytes == Some(134))
        );
        assert_eq!(b.iter().map(|b| b.slowdown.flows).sum::<u64>(), 40);
        assert_eq!(b.last().unwrap().size_max_bytes, Some(134));
    }

    #[test]
    fn edges_must_increase() {
        assert!(check_edges(&[1, 2, 3]).is_ok());
        assert!(check_edges(&[]).is_err());
        assert!(check_edges(&[0, 5]).is_err());
        assert!(check_edges(&[5, 5]).unwrap_err().contains("5 B is followed by 5 B"));
    }
}
