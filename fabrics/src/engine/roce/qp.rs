//! The RoCEv2 transport: a queue pair per flow that crosses a PFC link. Packet cutting with the
//! go-back-N send offset, the receiver's ACK/NACK/CNP generation, the sender's reaction (the
//! congestion controller's hooks: DCQCN, TIMELY or HPCC in `models/cc/`), the retransmission timer
//! and rate sampling.

use super::*;

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
        if r.flow_timer_at[f as usize] <= at {
            return;
        }
        r.flow_timer_at[f as usize] = at;
        let o = self.flow_timer_origin(f);
        s.schedule(at, o, Ev::FlowTimer(f));
    }

    /// After any congestion-control hook or go-back-N change: keep flow `f`'s timer armed.
    pub(in crate::engine) fn roce_rearm_flow<Q: EventQueue<Ev>>(&mut self, s: &mut Scheduler<Ev, Q>, f: u32) {
        let cc_t = self.flow_state[f as usize].cc.next_timer().unwrap_or(SimTime::MAX);
        let at = cc_t.min(self.rr().rto_at[f as usize]);
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
        let gbn = self.rr().cfg.go_back_n.filter(|_| self.rr().qp[f as usize]);
        let payload = self.packets.get(id).payload_bytes as u64;
        let r = self.rs();
        r.last_tx[f as usize] = (now, wire);
        if seq < r.sent_high[f as usize] {
            r.totals.retransmitted += 1;
        }
        r.sent_high[f as usize] = r.sent_high[f as usize].max(seq + payload);
        if let Some(rto) = gbn
            && r.rto_at[f as usize] == SimTime::MAX
        {
            r.rto_at[f as usize] = now + rto;
        }
        if self.flow_state[f as usize].unsent_bytes > 0 {
            self.nics[h as usize].active.push_back(f);
        } else {
            self.rs().flow_active[f as usize] = false;
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
        let aux = r.rcv_expected[f as usize];
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
        let qp = r.qp[f as usize];
        let gbn = qp && r.cfg.go_back_n.is_some();
        let acks = qp && (r.cfg.acks || gbn || r.cfg.cc.needs_acks());
        // HPCC: the records the data packet collected, for its ACK (read before it is freed).
        let int = r.int.as_ref().map(|t| t.get(id));
        let exp = r.rcv_expected[f as usize];
        let mut reply = None;
        if !gbn || pkt.aux == exp {
            r.rcv_expected[f as usize] += pkt.payload_bytes as u64;
            r.nack_sent[f as usize] = false;
            self.deliver(s, id);
            if acks {
                reply = Some(PacketKind::Ack);
            }
        } else {
            // Out of order (a gap: NACK once per gap) or a duplicate (ACK again).
            r.totals.receiver_discards += 1;
            if pkt.aux > exp && !r.nack_sent[f as usize] {
                r.nack_sent[f as usize] = true;
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
            let last = r.last_cnp[f as usize];
            if last == SimTime::MAX || now >= last + r.cfg.cnp_interval {
                r.last_cnp[f as usize] = now;
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
        let old = r.snd_acked[f as usize];
        if cum > old {
            r.snd_acked[f as usize] = cum;
            if let Some(rto) = r.cfg.go_back_n {
                let size = self.flows[f as usize].size.get();
                let r = self.rs();
                r.rto_at[f as usize] = if cum >= size { SimTime::MAX } else { now + rto };
            }
            self.flow_state[f as usize].cc.on_ack(now, cum - old, rtt);
            let windowed = self.flow_state[f as usize].cc.window_bytes().is_some();
            if windowed || self.rr().gbn_window[f as usize] != u64::MAX {
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
        let (t0, wire) = self.rr().last_tx[f as usize];
        let st = &mut self.flow_state[f as usize];
        if wire == 0 || st.unsent_bytes == 0 {
            return;
        }
        let at = (t0 + serialization_time(Bytes(wire as u64), st.cc.rate())).max(now);
        if at != st.next_send_at && st.next_send_at > now {
            let earlier = at < st.next_send_at;
            st.next_send_at = at;
            if earlier && self.rr().flow_active[f as usize] {
                let src = self.flows[f as usize].src;
                self.nic_wake_at(s, src, at);
            }
        }
    }

    /// Go-back-N: resend flow `f` from the first byte the receiver lacks.
    pub(in crate::engine) fn roce_go_back<Q: EventQueue<Ev>>(&mut self, s: &mut Scheduler<Ev, Q>, f: u32) {
        let size = self.flows[f as usize].size.get();
        let acked = self.rr().snd_acked[f as usize];
        if acked >= size {
            return;
        }
        self.flow_state[f as usize].unsent_bytes = size - acked;
        self.rs().rewound_to[f as usize] = acked;
        let src = self.flows[f as usize].src;
        if !self.rr().flow_active[f as usize] {
            self.rs().flow_active[f as usize] = true;
            self.nics[src as usize].active.push_back(f);
        }
        let p = self.nics[src as usize].port;
        self.roce_kick(s, p);
    }

    /// Flow `f`'s timer: congestion-control timer (rate increase: re-pace the waiting
    /// packet), go-back-N timeout.
    pub(in crate::engine) fn roce_on_flow_timer<Q: EventQueue<Ev>>(&mut self, s: &mut Scheduler<Ev, Q>, f: u32) {
        let now = s.now();
        if self.rr().flow_timer_at[f as usize] != now {
            return;
        }
        self.rs().flow_timer_at[f as usize] = SimTime::MAX;
        let st = &mut self.flow_state[f as usize];
        if st.cc.next_timer().is_some_and(|t| t <= now) {
            st.cc.on_timer(now);
            // The next packet was paced at the old rate: bring it forward to the new one.
            let (t0, wire) = self.rr().last_tx[f as usize];
            let st = &mut self.flow_state[f as usize];
            if wire > 0 {
                let at = (t0 + serialization_time(Bytes(wire as u64), st.cc.rate())).max(now);
                if at < st.next_send_at {
                    st.next_send_at = at;
                    let src = self.flows[f as usize].src;
                    if self.rr().flow_active[f as usize] {
                        self.nic_wake_at(s, src, at);
                    }
                }
            }
        }
        if self.rr().rto_at[f as usize] <= now {
            let r = self.rs();
            r.totals.timeouts += 1;
            r.rto_at[f as usize] = now + r.cfg.go_back_n.expect("a timeout needs go-back-N");
            self.roce_go_back(s, f);
        }
        self.roce_rearm_flow(s, f);
    }
}
