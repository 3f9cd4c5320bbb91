//! The InfiniBand switch (and every cut-through credit device): input FIFOs per VL, requests per
//! output VL, VL arbitration among the VLs whose credits cover the head, HOQLife, IB CC marking,
//! and congestion-tree attribution.

use super::*;

/// The cut-through credit device (`Device::CreditSwitch`): InfiniBand switch, NVSwitch chip,
/// GPU hub, PCIe switch, root complex, NIC.
pub(in crate::engine) struct CreditSwitch;

impl DeviceModel for CreditSwitch {
    /// Take the packet into its input buffer (credits guarantee room), route it, queue it
    /// for its output (input FIFO or virtual output queue).
    #[inline]
    fn arrive<Q: EventQueue<Ev>>(f: &mut Fabric, s: &mut Scheduler<Ev, Q>, p: u32, id: u32) {
        f.ib_switch_arrive(s, p, id);
    }
    #[inline]
    fn kick<Q: EventQueue<Ev>>(f: &mut Fabric, s: &mut Scheduler<Ev, Q>, p: u32) {
        f.ib_switch_try_start(s, p);
    }
    #[inline]
    fn tx_done<Q: EventQueue<Ev>>(f: &mut Fabric, s: &mut Scheduler<Ev, Q>, p: u32) {
        f.ib_on_txdone(s, p);
    }
}

impl Fabric {
    /// HOQLife expired for the head of input (`x`, `vl`): drop it.
    pub(in crate::engine) fn ib_drop_head<Q: EventQueue<Ev>>(&mut self, s: &mut Scheduler<Ev, Q>, x: u32, vl: u8) {
        let now = s.now();
        let ib = self.ibs();
        let i = ib.ix(x, vl);
        let id = ib.inq[i].pop_front().expect("a head to drop");
        let out = self.packets.get(id).next_port;
        self.ib_cause_may_change(s, x, vl);
        let ib = self.ibs();
        let o = ib.ix(out, vl);
        if let Some(pos) = ib.requests[o].iter().position(|&r| r == x) {
            ib.requests[o].remove(pos);
        }
        if ib.requests[o].is_empty() {
            ib.stall_end(out, vl, now);
        }
        self.ib_hoq_drop(s, out, x, vl, id);
        self.ib_new_head(s, x, vl);
    }

    /// Packet `id`, waiting at switch output `out` (from input `x` on `vl`), is dropped by
    /// HOQLife: counted at `out` and in its flow, its input buffer freed (credits go back).
    pub(in crate::engine) fn ib_hoq_drop<Q: EventQueue<Ev>>(
        &mut self,
        s: &mut Scheduler<Ev, Q>,
        out: u32,
        x: u32,
        vl: u8,
        id: u32,
    ) {
        let now = s.now();
        let pkt = *self.packets.get(id);
        let ib = self.ibs();
        let o = ib.ix(out, vl);
        ib.tx[o].out_bytes -= pkt.wire_bytes as u64;
        ib.port_stats[out as usize].hoq_drops += 1;
        ib.totals.hoq_drops += 1;
        let b = self.pkt_blocks_on(x, id);
        self.ib_free_input(now, x, vl, b);
        let out_total = self.ibr().out_bytes_total(out);
        let port = &mut self.ports[out as usize];
        port.stats.drops += 1;
        port.stats.drop_bytes += pkt.wire_bytes as u64;
        port.stats.queue_bytes.set(now, out_total);
        if pkt.kind == PacketKind::Data {
            self.records[pkt.flow as usize].packets_dropped += 1;
            self.totals.packets_dropped += 1;
            self.totals.payload_bytes_dropped += pkt.payload_bytes as u64;
        }
        self.packets.free(id);
        self.ib_credit_update(s, x, vl);
    }

