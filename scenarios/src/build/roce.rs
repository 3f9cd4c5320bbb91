//! `[fabric.roce]`: the RoCE version, the RoCEv2 configuration, its buffer and timing checks,
//! and its resolved form.

use super::{FIRMWARE_CNP_INTERVAL, Loaded, MAX_TIMER, MAX_XOFF_THRESHOLD_BYTES};
use crate::diag::ScenarioError;
use crate::schema::{CcKind, CcPreset, EcnPreset, MarkPointSpec, RoceSpec};
use crate::units::{SizeSpec, TimeSpec};
use fabrics::engine::{DEFAULT_CNP_INTERVAL, DEFAULT_PORT_BUFFER_BYTES, EngineConfig, RoceCc, RoceConfig};
use fabrics::models::{MarkPoint, RedParams};
use fabrics::roce::{RoceFrame, RoceVersion};
use fabrics::topology::Topology;
use sim_core::Duration;

impl Loaded {
    /// `[fabric.roce] version`: 2 (the default) or 1.
    pub fn roce_version(&self) -> Result<RoceVersion, ScenarioError> {
        match self.scenario.fabric.roce.as_ref().and_then(|r| r.version) {
            None | Some(2) => Ok(RoceVersion::V2),
            Some(1) => Ok(RoceVersion::V1),
            Some(v) => Err(self.err(
                "fabric.roce.version",
                format!("expected 1 (RoCEv1) or 2 (RoCEv2), got {v}"),
            )),
        }
    }

