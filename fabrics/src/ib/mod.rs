//! InfiniBand: the model's configuration and its pure parts.
//!
//! | part | file | source |
//! |---|---|---|
//! | speeds, widths, header bytes, credit blocks, cable delay | [`link`] | IBA vol. 1 ch. 5-7, `models.md` §1.1, §1.4 |
//! | VL arbitration (high/low WRR tables, high limit) | [`vlarb`] | IBA vol. 1 §7.6.9, `models.md` §1.3 |
//! | congestion control (FECN marking, BECN, CCT/CCTI) | [`cc`] | IBA Annex A10, `models.md` §1.6 |
//!
//! The switch and HCA mechanics (per-VL input buffers, credit accounting with flow-control
//! packets on the reverse link, cut-through forwarding, input arbitration, HOQLife) run in
//! the packet engine, `engine/ib/`, driven by the [`IbConfig`] below.
//! `docs/models/infiniband.md` lists every parameter with its unit, default and source.

pub mod cc;
pub mod deadlock;
pub mod link;
pub mod vlarb;

use sim_core::Duration;
use std::sync::Arc;

pub use cc::{IbCcSource, IbCcSwitch};
pub use link::IbSpeed;
pub use vlarb::{VlArbConfig, VlArbEntry};

/// Largest number of data VLs (VL0..VL14; VL15 is management, not modelled).
pub const MAX_DATA_VLS: u8 = 15;

/// Default input buffer per VL and port: 1024 credits (64 KiB). The Mellanox flit model's
/// example configurations use 1000 credits per input buffer (`models.md` §1.5); NVIDIA does
/// not publish Quantum per-port buffer sizes. 1024 credits keep an NDR link at line rate up
/// to ≈ 60 m of cable (§1.8). An assumption.
pub const DEFAULT_VL_BUFFER_BLOCKS: u32 = 1024;

/// Default port-to-port latency of an IB switch: 130 ns ("sub-130 ns" Quantum HDR,
/// `models.md` §1.5 recommends 100-300 ns with 130 ns as default).
pub const DEFAULT_IB_SWITCH_LATENCY: Duration = Duration::from_ns(130);

/// opensm's HOQLife defaults (`osm_base.h`): switch-to-switch ports 0x12, ports facing CAs
/// 0x10. Encoded as 4.096 µs × 2^value; values above 19 disable the mechanism.
pub const DEFAULT_HOQ_LIFE_SWITCH: u8 = 0x12;
pub const DEFAULT_HOQ_LIFE_LEAF: u8 = 0x10;

/// The head-of-queue lifetime an encoded HOQLife value stands for (`None` = infinite).
pub fn hoq_life(encoded: u8) -> Option<Duration> {
    (encoded <= 19).then(|| Duration::from_ps(4_096_000u64 << encoded))
}

/// IB congestion control, switch and source sides (IBA Annex A10).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct IbCcConfig {
    pub switch: IbCcSwitch,
    pub source: Arc<IbCcSource>,
}

/// Everything that makes the engine run an InfiniBand fabric.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IbConfig {
    /// Data VLs per port, 1..=15.
    pub n_vls: u8,
    /// SL to VL mapping (one table for every port: a simplification of the per input/output
    /// port SL2VLMappingTable).
    pub sl2vl: [u8; 16],
    /// Input buffer per VL of every switch port, in 64-byte credits (static, no shared pool).
    pub vl_buffer_blocks: u32,
    /// Receive buffer per VL of every HCA, in credits. HCAs drain it at once (into host
    /// memory), so it only sets how many credits the HCA advertises.
    pub hca_vl_buffer_blocks: u32,
    /// Shared pool per switch input port, in credits, on top of the static per-VL buffers
    /// (0 = none). The free pool is lent to the VL whose flow-control packet goes out next
    /// (and advertised in it); lent blocks return to the pool as that VL's packets leave.
    pub shared_pool_blocks: u32,
    /// Switch input discipline. `true` (default): virtual output queues per input and VL,
    /// every packet competes for its output on arrival (oldest first), as in a shared-memory
    /// switch with per-egress transmit queues: NVIDIA/Mellanox describe their switch ASICs so
    /// (US patent 10,250,530 "Flexible buffer allocation in a network switch"); credits stay
    /// per input and VL, HOQLife runs on the oldest packet of each output's queue. `false`:
    /// one FIFO per input port and VL, only its head competes for an output (head-of-line
    /// blocking between outputs, the IBA reference model of an input-buffered switch).
    pub switch_voq: bool,
    pub credit_update: crate::models::credit::AnyCreditUpdate,
    /// VL arbitration tables of every output port (switches and HCAs).
    pub vlarb: VlArbConfig,
    /// Encoded HOQLife of switch ports towards switches and towards CAs (>19 = off).
    pub hoq_life_switch: u8,
    pub hoq_life_leaf: u8,
    /// IB congestion control; `None` = off (the default, as in opensm).
    pub cc: Option<IbCcConfig>,
    /// Bytes per credit, a power of two: 64 for InfiniBand (IBA vol. 1 §7.9.4), 16 for
    /// NVLink flits and PCIe data credits (the same credit engine runs all three). Buffer
    /// sizes (`vl_buffer_blocks`, `hca_vl_buffer_blocks`) count these units.
    pub credit_unit_bytes: u32,
    /// Wire bytes of one flow-control (credit return) packet: 6 for InfiniBand; 0 where
    /// credits ride in the headers of reverse traffic (NVLink); 8 for a PCIe UpdateFC DLLP.
    pub fc_packet_bytes: u32,
    /// Most credits one VL of a link may have outstanding: 2048 for InfiniBand (modulo-4096
    /// counters, [`link::MAX_CREDIT_WINDOW_BLOCKS`]); other link layers set their own.
    pub max_credit_window: u64,
}

