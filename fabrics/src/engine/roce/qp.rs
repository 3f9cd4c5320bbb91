//! The RoCEv2 transport: a queue pair per flow that crosses a PFC link. Packet cutting with the
//! go-back-N send offset, the receiver's ACK/NACK/CNP generation, the sender's reaction (the
//! congestion controller's hooks: DCQCN, TIMELY or HPCC in `models/cc/`), the retransmission timer
//! and rate sampling.

use super::*;

/// The sender side of a flow's queue pair: what a send, an ACK and the flow's timer read and
/// write together, so it is one cache line (a layout test pins it); by flow index in
/// `RoceState`. Its receiver side is [`QpRecv`], kept by the destination.
#[derive(Clone, Copy, Debug)]
#[repr(C, align(64))]
pub(super) struct QpSend {
    /// When the flow's `FlowTimer` is armed for (`SimTime::MAX`: not armed).
    pub(super) flow_timer_at: SimTime,
    /// When the last packet was sent, and its wire bytes (TIMELY's and HPCC's pacing).
    last_tx_at: SimTime,
    last_tx_wire: u32,
    /// The flow runs a RoCEv2 queue pair (its path crosses a PFC link). The other flows are
    /// GPU load/store traffic inside a server: line rate, no ACK, CNP or go-back-N.
    pub(super) qp: bool,
    /// The flow is in its NIC's round-robin (it has data it may send).
    pub(super) flow_active: bool,
    /// Bytes acknowledged (cumulative).
    pub(super) snd_acked: u64,
    /// The go-back-N timeout (`SimTime::MAX`: not armed).
    pub(super) rto_at: SimTime,
    /// Highest byte offset sent (below it, a send is a retransmission).
    pub(super) sent_high: u64,
    /// Offset of the last go-back (`u64::MAX`: none yet).
    pub(super) rewound_to: u64,
    /// Go-back-N send window, bytes (`u64::MAX`: none).
    pub(super) gbn_window: u64,
}

impl QpSend {
    pub(super) fn new(qp: bool, gbn_window: u64) -> QpSend {
        QpSend {
            flow_timer_at: SimTime::MAX,
            last_tx_at: SimTime::ZERO,
            last_tx_wire: 0,
            qp,
            flow_active: false,
            snd_acked: 0,
            rto_at: SimTime::MAX,
            sent_high: 0,
            rewound_to: u64::MAX,
            gbn_window,
        }
    }

    /// When the last packet was sent and its wire bytes.
    pub(super) fn last_tx(&self) -> (SimTime, u32) {
        (self.last_tx_at, self.last_tx_wire)
    }
}

/// The receiver side of a flow's queue pair, kept by its destination.
#[derive(Clone, Copy, Debug)]
pub(super) struct QpRecv {
    /// When the last CNP was sent (`SimTime::MAX`: none yet).
    pub(super) last_cnp: SimTime,
    /// The next byte offset expected in order.
    pub(super) rcv_expected: u64,
    /// A NACK was sent for the current gap (one per gap).
    pub(super) nack_sent: bool,
}

impl Default for QpRecv {
    fn default() -> Self {
        QpRecv {
            last_cnp: SimTime::MAX,
            rcv_expected: 0,
            nack_sent: false,
        }
    }
}

impl Fabric {
    /// The base RTT of flow `f`'s path, ps: per hop both ways, propagation and port-to-port
    /// latency; one maximum frame forward and one ACK (`ack_wire` bytes) back of serialization.
    pub(in crate::engine) fn base_rtt_ps(&self, f: u32, ack_wire: u32) -> u64 {
        let max_wire = (self.cfg.mtu_bytes + self.cfg.header_bytes) as u64;
        self.flow_path(f)
            .iter()
            .map(|&p| {
                let port = &self.ports[p as usize];
                2 * (port.delay.ps() + port.peer_latency.ps())
                    + serialization_time(Bytes(max_wire), port.rate).ps()
                    + serialization_time(Bytes(ack_wire as u64), port.rate).ps()
            })
            .sum()
    }

    /// [`GbnWindow::Bdp`] of flow `f`, payload bytes: the NIC line rate times the base RTT
    /// of its path ([`Fabric::base_rtt_ps`]), rounded up to whole frames.
    pub(in crate::engine) fn bdp_window_bytes(&self, f: u32, line: BitsPerSec, ack_wire: u32) -> u64 {
        let max_wire = (self.cfg.mtu_bytes + self.cfg.header_bytes) as u64;
        let rtt_ps = self.base_rtt_ps(f, ack_wire);
        let bdp = (rtt_ps as u128 * line.0 as u128).div_ceil(8 * sim_core::time::PS_PER_S as u128) as u64;
        bdp.div_ceil(max_wire).max(1) * self.cfg.mtu_bytes as u64
    }

