//! Credit-based link-level flow control as the engine runs it (IBA vol. 1 §7.9.4; also NVLink
//! flits and PCIe data credits inside servers): what a packet costs on a link in credit units,
//! the sender's check and charge, the receiver's accounting and its flow-control packets under
//! the update policy, and a credit device's receive buffer on a PFC link (a NIC's network side).

use super::*;
use crate::models::credit::{CreditUpdate, LaneView, Update};

impl Fabric {
    /// Credits (blocks) a packet of `payload`/`wire` bytes takes on port `p`'s link: the
    /// link's own framing of it in credit units (NVLink flits and PCIe TLPs inside a cluster's
    /// servers, the packet as cut elsewhere).
    #[inline]
    pub(in crate::engine) fn blocks_on(&self, p: u32, payload: u32, wire: u32) -> u32 {
        let framed = self.ports[p as usize].framing.wire_bytes(payload, wire);
        self.ibr().cfg.credits(framed)
    }

    /// Credits on port `p`'s lane `vl` cover a packet of `payload`/`wire` bytes.
    #[inline]
    pub(in crate::engine) fn ib_credits_cover(&self, p: u32, vl: u8, payload: u32, wire: u32) -> bool {
        self.blocks_on(p, payload, wire) as u64 <= self.ibr().avail(p, vl)
    }

    /// Packet `id` starts on credit port `p` (by a device other than the credit devices of
    /// this file): its credits are spent.
    pub(in crate::engine) fn ib_charge_credits(&mut self, p: u32, id: u32) {
        let b = self.pkt_blocks_on(p, id) as u64;
        let vl = self.packets.get(id).vl;
        let ib = self.ibs();
        let o = ib.ix(p, vl);
        ib.tx[o].fctbs += b;
    }

    /// Sends the next flow-control packet queued on port `p`, if any; returns when the port is
    /// free again.
    pub(in crate::engine) fn ib_send_queued_fc<Q: EventQueue<Ev>>(
        &mut self,
        s: &mut Scheduler<Ev, Q>,
        p: u32,
    ) -> Option<SimTime> {
        let vl = self.ibs().out[p as usize].ctrl.pop_front()?;
        Some(self.ib_send_fc(s, p, vl))
    }

    /// [`Fabric::blocks_on`] for packet `id`. Always inlined: a call on every departure
    /// (its caller's size decides otherwise) cost 1 % of the instructions.
    #[inline(always)]
    pub(in crate::engine) fn pkt_blocks_on(&self, p: u32, id: u32) -> u32 {
        let pk = self.packets.get(id);
        self.blocks_on(p, pk.payload_bytes, pk.wire_bytes)
    }

    /// Sends the flow-control packet for (`x`, `vl`): advertises `abr + free blocks`.
    pub(in crate::engine) fn ib_send_fc<Q: EventQueue<Ev>>(
        &mut self,
        s: &mut Scheduler<Ev, Q>,
        x: u32,
        vl: u8,
    ) -> SimTime {
        let now = s.now();
        let ib = self.ibs();
        let i = ib.ix(x, vl);
        // Shared pool: the VL this update is for borrows whatever the pool has free, and this
        // update advertises it. FCCL only ever grows, so lent blocks come back to the pool
        // only as that VL's packets leave (`ib_free_input`); the next update lends them again,
        // to whichever VL sends first. HCA ports have no pool.
        let lend = ib.pool_free[x as usize];
        if lend > 0 {
            ib.pool_free[x as usize] = 0;
            ib.rx[i].pool_lent += lend;
            ib.rx[i].free_blocks += lend;
        }
        let fccl = ib.rx[i].abr + (ib.rx[i].free_blocks as u64).min(ib.cfg.max_credit_window);
        ib.rx[i].fc_state = FcState::Idle;
        ib.rx[i].fc_last_sent = now;
        ib.rx[i].fc_last_fccl = fccl;
        ib.port_stats[x as usize].fc_packets_tx += 1;
        ib.totals.fc_packets += 1;
        let frame = CtrlFrame {
            kind: PacketKind::FlowControl,
            vl,
            wire_bytes: ib.cfg.fc_packet_bytes,
            aux: fccl,
        };
        self.transmit_ctrl(s, x, frame)
    }

