//! Analytic costs: the alpha-beta(-gamma) formulas, the nccl-tests bandwidth definitions and
//! NCCL's own latency model.
//!
//! ## Alpha-beta (models.md §4.1)
//! `alpha` is the per-message latency, `rate` the per-rank port rate (`beta = 1 / rate`),
//! `reduce_rate` the local reduction throughput (`gamma = 1 / reduce_rate`). The functions
//! return integer picoseconds: step counts times `alpha` plus the total serialization, rounded
//! up once. They match [`super::eval`] exactly when the per-message sizes divide evenly.
//! Sources: Thakur, Rabenseifner & Gropp, "Optimization of collective communication
//! operations in MPICH", IJHPCA 2005; Patarasuk & Yuan, JPDC 2009.
//!
//! ## nccl-tests (models.md §4.1, `NVIDIA/nccl-tests:doc/PERFORMANCE.md`)
//! `algbw = S / t`; `busbw = algbw * factor` with factor `2(n-1)/n` (AllReduce), `(n-1)/n`
//! (ReduceScatter, AllGather, AllToAll), `1` (Broadcast, Reduce, SendRecv). nccl-tests applies
//! the AllReduce factor whatever algorithm NCCL chose (its reported NVLS 480 GB/s busbw is
//! 275 GB/s algbw times 14/8), so [`busbw_gbps`] does the same. GB/s are 10^9 bytes/s.
//!
//! ## NCCL's latency/bandwidth model (models.md §4.2, `NVIDIA/nccl:src/graph/tuning.cc`)
//! [`nccl`] holds the base and hardware latencies (µs) for Ring and Tree and the step-count
//! formulas; `time = latency + S / (1000 * algbw)` µs with `algbw` in GB/s.

use sim_core::time::PS_PER_S;
use sim_core::{BitsPerSec, Duration};

use super::generate::{CollectiveKind, split};

/// The parameters of the alpha-beta-gamma model.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AlphaBeta {
    /// Per-message latency.
    pub alpha: Duration,
    /// Per-rank port rate (bits/s of payload).
    pub rate: BitsPerSec,
    /// Local reduction throughput (bits/s of input reduced); `None` = free.
    pub reduce_rate: Option<BitsPerSec>,
}

impl AlphaBeta {
    /// Free reductions.
    pub const fn new(alpha: Duration, rate: BitsPerSec) -> Self {
        AlphaBeta {
            alpha,
            rate,
            reduce_rate: None,
        }
    }
}

/// `ceil(num / den bytes at rate)` in ps (0 for a zero rate's would-be division: refused).
fn xfer(num: u128, den: u128, rate: BitsPerSec) -> u64 {
    assert!(rate.get() > 0 && den > 0, "cost: zero rate or denominator");
    let ps = (num * 8 * PS_PER_S as u128).div_ceil(den * rate.get() as u128);
    u64::try_from(ps).expect("cost exceeds u64 picoseconds")
}

fn gamma(num: u128, den: u128, m: &AlphaBeta) -> u64 {
    m.reduce_rate.filter(|r| r.get() > 0).map_or(0, |r| xfer(num, den, r))
}

fn steps(k: u64, m: &AlphaBeta) -> u64 {
    k * m.alpha.ps()
}

/// Ring AllReduce: `2(n-1) alpha + 2(n-1)/n S/B + (n-1)/n S gamma`.
pub fn ring_allreduce(n: u32, bytes: u64, m: &AlphaBeta) -> Duration {
    let (k, s) = (n as u128 - 1, bytes as u128);
    Duration(steps(2 * k as u64, m) + xfer(2 * k * s, n as u128, m.rate) + gamma(k * s, n as u128, m))
}

/// Ring ReduceScatter: `(n-1) alpha + (n-1)/n S/B + (n-2)/n S gamma` (the DAG leaves out the
/// final local reduction, which moves no bytes; see [`mod@super::generate`]).
pub fn ring_reduce_scatter(n: u32, bytes: u64, m: &AlphaBeta) -> Duration {
    let (k, s) = (n as u128 - 1, bytes as u128);
    let g = if n >= 2 {
        gamma((n as u128 - 2) * s, n as u128, m)
    } else {
        0
    };
    Duration(steps(k as u64, m) + xfer(k * s, n as u128, m.rate) + g)
}

/// Ring AllGather (`S` = the whole output): `(n-1) alpha + (n-1)/n S/B`.
pub fn ring_allgather(n: u32, bytes: u64, m: &AlphaBeta) -> Duration {
    let (k, s) = (n as u128 - 1, bytes as u128);
    Duration(steps(k as u64, m) + xfer(k * s, n as u128, m.rate))
}

