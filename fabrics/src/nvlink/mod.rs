//! NVLink and NVSwitch parameters (pure data and arithmetic; no engine state).
//!
//! - [`NvLinkGen`] / [`NvLinkPreset`]: generations 1.0..5.0 (lanes, lane rate, links per GPU,
//!   per-link and per-GPU bandwidth), models.md §3.1.
//! - [`FlitFraming`]: 16-byte flits, packets of one header flit plus up to 16 data flits
//!   (256 B payload); wire bytes and payload efficiency, models.md §3.1.
//! - [`CreditConfig`]: credit-based flow control in flits per link and direction, with a
//!   labelled default and [`credits_for_line_rate`].
//! - [`NvSwitchGen`] / [`NvSwitchPreset`]: ports, per-port rate, traversal latency, SHARP.
//!
//! Rates are per link and per direction, as data rates (what `LinkInfo::rate` holds); NVIDIA's
//! headline per-GPU figures are bidirectional sums. See `docs/models/nvlink.md`.
//!
//! The engine runs NVLink on its credit path (`engine/ib/`; `[fabric] kind = "nvlink"`,
//! [`crate::engine::EngineConfig::nvlink`] with [`credit_layer`]): GPUs are
//! `Device::CreditHost`s, GPU hubs and NVSwitch chips `Device::CreditSwitch`es (cut-through,
//! virtual output queues in `engine/ib/crossbar.rs` with striping, speed-up and oldest-first,
//! round-robin, LQF or iSLIP arbitration per output decision); credits are counted in 16-byte
//! flits per link and direction and returned over the reverse link at no wire cost. This module
//! holds only the parameters and arithmetic the builders and the engine read.

use sim_core::{BitsPerSec, Duration};

use crate::topology::{LinkInfo, LinkKind};

/// Bytes per flit: "NVLink flit size is 128b=16B" (`NVIDIA/apex`, models.md §3.1).
pub const FLIT_BYTES: u64 = 16;
/// Most data flits per packet (NVLink 1.0 packet format, models.md §3.1, recalled).
pub const MAX_DATA_FLITS: u64 = 16;
/// Most payload bytes per packet: `16 x 16 = 256`.
pub const MAX_PAYLOAD_BYTES: u64 = FLIT_BYTES * MAX_DATA_FLITS;
/// Default one-way latency of one NVLink of the NRZ generations (1.0-3.0: SerDes + wire, no
/// FEC). Assumption: models.md §3.2 found no primary figure and suggests "~100s ns SerDes/FEC
/// per link". Per generation: [`NvLinkGen::link_delay`].
pub const DEFAULT_LINK_DELAY: Duration = Duration::from_ns(100);
/// Bits of one FEC codeword of the PAM4 generations: 5440, an RS(544,514) codeword of 10-bit
/// symbols, the FEC of every PAM4 link at 100-200 Gb/s per lane (IEEE 802.3 clauses 91/134,
/// InfiniBand HDR/NDR). That NVLink 4/5 use this code is an assumption: NVIDIA publishes only
/// that they are PAM4 links.
pub const FEC_CODEWORD_BITS: u64 = 5440;
/// Decode time of that FEC once the codeword is in: 37 ns, the IEEE P802.3dj task force's
/// latency assumptions for RS(544,514) (1 GHz core: 3 cycles encoder, 3 decoder, 31 correction).
pub const FEC_DECODE_LATENCY: Duration = Duration::from_ns(37);
/// Default receive buffer per link and direction, in flits (32 KiB). Assumption (no public
/// figure): covers the credit round trip of a 50 GB/s NVLink5 link up to 655 ns and of a
/// 25 GB/s link up to 1.3 us (see [`credits_for_line_rate`]); the loop through an NVSwitch
/// (link, 200 ns traversal, serialization, link back) is about 420 ns.
pub const DEFAULT_CREDITS_FLITS: u32 = 2048;

