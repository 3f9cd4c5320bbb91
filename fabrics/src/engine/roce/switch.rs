//! The RoCEv2 switch egress: one queue per (port, priority), strict priority then deficit
//! weighted round-robin (DWRR) over the priorities that PFC lets go, ECN marking at dequeue and
//! the release of the packet from the shared-buffer MMU (which may end a PAUSE).

use super::*;
use sim_core::prefetch;

/// The shared-buffer Ethernet switch (`Device::RoceSwitch`): MMU admission, 8 priorities, PFC,
/// ECN, strict priority + DWRR.
pub(in crate::engine) struct RoceSwitch;

impl DeviceModel for RoceSwitch {
    /// Admit the packet to the MMU (or drop it), queue it at its egress (port, priority).
    #[inline]
    fn arrive<Q: EventQueue<Ev>>(f: &mut Fabric, s: &mut Scheduler<Ev, Q>, p: u32, id: u32) {
        f.roce_switch_arrive(s, p, id);
    }
    #[inline]
    fn kick<Q: EventQueue<Ev>>(f: &mut Fabric, s: &mut Scheduler<Ev, Q>, p: u32) {
        f.roce_kick(s, p);
    }
    #[inline]
    fn tx_done<Q: EventQueue<Ev>>(f: &mut Fabric, s: &mut Scheduler<Ev, Q>, p: u32) {
        f.roce_on_txdone(s, p);
    }
}

/// A packet waiting in an egress queue and the port it came in on: the MMU record its
/// departure releases, which the departure prefetch can then ask for without reading the
/// packet first.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct QueuedPacket {
    pub(super) id: u32,
    pub(super) ingress: u32,
}

/// One egress queue of a switch port: (port, priority). The ids, the bytes and the DWRR deficit
/// are read together on every enqueue and departure, so they share a cache line.
#[derive(Clone, Debug, Default)]
#[repr(align(64))]
pub(super) struct PrioQueue {
    pub(super) ids: VecDeque<QueuedPacket>,
    pub(super) bytes: u64,
    /// Largest `bytes` so far (`RocePortStats::queue_max_bytes` holds the same).
    pub(super) max_bytes: u64,
    pub(super) deficit: u32,
}

/// What DWRR needs of a queue: its deficit counter.
pub(super) trait Deficit {
    fn deficit(&mut self) -> &mut u32;
}

impl Deficit for PrioQueue {
    fn deficit(&mut self) -> &mut u32 {
        &mut self.deficit
    }
}
impl Deficit for u32 {
    fn deficit(&mut self) -> &mut u32 {
        self
    }
}

/// Deficit weighted round-robin over the priorities in `eligible` (non-empty, not paused; at
/// least one), from the round-robin position `rr`: the priority whose deficit covers its head
/// packet (`head_wire(prio)` bytes) first, its deficit charged; `None` when the cap of
/// `NP * 64` steps runs out first (quanta far below the frame size). Equivalent to stepping
/// `rr` one priority at a time, adding the quantum to an eligible priority that falls short;
/// the steps over ineligible priorities are taken in one jump. Empty queues have a zero
/// deficit (the callers reset it when a queue empties).
pub(super) fn dwrr_pick<D: Deficit>(
    eligible: u8,
    rr: &mut u8,
    deficit: &mut [D],
    quantum: &[u32; NP],
    head_wire: impl Fn(u8, &D) -> u32,
) -> Option<u8> {
    if eligible.is_power_of_two() {
        // One priority can send (the usual case: one data class beside a strict control
        // class). With a quantum of at least the head's shortfall, the walk below comes
        // round to it once or twice, far from the cap: its outcome in closed form.
        let prio = eligible.trailing_zeros() as usize;
        let head = head_wire(prio as u8, &deficit[prio]);
        let d = deficit[prio].deficit();
        let topped = *d as u64 + quantum[prio] as u64;
        if *d >= head {
            *d -= head;
        } else if topped >= head as u64 {
            // Below `quantum[prio]`, so it fits.
            *d = (topped - head as u64) as u32;
        } else {
            return dwrr_walk(eligible, rr, deficit, quantum, head_wire);
        }
        *rr = prio as u8;
        return Some(prio as u8);
    }
    dwrr_walk(eligible, rr, deficit, quantum, head_wire)
}

