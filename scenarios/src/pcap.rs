//! `[output] pcap`: what chosen ports transmitted, as pcap files (one per port) or one pcapng
//! file (an interface per port) that Wireshark and `tshark` decode (docs/results.md, "pcap").
//!
//! The engine records plain fields of each packet a captured port puts on its link
//! (`fabrics::engine::Capture`); this module resolves the ports of `[output] pcap` and, after
//! the run, synthesizes the headers the simulator does not carry:
//!
//! - Ethernet ports (RoCEv2 and the base fabric), link type 1: Ethernet II / IPv4 / UDP 4791
//!   / BTH (IBA vol. 1 §9.2; RoCEv2 = IBA Annex A17, models.md §2.1), with RETH on the first
//!   packet of a message, AETH on ACK/NAK, CNP as BTH opcode 0x81 with 16 reserved bytes;
//!   PFC frames as MAC control (EtherType 0x8808, opcode 0x0101, IEEE 802.1Qbb §36.1.3).
//! - InfiniBand ports, link type 247 (`LINKTYPE_INFINIBAND`): LRH / BTH (IBA vol. 1 §7.7,
//!   §9.2). Link-level flow-control packets are not written (counted as omitted).
//!
//! Addresses come from indices: MAC `02:fb:00:NN:NN:NN` with NN the node index (the
//! transmitting node as source, the far node as destination: every hop is a layer-3 hop),
//! IPv4 `10.0.0.0 + host index + 1`, LID = host index + 1, QP = 256 + flow index, UDP
//! source port 49152 + flow index mod 16384, PSN = byte offset / MTU. Priority p is DSCP
//! 8p (class selector p); ECN is ECT(0) on data, CE when marked. Payload bytes are zeros,
//! at most `payload_bytes` of them; the ICRC (not computed: zeros) only when the payload is
//! whole. Timestamps are simulated time in nanoseconds: same scenario and seed, same bytes.

use fabrics::engine::{CapturedPacket, Fabric, LinkFc, PacketKind};
use pcap_file::pcap::{PcapHeader, PcapPacket, PcapWriter};
use pcap_file::pcapng::PcapNgWriter;
use pcap_file::pcapng::blocks::enhanced_packet::EnhancedPacketBlock;
use pcap_file::pcapng::blocks::interface_description::{InterfaceDescriptionBlock, InterfaceDescriptionOption};
use pcap_file::pcapng::blocks::section_header::{SectionHeaderBlock, SectionHeaderOption};
use pcap_file::{DataLink, Endianness, TsResolution};
use serde::{Deserialize, Serialize};
use std::borrow::Cow;
use std::time::Duration;

/// Default `max_packets`.
pub const DEFAULT_MAX_PACKETS: u64 = 100_000;

/// `[output] pcap`.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct PcapSpec {
    /// Ports to capture: ids (the `port` column of `ports.csv`) or names
    /// `"<node> -> <peer>"` (the `node` and `peer` columns; spaces ignored).
    pub ports: Vec<PortRef>,
    /// Bound on the packets of all captured ports together (1 to
    /// `fabrics::engine::MAX_CAPTURED_PACKETS`); the capture stops there.
    #[serde(default = "default_max_packets")]
    pub max_packets: u64,
    /// Payload bytes kept per packet (zeros) after the headers: the snap length.
    #[serde(default)]
    pub payload_bytes: u32,
    /// `pcap` (default): one classic pcap file per port; `pcapng`: one `capture.pcapng` with
    /// an interface per port. Left out of `scenario.resolved.toml` at its default.
    #[serde(default, skip_serializing_if = "PcapFormat::is_default")]
    pub format: PcapFormat,
}

/// `[output] pcap.format`.
#[derive(Clone, Copy, Debug, Default, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum PcapFormat {
    /// `pcap_port<id>.pcap`, one per captured port.
    #[default]
    Pcap,
    /// [`PCAPNG_FILE`]: one Interface Description Block per captured port (in port order),
    /// then every packet of all of them in time order.
    Pcapng,
}