/// The NVLink link layer for the packet engine's credit path (`engine/ib/`): one virtual
/// channel, `credits_flits` 16-byte flits of input buffer per port (GPU hubs, NVSwitch ports
/// and GPUs alike), credits returned over the reverse link in the header of reverse traffic
/// (0 wire bytes: NVLink piggybacks credit returns, so they cost no bandwidth, only the link
/// latency), no head-of-queue timeout.
pub fn credit_layer(credits_flits: u32) -> crate::ib::IbConfig {
    crate::ib::IbConfig {
        vl_buffer_blocks: credits_flits,
        hca_vl_buffer_blocks: credits_flits,
        hoq_life_switch: 20,
        hoq_life_leaf: 20,
        credit_unit_bytes: FLIT_BYTES as u32,
        fc_packet_bytes: 0,
        max_credit_window: 1 << 16,
        ..crate::ib::IbConfig::with_vls(1)
    }
}

/// An NVLink generation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum NvLinkGen {
    /// NVLink 1.0 (P100).
    V1,
    /// NVLink 2.0 (V100).
    V2,
    /// NVLink 3.0 (A100).
    V3,
    /// NVLink 4.0 (H100/H200).
    V4,
    /// NVLink 5.0 (B200/GB200).
    V5,
}

/// The parameters of one NVLink generation (models.md §3.1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NvLinkPreset {
    pub generation: NvLinkGen,
    /// The GPU that introduced it.
    pub gpu: &'static str,
    /// Lanes (signal pairs) per link and direction.
    pub lanes_per_link: u32,
    /// Data rate per lane and direction.
    pub lane_rate: BitsPerSec,
    /// NVLinks per GPU.
    pub links_per_gpu: u32,
    /// NCCL's effective per-link, per-direction bandwidth in MB/s (`SM80_NVLINK_BW 20.0`,
    /// `SM90 20.6`, `SM100 40.1` GB/s in `NVIDIA/nccl:src/graph/topo.h`), where models.md has it.
    pub nccl_effective_mbps: Option<u32>,
}

impl NvLinkGen {
    /// All generations, oldest first.
    pub const ALL: [NvLinkGen; 5] = [
        NvLinkGen::V1,
        NvLinkGen::V2,
        NvLinkGen::V3,
        NvLinkGen::V4,
        NvLinkGen::V5,
    ];

    /// One-way latency of a link of this generation: [`DEFAULT_LINK_DELAY`] (100 ns, an
    /// assumption) for the NRZ generations 1.0-3.0; for the PAM4 generations 4.0 and 5.0 plus
    /// the FEC's latency, the time to receive one codeword over the link
    /// ([`FEC_CODEWORD_BITS`] / link rate) plus [`FEC_DECODE_LATENCY`]: 100 + 27.2 + 37 =
    /// 164.2 ns (NVLink 4, 200 Gb/s per link), 100 + 13.6 + 37 = 150.6 ns (NVLink 5, 400 Gb/s).
    /// An assumption built on cited parts: networking PAM4 FEC costs ~100 ns per hop (PCI-SIG,
    /// explaining why PCIe 6.0 chose a lighter FEC; Sella, Moore, Zilberman, "FEC Killed the
    /// Cut-Through Switch", 2018), which no measurement of NVLink confirms or refutes.
    pub const fn link_delay(self) -> Duration {
        match self {
            NvLinkGen::V1 | NvLinkGen::V2 | NvLinkGen::V3 => DEFAULT_LINK_DELAY,
            NvLinkGen::V4 | NvLinkGen::V5 => {
                let rate = self.preset().link_rate().0 as u128;
                let codeword_ps = (FEC_CODEWORD_BITS as u128 * 1_000_000_000_000).div_ceil(rate) as u64;
                Duration(DEFAULT_LINK_DELAY.0 + codeword_ps + FEC_DECODE_LATENCY.0)
            }
        }
    }

