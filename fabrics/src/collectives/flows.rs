//! From message DAGs to engine flows: a collective (or a size sweep of it, each size repeated
//! `iterations` times) becomes flows with dependencies ([`crate::engine::FlowDeps`]), and
//! after the run the flow records give each instance's completion time.
//!
//! ## Mapping
//! - Message `m` of a DAG becomes one flow from `endpoint_host[src]` to `endpoint_host[dst]`
//!   with the message's bytes, dependencies and gap. Rank `r` is usually host `r`; a switch
//!   endpoint (NVLS) is the host that stands for the NVSwitch domain (see
//!   `crate::topology::nvlink_shapes::add_nvls_endpoint`).
//! - Instances run back to back, as nccl-tests does: instance `k + 1` starts when the last
//!   message of instance `k` is delivered. A zero-byte *barrier* flow (rank 0 to rank 1) that
//!   depends on every sink message of instance `k` (those nothing depends on) is the only
//!   dependency of instance `k + 1`'s root messages; it costs `sinks + roots` dependency
//!   edges rather than their product, and completes the moment it starts (no packet).
//! - The first instance's root messages are ordinary timed flows starting at `start + gap`.
//!
//! An instance's time runs from its start (the workload start, or its barrier's completion) to
//! its last delivery: nccl-tests' per-iteration time without kernel launch overheads.

use sim_core::{Duration, SimTime};

use super::{CollectiveSpec, DagError, DagLimits, MessageDag, generate};
use crate::engine::{FlowDeps, FlowRecord};
use crate::traffic::FlowSpec;

/// One run of a collective at one size.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Instance {
    /// The generating spec (its `bytes` is this instance's size).
    pub spec: CollectiveSpec,
    /// Iteration number at this size, from 0.
    pub iteration: u32,
    /// Input index of the barrier flow this instance starts after (`None` for the first).
    pub barrier: Option<u32>,
    /// Input indices `first_flow..first_flow + n_flows` are this instance's messages.
    pub first_flow: u32,
    pub n_flows: u32,
    /// When the workload starts (used by the first instance).
    pub start: SimTime,
}

/// Flows, their dependencies and the instances they belong to, in input order.
#[derive(Clone, Debug, Default)]
pub struct FlowPlan {
    pub flows: Vec<FlowSpec>,
    pub deps: FlowDeps,
    pub instances: Vec<Instance>,
}

/// Limits on what a collective workload may generate.
#[derive(Clone, Copy, Debug)]
pub struct PlanLimits {
    /// Most flows of the whole plan.
    pub max_flows: u64,
    pub dag: DagLimits,
}

impl FlowPlan {
    /// Appends flows without dependencies (other workloads).
    pub fn push_independent(&mut self, flows: &[FlowSpec]) {
        self.flows.extend_from_slice(flows);
        self.deps.push_independent(flows.len());
    }

    /// Appends a chained workload ([`crate::traffic::generators::closed_loop`]): each flow
    /// starts after the delivery of the flow its entry names (an index into `flows`) plus
    /// the entry's gap, or at its own start when it names none.
    pub fn push_chained(&mut self, flows: &[crate::traffic::generators::ChainedFlow]) {
        let base = self.flows.len() as u32;
        for (f, dep, gap) in flows {
            self.flows.push(*f);
            match dep {
                Some(d) => self.deps.push(&[base + d], *gap),
                None => self.deps.push(&[], sim_core::Duration::ZERO),
            }
        }
    }