    /// `[fabric.roce]` into the engine's [`RoceConfig`], every value range-checked.
    pub(super) fn build_roce(&self, spec: Option<&RoceSpec>, max_wire: u32) -> Result<RoceConfig, ScenarioError> {
        let default_spec = RoceSpec::default();
        let spec = spec.unwrap_or(&default_spec);
        let at = |k: &str| format!("fabric.roce.{k}");
        let mut c = RoceConfig {
            dwrr_quantum_bytes: [max_wire; 8],
            frame: RoceFrame::data(self.roce_version()?),
            ..RoceConfig::default()
        };
        let mask = |field: &str, v: &Option<Vec<u8>>, default: u8| -> Result<u8, ScenarioError> {
            let Some(list) = v else { return Ok(default) };
            let mut m = 0u8;
            for &p in list {
                if p > 7 {
                    return Err(self.err(&at(field), format!("expected priorities 0..=7, got {p}")));
                }
                m |= 1 << p;
            }
            Ok(m)
        };
        c.lossless_mask = mask("lossless", &spec.lossless, c.lossless_mask)?;
        c.lossy_mask = mask("lossy", &spec.lossy, c.lossy_mask)?;
        c.strict_mask = mask("strict", &spec.strict, c.strict_mask)?;
        if c.lossless_mask & c.lossy_mask != 0 {
            return Err(self.err(&at("lossy"), "a priority cannot be both lossless and lossy"));
        }
        if let Some(p) = spec.control_priority {
            if p > 7 {
                return Err(self.err(&at("control_priority"), format!("expected 0..=7, got {p}")));
            }
            c.control_priority = p;
        }
        c.buffer_bytes = spec.buffer.map(|b| b.get().get());
        if let Some(b) = spec.reserve {
            c.reserve_bytes = b.get().get();
        }
        c.headroom_bytes = spec.headroom.map(|b| b.get().get());
        if let Some(b) = spec.resume_offset {
            c.resume_offset_bytes = b.get().get();
        }
        if let Some(a) = spec.alpha_shift {
            if !(-8..=16).contains(&a) {
                return Err(self.err(&at("alpha_shift"), format!("expected -8..=16, got {a}")));
            }
            c.alpha_shift = a;
        }
        if let Some(t) = spec.xoff_threshold {
            if spec.alpha_shift.is_some() {
                return Err(self.err(
                    &at("xoff_threshold"),
                    "give either a static xoff_threshold or the dynamic threshold's alpha_shift, not both",
                ));
            }
            let b = t.get().get();
            if b < max_wire as u64 || b > MAX_XOFF_THRESHOLD_BYTES {
                return Err(self.err(
                    &at("xoff_threshold"),
                    format!(
                        "expected a size in [{}, {}] (at least one {max_wire} B frame), got {t}",
                        SizeSpec::from_bytes(max_wire as u64),
                        SizeSpec::from_bytes(MAX_XOFF_THRESHOLD_BYTES)
                    ),
                ));
            }
            c.xoff_threshold_bytes = Some(b);
        }
        if let Some(q) = spec.pause_quanta {
            if q == 0 {
                return Err(self.err(&at("pause_quanta"), "expected 1..=65535 (0 is RESUME)"));
            }
            c.pause_quanta = q;
        }
        if let Some(t) = spec.pfc_refresh {
            if t.get() == Duration::ZERO {
                return Err(self.err(&at("pfc_refresh"), "expected a period > 0"));
            }
            c.pfc_refresh = Some(t.get());
        }
        if let Some(kind) = &spec.pause {
            use fabrics::models::PauseKind;
            c.pause = match kind.as_str() {
                "pfc" => PauseKind::Priority,
                "global" => PauseKind::Global,
                _ => {
                    return Err(self.err(
                        &at("pause"),
                        format!("expected \"pfc\" (802.1Qbb) or \"global\" (802.3x), got {kind:?}"),
                    ));
                }
            };
        }
        c.acks = spec.acks;
        c.go_back_n = self.go_back_n_timeout(spec.go_back_n_timeout, "fabric.roce")?;
        if let Some(d) = spec.deadlock_detection {
            c.deadlock_detection = d;
        }
        if let Some(w) = &spec.go_back_n_window {
            c.gbn_window = self.go_back_n_window(w, "fabric.roce")?;
        }
        if let Some(t) = spec.rate_sample {
            if t.get() == Duration::ZERO {
                return Err(self.err(&at("rate_sample"), "expected a period > 0"));
            }
            c.rate_sample = Some(t.get());
        }
        if let Some(n) = spec.rate_sample_max_rows {
            if n == 0 || n > 100_000_000 {
                return Err(self.err(&at("rate_sample_max_rows"), format!("expected 1..=100000000, got {n}")));
            }
            c.rate_sample_max_rows = n;
        }
        if let Some(t) = spec.pfc_watchdog {
            if t.get() == Duration::ZERO || t.get() > MAX_TIMER {
                return Err(self.err(
                    &at("pfc_watchdog"),
                    format!("expected a window in (0, {MAX_TIMER}], got {}", t.get()),
                ));
            }
            c.pfc_watchdog = Some(t.get());
        }
        let rate = self.min_host_rate()?;
        if let Some(e) = &spec.ecn {
            let mut r = match e.preset.unwrap_or(EcnPreset::DcqcnPaper) {
                EcnPreset::DcqcnPaper => RedParams::dcqcn_paper(),
                EcnPreset::HpccSim => RedParams::hpcc_sim(rate),
                EcnPreset::Onyx => RedParams::onyx(),
            };
            if let Some(k) = e.kmin {
                r.kmin_bytes = k.get().get();
            }
            if let Some(k) = e.kmax {
                r.kmax_bytes = k.get().get();
            }
            if let Some(p) = e.pmax {
                if !(0.0..=1.0).contains(&p) {
                    return Err(self.err(
                        &at("ecn.pmax"),
                        format!("expected 0..=1, got {}", crate::wording::float_text(p)),
                    ));
                }
                r.pmax_ppm = (p * 1e6).round() as u32;
            }
            if let Some(pt) = e.point {
                r.point = match pt {
                    MarkPointSpec::Enqueue => MarkPoint::Enqueue,
                    MarkPointSpec::Dequeue => MarkPoint::Dequeue,
                };
            }
            r.check().map_err(|m| self.err(&at("ecn"), m))?;
            c.ecn = Some(r);
        }
        let mut cnp_default = DEFAULT_CNP_INTERVAL;
        let mut cnp = (spec.cnp_interval, "cnp_interval");
        if let Some(cc) = &spec.cc {
            c.cc = match cc.kind {
                CcKind::Dcqcn => {
                    let d = cc;
                    if d.preset == Some(CcPreset::Firmware) {
                        cnp_default = FIRMWARE_CNP_INTERVAL;
                    }
                    if let Some(t) = d.cnp_interval {
                        if spec.cnp_interval.is_some() {
                            return Err(self.err(
                                &at("cc.cnp_interval"),
                                "give cnp_interval in [fabric.roce] or in [fabric.roce.cc], not both",
                            ));
                        }
                        cnp = (Some(t), "cc.cnp_interval");
                    }
                    RoceCc::Dcqcn(crate::cc_params::dcqcn_params(self, d, rate)?)
                }
                CcKind::Timely => RoceCc::Timely(crate::cc_params::timely_params(self, cc, rate)?),
                CcKind::Hpcc => RoceCc::Hpcc(crate::cc_params::hpcc_params(self, cc, rate)?),
            };
        }
        c.cnp_interval = match cnp.0 {
            Some(t) if t.get() > MAX_TIMER => {
                return Err(self.err(
                    &at(cnp.1),
                    format!("expected an interval in [0, {MAX_TIMER}], got {}", t.get()),
                ));
            }
            Some(t) => t.get(),
            None => cnp_default,
        };
        c.validate(max_wire).map_err(|m| self.err("fabric.roce", m))?;
        let active = c.lossless_mask | c.lossy_mask;
        for (i, w) in self.scenario.workload.iter().enumerate() {
            let class = self.scenario.class_of(w);
            if class > 7 || active & (1 << class) == 0 {
                return Err(self.err(
                    &format!("workload[{i}].class"),
                    format!(
                        "on a RoCEv2 fabric a class is a priority listed in [fabric.roce] lossless or lossy; got {class}"
                    ),
                ));
            }
        }
        Ok(c)
    }

