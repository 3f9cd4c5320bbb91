//! InfiniBand congestion control (IBA vol. 1 Annex A10): FECN marking at switches, BECN
//! returned by the destination, and the source's congestion-control table (CCT).
//!
//! Switch side (SwitchCongestionSetting / SwitchPortCongestionSetting, `models.md` §1.6):
//! a port-VL is *congested* when the data waiting for it reaches a threshold; then every
//! `marking_rate + 1`-th eligible packet leaving it gets FECN set in its BTH. Packets smaller
//! than `packet_size_blocks` are never marked. A port that waits for credits (a *victim* of
//! congestion further down, not its root) marks only when `victim_mask` is set.
//!
//! Destination: a FECN-marked packet makes the destination CA send a congestion notification
//! (BECN) back to the source (an explicit CNP packet here).
//!
//! Source (CACongestionSetting, per flow = QP-based `Port_Control`): each BECN raises the
//! congestion-control table index `CCTI` by `ccti_increase` (capped at `ccti_limit`); a
//! free-running timer of period `ccti_timer` lowers it by one per expiry (not below
//! `ccti_min`). The table entry at `CCTI` sets the inter-packet injection delay.
//!
//! ## Assumptions (labelled, `models.md` §1.6 and §7)
//! - Threshold encoding: IBA gives 0x0 = never, 0x1 loose … 0xF aggressive without a byte
//!   scale. Here a port-VL is congested when the bytes waiting for it reach
//!   `(16 - threshold) / 16` of one VL input buffer.
//! - CCT entry to delay: entry = `shift` (bits 15:14) | `multiplier` (bits 13:0) and the
//!   injection delay is `multiplier × packet serialization time >> shift`
//!   (`models.md` §1.6 calls this a reasonable model to verify against the spec text).
//! - Default table: 128 entries, entry `i` = multiplier `i`, shift 2, i.e. the delay grows
//!   by a quarter packet time per index (PSM builds 128 entries with the delay stepping every
//!   four entries, `intel/psm` `DF_CCT_TABLE_SIZE`).

use crate::models::CongestionControl;
use sim_core::{BitsPerSec, Bytes, Duration, SimTime, serialization_time};

/// `CCTI_Timer` unit: 1.024 µs (`intel/psm` ips_proto.h).
pub const CCTI_TIMER_UNIT: Duration = Duration::from_ps(1_024_000);

/// Largest CCTI: the index is 14 bits (a table of at most 16384 entries).
pub const MAX_CCTI: u16 = 0x3FFF;
/// Longest `CCTI_Timer`: 65535 × 1.024 µs (a 16-bit count of [`CCTI_TIMER_UNIT`]).
pub const MAX_CCTI_TIMER: Duration = Duration::from_ps(65_535 * 1_024_000);

/// Switch-side marking settings.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IbCcSwitch {
    /// 1 (loose) ..= 15 (aggressive); 0 disables marking.
    pub threshold: u8,
    /// Mean number of eligible packets between marks (0 = mark every eligible packet).
    pub marking_rate: u16,
    /// Packets smaller than this many 64-byte blocks are never marked.
    pub packet_size_blocks: u16,
    /// Mark at ports that are victims (waiting for credits), not only at congestion roots.
    pub victim_mask: bool,
}

impl Default for IbCcSwitch {
    /// Gran et al. (IPDPS 2010) ran "threshold high, marking rate small": threshold 15 and
    /// marking rate 3 are this model's defaults, calibrated with the source defaults on the
    /// victim-flow case of `models.md` §5.10 (hotspot ≥ 95% utilised, victim ≈ 78% of its
    /// max-min share; `tests/tests/infiniband.rs`). An assumption, not a vendor default.
    fn default() -> Self {
        IbCcSwitch {
            threshold: 15,
            marking_rate: 3,
            packet_size_blocks: 0,
            victim_mask: false,
        }
    }
}

impl IbCcSwitch {
    /// Bytes waiting for a port-VL at which it counts as congested, for a VL input buffer of
    /// `vl_buffer_bytes`; `None` when marking is off.
    pub fn threshold_bytes(&self, vl_buffer_bytes: u64) -> Option<u64> {
        (self.threshold > 0).then(|| (vl_buffer_bytes * (16 - self.threshold as u64) / 16).max(1))
    }
}

