//! TIMELY: RTT-gradient rate control (Mittal et al., "TIMELY: RTT-based Congestion Control
//! for the Datacenter", SIGCOMM 2015, Algorithm 1), with the values of `models.md` §2.6.
//!
//! The only input is an RTT sample per ACK ([`CongestionControl::on_ack`]); no switch support,
//! no timer. Rate updates happen once per *completion event*: every `segment_bytes`
//! acknowledged bytes (the paper's 16–64 KB segments; 0 = every ACK), using the RTT sample of
//! the ACK that completes the segment.
//!
//! ## Equations (per completion event with RTT sample `new_rtt`)
//! ```text
//! new_rtt_diff = new_rtt − prev_rtt;  prev_rtt = new_rtt
//! rtt_diff     = (1 − α)·rtt_diff + α·new_rtt_diff
//! gradient     = rtt_diff / min_rtt
//! new_rtt < T_low:   rate ← rate + δ
//! new_rtt > T_high:  rate ← rate·(1 − β·(1 − T_high/new_rtt))
//! gradient ≤ 0:      rate ← rate + N·δ   (N = 5 after `hai_threshold` consecutive such events, else 1)
//! gradient > 0:      rate ← rate·(1 − β·gradient)
//! ```
//! The rate stays within [`min_rate`, line rate]. The first completion event only records
//! `prev_rtt`. All arithmetic is integer (ps, b/s, parts per million), products in `i128`,
//! divisions truncate toward zero: bit-reproducible.
//!
//! ## Not modelled
//! Per-packet vs. per-segment pacing differences of the NIC (the engine paces every packet
//! at [`CongestionControl::rate`]); HPCC-sim's once-per-RTT update rule (approximated by
//! `segment_bytes`); Patched TIMELY.
//!
//! [`min_rate`]: TimelyParams::min_rate

use super::CongestionControl;
use sim_core::{BitsPerSec, Bytes, Duration, SimTime, serialization_time};

/// One in parts per million (the unit of α and β).
pub const PPM_ONE: u32 = 1_000_000;

/// α, EWMA weight of a new RTT difference: 0.02 (reference code `ewma_alpha`,
/// people.csail.mit.edu/ghobadi/code/timely.cc; models.md §2.6).
pub const REFERENCE_EWMA_ALPHA_PPM: u32 = 20_000;
/// β, multiplicative-decrease factor: 0.8 (reference code; also HPCC-sim).
pub const REFERENCE_BETA_PPM: u32 = 800_000;
/// T_low: 50 µs, the reference code's value for 64 KB segments.
pub const REFERENCE_T_LOW_PS: u64 = 50_000_000;
/// T_high: 1 ms (reference code).
pub const REFERENCE_T_HIGH_PS: u64 = 1_000_000_000;
/// Completion events of 64 KiB, paired with T_low = 50 µs in the reference code.
pub const REFERENCE_SEGMENT_BYTES: u64 = 64 * 1024;
/// HAI after 5 consecutive non-positive gradients (`HAI_Thresh`).
pub const HAI_THRESHOLD: u32 = 5;
/// N, the increase multiplier in HAI mode: 5 (paper).
pub const HAI_MULTIPLIER: u64 = 5;
/// δ per line rate: 10 Mb/s per 10 Gb/s of line rate (reference code), i.e. line/1000.
pub const DELTA_PER_LINE_RATE_DIVISOR: u64 = 1000;

/// α: 0.875 (HPCC-sim `rdma-hw.cc` TIMELY).
pub const HPCC_SIM_EWMA_ALPHA_PPM: u32 = 875_000;
/// T_low: 50 µs (HPCC-sim).
pub const HPCC_SIM_T_LOW_PS: u64 = 50_000_000;
/// T_high: 500 µs (HPCC-sim).
pub const HPCC_SIM_T_HIGH_PS: u64 = 500_000_000;
/// minRTT, the gradient's normaliser: 20 µs (HPCC-sim; the reference code leaves it to the
/// deployment).
pub const MIN_RTT_PS: u64 = 20_000_000;
/// Rate floor: 1000 Mb/s (HPCC-sim `run.py` `MIN_RATE`; not in the paper).
pub const MIN_RATE_BPS: u64 = 1_000_000_000;