    /// Returns `b` blocks to the buffer of ingress (`x`, `vl`).
    pub(in crate::engine) fn ib_free_input(&mut self, now: SimTime, x: u32, vl: u8, b: u32) {
        let ib = self.ibs();
        let i = ib.ix(x, vl);
        ib.rx[i].free_blocks += b;
        // Lent pool blocks go back first: the space is not re-advertised to this VL.
        let back = ib.rx[i].pool_lent.min(b);
        ib.rx[i].pool_lent -= back;
        ib.rx[i].free_blocks -= back;
        ib.pool_free[x as usize] += back;
        let gauge = &mut ib.port_stats[x as usize].input_buffer_bytes;
        let bytes = gauge.value() - b as u64 * ib.cfg.credit_unit_bytes as u64;
        gauge.set(now, bytes);
    }

    /// The packet now at the head of input (`x`, `vl`), if any, requests its output.
    pub(in crate::engine) fn ib_new_head<Q: EventQueue<Ev>>(&mut self, s: &mut Scheduler<Ev, Q>, x: u32, vl: u8) {
        let now = s.now();
        let ib = self.ibr();
        let i = ib.ix(x, vl);
        let Some(&id) = ib.inq[i].front() else { return };
        let out = self.packets.get(id).next_port;
        let ib = self.ibs();
        let o = ib.ix(out, vl);
        ib.requests[o].push_back(x);
        let deadline = match ib.hoq_of_out(out) {
            Some(life) => now + life,
            None => SimTime::MAX,
        };
        ib.rx[i].head_deadline = deadline;
        if deadline != SimTime::MAX {
            self.ib_arm_timer(s, x, deadline);
        }
        self.ib_switch_try_start(s, out);
    }

