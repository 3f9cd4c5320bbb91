//! Collective results: per (workload, size) the mean completion time over iterations and the
//! nccl-tests bandwidths, as `collectives.csv`, the `collectives` section of `summary.json`
//! and a size-sweep table in the terminal (the columns nccl-tests prints).
//!
//! Definitions (`NVIDIA/nccl-tests:doc/PERFORMANCE.md`, `fabrics::collectives::cost`):
//! `algbw = S / t`, `busbw = algbw * factor` with factor `2(n-1)/n` (AllReduce, whatever the
//! algorithm), `(n-1)/n` (ReduceScatter, AllGather, AllToAll), 1 (Broadcast); GB/s = 10^9 B/s.
//! `t` runs from the instance's start (the previous instance's last delivery) to its last
//! delivery: no kernel launch or host overheads.
//!
//! Completion-time distribution per row: an HdrHistogram of the completed iterations' times
//! (ps, 3 significant digits, like `fct.hlog`), its 50th/90th/99th percentiles in the row, and
//! every row's histogram in `collectives.hlog` (one interval-log entry per row, tagged
//! `<workload>:<size_bytes>`).

use fabrics::collectives::cost::{NcclTestsOp, algbw_gbps, busbw_factor};
use fabrics::collectives::flows::{Instance, instance_span};
use fabrics::collectives::{Algorithm, CollectiveKind};
use fabrics::engine::Fabric;
use serde::Serialize;
use sim_core::{Duration, LatencyHistogram, SimTime};
use std::fmt::Write as _;

/// One row: a workload at one size.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct CollectiveRow {
    /// The `[[workload]]` name (default `workload<i>`).
    pub workload: String,
    pub op: &'static str,
    pub algorithm: &'static str,
    pub ranks: u32,
    pub size_bytes: u64,
    /// Iterations run and completed.
    pub iterations: u32,
    pub completed: u32,
    /// Mean, min and max completion time of the completed iterations, in microseconds.
    pub time_us: Option<f64>,
    pub min_time_us: Option<f64>,
    pub max_time_us: Option<f64>,
    /// Percentiles of the completed iterations' times (HdrHistogram, 3 significant digits).
    pub p50_time_us: Option<f64>,
    pub p90_time_us: Option<f64>,
    pub p99_time_us: Option<f64>,
    /// From the mean time, in GB/s (gigabytes: nccl-tests' unit; `_GBps`, not `_gbps`, which
    /// is Gb/s everywhere else).
    #[serde(rename = "algbw_GBps")]
    pub algbw_gbytes_per_s: Option<f64>,
    #[serde(rename = "busbw_GBps")]
    pub busbw_gbytes_per_s: Option<f64>,
}

pub(crate) fn op_name(k: CollectiveKind) -> &'static str {
    match k {
        CollectiveKind::AllReduce => "all_reduce",
        CollectiveKind::ReduceScatter => "reduce_scatter",
        CollectiveKind::AllGather => "all_gather",
        CollectiveKind::Broadcast { .. } => "broadcast",
        CollectiveKind::AllToAll => "all_to_all",
    }
}

pub(crate) fn algo_name(a: Algorithm) -> &'static str {
    match a {
        Algorithm::Ring => "ring",
        Algorithm::DoubleBinaryTree => "tree",
        Algorithm::HalvingDoubling => "halving_doubling",
        Algorithm::Nvls => "nvls",
        Algorithm::Direct => "direct",
        Algorithm::Hierarchical { .. } => "hierarchical",
    }
}

/// One row's instances: the workload, the first instance, how many ran, the completed ones'
/// exact times (ps) and the same in a histogram (for percentiles and `collectives.hlog`).
struct Group<'a> {
    workload: usize,
    first: &'a Instance,
    iterations: u32,
    times_ps: Vec<u64>,
    hist: LatencyHistogram,
}

/// Per row (consecutive instances of one workload and size).
fn groups<'a>(fabric: &Fabric, instances: &'a [(usize, Instance)]) -> Vec<Group<'a>> {
    let mut out = Vec::new();
    let mut k = 0;
    while k < instances.len() {
        let (w, first) = &instances[k];
        let mut end = k;
        let mut g = Group {
            workload: *w,
            first,
            iterations: 0,
            times_ps: Vec::new(),
            hist: LatencyHistogram::new(),
        };
        while end < instances.len() && instances[end].0 == *w && instances[end].1.spec == first.spec {
            if let Some((a, b)) = instance_span(&instances[end].1, fabric.flow_records(), |i| fabric.flow_of_input(i)) {
                g.times_ps.push(b.since(a).ps());
                g.hist.record(b.since(a));
            }
            end += 1;
        }
        g.iterations = (end - k) as u32;
        out.push(g);
        k = end;
    }
    out
}

