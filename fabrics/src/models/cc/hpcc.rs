//! HPCC: High Precision Congestion Control (Li et al., "HPCC: High Precision Congestion
//! Control", SIGCOMM 2019), as coded in its authors' simulator HPCC-sim
//! (`alibaba-edu/High-Precision-Congestion-Control`, `simulation/src/point-to-point/model/
//! rdma-hw.cc`, CC_MODE 3: `HandleAckHp`, `UpdateRateHp`, `FastReactHp`), with the values of
//! `models.md` §2.6.
//!
//! The input is the in-band network telemetry (INT) a data packet collects at every switch
//! egress it leaves ([`IntHop`]: time, the port's cumulative transmitted bytes, its queue, its
//! rate), echoed to the sender in the ACK ([`CongestionControl::on_ack_int`]). No timer.
//!
//! ## Equations (per ACK carrying INT records `hop[0..n]`, previous records `prev[0..n]`)
//! ```text
//! per hop j:  τ_j = ts_j − ts'_j;   txRate_j = (txBytes_j − txBytes'_j)·8/τ_j
//!             u_j = txRate_j/B_j + min(qLen_j, qLen'_j)·8/(B_j·T)
//! U, τ        = the largest u_j and its τ_j;   τ ← min(τ, T)
//! EWMA        Û ← (Û·(T − τ) + U·τ)/T
//! if Û/η ≥ 1 or incStage ≥ maxStage:  R ← R_c/(Û/η) + R_AI,  incStage' = 0
//! else:                               R ← R_c + R_AI,        incStage' = incStage + 1
//! R clamped to [R_min, line rate]
//! ```
//! `T` is the base RTT, η the target utilisation. The reference rate `R_c` and `incStage`
//! take the new values only once per RTT: on an ACK whose sequence number passes
//! `lastUpdateSeq` (then `lastUpdateSeq ← snd_nxt`, the next byte the flow will send). Every
//! other ACK is a *fast reaction*: the rate R and Û are updated from `R_c` and the current
//! `incStage`, which stay as they were. The previous records are replaced on every ACK. The
//! first ACK only records `prev` and `lastUpdateSeq`. Û starts at 1 (HPCC-sim
//! `RdmaQueuePair`: `hp.u = 1`), R and R_c at the line rate.
//!
//! With the window on, at most `W = R·T/8` bytes may be in flight (sent, not acknowledged):
//! HPCC-sim's `VAR_WIN 1` (`RdmaQueuePair::GetWin`: BDP·R/line), the paper's window.
//!
//! ## Fixed point
//! Û, u and η are in parts per million (PPM_ONE = 1.0); rates in b/s; times in ps. Products
//! are `u128`, divisions truncate: bit-reproducible.
//!
//! ## Not modelled
//! HPCC-sim's 8-byte INT encoding (timestamps in ns, bytes in 128-B units, queue lengths in
//! 80-B units: the engine carries the exact values) and the INT header's bytes on the wire
//! (42 B per data packet and ACK in HPCC-sim); per-hop rates (`MULTI_RATE`); sampled feedback
//! (`SAMPLE_FEEDBACK`); HPCC-PINT. HPCC-sim's rate form `R ← R_c/(Û/η) + R_AI` is modelled
//! rather than the paper's window form `W ← W_c/(Û/η) + W_AI` (models.md §2.6, issue #70 of
//! the HPCC repository); the window follows the rate.

use super::{CongestionControl, IntHop};
use sim_core::{BitsPerSec, Bytes, Duration, SimTime, serialization_time, time::PS_PER_S};

/// One in parts per million (the unit of η and of the utilisation).
pub const PPM_ONE: u32 = 1_000_000;
/// INT records an ACK carries at most: 5 hops (HPCC-sim `IntHeader::maxHop`, models.md §2.6).
/// Switch egresses beyond the fifth add none.
pub const MAX_INT_HOPS: usize = 5;