    pub(in crate::engine) fn flow_timer_origin(&self, f: u32) -> Origin {
        Origin(4 * self.ports.len() as u32 + self.nics.len() as u32 + 1 + f)
    }

    /// Origin of the rate-sampling event (after every flow timer).
    pub(in crate::engine) fn rate_sample_origin(&self) -> Origin {
        self.flow_timer_origin(self.flows.len() as u32)
    }

    /// One rate sample of every flow that is sending (started, not finished), then the next
    /// sampling event one period later, unless the bound is reached, every flow is done, or
    /// nothing else is pending (the run would otherwise never drain).
    pub(in crate::engine) fn roce_on_rate_sample<Q: EventQueue<Ev>>(&mut self, s: &mut Scheduler<Ev, Q>) {
        let now = s.now();
        let r = self.roce.as_deref_mut().expect("RoCE fabric");
        let Some(period) = r.cfg.rate_sample else { return };
        for (f, rec) in self.records.iter().enumerate() {
            if rec.first_sent.is_none() || rec.finish.is_some() {
                continue;
            }
            if r.rate_samples.len() as u64 >= r.cfg.rate_sample_max_rows {
                r.rate_samples_truncated = true;
                return;
            }
            let rate = crate::models::CongestionControl::rate(&self.flow_state[f].cc).0;
            r.rate_samples.push((f as u32, now, rate));
        }
        let all_done = self.totals.flows_completed as usize == self.flows.len();
        if !all_done && s.pending() > 0 {
            let o = self.rate_sample_origin();
            s.schedule(now + period, o, Ev::RateSample);
        }
    }

    /// Makes sure flow `f`'s timer fires at `at` or earlier.
    pub(in crate::engine) fn roce_arm_flow_timer<Q: EventQueue<Ev>>(
        &mut self,
        s: &mut Scheduler<Ev, Q>,
        f: u32,
        at: SimTime,
    ) {
        let r = self.rs();
        if r.send[f as usize].flow_timer_at <= at {
            return;
        }
        r.send[f as usize].flow_timer_at = at;
        let o = self.flow_timer_origin(f);
        s.schedule(at, o, Ev::FlowTimer(f));
    }

    /// After any congestion-control hook or go-back-N change: keep flow `f`'s timer armed.
    pub(in crate::engine) fn roce_rearm_flow<Q: EventQueue<Ev>>(&mut self, s: &mut Scheduler<Ev, Q>, f: u32) {
        let cc_t = self.flow_state[f as usize].cc.next_timer().unwrap_or(SimTime::MAX);
        let at = cc_t.min(self.rr().send[f as usize].rto_at);
        if at != SimTime::MAX {
            self.roce_arm_flow_timer(s, f, at.max(s.now()));
        }
    }

    /// Cuts flow `f`'s next packet (go-back-N: at its send offset), keeping the flow active
    /// while it has more to send.
    pub(in crate::engine) fn roce_cut<Q: EventQueue<Ev>>(&mut self, s: &mut Scheduler<Ev, Q>, h: u32, f: u32) -> u32 {
        let now = s.now();
        let prio = self.flows[f as usize].class;
        let size = self.flows[f as usize].size.get();
        let seq = size - self.flow_state[f as usize].unsent_bytes;
        let id = self.cut_packet(now, f, prio);
        let wire = self.packets.get(id).wire_bytes;
        self.packets.get_mut(id).aux = seq;
        if let Some(int) = self.rs().int.as_mut() {
            int.clear(id);
        }
        let gbn = self.rr().cfg.go_back_n.filter(|_| self.rr().send[f as usize].qp);
        let payload = self.packets.get(id).payload_bytes as u64;
        let r = self.rs();
        let qp = &mut r.send[f as usize];
        (qp.last_tx_at, qp.last_tx_wire) = (now, wire);
        let resent = seq < qp.sent_high;
        qp.sent_high = qp.sent_high.max(seq + payload);
        if let Some(rto) = gbn
            && qp.rto_at == SimTime::MAX
        {
            qp.rto_at = now + rto;
        }
        if resent {
            r.totals.retransmitted += 1;
        }
        if self.flow_state[f as usize].unsent_bytes > 0 {
            self.nics[h as usize].active.push_back(f);
        } else {
            self.rs().send[f as usize].flow_active = false;
        }
        self.roce_rearm_flow(s, f);
        id
    }