impl PcapFormat {
    fn is_default(&self) -> bool {
        *self == PcapFormat::default()
    }
}

/// The file of `format = "pcapng"`.
pub const PCAPNG_FILE: &str = "capture.pcapng";

fn default_max_packets() -> u64 {
    DEFAULT_MAX_PACKETS
}

/// A port of `[output] pcap.ports`: its id or its name.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq, Eq)]
#[serde(untagged)]
pub enum PortRef {
    Id(u32),
    Name(String),
}

/// Resolves `refs` against `fabric`'s ports, naming nodes by `names`; an error is the index
/// in `refs` of the bad entry and its message.
pub fn resolve_ports(refs: &[PortRef], fabric: &Fabric, names: &[&str]) -> Result<Vec<u32>, (usize, String)> {
    let n = fabric.ports().len();
    let mut out = Vec::with_capacity(refs.len());
    for (i, r) in refs.iter().enumerate() {
        let id = match r {
            PortRef::Id(p) if (*p as usize) < n => *p,
            PortRef::Id(p) => {
                return Err((
                    i,
                    format!("port {p} does not exist: the fabric has ports 0..{n} (see ports.csv)"),
                ));
            }
            PortRef::Name(s) => {
                let want: String = s.chars().filter(|c| !c.is_whitespace()).collect();
                let hits: Vec<u32> = (0..n as u32).filter(|&p| port_name(fabric, names, p) == want).collect();
                match hits[..] {
                    [p] => p,
                    [] => {
                        return Err((
                            i,
                            format!(
                                "no port \"{s}\": expected \"<node> -> <peer>\" as in the node and peer columns of ports.csv, or a port id"
                            ),
                        ));
                    }
                    _ => {
                        return Err((
                            i,
                            format!("\"{s}\" names {} parallel ports {hits:?}: give the port id", hits.len()),
                        ));
                    }
                }
            }
        };
        if out.contains(&id) {
            return Err((i, format!("port {id} is listed twice")));
        }
        out.push(id);
    }
    Ok(out)
}

/// What `summary.json` says of the capture (`pcap`).
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct PcapInfo {
    /// One file per captured port, `pcap_port<id>.pcap`.
    pub files: Vec<PcapFileInfo>,
    /// Packets written, all files together.
    pub packets: u64,
    pub max_packets: u64,
    /// Packets of captured ports left out because `max_packets` was reached.
    pub packets_beyond_max: u64,
    /// InfiniBand link-level flow-control packets, not written (see the module doc).
    pub flow_control_omitted: u64,
}

#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct PcapFileInfo {
    pub file: String,
    pub port: u32,
    /// pcapng only: the port's interface id in the file.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub interface: Option<u32>,
    /// `ethernet` (link type 1) or `infiniband` (link type 247).
    pub link_type: &'static str,
    pub packets: u64,
}

impl PcapInfo {
    /// The terminal line when `max_packets` cut the capture.
    pub fn warning(&self) -> Option<String> {
        (self.packets_beyond_max > 0).then(|| {
            format!(
                "WARNING: pcap capture stopped at max_packets = {}: {} later packets of the captured ports are not in the files",
                self.max_packets, self.packets_beyond_max
            )
        })
    }
}

/// Where a packet's headers come from: the nodes at both ends of the link, the hosts at
/// both ends of the flow.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ends {
    pub src_node: u32,
    pub dst_node: u32,
    pub src_host: u32,
    pub dst_host: u32,
    /// Bytes of the packet's flow (0 for link-level frames).
    pub flow_size: u64,
    /// Payload bytes of a full packet (PSN = byte offset / MTU).
    pub mtu_bytes: u32,
}