    /// Switch output port `p` is (maybe) idle: send a flow-control packet or the next data
    /// packet that VL arbitration and the credits allow.
    pub(in crate::engine) fn ib_switch_try_start<Q: EventQueue<Ev>>(&mut self, s: &mut Scheduler<Ev, Q>, p: u32) {
        let now = s.now();
        {
            let port = &mut self.ports[p as usize];
            if port.txdone_pending {
                return;
            }
            if port.txdone_deferred {
                port.txdone_deferred = false;
                // The flow-control packet's `TxDone`, left out, would still be ahead: it is
                // scheduled now, at the place in the order it would have had.
                let done = port.busy_until;
                if !s.precedes_current(done, Origin(p)) {
                    self.ib_arm_txdone(s, p, done);
                    return;
                }
            }
            debug_assert!(port.busy_until <= now, "port {p} busy without a TxDone");
        }
        self.ib_device_looks(s, p);
        let fc = self.ports[p as usize].link_fc;
        if let Some(vl) = self.ibs().out[p as usize].ctrl.pop_front() {
            let done = self.ib_send_fc(s, p, vl);
            // A 6-byte packet's end matters only if something else waits for the port (its
            // `TxDone` would find nothing); otherwise the first kick before its end (a packet,
            // credits, an update to send) schedules the `TxDone` (session 9: a quarter of the
            // events of an NVLink AllReduce).
            let ib = self.ibr();
            // (Not a packet of no wire time: a `TxDone` left out must have been scheduled
            // before its time for `Scheduler::precedes_current` to place it.)
            if fc != LinkFc::Credit || done == now || !ib.out[p as usize].ctrl.is_empty() || ib.out_bytes_total(p) > 0 {
                self.ib_arm_txdone(s, p, done);
            } else {
                self.ports[p as usize].txdone_deferred = true;
            }
            return;
        }
        if fc == LinkFc::Pfc
            && let Some(done) = self.roce_send_pending_pfc(s, p)
        {
            self.ib_arm_txdone(s, p, done);
            return;
        }
        // Which VLs could send now, and which wait only for credits (or a PAUSE, on a NIC's
        // network side).
        let nv = self.ibr().nv as u8;
        let mut ready = 0u16;
        let mut short_of_credits = false;
        let voq = self.ibr().voq_port[p as usize];
        for vl in 0..nv {
            let head = if voq {
                let Some(id) = self.xbar_candidate(s, p, vl) else {
                    continue;
                };
                id
            } else {
                let ib = self.ibr();
                let Some(&x) = ib.requests[ib.ix(p, vl)].front() else {
                    continue;
                };
                *ib.inq[ib.ix(x, vl)].front().expect("a requesting input has a head")
            };
            if fc == LinkFc::Pfc {
                if self.roce_may_send(p, vl, now) {
                    ready |= 1 << vl;
                }
                continue;
            }
            if fc == LinkFc::None {
                // A NIC's network side on a lossy Ethernet network: nothing holds it back.
                ready |= 1 << vl;
                continue;
            }
            let b = self.pkt_blocks_on(p, head) as u64;
            if b <= self.ibr().avail(p, vl) {
                ready |= 1 << vl;
            } else {
                short_of_credits = true;
                if !self.ibr().stall_open(p, vl) {
                    let cause = self.ib_stall_cause(s, p, vl);
                    self.ibs().stall_begin(p, vl, now, cause);
                }
            }
        }
        let ib = self.ibs();
        let is_ready = |vl: u8| ready & (1 << vl) != 0;
        let low_waiting = VlArbiter::low_ready(&ib.cfg.vlarb, is_ready);
        let picked = if ready == 0 {
            None
        } else {
            ib.out[p as usize].arb.pick(&ib.cfg.vlarb, is_ready)
        };
        let Some(vl) = picked else {
            // Idle: the next flow-control packet's arrival must wake it.
            if short_of_credits {
                self.ib_wait_credits(s, p, now);
            }
            return;
        };
        let o = ib.ix(p, vl);
        let (x, id) = if voq {
            let k = self.ibr().xbar_pick[vl as usize];
            let VoqEntry { id, ingress: x } = self.ibr().voq[o][k];
            self.xbar_granted(p, vl, x, now);
            let ib = self.ibs();
            let len_before = ib.voq[o].len();
            ib.voq[o].remove(k).expect("ready VL has a packet");
            let next = ib.voq[o].front().map(|e| e.id);
            if let Some(pkt) = next.and_then(|n| self.packets.slots_get(n)) {
                // The queue's next oldest, a serialization ahead (`roce_switch_pick` says why).
                sim_core::prefetch(pkt);
            }
            let ib = self.ibs();
            let i = ib.ix(x, vl);
            ib.voq_unvote(i, p);
            self.ib_voq_left(s, (p, vl), x, k, len_before);
            if k == 0 {
                self.ib_voq_new_head(s, p, vl);
            }
            if let Some(pct) = self.cfg.crossbar.speedup_percent {
                let rate = sim_core::BitsPerSec(self.ports[x as usize].rate.get() * pct as u64 / 100);
                let wire = self.packets.get(id).wire_bytes as u64;
                self.ibs().xbar_free_at[x as usize] = now + serialization_time(Bytes(wire), rate);
            }
            (x, id)
        } else {
            let x = ib.requests[o].pop_front().expect("ready VL has a requester");
            let i = ib.ix(x, vl);
            let id = ib.inq[i].pop_front().expect("requester has a head");
            self.ib_cause_may_change(s, x, vl);
            (x, id)
        };
        self.ib_switch_send(s, (p, vl), x, id, low_waiting);
        // The input's next packet competes now.
        if !voq {
            self.ib_new_head(s, x, vl);
        }
    }

    /// Output (`p`, `vl`), chosen by the VL arbiter (`low_waiting`: a low-priority VL was
    /// ready too), sends packet `id` from input `x`: the arbiter charged, the credits spent,
    /// the output's queue and its stall closed, FECN marked (IB CC), the input's blocks held
    /// until the packet is out. Shared by the arbitration and the pass-through.
    #[inline(always)]
    fn ib_switch_send<Q: EventQueue<Ev>>(
        &mut self,
        s: &mut Scheduler<Ev, Q>,
        (p, vl): (u32, u8),
        x: u32,
        id: u32,
        low_waiting: bool,
    ) {
        let now = s.now();
        let fc = self.ports[p as usize].link_fc;
        let pkt = *self.packets.get(id);
        let b = self.pkt_blocks_on(p, id);
        let b_in = self.pkt_blocks_on(x, id);
        let ib = self.ibs();
        let o = ib.ix(p, vl);
        ib.out[p as usize].arb.charge(b, low_waiting);
        if fc == LinkFc::Credit {
            ib.tx[o].fctbs += b as u64;
        }
        ib.tx[o].out_bytes -= pkt.wire_bytes as u64;
        // A victim of congestion further down: it had to wait for credits for this packet,
        // or what is left would not cover another full packet.
        let was_victim = ib.stall_end(p, vl, now) || ib.avail(p, vl) < b as u64;
        let mut fecn = false;
        if let Some(cc) = &ib.cfg.cc
            && pkt.kind == PacketKind::Data
            && b >= cc.switch.packet_size_blocks as u32
            && (!was_victim || cc.switch.victim_mask)
            && let Some(th) = cc
                .switch
                .threshold_bytes(ib.cfg.vl_buffer_blocks as u64 * ib.cfg.credit_unit_bytes as u64)
            && ib.tx[o].out_bytes >= th
        {
            let rate = cc.switch.marking_rate;
            if ib.tx[o].mark.eligible(rate) {
                fecn = true;
                ib.port_stats[p as usize].fecn_marked += 1;
                ib.totals.fecn_marked += 1;
            }
        }
        ib.out[p as usize].tx_release = Some((x, vl, b_in));
        let out_total = ib.out_bytes_total(p);
        self.ports[p as usize].stats.queue_bytes.set(now, out_total);
        if fecn {
            self.packets.get_mut(id).marked = true;
        }
        let done = self.transmit(s, p, id, pkt.tail_at);
        self.ib_arm_txdone(s, p, done);
    }