    /// Refuses, at the key that sets it, a RoCEv2 switch buffer too small for its reserve and
    /// headroom: the check the engine makes when it builds each switch's MMU, with the same
    /// headroom bound ([`fabrics::engine::headroom_bound_bytes`] of the switch's worst port).
    pub(super) fn check_roce_buffers(
        &self,
        topo: &Topology,
        c: &RoceConfig,
        engine: &EngineConfig,
    ) -> Result<(), ScenarioError> {
        let max_wire = engine.mtu_bytes + engine.header_bytes;
        for n in topo.graph.node_indices() {
            let ports = topo.ports(n);
            if topo.is_host(n) || ports.is_empty() {
                continue;
            }
            let bound = ports
                .iter()
                .map(|&(e, _)| {
                    let l = &topo.graph[e];
                    fabrics::engine::headroom_bound_bytes(l.rate, l.delay, engine.switch_latency, max_wire)
                })
                .max()
                .unwrap_or(0);
            let headroom = if c.lossless_mask == 0 {
                0
            } else {
                c.headroom_bytes.unwrap_or(bound)
            };
            let sb = fabrics::models::SharedBufferConfig {
                total_bytes: c
                    .buffer_bytes
                    .unwrap_or(DEFAULT_PORT_BUFFER_BYTES.saturating_mul(ports.len() as u64)),
                reserve_bytes: c.reserve_bytes,
                headroom_bytes: headroom,
                resume_offset_bytes: c.resume_offset_bytes,
                lossless_mask: c.lossless_mask,
                lossy_mask: c.lossy_mask,
                port_alpha_shift: vec![c.alpha_shift; ports.len()],
                xoff_threshold_bytes: c.xoff_threshold_bytes,
            };
            if sb.check().is_ok() {
                continue;
            }
            let roce = self.scenario.fabric.roce.as_ref();
            let given = |f: fn(&RoceSpec) -> bool| roce.is_some_and(f);
            let field = if given(|r| r.buffer.is_some()) {
                "fabric.roce.buffer"
            } else if given(|r| r.headroom.is_some()) {
                "fabric.roce.headroom"
            } else if given(|r| r.reserve.is_some()) {
                "fabric.roce.reserve"
            } else {
                "fabric.roce"
            };
            let (reserve, head) = (sb.total_reserve_bytes(), sb.total_headroom_bytes());
            return Err(self.err(
                field,
                format!(
                    "switch {} ({} ports) needs a buffer of at least {} B: reserve {reserve} B + headroom {head} B \
                     (per port and priority; the headroom bound of its links is {bound} B); the buffer is {} B",
                    topo.graph[n].name,
                    ports.len(),
                    reserve.saturating_add(head),
                    sb.total_bytes
                ),
            ));
        }
        Ok(())
    }

