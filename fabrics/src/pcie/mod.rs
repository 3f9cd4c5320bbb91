//! PCIe link parameters and TLP framing (pure data and arithmetic; models.md §3.3).
//!
//! - [`PcieGen`]: Gen3..Gen6 per-lane transfer rate and line encoding (128b/130b for Gen3-5;
//!   Gen6 FLIT mode, approximated by its 242/256 flit efficiency).
//! - [`PcieLink`]: a x1..x16 link with a max payload size (128..4096 B, default 256), TLP
//!   overhead (framing + sequence number, 3- or 4-DW header, LCRC, optional ECRC) and an
//!   assumed DLLP (Ack/UpdateFC) rate; [`PcieLink::effective_payload_rate`] is the payload
//!   bandwidth a DMA stream sees.
//!
//! See `docs/models/pcie.md`. PCIe switches and root complexes are topology nodes
//! (`crate::topology::NodeKind`); their engine model (store-and-forward switch, credit flow
//! control per TLP type) is pending and done by the lead.

use std::fmt;

use sim_core::{BitsPerSec, Duration};

use crate::topology::{LinkInfo, LinkKind};

/// Default one-way latency of a PCIe link including PHY/data-link processing, Gen3-Gen5 (NRZ,
/// no FEC). Assumption (no figure in models.md): a few hundred ns per hop is the usual order;
/// 150 ns here. Per generation: [`PcieGen::link_delay`].
pub const DEFAULT_LINK_DELAY: Duration = Duration::from_ns(150);
/// Latency the Gen6 FLIT-mode FEC adds per link: 2 ns, PCI-SIG's "less than 2 ns" for the
/// lightweight FEC of PCIe 6.0 (as quoted in PCIe 6.0 overviews; the specification itself was
/// not read), rounded up.
pub const GEN6_FEC_LATENCY: Duration = Duration::from_ns(2);
/// Default receive buffer for posted data per port in 16-byte data credits (64 KiB). An
/// assumption: PCIe's 12-bit data-credit field allows 2048 outstanding credits (32 KiB), which
/// does not cover a Gen5 x16 credit loop through a switch (~460 ns x 63 GB/s = 29 KB plus
/// slack); Scaled Flow Control (PCIe 6.0, scale 4) lifts the limit, assumed here for all
/// generations so that credits never throttle an idle link.
pub const DEFAULT_DATA_CREDITS: u32 = 4096;
/// Bytes per PCIe data credit (4 DW).
pub const DATA_CREDIT_BYTES: u32 = 16;

/// The PCIe link layer for the packet engine's credit path (`engine/ib/`): posted-write
/// data credits of 16 bytes, `data_credits` per port, one UpdateFC DLLP (8 B) on the reverse
/// link per freed TLP (Acks are assumed merged into it), no head-of-queue timeout.
pub fn credit_layer(data_credits: u32) -> crate::ib::IbConfig {
    crate::ib::IbConfig {
        vl_buffer_blocks: data_credits,
        hca_vl_buffer_blocks: data_credits,
        hoq_life_switch: 20,
        hoq_life_leaf: 20,
        credit_unit_bytes: DATA_CREDIT_BYTES,
        fc_packet_bytes: DLLP_BYTES,
        max_credit_window: 1 << 16,
        ..crate::ib::IbConfig::with_vls(1)
    }
}

/// Default max payload size (models.md §3.3 uses 256 B for its efficiency example).
pub const DEFAULT_MPS_BYTES: u32 = 256;
/// Bytes of one DLLP on the wire (2 DW, models.md §3.3).
pub const DLLP_BYTES: u32 = 8;

/// A PCIe generation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum PcieGen {
    Gen3,
    Gen4,
    Gen5,
    Gen6,
}

/// Line encoding.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Encoding {
    /// 128b/130b (Gen3-5): 1.54% overhead.
    B128b130b,
    /// FLIT mode (Gen6, PAM4): 256-byte flits of which 242 carry TLP/DLLP bytes (the rest is
    /// CRC and FEC); models.md §3.3's "approximate" 242/256.
    Flit,
}

impl PcieGen {
    pub const ALL: [PcieGen; 4] = [PcieGen::Gen3, PcieGen::Gen4, PcieGen::Gen5, PcieGen::Gen6];

