//! A data-parallel training step (PyTorch DDP) on the dependency engine: a compute phase
//! during which the gradients become ready, cut into buckets (DDP's `bucket_cap_mb`, 25 MiB
//! by default: `models.md` §4.4), each bucket AllReduced over every rank.
//!
//! ## Timeline of one step (all times after the step's start)
//! - Gradients are produced at a uniform rate over the compute phase (**assumption**: the
//!   backward pass produces them layer by layer; `compute` stands for it, a forward pass can be
//!   added to `compute` only with `overlap = false`). Bucket `i` (0-based, in the order its
//!   gradients complete, DDP's reverse parameter order) is ready at `compute * B_i / G`, where
//!   `B_i` is the bytes of buckets `0..=i` and `G` the gradient bytes; without overlap every
//!   bucket is ready at `compute`.
//! - The AllReduces run one at a time in bucket order, as DDP issues them on one NCCL stream:
//!   bucket `i` starts when it is ready and bucket `i - 1` is done.
//! - The step ends when the compute phase and the last AllReduce are both done; the next step
//!   starts then (the optimizer needs every gradient; its own time is not modelled).
//!
//! ## Flows
//! Per step, 0-byte flows (rank 0 to rank 1, no packet) carry the timeline: a *compute-done*
//! flow and one *ready* flow per bucket (timed at `start + offset` for the first step, else
//! depending on the previous step's end with the offset as gap), a *gate* per bucket that
//! depends on its ready flow and on the previous bucket's sinks (the bucket's collective
//! instance starts when the gate completes), and a *step-end* flow that depends on the
//! compute-done flow and on the last bucket's sinks.
//!
//! `step time = end - start`; `exposed communication = step time - compute` (the part of the
//! step the AllReduces add to the compute phase).

use std::ops::Range;

use sim_core::{Bytes, Duration, SimTime};

use super::flows::{FlowPlan, Instance, PlanLimits, sinks};
use super::{CollectiveKind, CollectiveSpec, DagError, generate};
use crate::engine::FlowRecord;
use crate::traffic::FlowSpec;

/// PyTorch DDP's default bucket size: `bucket_cap_mb = 25`, times 1024 x 1024
/// (`torch/nn/parallel/distributed.py`; models.md §4.4).
pub const DDP_BUCKET_BYTES: u64 = 25 << 20;

/// Most buckets in one step.
pub const MAX_BUCKETS: u64 = 4096;

/// Most steps of one workload.
pub const MAX_STEPS: u32 = 1000;

/// A training step workload.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TrainingStep {
    /// The AllReduce of one bucket (kind must be AllReduce; `bytes` is ignored).
    pub allreduce: CollectiveSpec,
    /// Compute phase per step (gradients become ready over it).
    pub compute: Duration,
    /// Gradient bytes per step, at least 1.
    pub gradient_bytes: u64,
    /// Bucket size, at least 1 (default [`DDP_BUCKET_BYTES`]).
    pub bucket_bytes: u64,
    /// Start each bucket's AllReduce when its gradients are ready (`true`) or after compute.
    pub overlap: bool,
    /// Steps run back to back, 1..=[`MAX_STEPS`].
    pub steps: u32,
}

impl TrainingStep {
    /// Bucket sizes in issue order: full buckets, then the remainder.
    pub fn buckets(&self) -> Vec<u64> {
        let full = self.gradient_bytes / self.bucket_bytes;
        let rest = self.gradient_bytes % self.bucket_bytes;
        let mut v = vec![self.bucket_bytes; full as usize];
        if rest > 0 {
            v.push(rest);
        }
        v
    }

    /// When each bucket is ready, after the step's start (module docs).
    pub fn ready_offsets(&self) -> Vec<Duration> {
        let mut done = 0u128;
        self.buckets()
            .iter()
            .map(|&b| {
                done += b as u128;
                if self.overlap {
                    let ps = self.compute.ps() as u128 * done / self.gradient_bytes as u128;
                    Duration::from_ps(ps as u64)
                } else {
                    self.compute
                }
            })
            .collect()
    }