    /// Refuses PFC and sampling periods the engine cannot honour, at the key that sets them, with
    /// the valid range for this fabric's links (issue 14). A PAUSE holds its receiver for
    /// `pause_quanta` x 512 bit times (802.1Qbb); the sender refreshes it every `pfc_refresh`
    /// (default half the pause time), and a refresh can wait behind one maximum frame already
    /// on the wire. So the pause stays continuous, and the headroom bound holds, only when
    /// `refresh + max frame + PFC frame <= pause time` on every PFC link: the pause time is
    /// shortest on the fastest link, so that link bounds `pfc_refresh` from above and, with the
    /// default refresh, `pause_quanta` from below (a bound in bit times, the same at any rate).
    /// A refresh shorter than one maximum frame on the slowest link, or a rate sample shorter
    /// than one on the fastest, only multiplies events (a 1 ps period never ends).
    pub(super) fn check_roce_timing(
        &self,
        topo: &Topology,
        c: &RoceConfig,
        engine: &EngineConfig,
    ) -> Result<(), ScenarioError> {
        use fabrics::models::pfc::{PAUSE_QUANTUM_BITS, PFC_FRAME_WIRE_BYTES, pause_duration};
        use fabrics::topology::LinkKind;
        use sim_core::{Bytes, serialization_time};
        let rates: Vec<sim_core::BitsPerSec> = topo
            .graph
            .edge_indices()
            .map(|e| topo.graph[e])
            .filter(|l| matches!(l.kind, LinkKind::Network | LinkKind::Ethernet))
            .map(|l| l.rate)
            .collect();
        let (Some(&slow), Some(&fast)) = (rates.iter().min(), rates.iter().max()) else {
            return Ok(());
        };
        let max_wire = (engine.mtu_bytes + engine.header_bytes) as u64;
        let at = |k: &str| format!("fabric.roce.{k}");
        let frame = |rate| crate::units::TimeSpec::new(serialization_time(Bytes(max_wire), rate));
        let ts = crate::units::TimeSpec::new;
        if c.lossless_mask != 0 {
            // refresh + max frame + PFC frame <= pause, with refresh = pause / 2 by default.
            let slack_bits = (max_wire + PFC_FRAME_WIRE_BYTES) * 8;
            let min_quanta = (2 * slack_bits).div_ceil(PAUSE_QUANTUM_BITS);
            let slack = ts(serialization_time(Bytes(max_wire + PFC_FRAME_WIRE_BYTES), fast));
            let pause = ts(pause_duration(c.pause_quanta, fast));
            match c.pfc_refresh {
                None if (c.pause_quanta as u64) < min_quanta => {
                    return Err(self.err(
                        &at("pause_quanta"),
                        format!(
                            "expected {min_quanta}..=65535: a PAUSE must outlast its refresh (half the pause time) \
                             plus one {max_wire} B frame and one PFC frame, or the sender resumes between refreshes \
                             and overruns the headroom; got {}",
                            c.pause_quanta
                        ),
                    ));
                }
                None => {}
                Some(r) => {
                    let r = ts(r);
                    let lo = frame(slow);
                    if pause.get() <= slack.get() || pause.get() - slack.get() < lo.get() {
                        return Err(self.err(
                            &at("pause_quanta"),
                            format!(
                                "a PAUSE of {} quanta lasts {pause} at {fast}, too short to refresh: it must \
                                 outlast one {max_wire} B frame time ({lo} at {slow}) plus {slack}; raise \
                                 pause_quanta or remove pfc_refresh",
                                c.pause_quanta
                            ),
                        ));
                    }
                    let hi = ts(pause.get() - slack.get());
                    if r < lo || r > hi {
                        return Err(self.err(
                            &at("pfc_refresh"),
                            format!(
                                "expected a period in [{lo}, {hi}]: at least one {max_wire} B frame at {slow}, and \
                                 short enough that the PAUSE ({} quanta = {pause} at {fast}) outlasts the refresh \
                                 plus one frame and one PFC frame; got {r}",
                                c.pause_quanta
                            ),
                        ));
                    }
                }
            }
        }
        if let Some(p) = c.rate_sample {
            let (p, lo) = (ts(p), frame(fast));
            if p.get() < lo.get() || p.get() > MAX_TIMER {
                return Err(self.err(
                    &at("rate_sample"),
                    format!(
                        "expected a period in [{lo}, {MAX_TIMER}]: at least one {max_wire} B frame at {fast} \
                         (no rate changes faster); got {p}"
                    ),
                ));
            }
        }
        Ok(())
    }
}

