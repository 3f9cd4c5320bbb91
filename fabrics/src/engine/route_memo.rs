//! A memo of static routes: the egress ports that packets of one `(destination, flow hash)`
//! took at the switches they crossed, so that the next packet of the same flow (or its next
//! ACK) finds its egress in one cache line instead of walking the route tables (several
//! dependent loads, the largest of them a miss per hop on a k=32 fat-tree).
//!
//! Exact by construction: a static route ([`super::Fabric::routes_statically`]: ECMP,
//! D-mod-k) is a function of `(switch, destination, flow hash)` alone and the tables do not
//! change during a run, so a remembered egress is the one the tables give. A slot is tagged
//! with the full `(destination, hash)`; two flows that share both share their routes too.
//! The memo is two-way set-associative and bounded (`MAX_SLOTS`): a slot's pair (`i`, `i ^ 1`)
//! holds either of two routes, the newer in the first; a third evicts the older (only a walk
//! of the tables again), and a path longer than `HOPS` switches walks the tables past them.
//! Direct-mapped, a k=32 permutation's 16,384 routes in 65,536 slots collided on 20 % of the
//! lookups (each collision a walk and, at that size, a miss in the 2.6 MB route table).

/// Switches remembered per slot: a 3-tier fat-tree path crosses at most 5.
const HOPS: usize = 6;
/// Upper bound on slots (64 B each: 4 MiB), whatever the number of flows.
const MAX_SLOTS: usize = 1 << 16;

/// One `(destination, hash)`'s egress ports: `(switch node, egress port)` pairs in the order
/// its packets met the switches. One cache line.
#[derive(Clone, Copy, Debug)]
#[repr(C, align(64))]
struct Slot {
    hash: u64,
    dst: u32,
    /// Pairs in use (`0` for a slot never written, whose tag is then meaningless: a get finds
    /// no pair in it).
    n: u32,
    hops: [(u32, u32); HOPS],
}

/// The memo (module docs).
pub(super) struct RouteMemo {
    slots: Vec<Slot>,
    mask: usize,
}

impl RouteMemo {
    /// A memo sized for `n_flows` flows: each has a data and a reverse direction, and with
    /// 4 slots per direction few share a slot (as many slots as directions left a third of
    /// a k=8 permutation's lookups colliding).
    pub(super) fn new(n_flows: usize) -> RouteMemo {
        let n = (8 * n_flows).clamp(2, MAX_SLOTS).next_power_of_two();
        RouteMemo {
            slots: vec![
                Slot {
                    hash: 0,
                    dst: 0,
                    n: 0,
                    hops: [(0, 0); HOPS]
                };
                n
            ],
            mask: n - 1,
        }
    }

    /// The slot that holds the route of `(dst, hash)`, if one does: the first of its pair or
    /// the second.
    #[inline(always)]
    fn find(&self, dst: u32, hash: u64) -> Option<usize> {
        // The hash is XXH3 output: its low bits index well.
        let i = hash as usize & self.mask;
        let holds = |k: usize| {
            let slot = &self.slots[k];
            slot.n > 0 && slot.hash == hash && slot.dst == dst
        };
        if holds(i) {
            Some(i)
        } else if holds(i ^ 1) {
            Some(i ^ 1)
        } else {
            None
        }
    }

    /// Asks for the line that would hold the routes of flow hash `hash` (the first of its
    /// pair; no effect on results).
    #[inline(always)]
    pub(super) fn prefetch(&self, hash: u64) {
        if let Some(slot) = self.slots.get(hash as usize & self.mask) {
            sim_core::prefetch(slot);
        }
    }

    /// The remembered egress at switch `node` of packets to `dst` with flow hash `hash`.
    #[inline(always)]
    pub(super) fn get(&self, node: u32, dst: u32, hash: u64) -> Option<u32> {
        let slot = &self.slots[self.find(dst, hash)?];
        slot.hops[..slot.n as usize]
            .iter()
            .find(|&&(at, _)| at == node)
            .map(|&(_, out)| out)
    }

