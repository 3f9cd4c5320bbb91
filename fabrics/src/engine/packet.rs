//! Packets live in an arena and are referred to by `u32` ids; events and queues carry ids.

use sim_core::SimTime;

/// What a packet is. Control packets (credits, PAUSE frames, ACKs, CNPs) come with the
/// lossless and congestion-control models and travel the same links as data.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PacketKind {
    Data,
    /// InfiniBand link-level flow-control packet: `aux` is the FCCL it advertises for `vl`.
    FlowControl,
    /// Congestion notification from a flow's destination back to its source (IB BECN,
    /// RoCEv2 CNP).
    Cnp,
    /// PFC frame (802.1Qbb) on an Ethernet link: `aux` encodes the frame (see
    /// `engine/roce/`). Consumed by the MAC at the far end of the link, never forwarded.
    Pause,
    /// RoCEv2 ACK to a flow's source: `aux` = bytes received in order so far, `sent_at` =
    /// send time of the packet it acknowledges (for the RTT sample).
    Ack,
    /// RoCEv2 NACK (go-back-N): `aux` = the byte offset the receiver expects next.
    Nack,
}

/// One packet. Plain data: the engine owns every field.
#[derive(Clone, Copy, Debug)]
pub struct Packet {
    pub kind: PacketKind,
    /// Flow index.
    pub flow: u32,
    /// Destination host index.
    pub dst_host: u32,
    /// Payload bytes (what the flow counts as delivered).
    pub payload_bytes: u32,
    /// Bytes on the wire: payload plus per-packet header and framing overhead.
    pub wire_bytes: u32,
    /// Global id of the port the packet last arrived on (`u32::MAX` at its source).
    pub ingress_port: u32,
    /// ECMP hash of the packet's flow (models the 5-tuple hash).
    pub flow_hash: u64,
    /// When the source NIC started to transmit it.
    pub sent_at: SimTime,
    /// When its last byte reaches the far end of the link it is on (cut-through switches
    /// cannot finish forwarding earlier).
    pub tail_at: SimTime,
    /// Kind-specific payload: the FCCL of a flow-control packet; a data packet's byte offset
    /// in its flow.
    pub aux: u64,
    /// The output port a switch routed it to: set when it is put on the link towards a switch
    /// that routes statically ([`OnWire`]), else on its arrival there.
    pub next_port: u32,
    /// Data: the packet's index in its flow, counting retransmissions (crossbar striping
    /// rotates over it).
    pub index: u32,
    /// Virtual lane (InfiniBand) or priority (Ethernet) it travels on.
    pub vl: u8,
    /// Congestion-experienced mark (ECN CE / IB FECN).
    pub marked: bool,
    /// Switches that have routed it so far: its place on its flow's path (`Fabric::path_cache`).
    pub hop: u8,
}

impl Packet {
    /// A template for control packets: no flow, no payload; callers set kind, size and the
    /// fields they use.
    pub fn control() -> Packet {
        Packet {
            kind: PacketKind::FlowControl,
            flow: u32::MAX,
            dst_host: u32::MAX,
            payload_bytes: 0,
            wire_bytes: 0,
            ingress_port: u32::MAX,
            flow_hash: 0,
            sent_at: SimTime::ZERO,
            tail_at: SimTime::ZERO,
            aux: 0,
            next_port: u32::MAX,
            index: 0,
            vl: 0,
            marked: false,
            hop: 0,
        }
    }
}

/// A packet on a link's pipe: its arena id and, where the far end is a switch that routes
/// statically (ECMP, D-mod-k: a function of the packet alone), the lane it will join there,
/// routed when the packet was put on the link (its `next_port` holds the egress). The arrival
/// then reads its egress from the packet instead of walking the route tables, and the
/// prefetch pipeline, which sees this record an event before the arrival, asks for that
/// lane's queue ahead of time (its miss was a fifth of a k=16 arrival's time). Eight bytes,
/// so that a pipe's slot stays 16 (24 cost 8 % at k=16 on every fabric).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OnWire {
    pub id: u32,
    /// `egress port * 8 + priority`, or [`NO_LANE`]; a hint only, never read for a result.
    lane: u32,
}

impl OnWire {
    #[inline(always)]
    pub fn new(id: u32, egress: u32, prio: u8) -> OnWire {
        let lane = if egress == NO_LANE {
            NO_LANE
        } else {
            egress.wrapping_mul(8) | (prio & 7) as u32
        };
        OnWire { id, lane }
    }

    /// The egress port and priority at the far end, if routed when put on the link.
    #[inline(always)]
    pub fn lane(self) -> Option<(u32, u8)> {
        (self.lane != NO_LANE).then_some((self.lane / 8, (self.lane % 8) as u8))
    }
}

/// "Not routed ahead", as an egress port and as a lane ([`OnWire`]).
pub const NO_LANE: u32 = u32::MAX;

/// A link-level control frame (InfiniBand flow-control packet, PFC frame): consumed by the
/// MAC at the far end of its link, never queued or forwarded, so it travels by value on the
/// link's control pipe and takes no arena slot (reading it back from the arena a link delay
/// later was a cache miss on nearly every credit update).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CtrlFrame {
    /// `FlowControl` or `Pause`.
    pub kind: PacketKind,
    /// The lane (IB VL) a flow-control packet is for.
    pub vl: u8,
    pub wire_bytes: u32,
    /// The FCCL of a flow-control packet; a PFC frame's encoding (`engine/roce/`).
    pub aux: u64,
}

impl CtrlFrame {
    /// The frame as a [`Packet`] (for the packet capture).
    pub fn as_packet(&self) -> Packet {
        Packet {
            kind: self.kind,
            vl: self.vl,
            wire_bytes: self.wire_bytes,
            aux: self.aux,
            ..Packet::control()
        }
    }
}

/// A slab of packets with a free list: ids are reused, nothing is allocated per packet in
/// steady state.
#[derive(Default)]
pub struct PacketArena {
    slots: Vec<Packet>,
    free: Vec<u32>,
    live: u32,
}

impl PacketArena {
    #[inline]
    pub fn alloc(&mut self, p: Packet) -> u32 {
        self.live += 1;
        match self.free.pop() {
            Some(id) => {
                self.slots[id as usize] = p;
                id
            }
            None => {
                let id = u32::try_from(self.slots.len()).expect("more than 2^32 packets in flight");
                self.slots.push(p);
                id
            }
        }
    }

    #[inline]
    pub fn free(&mut self, id: u32) {
        debug_assert!((id as usize) < self.slots.len());
        self.live -= 1;
        self.free.push(id);
    }

    #[inline]
    pub fn get(&self, id: u32) -> &Packet {
        &self.slots[id as usize]
    }

    #[inline]
    pub fn get_mut(&mut self, id: u32) -> &mut Packet {
        &mut self.slots[id as usize]
    }

    /// Slot `id`, if it exists (free or not): for prefetching, which may name a stale id.
    #[inline]
    pub fn slots_get(&self, id: u32) -> Option<&Packet> {
        self.slots.get(id as usize)
    }

    /// Packets allocated and not yet freed.
    pub fn live(&self) -> u32 {
        self.live
    }

    /// Largest number of packets ever alive at once (the arena's size).
    pub fn high_water(&self) -> usize {
        self.slots.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_packet_fits_one_cache_line() {
        // Every hop reads its packet: more than 64 bytes would be a second miss per hop.
        assert!(
            std::mem::size_of::<Packet>() <= 64,
            "{} B",
            std::mem::size_of::<Packet>()
        );
    }
}
