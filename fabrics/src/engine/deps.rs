//! Flows with dependencies: the engine side of collective message DAGs.
//!
//! A flow with dependencies starts `gap` after the last of its dependencies has been fully
//! delivered (a collective step: "send after receive, plus the local reduction"). A flow
//! without dependencies is an ordinary timed flow and keeps the sorted arrival path, so a
//! workload without dependencies pays nothing: no extra event, no extra state per packet.
//!
//! ## State (flat arrays, built once)
//! - `pending[f]`: dependencies of `f` not yet delivered;
//! - `gap[f]`: the compute gap of `f`;
//! - the dependents of `f` in CSR form: `dependents[off[f]..off[f + 1]]`.
//!
//! When a flow completes, each dependent's counter drops by one; at zero the dependent's start
//! is scheduled as an [`Ev::FlowStart`](super::Ev::FlowStart) event at `now + gap` with the
//! workload's origin (FIFO among same-time starts). No allocation happens per event. A flow of
//! 0 bytes completes the moment it starts (a pure synchronisation) and releases its dependents
//! in turn. Flows caught in a dependency cycle never start: the run drains and reports them
//! incomplete (the DAG generators refuse cycles before they get here).

use sim_core::Duration;

/// Dependencies of flows, indexed by the flows' *input* order (the order given to
/// [`Fabric::with_deps`](super::Fabric::with_deps)). Empty (`off` empty) = no dependencies.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FlowDeps {
    /// CSR offsets: flow `i` depends on `deps[off[i]..off[i + 1]]`; `off.len() = flows + 1`.
    pub off: Vec<u32>,
    /// Input indices of the flows depended on.
    pub deps: Vec<u32>,
    /// Per flow: the delay between its last dependency's delivery and its start.
    pub gap: Vec<Duration>,
}

impl FlowDeps {
    /// True when no flow has a dependency table (all flows are timed).
    pub fn is_empty(&self) -> bool {
        self.off.is_empty()
    }

    /// Appends the next flow's dependencies (input indices) and gap.
    pub fn push(&mut self, deps: &[u32], gap: Duration) {
        if self.off.is_empty() {
            self.off.push(0);
        }
        self.deps.extend_from_slice(deps);
        self.off.push(self.deps.len() as u32);
        self.gap.push(gap);
    }

    /// Appends `n` flows without dependencies.
    pub fn push_independent(&mut self, n: usize) {
        for _ in 0..n {
            self.push(&[], Duration::ZERO);
        }
    }

    /// Number of flows described.
    pub fn len(&self) -> usize {
        self.off.len().saturating_sub(1)
    }

    /// Dependencies of input flow `i`.
    pub fn of(&self, i: usize) -> &[u32] {
        &self.deps[self.off[i] as usize..self.off[i + 1] as usize]
    }

    /// Checks the table against `n_flows` flows.
    pub fn check(&self, n_flows: usize) -> Result<(), String> {
        if self.is_empty() {
            return Ok(());
        }
        if self.len() != n_flows || self.gap.len() != n_flows {
            return Err(format!(
                "dependency table describes {} flows, but there are {n_flows}",
                self.len()
            ));
        }
        if self.off.windows(2).any(|w| w[0] > w[1]) || *self.off.last().unwrap_or(&0) as usize != self.deps.len() {
            return Err("dependency table offsets are not monotone".into());
        }
        for i in 0..n_flows {
            if let Some(&d) = self.of(i).iter().find(|&&d| d as usize >= n_flows || d as usize == i) {
                return Err(format!("flow {i} depends on {d}, which is not another flow"));
            }
        }
        Ok(())
    }
}

/// The engine's dependency state, indexed by engine flow id (see the module docs).
#[derive(Debug, Default)]
pub(super) struct DepState {
    pub pending: Vec<u32>,
    pub gap: Vec<Duration>,
    pub off: Vec<u32>,
    pub dependents: Vec<u32>,
}

impl DepState {
    /// Builds the state from `deps` (input indices) and `input_to_flow` (input index -> engine
    /// flow id); `order[new] = input`.
    pub fn new(deps: &FlowDeps, order: &[u32], input_to_flow: &[u32]) -> DepState {
        if deps.is_empty() {
            return DepState::default();
        }
        let n = order.len();
        let mut pending = vec![0u32; n];
        let mut gap = vec![Duration::ZERO; n];
        let mut off = vec![0u32; n + 1];
        for (new, &inp) in order.iter().enumerate() {
            let ds = deps.of(inp as usize);
            pending[new] = ds.len() as u32;
            gap[new] = deps.gap[inp as usize];
            for &d in ds {
                off[input_to_flow[d as usize] as usize + 1] += 1;
            }
        }
        for i in 0..n {
            off[i + 1] += off[i];
        }
        let mut fill = off.clone();
        let mut dependents = vec![0u32; off[n] as usize];
        for (new, &inp) in order.iter().enumerate() {
            for &d in deps.of(inp as usize) {
                let src = input_to_flow[d as usize] as usize;
                dependents[fill[src] as usize] = new as u32;
                fill[src] += 1;
            }
        }
        DepState {
            pending,
            gap,
            off,
            dependents,
        }
    }

    /// True when the fabric has no dependent flows at all.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.off.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csr_of_dependents_follows_the_permutation() {
        let mut d = FlowDeps::default();
        d.push(&[], Duration::ZERO); // input 0
        d.push(&[0], Duration::from_ns(5)); // input 1
        d.push(&[0, 1], Duration::ZERO); // input 2
        d.check(3).unwrap();
        // Engine order: input 0 first, then the dependent ones.
        let order = [0u32, 1, 2];
        let inv = [0u32, 1, 2];
        let s = DepState::new(&d, &order, &inv);
        assert_eq!(s.pending, vec![0, 1, 2]);
        assert_eq!(&s.dependents[s.off[0] as usize..s.off[1] as usize], &[1, 2]);
        assert_eq!(&s.dependents[s.off[1] as usize..s.off[2] as usize], &[2]);
        assert_eq!(s.gap[1], Duration::from_ns(5));
        let mut bad = d.clone();
        bad.deps[0] = 1;
        assert!(bad.check(3).unwrap_err().contains("flow 1 depends on 1"));
        assert!(d.check(4).is_err());
    }
}
