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

/// A set of ports cleared in O(1): a port is in it when its stamp is the current one. The
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