/// η, the target utilisation: 0.95 (paper; HPCC-sim `U_TARGET 0.95`).
pub const ETA_PPM: u32 = 950_000;
/// maxStage, additive-increase steps before a multiplicative update: 5 (paper, §3.3).
pub const PAPER_MAX_STAGE: u32 = 5;
/// maxStage as HPCC-sim's `run.py` sets it (`MI_THRESH 0`): every update is multiplicative.
pub const HPCC_SIM_MAX_STAGE: u32 = 0;
/// R_AI per line rate: 10 Mb/s per 25 Gb/s of line rate (HPCC-sim `run.py`:
/// `ai = 10 * bw / 25` Mb/s with bw in Gb/s), i.e. line/2500: 40 Mb/s at 100 Gb/s.
pub const RATE_AI_PER_LINE_RATE_DIVISOR: u64 = 2500;
/// R_min, the rate floor: 100 Mb/s (HPCC-sim `RdmaHw` attribute `MinRate`).
pub const MIN_RATE_BPS: u64 = 100_000_000;

/// HPCC parameters (plain data; [`Hpcc::new`] checks them).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HpccParams {
    /// Initial rate and cap (the engine puts each flow's NIC rate here).
    pub line_rate: BitsPerSec,
    /// R_min, the rate floor (> 0).
    pub min_rate: BitsPerSec,
    /// R_AI, the additive increase per update.
    pub rate_ai: BitsPerSec,
    /// η, the target utilisation, parts per million (1..=10^6).
    pub eta_ppm: u32,
    /// maxStage: additive-increase updates in a row before a multiplicative one.
    pub max_stage: u32,
    /// T, the base RTT: the EWMA's horizon, the queue term's normaliser and the window's
    /// time. `None`: the engine fills in the largest base RTT of the run's queue pairs
    /// (HPCC-sim `GLOBAL_T 1`) before [`Hpcc::new`].
    pub base_rtt: Option<Duration>,
    /// Enforce the window W = R·T/8 bytes in flight (HPCC-sim `HAS_WIN 1`, `VAR_WIN 1`).
    pub window: bool,
    /// React to every ACK (fast reaction) rather than once per RTT only (HPCC-sim
    /// `FAST_REACT 1`).
    pub fast_react: bool,
}

impl HpccParams {
    /// The paper's HPCC (η 0.95, maxStage 5) at `line_rate`, with HPCC-sim's R_AI and R_min.
    pub fn paper(line_rate: BitsPerSec) -> Self {
        HpccParams {
            line_rate,
            min_rate: BitsPerSec(MIN_RATE_BPS.min(line_rate.0)),
            rate_ai: BitsPerSec((line_rate.0 / RATE_AI_PER_LINE_RATE_DIVISOR).max(1)),
            eta_ppm: ETA_PPM,
            max_stage: PAPER_MAX_STAGE,
            base_rtt: None,
            window: true,
            fast_react: true,
        }
    }

    /// HPCC-sim's `run.py` values (maxStage 0) at `line_rate`.
    pub fn hpcc_sim(line_rate: BitsPerSec) -> Self {
        HpccParams {
            max_stage: HPCC_SIM_MAX_STAGE,
            ..HpccParams::paper(line_rate)
        }
    }

    /// Why these parameters cannot run, if they cannot (`base_rtt` may still be `None`).
    pub fn check(&self) -> Result<(), String> {
        if self.min_rate.0 == 0 || self.min_rate > self.line_rate {
            return Err(format!(
                "min rate {} must be in 1bps..=line rate {}",
                self.min_rate, self.line_rate
            ));
        }
        if self.eta_ppm == 0 || self.eta_ppm > PPM_ONE {
            return Err("eta must be in (0, 1]".into());
        }
        if self.base_rtt.is_some_and(|t| t.ps() == 0) {
            return Err("the base RTT must be > 0".into());
        }
        Ok(())
    }
}

