//! Congestion marking at switch egress queues: ECN (RED-style Kmin/Kmax/Pmax, RFC 3168 and
//! the DCQCN paper), InfiniBand FECN (IBA Annex A10). The plain variant, [`NoMarking`],
//! never marks; [`RedEcn`] marks RoCEv2 packets CE.
//!
//! A scheme marks either when a packet joins the queue or when it leaves it
//! ([`MarkPoint`]); the engine calls both hooks and each scheme answers only at its point.

use rand::Rng;
use sim_core::SimRng;

/// Hooks of a marking scheme.
pub trait Marking {
    /// Fires when a packet leaves an egress queue with `queued_bytes` still waiting behind it
    /// (HPCC-sim marks at dequeue, `switch-node.cc: SwitchNotifyDequeue`): `true` marks it.
    fn mark_on_dequeue(&mut self, port: u32, queued_bytes: u64) -> bool {
        let _ = (port, queued_bytes);
        false
    }

    /// Fires when a packet joins an egress queue with `queued_bytes` waiting ahead of it
    /// (RED at enqueue, RFC 3168 / ns3-rdma `ShouldSendCN` on enqueue): `true` marks it.
    fn mark_on_enqueue(&mut self, port: u32, queued_bytes: u64) -> bool {
        let _ = (port, queued_bytes);
        false
    }
}

/// Never marks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NoMarking;

impl Marking for NoMarking {}

/// Where in the egress queue a scheme evaluates the queue length.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum MarkPoint {
    /// When the packet joins the queue (queue ahead of it).
    Enqueue,
    /// When the packet leaves the queue (queue behind it): fresher feedback, HPCC-sim's
    /// choice (models.md §2.1, §2.3).
    #[default]
    Dequeue,
}

/// One in parts per million (the unit of Pmax).
pub const PPM_ONE: u32 = 1_000_000;

/// DCQCN paper, 40G: Kmin 5 KB (models.md §2.4).
pub const DCQCN_PAPER_KMIN_BYTES: u64 = 5_000;
/// DCQCN paper, 40G: Kmax 200 KB.
pub const DCQCN_PAPER_KMAX_BYTES: u64 = 200_000;
/// DCQCN paper: Pmax 1%.
pub const DCQCN_PAPER_PMAX_PPM: u32 = 10_000;
/// HPCC-sim: Kmin = 100 KB per 25 Gb/s of link rate (`run.py`, models.md §2.4).
pub const HPCC_SIM_KMIN_BYTES_PER_25G: u64 = 100_000;
/// HPCC-sim: Kmax = 400 KB per 25 Gb/s of link rate.
pub const HPCC_SIM_KMAX_BYTES_PER_25G: u64 = 400_000;
/// HPCC-sim: Pmax 0.2.
pub const HPCC_SIM_PMAX_PPM: u32 = 200_000;
/// NVIDIA Onyx / Cumulus RoCE lossless default: Kmin 150 KB ("absolute" mode).
pub const ONYX_KMIN_BYTES: u64 = 150_000;
/// NVIDIA Onyx / Cumulus RoCE lossless default: Kmax 1500 KB.
pub const ONYX_KMAX_BYTES: u64 = 1_500_000;
/// Onyx marking probability at Kmax: not given in models.md; 100% assumed.
pub const ONYX_PMAX_PPM: u32 = PPM_ONE;

/// RED/ECN marking parameters (plain data):
/// p(q) = 0 for q ≤ Kmin; Pmax·(q − Kmin)/(Kmax − Kmin) for Kmin < q ≤ Kmax; 1 for q > Kmax
/// (HPCC-sim `switch-mmu.cc: ShouldSendCN`, same in ns3-rdma; models.md §2.4).
/// Keep Kmax below the PFC XOFF threshold so that ECN acts before PFC (DCQCN §5).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RedParams {
    /// Kmin: at or below, never mark (bytes of the egress queue).
    pub kmin_bytes: u64,
    /// Kmax: above, always mark (bytes; ≥ Kmin).
    pub kmax_bytes: u64,
    /// Pmax: marking probability at Kmax, parts per million (0..=10^6).
    pub pmax_ppm: u32,
    /// Evaluate at enqueue or dequeue.
    pub point: MarkPoint,
}

