//! The idle-network evaluator: the time a [`MessageDag`] takes when nothing but its own
//! messages and dependencies slows it down.
//!
//! ## Model
//! - A message becomes *ready* `gap` after the last of its dependencies is delivered (at 0 if it
//!   has none).
//! - Each rank has one send port: its messages are transmitted one at a time, in order of
//!   ready time (ties: lower message index first), each taking
//!   `serialization_time(bytes, rate)`; a switch endpoint has one send port per destination
//!   (a crossbar output port per GPU link).
//! - A message is delivered `alpha` after its last byte leaves the port (latency is not a port
//!   resource: the next message may start right away).
//! - Receivers are not a resource (no incast contention), so the model is exact for
//!   algorithms in which each rank receives from at most one peer at a time (ring, halving-
//!   doubling, chains), and optimistic otherwise.
//!
//! With at most one message in flight per rank, this is the longest path through the DAG with
//! per-message time `alpha + bytes / rate`, which reproduces the alpha-beta formulas of
//! [`super::cost`] exactly when the sizes divide evenly (tests below). It is also the
//! reference the packet simulation is compared against on an idle fabric, with `rate` the
//! link's effective payload rate.
//!
//! All times are integer picoseconds; each message's serialization is rounded up to the next
//! picosecond (as `sim_core::serialization_time` does).

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use sim_core::{BitsPerSec, Bytes, Duration, SimTime, serialization_time};

use super::{DagError, DagLimits, MessageDag};

/// When each message was ready, started, and was delivered.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Timeline {
    pub ready: Vec<SimTime>,
    pub start: Vec<SimTime>,
    pub finish: Vec<SimTime>,
    /// The last delivery (0 for an empty DAG): the collective's completion time.
    pub makespan: SimTime,
}

/// Evaluates `dag` with the same latency `alpha` and port rate `rate` for every message.
pub fn evaluate(dag: &MessageDag, alpha: Duration, rate: BitsPerSec) -> Result<Timeline, DagError> {
    evaluate_with(dag, |_, _| (alpha, rate))
}

/// Evaluates `dag` with per-pair latency and rate: `link(src, dst) -> (alpha, rate)` (e.g.
/// NVLink within a server, the NIC rate between servers). The DAG is validated first (default
/// limits); a zero rate is refused.
pub fn evaluate_with(
    dag: &MessageDag,
    link: impl Fn(u32, u32) -> (Duration, BitsPerSec),
) -> Result<Timeline, DagError> {
    dag.validate(&DagLimits {
        max_messages: u64::MAX,
        max_deps: u64::MAX,
    })?;
    let n = dag.messages.len();
    let n_ep = dag.n_endpoints() as usize;
    let (off, dependents) = dag.dependents();
    let mut remaining: Vec<u32> = dag.messages.iter().map(|m| m.deps.len() as u32).collect();
    let mut ready = vec![SimTime::ZERO; n];
    let mut start = vec![SimTime::ZERO; n];
    let mut finish = vec![SimTime::ZERO; n];
    // Rank send ports, then (switch, destination) ports.
    let mut port_free = vec![SimTime::ZERO; dag.n_ranks as usize + dag.n_switches as usize * n_ep];
    let mut heap: BinaryHeap<Reverse<(SimTime, u32)>> = BinaryHeap::new();
    for (i, m) in dag.messages.iter().enumerate() {
        if m.deps.is_empty() {
            ready[i] = SimTime::ZERO + m.gap;
            heap.push(Reverse((ready[i], i as u32)));
        }
    }
    let mut makespan = SimTime::ZERO;
    while let Some(Reverse((t, i))) = heap.pop() {
        let m = &dag.messages[i as usize];
        let port = if m.src < dag.n_ranks {
            m.src as usize
        } else {
            dag.n_ranks as usize + (m.src - dag.n_ranks) as usize * n_ep + m.dst as usize
        };
        let (alpha, rate) = link(m.src, m.dst);
        if rate.get() == 0 {
            return Err(DagError::InvalidSpec {
                reason: format!("zero rate between endpoints {} and {}", m.src, m.dst),
            });
        }
        let s = t.max(port_free[port]);
        let done_tx = s + serialization_time(Bytes(m.bytes), rate);
        port_free[port] = done_tx;
        let f = done_tx + alpha;
        start[i as usize] = s;
        finish[i as usize] = f;
        makespan = makespan.max(f);
        for &j in &dependents[off[i as usize] as usize..off[i as usize + 1] as usize] {
            let j = j as usize;
            ready[j] = ready[j].max(f);
            remaining[j] -= 1;
            if remaining[j] == 0 {
                ready[j] += dag.messages[j].gap;
                heap.push(Reverse((ready[j], j as u32)));
            }
        }
    }
    Ok(Timeline {
        ready,
        start,
        finish,
        makespan,
    })
}