    /// Buffer space of ingress (`x`, `vl`) changed: schedule a flow-control packet under the
    /// update policy.
    pub(in crate::engine) fn ib_credit_update<Q: EventQueue<Ev>>(&mut self, s: &mut Scheduler<Ev, Q>, x: u32, vl: u8) {
        match self.ports[x as usize].link_fc {
            LinkFc::Credit => {}
            // No credits cross a PFC link: freed space may end a PAUSE instead.
            LinkFc::Pfc => return self.credit_pfc_check(s, x, vl),
            // Nor a lossy Ethernet link: nobody is told.
            LinkFc::None => return,
        }
        let now = s.now();
        let ib = self.ibs();
        let i = ib.ix(x, vl);
        if ib.rx[i].fc_state == FcState::Queued {
            return; // an update is already on its way; it will carry the newest value
        }
        let advertisable = ib.rx[i].abr + (ib.rx[i].free_blocks as u64).min(ib.cfg.max_credit_window);
        let lane = LaneView {
            now,
            last_sent: (ib.rx[i].fc_last_sent > SimTime::ZERO).then_some(ib.rx[i].fc_last_sent),
            unadvertised_blocks: advertisable.saturating_sub(ib.rx[i].fc_last_fccl),
        };
        if let Update::At(due) = ib.cfg.credit_update.decide(&lane) {
            // Deferred (again): the earlier of the deadlines stands.
            if ib.rx[i].fc_state == FcState::Idle || due < ib.rx[i].fc_due {
                ib.rx[i].fc_due = due;
            }
            ib.rx[i].fc_state = FcState::Deferred;
            let due = ib.rx[i].fc_due;
            self.ib_arm_timer(s, x, due);
            return;
        }
        ib.rx[i].fc_state = FcState::Queued;
        ib.out[x as usize].ctrl.push_back(vl);
        self.kick(s, x);
    }

    /// The receive buffer of (`x`, `vl`) on a PFC link changed: PAUSE the sender when it runs
    /// short of the headroom, RESUME it when space is back (`IbState::set_pfc_receiver`).
    pub(in crate::engine) fn credit_pfc_check<Q: EventQueue<Ev>>(&mut self, s: &mut Scheduler<Ev, Q>, x: u32, vl: u8) {
        let ib = self.ibr();
        let free = ib.rx[ib.ix(x, vl)].free_blocks;
        let (xoff, xon) = ib.pfc_free_blocks[x as usize];
        let paused = self.roce_pfc_asserted(x, vl);
        if !paused && free < xoff {
            self.roce_pfc_edge(s, x, vl, crate::models::pfc::PfcEdge::Xoff);
        } else if paused && free >= xon {
            self.roce_pfc_edge(s, x, vl, crate::models::pfc::PfcEdge::Xon);
        }
    }

    /// A flow-control packet advertising `fccl` for lane `vl` reaches port `x` (the receiver
    /// at the other end of `x`'s link returns credits to it), whatever device owns `x`.
    pub(in crate::engine) fn ib_on_fc<Q: EventQueue<Ev>>(
        &mut self,
        s: &mut Scheduler<Ev, Q>,
        x: u32,
        vl: u8,
        fccl: u64,
    ) {
        let ib = self.ibs();
        let i = ib.ix(x, vl);
        ib.tx[i].fccl = ib.tx[i].fccl.max(fccl);
        self.kick(s, x);
    }

    // ---- Flow-control packets taken in when the sender looks ------------------------------
    //
    // On a loaded credit link nearly every data packet is answered by a flow-control packet,
    // and its arrival was an event (a quarter of a run's events) although it only raises the
    // sender's FCCL, which matters when the sender next looks at its credits. So where the
    // sender is a credit device (`Port::fc_in_lazy`), the packets wait on the control pipe
    // and the sender takes in those that have arrived each time it looks (`ib_take_fc`); an
    // arrival is an event only where it would wake the sender's device to something
    // (`ib_wait_credits`). "Arrived" is exact: a packet counts if its left-out event would
    // have come before the event being handled (`Scheduler::precedes_current`), so runs are
    // unchanged (checked on every credit-link scenario, session 9).

    /// A flow-control packet for sender port `x` went on the control pipe (port `r`'s link,
    /// `x`'s peer), arriving at `arrive` (`first`: nothing else is on its way to `x`).
    pub(in crate::engine) fn ib_fc_on_its_way<Q: EventQueue<Ev>>(
        &mut self,
        s: &mut Scheduler<Ev, Q>,
        x: u32,
        r: u32,
        arrive: SimTime,
        first: bool,
    ) {
        let fi = &mut self.ctrl_links[x as usize].fc;
        if first {
            fi.first_at = arrive;
        }
        // One arriving now (a link of no delay) is an event as before: an arrival left out
        // must have been scheduled before its time for `Scheduler::precedes_current`.
        if (arrive >= fi.wake_from || arrive == s.now()) && fi.event_at == SimTime::MAX {
            self.ib_schedule_fc_arrival(s, x, r, arrive);
        }
    }

    /// The arrival at `at` of a flow-control packet for `x` (sent by its peer `r`) is an event.
    fn ib_schedule_fc_arrival<Q: EventQueue<Ev>>(&mut self, s: &mut Scheduler<Ev, Q>, x: u32, r: u32, at: SimTime) {
        self.ctrl_links[x as usize].fc.event_at = at;
        let o = self.pipe_origin(r);
        s.schedule(at, o, Ev::CtrlArrive(r));
    }

