//! Run-time PFC deadlock detection: a cycle of paused (egress port, priority) pairs, each one's
//! peer holding packets from it in the next member's paused queue.

use super::*;

/// A cyclic pause dependency found at run time.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Deadlock {
    /// The cycle: (egress port, priority), each paused by its peer, whose peer holds packets
    /// from it in the next member's queue.
    pub cycle: Vec<(u32, u8)>,
    /// When the last member of the cycle became paused (the cycle closed).
    pub formed_at: SimTime,
    /// When it was detected (at a PAUSE refresh).
    pub detected_at: SimTime,
}

impl Fabric {
    /// Searches for a cycle of paused (egress port, priority) pairs reachable from the port
    /// that port `x` (refreshing a PAUSE) holds paused.
    pub(in crate::engine) fn roce_check_deadlock(&mut self, now: SimTime, x: u32) {
        // A cycle of the search's relation is one of paused ports between switches: while
        // those form none, no search can find one (an incast refreshes its PAUSEs tens of
        // thousands of times over a tree of paused ports: the searches were a ninth of its
        // run). A flag that a new pause may have closed a cycle is cleared here once none is.
        let mut flagged = self.rr().pause_maybe_cyclic;
        while flagged != 0 {
            let prio = flagged.trailing_zeros() as u8;
            flagged &= flagged - 1;
            if !self.roce_paused_cycle_exists(prio) {
                self.rs().pause_maybe_cyclic &= !(1 << prio);
            }
        }
        if self.rr().pause_maybe_cyclic == 0 {
            return;
        }
        let mut done = std::mem::take(&mut self.rs().search_done);
        // First without looking into the queues: a cycle of the exact dependency is also one
        // of this coarser relation (paused ports of consecutive nodes), whose edges cost a
        // port's neighbours, not a scan of a queue that can hold thousands of packets (an
        // incast: the exact search alone was a fifth of its run). No coarse cycle, no deadlock.
        let found = self
            .roce_search_cycle(now, x, false, &mut done)
            .and_then(|_| self.roce_search_cycle(now, x, true, &mut done));
        let r = self.rs();
        r.search_done = done;
        if found.is_some() {
            r.deadlock = found;
        }
    }

    /// The depth-first search of [`Fabric::roce_check_deadlock`]; with `exact` false, a
    /// successor need not hold packets from its predecessor's link. `done` marks the ports
    /// whose successors are all explored.
    fn roce_search_cycle(&self, now: SimTime, x: u32, exact: bool, done: &mut Visited) -> Option<Deadlock> {
        let start = self.ports[x as usize].peer_port;
        let r = self.rr();
        let window = r.window.ps();
        // Paused long enough to count (a transient pause is not a deadlock).
        let held = |p: u32, prio: u8| {
            let i = RoceState::ix(p, prio);
            r.paused_mask[p as usize] & (1 << prio) != 0
                && !r.pfc_rx[p as usize].may_send(prio, now)
                && r.paused_since[i].ps() + window <= now.ps()
        };
        // Successors of (e, prio): egress ports of e's peer node, paused on prio, holding
        // packets of prio that came in over e's link.
        // Written into a list from `spare`, the lists of finished levels, so that a search
        // allocates only as deep as it goes.
        let mut spare: Vec<Vec<u32>> = Vec::new();
        let succ = |e: u32, prio: u8, spare: &mut Vec<Vec<u32>>| -> Vec<u32> {
            let mut out = spare.pop().unwrap_or_default();
            out.clear();
            let peer = &self.ports[e as usize];
            let node = peer.peer_node as usize;
            if self.device[node] != Device::RoceSwitch {
                return out;
            }
            let ingress = peer.peer_port;
            let (base, end) = (self.port_base[node], self.port_base[node + 1]);
            out.extend(r.paused_ports(node as u32, base, end - base, prio).filter(|&f| {
                held(f, prio) && (!exact || r.q[RoceState::ix(f, prio)].ids.iter().any(|e| e.ingress == ingress))
            }));
            out
        };
        for prio in 0..NP as u8 {
            if !held(start, prio) {
                continue;
            }
            // Depth-first search with the current path; a back edge to the path is a cycle.
            done.clear();
            let mut path: Vec<(u32, Vec<u32>)> = vec![(start, succ(start, prio, &mut spare))];
            while let Some((node_port, next)) = path.last_mut() {
                let Some(f) = next.pop() else {
                    done.insert(*node_port);
                    if let Some((_, list)) = path.pop() {
                        spare.push(list);
                    }
                    continue;
                };
                if let Some(from) = path.iter().position(|(p, _)| *p == f) {
                    let cycle: Vec<(u32, u8)> = path[from..].iter().map(|(p, _)| (*p, prio)).collect();
                    let formed_at = cycle
                        .iter()
                        .map(|&(p, pr)| r.paused_since[RoceState::ix(p, pr)])
                        .max()
                        .unwrap_or(now);
                    return Some(Deadlock {
                        cycle,
                        formed_at,
                        detected_at: now,
                    });
                }
                if !done.contains(f) {
                    let n = succ(f, prio, &mut spare);
                    path.push((f, n));
                }
            }
        }
        None
    }
}

