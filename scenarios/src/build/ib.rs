//! `[fabric.infiniband]`: the InfiniBand configuration (VLs, credits, credit updates,
//! arbitration, congestion control) and its resolved form.

use super::{Loaded, MAX_IB_BUFFER_BLOCKS};
use crate::diag::ScenarioError;
use crate::schema::{CreditUpdateSpec, InfinibandSpec, VlArbEntrySpec};
use crate::units::{SizeSpec, TimeSpec};
use fabrics::ib::{self, IbCcConfig, IbCcSource, IbCcSwitch, IbConfig, VlArbConfig, VlArbEntry};
use fabrics::models::credit::{AnyCreditUpdate, Coalesced, PerChange};
use sim_core::Duration;

impl Loaded {
    /// `[fabric.infiniband] credit_update` into the update policy (`models/credit/`).
    fn credit_update(
        &self,
        u: &CreditUpdateSpec,
        interval_given: bool,
        at: &dyn Fn(&str) -> String,
    ) -> Result<AnyCreditUpdate, ScenarioError> {
        let field = |k: &str| at(&format!("credit_update.{k}"));
        match u.policy.as_str() {
            "per_change" => {
                for (k, set) in [("blocks", u.blocks.is_some()), ("max_delay", u.max_delay.is_some())] {
                    if set {
                        return Err(self.err(&field(k), "only the \"coalesced\" policy takes this key"));
                    }
                }
                Ok(AnyCreditUpdate::PerChange(PerChange::default()))
            }
            "coalesced" => {
                if interval_given {
                    return Err(self.err(
                        &at("credit_update_interval"),
                        "the coalesced policy has its own max_delay: remove credit_update_interval",
                    ));
                }
                let blocks = u.blocks.unwrap_or(0);
                if !(1..=MAX_IB_BUFFER_BLOCKS as u32).contains(&blocks) {
                    return Err(self.err(
                        &field("blocks"),
                        format!("expected 1..={MAX_IB_BUFFER_BLOCKS} credits (64-byte blocks), got {blocks}"),
                    ));
                }
                let max_delay = u.max_delay.map(|t| t.get()).unwrap_or(Duration::ZERO);
                if max_delay == Duration::ZERO || max_delay > Duration::from_ms(1) {
                    return Err(self.err(
                        &field("max_delay"),
                        format!("expected a delay in (0, 1ms], got {max_delay}"),
                    ));
                }
                Ok(AnyCreditUpdate::Coalesced(Coalesced { blocks, max_delay }))
            }
            p => Err(self.err(
                &field("policy"),
                format!("expected \"per_change\" or \"coalesced\", got {p:?}"),
            )),
        }
    }

