//! Switch buffer models: whether an arriving packet may join an egress queue.
//!
//! The plain variant, [`PerPortTailDrop`], gives every egress port a private buffer of
//! `buffer_bytes`; a packet that would overflow it is dropped (tail drop) and counted.
//! Occupancy is the bytes *waiting* in the queue; the packet being serialized has left it
//! (it is on the wire from its first bit, as in htsim's `Queue::beginService`).
//! Shared-buffer switches with reserve, headroom and the Choudhury–Hahne dynamic threshold
//! (RoCEv2) and per-VL input buffers (InfiniBand) plug in here too.

/// What a buffer model sees of an egress queue when deciding.
#[derive(Clone, Copy, Debug)]
pub struct QueueView {
    /// Egress port (global id).
    pub port: u32,
    /// Ingress port the packet came in on (global id), for ingress-accounted models.
    pub ingress_port: u32,
    /// Bytes waiting in the egress queue now.
    pub queued_bytes: u64,
}

/// Hooks of a switch buffer model.
pub trait BufferModel {
    /// Fires when a packet of `wire_bytes` arrives for an egress queue: `true` admits it,
    /// `false` drops it.
    fn admit(&mut self, q: QueueView, wire_bytes: u32) -> bool;

    /// Fires when an admitted packet leaves the egress queue (starts serialization).
    fn on_dequeue(&mut self, q: QueueView, wire_bytes: u32) {
        let _ = (q, wire_bytes);
    }
}

/// A private, finite buffer per egress port with tail drop.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PerPortTailDrop {
    /// Capacity of each egress queue in bytes (whole packets, wire size).
    pub buffer_bytes: u64,
}

impl BufferModel for PerPortTailDrop {
    #[inline]
    fn admit(&mut self, q: QueueView, wire_bytes: u32) -> bool {
        q.queued_bytes + wire_bytes as u64 <= self.buffer_bytes
    }
}

/// The closed set of buffer models the engine can run.
#[derive(Clone, Debug)]
pub enum AnyBuffer {
    PerPortTailDrop(PerPortTailDrop),
}

impl AnyBuffer {
    pub fn name(&self) -> &'static str {
        match self {
            AnyBuffer::PerPortTailDrop(_) => "per_port_tail_drop",
        }
    }
}

impl BufferModel for AnyBuffer {
    #[inline]
    fn admit(&mut self, q: QueueView, wire_bytes: u32) -> bool {
        match self {
            AnyBuffer::PerPortTailDrop(m) => m.admit(q, wire_bytes),
        }
    }
    #[inline]
    fn on_dequeue(&mut self, q: QueueView, wire_bytes: u32) {
        match self {
            AnyBuffer::PerPortTailDrop(m) => m.on_dequeue(q, wire_bytes),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn view(queued_bytes: u64) -> QueueView {
        QueueView {
            port: 0,
            ingress_port: 1,
            queued_bytes,
        }
    }

    #[test]
    fn tail_drop_admits_up_to_exactly_full() {
        let mut b = AnyBuffer::PerPortTailDrop(PerPortTailDrop { buffer_bytes: 10_000 });
        assert!(b.admit(view(0), 10_000));
        assert!(b.admit(view(5_000), 5_000));
        assert!(!b.admit(view(5_001), 5_000));
        assert!(!b.admit(view(0), 10_001));
    }
}