    /// Makes the first flow-control packet on its way to `x` that must wake its device (see
    /// `FcInbound::wake_from`) an event, if none is.
    fn ib_ensure_fc_event<Q: EventQueue<Ev>>(&mut self, s: &mut Scheduler<Ev, Q>, x: u32) {
        let link = &self.ctrl_links[x as usize];
        let fi = link.fc;
        if fi.event_at != SimTime::MAX || fi.wake_from == SimTime::MAX {
            return;
        }
        let at = link.pipe.times().find(|&t| t >= fi.wake_from);
        if let Some(at) = at {
            let r = self.ports[x as usize].peer_port;
            self.ib_schedule_fc_arrival(s, x, r, at);
        }
    }

    /// A flow-control packet for `x` arrives as an event (as `ib_on_fc`): the ones before it
    /// are taken in with it, and `x`'s device looks.
    pub(in crate::engine) fn ib_fc_arrival<Q: EventQueue<Ev>>(&mut self, s: &mut Scheduler<Ev, Q>, x: u32) {
        let now = s.now();
        let xu = x as usize;
        self.ctrl_links[xu].fc.event_at = SimTime::MAX;
        while self.ctrl_links[xu].fc.first_at < now {
            self.ib_take_one_fc(x);
        }
        debug_assert_eq!(
            self.ctrl_links[xu].fc.first_at, now,
            "a flow-control arrival without its packet"
        );
        self.ib_take_one_fc(x);
        // A second one arriving at the same time had its own event, after this one.
        if self.ctrl_links[xu].fc.first_at == now {
            let r = self.ports[xu].peer_port;
            self.ib_schedule_fc_arrival(s, x, r, now);
        }
        self.kick(s, x);
        self.ib_ensure_fc_event(s, x);
    }

    /// The device of sender port `x` looks at what it could send: it waits for nothing
    /// until it says so again (`ib_wait_credits`), and takes in what has arrived.
    #[inline]
    pub(in crate::engine) fn ib_device_looks<Q: EventQueue<Ev>>(&mut self, s: &Scheduler<Ev, Q>, x: u32) {
        self.ctrl_links[x as usize].fc.wake_from = SimTime::MAX;
        self.ib_take_fc(s, x);
    }

    /// Takes in the flow-control packets that have reached sender port `x` by now. Call
    /// before any read of `x`'s FCCL.
    #[inline]
    pub(in crate::engine) fn ib_take_fc<Q: EventQueue<Ev>>(&mut self, s: &Scheduler<Ev, Q>, x: u32) {
        let xu = x as usize;
        if self.ctrl_links[xu].fc.first_at > s.now() {
            return;
        }
        let o = self.pipe_origin(self.ports[xu].peer_port);
        while self.ctrl_links[xu].fc.first_at != SimTime::MAX && s.precedes_current(self.ctrl_links[xu].fc.first_at, o)
        {
            self.ib_take_one_fc(x);
        }
    }

    /// Takes the first flow-control packet on its way to `x` off the control pipe and raises
    /// `x`'s FCCL.
    fn ib_take_one_fc(&mut self, x: u32) {
        let link = &mut self.ctrl_links[x as usize];
        let frame = link.pipe.pop_due(link.fc.first_at);
        link.fc.first_at = link.pipe.head_time().unwrap_or(SimTime::MAX);
        debug_assert_eq!(frame.kind, PacketKind::FlowControl);
        let ib = self.ibs();
        let i = ib.ix(x, frame.vl);
        ib.tx[i].fccl = ib.tx[i].fccl.max(frame.aux);
    }

    /// Sender port `x`'s device looked and has work that flow-control packets arriving at or
    /// after `from` could let go (a head its credits do not cover; an HCA's flows): their
    /// arrival must wake it.
    pub(in crate::engine) fn ib_wait_credits<Q: EventQueue<Ev>>(
        &mut self,
        s: &mut Scheduler<Ev, Q>,
        x: u32,
        from: SimTime,
    ) {
        if !self.ports[x as usize].fc_in_lazy {
            return;
        }
        let fi = &mut self.ctrl_links[x as usize].fc;
        fi.wake_from = fi.wake_from.min(from);
        self.ib_ensure_fc_event(s, x);
    }

    /// An endpoint on a credit link takes packet `id` (arrived on its port `x`) into memory at
    /// once and returns its credits.
    pub(in crate::engine) fn ib_endpoint_accept<Q: EventQueue<Ev>>(
        &mut self,
        s: &mut Scheduler<Ev, Q>,
        x: u32,
        id: u32,
    ) {
        let b = self.pkt_blocks_on(x, id);
        let vl = self.packets.get(id).vl;
        let ib = self.ibs();
        let i = ib.ix(x, vl);
        ib.rx[i].abr += b as u64;
        self.ib_credit_update(s, x, vl);
    }
}
