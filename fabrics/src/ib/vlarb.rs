//! VL arbitration: which virtual lane an output port serves next.
//!
//! IBA vol. 1 §7.6.9 (VLArbitrationTable) as implemented in the Mellanox flit model
//! (`hcyang99/ib_model:vlarb.cc`, `models.md` §1.3): a high- and a low-priority table of up
//! to 64 entries `(vl, weight)`, weights in 64-byte units (0..=255). Each table is served by
//! weighted round-robin over its entries: an entry is eligible when its VL has a packet ready
//! *and credits for all of it*; the chosen entry keeps the turn until its weight is used up
//! (a packet is never cut, so the weight may overshoot), then the pointer moves on.
//! `LimitOfHighPriority` bounds the high-priority data sent while low-priority packets wait,
//! in 4096-byte units (0 = one packet, 255 = unlimited).
//!
//! Defaults are opensm's (`osm_base.h`): high table `0:4`, low table `1:4` for each data VL
//! from 1 to `vls - 1` (with 15 VLs, `1:4 … 14:4`; empty with one), limit 0.

use super::link::CREDIT_BLOCK_BYTES;

/// Entries per table (IBA: two blocks of 32).
pub const MAX_TABLE_ENTRIES: usize = 64;
/// `LimitOfHighPriority` meaning "no limit".
pub const HIGH_LIMIT_UNLIMITED: u8 = 255;

/// One table entry: serve `vl` for `weight` × 64 bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct VlArbEntry {
    pub vl: u8,
    pub weight: u8,
}

/// A port's arbitration configuration.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VlArbConfig {
    pub high: Vec<VlArbEntry>,
    pub low: Vec<VlArbEntry>,
    /// `LimitOfHighPriority`, in 4096-byte units.
    pub high_limit: u8,
}

impl VlArbConfig {
    /// opensm's default tables restricted to `n_vls` data VLs: VL0 alone in the high table
    /// (weight 4), VL1.. in the low table (weight 4 each), high limit 0.
    pub fn opensm_default(n_vls: u8) -> VlArbConfig {
        VlArbConfig {
            high: vec![VlArbEntry { vl: 0, weight: 4 }],
            low: (1..n_vls).map(|vl| VlArbEntry { vl, weight: 4 }).collect(),
            high_limit: 0,
        }
    }

    /// Checks the tables against the number of data VLs: every VL in range, at most 64 entries
    /// per table, and every VL present with a non-zero weight in some table (else its packets
    /// could never leave).
    pub fn validate(&self, n_vls: u8) -> Result<(), String> {
        for (name, t) in [("high", &self.high), ("low", &self.low)] {
            if t.len() > MAX_TABLE_ENTRIES {
                return Err(format!(
                    "the {name} table has {} entries; at most {MAX_TABLE_ENTRIES}",
                    t.len()
                ));
            }
            if let Some(e) = t.iter().find(|e| e.vl >= n_vls) {
                return Err(format!(
                    "the {name} table names VL {} but only VLs 0..{n_vls} exist",
                    e.vl
                ));
            }
        }
        for vl in 0..n_vls {
            if !self.high.iter().chain(&self.low).any(|e| e.vl == vl && e.weight > 0) {
                return Err(format!(
                    "VL {vl} has no entry with a non-zero weight: its packets could never be sent"
                ));
            }
        }
        Ok(())
    }
}

/// Weighted round-robin state of one table (12 bytes: an arbiter shares its port's cache
/// line with the port's other departure state, `engine/ib/`).
#[derive(Clone, Debug, Default)]
struct TableState {
    /// Whether `ptr`'s weight was loaded (the first pick starts at entry 0).
    loaded: bool,
    ptr: u32,
    /// Weight (64-B blocks) left for the entry at `ptr`; `<= 0` means "move on" (only its
    /// sign is read, so a charge saturates).
    left: i32,
}

impl TableState {
    /// The entry to serve, if any is eligible; moves the pointer (and reloads the weight)
    /// when the current entry is spent or not eligible.
    fn pick(&mut self, table: &[VlArbEntry], ready: &impl Fn(u8) -> bool) -> Option<u8> {
        if table.is_empty() {
            return None;
        }
        let cur = table[self.ptr as usize];
        if self.loaded && self.left > 0 && cur.weight > 0 && ready(cur.vl) {
            return Some(cur.vl);
        }
        let first = if self.loaded { 1 } else { 0 };
        self.loaded = true;
        for step in first..first + table.len() {
            let i = (self.ptr as usize + step) % table.len();
            let e = table[i];
            if e.weight > 0 && ready(e.vl) {
                self.ptr = i as u32;
                self.left = e.weight as i32;
                return Some(e.vl);
            }
        }
        None
    }

    fn eligible(table: &[VlArbEntry], ready: &impl Fn(u8) -> bool) -> bool {
        table.iter().any(|e| e.weight > 0 && ready(e.vl))
    }
}

/// The arbitration state of one output port.
#[derive(Clone, Debug, Default)]
pub struct VlArbiter {
    high: TableState,
    low: TableState,
    /// High-priority blocks sent while a low-priority packet was ready (saturating: it is
    /// compared with a limit of at most 255 x 64 blocks).
    high_blocks_while_low_waited: u32,
    /// Which table the last pick came from (`true` = high).
    last_high: bool,
}

