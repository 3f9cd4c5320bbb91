//! Crossbar arbitration of GPU hubs, NVSwitch chips and switches with virtual output queues:
//! which waiting packet a free output takes. One file per algorithm behind [`CrossbarArbiter`],
//! selected by [`AnyArbiter`] (the engine's credit path, `engine/ib/`, calls it; it knows
//! nothing else of the engine).
//!
//! The engine hands an arbiter, for one output, the first packets of that output's virtual
//! output queue, oldest first, as [`Waiting`] entries (the node-local index of the input each
//! came in on, and whether that input is free to move a packet into the crossbar: always, with
//! unlimited internal speed-up). The arbiter answers with the position of the packet to take,
//! or none, and is told when the output took one ([`CrossbarArbiter::granted`]).
//!
//! | variant | file | rule |
//! |---|---|---|
//! | `OldestFirst` | `oldest.rs` | the oldest packet whose input is free (greedy output-first matching) |
//! | `RoundRobin` | `round_robin.rs` | per-output pointer over the inputs |
//! | `Islip` | `islip.rs` | iSLIP (McKeown 1999) applied per output decision |
//! | `LongestQueueFirst` | `lqf.rs` | the free input with the most packets waiting for this output (LQF, McKeown's maximum-weight heuristic) |
//!
//! Adding one: a file with a struct implementing the trait, a variant of [`AnyArbiter`] and of
//! `engine::XbarArbitration`, one arm in [`AnyArbiter::new`] and in each `match` below, its
//! name in the scenario loader (`fabric.crossbar.arbitration`), its tests.

mod islip;
mod lqf;
pub mod oldest;
pub mod round_robin;

pub use islip::Islip;
pub use lqf::LongestQueueFirst;
pub use oldest::OldestFirst;
pub use round_robin::RoundRobin;

/// One packet waiting in an output's virtual output queue, as an arbiter sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Waiting {
    /// The node-local index of the port it came in on.
    pub input: u32,
    /// That input may move a packet into the crossbar now.
    pub free: bool,
}

/// The output that decides: its global port id, its node-local index and its node's size.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Output {
    pub port: u32,
    pub local: u32,
    pub n_ports: u32,
}

impl Output {
    /// Round-robin distance of node-local port `input` from pointer `ptr`.
    #[inline]
    pub fn dist(&self, ptr: u32, input: u32) -> u32 {
        (input + self.n_ports - ptr) % self.n_ports
    }
}

/// A crossbar arbitration algorithm. Hooks, in the order they fire:
pub trait CrossbarArbiter {
    /// How many packets of a virtual output queue, oldest first, it looks at (a bound on the
    /// work per decision).
    fn scan_len(&self) -> usize;
    /// With every input free, the oldest packet is its answer (the engine then skips the scan).
    fn oldest_when_all_free(&self) -> bool {
        false
    }
    /// Output `out` is free: the position in `waiting` of the packet it takes, if any.
    fn pick(&self, out: Output, waiting: &[Waiting]) -> Option<usize>;
    /// Output `out` took `waiting[k]` (`waiting` as given to `pick`): move pointers.
    fn granted(&mut self, _out: Output, _waiting: &[Waiting], _k: usize, _input_port: u32) {}
}

/// The arbiter an engine holds (closed enum over the algorithms).
#[derive(Clone, Debug)]
pub enum AnyArbiter {
    OldestFirst(OldestFirst),
    RoundRobin(RoundRobin),
    Islip(Islip),
    LongestQueueFirst(LongestQueueFirst),
}

impl AnyArbiter {
    /// The arbiter of `kind` for a fabric of `n_ports` ports.
    pub fn new(kind: crate::engine::XbarArbitration, n_ports: usize) -> AnyArbiter {
        use crate::engine::XbarArbitration as K;
        match kind {
            K::OldestFirst => AnyArbiter::OldestFirst(OldestFirst),
            K::RoundRobin => AnyArbiter::RoundRobin(RoundRobin::new(n_ports)),
            K::Islip => AnyArbiter::Islip(Islip::new(n_ports)),
            K::LongestQueueFirst => AnyArbiter::LongestQueueFirst(LongestQueueFirst),
        }
    }
}

impl AnyArbiter {
    /// Takes the pointers of the ports `theirs_port` marks from `other` (a partition of the
    /// same run: `engine/partition.rs`).
    pub fn absorb(&mut self, other: &AnyArbiter, theirs_port: &[bool]) {
        let take = |mine: &mut [u32], theirs: &[u32]| {
            for (p, _) in theirs_port.iter().enumerate().filter(|(_, t)| **t) {
                mine[p] = theirs[p];
            }
        };
        match (self, other) {
            (AnyArbiter::RoundRobin(a), AnyArbiter::RoundRobin(b)) => take(&mut a.grant_ptr, &b.grant_ptr),
            (AnyArbiter::Islip(a), AnyArbiter::Islip(b)) => {
                take(&mut a.grant_ptr, &b.grant_ptr);
                take(&mut a.accept_ptr, &b.accept_ptr);
            }
            (AnyArbiter::OldestFirst(_), AnyArbiter::OldestFirst(_))
            | (AnyArbiter::LongestQueueFirst(_), AnyArbiter::LongestQueueFirst(_)) => {}
            _ => unreachable!("partitions of one run have one arbitration"),
        }
    }
}