/// The pcap files of the capture of `fabric` (`(name, bytes)`) in `format`, and their
/// summary. `names` names the nodes (a pcapng interface is named `node->peer`).
pub fn files(
    fabric: &Fabric,
    ports: &[u32],
    payload_bytes: u32,
    format: PcapFormat,
    names: &[&str],
) -> (Vec<(String, Vec<u8>)>, PcapInfo) {
    let cap = fabric.capture().expect("files() after enable_capture");
    let mut info = PcapInfo {
        files: Vec::new(),
        packets: 0,
        max_packets: cap.max_packets() as u64,
        packets_beyond_max: cap.dropped(),
        flow_control_omitted: 0,
    };
    let mut sorted = ports.to_vec();
    sorted.sort_unstable();
    // Every record's frame, in recording (= time) order, with its port's index in `sorted`.
    let mut frames: Vec<(usize, u64, Vec<u8>, u32)> = Vec::new();
    for r in cap.records() {
        let Some(i) = sorted.iter().position(|&p| p == r.port) else {
            continue;
        };
        match frame(fabric, r, payload_bytes) {
            Some((bytes, orig_len)) => frames.push((i, r.time_ps / 1000, bytes, orig_len)),
            None => info.flow_control_omitted += 1,
        }
    }
    info.packets = frames.len() as u64;
    let count = |i: usize| frames.iter().filter(|f| f.0 == i).count() as u64;
    let link_name = |is_ib: bool| if is_ib { "infiniband" } else { "ethernet" };
    let out = match format {
        PcapFormat::Pcap => {
            let mut out = Vec::new();
            for (i, &p) in sorted.iter().enumerate() {
                let header = PcapHeader {
                    version_major: 2,
                    version_minor: 4,
                    ts_correction: 0,
                    ts_accuracy: 0,
                    snaplen: SNAPLEN,
                    datalink: datalink(fabric, p),
                    ts_resolution: TsResolution::NanoSecond,
                    endianness: Endianness::Little,
                };
                let mut w = PcapWriter::with_header(Vec::new(), header).expect("writing to a Vec");
                for (_, ns, bytes, orig_len) in frames.iter().filter(|f| f.0 == i) {
                    w.write_packet(&PcapPacket::new(Duration::from_nanos(*ns), *orig_len, bytes))
                        .expect("writing to a Vec");
                }
                let name = format!("pcap_port{p}.pcap");
                info.files.push(PcapFileInfo {
                    file: name.clone(),
                    port: p,
                    interface: None,
                    link_type: link_name(is_ib(fabric, p)),
                    packets: count(i),
                });
                out.push((name, w.into_writer()));
            }
            out
        }
        PcapFormat::Pcapng => {
            let section = SectionHeaderBlock {
                endianness: Endianness::Little,
                options: vec![SectionHeaderOption::UserApplication(Cow::Borrowed("fabricsim"))],
                ..SectionHeaderBlock::default()
            };
            let mut w = PcapNgWriter::with_section_header(Vec::new(), section).expect("writing to a Vec");
            for (i, &p) in sorted.iter().enumerate() {
                let name = port_name(fabric, names, p);
                w.write_pcapng_block(InterfaceDescriptionBlock {
                    linktype: datalink(fabric, p),
                    snaplen: SNAPLEN,
                    options: vec![
                        InterfaceDescriptionOption::IfName(Cow::Owned(name)),
                        InterfaceDescriptionOption::IfDescription(Cow::Owned(format!("fabricsim port {p}"))),
                        // 10^-9 s: the Enhanced Packet Blocks' timestamps are nanoseconds.
                        InterfaceDescriptionOption::IfTsResol(9),
                    ],
                })
                .expect("writing to a Vec");
                info.files.push(PcapFileInfo {
                    file: PCAPNG_FILE.to_owned(),
                    port: p,
                    interface: Some(i as u32),
                    link_type: link_name(is_ib(fabric, p)),
                    packets: count(i),
                });
            }
            for (i, ns, bytes, orig_len) in &frames {
                w.write_pcapng_block(EnhancedPacketBlock {
                    interface_id: *i as u32,
                    timestamp: Duration::from_nanos(*ns),
                    original_len: *orig_len,
                    data: Cow::Borrowed(bytes),
                    options: Vec::new(),
                })
                .expect("writing to a Vec");
            }
            vec![(PCAPNG_FILE.to_owned(), w.into_inner())]
        }
    };
    (out, info)
}