impl Fabric {
    /// A pause of priority `prio` began on port `x`: the paused ports of `prio` between
    /// switches gained the edge node(`x`) -> peer(`x`). If the peer reaches `x`'s node over
    /// paused ports, the edge closes a cycle, and deadlock searches may find one again.
    pub(in crate::engine) fn roce_pause_began(&mut self, x: u32, prio: u8) {
        let r = self.rr();
        if !r.cfg.deadlock_detection || r.pause_maybe_cyclic & (1 << prio) != 0 {
            return;
        }
        let port = &self.ports[x as usize];
        let (from, to) = (port.node, port.peer_node);
        if self.device[from as usize] != Device::RoceSwitch || self.device[to as usize] != Device::RoceSwitch {
            return; // a host is on no cycle
        }
        let mut seen = std::mem::take(&mut self.rs().nodes_seen);
        let mut stack = std::mem::take(&mut self.rs().node_stack);
        seen.clear();
        stack.clear();
        stack.push(to);
        seen.insert(to);
        let mut closes = false;
        while let Some(n) = stack.pop() {
            if n == from {
                closes = true;
                break;
            }
            self.roce_paused_successors(n, prio, |m| {
                if !seen.contains(m) {
                    seen.insert(m);
                    stack.push(m);
                }
            });
        }
        let r = self.rs();
        r.nodes_seen = seen;
        r.node_stack = stack;
        if closes {
            r.pause_maybe_cyclic |= 1 << prio;
        }
    }

    /// Calls `f` with the switch at the far end of each port of switch `node` paused on
    /// `prio`: the node's successors over paused ports.
    fn roce_paused_successors(&self, node: u32, prio: u8, mut f: impl FnMut(u32)) {
        let r = self.rr();
        let (base, end) = (self.port_base[node as usize], self.port_base[node as usize + 1]);
        for p in r.paused_ports(node, base, end - base, prio) {
            let peer = self.ports[p as usize].peer_node;
            if self.device[peer as usize] == Device::RoceSwitch {
                f(peer);
            }
        }
    }

    /// Whether the paused ports of `prio` between switches form a cycle (a depth-first
    /// search over every switch; run at a refresh only while a new pause may have closed one,
    /// so a fabric whose paused ports keep a cycle pays this walk at each refresh until the
    /// search finds its deadlock or the cycle opens).
    fn roce_paused_cycle_exists(&self, prio: u8) -> bool {
        const NEW: u8 = 0;
        const ON_PATH: u8 = 1;
        const DONE: u8 = 2;
        let n_nodes = self.device.len();
        let mut state = vec![NEW; n_nodes];
        let successors = |n: u32| {
            let mut next = Vec::new();
            self.roce_paused_successors(n, prio, |m| next.push(m));
            next
        };
        // The path: (node, its successors not yet followed).
        let mut path: Vec<(u32, Vec<u32>)> = Vec::new();
        for root in 0..n_nodes as u32 {
            if state[root as usize] != NEW || self.device[root as usize] != Device::RoceSwitch {
                continue;
            }
            state[root as usize] = ON_PATH;
            path.push((root, successors(root)));
            while let Some((node, next)) = path.last_mut() {
                let Some(m) = next.pop() else {
                    state[*node as usize] = DONE;
                    path.pop();
                    continue;
                };
                match state[m as usize] {
                    ON_PATH => return true,
                    DONE => {}
                    _ => {
                        state[m as usize] = ON_PATH;
                        path.push((m, successors(m)));
                    }
                }
            }
        }
        false
    }
}

/// A set of ports (or nodes) cleared in O(1): one is in it when its stamp is the current one. The
/// deadlock search runs at every PAUSE refresh and reaches a few of the fabric's ports;
/// allocating and zeroing a flag per port for each search was half of a 512 -> 1 incast's
/// instructions, and a tree set of the visited ports a fifth of its time.
#[derive(Default)]
pub(super) struct Visited {
    stamp: u32,
    mark: Vec<u32>,
}

impl Visited {
    pub(super) fn new(n_ports: usize) -> Visited {
        Visited {
            stamp: 1,
            mark: vec![0; n_ports],
        }
    }