/// Per output port-VL marking counter (implements `marking_rate`).
#[derive(Clone, Copy, Debug, Default)]
pub struct MarkCounter {
    /// Eligible packets still to let pass unmarked before the next mark.
    skip_left: u16,
}

impl MarkCounter {
    /// Called for every packet eligible for marking; `true` when this one gets FECN.
    pub fn eligible(&mut self, marking_rate: u16) -> bool {
        if self.skip_left == 0 {
            self.skip_left = marking_rate;
            true
        } else {
            self.skip_left -= 1;
            false
        }
    }
}

/// Source (CA) settings.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IbCcSource {
    pub ccti_increase: u16,
    pub ccti_limit: u16,
    pub ccti_min: u16,
    /// Period of the CCTI decrement timer.
    pub ccti_timer: Duration,
    /// Congestion-control table: `shift << 14 | multiplier` per entry; entry 0 = no delay.
    pub cct: Vec<u16>,
}

impl Default for IbCcSource {
    /// PSM's defaults (`models.md` §1.6: increase 1, min 0, 128 entries) except the timer:
    /// PSM's 1 × 1.024 µs lowers the CCTI faster than BECNs raise it in this model (the
    /// victim case of §5.10 then shows no effect), so the default here is 5 × 1.024 µs,
    /// calibrated as stated on [`IbCcSwitch::default`].
    fn default() -> Self {
        IbCcSource {
            ccti_increase: 1,
            ccti_limit: 127,
            ccti_min: 0,
            ccti_timer: Duration::from_ps(5 * CCTI_TIMER_UNIT.ps()),
            cct: default_cct(128),
        }
    }
}

/// The default table: entry `i` = multiplier `i`, shift 2 (a quarter packet time per step).
pub fn default_cct(entries: u16) -> Vec<u16> {
    (0..entries).map(|i| (2u16 << 14) | (i & 0x3FFF)).collect()
}

impl IbCcSource {
    pub fn validate(&self) -> Result<(), String> {
        if self.cct.is_empty() {
            return Err("the congestion-control table is empty".into());
        }
        if self.ccti_limit as usize >= self.cct.len() {
            return Err(format!(
                "ccti_limit {} needs a table of at least {} entries, the table has {}",
                self.ccti_limit,
                self.ccti_limit as usize + 1,
                self.cct.len()
            ));
        }
        if self.ccti_min > self.ccti_limit {
            return Err(format!(
                "ccti_min {} exceeds ccti_limit {}",
                self.ccti_min, self.ccti_limit
            ));
        }
        if self.ccti_timer == Duration::ZERO {
            return Err("ccti_timer must be positive".into());
        }
        Ok(())
    }
}

/// A flow's congestion-control agent (QP-based): the CCTI and its free-running timer.
#[derive(Clone, Debug)]
pub struct IbCca {
    cfg: std::sync::Arc<IbCcSource>,
    line_rate: BitsPerSec,
    ccti: u16,
    /// Timer expiries already applied: the timer ticks at `k × ccti_timer` since time zero.
    ticks_applied: u64,
    becns: u64,
}

impl IbCca {
    pub fn new(cfg: std::sync::Arc<IbCcSource>, line_rate: BitsPerSec) -> IbCca {
        let ccti = cfg.ccti_min;
        IbCca {
            cfg,
            line_rate,
            ccti,
            ticks_applied: 0,
            becns: 0,
        }
    }

    /// Applies the timer expiries up to `now` (lazily: no event per tick).
    fn catch_up(&mut self, now: SimTime) {
        let ticks = now.ps() / self.cfg.ccti_timer.ps();
        let due = ticks - self.ticks_applied.min(ticks);
        self.ticks_applied = ticks;
        let down = due.min(u16::MAX as u64) as u16;
        self.ccti = self.ccti.saturating_sub(down).max(self.cfg.ccti_min);
    }

    pub fn ccti(&self) -> u16 {
        self.ccti
    }

    pub fn becns(&self) -> u64 {
        self.becns
    }

