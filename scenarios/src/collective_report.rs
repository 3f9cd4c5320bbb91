//! Collective results: per (workload, size) the mean completion time over iterations and the
//! nccl-tests bandwidths, as `collectives.csv`, the `collectives` section of `summary.json`
//! and a size-sweep table in the terminal (the columns nccl-tests prints).
//!
//! Definitions (`NVIDIA/nccl-tests:doc/PERFORMANCE.md`, `fabrics::collectives::cost`):
//! `algbw = S / t`, `busbw = algbw * factor` with factor `2(n-1)/n` (AllReduce, whatever the
//! algorithm), `(n-1)/n` (ReduceScatter, AllGather, AllToAll), 1 (Broadcast); GB/s = 10^9 B/s.
//! `t` runs from the instance's start (the previous instance's last delivery) to its last
//! delivery: no kernel launch or host overheads.

use fabrics::collectives::cost::{NcclTestsOp, algbw_gbps, busbw_factor};
use fabrics::collectives::flows::{Instance, instance_span};
use fabrics::collectives::{Algorithm, CollectiveKind};
use fabrics::engine::Fabric;
use serde::Serialize;
use sim_core::Duration;
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
    /// From the mean time, GB/s.
    pub algbw_gbps: Option<f64>,
    pub busbw_gbps: Option<f64>,
}

fn op_name(k: CollectiveKind) -> &'static str {
    match k {
        CollectiveKind::AllReduce => "all_reduce",
        CollectiveKind::ReduceScatter => "reduce_scatter",
        CollectiveKind::AllGather => "all_gather",
        CollectiveKind::Broadcast { .. } => "broadcast",
        CollectiveKind::AllToAll => "all_to_all",
    }
}

fn algo_name(a: Algorithm) -> &'static str {
    match a {
        Algorithm::Ring => "ring",
        Algorithm::DoubleBinaryTree => "tree",
        Algorithm::HalvingDoubling => "halving_doubling",
        Algorithm::Nvls => "nvls",
        Algorithm::Direct => "direct",
        Algorithm::Hierarchical { .. } => "hierarchical",
    }
}

/// The rows of a finished run; `names[i]` is workload `i`'s name.
pub fn rows(fabric: &Fabric, instances: &[(usize, Instance)], names: &[String]) -> Vec<CollectiveRow> {
    let mut out: Vec<CollectiveRow> = Vec::new();
    let mut times: Vec<u64> = Vec::new();
    let mut k = 0;
    while k < instances.len() {
        let (w, first) = &instances[k];
        // Instances of one (workload, size) are consecutive.
        let mut end = k;
        times.clear();
        while end < instances.len() && instances[end].0 == *w && instances[end].1.spec == first.spec {
            if let Some((a, b)) = instance_span(&instances[end].1, fabric.flow_records(), |i| fabric.flow_of_input(i)) {
                times.push(b.since(a).ps());
            }
            end += 1;
        }
        let spec = first.spec;
        let mean = (!times.is_empty()).then(|| times.iter().map(|&t| t as u128).sum::<u128>() / times.len() as u128);
        let us = |ps: u64| ps as f64 / 1e6;
        let op = NcclTestsOp::from(spec.kind);
        let algbw = mean.map(|t| algbw_gbps(spec.bytes, Duration::from_ps(t as u64)));
        out.push(CollectiveRow {
            workload: names.get(*w).cloned().unwrap_or_default(),
            op: op_name(spec.kind),
            algorithm: algo_name(spec.algorithm),
            ranks: spec.n_ranks,
            size_bytes: spec.bytes,
            iterations: (end - k) as u32,
            completed: times.len() as u32,
            time_us: mean.map(|t| us(t as u64)),
            min_time_us: times.iter().min().map(|&t| us(t)),
            max_time_us: times.iter().max().map(|&t| us(t)),
            algbw_gbps: algbw,
            busbw_gbps: algbw.map(|a| a * busbw_factor(op, spec.n_ranks)),
        });
        k = end;
    }
    out
}

fn opt(v: Option<f64>, digits: usize) -> String {
    v.map(|x| format!("{x:.digits$}")).unwrap_or_default()
}

/// `collectives.csv`.
pub fn csv(rows: &[CollectiveRow]) -> String {
    let mut s = String::from(
        "workload,op,algorithm,ranks,size_bytes,iterations,completed,time_us,min_time_us,max_time_us,algbw_gbps,busbw_gbps\n",
    );
    for r in rows {
        let _ = writeln!(
            s,
            "{},{},{},{},{},{},{},{},{},{},{},{}",
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
            opt(r.algbw_gbps, 2),
            opt(r.busbw_gbps, 2),
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
            opt(r.algbw_gbps, 2),
            opt(r.busbw_gbps, 2),
        );
    }
    o
}
