//! DCQCN reaction point (RP): the per-flow rate limiter of a RoCEv2 sender NIC.
//!
//! Source: Zhu et al., "Congestion Control for Large-Scale RDMA Deployments", SIGCOMM 2015
//! (§3, Algorithm of the RP), as coded by its author in `bobzhuyb/ns3-rdma`
//! (`qbb-net-device.cc`, `rpr_*`), and the NVIDIA ConnectX firmware variant ("RoCE CC ECN",
//! `mlx5_ifc.h: cong_control_r_roce_ecn_rp`) as modelled by HPCC-sim (`rdma-hw.cc`,
//! CC_MODE 1). Every number below is from `shared/reference/models.md` §2.5.
//! The congestion point (RED/ECN marking, [`crate::models::marking`]) and the notification
//! point (CNP generation with a minimum interval per QP, at the receiver) are not here.
//!
//! ## Equations (per flow; R_C current rate, R_T target rate, α congestion estimate)
//! - **CNP** ([`Dcqcn::on_cnp`]): R_T ← R_C (see [`TargetClamp`]);
//!   R_C ← max(R_min, R_C·(1 − α/2)) (never below `min_decrease_pct`% of R_C);
//!   α ← (1 − g)·α + g; the stage counters i_T, i_B and the byte counter restart, the
//!   rate-increase timer restarts at `now + T`, the α timer restarts at `now`.
//!   With a `decrease_period` > 0 (firmware `RATE_REDUCE_MONITOR_PERIOD`) at most one
//!   decrease happens per period; a CNP inside the period only updates α.
//! - **α decay**: every K without a CNP, α ← (1 − g)·α.
//! - **Rate-increase events**: the timer (period T) expires, or B bytes have been sent since
//!   the last event; the event bumps its counter (i_T or i_B). Then, with the counters after
//!   the bump:
//!   - **fast recovery** while max(i_T, i_B) ≤ F: R_C ← ⌈(R_T + R_C)/2⌉;
//!   - **additive increase** when one counter > F: R_T ← R_T + R_AI, R_C ← (R_T + R_C)/2;
//!   - **hyper increase** when both > F: R_T ← R_T + i·R_HAI with i = min(i_T, i_B) − F,
//!     R_C ← (R_T + R_C)/2; in this stage the timer period is T/2 and the byte counter B/2
//!     when `hyper_halves` (author's code).
//!
//!   R_T and R_C are capped at the line rate. The counting follows the paper and HPCC-sim
//!   (F fast-recovery steps, then AI); the author's ns3 code runs one fewer fast-recovery step.
//!
//! ## Timers and determinism
//! The α decay timer needs no event: α is brought up to date lazily (exactly as if a timer had
//! fired every K since the last CNP) whenever a hook runs. The rate-increase timer is the one
//! event the engine schedules ([`CongestionControl::next_timer`]); every hook first processes
//! all increase events due at or before `now` (timer events at the same instant as a CNP are
//! handled before the CNP). The timer stops once R_C and R_T are back at line rate, so a
//! recovered flow costs no events.
//!
//! Rates are integer b/s, α is a Q20 fixed-point fraction (`ALPHA_ONE` = 1.0), all products
//! are in `u128` and round down: results are bit-reproducible.
//!
//! ## Not modelled
//! The author's `AdjustRates` quirk (R_T ← R_T/8 on the first increase when R_T > 10·R_C),
//! per-hop rate limiters (`maxHop`), the firmware's fixed 1 µs α-update grid (the α grid here
//! is anchored at the last CNP; at most one CNP per window reaches a QP anyway because the
//! receiver rate-limits CNPs), `RATE_TO_SET_ON_FIRST_CNP` ≠ 0.

use super::CongestionControl;
use sim_core::{BitsPerSec, Bytes, Duration, SimTime, serialization_time};

/// Fixed-point one for α and g (Q20).
pub const ALPHA_ONE: u32 = 1 << 20;

// ---- paper parameters (Zhu et al. SIGCOMM'15; models.md §2.5.1) ------------------------------

