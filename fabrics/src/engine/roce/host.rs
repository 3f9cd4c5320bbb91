//! The RoCEv2 endpoint's NIC: which packet its port sends next (control packets first, then
//! the flows round-robin as congestion control, PFC, credits and the go-back-N window allow).

use super::*;
use sim_core::{prefetch, prefetch_at};

/// The RoCEv2 endpoint (`Device::RoceHost`): queue pairs with congestion control, ACK, CNP,
/// go-back-N for flows that cross the network; load/store inside a server.
pub(in crate::engine) struct RoceHost;

impl DeviceModel for RoceHost {
    #[inline]
    fn arrive<Q: EventQueue<Ev>>(f: &mut Fabric, s: &mut Scheduler<Ev, Q>, p: u32, id: u32) {
        f.roce_host_arrive(s, p, id);
    }
    #[inline]
    fn kick<Q: EventQueue<Ev>>(f: &mut Fabric, s: &mut Scheduler<Ev, Q>, p: u32) {
        f.roce_kick(s, p);
    }
    #[inline]
    fn tx_done<Q: EventQueue<Ev>>(f: &mut Fabric, s: &mut Scheduler<Ev, Q>, p: u32) {
        f.roce_on_txdone(s, p);
    }
    #[inline]
    fn flow_started<Q: EventQueue<Ev>>(f: &mut Fabric, s: &mut Scheduler<Ev, Q>, _h: u32, i: u32) {
        f.roce_flow_started(s, i);
    }
    #[inline]
    fn nic_wake<Q: EventQueue<Ev>>(f: &mut Fabric, s: &mut Scheduler<Ev, Q>, h: u32) {
        f.roce_nic_wake(s, h);
    }
}

impl Fabric {
    /// Host `h`'s NIC (port `p`): the next control packet, else the next data packet of a
    /// flow that congestion control and PFC allow (round-robin). Arms the NIC's wake-up when
    /// a flow waits only for its pacing time.
    pub(in crate::engine) fn roce_nic_pick<Q: EventQueue<Ev>>(
        &mut self,
        s: &mut Scheduler<Ev, Q>,
        h: u32,
        p: u32,
    ) -> Option<u32> {
        let now = s.now();
        if let Some(&id) = self.rr().ctrl_q[h as usize].front() {
            let pk = self.packets.get(id);
            if self.roce_link_ready(p, pk.vl, pk.payload_bytes, pk.wire_bytes, now) {
                self.rs().ctrl_q[h as usize].pop_front();
                return Some(id);
            }
        }
        let n_active = self.nics[h as usize].active.len();
        let mut earliest = SimTime::MAX;
        let credit_link = self.ports[p as usize].link_fc == LinkFc::Credit;
        let (mtu, header) = (self.cfg.mtu_bytes as u64, self.cfg.header_bytes);
        for _ in 0..n_active {
            let f = self.nics[h as usize].active.pop_front()?;
            let st = &self.flow_state[f as usize];
            let prio = self.flows[f as usize].class;
            if credit_link {
                // Credits short for the flow's next packet: the send queue waits for the
                // flow-control packet that brings them, its order kept (as an HCA's VL queue).
                let payload = st.unsent_bytes.min(mtu) as u32;
                if st.next_send_at <= now && !self.ib_credits_cover(p, prio, payload, payload + header) {
                    self.nics[h as usize].active.push_front(f);
                    break;
                }
            }
            let paused = !self.roce_link_ready(p, prio, 0, 0, now) && !credit_link;
            // Go-back-N or congestion-control window full: wait for an ACK (which kicks the NIC).
            let sent_pos = self.flows[f as usize].size.get() - st.unsent_bytes;
            let window = match st.cc.window_bytes() {
                Some(w) => w.min(self.rr().send[f as usize].gbn_window),
                None => self.rr().send[f as usize].gbn_window,
            };
            let window_full = sent_pos - self.rr().send[f as usize].snd_acked >= window;
            if paused || window_full || st.next_send_at > now {
                if !paused && !window_full {
                    earliest = earliest.min(st.next_send_at);
                }
                self.nics[h as usize].active.push_back(f);
                continue;
            }
            return Some(self.roce_cut(s, h, f));
        }
        if earliest != SimTime::MAX {
            self.nic_wake_at(s, h, earliest);
        }
        None
    }

