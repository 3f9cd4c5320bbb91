//! Egress ports: an output queue, a serializer and the link pipe to the neighbour.

use super::{CtrlFrame, OnWire};
use sim_core::{BitsPerSec, Duration, Pipe, SimTime, TimeWeightedGauge};
use std::collections::VecDeque;

/// Counters of one egress port (plain data, read by reports).
#[derive(Clone, Debug, Default)]
pub struct PortStats {
    /// Packets and wire bytes put on the link (link-hops).
    pub packets_tx: u64,
    pub bytes_tx: u64,
    /// Packets and wire bytes refused by the buffer model.
    pub drops: u64,
    pub drop_bytes: u64,
    /// Bytes waiting in the output queue over time.
    pub queue_bytes: TimeWeightedGauge,
}

/// How a link puts a packet on the wire when its own format differs from the run's packet
/// format (inside the servers of a GPU cluster, whose packets are the network's): the bytes
/// serialized are those of the link's own framing of the packet's payload. `Native`: the
/// packet's wire bytes as cut (every link of a network, and every link of an NVLink- or
/// PCIe-only run, whose packets already have that framing).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Framing {
    #[default]
    Native,
    /// NVLink: 16-byte flits, one header flit per 256-byte packet (`crate::nvlink`).
    NvLink,
    /// PCIe posted writes: one TLP of overhead per `mps_bytes` of payload (`crate::pcie`).
    Pcie { mps_bytes: u32, overhead_bytes: u32 },
    /// InfiniBand inside a run of another network (RoCEv2): the payload plus the local-route
    /// headers [`crate::ib::link::BASE_HEADER_BYTES`] (IBA vol. 1 §7.7, §9.2).
    InfiniBand,
}

impl Framing {
    /// Bytes on the wire for a packet of `payload` bytes that is `wire` bytes as cut.
    #[inline]
    pub fn wire_bytes(self, payload: u32, wire: u32) -> u32 {
        match self {
            Framing::Native => wire,
            Framing::NvLink => crate::nvlink::FlitFraming::NVLINK.wire_bytes(payload as u64) as u32,
            Framing::Pcie {
                mps_bytes,
                overhead_bytes,
            } => payload + payload.div_ceil(mps_bytes).max(1) * overhead_bytes,
            Framing::InfiniBand => payload + crate::ib::link::BASE_HEADER_BYTES,
        }
    }
}

/// One direction of a link, seen from the node that sends on it.
///
/// Laid out for the hot path (`repr(C)`, cache-line aligned): the first line holds what
/// putting a packet on the link and taking it off read (serializer, link timing, pipe), the
/// second the addressing, devices and queue occupancy; counters and the rarer queues follow.
#[repr(C, align(64))]
pub struct Port {
    /// The serializer is busy until this time.
    pub busy_until: SimTime,
    pub rate: BitsPerSec,
    pub delay: Duration,
    /// Extra delay after a packet is fully received at the far end before it joins an
    /// output queue there (the peer switch's port-to-port latency; zero at hosts).
    pub peer_latency: Duration,
    /// Packets on the wire towards the peer, by arrival time at the peer's output queue.
    pub pipe: Pipe<OnWire>,
    /// Node that owns this port.
    pub node: u32,
    /// Node at the far end and the id of the port there that sends back to us.
    pub peer_node: u32,
    pub peer_port: u32,
    /// How this link frames packets (see [`Framing`]).
    pub framing: Framing,
    /// The device of this port's node and of the peer node (`device.rs`), kept here because
    /// every hop dispatches on them.
    pub device: super::Device,
    pub peer_device: super::Device,
    /// A `TxDone` event is scheduled for `busy_until`.
    pub txdone_pending: bool,
    /// The port is sending a packet whose end nobody waited for, so no `TxDone` was
    /// scheduled (a credit device's flow-control packet, `ib/switch.rs`): a kick before its
    /// end schedules it then.
    pub txdone_deferred: bool,
    /// Packets put on this link are routed at the far end then: it is a switch (RoCEv2,
    /// output-queued or InfiniBand) that routes by a function of the packet alone (`OnWire`,
    /// `Fabric::route_ahead`), where the flows use enough ports for the prefetch pipeline
    /// (`PREFETCH_MIN_PORTS`).
    pub routed_ahead: bool,
    /// Flow-control packets to this port are taken in when its device looks, not as events
    /// (`ib/credit_link.rs`): it is a credit device's sender on a credit link. The same flag
    /// of the reverse direction, on the port at the far end, is [`Port::fc_out_lazy`].
    pub fc_in_lazy: bool,
    /// The flow-control packets this port sends are taken in lazily at the far end.
    pub fc_out_lazy: bool,
    /// The link-level flow control of this direction of the link (`device.rs`): the
    /// departure paths of every device branch on it, so it sits on the line they read.
    pub link_fc: super::LinkFc,
    pub queued_bytes: u64,
    /// A MAC control frame waiting for this port's transmitter, which sends it ahead of any
    /// data: a PFC frame encoded by `roce::pfc_link::encode`, 0 for none. Every departure of
    /// a PFC port tests it, so it sits on the line the departure reads for `queued_bytes`
    /// (a per-port array of its own cost a last-level miss in two of three departures at
    /// k=32, `docs/performance.md`, session 23).
    pub ctrl_pending: u64,
    /// The packet at the head of the pipe when the head last changed here (pushed onto an
    /// empty pipe, or the one behind an arrival): read by the prefetch pipeline an event
    /// before it reads the pipe's slot, so it asks for the packet and where it goes a stage
    /// earlier. A hint only: a head changed elsewhere (a partition's hand-over) leaves it
    /// stale, which wastes a few requests and changes nothing else.
    pub head_hint: OnWire,
    pub stats: PortStats,
    /// Packet ids waiting to be sent, FIFO.
    pub queue: VecDeque<u32>,
}