/// `[fabric.roce]` with every effective PFC, ECN and congestion-control value written out
/// (presets resolved). Three defaults stay implicit because they differ per switch or per
/// link: `buffer` (512 KiB per port), `headroom` (the bound of the switch's worst port) and
/// `pfc_refresh` (half the pause time at each link's rate).
pub(super) fn resolved_roce(mut r: RoceSpec, c: &RoceConfig) -> RoceSpec {
    let list = |mask: u8| -> Vec<u8> { (0..8).filter(|p| mask & (1 << p) != 0).collect() };
    r.reserve = Some(SizeSpec::from_bytes(c.reserve_bytes));
    r.resume_offset = Some(SizeSpec::from_bytes(c.resume_offset_bytes));
    match c.xoff_threshold_bytes {
        Some(t) => r.xoff_threshold = Some(SizeSpec::from_bytes(t)),
        None => r.alpha_shift = Some(c.alpha_shift),
    }
    r.lossless = Some(list(c.lossless_mask));
    r.lossy = Some(list(c.lossy_mask));
    r.strict = Some(list(c.strict_mask));
    r.control_priority = Some(c.control_priority);
    r.pause_quanta = Some(c.pause_quanta);
    r.pause = Some(
        match c.pause {
            fabrics::models::PauseKind::Priority => "pfc",
            fabrics::models::PauseKind::Global => "global",
        }
        .to_owned(),
    );
    if let Some(e) = &c.ecn {
        let ecn = r.ecn.get_or_insert_with(Default::default);
        ecn.preset.get_or_insert(EcnPreset::DcqcnPaper);
        ecn.kmin = Some(SizeSpec::from_bytes(e.kmin_bytes));
        ecn.kmax = Some(SizeSpec::from_bytes(e.kmax_bytes));
        ecn.pmax = Some(e.pmax_ppm as f64 / fabrics::models::marking::PPM_ONE as f64);
        ecn.point = Some(match e.point {
            MarkPoint::Enqueue => MarkPointSpec::Enqueue,
            MarkPoint::Dequeue => MarkPointSpec::Dequeue,
        });
    }
    r.cnp_interval = Some(TimeSpec::new(c.cnp_interval));
    r.cc = match (r.cc.take(), &c.cc) {
        (Some(cc), RoceCc::Dcqcn(p)) => {
            r.cnp_interval = None;
            Some(crate::cc_params::dcqcn_spec(cc.preset, p, c.cnp_interval))
        }
        (Some(cc), RoceCc::Timely(p)) => Some(crate::cc_params::timely_spec(cc.preset, p)),
        (Some(cc), RoceCc::Hpcc(p)) => Some(crate::cc_params::hpcc_spec(cc.preset, p)),
        (other, _) => other,
    };
    r
}