/// TIMELY parameters (plain data; [`Timely::new`] checks them).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TimelyParams {
    /// Initial rate and cap.
    pub line_rate: BitsPerSec,
    /// Rate floor (> 0).
    pub min_rate: BitsPerSec,
    /// δ, the additive increment.
    pub delta: BitsPerSec,
    /// α, EWMA weight of the newest RTT difference, parts per million (0..=10^6).
    pub ewma_alpha_ppm: u32,
    /// β, multiplicative-decrease factor, parts per million (0..=10^6).
    pub beta_ppm: u32,
    /// T_low: below it, always increase.
    pub t_low: Duration,
    /// T_high: above it, always decrease (> T_low).
    pub t_high: Duration,
    /// minRTT, normaliser of the gradient (> 0).
    pub min_rtt: Duration,
    /// Consecutive non-positive gradients before HAI mode.
    pub hai_threshold: u32,
    /// Acknowledged bytes per completion event (0: every ACK).
    pub segment_bytes: u64,
}

impl TimelyParams {
    /// The co-author's reference code (models.md §2.6) at `line_rate`.
    pub fn reference(line_rate: BitsPerSec) -> Self {
        TimelyParams {
            line_rate,
            min_rate: BitsPerSec(MIN_RATE_BPS.min(line_rate.0)),
            delta: BitsPerSec(line_rate.0 / DELTA_PER_LINE_RATE_DIVISOR),
            ewma_alpha_ppm: REFERENCE_EWMA_ALPHA_PPM,
            beta_ppm: REFERENCE_BETA_PPM,
            t_low: Duration(REFERENCE_T_LOW_PS),
            t_high: Duration(REFERENCE_T_HIGH_PS),
            min_rtt: Duration(MIN_RTT_PS),
            hai_threshold: HAI_THRESHOLD,
            segment_bytes: REFERENCE_SEGMENT_BYTES,
        }
    }

    /// HPCC-sim's TIMELY values (models.md §2.6) at `line_rate`.
    pub fn hpcc_sim(line_rate: BitsPerSec) -> Self {
        TimelyParams {
            ewma_alpha_ppm: HPCC_SIM_EWMA_ALPHA_PPM,
            t_low: Duration(HPCC_SIM_T_LOW_PS),
            t_high: Duration(HPCC_SIM_T_HIGH_PS),
            ..TimelyParams::reference(line_rate)
        }
    }

    /// Why these parameters cannot run, if they cannot.
    pub fn check(&self) -> Result<(), String> {
        if self.min_rate.0 == 0 || self.min_rate > self.line_rate {
            return Err(format!(
                "min rate {} must be in 1bps..=line rate {}",
                self.min_rate, self.line_rate
            ));
        }
        if self.ewma_alpha_ppm > PPM_ONE || self.beta_ppm > PPM_ONE {
            return Err("alpha and beta must be <= 1".into());
        }
        if self.t_high <= self.t_low {
            return Err(format!("T_high {} must exceed T_low {}", self.t_high, self.t_low));
        }
        if self.min_rtt.ps() == 0 {
            return Err("min_rtt must be > 0".into());
        }
        Ok(())
    }
}

/// TIMELY state of one flow.
#[derive(Clone, Debug)]
pub struct Timely {
    p: TimelyParams,
    rate_bps: u64,
    /// RTT of the previous completion event (`None` before the first).
    prev_rtt_ps: Option<u64>,
    /// EWMA of RTT differences, ps (signed).
    rtt_diff_ps: i64,
    /// Consecutive completion events with a non-positive gradient.
    neg_gradients: u32,
    /// Acknowledged bytes toward the next completion event.
    acked_acc_bytes: u64,
    updates: u64,
}

