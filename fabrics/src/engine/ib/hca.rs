//! The endpoint on credit links: an InfiniBand HCA with per-VL send queues served round-robin,
//! IB congestion control (BECN from the destination slows the flow, `ib/cc.rs`), or a GPU doing
//! load/store over NVLink/PCIe.

use super::*;

/// The endpoint on credit links (`Device::CreditHost`): an InfiniBand HCA, or a GPU doing
/// load/store inside a server.
pub(in crate::engine) struct CreditHost;

impl DeviceModel for CreditHost {
    /// Take the packet into memory and return its credits (a CNP slows the flow).
    #[inline]
    fn arrive<Q: EventQueue<Ev>>(f: &mut Fabric, s: &mut Scheduler<Ev, Q>, p: u32, id: u32) {
        f.ib_host_arrive(s, p, id);
    }
    #[inline]
    fn kick<Q: EventQueue<Ev>>(f: &mut Fabric, s: &mut Scheduler<Ev, Q>, p: u32) {
        let h = f.host_of_node[f.ports[p as usize].node as usize];
        f.ib_nic_send(s, h);
    }
    #[inline]
    fn tx_done<Q: EventQueue<Ev>>(f: &mut Fabric, s: &mut Scheduler<Ev, Q>, p: u32) {
        f.ib_on_txdone(s, p);
    }
    #[inline]
    fn flow_started<Q: EventQueue<Ev>>(f: &mut Fabric, s: &mut Scheduler<Ev, Q>, h: u32, i: u32) {
        f.ib_flow_started(i);
        f.ib_nic_send(s, h);
    }
    #[inline]
    fn nic_wake<Q: EventQueue<Ev>>(f: &mut Fabric, s: &mut Scheduler<Ev, Q>, h: u32) {
        f.ib_nic_send(s, h);
    }
}

impl Fabric {
    /// A packet came out of port `p`'s pipe into an endpoint on a credit link: into memory at
    /// once, its credits returned; a congestion notification slows its flow, a FECN-marked
    /// packet makes the destination send one.
    #[inline]
    pub(in crate::engine) fn ib_host_arrive<Q: EventQueue<Ev>>(&mut self, s: &mut Scheduler<Ev, Q>, p: u32, id: u32) {
        let now = s.now();
        let x = self.ports[p as usize].peer_port;
        let pkt = *self.packets.get(id);
        let vl = pkt.vl;
        self.ib_endpoint_accept(s, x, id);
        if pkt.kind == PacketKind::Cnp {
            self.packets.free(id);
            self.ibs().totals.becn_received += 1;
            let st = &mut self.flow_state[pkt.flow as usize];
            st.cc.on_congestion_signal(now);
            // The flow may have been waiting on its old rate; let the NIC look again.
            let src = self.flows[pkt.flow as usize].src;
            self.ib_nic_send(s, src);
            return;
        }
        if pkt.marked && self.ibr().cfg.cc.is_some() {
            self.ib_queue_cnp(s, pkt.flow, vl);
        }
        self.deliver(s, id);
    }

    /// The destination of a FECN-marked packet of `flow` sends a congestion notification.
    pub(in crate::engine) fn ib_queue_cnp<Q: EventQueue<Ev>>(&mut self, s: &mut Scheduler<Ev, Q>, flow: u32, vl: u8) {
        let now = s.now();
        let f = self.flows[flow as usize];
        let id = self.packets.alloc(Packet {
            kind: PacketKind::Cnp,
            flow,
            dst_host: f.src,
            wire_bytes: crate::ib::link::BASE_HEADER_BYTES,
            vl,
            // Reverse direction of the flow: its own ECMP entropy.
            flow_hash: self.flow_hash_of(flow).rotate_left(17),
            sent_at: now,
            ..Packet::control()
        });
        let ib = self.ibs();
        ib.totals.becn_sent += 1;
        ib.cnp_queue[f.dst as usize].push_back(id);
        self.ib_nic_send(s, f.dst);
    }

    /// Registers a started flow with its HCA's VL queue.
    pub(in crate::engine) fn ib_flow_started(&mut self, flow: u32) {
        let f = self.flows[flow as usize];
        let ib = self.ibs();
        let vl = ib.cfg.sl2vl[f.class as usize & 15];
        let q = ib.hf(f.src, vl);
        ib.host_flows[q].push_back(flow);
    }