/// g = 1/256 (paper; ns3-rdma `DCTCP_GAIN 0.00390625`), in Q20.
pub const PAPER_G_Q20: u32 = ALPHA_ONE / 256;
/// K, the α-decay period: 55 µs (paper; ns3-rdma `AlphaResumInterval`).
pub const PAPER_ALPHA_PERIOD_PS: u64 = 55_000_000;
/// T, the rate-increase timer: 55 µs (paper).
pub const PAPER_INCREASE_PERIOD_PS: u64 = 55_000_000;
/// B, the byte counter: 10 MB (paper).
pub const PAPER_BYTE_COUNTER_BYTES: u64 = 10_000_000;
/// F, fast-recovery steps: 5 (paper).
pub const PAPER_FAST_RECOVERY_STEPS: u32 = 5;
/// R_AI, additive increase: 40 Mb/s (paper).
pub const PAPER_RATE_AI_BPS: u64 = 40_000_000;
/// R_HAI, hyper increase: 200 Mb/s (author's sample config `RATE_HAI 200Mb/s`).
pub const PAPER_RATE_HAI_BPS: u64 = 200_000_000;
/// R_min: 100 Mb/s (ns3-rdma code default `MinRate`).
pub const PAPER_MIN_RATE_BPS: u64 = 100_000_000;

// ---- NVIDIA ConnectX firmware defaults (models.md §2.5.2, HPCC-sim §2.5.3) -------------------

/// g = 1/256 as in HPCC-sim's firmware-like DCQCN (`EWMA_GAIN`); the firmware's
/// `DCE_TCP_G = 1019` has an unverified interpretation (models.md §2.5.2, §7).
pub const FIRMWARE_G_Q20: u32 = ALPHA_ONE / 256;
/// α update period: 1 µs (`DCE_TCP_RTT 1`; HPCC-sim `ALPHA_RESUME_INTERVAL 1`).
pub const FIRMWARE_ALPHA_PERIOD_PS: u64 = 1_000_000;
/// Initial α: 1023/1024 (`INITIAL_ALPHA_VALUE 1023`).
pub const FIRMWARE_INITIAL_ALPHA_Q20: u32 = 1023 << 10;
/// T: 300 µs (`RPG_TIME_RESET 300`).
pub const FIRMWARE_INCREASE_PERIOD_PS: u64 = 300_000_000;
/// B: 32767 B (`RPG_BYTE_RESET`).
pub const FIRMWARE_BYTE_COUNTER_BYTES: u64 = 32_767;
/// F: 1 (`RPG_THRESHOLD`).
pub const FIRMWARE_FAST_RECOVERY_STEPS: u32 = 1;
/// R_AI: 5 Mb/s (`RPG_AI_RATE`).
pub const FIRMWARE_RATE_AI_BPS: u64 = 5_000_000;
/// R_HAI: 50 Mb/s (`RPG_HAI_RATE`).
pub const FIRMWARE_RATE_HAI_BPS: u64 = 50_000_000;
/// R_min: 1 Mb/s (`RPG_MIN_RATE`).
pub const FIRMWARE_MIN_RATE_BPS: u64 = 1_000_000;
/// A decrease never cuts below 50% of the current rate (`RPG_MIN_DEC_FAC 50`).
pub const FIRMWARE_MIN_DECREASE_PCT: u32 = 50;
/// At most one decrease per 4 µs (`RATE_REDUCE_MONITOR_PERIOD 4`).
pub const FIRMWARE_DECREASE_PERIOD_PS: u64 = 4_000_000;

/// When a CNP sets the target rate to the current rate (R_T ← R_C).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TargetClamp {
    /// Always (the paper's equation; ns3-rdma `CLAMP_TARGET_RATE 1` in the author's config).
    Always,
    /// Only if a rate-increase event (timer or bytes) happened since the last CNP
    /// (firmware `CLAMP_TGT_RATE_AFTER_TIME_INC 1`).
    AfterAnyIncrease,
    /// Only if a byte-counter event happened since the last CNP (ns3-rdma code default).
    AfterByteIncrease,
}