impl VlArbiter {
    /// Chooses the VL to send next among those for which `ready(vl)` (a packet is waiting and
    /// credits cover it). Call [`VlArbiter::charge`] with the packet actually sent.
    pub fn pick(&mut self, cfg: &VlArbConfig, ready: impl Fn(u8) -> bool) -> Option<u8> {
        let low_ready = TableState::eligible(&cfg.low, &ready);
        let high_ready = TableState::eligible(&cfg.high, &ready);
        let high_allowed = !low_ready
            || cfg.high_limit == HIGH_LIMIT_UNLIMITED
            || (self.high_blocks_while_low_waited as u64) < Self::limit_blocks(cfg.high_limit).max(1);
        if high_ready && high_allowed {
            self.last_high = true;
            if let Some(vl) = self.high.pick(&cfg.high, &ready) {
                return Some(vl);
            }
        }
        if low_ready {
            self.last_high = false;
            return self.low.pick(&cfg.low, &ready);
        }
        None
    }

    /// Records that a packet of `blocks` was sent on the VL the last [`VlArbiter::pick`]
    /// returned; `low_waiting` says whether a low-priority packet was ready at that time.
    pub fn charge(&mut self, blocks: u32, low_waiting: bool) {
        let charge = blocks.min(i32::MAX as u32) as i32;
        if self.last_high {
            self.high.left = self.high.left.saturating_sub(charge);
            if low_waiting {
                self.high_blocks_while_low_waited = self.high_blocks_while_low_waited.saturating_add(blocks);
            }
        } else {
            self.low.left = self.low.left.saturating_sub(charge);
            self.high_blocks_while_low_waited = 0;
        }
    }

    /// `LimitOfHighPriority` in blocks: 0 means one packet (any positive count stops it).
    fn limit_blocks(limit: u8) -> u64 {
        limit as u64 * (4096 / CREDIT_BLOCK_BYTES as u64)
    }

    /// Whether any VL of the low table is ready (the argument [`VlArbiter::charge`] needs).
    pub fn low_ready(cfg: &VlArbConfig, ready: impl Fn(u8) -> bool) -> bool {
        TableState::eligible(&cfg.low, &ready)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn e(vl: u8, weight: u8) -> VlArbEntry {
        VlArbEntry { vl, weight }
    }

    /// Serves `n` packets of `blocks` each with every VL in `ready` always ready; returns the
    /// VL sequence.
    fn serve(cfg: &VlArbConfig, ready: &[u8], blocks: u32, n: usize) -> Vec<u8> {
        let mut a = VlArbiter::default();
        let is_ready = |vl: u8| ready.contains(&vl);
        (0..n)
            .map(|_| {
                let low = VlArbiter::low_ready(cfg, is_ready);
                let vl = a.pick(cfg, is_ready).expect("something is ready");
                a.charge(blocks, low);
                vl
            })
            .collect()
    }

    #[test]
    fn weighted_round_robin_in_64_byte_units() {
        // VL0 weight 4 blocks, VL1 weight 8 blocks, 2-block packets: 2 packets of VL0 then 4
        // of VL1, repeating.
        let cfg = VlArbConfig {
            high: vec![],
            low: vec![e(0, 4), e(1, 8)],
            high_limit: 0,
        };
        let seq = serve(&cfg, &[0, 1], 2, 12);
        assert_eq!(seq, vec![0, 0, 1, 1, 1, 1, 0, 0, 1, 1, 1, 1]);
        // Packets bigger than the weight: one packet per turn (the weight overshoots).
        let seq = serve(&cfg, &[0, 1], 65, 4);
        assert_eq!(seq, vec![0, 1, 0, 1]);
    }

    #[test]
    fn idle_vls_are_skipped_and_weight_zero_never_served() {
        let cfg = VlArbConfig {
            high: vec![],
            low: vec![e(0, 0), e(1, 4), e(2, 4)],
            high_limit: 0,
        };
        assert_eq!(serve(&cfg, &[1], 1, 3), vec![1, 1, 1]);
        let mut a = VlArbiter::default();
        assert_eq!(a.pick(&cfg, |vl| vl == 0), None);
    }

    #[test]
    fn high_priority_limit() {
        // VL0 high, VL1 low. Unlimited: VL1 starves while VL0 is ready.
        let mut cfg = VlArbConfig {
            high: vec![e(0, 255)],
            low: vec![e(1, 255)],
            high_limit: HIGH_LIMIT_UNLIMITED,
        };
        assert!(serve(&cfg, &[0, 1], 65, 20).iter().all(|&v| v == 0));
        // Limit 0: one high packet, then one low packet, alternating.
        cfg.high_limit = 0;
        assert_eq!(serve(&cfg, &[0, 1], 65, 6), vec![0, 1, 0, 1, 0, 1]);
        // Limit 2 (8 KiB = 128 blocks): two 65-block high packets (the second overshoots), then one low.
        cfg.high_limit = 2;
        assert_eq!(serve(&cfg, &[0, 1], 65, 6), vec![0, 0, 1, 0, 0, 1]);
        // With nothing low waiting, high goes on without limit.
        cfg.high_limit = 0;
        assert!(serve(&cfg, &[0], 65, 5).iter().all(|&v| v == 0));
    }

    #[test]
    fn validation_and_defaults() {
        let d = VlArbConfig::opensm_default(4);
        assert_eq!(d.high, vec![e(0, 4)]);
        assert_eq!(d.low, vec![e(1, 4), e(2, 4), e(3, 4)]);
        assert!(d.validate(4).is_ok());
        assert!(d.validate(2).unwrap_err().contains("VL 2"));
        let bad = VlArbConfig {
            high: vec![],
            low: vec![e(0, 0)],
            high_limit: 0,
        };
        assert!(bad.validate(1).unwrap_err().contains("non-zero weight"));
        assert!(VlArbConfig::opensm_default(1).validate(1).is_ok());
    }
}
