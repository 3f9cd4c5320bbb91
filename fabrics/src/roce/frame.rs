//! RoCE frame overhead on the wire (v1 and v2) and Ethernet link presets.
//!
//! RoCEv2 layout (models.md §2.1; IEEE 802.3 framing, IBTA Annex A17 "RoCEv2"):
//! preamble/SFD 8 | Ethernet 14 | [802.1Q 4] | IPv4 20 or IPv6 40 | UDP 8 (dst port 4791) |
//! BTH 12 | [RETH 16 | AETH 4 | ImmDt 4] | payload | ICRC 4 | FCS 4 | inter-frame gap 12.
//!
//! RoCEv1 layout (IBTA Annex A16 "RDMA over Converged Ethernet", 2010): the IB transport
//! directly on Ethernet, EtherType 0x8915, with the IB Global Route Header in place of IP/UDP:
//! preamble/SFD 8 | Ethernet 14 (EtherType 0x8915) | 802.1Q 4 | GRH 40 | BTH 12 |
//! [RETH | AETH | ImmDt] | payload | ICRC 4 | FCS 4 | inter-frame gap 12.
//! A v1 frame always carries the 802.1Q tag here: without IP there is no DSCP, so PFC can
//! only classify by the tag's PCP. No UDP header means no UDP source port: nothing for ECMP
//! to hash on (layer-2 forwarding over one spanning tree gives one path anyway).
//!
//! A frame (Ethernet header to FCS) is at least 64 B; shorter ones are padded.

use sim_core::BitsPerSec;

/// Preamble (7 B) + start-of-frame delimiter (1 B).
pub const PREAMBLE_SFD_BYTES: u32 = 8;
/// Minimum inter-frame gap: 96 bit times.
pub const IFG_BYTES: u32 = 12;
/// Ethernet II header: destination, source, EtherType.
pub const ETH_HEADER_BYTES: u32 = 14;
/// 802.1Q tag (carries the PCP used by PCP-based PFC).
pub const VLAN_TAG_BYTES: u32 = 4;
pub const IPV4_HEADER_BYTES: u32 = 20;
pub const IPV6_HEADER_BYTES: u32 = 40;
pub const UDP_HEADER_BYTES: u32 = 8;
/// RoCEv1 EtherType (IBTA Annex A16).
pub const ROCEV1_ETHERTYPE: u16 = 0x8915;
/// InfiniBand Global Route Header: RoCEv1's network header (IPv6-like, 40 B; models.md §1.1).
pub const GRH_BYTES: u32 = 40;
/// RoCEv2 UDP destination port (`ROCE_V2_UDP_DPORT` in the Linux RDMA core).
pub const ROCEV2_UDP_DPORT: u16 = 4791;
/// InfiniBand Base Transport Header.
pub const BTH_BYTES: u32 = 12;
/// RDMA Extended Transport Header (first packet of an RDMA WRITE/READ request).
pub const RETH_BYTES: u32 = 16;
/// ACK Extended Transport Header (ACK/NACK, READ responses).
pub const AETH_BYTES: u32 = 4;
/// Immediate data.
pub const IMMDT_BYTES: u32 = 4;
/// Invariant CRC.
pub const ICRC_BYTES: u32 = 4;
/// Ethernet frame check sequence.
pub const FCS_BYTES: u32 = 4;
/// Minimum Ethernet frame, header to FCS.
pub const MIN_FRAME_BYTES: u32 = 64;
/// Reserved payload of a CNP (BTH opcode 0x81): 16 B (IBA Annex A17, recalled; not in
/// models.md).
pub const CNP_PAYLOAD_BYTES: u32 = 16;
/// A PFC/PAUSE frame on the wire: 64 B + preamble/SFD + IFG.
pub const PAUSE_WIRE_BYTES: u32 = MIN_FRAME_BYTES + PREAMBLE_SFD_BYTES + IFG_BYTES;

/// IP version under UDP.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum IpVersion {
    #[default]
    V4,
    V6,
}

/// RoCE version: which network header sits between Ethernet and the BTH.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum RoceVersion {
    /// RoCEv1 (IBTA Annex A16): EtherType 0x8915, IB GRH, layer-2 only.
    V1,
    /// RoCEv2 (IBTA Annex A17): IPv4/IPv6 + UDP (dst port 4791), routable.
    #[default]
    V2,
}

/// Extended transport headers after the BTH.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum RoceHeader {
    /// Middle/last packet of a SEND or WRITE: BTH only.
    #[default]
    BthOnly,
    /// First packet of an RDMA WRITE (or a READ request): BTH + RETH.
    Reth,
    /// ACK/NACK or READ response: BTH + AETH.
    Aeth,
    /// Last packet with immediate data: BTH + ImmDt.
    ImmDt,
}