/// DCQCN reaction-point parameters (plain data; [`Dcqcn::new`] checks them).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DcqcnParams {
    /// NIC line rate: the initial rate and the cap of R_C and R_T.
    pub line_rate: BitsPerSec,
    /// R_min: the rate never drops below it (> 0).
    pub min_rate: BitsPerSec,
    /// g, the α gain, in Q20 (`ALPHA_ONE` = 1.0); 16 ≤ g ≤ `ALPHA_ONE`.
    pub g_q20: u32,
    /// α before the first CNP, in Q20.
    pub initial_alpha_q20: u32,
    /// K, the α-decay period (> 0).
    pub alpha_period: Duration,
    /// T, the rate-increase timer period (> 0).
    pub increase_period: Duration,
    /// B, bytes (wire bytes) sent per byte-counter event; 0 disables the byte counter.
    pub byte_counter_bytes: u64,
    /// F, the number of fast-recovery steps.
    pub fast_recovery_steps: u32,
    /// R_AI, the additive increase of R_T.
    pub rate_ai: BitsPerSec,
    /// R_HAI, the hyper increase of R_T per hyper step.
    pub rate_hai: BitsPerSec,
    /// A decrease keeps at least this percentage of R_C (0..=100; 0: no limit).
    pub min_decrease_pct: u32,
    /// At most one decrease per this period (`Duration::ZERO`: every CNP decreases).
    pub decrease_period: Duration,
    /// When a CNP clamps R_T to R_C.
    pub clamp: TargetClamp,
    /// In hyper increase, halve the timer period and the byte counter (author's code).
    pub hyper_halves: bool,
}

impl DcqcnParams {
    /// The paper's parameters (models.md §2.5.1) at `line_rate`.
    pub fn paper(line_rate: BitsPerSec) -> Self {
        DcqcnParams {
            line_rate,
            min_rate: BitsPerSec(PAPER_MIN_RATE_BPS),
            g_q20: PAPER_G_Q20,
            initial_alpha_q20: ALPHA_ONE,
            alpha_period: Duration(PAPER_ALPHA_PERIOD_PS),
            increase_period: Duration(PAPER_INCREASE_PERIOD_PS),
            byte_counter_bytes: PAPER_BYTE_COUNTER_BYTES,
            fast_recovery_steps: PAPER_FAST_RECOVERY_STEPS,
            rate_ai: BitsPerSec(PAPER_RATE_AI_BPS),
            rate_hai: BitsPerSec(PAPER_RATE_HAI_BPS),
            min_decrease_pct: 0,
            decrease_period: Duration::ZERO,
            clamp: TargetClamp::Always,
            hyper_halves: true,
        }
    }

    /// NVIDIA ConnectX firmware defaults (models.md §2.5.2) at `line_rate`.
    pub fn connectx_firmware(line_rate: BitsPerSec) -> Self {
        DcqcnParams {
            line_rate,
            min_rate: BitsPerSec(FIRMWARE_MIN_RATE_BPS),
            g_q20: FIRMWARE_G_Q20,
            initial_alpha_q20: FIRMWARE_INITIAL_ALPHA_Q20,
            alpha_period: Duration(FIRMWARE_ALPHA_PERIOD_PS),
            increase_period: Duration(FIRMWARE_INCREASE_PERIOD_PS),
            byte_counter_bytes: FIRMWARE_BYTE_COUNTER_BYTES,
            fast_recovery_steps: FIRMWARE_FAST_RECOVERY_STEPS,
            rate_ai: BitsPerSec(FIRMWARE_RATE_AI_BPS),
            rate_hai: BitsPerSec(FIRMWARE_RATE_HAI_BPS),
            min_decrease_pct: FIRMWARE_MIN_DECREASE_PCT,
            decrease_period: Duration(FIRMWARE_DECREASE_PERIOD_PS),
            clamp: TargetClamp::AfterAnyIncrease,
            hyper_halves: false,
        }
    }

