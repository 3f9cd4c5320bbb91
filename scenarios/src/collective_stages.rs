//! Per-stage times of hierarchical collectives: for each (workload, size) the mean time of
//! the intra-server ReduceScatter, the inter-server AllReduce and the intra-server AllGather,
//! as `collective_stages.csv`, the `collective_stages` section of `summary.json` and a table
//! in the terminal.
//!
//! A stage's time in one instance runs from the earliest start of its messages (the moment
//! the engine released the flow: dependencies delivered plus the reduction gap) to the latest
//! delivery of its messages. Stages overlap where a server finishes its ReduceScatter before
//! another one (the inter-server ring of a shard starts once its members hold it), so the three
//! times add up to at most the instance's time plus those overlaps; with idle links they
//! follow each other. The means are over the completed iterations (an iteration counts when
//! every message of the instance completed).

use fabrics::collectives::flows::{Instance, instance_span};
use fabrics::collectives::{Algorithm, DagLimits, MessageDag, Stage, generate};
use fabrics::engine::Fabric;
use serde::Serialize;
use std::fmt::Write as _;

/// One row: a hierarchical workload at one size.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct StageRow {
    pub workload: String,
    pub ranks: u32,
    pub size_bytes: u64,
    /// Iterations run and completed.
    pub iterations: u32,
    pub completed: u32,
    /// Mean instance time (as in `collectives.csv`), microseconds.
    pub time_us: Option<f64>,
    /// Mean span of each stage, microseconds.
    pub intra_reduce_scatter_us: Option<f64>,
    pub inter_all_reduce_us: Option<f64>,
    pub intra_all_gather_us: Option<f64>,
}

/// The DAG an instance was built from (generation is deterministic; no limit applies here
/// since the plan already generated it under its limits).
pub(crate) fn dag_of(inst: &Instance) -> Option<MessageDag> {
    let unlimited = DagLimits {
        max_messages: u64::MAX,
        max_deps: u64::MAX,
    };
    generate(&inst.spec, &unlimited).ok()
}

/// `[first start, last finish]` (ps) of each hierarchical stage of one instance, in
/// [`Stage::HIERARCHICAL`] order; `None` if a message did not complete.
pub fn stage_spans(fabric: &Fabric, inst: &Instance, dag: &MessageDag) -> Option<[(u64, u64); 3]> {
    let recs = fabric.flow_records();
    let mut spans = [(u64::MAX, 0u64); 3];
    for (i, m) in dag.messages.iter().enumerate() {
        let r = &recs[fabric.flow_of_input(inst.first_flow as usize + i) as usize];
        let k = Stage::HIERARCHICAL.iter().position(|&s| s == m.stage)?;
        let finish = r.finish?.ps();
        spans[k].0 = spans[k].0.min(r.start.ps());
        spans[k].1 = spans[k].1.max(finish);
    }
    spans.iter().all(|s| s.0 <= s.1).then_some(spans)
}

/// The rows of a finished run: every hierarchical collective workload, per size.
pub fn rows(fabric: &Fabric, instances: &[(usize, Instance)], names: &[String]) -> Vec<StageRow> {
    let us = |ps: u128| ps as f64 / 1e6;
    let mut out = Vec::new();
    let mut k = 0;
    while k < instances.len() {
        let (w, first) = &instances[k];
        let mut end = k;
        while end < instances.len() && instances[end].0 == *w && instances[end].1.spec == first.spec {
            end += 1;
        }
        let group = &instances[k..end];
        k = end;
        if !matches!(first.spec.algorithm, Algorithm::Hierarchical { .. }) {
            continue;
        }
        let Some(dag) = dag_of(first) else { continue };
        let mut sums = [0u128; 3];
        let mut total = 0u128;
        let mut completed = 0u32;
        for (_, inst) in group {
            let span = instance_span(inst, fabric.flow_records(), |i| fabric.flow_of_input(i));
            if let (Some((a, b)), Some(st)) = (span, stage_spans(fabric, inst, &dag)) {
                total += b.since(a).ps() as u128;
                for (sum, (s, e)) in sums.iter_mut().zip(st) {
                    *sum += (e - s) as u128;
                }
                completed += 1;
            }
        }
        let mean = |x: u128| (completed > 0).then(|| us(x / completed as u128));
        out.push(StageRow {
            workload: names.get(*w).cloned().unwrap_or_default(),
            ranks: first.spec.n_ranks,
            size_bytes: first.spec.bytes,
            iterations: group.len() as u32,
            completed,
            time_us: mean(total),
            intra_reduce_scatter_us: mean(sums[0]),
            inter_all_reduce_us: mean(sums[1]),
            intra_all_gather_us: mean(sums[2]),
        });
    }
    out
}

fn opt(v: Option<f64>) -> String {
    v.map(|x| format!("{x:.3}")).unwrap_or_default()
}

/// `collective_stages.csv`.
pub fn csv(rows: &[StageRow]) -> String {
    let mut s = String::from(
        "workload,ranks,size_bytes,iterations,completed,time_us,intra_reduce_scatter_us,inter_all_reduce_us,intra_all_gather_us\n",
    );
    for r in rows {
        let _ = writeln!(
            s,
            "{},{},{},{},{},{},{},{},{}",
            r.workload,
            r.ranks,
            r.size_bytes,
            r.iterations,
            r.completed,
            opt(r.time_us),
            opt(r.intra_reduce_scatter_us),
            opt(r.inter_all_reduce_us),
            opt(r.intra_all_gather_us),
        );
    }
    s
}

/// The terminal table (empty when there are no rows).
pub fn table(rows: &[StageRow]) -> String {
    let mut o = String::new();
    if rows.is_empty() {
        return o;
    }
    let _ = writeln!(
        o,
        "\nhierarchical stages (us, mean over iterations; first start to last delivery of each stage)"
    );
    let _ = writeln!(
        o,
        "  {:<16}{:>14}{:>12}{:>12}{:>12}{:>12}",
        "workload", "size (B)", "total", "intra RS", "inter AR", "intra AG"
    );
    let cell = |v: Option<f64>| v.map(|x| format!("{x:.2}")).unwrap_or_else(|| "-".into());
    for r in rows {
        let _ = writeln!(
            o,
            "  {:<16}{:>14}{:>12}{:>12}{:>12}{:>12}",
            r.workload,
            r.size_bytes,
            cell(r.time_us),
            cell(r.intra_reduce_scatter_us),
            cell(r.inter_all_reduce_us),
            cell(r.intra_all_gather_us),
        );
    }
    o
}