    /// The preset (models.md §3.1; per-GPU totals from NVIDIA's pages, lane splits for 1.0-3.0
    /// and 5.0 from secondary summaries, see `docs/models/nvlink.md`).
    pub const fn preset(self) -> NvLinkPreset {
        let (gpu, lanes, lane_gbps, links, nccl) = match self {
            NvLinkGen::V1 => ("P100", 8, 20, 4, None),
            NvLinkGen::V2 => ("V100", 8, 25, 6, None),
            NvLinkGen::V3 => ("A100", 4, 50, 12, Some(20_000)),
            NvLinkGen::V4 => ("H100", 2, 100, 18, Some(20_600)),
            NvLinkGen::V5 => ("B200", 2, 200, 18, Some(40_100)),
        };
        NvLinkPreset {
            generation: self,
            gpu,
            lanes_per_link: lanes,
            lane_rate: BitsPerSec::from_gbps(lane_gbps),
            links_per_gpu: links,
            nccl_effective_mbps: nccl,
        }
    }
}

impl NvLinkPreset {
    /// Per-link, per-direction data rate: `lanes x lane_rate`.
    pub const fn link_rate(&self) -> BitsPerSec {
        BitsPerSec(self.lanes_per_link as u64 * self.lane_rate.0)
    }

    /// Per-GPU, per-direction rate: `links x link_rate`.
    pub const fn gpu_rate(&self) -> BitsPerSec {
        BitsPerSec(self.links_per_gpu as u64 * self.link_rate().0)
    }

    /// NVIDIA's headline per-GPU figure in bytes/s: both directions of all links.
    pub const fn gpu_bidirectional_bytes_per_sec(&self) -> u64 {
        2 * self.gpu_rate().0 / 8
    }

    /// One link of this generation as a topology link ([`LinkKind::NvLink`]).
    pub const fn link_info(&self, delay: Duration) -> LinkInfo {
        LinkInfo {
            rate: self.link_rate(),
            delay,
            kind: LinkKind::NvLink,
        }
    }

    /// Payload rate of one link after flit framing with full 256-byte packets.
    pub fn effective_link_rate(&self, framing: &FlitFraming) -> BitsPerSec {
        framing.payload_rate(self.link_rate(), framing.max_payload())
    }
}

/// NVLink packet framing in flits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FlitFraming {
    /// Bytes per flit (16).
    pub flit_bytes: u64,
    /// Header flits per packet (1; NVLink allows optional address-extension and byte-enable
    /// flits, which a non-default value models).
    pub header_flits: u64,
    /// Most data flits per packet (16).
    pub max_data_flits: u64,
}

impl Default for FlitFraming {
    fn default() -> Self {
        FlitFraming::NVLINK
    }
}

impl FlitFraming {
    /// 16-byte flits, 1 header flit, up to 16 data flits.
    pub const NVLINK: FlitFraming = FlitFraming {
        flit_bytes: FLIT_BYTES,
        header_flits: 1,
        max_data_flits: MAX_DATA_FLITS,
    };

    /// Payload bytes of a full packet.
    #[inline]
    pub const fn max_payload(&self) -> u64 {
        self.flit_bytes * self.max_data_flits
    }

    /// Packets needed for `payload` bytes (at least 1: an empty transfer is one header flit).
    #[inline]
    pub const fn packets(&self, payload: u64) -> u64 {
        if payload == 0 {
            1
        } else {
            payload.div_ceil(self.max_payload())
        }
    }

    /// Flits on the wire for `payload` bytes: per packet its header flits plus its data rounded
    /// up to whole flits.
    #[inline]
    pub const fn flits(&self, payload: u64) -> u64 {
        self.packets(payload) * self.header_flits + payload.div_ceil(self.flit_bytes)
    }

    /// Bytes on the wire for `payload` bytes.
    #[inline]
    pub const fn wire_bytes(&self, payload: u64) -> u64 {
        self.flits(payload) * self.flit_bytes
    }

    /// Payload efficiency `payload / wire_bytes` in parts per million (256 B: 941 176).
    pub const fn efficiency_ppm(&self, payload: u64) -> u64 {
        payload * 1_000_000 / self.wire_bytes(payload)
    }