/// HPCC state of one flow.
#[derive(Clone, Debug)]
pub struct Hpcc {
    p: HpccParams,
    base_rtt_ps: u64,
    /// R, the rate the flow paces at.
    rate_bps: u64,
    /// R_c, the reference rate (updated once per RTT).
    ref_rate_bps: u64,
    inc_stage: u32,
    /// Û, the utilisation EWMA, ppm.
    u_ppm: u64,
    /// `None` before the first ACK with INT.
    last_update_seq: Option<u64>,
    prev: [IntHop; MAX_INT_HOPS],
    n_prev: usize,
    full_updates: u64,
    fast_reactions: u64,
}

impl Hpcc {
    /// A flow starting at line rate. Panics on invalid parameters or a missing base RTT
    /// (checked by the loader, filled in by the engine).
    pub fn new(p: HpccParams) -> Self {
        if let Err(e) = p.check() {
            panic!("invalid HPCC parameters: {e}");
        }
        let t = p
            .base_rtt
            .expect("HPCC needs its base RTT (the engine fills in `auto`)");
        Hpcc {
            base_rtt_ps: t.ps(),
            rate_bps: p.line_rate.0,
            ref_rate_bps: p.line_rate.0,
            inc_stage: 0,
            u_ppm: PPM_ONE as u64,
            last_update_seq: None,
            prev: [IntHop::default(); MAX_INT_HOPS],
            n_prev: 0,
            full_updates: 0,
            fast_reactions: 0,
            p,
        }
    }

    pub fn params(&self) -> &HpccParams {
        &self.p
    }
    /// Û, the utilisation estimate, parts per million.
    pub fn utilisation_ppm(&self) -> u64 {
        self.u_ppm
    }
    /// R_c, the reference rate.
    pub fn reference_rate(&self) -> BitsPerSec {
        BitsPerSec(self.ref_rate_bps)
    }
    pub fn inc_stage(&self) -> u32 {
        self.inc_stage
    }
    /// Once-per-RTT updates (of R_c) and fast reactions so far.
    pub fn update_counts(&self) -> (u64, u64) {
        (self.full_updates, self.fast_reactions)
    }

    /// u_j of one hop against its previous record, ppm; `None` when no time passed.
    fn hop_utilisation(&self, h: &IntHop, prev: &IntHop) -> Option<(u64, u64)> {
        let tau = h.ts.ps().checked_sub(prev.ts.ps()).filter(|&t| t > 0)?;
        let b = h.rate.0.max(1) as u128;
        let scale = 8 * PS_PER_S as u128 * PPM_ONE as u128;
        let tx = h.tx_bytes.saturating_sub(prev.tx_bytes) as u128;
        let q = h.qlen_bytes.min(prev.qlen_bytes) as u128;
        let u = tx * scale / (tau as u128 * b) + q * scale / (b * self.base_rtt_ps as u128);
        Some((u.min(u64::MAX as u128) as u64, tau))
    }

    /// One update from the records `hops`; `full`: once-per-RTT (R_c and incStage move).
    fn update(&mut self, hops: &[IntHop], full: bool) {
        let (mut big_u, mut dt, mut any) = (0u64, 0u64, false);
        for (i, h) in hops.iter().enumerate() {
            if i < self.n_prev
                && let Some((u, tau)) = self.hop_utilisation(h, &self.prev[i])
            {
                any = true;
                if u > big_u {
                    big_u = u;
                    dt = tau;
                }
            }
            self.prev[i] = *h;
        }
        self.n_prev = hops.len();
        if !any {
            return;
        }
        let t = self.base_rtt_ps as u128;
        let dt = (dt as u128).min(t);
        self.u_ppm = ((self.u_ppm as u128 * (t - dt) + big_u as u128 * dt) / t) as u64;
        let eta = self.p.eta_ppm as u64;
        let (new_rate, new_stage) = if self.u_ppm >= eta || self.inc_stage >= self.p.max_stage {
            let md = if self.u_ppm == 0 {
                u128::MAX
            } else {
                self.ref_rate_bps as u128 * eta as u128 / self.u_ppm as u128
            };
            (md.saturating_add(self.p.rate_ai.0 as u128), 0)
        } else {
            (
                self.ref_rate_bps as u128 + self.p.rate_ai.0 as u128,
                self.inc_stage.saturating_add(1),
            )
        };
        self.rate_bps = new_rate.clamp(self.p.min_rate.0 as u128, self.p.line_rate.0 as u128) as u64;
        if full {
            self.ref_rate_bps = self.rate_bps;
            self.inc_stage = new_stage;
            self.full_updates += 1;
        } else {
            self.fast_reactions += 1;
        }
    }
}