    /// Empties the set.
    fn clear(&mut self) {
        self.stamp = self.stamp.wrapping_add(1);
        if self.stamp == 0 {
            // Wrapped: stale stamps could match again.
            self.mark.fill(0);
            self.stamp = 1;
        }
    }

    fn insert(&mut self, p: u32) {
        self.mark[p as usize] = self.stamp;
    }

    fn contains(&self, p: u32) -> bool {
        self.mark[p as usize] == self.stamp
    }
}

#[cfg(test)]
mod tests {
    use super::Visited;
    use crate::engine::{Device, EngineConfig, Fabric, RoceConfig};
    use crate::routing::Routes;
    use crate::topology::{LinkInfo, LinkKind, fat_tree};
    use sim_core::{BitsPerSec, Duration, SimTime};

    /// The flag that lets refreshes skip the deadlock search keeps its promise: whenever it
    /// is clear, the paused ports between switches form no cycle (checked against a
    /// transitive closure of the paused graph), under random pauses beginning and ending on
    /// a k=4 fat-tree, where up and down ports paused together close cycles often.
    #[test]
    fn a_clear_cycle_flag_means_no_cycle_of_paused_ports() {
        let link = LinkInfo {
            rate: BitsPerSec::from_gbps(100),
            delay: Duration::from_ns(500),
            kind: LinkKind::Network,
        };
        let topo = fat_tree::build(4, link, link).expect("a k=4 fat-tree");
        let cfg = EngineConfig {
            roce: Some(RoceConfig::default()),
            ..Default::default()
        };
        let mut f = Fabric::new(&topo, Routes::ecmp(&topo), cfg, Vec::new()).expect("valid engine inputs");
        let switch_ports: Vec<u32> = (0..f.ports.len() as u32)
            .filter(|&p| f.device[f.ports[p as usize].node as usize] == Device::RoceSwitch)
            .collect();
        let n_nodes = f.device.len();
        let mut rng = sim_core::RngStreams::new(11).stream(0);
        let prio = 3u8;
        let (mut flagged, mut cyclic_seen) = (0, 0);
        for step in 0..4_000u32 {
            let p = switch_ports[(rand::Rng::next_u64(&mut rng) % switch_ports.len() as u64) as usize];
            let r = f.rs();
            let i = super::RoceState::ix(p, prio);
            if r.paused_by[i] == u32::MAX {
                r.paused_by[i] = 0;
                r.set_paused(p, prio, true);
                r.paused_since[i] = SimTime::ZERO;
                f.roce_pause_began(p, prio);
            } else {
                r.close_pause(p, prio, SimTime::ZERO);
            }
            // Every few steps the search's own re-check runs, clearing the flag if it can.
            if step % 7 == 0 && f.rr().pause_maybe_cyclic & (1 << prio) != 0 && !f.roce_paused_cycle_exists(prio) {
                f.rs().pause_maybe_cyclic &= !(1 << prio);
            }
            // Brute force: node reachability over paused ports between switches.
            let mut reach = vec![vec![false; n_nodes]; n_nodes];
            for &q in &switch_ports {
                let port = &f.ports[q as usize];
                if f.rr().paused_mask[q as usize] & (1 << prio) != 0
                    && f.device[port.peer_node as usize] == Device::RoceSwitch
                {
                    reach[port.node as usize][port.peer_node as usize] = true;
                }
            }
            for k in 0..n_nodes {
                let via = reach[k].clone();
                for row in reach.iter_mut() {
                    if row[k] {
                        for (to, &r) in row.iter_mut().zip(&via) {
                            *to |= r;
                        }
                    }
                }
            }
            let cyclic = (0..n_nodes).any(|a| reach[a][a]);
            assert_eq!(f.roce_paused_cycle_exists(prio), cyclic, "step {step}");
            if f.rr().pause_maybe_cyclic & (1 << prio) == 0 {
                assert!(!cyclic, "step {step}: a cycle of paused ports with the flag clear");
            } else {
                flagged += 1;
            }
            cyclic_seen += cyclic as u32;
        }
        // The walk sees both states, so both branches above were exercised.
        assert!(
            cyclic_seen > 100 && flagged > cyclic_seen / 2,
            "{cyclic_seen} {flagged}"
        );
    }

    #[test]
    fn visited_ports_are_forgotten_at_clear_and_across_the_stamp_wrap() {
        let mut v = Visited::new(4);
        v.insert(2);
        assert!(v.contains(2) && !v.contains(1));
        v.clear();
        assert!(!v.contains(2));
        v.insert(3);
        v.stamp = u32::MAX;
        v.insert(1);
        v.clear();
        assert!(!v.contains(1) && !v.contains(3));
        assert_eq!(v.stamp, 1);
    }
}