impl RedParams {
    /// DCQCN paper values (40G; Kmin 5 KB, Kmax 200 KB, Pmax 1%), marking at dequeue.
    pub fn dcqcn_paper() -> Self {
        RedParams {
            kmin_bytes: DCQCN_PAPER_KMIN_BYTES,
            kmax_bytes: DCQCN_PAPER_KMAX_BYTES,
            pmax_ppm: DCQCN_PAPER_PMAX_PPM,
            point: MarkPoint::Dequeue,
        }
    }

    /// HPCC-sim's rule for a link of `rate` (Kmin 100 KB, Kmax 400 KB per 25 Gb/s, Pmax 0.2;
    /// e.g. 400 KB / 1600 KB at 100G), marking at dequeue.
    pub fn hpcc_sim(rate: sim_core::BitsPerSec) -> Self {
        let per25 = |b: u64| (b as u128 * rate.0 as u128 / 25_000_000_000u128) as u64;
        RedParams {
            kmin_bytes: per25(HPCC_SIM_KMIN_BYTES_PER_25G),
            kmax_bytes: per25(HPCC_SIM_KMAX_BYTES_PER_25G),
            pmax_ppm: HPCC_SIM_PMAX_PPM,
            point: MarkPoint::Dequeue,
        }
    }

    /// NVIDIA Onyx "roce lossless" default (150 KB / 1500 KB), marking at dequeue.
    pub fn onyx() -> Self {
        RedParams {
            kmin_bytes: ONYX_KMIN_BYTES,
            kmax_bytes: ONYX_KMAX_BYTES,
            pmax_ppm: ONYX_PMAX_PPM,
            point: MarkPoint::Dequeue,
        }
    }

    /// Why these parameters cannot run, if they cannot.
    pub fn check(&self) -> Result<(), String> {
        if self.kmax_bytes < self.kmin_bytes {
            return Err(format!(
                "Kmax {} B is below Kmin {} B",
                self.kmax_bytes, self.kmin_bytes
            ));
        }
        if self.pmax_ppm > PPM_ONE {
            return Err("Pmax must be <= 1".into());
        }
        Ok(())
    }

    /// Marking probability at queue length `q` in parts per million (exact up to the
    /// rounding down of the division; the decision in [`RedParams::decide`] is exact).
    pub fn probability_ppm(&self, queued_bytes: u64) -> u32 {
        if queued_bytes <= self.kmin_bytes {
            0
        } else if queued_bytes > self.kmax_bytes {
            PPM_ONE
        } else {
            let span = (self.kmax_bytes - self.kmin_bytes) as u128;
            (self.pmax_ppm as u128 * (queued_bytes - self.kmin_bytes) as u128 / span) as u32
        }
    }

    /// Whether to mark at queue length `q`, drawing at most one `u64` from `rng` (only
    /// between Kmin and Kmax). Exact: marks iff `u < Pmax·(q − Kmin)` for `u` uniform on
    /// `[0, 10^6·(Kmax − Kmin))` (Lemire's multiply-shift; bias below 2^-40).
    pub fn decide<R: Rng + ?Sized>(&self, queued_bytes: u64, rng: &mut R) -> bool {
        self.decide_with(queued_bytes, || rng.next_u64())
    }

    /// [`RedParams::decide`] with the draw asked for only when it is needed (`draw` is
    /// called at most once, only between Kmin and Kmax).
    pub fn decide_with(&self, queued_bytes: u64, draw: impl FnOnce() -> u64) -> bool {
        if queued_bytes <= self.kmin_bytes {
            return false;
        }
        if queued_bytes > self.kmax_bytes {
            return true;
        }
        let span = (self.kmax_bytes - self.kmin_bytes) as u128 * PPM_ONE as u128;
        let u = (draw() as u128 * span) >> 64;
        u < self.pmax_ppm as u128 * (queued_bytes - self.kmin_bytes) as u128
    }
}