/// Halving-doubling AllReduce, `p = 2^floor(log2 n)`: `2 log2(p) alpha + 2(p-1)/p S/B +
/// (p-1)/p S gamma`, plus `2 (alpha + S/B) + S gamma` for the pre/post steps if `n != p`.
pub fn halving_doubling_allreduce(n: u32, bytes: u64, m: &AlphaBeta) -> Duration {
    let p = 1u32 << (31 - n.leading_zeros());
    let (k, s) = (p as u128 - 1, bytes as u128);
    let log_p = p.trailing_zeros() as u64;
    let mut ps = steps(2 * log_p, m) + xfer(2 * k * s, p as u128, m.rate) + gamma(k * s, p as u128, m);
    if n != p {
        ps += steps(2, m) + 2 * xfer(s, 1, m.rate) + gamma(s, 1, m);
    }
    Duration(ps)
}

/// Pipelined chain Broadcast in `k` chunks: `(n-1) alpha + (n+k-2) (S/k)/B` (the largest
/// chunk counts when `k` does not divide `S`).
pub fn broadcast_chain(n: u32, bytes: u64, chunks: u32, m: &AlphaBeta) -> Duration {
    if n <= 1 {
        return Duration::ZERO;
    }
    let chunk = split(bytes, chunks)[0] as u128;
    Duration(steps(n as u64 - 1, m) + (n as u64 + chunks as u64 - 2) * xfer(chunk, 1, m.rate))
}

/// Direct AllToAll (single send port): `alpha + (n-1)/n S/B`.
pub fn alltoall_direct(n: u32, bytes: u64, m: &AlphaBeta) -> Duration {
    if n <= 1 {
        return Duration::ZERO;
    }
    Duration(m.alpha.ps() + xfer((n as u128 - 1) * bytes as u128, n as u128, m.rate))
}

/// Double binary tree AllReduce, perfectly pipelined (an estimate, not exact):
/// `2 ceil(log2 n) alpha + 2 S/B`. The busiest rank (interior in one tree, leaf in the other)
/// sends about `2S` (models.md §4.1, bandwidth term corrected by derivation).
pub fn double_binary_tree_allreduce(n: u32, bytes: u64, m: &AlphaBeta) -> Duration {
    if n <= 1 {
        return Duration::ZERO;
    }
    let depth = 32 - (n - 1).leading_zeros();
    Duration(steps(2 * depth as u64, m) + xfer(2 * bytes as u128, 1, m.rate))
}

/// NVLS AllReduce lower bound: each rank sends `S + S/n` through its port, then the last
/// multicast crosses the switch: `(n+1)/n S/B + 2 alpha`. The pipelined DAG approaches it.
pub fn nvls_allreduce(n: u32, bytes: u64, m: &AlphaBeta) -> Duration {
    Duration(steps(2, m) + xfer((n as u128 + 1) * bytes as u128, n as u128, m.rate))
}

/// Hierarchical AllReduce over `servers x gpus`: intra ring ReduceScatter + inter ring
/// AllReduce of one shard (`ceil(S / gpus)`) + intra ring AllGather.
pub fn hierarchical_allreduce(servers: u32, gpus: u32, bytes: u64, intra: &AlphaBeta, inter: &AlphaBeta) -> Duration {
    let shard = split(bytes, gpus)[0];
    let rs = if gpus > 1 {
        ring_reduce_scatter(gpus, bytes, intra)
    } else {
        Duration::ZERO
    };
    let ag = if gpus > 1 {
        ring_allgather(gpus, bytes, intra)
    } else {
        Duration::ZERO
    };
    let ar = if servers > 1 {
        ring_allreduce(servers, shard, inter)
    } else {
        Duration::ZERO
    };
    rs + ar + ag
}

/// The nccl-tests operations (for their bus-bandwidth factors).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NcclTestsOp {
    AllReduce,
    ReduceScatter,
    AllGather,
    AllToAll,
    Broadcast,
    Reduce,
    SendRecv,
}

impl From<CollectiveKind> for NcclTestsOp {
    fn from(k: CollectiveKind) -> Self {
        match k {
            CollectiveKind::AllReduce => NcclTestsOp::AllReduce,
            CollectiveKind::ReduceScatter => NcclTestsOp::ReduceScatter,
            CollectiveKind::AllGather => NcclTestsOp::AllGather,
            CollectiveKind::Broadcast { .. } => NcclTestsOp::Broadcast,
            CollectiveKind::AllToAll => NcclTestsOp::AllToAll,
        }
    }
}