    fn check(&self) -> Result<(), DagError> {
        let invalid = |reason: String| Err(DagError::InvalidSpec { reason });
        if self.allreduce.kind != CollectiveKind::AllReduce {
            return invalid("a training step AllReduces its gradient buckets".into());
        }
        if self.allreduce.n_ranks < 2 {
            return invalid("a training step needs at least 2 ranks".into());
        }
        if self.gradient_bytes == 0 || self.bucket_bytes == 0 {
            return invalid("gradient and bucket sizes are at least 1 byte".into());
        }
        let n = self.gradient_bytes.div_ceil(self.bucket_bytes);
        if n > MAX_BUCKETS {
            return invalid(format!(
                "{n} buckets of {} B, over the limit of {MAX_BUCKETS}",
                self.bucket_bytes
            ));
        }
        if self.steps == 0 || self.steps > MAX_STEPS {
            return invalid(format!("expected 1..={MAX_STEPS} steps, got {}", self.steps));
        }
        Ok(())
    }
}

/// One step's flows: read its times back with [`step_span`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StepFlows {
    /// Input index of the previous step's end flow (`None` for the first step).
    pub after: Option<u32>,
    /// The workload's start (used by the first step).
    pub start: SimTime,
    /// Input index of this step's end flow.
    pub end: u32,
    /// Indices into [`FlowPlan::instances`] of this step's bucket AllReduces.
    pub buckets: Range<usize>,
}

impl FlowPlan {
    /// Appends `t.steps` training steps from `start` (module docs); returns their flows.
    /// `endpoint_host[e]` is the host of rank `e`.
    pub fn push_training(
        &mut self,
        t: &TrainingStep,
        start: SimTime,
        endpoint_host: &[u32],
        group: u16,
        class: u8,
        limits: &PlanLimits,
    ) -> Result<Vec<StepFlows>, DagError> {
        t.check()?;
        if endpoint_host.len() < t.allreduce.n_ranks as usize {
            return Err(DagError::InvalidSpec {
                reason: format!(
                    "the training step needs {} ranks but the topology provides {}",
                    t.allreduce.n_ranks,
                    endpoint_host.len()
                ),
            });
        }
        let sizes = t.buckets();
        let offsets = t.ready_offsets();
        // At most two distinct bucket sizes: generate each DAG once.
        let mut dags = Vec::with_capacity(2);
        for &b in sizes.iter().take(1).chain(sizes.last()) {
            dags.push(generate(
                &CollectiveSpec {
                    bytes: b,
                    ..t.allreduce
                },
                &limits.dag,
            )?);
        }
        let per_step: u64 = sizes
            .iter()
            .enumerate()
            .map(|(i, _)| dags[usize::from(i + 1 == sizes.len())].messages.len() as u64 + 2)
            .sum::<u64>()
            + 2;
        let need = self.flows.len() as u64 + per_step * t.steps as u64;
        if need > limits.max_flows {
            return Err(DagError::TooManyMessages {
                count: need,
                limit: limits.max_flows,
            });
        }
        let (a, b) = (endpoint_host[0], endpoint_host[1]);
        let mut out = Vec::with_capacity(t.steps as usize);
        let mut after: Option<u32> = None;
        for _ in 0..t.steps {
            // A 0-byte timeline flow: timed at start + offset in the first step, else `offset`
            // after the previous step's end.
            let marker = |plan: &mut FlowPlan, offset: Duration| -> u32 {
                let id = plan.flows.len() as u32;
                let (t0, gap) = match after {
                    None => (start + offset, Duration::ZERO),
                    Some(_) => (start, offset),
                };
                plan.flows.push(FlowSpec {
                    src: a,
                    dst: b,
                    size: Bytes(0),
                    start: t0,
                    group,
                    class,
                });
                plan.deps.push(after.as_slice(), gap);
                id
            };
            let compute_done = marker(self, t.compute);
            let first_bucket = self.instances.len();
            let mut prev_sinks: Vec<u32> = Vec::new();
            for (i, (&bytes, &off)) in sizes.iter().zip(&offsets).enumerate() {
                let ready = marker(self, off);
                // The gate waits for the bucket's gradients and the previous AllReduce.
                let gate = self.flows.len() as u32;
                let mut ds = prev_sinks.clone();
                ds.push(ready);
                self.flows.push(FlowSpec {
                    src: a,
                    dst: b,
                    size: Bytes(0),
                    start,
                    group,
                    class,
                });
                self.deps.push(&ds, Duration::ZERO);
                let dag = &dags[usize::from(i + 1 == sizes.len())];
                let first = self.flows.len() as u32;
                self.push_dag(dag, first, &[gate], start, endpoint_host, group, class);
                prev_sinks = sinks(dag, first);
                self.instances.push(Instance {
                    spec: CollectiveSpec { bytes, ..t.allreduce },
                    iteration: i as u32,
                    barrier: Some(gate),
                    first_flow: first,
                    n_flows: dag.messages.len() as u32,
                    start,
                });
            }
            let end = self.flows.len() as u32;
            prev_sinks.push(compute_done);
            self.flows.push(FlowSpec {
                src: a,
                dst: b,
                size: Bytes(0),
                start,
                group,
                class,
            });
            self.deps.push(&prev_sinks, Duration::ZERO);
            out.push(StepFlows {
                after,
                start,
                end,
                buckets: first_bucket..self.instances.len(),
            });
            after = Some(end);
        }
        Ok(out)
    }
}