    /// Why these parameters cannot run, if they cannot.
    pub fn check(&self) -> Result<(), String> {
        if self.line_rate.0 == 0 {
            return Err("line rate must be > 0".into());
        }
        if self.min_rate.0 == 0 || self.min_rate > self.line_rate {
            return Err(format!(
                "min rate {} must be in 1bps..=line rate {}",
                self.min_rate, self.line_rate
            ));
        }
        if self.g_q20 < 16 || self.g_q20 > ALPHA_ONE {
            return Err(format!("g = {}/2^20 must be in 16/2^20..=1", self.g_q20));
        }
        if self.initial_alpha_q20 > ALPHA_ONE {
            return Err("initial alpha must be <= 1".into());
        }
        if self.alpha_period.ps() == 0 || self.increase_period.ps() < 2 {
            return Err("alpha and increase periods must be > 0".into());
        }
        if self.min_decrease_pct > 100 {
            return Err("min_decrease_pct must be <= 100".into());
        }
        Ok(())
    }
}

/// Which rate-increase stage the reaction point is in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stage {
    FastRecovery,
    AdditiveIncrease,
    HyperIncrease,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum IncreaseEvent {
    Timer,
    Bytes,
}

/// DCQCN reaction point of one flow. See the module docs for the equations.
#[derive(Clone, Debug)]
pub struct Dcqcn {
    p: DcqcnParams,
    /// R_C, b/s.
    rc_bps: u64,
    /// R_T, b/s.
    rt_bps: u64,
    alpha_q20: u32,
    /// Start of the current α-decay period (`None` before the first CNP: no decay yet).
    alpha_anchor: Option<SimTime>,
    /// i_T and i_B: rate-increase events since the last decrease.
    timer_events: u32,
    byte_events: u32,
    /// Wire bytes sent since the last byte-counter event.
    bytes_counted: u64,
    /// Next rate-increase timer expiry; `None` when not recovering.
    timer_at: Option<SimTime>,
    last_decrease: Option<SimTime>,
    cnps: u64,
    decreases: u64,
}

impl Dcqcn {
    /// A reaction point at line rate. Panics on invalid parameters (the scenario loader
    /// checks them first with [`DcqcnParams::check`]).
    pub fn new(p: DcqcnParams) -> Self {
        if let Err(e) = p.check() {
            panic!("invalid DCQCN parameters: {e}");
        }
        Dcqcn {
            rc_bps: p.line_rate.0,
            rt_bps: p.line_rate.0,
            alpha_q20: p.initial_alpha_q20,
            alpha_anchor: None,
            timer_events: 0,
            byte_events: 0,
            bytes_counted: 0,
            timer_at: None,
            last_decrease: None,
            cnps: 0,
            decreases: 0,
            p,
        }
    }

    pub fn params(&self) -> &DcqcnParams {
        &self.p
    }
    /// R_T.
    pub fn target_rate(&self) -> BitsPerSec {
        BitsPerSec(self.rt_bps)
    }
    /// α in Q20 as of the last hook call (decay is applied lazily).
    pub fn alpha_q20(&self) -> u32 {
        self.alpha_q20
    }
    /// (i_T, i_B): rate-increase events since the last decrease.
    pub fn increase_events(&self) -> (u32, u32) {
        (self.timer_events, self.byte_events)
    }
    pub fn stage(&self) -> Stage {
        let (lo, hi) = self.counters_lo_hi();
        let f = self.p.fast_recovery_steps;
        if hi <= f {
            Stage::FastRecovery
        } else if lo <= f {
            Stage::AdditiveIncrease
        } else {
            Stage::HyperIncrease
        }
    }
    /// CNPs received and decreases applied so far.
    pub fn cnp_count(&self) -> u64 {
        self.cnps
    }
    pub fn decrease_count(&self) -> u64 {
        self.decreases
    }

    /// (min, max) of the stage counters; with the byte counter disabled only i_T counts.
    fn counters_lo_hi(&self) -> (u32, u32) {
        if self.p.byte_counter_bytes == 0 {
            (self.timer_events, self.timer_events)
        } else {
            (
                self.timer_events.min(self.byte_events),
                self.timer_events.max(self.byte_events),
            )
        }
    }

    fn hyper_halving(&self) -> bool {
        self.p.hyper_halves && self.stage() == Stage::HyperIncrease
    }

    fn increase_period_now(&self) -> Duration {
        if self.hyper_halving() {
            Duration(self.p.increase_period.ps() / 2)
        } else {
            self.p.increase_period
        }
    }