    /// Whether a packet arriving for output (`out`, `vl`), `blocks` long on it, can go
    /// straight on: the arbitration would send it at once, because the output is idle (no
    /// `TxDone` ahead, no flow-control packet queued), nothing waits for it on any VL (no
    /// requesting input FIFO, or an empty virtual output queue), and its credits cover the
    /// packet. Takes in the flow-control packets that have arrived, as the arbitration's look
    /// would (a second look finds none). Where it answers no, the packet queues and the
    /// arbitration decides.
    #[inline]
    pub(in crate::engine) fn ib_switch_idle_for<Q: EventQueue<Ev>>(
        &mut self,
        s: &Scheduler<Ev, Q>,
        (out, vl): (u32, u8),
        voq: bool,
        blocks: u32,
    ) -> bool {
        let port = &mut self.ports[out as usize];
        if port.txdone_pending || port.link_fc != LinkFc::Credit {
            return false;
        }
        if port.txdone_deferred {
            // A flow-control packet's end still ahead keeps the port: the arbitration will
            // schedule its `TxDone`. One behind is forgotten, as the arbitration forgets it.
            if !s.precedes_current(port.busy_until, Origin(out)) {
                return false;
            }
            port.txdone_deferred = false;
        }
        self.ib_device_looks(s, out);
        let ib = self.ibr();
        if !ib.out[out as usize].ctrl.is_empty() {
            return false;
        }
        let lanes = ib.ix(out, 0)..ib.ix(out + 1, 0);
        let waiting = if voq {
            ib.voq[lanes].iter().any(|q| !q.is_empty())
        } else {
            ib.requests[lanes].iter().any(|r| !r.is_empty())
        };
        !waiting && blocks as u64 <= ib.avail(out, vl)
    }

    /// Packet `id` from input (`x`, `vl`) goes straight out of `out`
    /// ([`Fabric::ib_switch_idle_for`] said it may). It leaves what joining the queue and
    /// being taken off it at this instant would: a virtual output queue's majority vote cast
    /// and withdrawn, the HOQLife deadline and timer set as for a new head, the VL arbiter
    /// asked with this VL alone ready, and the departure the arbitration's. The queue, the
    /// requests and the congestion tree's head changes inside the instant are skipped: no
    /// other event sees them.
    pub(in crate::engine) fn ib_switch_pass<Q: EventQueue<Ev>>(
        &mut self,
        s: &mut Scheduler<Ev, Q>,
        (out, vl): (u32, u8),
        x: u32,
        id: u32,
        voq: bool,
    ) {
        let now = s.now();
        let ib = self.ibs();
        ib.passes += 1;
        let life = ib.hoq_of_out(out);
        let i = ib.ix(x, vl);
        if voq {
            ib.voq_vote(i, out);
            ib.voq_unvote(i, out);
            if let Some(life) = life {
                // (The queue's deadline, set and cleared again, stays `MAX`.)
                debug_assert_eq!(ib.voq_deadline[ib.ix(out, vl)], SimTime::MAX);
                self.ib_arm_timer(s, out, now + life);
            }
            // The vote may name another output now.
            self.ib_cause_may_change(s, x, vl);
        } else {
            // As a new head of the FIFO (`ib_new_head`).
            let deadline = life.map_or(SimTime::MAX, |life| now + life);
            ib.rx[i].head_deadline = deadline;
            if deadline != SimTime::MAX {
                self.ib_arm_timer(s, x, deadline);
            }
        }
        let ib = self.ibs();
        let alone = |v: u8| v == vl;
        let low_waiting = VlArbiter::low_ready(&ib.cfg.vlarb, alone);
        let picked = ib.out[out as usize].arb.pick(&ib.cfg.vlarb, alone);
        debug_assert_eq!(picked, Some(vl), "every VL has a table entry of non-zero weight");
        self.ib_switch_send(s, (out, vl), x, id, low_waiting);
    }