    /// Payload rate of a link of `rate` carrying transfers of `payload` bytes back to back,
    /// rounded down.
    pub fn payload_rate(&self, rate: BitsPerSec, payload: u64) -> BitsPerSec {
        let p = payload.max(1) as u128;
        BitsPerSec((rate.0 as u128 * p / self.wire_bytes(payload.max(1)) as u128) as u64)
    }
}

/// NVLink link-level flow control: credits are flits of receive buffer, returned over the
/// reverse direction as the receiver drains them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CreditConfig {
    /// Receive buffer per link and direction, in flits ([`DEFAULT_CREDITS_FLITS`]).
    pub credits_flits: u32,
}

impl Default for CreditConfig {
    fn default() -> Self {
        CreditConfig {
            credits_flits: DEFAULT_CREDITS_FLITS,
        }
    }
}

impl CreditConfig {
    /// The buffer in bytes.
    pub const fn buffer_bytes(&self) -> u64 {
        self.credits_flits as u64 * FLIT_BYTES
    }

    /// True if the credits keep a link of `rate` busy over a credit round trip of `rtt`.
    pub fn sustains_line_rate(&self, rate: BitsPerSec, rtt: Duration) -> bool {
        self.credits_flits as u64 >= credits_for_line_rate(rate, rtt)
    }
}

/// Flits needed to keep a link of `rate` at line rate over a credit round trip `rtt` (data
/// one way, credit back): `ceil(rate x rtt / (8 x 16))` (the bandwidth-delay product).
pub fn credits_for_line_rate(rate: BitsPerSec, rtt: Duration) -> u64 {
    let bits = rate.0 as u128 * rtt.ps() as u128;
    bits.div_ceil(8 * FLIT_BYTES as u128 * sim_core::time::PS_PER_S as u128) as u64
}

/// An NVSwitch generation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum NvSwitchGen {
    /// First NVSwitch (DGX-2, V100, NVLink 2.0).
    Gen1,
    /// Second (HGX A100, NVLink 3.0).
    Gen2,
    /// Third (HGX H100, NVLink 4.0), with NVLink SHARP.
    Gen3,
    /// The NVLink Switch chip of GB200 NVL72 (NVLink 5.0), with NVLink SHARP.
    Gen4,
}

/// NVSwitch chip parameters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NvSwitchPreset {
    pub generation: NvSwitchGen,
    /// NVLink ports per chip.
    pub ports: u32,
    /// The NVLink generation of its ports (per-port rate = that generation's link rate).
    pub link: NvLinkGen,
    /// Input-to-output traversal latency. Assumption: 200 ns, the middle of models.md §3.2's
    /// suggested 100-300 ns (no primary per-hop figure exists).
    pub traversal_latency: Duration,
    /// In-switch reduction and multicast (NVLink SHARP, NCCL's NVLS).
    pub sharp: bool,
}

/// Default NVSwitch traversal latency (assumption, see [`NvSwitchPreset::traversal_latency`]).
pub const DEFAULT_SWITCH_LATENCY: Duration = Duration::from_ns(200);

impl NvSwitchGen {
    /// The preset. Ports: gen 3 = 64 (NVIDIA NVLink page, models.md §3.2); gen 4 = 72 (144
    /// ports per NVLink Switch tray of two chips, models.md §3.2); gens 1 and 2 = 18 and 36
    /// (recalled from NVIDIA's DGX-2 and A100 material, not in models.md).
    pub const fn preset(self) -> NvSwitchPreset {
        let (ports, link, sharp) = match self {
            NvSwitchGen::Gen1 => (18, NvLinkGen::V2, false),
            NvSwitchGen::Gen2 => (36, NvLinkGen::V3, false),
            NvSwitchGen::Gen3 => (64, NvLinkGen::V4, true),
            NvSwitchGen::Gen4 => (72, NvLinkGen::V5, true),
        };
        NvSwitchPreset {
            generation: self,
            ports,
            link,
            traversal_latency: DEFAULT_SWITCH_LATENCY,
            sharp,
        }
    }
}

