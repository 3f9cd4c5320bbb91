//! Hold-model benchmark of the future-event queues.
//!
//! The classic hold model: keep N entries pending; each *hold* pops the smallest and pushes
//! it back at its time plus an increment. Increments are drawn up front (2^20 of them, reused
//! cyclically) so the RNG is not timed. The queues are driven directly through
//! `EventQueue::push/pop` with `Entry`/`Key` (no `Scheduler`), so the figures are the data
//! structures alone. The baseline is the crate's `HeapQueue`, which is a plain
//! `std::collections::BinaryHeap`.
//!
//! Both queues run the same case side by side, their timed repetitions interleaved so machine
//! noise hits both alike; the figure kept is the best (min) of 3 repetitions. Every popped key
//! is folded into a checksum, and the two queues must agree on it: identical pop sequences.
//!
//! Run: `cargo bench -p sim-core --bench hold`

use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use sim_core::queue::{Entry, Key};
use sim_core::{EventQueue, HeapQueue, SimTime, WheelQueue};
use std::time::Instant;

/// Precomputed increments, used cyclically (a power of two).
const N_INCS: usize = 1 << 20;
const REPS: usize = 3;

#[derive(Clone, Copy)]
enum Dist {
    /// Exponential, mean 1 us.
    Exp,
    /// Uniform over [50 ns, 2 us).
    Uniform,
    /// 99% uniform [50 ns, 2 us), 1% uniform [10 us, 1 ms).
    Mixed,
}

impl Dist {
    fn name(self) -> &'static str {
        match self {
            Dist::Exp => "exp(1 us)",
            Dist::Uniform => "U(50 ns, 2 us)",
            Dist::Mixed => "99% U(50 ns, 2 us) + 1% U(10 us, 1 ms)",
        }
    }

    /// Increments in picoseconds.
    fn increments(self, seed: u64) -> Vec<u64> {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let uniform = |rng: &mut ChaCha8Rng| rng.random_range(50_000..2_000_000u64);
        (0..N_INCS)
            .map(|_| match self {
                Dist::Exp => (-1e6 * (1.0 - rng.random::<f64>()).ln()) as u64,
                Dist::Uniform => uniform(&mut rng),
                Dist::Mixed if rng.random_range(0..100) == 0 => rng.random_range(10_000_000..1_000_000_000u64),
                Dist::Mixed => uniform(&mut rng),
            })
            .collect()
    }
}

/// One queue under test with its own position in the increment stream.
struct Runner<Q> {
    q: Q,
    pos: usize,
    seq: u64,
    checksum: u64,
}

impl<Q: EventQueue<u64>> Runner<Q> {
    /// Fills the queue with `n` entries at the first `n` increments.
    fn new(mut q: Q, n: usize, incs: &[u64]) -> Self {
        for i in 0..n {
            q.push(Entry {
                key: Key {
                    time: SimTime(incs[i % N_INCS]),
                    origin_seq: i as u64,
                },
                ev: i as u64,
            });
        }
        Runner {
            q,
            pos: n % N_INCS,
            seq: n as u64,
            checksum: 0xcbf2_9ce4_8422_2325,
        }
    }

    /// `holds` holds: pop the first entry, push it back later with a fresh sequence number.
    #[inline(never)]
    fn hold(&mut self, holds: u64, incs: &[u64]) {
        for _ in 0..holds {
            let Some(e) = self.q.pop() else {
                unreachable!("hold model never empties the queue")
            };
            // Order-sensitive fold of everything popped (FNV-1a style).
            self.checksum =
                (self.checksum ^ e.key.time.0 ^ e.key.origin_seq.rotate_left(32)).wrapping_mul(0x0100_0000_01b3);
            let time = SimTime(e.key.time.0 + incs[self.pos]);
            self.pos = (self.pos + 1) & (N_INCS - 1);
            self.seq += 1;
            self.q.push(Entry {
                key: Key {
                    time,
                    origin_seq: self.seq,
                },
                ev: e.ev,
            });
        }
    }

    /// Nanoseconds per hold over `holds` holds.
    #[allow(
        clippy::disallowed_methods,
        reason = "a benchmark measures wall-clock time; simulation results never depend on it"
    )]
    fn timed(&mut self, holds: u64, incs: &[u64]) -> f64 {
        let start = Instant::now();
        self.hold(holds, incs);
        start.elapsed().as_nanos() as f64 / holds as f64
    }
}

fn main() {
    if cfg!(debug_assertions) {
        eprintln!("warning: debug build; run with `cargo bench` for meaningful figures");
    }
    println!("Hold model: pop the first entry, push it back at t + increment.");
    println!("Baseline `HeapQueue` = plain std::collections::BinaryHeap; queues driven directly.");
    println!("Figures: min of {REPS} repetitions, after a warm-up.\n");
    println!(
        "| pending N | increments | BinaryHeap ns/hold | BinaryHeap Mev/s | WheelQueue ns/hold | WheelQueue Mev/s | speed-up |"
    );
    println!("|---:|---|---:|---:|---:|---:|---:|");
    for n in [1_000usize, 100_000, 1_000_000] {
        // Warm up until every initial entry has been held about once; time enough holds that
        // a repetition lasts well over the timer's resolution and the machine's hiccups.
        let warmup = n.max(200_000) as u64;
        let holds: u64 = if n >= 1_000_000 { 1_000_000 } else { 2_000_000 };
        for (d, dist) in [Dist::Exp, Dist::Uniform, Dist::Mixed].into_iter().enumerate() {
            let incs = dist.increments(42 + d as u64);
            let mut heap = Runner::new(HeapQueue::new(), n, &incs);
            let mut wheel = Runner::new(WheelQueue::new(), n, &incs);
            heap.hold(warmup, &incs);
            wheel.hold(warmup, &incs);
            let (mut best_heap, mut best_wheel) = (f64::INFINITY, f64::INFINITY);
            for _ in 0..REPS {
                best_heap = best_heap.min(heap.timed(holds, &incs));
                best_wheel = best_wheel.min(wheel.timed(holds, &incs));
            }
            assert_eq!(
                heap.checksum,
                wheel.checksum,
                "queues popped different sequences (N = {n}, {})",
                dist.name()
            );
            assert_eq!(heap.q.len(), n);
            assert_eq!(wheel.q.len(), n);
            println!(
                "| 10^{} | {} | {:.1} | {:.1} | {:.1} | {:.1} | {:.2}x |",
                n.ilog10(),
                dist.name(),
                best_heap,
                1e3 / best_heap,
                best_wheel,
                1e3 / best_wheel,
                best_heap / best_wheel
            );
        }
    }
    println!("\nChecksums of the popped sequences agree in every case.");
}
