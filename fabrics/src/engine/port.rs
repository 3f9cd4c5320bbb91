//! Egress ports: an output queue, a serializer and the link pipe to the neighbour.

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

/// One direction of a link, seen from the node that sends on it.
pub struct Port {
    /// Node that owns this port.
    pub node: u32,
    /// Node at the far end and the id of the port there that sends back to us.
    pub peer_node: u32,
    pub peer_port: u32,
    pub rate: BitsPerSec,
    pub delay: Duration,
    /// Extra delay after a packet is fully received at the far end before it joins an
    /// output queue there (the peer switch's port-to-port latency; zero at hosts).
    pub peer_latency: Duration,
    /// The serializer is busy until this time.
    pub busy_until: SimTime,
    /// A `TxDone` event is scheduled for `busy_until`.
    pub txdone_pending: bool,
    /// Packet ids waiting to be sent, FIFO.
    pub queue: VecDeque<u32>,
    pub queued_bytes: u64,
    /// Packets on the wire towards the peer, by arrival time at the peer's output queue.
    pub pipe: Pipe<u32>,
    /// Link-level control frames on the wire (InfiniBand flow-control packets, PFC PAUSE), by
    /// arrival time at the peer's MAC. They follow the data on the wire but are consumed on
    /// arrival, while data then still spends the peer's port-to-port latency: one FIFO for
    /// both would hold a PAUSE back by that latency.
    pub ctrl_pipe: Pipe<u32>,
    pub stats: PortStats,
}

impl Port {
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
            queue: VecDeque::new(),
            queued_bytes: 0,
            pipe: Pipe::new(),
            ctrl_pipe: Pipe::new(),
            stats: PortStats::default(),
        }
    }
}