/// Start and end of a step from the run's flow records (`None` if it did not finish).
pub fn step_span(
    step: &StepFlows,
    records: &[FlowRecord],
    flow_of_input: impl Fn(usize) -> u32,
) -> Option<(SimTime, SimTime)> {
    let rec = |i: u32| &records[flow_of_input(i as usize) as usize];
    let start = match step.after {
        None => step.start,
        Some(e) => rec(e).finish?,
    };
    Some((start, rec(step.end).finish?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::collectives::{Algorithm, DagLimits};

    fn step(overlap: bool) -> TrainingStep {
        TrainingStep {
            allreduce: CollectiveSpec::new(CollectiveKind::AllReduce, Algorithm::Ring, 4, 0),
            compute: Duration::from_us(100),
            gradient_bytes: 60 << 20,
            bucket_bytes: DDP_BUCKET_BYTES,
            overlap,
            steps: 2,
        }
    }

    #[test]
    fn buckets_and_ready_times_follow_the_gradients() {
        let t = step(true);
        assert_eq!(t.buckets(), vec![25 << 20, 25 << 20, 10 << 20]);
        let r = t.ready_offsets();
        assert_eq!(r[0], Duration::from_ps(100_000_000 * 25 / 60));
        assert_eq!(r[1], Duration::from_ps(100_000_000 * 50 / 60));
        assert_eq!(r[2], Duration::from_us(100));
        assert!(step(false).ready_offsets().iter().all(|&d| d == Duration::from_us(100)));
    }

    #[test]
    fn steps_chain_and_buckets_wait_for_gradients_and_their_predecessor() {
        let limits = PlanLimits {
            max_flows: 100_000,
            dag: DagLimits::DEFAULT,
        };
        let mut plan = FlowPlan::default();
        let steps = plan
            .push_training(&step(true), SimTime::ZERO, &[0, 1, 2, 3], 0, 0, &limits)
            .unwrap();
        assert_eq!(steps.len(), 2);
        assert_eq!(plan.instances.len(), 6);
        assert_eq!(plan.flows.len(), plan.deps.len());
        plan.deps.check(plan.flows.len()).unwrap();
        // First step: compute-done and ready flows are timed, without dependencies.
        assert_eq!(plan.flows[0].start, SimTime::ZERO + Duration::from_us(100));
        assert!(plan.deps.of(0).is_empty());
        // The second bucket's gate waits for its ready flow and the first bucket's sinks.
        let g1 = plan.instances[1].barrier.unwrap() as usize;
        assert_eq!(plan.deps.of(g1).len(), 4 + 1);
        // Second step: everything hangs off the first step's end.
        let e0 = steps[0].end;
        assert_eq!(steps[1].after, Some(e0));
        let c1 = (e0 + 1) as usize;
        assert_eq!(plan.deps.of(c1), [e0]);
        assert_eq!(plan.deps.gap[c1], Duration::from_us(100));
        // Limits and bad input are errors.
        let bad = TrainingStep {
            bucket_bytes: 1,
            ..step(true)
        };
        assert!(
            plan.push_training(&bad, SimTime::ZERO, &[0, 1, 2, 3], 0, 0, &limits)
                .is_err()
        );
        let tiny = PlanLimits {
            max_flows: 10,
            ..limits
        };
        assert!(
            FlowPlan::default()
                .push_training(&step(true), SimTime::ZERO, &[0, 1, 2, 3], 0, 0, &tiny)
                .is_err()
        );
    }
}
