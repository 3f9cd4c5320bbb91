//! Packet capture of chosen ports (`[output] pcap`): the engine records what each captured
//! port puts on its link, as plain fields; the scenarios crate encodes them as pcap frames
//! after the run. Off unless asked: the three places a port starts a packet or a control
//! frame (`start_tx`, `transmit`, `transmit_ctrl`) then test one `Option` and nothing else.

use super::packet::{Packet, PacketKind};
use sim_core::SimTime;

/// Hard bound on `max_packets`: 10 M records of 48 B = 480 MB at most.
pub const MAX_CAPTURED_PACKETS: usize = 10_000_000;

/// One packet as a captured port transmitted it: the header fields the encoders need.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CapturedPacket {
    /// When its first bit left the port (simulated time, ps).
    pub time_ps: u64,
    /// The port that transmitted it.
    pub port: u32,
    pub kind: PacketKind,
    /// Flow index (`u32::MAX` for link-level control frames).
    pub flow: u32,
    /// Destination host index.
    pub dst_host: u32,
    /// Data: packet index in its flow (retransmissions counted).
    pub index: u32,
    /// The packet's kind-specific field (byte offset, PFC frame, FCCL; see [`Packet::aux`]).
    pub aux: u64,
    pub payload_bytes: u32,
    /// Bytes on the wire as the port's framing counts them (preamble and gap included on
    /// Ethernet).
    pub wire_bytes: u32,
    /// Priority (Ethernet) or virtual lane (InfiniBand).
    pub vl: u8,
    /// ECN CE / FECN.
    pub marked: bool,
}

/// The capture: which ports, the records so far, and how many were left out.
#[derive(Clone, Debug)]
pub struct Capture {
    on: Vec<bool>,
    records: Vec<CapturedPacket>,
    max_packets: usize,
    dropped: u64,
}

impl Capture {
    /// Captures the ports `ports` of a fabric of `n_ports` ports, keeping at most
    /// `max_packets` records (clamped to [`MAX_CAPTURED_PACKETS`]).
    pub fn new(n_ports: usize, ports: &[u32], max_packets: usize) -> Capture {
        let mut on = vec![false; n_ports];
        for &p in ports {
            assert!((p as usize) < n_ports, "captured port {p} out of 0..{n_ports}");
            on[p as usize] = true;
        }
        Capture {
            on,
            records: Vec::new(),
            max_packets: max_packets.min(MAX_CAPTURED_PACKETS),
            dropped: 0,
        }
    }

    /// Records `pk` leaving port `p` at `now` with `wire_bytes` on the wire, if `p` is captured.
    #[inline]
    pub(super) fn record(&mut self, now: SimTime, p: u32, pk: &Packet, wire_bytes: u32) {
        if !self.on[p as usize] {
            return;
        }
        if self.records.len() >= self.max_packets {
            self.dropped += 1;
            return;
        }
        self.records.push(CapturedPacket {
            time_ps: now.ps(),
            port: p,
            kind: pk.kind,
            flow: pk.flow,
            dst_host: pk.dst_host,
            index: pk.index,
            aux: pk.aux,
            payload_bytes: pk.payload_bytes,
            wire_bytes,
            vl: pk.vl,
            marked: pk.marked,
        });
    }

    /// The records, in transmission order (non-decreasing time).
    pub fn records(&self) -> &[CapturedPacket] {
        &self.records
    }

    /// Packets of captured ports left out because `max_packets` was reached.
    pub fn dropped(&self) -> u64 {
        self.dropped
    }

    pub fn max_packets(&self) -> usize {
        self.max_packets
    }
}