    /// Prefetch hint for a coming `TxDone(p)` at a NIC's port (no effect on results; called
    /// by [`Fabric::roce_prefetch_departure`] where no switch queue of `p` holds a packet).
    /// [`Fabric::roce_nic_pick`] reads the host's control queue and round-robin of flows, then
    /// the state of the flow at its front: its congestion control, spec and record, and its
    /// queue pair's sender line (a miss each on a fabric of thousands of hosts). `stage` 2
    /// asks for the queues' records and the port's
    /// pause timers, 1 for their front slots, 0 for the front flow's records and the front
    /// control packet.
    #[inline]
    pub(in crate::engine) fn roce_prefetch_nic(&self, r: &RoceState, p: u32, stage: u8) {
        let Some(&h) = self.host_of_port.get(p as usize) else {
            return;
        };
        let (Some(nic), Some(ctrl)) = (self.nics.get(h as usize), r.ctrl_q.get(h as usize)) else {
            return;
        };
        match stage {
            2 => {
                prefetch(nic);
                prefetch(ctrl);
                if let Some(rx) = r.pfc_rx.get(p as usize) {
                    // The data and control classes (their timers span two lines).
                    rx.prefetch_pause(0);
                    rx.prefetch_pause(NP as u8 - 1);
                }
            }
            1 => {
                if let Some(f) = nic.active.front() {
                    prefetch(f);
                }
                if let Some(id) = ctrl.front() {
                    prefetch(id);
                }
            }
            _ => {
                if let Some(&id) = ctrl.front()
                    && let Some(pkt) = self.packets.slots_get(id)
                {
                    prefetch(pkt);
                }
                let Some(&f) = nic.active.front() else { return };
                let f = f as usize;
                prefetch_at(&self.flow_state, f);
                prefetch_at(&self.flows, f);
                prefetch_at(&self.records, f);
                prefetch_at(&r.send, f);
            }
        }
    }

    /// A flow starts: register it with its NIC.
    pub(in crate::engine) fn roce_flow_started<Q: EventQueue<Ev>>(&mut self, s: &mut Scheduler<Ev, Q>, f: u32) {
        let src = self.flows[f as usize].src;
        self.rs().send[f as usize].flow_active = true;
        self.nics[src as usize].active.push_back(f);
        let p = self.nics[src as usize].port;
        self.roce_kick(s, p);
    }

    /// NIC wake-up of host `h` (pacing).
    pub(in crate::engine) fn roce_nic_wake<Q: EventQueue<Ev>>(&mut self, s: &mut Scheduler<Ev, Q>, h: u32) {
        let p = self.nics[h as usize].port;
        self.roce_kick(s, p);
    }

    /// A packet came out of port `p`'s pipe into a RoCEv2 endpoint: data for the receiver, or
    /// a CNP, ACK or NACK for the sender.
    #[inline]
    pub(in crate::engine) fn roce_host_arrive<Q: EventQueue<Ev>>(&mut self, s: &mut Scheduler<Ev, Q>, p: u32, id: u32) {
        let now = s.now();
        let (node, x) = {
            let port = &self.ports[p as usize];
            (port.peer_node, port.peer_port)
        };
        let pkt = *self.packets.get(id);
        debug_assert!(self.is_host[node as usize]);
        // (The link's flow control is the same both ways: read on the sender's port.)
        if self.ports[p as usize].link_fc == LinkFc::Credit {
            // A GPU inside a server: its port takes the packet and returns the credits.
            self.ib_endpoint_accept(s, x, id);
        }
        match pkt.kind {
            PacketKind::Data => self.roce_receive(s, id),
            PacketKind::Cnp => {
                self.packets.free(id);
                self.rs().totals.cnps_received += 1;
                self.rs().port_stats[x as usize].cnps_rx += 1;
                let f = pkt.flow;
                self.flow_state[f as usize].cc.on_cnp(now);
                self.roce_rearm_flow(s, f);
            }
            PacketKind::Ack => {
                self.roce_on_ack_int(s, pkt.flow, id, pkt.aux);
                self.packets.free(id);
                self.roce_on_ack(s, pkt.flow, pkt.aux, now.since(pkt.sent_at));
            }
            PacketKind::Nack => {
                self.roce_on_ack_int(s, pkt.flow, id, pkt.aux);
                self.packets.free(id);
                let f = pkt.flow;
                self.roce_on_ack(s, f, pkt.aux, now.since(pkt.sent_at));
                // A NACK for an offset already resent since the last go-back is stale
                // (it was triggered by packets sent before the go-back): ignore it; if
                // the resent packet is lost too, the timeout recovers.
                let sent_pos = self.flows[f as usize].size.get() - self.flow_state[f as usize].unsent_bytes;
                let r = self.rr().send[f as usize].rewound_to;
                let stale = r != u64::MAX && r <= pkt.aux && pkt.aux < sent_pos;
                if !stale {
                    self.roce_go_back(s, f);
                }
            }
            PacketKind::FlowControl | PacketKind::Pause => unreachable!("not on a RoCE host path"),
        }
    }
}
