//! The ideal completion time of a flow: the flow alone on its own path, for FCT slowdown.
//!
//! The path is the one [`Fabric::flow_path`] gives (the ECMP / D-mod-k choices of its
//! packets; for adaptively routed or sprayed flows, the hash's first choice). The flow's packets
//! are cut as the NIC cuts them (payload up to the MTU plus `header_bytes`) and pushed through
//! the path with the engine's own timing rules and no other traffic: each hop serializes a
//! packet in its link's framing at its rate once the packet is in (cut-through devices: once its
//! head is in, and never before the upstream tail), then propagation and the far device's
//! latency. So the ideal is the serialization of every packet with headers at the bottleneck,
//! plus the pipeline fill of the other hops, propagation and switch/endpoint latencies; a flow
//! that met no other traffic and no flow-control stall has slowdown exactly 1. Pure
//! arithmetic over the configuration: no event, no state of the run is read but the route.

use super::Fabric;
use sim_core::{BitsPerSec, Bytes, SimTime, serialization_time};
use std::collections::{BTreeMap, BTreeSet};

/// A flow's path and its ideal completion time.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IdealPath {
    /// Egress ports crossed, source NIC first.
    pub ports: Vec<u32>,
    /// Completion time of the flow alone on `ports`, in ps (0 for an empty flow).
    pub ideal_fct_ps: u64,
    /// The slowest link of the path, internal attachments (never a bottleneck) excepted when
    /// the path has other links; where a node spreads packets over parallel next hops (NVLink
    /// spraying, adaptive routing), that stage counts with their summed rates.
    pub bottleneck: BitsPerSec,
}

/// Per-port pipeline state while the packets go through.
#[derive(Clone, Copy, Default)]
struct Hop {
    busy_until: SimTime,
    last_arrive: SimTime,
}

impl Fabric {
    /// Path and ideal FCT of flow `flow` (engine flow id, as in [`Fabric::flow_records`]);
    /// `None` when the flow's route is not a path to its destination.
    pub fn flow_ideal(&self, flow: u32) -> Option<IdealPath> {
        let ports = self.try_flow_path(flow)?;
        let (mut ideal_fct_ps, stages) = self.ideal_run(flow);
        let f = &self.flows[flow as usize];
        if f.size.get() > 0 {
            // The endpoints' own processing: before the first packet and after the last.
            ideal_fct_ps += self.host_latency[f.src as usize].tx.ps() + self.host_latency[f.dst as usize].rx.ps();
        }
        // Capacity of each stage: the summed rates of the links its packets used there.
        let rate = |set: &BTreeSet<u32>| BitsPerSec(set.iter().map(|&p| self.ports[p as usize].rate.get()).sum());
        let external = |set: &&BTreeSet<u32>| set.iter().any(|&p| !self.internal_port[p as usize]);
        let bottleneck = stages
            .iter()
            .filter(external)
            .map(rate)
            .min()
            .or_else(|| stages.iter().map(rate).min())
            .unwrap_or_else(|| {
                ports
                    .iter()
                    .map(|&p| self.ports[p as usize].rate)
                    .min()
                    .unwrap_or_default()
            });
        Some(IdealPath {
            ports,
            ideal_fct_ps,
            bottleneck,
        })
    }

    /// Node `node` chooses among its next hops per packet (spraying or adaptive routing).
    fn per_packet_choice(&self, node: u32) -> bool {
        self.spray[node as usize] || self.cfg.route_pick == super::RoutePick::Adaptive
    }