    /// One-way latency of a link of this generation: [`DEFAULT_LINK_DELAY`] (150 ns, an
    /// assumption) for the NRZ generations, plus [`GEN6_FEC_LATENCY`] for Gen6's FEC. Gen3-Gen5
    /// links are equal here because no source gives a per-generation PHY latency.
    pub const fn link_delay(self) -> Duration {
        match self {
            PcieGen::Gen6 => Duration(DEFAULT_LINK_DELAY.0 + GEN6_FEC_LATENCY.0),
            _ => DEFAULT_LINK_DELAY,
        }
    }

    /// Port-to-port (cut-through) latency of a PCIe switch of this generation (x16 to x16):
    /// Gen4 105 ns (Broadcom PEX88000, "cut-through latency of 105ns between a pair of x16
    /// ports, a 30% reduction from the PEX9700 Gen3 family", Linley Group newsletter, Sept.
    /// 2019); Gen3 150 ns (derived: 105 / 0.7); Gen5 115 ns (Broadcom PEX89000 / PEX89144,
    /// "latency of 115 ns", product summary); Gen6 117 ns, an assumption: no Gen6 switch figure
    /// was found, so Gen5's plus [`GEN6_FEC_LATENCY`].
    pub const fn switch_latency(self) -> Duration {
        match self {
            PcieGen::Gen3 => Duration::from_ns(150),
            PcieGen::Gen4 => Duration::from_ns(105),
            PcieGen::Gen5 => Duration::from_ns(115),
            PcieGen::Gen6 => Duration(115_000 + GEN6_FEC_LATENCY.0),
        }
    }

    /// Transfer rate per lane in GT/s: 8, 16, 32, 64.
    pub const fn gt_per_s(self) -> u64 {
        match self {
            PcieGen::Gen3 => 8,
            PcieGen::Gen4 => 16,
            PcieGen::Gen5 => 32,
            PcieGen::Gen6 => 64,
        }
    }

    pub const fn encoding(self) -> Encoding {
        match self {
            PcieGen::Gen6 => Encoding::Flit,
            _ => Encoding::B128b130b,
        }
    }

    /// Per-lane, per-direction data rate after line encoding, rounded down to a bit/s.
    pub const fn lane_rate(self) -> BitsPerSec {
        let raw = self.gt_per_s() * 1_000_000_000;
        BitsPerSec(match self.encoding() {
            Encoding::B128b130b => raw * 128 / 130,
            Encoding::Flit => raw / 256 * 242,
        })
    }

    /// NCCL's model of an x`lanes` link in GB/s: `lanes x speed / 80` with speed 60/120/240/480
    /// (x100 Mb/s) for Gen3/4/5/6 (`NVIDIA/nccl:src/graph/topo.cc`), i.e. x16 = 12/24/48/96.
    pub fn nccl_model_gbps(self, lanes: u32) -> f64 {
        let speed = match self {
            PcieGen::Gen3 => 60.0,
            PcieGen::Gen4 => 120.0,
            PcieGen::Gen5 => 240.0,
            PcieGen::Gen6 => 480.0,
        };
        lanes as f64 * speed / 80.0
    }
}

/// Why a PCIe link configuration is refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PcieError {
    /// Width not in {1, 2, 4, 8, 16}.
    Lanes(u32),
    /// Max payload size not a power of two in 128..=4096.
    Mps(u32),
    /// TLP header not 12 or 16 bytes.
    Header(u32),
}

impl fmt::Display for PcieError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PcieError::Lanes(l) => write!(f, "PCIe width must be x1, x2, x4, x8 or x16 (got x{l})"),
            PcieError::Mps(m) => write!(f, "PCIe max payload size must be 128, 256, ..., 4096 bytes (got {m})"),
            PcieError::Header(h) => write!(f, "TLP header must be 12 or 16 bytes (got {h})"),
        }
    }
}

impl std::error::Error for PcieError {}