#[cfg(test)]
mod tests {
    use super::super::cost::{self, AlphaBeta};
    use super::super::generate::{Algorithm, CollectiveKind, CollectiveSpec, generate};
    use super::*;

    /// 100 Gb/s: one byte is exactly 80 ps, so every per-message time is exact.
    const RATE: BitsPerSec = BitsPerSec::from_gbps(100);
    const ALPHA: Duration = Duration::from_ns(700);

    fn ab() -> AlphaBeta {
        AlphaBeta::new(ALPHA, RATE)
    }

    fn run(spec: CollectiveSpec) -> Duration {
        let dag = generate(&spec, &DagLimits::DEFAULT).unwrap();
        evaluate(&dag, ALPHA, RATE).unwrap().makespan.since(SimTime::ZERO)
    }

    fn spec(kind: CollectiveKind, algo: Algorithm, n: u32, bytes: u64) -> CollectiveSpec {
        CollectiveSpec::new(kind, algo, n, bytes)
    }

    #[test]
    fn ring_allreduce_matches_the_formula_exactly() {
        for n in [2u32, 3, 4, 5, 8, 16] {
            let s = 16 * 9 * 5 * 7 * 1024u64;
            let t = run(spec(CollectiveKind::AllReduce, Algorithm::Ring, n, s));
            assert_eq!(t, cost::ring_allreduce(n, s, &ab()), "n={n}");
            // The formula itself: 2(n-1) alpha + 2(n-1)/n S/B.
            let want = 2 * (n as u64 - 1) * ALPHA.ps() + 2 * (n as u64 - 1) * s / n as u64 * 80;
            assert_eq!(t.ps(), want);
        }
    }

    #[test]
    fn ring_reduce_scatter_and_allgather_match_exactly() {
        for n in [2u32, 3, 8] {
            let s = 24 * 4096u64;
            for kind in [CollectiveKind::ReduceScatter, CollectiveKind::AllGather] {
                let t = run(spec(kind, Algorithm::Ring, n, s));
                assert_eq!(t, cost::ring_reduce_scatter(n, s, &ab()), "{kind:?} n={n}");
                assert_eq!(t, cost::ring_allgather(n, s, &ab()));
            }
        }
    }

    #[test]
    fn reduction_gaps_add_the_gamma_term() {
        let (n, s) = (8u32, 8 * 8192u64);
        let mut sp = spec(CollectiveKind::AllReduce, Algorithm::Ring, n, s);
        let gamma = BitsPerSec::from_gbps(800); // 10 ps per byte
        sp.reduce_rate = Some(gamma);
        let mut model = ab();
        model.reduce_rate = Some(gamma);
        assert_eq!(run(sp), cost::ring_allreduce(n, s, &model));
        assert_eq!(
            cost::ring_allreduce(n, s, &model).ps() - cost::ring_allreduce(n, s, &ab()).ps(),
            7 * 8192 * 10
        );
        let mut hd = spec(CollectiveKind::AllReduce, Algorithm::HalvingDoubling, n, s);
        hd.reduce_rate = Some(gamma);
        assert_eq!(run(hd), cost::halving_doubling_allreduce(n, s, &model));
    }

    #[test]
    fn halving_doubling_matches_exactly() {
        for n in [2u32, 4, 8, 16, 32] {
            let s = 1 << 20;
            let t = run(spec(CollectiveKind::AllReduce, Algorithm::HalvingDoubling, n, s));
            assert_eq!(t, cost::halving_doubling_allreduce(n, s, &ab()), "n={n}");
        }
        // Non-power of two: the pre and post steps add 2 (alpha + S/B).
        let s = 1 << 20;
        let t = run(spec(CollectiveKind::AllReduce, Algorithm::HalvingDoubling, 6, s));
        assert_eq!(t, cost::halving_doubling_allreduce(6, s, &ab()));
    }

