//! InfiniBand links: speeds and widths, packet header bytes, credit blocks, cable delay.
//!
//! Data rates are after line encoding and FEC (`models.md` §1.4): per lane SDR 2, DDR 4,
//! QDR 8, FDR10 10, FDR 13.64 (14.0625 Gb/s × 64/66), EDR 25, HDR 50, NDR 100, XDR 200 Gb/s.
//! Headers (`models.md` §1.1, IBA vol. 1 ch. 7 and 9; Linux `include/rdma/ib_pack.h`):
//! LRH 8 + BTH 12 + ICRC 4 + VCRC 2 = 26 B per packet of an RC RDMA-WRITE stream, plus the
//! 40-B GRH when routed. Credits count 64-byte blocks (IBA vol. 1 §7.9.4).

use sim_core::{BitsPerSec, Duration};

/// Bytes per flow-control credit (IBA vol. 1 §7.9.4).
pub const CREDIT_BLOCK_BYTES: u32 = 64;
/// Local Route Header.
pub const LRH_BYTES: u32 = 8;
/// Base Transport Header.
pub const BTH_BYTES: u32 = 12;
/// Invariant CRC.
pub const ICRC_BYTES: u32 = 4;
/// Variant CRC (recomputed per hop).
pub const VCRC_BYTES: u32 = 2;
/// Global Route Header (inter-subnet; optional).
pub const GRH_BYTES: u32 = 40;
/// Per-packet overhead of a data packet without GRH: 26 B.
pub const BASE_HEADER_BYTES: u32 = LRH_BYTES + BTH_BYTES + ICRC_BYTES + VCRC_BYTES;
/// A link-level flow-control packet: Op, FCTBS, VL, FCCL, LPCRC = 6 B (IBA vol. 1 §7.9.4;
/// field list as in Wireshark's `infiniband_link` dissector).
pub const FLOW_CONTROL_PACKET_BYTES: u32 = 6;
/// Largest credit window one VL may use: 2048 blocks = 128 KiB (the modulo-4096 FCCL/FCTBS
/// comparison of IBA vol. 1 §7.9.4 leaves half the space usable).
pub const MAX_CREDIT_WINDOW_BLOCKS: u64 = 2048;
/// Signal propagation in copper and fibre: 5 ns per metre (`models.md` §1.8).
pub const PROPAGATION_PS_PER_M: u64 = 5_000;
/// Valid IB MTUs (payload bytes), `models.md` §1.1.
pub const MTUS_BYTES: [u32; 5] = [256, 512, 1024, 2048, 4096];

/// 64-byte credit blocks a packet of `wire_bytes` consumes (headers and CRCs included).
#[inline]
pub const fn blocks(wire_bytes: u32) -> u32 {
    wire_bytes.div_ceil(CREDIT_BLOCK_BYTES)
}

/// Per-packet header bytes of a data packet, with or without a GRH.
pub const fn header_bytes(grh: bool) -> u32 {
    BASE_HEADER_BYTES + if grh { GRH_BYTES } else { 0 }
}

/// One-way propagation delay of a cable of `metres`.
pub const fn cable_delay(metres: u64) -> Duration {
    Duration::from_ps(metres * PROPAGATION_PS_PER_M)
}

/// InfiniBand link generations.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum IbSpeed {
    Sdr,
    Ddr,
    Qdr,
    Fdr10,
    Fdr,
    Edr,
    Hdr,
    Ndr,
    Xdr,
}

impl IbSpeed {
    pub const ALL: [IbSpeed; 9] = [
        IbSpeed::Sdr,
        IbSpeed::Ddr,
        IbSpeed::Qdr,
        IbSpeed::Fdr10,
        IbSpeed::Fdr,
        IbSpeed::Edr,
        IbSpeed::Hdr,
        IbSpeed::Ndr,
        IbSpeed::Xdr,
    ];

    /// Lower-case name as written in scenario files (`"ndr"`).
    pub fn name(self) -> &'static str {
        match self {
            IbSpeed::Sdr => "sdr",
            IbSpeed::Ddr => "ddr",
            IbSpeed::Qdr => "qdr",
            IbSpeed::Fdr10 => "fdr10",
            IbSpeed::Fdr => "fdr",
            IbSpeed::Edr => "edr",
            IbSpeed::Hdr => "hdr",
            IbSpeed::Ndr => "ndr",
            IbSpeed::Xdr => "xdr",
        }
    }

    pub fn from_name(s: &str) -> Option<IbSpeed> {
        IbSpeed::ALL.into_iter().find(|v| v.name() == s)
    }

    /// Data rate of one lane after encoding and FEC, in bit/s.
    pub const fn lane_data_bps(self) -> u64 {
        match self {
            IbSpeed::Sdr => 2_000_000_000,
            IbSpeed::Ddr => 4_000_000_000,
            IbSpeed::Qdr => 8_000_000_000,
            IbSpeed::Fdr10 => 10_000_000_000,
            // 14.0625 Gb/s signalling × 64/66.
            IbSpeed::Fdr => 14_062_500_000 * 64 / 66,
            IbSpeed::Edr => 25_000_000_000,
            IbSpeed::Hdr => 50_000_000_000,
            IbSpeed::Ndr => 100_000_000_000,
            IbSpeed::Xdr => 200_000_000_000,
        }
    }

    /// Data rate of a link of `width` lanes (1, 2, 4, 8 or 12).
    pub fn data_rate(self, width: u8) -> Option<BitsPerSec> {
        matches!(width, 1 | 2 | 4 | 8 | 12).then(|| BitsPerSec(self.lane_data_bps() * width as u64))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn four_x_data_rates_match_the_table() {
        // models.md §1.4, 4x data rates in Gb/s.
        let want = [
            (IbSpeed::Sdr, 8.0),
            (IbSpeed::Ddr, 16.0),
            (IbSpeed::Qdr, 32.0),
            (IbSpeed::Fdr10, 40.0),
            (IbSpeed::Fdr, 54.5454),
            (IbSpeed::Edr, 100.0),
            (IbSpeed::Hdr, 200.0),
            (IbSpeed::Ndr, 400.0),
            (IbSpeed::Xdr, 800.0),
        ];
        for (s, gbps) in want {
            let r = s.data_rate(4).unwrap().as_gbps_f64();
            assert!((r - gbps).abs() < 1e-3, "{s:?}: {r} vs {gbps}");
            assert_eq!(IbSpeed::from_name(s.name()), Some(s));
        }
        assert_eq!(IbSpeed::Ndr.data_rate(3), None);
        assert_eq!(IbSpeed::Hdr.data_rate(1).unwrap(), BitsPerSec::from_gbps(50));
    }

    #[test]
    fn packet_sizes_and_credits() {
        assert_eq!(header_bytes(false), 26);
        assert_eq!(header_bytes(true), 66);
        // A 4096-B payload packet is 4122 B = 65 credits (models.md §1.2).
        assert_eq!(blocks(4096 + header_bytes(false)), 65);
        assert_eq!(blocks(64), 1);
        assert_eq!(blocks(65), 2);
        assert_eq!(blocks(FLOW_CONTROL_PACKET_BYTES), 1);
        // Efficiency at 4096 MTU: 4096/4122 = 99.37%.
        let eff = 4096.0 / (4096 + header_bytes(false)) as f64;
        assert!((eff - 0.9937).abs() < 1e-4);
        assert_eq!(cable_delay(30), Duration::from_ns(150));
    }
}