impl CongestionControl for Hpcc {
    fn on_send(&mut self, now: SimTime, wire_bytes: u32) -> SimTime {
        now + serialization_time(Bytes(wire_bytes as u64), BitsPerSec(self.rate_bps))
    }

    /// HPCC-sim `HandleAckHp`: a once-per-RTT update when `ack_seq` passes the last update's
    /// `snd_nxt`, else a fast reaction.
    fn on_ack_int(&mut self, now: SimTime, ack_seq: u64, snd_nxt: u64, hops: &[IntHop]) {
        let _ = now;
        let hops = &hops[..hops.len().min(MAX_INT_HOPS)];
        let Some(last) = self.last_update_seq else {
            self.last_update_seq = Some(snd_nxt);
            self.prev[..hops.len()].copy_from_slice(hops);
            self.n_prev = hops.len();
            return;
        };
        let full = ack_seq > last;
        if !full && !self.p.fast_react {
            return;
        }
        self.update(hops, full);
        if full && snd_nxt > last {
            self.last_update_seq = Some(snd_nxt);
        }
    }

    fn window_bytes(&self) -> Option<u64> {
        self.p.window.then(|| {
            let w = self.rate_bps as u128 * self.base_rtt_ps as u128 / (8 * PS_PER_S as u128);
            (w as u64).max(1)
        })
    }

    fn rate(&self) -> BitsPerSec {
        BitsPerSec(self.rate_bps)
    }