/// Port `p`'s name, `node->peer` (as in the time series' `link` column).
pub fn port_name(fabric: &Fabric, names: &[&str], p: u32) -> String {
    let port = &fabric.ports()[p as usize];
    format!("{}->{}", names[port.node as usize], names[port.peer_node as usize])
}

/// Snap length of the files' headers (a frame is at most its headers plus `payload_bytes`).
const SNAPLEN: u32 = 65535;

/// Whether port `p` carries InfiniBand packets: a credit link (InfiniBand, and the credit
/// layers inside servers: NVLink, PCIe); else Ethernet frames (PFC links of RoCEv2, the base
/// fabric's links), also in a cluster whose servers run the credit layer.
fn is_ib(fabric: &Fabric, p: u32) -> bool {
    fabric.link_fc(p) == LinkFc::Credit
}

/// The link type of port `p`: `LINKTYPE_INFINIBAND` (247) or Ethernet (1).
fn datalink(fabric: &Fabric, p: u32) -> DataLink {
    if is_ib(fabric, p) {
        DataLink::INFINIBAND
    } else {
        DataLink::ETHERNET
    }
}

/// The captured bytes and original length of record `r`; `None` for an InfiniBand
/// link-level flow-control packet (not written).
fn frame(fabric: &Fabric, r: &CapturedPacket, payload_bytes: u32) -> Option<(Vec<u8>, u32)> {
    let port = &fabric.ports()[r.port as usize];
    let flow = fabric.flows().get(r.flow as usize);
    let (fsrc, fdst, size) = flow.map_or((0, 0, 0), |f| (f.src, f.dst, f.size.0));
    // Data travels source to destination; ACK, NAK and CNP the other way.
    let (src_host, dst_host) = if r.kind == PacketKind::Data {
        (fsrc, fdst)
    } else {
        (fdst, fsrc)
    };
    let ends = Ends {
        src_node: port.node,
        dst_node: port.peer_node,
        src_host,
        dst_host,
        flow_size: size,
        mtu_bytes: fabric.config().mtu_bytes,
    };
    if is_ib(fabric, r.port) {
        ib_packet(r, &ends, payload_bytes)
    } else {
        Some(ethernet_frame(r, &ends, payload_bytes))
    }
}

/// Locally administered MAC of node `n`.
pub fn mac(n: u32) -> [u8; 6] {
    [0x02, 0xfb, 0x00, (n >> 16) as u8, (n >> 8) as u8, n as u8]
}

/// IPv4 address of host `h`.
pub fn ipv4(h: u32) -> [u8; 4] {
    (0x0a00_0000u32.wrapping_add(h).wrapping_add(1)).to_be_bytes()
}

/// PFC destination (IEEE 802.1Qbb: the MAC control multicast address).
pub const PFC_DST_MAC: [u8; 6] = [0x01, 0x80, 0xc2, 0x00, 0x00, 0x01];
/// Ethernet preamble/SFD, inter-frame gap and FCS: in the engine's wire bytes, not in a
/// captured frame (captures end before the FCS, as Linux captures do).
const ETH_OVERHEAD_BYTES: u32 = 8 + 12 + 4;
/// A captured Ethernet frame is at least 60 B (64 B minimum frame without FCS).
const MIN_FRAME_NO_FCS: usize = 60;