    /// The receiver of flow `f` sends a CNP, ACK or NACK (`echo`: the send time of the
    /// packet it answers, for the sender's RTT sample) on the control priority; returns its id.
    pub(in crate::engine) fn roce_send_control<Q: EventQueue<Ev>>(
        &mut self,
        s: &mut Scheduler<Ev, Q>,
        f: u32,
        kind: PacketKind,
        echo: SimTime,
    ) -> u32 {
        let fl = self.flows[f as usize];
        let nic_port = self.nics[fl.dst as usize].port;
        let r = self.rs();
        let (cnp_wire, ack_wire) = r.ctrl_wire;
        let prio = r.cfg.control_priority;
        let aux = r.recv[f as usize].rcv_expected;
        let wire = match kind {
            PacketKind::Cnp => {
                r.totals.cnps_sent += 1;
                r.port_stats[nic_port as usize].cnps_tx += 1;
                cnp_wire
            }
            PacketKind::Ack => {
                r.totals.acks_sent += 1;
                ack_wire
            }
            _ => {
                r.totals.nacks_sent += 1;
                ack_wire
            }
        };
        let id = self.packets.alloc(Packet {
            kind,
            flow: f,
            dst_host: fl.src,
            wire_bytes: wire,
            // Reverse direction of the flow: its own ECMP entropy (another UDP source port).
            flow_hash: self.flow_hash_of(f).rotate_left(17),
            sent_at: echo,
            aux,
            vl: prio,
            ..Packet::control()
        });
        self.rs().ctrl_q[fl.dst as usize].push_back(id);
        let p = self.nics[fl.dst as usize].port;
        self.roce_kick(s, p);
        id
    }

    /// A data packet reaches its destination NIC: deliver (in order, under go-back-N), send
    /// a CNP for a CE mark (at most one per `cnp_interval` per flow), ACK or NACK.
    pub(in crate::engine) fn roce_receive<Q: EventQueue<Ev>>(&mut self, s: &mut Scheduler<Ev, Q>, id: u32) {
        let now = s.now();
        let pkt = *self.packets.get(id);
        let f = pkt.flow;
        let r = self.rs();
        // Load/store flows inside a server have no queue pair: no ACK, no go-back-N.
        let qp = r.send[f as usize].qp;
        let gbn = qp && r.cfg.go_back_n.is_some();
        let acks = qp && (r.cfg.acks || gbn || r.cfg.cc.needs_acks());
        // HPCC: the records the data packet collected, for its ACK (read before it is freed).
        let int = r.int.as_ref().map(|t| t.get(id));
        let exp = r.recv[f as usize].rcv_expected;
        let mut reply = None;
        if !gbn || pkt.aux == exp {
            r.recv[f as usize].rcv_expected += pkt.payload_bytes as u64;
            r.recv[f as usize].nack_sent = false;
            self.deliver(s, id);
            if acks {
                reply = Some(PacketKind::Ack);
            }
        } else {
            // Out of order (a gap: NACK once per gap) or a duplicate (ACK again).
            r.totals.receiver_discards += 1;
            if pkt.aux > exp && !r.recv[f as usize].nack_sent {
                r.recv[f as usize].nack_sent = true;
                reply = Some(PacketKind::Nack);
            } else if pkt.aux < exp {
                reply = Some(PacketKind::Ack);
            }
            self.records[f as usize].packets_dropped += 1;
            self.totals.packets_dropped += 1;
            self.totals.payload_bytes_dropped += pkt.payload_bytes as u64;
            self.packets.free(id);
        }
        if pkt.marked {
            let r = self.rs();
            let last = r.recv[f as usize].last_cnp;
            if last == SimTime::MAX || now >= last + r.cfg.cnp_interval {
                r.recv[f as usize].last_cnp = now;
                let _ = self.roce_send_control(s, f, PacketKind::Cnp, now);
            }
        }
        if let Some(k) = reply {
            let ack = self.roce_send_control(s, f, k, pkt.sent_at);
            if let Some(stack) = int {
                self.rs().int.as_mut().expect("INT on").set(ack, stack);
            }
        }
    }

    /// An ACK or NACK for flow `f` says the receiver has `cum` bytes in order.
    pub(in crate::engine) fn roce_on_ack<Q: EventQueue<Ev>>(
        &mut self,
        s: &mut Scheduler<Ev, Q>,
        f: u32,
        cum: u64,
        rtt: Duration,
    ) {
        let now = s.now();
        let r = self.rs();
        let old = r.send[f as usize].snd_acked;
        if cum > old {
            r.send[f as usize].snd_acked = cum;
            if let Some(rto) = r.cfg.go_back_n {
                let size = self.flows[f as usize].size.get();
                let r = self.rs();
                r.send[f as usize].rto_at = if cum >= size { SimTime::MAX } else { now + rto };
            }
            self.flow_state[f as usize].cc.on_ack(now, cum - old, rtt);
            let windowed = self.flow_state[f as usize].cc.window_bytes().is_some();
            if windowed || self.rr().send[f as usize].gbn_window != u64::MAX {
                let src = self.flows[f as usize].src;
                let p = self.nics[src as usize].port;
                self.roce_kick(s, p);
            }
        }
        self.roce_rearm_flow(s, f);
    }