    /// The utilisation estimate Û (a fraction of the bottleneck) and the reference rate R_c
    /// (Gb/s).
    fn state(&self) -> super::CcState {
        super::CcState([
            Some(("hpcc_u", self.u_ppm as f64 / 1e6)),
            Some(("hpcc_ref_rate_gbps", self.ref_rate_bps as f64 / 1e9)),
        ])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const G: u64 = 1_000_000_000;

    fn hop(ts_us: u64, tx_bytes: u64, qlen_bytes: u64) -> IntHop {
        IntHop {
            ts: SimTime(ts_us * 1_000_000),
            tx_bytes,
            qlen_bytes,
            rate: BitsPerSec(100 * G),
        }
    }

    /// 100 Gb/s, T = 10 µs (BDP 125 000 B).
    fn cc(p: fn(BitsPerSec) -> HpccParams) -> Hpcc {
        let mut p = p(BitsPerSec(100 * G));
        p.base_rtt = Some(Duration::from_us(10));
        Hpcc::new(p)
    }

    /// One bottleneck hop at known utilisation and queue: every number by hand, exact
    /// (integers, truncating divisions; tolerance 0).
    #[test]
    fn one_hop_by_hand_hpcc_sim() {
        let mut c = cc(HpccParams::hpcc_sim);
        assert_eq!(c.params().rate_ai.0, 40_000_000, "10 Mb/s per 25 Gb/s");
        assert_eq!(c.window_bytes(), Some(125_000), "W = R·T/8 at line rate");
        // First ACK: records only.
        c.on_ack_int(SimTime(0), 1_000, 125_000, &[hop(0, 0, 0)]);
        assert_eq!((c.rate().0, c.utilisation_ppm()), (100 * G, 1_000_000));
        // Full update (ack 126 000 > 125 000): 125 000 B in 10 µs = 100 Gb/s, u = 1.0
        // (queue term min(100 000, 0) = 0); τ = T so Û = u = 1.0 ≥ η:
        // R = 100 G·0.95/1.0 + 40 M = 95.04 G.
        c.on_ack_int(SimTime(0), 126_000, 250_000, &[hop(10, 125_000, 100_000)]);
        assert_eq!(c.utilisation_ppm(), 1_000_000);
        assert_eq!(c.rate().0, 95_040_000_000);
        assert_eq!(c.reference_rate().0, 95_040_000_000);
        assert_eq!(c.window_bytes(), Some(118_800), "95.04 Gb/s · 10 µs / 8");
        // Fast reaction (ack 127 000 ≤ 250 000): 25 000 B in 2 µs = 100 Gb/s, queue term
        // min(150 000, 100 000)·8/(100 G·10 µs) = 0.8, u = 1.8; τ = 2 µs:
        // Û = (1.0·8 + 1.8·2)/10 = 1.16; R = R_c·0.95/1.16 + R_AI from R_c = 95.04 G.
        c.on_ack_int(SimTime(0), 127_000, 260_000, &[hop(12, 150_000, 150_000)]);
        assert_eq!(c.utilisation_ppm(), 1_160_000);
        assert_eq!(c.rate().0, 95_040_000_000u64 * 95 / 116 + 40_000_000);
        assert_eq!(c.reference_rate().0, 95_040_000_000, "R_c moves once per RTT only");
        assert_eq!(c.update_counts(), (1, 1));
        // Full update (ack 251 000 > 250 000): 100 000 B in 10 µs = 80 Gb/s, empty queue:
        // u = Û = 0.8 < η, but incStage 0 ≥ maxStage 0: R = 95.04 G·0.95/0.8 + 40 M > line.
        c.on_ack_int(SimTime(0), 251_000, 400_000, &[hop(22, 250_000, 0)]);
        assert_eq!(c.utilisation_ppm(), 800_000);
        assert_eq!(c.rate().0, 100 * G);
        assert_eq!((c.reference_rate().0, c.inc_stage()), (100 * G, 0));
        // The next full update needs an ACK beyond 400 000.
        c.on_ack_int(SimTime(0), 400_000, 500_000, &[hop(32, 350_000, 0)]);
        assert_eq!(c.update_counts(), (2, 2));
    }

    /// The paper's maxStage 5: below η the reference rate grows by R_AI per RTT for five
    /// updates, the sixth is multiplicative.
    #[test]
    fn inc_stage_counts_to_max_stage() {
        let mut c = cc(HpccParams::paper);
        c.on_ack_int(SimTime(0), 1, 10, &[hop(0, 0, 0)]);
        // One RTT at line rate: Û = 1.0 ≥ η, R = 95.04 G, incStage 0.
        c.on_ack_int(SimTime(0), 11, 20, &[hop(10, 125_000, 0)]);
        assert_eq!((c.rate().0, c.inc_stage()), (95_040_000_000, 0));
        // Then every RTT the hop sends 62 500 B: u = 0.5, and τ = T replaces Û: 0.5 < η.
        // Five additive steps; incStage = 5 makes the sixth multiplicative:
        // R = R_c·0.95/0.5 + R_AI, capped at line rate.
        let mut tx = 125_000;
        let mut want = 95_040_000_000u64;
        for k in 2..=7u64 {
            tx += 62_500;
            c.on_ack_int(SimTime(0), 10 * k + 1, 10 * (k + 1), &[hop(10 * k, tx, 0)]);
            assert_eq!(c.utilisation_ppm(), 500_000);
            let step = k - 1;
            want = if step <= 5 {
                want + 40_000_000
            } else {
                ((want as u128 * 950_000 / 500_000) as u64 + 40_000_000).min(100 * G)
            };
            assert_eq!(c.rate().0, want, "update {step}");
            assert_eq!(c.inc_stage(), if step <= 5 { step as u32 } else { 0 }, "update {step}");
        }
        assert_eq!(want, 100 * G);
    }

    /// Multiplicative decrease from a reference rate below line rate, the R_min floor, and
    /// a deep queue.
    #[test]
    fn decrease_floor_and_window() {
        let mut c = cc(HpccParams::hpcc_sim);
        c.on_ack_int(SimTime(0), 1, 10, &[hop(0, 0, 1_000_000)]);
        // Line rate out of the hop with 1 MB queued both times: u = 1 + 8 = 9;
        // R = 100 G·0.95/9 + 40 M.
        c.on_ack_int(SimTime(0), 11, 20, &[hop(10, 125_000, 1_000_000)]);
        assert_eq!(c.utilisation_ppm(), 9_000_000);
        let r1 = 100 * G * 95 / 900 + 40_000_000;
        assert_eq!(c.rate().0, r1);
        assert_eq!(c.window_bytes(), Some(r1 * 10 / 8 / 1_000_000));
        // 1 GB queued: u ≈ 8000; R far below R_min = 100 Mb/s: floored.
        c.on_ack_int(SimTime(0), 21, 30, &[hop(20, 250_000, 1_000_000_000)]);
        c.on_ack_int(SimTime(0), 31, 40, &[hop(30, 375_000, 1_000_000_000)]);
        assert_eq!(c.rate().0, MIN_RATE_BPS);
        // Pacing at the rate: 1000 B at 100 Mb/s = 80 µs.
        assert_eq!(c.on_send(SimTime(0), 1000), SimTime(80_000_000));
    }

    /// The hop with the largest u decides, with its τ; a hop with no time elapsed is
    /// skipped; more than five records are cut to five; no window when it is off.
    #[test]
    fn bottleneck_hop_decides() {
        let mut p = HpccParams::hpcc_sim(BitsPerSec(100 * G));
        p.base_rtt = Some(Duration::from_us(10));
        p.window = false;
        let mut c = Hpcc::new(p);
        assert_eq!(c.window_bytes(), None);
        let six = [hop(0, 0, 0); 6];
        c.on_ack_int(SimTime(0), 1, 10, &six);
        // Hop 0 at 50 % over 5 µs, hop 1 at 100 % over 5 µs: U = 1.0, τ = 5 µs:
        // Û = (1.0·5 + 1.0·5)/10 = 1.0; R = 100 G·0.95 + 40 M.
        let h = [hop(5, 31_250, 0), hop(5, 62_500, 0)];
        c.on_ack_int(SimTime(0), 11, 20, &h);
        assert_eq!(c.utilisation_ppm(), 1_000_000);
        assert_eq!(c.rate().0, 95_040_000_000);
        // Same timestamps again (τ = 0 on every hop): nothing moves.
        c.on_ack_int(SimTime(0), 21, 30, &h);
        assert_eq!(c.rate().0, 95_040_000_000);
        assert_eq!(c.update_counts(), (1, 0));
    }

    #[test]
    fn fast_react_off_waits_for_the_rtt() {
        let mut p = HpccParams::hpcc_sim(BitsPerSec(100 * G));
        p.base_rtt = Some(Duration::from_us(10));
        p.fast_react = false;
        let mut c = Hpcc::new(p);
        c.on_ack_int(SimTime(0), 1, 100, &[hop(0, 0, 0)]);
        c.on_ack_int(SimTime(0), 50, 150, &[hop(10, 125_000, 500_000)]);
        assert_eq!(c.rate().0, 100 * G, "an ACK within the RTT changes nothing");
        // The once-per-RTT update compares with the first record (the ignored ACK left it):
        // 125 000 B in 10 µs, queue min(500 000, 0) = 0: Û = 1.0, R = 95.04 G.
        c.on_ack_int(SimTime(0), 101, 200, &[hop(10, 125_000, 500_000)]);
        assert_eq!(c.rate().0, 95_040_000_000);
        assert_eq!(c.update_counts(), (1, 0));
    }

    #[test]
    fn checks() {
        let mut p = HpccParams::paper(BitsPerSec(100 * G));
        assert!(p.check().is_ok());
        p.eta_ppm = 0;
        assert!(p.check().is_err());
        p.eta_ppm = ETA_PPM;
        p.base_rtt = Some(Duration::ZERO);
        assert!(p.check().is_err());
        p.base_rtt = None;
        p.min_rate = BitsPerSec(0);
        assert!(p.check().is_err());
    }
}