impl Timely {
    /// A flow starting at line rate. Panics on invalid parameters (checked by the loader).
    pub fn new(p: TimelyParams) -> Self {
        if let Err(e) = p.check() {
            panic!("invalid TIMELY parameters: {e}");
        }
        Timely {
            rate_bps: p.line_rate.0,
            prev_rtt_ps: None,
            rtt_diff_ps: 0,
            neg_gradients: 0,
            acked_acc_bytes: 0,
            updates: 0,
            p,
        }
    }

    pub fn params(&self) -> &TimelyParams {
        &self.p
    }
    /// The smoothed RTT difference (ps, may be negative).
    pub fn rtt_diff_ps(&self) -> i64 {
        self.rtt_diff_ps
    }
    /// Completion events that updated the rate.
    pub fn update_count(&self) -> u64 {
        self.updates
    }

    /// One completion event with RTT sample `rtt_ps` (Algorithm 1).
    fn completion(&mut self, rtt_ps: u64) {
        let Some(prev) = self.prev_rtt_ps.replace(rtt_ps) else {
            return;
        };
        self.updates += 1;
        let new_diff = rtt_ps as i128 - prev as i128;
        let old = self.rtt_diff_ps as i128;
        let ewma = old + self.p.ewma_alpha_ppm as i128 * (new_diff - old) / PPM_ONE as i128;
        self.rtt_diff_ps = ewma.clamp(i64::MIN as i128, i64::MAX as i128) as i64;
        let rate = self.rate_bps as i128;
        let beta = self.p.beta_ppm as i128;
        let new_rate: i128 = if rtt_ps < self.p.t_low.ps() {
            rate + self.p.delta.0 as i128
        } else if rtt_ps > self.p.t_high.ps() {
            let t_high = self.p.t_high.ps() as i128;
            let rtt = rtt_ps as i128;
            rate - rate * beta * (rtt - t_high) / (rtt * PPM_ONE as i128)
        } else if self.rtt_diff_ps <= 0 {
            self.neg_gradients = self.neg_gradients.saturating_add(1);
            let n = if self.neg_gradients >= self.p.hai_threshold {
                HAI_MULTIPLIER
            } else {
                1
            };
            rate + (n * self.p.delta.0) as i128
        } else {
            self.neg_gradients = 0;
            let min_rtt = self.p.min_rtt.ps() as i128;
            rate - rate * beta * self.rtt_diff_ps as i128 / (PPM_ONE as i128 * min_rtt)
        };
        self.rate_bps = new_rate.clamp(self.p.min_rate.0 as i128, self.p.line_rate.0 as i128) as u64;
    }
}

impl CongestionControl for Timely {
    fn on_send(&mut self, now: SimTime, wire_bytes: u32) -> SimTime {
        now + serialization_time(Bytes(wire_bytes as u64), BitsPerSec(self.rate_bps))
    }

    /// Counts `acked_bytes` toward the current completion event; when it completes, runs
    /// Algorithm 1 with `rtt`.
    fn on_ack(&mut self, now: SimTime, acked_bytes: u64, rtt: Duration) {
        let _ = now;
        self.acked_acc_bytes = self.acked_acc_bytes.saturating_add(acked_bytes);
        if self.acked_acc_bytes >= self.p.segment_bytes {
            self.acked_acc_bytes = 0;
            self.completion(rtt.ps());
        }
    }

    fn rate(&self) -> BitsPerSec {
        BitsPerSec(self.rate_bps)
    }