    /// Appends `iterations` runs of `spec` at each of `sizes`, back to back, from `start`.
    /// `endpoint_host[e]` is the host of DAG endpoint `e` (ranks, then switch endpoints);
    /// `group`/`class` tag the flows.
    #[allow(
        clippy::too_many_arguments,
        reason = "each argument is one plain fact of the placement; a struct would only rename them"
    )]
    pub fn push_collective(
        &mut self,
        spec: &CollectiveSpec,
        sizes: &[u64],
        iterations: u32,
        start: SimTime,
        endpoint_host: &[u32],
        group: u16,
        class: u8,
        limits: &PlanLimits,
    ) -> Result<(), DagError> {
        let invalid = |reason: String| DagError::InvalidSpec { reason };
        if spec.n_ranks < 2 {
            return Err(invalid("a collective needs at least 2 ranks".into()));
        }
        let mut prev_sinks: Vec<u32> = Vec::new();
        for &bytes in sizes {
            let s = CollectiveSpec { bytes, ..*spec };
            let dag = generate(&s, &limits.dag)?;
            if (dag.n_endpoints() as usize) > endpoint_host.len() {
                return Err(invalid(format!(
                    "the collective needs {} endpoints but the topology provides {}{}",
                    dag.n_endpoints(),
                    endpoint_host.len(),
                    if dag.n_switches > 0 {
                        " (NVLS needs an NVSwitch domain)"
                    } else {
                        ""
                    }
                )));
            }
            for it in 0..iterations {
                let need = self.flows.len() as u64 + dag.messages.len() as u64 + 1;
                if need > limits.max_flows {
                    return Err(DagError::TooManyMessages {
                        count: need,
                        limit: limits.max_flows,
                    });
                }
                let barrier = if prev_sinks.is_empty() {
                    None
                } else {
                    let b = self.flows.len() as u32;
                    self.flows.push(FlowSpec {
                        src: endpoint_host[0],
                        dst: endpoint_host[1],
                        size: sim_core::Bytes(0),
                        start,
                        group,
                        class,
                    });
                    self.deps.push(&prev_sinks, Duration::ZERO);
                    Some(b)
                };
                let first = self.flows.len() as u32;
                self.push_dag(&dag, first, barrier.as_slice(), start, endpoint_host, group, class);
                prev_sinks = sinks(&dag, first);
                self.instances.push(Instance {
                    spec: s,
                    iteration: it,
                    barrier,
                    first_flow: first,
                    n_flows: dag.messages.len() as u32,
                    start,
                });
            }
        }
        Ok(())
    }

    /// Appends the messages of `dag` as flows from input index `first`; its root messages
    /// depend on `roots` (none: timed flows at `start + gap`).
    #[allow(
        clippy::too_many_arguments,
        reason = "each argument is one plain fact of the placement; a struct would only rename them"
    )]
    pub(super) fn push_dag(
        &mut self,
        dag: &MessageDag,
        first: u32,
        roots: &[u32],
        start: SimTime,
        endpoint_host: &[u32],
        group: u16,
        class: u8,
    ) {
        let mut ds: Vec<u32> = Vec::new();
        for m in &dag.messages {
            ds.clear();
            ds.extend(m.deps.iter().map(|&d| first + d));
            if ds.is_empty() {
                ds.extend_from_slice(roots);
            }
            // A root of the first instance is a timed flow: its gap delays its start.
            let t = if ds.is_empty() { start + m.gap } else { start };
            self.flows.push(FlowSpec {
                src: endpoint_host[m.src as usize],
                dst: endpoint_host[m.dst as usize],
                size: sim_core::Bytes(m.bytes),
                start: t,
                group,
                class,
            });
            self.deps.push(&ds, m.gap);
        }
    }
}

/// Input indices of the messages of `dag` (placed at `first`) that nothing depends on.
pub(super) fn sinks(dag: &MessageDag, first: u32) -> Vec<u32> {
    let mut has_dependent = vec![false; dag.messages.len()];
    for m in &dag.messages {
        for &d in &m.deps {
            has_dependent[d as usize] = true;
        }
    }
    (0..dag.messages.len() as u32)
        .filter(|&i| !has_dependent[i as usize])
        .map(|i| first + i)
        .collect()
}

/// Start and end of an instance from the run's flow records (`None` if it did not finish).
/// `flow_of_input` maps input indices to engine flow ids.
pub fn instance_span(
    inst: &Instance,
    records: &[FlowRecord],
    flow_of_input: impl Fn(usize) -> u32,
) -> Option<(SimTime, SimTime)> {
    let rec = |i: u32| &records[flow_of_input(i as usize) as usize];
    let start = match inst.barrier {
        None => inst.start,
        Some(b) => rec(b).finish?,
    };
    let mut end = start;
    for i in inst.first_flow..inst.first_flow + inst.n_flows {
        end = end.max(rec(i).finish?);
    }
    Some((start, end))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::collectives::{Algorithm, CollectiveKind};

    #[test]
    fn instances_chain_through_barriers() {
        let spec = CollectiveSpec::new(CollectiveKind::AllReduce, Algorithm::Ring, 4, 0);
        let mut plan = FlowPlan::default();
        plan.push_independent(&[FlowSpec::default()]);
        let limits = PlanLimits {
            max_flows: 1000,
            dag: DagLimits::DEFAULT,
        };
        plan.push_collective(&spec, &[400, 800], 2, SimTime::ZERO, &[0, 1, 2, 3], 1, 0, &limits)
            .unwrap();
        assert_eq!(plan.instances.len(), 4);
        assert_eq!(plan.flows.len(), plan.deps.len());
        plan.deps.check(plan.flows.len()).unwrap();
        let i1 = &plan.instances[1];
        let b = i1.barrier.unwrap() as usize;
        assert_eq!(plan.flows[b].size.get(), 0);
        // The barrier waits for the 4 sinks of instance 0; instance 1's roots wait for it.
        assert_eq!(plan.deps.of(b).len(), 4);
        let roots = (i1.first_flow..i1.first_flow + i1.n_flows)
            .filter(|&i| plan.deps.of(i as usize) == [b as u32])
            .count();
        assert_eq!(roots, 4);
        assert_eq!(plan.instances[3].spec.bytes, 800);
        let one = CollectiveSpec { n_ranks: 1, ..spec };
        assert!(
            plan.push_collective(&one, &[8], 1, SimTime::ZERO, &[0], 1, 0, &limits)
                .is_err()
        );
    }
}