    pub(in crate::engine) fn ib_arm_txdone<Q: EventQueue<Ev>>(
        &mut self,
        s: &mut Scheduler<Ev, Q>,
        p: u32,
        done: SimTime,
    ) {
        let port = &mut self.ports[p as usize];
        port.txdone_pending = true;
        s.schedule(done, Origin(p), Ev::TxDone(p));
    }

    /// A switch port finished sending: free the input buffer the packet came from (its
    /// credits go back upstream) and go on.
    pub(in crate::engine) fn ib_on_txdone<Q: EventQueue<Ev>>(&mut self, s: &mut Scheduler<Ev, Q>, p: u32) {
        let now = s.now();
        self.ports[p as usize].txdone_pending = false;
        if let Some((x, vl, b)) = self.ibs().out[p as usize].tx_release.take() {
            self.ib_free_input(now, x, vl, b);
            self.ib_credit_update(s, x, vl);
        }
        self.ib_switch_try_start(s, p);
    }

    /// For the congestion tree: the output port the head of the downstream input buffer of
    /// (`p`, `vl`) waits for (`u32::MAX` if none or if the far end is an HCA).
    pub(in crate::engine) fn downstream_cause(&self, p: u32, vl: u8) -> u32 {
        let port = &self.ports[p as usize];
        if self.is_host[port.peer_node as usize] {
            return u32::MAX;
        }
        self.cause_at_input(port.peer_port, vl)
    }

    /// The output most of input lane (`x`, `vl`)'s packets wait for, the first of equals in
    /// port order, counting the first `SCAN_MAX` packets of each of its node's virtual output
    /// queues (`u32::MAX`: none).
    pub(in crate::engine) fn voq_count_cause(&self, x: u32, vl: u8) -> u32 {
        let ib = self.ibr();
        let node = self.ports[x as usize].node as usize;
        // The input's packets not yet met: once no later queue can hold more than the best
        // so far (equals keep the first), the count can stop.
        let mut left = ib.voq_cause[ib.ix(x, vl)].packets as usize;
        let mut best = (0usize, u32::MAX);
        for out in self.port_base[node]..self.port_base[node + 1] {
            if left <= best.0 {
                break;
            }
            let held = ib.voq[ib.ix(out, vl)]
                .iter()
                .take(crate::models::crossbar::oldest::SCAN_MAX)
                .filter(|e| e.ingress == x)
                .count();
            left -= held;
            if held > best.0 {
                best = (held, out);
            }
        }
        best.1
    }