/// A PCIe link and its TLP framing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PcieLink {
    pub generation: PcieGen,
    /// Width: 1, 2, 4, 8 or 16 lanes.
    pub lanes: u32,
    /// Max payload size per TLP in bytes (128..4096, power of two; default 256).
    pub mps_bytes: u32,
    /// TLP header: 12 (3 DW, 32-bit address) or 16 bytes (4 DW, 64-bit address; the default,
    /// since GPU and NIC DMA targets lie above 4 GiB).
    pub header_bytes: u32,
    /// End-to-end CRC (4 bytes) present.
    pub ecrc: bool,
    /// DLLPs sent per `dllp_per_tlps.1` TLPs received, on the reverse direction. Assumption:
    /// `(2, 4)`, an Ack and an UpdateFC per 4 TLPs (no figure in models.md; real devices
    /// coalesce Acks and FC updates by timer and by count).
    pub dllp_per_tlps: (u32, u32),
}

impl PcieLink {
    /// An x`lanes` link with the defaults (MPS 256, 4-DW header, no ECRC, DLLPs 2 per 4 TLPs).
    pub fn new(generation: PcieGen, lanes: u32) -> Result<Self, PcieError> {
        let l = PcieLink {
            generation,
            lanes,
            mps_bytes: DEFAULT_MPS_BYTES,
            header_bytes: 16,
            ecrc: false,
            dllp_per_tlps: (2, 4),
        };
        l.check()?;
        Ok(l)
    }

    /// Checks width, MPS and header size.
    pub fn check(&self) -> Result<(), PcieError> {
        if !matches!(self.lanes, 1 | 2 | 4 | 8 | 16) {
            return Err(PcieError::Lanes(self.lanes));
        }
        if !(128..=4096).contains(&self.mps_bytes) || !self.mps_bytes.is_power_of_two() {
            return Err(PcieError::Mps(self.mps_bytes));
        }
        if !matches!(self.header_bytes, 12 | 16) {
            return Err(PcieError::Header(self.header_bytes));
        }
        Ok(())
    }

    /// Per-direction data rate after line encoding: `lanes x lane_rate`.
    pub const fn rate(&self) -> BitsPerSec {
        BitsPerSec(self.lanes as u64 * self.generation.lane_rate().0)
    }

    /// Overhead bytes per TLP. Gen3-5: framing and sequence number (4: the Gen3 STP token, or
    /// Gen1/2's STP + sequence + END) + header + LCRC (4) + ECRC (0/4) = 24 by default
    /// (models.md §3.3: 5-7 DW). Gen6 FLIT mode: the header (+ECRC) only, since sequence
    /// numbers and CRC live in the flit, which [`PcieGen::lane_rate`] already charges.
    pub const fn tlp_overhead_bytes(&self) -> u32 {
        let ecrc = if self.ecrc { 4 } else { 0 };
        match self.generation.encoding() {
            Encoding::B128b130b => 4 + self.header_bytes + 4 + ecrc,
            Encoding::Flit => self.header_bytes + ecrc,
        }
    }

    /// TLPs needed for `payload` bytes (at least 1).
    pub const fn tlps(&self, payload: u64) -> u64 {
        if payload == 0 {
            1
        } else {
            payload.div_ceil(self.mps_bytes as u64)
        }
    }

    /// Bytes on the wire for a `payload`-byte write (posted memory write TLPs).
    pub const fn wire_bytes(&self, payload: u64) -> u64 {
        payload + self.tlps(payload) * self.tlp_overhead_bytes() as u64
    }

    /// Reverse-direction DLLP bytes caused by a `payload`-byte write (assumed rate, rounded up).
    pub const fn dllp_bytes(&self, payload: u64) -> u64 {
        let (n, per) = self.dllp_per_tlps;
        if per == 0 {
            return 0;
        }
        (self.tlps(payload) * n as u64).div_ceil(per as u64) * DLLP_BYTES as u64
    }

    /// Payload efficiency of full TLPs in parts per million (`MPS / (MPS + overhead)`).
    pub const fn efficiency_ppm(&self) -> u64 {
        self.mps_bytes as u64 * 1_000_000 / (self.mps_bytes + self.tlp_overhead_bytes()) as u64
    }

    /// Payload bandwidth of a one-way stream of full TLPs (rounded down).
    pub const fn effective_payload_rate(&self) -> BitsPerSec {
        let m = self.mps_bytes as u128;
        BitsPerSec((self.rate().0 as u128 * m / (m + self.tlp_overhead_bytes() as u128)) as u64)
    }