/// nccl-tests' bus-bandwidth factor for `op` on `n` ranks (module docs). For reports only.
pub fn busbw_factor(op: NcclTestsOp, n: u32) -> f64 {
    let n = n.max(1) as f64;
    match op {
        NcclTestsOp::AllReduce => 2.0 * (n - 1.0) / n,
        NcclTestsOp::ReduceScatter | NcclTestsOp::AllGather | NcclTestsOp::AllToAll => (n - 1.0) / n,
        NcclTestsOp::Broadcast | NcclTestsOp::Reduce | NcclTestsOp::SendRecv => 1.0,
    }
}

/// nccl-tests' algorithm bandwidth `S / t` in GB/s (10^9 B/s); 0 for a zero time.
pub fn algbw_gbps(bytes: u64, t: Duration) -> f64 {
    if t.ps() == 0 {
        return 0.0;
    }
    bytes as f64 / t.as_secs_f64() / 1e9
}

/// nccl-tests' bus bandwidth in GB/s: `algbw * busbw_factor(op, n)`.
pub fn busbw_gbps(op: NcclTestsOp, n: u32, bytes: u64, t: Duration) -> f64 {
    algbw_gbps(bytes, t) * busbw_factor(op, n)
}

/// NCCL's latency model (`NVIDIA/nccl:src/graph/tuning.cc@5067397`, models.md §4.2). Floats:
/// this is a reporting/comparison model, never simulation state.
pub mod nccl {
    /// NCCL protocols.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub enum Proto {
        Ll,
        Ll128,
        Simple,
    }

    /// NCCL algorithms modelled here.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub enum Algo {
        Tree,
        Ring,
    }

    /// Hardware class of a step.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub enum Hw {
        NvLink,
        Pci,
        Net,
    }

    fn idx(p: Proto) -> usize {
        match p {
            Proto::Ll => 0,
            Proto::Ll128 => 1,
            Proto::Simple => 2,
        }
    }

    /// Base latency in µs (`baseLat`).
    pub fn base_latency_us(algo: Algo, proto: Proto) -> f64 {
        let t = match algo {
            Algo::Tree => [6.8, 14.0, 8.4],
            Algo::Ring => [6.6, 14.0, 8.4],
        };
        t[idx(proto)]
    }

    /// Per-step hardware latency in µs (`hwLat`).
    pub fn hw_latency_us(hw: Hw, algo: Algo, proto: Proto) -> f64 {
        let t = match (hw, algo) {
            (Hw::NvLink, Algo::Tree) => [0.6, 1.25, 4.0],
            (Hw::NvLink, Algo::Ring) => [0.6, 1.9, 3.4],
            (Hw::Pci, Algo::Tree) => [1.0, 1.9, 4.0],
            (Hw::Pci, Algo::Ring) => [1.0, 2.5, 5.7],
            (Hw::Net, Algo::Tree) => [5.0, 8.5, 14.0],
            (Hw::Net, Algo::Ring) => [2.7, 4.0, 14.0],
        };
        t[idx(proto)]
    }

    /// Ring steps `(nsteps, n_inter_steps)`: AllReduce `2(n-1)`, `2(nodes-1)`; ReduceScatter and
    /// AllGather `n-1`, `nodes-1`; others `n`, `nodes`. (Older NCCL used `2 * nodes` inter
    /// steps for a multi-node AllReduce.)
    pub fn ring_steps(all_reduce: bool, rs_or_ag: bool, n_ranks: u32, n_nodes: u32) -> (u32, u32) {
        let (n, m) = (n_ranks.max(1), n_nodes.max(1));
        if all_reduce {
            (2 * (n - 1), 2 * (m - 1))
        } else if rs_or_ag {
            (n - 1, m - 1)
        } else {
            (n, m)
        }
    }

    /// Ring latency: `base + (nsteps - nInterSteps) intra + nInterSteps net` µs.
    pub fn ring_latency_us(nsteps: u32, n_inter_steps: u32, proto: Proto, intra: Hw) -> f64 {
        base_latency_us(Algo::Ring, proto)
            + (nsteps - n_inter_steps.min(nsteps)) as f64 * hw_latency_us(intra, Algo::Ring, proto)
            + n_inter_steps as f64 * hw_latency_us(Hw::Net, Algo::Ring, proto)
    }

    /// Tree AllReduce latency: `base + 2((ranksPerNode-1) intra + log2(nodes) net)` µs.
    pub fn tree_latency_us(ranks_per_node: u32, n_nodes: u32, proto: Proto, intra: Hw) -> f64 {
        base_latency_us(Algo::Tree, proto)
            + 2.0
                * ((ranks_per_node.max(1) - 1) as f64 * hw_latency_us(intra, Algo::Tree, proto)
                    + (n_nodes.max(1) as f64).log2() * hw_latency_us(Hw::Net, Algo::Tree, proto))
    }

    /// `latency + bytes / (1000 * algbw)` µs, `algbw` in GB/s.
    pub fn time_us(latency_us: f64, bytes: u64, algbw_gbps: f64) -> f64 {
        latency_us + bytes as f64 / (1000.0 * algbw_gbps)
    }

    /// Ring `algbw = busbw * n / nsteps` (GB/s).
    pub fn ring_algbw(busbw_gbps: f64, n_ranks: u32, nsteps: u32) -> f64 {
        busbw_gbps * n_ranks as f64 / nsteps.max(1) as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn busbw_factors_and_the_worked_example() {
        assert_eq!(busbw_factor(NcclTestsOp::AllReduce, 8), 1.75);
        assert_eq!(busbw_factor(NcclTestsOp::AllGather, 8), 0.875);
        assert_eq!(busbw_factor(NcclTestsOp::Broadcast, 8), 1.0);
        assert_eq!(NcclTestsOp::from(CollectiveKind::AllToAll), NcclTestsOp::AllToAll);
        // models.md §4.3: 1 GiB AllReduce on 8 x H100 at ring busbw 370 GB/s takes 5.08 ms.
        let s = 1u64 << 30;
        let t = Duration((s as f64 / (370e9 / 1.75) * 1e12) as u64);
        assert!((t.as_secs_f64() * 1e3 - 5.08).abs() < 0.01, "{t}");
        assert!((busbw_gbps(NcclTestsOp::AllReduce, 8, s, t) - 370.0).abs() < 0.01);
        assert_eq!(algbw_gbps(1, Duration::ZERO), 0.0);
    }

    #[test]
    fn alpha_beta_formulas() {
        let m = AlphaBeta::new(Duration::from_ns(1), BitsPerSec::from_gbps(8)); // 1 ns per byte
        assert_eq!(ring_allreduce(4, 400, &m).ps(), 6_000 + 600_000);
        assert_eq!(ring_allgather(4, 400, &m).ps(), 3_000 + 300_000);
        assert_eq!(halving_doubling_allreduce(4, 400, &m).ps(), 4_000 + 600_000);
        assert_eq!(
            halving_doubling_allreduce(5, 400, &m).ps(),
            4_000 + 600_000 + 2_000 + 800_000
        );
        assert_eq!(broadcast_chain(4, 400, 4, &m).ps(), 3_000 + 6 * 100_000);
        assert_eq!(alltoall_direct(4, 400, &m).ps(), 1_000 + 300_000);
        assert_eq!(nvls_allreduce(4, 400, &m).ps(), 2_000 + 500_000);
        assert_eq!(double_binary_tree_allreduce(8, 400, &m).ps(), 6_000 + 800_000);
        // Hierarchical with 1 GPU per server is a plain ring over servers.
        assert_eq!(hierarchical_allreduce(4, 1, 400, &m, &m), ring_allreduce(4, 400, &m));
    }

    #[test]
    fn nccl_latency_model() {
        use nccl::*;
        // 8 GPUs on NVLink, Simple ring AllReduce: 8.4 + 14 x 3.4 = 56 µs.
        let (ns, ni) = ring_steps(true, false, 8, 1);
        assert_eq!((ns, ni), (14, 0));
        assert!((ring_latency_us(ns, ni, Proto::Simple, Hw::NvLink) - 56.0).abs() < 1e-9);
        // 16 ranks on 2 nodes, LL: 6.6 + 28 x 0.6 + 2 x 2.7.
        let (ns, ni) = ring_steps(true, false, 16, 2);
        assert!((ring_latency_us(ns, ni, Proto::Ll, Hw::NvLink) - (6.6 + 28.0 * 0.6 + 2.0 * 2.7)).abs() < 1e-9);
        // Tree: 8 per node, 4 nodes, LL128: 14 + 2 (7 x 1.25 + 2 x 8.5).
        assert!((tree_latency_us(8, 4, Proto::Ll128, Hw::NvLink) - (14.0 + 2.0 * (8.75 + 17.0))).abs() < 1e-9);
        let algbw = ring_algbw(370.0, 8, 14);
        assert!((algbw - 211.428).abs() < 0.01);
        assert!((time_us(0.0, 1 << 30, algbw) - 5078.5).abs() < 1.0);
    }
}
