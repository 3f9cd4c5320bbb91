//! Training-step results (`fabrics::collectives::training`): per workload the step time and
//! the exposed communication time (step time minus the compute phase: what the AllReduces
//! add to it), as `training.csv`, the `training` section of `summary.json` and a table in the
//! terminal.

use fabrics::collectives::flows::instance_span;
use fabrics::collectives::training::step_span;
use fabrics::engine::Fabric;
use serde::Serialize;
use std::fmt::Write as _;

use crate::build::TrainingRun;

/// One training-step workload.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct TrainingRow {
    pub workload: String,
    pub ranks: u32,
    pub algorithm: &'static str,
    pub gradient_bytes: u64,
    pub bucket_bytes: u64,
    pub buckets: u32,
    pub overlap: bool,
    /// The compute phase per step, microseconds.
    pub compute_us: f64,
    /// Steps run and completed.
    pub steps: u32,
    pub completed: u32,
    /// Mean, min and max step time of the completed steps, microseconds.
    pub step_time_us: Option<f64>,
    pub min_step_time_us: Option<f64>,
    pub max_step_time_us: Option<f64>,
    /// Mean step time minus the compute phase, microseconds.
    pub exposed_comm_us: Option<f64>,
    /// Mean time of one bucket AllReduce (from its start: gradients ready and the previous
    /// bucket done), microseconds.
    pub bucket_allreduce_us: Option<f64>,
}

/// The rows of a finished run; `names[i]` is workload `i`'s name.
pub fn rows(fabric: &Fabric, runs: &[TrainingRun], names: &[String]) -> Vec<TrainingRow> {
    let us = |ps: u128| ps as f64 / 1e6;
    let recs = fabric.flow_records();
    let of = |i: usize| fabric.flow_of_input(i);
    runs.iter()
        .map(|r| {
            let times: Vec<u128> = r
                .steps
                .iter()
                .filter_map(|s| step_span(s, recs, of))
                .map(|(a, b)| b.since(a).ps() as u128)
                .collect();
            let buckets: Vec<u128> = r
                .buckets
                .iter()
                .filter_map(|b| instance_span(b, recs, of))
                .map(|(a, b)| b.since(a).ps() as u128)
                .collect();
            let mean = |v: &[u128]| (!v.is_empty()).then(|| v.iter().sum::<u128>() / v.len() as u128);
            let step_mean = mean(&times);
            let compute = r.step.compute.ps() as u128;
            TrainingRow {
                workload: names.get(r.workload).cloned().unwrap_or_default(),
                ranks: r.step.allreduce.n_ranks,
                algorithm: crate::collective_report::algo_name(r.step.allreduce.algorithm),
                gradient_bytes: r.step.gradient_bytes,
                bucket_bytes: r.step.bucket_bytes,
                buckets: r.step.buckets().len() as u32,
                overlap: r.step.overlap,
                compute_us: us(compute),
                steps: r.step.steps,
                completed: times.len() as u32,
                step_time_us: step_mean.map(us),
                min_step_time_us: times.iter().min().map(|&t| us(t)),
                max_step_time_us: times.iter().max().map(|&t| us(t)),
                exposed_comm_us: step_mean.map(|t| us(t.saturating_sub(compute))),
                bucket_allreduce_us: mean(&buckets).map(us),
            }
        })
        .collect()
}

fn opt(v: Option<f64>) -> String {
    v.map(|x| format!("{x:.3}")).unwrap_or_default()
}

/// `training.csv`.
pub fn csv(rows: &[TrainingRow]) -> String {
    let mut s = String::from(
        "workload,ranks,algorithm,gradient_bytes,bucket_bytes,buckets,overlap,compute_us,steps,completed,step_time_us,min_step_time_us,max_step_time_us,exposed_comm_us,bucket_allreduce_us\n",
    );
    for r in rows {
        let _ = writeln!(
            s,
            "{},{},{},{},{},{},{},{:.3},{},{},{},{},{},{},{}",
            r.workload,
            r.ranks,
            r.algorithm,
            r.gradient_bytes,
            r.bucket_bytes,
            r.buckets,
            r.overlap,
            r.compute_us,
            r.steps,
            r.completed,
            opt(r.step_time_us),
            opt(r.min_step_time_us),
            opt(r.max_step_time_us),
            opt(r.exposed_comm_us),
            opt(r.bucket_allreduce_us),
        );
    }
    s
}

/// The terminal table.
pub fn table(rows: &[TrainingRow]) -> String {
    let mut o = String::new();
    if rows.is_empty() {
        return o;
    }
    let _ = writeln!(o, "\ntraining steps (time = mean over steps)");
    let _ = writeln!(
        o,
        "  {:<16}{:>6}{:>9}{:>9}{:>14}{:>16}{:>18}",
        "workload", "ranks", "buckets", "overlap", "compute (us)", "step time (us)", "exposed comm (us)"
    );
    for r in rows {
        let _ = writeln!(
            o,
            "  {:<16}{:>6}{:>9}{:>9}{:>14.2}{:>16}{:>18}",
            r.workload,
            r.ranks,
            r.buckets,
            r.overlap,
            r.compute_us,
            r.step_time_us.map(|t| format!("{t:.2}")).unwrap_or_else(|| "-".into()),
            r.exposed_comm_us
                .map(|t| format!("{t:.2}"))
                .unwrap_or_else(|| "-".into()),
        );
    }
    o
}