    /// Payload bandwidth per direction when both directions stream full TLPs, so each also
    /// carries the other's DLLPs (assumed rate, [`PcieLink::dllp_per_tlps`]).
    pub const fn effective_payload_rate_bidirectional(&self) -> BitsPerSec {
        let m = self.mps_bytes as u128;
        let (n, per) = self.dllp_per_tlps;
        // Per TLP: MPS + overhead + (n / per) DLLPs; scaled by `per` to stay integer.
        let per = if per == 0 { 1 } else { per as u128 };
        let n = if self.dllp_per_tlps.1 == 0 { 0 } else { n as u128 };
        let wire = (m + self.tlp_overhead_bytes() as u128) * per + n * DLLP_BYTES as u128;
        BitsPerSec((self.rate().0 as u128 * m * per / wire) as u64)
    }

    /// This link as a topology link ([`LinkKind::Pcie`], rate = [`PcieLink::rate`]).
    pub const fn link_info(&self, delay: Duration) -> LinkInfo {
        LinkInfo {
            rate: self.rate(),
            delay,
            kind: LinkKind::Pcie,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gbs(r: BitsPerSec) -> f64 {
        r.0 as f64 / 8e9
    }

    #[test]
    fn raw_x16_rates_match_models_md() {
        let want = [15.75, 31.5, 63.0, 121.0];
        for (g, w) in PcieGen::ALL.iter().zip(want) {
            let l = PcieLink::new(*g, 16).unwrap();
            assert!((gbs(l.rate()) - w).abs() < 0.02, "{g:?}: {}", gbs(l.rate()));
        }
        assert_eq!(PcieGen::Gen4.lane_rate().0, 16_000_000_000 * 128 / 130);
        assert_eq!(PcieGen::Gen6.encoding(), Encoding::Flit);
        let x4 = PcieLink::new(PcieGen::Gen5, 4).unwrap();
        assert_eq!(x4.rate().0 * 4, PcieLink::new(PcieGen::Gen5, 16).unwrap().rate().0);
        for (g, w) in PcieGen::ALL.iter().zip([12.0, 24.0, 48.0, 96.0]) {
            assert_eq!(g.nccl_model_gbps(16), w);
        }
    }

    #[test]
    fn tlp_overhead_and_efficiency() {
        let mut l = PcieLink::new(PcieGen::Gen5, 16).unwrap();
        assert_eq!(l.tlp_overhead_bytes(), 24);
        assert_eq!(l.efficiency_ppm(), 914_285); // 256 / 280
        l.mps_bytes = 512;
        assert_eq!(l.efficiency_ppm(), 955_223); // 512 / 536
        l.header_bytes = 12;
        l.ecrc = true;
        assert_eq!(l.tlp_overhead_bytes(), 24);
        l.ecrc = false;
        assert_eq!(l.tlp_overhead_bytes(), 20); // 5 DW, the models.md minimum
        let l = PcieLink::new(PcieGen::Gen5, 16).unwrap();
        assert_eq!(l.wire_bytes(1024), 1024 + 4 * 24);
        assert_eq!(l.wire_bytes(1), 25);
        assert_eq!(l.dllp_bytes(1024), 2 * 8);
        // Gen5 x16, MPS 256: 63.0 x 256/280 = 57.6 GB/s of payload.
        assert!((gbs(l.effective_payload_rate()) - 57.6).abs() < 0.02);
        // Both directions loaded: an extra 4 B per TLP of DLLPs -> 256/284.
        let bi = gbs(l.effective_payload_rate_bidirectional());
        assert!((bi - 63.015 * 256.0 / 284.0).abs() < 0.01, "{bi}");
        let g6 = PcieLink::new(PcieGen::Gen6, 16).unwrap();
        assert_eq!(g6.tlp_overhead_bytes(), 16);
        assert_eq!(g6.link_info(DEFAULT_LINK_DELAY).kind, LinkKind::Pcie);
    }

    #[test]
    fn refuses_bad_links() {
        assert_eq!(PcieLink::new(PcieGen::Gen4, 3), Err(PcieError::Lanes(3)));
        let mut l = PcieLink::new(PcieGen::Gen4, 8).unwrap();
        l.mps_bytes = 8192;
        assert_eq!(l.check(), Err(PcieError::Mps(8192)));
        l.mps_bytes = 384;
        assert!(l.check().is_err());
        l.mps_bytes = 128;
        l.header_bytes = 20;
        assert!(l.check().unwrap_err().to_string().contains("12 or 16"));
    }
}
