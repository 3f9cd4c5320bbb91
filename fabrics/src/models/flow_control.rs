//! Link-level flow control: whether a port may start sending a packet to its neighbour.
//!
//! Lossless fabrics plug in here: InfiniBand credits per VL (64-byte blocks, IBA vol. 1
//! §7.9.4), NVLink flit credits, and Ethernet PFC per priority (IEEE 802.1Qbb). Back-pressure
//! is always a message that travels the reverse link with its own delay; a model never peeks
//! into its neighbour's state. The plain variant, [`NoFlowControl`], always allows sending:
//! a lossy Ethernet-like fabric where a full buffer drops.

use sim_core::SimTime;

/// Hooks of a link-level flow-control scheme, per egress port.
pub trait LinkFlowControl {
    /// Fires before an egress port starts serializing a packet of `wire_bytes`: `false` holds
    /// the packet at the head of its queue until the scheme lets it go.
    fn may_send(&self, port: u32, wire_bytes: u32, now: SimTime) -> bool {
        let _ = (port, wire_bytes, now);
        true
    }

    /// Fires when an egress port starts serializing a packet of `wire_bytes`.
    fn on_send(&mut self, port: u32, wire_bytes: u32, now: SimTime) {
        let _ = (port, wire_bytes, now);
    }

    /// Fires when a packet of `wire_bytes` that arrived on ingress `port` leaves the
    /// receiving node's buffer (it was forwarded, delivered or dropped).
    fn on_buffer_freed(&mut self, ingress_port: u32, wire_bytes: u32, now: SimTime) {
        let _ = (ingress_port, wire_bytes, now);
    }
}

/// No link-level flow control: a port always may send.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NoFlowControl;

impl LinkFlowControl for NoFlowControl {}

/// The closed set of flow-control schemes the engine can run.
#[derive(Clone, Debug, Default)]
pub enum AnyFlowControl {
    #[default]
    None,
}

impl AnyFlowControl {
    pub fn name(&self) -> &'static str {
        match self {
            AnyFlowControl::None => "none",
        }
    }
}

impl LinkFlowControl for AnyFlowControl {
    #[inline]
    fn may_send(&self, port: u32, wire_bytes: u32, now: SimTime) -> bool {
        match self {
            AnyFlowControl::None => NoFlowControl.may_send(port, wire_bytes, now),
        }
    }
    #[inline]
    fn on_send(&mut self, port: u32, wire_bytes: u32, now: SimTime) {
        match self {
            AnyFlowControl::None => NoFlowControl.on_send(port, wire_bytes, now),
        }
    }
    #[inline]
    fn on_buffer_freed(&mut self, ingress_port: u32, wire_bytes: u32, now: SimTime) {
        match self {
            AnyFlowControl::None => NoFlowControl.on_buffer_freed(ingress_port, wire_bytes, now),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn none_always_allows() {
        let mut fc = AnyFlowControl::None;
        assert!(fc.may_send(3, 9000, SimTime(0)));
        fc.on_send(3, 9000, SimTime(0));
        assert!(fc.may_send(3, u32::MAX, SimTime(1)));
        assert_eq!(fc.name(), "none");
    }
}