    /// `[fabric.infiniband]` into the engine's [`IbConfig`], every value range-checked.
    pub(super) fn build_ib(&self, spec: Option<&InfinibandSpec>, max_wire: u32) -> Result<IbConfig, ScenarioError> {
        let default_spec = InfinibandSpec::default();
        let spec = spec.unwrap_or(&default_spec);
        let at = |k: &str| format!("fabric.infiniband.{k}");
        let vls = spec.vls.unwrap_or(1);
        if vls == 0 || vls > ib::MAX_DATA_VLS {
            return Err(self.err(
                &at("vls"),
                format!("expected 1..={} data VLs, got {vls}", ib::MAX_DATA_VLS),
            ));
        }
        let mut c = IbConfig::with_vls(vls);
        if let Some(t) = &spec.sl2vl {
            if t.len() != 16 {
                return Err(self.err(&at("sl2vl"), format!("expected 16 entries (SL 0..15), got {}", t.len())));
            }
            for (sl, &vl) in t.iter().enumerate() {
                if vl >= vls {
                    return Err(self.err(
                        &at("sl2vl"),
                        format!("SL {sl} maps to VL {vl}, but only VLs 0..{vls} exist"),
                    ));
                }
                c.sl2vl[sl] = vl;
            }
        }
        let need = ib::link::blocks(max_wire) as u64;
        let credits = |field: &str, size: Option<SizeSpec>, default: u32| -> Result<u32, ScenarioError> {
            let Some(size) = size else { return Ok(default) };
            let b = size.get().get();
            if b % 64 != 0 {
                return Err(self.err(&at(field), format!("expected whole 64-byte credits, got {b}B")));
            }
            let blocks = b / 64;
            if blocks < need || blocks > MAX_IB_BUFFER_BLOCKS {
                return Err(self.err(
                    &at(field),
                    format!(
                        "expected {}B (one {max_wire}B packet) ..= {}B, got {b}B",
                        need * 64,
                        MAX_IB_BUFFER_BLOCKS * 64
                    ),
                ));
            }
            Ok(blocks as u32)
        };
        c.vl_buffer_blocks = credits("vl_buffer", spec.vl_buffer, c.vl_buffer_blocks)?;
        c.hca_vl_buffer_blocks = credits("hca_vl_buffer", spec.hca_vl_buffer, c.hca_vl_buffer_blocks)?;
        if let Some(q) = &spec.input_queues {
            c.switch_voq = match q.as_str() {
                "fifo" => false,
                "voq" => true,
                _ => {
                    return Err(self.err(&at("input_queues"), format!("expected \"fifo\" or \"voq\", got {q:?}")));
                }
            };
        }
        if let Some(pool) = spec.shared_pool {
            let b = pool.get().get();
            if b % 64 != 0 || b / 64 > MAX_IB_BUFFER_BLOCKS {
                return Err(self.err(
                    &at("shared_pool"),
                    format!(
                        "expected whole 64-byte credits up to {}B, got {b}B",
                        MAX_IB_BUFFER_BLOCKS * 64
                    ),
                ));
            }
            c.shared_pool_blocks = (b / 64) as u32;
        }
        if let Some(t) = spec.credit_update_interval {
            if t.get() > Duration::from_ms(1) {
                return Err(self.err(
                    &at("credit_update_interval"),
                    format!("expected at most 1ms, got {}", t.get()),
                ));
            }
            c.credit_update = AnyCreditUpdate::PerChange(PerChange { min_interval: t.get() });
        }
        if let Some(u) = &spec.credit_update {
            c.credit_update = self.credit_update(u, spec.credit_update_interval.is_some(), &at)?;
        }
        for (field, v, slot) in [
            ("hoq_life_switch", spec.hoq_life_switch, &mut c.hoq_life_switch),
            ("hoq_life_leaf", spec.hoq_life_leaf, &mut c.hoq_life_leaf),
        ] {
            if let Some(v) = v {
                if v > 31 {
                    return Err(self.err(
                        &at(field),
                        format!("expected an encoded HOQLife 0..=31 (> 19 = off), got {v}"),
                    ));
                }
                *slot = v;
            }
        }
        if let Some(a) = &spec.vl_arbitration {
            let entries = |v: &[VlArbEntrySpec]| {
                v.iter()
                    .map(|e| VlArbEntry {
                        vl: e.vl,
                        weight: e.weight,
                    })
                    .collect()
            };
            c.vlarb = VlArbConfig {
                high: entries(&a.high),
                low: entries(&a.low),
                high_limit: a.high_limit,
            };
            c.vlarb.validate(vls).map_err(|m| self.err(&at("vl_arbitration"), m))?;
        }
        if let Some(cc) = &spec.cc {
            let mut sw = IbCcSwitch::default();
            let mut src = IbCcSource::default();
            if let Some(t) = cc.threshold {
                if t > 15 {
                    return Err(self.err(&at("cc.threshold"), format!("expected 0..=15, got {t}")));
                }
                sw.threshold = t;
            }
            if let Some(r) = cc.marking_rate {
                sw.marking_rate = r;
            }
            if let Some(p) = cc.packet_size {
                sw.packet_size_blocks =
                    ib::link::blocks(p.get().get().min(u32::MAX as u64) as u32).min(u16::MAX as u32) as u16;
            }
            sw.victim_mask = cc.victim_mask;
            if let Some(v) = cc.ccti_increase {
                if v == 0 || v > 255 {
                    return Err(self.err(
                        &at("cc.ccti_increase"),
                        format!("expected 1..=255 (CCTI_Increase is 8 bits), got {v}"),
                    ));
                }
                src.ccti_increase = v;
            }
            if let Some(v) = cc.ccti_limit {
                if v > ib::cc::MAX_CCTI {
                    return Err(self.err(
                        &at("cc.ccti_limit"),
                        format!("expected 0..={} (a 14-bit table index), got {v}", ib::cc::MAX_CCTI),
                    ));
                }
                src.ccti_limit = v;
            }
            if let Some(v) = cc.ccti_min {
                if v > src.ccti_limit {
                    return Err(self.err(
                        &at("cc.ccti_min"),
                        format!("expected 0..={} (at most ccti_limit), got {v}", src.ccti_limit),
                    ));
                }
                src.ccti_min = v;
            }
            if let Some(t) = cc.ccti_timer {
                let (lo, hi) = (ib::cc::CCTI_TIMER_UNIT, ib::cc::MAX_CCTI_TIMER);
                if t.get() < lo || t.get() > hi {
                    return Err(self.err(
                        &at("cc.ccti_timer"),
                        format!(
                            "expected a period in [{}, {}] (CCTI_Timer is 1..=65535 units of 1.024us), got {t}",
                            TimeSpec::new(lo),
                            TimeSpec::new(hi)
                        ),
                    ));
                }
                src.ccti_timer = t.get();
            }
            match &cc.cct {
                Some(table) => {
                    let most = ib::cc::MAX_CCTI as usize + 1;
                    if table.is_empty() || table.len() > most {
                        return Err(self.err(
                            &at("cc.cct"),
                            format!("expected 1..={most} entries, got {}", table.len()),
                        ));
                    }
                    if cc.ccti_limit.is_none() {
                        src.ccti_limit = (table.len() - 1) as u16;
                    } else if table.len() <= src.ccti_limit as usize {
                        return Err(self.err(
                            &at("cc.cct"),
                            format!(
                                "expected at least ccti_limit + 1 = {} entries, got {}",
                                src.ccti_limit as usize + 1,
                                table.len()
                            ),
                        ));
                    }
                    if src.ccti_min > src.ccti_limit {
                        return Err(self.err(
                            &at("cc.ccti_min"),
                            format!(
                                "expected 0..={} (at most ccti_limit, the table's last index), got {}",
                                src.ccti_limit, src.ccti_min
                            ),
                        ));
                    }
                    src.cct = table.clone();
                }
                None if src.ccti_limit as usize >= src.cct.len() => {
                    src.cct = ib::cc::default_cct(src.ccti_limit + 1);
                }
                None => {}
            }
            src.validate().map_err(|m| self.err(&at("cc"), m))?;
            c.cc = Some(IbCcConfig {
                switch: sw,
                source: std::sync::Arc::new(src),
            });
        }
        c.validate(max_wire).map_err(|m| self.err("fabric.infiniband", m))?;
        Ok(c)
    }
}

/// `[fabric.infiniband.cc]` with every effective Annex A10 value written out.
pub(super) fn resolved_ib_cc(cc: &IbCcConfig) -> crate::schema::IbCcSpec {
    let (sw, src) = (&cc.switch, &cc.source);
    crate::schema::IbCcSpec {
        threshold: Some(sw.threshold),
        marking_rate: Some(sw.marking_rate),
        packet_size: Some(SizeSpec::from_bytes(
            sw.packet_size_blocks as u64 * ib::link::CREDIT_BLOCK_BYTES as u64,
        )),
        victim_mask: sw.victim_mask,
        ccti_increase: Some(src.ccti_increase),
        ccti_limit: Some(src.ccti_limit),
        ccti_min: Some(src.ccti_min),
        ccti_timer: Some(TimeSpec::new(src.ccti_timer)),
        cct: Some(src.cct.clone()),
    }
}