/// BTH opcodes (IBA vol. 1 Table 38, RC).
pub mod opcode {
    pub const RC_WRITE_FIRST: u8 = 0x06;
    pub const RC_WRITE_MIDDLE: u8 = 0x07;
    pub const RC_WRITE_LAST: u8 = 0x08;
    pub const RC_WRITE_ONLY: u8 = 0x0a;
    pub const RC_ACK: u8 = 0x11;
    /// Congestion notification (RoCEv2 CNP, IBA Annex A17).
    pub const CNP: u8 = 0x81;
}

/// AETH syndromes: ACK with no credit count (0b000_11111), NAK "PSN sequence error" (0b011_00000).
const AETH_ACK: u8 = 0x1f;
const AETH_NAK_SEQ: u8 = 0x60;

/// The transport part (BTH and extensions) and payload length of a packet, shared by both
/// link types.
struct Transport {
    /// BTH + RETH/AETH/CNP reserved bytes.
    headers: Vec<u8>,
    /// Payload bytes on the wire (the packet's whole payload).
    payload: u32,
    /// Pad bytes after the payload to a multiple of 4 (the BTH's PadCnt).
    pad: u32,
}

fn transport(r: &CapturedPacket, e: &Ends, ib: bool) -> Transport {
    let qp = 256 + r.flow.min(0x00ff_ff00);
    let mtu = e.mtu_bytes.max(1) as u64;
    let (op, psn, ack_req, ext): (u8, u64, bool, Vec<u8>) = match r.kind {
        PacketKind::Data => {
            let (first, last) = (r.aux == 0, r.aux + r.payload_bytes as u64 >= e.flow_size);
            let op = match (first, last) {
                (true, true) => opcode::RC_WRITE_ONLY,
                (true, false) => opcode::RC_WRITE_FIRST,
                (false, false) => opcode::RC_WRITE_MIDDLE,
                (false, true) => opcode::RC_WRITE_LAST,
            };
            let mut ext = Vec::new();
            if first {
                // RETH: virtual address, R_Key, DMA length (IBA vol. 1 §9.3.3.1).
                ext.extend_from_slice(&0u64.to_be_bytes());
                ext.extend_from_slice(&qp.to_be_bytes());
                ext.extend_from_slice(&(e.flow_size.min(u32::MAX as u64) as u32).to_be_bytes());
            }
            (op, r.aux / mtu, last, ext)
        }
        PacketKind::Ack => {
            // The last PSN received in order.
            let psn = r.aux.div_ceil(mtu).saturating_sub(1);
            (opcode::RC_ACK, psn, false, vec![AETH_ACK, 0, 0, 0])
        }
        PacketKind::Nack => (opcode::RC_ACK, r.aux / mtu, false, vec![AETH_NAK_SEQ, 0, 0, 0]),
        PacketKind::Cnp => (opcode::CNP, 0, false, vec![0; 16]),
        PacketKind::FlowControl | PacketKind::Pause => unreachable!("link-level frames have no BTH"),
    };
    let payload = if r.kind == PacketKind::Data { r.payload_bytes } else { 0 };
    let pad = ((4 - payload % 4) % 4) as u8;
    let mut h = Vec::with_capacity(12 + ext.len());
    h.push(op);
    h.push(pad << 4);
    h.extend_from_slice(&0xffffu16.to_be_bytes());
    // InfiniBand: FECN on a marked packet, BECN on a CNP; RoCEv2: reserved.
    let fecn_becn = if !ib {
        0
    } else if r.kind == PacketKind::Cnp {
        0x40
    } else if r.marked {
        0x80
    } else {
        0
    };
    h.push(fecn_becn);
    h.extend_from_slice(&qp.to_be_bytes()[1..]);
    h.push(if ack_req { 0x80 } else { 0 });
    h.extend_from_slice(&((psn & 0x00ff_ffff) as u32).to_be_bytes()[1..]);
    h.extend_from_slice(&ext);
    Transport {
        headers: h,
        payload,
        pad: pad as u32,
    }
}