    /// Time from the first packet's start to the last packet's delivery of flow `flow` alone
    /// in the fabric (0 for an empty or unroutable flow), and the ports its packets used at
    /// each hop (stage) of their path.
    fn ideal_run(&self, flow: u32) -> (u64, Vec<BTreeSet<u32>>) {
        let f = &self.flows[flow as usize];
        let size = f.size.get();
        let mtu = self.cfg.mtu_bytes as u64;
        let header = self.cfg.header_bytes;
        let mut hops = BTreeMap::new();
        let mut stages = Vec::new();
        let (mut left, mut index) = (size, 0u32);
        let mut delivered = SimTime::ZERO;
        // Where every packet takes the same ports, the pipeline of equal packets settles into a
        // period: the step from one full packet to the next is a time shift, and the step is
        // shift-invariant (every packet is ready at time 0, so each start is a port's free
        // time), so once two consecutive steps move every port's state and the delivery by
        // the same amount, every later full packet does too. The remaining full packets are
        // then skipped exactly; a 1 GB flow costs a few packets, not 250,000.
        let fixed_path = !self.try_flow_path(flow).is_some_and(|ports| {
            ports
                .iter()
                .any(|&p| self.per_packet_choice(self.ports[p as usize].peer_node))
        });
        let mut last_step: Option<(Vec<Hop>, SimTime)> = None;
        while left > 0 {
            let payload = left.min(mtu) as u32;
            left -= payload as u64;
            match self.push_packet(flow, index, (&mut hops, &mut stages), payload, payload + header) {
                Some(t) => delivered = t,
                None => return (0, stages),
            }
            index += 1;
            if !fixed_path || payload as u64 != mtu || left < mtu {
                continue;
            }
            let now: Vec<Hop> = hops.values().copied().collect();
            if let Some((before, delivered_before)) = &last_step
                && before.len() == now.len()
            {
                let shift = delivered.ps() - delivered_before.ps();
                let shifted = |a: SimTime, b: SimTime| b.ps().checked_sub(a.ps()) == Some(shift);
                if before
                    .iter()
                    .zip(&now)
                    .all(|(a, b)| shifted(a.busy_until, b.busy_until) && shifted(a.last_arrive, b.last_arrive))
                {
                    let skip = left / mtu;
                    let by = sim_core::Duration(shift * skip);
                    for h in hops.values_mut() {
                        h.busy_until += by;
                        h.last_arrive += by;
                    }
                    delivered += by;
                    left -= skip * mtu;
                    index += skip as u32;
                    last_step = None;
                    continue;
                }
            }
            last_step = Some((now, delivered));
        }
        (delivered.ps(), stages)
    }

    /// Packet `index` of `flow` through the idle fabric (the state of the ports it uses is in
    /// `hops`), starting at time 0 or when the source port is free; returns its delivery
    /// time, `None` on a dead end or a loop.
    fn push_packet(
        &self,
        flow: u32,
        index: u32,
        (hops, stages): (&mut BTreeMap<u32, Hop>, &mut Vec<BTreeSet<u32>>),
        payload: u32,
        wire: u32,
    ) -> Option<SimTime> {
        let f = &self.flows[flow as usize];
        let hash = self.flow_hash_of(flow);
        let mut ready = SimTime::ZERO;
        let mut upstream_tail = SimTime::ZERO;
        let mut p = self.nics[f.src as usize].port;
        for depth in 0..=self.ports.len() {
            if stages.len() == depth {
                stages.push(BTreeSet::new());
            }
            stages[depth].insert(p);
            let port = &self.ports[p as usize];
            let hop = hops.entry(p).or_default();
            let start = ready.max(hop.busy_until);
            let bytes = port.framing.wire_bytes(payload, wire) as u64;
            let done = (start + serialization_time(Bytes(bytes), port.rate)).max(upstream_tail);
            hop.busy_until = done;
            upstream_tail = done + port.delay;
            let head_in = if port.peer_device.cut_through() { start } else { done };
            let arrive = (head_in + port.delay + port.peer_latency).max(hop.last_arrive);
            hop.last_arrive = arrive;
            ready = arrive;
            let node = port.peer_node;
            if self.is_host[node as usize] {
                return (self.host_of_node[node as usize] == f.dst).then_some(arrive);
            }
            p = self.ideal_next_hop(node, f.dst, hash, index, hops)?;
        }
        None
    }

    /// The egress port a packet takes at `node` in the idle fabric: the engine's own choice
    /// where it is per flow (ECMP, D-mod-k); where it is per packet, NVLink's interleaving
    /// by packet index over links to different chips, else the link that is free first (the
    /// least-loaded link of an idle fabric), ties in the flow hash's order.
    fn ideal_next_hop(&self, node: u32, dst: u32, hash: u64, index: u32, hops: &BTreeMap<u32, Hop>) -> Option<u32> {
        let next = self.routes.next_hops(node, dst);
        if next.is_empty() {
            return None;
        }
        if next.len() == 1 || !self.per_packet_choice(node) {
            return Some(self.route(node, dst, hash));
        }
        let base = self.port_base[node as usize];
        let port_of = |j: usize| base + next[j] as u32;
        let start = crate::routing::ecmp_pick(next.len(), hash, self.ecmp_seed[node as usize]);
        let interleaved = self.ib.is_some()
            && self.spray[node as usize]
            && self.cfg.crossbar.striping == super::Striping::Interleaved
            && !self.internal_port[port_of(0) as usize]
            && (1..next.len())
                .any(|j| self.ports[port_of(j) as usize].peer_node != self.ports[port_of(0) as usize].peer_node);
        if interleaved {
            return Some(port_of((start + index as usize) % next.len()));
        }
        let free_at = |j: usize| hops.get(&port_of(j)).map_or(SimTime::ZERO, |h| h.busy_until);
        let pick = (0..next.len())
            .map(|k| (start + k) % next.len())
            .min_by_key(|&j| free_at(j))
            .unwrap_or(start);
        Some(port_of(pick))
    }
}