    fn byte_threshold_now(&self) -> u64 {
        if self.hyper_halving() {
            self.p.byte_counter_bytes.div_ceil(2)
        } else {
            self.p.byte_counter_bytes
        }
    }

    fn recovered(&self) -> bool {
        self.rc_bps == self.p.line_rate.0 && self.rt_bps == self.p.line_rate.0
    }

    /// One rate-increase event.
    fn increase(&mut self, ev: IncreaseEvent) {
        match ev {
            IncreaseEvent::Timer => self.timer_events = self.timer_events.saturating_add(1),
            IncreaseEvent::Bytes => self.byte_events = self.byte_events.saturating_add(1),
        }
        let line = self.p.line_rate.0;
        match self.stage() {
            Stage::FastRecovery => {}
            Stage::AdditiveIncrease => self.rt_bps = self.rt_bps.saturating_add(self.p.rate_ai.0).min(line),
            Stage::HyperIncrease => {
                let (lo, _) = self.counters_lo_hi();
                let i = (lo - self.p.fast_recovery_steps) as u64;
                self.rt_bps = self
                    .rt_bps
                    .saturating_add(i.saturating_mul(self.p.rate_hai.0))
                    .min(line);
            }
        }
        // Rounded up, so that R_C reaches R_T (a floor would stall one b/s below it).
        self.rc_bps = (self.rt_bps as u128 + self.rc_bps as u128).div_ceil(2) as u64;
        self.rc_bps = self.rc_bps.min(line);
        debug_assert!(self.rc_bps >= self.p.min_rate.0, "DCQCN rate below R_min");
    }

    /// Processes every rate-increase timer expiry at or before `now` and decays α to `now`.
    fn advance(&mut self, now: SimTime) {
        while let Some(t) = self.timer_at {
            if t > now {
                break;
            }
            self.increase(IncreaseEvent::Timer);
            self.timer_at = if self.recovered() {
                None
            } else {
                Some(t + self.increase_period_now())
            };
        }
        if let Some(anchor) = self.alpha_anchor
            && now > anchor
        {
            let k = self.p.alpha_period.ps();
            let n = (now.ps() - anchor.ps()) / k;
            for _ in 0..n {
                if self.alpha_q20 == 0 {
                    break;
                }
                self.alpha_q20 = decay(self.alpha_q20, self.p.g_q20);
            }
            self.alpha_anchor = Some(SimTime(anchor.ps() + n * k));
        }
    }
}

/// α·(1 − g), rounded down, in Q20.
fn decay(alpha_q20: u32, g_q20: u32) -> u32 {
    ((alpha_q20 as u64 * (ALPHA_ONE - g_q20) as u64) >> 20) as u32
}

impl CongestionControl for Dcqcn {
    /// Paces at R_C and counts the bytes toward the byte counter B (only while recovering).
    /// The gap is computed with the rate before a byte-counter event this packet triggers.
    fn on_send(&mut self, now: SimTime, wire_bytes: u32) -> SimTime {
        self.advance(now);
        let next = now + serialization_time(Bytes(wire_bytes as u64), BitsPerSec(self.rc_bps));
        if self.timer_at.is_some() && self.p.byte_counter_bytes > 0 {
            self.bytes_counted += wire_bytes as u64;
            if self.bytes_counted >= self.byte_threshold_now() {
                self.bytes_counted = 0;
                self.increase(IncreaseEvent::Bytes);
                if self.recovered() {
                    self.timer_at = None;
                }
            }
        }
        next
    }