impl CrossbarArbiter for AnyArbiter {
    #[inline]
    fn scan_len(&self) -> usize {
        match self {
            AnyArbiter::OldestFirst(a) => a.scan_len(),
            AnyArbiter::RoundRobin(a) => a.scan_len(),
            AnyArbiter::Islip(a) => a.scan_len(),
            AnyArbiter::LongestQueueFirst(a) => a.scan_len(),
        }
    }
    #[inline]
    fn oldest_when_all_free(&self) -> bool {
        match self {
            AnyArbiter::OldestFirst(a) => a.oldest_when_all_free(),
            AnyArbiter::RoundRobin(a) => a.oldest_when_all_free(),
            AnyArbiter::Islip(a) => a.oldest_when_all_free(),
            AnyArbiter::LongestQueueFirst(a) => a.oldest_when_all_free(),
        }
    }
    fn pick(&self, out: Output, waiting: &[Waiting]) -> Option<usize> {
        match self {
            AnyArbiter::OldestFirst(a) => a.pick(out, waiting),
            AnyArbiter::RoundRobin(a) => a.pick(out, waiting),
            AnyArbiter::Islip(a) => a.pick(out, waiting),
            AnyArbiter::LongestQueueFirst(a) => a.pick(out, waiting),
        }
    }
    fn granted(&mut self, out: Output, waiting: &[Waiting], k: usize, input_port: u32) {
        match self {
            AnyArbiter::OldestFirst(a) => a.granted(out, waiting, k, input_port),
            AnyArbiter::RoundRobin(a) => a.granted(out, waiting, k, input_port),
            AnyArbiter::Islip(a) => a.granted(out, waiting, k, input_port),
            AnyArbiter::LongestQueueFirst(a) => a.granted(out, waiting, k, input_port),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn w(inputs: &[(u32, bool)]) -> Vec<Waiting> {
        inputs.iter().map(|&(input, free)| Waiting { input, free }).collect()
    }

    const OUT: Output = Output {
        port: 10,
        local: 0,
        n_ports: 4,
    };

    #[test]
    fn oldest_takes_the_first_free() {
        let a = OldestFirst;
        assert_eq!(a.pick(OUT, &w(&[(1, false), (2, true), (3, true)])), Some(1));
        assert_eq!(a.pick(OUT, &w(&[(1, false)])), None);
    }

    #[test]
    fn round_robin_moves_its_pointer_past_the_served_input() {
        let mut a = RoundRobin::new(16);
        let q = w(&[(3, true), (1, true), (2, true)]);
        // Pointer 0: input 1 is nearest.
        assert_eq!(a.pick(OUT, &q), Some(1));
        a.granted(OUT, &q, 1, 1);
        // Pointer 2: input 2 next, then 3.
        assert_eq!(a.pick(OUT, &q), Some(2));
        a.granted(OUT, &q, 2, 2);
        assert_eq!(a.pick(OUT, &q), Some(0));
    }

    #[test]
    fn islip_moves_pointers_only_when_the_first_grant_is_accepted() {
        let mut a = Islip::new(16);
        // Input 1 (nearest the pointer) is busy: the grant goes on to input 2 (taken), but the
        // pointers stay.
        let q = w(&[(1, false), (2, true)]);
        assert_eq!(a.pick(OUT, &q), Some(1));
        a.granted(OUT, &q, 1, 2);
        assert_eq!(a.grant_pointer(OUT.port), 0);
        // Input 1 free: accepted at once, pointers move.
        let q = w(&[(1, true), (2, true)]);
        assert_eq!(a.pick(OUT, &q), Some(0));
        a.granted(OUT, &q, 0, 1);
        assert_eq!(a.grant_pointer(OUT.port), 2);
        assert_eq!(a.accept_pointer(1), 1);
    }

    #[test]
    fn longest_queue_first_serves_the_input_with_most_waiting() {
        let a = LongestQueueFirst;
        // Input 2 has three packets waiting, input 1 one: input 2's oldest (position 1).
        let q = w(&[(1, true), (2, true), (2, true), (2, true)]);
        assert_eq!(a.pick(OUT, &q), Some(1));
        // Ties: the input whose oldest packet is oldest.
        let q = w(&[(3, true), (1, true), (3, true), (1, true)]);
        assert_eq!(a.pick(OUT, &q), Some(0));
        // Busy inputs do not count.
        let q = w(&[(1, true), (2, false), (2, false)]);
        assert_eq!(a.pick(OUT, &q), Some(0));
        assert_eq!(a.pick(OUT, &w(&[(2, false)])), None);
    }
}