    /// HCA `h` sends if its port is idle: flow-control packets first, then congestion
    /// notifications, then data by VL arbitration and round-robin over the VL's flows.
    pub(in crate::engine) fn ib_nic_send<Q: EventQueue<Ev>>(&mut self, s: &mut Scheduler<Ev, Q>, h: u32) {
        let now = s.now();
        let Some(p) = self.nic_idle_port(s, h) else {
            // It wakes when its port is free; a flow-control packet arriving then may come
            // first (`ib_nic_busy_until`).
            let p = self.nics[h as usize].port;
            let until = self.ports[p as usize].busy_until;
            self.ib_wait_credits(s, p, until);
            return;
        };
        self.ib_device_looks(s, p);
        if let Some(vl) = self.ibs().out[p as usize].ctrl.pop_front() {
            let done = self.ib_send_fc(s, p, vl);
            // Woken at its end only if something else waits (a later send while the port is
            // busy arms the wake itself, `nic_idle_port`).
            if self.ib_nic_has_more(h, p) {
                self.ib_nic_busy_until(s, h, p, done);
            }
            return;
        }
        if let Some(&id) = self.ibr().cnp_queue[h as usize].front() {
            let vl = self.packets.get(id).vl;
            let b = self.pkt_blocks_on(p, id) as u64;
            if b <= self.ibr().avail(p, vl) {
                self.ibs().cnp_queue[h as usize].pop_front();
                let o = self.ibr().ix(p, vl);
                self.ibs().tx[o].fctbs += b;
                let done = self.transmit(s, p, id, SimTime::ZERO);
                self.nic_wake_at(s, h, done);
                return;
            }
            // No credits for the notification: data on other VLs may still go.
        }
        // Per VL: the first flow allowed to send now (rotating the others behind it), and
        // whether credits cover its next packet.
        let nv = self.ibr().nv as u8;
        let mtu = self.cfg.mtu_bytes as u64;
        let header = self.cfg.header_bytes;
        let mut ready = 0u16;
        let mut earliest = SimTime::MAX;
        let mut cand = [u32::MAX; 16];
        for vl in 0..nv {
            let q = self.ibr().hf(h, vl);
            let n = self.ibr().host_flows[q].len();
            for _ in 0..n {
                let f = self.ibr().host_flows[q][0];
                let st = &self.flow_state[f as usize];
                if st.next_send_at <= now {
                    cand[vl as usize] = f;
                    break;
                }
                earliest = earliest.min(st.next_send_at);
                self.ibs().host_flows[q].rotate_left(1);
            }
            let f = cand[vl as usize];
            if f == u32::MAX {
                continue;
            }
            let payload = self.flow_state[f as usize].unsent_bytes.min(mtu) as u32;
            if self.blocks_on(p, payload, payload + header) as u64 <= self.ibr().avail(p, vl) {
                ready |= 1 << vl;
                self.ibs().stall_end(p, vl, now);
            } else if !self.ibr().stall_open(p, vl) {
                let cause = self.ib_stall_cause(s, p, vl);
                self.ibs().stall_begin(p, vl, now, cause);
            }
        }
        if ready == 0 {
            if earliest != SimTime::MAX {
                self.nic_wake_at(s, h, earliest);
            }
            // Flows short of credits are woken by the flow-control packet that brings them
            // (any flow: the wake also rotates those not yet allowed to send).
            if self.ib_nic_has_more(h, p) {
                self.ib_wait_credits(s, p, now);
            }
            return;
        }
        let ib = self.ibs();
        let is_ready = |vl: u8| ready & (1 << vl) != 0;
        let low_waiting = VlArbiter::low_ready(&ib.cfg.vlarb, is_ready);
        let vl = ib.out[p as usize]
            .arb
            .pick(&ib.cfg.vlarb, is_ready)
            .expect("a ready VL");
        let q = ib.hf(h, vl);
        let f = ib.host_flows[q].pop_front().expect("candidate flow");
        let id = self.cut_packet(now, f, vl);
        let b = self.pkt_blocks_on(p, id);
        let ib = self.ibs();
        ib.out[p as usize].arb.charge(b, low_waiting);
        let o = ib.ix(p, vl);
        ib.tx[o].fctbs += b as u64;
        if self.flow_state[f as usize].unsent_bytes > 0 {
            self.ibs().host_flows[q].push_back(f);
        }
        let done = self.transmit(s, p, id, SimTime::ZERO);
        if self.ib_nic_has_more(h, p) {
            self.ib_nic_busy_until(s, h, p, done);
        }
    }

    /// HCA `h` is sending on port `p` until `done` and has more to send: it wakes then. A
    /// flow-control packet arriving at that very time but before the wake in the order
    /// finds the port free and lets the HCA send at once (the port has no `TxDone` that
    /// holds it back, unlike a switch's).
    fn ib_nic_busy_until<Q: EventQueue<Ev>>(&mut self, s: &mut Scheduler<Ev, Q>, h: u32, p: u32, done: SimTime) {
        self.nic_wake_at(s, h, done);
        self.ib_wait_credits(s, p, done);
    }

    /// HCA `h` (port `p`) has flows, notifications or flow-control packets left to send.
    fn ib_nic_has_more(&self, h: u32, p: u32) -> bool {
        let ib = self.ibr();
        ib.host_queues(h).iter().any(|q| !q.is_empty())
            || !ib.cnp_queue[h as usize].is_empty()
            || !ib.out[p as usize].ctrl.is_empty()
    }
}
