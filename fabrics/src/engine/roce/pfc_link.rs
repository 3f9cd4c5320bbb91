//! PFC on a link (IEEE 802.1Qbb) as the engine runs it: the pausing side's frames (edges from
//! the MMU or a credit device's receive buffer, refreshes, the frame waiting for the port's
//! transmitter ahead of data), the paused side's receiver (what may start, expiries, the pause
//! tree) and the PFC watchdog. The state machines themselves are in `models/pfc/`.

use super::*;

/// Encodes a PFC frame whose pausing priorities all carry the same quanta.
pub(super) fn encode(frame: &PfcFrame) -> u64 {
    let mut pause = 0u8;
    let mut quanta = 0u16;
    for (p, q) in frame.timers() {
        if q > 0 {
            pause |= 1 << p;
            quanta = q;
        }
    }
    frame.enable_mask as u64 | (pause as u64) << 8 | (quanta as u64) << 16
}

pub(super) fn decode(aux: u64) -> PfcFrame {
    let enable = aux as u8;
    let pause = (aux >> 8) as u8;
    let quanta = (aux >> 16) as u16;
    let mut f = PfcFrame::default();
    let mut left = enable;
    while left != 0 {
        let p = left.trailing_zeros() as u8;
        left &= left - 1;
        f.set(p, if pause & (1 << p) != 0 { quanta } else { 0 });
    }
    f
}

/// Merges frame `b` into the pending encoded frame `a` (the newer timer of a priority wins).
pub(super) fn merge(a: u64, b: &PfcFrame) -> u64 {
    let mut f = if a == 0 { PfcFrame::default() } else { decode(a) };
    for (p, q) in b.timers() {
        f.set(p, q);
    }
    encode(&f)
}

impl Fabric {
    /// Makes sure port `x`'s timer fires at `at` or earlier.
    pub(in crate::engine) fn roce_arm_timer<Q: EventQueue<Ev>>(
        &mut self,
        s: &mut Scheduler<Ev, Q>,
        x: u32,
        at: SimTime,
    ) {
        let r = self.rs();
        if r.timer_at[x as usize] <= at {
            return;
        }
        r.timer_at[x as usize] = at;
        let o = self.timer_origin(x);
        s.schedule(at, o, Ev::PortTimer(x));
    }

    /// Port `p` may start a frame of priority `prio` now: the peer has not paused it.
    #[inline(always)]
    pub(in crate::engine) fn roce_may_send(&self, p: u32, prio: u8, now: SimTime) -> bool {
        self.rr().pfc_rx[p as usize].may_send(prio, now)
    }

    /// Sends the PFC frame waiting for port `p`'s transmitter, if any; returns when the port is
    /// free again. A MAC control frame goes ahead of any data.
    #[inline]
    pub(in crate::engine) fn roce_send_pending_pfc<Q: EventQueue<Ev>>(
        &mut self,
        s: &mut Scheduler<Ev, Q>,
        p: u32,
    ) -> Option<SimTime> {
        let pending = self.ports[p as usize].ctrl_pending;
        if pending == 0 {
            return None;
        }
        Some(self.roce_send_pfc_frame(s, p, pending))
    }

    /// Puts the encoded PFC frame `pending` on port `p` now.
    #[inline(never)]
    pub(in crate::engine) fn roce_send_pfc_frame<Q: EventQueue<Ev>>(
        &mut self,
        s: &mut Scheduler<Ev, Q>,
        p: u32,
        pending: u64,
    ) -> SimTime {
        self.ports[p as usize].ctrl_pending = 0;
        let frame = CtrlFrame {
            kind: PacketKind::Pause,
            vl: 0,
            wire_bytes: PAUSE_WIRE_BYTES,
            aux: pending,
        };
        self.transmit_ctrl(s, p, frame)
    }

    /// Port `x` (a credit device's ingress on a PFC link) asks its sender to stop or go on
    /// with priority `prio`.
    pub(in crate::engine) fn roce_pfc_edge<Q: EventQueue<Ev>>(
        &mut self,
        s: &mut Scheduler<Ev, Q>,
        x: u32,
        prio: u8,
        edge: PfcEdge,
    ) {
        self.rs().pending_edges.push((x, prio, edge));
        self.roce_flush_edges(s);
    }

    /// Port `x` has told its sender to stop priority `prio` (and not yet to go on).
    pub(in crate::engine) fn roce_pfc_asserted(&self, x: u32, prio: u8) -> bool {
        self.rr().pfc_tx[x as usize].is_asserted(prio)
    }

