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

/// The pipeline at a block boundary of the ideal run: every port's state, the last delivery,
/// and the period the block was cut by.
type Block = (Vec<(u32, Hop)>, SimTime, u64);

/// Longest block of packets the ideal run looks for a period over; beyond it every packet is
/// pushed (exact, only slower).
const MAX_PERIOD: u64 = 1 << 16;

/// The per-packet choices a flow's packets met: the period of their pattern so far.
struct Choices {
    /// Least common multiple of the next-hop counts where packets choose.
    period: u64,
    /// A packet's second hop started or finished when the source port's packet let it, not
    /// when its own port was free, since the last block boundary.
    source_led: bool,
}

impl Choices {
    /// A packet chose among `n` next hops.
    fn saw(&mut self, n: u64) {
        if !self.period.is_multiple_of(n) {
            self.period = (self.period * n / gcd(self.period, n)).min(MAX_PERIOD + 1);
        }
    }
}

fn gcd(mut a: u64, mut b: u64) -> u64 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
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
        let (fct_ps, stages, _) = self.ideal_run_with(flow, true);
        (fct_ps, stages)
    }

    /// [`Fabric::ideal_run`], skipping the periodic part of the pipeline (`skip`) or pushing
    /// every packet (the reference the skip is tested against); also returns the number of
    /// packets pushed.
    ///
    /// The step from one block of `period` full packets to the next is shift-invariant: every
    /// packet is ready at time 0, so each start is a port's free time, and the per-packet
    /// choices repeat with the block (NVLink interleaving picks by packet index modulo the
    /// number of next hops; least-loaded picks compare free times, unchanged by a common
    /// shift). `period` is the least common multiple of the next-hop counts where packets
    /// choose (1 on a fixed path). So once two consecutive blocks move every port's state and
    /// the delivery by the same amount `shift`, with no port added, every later block does
    /// too: the remaining whole blocks are skipped exactly, and a 1 GB flow costs a few
    /// blocks, not 250,000 packets. (A port not yet used stays free at time 0, below every
    /// shifted time; the block that moved everything did not take it, so no later block does.)
    ///
    /// The source port may move by less than `shift` (a GPU's attachment or a NIC faster than
    /// the bottleneck further on): its packets start back to back, so it moves by the same
    /// amount every block and gets further ahead of the rest each time. Its times reach the
    /// rest only through the second hop's start (`max(ready, free)`) and end
    /// (`max(serialized, upstream tail)`); if in the last block none of those was decided by
    /// the source's value, then in later blocks, where that value is smaller still against
    /// the other, none is either, and the rest moves by `shift` as before.
    fn ideal_run_with(&self, flow: u32, skip: bool) -> (u64, Vec<BTreeSet<u32>>, u64) {
        let f = &self.flows[flow as usize];
        let size = f.size.get();
        let mtu = self.cfg.mtu_bytes as u64;
        let header = self.cfg.header_bytes;
        let source = self.nics[f.src as usize].port;
        let mut hops = BTreeMap::new();
        let mut stages = Vec::new();
        let (mut left, mut index, mut pushed) = (size, 0u32, 0u64);
        let mut delivered = SimTime::ZERO;
        let mut choices = Choices {
            period: 1,
            source_led: false,
        };
        // The state at the last block boundary, with the period it was taken under.
        let mut last_block: Option<Block> = None;
        while left > 0 {
            let payload = left.min(mtu) as u32;
            left -= payload as u64;
            pushed += 1;
            match self.push_packet(
                flow,
                index,
                (&mut hops, &mut stages),
                &mut choices,
                payload,
                payload + header,
            ) {
                Some(t) => delivered = t,
                None => return (0, stages, pushed),
            }
            index += 1;
            let period = choices.period;
            if !skip
                || payload as u64 != mtu
                || left < mtu
                || period > MAX_PERIOD
                || !(index as u64).is_multiple_of(period)
            {
                continue;
            }
            let source_led = std::mem::replace(&mut choices.source_led, false);
            let now: Vec<(u32, Hop)> = hops.iter().map(|(&p, &h)| (p, h)).collect();
            if let Some((before, delivered_before, p)) = &last_block
                && *p == period
                && before.len() == now.len()
            {
                let shift = delivered.ps() - delivered_before.ps();
                let moved = |a: &Hop, b: &Hop| {
                    let by = b.busy_until.ps().checked_sub(a.busy_until.ps())?;
                    (b.last_arrive.ps().checked_sub(a.last_arrive.ps()) == Some(by)).then_some(by)
                };
                let mut source_shift = None;
                let periodic = before.iter().zip(&now).all(|((pa, a), (pb, b))| {
                    let by = moved(a, b);
                    if *pa != *pb {
                        false
                    } else if *pa == source {
                        source_shift = by;
                        by.is_some_and(|by| by == shift || (by < shift && !source_led))
                    } else {
                        by == Some(shift)
                    }
                });
                if periodic {
                    let blocks = left / mtu / period;
                    for (&p, h) in hops.iter_mut() {
                        let by = if p == source {
                            source_shift.unwrap_or(shift)
                        } else {
                            shift
                        };
                        h.busy_until += sim_core::Duration(by * blocks);
                        h.last_arrive += sim_core::Duration(by * blocks);
                    }
                    delivered += sim_core::Duration(shift * blocks);
                    left -= blocks * period * mtu;
                    index += (blocks * period) as u32;
                    last_block = None;
                    continue;
                }
            }
            last_block = Some((now, delivered, period));
        }
        (delivered.ps(), stages, pushed)
    }

    /// Packet `index` of `flow` through the idle fabric (the state of the ports it uses is in
    /// `hops`), starting at time 0 or when the source port is free; returns its delivery
    /// time, `None` on a dead end or a loop.
    fn push_packet(
        &self,
        flow: u32,
        index: u32,
        (hops, stages): (&mut BTreeMap<u32, Hop>, &mut Vec<BTreeSet<u32>>),
        choices: &mut Choices,
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
            let serialized = start + serialization_time(Bytes(bytes), port.rate);
            if depth == 1 && (ready > hop.busy_until || upstream_tail > serialized) {
                // The second hop waited for the source port (see `ideal_run_with`).
                choices.source_led = true;
            }
            let done = serialized.max(upstream_tail);
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
            p = self.ideal_next_hop(node, f.dst, hash, index, hops, choices)?;
        }
        None
    }

    /// The egress port a packet takes at `node` in the idle fabric: the engine's own choice
    /// where it is per flow (ECMP, D-mod-k); where it is per packet, NVLink's interleaving
    /// by packet index over links to different chips, else the link that is free first (the
    /// least-loaded link of an idle fabric), ties in the flow hash's order.
    fn ideal_next_hop(
        &self,
        node: u32,
        dst: u32,
        hash: u64,
        index: u32,
        hops: &BTreeMap<u32, Hop>,
        choices: &mut Choices,
    ) -> Option<u32> {
        let next = self.routes.next_hops(node, dst);
        if next.is_empty() {
            return None;
        }
        if next.len() == 1 || !self.per_packet_choice(node) {
            return Some(self.route(node, dst, hash));
        }
        choices.saw(next.len() as u64);
        let base = self.port_base[node as usize];
        let port_of = |j: usize| base + next[j] as u32;
        let start = crate::routing::ecmp_pick(next.len(), hash, self.ecmp_seed[node as usize]);
        if self.ib.is_some() && self.interleaves(node, next) {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{EngineConfig, RoutePick};
    use crate::routing::Routes;
    use crate::topology::{LinkInfo, LinkKind, Topology, fat_tree, hgx};
    use crate::traffic::FlowSpec;
    use sim_core::Duration;

    fn flow(src: u32, dst: u32, bytes: u64) -> FlowSpec {
        FlowSpec {
            src,
            dst,
            size: Bytes(bytes),
            ..Default::default()
        }
    }

    fn link(gbps: u64) -> LinkInfo {
        LinkInfo {
            rate: BitsPerSec::from_gbps(gbps),
            delay: Duration::from_ns(500),
            kind: LinkKind::Network,
        }
    }

    /// Every flow's ideal is the same skipping or pushing every packet (exact: the same
    /// picoseconds and stages); returns the share of packets the skip pushed, over all flows.
    /// (These paths settle within a block, so the skip's conditions are the theory's guard
    /// against a pipeline still filling; what is checked here is that it is exact and fires.)
    fn pushed_share(topo: &Topology, cfg: EngineConfig, flows: Vec<FlowSpec>) -> f64 {
        let fabric = Fabric::new(topo, Routes::ecmp(topo), cfg, flows).expect("valid engine inputs");
        let (mut skipping, mut all) = (0, 0);
        for f in 0..fabric.flows.len() as u32 {
            let (fct, stages, n) = fabric.ideal_run_with(f, true);
            let (fct_all, stages_all, n_all) = fabric.ideal_run_with(f, false);
            assert_eq!((fct, stages), (fct_all, stages_all), "flow {f}");
            assert!(fct > 0, "flow {f} has an ideal");
            (skipping, all) = (skipping + n, all + n_all);
        }
        skipping as f64 / all as f64
    }

    #[test]
    fn sprayed_nvlink_flows_skip_whole_periods_exactly() {
        // Interleaving over 18 links to 4 chips, least-loaded over each chip's 4 or 5 links
        // (period 180), from a GPU attachment faster than its NVLinks (the source leads).
        let topo = hgx::hgx(&hgx::HgxSpec::h100()).expect("an HGX H100");
        let flows = vec![flow(0, 3, 4 << 20), flow(2, 7, (1 << 20) + 12_345), flow(5, 1, 3_000)];
        let share = pushed_share(&topo, EngineConfig::nvlink(), flows);
        assert!(share < 0.2, "pushed {share:.3} of the packets");
    }

    fn ethernet(route_pick: RoutePick) -> EngineConfig {
        EngineConfig {
            mtu_bytes: 4000,
            header_bytes: 64,
            route_pick,
            ..Default::default()
        }
    }

    #[test]
    fn fixed_paths_skip_with_a_leading_or_a_bottleneck_source() {
        let cfg = ethernet(RoutePick::Ecmp);
        let flows = || vec![flow(0, 15, 4_000_000), flow(3, 9, 2_000_123)];
        // NIC faster than the network: the source port leads.
        let fast_nic = fat_tree::build(4, link(400), link(100)).expect("a k=4 fat-tree");
        let share = pushed_share(&fast_nic, cfg.clone(), flows());
        assert!(share < 0.05, "pushed {share:.3} of the packets");
        // NIC the bottleneck: every port moves alike.
        let slow_nic = fat_tree::build(4, link(100), link(400)).expect("a k=4 fat-tree");
        let share = pushed_share(&slow_nic, cfg, flows());
        assert!(share < 0.05, "pushed {share:.3} of the packets");
    }

    #[test]
    fn adaptive_routing_ideals_are_exact() {
        let cfg = ethernet(RoutePick::Adaptive);
        let topo = fat_tree::build(4, link(400), link(100)).expect("a k=4 fat-tree");
        pushed_share(&topo, cfg, vec![flow(0, 15, 3_000_000), flow(6, 2, 1_000_001)]);
    }
}
