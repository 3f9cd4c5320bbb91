//! The base fabric's Ethernet switch (`Device::OqSwitch`): output-queued, store-and-forward,
//! a buffer model per egress port (tail drop by default, `models/buffer.rs`), an optional
//! link flow-control model (`models/flow_control.rs`) and ECN marking at dequeue
//! (`models/marking.rs`); no priorities, no PFC (`docs/models/ethernet-base.md`). It is the
//! worked example of a device model: its hooks are below, the state it touches is the port's
//! queue and the run's buffer, flow-control and marking models.

use super::device::DeviceModel;
use super::{Ev, Fabric};
use crate::models::buffer::QueueView;
use crate::models::{BufferModel, LinkFlowControl, Marking};
use sim_core::{EventQueue, Origin, Scheduler};

/// The output-queued switch's hooks.
pub(super) struct OqSwitch;

impl DeviceModel for OqSwitch {
    /// Route the packet and queue it at its egress port (or drop it there).
    #[inline]
    fn arrive<Q: EventQueue<Ev>>(f: &mut Fabric, s: &mut Scheduler<Ev, Q>, p: u32, id: u32) {
        let port = &f.ports[p as usize];
        let (node, in_port, routed_ahead) = (port.peer_node, port.peer_port, port.routed_ahead);
        let pkt = f.packets.get_mut(id);
        pkt.ingress_port = in_port;
        let ahead = pkt.next_port;
        // Routed when it was put on the link (`Fabric::route_ahead`), unless by load or on a small fabric.
        let out = if routed_ahead { ahead } else { f.route_packet(node, id) };
        f.enqueue(s, out, id);
    }

    #[inline]
    fn kick<Q: EventQueue<Ev>>(f: &mut Fabric, s: &mut Scheduler<Ev, Q>, p: u32) {
        f.try_start_queued(s, p);
    }

    #[inline]
    fn tx_done<Q: EventQueue<Ev>>(f: &mut Fabric, s: &mut Scheduler<Ev, Q>, p: u32) {
        f.ports[p as usize].txdone_pending = false;
        f.try_start_queued(s, p);
    }
}

impl Fabric {
    /// Sends the head of port `p`'s queue if the port is idle and flow control allows; arms
    /// `TxDone` when more packets wait.
    pub(super) fn try_start_queued<Q: EventQueue<Ev>>(&mut self, s: &mut Scheduler<Ev, Q>, p: u32) {
        let now = s.now();
        let port = &self.ports[p as usize];
        if port.busy_until > now || port.txdone_pending {
            return;
        }
        let Some(&id) = port.queue.front() else { return };
        let wire = self.packets.get(id).wire_bytes;
        if !self.flow_control.may_send(p, wire, now) {
            return; // the flow-control model wakes the port when it may send again
        }
        let port = &mut self.ports[p as usize];
        port.queue.pop_front();
        if let Some(next) = port.queue.front().and_then(|&n| self.packets.slots_get(n)) {
            // The next head, a serialization ahead (`roce_switch_pick` says why).
            sim_core::prefetch(next);
        }
        let port = &mut self.ports[p as usize];
        port.queued_bytes -= wire as u64;
        let queued = port.queued_bytes;
        port.stats.queue_bytes.set(now, queued);
        let ingress_port = self.packets.get(id).ingress_port;
        self.buffer.on_dequeue(
            QueueView {
                port: p,
                ingress_port,
                queued_bytes: queued,
            },
            wire,
        );
        if self.marking.mark_on_dequeue(p, queued) {
            self.packets.get_mut(id).marked = true;
        }
        self.flow_control.on_buffer_freed(ingress_port, wire, now);
        self.start_tx(s, p, id);
        let port = &mut self.ports[p as usize];
        if !port.queue.is_empty() {
            port.txdone_pending = true;
            let at = port.busy_until;
            s.schedule(at, Origin(p), Ev::TxDone(p));
        }
    }

    /// A packet reaches switch egress port `p`'s queue.
    fn enqueue<Q: EventQueue<Ev>>(&mut self, s: &mut Scheduler<Ev, Q>, p: u32, id: u32) {
        let now = s.now();
        let pkt = *self.packets.get(id);
        let port = &self.ports[p as usize];
        let view = QueueView {
            port: p,
            ingress_port: pkt.ingress_port,
            queued_bytes: port.queued_bytes,
        };
        if !self.buffer.admit(view, pkt.wire_bytes) {
            self.flow_control.on_buffer_freed(pkt.ingress_port, pkt.wire_bytes, now);
            self.drop_packet(p, id);
            return;
        }
        let port = &mut self.ports[p as usize];
        port.queue.push_back(id);
        port.queued_bytes += pkt.wire_bytes as u64;
        let queued = port.queued_bytes;
        port.stats.queue_bytes.set(now, queued);
        if port.txdone_pending {
            return; // the pending TxDone will serve the queue
        }
        if port.busy_until <= now {
            self.try_start_queued(s, p);
        } else {
            port.txdone_pending = true;
            let at = port.busy_until;
            s.schedule(at, Origin(p), Ev::TxDone(p));
        }
    }
}