impl IbConfig {
    /// Defaults for `n_vls` data VLs: opensm's SL2VL (SL i → VL i, folded into the existing
    /// VLs), VL arbitration and HOQLife, 1024-credit buffers, immediate credit updates, no CC.
    pub fn with_vls(n_vls: u8) -> IbConfig {
        let n = n_vls.clamp(1, MAX_DATA_VLS);
        let mut sl2vl = [0u8; 16];
        for (sl, vl) in sl2vl.iter_mut().enumerate() {
            *vl = (sl as u8) % n;
        }
        IbConfig {
            n_vls: n,
            sl2vl,
            vl_buffer_blocks: DEFAULT_VL_BUFFER_BLOCKS,
            hca_vl_buffer_blocks: DEFAULT_VL_BUFFER_BLOCKS,
            shared_pool_blocks: 0,
            switch_voq: true,
            credit_update: crate::models::credit::AnyCreditUpdate::default(),
            vlarb: VlArbConfig::opensm_default(n),
            hoq_life_switch: DEFAULT_HOQ_LIFE_SWITCH,
            hoq_life_leaf: DEFAULT_HOQ_LIFE_LEAF,
            cc: None,
            credit_unit_bytes: link::CREDIT_BLOCK_BYTES,
            fc_packet_bytes: link::FLOW_CONTROL_PACKET_BYTES,
            max_credit_window: link::MAX_CREDIT_WINDOW_BLOCKS,
        }
    }

    /// Credits a packet of `wire_bytes` consumes (rounded up to whole credit units). The unit
    /// is a power of two, so this is a shift (the hot path uses it on every hop).
    #[inline]
    pub fn credits(&self, wire_bytes: u32) -> u32 {
        (wire_bytes + self.credit_unit_bytes - 1) >> self.credit_unit_bytes.trailing_zeros()
    }

    /// Checks ranges; the engine refuses an invalid configuration.
    pub fn validate(&self, max_wire_bytes: u32) -> Result<(), String> {
        if self.n_vls == 0 || self.n_vls > MAX_DATA_VLS {
            return Err(format!("n_vls {} is outside 1..={MAX_DATA_VLS}", self.n_vls));
        }
        if let Some((sl, vl)) = self.sl2vl.iter().enumerate().find(|(_, vl)| **vl >= self.n_vls) {
            return Err(format!(
                "sl2vl maps SL {sl} to VL {vl}, but only VLs 0..{} exist",
                self.n_vls
            ));
        }
        if !self.credit_unit_bytes.is_power_of_two() || self.credit_unit_bytes > 4096 {
            return Err(format!(
                "credit unit {} B is not a power of two in 1..=4096",
                self.credit_unit_bytes
            ));
        }
        if self.fc_packet_bytes > 64 {
            return Err(format!(
                "flow-control packet of {} B exceeds 64 B",
                self.fc_packet_bytes
            ));
        }
        let need = self.credits(max_wire_bytes);
        for (what, b) in [
            ("vl_buffer", self.vl_buffer_blocks),
            ("hca_vl_buffer", self.hca_vl_buffer_blocks),
        ] {
            if b < need {
                return Err(format!(
                    "{what} of {b} credits cannot hold one {max_wire_bytes}-byte packet ({need} credits)"
                ));
            }
        }
        self.vlarb.validate(self.n_vls)?;
        if let Some(cc) = &self.cc {
            cc.source.validate()?;
            if cc.switch.threshold > 15 {
                return Err(format!("cc threshold {} is outside 0..=15", cc.switch.threshold));
            }
        }
        Ok(())
    }
}

impl IbConfig {
    /// The credit layer of the servers of a GPU cluster whose network is not credit-based
    /// (RoCEv2): the link layer an InfiniBand cluster's servers run (these defaults: 64-B
    /// credits, 1024-credit buffers per lane, 6-B flow-control packets, immediate updates), so
    /// the servers behave the same whatever the network, with 8 lanes so that a packet's lane
    /// inside a server is its Ethernet priority (the engine requires lane = priority).
    pub fn server_layer() -> IbConfig {
        IbConfig::with_vls(8)
    }
}

impl Default for IbConfig {
    fn default() -> Self {
        IbConfig::with_vls(1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hoq_life_encoding() {
        // opensm: 0x12 ≈ 1.07 s, 0x10 ≈ 268 ms; > 19 disables.
        assert_eq!(hoq_life(0x12).unwrap().ps(), 4_096_000 << 18);
        assert!((hoq_life(0x12).unwrap().as_secs_f64() - 1.0737).abs() < 1e-3);
        assert!((hoq_life(0x10).unwrap().as_secs_f64() - 0.2684).abs() < 1e-3);
        assert_eq!(hoq_life(20), None);
    }

    #[test]
    fn config_validation() {
        let c = IbConfig::with_vls(4);
        assert_eq!(&c.sl2vl[..6], &[0, 1, 2, 3, 0, 1]);
        assert!(c.validate(4122).is_ok());
        let small = IbConfig {
            vl_buffer_blocks: 64,
            ..IbConfig::default()
        };
        assert!(small.validate(4122).unwrap_err().contains("65 credits"));
        let mut bad = IbConfig::with_vls(2);
        bad.sl2vl[3] = 5;
        assert!(bad.validate(4122).unwrap_err().contains("SL 3 to VL 5"));
    }
}