    /// An ACK or NACK (`id`, acknowledging `cum` bytes) of flow `f` brings INT records: the
    /// controller reacts and the flow's next packet is re-paced at the new rate (earlier or
    /// later; HPCC-sim `RdmaHw::ChangeRate`). Nothing without INT.
    pub(in crate::engine) fn roce_on_ack_int<Q: EventQueue<Ev>>(
        &mut self,
        s: &mut Scheduler<Ev, Q>,
        f: u32,
        id: u32,
        cum: u64,
    ) {
        let Some(stack) = self.rr().int.as_ref().map(|t| t.get(id)) else {
            return;
        };
        let now = s.now();
        let snd_nxt = self.flows[f as usize].size.get() - self.flow_state[f as usize].unsent_bytes;
        let st = &mut self.flow_state[f as usize];
        st.cc.on_ack_int(now, cum, snd_nxt, stack.hops());
        let (t0, wire) = self.rr().send[f as usize].last_tx();
        let st = &mut self.flow_state[f as usize];
        if wire == 0 || st.unsent_bytes == 0 {
            return;
        }
        let at = (t0 + serialization_time(Bytes(wire as u64), st.cc.rate())).max(now);
        if at != st.next_send_at && st.next_send_at > now {
            let earlier = at < st.next_send_at;
            st.next_send_at = at;
            if earlier && self.rr().send[f as usize].flow_active {
                let src = self.flows[f as usize].src;
                self.nic_wake_at(s, src, at);
            }
        }
    }

    /// Go-back-N: resend flow `f` from the first byte the receiver lacks.
    pub(in crate::engine) fn roce_go_back<Q: EventQueue<Ev>>(&mut self, s: &mut Scheduler<Ev, Q>, f: u32) {
        let size = self.flows[f as usize].size.get();
        let acked = self.rr().send[f as usize].snd_acked;
        if acked >= size {
            return;
        }
        self.flow_state[f as usize].unsent_bytes = size - acked;
        self.rs().send[f as usize].rewound_to = acked;
        let src = self.flows[f as usize].src;
        if !self.rr().send[f as usize].flow_active {
            self.rs().send[f as usize].flow_active = true;
            self.nics[src as usize].active.push_back(f);
        }
        let p = self.nics[src as usize].port;
        self.roce_kick(s, p);
    }

    /// Flow `f`'s timer: congestion-control timer (rate increase: re-pace the waiting
    /// packet), go-back-N timeout.
    pub(in crate::engine) fn roce_on_flow_timer<Q: EventQueue<Ev>>(&mut self, s: &mut Scheduler<Ev, Q>, f: u32) {
        let now = s.now();
        if self.rr().send[f as usize].flow_timer_at != now {
            return;
        }
        self.rs().send[f as usize].flow_timer_at = SimTime::MAX;
        let st = &mut self.flow_state[f as usize];
        if st.cc.next_timer().is_some_and(|t| t <= now) {
            st.cc.on_timer(now);
            // The next packet was paced at the old rate: bring it forward to the new one.
            let (t0, wire) = self.rr().send[f as usize].last_tx();
            let st = &mut self.flow_state[f as usize];
            if wire > 0 {
                let at = (t0 + serialization_time(Bytes(wire as u64), st.cc.rate())).max(now);
                if at < st.next_send_at {
                    st.next_send_at = at;
                    let src = self.flows[f as usize].src;
                    if self.rr().send[f as usize].flow_active {
                        self.nic_wake_at(s, src, at);
                    }
                }
            }
        }
        if self.rr().send[f as usize].rto_at <= now {
            let r = self.rs();
            r.totals.timeouts += 1;
            r.send[f as usize].rto_at = now + r.cfg.go_back_n.expect("a timeout needs go-back-N");
            self.roce_go_back(s, f);
        }
        self.roce_rearm_flow(s, f);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_queue_pairs_sender_side_is_one_cache_line() {
        // A send, an ACK and the flow's timer read it together; the NIC's prefetch asks for
        // one line.
        assert_eq!(std::mem::size_of::<QpSend>(), 64);
        assert_eq!(std::mem::align_of::<QpSend>(), 64);
    }
}