/// The link-level control frames on their way to one port (InfiniBand flow-control packets
/// that credit it, PFC frames that pause it), sent by the port at the far end of its link:
/// in their own array beside the ports, indexed by the port they are for. By arrival time
/// at that port's MAC: they follow the data on the wire but are consumed on arrival, while
/// data then still spends the port-to-port latency: one FIFO for both would hold a PAUSE
/// back by that latency. Where the port takes flow-control packets in lazily, the
/// bookkeeping of that sits beside the pipe, in the same cache line: taking a packet in
/// reads both, and neither the sending port's lines (session 14).
#[repr(C, align(64))]
#[derive(Default)]
pub struct CtrlLink {
    pub pipe: Pipe<CtrlFrame>,
    /// Where [`Port::fc_in_lazy`]: what of the pipe is yet to be taken in.
    pub(in crate::engine) fc: super::ib::FcInbound,
}

impl Port {
    /// Asks for the port's three hot lines (serializer and pipe; addressing, devices and
    /// queue occupancy; the queue gauge and transmit counters): a field in each, as the
    /// layout test below checks. Until session 15 the pipeline asked for the gauge's first
    /// field, which lies in line 1, and never for line 2, where the rest of the gauge is. The
    /// profile showed a RoCEv2 departure waiting on that line, but asking for it measured
    /// neutral (0.993 in pairs on the k=32 rung): it makes the pipeline do what it says.
    #[inline(always)]
    pub fn prefetch_hot(&self) {
        sim_core::prefetch(&self.busy_until);
        sim_core::prefetch(&self.queued_bytes);
        sim_core::prefetch(&self.stats.packets_tx);
    }

    pub fn new(
        node: u32,
        peer_node: u32,
        peer_port: u32,
        rate: BitsPerSec,
        delay: Duration,
        peer_latency: Duration,
    ) -> Self {
        Port {
            node,
            peer_node,
            peer_port,
            rate,
            delay,
            peer_latency,
            busy_until: SimTime::ZERO,
            txdone_pending: false,
            txdone_deferred: false,
            routed_ahead: false,
            fc_in_lazy: false,
            fc_out_lazy: false,
            link_fc: super::LinkFc::None,
            queue: VecDeque::new(),
            queued_bytes: 0,
            ctrl_pending: 0,
            head_hint: OnWire::new(u32::MAX, super::NO_LANE, 0),
            pipe: Pipe::new(),
            stats: PortStats::default(),
            framing: Framing::Native,
            device: super::Device::OqSwitch,
            peer_device: super::Device::OqSwitch,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hot_fields_share_the_first_cache_lines() {
        // The serializer and pipe in line 0, addressing and devices in line 1 (see `Port`).
        assert_eq!(std::mem::offset_of!(Port, pipe), 32);
        assert!(std::mem::offset_of!(Port, queued_bytes) < 128);
        assert_eq!(std::mem::align_of::<Port>(), 64);
        // `prefetch_hot` asks for lines 0, 1 and 2, which hold the whole queue gauge.
        let line = |offset: usize| offset / 64;
        assert_eq!(line(std::mem::offset_of!(Port, busy_until)), 0);
        assert_eq!(line(std::mem::offset_of!(Port, queued_bytes)), 1);
        assert_eq!(line(std::mem::offset_of!(Port, ctrl_pending)), 1);
        assert_eq!(line(std::mem::offset_of!(Port, head_hint)), 1);
        assert_eq!(std::mem::size_of::<Port>(), 256);
        assert_eq!(line(std::mem::offset_of!(Port, link_fc)), 1);
        let stats = std::mem::offset_of!(Port, stats);
        assert_eq!(line(stats + std::mem::offset_of!(PortStats, packets_tx)), 2);
        let gauge = stats + std::mem::offset_of!(PortStats, queue_bytes);
        assert!(line(gauge) >= 1 && line(gauge + std::mem::size_of::<TimeWeightedGauge>() - 1) <= 2);
        // A link's control pipe and flow-control bookkeeping share one line.
        assert_eq!(std::mem::size_of::<CtrlLink>(), 64);
        // A pipe slot (arrival time, packet on the wire) stays 16 bytes (`OnWire`).
        assert_eq!(std::mem::size_of::<(SimTime, OnWire)>(), 16);
    }

    #[test]
    fn a_lane_on_the_wire_gives_back_its_egress_and_priority() {
        assert_eq!(OnWire::new(7, 1234, 3).lane(), Some((1234, 3)));
        assert_eq!(OnWire::new(7, super::super::NO_LANE, 3).lane(), None);
    }

    #[test]
    fn link_framing_of_a_network_packet() {
        // A 4096-B payload on NVLink: 16 packets of 16 data flits + 1 header flit = 272 flits.
        assert_eq!(Framing::NvLink.wire_bytes(4096, 4122), 272 * 16);
        // A 6-B-free control packet (no payload) is one header flit.
        assert_eq!(Framing::NvLink.wire_bytes(0, 6), 16);
        // PCIe with 256-B MPS and 24 B of TLP overhead: 16 TLPs.
        let pcie = Framing::Pcie {
            mps_bytes: 256,
            overhead_bytes: 24,
        };
        assert_eq!(pcie.wire_bytes(4096, 4122), 4096 + 16 * 24);
        assert_eq!(pcie.wire_bytes(0, 6), 24);
        assert_eq!(Framing::Native.wire_bytes(4096, 4122), 4122);
    }
}