    /// The injection delay after a packet of `wire_bytes` at the current CCTI.
    pub fn injection_delay(&self, wire_bytes: u32) -> Duration {
        let entry = self.cfg.cct[self.ccti as usize];
        let shift = (entry >> 14) as u32;
        let mult = (entry & 0x3FFF) as u64;
        let ser = serialization_time(Bytes(wire_bytes as u64), self.line_rate).ps();
        Duration::from_ps((mult * ser) >> shift)
    }
}

impl CongestionControl for IbCca {
    fn on_send(&mut self, now: SimTime, wire_bytes: u32) -> SimTime {
        self.catch_up(now);
        now + serialization_time(Bytes(wire_bytes as u64), self.line_rate) + self.injection_delay(wire_bytes)
    }

    /// A BECN for this flow arrived.
    fn on_congestion_signal(&mut self, now: SimTime) {
        self.catch_up(now);
        self.becns += 1;
        self.ccti = (self.ccti.saturating_add(self.cfg.ccti_increase)).min(self.cfg.ccti_limit);
    }

    /// The rate of a stream of MTU-sized packets at the current CCTI, relative to line rate
    /// (reported as a rate; the exact gap depends on the packet size).
    fn rate(&self) -> BitsPerSec {
        let wire = 4096 + super::link::BASE_HEADER_BYTES;
        let ser = serialization_time(Bytes(wire as u64), self.line_rate).ps() as u128;
        let gap = ser + self.injection_delay(wire).ps() as u128;
        BitsPerSec((self.line_rate.get() as u128 * ser / gap) as u64)
    }

    /// The congestion control table index (CCTI).
    fn state(&self) -> crate::models::cc::CcState {
        crate::models::cc::CcState([Some(("ibcc_ccti", self.ccti as f64)), None])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn cca() -> IbCca {
        IbCca::new(Arc::new(IbCcSource::default()), BitsPerSec::from_gbps(100))
    }

    #[test]
    fn becn_raises_ccti_and_the_timer_lowers_it() {
        let mut c = cca();
        // 1000-B packets at 100 Gb/s: 80 ns each.
        assert_eq!(c.on_send(SimTime(0), 1000), SimTime(80_000));
        for _ in 0..8 {
            c.on_congestion_signal(SimTime(100));
        }
        assert_eq!(c.ccti(), 8);
        // CCTI 8: delay = 8 × 80 ns >> 2 = 160 ns.
        assert_eq!(c.injection_delay(1000), Duration::from_ns(160));
        assert_eq!(c.on_send(SimTime(200), 1000), SimTime(200 + 80_000 + 160_000));
        // Three timer expiries (5.12 µs each) by 15.4 µs: CCTI 8 -> 5.
        c.on_send(SimTime(15_400_000), 1000);
        assert_eq!(c.ccti(), 5);
        // Far later: back to ccti_min, never below.
        c.on_send(SimTime(1_000_000_000), 1000);
        assert_eq!(c.ccti(), 0);
        assert_eq!(c.becns(), 8);
    }

    #[test]
    fn ccti_is_capped_at_the_limit() {
        let mut c = cca();
        for _ in 0..500 {
            c.on_congestion_signal(SimTime(0));
        }
        assert_eq!(c.ccti(), 127);
        // Entry 127: 127/4 packet times of gap: rate = 1 / (1 + 31.75) of line rate.
        let r = c.rate().get() as f64 / 100e9;
        assert!((r - 1.0 / 32.75).abs() < 1e-3, "{r}");
    }

    #[test]
    fn marking_counter_and_threshold() {
        let mut m = MarkCounter::default();
        let marks: Vec<bool> = (0..6).map(|_| m.eligible(2)).collect();
        // Two unmarked packets between marks.
        assert_eq!(marks, vec![true, false, false, true, false, false]);
        let mut every = MarkCounter::default();
        assert!((0..5).all(|_| every.eligible(0)));
        let sw = IbCcSwitch::default();
        assert_eq!(sw.threshold_bytes(64_000), Some(4_000));
        let off = IbCcSwitch { threshold: 0, ..sw };
        assert_eq!(off.threshold_bytes(64_000), None);
    }

    #[test]
    fn source_validation() {
        assert!(IbCcSource::default().validate().is_ok());
        let bad = IbCcSource {
            ccti_limit: 200,
            ..IbCcSource::default()
        };
        assert!(bad.validate().unwrap_err().contains("ccti_limit 200"));
    }
}