    /// What a stall feeding input lane (`x`, `vl`) of a switch waits for: the output its
    /// head packet waits for (`u32::MAX`: empty).
    pub(in crate::engine) fn cause_at_input(&self, x: u32, vl: u8) -> u32 {
        let ib = self.ibr();
        if ib.voq_port[x as usize] {
            // Virtual output queues: the output most of this input's packets wait for. A
            // majority vote kept as they come and go names it without a scan when one output
            // leads; otherwise the queues are counted (the first `SCAN_MAX` of each), or the
            // counters a partition keeps of them read (at inputs fed from another partition).
            let v = ib.voq_cause[ib.ix(x, vl)];
            if v.votes > 0 {
                return v.out;
            }
            if v.packets == 0 {
                // No queue holds one of this input's packets: nothing to count.
                return u32::MAX;
            }
            return match self.voq_held_for(x) {
                Some(held) => self.voq_held_cause(held, x, vl),
                None => self.voq_count_cause(x, vl),
            };
        }
        match ib.inq[ib.ix(x, vl)].front() {
            Some(&id) => self.packets.get(id).next_port,
            None => u32::MAX,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::EngineConfig;
    use crate::ib::{IbCcConfig, IbConfig, VlArbConfig, VlArbEntry};

    /// Runs 16 hosts of a k=4 fat-tree for 300 us on two VLs, each in both arbitration
    /// tables, with IB CC marking, a shared pool, small buffers (credit stalls, a congestion
    /// tree) and HOQLife short enough to drop: `testing::mixed_flows`, with a 12-to-1 incast.
    /// Returns everything the run leaves that the pass-through could change, how many packets
    /// passed, and the InfiniBand counters.
    fn mixed_run(pass_through: bool, switch_voq: bool) -> (String, u64, IbTotals) {
        let ib = IbConfig {
            vl_buffer_blocks: 160,
            shared_pool_blocks: 96,
            switch_voq,
            cc: Some(IbCcConfig::default()),
            // Off towards hosts, 4.096 us between switches: outputs of both kinds.
            hoq_life_leaf: 20,
            hoq_life_switch: 0,
            // Each VL in both tables: a VL sent alone from the high table still counts
            // against `LimitOfHighPriority`, as the low table has it ready too.
            vlarb: VlArbConfig {
                high: vec![VlArbEntry { vl: 0, weight: 4 }, VlArbEntry { vl: 1, weight: 2 }],
                low: vec![VlArbEntry { vl: 1, weight: 4 }, VlArbEntry { vl: 0, weight: 2 }],
                high_limit: 1,
            },
            ..IbConfig::with_vls(2)
        };
        let flows = crate::engine::testing::mixed_flows([1, 0], 4);
        let cfg = EngineConfig {
            ib: Some(ib),
            ..Default::default()
        };
        let setup = |f: &mut Fabric| f.ibs().pass_through = pass_through;
        let (f, s, report) =
            crate::engine::testing::run_k4(Duration::from_ns(300), cfg, flows, setup, Duration::from_us(300));
        let ib = f.ibr();
        let queued: Vec<_> = ib
            .inq
            .iter()
            .map(|q| q.len())
            .chain(ib.voq.iter().map(|q| q.len()))
            .collect();
        let state = format!(
            "{:?}\n{:?}\n{:?}\n{:?}\n{:?}\n{:?}\n{:?}\n{:?}\n{:?}\n{:?}\n{:?}\n{} {}",
            f.flow_records(),
            f.totals(),
            ib.totals,
            ib.port_stats,
            ib.congestion_edges(),
            ib.out,
            ib.tx,
            ib.rx,
            ib.voq_cause,
            ib.voq_deadline,
            queued,
            report.events,
            s.now()
        );
        (state, ib.passes, ib.totals.clone())
    }

    /// A packet that passes straight through an idle output leaves what the queue and the
    /// arbitration would have, with virtual output queues and with input FIFOs: the same run
    /// with the pass-through and without ends in the same flow records, totals, InfiniBand
    /// counters, congestion tree, arbiters, lanes, deadlines, queues and event count, and the
    /// pass-through did take many packets while HOQLife dropped some and IB CC marked some.
    #[test]
    fn passing_straight_through_is_what_the_queue_and_the_arbitration_do() {
        for switch_voq in [true, false] {
            let (with, passes, totals) = mixed_run(true, switch_voq);
            let (without, none, _) = mixed_run(false, switch_voq);
            assert_eq!(none, 0);
            assert!(passes > 1_000, "{passes} packets passed through (voq {switch_voq})");
            assert!(totals.hoq_drops > 0, "HOQLife dropped (voq {switch_voq}): {totals:?}");
            assert!(totals.fecn_marked > 0, "IB CC marked (voq {switch_voq}): {totals:?}");
            assert_eq!(with, without, "voq {switch_voq}");
        }
    }
}