    /// A CNP reaches the sender: clamp R_T, cut R_C by α/2, raise α, restart the counters
    /// and timers (see the module docs).
    fn on_cnp(&mut self, now: SimTime) {
        self.advance(now);
        self.cnps += 1;
        let may_decrease = match self.last_decrease {
            Some(t) => now.ps() >= t.ps().saturating_add(self.p.decrease_period.ps()),
            None => true,
        };
        if may_decrease {
            let clamp = match self.p.clamp {
                TargetClamp::Always => true,
                TargetClamp::AfterAnyIncrease => self.timer_events > 0 || self.byte_events > 0,
                TargetClamp::AfterByteIncrease => self.byte_events > 0,
            };
            if clamp {
                self.rt_bps = self.rc_bps;
            }
            let rc = self.rc_bps as u128;
            let cut = rc - ((rc * self.alpha_q20 as u128) >> 21);
            let floor = rc * self.p.min_decrease_pct as u128 / 100;
            self.rc_bps = (cut.max(floor) as u64).max(self.p.min_rate.0);
            self.timer_events = 0;
            self.byte_events = 0;
            self.bytes_counted = 0;
            self.timer_at = Some(now + self.p.increase_period);
            self.last_decrease = Some(now);
            self.decreases += 1;
        }
        self.alpha_q20 = decay(self.alpha_q20, self.p.g_q20) + self.p.g_q20;
        debug_assert!(self.alpha_q20 <= ALPHA_ONE);
        self.alpha_anchor = Some(now);
    }

    fn on_timer(&mut self, now: SimTime) {
        self.advance(now);
    }

    fn next_timer(&self) -> Option<SimTime> {
        self.timer_at
    }

    fn rate(&self) -> BitsPerSec {
        BitsPerSec(self.rc_bps)
    }