/// RED-style ECN marking, each egress port drawing from a seeded random stream of its own:
/// port `p` draws from stream `first_stream + p` of `streams` (`sim_core::RngStreams`),
/// made at its first draw (most ports never queue past Kmin, so most never have one).
///
/// Why a stream per port rather than one for the fabric: a port's draws then happen in its
/// own event order, which is the same however the run is split (`fabricsim run --threads`
/// hands a port's events to one partition), and the numbers one port draws do not shift
/// when traffic elsewhere changes (common random numbers across the runs of a comparison).
#[derive(Clone, Debug)]
pub struct RedEcn {
    params: RedParams,
    streams: sim_core::RngStreams,
    first_stream: u64,
    /// Per port, its stream once it has drawn (boxed: the ChaCha state is ~300 B).
    rngs: Vec<Option<Box<SimRng>>>,
    marked: u64,
}

impl RedEcn {
    /// Marking by `params`, port `p` drawing from stream `first_stream + p` of `streams`.
    /// Panics on invalid parameters (the scenario loader checks them first).
    pub fn new(params: RedParams, streams: sim_core::RngStreams, first_stream: u64) -> Self {
        if let Err(e) = params.check() {
            panic!("invalid RED parameters: {e}");
        }
        RedEcn {
            params,
            streams,
            first_stream,
            rngs: Vec::new(),
            marked: 0,
        }
    }
    pub fn params(&self) -> &RedParams {
        &self.params
    }
    /// Packets marked so far.
    pub fn marked(&self) -> u64 {
        self.marked
    }
    fn decide(&mut self, port: u32, queued_bytes: u64) -> bool {
        let (streams, id, rngs) = (self.streams, self.first_stream + port as u64, &mut self.rngs);
        // The port's stream is made at its first draw (outside (Kmin, Kmax] there is none).
        let m = self.params.decide_with(queued_bytes, || {
            let i = port as usize;
            if i >= rngs.len() {
                rngs.resize(i + 1, None);
            }
            rngs[i].get_or_insert_with(|| Box::new(streams.stream(id))).next_u64()
        });
        self.marked += m as u64;
        m
    }

    /// Takes another partition's state for the ports it ran (`theirs[p]`) and adds its count
    /// (`fabrics::engine::partition`).
    pub fn absorb(&mut self, o: &mut RedEcn, theirs: &[bool]) {
        for (p, rng) in o.rngs.iter_mut().enumerate() {
            if theirs.get(p).copied().unwrap_or(false) {
                if p >= self.rngs.len() {
                    self.rngs.resize(p + 1, None);
                }
                self.rngs[p] = rng.take();
            }
        }
        self.marked += o.marked;
    }
}

impl Marking for RedEcn {
    fn mark_on_dequeue(&mut self, port: u32, queued_bytes: u64) -> bool {
        self.params.point == MarkPoint::Dequeue && self.decide(port, queued_bytes)
    }
    fn mark_on_enqueue(&mut self, port: u32, queued_bytes: u64) -> bool {
        self.params.point == MarkPoint::Enqueue && self.decide(port, queued_bytes)
    }
}

/// The closed set of marking schemes.
#[derive(Clone, Debug, Default)]
pub enum AnyMarking {
    #[default]
    None,
    Red(RedEcn),
}

impl AnyMarking {
    pub fn name(&self) -> &'static str {
        match self {
            AnyMarking::None => "none",
            AnyMarking::Red(_) => "red_ecn",
        }
    }
}