    #[test]
    fn chains_and_alltoall_match_exactly() {
        for (n, k) in [(2u32, 1u32), (5, 1), (5, 4), (8, 16)] {
            let s = 64 * 1024u64;
            let mut sp = spec(CollectiveKind::Broadcast { root: 1 }, Algorithm::Ring, n, s);
            sp.chunks = k;
            assert_eq!(run(sp), cost::broadcast_chain(n, s, k, &ab()), "n={n} k={k}");
        }
        for n in [2u32, 4, 8] {
            let s = 8 * 1024u64;
            let t = run(spec(CollectiveKind::AllToAll, Algorithm::Direct, n, s));
            assert_eq!(t, cost::alltoall_direct(n, s, &ab()), "n={n}");
        }
    }

    #[test]
    fn hierarchical_matches_the_sum_of_its_stages() {
        let (servers, gpus) = (4u32, 8u32);
        let s = 32 * 3 * 1024u64;
        let dag = generate(
            &spec(
                CollectiveKind::AllReduce,
                Algorithm::Hierarchical { gpus_per_server: gpus },
                servers * gpus,
                s,
            ),
            &DagLimits::DEFAULT,
        )
        .unwrap();
        let intra = AlphaBeta::new(Duration::from_ns(300), BitsPerSec::from_gbps(3200)); // 2.5 ps/B
        let inter = AlphaBeta::new(Duration::from_ns(2000), BitsPerSec::from_gbps(400)); // 20 ps/B
        let t = evaluate_with(&dag, |a, b| {
            let m = if a / gpus == b / gpus { intra } else { inter };
            (m.alpha, m.rate)
        })
        .unwrap();
        let want = cost::hierarchical_allreduce(servers, gpus, s, &intra, &inter);
        assert_eq!(t.makespan.since(SimTime::ZERO), want);
    }

    #[test]
    fn pipelining_and_trees_are_bounded_by_the_models() {
        let n = 8u32;
        let s = 1u64 << 24;
        let ring1 = run(spec(CollectiveKind::AllReduce, Algorithm::Ring, n, s));
        let mut chunked = spec(CollectiveKind::AllReduce, Algorithm::Ring, n, s);
        chunked.chunks = 8;
        chunked.channels = 2;
        let ring_k = run(chunked);
        let bw_only = cost::ring_allreduce(n, s, &AlphaBeta::new(Duration::ZERO, RATE));
        assert!(ring_k <= ring1 && ring_k >= bw_only, "{ring_k} vs {ring1} / {bw_only}");
        // Double binary tree, pipelined: between the bandwidth bound 2S/B and 10% above the
        // formula (which assumes perfect pipelining).
        let mut t = spec(CollectiveKind::AllReduce, Algorithm::DoubleBinaryTree, n, s);
        t.chunks = 64;
        let tree = run(t);
        let formula = cost::double_binary_tree_allreduce(n, s, &ab());
        assert!(tree.ps() >= 2 * s * 80, "{tree}");
        assert!(tree.ps() <= formula.ps() * 11 / 10, "{tree} vs {formula}");
        // NVLS, pipelined: close to (n+1)/n S/B.
        let mut v = spec(CollectiveKind::AllReduce, Algorithm::Nvls, n, s);
        v.chunks = 64;
        let nvls = run(v);
        let formula = cost::nvls_allreduce(n, s, &ab());
        assert!(nvls >= formula, "{nvls} vs {formula}");
        assert!(nvls.ps() <= formula.ps() * 107 / 100, "{nvls} vs {formula}");
        // And NVLS beats the ring by about 2(n-1)/(n+1) = 1.56x for n = 8.
        let ratio = ring1.ps() as f64 / nvls.ps() as f64;
        assert!((1.45..1.6).contains(&ratio), "{ratio}");
    }

    #[test]
    fn empty_and_zero_rate() {
        let dag = MessageDag {
            n_ranks: 1,
            n_switches: 0,
            messages: vec![],
        };
        assert_eq!(evaluate(&dag, ALPHA, RATE).unwrap().makespan, SimTime::ZERO);
        let d = generate(
            &spec(CollectiveKind::AllReduce, Algorithm::Ring, 2, 10),
            &DagLimits::DEFAULT,
        )
        .unwrap();
        assert!(evaluate(&d, ALPHA, BitsPerSec(0)).is_err());
    }
}
