//! Credit-loop deadlock detection for InfiniBand (issue 14; `models.md` §5.6, IB variant).
//!
//! A lossless credit fabric deadlocks when output lanes wait for credits in a cycle: output
//! (p, vl) has no credits because the input buffer it feeds downstream is full, and that
//! buffer's head packet waits for output (q, vl) of the next switch, which waits the same way,
//! around to (p, vl). Nothing in the cycle can move again (HOQLife off), so no event is left
//! or the only events are elsewhere.
//!
//! The detector runs once when a run has stopped with flows unfinished (`scenarios` calls it
//! on the final state), never per event: it follows, from every credit-stalled output lane,
//! the lane its downstream head waits for. Each lane has at most one successor (a FIFO's head
//! waits for one output; an input feeding virtual output queues is given one stalled output
//! that holds its packets, by the caller), so the wait-for graph is functional and a cycle is found by walking
//! it with three colours in O(ports x VLs). Pure: it knows the fabric only through the
//! closures it is given.

use sim_core::SimTime;

/// A credit-loop deadlock: the output lanes of the cycle, in wait-for order (each waits for
/// the credits of the next, the last for the first), and when it formed (the latest of
/// their stall starts: from then on every member was stalled).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CreditCycle {
    /// `(output port, VL)`, starting from the lowest port id of the cycle.
    pub lanes: Vec<(u32, u8)>,
    pub formed_at: SimTime,
}

/// Finds a cycle of credit-stalled output lanes. `n_ports` ports with `n_vls` lanes;
/// `stalled(p, vl)`: since when output (p, vl) waits for credits; `next(p, vl)`: the output
/// lane of the downstream node that the head of the buffer fed by (p, vl) waits for. The
/// cycle reported is the one reached first from the lowest (port, VL) (deterministic).
pub fn find_cycle(
    n_ports: u32,
    n_vls: u8,
    stalled: impl Fn(u32, u8) -> Option<SimTime>,
    next: impl Fn(u32, u8) -> Option<(u32, u8)>,
) -> Option<CreditCycle> {
    const WHITE: u8 = 0;
    const ON_PATH: u8 = 1;
    const DONE: u8 = 2;
    let nv = n_vls as usize;
    let ix = |p: u32, vl: u8| p as usize * nv + vl as usize;
    let mut colour = vec![WHITE; n_ports as usize * nv];
    let succ = |p: u32, vl: u8| next(p, vl).filter(|&(q, w)| stalled(q, w).is_some());
    for p in 0..n_ports {
        for vl in 0..n_vls {
            if colour[ix(p, vl)] != WHITE || stalled(p, vl).is_none() {
                continue;
            }
            let mut path = Vec::new();
            let mut cur = Some((p, vl));
            while let Some((q, w)) = cur {
                match colour[ix(q, w)] {
                    WHITE => {
                        colour[ix(q, w)] = ON_PATH;
                        path.push((q, w));
                        cur = succ(q, w);
                    }
                    ON_PATH => {
                        let start = path.iter().position(|&l| l == (q, w)).expect("on the path");
                        let mut lanes = path[start..].to_vec();
                        let low = (0..lanes.len()).min_by_key(|&i| lanes[i]).expect("non-empty");
                        lanes.rotate_left(low);
                        let formed_at = lanes
                            .iter()
                            .filter_map(|&(a, b)| stalled(a, b))
                            .max()
                            .expect("every member is stalled");
                        return Some(CreditCycle { lanes, formed_at });
                    }
                    _ => break,
                }
            }
            for (q, w) in path {
                colour[ix(q, w)] = DONE;
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_ring_and_not_a_chain() {
        // Ports 0..5 form a ring on VL 0 (p waits for p+1 mod 5); port 7 waits for port 0.
        let stalled = |p: u32, vl: u8| (vl == 0 && (p < 5 || p == 7)).then_some(SimTime(100 + p as u64));
        let ring = |p: u32, vl: u8| match (p, vl) {
            (0..5, 0) => Some(((p + 1) % 5, 0)),
            (7, 0) => Some((0, 0)),
            _ => None,
        };
        let c = find_cycle(8, 2, stalled, ring).unwrap();
        assert_eq!(c.lanes, vec![(0, 0), (1, 0), (2, 0), (3, 0), (4, 0)]);
        assert_eq!(c.formed_at, SimTime(104));
        // Break the ring at 4 -> 0: a chain of stalls is congestion, not a deadlock.
        let chain = |p: u32, vl: u8| ring(p, vl).filter(|_| p != 4);
        assert_eq!(find_cycle(8, 2, stalled, chain), None);
        // A member that is not stalled (credits in flight) breaks the cycle too.
        let not3 = |p: u32, vl: u8| stalled(p, vl).filter(|_| p != 3);
        assert_eq!(find_cycle(8, 2, not3, ring), None);
    }
}