impl Marking for AnyMarking {
    #[inline]
    fn mark_on_dequeue(&mut self, port: u32, queued_bytes: u64) -> bool {
        match self {
            AnyMarking::None => NoMarking.mark_on_dequeue(port, queued_bytes),
            AnyMarking::Red(m) => m.mark_on_dequeue(port, queued_bytes),
        }
    }
    #[inline]
    fn mark_on_enqueue(&mut self, port: u32, queued_bytes: u64) -> bool {
        match self {
            AnyMarking::None => NoMarking.mark_on_enqueue(port, queued_bytes),
            AnyMarking::Red(m) => m.mark_on_enqueue(port, queued_bytes),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sim_core::RngStreams;

    #[test]
    fn none_never_marks() {
        let mut m = AnyMarking::None;
        assert!(!m.mark_on_dequeue(0, 0));
        assert!(!m.mark_on_dequeue(0, u64::MAX));
        assert!(!m.mark_on_enqueue(0, u64::MAX));
    }

    #[test]
    fn red_probability_curve() {
        let p = RedParams::dcqcn_paper();
        assert_eq!(p.probability_ppm(5_000), 0);
        assert_eq!(p.probability_ppm(102_500), 5_000); // halfway: Pmax/2 = 0.5%
        assert_eq!(p.probability_ppm(200_000), 10_000);
        assert_eq!(p.probability_ppm(200_001), PPM_ONE);
        let h = RedParams::hpcc_sim(sim_core::BitsPerSec::from_gbps(100));
        assert_eq!((h.kmin_bytes, h.kmax_bytes, h.pmax_ppm), (400_000, 1_600_000, 200_000));
    }

    #[test]
    fn red_decisions_deterministic_and_at_the_right_rate() {
        let p = RedParams {
            kmin_bytes: 0,
            kmax_bytes: 100,
            pmax_ppm: PPM_ONE,
            point: MarkPoint::Dequeue,
        };
        let run = |seed| {
            let mut m = AnyMarking::Red(RedEcn::new(p, RngStreams::new(seed), 7));
            (0..100_000).filter(|_| m.mark_on_dequeue(0, 25)).count()
        };
        let a = run(1);
        assert_eq!(a, run(1), "same seed, same marks");
        // p = 25%: 25 000 ± 5 sigma (sigma = 137).
        assert!((24_300..=25_700).contains(&a), "{a}");
        // Below Kmin never, above Kmax always, without consuming randomness.
        let mut r = RedEcn::new(RedParams::dcqcn_paper(), RngStreams::new(1), 7);
        assert!(!r.mark_on_dequeue(0, 5_000));
        assert!(r.mark_on_dequeue(0, 200_001));
        assert!(!r.mark_on_enqueue(0, 200_001), "configured for dequeue");
        assert_eq!(r.marked(), 1);
    }

    /// A port's marks depend on its own draws only, whatever other ports draw in between;
    /// ports differ; a partition's ports carry on in the fabric that absorbs it.
    #[test]
    fn each_port_draws_from_a_stream_of_its_own() {
        let p = RedParams {
            kmin_bytes: 0,
            kmax_bytes: 100,
            pmax_ppm: PPM_ONE,
            point: MarkPoint::Dequeue,
        };
        let fresh = || RedEcn::new(p, RngStreams::new(9), 100);
        let mut alone = fresh();
        let port1: Vec<bool> = (0..1000).map(|_| alone.mark_on_dequeue(1, 50)).collect();
        let mut mixed = fresh();
        let port1_mixed: Vec<bool> = (0..1000)
            .map(|_| {
                mixed.mark_on_dequeue(0, 50);
                mixed.mark_on_dequeue(1, 50)
            })
            .collect();
        assert_eq!(port1, port1_mixed);
        let mut other = fresh();
        let port0: Vec<bool> = (0..1000).map(|_| other.mark_on_dequeue(0, 50)).collect();
        assert_ne!(port0, port1, "ports draw from different streams");
        // Partition 0 ran port 0, partition 1 port 1; folded, port 1 goes on where it was.
        let (mut a, mut b) = (fresh(), fresh());
        for _ in 0..10 {
            a.mark_on_dequeue(0, 50);
        }
        for _ in 0..10 {
            b.mark_on_dequeue(1, 50);
        }
        let marked = a.marked() + b.marked();
        let next_b: Vec<bool> = {
            let mut c = b.clone();
            (0..100).map(|_| c.mark_on_dequeue(1, 50)).collect()
        };
        a.absorb(&mut b, &[false, true]);
        assert_eq!(a.marked(), marked);
        let next_a: Vec<bool> = (0..100).map(|_| a.mark_on_dequeue(1, 50)).collect();
        assert_eq!(next_a, next_b);
    }

    #[test]
    fn enqueue_point() {
        let mut p = RedParams::onyx();
        p.point = MarkPoint::Enqueue;
        let mut m = AnyMarking::Red(RedEcn::new(p, RngStreams::new(3), 1));
        assert!(m.mark_on_enqueue(0, 1_500_001));
        assert!(!m.mark_on_dequeue(0, 1_500_001));
        assert_eq!(m.name(), "red_ecn");
        let mut bad = RedParams::onyx();
        bad.kmax_bytes = 1;
        assert!(bad.check().is_err());
    }
}