impl NvSwitchPreset {
    /// Per-port, per-direction rate.
    pub const fn port_rate(&self) -> BitsPerSec {
        self.link.preset().link_rate()
    }

    /// Switching capacity, bidirectional, in bytes/s (`ports x port rate x 2 / 8`).
    pub const fn capacity_bidirectional_bytes_per_sec(&self) -> u64 {
        self.ports as u64 * self.port_rate().0 * 2 / 8
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GB: u64 = 1_000_000_000;

    #[test]
    fn per_gpu_totals_match_nvidia() {
        let want = [160, 300, 600, 900, 1800];
        let link_gbs = [20, 25, 25, 25, 50];
        for (i, g) in NvLinkGen::ALL.iter().enumerate() {
            let p = g.preset();
            assert_eq!(p.gpu_bidirectional_bytes_per_sec(), want[i] * GB, "{g:?}");
            assert_eq!(p.link_rate().0 / 8, link_gbs[i] * GB, "{g:?}");
        }
        let h = NvLinkGen::V4.preset();
        assert_eq!(h.links_per_gpu, 18);
        assert_eq!(h.gpu_rate(), BitsPerSec::from_gbps(3600)); // 450 GB/s per direction
        assert_eq!(h.link_info(DEFAULT_LINK_DELAY).kind, LinkKind::NvLink);
        // NCCL's effective 18 x 20.6 = 370.8 GB/s (models.md §3.1).
        assert_eq!(h.nccl_effective_mbps.unwrap() as u64 * 18, 370_800);
    }

    #[test]
    fn flit_framing() {
        let f = FlitFraming::NVLINK;
        assert_eq!(f.max_payload(), 256);
        assert_eq!(f.wire_bytes(256), 272);
        assert_eq!(f.wire_bytes(1), 32);
        assert_eq!(f.wire_bytes(0), 16);
        assert_eq!(f.wire_bytes(257), 256 + 16 + 16 + 16);
        assert_eq!(f.wire_bytes(1 << 20), (1 << 20) / 256 * 272);
        assert_eq!(f.efficiency_ppm(256), 941_176);
        assert_eq!(f.flits(100), 1 + 7);
        // NVLink4 link: 25 GB/s raw -> 23.53 GB/s of payload with full packets.
        let eff = NvLinkGen::V4.preset().effective_link_rate(&f);
        assert_eq!(eff.0, 200_000_000_000 * 16 / 17);
        let extra = FlitFraming { header_flits: 2, ..f };
        assert_eq!(extra.wire_bytes(256), 288);
    }

    #[test]
    fn credits() {
        // 25 GB/s x 300 ns = 7500 B = 469 flits (rounded up).
        assert_eq!(
            credits_for_line_rate(BitsPerSec::from_gbps(200), Duration::from_ns(300)),
            469
        );
        let c = CreditConfig::default();
        assert_eq!(c.buffer_bytes(), 32 * 1024);
        assert!(c.sustains_line_rate(BitsPerSec::from_gbps(400), Duration::from_ns(655)));
        assert!(!c.sustains_line_rate(BitsPerSec::from_gbps(400), Duration::from_ns(700)));
    }

    #[test]
    fn nvswitch_presets() {
        let h = NvSwitchGen::Gen3.preset();
        assert_eq!(h.ports, 64);
        // 64 x 25 GB/s x 2 = 3.2 TB/s (models.md §3.2).
        assert_eq!(h.capacity_bidirectional_bytes_per_sec(), 3_200 * GB);
        let b = NvSwitchGen::Gen4.preset();
        // Two chips per tray: 144 ports, 14.4 TB/s.
        assert_eq!(2 * b.capacity_bidirectional_bytes_per_sec(), 14_400 * GB);
        assert!(b.sharp && !NvSwitchGen::Gen2.preset().sharp);
    }
}