/// [`dwrr_pick`]'s walk: a priority at a time, jumping over those that cannot send.
fn dwrr_walk<D: Deficit>(
    eligible: u8,
    rr: &mut u8,
    deficit: &mut [D],
    quantum: &[u32; NP],
    head_wire: impl Fn(u8, &D) -> u32,
) -> Option<u8> {
    const CAP: usize = NP * 64;
    let mut steps = 0usize;
    let mut prio = *rr as usize;
    loop {
        // Distance to the next eligible priority, cyclically from `prio`.
        let rot = eligible.rotate_right(prio as u32);
        let jump = rot.trailing_zeros() as usize;
        if steps + jump >= CAP {
            *rr = ((prio + CAP - steps) % NP) as u8;
            return None;
        }
        steps += jump;
        prio = (prio + jump) % NP;
        let head = head_wire(prio as u8, &deficit[prio]);
        let d = deficit[prio].deficit();
        if *d >= head {
            *d -= head;
            *rr = prio as u8;
            return Some(prio as u8);
        }
        *d += quantum[prio];
        steps += 1;
        prio = (prio + 1) % NP;
        if steps >= CAP {
            *rr = prio as u8;
            return None;
        }
    }
}

impl Fabric {
    /// Prefetch hint for a coming `TxDone(p)` at a RoCEv2 switch port (`Model::prefetch`'s
    /// pipeline; no effect on results): its pick reads the queue record of every non-empty
    /// priority, the head id in that queue's ring, then the head packet (DWRR weighs its wire
    /// bytes). `stage` 2 touches the records, 1 the head ids, 0 the head packets, so each
    /// stage reads only what the one before brought in.
    #[inline]
    pub(in crate::engine) fn roce_prefetch_departure(&self, p: u32, stage: u8) {
        let Some(r) = self.roce.as_deref() else { return };
        let mut waiting = r.nonempty.get(p as usize).copied().unwrap_or(0);
        if waiting == 0 {
            // No switch queue holds a packet: a NIC's port, or an idle one.
            self.roce_prefetch_nic(r, p, stage);
            return;
        }
        while waiting != 0 {
            let prio = waiting.trailing_zeros() as u8;
            waiting &= waiting - 1;
            let Some(q) = r.q.get(RoceState::ix(p, prio)) else {
                return;
            };
            match stage {
                2 => {
                    prefetch(q);
                    // The pause timer the pick tests for each non-empty priority.
                    if let Some(rx) = r.pfc_rx.get(p as usize) {
                        rx.prefetch_pause(prio);
                    }
                }
                1 => {
                    if let Some(slot) = q.ids.front() {
                        prefetch(slot);
                    }
                }
                _ => {
                    if let Some(head) = q.ids.front() {
                        if let Some(pkt) = self.packets.slots_get(head.id) {
                            prefetch(pkt);
                        }
                        // The MMU record its release reads.
                        let node = self.ports.get(p as usize).map_or(0, |port| port.node);
                        if let Some(&base) = self.port_base.get(node as usize) {
                            r.prefetch_admission(node, head.ingress.wrapping_sub(base), prio);
                        }
                    }
                }
            }
        }
    }