    /// Applies the PFC edges collected during an MMU operation: frames to the ingress
    /// ports' transmitters, refresh timers.
    #[inline(always)]
    pub(in crate::engine) fn roce_flush_edges<Q: EventQueue<Ev>>(&mut self, s: &mut Scheduler<Ev, Q>) {
        // Called after every MMU operation, and nearly always with nothing to do: the test
        // stays inline, the loop does not (a call per hop cost 30 instructions).
        if !self.rr().pending_edges.is_empty() {
            self.roce_send_edges(s);
        }
    }

    /// [`Fabric::roce_flush_edges`]'s work: each pending edge to its port's pause sender.
    #[inline(never)]
    fn roce_send_edges<Q: EventQueue<Ev>>(&mut self, s: &mut Scheduler<Ev, Q>) {
        let now = s.now();
        while let Some((x, prio, edge)) = self.rs().pending_edges.pop() {
            let r = self.rs();
            let Some(frame) = r.pfc_tx[x as usize].on_edge(now, prio, edge) else {
                continue;
            };
            let st = &mut r.port_stats[x as usize];
            match edge {
                PfcEdge::Xoff => {
                    st.pause_tx[prio as usize] += 1;
                    r.totals.pause_frames += 1;
                }
                PfcEdge::Xon => {
                    st.resume_tx[prio as usize] += 1;
                    r.totals.resume_frames += 1;
                }
            }
            let next = r.pfc_tx[x as usize].next_timer();
            let port = &mut self.ports[x as usize];
            port.ctrl_pending = merge(port.ctrl_pending, &frame);
            if let Some(t) = next {
                self.roce_arm_timer(s, x, t);
            }
            self.roce_kick(s, x);
        }
    }

    /// A PFC frame (encoded as `aux`) sent by port `from` reaches port `x`.
    pub(in crate::engine) fn roce_on_pause_frame<Q: EventQueue<Ev>>(
        &mut self,
        s: &mut Scheduler<Ev, Q>,
        x: u32,
        from: u32,
        aux: u64,
    ) {
        self.roce_on_pfc(s, x, from, &decode(aux));
    }

    /// A PFC frame sent by port `from` reaches port `x` (which sends back over that link).
    pub(in crate::engine) fn roce_on_pfc<Q: EventQueue<Ev>>(
        &mut self,
        s: &mut Scheduler<Ev, Q>,
        x: u32,
        from: u32,
        frame: &PfcFrame,
    ) {
        let now = s.now();
        let switch_port = self.device[self.ports[x as usize].node as usize] == Device::RoceSwitch;
        let r = self.rs();
        let resumed = r.pfc_rx[x as usize].on_frame(now, frame);
        let mut began = 0u8;
        for (prio, q) in frame.timers() {
            r.port_stats[x as usize].pfc_rx[prio as usize] += 1;
            let i = RoceState::ix(x, prio);
            if q > 0 {
                if r.paused_by[i] == u32::MAX {
                    r.paused_by[i] = from;
                    r.set_paused(x, prio, true);
                    began |= 1 << prio;
                    r.paused_since[i] = now;
                    if let Some(wd) = r.watchdog.get_mut(x as usize)
                        && switch_port
                    {
                        wd.on_pause_state(now, prio, true);
                    }
                }
            } else {
                r.close_pause(x, prio, now);
            }
        }
        while began != 0 {
            let prio = began.trailing_zeros() as u8;
            began &= began - 1;
            self.roce_pause_began(x, prio);
        }
        let r = self.rs();
        if let Some(t) = r.pfc_rx[x as usize].next_expiry(now) {
            self.roce_arm_timer(s, x, t);
        }
        if let Some(t) = self.rr().watchdog.get(x as usize).and_then(|w| w.next_check()) {
            self.roce_arm_timer(s, x, t);
        }
        if resumed != 0 {
            self.roce_kick(s, x);
        }
    }

