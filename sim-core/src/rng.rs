//! Seeded random-number streams, one per component.
//!
//! Every component derives its own stream from `(master seed, component id)`, so adding a
//! component (or consuming more numbers in one) never perturbs another's draws. The generator
//! is ChaCha8 from `rand_chacha`: portable and value-stable across platforms, unlike `StdRng`,
//! which rand documents as non-portable. The stream id selects one of 2^64 independent
//! ChaCha streams under the same key (`set_stream`).

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

/// The generator type every simulation component uses.
pub type SimRng = ChaCha8Rng;

/// Well-known stream ids, so that components never collide by accident. Ids below
/// `1 << 32` are free for per-component use (e.g. a switch's index).
pub mod stream {
    /// Workload generation (flow arrivals, sizes, destinations).
    pub const WORKLOAD: u64 = 1 << 40;
    /// Per-switch ECMP hash seeds (far from `WORKLOAD + i`, the per-workload streams).
    pub const ECMP_SEEDS: u64 = 1 << 41;
    /// RED/ECN marking decisions: egress port `p` draws from `ECN_MARKING + p` (ports are
    /// fewer than 2^24), in its own event order.
    pub const ECN_MARKING: u64 = 1 << 42;
}

/// The master seed of a run, from which every stream is derived.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RngStreams {
    seed: u64,
}

impl RngStreams {
    pub fn new(seed: u64) -> Self {
        RngStreams { seed }
    }

    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// The stream of component `id`.
    pub fn stream(&self, id: u64) -> SimRng {
        let mut rng = ChaCha8Rng::seed_from_u64(self.seed);
        rng.set_stream(id);
        rng
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::Rng;

    #[test]
    fn streams_are_independent_and_reproducible() {
        let s = RngStreams::new(42);
        let a1: Vec<u64> = (0..4)
            .map({
                let mut r = s.stream(1);
                move |_| r.next_u64()
            })
            .collect();
        let a2: Vec<u64> = (0..4)
            .map({
                let mut r = s.stream(1);
                move |_| r.next_u64()
            })
            .collect();
        let b: Vec<u64> = (0..4)
            .map({
                let mut r = s.stream(2);
                move |_| r.next_u64()
            })
            .collect();
        assert_eq!(a1, a2);
        assert_ne!(a1, b);
        let c: Vec<u64> = (0..4)
            .map({
                let mut r = RngStreams::new(43).stream(1);
                move |_| r.next_u64()
            })
            .collect();
        assert_ne!(a1, c);
    }

    const GOLDEN: u64 = 0x770a_80dc_330a_4d75;

    #[test]
    fn golden_values_are_portable() {
        // Guards against a silent change of generator or derivation: same seed, same numbers,
        // on every machine and every build. (Value recorded from this implementation.)
        let mut r = RngStreams::new(1).stream(7);
        let first = r.next_u64();
        assert_eq!(first, GOLDEN);
    }
}