    /// Strict priority, then DWRR: the next packet of switch port `p`, dequeued (MMU release,
    /// ECN at dequeue, XON).
    ///
    /// Works on the port's mask of non-empty priority queues, so a departure costs a few bit
    /// operations whatever the number of priorities; the DWRR walk jumps over priorities that
    /// cannot send and keeps the step count of the plain round-robin (the cap on passes for
    /// small quanta and the final round-robin position are the same).
    pub(in crate::engine) fn roce_switch_pick(&mut self, now: SimTime, p: u32) -> Option<u32> {
        let r = self.roce.as_deref_mut().expect("RoCE fabric");
        let rx = &r.pfc_rx[p as usize];
        let mut ready = 0u8;
        let mut waiting = r.nonempty[p as usize];
        while waiting != 0 {
            let prio = waiting.trailing_zeros() as u8;
            waiting &= waiting - 1;
            if rx.may_send(prio, now) {
                ready |= 1 << prio;
            }
        }
        let strict = ready & r.cfg.strict_mask;
        let prio = if strict != 0 {
            7 - strict.leading_zeros() as u8
        } else {
            let eligible = ready & !r.cfg.strict_mask;
            if eligible == 0 {
                return None;
            }
            dwrr_pick(
                eligible,
                &mut r.rr[p as usize],
                &mut r.q[p as usize * NP..(p as usize + 1) * NP],
                &r.cfg.dwrr_quantum_bytes,
                |_, q: &PrioQueue| self.packets.get(q.ids.front().expect("non-empty").id).wire_bytes,
            )?
        };
        let r = self.rs();
        let i = RoceState::ix(p, prio);
        let QueuedPacket { id, ingress: x } = r.q[i].ids.pop_front().expect("picked queue has a packet");
        let next_head = r.q[i].ids.front().map(|q| q.id);
        if r.q[i].ids.is_empty() {
            r.q[i].deficit = 0;
            r.nonempty[p as usize] &= !(1 << prio);
        }
        if let Some(pkt) = next_head.and_then(|n| self.packets.slots_get(n)) {
            // The queue's next head leaves no earlier than this packet's serialization from
            // now: asked for already, it has that long to come in from memory, where the
            // pipeline's own request, an event ahead, is too late for a packet that waited in
            // a deep queue (the incast's departures waited on it for half their time).
            sim_core::prefetch(pkt);
        }
        self.roce_switch_depart(now, p, prio, id, x);
        Some(id)
    }

    /// Whether a packet of priority `prio` and `wire` bytes arriving for switch port `p` now
    /// would be the one the port's pick sends at once: the port idle, no queue and no PFC frame
    /// waiting, its link open to `prio` (a credit link is never taken this way), and the pick
    /// certain (a strict priority, or a DWRR quantum that covers the frame, so that the
    /// pick's closed form applies).
    #[inline(always)]
    pub(super) fn roce_switch_idle_for(&self, now: SimTime, p: u32, prio: u8, wire: u32) -> bool {
        let port = &self.ports[p as usize];
        if port.busy_until > now || port.txdone_pending || port.ctrl_pending != 0 {
            return false;
        }
        let r = self.rr();
        if r.nonempty[p as usize] != 0 {
            return false;
        }
        let open = match self.ports[p as usize].link_fc {
            LinkFc::Pfc => r.pfc_rx[p as usize].may_send(prio, now),
            LinkFc::Credit => false,
            LinkFc::None => true,
        };
        open && (r.cfg.strict_mask & (1 << prio) != 0 || r.cfg.dwrr_quantum_bytes[prio as usize] >= wire)
    }

    /// Sends packet `id` (priority `prio`, in on port `x`) on idle switch port `p` as its pick
    /// would have: the pick's round-robin position, the departure, the transmission, the MMU's
    /// edges. [`Fabric::roce_switch_idle_for`] still holds, as the one PFC frame an admission
    /// may send goes out on `x`, never `p`. The queue's deficit stays zero, as the pick leaves
    /// an emptied queue's.
    #[inline(always)]
    pub(super) fn roce_switch_pass<Q: EventQueue<Ev>>(
        &mut self,
        s: &mut Scheduler<Ev, Q>,
        p: u32,
        prio: u8,
        id: u32,
        x: u32,
    ) {
        let now = s.now();
        debug_assert!(self.roce_switch_idle_for(now, p, prio, self.packets.get(id).wire_bytes));
        let r = self.rs();
        r.passes += 1;
        if r.cfg.strict_mask & (1 << prio) == 0 {
            r.rr[p as usize] = prio;
        }
        self.roce_switch_depart(now, p, prio, id, x);
        self.roce_transmit(s, p, id);
        self.roce_flush_edges(s);
    }