/// Appends the payload (zeros, at most `snap` bytes) and, when it is whole, the pad and the
/// ICRC (zeros); returns whether it was whole.
fn push_payload(f: &mut Vec<u8>, t: &Transport, snap: u32) -> bool {
    let kept = t.payload.min(snap);
    f.resize(f.len() + kept as usize, 0);
    let whole = kept == t.payload;
    if whole {
        f.resize(f.len() + t.pad as usize + 4, 0);
    }
    whole
}

/// The Ethernet frame of `r` (without FCS) and its original length.
pub fn ethernet_frame(r: &CapturedPacket, e: &Ends, snap: u32) -> (Vec<u8>, u32) {
    let mut f = Vec::with_capacity(64);
    if r.kind == PacketKind::Pause {
        f.extend_from_slice(&PFC_DST_MAC);
        f.extend_from_slice(&mac(e.src_node));
        f.extend_from_slice(&0x8808u16.to_be_bytes());
        f.extend_from_slice(&0x0101u16.to_be_bytes());
        let (enable, pause, quanta) = (r.aux as u8, (r.aux >> 8) as u8, (r.aux >> 16) as u16);
        f.extend_from_slice(&(enable as u16).to_be_bytes());
        for p in 0..8 {
            let q = if enable & pause & (1 << p) != 0 { quanta } else { 0 };
            f.extend_from_slice(&q.to_be_bytes());
        }
        f.resize(MIN_FRAME_NO_FCS, 0);
        let orig = (r.wire_bytes.saturating_sub(ETH_OVERHEAD_BYTES) as usize).max(f.len());
        return (f, orig as u32);
    }
    let t = if r.kind == PacketKind::FlowControl {
        // Not an Ethernet frame: an empty BTH-less body (never on a RoCEv2 link).
        Transport {
            headers: Vec::new(),
            payload: 0,
            pad: 0,
        }
    } else {
        transport(r, e, false)
    };
    let l4_len = 8 + t.headers.len() as u32 + t.payload + t.pad + 4;
    let ip_len = 20 + l4_len;
    f.extend_from_slice(&mac(e.dst_node));
    f.extend_from_slice(&mac(e.src_node));
    f.extend_from_slice(&0x0800u16.to_be_bytes());
    let ecn = if r.marked {
        3
    } else if r.kind == PacketKind::Data {
        2
    } else {
        0
    };
    let ip_start = f.len();
    f.extend_from_slice(&[0x45, ((r.vl & 7) << 5) | ecn]);
    f.extend_from_slice(&(ip_len.min(0xffff) as u16).to_be_bytes());
    f.extend_from_slice(&[0, 0, 0x40, 0, 64, 17, 0, 0]);
    f.extend_from_slice(&ipv4(e.src_host));
    f.extend_from_slice(&ipv4(e.dst_host));
    let sum = ipv4_checksum(&f[ip_start..ip_start + 20]);
    f[ip_start + 10..ip_start + 12].copy_from_slice(&sum.to_be_bytes());
    let sport = 49152 + (r.flow % 16384) as u16;
    f.extend_from_slice(&sport.to_be_bytes());
    f.extend_from_slice(&4791u16.to_be_bytes());
    f.extend_from_slice(&(l4_len.min(0xffff) as u16).to_be_bytes());
    f.extend_from_slice(&[0, 0]);
    f.extend_from_slice(&t.headers);
    let _ = push_payload(&mut f, &t, snap);
    let whole = 14 + ip_len as usize;
    if f.len() == whole && f.len() < MIN_FRAME_NO_FCS {
        f.resize(MIN_FRAME_NO_FCS, 0);
    }
    let orig = (r.wire_bytes.saturating_sub(ETH_OVERHEAD_BYTES) as usize)
        .max(whole)
        .max(MIN_FRAME_NO_FCS);
    (f, orig as u32)
}