    /// The target rate R_T (Gb/s) and α (a fraction).
    fn state(&self) -> super::CcState {
        super::CcState([
            Some(("dcqcn_target_gbps", self.rt_bps as f64 / 1e9)),
            Some(("dcqcn_alpha", self.alpha_q20 as f64 / ALPHA_ONE as f64)),
        ])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const G100: u64 = 100_000_000_000;
    const US: u64 = 1_000_000;

    fn t_us(us: u64) -> SimTime {
        SimTime(us * US)
    }

    #[test]
    fn presets_are_valid() {
        let l = BitsPerSec::from_gbps(100);
        assert_eq!(DcqcnParams::paper(l).check(), Ok(()));
        assert_eq!(DcqcnParams::connectx_firmware(l).check(), Ok(()));
        let mut bad = DcqcnParams::paper(l);
        bad.min_rate = BitsPerSec(0);
        assert!(bad.check().is_err());
    }

    /// Decrease, then F = 5 fast-recovery steps at T = 55 µs, then additive increase.
    #[test]
    fn paper_decrease_fast_recovery_additive() {
        let mut cc = Dcqcn::new(DcqcnParams::paper(BitsPerSec(G100)));
        assert_eq!(cc.next_timer(), None, "no timer before the first CNP");
        cc.on_cnp(t_us(0));
        // α = 1: R_C = 100 G · (1 − 1/2); α stays 1 ((1 − g)·1 + g).
        assert_eq!(cc.rate().0, 50_000_000_000);
        assert_eq!(cc.target_rate().0, G100);
        assert_eq!(cc.alpha_q20(), ALPHA_ONE);
        // Second CNP 1 µs later: R_T ← 50 G, R_C ← 25 G; timer restarts at 1 + 55 µs.
        cc.on_cnp(t_us(1));
        assert_eq!(cc.rate().0, 25_000_000_000);
        assert_eq!(cc.target_rate().0, 50_000_000_000);
        assert_eq!(cc.next_timer(), Some(t_us(56)));
        // Five fast-recovery steps: R_C ← (R_T + R_C)/2.
        let expect = [
            37_500_000_000u64,
            43_750_000_000,
            46_875_000_000,
            48_437_500_000,
            49_218_750_000,
        ];
        for (k, &r) in expect.iter().enumerate() {
            let t = cc.next_timer().unwrap();
            assert_eq!(t, t_us(56 + 55 * k as u64));
            cc.on_timer(t);
            assert_eq!(cc.rate().0, r, "fast recovery step {}", k + 1);
            assert_eq!(cc.stage(), Stage::FastRecovery);
            assert_eq!(cc.target_rate().0, 50_000_000_000);
        }
        // Sixth timer event: additive increase, R_T += 40 Mb/s.
        cc.on_timer(cc.next_timer().unwrap());
        assert_eq!(cc.stage(), Stage::AdditiveIncrease);
        assert_eq!(cc.target_rate().0, 50_040_000_000);
        assert_eq!(cc.rate().0, (50_040_000_000 + 49_218_750_000) / 2);
        assert_eq!(cc.increase_events(), (6, 0));
    }

    /// Byte counter and timer together reach hyper increase; the hyper stage halves T and B.
    #[test]
    fn hyper_increase_with_byte_counter() {
        let mut p = DcqcnParams::paper(BitsPerSec(G100));
        p.fast_recovery_steps = 1;
        p.byte_counter_bytes = 1000;
        p.increase_period = Duration::from_us(10);
        let mut cc = Dcqcn::new(p);
        cc.on_cnp(t_us(0));
        cc.on_cnp(t_us(0));
        assert_eq!((cc.rate().0, cc.target_rate().0), (25_000_000_000, 50_000_000_000));
        // Byte event 1 (i_B = 1 ≤ F): fast recovery. Gap uses the rate before the event.
        let next = cc.on_send(t_us(1), 1000);
        assert_eq!(
            next,
            t_us(1) + serialization_time(Bytes(1000), BitsPerSec(25_000_000_000))
        );
        assert_eq!(cc.rate().0, 37_500_000_000);
        // Byte event 2 (i_B = 2 > F, i_T = 0): additive.
        cc.on_send(t_us(2), 1000);
        assert_eq!(cc.target_rate().0, 50_040_000_000);
        assert_eq!(cc.rate().0, 43_770_000_000);
        // Timer at 10 µs (i_T = 1): still additive.
        cc.on_timer(t_us(10));
        assert_eq!(cc.target_rate().0, 50_080_000_000);
        assert_eq!(cc.rate().0, 46_925_000_000);
        // Timer at 20 µs (i_T = 2, i_B = 2): hyper, i = 2 − 1 = 1, R_T += 200 Mb/s.
        assert_eq!(cc.next_timer(), Some(t_us(20)));
        cc.on_timer(t_us(20));
        assert_eq!(cc.stage(), Stage::HyperIncrease);
        assert_eq!(cc.target_rate().0, 50_280_000_000);
        assert_eq!(cc.rate().0, 48_602_500_000);
        // Hyper stage: timer period T/2 = 5 µs, byte counter B/2 = 500 B.
        assert_eq!(cc.next_timer(), Some(t_us(25)));
        cc.on_send(t_us(21), 500);
        assert_eq!(cc.increase_events(), (2, 3));
        assert_eq!(cc.target_rate().0, 50_480_000_000);
        assert_eq!(cc.rate().0, 49_541_250_000);
        cc.on_timer(t_us(25));
        // i = min(3, 3) − 1 = 2: R_T += 400 Mb/s.
        assert_eq!(cc.target_rate().0, 50_880_000_000);
        assert_eq!(cc.rate().0, 50_210_625_000);
    }

    /// α decays by (1 − g) every K = 55 µs without a CNP; the next cut uses the decayed α.
    #[test]
    fn alpha_decay_and_decayed_cut() {
        let mut p = DcqcnParams::paper(BitsPerSec(G100));
        p.increase_period = Duration::from_ms(10); // keep increases out of the way
        let mut cc = Dcqcn::new(p);
        cc.on_cnp(t_us(0));
        assert_eq!(cc.alpha_q20(), 1_048_576);
        cc.on_timer(t_us(54));
        assert_eq!(cc.alpha_q20(), 1_048_576, "no decay before K");
        cc.on_timer(t_us(55));
        assert_eq!(cc.alpha_q20(), 1_044_480); // 2^20 · 255/256
        cc.on_timer(t_us(165));
        assert_eq!(cc.alpha_q20(), 1_036_335); // three decays, each rounded down
        // CNP at 200 µs: one more decay is due at 220 µs, none yet; cut by α/2.
        cc.on_cnp(t_us(200));
        // R_C = 50 G − ⌊50 G · 1036335 / 2^21⌋
        assert_eq!(cc.rate().0, 50_000_000_000 - 24_708_151_817);
        // α ← (1 − g)·α + g = ⌊1036335·(2^20 − 4096)/2^20⌋ + 4096
        assert_eq!(cc.alpha_q20(), 1_032_286 + 4_096);
        // The decay grid restarts at the CNP.
        cc.on_timer(t_us(254));
        assert_eq!(cc.alpha_q20(), 1_036_382);
        cc.on_timer(t_us(255));
        assert_eq!(cc.alpha_q20(), 1_032_333);
    }

    #[test]
    fn min_rate_floor() {
        let mut cc = Dcqcn::new(DcqcnParams::paper(BitsPerSec(G100)));
        for i in 0..20 {
            cc.on_cnp(t_us(i));
        }
        assert_eq!(cc.rate().0, PAPER_MIN_RATE_BPS);
        // 100 G / 2^10 = 97.66 Mb/s would be below R_min: the tenth cut stops at 100 Mb/s.
        let mut cc = Dcqcn::new(DcqcnParams::paper(BitsPerSec(G100)));
        for i in 0..9 {
            cc.on_cnp(t_us(i));
        }
        assert_eq!(cc.rate().0, 195_312_500);
        cc.on_cnp(t_us(9));
        assert_eq!(cc.rate().0, 100_000_000);
    }

    /// Recovery ends at line rate and the timer stops.
    #[test]
    fn recovers_to_line_rate_and_stops_timer() {
        let mut p = DcqcnParams::paper(BitsPerSec(G100));
        p.rate_ai = BitsPerSec(10_000_000_000);
        let mut cc = Dcqcn::new(p);
        cc.on_cnp(t_us(0));
        let mut n = 0;
        while let Some(t) = cc.next_timer() {
            cc.on_timer(t);
            n += 1;
            assert!(n < 1000, "recovery did not end");
        }
        assert_eq!(cc.rate().0, G100);
        assert_eq!(cc.target_rate().0, G100);
    }

    /// Firmware: α0 = 1023/1024, no R_T clamp on the first CNP, one decrease per 4 µs,
    /// a decrease never below `RPG_MIN_DEC_FAC`.
    #[test]
    fn firmware_monitor_period_clamp_and_min_dec() {
        let mut cc = Dcqcn::new(DcqcnParams::connectx_firmware(BitsPerSec(G100)));
        cc.on_cnp(t_us(0));
        // 100 G − ⌊100 G · 1047552 / 2^21⌋
        assert_eq!(cc.rate().0, 50_048_828_125);
        assert_eq!(cc.target_rate().0, G100, "no increase since last CNP: R_T not clamped");
        // α ← ⌊1047552 · 255/256⌋ + 4096
        assert_eq!(cc.alpha_q20(), 1_043_460 + 4_096);
        // A CNP 2 µs later is inside the 4 µs monitor period: α moves (after 2 decays), rate does not.
        cc.on_cnp(t_us(2));
        assert_eq!(cc.rate().0, 50_048_828_125);
        assert_eq!(cc.decrease_count(), 1);
        assert_eq!(cc.cnp_count(), 2);
        // First timer event (T = 300 µs after the decrease): fast recovery (F = 1).
        assert_eq!(cc.next_timer(), Some(t_us(300)));
        // A byte event first: 32767 B sent.
        cc.on_send(t_us(3), 32_767);
        assert_eq!(cc.increase_events(), (0, 1));
        assert_eq!(cc.rate().0, 75_024_414_063); // ⌈(100 G + R_C)/2⌉
        // Now at 4 µs a decrease is allowed; an increase happened, so R_T ← R_C.
        let rc = cc.rate().0;
        cc.on_cnp(t_us(4));
        assert_eq!(cc.target_rate().0, rc);
        assert_eq!(cc.decrease_count(), 2);

        // min_decrease_pct = 80: a cut never takes more than 20%.
        let mut p = DcqcnParams::connectx_firmware(BitsPerSec(G100));
        p.min_decrease_pct = 80;
        let mut cc = Dcqcn::new(p);
        cc.on_cnp(t_us(0));
        assert_eq!(cc.rate().0, 80_000_000_000);
    }

    #[test]
    fn paces_at_current_rate() {
        let mut cc = Dcqcn::new(DcqcnParams::paper(BitsPerSec(G100)));
        assert_eq!(cc.on_send(SimTime(0), 4096), SimTime(327_680));
        cc.on_cnp(SimTime(1));
        assert_eq!(cc.on_send(SimTime(2), 4096), SimTime(2 + 655_360));
    }
}