impl RoceHeader {
    pub const fn bytes(self) -> u32 {
        match self {
            RoceHeader::BthOnly => 0,
            RoceHeader::Reth => RETH_BYTES,
            RoceHeader::Aeth => AETH_BYTES,
            RoceHeader::ImmDt => IMMDT_BYTES,
        }
    }
}

/// The encapsulation of a RoCE packet; sizes on the wire follow from it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RoceFrame {
    /// 802.1Q tag present (PCP-based PFC); DSCP-based PFC needs none (v2 only).
    pub vlan: bool,
    /// IP version under UDP (v2 only: a v1 frame carries the GRH instead).
    pub ip: IpVersion,
    pub ext: RoceHeader,
    pub version: RoceVersion,
}

impl RoceFrame {
    /// A middle data packet over IPv4 without VLAN tag: 82 B of overhead (models.md §2.1,
    /// the engine's default `header_bytes`).
    pub const DATA_IPV4: RoceFrame = RoceFrame {
        vlan: false,
        ip: IpVersion::V4,
        ext: RoceHeader::BthOnly,
        version: RoceVersion::V2,
    };

    /// A middle RoCEv1 data packet: Ethernet + 802.1Q (PCP for PFC) + GRH + BTH + ICRC + FCS,
    /// 98 B of overhead on the wire.
    pub const DATA_V1: RoceFrame = RoceFrame {
        vlan: true,
        ip: IpVersion::V4,
        ext: RoceHeader::BthOnly,
        version: RoceVersion::V1,
    };

    /// The middle data packet of `version`: [`RoceFrame::DATA_V1`] or
    /// [`RoceFrame::DATA_IPV4`].
    pub const fn data(version: RoceVersion) -> RoceFrame {
        match version {
            RoceVersion::V1 => RoceFrame::DATA_V1,
            RoceVersion::V2 => RoceFrame::DATA_IPV4,
        }
    }

    /// Bytes on the wire besides the payload: preamble/SFD, headers, ICRC, FCS, IFG.
    pub const fn header_bytes(&self) -> u32 {
        let network = match (self.version, self.ip) {
            (RoceVersion::V1, _) => GRH_BYTES,
            (RoceVersion::V2, IpVersion::V4) => IPV4_HEADER_BYTES + UDP_HEADER_BYTES,
            (RoceVersion::V2, IpVersion::V6) => IPV6_HEADER_BYTES + UDP_HEADER_BYTES,
        };
        let vlan = if self.vlan || matches!(self.version, RoceVersion::V1) {
            VLAN_TAG_BYTES
        } else {
            0
        };
        PREAMBLE_SFD_BYTES
            + ETH_HEADER_BYTES
            + vlan
            + network
            + BTH_BYTES
            + self.ext.bytes()
            + ICRC_BYTES
            + FCS_BYTES
            + IFG_BYTES
    }

    /// Bytes on the wire for `payload_bytes` of payload (short frames padded to 64 B).
    pub const fn wire_bytes(&self, payload_bytes: u32) -> u32 {
        let framing = PREAMBLE_SFD_BYTES + IFG_BYTES;
        let frame = self.header_bytes() - framing + payload_bytes;
        let frame = if frame < MIN_FRAME_BYTES {
            MIN_FRAME_BYTES
        } else {
            frame
        };
        frame + framing
    }

    /// Payload share of the wire, parts per million (for reports and tests).
    pub const fn efficiency_ppm(&self, payload_bytes: u32) -> u64 {
        payload_bytes as u64 * 1_000_000 / self.wire_bytes(payload_bytes) as u64
    }

    /// An ACK or NACK (BTH + AETH, no payload) with this encapsulation.
    pub const fn ack_wire_bytes(&self) -> u32 {
        RoceFrame {
            ext: RoceHeader::Aeth,
            ..*self
        }
        .wire_bytes(0)
    }

    /// A CNP (BTH opcode 0x81 + 16 reserved bytes) with this encapsulation.
    pub const fn cnp_wire_bytes(&self) -> u32 {
        RoceFrame {
            ext: RoceHeader::BthOnly,
            ..*self
        }
        .wire_bytes(CNP_PAYLOAD_BYTES)
    }
}