/// The InfiniBand packet of `r` (LRH to VCRC) and its original length; `None` for a
/// link-level flow-control packet.
pub fn ib_packet(r: &CapturedPacket, e: &Ends, snap: u32) -> Option<(Vec<u8>, u32)> {
    if matches!(r.kind, PacketKind::FlowControl | PacketKind::Pause) {
        return None;
    }
    let t = transport(r, e, true);
    // LRH packet length: LRH to ICRC in 4-byte words (IBA vol. 1 §7.7.8).
    let words = (8 + t.headers.len() as u32 + t.payload + t.pad + 4) / 4;
    let mut f = Vec::with_capacity(64);
    f.push((r.vl & 0x0f) << 4);
    // SL = VL (the identity SL-to-VL map); LNH 0b10: IBA local, a BTH follows.
    f.push(((r.vl & 0x0f) << 4) | 0x02);
    f.extend_from_slice(&((e.dst_host + 1) as u16).to_be_bytes());
    f.extend_from_slice(&((words & 0x7ff) as u16).to_be_bytes());
    f.extend_from_slice(&((e.src_host + 1) as u16).to_be_bytes());
    f.extend_from_slice(&t.headers);
    if push_payload(&mut f, &t, snap) {
        f.extend_from_slice(&[0, 0]); // VCRC
    }
    let orig = (words * 4 + 2).max(r.wire_bytes);
    Some((f, orig))
}