/// The rows of a finished run; `names[i]` is workload `i`'s name. Mean, min and max are
/// exact; percentiles come from the histogram (3 significant digits).
pub fn rows(fabric: &Fabric, instances: &[(usize, Instance)], names: &[String]) -> Vec<CollectiveRow> {
    let us = |ps: u64| ps as f64 / 1e6;
    groups(fabric, instances)
        .into_iter()
        .map(|g| {
            let spec = g.first.spec;
            let t = &g.times_ps;
            let mean = (!t.is_empty()).then(|| (t.iter().map(|&x| x as u128).sum::<u128>() / t.len() as u128) as u64);
            let op = NcclTestsOp::from(spec.kind);
            let algbw = mean.map(|t| algbw_gbps(spec.bytes, Duration::from_ps(t)));
            CollectiveRow {
                workload: names.get(g.workload).cloned().unwrap_or_default(),
                op: op_name(spec.kind),
                algorithm: algo_name(spec.algorithm),
                ranks: spec.n_ranks,
                size_bytes: spec.bytes,
                iterations: g.iterations,
                completed: t.len() as u32,
                time_us: mean.map(us),
                min_time_us: t.iter().min().map(|&x| us(x)),
                max_time_us: t.iter().max().map(|&x| us(x)),
                p50_time_us: g.hist.quantile_ps(0.5).map(us),
                p90_time_us: g.hist.quantile_ps(0.9).map(us),
                p99_time_us: g.hist.quantile_ps(0.99).map(us),
                algbw_gbytes_per_s: algbw,
                busbw_gbytes_per_s: algbw.map(|a| a * busbw_factor(op, spec.n_ranks)),
            }
        })
        .collect()
}

/// `collectives.hlog`: every row's completion-time histogram (module docs).
pub fn hlog(
    fabric: &Fabric,
    instances: &[(usize, Instance)],
    names: &[String],
    end: SimTime,
) -> Result<Vec<u8>, String> {
    use hdrhistogram::serialization::V2DeflateSerializer;
    use hdrhistogram::serialization::interval_log::{IntervalLogWriterBuilder, Tag};
    let mut out = Vec::new();
    let mut ser = V2DeflateSerializer::new();
    let mut w = IntervalLogWriterBuilder::new()
        .with_max_value_divisor(1e12)
        .add_comment("fabricsim collective completion times: values in picoseconds; one histogram per workload and size, tag <workload>:<size_bytes>")
        .begin_log_with(&mut out, &mut ser)
        .map_err(|e| e.to_string())?;
    let dur = std::time::Duration::from_nanos(end.ps() / 1000);
    for g in groups(fabric, instances) {
        let name: String = names
            .get(g.workload)
            .map(String::as_str)
            .unwrap_or("workload")
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        let text = format!("{name}:{}", g.first.spec.bytes);
        let tag = Tag::new(&text).ok_or("invalid histogram tag")?;
        w.write_histogram(g.hist.inner(), std::time::Duration::ZERO, dur, Some(tag))
            .map_err(|e| format!("{e:?}"))?;
    }
    drop(w);
    Ok(out)
}

fn opt(v: Option<f64>, digits: usize) -> String {
    v.map(|x| format!("{x:.digits$}")).unwrap_or_default()
}

/// `collectives.csv`.
pub fn csv(rows: &[CollectiveRow]) -> String {
    let mut s = String::from(
        "workload,op,algorithm,ranks,size_bytes,iterations,completed,time_us,min_time_us,max_time_us,p50_time_us,p90_time_us,p99_time_us,algbw_GBps,busbw_GBps\n",
    );
    for r in rows {
        let _ = writeln!(
            s,
            "{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}",
            r.workload,
            r.op,
            r.algorithm,
            r.ranks,
            r.size_bytes,
            r.iterations,
            r.completed,
            opt(r.time_us, 3),
            opt(r.min_time_us, 3),
            opt(r.max_time_us, 3),
            opt(r.p50_time_us, 3),
            opt(r.p90_time_us, 3),
            opt(r.p99_time_us, 3),
            opt(r.algbw_gbytes_per_s, 2),
            opt(r.busbw_gbytes_per_s, 2),
        );
    }
    s
}

/// The nccl-tests-style table (size, time, algbw, busbw per workload and size).
pub fn table(rows: &[CollectiveRow]) -> String {
    let mut o = String::new();
    if rows.is_empty() {
        return o;
    }
    let _ = writeln!(o, "\ncollectives (nccl-tests definitions; time = mean over iterations)");
    let _ = writeln!(
        o,
        "  {:<16}{:<15}{:<14}{:>6}{:>14}{:>14}{:>12}{:>12}",
        "workload", "op", "algorithm", "ranks", "size (B)", "time (us)", "algbw GB/s", "busbw GB/s"
    );
    for r in rows {
        let _ = writeln!(
            o,
            "  {:<16}{:<15}{:<14}{:>6}{:>14}{:>14}{:>12}{:>12}",
            r.workload,
            r.op,
            r.algorithm,
            r.ranks,
            r.size_bytes,
            r.time_us.map(|t| format!("{t:.2}")).unwrap_or_else(|| "-".into()),
            opt(r.algbw_gbytes_per_s, 2),
            opt(r.busbw_gbytes_per_s, 2),
        );
    }
    o
}