/// Ethernet link presets: name and MAC data rate (after line coding) in b/s.
pub const ETHERNET_PRESETS: [(&str, BitsPerSec); 6] = [
    ("25GbE", BitsPerSec::from_gbps(25)),
    ("50GbE", BitsPerSec::from_gbps(50)),
    ("100GbE", BitsPerSec::from_gbps(100)),
    ("200GbE", BitsPerSec::from_gbps(200)),
    ("400GbE", BitsPerSec::from_gbps(400)),
    ("800GbE", BitsPerSec::from_gbps(800)),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overhead_and_efficiency_match_models_md() {
        let f = RoceFrame::DATA_IPV4;
        assert_eq!(f.header_bytes(), 82);
        assert_eq!(f.header_bytes(), crate::engine::ETHERNET_ROCE_HEADER_BYTES);
        // 92.6% (1024), 96.2% (2048), 98.0% (4096), rounded to 0.1%.
        let pct10 = |p: u32| (f.efficiency_ppm(p) + 500) / 1000;
        assert_eq!(pct10(1024), 926);
        assert_eq!(pct10(2048), 962);
        assert_eq!(pct10(4096), 980);
        assert_eq!(f.wire_bytes(4096), 4178);
    }

    #[test]
    fn variants_and_control_frames() {
        let v6 = RoceFrame {
            vlan: true,
            ip: IpVersion::V6,
            ext: RoceHeader::Reth,
            version: RoceVersion::V2,
        };
        assert_eq!(v6.header_bytes(), 82 + 4 + 20 + 16);
        let f = RoceFrame::DATA_IPV4;
        // ACK: 14 + 20 + 8 + 12 + 4 + 4 + 4 = 66 B frame, + 20 framing.
        assert_eq!(f.ack_wire_bytes(), 86);
        // CNP: 14 + 20 + 8 + 12 + 16 + 4 + 4 = 78 B frame, + 20.
        assert_eq!(f.cnp_wire_bytes(), 98);
        // PAUSE: 64 + 20; a tiny payload is padded to the 64-B minimum frame.
        assert_eq!(PAUSE_WIRE_BYTES, 84);
        assert_eq!(PAUSE_WIRE_BYTES as u64, crate::models::pfc::PFC_FRAME_WIRE_BYTES);
        let bare = RoceFrame::DATA_IPV4;
        assert_eq!(bare.wire_bytes(1), 84);
        assert_eq!(ETHERNET_PRESETS[5].1.get(), 800_000_000_000);
        assert_eq!(ROCEV2_UDP_DPORT, 4791);
    }

    /// RoCEv1 (Annex A16), byte by byte.
    #[test]
    fn rocev1_frames_exact_to_the_byte() {
        let f = RoceFrame::DATA_V1;
        assert_eq!(RoceFrame::data(RoceVersion::V1), f);
        assert_eq!(RoceFrame::data(RoceVersion::V2), RoceFrame::DATA_IPV4);
        assert_eq!(ROCEV1_ETHERTYPE, 0x8915);
        // 8 preamble/SFD + 14 Ethernet + 4 802.1Q + 40 GRH + 12 BTH + 4 ICRC + 4 FCS + 12 IFG.
        assert_eq!(f.header_bytes(), 8 + 14 + 4 + 40 + 12 + 4 + 4 + 12);
        assert_eq!(f.header_bytes(), 98);
        // 16 B more than v2 over IPv4 without a tag: +4 tag, +40 GRH, -20 IPv4, -8 UDP.
        assert_eq!(f.header_bytes(), RoceFrame::DATA_IPV4.header_bytes() + 16);
        // The tag is always there: PCP is v1's only way to tell PFC the priority.
        assert_eq!(RoceFrame { vlan: false, ..f }.header_bytes(), 98);
        // ... and the IP version is irrelevant.
        assert_eq!(RoceFrame { ip: IpVersion::V6, ..f }.header_bytes(), 98);
        // Same size as v2 over IPv6 without a tag (40 + 8 UDP vs 40 GRH + 4 tag + 4).
        let v6 = RoceFrame {
            ip: IpVersion::V6,
            ..RoceFrame::DATA_IPV4
        };
        assert_eq!(v6.header_bytes(), 102);
        assert_eq!(f.wire_bytes(4096), 4194);
        assert_eq!(f.wire_bytes(1024), 1122);
        // Efficiency: 91.3% (1024), 95.4% (2048), 97.7% (4096), rounded to 0.1%.
        let pct10 = |p: u32| (f.efficiency_ppm(p) + 500) / 1000;
        assert_eq!(pct10(1024), 913);
        assert_eq!(pct10(2048), 954);
        assert_eq!(pct10(4096), 977);
        // ACK/NACK: 14 + 4 + 40 + 12 + 4 AETH + 4 + 4 = 82 B frame, + 20 framing.
        assert_eq!(f.ack_wire_bytes(), 102);
        // CNP: 14 + 4 + 40 + 12 + 16 + 4 + 4 = 94 B frame, + 20.
        assert_eq!(f.cnp_wire_bytes(), 114);
        // First packet of a WRITE: + RETH 16.
        assert_eq!(
            RoceFrame {
                ext: RoceHeader::Reth,
                ..f
            }
            .header_bytes(),
            114
        );
        // An empty v1 frame (78 B) needs no padding; PAUSE frames are version-independent.
        assert_eq!(f.wire_bytes(0), 98);
        assert_eq!(PAUSE_WIRE_BYTES, 84);
    }
}