/// The IPv4 header checksum (RFC 791) of `h` with its checksum field zero.
fn ipv4_checksum(h: &[u8]) -> u16 {
    let mut sum: u32 = h.chunks(2).map(|c| u16::from_be_bytes([c[0], c[1]]) as u32).sum();
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pkt(kind: PacketKind) -> CapturedPacket {
        CapturedPacket {
            time_ps: 0,
            port: 0,
            kind,
            flow: 3,
            dst_host: 0,
            index: 0,
            aux: 0,
            payload_bytes: 0,
            wire_bytes: 0,
            vl: 0,
            marked: false,
        }
    }

    fn ends(flow_size: u64, mtu_bytes: u32) -> Ends {
        Ends {
            src_node: 5,
            dst_node: 9,
            src_host: 1,
            dst_host: 2,
            flow_size,
            mtu_bytes,
        }
    }

    fn hex(s: &str) -> Vec<u8> {
        let s: String = s.split_whitespace().collect();
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }

    #[test]
    fn rocev2_data_frame_write_only_marked_priority_3() {
        let r = CapturedPacket {
            payload_bytes: 1000,
            wire_bytes: 1098,
            vl: 3,
            marked: true,
            ..pkt(PacketKind::Data)
        };
        let (f, orig) = ethernet_frame(&r, &ends(1000, 1000), 0);
        let want = hex("02fb00000009 02fb00000005 0800
             45 63 0424 0000 4000 40 11 2262 0a000002 0a000003
             c003 12b7 0410 0000
             0a 00 ffff 00 000103 80 000000
             0000000000000000 00000103 000003e8");
        assert_eq!(f, want);
        assert_eq!(orig, 1074);
    }

    #[test]
    fn rocev2_ack_carries_aeth_and_the_last_psn_received() {
        let r = CapturedPacket {
            aux: 2000,
            wire_bytes: 86,
            vl: 6,
            ..pkt(PacketKind::Ack)
        };
        let e = Ends {
            src_host: 2,
            dst_host: 1,
            ..ends(3000, 1000)
        };
        let (f, orig) = ethernet_frame(&r, &e, 0);
        let want = hex("02fb00000009 02fb00000005 0800
             45 c0 0030 0000 4000 40 11 25f9 0a000003 0a000002
             c003 12b7 001c 0000
             11 00 ffff 00 000103 00 000001
             1f000000 00000000");
        assert_eq!(f, want);
        assert_eq!(orig, 62);
    }

    #[test]
    fn rocev2_nak_has_the_sequence_error_syndrome_and_the_expected_psn() {
        let r = CapturedPacket {
            aux: 5000,
            ..pkt(PacketKind::Nack)
        };
        let (f, _) = ethernet_frame(&r, &ends(9000, 1000), 0);
        assert_eq!(f[42], opcode::RC_ACK);
        assert_eq!(&f[51..54], &[0, 0, 5]);
        assert_eq!(f[54], 0x60);
    }

    #[test]
    fn rocev2_cnp_is_opcode_0x81_with_16_reserved_bytes() {
        let (f, orig) = ethernet_frame(&pkt(PacketKind::Cnp), &ends(1, 1000), 0);
        assert_eq!(f.len(), 14 + 20 + 8 + 12 + 16 + 4);
        assert_eq!(f[42], 0x81);
        assert_eq!(&f[36..38], &4791u16.to_be_bytes());
        assert_eq!(orig, 74);
    }

    #[test]
    fn pfc_pause_frame_is_mac_control_with_per_priority_quanta() {
        let r = CapturedPacket {
            flow: u32::MAX,
            aux: 0x08 | 0x08 << 8 | 0xffff << 16,
            wire_bytes: 84,
            ..pkt(PacketKind::Pause)
        };
        let (f, orig) = ethernet_frame(&r, &ends(0, 1000), 0);
        let mut want = hex("0180c2000001 02fb00000005 8808 0101 0008
             0000 0000 0000 ffff 0000 0000 0000 0000");
        want.resize(60, 0);
        assert_eq!(f, want);
        assert_eq!(orig, 60);
    }

    #[test]
    fn pfc_resume_frame_has_zero_quanta() {
        let r = CapturedPacket {
            aux: 0x08,
            ..pkt(PacketKind::Pause)
        };
        let (f, _) = ethernet_frame(&r, &ends(0, 1000), 0);
        assert_eq!(&f[16..18], &[0, 8]);
        assert!(f[18..34].iter().all(|&b| b == 0));
    }

    #[test]
    fn ib_packet_lrh_and_bth_of_a_fecn_marked_middle_packet() {
        let r = CapturedPacket {
            aux: 4096,
            payload_bytes: 4096,
            wire_bytes: 4122,
            vl: 2,
            marked: true,
            ..pkt(PacketKind::Data)
        };
        let (f, orig) = ib_packet(&r, &ends(3 * 4096, 4096), 0).unwrap();
        assert_eq!(f, hex("20 22 0003 0406 0002  07 00 ffff 80 000103 00 000001"));
        assert_eq!(orig, 4122);
    }

    #[test]
    fn ib_packet_with_whole_payload_has_pad_icrc_and_vcrc() {
        let r = CapturedPacket {
            payload_bytes: 3,
            ..pkt(PacketKind::Data)
        };
        let (f, orig) = ib_packet(&r, &ends(3, 4096), 8).unwrap();
        // WRITE ONLY: BTH pad count 1, RETH, 3 payload bytes, 1 pad byte, ICRC, VCRC.
        assert_eq!(f.len(), 8 + 12 + 16 + 3 + 1 + 4 + 2);
        assert_eq!(&f[8..10], &[0x0a, 0x10]);
        assert_eq!(&f[4..6], &(((8 + 12 + 16 + 4 + 4) / 4) as u16).to_be_bytes());
        assert_eq!(orig, f.len() as u32);
    }

    #[test]
    fn ib_flow_control_packets_are_omitted() {
        assert!(ib_packet(&pkt(PacketKind::FlowControl), &ends(0, 4096), 0).is_none());
    }

    #[test]
    fn snap_keeps_at_most_payload_bytes_of_payload() {
        let r = CapturedPacket {
            aux: 1000,
            payload_bytes: 1000,
            ..pkt(PacketKind::Data)
        };
        let (f, orig) = ethernet_frame(&r, &ends(3000, 1000), 64);
        assert_eq!(f.len(), 14 + 20 + 8 + 12 + 64);
        assert_eq!(orig, (14 + 20 + 8 + 12 + 1000 + 4) as u32);
    }
}