    /// Port `x`'s timer: PAUSE refreshes (and the deadlock check), pause expiries.
    pub(in crate::engine) fn roce_on_timer<Q: EventQueue<Ev>>(&mut self, s: &mut Scheduler<Ev, Q>, x: u32) {
        let now = s.now();
        if self.rr().timer_at[x as usize] != now {
            return; // superseded by an earlier arming
        }
        let r = self.rs();
        r.timer_at[x as usize] = SimTime::MAX;
        let mut refresh = None;
        if r.pfc_tx[x as usize].next_timer().is_some_and(|t| t <= now)
            && let Some(frame) = r.pfc_tx[x as usize].on_timer(now)
        {
            for (prio, _) in frame.timers() {
                r.port_stats[x as usize].pause_tx[prio as usize] += 1;
                r.totals.pause_frames += 1;
            }
            refresh = Some(frame);
        }
        // Pauses that expired without a RESUME.
        let mut expired = false;
        for prio in 0..NP as u8 {
            let i = RoceState::ix(x, prio);
            if r.paused_by[i] != u32::MAX && r.pfc_rx[x as usize].may_send(prio, now) {
                let until = r.pfc_rx[x as usize].paused_until(prio);
                r.close_pause(x, prio, until);
                expired = true;
            }
        }
        let refreshed = refresh.is_some();
        if let Some(frame) = refresh {
            let port = &mut self.ports[x as usize];
            port.ctrl_pending = merge(port.ctrl_pending, &frame);
        }
        let node = self.ports[x as usize].node as usize;
        if self.device[node] == Device::RoceSwitch
            && self
                .rr()
                .watchdog
                .get(x as usize)
                .is_some_and(|w| w.next_check().is_some_and(|t| t <= now))
        {
            self.roce_watchdog_check(s, x);
        }
        let r = self.rs();
        let next = r.pfc_tx[x as usize]
            .next_timer()
            .unwrap_or(SimTime::MAX)
            .min(r.pfc_rx[x as usize].next_expiry(now).unwrap_or(SimTime::MAX))
            .min(
                r.watchdog
                    .get(x as usize)
                    .and_then(|w| w.next_check())
                    .unwrap_or(SimTime::MAX),
            );
        if next != SimTime::MAX {
            self.roce_arm_timer(s, x, next);
        }
        if refreshed && self.rr().cfg.deadlock_detection && self.rr().deadlock.is_none() {
            self.roce_check_deadlock(now, x);
        }
        if refreshed || expired {
            self.roce_kick(s, x);
        }
    }

    /// PFC watchdog of switch port `x`: priorities paused continuously for the window enter
    /// a storm: their queue is dropped (counted, MMU released, XON edges sent) and arrivals
    /// for them are dropped until the pause ends.
    pub(in crate::engine) fn roce_watchdog_check<Q: EventQueue<Ev>>(&mut self, s: &mut Scheduler<Ev, Q>, x: u32) {
        let now = s.now();
        let mask = self.rs().watchdog[x as usize].check(now);
        let node = self.ports[x as usize].node as usize;
        let base = self.port_base[node];
        for prio in 0..NP as u8 {
            let i = RoceState::ix(x, prio);
            if mask & (1 << prio) == 0 || self.rr().storm[i] {
                continue;
            }
            let r = self.rs();
            r.storm[i] = true;
            r.port_stats[x as usize].watchdog_storms += 1;
            r.totals.watchdog_storms += 1;
            while let Some(QueuedPacket { id, .. }) = self.rs().q[i].ids.pop_front() {
                let pkt = *self.packets.get(id);
                let wire = pkt.wire_bytes as u64;
                let r = self.roce.as_deref_mut().expect("RoCE fabric");
                r.q[i].bytes -= wire;
                let mmu = r.mmu[node].as_mut().expect("a switch has an MMU");
                if let Some(edge) = mmu.release(pkt.ingress_port - base, prio, wire) {
                    r.pending_edges.push((pkt.ingress_port, prio, edge));
                }
                self.roce_count_watchdog_drop(x, id);
                let port = &mut self.ports[x as usize];
                port.queued_bytes -= wire;
                let queued = port.queued_bytes;
                port.stats.queue_bytes.set(now, queued);
            }
            let r = self.rs();
            r.q[i].deficit = 0;
            r.nonempty[x as usize] &= !(1 << prio);
        }
        self.roce_flush_edges(s);
    }

    /// Counts and frees packet `id`, dropped by the PFC watchdog at egress port `x`.
    pub(in crate::engine) fn roce_count_watchdog_drop(&mut self, x: u32, id: u32) {
        let pkt = *self.packets.get(id);
        let port = &mut self.ports[x as usize];
        port.stats.drops += 1;
        port.stats.drop_bytes += pkt.wire_bytes as u64;
        if pkt.kind == PacketKind::Data {
            self.records[pkt.flow as usize].packets_dropped += 1;
            self.totals.packets_dropped += 1;
            self.totals.payload_bytes_dropped += pkt.payload_bytes as u64;
        }
        let r = self.rs();
        r.port_stats[x as usize].drops_watchdog += 1;
        r.totals.drops_watchdog += 1;
        self.packets.free(id);
    }
}