    /// Packet `id` (priority `prio`, in on port `x`) leaves switch port `p`'s queue `(p, prio)`
    /// now: the queue's bytes, ECN at dequeue, the port's queue statistic, the HPCC stamp and
    /// the MMU release (whose PFC edge, if any, the caller flushes after the transmission).
    #[inline(always)]
    fn roce_switch_depart(&mut self, now: SimTime, p: u32, prio: u8, id: u32, x: u32) {
        let i = RoceState::ix(p, prio);
        let pkt = *self.packets.get(id);
        let wire = pkt.wire_bytes as u64;
        let r = self.rs();
        r.q[i].bytes -= wire;
        let left = r.q[i].bytes;
        let mut mark = false;
        if pkt.kind == PacketKind::Data
            && let Some(red) = r.ecn.as_mut()
        {
            mark = red.mark_on_dequeue(p, left);
        }
        if mark {
            r.port_stats[p as usize].ecn_marked[prio as usize] += 1;
            r.totals.ecn_marked += 1;
            self.packets.get_mut(id).marked = true;
        }
        let port = &mut self.ports[p as usize];
        port.queued_bytes -= wire;
        let queued = port.queued_bytes;
        port.stats.queue_bytes.set(now, queued);
        let node = self.ports[p as usize].node as usize;
        let base = self.port_base[node];
        debug_assert_eq!(x, pkt.ingress_port);
        let r = self.roce.as_deref_mut().expect("RoCE fabric");
        if pkt.kind == PacketKind::Data
            && let Some(int) = r.int.as_mut()
        {
            // HPCC: the egress stamps the packet as it leaves (HPCC-sim `SwitchNotifyDequeue`:
            // bytes sent before it, the queue after it).
            let port = &self.ports[p as usize];
            let hop = IntHop {
                ts: now,
                tx_bytes: port.stats.bytes_tx,
                qlen_bytes: queued,
                rate: port.rate,
            };
            int.push(id, hop);
        }
        let mmu = r.mmu[node].as_mut().expect("a switch has an MMU");
        if let Some(edge) = mmu.release(x - base, prio, wire) {
            r.pending_edges.push((x, prio, edge));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::models::pfc::N_PRIORITIES as NP;
    use rand::Rng;

    /// Uniform in `lo..=hi` (the modulo bias does not matter to this test).
    pub(in crate::engine) fn uniform(rng: &mut sim_core::SimRng, lo: u32, hi: u32) -> u32 {
        lo + (rng.next_u64() % (hi - lo + 1) as u64) as u32
    }

    /// The round-robin of the engine before the jump: one priority per step.
    pub(in crate::engine) fn dwrr_stepwise(
        eligible: u8,
        rr: &mut u8,
        deficit: &mut [u32],
        quantum: &[u32; NP],
        head_wire: impl Fn(u8) -> u32,
    ) -> Option<u8> {
        for _ in 0..NP * 64 {
            let prio = *rr;
            if eligible & (1 << prio) != 0 {
                let head = head_wire(prio);
                if deficit[prio as usize] >= head {
                    deficit[prio as usize] -= head;
                    return Some(prio);
                }
                deficit[prio as usize] += quantum[prio as usize];
            }
            *rr = (prio + 1) % NP as u8;
        }
        None
    }

    /// Runs 16 hosts of a k=4 fat-tree for 400 us on two DWRR data priorities (one with a
    /// quantum below a frame, which the pass-through leaves to the pick) and the strict
    /// control priority, with ECN, DCQCN and ACKs: a permutation on each data priority and a
    /// 6-to-1 incast. Returns everything the run leaves that the pass-through could change.
    fn mixed_run(pass_through: bool) -> (String, u64) {
        use crate::engine::EngineConfig;
        let mut roce = RoceConfig {
            lossless_mask: (1 << 1) | (1 << 3),
            acks: true,
            ecn: Some(RedParams::dcqcn_paper()),
            cc: RoceCc::Dcqcn(DcqcnParams::paper(BitsPerSec::from_gbps(100))),
            ..Default::default()
        };
        roce.dwrr_quantum_bytes[1] = 1500;
        let flows = crate::engine::testing::mixed_flows([3, 1], 10);
        let cfg = EngineConfig {
            roce: Some(roce),
            ..Default::default()
        };
        let setup = |f: &mut Fabric| f.rs().pass_through = pass_through;
        let (f, s, _) =
            crate::engine::testing::run_k4(Duration::from_ns(500), cfg, flows, setup, Duration::from_us(400));
        let r = f.rr();
        let queues: Vec<_> =
            r.q.iter()
                .map(|q| (q.ids.len(), q.bytes, q.max_bytes, q.deficit))
                .collect();
        let state = format!(
            "{:?}\n{:?}\n{:?}\n{:?}\n{:?}\n{:?}\n{}",
            f.flow_records(),
            f.totals(),
            r.totals,
            r.rr,
            queues,
            r.port_stats,
            s.now()
        );
        (state, r.passes)
    }

    /// A packet that passes straight through an idle egress leaves what the queue and the
    /// pick would have: the same run with the pass-through and without ends in the same
    /// flow records, totals, RoCEv2 counters, round-robin positions, queues and port
    /// statistics, and the pass-through did take many packets.
    #[test]
    fn passing_straight_through_is_what_the_queue_and_the_pick_do() {
        let (with, passes) = mixed_run(true);
        let (without, none) = mixed_run(false);
        assert_eq!(none, 0);
        assert!(passes > 1_000, "{passes} packets passed through");
        assert!(with.contains("ecn_marked"), "the state holds the RoCEv2 counters");
        assert_eq!(with, without);
    }

    #[test]
    pub(in crate::engine) fn dwrr_jump_picks_what_stepping_picks() {
        let mut rng = sim_core::RngStreams::new(7).stream(0);
        for case in 0..20_000 {
            // A third with one priority only: `dwrr_pick`'s closed form for that case.
            let eligible = if case % 3 == 0 {
                1u8 << uniform(&mut rng, 0, 7)
            } else {
                uniform(&mut rng, 1, 255) as u8
            };
            let mut quantum = [0u32; NP];
            let mut heads = [0u32; NP];
            // Small quanta in some cases, so that the step cap is reached too.
            let qmax = if case % 4 == 0 { 8 } else { 9000 };
            for p in 0..NP {
                quantum[p] = uniform(&mut rng, 1, qmax);
                heads[p] = uniform(&mut rng, 64, 4200);
            }
            let mut deficit = [0u32; NP];
            for (p, d) in deficit.iter_mut().enumerate() {
                if eligible & (1 << p) != 0 {
                    *d = uniform(&mut rng, 0, 4999);
                }
            }
            let rr0 = uniform(&mut rng, 0, NP as u32 - 1) as u8;
            let (mut rr_a, mut def_a) = (rr0, deficit);
            let (mut rr_b, mut def_b) = (rr0, deficit);
            let a = dwrr_pick(eligible, &mut rr_a, &mut def_a, &quantum, |p, _| heads[p as usize]);
            let b = dwrr_stepwise(eligible, &mut rr_b, &mut def_b, &quantum, |p| heads[p as usize]);
            assert_eq!((a, rr_a), (b, rr_b), "case {case}");
            assert_eq!(def_a, def_b, "case {case}");
        }
    }
}