    /// Remembers that packets to `dst` with hash `hash` leave switch `node` by `out`
    /// (after [`RouteMemo::get`] found nothing).
    #[inline]
    pub(super) fn remember(&mut self, node: u32, dst: u32, hash: u64, out: u32) {
        if let Some(k) = self.find(dst, hash) {
            let slot = &mut self.slots[k];
            if (slot.n as usize) < HOPS {
                slot.hops[slot.n as usize] = (node, out);
                slot.n += 1;
            }
            return;
        }
        // A new route takes the first slot of its pair; the route there moves to the second,
        // evicting the older.
        let i = hash as usize & self.mask;
        if self.slots[i].n > 0 {
            self.slots[i ^ 1] = self.slots[i];
        }
        self.slots[i] = Slot {
            hash,
            dst,
            n: 1,
            hops: [(node, out); HOPS],
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::Rng;

    /// A route that is a pure function of its inputs, as the static routes are.
    fn route(node: u32, dst: u32, hash: u64) -> u32 {
        (node.wrapping_mul(31) ^ dst ^ (hash >> 7) as u32) % 97
    }

    #[test]
    fn the_memo_answers_what_the_route_answers() {
        // Flows sharing a slot and paths longer than a slot holds (9 switches): collisions,
        // evictions and overflowing paths all occur.
        let mut memo = RouteMemo::new(1);
        assert_eq!(memo.slots.len(), 8);
        let mut rng = sim_core::RngStreams::new(3).stream(0);
        let mut walked = 0;
        for _ in 0..50_000 {
            let r = rng.next_u64();
            // Six flows in 8 slots (4 pairs), three of them sharing a pair (hashes 2, 3, 11).
            let (dst, hash) = [(1, 3), (2, 11), (5, 2), (6, 5), (7, 6), (1, 1 << 40 | 7)][(r % 6) as usize];
            let node = ((r >> 20) % 9) as u32;
            let out = match memo.get(node, dst, hash) {
                Some(out) => out,
                None => {
                    walked += 1;
                    let out = route(node, dst, hash);
                    memo.remember(node, dst, hash, out);
                    out
                }
            };
            assert_eq!(out, route(node, dst, hash), "node {node} dst {dst} hash {hash}");
        }
        // It remembered: three flows walk only beyond their sixth switch (a third of the
        // time), the three sharing a pair often, when evicted (26,121 walks with this seed).
        assert!(walked < 35_000, "walked the route {walked} times of 50,000");
    }

    #[test]
    fn a_remembered_path_does_not_walk_the_route_again() {
        let mut memo = RouteMemo::new(1);
        for node in 10..15 {
            assert_eq!(memo.get(node, 2, 99), None);
            memo.remember(node, 2, 99, node + 100);
        }
        for node in 10..15 {
            assert_eq!(memo.get(node, 2, 99), Some(node + 100));
        }
        // Another destination with the same hash is another route; the pair holds both.
        assert_eq!(memo.get(10, 3, 99), None);
        memo.remember(10, 3, 99, 7);
        assert_eq!(memo.get(10, 3, 99), Some(7));
        assert_eq!(memo.get(10, 2, 99), Some(110));
        // A third evicts the older of the two.
        memo.remember(11, 4, 99, 8);
        assert_eq!(memo.get(11, 4, 99), Some(8));
        assert_eq!(memo.get(10, 3, 99), Some(7));
        assert_eq!(memo.get(10, 2, 99), None);
    }

    #[test]
    fn the_memo_is_bounded() {
        assert_eq!(RouteMemo::new(0).slots.len(), 2);
        assert_eq!(RouteMemo::new(3).slots.len(), 32);
        assert_eq!(RouteMemo::new(10_000_000).slots.len(), MAX_SLOTS);
    }
}