    /// The last RTT sample (µs) and the EWMA of RTT differences (µs).
    fn state(&self) -> super::CcState {
        super::CcState([
            self.prev_rtt_ps.map(|r| ("timely_rtt_us", r as f64 / 1e6)),
            Some(("timely_rtt_diff_us", self.rtt_diff_ps as f64 / 1e6)),
        ])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const G: u64 = 1_000_000_000;

    fn us(x: u64) -> Duration {
        Duration::from_us(x)
    }

    fn per_ack(line: BitsPerSec) -> Timely {
        let mut p = TimelyParams::hpcc_sim(line);
        p.segment_bytes = 0;
        Timely::new(p)
    }

    /// Every branch of Algorithm 1 against hand-computed values (exact integers).
    #[test]
    fn algorithm_one_by_hand() {
        let mut cc = per_ack(BitsPerSec(100 * G));
        let t = SimTime(0);
        cc.on_ack(t, 1000, us(80)); // first sample: only recorded (T_low 50 µs < RTTs < T_high 500 µs)
        assert_eq!(cc.rate().0, 100 * G);
        assert_eq!(cc.update_count(), 0);
        // +10 µs: rtt_diff = 0.875·10 µs = 8.75 µs; gradient 0.4375; rate·(1 − 0.8·0.4375) = 65 G.
        cc.on_ack(t, 1000, us(90));
        assert_eq!(cc.rtt_diff_ps(), 8_750_000);
        assert_eq!(cc.rate().0, 65 * G);
        // +0: rtt_diff = 8.75 − 0.875·8.75 = 1.09375 µs; rate·(1 − 0.8·0.0546875) = 62.15625 G.
        cc.on_ack(t, 1000, us(90));
        assert_eq!(cc.rtt_diff_ps(), 1_093_750);
        assert_eq!(cc.rate().0, 62_156_250_000);
        // −10 µs: rtt_diff = 1_093_750 + trunc(0.875·(−11_093_750)) = −8_613_281 ≤ 0: + δ (100 Mb/s).
        cc.on_ack(t, 1000, us(80));
        assert_eq!(cc.rtt_diff_ps(), -8_613_281);
        assert_eq!(cc.rate().0, 62_256_250_000);
        // Four more flat samples keep the gradient negative; the 5th in a row is HAI (N = 5).
        let diffs = [-1_076_661i64, -134_583, -16_823, -2_103];
        let rates = [62_356_250_000u64, 62_456_250_000, 62_556_250_000, 63_056_250_000];
        for (d, r) in diffs.iter().zip(rates) {
            cc.on_ack(t, 1000, us(80));
            assert_eq!(cc.rtt_diff_ps(), *d);
            assert_eq!(cc.rate().0, r);
        }
        // RTT 600 µs > T_high = 500 µs: rate·(1 − 0.8·(1 − 500/600)) = rate − rate/7.5.
        cc.on_ack(t, 1000, us(600));
        assert_eq!(cc.rate().0, 63_056_250_000 - 8_407_500_000);
        // RTT 10 µs < T_low: + δ.
        cc.on_ack(t, 1000, us(10));
        assert_eq!(cc.rate().0, 54_648_750_000 + 100_000_000);
        // Pacing at the current rate.
        assert_eq!(
            cc.on_send(SimTime(0), 1000),
            SimTime(0) + serialization_time(Bytes(1000), BitsPerSec(54_748_750_000))
        );
    }

    #[test]
    fn clamps_to_min_rate_and_line_rate() {
        let mut cc = per_ack(BitsPerSec(100 * G));
        cc.on_ack(SimTime(0), 1, us(10));
        cc.on_ack(SimTime(0), 1, us(10));
        assert_eq!(cc.rate().0, 100 * G, "capped at line rate");
        cc.on_ack(SimTime(0), 1, us(400)); // gradient 0.875·390/20 ≫ 1
        assert_eq!(cc.rate().0, MIN_RATE_BPS);
    }

    #[test]
    fn completion_events_every_segment() {
        let mut cc = Timely::new(TimelyParams::reference(BitsPerSec(100 * G)));
        for _ in 0..32 {
            cc.on_ack(SimTime(0), 4096, us(30));
        }
        // 32 × 4 KiB = two 64 KiB completions; the first only records prev_rtt.
        assert_eq!(cc.update_count(), 1);
        assert_eq!(cc.next_timer(), None);
        assert_eq!(TimelyParams::reference(BitsPerSec(100 * G)).delta.0, 100_000_000);
    }
}
